"""`Graph`: an ordered list of nodes with a builder API and the IR's own passes."""

from __future__ import annotations

import contextlib
import keyword
import re
from typing import Any, Callable

import numpy as np

from ..source import SourceLoc
from .lint import lint
from .meta import TensorMeta
from .node import Node, map_nodes
from .printer import is_reserved
from .symbolic import ShapeEnv, SymInt
from .table import graph_table



class Graph:
    """The IR of one captured region: placeholders, constants, calls, one output.

    Build it with `placeholder`, `constant`, `call` and `output`; nodes created inside
    `with graph.at(loc):` carry that source location.
    """

    def __init__(self, name: str = "forward", shape_env: ShapeEnv | None = None):
        self.name = name
        self.nodes: list[Node] = []
        self.shape_env = shape_env if shape_env is not None else ShapeEnv()
        self._taken_names: set[str] = set()
        self._last_suffix: dict[str, int] = {}  # base name -> the last counter it was given
        self._loc: SourceLoc | None = None
        # Placeholders whose arrays the caller hands over: compiled code may write into
        # them (NOTE(donated-carries) in pyjit/frontend/loops.py).
        self.donated: frozenset[str] = frozenset()

    # -- building -------------------------------------------------------------------
    @contextlib.contextmanager
    def at(self, loc: SourceLoc | None):
        """Nodes created inside the block carry `loc`."""
        previous, self._loc = self._loc, loc
        try:
            yield
        finally:
            self._loc = previous

    def placeholder(self, name: str, meta: TensorMeta | type | None = None) -> Node:
        """An input of the graph; `meta` is a TensorMeta, or int/float/bool/complex for
        a Python scalar input (weak in NumPy's promotion, as a scalar literal is)."""
        return self._append("placeholder", name, None, (), {}, meta)

    def constant(self, value: Any, name: str = "const") -> Node:
        """A value the graph holds itself (an array, a dtype, a size, …)."""
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            meta = TensorMeta.of(value)
        else:
            meta = int if isinstance(value, SymInt) else type(value)  # a size is a Python int
        return self._append("constant", name, value, (), {}, meta)

    def call(self, target: Callable, *args, **kwargs) -> Node:
        """A call of `target` on nodes and constants; its meta comes from `target.meta`."""
        meta_rule = getattr(target, "meta", None)
        meta = None
        if meta_rule is not None:
            meta = meta_rule(*map_nodes(args, _meta_of), **map_nodes(kwargs, _meta_of))
        return self._append("call", _target_name(target), target, args, kwargs, meta)

    def output(self, value: Any) -> Node:
        """The value the graph returns: a node, or a tuple/list of nodes and constants."""
        return self._append("output", "output", None, (value,), {}, None)

    def _append(self, kind, base_name, target, args, kwargs, meta) -> Node:
        node = Node(self, kind, self._unique_name(base_name), target, args, kwargs, meta, self._loc)
        for used in node.inputs():
            used.users[node] = None
        self.nodes.append(node)
        return node

    def rename(self, node: Node, base: str) -> None:
        """Give `node` the free name nearest to `base` (`base`, `base_1`, …)."""
        self._taken_names.discard(node.name)
        node.name = self._unique_name(base)

    def _unique_name(self, base: str) -> str:
        # ASCII only: Python folds other identifiers by NFKC, so "ℌ" and "H" would collide.
        base = re.sub(r"\W", "_", base, flags=re.ASCII) or "v"
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base) or keyword.issoftkeyword(base) or is_reserved(base):
            base += "_"
        # Probing resumes where the last name of this base stopped: from 0 each time, a
        # chain of N adds cost O(N^2) (2000 ops: 0.5 s).
        counter = self._last_suffix.get(base, 0)
        name = f"{base}_{counter}" if counter else base
        while name in self._taken_names:
            counter += 1
            name = f"{base}_{counter}"
        self._last_suffix[base] = counter
        self._taken_names.add(name)
        return name

    # -- inspection -----------------------------------------------------------------
    @property
    def placeholders(self) -> list[Node]:
        return [node for node in self.nodes if node.kind == "placeholder"]

    @property
    def output_node(self) -> Node | None:
        return next((node for node in reversed(self.nodes) if node.kind == "output"), None)

    def calls(self) -> list[Node]:
        return [node for node in self.nodes if node.kind == "call"]

    # -- editing and passes ---------------------------------------------------------
    def erase(self, node: Node) -> None:
        """Remove `node`, which nothing may use any more."""
        if node.users:
            raise ValueError(f"cannot erase {node.name}: it is used by {', '.join(u.name for u in node.users)}")
        for used in node.inputs():
            used.users.pop(node, None)
        self.nodes.remove(node)
        self._taken_names.discard(node.name)

    def impure_calls(self) -> list[Node]:
        """The calls that must run even when nothing uses their values (a random draw)."""
        return [node for node in self.nodes if node.kind == "call" and not _is_pure(node.target)]

    def eliminate_dead_code(self) -> int:
        """Erase pure calls and constants whose values nothing uses; returns how many."""
        removed = 0
        for node in reversed(list(self.nodes)):
            removable = node.kind == "constant" or (node.kind == "call" and _is_pure(node.target))
            if removable and not node.users:
                self.erase(node)
                removed += 1
        return removed

    def eliminate_common_subexpressions(self) -> int:
        """Merge pure calls (and constants) with the same target and arguments; returns
        how many nodes were merged away."""
        seen: dict[Any, Node] = {}
        merged = 0
        for node in list(self.nodes):
            if node.kind == "call" and not _is_pure(node.target):
                continue
            if node.kind not in ("call", "constant"):
                continue
            key = _cse_key(node)
            if key is None:
                continue
            original = seen.setdefault(key, node)
            if original is not node:
                node.replace_all_uses_with(original)
                self.erase(node)
                merged += 1
        return merged

    def lint(self) -> None:
        """Raise LintError naming the first broken invariant, with a fix and this graph."""
        lint(self)

    def __str__(self) -> str:
        return graph_table(self)


