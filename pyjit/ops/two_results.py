"""The ufuncs with two results, divmod, modf and frexp, as composites that give a tuple (a
graph call has one result), and ldexp, frexp's inverse.

NOTE(two-result-ufuncs): each part is computed as NumPy computes it, so the values are
NumPy's bit for bit:
  * divmod(x1, x2) is (floor_divide(x1, x2), remainder(x1, x2)): NumPy's three loops
    share one routine (npy_divmod), and divmod's dtypes are floor_divide's;
  * modf(x) is (copysign(x - trunc(x), x), trunc(x)) in modf's float dtype: x - trunc(x)
    is exact, copysign gives -0.0 the fraction of a negative whole number, and an
    infinity's fraction is a zero of its sign, as the C library's modf gives;
  * frexp(x) is (ldexp(x, -e), e) with e = frexp_exponent(x): scaling by a power of two
    is exact, and the zeros, infinities and NaNs have exponent 0 and keep their value.
`ldexp` and `frexp_exponent` run NumPy's (CuPy's) ufuncs unfused (category "other":
the scalar formula language has no integer exponent argument). The derivatives come
from the primitives: 1 for the fraction and the mantissa's 2**-e between the points
where they jump, 0 for the whole and floor parts.
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import ufunc_meta


def _ldexp_vjp(grad, out, x1, x2):
    """d ldexp(x1, x2) / d x1 = 2**x2; the integer exponent gets none."""
    return (input_grad(x1, op.ldexp(grad, x2)) if is_differentiable(x1) else None), None


@primitive("ldexp", category="other", meta=ufunc_meta(np.ldexp), vjp=_ldexp_vjp)
def ldexp(xp, x1, x2):
    """numpy.ldexp: x1 * 2**x2, exactly (NOTE(two-result-ufuncs))."""
    return xp.ldexp(x1, x2)


def _frexp_exponent_meta(x: TensorMeta) -> TensorMeta:
    np.frexp.resolve_dtypes((x.dtype, None, None))  # TypeError where frexp has no loop (complex)
    return TensorMeta(x.shape, np.dtype(np.int32), x.device)


@primitive("frexp_exponent", category="other", meta=_frexp_exponent_meta)
def frexp_exponent(xp, x):
    """The exponent numpy.frexp gives: x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1."""
    return xp.frexp(x)[1]


def _in_float_loop(ufunc: np.ufunc, x):
    """x in the float dtype `ufunc`'s loop takes it in (an integer or bool x is converted)."""
    dtype = ufunc.resolve_dtypes((np.dtype(x.dtype), None, None))[0]
    return x if np.dtype(x.dtype) == dtype else op.astype(x, dtype)


@composite("frexp")
def frexp(x):
    """numpy.frexp: (mantissa, exponent) as a tuple (NOTE(two-result-ufuncs))."""
    x = _in_float_loop(np.frexp, x)
    exponent = op.frexp_exponent(x)
    return op.ldexp(x, op.negative(exponent)), exponent


@composite("modf")
def modf(x):
    """numpy.modf: (fractional part, integral part), both with x's sign (NOTE(two-result-ufuncs))."""
    x = _in_float_loop(np.modf, x)
    finite = op.where(op.isinf(x), 0.0, x)  # inf - inf would warn, as NumPy's modf does not
    return op.copysign(op.subtract(finite, op.trunc(finite)), x), op.trunc(x)


@composite("divmod")
def divmod_(x1, x2):
    """numpy.divmod: (x1 // x2, x1 % x2) (NOTE(two-result-ufuncs))."""
    return op.floor_divide(x1, x2), op.mod(x1, x2)
