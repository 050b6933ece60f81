"""Cumulative sums and products along one axis, or over the flattened array (axis=None).

Each is a primitive the code generator does not fuse (category "other"): a scan carries
a value from element to element, which the pointwise and reduction kernels do not, so a
graph runs NumPy's (or CuPy's) own function for it. The dtype is np.sum's: small
integers and bools widen to the platform integer. A 0-d array counts as one element
along axis 0, as in NumPy.
"""

from __future__ import annotations

import operator

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable, positions
from .reductions import accumulated_dtype
from .registry import composite, op, primitive
from .shape_rules import normalize_axis


def _cumulative_meta(x: TensorMeta, axis=None) -> TensorMeta:
    if axis is None:
        return TensorMeta((x.numel,), accumulated_dtype(x.dtype), x.device)
    normalize_axis(axis, max(x.ndim, 1))
    return TensorMeta(x.shape if x.ndim else (1,), accumulated_dtype(x.dtype), x.device)


def _along_axis(x, axis):
    """`x` as the scan sees it, and the axis it runs along: flattened for axis=None, a
    0-d array as one element."""
    if axis is None or x.ndim == 0:
        return op.reshape(x, (-1,)), 0
    return x, normalize_axis(axis, x.ndim)


def reverse_cumsum(values, axis: int):
    """The sums from each element to the end of `axis`: the transpose of a cumsum."""
    backwards = (slice(None),) * axis + (slice(None, None, -1),)
    return op.getitem(op.cumsum(op.getitem(values, backwards), axis), backwards)


def _cumsum_vjp(grad, out, x, axis=None):
    if not is_differentiable(x):
        return (None,)
    flat, along = _along_axis(x, axis)
    return (input_grad(x, op.reshape(reverse_cumsum(op.reshape(grad, flat.shape), along), x.shape)),)


@primitive("cumsum", category="other", meta=_cumulative_meta, vjp=_cumsum_vjp)
def cumsum(xp, x, axis=None):
    """numpy.cumsum: running sums along `axis` (of the flattened array when None)."""
    return xp.cumsum(x, axis=axis)


# NOTE(cumprod-derivative): d out_j / d x_i (j >= i) is the product of x_0..x_j without
# x_i. Where no zero comes at or before i along the axis that is out_j / x_i, so the
# gradient is reverse_cumsum(grad * out) / x_i there. After the first zero, every out_j
# with j >= i has that zero among its other factors, so the gradient is 0. At the
# first zero itself it is the sum over j >= i of grad_j times the running product with
# that zero left out (a cumprod with it replaced by 1). Exact at zeros, no division by 0.
def _cumprod_vjp(grad, out, x, axis=None):
    if not is_differentiable(x):
        return (None,)
    flat, along = _along_axis(x, axis)
    grad, out = op.reshape(grad, flat.shape), op.reshape(out, flat.shape)
    is_zero = op.equal(flat, 0)
    zeros_so_far = op.cumsum(is_zero, along)
    before_zero = op.equal(zeros_so_far, 0)
    first_zero = op.logical_and(is_zero, op.equal(zeros_so_far, 1))
    divided = op.divide(reverse_cumsum(op.multiply(grad, out), along), op.where(before_zero, flat, 1))
    without_zero = op.cumprod(op.where(first_zero, 1, flat), along)
    at_zero = op.sum(op.multiply(op.multiply(grad, without_zero), op.logical_not(before_zero)),
                     axis=along, keepdims=True)
    result = op.where(before_zero, divided, op.where(first_zero, at_zero, 0))
    return (input_grad(x, op.reshape(result, x.shape)),)


@primitive("cumprod", category="other", meta=_cumulative_meta, vjp=_cumprod_vjp)
def cumprod(xp, x, axis=None):
    """numpy.cumprod: running products along `axis` (of the flattened array when None)."""
    return xp.cumprod(x, axis=axis)


# -- the running extremes and logical scans (numpy.maximum.accumulate, ...) ----------------
# NOTE(ufunc-accumulate): `np.maximum.accumulate(x, axis)` and `np.minimum.accumulate`
# keep x's dtype and run NumPy's (CuPy's) own ufunc method along one axis (0 by default,
# as for every ufunc's accumulate), unfused; NaN propagates from where it first appears.
# The gradient of each running extreme goes to the element that set it, the latest of
# tied elements (as PyTorch's cummax and cummin): that element's position is itself a
# running maximum of the positions where x equals the result, and index_add sums the
# gradient there. The logical scans are these on booleans (logical_and is a running
# minimum of x != 0, logical_or a running maximum) and a parity of running counts
# (logical_xor).
def _accumulate_meta(x: TensorMeta, axis=0) -> TensorMeta:
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    normalize_axis(operator.index(axis), x.ndim)
    return x


def _extreme_accumulate_vjp(grad, out, x, axis=0):
    if not is_differentiable(x):
        return (None,)
    axis = normalize_axis(axis, x.ndim)
    here = positions(x, axis)
    setter = op.maximum_accumulate(op.where(op.equal(x, out), here, 0), axis)
    index = tuple(setter if each == axis else positions(x, each) for each in range(x.ndim))
    return (input_grad(x, op.index_add(op.zeros_like(grad), index, grad)),)


@primitive("maximum_accumulate", category="other", meta=_accumulate_meta, vjp=_extreme_accumulate_vjp)
def maximum_accumulate(xp, x, axis=0):
    """numpy.maximum.accumulate: the running maximum along `axis` (NOTE(ufunc-accumulate))."""
    return xp.maximum.accumulate(x, axis=axis)


@primitive("minimum_accumulate", category="other", meta=_accumulate_meta, vjp=_extreme_accumulate_vjp)
def minimum_accumulate(xp, x, axis=0):
    """numpy.minimum.accumulate: the running minimum along `axis` (NOTE(ufunc-accumulate))."""
    return xp.minimum.accumulate(x, axis=axis)


def _truths(x):
    return x if np.dtype(x.dtype).kind == "b" else op.not_equal(x, 0)


@composite("logical_and_accumulate")
def logical_and_accumulate(x, axis=0):
    """numpy.logical_and.accumulate: whether every element so far is true (NOTE(ufunc-accumulate))."""
    return op.minimum_accumulate(_truths(x), axis)


@composite("logical_or_accumulate")
def logical_or_accumulate(x, axis=0):
    """numpy.logical_or.accumulate: whether any element so far is true (NOTE(ufunc-accumulate))."""
    return op.maximum_accumulate(_truths(x), axis)


@composite("logical_xor_accumulate")
def logical_xor_accumulate(x, axis=0):
    """numpy.logical_xor.accumulate: whether an odd number of elements so far are true
    (NOTE(ufunc-accumulate))."""
    _accumulate_meta(x, axis)
    return op.not_equal(op.mod(op.cumsum(_truths(x), axis), 2), 0)