def _meta_of(node: Node):
    return node.meta


def _is_pure(target: Callable) -> bool:
    return bool(getattr(target, "pure", False))


def _target_name(target: Callable) -> str:
    return getattr(target, "name", None) or getattr(target, "__name__", None) or type(target).__name__


def _cse_key(node: Node):
    """A hashable key equal for nodes that must compute the same value; None if unsure."""
    try:
        if node.kind == "constant":
            return ("constant", _literal_key(node.target))
        return ("call", id(node.target), _literal_key(node.args), _literal_key(node.kwargs))
    except TypeError:
        return None


def _literal_key(value: Any):
    if isinstance(value, Node):
        return ("node", id(value))
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_literal_key(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple((key, _literal_key(item)) for key, item in value.items()))
    if isinstance(value, slice):
        return ("slice", _literal_key(value.start), _literal_key(value.stop), _literal_key(value.step))
    if isinstance(value, SymInt):
        return ("size", str(value))  # comparing SymInts would record guards
    if type(value) in (float, complex):
        return (type(value).__name__, repr(value))  # nan is not equal to itself; -0.0 equals 0.0
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes):
        return (type(value).__name__, value)
    if hasattr(value, "shape") and not isinstance(value, (type, np.generic)):
        return ("array", id(value))  # equal contents today need not be equal after an in-place update
    hash(value)  # numpy dtypes, scalars and scalar types: hashable values of their own
    return (type(value).__qualname__, _float_safe(value))


def _float_safe(value: Any):
    """NumPy float scalars keyed by their bits, as Python floats are keyed by repr."""
    if isinstance(value, np.generic) and value.dtype.kind in "fc":
        return (value.dtype.str, value.tobytes())
    return value
