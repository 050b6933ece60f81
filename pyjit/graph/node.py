"""Nodes of the IR and the structures their arguments may take."""

from __future__ import annotations

from typing import Any, Callable

from .meta import TensorMeta

KINDS = ("placeholder", "constant", "call", "output")


class Node:
    """One value of a graph: an input (placeholder), a constant, a call, or the output.

    `args`/`kwargs` may hold nodes, literals, and tuples/lists/dicts/slices of those.
    `meta` describes the value (NOTE(meta-protocol)); `loc` is the user's source line.
    """

    __slots__ = ("graph", "kind", "name", "target", "args", "kwargs", "meta", "loc", "users", "__weakref__")

    def __init__(self, graph, kind: str, name: str, target: Any, args: tuple, kwargs: dict, meta, loc):
        self.graph = graph
        self.kind = kind
        self.name = name
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.meta = meta
        self.loc = loc
        self.users: dict[Node, None] = {}  # insertion-ordered set

    def inputs(self) -> list[Node]:
        """The distinct nodes this node reads, in argument order."""
        found: dict[Node, None] = {}
        map_nodes((self.args, self.kwargs), lambda node: found.setdefault(node))
        return list(found)

    def depends_on(self, nodes: set) -> bool:
        """Whether this node is one of `nodes` or is computed from one of them."""
        seen, todo = set(), [self]
        while todo:
            node = todo.pop()
            if node in nodes:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(node.inputs())
        return False

    def replace_all_uses_with(self, replacement: Node) -> None:
        for user in list(self.users):
            user.replace_input(self, replacement)

    def replace_input(self, old: Node, new: Node) -> None:
        swap = lambda node: new if node is old else node  # noqa: E731
        self.args = map_nodes(self.args, swap)
        self.kwargs = map_nodes(self.kwargs, swap)
        old.users.pop(self, None)
        new.users[self] = None

    # The names VJPs and decompositions read, whatever kind of value they are given.
    @property
    def shape(self) -> tuple:
        return self._tensor_meta().shape

    @property
    def dtype(self):
        return self._tensor_meta().dtype

    @property
    def ndim(self) -> int:
        return self._tensor_meta().ndim

    @property
    def device(self) -> str:
        return self._tensor_meta().device

    def _tensor_meta(self) -> TensorMeta:
        if not isinstance(self.meta, TensorMeta):
            raise AttributeError(f"node {self.name} is not an array (its meta is {self.meta!r})")
        return self.meta

    def __pyjit_dispatch__(self, target: Callable, args: tuple, kwargs: dict) -> Any:
        """Calling a registry op on a node records the call in the node's graph."""
        return self.graph.call(target, *args, **kwargs)

    def __repr__(self) -> str:
        return f"%{self.name}"


def map_nodes(structure: Any, fn: Callable[[Node], Any]) -> Any:
    """`structure` with every node replaced by `fn(node)`, rebuilding tuples, lists,
    dicts and slices around them; anything else is returned as it is."""
    if isinstance(structure, Node):
        return fn(structure)
    if type(structure) in (tuple, list):
        return type(structure)(map_nodes(item, fn) for item in structure)
    if isinstance(structure, dict):
        return {key: map_nodes(value, fn) for key, value in structure.items()}
    if isinstance(structure, slice):
        return slice(map_nodes(structure.start, fn), map_nodes(structure.stop, fn), map_nodes(structure.step, fn))
    return structure
