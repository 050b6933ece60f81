"""The cache of compiled autograd: compiled graphs by autograd structure, then by sizes.

NOTE(compiled-autograd-cache): the walk's keys (NOTE(autograd-walk)) are looked up node
by node in a trie, so the first position whose key is new names what changed:
`Cache miss due to new autograd node: <Name> (NodeCall <i>)` (GraphRoot, NodeCall 0, on
the very first backward). Under one structure, graphs are kept per sizes of the lifted
values, as the frontend's automatic dynamic shapes do: the first is traced with static
sizes; when a backward's sizes fit no graph, each size that differs from that first
graph's is marked dynamic for good (`Cache miss due to changed shapes: marking size idx
<k> of <Name> (NodeCall <i>) as dynamic`, k counting the sizes of that node's lifted
values in order), and a graph with those sizes symbolic is traced, which later sizes
reuse (sizes 10, 100, 10, 37: two graphs). A graph accepts sizes when its static sizes
are equal, its symbols are 2 or more and its shape guards hold. When sizes fit no graph
and none differs anew (a dynamic size of 0 or 1, a guard broken), a graph for exactly
these sizes is traced.
"""

from __future__ import annotations

import numpy as np

from ... import logs
from ...graph import SymInt, TensorMeta
from ...graph.printer import symbol_axes
from .capture import Walk

_verbose_log = logs.get_logger("compiled_autograd_verbose")


class Variant:
    """One compiled graph of a structure, and the sizes it accepts."""

    def __init__(self, traced, compiled):
        self.traced, self.compiled = traced, compiled
        index = {node: position for position, node in enumerate(traced.lifted_nodes)}
        self.static = [(index[node], axis, size) for node in traced.lifted_nodes if isinstance(node.meta, TensorMeta)
                       for axis, size in enumerate(node.meta.shape) if not isinstance(size, SymInt)]
        graph = traced.module.graph
        self.symbols = {name: (index[node], axis) for name, (node, axis) in symbol_axes(graph).items()}
        self.guards = list(graph.shape_env.guards)
        self.output_metas = [None if node is None else node.meta for node in graph.output_node.args[0]]

    def _values(self, sizes: list[tuple]) -> dict[str, int]:
        return {name: sizes[index][axis] for name, (index, axis) in self.symbols.items()}

    def accepts(self, sizes: list[tuple]) -> bool:
        if any(sizes[index][axis] != size for index, axis, size in self.static):
            return False
        values = self._values(sizes)
        return all(value >= 2 for value in values.values()) and all(guard.holds(values) for guard in self.guards)

    def outputs(self, walk: Walk) -> list[tuple | None]:
        """(shape, dtype, device) of each graph output for `walk`'s sizes; None where it returns None."""
        values = self._values([np.shape(value) for value in walk.lifted])
        return [None if meta is None else
                (tuple(size.evaluate(values) if isinstance(size, SymInt) else size for size in meta.shape),
                 meta.dtype, meta.device) for meta in self.output_metas]


class _Structure:
    """The graphs traced for one autograd structure."""

    def __init__(self):
        self.first_sizes: list[tuple] | None = None
        self.dynamic: set[tuple[int, int]] = set()
        self.variants: list[Variant] = []
        self.absent: dict[tuple, tuple[bool, ...]] = {}  # NOTE(compiled-autograd-absent)


class Cache:
    """Compiled graphs by the walk's keys, then sizes (NOTE(compiled-autograd-cache))."""

    def __init__(self):
        self._trie: dict = {}

    def lookup(self, walk: Walk, compile_fn) -> Variant:
        """The variant that runs `walk`; `compile_fn(walk, dynamic, absent)` makes one on a miss."""
        structure = self._structure(walk)
        sizes = [np.shape(value) for value in walk.lifted]
        for variant in structure.variants:
            if variant.accepts(sizes):
                return variant
        dynamic = set()
        if structure.first_sizes is not None:
            changed = _changed(structure.first_sizes, sizes) - structure.dynamic
            for index, axis in sorted(changed):
                _verbose_log.debug("Cache miss due to changed shapes: marking size idx %s of %s as dynamic",
                                   *_size_name(walk, index, axis))
            structure.dynamic |= changed
            if changed:
                dynamic = set(structure.dynamic)
            else:
                _verbose_log.debug("Cache miss due to changed shapes: sizes %s fit no compiled graph: compiling for "
                                   "these sizes", sizes)
        variant = compile_fn(walk, dynamic, structure.absent)
        if structure.first_sizes is None:
            structure.first_sizes = sizes
        structure.variants.append(variant)
        return variant

    def learn(self, walk: Walk, site: tuple, absent: tuple[bool, ...]) -> None:
        """Which gradients `site` of `walk`'s structure gives (NOTE(compiled-autograd-absent)):
        its graphs, traced for others, are dropped."""
        structure = self._structure(walk)
        structure.absent[site] = absent
        structure.variants.clear()

    def _structure(self, walk: Walk) -> _Structure:
        level, missed = self._trie, False
        for call in walk.calls:
            following = level.get(call.key)
            if following is None:
                if not missed:
                    _verbose_log.debug("Cache miss due to new autograd node: %s", call.label)
                    missed = True
                following = level[call.key] = {}
            level = following
        if None not in level:
            level[None] = _Structure()
        return level[None]


def _changed(first: list[tuple], sizes: list[tuple]) -> set[tuple[int, int]]:
    return {(index, axis) for index, (old, new) in enumerate(zip(first, sizes))
            for axis, (before, now) in enumerate(zip(old, new)) if before != now}


def _size_name(walk: Walk, index: int, axis: int) -> tuple[int, str]:
    """(k, "<Name> (NodeCall <i>)"): the lifted value `index`'s axis as the k-th size of its node's values."""
    for call in walk.calls:
        if index < len(call.lifted):
            return sum(np.ndim(value) for value in call.lifted[:index]) + axis, call.label
        index -= len(call.lifted)
    raise IndexError(index)
