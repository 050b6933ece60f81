"""The op registry: one entry per op, everything about the op side by side.

NOTE(op-entry): an `Op` holds
  * `impl(xp, *args, **kwargs)`: the computation through an array module, NumPy on the
    CPU and CuPy on the GPU (the same code; `xp` is picked from the arguments);
  * `meta(*args, **kwargs)`: shape, dtype and device of the result from the arguments'
    metas (NOTE(meta-protocol) in pyjit/graph/meta.py);
  * `vjp(grad, out, *args, **kwargs)`: the gradient of each positional argument given the
    gradient of the result, written with registry ops (so it runs on arrays, records into
    graphs, and runs on autograd tensors alike); it returns a tuple with an entry for each
    leading positional argument (trailing ones it leaves out get none), None where no
    gradient flows, a list for a sequence argument. An op with
    `vjp=None` has no derivative (integer, boolean or index results);
  * `formula(*args, **kwargs)`: for pointwise ops, the scalar expression a renderer
    translates into C or CUDA (pyjit/ops/formula.py);
  * `reduction`: for reductions, how a kernel combines (NOTE(reduction-rule));
  * `index_rule`: for views, where an element of the view is in its source
    (NOTE(view-index-rule) in pyjit/ops/views.py);
  * `category`: pointwise, reduction, matmul, view or other;
  * `numpy_impl(*args, **kwargs)`: the computation on NumPy arguments with nothing in
    between (the ufunc itself for ufunc ops, else `impl` with NumPy bound), which
    straight-line code calls (NOTE(straight-line-code) in pyjit/graph/printer.py).
A `Composite` is a decomposition into registry ops and has no rules of its own: called
on arrays it computes, called on graph nodes it records its primitives, and its
derivative is that of its primitives.

Calling an entry dispatches on its arguments (NOTE(dispatch-protocol)).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import numpy

CATEGORIES = ("pointwise", "reduction", "matmul", "view", "other")

REGISTRY: dict[str, Op | Composite] = {}


# NOTE(reduction-rule): a reduction's entry says how a kernel computes it, and the
# kernel writers know reductions only through it (pyjit/codegen/cfamily/reductions.py):
# `combine`, the scalar op (pyjit/ops/formula.py) that folds one more value into the
# accumulator; `identity(dtype)`, the value an accumulator of the result's dtype starts
# from (for max and min the lowest and highest value, so a renderer needs no special
# first step); `accumulator(dtype)`, the dtype that accumulates values of `dtype` (float
# sums in float64, integer sums and products in uint64, where they wrap around as
# NumPy's do; by default `dtype`); `openmp`, the OpenMP reduction-clause operator that
# combines as `combine` does (None: the C loop has no clause and runs on one thread,
# `combine` spelled in it); `allows_empty`: False where NumPy refuses an empty axis (max,
# argmax: no identity among the values), so a symbolic axis that may be 0 keeps the
# reduction out of the C launcher and the glue runs it eagerly when it is 0.
# `positional` reductions (argmax, argmin) fold the values with `combine` and keep the
# position of the first element that reached the result (a NaN is the extreme).
def _same_dtype(dtype):
    return dtype


@dataclasses.dataclass(frozen=True)
class ReductionRule:
    combine: str
    identity: Callable
    positional: bool = False
    accumulator: Callable = _same_dtype
    openmp: str | None = None
    allows_empty: bool = True


class Op:
    """A primitive op (NOTE(op-entry))."""

    pure = True  # no side effects: graphs may merge or drop calls whose results are unused

    def __init__(self, name: str, *, category: str, impl: Callable, meta: Callable,
                 vjp: Callable | None = None, formula: Callable | None = None,
                 reduction: ReductionRule | None = None, index_rule: Callable | None = None, doc: str = "",
                 numpy_impl: Callable | None = None):
        if category not in CATEGORIES:
            raise ValueError(f"op {name}: category {category!r} is not one of {CATEGORIES}")
        if (category == "pointwise") != (formula is not None):
            raise ValueError(f"op {name}: pointwise ops, and only they, have a formula")
        if (category == "reduction") != (reduction is not None):
            raise ValueError(f"op {name}: reductions, and only they, have a reduction rule")
        if (category == "view") != (index_rule is not None):
            raise ValueError(f"op {name}: views, and only they, have an index rule")
        self.name = self.__name__ = self.__qualname__ = name
        self.__module__ = "pyjit.ops"  # the printed code reaches entries as pyjit.ops.<name>
        self.__doc__ = doc
        self.category = category
        self.impl = impl
        self.numpy_impl = numpy_impl if numpy_impl is not None else functools.partial(impl, numpy)
        self.meta = meta
        self.vjp = vjp
        self.formula = formula
        self.reduction = reduction
        self.index_rule = index_rule

    def __call__(self, *args, **kwargs):
        dispatcher, xp = _inspect_arguments(args, kwargs)
        if dispatcher is not None:
            return type(dispatcher).__pyjit_dispatch__(dispatcher, self, args, kwargs)
        return self.impl(xp, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<op {self.name} ({self.category})>"


class Composite:
    """An op defined by decomposition into registry ops (NOTE(op-entry))."""

    category = "composite"

    def __init__(self, name: str, decomposition: Callable, doc: str = ""):
        self.name = self.__name__ = self.__qualname__ = name
        self.__module__ = "pyjit.ops"
        self.__doc__ = doc or decomposition.__doc__
        self.decomposition = decomposition

    def __call__(self, *args, **kwargs):
        return self.decomposition(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<composite op {self.name}>"


def register(entry: Op | Composite) -> Op | Composite:
    if entry.name in REGISTRY:
        raise ValueError(f"op {entry.name} is registered twice")
    REGISTRY[entry.name] = entry
    return entry


def primitive(name: str, *, category: str, meta: Callable, vjp: Callable | None = None,
              formula: Callable | None = None, reduction: ReductionRule | None = None,
              index_rule: Callable | None = None):
    """Decorator: register the decorated `impl(xp, ...)` as the primitive op `name`."""
    def wrap(impl: Callable) -> Op:
        return register(Op(name, category=category, impl=impl, meta=meta, vjp=vjp, formula=formula,
                           reduction=reduction, index_rule=index_rule, doc=impl.__doc__ or ""))
    return wrap


def composite(name: str):
    """Decorator: register the decorated function as the composite op `name`."""
    def wrap(decomposition: Callable) -> Composite:
        return register(Composite(name, decomposition))
    return wrap


# NOTE(numpy-names): an entry is named as NumPy names its function: `numpy.<name>`, or for
# numpy.linalg and numpy.fft the name within the submodule (`solve`, `rfft`) when the top
# level has no function of that name. A submodule function whose name the top level
# also uses (numpy.linalg.diagonal, whose axes differ from numpy.diagonal's) is not the
# entry's.
NUMPY_SUBMODULES = (numpy.linalg, numpy.fft)


def numpy_function(name: str) -> Callable | None:
    """The NumPy function the entry `name` stands for (NOTE(numpy-names)), or None."""
    found = getattr(numpy, name, None)
    if callable(found) and not isinstance(found, type):
        return found
    for module in NUMPY_SUBMODULES:
        found = getattr(module, name, None)
        if callable(found) and not isinstance(found, type):
            return found
    return None


class _Namespace:
    """`op.mul(...)`: registry entries by name, looked up when called, so VJPs and
    decompositions in one module may use ops another module registers."""

    def __getattr__(self, name: str) -> Op | Composite:
        try:
            return REGISTRY[name]
        except KeyError:
            raise AttributeError(f"no registry op named {name!r}") from None


op = _Namespace()


# NOTE(dispatch-protocol): an argument whose type defines
# `__pyjit_dispatch__(self, op, args, kwargs)` takes over the call: a graph node records
# it, an autograd tensor records it on the tape. Arguments are searched in order, one
# level into lists and tuples (concatenate's sequence, an index tuple). Otherwise the
# op computes, with CuPy if any argument is a CuPy array and NumPy if not. What a type
# is (plain, dispatcher, CuPy) is decided once per type and remembered: looking the
# attribute up on every call cost more than NumPy's own work on small arrays.
_PLAIN, _DISPATCHER, _CUPY = 0, 1, 2
_type_roles: dict[type, int] = {}


def _role_of(kind: type) -> int:
    role = _type_roles.get(kind)
    if role is None:
        if hasattr(kind, "__pyjit_dispatch__"):
            role = _DISPATCHER
        elif kind.__module__.startswith("cupy"):
            role = _CUPY
        else:
            role = _PLAIN
        _type_roles[kind] = role
    return role


def computes_with_numpy(values) -> bool:
    """Whether registry ops given `values` compute with NumPy (no dispatcher, no CuPy)."""
    dispatcher, xp = _inspect_arguments(tuple(values), {})
    return dispatcher is None and xp is numpy


def _inspect_arguments(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    found_cupy = False
    for value in (*args, *kwargs.values()) if kwargs else args:
        items = value if type(value) in (list, tuple) else (value,)
        for item in items:
            role = _role_of(type(item))
            if role == _DISPATCHER:
                return item, None
            found_cupy = found_cupy or role == _CUPY
    if found_cupy:
        import cupy

        return None, cupy
    return None, numpy
