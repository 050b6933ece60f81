"""The nodes of the tape: what a tensor's `grad_fn` is.

NOTE(tape-nodes): every node has
  * `kind`: "op" (a registry primitive: its VJP), "function" (an autograd.Function:
    its backward), "aot" (a compiled graph's call: its compiled backward graph,
    NOTE(aot-node) in aot/runtime.py) or "accumulate_grad" (a leaf: adds the gradient
    to `.grad`);
  * `name()`: PyTorch's name for it (MulBackward, SumBackward, AccumulateGrad, …);
  * `next_functions`: one `(node, output_nr)` edge per tensor input, in argument
    order, `(None, 0)` for an input that does not require grad;
  * `pre_hooks`: {handle id: (output_nr, hook)}, the tensor hooks run on the gradient
    of that output before the node uses it; `post_hooks`: {handle id: (0, hook)}, run
    as `hook(grad_inputs, grad_outputs)` after the node computed its gradients;
  * `saved_values()`: (label, value) for everything the backward reads, and
    `saved_tensors`, the array values among them as tensors.
Nodes compute on arrays, never on tensors: backward runs outside the tape. This node
list is what compiled autograd walks: a node's kind, name, saved values and edges say
everything about it.

NOTE(saved-values): an op node keeps its arguments and its result as `Saved` slots,
each the array with the version its tensor had when it was saved. Releasing the graph
(backward without retain_graph) drops the arrays and keeps their shapes and dtypes.
When the backward runs, a slot whose array was released, or whose tensor was modified
in place since, is handed to the VJP as an `UnusableValue`: shape and dtype read as
before, but computing with it raises PyTorch's error. So, as in PyTorch, a VJP that
reads only shapes (add, sum, reshape, getitem) runs a second time without
retain_graph and ignores in-place changes, and one that needs the values (mul, exp)
says what went wrong.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from .device import array_module

_sequence = itertools.count()
_handle_ids = itertools.count()

# PyTorch's names for the nodes of registry ops whose NumPy name differs; every other
# op's node is named by its registry name in CamelCase (sum: SumBackward).
BACKWARD_NAMES = {
    "multiply": "Mul", "subtract": "Sub", "divide": "Div", "power": "Pow", "negative": "Neg", "abs": "Abs",
    "mod": "Remainder", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "arctan2": "Atan2",
    "clip": "Clamp", "concatenate": "Cat", "astype": "ToCopy", "broadcast_to": "Expand",
}

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")



class PartialBackward(Exception):
    """What a node that stands for several tape nodes (an AOT node, NOTE(tape-order) in
    pyjit/autograd/aot/runtime.py) raises where the tape would raise partway through
    them: `error`, the tape's exception, once `grads` (one per next_functions edge, None
    where nothing would have been sent yet) have reached the leaves they go to."""

    def __init__(self, error: Exception, grads: list):
        super().__init__(str(error))
        self.error, self.grads = error, grads


# NOTE(tensor-class): nodes and the engine compute on arrays and sit below Tensor (a
# tensor's grad_fn is a node, and Tensor.backward runs the engine), yet hand tensors to
# the user: a node's `saved_tensors`, a hook's argument, grad()'s results. tensor.py
# registers its class and its array conversion here as it defines them
# (`register_tensor_type`), so no module of the package imports one above it.
_tensor_type: list = []


def register_tensor_type(cls: type, as_array) -> None:
    """Name the Tensor class and its `as_array` (NOTE(tensor-class)); tensor.py calls it once."""
    _tensor_type[:] = [cls, as_array]


def tensor_type() -> tuple:
    """(Tensor, as_array), as tensor.py registered them (NOTE(tensor-class))."""
    return tuple(_tensor_type)


@functools.lru_cache(maxsize=None)  # compiled autograd asks every node's name at every backward
def backward_name(op_name: str) -> str:
    camel = BACKWARD_NAMES.get(op_name) or "".join(part.capitalize() for part in op_name.split("_"))
    return camel + "Backward"


class VersionCounter:
    """How often a tensor's memory was modified in place; views share their base's."""

    __slots__ = ("value", "recorded_views")

    def __init__(self):
        self.value = 0
        self.recorded_views = False  # a view of this memory has a grad_fn (NOTE(inplace))


class RemovableHandle:
    """What register_hook returns: `remove()` takes the hook out again."""

    def __init__(self, hooks: dict, key: int):
        self._hooks = hooks
        self.id = key

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def add_hook(hooks: dict, output_nr: int, hook) -> RemovableHandle:
    key = next(_handle_ids)
    hooks[key] = (output_nr, hook)
    return RemovableHandle(hooks, key)


class Saved:
    """An array a node keeps for its backward (NOTE(saved-values))."""

    __slots__ = ("array", "counter", "version", "shape", "dtype", "module")

    def __init__(self, array, counter: VersionCounter | None):
        self.array = array
        self.counter = counter
        self.version = counter.value if counter is not None else 0
        self.shape, self.dtype, self.module = array.shape, array.dtype, None

    def release(self) -> None:
        if self.array is not None:
            self.module = array_module(self.array)
            self.array = None

    def rebind(self, array, counter: VersionCounter) -> None:
        """Keep `array` (with its version now) instead: an in-place op moved its result there."""
        self.array, self.counter, self.version = array, counter, counter.value

    def unpack(self, owner: str, label: str):
        """The array, or an UnusableValue saying why it cannot be used."""
        if self.array is None:
            return UnusableValue(self.shape, self.dtype, self.module, FREED_MESSAGE)
        if self.counter is not None and self.counter.value != self.version:
            message = modified_message(self.dtype, self.shape, label, owner, self.counter.value, self.version)
            return UnusableValue(self.shape, self.dtype, array_module(self.array), message)
        return self.array


def modified_message(dtype, shape, label: str, owner: str, version: int, expected: int) -> str:
    """The tape's error for a saved value modified in place before its backward read it."""
    return (f"one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{dtype} tensor of shape {list(shape)}], which is {label} of "
            f"{owner}, is at version {version}; expected version {expected} instead. "
            f"Hint: compute out of place (y = y + 1 instead of y += 1), or clone() the tensor before "
            f"modifying it.")


