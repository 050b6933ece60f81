"""Symbolic values: what the interpreter keeps on its stack and in its locals.

NOTE(value-kinds): the kinds are few and closed, one dataclass each, and none of them
stands for a particular kind of Python object:

| kind | holds | e.g. |
| --- | --- | --- |
| `ArrayValue` | a graph node (its meta: shape, dtype, device) | an input array, `np.sin(x)` |
| `ConstantValue` | a Python value the graph bakes in (sizes may be SymInts) | `2`, `x.shape`, `np.float32`, `slice(1, None)` |
| `SequenceValue` | items, themselves values, of a tuple or list | `(a, b)`, `[x, 1]` |
| `ModuleValue` | a module; attribute reads become registry entries or constants | `np`, `math` |
| `CallableValue` | something the interpreter knows how to call (below) | `np.exp`, `x.sum`, `len` |
| `ObjectValue` | any other object, read through its source (attributes guarded) | a config object |

A `CallableValue` is a NumPy function with a registry entry (`np.exp` -> `pyjit.ops.exp`), an ndarray method
bound to its array (`x.sum`), a supported builtin (`len`, `isinstance`, ...), or
`pyjit.graph_break`. Values read from outside the frame's computation carry their source
(NOTE(sources)), which guards and the transformed code's loads use; computed values have
none. `NULL` is the stack marker of CPython's call protocol.

NOTE(value-later): lists are not tracked for mutation (an in-place list method runs in
Python at a graph break; a store into one splits the frame before it); dicts, sets,
iterators, user functions (not inlined: each is a frame of its own) and pyjit.Tensor or
CuPy inputs are not modelled: the instruction that meets one is a graph break, and the
code after it is resumed where it can be (NOTE(resume-functions)).
"""

from __future__ import annotations

import builtins
import dataclasses
import types
from typing import Any

import numpy as np

from ..autograd.methods import NUMPY_ALIASES
from ..graph import Node
from ..ops import REGISTRY
from .sources import Source


class Value:
    """Base of the value kinds (NOTE(value-kinds))."""

    __slots__ = ()
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class ArrayValue(Value):
    node: Node
    source: Source | None = None
    tensor: bool = False  # a pyjit.Tensor (ops on it are recorded on the tape when the graph runs)


@dataclasses.dataclass(eq=False, slots=True)
class ConstantValue(Value):
    value: Any
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class SequenceValue(Value):
    kind: type  # tuple or list
    items: list[Value]
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class ModuleValue(Value):
    module: types.ModuleType
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class CallableValue(Value):
    """kind: "numpy" (target: a NumPy function with a registry entry), "op" (target: a pyjit.ops entry),
    "method" (target: the ndarray or Tensor method's name, bound to `self`), "user" (target: a Python function,
    the method bound to `self`, inlined: NOTE(inlining)), "builtin" (target: the builtin) or "graph_break"."""

    kind: str
    target: Any
    self: Value | None = None
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class ObjectValue(Value):
    value: Any
    source: Source | None = None


class _Null(Value):
    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = _Null()

# Builtins the interpreter calls itself (NOTE(value-kinds)); pyjit/frontend/calls.py
# says what each does with its arguments.
SUPPORTED_BUILTINS = frozenset({builtins.len, builtins.isinstance, builtins.abs, builtins.min, builtins.max,
                                builtins.int, builtins.float, builtins.bool, builtins.tuple, builtins.list,
                                builtins.range})


def _numpy_functions() -> dict[int, Any]:
    """id(numpy function) -> its registry entry: NumPy's own names (NOTE(op-entry)) and
    the aliases autograd's protocols use (np.absolute is pyjit.ops.abs)."""
    table = {}
    for name in dir(np):
        entry = REGISTRY.get(NUMPY_ALIASES.get(name, name))
        function = getattr(np, name) if entry is not None else None  # reading some names warns
        if callable(function) and not isinstance(function, type):
            table[id(function)] = (function, entry)
    return table


NUMPY_FUNCTIONS = _numpy_functions()


def registry_entry(obj: Any):
    """The registry entry `obj` (a NumPy function) maps to, or None."""
    found = NUMPY_FUNCTIONS.get(id(obj))
    return found[1] if found is not None and found[0] is obj else None


def python_value(value: Value) -> Any:
    """The Python value of a value made only of constants; LookupError otherwise (an
    object is guarded by type only, so nothing computed from it may be baked in)."""
    if isinstance(value, ConstantValue):
        return value.value
    if isinstance(value, SequenceValue):
        return value.kind(python_value(item) for item in value.items)
    raise LookupError(f"{type(value).__name__} has no Python value at trace time")


def is_constant(value: Value) -> bool:
    try:
        python_value(value)
    except LookupError:
        return False
    return True
