"""Python's operators on symbolic values: binary and comparison operators, in-place updates
of arrays (NOTE(functionalisation) in functionalise.py), subscripts, operators on constants
and truth values.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..graph import Node, SymInt
from ..ops import REGISTRY
from ..ops.registry import Op
from ..ops.views import is_basic
from . import functionalise
from .breaks import Break
from .carried_numbers import CarriedNumber
from .values import (ArrayValue, ConstantValue, DictValue, SequenceValue, Value, describe, fold, is_constant,
                     python_value)

# Python operator -> registry entry for arrays (NumPy's meaning of the operator).
ARRAY_OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "mod",
                   "**": "power", "@": "matmul", "<": "less", "<=": "less_equal", "==": "equal",
                   "!=": "not_equal", ">": "greater", ">=": "greater_equal", "&": "bitwise_and",
                   "|": "bitwise_or", "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift"}
# On bool arrays the bitwise operators are the logical ones (the same values).
_BOOL_OPERATORS = {"&": "logical_and", "|": "logical_or", "^": "logical_xor"}
PYTHON_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
                    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
                    ">>": operator.rshift, "<": operator.lt, "<=": operator.le, "==": operator.eq,
                    "!=": operator.ne, ">": operator.gt, ">=": operator.ge}


def binary(tracer, symbol: str, left: Value, right: Value) -> Value:
    """`left <symbol> right` for a binary or comparison operator (not in place)."""
    if isinstance(left, ArrayValue) or isinstance(right, ArrayValue) or _carried_with_numpy(left, right):
        name = _operator_op(symbol, left, right)
        if name is None:
            raise Break("unsupported", f"operator {symbol} on arrays of these dtypes is not in the op registry")
        return tracer.call_op(REGISTRY[name], (left, right), {})
    if isinstance(left, SequenceValue) and isinstance(right, SequenceValue) and symbol == "+" \
            and left.kind is right.kind:
        return SequenceValue(left.kind, left.items + right.items)
    if is_constant(left) and is_constant(right):
        return ConstantValue(fold(PYTHON_OPERATORS[symbol], python_value(left), python_value(right)))
    raise Break("unsupported", f"operator {symbol} on {describe(left)} and {describe(right)}")


def inplace_binary(tracer, symbol: str, target: ArrayValue, other: Value, stored_back: bool = False) -> Value:
    """`target <symbol>= other` on an array (NOTE(functionalisation) in functionalise.py);
    `stored_back`: an augmented operator, whose result Python stores where `target` came from."""
    what = f"{symbol}="
    name = _operator_op(symbol, target, other)
    entry = REGISTRY.get(name) if name is not None else None
    if entry is None:
        raise Break("unsupported", f"in-place update ({what}) with an operator the op registry does not have "
                    "for these dtypes", hint=functionalise.HINT)
    functionalise.refuse_update(tracer, target, other, what, stored_back=stored_back)
    metas = [arg.meta if isinstance(arg, Node) else arg for arg in (target.node, tracer.as_arg(other))]
    functionalise.check_fits(entry.meta(*metas) if isinstance(entry, Op) else None, target, what)
    return functionalise.write(tracer, target, tracer.call_op(entry, (target, other), {}))


def store_array_item(tracer, target: ArrayValue, index: Value, value: Value) -> None:
    """`target[index] = value`, as index_put (NOTE(functionalisation) in functionalise.py)."""
    _refuse_symbolic_slices(tracer, tracer.as_arg(index))
    functionalise.refuse_update(tracer, target, value, "item assignment", assignment=True)
    functionalise.write(tracer, target, tracer.call_op(REGISTRY["index_put"], (target, index, value), {}))


def ufunc_into(tracer, entry, function: np.ufunc, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`function(*args, out=target)`: the result, written into `target` (NOTE(functionalisation))."""
    out = args[function.nin] if len(args) > function.nin else kwargs.pop("out")
    if len(args) > function.nin + 1 or function.nout != 1:
        raise Break("unsupported", f"numpy.{function.__name__} with this out argument")
    inputs = args[:function.nin]
    return into(tracer, out, inputs, lambda: tracer.call_op(entry, tuple(inputs), kwargs), function.__name__)


def into(tracer, out: Value, inputs: list[Value], compute, name: str) -> Value:
    """The result of `compute()` written into the array `out` (the `out=` of the NumPy
    function `name`: NOTE(functionalisation)), which the call returns, as NumPy's does."""
    if isinstance(out, SequenceValue) and len(out.items) == 1:
        out = out.items[0]
    if not isinstance(out, ArrayValue) or out.tensor:
        raise Break("unsupported", f"numpy.{name} with this out argument")
    what = f"numpy.{name} out="
    functionalise.refuse_update(tracer, out, SequenceValue(tuple, tuple(inputs)), what)
    result = compute()
    functionalise.check_fits(result.node.meta if isinstance(result, ArrayValue) else None, out, what)
    return functionalise.write(tracer, out, result)