class UnusableValue:
    """A saved array that may not be read (NOTE(saved-values)): its shape and dtype are
    known; a registry op given it raises, except the ops that read only those."""

    SHAPE_ONLY_OPS = ("zeros_like", "ones_like", "empty_like", "full_like")

    def __init__(self, shape: tuple, dtype: np.dtype, module, message: str):
        self.shape, self.dtype, self.module, self.message = tuple(shape), np.dtype(dtype), module, message
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape))

    def __pyjit_dispatch__(self, op, args, kwargs):
        if op.name in self.SHAPE_ONLY_OPS and args and args[0] is self:
            return op(self.module.empty(self.shape, self.dtype), *args[1:], **kwargs)
        raise RuntimeError(self.message)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(self.message)


class BackwardNode:
    """A node of the tape, what a tensor's `grad_fn` is (NOTE(tape-nodes)); the graph
    IR's nodes are `pyjit.graph.Node`."""

    kind = ""

    def __init__(self, next_functions: tuple, num_outputs: int = 1):
        self.next_functions = next_functions
        self.num_outputs = num_outputs
        self.sequence_nr = next(_sequence)
        self._pre_hooks: dict = {}
        self.post_hooks: dict = {}

    @property
    def pre_hooks(self) -> dict:
        return self._pre_hooks

    def name(self) -> str:
        raise NotImplementedError

    def apply(self, grads: list) -> list:
        """Gradients for `next_functions` from the gradients of this node's outputs
        (arrays, None where no gradient arrived)."""
        raise NotImplementedError

    def saved_values(self) -> list[tuple[str, object]]:
        return []

    def release(self) -> None:
        """Drop what the backward kept (NOTE(saved-values))."""

    @property
    def saved_tensors(self) -> tuple:
        tensor, _ = tensor_type()
        values = [value for _, value in self.saved_values()]
        for value in values:
            if isinstance(value, UnusableValue):
                raise RuntimeError(value.message)
        return tuple(value if isinstance(value, tensor) else tensor(value) for value in values)

    @property
    def saved_sizes(self) -> tuple[tuple, ...]:
        """The shapes of the saved values (known after release too)."""
        return tuple(tuple(value.shape) for _, value in self.saved_values())

    def register_prehook(self, hook, output_nr: int = 0) -> RemovableHandle:
        """`hook(grad)` on the gradient of output `output_nr` before the node uses it;
        a returned value replaces the gradient."""
        return add_hook(self.pre_hooks, output_nr, hook)

    def register_hook(self, hook) -> RemovableHandle:
        """`hook(grad_inputs, grad_outputs)` after the node ran: the gradients it sends on
        (one per edge) and those it received, as tensors (None where there is none); a
        tuple it returns (one entry per edge) replaces what it sends on."""
        return add_hook(self.post_hooks, 0, hook)

    def __repr__(self) -> str:
        saved = ", ".join(f"{label} {list(value.shape)}" for label, value in self.saved_values())
        return f"<{self.name()} ({self.kind}){', saved: ' + saved if saved else ''}>"


