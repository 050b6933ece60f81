"""Creation ops: new arrays whose values do not depend on the values of an array argument
(`*_like` read only its shape and dtype), so they have no derivative, except full_like
with an array fill value, whose result is that value broadcast.

NOTE(empty-like): empty_like returns uninitialised memory, as NumPy does; its values are
unspecified, so nothing may compare them (its sample rows are empty arrays, and its meta
rule is zeros_like's).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import SymInt, TensorMeta, broadcast_shapes
from .gradients import input_grad, is_differentiable
from .registry import primitive
from .shape_rules import check_python_integers, device_of, is_array, operand_dtype, shape_of

_MAX_SIZE = np.iinfo(np.intp).max


def _like_meta(x, dtype=None) -> TensorMeta:
    dtype = np.dtype(operand_dtype(x)) if dtype is None else np.dtype(dtype)
    return TensorMeta(shape_of(x), dtype, device_of(x))


@primitive("zeros_like", category="other", meta=_like_meta)
def zeros_like(xp, x, dtype=None):
    """numpy.zeros_like: zeros of x's shape, and of its dtype unless `dtype` is given."""
    return xp.zeros_like(x, dtype=dtype)


@primitive("ones_like", category="other", meta=_like_meta)
def ones_like(xp, x, dtype=None):
    """numpy.ones_like."""
    return xp.ones_like(x, dtype=dtype)


@primitive("empty_like", category="other", meta=_like_meta)
def empty_like(xp, x, dtype=None):
    """numpy.empty_like: values unspecified (NOTE(empty-like))."""
    return xp.empty_like(x, dtype=dtype)


def _full_like_meta(x, fill_value, dtype=None) -> TensorMeta:
    """x's shape, x's dtype unless `dtype` is given (never the fill value's: NEP 50 does
    not apply, the value is cast); an array fill value must broadcast to that shape."""
    meta = _like_meta(x, dtype)
    if is_array(fill_value):
        shape = meta.shape
        if fill_value.ndim > len(shape) or broadcast_shapes(fill_value.shape, shape) != shape:
            raise ValueError(f"could not broadcast input array from shape {fill_value.shape} into shape {shape}")
    else:
        check_python_integers([fill_value], meta.dtype)
    return meta.with_(device=device_of(x, fill_value))


def _full_like_vjp(grad, out, x, fill_value, dtype=None):
    """Only an array fill value gets a gradient: the result is that value broadcast."""
    return None, input_grad(fill_value, grad) if is_differentiable(out) else None


@primitive("full_like", category="other", meta=_full_like_meta, vjp=_full_like_vjp)
def full_like(xp, x, fill_value, dtype=None):
    """numpy.full_like: x's shape filled with `fill_value` (a scalar, or an array that
    broadcasts to that shape)."""
    return xp.full_like(x, fill_value, dtype=dtype)


# -- arange ------------------------------------------------------------------------------
# NOTE(arange-length): the meta rule follows NumPy's PyArray_ArangeObj step by step, on
# the bounds as given (NumPy scalars compute in their own precision, as they do there):
# length = ceil((stop - start) / step), 0 or 1 when the quotient underflows to zero, the
# smaller of the real and imaginary lengths for a complex dtype; any OverflowError on
# the way reads "Maximum allowed size exceeded"; then the first two values, start and
# start + step, are stored through the dtype (an integer dtype truncates them to Python
# ints that must fit) and the rest is filled from their difference.
def _arange_meta(start, stop=None, step=None, dtype=None) -> TensorMeta:
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    bounds = (start, stop, step)
    if any(is_array(value) or isinstance(value, type) for value in bounds):
        raise NotImplementedError("arange with an array or a runtime scalar bound has a data-dependent length")
    if dtype is None:
        # NumPy promotes the bounds' dtypes with intp: float32 bounds give float64.
        dtype = np.result_type(np.intp, *(_bound_dtype(value) for value in bounds))
    dtype = np.dtype(dtype)
    if dtype.kind in "mM":
        raise NotImplementedError("arange of datetimes or timedeltas is not supported")
    if dtype.kind in "USV":
        raise TypeError(f"arange() not supported for inputs with DType {type(dtype)}.")
    length, second = _arange_length(start, stop, step, dtype.kind == "c")
    if isinstance(length, int):
        if length * dtype.itemsize > _MAX_SIZE:
            raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum "
                             "possible size.")
        _check_first_values([start, second][:length], dtype)
    if dtype.kind == "b" and length > 2:
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    return TensorMeta((length,), dtype, "cpu")


def _bound_dtype(value) -> np.dtype:
    if isinstance(value, SymInt):
        return np.dtype(np.intp)
    return np.asarray(value).dtype  # a large Python int is uint64 or object, as in NumPy


def _arange_length(start, stop, step, complex_dtype: bool):
    """The length and the second value (NOTE(arange-length)). A symbolic stop with start 0
    and step 1 stays symbolic; other symbolic bounds are specialised to their values."""
    if isinstance(stop, SymInt) and _is_int(start, 0) and _is_int(step, 1) and not stop.could_be_one():
        return stop, 1
    start, stop, step = (int(value) if isinstance(value, SymInt) else value for value in (start, stop, step))
    try:
        length = _quotient_length(stop - start, step, complex_dtype)
        return max(0, length), (start + step if length > 0 else None)
    except OverflowError:
        raise ValueError("Maximum allowed size exceeded") from None


def _quotient_length(difference, step, complex_dtype: bool) -> int:
    quotient = difference / step  # ZeroDivisionError for a zero step, as in NumPy
    if complex_dtype and isinstance(quotient, complex):
        return min(_ceil_length(quotient.real), _ceil_length(quotient.imag))
    value = float(quotient)  # TypeError for a complex quotient, as NumPy's PyFloat_AsDouble
    if quotient == 0 and difference != 0:  # underflow, or a step of inf
        return 0 if math.copysign(1.0, value) < 0 else 1
    return _ceil_length(value)


def _ceil_length(value: float) -> int:
    if math.isnan(value):
        raise ValueError("arange: cannot compute length")
    length = math.ceil(value)  # OverflowError for an infinity
    if not float(-_MAX_SIZE - 1) <= length <= float(_MAX_SIZE):
        raise OverflowError("arange: overflow while computing length")
    # NumPy compares in double precision, where intp's maximum rounds up to 2**63, and
    # its C cast of 2**63 wraps to a negative length: an empty result.
    return length if length <= _MAX_SIZE else 0


def _check_first_values(firsts: list, dtype: np.dtype) -> None:
    """The first two values as NumPy stores them (NOTE(arange-length))."""
    if dtype.kind == "f" and any(type(value) is complex for value in firsts):
        raise TypeError("float() argument must be a string or a real number, not 'complex'")
    if dtype.kind in "iu":
        check_python_integers([int(value) for value in firsts], dtype)


def _is_int(value, expected: int) -> bool:
    return type(value) is int and value == expected


@primitive("arange", category="other", meta=_arange_meta)
def arange(xp, start, stop=None, step=None, dtype=None):
    """numpy.arange: evenly spaced values in [start, stop); `arange(n)` counts from 0."""
    return xp.arange(start, stop, step, dtype=dtype)
