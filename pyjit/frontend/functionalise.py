"""In-place updates recorded as functional ops (NOTE(functionalisation)).

NOTE(functionalisation): the graph stays functional: no node writes into another's
memory. An in-place update (`x += y` and the other augmented operators, a Tensor's
add_/sub_/mul_/div_, item assignment `x[i] = v` and `x[mask] = v`, a ufunc's `out=`)
is recorded as the out-of-place op (index_put for item assignment), cast back to x's
dtype as NumPy's in-place ufuncs do (same_kind casting; assignment casts as NumPy
assigns), and the value `x` is made to stand for the result: every name, item or
attribute holding it sees the change, as they would see the array change in place.

When `x` is an input of the compiled code (an argument, a global, an attribute: the
caller's array), its new value is also an output of the graph, and the transformed code
writes it back into the input's memory right after the graph runs (`write_back`; at a
graph break, before the code after the break runs), in the order the inputs were first
written. An error inside the graph therefore leaves every input unchanged. A Tensor is
written back with `copy_`, which adds one to its version counter as an in-place op
does, so a value the tape saved before the call and backward later still raise the
tape's error. The guards of such an entry require the input to be writeable and to
share no memory with any other array input (`GuardSet.written`): a call where two
inputs alias one another, or a read-only one, misses them, and its trace breaks the
graph at the update instead, where NumPy (or the tape) runs it and raises what it
raises.

What cannot be modelled this way breaks the graph instead:
  * a view, or an array a view was taken of (the write would show through the view);
  * a Tensor an op has already read, under grad mode (the tape would have saved it, and
    report the in-place change at backward; the functional graph would not);
  * under grad mode, an input Tensor that requires grad, or an update of an input
    Tensor by a value that does (the tape records it, or refuses a leaf with its error);
    item assignment into a Tensor under grad mode when either side requires grad (the
    tape refuses it);
  * an input that is read-only, or shares memory with another input, at trace time;
  * an ndarray updated by a Tensor (NumPy keeps the ndarray; the graph's op would give
    a Tensor);
  * a result whose shape is not x's, or whose dtype cannot be cast to x's as NumPy casts
    (NumPy raises: the break lets it).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..graph import TensorMeta
from ..ops import REGISTRY
from .breaks import Break
from .values import ArrayValue, ConstantValue, SequenceValue, Value, contents

HINT = "write x = x + y, or compute into a new array (NOTE(functionalisation))"


def refuse_update(tracer, target: ArrayValue, other: Value, what: str, *, assignment: bool = False,
                  stored_back: bool = False) -> None:
    """Break the graph at `what` (an update of `target` by `other`) where it cannot be
    recorded functionally (NOTE(functionalisation)). `stored_back`: an augmented
    operator, whose result Python stores back where `target` came from."""
    refusal = _refusal(tracer, target, other, assignment, stored_back)
    if refusal is not None:
        raise Break("unsupported", f"in-place update ({what}) of {refusal}", hint=HINT)


def _refusal(tracer, target: ArrayValue, other: Value, assignment: bool, stored_back: bool) -> str | None:
    node = target.node
    grad = target.tensor and is_grad_enabled()
    if target.tensor:
        tracer.guards.grad_mode()
    # Under grad mode the tape checks an update of a Tensor's view itself: it runs there.
    if (_is_view(node) and not (stored_back and not grad and not _holds(tracer, target))) \
            or _view_is_live(tracer, node):
        return "a view, or an array a view was taken of"
    if grad and node.users:
        return "a pyjit.Tensor an op has already read (the tape checks such changes at backward)"
    if grad and assignment and (_may_require_grad(tracer, target) or _may_require_grad(tracer, other)):
        return "a Tensor, under grad mode, where a side requires grad (the tape refuses item assignment there)"
    if not target.tensor and _holds_tensor(other):
        return "an array, by a Tensor (NumPy keeps the array's type)"
    if target.source is None:
        return None
    example = input_example(tracer, target)
    if grad and (example.requires_grad or _may_require_grad(tracer, other)):
        return "an input Tensor, under grad mode, where a side requires grad (the tape records or refuses it)"
    array = _array_of(example)
    if not array.flags.writeable:
        tracer.guards.writeable(target.source, False)  # the entry for writeable ones stays first
        return "a read-only input (NumPy raises)"
    for source, other_example, _ in tracer.capture.inputs:
        if source != target.source and np.may_share_memory(array, _array_of(other_example)):
            return f"an input that shares memory with another input ({source})"
    return None


def write(tracer, target: ArrayValue, result: ArrayValue) -> ArrayValue:
    """Make `target` stand for `result` (cast to its dtype); for an input of the compiled
    code, record that the graph's value of it is written back (NOTE(functionalisation))."""
    if result.node.meta.dtype != target.node.meta.dtype:
        result = tracer.call_op(REGISTRY["astype"], (result, ConstantValue(target.node.meta.dtype)), {})
    tracer.capture.rebound.append((target, target.node))  # undone by a rollback (NOTE(capture))
    target.node = result.node
    if target.source is not None:
        tracer.capture.written.setdefault(target.source, target)
        tracer.guards.written(target.source)
    return target


