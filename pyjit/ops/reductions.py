"""Reductions over axes (None, an int, a tuple; negative axes; keepdims), as NumPy does them."""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from ..graph.meta import could_be_one
from .gradients import input_grad, is_differentiable
from .registry import ReductionRule, composite, op, primitive
from .shape_rules import normalize_axes, normalize_axis, reduced_shape


def accumulated_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype np.sum and np.prod give: small integers and bools widen to the platform
    integer of their signedness; everything else is kept."""
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < np.dtype(np.intp).itemsize):
        return np.dtype(np.intp)
    if dtype.kind == "u" and dtype.itemsize < np.dtype(np.uintp).itemsize:
        return np.dtype(np.uintp)
    return dtype


def same_dtype(dtype: np.dtype) -> np.dtype:
    return dtype


def boolean_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(bool)


def is_statically_empty(size) -> bool:
    """A size known to be 0 without a guard (size symbols are never 0, NOTE(symbolic-sizes))."""
    return isinstance(size, int) and size == 0


def check_not_empty(shape: tuple, axes: tuple[int, ...], message: str) -> None:
    """Reductions without an identity (max, argmax, …) refuse to reduce an empty axis."""
    if any(is_statically_empty(shape[axis]) for axis in axes):
        raise ValueError(message)


def reduction_meta(result_dtype, empty_message: str | None = None):
    """The meta rule of a reduction over `axis`; with `empty_message`, reducing an axis
    of size 0 is the ValueError NumPy raises for a reduction without an identity."""
    def meta(x: TensorMeta, axis=None, keepdims=False):
        axes = normalize_axes(axis, x.ndim)
        if empty_message is not None:
            check_not_empty(x.shape, axes, empty_message)
        return TensorMeta(reduced_shape(x.shape, axes, keepdims), result_dtype(x.dtype), x.device)
    return meta


def zero(dtype: np.dtype):
    return False if dtype.kind == "b" else dtype.type(0).item()


def one(dtype: np.dtype):
    return True if dtype.kind == "b" else dtype.type(1).item()


def lowest(dtype: np.dtype):
    """The identity of max: below every value (NaN aside)."""
    if dtype.kind == "f":
        return float("-inf")
    return False if dtype.kind == "b" else int(np.iinfo(dtype).min)


def highest(dtype: np.dtype):
    if dtype.kind == "f":
        return float("inf")
    return True if dtype.kind == "b" else int(np.iinfo(dtype).max)


def summed_in(dtype: np.dtype) -> np.dtype:
    """What a kernel's sum accumulates in (NOTE(reduction-rule)): float sums in float64
    (docs/codegen.md, "Numerics"), integer and bool ones in uint64, wrapping around."""
    if dtype.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.uint64) if dtype.kind in "iub" else dtype


def multiplied_in(dtype: np.dtype) -> np.dtype:
    """What a kernel's product accumulates in: integers in uint64, wrapping around; floats
    in their own dtype."""
    return np.dtype(np.uint64) if dtype.kind in "iub" else dtype


def keep_reduced_dims(value, x, axis, keepdims):
    """A reduction's result (or its gradient) with the reduced axes of `x` kept as size 1,
    so that it broadcasts against `x`."""
    if keepdims:
        return value
    return op.reshape(value, reduced_shape(x.shape, normalize_axes(axis, x.ndim), True))


def expand_reduced(grad, x, axis, keepdims):
    """A reduction's gradient broadcast back over the reduced axes of `x`."""
    return op.broadcast_to(keep_reduced_dims(grad, x, axis, keepdims), x.shape)


@primitive("sum", category="reduction", reduction=ReductionRule("add", zero, accumulator=summed_in, openmp="+"),
           meta=reduction_meta(accumulated_dtype),
           vjp=lambda grad, out, x, axis=None, keepdims=False: (
               input_grad(x, expand_reduced(grad, x, axis, keepdims)),))
def sum_(xp, x, axis=None, keepdims=False):
    """numpy.sum."""
    return xp.sum(x, axis=axis, keepdims=keepdims)


# NOTE(prod-derivative): d prod / d x_i is the product of the other factors. Dividing the
# product by x_i fails where x_i is 0, so the product is taken over the non-zero factors
# (`nonzero`) and the zeros are counted: with no zero among the other factors the
# derivative is nonzero / x_i (x_i != 0) or nonzero (x_i == 0, the only zero); with a
# zero among them it is 0. "No zero among the others" is `zero_count == is_zero`.
def _prod_vjp(grad, out, x, axis=None, keepdims=False):
    if not is_differentiable(x):
        return (None,)
    is_zero = op.equal(x, 0)
    safe = op.where(is_zero, 1, x)
    nonzero = op.prod(safe, axis=axis, keepdims=True)
    zero_count = op.sum(is_zero, axis=axis, keepdims=True)
    others = op.where(is_zero, nonzero, op.divide(nonzero, safe))
    others = op.where(op.equal(zero_count, is_zero), others, 0)
    return (input_grad(x, op.multiply(keep_reduced_dims(grad, x, axis, keepdims), others)),)


