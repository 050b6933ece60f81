"""Symbolic values: what the interpreter keeps on its stack and in its locals.

NOTE(value-kinds): the kinds are few and closed, one dataclass each, and none of them
stands for a particular kind of Python object:

| kind | holds | e.g. |
| --- | --- | --- |
| `ArrayValue` | a graph node (its meta: shape, dtype, device) | an input array, `np.sin(x)` |
| `ConstantValue` | a Python value the graph bakes in (sizes may be SymInts) | `2`, `x.shape`, `np.float32`, `slice(1, None)` |
| `SequenceValue` | items, themselves values, of a tuple or list | `(a, b)`, `[x, 1]` |
| `DictValue` | a dict's items (keys constants, values values) in order, or a set's | `{"w": x}`, `{1, 2}` |
| `ModuleValue` | a module; attribute reads become registry entries or constants | `np`, `math` |
| `CallableValue` | something the interpreter knows how to call (below) | `np.exp`, `x.sum`, `len` |
| `ObjectValue` | any other object, read through its source (attributes guarded) | a config object |
| `IteratorValue` | an iterator's items, materialised, and the next one's position | `iter(range(3))`, `zip(a, b)` |

A `CallableValue` is a NumPy function with a registry entry (`np.exp` -> `pyjit.ops.exp`), an ndarray method
bound to its array (`x.sum`), a supported builtin (`len`, `isinstance`, ...), or
`pyjit.graph_break`. Values read from outside the frame's computation carry their source
(NOTE(sources)), which guards and the transformed code's loads use; computed values have
none. `NULL` is the stack marker of CPython's call protocol.

Lists, dicts and sets are mutable values: one value per Python object, whose stores and
method calls are recorded and replayed (NOTE(side-effects) in side_effects.py). A set is
a `DictValue` of kind set (NOTE(sets) in containers.py), not a kind of its own.

NOTE(value-later): iterators the trace did not make and CuPy inputs are not
modelled: the instruction that meets one is a graph break, and the code after it is
resumed where it can be (NOTE(resume-functions)).
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import operator
import types
from typing import Any

import numpy as np

from ..autograd.methods import NUMPY_ALIASES
from ..graph import Node
from ..ops import REGISTRY
from ..ops.registry import NUMPY_SUBMODULES, numpy_function
from .breaks import Break
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
class DictValue(Value):
    """items: key (a constant of a type hashed in C, NOTE(side-effects)) -> value. A dict
    read from a source holds UNREAD for the entries the trace has not read yet, and is
    guarded by its keys only once the trace relies on which keys it has (`keys()`).
    A set (`kind` set, NOTE(sets) in containers.py) maps its elements to MEMBER;
    `history` is the calls (method name, argument values) that make it from an empty set,
    None for a set read from a source (until it is cleared)."""

    items: dict[Any, Value]
    source: Source | None = None
    keys_read: bool = False
    kind: type = dict
    history: list[tuple[str, tuple[Value, ...]]] | None = None

    def keys(self) -> list:
        """The keys, for code whose result depends on which keys there are (len, in, truth)."""
        self.keys_read = True
        return list(self.items)


@dataclasses.dataclass(eq=False, slots=True)
class ModuleValue(Value):
    module: types.ModuleType
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class CallableValue(Value):
    """kind: "numpy" (target: a NumPy function with a registry entry), "op" (target: a pyjit.ops entry),
    "method" (target: the ndarray or Tensor method's name, bound to `self`), "user" (target: a Python function,
    the method bound to `self`, inlined: NOTE(inlining)), "builtin" (target: the builtin), "container_method"
    (target: a list or dict method's name, bound to the list or dict value `self`: NOTE(side-effects)),
    "ufunc_method" (target: "outer", "reduce", "accumulate" or "at", of the "numpy" value `self`:
    NOTE(ufunc-methods) in array_calls.py) or "graph_break"."""

    kind: str
    target: Any
    self: Value | None = None
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class ObjectValue(Value):
    value: Any
    source: Source | None = None


@dataclasses.dataclass(eq=False, slots=True)
class IteratorValue(Value):
    """An iterator the trace steps through (NOTE(loop-unrolling) in control_flow.py): `items`
    are the values it yields, `position` the index of the next one. An iterator over a
    list (`of_list`) reads the list value's items as they are at each step, so it sees
    the list change as Python's list iterator does, and a graph break rebuilds it over
    the list itself. `made_by` is `(enumerate | zip | reversed, parts, start or
    length)` for an iterator those builtins made, `parts` the (iterator, position it
    was at) each took its items from, so that a break can rebuild it from them, live
    where a part iterates a list; `(iter, [], constant)` for one over a constant
    tuple, str, bytes or range, rebuilt as the rest of it (a range stays a range). `rebuildable` is False for a
    constant list's items, which the trace cannot tell apart from another copy of the list; `exact` is False
    for an iterator over an array's rows, which no rebuilt object has the type of (so it is rebuilt only as a
    loop's own iterator, which no code sees)."""

    items: list[Value]
    position: int = 0
    of_list: SequenceValue | None = None
    made_by: tuple | None = None
    rebuildable: bool = True
    exact: bool = True
    source: Source | None = None  # always None: an iterator is never read from the frame

    def next_item(self) -> Value | None:
        """The next item, advancing; None when exhausted."""
        items = self.of_list.items if self.of_list is not None else self.items
        if self.position >= len(items):
            return None
        self.position += 1
        return items[self.position - 1]

    def remaining(self) -> list[Value]:
        """The items not yielded yet (a list's as they are now)."""
        items = self.of_list.items if self.of_list is not None else self.items
        return items[self.position:]


class _Null(Value):
    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = _Null()


class _Unread(Value):
    __slots__ = ()

    def __repr__(self):
        return "UNREAD"


UNREAD = _Unread()  # a dict entry read from a source only when the code reads it


class _Member(Value):
    __slots__ = ()

    def __repr__(self):
        return "MEMBER"


MEMBER = _Member()  # what a set's element maps to in its DictValue: nothing, never read

# Builtins the interpreter calls itself (NOTE(value-kinds)); pyjit/frontend/builtin_calls.py
# says what each does with its arguments.
SUPPORTED_BUILTINS = frozenset({builtins.len, builtins.isinstance, builtins.abs, builtins.min, builtins.max,
                                builtins.int, builtins.float, builtins.bool, builtins.tuple, builtins.list,
                                builtins.range, builtins.slice, builtins.enumerate, builtins.zip,
                                builtins.reversed, builtins.iter, builtins.next, builtins.sum, builtins.getattr,
                                builtins.set, builtins.frozenset, builtins.str, builtins.repr, builtins.ascii,
                                builtins.format, operator.getitem,  # how printed graphs index a tuple
                                # dtype questions, folded on constants (`np.dtype(x.dtype).kind`)
                                np.dtype, np.finfo, np.iinfo})


def _numpy_functions() -> dict[int, Any]:
    """id(numpy function) -> its registry entry: NumPy's own names (NOTE(op-entry)) and
    the aliases autograd's protocols use (np.absolute is pyjit.ops.abs)."""
    table = {}
    for name in dir(np):
        entry = REGISTRY.get(NUMPY_ALIASES.get(name, name))
        function = getattr(np, name) if entry is not None else None  # reading some names warns
        if callable(function) and not isinstance(function, type):
            table[id(function)] = (function, entry)
    for module in NUMPY_SUBMODULES:  # np.linalg.solve, np.fft.rfft (NOTE(numpy-names))
        for name in dir(module):
            function = getattr(module, name)
            if name in REGISTRY and numpy_function(name) is function:
                table[id(function)] = (function, REGISTRY[name])
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


def fold(fn, *args, **kwargs) -> Any:
    """`fn(*args)` on constants at trace time; an error the code would raise is the user's."""
    try:
        return fn(*args, **kwargs)
    except Break:  # a number a while loop carries, used where its value is needed (NOTE(carried-numbers))
        raise
    except Exception as error:
        raise Break("user_error", f"{type(error).__name__}: {error}") from error


def contents(value: Value) -> list[Value]:
    """The values a tuple, list or dict built in the frame (no source) holds; for an
    iterator, what rebuilding it needs: its list, or the items it has left."""
    if value.source is not None:
        return []
    if isinstance(value, IteratorValue):
        parts = [part for part, _ in value.made_by[1]] if value.made_by is not None else []
        return [value.of_list] if value.of_list is not None else parts + value.remaining()
    if isinstance(value, SequenceValue):
        return list(value.items)
    if isinstance(value, DictValue):
        if value.kind is set:  # the constants its calls pass (NOTE(sets) in containers.py)
            return [item for _, arguments in value.history for item in arguments]
        return list(value.items.values())
    return []


def reaches(roots: list[Value], target: Value) -> bool:
    """Whether `target` is one of `roots` or held, at any depth (`contents`), by one."""
    todo, seen = list(roots), set()
    while todo:
        item = todo.pop()
        if item is target:
            return True
        if id(item) not in seen:
            seen.add(id(item))
            todo += contents(item)
    return False


def describe(value: Any) -> str:
    """`value` (a symbolic value or a Python object) in plain words, for break reasons:
    "an array", "a list", "the int 3", "the function numpy.dtype", "a Config object".
    Only types are tested: an object's own __class__ may run user code."""
    kind = type(value)
    if kind is ArrayValue:
        return "a pyjit.Tensor" if value.tensor else "an array"
    if kind in (SequenceValue, DictValue):
        return f"a {value.kind.__name__}"
    if kind is IteratorValue:
        return "an iterator"
    if kind is ModuleValue:
        return f"the module {value.module.__name__}"
    if kind is CallableValue:
        if value.kind in ("method", "container_method"):
            return f"the method {value.target}"
        return f"the function pyjit.ops.{value.target.name}" if value.kind == "op" else describe(value.target)
    if kind in (ConstantValue, ObjectValue):
        return describe(value.value)
    return _describe_object(value)


# Most NumPy functions (np.sort, np.cumsum, ...) are dispatcher objects of NumPy's own type.
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type(np.sort))


