"""Ops defined by decomposition into primitives; they carry no rules of their own."""

from __future__ import annotations

import math

import numpy as np

from .registry import composite, op
from .shape_rules import normalize_axes, reduced_shape


def reduced_count(x, axis):
    """How many elements each result of a reduction of `x` over `axis` combines (a size
    expression when the shape is symbolic); the axes are checked as NumPy checks them."""
    return math.prod((x.shape[index] for index in normalize_axes(axis, x.ndim)), start=1)


def widened(x, float16_too: bool):
    """`x` in the dtype numpy.mean and numpy.var sum in: float64 for integers and bools;
    mean (not var) also sums float16 in float32."""
    dtype = np.dtype(x.dtype)
    if dtype.kind in "biu":
        return op.astype(x, np.float64)
    return op.astype(x, np.float32) if float16_too and dtype == np.float16 else x


@composite("mean")
def mean(x, axis=None, keepdims=False):
    """numpy.mean: the sum divided by the number of elements summed."""
    total = op.sum(widened(x, float16_too=True), axis=axis, keepdims=keepdims)
    result = op.divide(total, reduced_count(x, axis))
    return op.astype(result, x.dtype) if np.dtype(x.dtype) == np.float16 else result


@composite("var")
def var(x, axis=None, ddof=0, keepdims=False):
    """numpy.var: the summed squared deviations from the mean divided by count - ddof
    (at least 0)."""
    count = reduced_count(x, axis)
    values = widened(x, float16_too=False)
    centered = op.subtract(values, op.divide(op.sum(values, axis=axis, keepdims=True), count))
    if np.dtype(centered.dtype).kind == "c":  # a complex deviation counts by its magnitude
        centered = op.abs(centered)
    squares = op.sum(op.multiply(centered, centered), axis=axis, keepdims=keepdims)
    return op.divide(squares, max(count - ddof, 0))


@composite("std")
def std(x, axis=None, ddof=0, keepdims=False):
    """numpy.std: the square root of numpy.var."""
    return op.sqrt(op.var(x, axis=axis, ddof=ddof, keepdims=keepdims))


@composite("softmax")
def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    shifted = op.subtract(x, op.max(x, axis=axis, keepdims=True))
    exponentials = op.exp(shifted)
    return op.divide(exponentials, op.sum(exponentials, axis=axis, keepdims=True))


@composite("log_softmax")
def log_softmax(x, axis=-1):
    """(x - max) - log(sum(exp(x - max))) along `axis`."""
    shifted = op.subtract(x, op.max(x, axis=axis, keepdims=True))
    return op.subtract(shifted, op.log(op.sum(op.exp(shifted), axis=axis, keepdims=True)))


@composite("logsumexp")
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis` without overflow: the maximum is taken out first
    (as scipy.special.logsumexp does, an infinite maximum is not, so that all -inf gives
    -inf and any +inf gives +inf instead of NaN). The shift cancels in the derivative."""
    peak = op.max(x, axis=axis, keepdims=True)
    peak = op.where(op.isfinite(peak), peak, 0)
    total = op.sum(op.exp(op.subtract(x, peak)), axis=axis, keepdims=keepdims)
    if not keepdims:
        peak = op.reshape(peak, reduced_shape(x.shape, normalize_axes(axis, x.ndim), False))
    return op.add(op.log(total), peak)


@composite("layer_norm")
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm: x normalized to mean 0 and (biased) variance 1
    over its trailing len(normalized_shape) axes, then scaled by weight and shifted by bias."""
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    count = len(normalized_shape)
    if count > x.ndim or tuple(x.shape[x.ndim - count:]) != normalized_shape:
        raise ValueError(f"layer_norm: normalized_shape {normalized_shape} does not match the "
                         f"trailing axes of an array of shape {tuple(x.shape)}")
    axes = tuple(range(x.ndim - count, x.ndim))
    centered = op.subtract(x, op.mean(x, axis=axes, keepdims=True))
    variance = op.mean(op.multiply(centered, centered), axis=axes, keepdims=True)
    result = op.divide(centered, op.sqrt(op.add(variance, eps)))
    if weight is not None:
        result = op.multiply(result, weight)
    if bias is not None:
        result = op.add(result, bias)
    return result


@composite("gelu")
def gelu(x, approximate="none"):
    """torch.nn.functional.gelu: x * Phi(x) with the normal CDF Phi from erf, or (with
    approximate="tanh") the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "none":
        cdf = op.multiply(op.add(op.erf(op.multiply(x, math.sqrt(0.5))), 1.0), 0.5)
    elif approximate == "tanh":
        cubic = op.add(x, op.multiply(op.multiply(op.multiply(x, x), x), 0.044715))
        cdf = op.multiply(op.add(op.tanh(op.multiply(cubic, math.sqrt(2 / math.pi))), 1.0), 0.5)
    else:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    return op.multiply(x, cdf)


@composite("sigmoid")
def sigmoid(x):
    """1 / (1 + exp(-x)), written with exp(-|x|) so that no exp overflows:
    1 / (1 + e) for x >= 0 and e / (1 + e) below. |x| is taken by choosing -x or x, so the
    derivative at 0 is right (abs would give 0 there)."""
    positive = op.greater_equal(x, 0)
    decay = op.exp(op.where(positive, op.negative(x), x))
    return op.divide(op.where(positive, 1, decay), op.add(decay, 1))


@composite("relu")
def relu(x):
    """max(x, 0) elementwise, in x's dtype; NaN stays NaN. Written as a choice rather
    than numpy.maximum so that the derivative at 0 is 0, as PyTorch's is (maximum splits
    a tie in half)."""
    return op.where(op.less_equal(x, 0), 0, x)


@composite("outer")
def outer(a, b):
    """numpy.outer: every element of flattened `a` times every element of flattened `b`."""
    return op.multiply(op.reshape(a, (-1, 1)), op.reshape(b, (1, -1)))
