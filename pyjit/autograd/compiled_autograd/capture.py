"""The walk of compiled autograd: what one backward pass's autograd graph is made of.

NOTE(autograd-walk): every backward through compiled autograd first walks the graph
from the roots, in the order the tape would run it (engine.run_order; grad() keeps only
the nodes from which an input can be reached). Position 0 is the roots themselves
(`GraphRoot`, NodeCall 0), node i of that order is NodeCall i+1. For each it collects

  * its key: the node's type and the state its backward depends on besides arrays
    (an op's constant arguments, a Function's class, flags and ctx attributes, an AOT
    node's compiled graphs, whether a leaf has a `.grad` yet), its edges as positions,
    where its hooks sit, and the dtype and rank of each value it lifts;
  * the values it lifts to graph inputs: the root gradients, every saved array (and an
    AOT node's saved Python numbers), each leaf's current `.grad`;
  * its hooks (tensor hooks, then the node's post hooks), which the graph calls
    through its `hooks` input.

The keys are the cache's structure; the lifted values' shapes are its sizes
(NOTE(compiled-autograd-cache) in cache.py). Nothing here computes: a miss traces the
walk (trace.py), a hit only runs the compiled graph on `lifted`. A saved value that
cannot be used (released, modified in place) is not lifted: its key says so, and an
op's VJP that needs it raises the tape's error when traced. State that cannot be part of
a key (an unhashable argument, a ctx attribute holding an array) makes the node opaque:
the graph calls the node itself, through its `nodes` input.
"""

from __future__ import annotations

import numpy as np

from .. import engine
from ..aot import CompiledFunctionBackward
from ..function import Function, FunctionCtx
from ..nodes import AccumulateGrad, OpNode, Saved, UnusableValue


class Opaque(Exception):
    """A node's state cannot be a key: the graph calls the node instead of tracing it."""


class NodeCall:
    """One position of the walk: a node (None for GraphRoot), its key and lifted values."""

    __slots__ = ("node", "position", "key", "lifted", "hooks", "post_hooks", "opaque")

    def __init__(self, node, position: int):
        self.node, self.position = node, position
        self.key: tuple = ()
        self.lifted: list = []
        self.hooks: list[tuple[int, int]] = []  # pre-hooks: (output_nr, index into Walk.hooks)
        self.post_hooks: list[int] = []  # indices into Walk.hooks
        self.opaque = False

    @property
    def label(self) -> str:
        name = "GraphRoot" if self.node is None else self.node.name()
        return f"{name} (NodeCall {self.position})"


class Walk:
    """The autograd graph of one backward()/grad() call (NOTE(autograd-walk))."""

    def __init__(self, roots: list, grads: list, inputs: list | None):
        self.roots, self.inputs = roots, inputs
        self.accumulate = inputs is None  # backward(): leaves accumulate; grad(): inputs are captured
        self.needed = None if inputs is None else engine.nodes_reaching(inputs, roots)
        self.order = engine.run_order([node for node, _ in roots], self.needed)
        self.position = {node: index + 1 for index, node in enumerate(self.order)}
        self.hooks: list = []
        root = NodeCall(None, 0)
        root.lifted = list(grads)
        root.key = ("GraphRoot", self.accumulate, self._edges(roots), self._edges(inputs or ()),
                    tuple(_array_key(grad) for grad in grads))
        self.calls = [root]
        self._arrived: dict | None = None
        for index, node in enumerate(self.order):
            self.calls.append(self._visit(node, index + 1))
        self.lifted = [value for call in self.calls for value in call.lifted]

    @property
    def key(self) -> tuple:
        return tuple(call.key for call in self.calls)

    def _edges(self, edges) -> tuple:
        position = self.position
        return tuple([(position.get(node), output_nr) for node, output_nr in edges])

    def arrived(self, node) -> set:
        """The outputs of `node` some edge (or root) of the walk sends a gradient to."""
        if self._arrived is None:
            arrived: dict = {}
            for root, output_nr in self.roots:
                arrived.setdefault(root, set()).add(output_nr)
            for parent in self.order:
                for child, output_nr in parent.next_functions:
                    if child in self.position:
                        arrived.setdefault(child, set()).add(output_nr)
            self._arrived = arrived
        return self._arrived.get(node, set())

    def _visit(self, node, position: int) -> NodeCall:
        call = NodeCall(node, position)
        if node.pre_hooks:
            for output_nr, hook in list(node.pre_hooks.values()):
                call.hooks.append((output_nr, len(self.hooks)))
                self.hooks.append(hook)
        if node.post_hooks:
            for _, hook in list(node.post_hooks.values()):
                call.post_hooks.append(len(self.hooks))
                self.hooks.append(hook)
        state = _STATES.get(type(node))
        try:
            if state is None:
                raise Opaque(f"{type(node).__name__} is not a node compiled autograd knows")
            state = state(self, node, call.lifted)
        except Opaque:
            call.lifted, call.opaque, state = [], True, ("opaque", node.name())
        call.key = (type(node), state, self._edges(node.next_functions), node.num_outputs,
                    tuple([output_nr for output_nr, _ in call.hooks]), len(call.post_hooks))
        return call


