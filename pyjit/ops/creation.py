"""Creation ops: new arrays whose values do not depend on the values of an array argument
(`*_like` read only its shape and dtype), so they have no derivative, except full_like
with an array fill value, whose result is that value broadcast.

NOTE(empty-like): empty_like returns uninitialised memory, as NumPy does; its values are
unspecified, so nothing may compare them (its sample rows are empty arrays, and its meta
rule is zeros_like's).
"""

from __future__ import annotations

import contextlib
import math
import operator

import numpy as np

from ..graph import SymInt, TensorMeta, broadcast_shapes
from .gradients import input_grad, is_differentiable, positions
from .registry import op, primitive
from .shape_rules import check_python_integers, device_of, is_array, normalize_axis, operand_dtype, shape_of, ufunc_meta

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
def _arange_meta(start, stop=None, step=None, dtype=None, device=None) -> TensorMeta:
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
    return TensorMeta((length,), dtype, creation_device(device))


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
def arange(xp, start, stop=None, step=None, dtype=None, device=None):
    """numpy.arange: evenly spaced values in [start, stop); `arange(n)` counts from 0
    (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.arange(start, stop, step, dtype=dtype)


# -- creation from a shape ---------------------------------------------------------------
# NOTE(creation-device): the ops that make an array from constants alone (zeros, eye,
# linspace, ...) take `device`, "cpu" (NumPy's only value, and the default) or pyjit's
# "cuda:N", which makes the array with CuPy on that GPU. Nothing in their arguments
# says where the array belongs, so the frontend gives them the device of the frame's
# array inputs (NOTE(devices-follow-inputs) in pyjit/frontend/array_calls.py): the same
# function compiles to a graph that makes NumPy arrays for NumPy inputs and to one that
# makes CuPy arrays for CuPy inputs (the device is a constant of each graph; the guards
# on the inputs' types pick the graph).
def creation_device(device) -> str:
    """The device a creation op makes its array on: "cpu" when none is named (NOTE(creation-device))."""
    if device is None or device == "cpu" or (type(device) is str and device.startswith("cuda:")):
        return device or "cpu"
    raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")


def array_module(xp, device):
    """The array module and the device context an op of `device` computes in."""
    if creation_device(device) == "cpu":
        return xp, contextlib.nullcontext()
    import cupy

    return cupy, cupy.cuda.Device(int(device.partition(":")[2]))


def _size(value):
    if isinstance(value, SymInt):
        return value
    size = operator.index(value)  # TypeError for a float, as NumPy
    if size < 0:
        raise ValueError("negative dimensions are not allowed")
    return size


def normalized_shape(shape) -> tuple:
    """A shape given as an int or a sequence of ints (sizes may be symbolic), checked as NumPy does."""
    sizes = tuple(_size(size) for size in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    static = math.prod(size for size in sizes if type(size) is int)
    if static > _MAX_SIZE:
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")
    return sizes


def _filled_meta(shape, dtype=None, order="C", device=None) -> TensorMeta:
    if order not in ("C", "F"):
        raise ValueError(f"order must be one of 'C', 'F' (got {order!r})")
    return TensorMeta(normalized_shape(shape), np.dtype(float if dtype is None else dtype), creation_device(device))


@primitive("zeros", category="other", meta=_filled_meta)
def zeros(xp, shape, dtype=None, order="C", device=None):
    """numpy.zeros (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.zeros(shape, dtype, order)


@primitive("ones", category="other", meta=_filled_meta)
def ones(xp, shape, dtype=None, order="C", device=None):
    """numpy.ones (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.ones(shape, dtype, order)


@primitive("empty", category="other", meta=_filled_meta)
def empty(xp, shape, dtype=None, order="C", device=None):
    """numpy.empty: values unspecified (NOTE(empty-like), NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.empty(shape, dtype, order)


def _full_meta(shape, fill_value, dtype=None, order="C", device=None) -> TensorMeta:
    """The fill value's dtype unless `dtype` is given (a Python int is int64, as
    np.array(7)); an array fill value broadcasts to the shape."""
    if dtype is None:
        dtype = fill_value.dtype if is_array(fill_value) else np.asarray(fill_value).dtype
    meta = _filled_meta(shape, dtype, order, device)
    if is_array(fill_value):
        if broadcast_shapes(fill_value.shape, meta.shape) != meta.shape:
            raise ValueError(f"could not broadcast input array from shape {fill_value.shape} into shape {meta.shape}")
        return meta.with_(device=device_of(fill_value))
    check_python_integers([fill_value], meta.dtype)
    return meta


def _full_vjp(grad, out, shape, fill_value, dtype=None, order="C", device=None):
    """Only an array fill value gets a gradient: the result is that value broadcast."""
    return None, input_grad(fill_value, grad) if is_differentiable(out) else None


@primitive("full", category="other", meta=_full_meta, vjp=_full_vjp)
def full(xp, shape, fill_value, dtype=None, order="C", device=None):
    """numpy.full: `shape` filled with `fill_value` (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.full(shape, fill_value, dtype, order)


def _matrix_meta(N, M=None, k=0, dtype=float, order="C", device=None) -> TensorMeta:
    operator.index(k)
    return _filled_meta((N, N if M is None else M), dtype, order, device)


@primitive("eye", category="other", meta=_matrix_meta)
def eye(xp, N, M=None, k=0, dtype=float, order="C", device=None):
    """numpy.eye: ones on the k-th diagonal (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.eye(N, M, k, dtype, order)


def _identity_meta(n, dtype=None, device=None) -> TensorMeta:
    return _matrix_meta(n, dtype=dtype, device=device)


@primitive("identity", category="other", meta=_identity_meta)
def identity(xp, n, dtype=None, device=None):
    """numpy.identity (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.identity(n, dtype)


def _tri_meta(N, M=None, k=0, dtype=float, device=None) -> TensorMeta:
    """NumPy builds tri from aranges: a negative size is an empty axis, a float size
    counts like arange (not modelled)."""
    sizes = [size if isinstance(size, SymInt) or size is None else _arange_size(size) for size in (N, M)]
    return _matrix_meta(*sizes, k, dtype, device=device)


def _arange_size(size) -> int:
    if isinstance(size, float):
        raise NotImplementedError("tri with a float size is not captured")
    return max(operator.index(size), 0)


@primitive("tri", category="other", meta=_tri_meta)
def tri(xp, N, M=None, k=0, dtype=float, device=None):
    """numpy.tri: ones at and below the k-th diagonal (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.tri(N, M, k, dtype)


def _linspace_meta(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
                   device=None) -> TensorMeta:
    """`num` values between start and stop; array bounds broadcast, and the samples run
    along `axis` of the result (NumPy's: a new axis, at 0 by default)."""
    if retstep:
        raise NotImplementedError("linspace(retstep=True) has two results: its step is linspace_step's "
                                  "(NOTE(linspace-retstep))")
    if not isinstance(num, SymInt):
        num = operator.index(num)
        if num < 0:
            raise ValueError(f"Number of samples, {num}, must be non-negative.")
    bounds = broadcast_shapes(shape_of(start), shape_of(stop))
    axis = normalize_axis(axis, len(bounds) + 1)
    if dtype is None:  # NumPy: result_type(start, stop, float(num))
        dtype = np.result_type(*(value.dtype if is_array(value) else value for value in (start, stop)), 1.0)
    on = device_of(start, stop) if is_array(start) or is_array(stop) else creation_device(device)
    return TensorMeta(bounds[:axis] + (num,) + bounds[axis:], np.dtype(dtype), on)


def _linspace_vjp(grad, out, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, device=None):
    """Sample i is start + t_i (stop - start) with t_i = i / (num - 1) (i / num without
    the endpoint), so start gets the gradient weighted by 1 - t_i and stop by t_i,
    summed over the samples and back to each bound's shape."""
    if not (is_differentiable(start) or is_differentiable(stop)) or not is_differentiable(out):
        return None, None
    axis = normalize_axis(axis, out.ndim)
    steps = max(int(num) - 1, 1) if endpoint else max(int(num), 1)
    weights = op.divide(positions(grad, axis), steps)
    to_stop = op.sum(op.multiply(grad, weights), axis=axis)
    to_start = op.subtract(op.sum(grad, axis=axis), to_stop)
    return input_grad(start, to_start), input_grad(stop, to_stop)


@primitive("linspace", category="other", meta=_linspace_meta, vjp=_linspace_vjp)
def linspace(xp, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, device=None):
    """numpy.linspace between scalars or arrays (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.linspace(start, stop, num, endpoint, retstep, dtype, axis)


# NOTE(linspace-retstep): a graph call has one result, so `linspace` gives the samples
# and `linspace_step` the step that numpy.linspace(retstep=True) gives beside them (a
# NumPy scalar between scalars, an array of the bounds' shape between arrays, in the
# samples' dtype before any dtype= cast, NaN where there is no division: num <= 1
# with the endpoint, num 0 without); the frontend records both for retstep=True.
def _linspace_step_meta(start, stop, num=50, endpoint=True, device=None) -> TensorMeta:
    samples = _linspace_meta(start, stop, num, endpoint, device=device)
    return TensorMeta(broadcast_shapes(shape_of(start), shape_of(stop)), samples.dtype, samples.device)


def _linspace_step_vjp(grad, out, start, stop, num=50, endpoint=True, device=None):
    """step = (stop - start) / divisions."""
    divisions = int(num) - 1 if endpoint else int(num)
    if divisions <= 0 or not is_differentiable(out):
        return None, None
    share = op.divide(grad, divisions)
    return input_grad(start, op.negative(share)), input_grad(stop, share)


@primitive("linspace_step", category="other", meta=_linspace_step_meta, vjp=_linspace_step_vjp)
def linspace_step(xp, start, stop, num=50, endpoint=True, device=None):
    """The step of numpy.linspace(retstep=True) (NOTE(linspace-retstep), NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.linspace(start, stop, num, endpoint, retstep=True)[1]


def _logspace_meta(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, device=None) -> TensorMeta:
    """base ** linspace(start, stop), in `dtype` when given, else in power's dtype."""
    if is_array(base) or is_array(start) or is_array(stop):
        raise NotImplementedError("logspace between arrays or with an array base is not captured")
    exponents = _linspace_meta(start, stop, num, endpoint, False, None, axis, device)
    powers = ufunc_meta(np.power)(base, exponents)
    return powers if dtype is None else powers.with_(dtype=np.dtype(dtype))


@primitive("logspace", category="other", meta=_logspace_meta)
def logspace(xp, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, device=None):
    """numpy.logspace between scalars (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.logspace(start, stop, num, endpoint, base, dtype, axis)


# -- triangles of an array -----------------------------------------------------------------
def _triangle_meta(m, k=0) -> TensorMeta:
    """A matrix, or a stack of them, keeps its shape; a vector is repeated into N rows."""
    operator.index(k)
    if not is_array(m) or m.ndim == 0:
        raise TypeError("tri() missing 1 required positional argument: 'N'")
    return m if m.ndim >= 2 else m.with_(shape=(m.shape[0], m.shape[0]))


def _triangle_vjp(triangle: str):
    """The gradient keeps the same triangle; a vector's rows all came from it."""
    def vjp(grad, out, m, k=0):
        if not is_differentiable(m):
            return (None,)
        kept = getattr(op, triangle)(grad, k)
        return (input_grad(m, kept if m.ndim >= 2 else op.sum(kept, axis=0)),)
    return vjp


@primitive("triu", category="other", meta=_triangle_meta, vjp=_triangle_vjp("triu"))
def triu(xp, m, k=0):
    """numpy.triu: zeros below the k-th diagonal of the last two axes."""
    return xp.triu(m, k)


@primitive("tril", category="other", meta=_triangle_meta, vjp=_triangle_vjp("tril"))
def tril(xp, m, k=0):
    """numpy.tril: zeros above the k-th diagonal of the last two axes."""
    return xp.tril(m, k)


# -- indices -------------------------------------------------------------------------------
def _indices_meta(dimensions, dtype=int, sparse=False, device=None) -> TensorMeta:
    """One grid of indices per dimension, stacked first; sizes may be symbolic."""
    if sparse:
        raise NotImplementedError("indices(sparse=True) gives a tuple of arrays, which is not captured")
    if not isinstance(dimensions, (tuple, list)):
        raise TypeError(f"object of type '{type(dimensions).__name__}' has no len()")
    sizes = normalized_shape(dimensions)
    return TensorMeta((len(sizes),) + sizes, np.dtype(dtype), creation_device(device))


@primitive("indices", category="other", meta=_indices_meta)
def indices(xp, dimensions, dtype=int, sparse=False, device=None):
    """numpy.indices: grid[i] holds the i-th index of each position of a `dimensions`
    grid (NOTE(creation-device))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.indices(dimensions, dtype)
