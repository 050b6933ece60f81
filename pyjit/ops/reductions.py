"""Reductions over axes (None, an int, a tuple; negative axes; keepdims), as NumPy does them."""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from ..graph.meta import could_be_one
from .gradients import input_grad
from .registry import composite, op, primitive
from .shape_rules import normalize_axes, reduced_shape


def accumulated_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype np.sum and np.prod give: small integers and bools widen to the platform
    integer of their signedness; everything else is kept."""
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < np.dtype(np.intp).itemsize):
        return np.dtype(np.intp)
    if dtype.kind == "u" and dtype.itemsize < np.dtype(np.uintp).itemsize:
        return np.dtype(np.uintp)
    return dtype


def reduction_meta(result_dtype):
    def meta(x: TensorMeta, axis=None, keepdims=False):
        axes = normalize_axes(axis, x.ndim)
        return TensorMeta(reduced_shape(x.shape, axes, keepdims), result_dtype(x.dtype), x.device)
    return meta


def expand_reduced(grad, x, axis, keepdims):
    """A reduction's gradient broadcast back over the reduced axes of `x`."""
    if not keepdims:
        grad = op.reshape(grad, reduced_shape(x.shape, normalize_axes(axis, x.ndim), True))
    return op.broadcast_to(grad, x.shape)


@primitive("sum", category="reduction", meta=reduction_meta(accumulated_dtype),
           vjp=lambda grad, out, x, axis=None, keepdims=False: (
               input_grad(x, expand_reduced(grad, x, axis, keepdims)),))
def sum_(xp, x, axis=None, keepdims=False):
    """numpy.sum."""
    return xp.sum(x, axis=axis, keepdims=keepdims)


@composite("sum_to_shape")
def sum_to_shape(x, shape):
    """`x` summed over the axes broadcasting added to `shape`: the gradient of a broadcast."""
    shape = tuple(shape)
    leading = x.ndim - len(shape)
    stretched = tuple(leading + index for index, size in enumerate(shape)
                      if could_be_one(size) and size == 1 and x.shape[leading + index] != 1)
    if leading or stretched:
        x = op.sum(x, axis=tuple(range(leading)) + stretched, keepdims=True)
    return op.reshape(x, shape) if leading else x