def _describe_object(obj: Any) -> str:
    """Reads nothing of `obj` but its exact type, so no code of the user's runs
    (NOTE(no-user-code-at-trace))."""
    kind = type(obj)
    if obj is None or obj is Ellipsis or obj is NotImplemented:
        return repr(obj)
    if kind in (bool, int, float, complex, str, bytes) and len(repr(obj)) <= 24:
        return f"the {kind.__name__} {obj!r}"
    if kind is np.ndarray:
        return "an array"
    if kind is types.ModuleType:
        return f"the module {obj.__name__}"
    if issubclass(kind, type):
        return f"the class {_qualified(obj)}"
    if kind in _FUNCTION_TYPES:
        return f"the function {_qualified(obj)}"
    name = _qualified(kind)
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name} object"


def _qualified(obj: Any) -> str:
    """numpy.dtype, collections.OrderedDict, MyClass (builtins and __main__ go bare). A
    class is read through type's own slots, past any metaclass."""
    if issubclass(type(obj), type):
        module, name = type.__getattribute__(obj, "__module__"), type.__getattribute__(obj, "__qualname__")
    else:  # a function or a ufunc
        module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", obj.__name__)
    if module in (None, "builtins", "__main__"):
        return name
    # The public module: numpy.linalg.solve, numpy.fft.fft, numpy.sort (from numpy._core).
    public = itertools.takewhile(lambda part: not part.startswith("_"), module.split("."))
    return f"{'.'.join(public) or module}.{name}"