def _array_key(value) -> tuple:
    """What a lifted value contributes to the key besides its sizes."""
    dtype = getattr(value, "dtype", None)
    return (type(value),) if dtype is None else (type(value), dtype, value.ndim)


def _op_state(walk: Walk, node: OpNode, lifted: list) -> tuple:
    owner = node.name()
    args = tuple([_slot_state(arg, lifted, owner) for arg in node.args])
    kwargs = tuple([(key, _slot_state(value, lifted, owner)) for key, value in node.kwargs.items()])
    return (node.op, args, kwargs, _slot_state(node.out, lifted, owner), tuple(node.paths))


def _slot_state(value, lifted: list, owner: str):
    """An op's argument as key state; a usable saved array is lifted instead."""
    if type(value) is Saved:
        array = value.unpack(owner, "")
        if isinstance(array, UnusableValue):  # a VJP may read its shape (NOTE(saved-values)): a key, not a size
            return ("unusable", tuple(array.shape), array.dtype)
        lifted.append(array)
        return (type(array), array.dtype, array.ndim)
    if type(value) in (list, tuple):
        return (type(value), tuple(_slot_state(item, lifted, owner) for item in value))
    return hashable(value)


def hashable(value):
    """`value` as a hashable key, which equals another only where the two compute alike."""
    if isinstance(value, slice):
        return ("slice", hashable(value.start), hashable(value.stop), hashable(value.step))
    if type(value) in (list, tuple):
        return (type(value), tuple(hashable(item) for item in value))
    if isinstance(value, float) or isinstance(value, complex):
        return (type(value), repr(value))  # nan equals itself, -0.0 differs from 0.0
    if isinstance(value, np.generic):
        return (type(value), value.tobytes())
    if value is None or value is Ellipsis or isinstance(value, (bool, int, str, bytes, np.dtype, type)):
        return (type(value), value)
    raise Opaque(f"a {type(value).__name__} in a node's state")


# What every FunctionCtx holds itself: the rest of its attributes are the user's.
_CTX_ATTRIBUTES = frozenset(vars(FunctionCtx(Function, ())))


def _function_state(walk: Walk, ctx: FunctionCtx, lifted: list) -> tuple:
    saved = []
    for entry in ctx._saved:
        if entry is None:
            saved.append(None)
            continue
        array = entry[1].unpack(ctx.name(), "a saved tensor")
        if isinstance(array, UnusableValue):
            saved.append("unusable")
        else:
            lifted.append(array)
            saved.append(_array_key(array))
    attributes = tuple(sorted((name, hashable(value)) for name, value in vars(ctx).items()
                              if name not in _CTX_ATTRIBUTES))
    inputs = tuple((index, tuple(shape), np.dtype(dtype).str, device) for index, shape, dtype, device in ctx._inputs)
    outputs = tuple(hashable(meta) if meta is None else (tuple(meta[0]), np.dtype(meta[1]).str, meta[2])
                    for meta in ctx._outputs)
    return (ctx._function, ctx._num_args, ctx.needs_input_grad, ctx.materialize_grads, inputs, outputs,
            tuple(saved), attributes)


def _aot_state(walk: Walk, node: CompiledFunctionBackward, lifted: list) -> tuple:
    arrived = walk.arrived(node)
    node.arrive(arrived)  # the tape's error for a used-up output, before anything runs
    layout = []
    for value in node.saved_arguments():
        if hasattr(value, "shape") or type(value) in (int, float, bool, complex):
            lifted.append(value)
            layout.append(_array_key(value))
        else:
            layout.append(hashable(value))
    outputs = tuple((tuple(shape), np.dtype(dtype).str) for shape, dtype in node.outputs)
    return (node.compiled, tuple(layout), outputs, tuple(sorted(arrived)))


def _accumulate_state(walk: Walk, node: AccumulateGrad, lifted: list) -> tuple:
    variable = node.variable
    if not walk.accumulate:
        return ("capture",)
    if variable._grad is None:
        return ("accumulate", variable.dtype)
    lifted.append(variable._grad._array)
    return ("accumulate", variable.dtype, _array_key(variable._grad._array))


_STATES = {OpNode: _op_state, FunctionCtx: _function_state, CompiledFunctionBackward: _aot_state,
           AccumulateGrad: _accumulate_state}
