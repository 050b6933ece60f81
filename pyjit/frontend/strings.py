"""Strings made from symbolic values: f-strings, `str()`, `repr()`, `format()` and the
methods of constant strings, folded at trace time (NOTE(string-formatting)).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..graph import SymInt
from .breaks import Break
from .values import ArrayValue, ConstantValue, Value, describe, fold, python_value

# NOTE(string-formatting): f-strings (FORMAT_VALUE, 3.13's CONVERT_VALUE and FORMAT_*,
# BUILD_STRING), str(), repr(), format() and the methods of a constant string
# (`"n={}".format(n)`) are folded at trace time when what they format is constant (a
# value guarded by value, a size, a string): the result is a constant of the graph's
# code. A symbolic size is specialised first (`int()`, which guards that size), since its
# text is its value. Formatting an array needs its values (a data-dependent break); any
# other object would run its own `__format__`, so that is a break too.
FORMATTING = frozenset({builtins.str, builtins.repr, builtins.ascii, builtins.format})
STR_METHODS = frozenset({"format", "join", "upper", "lower", "strip", "lstrip", "rstrip", "replace", "split",
                          "startswith", "endswith", "zfill", "ljust", "rjust", "center"})
_FIELD_CONVERSIONS = {0: None, 1: builtins.str, 2: builtins.repr, 3: builtins.ascii}  # FORMAT_VALUE's flag bits
# What formats without running user code: builtin scalars, NumPy's, and tuples/lists of them.
_FORMATS_SAFELY = (int, float, complex, str, bytes, bool, type(None), slice, range, np.dtype, np.generic)


def formatted(value: Value, spec: Value | None = None, conversion: int = 0) -> ConstantValue:
    """`format(conversion(value), spec)`, as an f-string's replacement field computes it
    (NOTE(string-formatting))."""
    folded = _formattable(value, "formatting")
    if _FIELD_CONVERSIONS[conversion] is not None:
        folded = fold(_FIELD_CONVERSIONS[conversion], folded)
    return ConstantValue(fold(format, folded, "" if spec is None else _formattable(spec, "formatting")))


def format_call(fn, args: list[Value], kwargs: dict[str, Value]) -> ConstantValue:
    what = f"{getattr(fn, '__name__', 'str')}()"
    return ConstantValue(fold(fn, *(_formattable(arg, what) for arg in args),
                               **{key: _formattable(value, what) for key, value in kwargs.items()}))


def _formattable(value: Value, what: str) -> Any:
    """The Python value to format, its symbolic sizes specialised (NOTE(string-formatting))."""
    if any(isinstance(item, ArrayValue) for item in (value, *getattr(value, "items", ()))):
        raise Break("data_dependent", f"{what} of an array needs its values, which exist only when the graph runs",
                    hint="it runs in Python at a graph break")
    try:
        return _specialised(python_value(value))
    except LookupError:
        raise Break("unsupported", f"{what} of {describe(value)} would run its own code",
                    hint="it runs in Python at a graph break") from None


def _specialised(value: Any) -> Any:
    if type(value) in (tuple, list):
        return type(value)(map(_specialised, value))
    if isinstance(value, SymInt):
        return int(value)
    if not isinstance(value, _FORMATS_SAFELY):
        raise LookupError(type(value).__name__)
    return value
