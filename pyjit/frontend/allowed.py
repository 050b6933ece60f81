"""`pyjit.allow_in_graph(fn)`: a function the graph calls as one op, without the
interpreter reading its code.

NOTE(allow-in-graph): as torch's `allow_in_graph`, a call of an allowed function
becomes one node of the graph, whose target is an op made for the function (category
"other": every backend runs it as it is, on the arrays, when the graph runs), instead
of the function being inlined or breaking the graph. The interpreter never looks
inside it, so it must behave as an op: take arrays and constants, return one array (or
NumPy scalar) whose shape and dtype follow from its inputs' shapes and dtypes, and have
no side effects the program relies on. To learn the result's shape and dtype (the
node's meta) it runs once at capture time on zero-filled arrays of its inputs' shapes
and dtypes (torch runs it on fake tensors). Its calls are captured only on NumPy arrays
of static sizes, and the graph runs it without capture (as `pyjit.disable`): on pyjit.Tensors it would record no gradient and on symbolic sizes its
meta would be one size's, so there the call runs in Python at a graph break.

NOTE(random-factories): `pyjit.rand` and `pyjit.randn` (`dropout` draws its mask with
`rand`) are graph ops the same way, impure (never merged or dropped), so each run of
the graph draws from pyjit's seeded generator where the plain code would, in program
order, and the numbers are the ones the plain run gets. Their meta comes from their
arguments (shape, dtype), never from a draw at capture time, which would shift the
stream; a draw that asks for a gradient or another device runs in Python.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _C
from ..autograd import rand, randn
from ..autograd.tensor import DEFAULT_FLOAT
from ..graph import TensorMeta
from ..ops.registry import Op

_allowed: dict[int, tuple[Callable, Op]] = {}  # id(fn) -> (fn, its op); fn is kept alive


def allow_in_graph(fn: Callable) -> Callable:
    """Mark `fn` so that compiled code records its calls as one graph op (NOTE(allow-in-graph));
    returns `fn`, so it works as a decorator."""
    if not callable(fn):
        raise TypeError(f"pyjit.allow_in_graph takes a function, not {type(fn).__name__}")
    if id(fn) not in _allowed or _allowed[id(fn)][0] is not fn:
        name = getattr(fn, "__name__", type(fn).__name__)
        # The graph runs it as it is, and the frames it starts too.
        uncaptured = _C.CompiledFunction(fn, None) if hasattr(fn, "__code__") else fn
        _allowed[id(fn)] = fn, Op(name, category="other", meta=_meta_rule(fn), doc=f"{name}, allowed in the graph",
                                  impl=lambda xp, *args, **kwargs: uncaptured(*args, **kwargs))
    return fn


def _factory_meta(*size, dtype=None, device=None, requires_grad=False) -> TensorMeta:
    if requires_grad or device not in (None, "cpu"):
        raise NotImplementedError("a draw that requires grad or is on another device is not captured")
    shape = size[0] if len(size) == 1 and type(size[0]) in (tuple, list) else size
    return TensorMeta(tuple(shape), np.dtype(dtype) if dtype is not None else DEFAULT_FLOAT)


for _factory in (rand, randn):  # NOTE(random-factories)
    _allowed[id(_factory)] = _factory, Op(
        _factory.__name__, category="other", meta=_factory_meta, doc=f"pyjit.{_factory.__name__}, drawn in the graph",
        impl=lambda xp, *args, factory=_factory, **kwargs: factory(*args, **kwargs))
    _allowed[id(_factory)][1].pure = False


def makes_tensors(op: Op) -> bool:
    """Whether `op` gives a pyjit.Tensor whatever its arguments (a random factory's)."""
    return not op.pure


def graph_op(fn: Any) -> Op | None:
    """The op standing for `fn` when it was allowed in the graph, else None."""
    found = _allowed.get(id(fn))
    return found[1] if found is not None and found[0] is fn else None


def _meta_rule(fn: Callable) -> Callable:
    def meta(*args, **kwargs):
        result = fn(*map(_example, args), **{name: _example(value) for name, value in kwargs.items()})
        if not isinstance(result, (np.ndarray, np.generic)):
            raise NotImplementedError(f"{getattr(fn, '__name__', fn)} (allowed in the graph) returned a "
                                      f"{type(result).__name__}, not an array")
        return TensorMeta(np.shape(result), np.asarray(result).dtype)

    return meta


def _example(value: Any) -> Any:
    if isinstance(value, TensorMeta):
        if not all(type(size) is int for size in value.shape):
            raise NotImplementedError("a function allowed in the graph is not captured on symbolic sizes")
        return np.zeros(value.shape, value.dtype)
    if type(value) in (tuple, list):
        return type(value)(map(_example, value))
    return value
