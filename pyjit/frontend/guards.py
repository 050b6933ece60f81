"""Guards: what a compiled frame relied on, recorded on sources (NOTE(sources)) and
compiled to a `_C.GuardProgram` that the frame hook evaluates in C on every call.

NOTE(guards): the interpreter records into a `GuardSet` as it goes: `type`, `identity`,
`constant`, `length`, `dict_keys`, `array`, `tensor`, `grad_mode`, `python`. Recording
the same guard twice keeps one; recording two different ones of a kind on one source
(`type(x) is int`, then `type(x) is float`) is a ValueError, since no frame could pass
both. `compile()` orders the program so that a value is checked before anything is read
from it: sources come parents first (arguments by slot, then the rest as first met, each
followed by the attributes and items read from it), the C checks of each source in that
order, then the Python checks on sources, then the Python checks on no source (grad
mode, builtins not shadowed, shape relations). Python checks are few and last, so a
failing C check settles most misses without running any Python.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import threading
import types
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from .. import _C
from ..autograd import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..graph import ShapeEnv, ShapeGuard, SymInt
from .sources import BuiltinSource, LocalSource, Source

# The types `_C` compares by value in an "eq" check (and tuples of them).
_EQ_TYPES = (int, float, complex, str, bytes, bool, type(None))
# Immutable values compared with their own __eq__ after an exact type check.
_VALUE_TYPES = (slice, range, frozenset, np.dtype, np.generic)


@dataclasses.dataclass(frozen=True)
class ArrayGuard:
    """What the array check of one input requires; also the guard data the recompile
    policy reads back (`changed_dims`).

    shape: per dimension an int (static), a symbol name like "s0" (any size >= 2, equal
    wherever the name appears) or None (any size). strides: None (any), "C", "F" or a
    tuple of byte strides. device: the device id of a non-NumPy array (None: any).
    tensor: `source` holds a pyjit.Tensor and the check reads its array (NOTE(tensor-guards)).
    """

    source: Source
    type: type
    dtype: np.dtype
    shape: tuple[int | str | None, ...]
    strides: str | tuple[int | None, ...] | None = None
    writeable: bool | None = None
    device: int | None = None
    tensor: bool = False

    @property
    def array_source(self) -> Source:
        return self.source.attr("_array") if self.tensor else self.source

    def spec(self) -> dict[str, Any]:
        """The `_C.GuardProgram` array spec."""
        return {"type": self.type, "dtype": self.dtype, "shape": self.shape, "strides": self.strides,
                "writeable": self.writeable, "device": self.device}


class _Check(NamedTuple):
    kind: str
    source: Source | None
    operand: Any
    text: str = ""  # python and compiler checks only


class GuardSet:
    """The guards of one compiled frame (NOTE(guards)).

    `f_globals` is the frame's globals; it is needed only when a guard reads a builtin
    (NOTE(builtin-shadowing))."""

    def __init__(self, f_globals: dict[str, Any] | None = None):
        self._globals = f_globals
        self._checks: dict[tuple, _Check] = {}  # an array check's operand is its ArrayGuard
        self._shape_env: ShapeEnv | None = None
        self._written: dict[Source, None] = {}

    # -- recording ------------------------------------------------------------------------
    def type(self, source: Source, cls: type) -> None:
        """`type(source) is cls` (exact: a subclass fails)."""
        self._add(("type", source), _Check("type", source, cls), lambda old, new: old is new)

    def unpin(self, source: Source, cls: type) -> None:
        """The trace no longer relies on the value at `source`, only on its exact type
        `cls` (an int the graph takes as an input: NOTE(loop-bounds) in loops.py)."""
        self._checks.pop(("eq", source), None)
        self.type(source, cls)

    def identity(self, source: Source, obj: object) -> None:
        """`source is obj`. The program keeps `obj` alive until `pyjit.reset()`."""
        self._add(("id", source), _Check("id", source, obj), lambda old, new: old is new)

    def constant(self, source: Source, value: object) -> None:
        """The graph baked in `value` for `source`.

        NOTE(constant-guards): int, float, complex, str, bytes, bool, None and tuples of
        these are one C "eq" check (same type and value; -0.0 is not 0.0, NaN matches
        NaN). Lists, dicts and tuples holding other values are checked by type, length
        (or keys) and each item in turn. A bound method is checked by its function and
        its object. slice, range, frozenset, NumPy dtypes and NumPy scalars are checked
        by exact type and then by their own `__eq__` (a C method: no Python runs).
        Everything else (modules, functions, classes, instances) is an identity check:
        the graph relied on that very object."""
        if _is_eq_constant(value):
            self._add(("eq", source), _Check("eq", source, value), lambda old, new: repr(old) == repr(new))
        elif type(value) in (tuple, list):
            self.type(source, type(value))
            self.length(source, len(value))
            for index, item in enumerate(value):
                self.constant(source.item(index), item)
        elif type(value) is dict:
            self.dict_keys(source, tuple(value))
            for key, item in value.items():
                self.constant(source.item(key), item)
        elif type(value) is types.MethodType:
            self.type(source, types.MethodType)
            self.identity(source.attr("__func__"), value.__func__)
            self.identity(source.attr("__self__"), value.__self__)
        elif issubclass(type(value), _VALUE_TYPES):  # NOTE(no-user-code-at-trace) in interpreter.py
            self.type(source, type(value))
            self.python(source, value.__eq__, f"{value!r}.__eq__")
        else:
            self.identity(source, value)

    def length(self, source: Source, length: int) -> None:
        self._add(("len", source), _Check("len", source, length), lambda old, new: old == new)

    def dict_keys(self, source: Source, keys: Iterable[Any]) -> None:
        """`source` is a dict (exactly) with these keys in this order."""
        check = _Check("dict_keys", source, tuple(keys))
        self._add(("dict_keys", source), check, lambda old, new: old == new)

    def python(self, source: Source | None, fn: Callable[..., Any], text: str) -> None:
        """`fn(value)` is truthy (`fn()` for no source), described by `text` (the same
        source and text count as the same check). Runs Python on every call unless `fn`
        is a C callable: for rare checks only."""
        self._add(("python", source, text), _Check("python", source, fn, text), lambda old, new: True)

    def compiler(self, compiler: Callable, text: str) -> None:
        """The frame hook's callback compiles with `compiler` (NOTE(compiler-guard) in
        convert.py), checked in C; described by `text`."""
        self._add(("compiler",), _Check("compiler", None, compiler, text), lambda old, new: old is new)

    def array(self, source: Source, example, shape: Iterable[int | str | SymInt | None] | None = None,
              *, strides: str | tuple[int | None, ...] | None = None, writeable: bool | None = None) -> None:
        """`source` is an array like `example` (a NumPy or CuPy array, or anything with
        `dtype`, `shape`, `strides`, `flags` and `device.id`): same type, dtype, device.

        `shape` is what the graph assumed of its sizes: ints (the example's), size
        symbols (names like "s0", or the SymInts of a TensorMeta, whose ShapeEnv then
        supplies the relations between them: NOTE(shape-relations)) or None; by default
        the example's shape, all static. A symbol never stands for 0 or 1 (ValueError).
        `strides`: None (any layout), "C" or "F" (contiguous), "exact" (the example's
        strides; static shapes only) or a tuple. `writeable`: None (either), True, False.
        """
        if isinstance(example, Tensor):
            raise TypeError(f"{source} is a pyjit.Tensor: guard it with tensor()")
        self._add_array(source, example, shape, strides, writeable, tensor=False)

    def tensor(self, source: Source, example: Tensor, shape: Iterable[int | str | SymInt | None] | None = None,
               *, strides: str | tuple[int | None, ...] | None = None, writeable: bool | None = None) -> None:
        """`source` is a pyjit.Tensor of `example`'s exact type whose array is like
        `example`'s (see `array`) and whose `requires_grad` is `example`'s.

        NOTE(tensor-guards): the C array check reads a non-NumPy array through its
        attributes; on a Tensor those are Python properties, and `flags` and `device.id`
        do not exist, so contiguity and device could not be checked at all. So a
        Tensor's checks read its slots, which C reads without running Python: the array
        check is on `x._array` (the NumPy or CuPy array, on the fast NumPy path) and the
        requires_grad check is `x._requires_grad == True`."""
        self.type(source, type(example))
        self._add_array(source, example._array, shape, strides, writeable, tensor=True)
        self.constant(source.attr("_requires_grad"), example.requires_grad)

    def grad_mode(self, enabled: bool | None = None) -> None:
        """Grad mode is `enabled` (default: as it is now)."""
        enabled = is_grad_enabled() if enabled is None else enabled
        fn, text = (is_grad_enabled, "is_grad_enabled()") if enabled else (_grad_disabled, "not is_grad_enabled()")
        check = _Check("python", None, fn, text)
        self._add(("grad_mode",), check, lambda old, new: old is new)

    def written(self, source: Source) -> None:
        """The transformed code writes into the array input at `source` (NOTE(functionalisation)
        in functionalise.py): it is writeable, and shares no memory with another array input
        (a Python check over all of them, after every check on a source)."""
        self.writeable(source, True)
        self._written.setdefault(source)

    def writeable(self, source: Source, writeable: bool) -> None:
        """The array input at `source` (already guarded) is writeable, or read-only."""
        check = self._checks[("array", source)]
        self._checks[("array", source)] = check._replace(operand=dataclasses.replace(check.operand,
                                                                                     writeable=writeable))

    # -- results --------------------------------------------------------------------------
    @property
    def arrays(self) -> tuple[ArrayGuard, ...]:
        """The array guards as compiled (`_as_compiled`): the guard data of this entry that
        `changed_dims` reads back after a miss."""
        return tuple(self._as_compiled(check.operand) for check in self._checks.values() if check.kind == "array")

    def compile(self, frame: _C.FrameInfo | None = None) -> _C.GuardProgram:
        """The guard program (NOTE(guards) gives its order). With `frame`, the frame the
        guards were built from, it also checks that the program holds there (RuntimeError
        with the failing check otherwise: a guard that rejects its own frame is a bug)."""
        checks = [_Check("array", check.operand.array_source, self._as_compiled(check.operand).spec())
                  if check.kind == "array" else check for check in self._checks.values()]
        recorded = [check.operand for check in self._checks.values() if check.kind == "array"]
        checks += self._builtin_checks(checks) + _relation_checks(self._shape_env, recorded)
        checks += _alias_checks(self._written, recorded)
        order = _ordered_sources(check.source for check in checks if check.source is not None)
        index = {source: position for position, source in enumerate(order)}
        checks.sort(key=lambda check: (2, 0) if check.source is None
                    else (int(check.kind == "python"), index[check.source]))
        program = _C.GuardProgram(
            [source.guard_entry(index.get(source.parent)) for source in order],
            [_program_check(check, index) for check in checks],
        )
        if frame is not None and not program.check(frame):
            raise RuntimeError(f"the guards reject the frame they were built from: {program.first_failure(frame)}")
        return program

    # -- helpers --------------------------------------------------------------------------
    def _add(self, key: tuple, check: _Check, same: Callable[[Any, Any], bool]) -> None:
        old = self._checks.get(key)
        if old is None:
            self._checks[key] = check
        elif not same(old.operand, check.operand):
            raise ValueError(f"conflicting guards on {check.source}: {old.kind} {old.operand!r} "
                             f"and {check.kind} {check.operand!r}")

    def _add_array(self, source, example, shape, strides, writeable, tensor: bool) -> None:
        sizes = tuple(example.shape)
        shape = sizes if shape is None else tuple(shape)
        if len(shape) != len(sizes):
            raise ValueError(f"{source} has {len(sizes)} dimensions, not {len(shape)}")
        names = tuple(self._dim_spec(source, dim, size, actual) for dim, (size, actual) in enumerate(zip(shape, sizes)))
        if strides == "exact":
            if any(isinstance(name, str) for name in names):
                raise ValueError(f"exact strides of {source} would depend on its symbolic sizes; use 'C' or 'F'")
            strides = tuple(example.strides)
        device = None if type(example) is np.ndarray else getattr(getattr(example, "device", None), "id", None)
        guard = ArrayGuard(source, type(example), np.dtype(example.dtype), names, strides, writeable, device, tensor)
        # An input read again after a rollback (NOTE(capture)) keeps what the rolled-back
        # trace required of its writeability: guards only become more specific.
        self._add(("array", source), _Check("array", source, guard),
                  lambda old, new: old == new or (new.writeable is None and old == dataclasses.replace(new, writeable=old.writeable)))

    def _as_compiled(self, array: ArrayGuard) -> ArrayGuard:
        """`array` with the ShapeEnv's equalities applied to its symbols: a symbol equal to
        a constant is a static size, one equal to another symbol takes that symbol's name,
        one equal to an expression of others stays (NOTE(shape-relations) checks it)."""
        env = self._shape_env
        if env is None:
            return array
        pinned = dict(filter(None, map(_pinned, env.guards)))
        shape = []
        for size in array.shape:
            if isinstance(size, str) and size in env.hints:
                canonical = _canonical(_symbol(size, env))
                if isinstance(canonical, SymInt):
                    canonical = _lone_symbol(canonical) or size
                size = pinned.get(canonical, canonical)
            shape.append(size)
        return dataclasses.replace(array, shape=tuple(shape))

    def _dim_spec(self, source: Source, dim: int, size, actual: int) -> int | str | None:
        if size is None:
            return None
        if isinstance(size, SymInt):
            name = _lone_symbol(size)
            if name is None or size.hint != actual:
                raise ValueError(f"{source}.shape[{dim}] is {actual}; the graph's size {size} is not a symbol for it")
            if self._shape_env not in (None, size.env):
                raise ValueError("the sizes of one guard set come from one ShapeEnv")
            self._shape_env, size = size.env, name
        if isinstance(size, str):
            if actual < 2:
                raise ValueError(f"{source}.shape[{dim}] is {actual}: sizes 0 and 1 are never symbolic")
            return size
        if size != actual:
            raise ValueError(f"{source}.shape[{dim}] is {actual}, not {size}")
        return int(size)

    def _builtin_checks(self, checks: list[_Check]) -> list[_Check]:
        """NOTE(builtin-shadowing): a name the function body reads resolves to a global
        first and to a builtin only when no such global exists, so a guard on a builtin
        also needs the name absent from the globals. The check holds the frame's globals
        dict (a code object's frames all share their module's) and is C only:
        `globals.keys().isdisjoint((name,))` is one dict lookup."""
        roots = {check.source.root for check in checks if check.source is not None}
        names = sorted(root.name for root in roots if isinstance(root, BuiltinSource))
        if names and self._globals is None:
            raise ValueError(f"guards on the builtins {names} need the frame's globals: GuardSet(f_globals)")
        return [_Check("python", None, functools.partial(self._globals.keys().isdisjoint, (name,)),
                       f"{name!r} not in globals") for name in names]


def _grad_disabled() -> bool:
    return not is_grad_enabled()


def _is_eq_constant(value: object) -> bool:
    if type(value) is tuple:
        return all(_is_eq_constant(item) for item in value)
    return type(value) in _EQ_TYPES


def _program_check(check: _Check, index: dict[Source, int]) -> tuple:
    position = None if check.source is None else index[check.source]
    if check.kind in ("python", "compiler"):
        return (check.kind, position, check.operand, check.text)
    return (check.kind, position, check.operand)


def _ordered_sources(used: Iterable[Source]) -> list[Source]:
    """Every source `used` reads, with its parents: each parent before its children,
    arguments first by slot, other roots and children in the order first met."""
    children: dict[Source | None, list[Source]] = {}
    seen: set[Source] = set()

    def add(source: Source) -> None:
        if source in seen:
            return
        if source.parent is not None:
            add(source.parent)
        seen.add(source)
        children.setdefault(source.parent, []).append(source)

    for source in used:
        add(source)
    order: list[Source] = []
    stack = sorted(children.get(None, []), key=lambda s: (0, s.slot) if isinstance(s, LocalSource) else (1, 0))
    stack.reverse()
    while stack:
        source = stack.pop()
        order.append(source)
        stack.extend(reversed(children.get(source, [])))
    return order


# -- automatic dynamic shapes ---------------------------------------------------------------
class DimChange(NamedTuple):
    source: Source
    dim: int
    old: int
    new: int


def changed_dims(arrays: Iterable[ArrayGuard], frame: _C.FrameInfo) -> list[DimChange]:
    """The static sizes of `arrays` (a previous entry's `GuardSet.arrays`) that differ in
    `frame`, the frame that entry rejected: what the recompile policy makes symbolic.

    An input whose value cannot be read, or is no longer an array of that rank, has no
    changed sizes (its guard failed for another reason). The result keeps the changes
    to or from 0 and 1 too: the policy marks the dimension dynamic, and tracing keeps a
    size of 0 or 1 static anyway (NOTE(symbolic-sizes))."""
    changes = []
    for array in arrays:
        try:
            sizes = tuple(array.array_source.resolve(frame).shape)
        except Exception:  # a property on the way may raise anything; the C check fails then
            continue
        if len(sizes) != len(array.shape):
            continue
        changes += [DimChange(array.source, dim, old, new) for dim, (old, new) in enumerate(zip(array.shape, sizes))
                    if type(old) is int and old != new]
    return changes


# -- shape relations ------------------------------------------------------------------------
# NOTE(shape-relations): the ShapeEnv of the graph's sizes (NOTE(symbolic-sizes)) holds
# the relations between sizes that tracing relied on. Those the array checks already
# express are dropped: a relation that the equalities the ShapeEnv learnt decide (a
# symbol equal to a constant or to another symbol; the array specs use those too, see
# `GuardSet.arrays`), and one that holds whenever every symbol is at least 2 (which the
# C check of a symbol enforces). A symbol learnt equal to an expression of others keeps
# its name in its array spec and gets the relation `s1 == <expression>`. The rest become
# Python checks, printed over the input sizes (`x.shape[0] > y.shape[1]`). A Python check
# sees one value and a relation may span several arrays, so each array involved first
# gets a check that records its sizes in a per-thread store, and the relation checks,
# which run after every check on a source, read it: one program's checks run in order
# on one thread, and threads evaluating the same program at once keep separate stores.


class _SizeStore(threading.local):
    def __init__(self):
        self.sizes: dict[str, int] = {}


def _size_recorder(store: _SizeStore, dims: list[tuple[str, int]]) -> Callable[[Any], bool]:
    """The Python check that stores the sizes of one array's symbols (it always holds)."""

    def record_sizes(array) -> bool:
        shape, sizes = array.shape, store.sizes
        for name, dim in dims:
            sizes[name] = shape[dim]
        return True

    return record_sizes


def _relation_function(store: _SizeStore, guard: ShapeGuard) -> Callable[[], bool]:
    """The Python check of one ShapeGuard on the stored sizes, compiled once from its
    integer form: ShapeGuard.holds computes in Fractions, about 15 µs a call."""
    if isinstance(guard.lhs, SymInt):
        terms = dict(guard.lhs.terms)
        rhs_terms = guard.rhs.terms if isinstance(guard.rhs, SymInt) else {(): Fraction(guard.rhs)}
        for monomial, coeff in rhs_terms.items():
            terms[monomial] = terms.get(monomial, Fraction(0)) - coeff
        # Scaled by the (positive) common denominator: `lhs - rhs <relation> 0`, exactly.
        test = f"{_integer_polynomial(terms)} {guard.relation} 0"
    else:  # a remainder guard `expr % n <relation> r`
        expr = guard.lhs.expr.terms
        scale = math.lcm(*(coeff.denominator for coeff in expr.values()))
        test = f"({_integer_polynomial(expr)}) // {scale} % {guard.lhs.modulus} {guard.relation} {guard.rhs}"
    namespace = {"store": store}
    exec(f"def holds():\n    sizes = store.sizes\n    return {test}\n", namespace)  # text of ints and symbol names
    return namespace["holds"]


def _integer_polynomial(terms: dict[tuple[str, ...], Fraction]) -> str:
    """Python source for `terms` times their common denominator, over `sizes[name]`."""
    scale = math.lcm(*(coeff.denominator for coeff in terms.values()))
    pieces = [str(int(coeff * scale)) + "".join(f"*sizes[{name!r}]" for name in monomial)
              for monomial, coeff in terms.items() if coeff]
    return " + ".join(pieces) or "0"


def _relation_checks(env: ShapeEnv | None, arrays: Iterable[ArrayGuard]) -> list[_Check]:
    if env is None:
        return []
    bound = {name: (array, dim) for array in arrays for dim, name in enumerate(array.shape) if isinstance(name, str)}
    relations = [guard for guard in env.guards if _pinned(guard) is None and _is_open(guard)]
    for name in bound:
        canonical = _canonical(_symbol(name, env))
        if isinstance(canonical, SymInt) and _lone_symbol(canonical) is None:
            relations.append(ShapeGuard(_symbol(name, env), "==", canonical))
    needed = set().union(*(_symbols_of(guard) for guard in relations))
    missing = sorted(needed - bound.keys())
    if missing:
        described = ", ".join(f"{name} ({env.sources.get(name) or 'no source'})" for name in missing)
        raise ValueError(f"the size guards name {described}, which no array guard binds")
    store = _SizeStore()
    records: dict[ArrayGuard, list[tuple[str, int]]] = {}
    for name in sorted(needed):
        array, dim = bound[name]
        records.setdefault(array, []).append((name, dim))
    texts = {name: f"{array.source}.shape[{dim}]" for name, (array, dim) in bound.items()}
    return ([_Check("python", array.array_source, _size_recorder(store, dims), "record_sizes")
             for array, dims in records.items()]
            + [_Check("python", None, _relation_function(store, guard), _relation_text(guard, texts))
               for guard in relations])


class _ArrayStore(threading.local):
    def __init__(self):
        self.arrays: dict[int, Any] = {}


def _array_recorder(store: _ArrayStore, position: int) -> Callable[[Any], bool]:
    def record_array(array) -> bool:
        store.arrays[position] = array
        return True

    return record_array


def _alias_checks(written: dict[Source, None], arrays: list[ArrayGuard]) -> list[_Check]:
    """NOTE(functionalisation): arrays written back share no memory with other array
    inputs; like the shape relations, each array is recorded by a check on its source
    and compared by one check on no source, which runs after them."""
    if not written:
        return []
    store = _ArrayStore()
    targets = [position for position, array in enumerate(arrays) if array.source in written]

    def inputs_do_not_alias() -> bool:
        found = store.arrays
        return not any(np.may_share_memory(found[target], found[other])
                       for target in targets for other in found if other != target)

    names = ", ".join(str(arrays[position].source) for position in targets)
    return ([_Check("python", array.array_source, _array_recorder(store, position), "record_array")
             for position, array in enumerate(arrays)]
            + [_Check("python", None, inputs_do_not_alias, f"no array input shares memory with {names}")])


def _symbols_of(guard: ShapeGuard) -> set[str]:
    lhs = guard.lhs if isinstance(guard.lhs, SymInt) else guard.lhs.expr  # or a remainder `expr % n`
    return lhs.symbols() | (guard.rhs.symbols() if isinstance(guard.rhs, SymInt) else set())


def _is_open(guard: ShapeGuard) -> bool:
    """Whether the array checks leave `guard` undecided."""
    if not isinstance(guard.lhs, SymInt):  # a remainder guard
        return isinstance(_canonical(guard.lhs.expr), SymInt)
    difference, relation = _canonical(guard.lhs) - _canonical(guard.rhs), guard.relation
    if not isinstance(difference, SymInt):
        return False
    if relation in ("<", "<="):
        difference, relation = -difference, {"<": ">", "<=": ">="}[relation]
    if relation == "==" or any(coeff < 0 for monomial, coeff in difference.terms.items() if monomial):
        return True
    # No negative coefficient: the difference is smallest where every symbol is 2.
    least = sum(coeff * 2 ** len(monomial) for monomial, coeff in difference.terms.items())
    return least < 0 if relation == ">=" else least <= 0


def _relation_text(guard: ShapeGuard, texts: dict[str, str]) -> str:
    """The guard with each symbol written as the input size it stands for."""
    return re.sub(r"\b\w+\b", lambda match: texts.get(match[0], match[0]), str(guard))


def _lone_symbol(size: SymInt) -> str | None:
    if len(size.terms) == 1:
        ((monomial, coeff),) = size.terms.items()
        if len(monomial) == 1 and coeff == 1:
            return monomial[0]
    return None


def _symbol(name: str, env: ShapeEnv) -> SymInt:
    return SymInt({(name,): Fraction(1)}, env)


def _canonical(size: int | SymInt) -> int | SymInt:
    """`size` with the equalities the ShapeEnv learnt applied (arithmetic applies them)."""
    return size + 0 if isinstance(size, SymInt) else size


def _pinned(guard: ShapeGuard) -> tuple[str, int] | None:
    """(symbol, size) when `guard` says a symbol equals a constant (`int(s0)` records that)."""
    if guard.relation != "==" or not isinstance(guard.lhs, SymInt):
        return None
    lhs, rhs = _canonical(guard.lhs), _canonical(guard.rhs)
    name = _lone_symbol(lhs) if isinstance(lhs, SymInt) else None
    return (name, rhs) if name is not None and isinstance(rhs, int) else None
