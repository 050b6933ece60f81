"""The builtins the interpreter calls on symbolic values (`len`, `isinstance`, `getattr`,
`tuple`, `sum`, `next`, ...); any other builtin is folded on constants.
"""

from __future__ import annotations

import builtins
import inspect
import operator
import types
from typing import Any

import numpy as np

from ..autograd import Tensor
from ..ops import REGISTRY
from .attributes import load_attr
from .breaks import Break
from .carried_numbers import CarriedNumber
from .containers import build_set
from .iteration import ITERATOR_BUILTINS, consume, iterate, iterator_builtin
from .loop_ranges import symbolic_range
from .operators import binary, subscript
from .strings import FORMATTING, format_call
from .values import (NULL, ArrayValue, CallableValue, ConstantValue, DictValue, IteratorValue, ModuleValue,
                     ObjectValue, SequenceValue, Value, describe, fold, is_constant, python_value)


def call_builtin(tracer, fn, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if fn is not builtins.abs and any(isinstance(arg, ConstantValue) and isinstance(arg.value, CarriedNumber)
                                      for arg in (*args, *kwargs.values())):
        # `type(t)`, `isinstance(t, float)` would answer for the stand-in (NOTE(carried-numbers)).
        raise Break("unsupported", f"{getattr(fn, '__name__', 'a builtin')}() on a number a while loop carries")
    if fn is builtins.len and len(args) == 1 and not kwargs:
        return ConstantValue(_length(args[0]))
    if fn is operator.getitem and len(args) == 2 and not kwargs:
        return subscript(tracer, *args)
    if fn is builtins.abs and len(args) == 1 and isinstance(args[0], ArrayValue):
        return tracer.call_op(REGISTRY["abs"], tuple(args), kwargs)
    if fn is builtins.isinstance and len(args) == 2 and _classes(args[1]) is not None:
        return ConstantValue(_isinstance(tracer, args[0], _classes(args[1])))
    if fn is builtins.getattr and len(args) == 2 and not kwargs and isinstance(args[1], ConstantValue) \
            and type(args[1].value) is str:
        return load_attr(tracer, args[0], args[1].value)
    if fn in (builtins.tuple, builtins.list) and len(args) == 1 and not kwargs \
            and isinstance(args[0], (SequenceValue, IteratorValue, ArrayValue, DictValue)):
        return SequenceValue(fn, consume(iterate(tracer, args[0])))
    if fn is builtins.set:  # never folded: a set is mutable (NOTE(sets) in containers.py)
        if kwargs or len(args) > 1:
            raise Break("unsupported", "set() with these arguments")
        made = build_set([])
        for update in args:
            tracer.side_effects.call_method(tracer, made, "update", [update])
        return made
    if fn in ITERATOR_BUILTINS:
        return iterator_builtin(tracer, fn, args, kwargs)
    if fn in FORMATTING or type(getattr(fn, "__self__", None)) is str:
        return format_call(fn, args, kwargs)
    if fn is builtins.sum and len(args) == 1 and set(kwargs) <= {"start"} \
            and isinstance(args[0], (SequenceValue, IteratorValue, ArrayValue)):
        return _sum(tracer, consume(iterate(tracer, args[0])), kwargs.get("start", ConstantValue(0)))
    if fn is builtins.next and 1 <= len(args) <= 2 and not kwargs and isinstance(args[0], IteratorValue):
        item = args[0].next_item()
        if item is None and len(args) == 1:
            raise Break("user_error", "StopIteration")
        return args[1] if item is None else item
    if any(isinstance(arg, ArrayValue) for arg in (*args, *kwargs.values())):
        raise Break("data_dependent", f"{fn.__name__}() of an array needs its values",
                    hint="keep the computation in NumPy functions")
    if not all(map(is_constant, (*args, *kwargs.values()))):
        raise Break("unsupported", f"{fn.__name__}() of a value that is not a constant")
    if fn is builtins.range and not kwargs:  # a loop over a range of sizes: NOTE(nested-loops)
        symbolic = symbolic_range(tracer, args)
        if symbolic is not None:
            return symbolic
    made = ConstantValue(fold(fn, *map(python_value, args), **{k: python_value(v) for k, v in kwargs.items()}))
    if fn is builtins.range and not kwargs:  # its bounds, for a loop over it (NOTE(loop-bounds))
        tracer.capture.ranges[id(made.value)] = (made.value, args)
    return made


def _sum(tracer, items: list[Value], start: Value) -> Value:
    """`sum(items, start=start)`: Python's own on constants (it adds floats with
    compensation), else `start + items[0] + ...` when every item is an array."""
    if all(map(is_constant, (*items, start))):
        return ConstantValue(fold(sum, [python_value(item) for item in items], python_value(start)))
    if not all(isinstance(item, ArrayValue) for item in items):
        raise Break("unsupported", "sum() of arrays mixed with other values")
    total = start
    for item in items:
        total = binary(tracer, "+", total, item)
    return total


def _length(value: Value) -> Any:
    if isinstance(value, ArrayValue):
        if value.node.meta.ndim == 0:
            raise Break("user_error", "len() of unsized object")
        return value.node.meta.shape[0]
    if isinstance(value, DictValue):
        return len(value.keys())
    if isinstance(value, SequenceValue):
        return len(value.items)
    if is_constant(value):
        return fold(len, python_value(value))
    raise Break("unsupported", f"len() of {describe(value)} is not modelled")


def _isinstance(tracer, value: Value, classes) -> bool:
    """NOTE(isinstance-folding): `isinstance` is folded only where it runs no Python code,
    which would otherwise run at trace time only and its answer be baked in unguarded: the
    classes' metaclasses keep `type.__instancecheck__` (an ABC's answer changes with
    `register`), and an object whose exact type is not a subclass is asked for its
    `__class__` only where reading that runs no code."""
    for cls in _flatten(classes):
        if not isinstance(cls, type):  # a union, or the user's TypeError: Python says which
            raise Break("unsupported", f"isinstance() with {describe(cls)} as its class argument")
        if inspect.getattr_static(type(cls), "__instancecheck__") is not _TYPE_INSTANCECHECK:
            raise Break("unsupported", f"isinstance() with {cls.__qualname__}, whose metaclass "
                        f"{type(cls).__qualname__} decides instances in Python")
    if isinstance(value, ArrayValue):
        return fold(issubclass, _array_type(tracer, value), classes)  # the input guards check the exact type
    if isinstance(value, (SequenceValue, DictValue)):
        return fold(issubclass, getattr(value, "kind", dict), classes)
    if isinstance(value, (ObjectValue, ModuleValue)):  # the exact type is guarded
        obj = getattr(value, "value", getattr(value, "module", None))
        if issubclass(type(obj), classes) or _plain_class_attribute(type(obj)):
            return fold(isinstance, obj, classes)
        raise Break("unsupported", f"isinstance() of {describe(obj)}, whose __class__ is read in Python")
    if value is NULL or not is_constant(value):
        raise Break("unsupported", f"isinstance() of {describe(value)}")
    return fold(isinstance, python_value(value), classes)


def _classes(value: Value) -> Any:
    """isinstance's second argument at trace time: a constant, where builtin classes the
    interpreter calls (`int`, `tuple`, `set`) are callables; None when it is not known."""
    if isinstance(value, CallableValue) and value.kind == "builtin" and isinstance(value.target, type):
        return value.target
    if isinstance(value, SequenceValue) and value.kind is tuple:
        items = [_classes(item) for item in value.items]
        return None if any(item is None for item in items) else tuple(items)
    return python_value(value) if is_constant(value) else None


def _array_type(tracer, value: ArrayValue) -> type:
    """The exact type of what an array value holds: an input's own (guarded), otherwise
    what the ops give (a Tensor when a Tensor went in, NOTE(tensor-capture))."""
    if value.source is not None:
        return type(next(example for source, example, _ in tracer.capture.inputs if source == value.source))
    return Tensor if value.tensor else np.ndarray


_TYPE_INSTANCECHECK = type.__dict__["__instancecheck__"]
_PLAIN_GETATTRIBUTE = (object.__getattribute__, types.ModuleType.__getattribute__)


def _flatten(classes) -> list:
    """The classes of isinstance's second argument: a class or nested tuples of them."""
    return [cls for item in classes for cls in _flatten(item)] if type(classes) is tuple else [classes]


def _plain_class_attribute(kind: type) -> bool:
    """Whether `obj.__class__` runs no Python code for objects of type `kind`."""
    return kind.__getattribute__ in _PLAIN_GETATTRIBUTE \
        and inspect.getattr_static(kind, "__class__") is object.__dict__["__class__"]