def check_fits(meta, target: ArrayValue, what: str) -> None:
    """Break unless a result of `meta` can be stored into `target` as NumPy stores it."""
    node = target.node
    if not isinstance(meta, TensorMeta) or not meta.with_(dtype=node.meta.dtype).same_as(node.meta):
        raise Break("unsupported", f"in-place update ({what}) with a result whose shape is not the array's",
                    hint=HINT)
    if not np.can_cast(meta.dtype, node.meta.dtype, "same_kind"):
        raise Break("unsupported", f"in-place update ({what}) with a {meta.dtype} result NumPy does not cast "
                    f"to {node.meta.dtype} in place", hint=HINT)


def check_new_input(tracer, source, example) -> None:
    """Break where a new input shares memory with an input the graph writes back."""
    array = _array_of(example)
    for written, value in tracer.capture.written.items():
        if np.may_share_memory(array, _array_of(input_example(tracer, value))):
            raise Break("unsupported", f"{source} shares memory with {written}, which the graph updates in place",
                        hint=HINT)


def input_example(tracer, value: ArrayValue):
    return next(example for source, example, _ in tracer.capture.inputs if source == value.source)


def write_back(target, value) -> None:
    """NOTE(functionalisation): the graph's new value of an input, written into it."""
    if type(target) is np.ndarray:
        target[...] = value
    else:
        target.copy_(value)  # a Tensor: its version counter counts the change


def _is_view(node) -> bool:
    return getattr(node.target, "category", None) == "view"


def _held(tracer) -> list[Value]:
    """Every value the code still holds: on a stack, in a local, in a pending store, or
    inside one of those."""
    todo = [*tracer.stack, *tracer.locals.values(), *tracer.side_effects.values()]
    for caller in tracer.callers():
        todo += [*caller.stack, *caller.locals.values()]
    found, seen = [], set()
    while todo:
        value = todo.pop()
        if id(value) not in seen:
            seen.add(id(value))
            found.append(value)
            todo += contents(value)
    return found


def _holds(tracer, target: Value) -> bool:
    """NOTE(functionalisation): `x[i] += v` updates the view x[i] that only the operator
    holds, and Python then stores the result back into x[i] (index_put): the view may
    stand for an array of its own."""
    return any(value is target for value in _held(tracer))


def _view_is_live(tracer, node) -> bool:
    """Whether a value the code still holds is a view of `node` (the write would show
    through it); a view used up as an op's argument is no longer seen."""
    if not any(_is_view(user) for user in node.users):
        return False
    for value in _held(tracer):
        base = value.node if isinstance(value, ArrayValue) else None
        while base is not None and _is_view(base):
            base = base.args[0]
            if base is node:
                return True
    return False


def _may_require_grad(tracer, value: Value) -> bool:
    """Whether `value` depends on an input Tensor that requires grad."""
    if isinstance(value, SequenceValue):
        return any(_may_require_grad(tracer, item) for item in value.items)
    if not isinstance(value, ArrayValue):
        return False
    requiring = {node for _, example, node in tracer.capture.inputs
                 if isinstance(example, Tensor) and example.requires_grad}
    return value.node.depends_on(requiring)


def _holds_tensor(value: Value) -> bool:
    if isinstance(value, ArrayValue):
        return value.tensor
    return isinstance(value, SequenceValue) and any(map(_holds_tensor, value.items))


def _array_of(example):
    return example._array if isinstance(example, Tensor) else example
