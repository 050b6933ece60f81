"""Differences and 1-D signals: diff (a decomposition), convolve, correlate and interp
(calls into NumPy's or CuPy's own functions, unfused: category "other").

NOTE(convolution-gradients): convolve(a, v, mode) is a slice of the full convolution
(the first (min(n, m) - 1) // 2 terms dropped for "same", min(n, m) - 1 for "valid"),
and correlate(a, v) that of the full convolution of a with conj(v) reversed (its "same"
slice starts at min(n, m) // 2 when v is the longer one: NumPy then correlates v
with a and mirrors the result). The gradient puts the slice's gradient back in a full
one and correlates it, in "valid" mode, with the other operand: for y = a * w,
grad_a = correlate(g, w) and grad_w = correlate(g, a), conjugating as PyTorch's
convention for complex values asks (NOTE(complex-parts)).
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import device_of, normalize_axis


# -- diff ---------------------------------------------------------------------------------
def _edge(value, a, axis: int):
    """A prepend or append value as an array with a's shape and size 1 along `axis` when
    it is a scalar (NumPy broadcasts it so), converted as np.asanyarray converts it."""
    if hasattr(value, "ndim") and value.ndim > 0:
        return value
    shape = tuple(1 if index == axis else size for index, size in enumerate(a.shape))
    dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype
    piece = op.getitem(a, (slice(None),) * axis + (slice(0, 1),))
    return op.broadcast_to(op.full_like(piece, value, dtype=dtype), shape)


@composite("diff")
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """numpy.diff: the n-th difference along `axis` (not_equal for booleans), after
    joining `prepend` and `append` to the ends."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim)
    pieces = [a]
    if prepend is not np._NoValue:
        pieces.insert(0, _edge(prepend, a, axis))
    if append is not np._NoValue:
        pieces.append(_edge(append, a, axis))
    if len(pieces) > 1:
        a = op.concatenate(pieces, axis=axis)
    difference = op.not_equal if np.dtype(a.dtype).kind == "b" else op.subtract
    before = (slice(None),) * axis
    for _ in range(n):
        a = difference(op.getitem(a, before + (slice(1, None),)), op.getitem(a, before + (slice(None, -1),)))
    return a


# -- convolve and correlate (NOTE(convolution-gradients)) ---------------------------------
def _signal_length(value, zero_d_is_vector=True) -> object:
    """The length of a 1-D operand; convolve takes a 0-d one as one element, correlate
    refuses it."""
    if value.ndim > 1:
        raise ValueError("object too deep for desired array")
    if value.ndim == 0 and not zero_d_is_vector:
        raise ValueError("object of too small depth for desired array")
    return value.shape[0] if value.ndim else 1


def mode_name(mode) -> str:
    """full, same or valid, which NumPy also takes as 2, 1 and 0 (checked by NumPy first)."""
    return mode if isinstance(mode, str) else ("valid", "same", "full")[mode]


def _convolution_meta(function, default_mode: str):
    def meta(a: TensorMeta, v: TensorMeta, mode=default_mode) -> TensorMeta:
        n, m = (_signal_length(value, function is np.convolve) for value in (a, v))
        if n == 0:
            raise ValueError("a cannot be empty" if function is np.convolve else "Array arguments cannot be empty")
        if m == 0:
            raise ValueError("v cannot be empty" if function is np.convolve else "Array arguments cannot be empty")
        dtype = function(np.ones(1, dtype=a.dtype), np.ones(1, dtype=v.dtype), mode).dtype  # NumPy's mode check
        length = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode_name(mode)]
        return TensorMeta((length,), dtype, device_of(a, v))
    return meta


def _full_gradient(grad, a, v, mode, same_start):
    """The slice's gradient put back in a gradient of the full result (zeros elsewhere)."""
    n, m = _signal_length(a), _signal_length(v)
    full = n + m - 1
    start = {"full": 0, "same": same_start, "valid": min(n, m) - 1}[mode_name(mode)]
    pieces = [grad]
    if start:
        pieces.insert(0, op.zeros_like(op.broadcast_to(op.getitem(grad, (slice(0, 1),)), (start,))))
    end = full - start - grad.shape[0]
    if end:
        pieces.append(op.zeros_like(op.broadcast_to(op.getitem(grad, (slice(0, 1),)), (end,))))
    return op.concatenate(pieces) if len(pieces) > 1 else grad