def is_scalar(value: Value) -> bool:
    """NOTE(scalar-values): a Python number, a NumPy scalar, or a 0-d array the graph
    computed (`a[i, i]`, `x.sum()`, `np.tanh(s)`: NumPy scalars when run eagerly, as the
    graph's 0-d outputs are). Scalars are immutable: `s += y` rebinds `s` to `s + y`, an
    op of the graph when `y` (or `s`) is an array, not an in-place update."""
    if isinstance(value, ArrayValue):
        return value.node.meta.ndim == 0 and value.source is None and not value.tensor
    return isinstance(value, ConstantValue) and isinstance(value.value, (bool, int, float, complex, np.generic))


def _carried_with_numpy(left: Value, right: Value) -> bool:
    """A number a while loop carries and a NumPy scalar: an op of the loop's body, which
    computes the NumPy scalar NumPy would (NOTE(carried-numbers))."""
    values = [value.value if isinstance(value, ConstantValue) else None for value in (left, right)]
    return any(isinstance(value, CarriedNumber) for value in values) and any(isinstance(value, np.generic)
                                                                            for value in values)


def _operator_op(symbol: str, left: Value, right: Value) -> str | None:
    if symbol in _BOOL_OPERATORS and _all_bool(left, right):
        return _BOOL_OPERATORS[symbol]
    return ARRAY_OPERATORS.get(symbol)


def _all_bool(*values: Value) -> bool:
    for value in values:
        if isinstance(value, ArrayValue):
            if value.node.meta.dtype != np.bool_:
                return False
        elif not (isinstance(value, ConstantValue) and type(value.value) is bool):
            return False
    return True


def subscript(tracer, container: Value, index: Value) -> Value:
    """`container[index]`."""
    if isinstance(container, ArrayValue):
        arg = tracer.as_arg(index)
        _refuse_symbolic_slices(tracer, arg)
        entry = REGISTRY["getitem" if is_basic(arg) else "index"]
        return tracer.call_op(entry, (container, index), {})
    if isinstance(container, DictValue):
        return tracer.side_effects.read_item(tracer, container, index)
    if isinstance(container, SequenceValue) and isinstance(index, ConstantValue):
        if isinstance(index.value, slice):
            return SequenceValue(container.kind, fold(operator.getitem, container.items, index.value))
        if isinstance(index.value, int):
            return fold(operator.getitem, container.items, index.value)
    if isinstance(container, ConstantValue) and isinstance(index, ConstantValue):
        return ConstantValue(fold(operator.getitem, container.value, index.value))
    raise Break("unsupported", f"indexing {describe(container)} with {describe(index)}")


def _refuse_symbolic_slices(tracer, index: Any) -> None:
    """Slice bounds are static, or expressions of the index of a loop being captured
    (NOTE(loop-capture)), which the body's code computes from the index it is given."""
    symbols = {name for body in tracer.capture.bodies if body.index is not None for name in body.index.symbols()}
    items = index if type(index) is tuple else (index,)
    for item in items:
        if type(item) is slice and any(not (isinstance(part, (int, type(None))) or (
                isinstance(part, SymInt) and part.symbols() <= symbols)) for part in (item.start, item.stop, item.step)):
            raise Break("unsupported", "a slice bound that is a symbolic size",
                        hint="mark the size static with dynamic=False")


def constant_op(fn, value: Value, symbol: str) -> ConstantValue:
    """`fn` applied to a constant at trace time; the error Python would raise is the
    user's own."""
    if isinstance(value, ConstantValue):
        try:
            return ConstantValue(fn(value.value))
        except Break:  # a number a while loop carries (NOTE(carried-numbers))
            raise
        except Exception as error:
            raise Break("user_error", f"{type(error).__name__}: {error}") from error
    raise Break("unsupported", f"operator {symbol} on {describe(value)}")


def truth(value: Value) -> bool:
    """The truth value of `value` where the trace knows it; an array's depends on its data."""
    if isinstance(value, ArrayValue):
        raise Break("data_dependent", "the truth value of an array depends on its values",
                    hint="use np.where, or compute the condition outside the compiled function")
    if isinstance(value, DictValue):
        return bool(value.keys())
    if isinstance(value, SequenceValue):
        return bool(value.items)
    if isinstance(value, ConstantValue):
        return constant_op(bool, value, "bool").value
    raise Break("unsupported", f"the truth value of {describe(value)}")