@primitive("prod", category="reduction", reduction=ReductionRule("mul", one, accumulator=multiplied_in, openmp="*"),
           meta=reduction_meta(accumulated_dtype), vjp=_prod_vjp)
def prod(xp, x, axis=None, keepdims=False):
    """numpy.prod."""
    return xp.prod(x, axis=axis, keepdims=keepdims)


def _extremum_vjp(grad, out, x, axis=None, keepdims=False):
    """The gradient of max or min, split evenly among the elements that tie for the
    extremum (what PyTorch's amax/amin do). An extremum that equals no element (NaN) gets
    no gradient rather than a division by zero."""
    if not is_differentiable(x):
        return (None,)
    chosen = op.equal(x, keep_reduced_dims(out, x, axis, keepdims))
    ties = op.maximum(op.sum(chosen, axis=axis, keepdims=True), 1)
    share = op.divide(keep_reduced_dims(grad, x, axis, keepdims), op.astype(ties, grad.dtype))
    return (input_grad(x, op.multiply(share, chosen)),)


@primitive("max", category="reduction", vjp=_extremum_vjp,
           reduction=ReductionRule("maximum", lowest, openmp="max", allows_empty=False),
           meta=reduction_meta(same_dtype, "zero-size array to reduction operation maximum which has no identity"))
def max_(xp, x, axis=None, keepdims=False):
    """numpy.max."""
    return xp.max(x, axis=axis, keepdims=keepdims)


@primitive("min", category="reduction", vjp=_extremum_vjp,
           reduction=ReductionRule("minimum", highest, openmp="min", allows_empty=False),
           meta=reduction_meta(same_dtype, "zero-size array to reduction operation minimum which has no identity"))
def min_(xp, x, axis=None, keepdims=False):
    """numpy.min."""
    return xp.min(x, axis=axis, keepdims=keepdims)


def arg_reduction_meta(name: str):
    """argmax/argmin: one axis (an int) or the flattened array (None); an index of dtype intp."""
    def meta(x: TensorMeta, axis=None, keepdims=False):
        axes = tuple(range(x.ndim)) if axis is None else (normalize_axis(axis, x.ndim),)
        check_not_empty(x.shape, axes, f"attempt to get {name} of an empty sequence")
        return TensorMeta(reduced_shape(x.shape, axes, keepdims), np.dtype(np.intp), x.device)
    return meta


@primitive("argmax", category="reduction",
           reduction=ReductionRule("maximum", lowest, positional=True, openmp="max", allows_empty=False),
           meta=arg_reduction_meta("argmax"))
def argmax(xp, x, axis=None, keepdims=False):
    """numpy.argmax: the index of the first maximum."""
    return xp.argmax(x, axis=axis, keepdims=keepdims)


@primitive("argmin", category="reduction",
           reduction=ReductionRule("minimum", highest, positional=True, openmp="min", allows_empty=False),
           meta=arg_reduction_meta("argmin"))
def argmin(xp, x, axis=None, keepdims=False):
    """numpy.argmin: the index of the first minimum."""
    return xp.argmin(x, axis=axis, keepdims=keepdims)


@primitive("any", category="reduction", reduction=ReductionRule("logical_or", zero, openmp="|"),
           meta=reduction_meta(boolean_dtype))
def any_(xp, x, axis=None, keepdims=False):
    """numpy.any."""
    return xp.any(x, axis=axis, keepdims=keepdims)


@primitive("all", category="reduction", reduction=ReductionRule("logical_and", one, openmp="&"),
           meta=reduction_meta(boolean_dtype))
def all_(xp, x, axis=None, keepdims=False):
    """numpy.all."""
    return xp.all(x, axis=axis, keepdims=keepdims)


@composite("sum_to_shape")
def sum_to_shape(x, shape):
    """`x` summed over the axes broadcasting added to `shape`: the gradient of a broadcast."""
    shape = tuple(shape)
    leading = x.ndim - len(shape)
    stretched = tuple(leading + index for index, size in enumerate(shape)
                      if could_be_one(size) and size == 1 and x.shape[leading + index] != 1)
    if not stretched:  # a fresh array of `shape`, not a view of one (NOTE(gradient-stealing))
        return op.sum(x, axis=tuple(range(leading))) if leading else x
    x = op.sum(x, axis=tuple(range(leading)) + stretched, keepdims=True)
    return op.reshape(x, shape) if leading else x
