"""Iteration over symbolic values, materialised for loops to unroll
(NOTE(loop-unrolling) in control_flow.py): `iter`, `enumerate`, `zip`, `reversed`.
"""

from __future__ import annotations

import builtins

from .. import config
from .breaks import Break
from .inline import call_special
from .operators import subscript
from .values import ArrayValue, ConstantValue, DictValue, IteratorValue, ObjectValue, SequenceValue, Value, describe

ITERATOR_BUILTINS = (builtins.iter, builtins.enumerate, builtins.zip, builtins.reversed)
_ITERABLE_CONSTANTS = (tuple, list, str, bytes, range)


def iterate(tracer, value: Value) -> IteratorValue:
    """`iter(value)`, with the items it yields materialised; an iterator is its own."""
    if isinstance(value, IteratorValue):
        return value
    if isinstance(value, SequenceValue):
        return IteratorValue(value.items, of_list=value if value.kind is list else None)
    if isinstance(value, DictValue):  # its keys (NOTE(dict-views))
        return tracer.side_effects.view(tracer, value, "keys")
    if isinstance(value, ConstantValue) and type(value.value) in _ITERABLE_CONSTANTS:
        try:
            _check_unroll_length(len(value.value))
        except OverflowError:  # a range longer than an index can say
            _check_unroll_length(float("inf"))
        items = [ConstantValue(item) for item in value.value]
        if type(value.value) is list:
            return IteratorValue(items, rebuildable=False)
        return IteratorValue(items, made_by=(builtins.iter, [], value.value))
    if isinstance(value, ArrayValue):
        return IteratorValue(_rows(tracer, value), exact=False)
    if isinstance(value, ObjectValue):
        iterator = call_special(tracer, value, "__iter__")  # a class's own, traced like any call
        if iterator is not None:
            return iterate(tracer, iterator)
    raise Break("unsupported", f"a loop over {describe(value)} is not unrolled",
                hint="loops over tuples, lists, ranges, strings, arrays and enumerate/zip/reversed of them are "
                     "unrolled; this one runs in Python")


def consume(iterator: IteratorValue) -> list[Value]:
    """The items `iterator` has left, which it then no longer has."""
    items = iterator.remaining()
    iterator.position += len(items)
    return items


def _check_unroll_length(length: float) -> None:
    if length > config.unroll_limit:
        raise Break("unsupported", f"a loop over {length} items would unroll beyond config.unroll_limit "
                    f"({config.unroll_limit} instructions)", hint="the loop runs in Python")


def _rows(tracer, array: ArrayValue) -> list[Value]:
    """`x[0], x[1], ...`: what iterating an array gives, each a getitem op."""
    meta = array.node.meta
    if meta.ndim == 0:
        raise Break("user_error", "TypeError: iteration over a 0-d array")
    if type(meta.shape[0]) is not int:
        raise Break("unsupported", "iterating an array of symbolic length", hint="mark the size static with "
                    "dynamic=False")
    _check_unroll_length(meta.shape[0])
    return [subscript(tracer, array, ConstantValue(i)) for i in range(meta.shape[0])]


def iterator_builtin(tracer, fn, args: list[Value], kwargs: dict[str, Value]) -> IteratorValue:
    """`iter(x)`, `enumerate(x, start)`, `zip(*xs)` and `reversed(x)`, materialised at once:
    their arguments are sequences (which nothing changes during the trace but the trace
    itself) or iterators nothing else holds, so taking every item now is not observable.
    `made_by` keeps what they were made of, for a graph break to rebuild them."""
    if fn is builtins.iter and len(args) == 1 and not kwargs:
        return iterate(tracer, args[0])
    if fn is builtins.enumerate and args and len(args) + len(kwargs) <= 2 and set(kwargs) <= {"start"}:
        start = args[1] if len(args) == 2 else kwargs.get("start", ConstantValue(0))
        if not (isinstance(start, ConstantValue) and type(start.value) is int):
            raise Break("unsupported", "enumerate() with a start that is not an int constant")
        part = _taken(tracer, args[0])
        items = consume(part[0])
        return IteratorValue([SequenceValue(tuple, [ConstantValue(start.value + i), item])
                              for i, item in enumerate(items)], made_by=(fn, [part], start.value))
    if fn is builtins.zip and not kwargs:
        parts = [_taken(tracer, arg) for arg in args]
        rows = zip(*(consume(iterator) for iterator, _ in parts))
        return IteratorValue([SequenceValue(tuple, list(row)) for row in rows], made_by=(fn, parts, None))
    if fn is builtins.reversed and len(args) == 1 and not kwargs:
        if isinstance(args[0], IteratorValue):
            raise Break("user_error", "TypeError: the iterator is not reversible")
        part = _taken(tracer, args[0])
        items = consume(part[0])
        return IteratorValue(items[::-1], made_by=(fn, [part], len(items)))
    raise Break("unsupported", f"{fn.__name__}() with these arguments is not unrolled")


def _taken(tracer, value: Value) -> tuple[IteratorValue, int]:
    """An iterator over `value` for enumerate, zip or reversed to take its items from, and
    its position then (a graph break rebuilds theirs from it: NOTE(loop-unrolling))."""
    iterator = iterate(tracer, value)
    if iterator is value and tracer.holds(value):
        raise Break("unsupported", "an iterator that the code also holds elsewhere is consumed lazily by Python",
                    hint="iterate over the sequence itself")
    return iterator, iterator.position