def _as_vector(x):
    return op.reshape(x, (1,)) if x.ndim == 0 else x


def _real_for(x, grad):
    if np.dtype(x.dtype).kind != "c" and np.dtype(grad.dtype).kind == "c":
        grad = op.real(grad)
    return input_grad(x, op.reshape(grad, x.shape))


def _reversed(x):
    return op.getitem(x, (slice(None, None, -1),))


def _conjugated(x):
    return op.conjugate(x) if np.dtype(x.dtype).kind == "c" else x


def _product_gradients(full, a, w):
    """For the full convolution a * w: the gradients of a and w."""
    grad_a = op.correlate(full, w, "valid") if is_differentiable(a) else None
    grad_w = op.correlate(full, a, "valid") if is_differentiable(w) else None
    return grad_a, grad_w


def _convolve_vjp(grad, out, a, v, mode="full"):
    a1, v1 = _as_vector(a), _as_vector(v)
    full = _full_gradient(grad, a1, v1, mode, (min(a1.shape[0], v1.shape[0]) - 1) // 2)
    grad_a, grad_v = _product_gradients(full, a1, v1)
    return (None if grad_a is None else _real_for(a, grad_a), None if grad_v is None else _real_for(v, grad_v))


@primitive("convolve", category="other", meta=_convolution_meta(np.convolve, "full"), vjp=_convolve_vjp)
def convolve(xp, a, v, mode="full"):
    """numpy.convolve: the discrete linear convolution of two 1-D sequences."""
    return xp.convolve(a, v, mode)


def _correlate_vjp(grad, out, a, v, mode="valid"):
    """correlate(a, v) is a slice of the full convolution of a with w = conj(v) reversed:
    the gradient of w, reversed and conjugated, is v's."""
    a1, v1 = _as_vector(a), _as_vector(v)
    n, m = a1.shape[0], v1.shape[0]
    same_start = (min(n, m) - 1) // 2 if n >= m else min(n, m) // 2
    full = _full_gradient(grad, a1, v1, mode, same_start)
    grad_a, grad_w = _product_gradients(full, a1, _conjugated(_reversed(v1)))
    grad_v = None if grad_w is None else _conjugated(_reversed(grad_w))
    return (None if grad_a is None else _real_for(a, grad_a), None if grad_v is None else _real_for(v, grad_v))


@primitive("correlate", category="other", meta=_convolution_meta(np.correlate, "valid"), vjp=_correlate_vjp)
def correlate(xp, a, v, mode="valid"):
    """numpy.correlate: sum_n a[n + k] conj(v[n]) for the lags `mode` keeps."""
    return xp.correlate(a, v, mode)


# -- interp -------------------------------------------------------------------------------
def _interp_meta(x, points, values, left=None, right=None, period=None) -> TensorMeta:
    for name, value in (("xp", points), ("fp", values)):
        if not isinstance(value, TensorMeta) or value.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array" if isinstance(value, TensorMeta)
                             else f"{name} must be an array of the graph")
    if points.shape[0] != values.shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    if points.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    sample = np.interp(np.zeros(1, dtype=getattr(x, "dtype", np.float64)), np.zeros(1, dtype=points.dtype),
                       np.zeros(1, dtype=values.dtype), left, right, period)  # NumPy's checks of period
    shape = x.shape if isinstance(x, TensorMeta) else ()
    return TensorMeta(shape, sample.dtype, device_of(x, points, values))


@primitive("interp", category="other", meta=_interp_meta)
def interp(xp, x, points, values, left=None, right=None, period=None):
    """numpy.interp(x, xp, fp): piecewise-linear interpolation of the points (xp, fp) at
    x. No derivative (PyTorch has no interp either)."""
    return xp.interp(x, points, values, left, right, period)