class OpNode(BackwardNode):
    """The backward of one call of a registry primitive: `op.vjp(grad, out, *args, **kwargs)`.

    `paths[i]` says where input tensor i sat in the call: (position, None) for a
    positional argument, (position, item) inside a list or tuple argument; the VJP's
    gradient for it is found at the same place in what the VJP returns.
    """

    kind = "op"

    def __init__(self, op, args: tuple, kwargs: dict, out: Saved, paths: list, next_functions: tuple):
        super().__init__(next_functions)
        self.op = op
        self.args, self.kwargs, self.out, self.paths = args, kwargs, out, paths

    def name(self) -> str:
        return backward_name(self.op.name)

    def apply(self, grads: list) -> list:
        (grad,) = grads
        owner = self.name()
        args = tuple(_unpacked(arg, owner, f"input {index}") for index, arg in enumerate(self.args))
        kwargs = {key: _unpacked(arg, owner, f"argument {key}") for key, arg in self.kwargs.items()}
        results = self.op.vjp(grad, self.out.unpack(owner, "output 0"), *args, **kwargs)
        return [at_path(results, path) for path in self.paths]

    def saved_values(self) -> list[tuple[str, object]]:
        values = []
        for index, arg in enumerate(self.args):
            items = arg if type(arg) in (list, tuple) else (arg,)
            values += [(f"input {index}", item) for item in items if isinstance(item, Saved)]
        values += [(f"argument {key}", arg) for key, arg in self.kwargs.items() if isinstance(arg, Saved)]
        values.append(("output 0", self.out))
        owner = self.name()
        return [(label, saved.unpack(owner, label)) for label, saved in values]

    def release(self) -> None:
        for arg in (*self.args, *self.kwargs.values(), self.out):
            for item in arg if type(arg) in (list, tuple) else (arg,):
                if isinstance(item, Saved):
                    item.release()


class AccumulateGrad(BackwardNode):
    """A leaf's node: the gradient arriving here is added to the leaf's `.grad`; the
    leaf's tensor hooks run first (they are its pre_hooks)."""

    kind = "accumulate_grad"

    def __init__(self, variable):
        super().__init__(())
        self.sequence_nr = float("inf")  # ready leaves accumulate first, as in PyTorch
        self.variable = variable

    @property
    def pre_hooks(self) -> dict:
        return self.variable._leaf_hooks()  # kept by the leaf: its accumulator may be made again

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads: list) -> list:
        self.variable._accumulate_grad(grads[0])
        return []


def _unpacked(arg, owner: str, label: str):
    if isinstance(arg, Saved):
        return arg.unpack(owner, label)
    if type(arg) in (list, tuple):
        return type(arg)(_unpacked(item, owner, label) for item in arg)
    return arg


def at_path(results: tuple, path):
    position, item = path
    if position is None or position >= len(results) or results[position] is None:
        return None
    return results[position] if item is None else results[position][item]
