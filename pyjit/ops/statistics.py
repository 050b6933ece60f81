"""Statistics: the NaN-ignoring reductions, order statistics (median, quantile,
percentile), ptp, count_nonzero, cov and corrcoef as decompositions; average and
histogram as calls into NumPy's (CuPy's) own functions.

NOTE(nan-reductions): nansum, nanprod, nanmax, nanmin, nanmean, nanvar and nanstd
replace each NaN with the reduction's neutral value (where) and reduce, as NumPy's
own implementations do, so their values and dtypes are NumPy's; integer and boolean
inputs hold no NaN and reduce as they are. An all-NaN slice gives NaN, as in NumPy
(nanmax and nanmin without NumPy's RuntimeWarning; nanmean, nanvar and nanstd warn from
their division, with another message). nanargmax and nanargmin are not captured: NumPy raises
ValueError for an all-NaN slice, an error that depends on the values.

NOTE(order-statistics): median, quantile and percentile sort along the axis (the
registry's sort, whose gradient goes back to the sorted positions) and read the
elements at positions computed from `q` and the axis' size at trace time, so `q` must
be a constant (a number or a sequence of them) and the size static; a slice holding a
NaN gives NaN (NaNs sort last), as in NumPy. quantile's methods are linear, lower,
higher, nearest and midpoint (NumPy's default and the four classic ones), computed as
NumPy computes them. An empty axis is left to NumPy (NotImplementedError: the frontend
breaks).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import TensorMeta
from .composites import reduced_count
from .gradients import input_grad, is_differentiable, positions
from .reductions import keep_reduced_dims
from .registry import composite, op, primitive
from .shape_rules import device_of, is_array, normalize_axes, normalize_axis, reduced_shape


# -- NaN-ignoring reductions (NOTE(nan-reductions)) ---------------------------------------
def _has_nans(x) -> bool:
    return np.dtype(x.dtype).kind in "fc"


def _nan_to(x, value):
    return op.where(op.isnan(x), value, x) if _has_nans(x) else x


@composite("nansum")
def nansum(a, axis=None, keepdims=False):
    """numpy.nansum: the sum with NaNs counted as 0."""
    return op.sum(_nan_to(a, 0), axis=axis, keepdims=keepdims)


@composite("nanprod")
def nanprod(a, axis=None, keepdims=False):
    """numpy.nanprod: the product with NaNs counted as 1."""
    return op.prod(_nan_to(a, 1), axis=axis, keepdims=keepdims)


def _nan_extremum(reduce, filler, a, axis, keepdims):
    if not _has_nans(a):
        return reduce(a, axis=axis, keepdims=keepdims)
    result = reduce(_nan_to(a, filler), axis=axis, keepdims=keepdims)
    all_nan = op.all(op.isnan(a), axis=axis, keepdims=keepdims)
    return op.where(all_nan, np.nan, result)


@composite("nanmax")
def nanmax(a, axis=None, keepdims=False):
    """numpy.nanmax: the maximum of the values that are not NaN (NaN for an all-NaN slice)."""
    return _nan_extremum(op.max, -np.inf, a, axis, keepdims)


@composite("nanmin")
def nanmin(a, axis=None, keepdims=False):
    """numpy.nanmin: the minimum of the values that are not NaN (NaN for an all-NaN slice)."""
    return _nan_extremum(op.min, np.inf, a, axis, keepdims)


def _divided(total, count):
    """total / count in total's dtype, as NumPy's nan functions divide (in place)."""
    result = op.divide(total, count)
    return result if np.dtype(result.dtype) == np.dtype(total.dtype) else op.astype(result, total.dtype)


def _not_nan_count(a, axis, keepdims):
    return op.sum(op.logical_not(op.isnan(a)), axis=axis, keepdims=keepdims)


@composite("nanmean")
def nanmean(a, axis=None, keepdims=False):
    """numpy.nanmean: the sum of the values that are not NaN over their count."""
    if not _has_nans(a):
        return op.mean(a, axis=axis, keepdims=keepdims)
    total = op.sum(_nan_to(a, 0), axis=axis, keepdims=keepdims)
    return _divided(total, _not_nan_count(a, axis, keepdims))


@composite("nanvar")
def nanvar(a, axis=None, ddof=0, keepdims=False):
    """numpy.nanvar: the variance of the values that are not NaN (NaN where no more than
    ddof values are left)."""
    if not _has_nans(a):
        return op.var(a, axis=axis, ddof=ddof, keepdims=keepdims)
    is_nan = op.isnan(a)
    values = op.where(is_nan, 0, a)
    count = _not_nan_count(a, axis, True)
    centered = op.where(is_nan, 0, op.subtract(values, _divided(op.sum(values, axis=axis, keepdims=True), count)))
    if np.dtype(centered.dtype).kind == "c":
        centered = op.abs(centered)
    squares = op.sum(op.multiply(centered, centered), axis=axis, keepdims=keepdims)
    freedom = op.subtract(count, ddof)
    if not keepdims:
        freedom = op.reshape(freedom, tuple(squares.shape))
    return op.where(op.less_equal(freedom, 0), np.nan, _divided(squares, freedom))


@composite("nanstd")
def nanstd(a, axis=None, ddof=0, keepdims=False):
    """numpy.nanstd: the square root of nanvar."""
    return op.sqrt(op.nanvar(a, axis=axis, ddof=ddof, keepdims=keepdims))


# -- order statistics (NOTE(order-statistics)) -------------------------------------------
def _sorted_along(a, axis):
    """a sorted along `axis` (flattened when None), the axis, and its static size."""
    if axis is None:
        a, axis = op.reshape(a, (-1,)), 0
    if isinstance(axis, tuple):
        raise NotImplementedError("an order statistic over several axes is not captured")
    axis = normalize_axis(axis, a.ndim)
    size = a.shape[axis]
    if not isinstance(size, int):
        raise NotImplementedError("an order statistic needs a static size of its axis")
    if size == 0:
        raise NotImplementedError("an order statistic of an empty axis is left to NumPy")
    return op.sort(a, axis=axis), axis, size


def _at(x, axis: int, position: int):
    return op.getitem(x, (slice(None),) * axis + (position,))


def _nan_checked(result, sorted_values, axis, size):
    """NaN where the slice holds one (it sorted last)."""
    if not _has_nans(sorted_values):
        return result
    return op.where(op.isnan(_at(sorted_values, axis, size - 1)), np.nan, result)


def _kept(result, a, axis, keepdims, leading=0):
    """The result with the reduced axes of `a` kept as size 1 (after `leading` axes of q)."""
    if not keepdims:
        return result
    shape = reduced_shape(tuple(a.shape), normalize_axes(axis, a.ndim), True)
    return op.reshape(result, tuple(result.shape[:leading]) + shape)


@composite("median")
def median(a, axis=None, keepdims=False):
    """numpy.median: the mean of the middle element or two of each sorted slice."""
    values, position, size = _sorted_along(a, axis)
    middle = size // 2
    start = middle if size % 2 else middle - 1
    middle_values = op.getitem(values, (slice(None),) * position + (slice(start, middle + 1),))
    result = _nan_checked(op.mean(middle_values, axis=position), values, position, size)
    return _kept(result, a, axis, keepdims)


def _interpolated(values, axis, size, q: float, method: str):
    """The q-quantile of sorted slices of `size` by NumPy's `method`."""
    virtual = (size - 1) * q
    below = min(max(int(math.floor(virtual)), 0), size - 1)
    if method == "lower":
        return _at(values, axis, below)
    if method == "higher":
        return _at(values, axis, min(int(math.ceil(virtual)), size - 1))
    if method == "nearest":
        return _at(values, axis, int(np.around(virtual)))
    if method == "midpoint":
        gamma = 0.0 if virtual % 1 == 0 else 0.5
    else:
        gamma = virtual - below
    low, high = _at(values, axis, below), _at(values, axis, min(below + 1, size - 1))
    step = op.subtract(high, low)
    if gamma >= 0.5:  # NumPy's _lerp: exact at both ends
        return op.subtract(high, op.multiply(step, 1 - gamma))
    return op.add(low, op.multiply(step, gamma))


_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile(a, q, axis, method, keepdims, probe):
    """The quantiles of `a` at the constant `q` (in [0, 1]), q's axes first."""
    if hasattr(q, "dtype") and not isinstance(q, (np.ndarray, np.generic)):
        raise NotImplementedError("quantiles held in an array of the graph are not captured; pass them as numbers")
    dtype = probe(np.zeros(2, dtype=a.dtype))  # NumPy's checks of q and method, and its dtype
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(f"quantile method {method!r} is not captured (captured: {_QUANTILE_METHODS})")
    values, position, size = _sorted_along(a, axis)
    if np.dtype(values.dtype) != dtype and np.dtype(dtype).kind in "fc":
        values = op.astype(values, dtype)  # NumPy interpolates in the result's dtype (q a float64 array)
    qs = np.asarray(q, dtype=np.float64)
    parts = [_nan_checked(_interpolated(values, position, size, float(each), method), values, position, size)
             for each in qs.reshape(-1)]
    result = parts[0] if qs.ndim == 0 else op.reshape(op.stack(parts), qs.shape + tuple(parts[0].shape))
    if np.dtype(result.dtype) != dtype:
        result = op.astype(result, dtype)
    return _kept(result, a, axis, keepdims, leading=qs.ndim)


@composite("quantile")
def quantile(a, q, axis=None, method="linear", keepdims=False):
    """numpy.quantile at constant q (NOTE(order-statistics))."""
    return _quantile(a, q, axis, method, keepdims,
                     lambda example: np.quantile(example, q, method=method).dtype)


@composite("percentile")
def percentile(a, q, axis=None, method="linear", keepdims=False):
    """numpy.percentile: quantile at q / 100, as NumPy divides."""
    dtype = np.percentile(np.zeros(2, dtype=a.dtype), q, method=method).dtype
    return _quantile(a, np.true_divide(q, 100), axis, method, keepdims, lambda example: dtype)


# -- ptp, count_nonzero --------------------------------------------------------------------
@composite("ptp")
def ptp(a, axis=None, keepdims=False):
    """numpy.ptp: the maximum minus the minimum."""
    return op.subtract(op.max(a, axis=axis, keepdims=keepdims), op.min(a, axis=axis, keepdims=keepdims))


@composite("count_nonzero")
def count_nonzero(a, axis=None, keepdims=False):
    """numpy.count_nonzero: how many elements are not zero (an intp array, also for
    axis=None, where NumPy gives a Python int)."""
    return op.sum(op.not_equal(a, 0), axis=axis, keepdims=keepdims)


# -- average ------------------------------------------------------------------------------
def _weights_layout(a, weights, axis):
    """How `weights` lines up with `a`, with NumPy's checks: None when the shapes are
    equal, else the order that puts weights' axes in a's order and the shape that then
    broadcasts against a (NumPy's _weights_are_valid)."""
    if tuple(weights.shape) == tuple(a.shape):
        return None
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    axes = tuple(normalize_axis(each, a.ndim) for each in (axis if isinstance(axis, tuple) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if tuple(weights.shape) != tuple(a.shape[each] for each in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
    order = tuple(int(index) for index in np.argsort(axes))
    return order, tuple(size if index in axes else 1 for index, size in enumerate(a.shape))


def _weights_view(a, weights, axis):
    layout = _weights_layout(a, weights, axis)
    if layout is None:
        return weights
    order, shape = layout
    return op.reshape(op.transpose(weights, order), shape)


def _average_meta(a: TensorMeta, axis=None, weights=None, keepdims=False) -> TensorMeta:
    axes = normalize_axes(axis, a.ndim)
    shape = reduced_shape(a.shape, axes, keepdims)
    if weights is None:
        if any(isinstance(size, int) and size == 0 for size in shape):
            raise ZeroDivisionError("division by zero")  # NumPy's scale a.size / avg.size
        dtype = np.average(np.ones(1, dtype=a.dtype)).dtype
    else:
        _weights_layout(a, weights, axis)
        dtype = np.average(np.ones(1, dtype=a.dtype), weights=np.ones(1, dtype=weights.dtype)).dtype
    return TensorMeta(shape, dtype, device_of(a, weights))


def _average_vjp(grad, out, a, axis=None, weights=None, keepdims=False):
    """avg = sum(a w) / sum(w): grad_a = grad w / sum(w), grad_w = grad (a - avg) / sum(w)."""
    grad = keep_reduced_dims(grad, a, axis, keepdims)
    if weights is None:
        share = op.divide(grad, reduced_count(a, axis))
        return (input_grad(a, op.broadcast_to(share, a.shape)),)
    view = _weights_view(a, weights, axis)
    scale = op.sum(op.broadcast_to(view, a.shape), axis=axis, keepdims=True)
    share = op.divide(grad, scale)
    grad_a = input_grad(a, op.broadcast_to(op.multiply(share, view), a.shape)) if is_differentiable(a) else None
    grad_w = None
    if is_differentiable(weights):
        spread = op.sum_to_shape(op.multiply(share, op.subtract(a, keep_reduced_dims(out, a, axis, keepdims))),
                                 tuple(view.shape))
        layout = _weights_layout(a, weights, axis)
        if layout is not None:
            order, _ = layout
            moved = op.reshape(spread, tuple(weights.shape[index] for index in order))
            spread = op.transpose(moved, tuple(int(index) for index in np.argsort(order)))
        grad_w = input_grad(weights, spread)
    return grad_a, None, grad_w


@primitive("average", category="other", meta=_average_meta, vjp=_average_vjp)
def average(xp, a, axis=None, weights=None, keepdims=False):
    """numpy.average: the mean, or the weighted mean sum(a w) / sum(w) (ZeroDivisionError
    when the weights sum to zero, raised by NumPy when the graph runs). returned=True
    (two results) is not captured."""
    return xp.average(a, axis=axis, weights=weights, keepdims=keepdims)


# -- cov, corrcoef ------------------------------------------------------------------------
def _variables(m, rowvar: bool, dtype):
    """m as a 2-D array of variables (rows) and observations, in `dtype`."""
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if np.dtype(m.dtype) != dtype:
        m = op.astype(m, dtype)
    if m.ndim < 2:
        m = op.reshape(m, (1, m.shape[0]) if m.ndim == 1 else (1, 1))
    if not rowvar and m.shape[0] != 1:
        m = op.transpose(m)
    return m


@composite("cov")
def cov(m, y=None, rowvar=True, bias=False, ddof=None, dtype=None):
    """numpy.cov without frequency or analytic weights: the centred variables times
    their conjugate transpose, over N - ddof."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if dtype is None:
        dtype = np.result_type(*(value.dtype for value in (m, y) if value is not None), np.float64)
    dtype = np.dtype(dtype)
    x = _variables(m, rowvar, dtype)
    if y is not None:
        x = op.concatenate([x, _variables(y, rowvar, dtype)], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    factor = x.shape[1] - ddof
    if not isinstance(factor, int) or factor <= 0:
        raise NotImplementedError("cov with no more observations than ddof (NumPy warns and divides by 0) "
                                  "or a symbolic count of observations is left to NumPy")
    centered = op.subtract(x, op.mean(x, axis=1, keepdims=True))
    conjugated = op.conjugate(centered) if dtype.kind == "c" else centered
    product = op.matmul(centered, op.transpose(conjugated))
    return op.squeeze(op.multiply(product, 1.0 / factor))


@composite("corrcoef")
def corrcoef(x, y=None, rowvar=True, dtype=None):
    """numpy.corrcoef: cov scaled by the standard deviations, clipped to [-1, 1]."""
    c = op.cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return op.divide(c, c)
    if np.dtype(c.dtype).kind == "c":
        raise NotImplementedError("corrcoef of complex variables is left to NumPy")
    deviations = op.sqrt(op.real(op.diagonal(c)))
    c = op.divide(op.divide(c, op.reshape(deviations, (-1, 1))), op.reshape(deviations, (1, -1)))
    return op.clip(c, -1, 1)


# -- histogram ------------------------------------------------------------------------------
def _bin_count(bins) -> int:
    """How many bins `bins` makes: an int, or a sequence (or array) of edges; a rule's
    name ('auto') decides the count from the values."""
    if isinstance(bins, str):
        raise NotImplementedError(f"bins={bins!r} chooses the number of bins from the values, so the shape of "
                                  "the result is not known to the graph")
    if isinstance(bins, TensorMeta):
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        return bins.shape[0] - 1
    return len(np.histogram_bin_edges(np.zeros(0), bins)) - 1  # NumPy's checks of a constant


def _probe_data(a: TensorMeta):
    return np.zeros(1, dtype=a.dtype)


def _histogram_probe_bins(bins):
    return 1 if isinstance(bins, TensorMeta) else bins


def _histogram_meta(a: TensorMeta, bins=10, range=None, density=None, weights=None) -> TensorMeta:
    if weights is not None and weights.shape != a.shape:
        raise ValueError("weights should have the same shape as a.")
    count = _bin_count(bins)
    sample_weights = None if weights is None else np.ones(1, dtype=weights.dtype)
    dtype = np.histogram(_probe_data(a), _histogram_probe_bins(bins), range, density=density,
                         weights=sample_weights)[0].dtype
    return TensorMeta((count,), dtype, a.device)


def _bin_positions(a, bins, range):
    """The bin of each element of a (flattened) by the edges NumPy uses, and whether it
    falls in one: numpy.histogram puts x in bin i when edge i <= x < edge i + 1, the
    last bin closed."""
    edges = op.histogram_bin_edges(a, bins, range)
    flat = op.reshape(a, (-1,))
    last = edges.shape[0] - 2
    positions = op.clip(op.subtract(op.searchsorted(edges, flat, "right"), 1), 0, last)
    inside = op.logical_and(op.greater_equal(flat, op.getitem(edges, (0,))),
                            op.less_equal(flat, op.getitem(edges, (-1,))))
    return positions, inside


def _histogram_vjp(grad, out, a, bins=10, range=None, density=None, weights=None):
    """The counts are piecewise constant in a (no gradient flows to it) and, without
    density, linear in the weights: each weight gets the gradient of its bin."""
    if density and range is None and isinstance(bins, (int, np.integer)) and is_differentiable(a):
        raise NotImplementedError("the gradient of a density histogram whose bin width comes from the values")
    if weights is None:
        return (None,)
    grad_w = None
    if is_differentiable(weights):
        if density:
            raise NotImplementedError("the gradient of a density histogram with respect to its weights")
        positions, inside = _bin_positions(a, bins, range)
        grad_w = op.where(inside, op.take(grad, positions), 0)
        grad_w = input_grad(weights, op.reshape(grad_w, tuple(weights.shape)))
    return None, None, None, None, grad_w


@primitive("histogram_counts", category="other", meta=_histogram_meta, vjp=_histogram_vjp)
def histogram_counts(xp, a, bins=10, range=None, density=None, weights=None):
    """The first result of numpy.histogram: the count (weight, density) in each bin."""
    return xp.histogram(a, bins, range, density=density, weights=weights)[0]


def _bin_edges_meta(a: TensorMeta, bins=10, range=None, weights=None) -> TensorMeta:
    count = _bin_count(bins)
    if isinstance(bins, TensorMeta):
        dtype = bins.dtype
    else:
        dtype = np.histogram_bin_edges(_probe_data(a), bins, range).dtype
    return TensorMeta((count + 1,), dtype, a.device)


def _bin_edges_vjp(grad, out, a, bins=10, range=None, weights=None):
    """Edges given are the edges (their gradient passes through); with a range the edges
    do not depend on a. Otherwise they are min(a) + (max(a) - min(a)) k / bins: min(a)
    gets sum(grad (1 - k / bins)) and max(a) sum(grad k / bins), each shared among the
    elements equal to it."""
    if not isinstance(bins, (int, np.integer)):
        return None, input_grad(bins, grad)
    if not is_differentiable(a) or range is not None:
        return (None,)
    steps = op.divide(positions(grad, None), int(bins))  # k / bins
    grad_a = None
    for extreme, share in ((op.min(a), op.subtract(1, steps)), (op.max(a), steps)):
        chosen = op.equal(a, extreme)
        part = op.multiply(op.divide(chosen, op.sum(chosen)), op.sum(op.multiply(grad, share)))
        grad_a = part if grad_a is None else op.add(grad_a, part)
    return (input_grad(a, grad_a),)


@primitive("histogram_bin_edges", category="other", meta=_bin_edges_meta, vjp=_bin_edges_vjp)
def histogram_bin_edges(xp, a, bins=10, range=None, weights=None):
    """numpy.histogram_bin_edges: the edges of the bins numpy.histogram uses."""
    return xp.histogram_bin_edges(a, bins, range, weights)


@composite("histogram")
def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram: (counts, bin edges); the number of bins must not depend on the
    values (an int or edges; not a rule's name such as 'auto')."""
    return (op.histogram_counts(a, bins, range, density, weights),
            op.histogram_bin_edges(a, bins, range, weights))


# -- bincount --------------------------------------------------------------------------------
# NOTE(bincount-length): np.bincount(x, minlength=n) has max(n, max(x) + 1) counts, which
# the values decide, and a graph must know its shapes. x's dtype bounds its values,
# though: a uint8 x has none above 255, so with minlength >= 256 the length is minlength
# whatever the values (booleans: 2, int8: 128, ...), and so it is for an empty x. Those
# calls are captured; the others are graph breaks that say so. A negative value (which
# only the values show) raises NumPy's ValueError when the graph runs.
BINCOUNT_LENGTH = "the length of its result is max(x) + 1 where that exceeds minlength, which only the values decide"


def _largest_count_index(dtype: np.dtype) -> int:
    """One more than the largest value an x of this dtype can hold."""
    return 2 if dtype.kind == "b" else int(np.iinfo(dtype).max) + 1


def _bincount_meta(x: TensorMeta, weights=None, minlength=0) -> TensorMeta:
    if x.ndim != 1:
        raise ValueError("object too deep for desired array" if x.ndim else
                         "object of too small depth for desired array")
    if not np.can_cast(x.dtype, np.intp, "safe") and x.dtype != np.uint64:
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to dtype('int64') according to the rule 'safe'")
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if weights is not None and not is_array(weights):
        raise NotImplementedError("bincount's weights must be an array to be captured")
    if weights is not None and weights.shape != x.shape:
        raise ValueError("The weights and list don't have the same length.")
    empty = isinstance(x.shape[0], int) and x.shape[0] == 0
    if not empty and minlength < _largest_count_index(x.dtype):
        raise NotImplementedError(f"{BINCOUNT_LENGTH} (x of dtype {x.dtype} may hold values up to "
                                  f"{_largest_count_index(x.dtype) - 1}, minlength is {minlength})")
    dtype = np.dtype(np.float64 if weights is not None and not empty else np.intp)  # NumPy's, for an empty x
    return TensorMeta((minlength,), dtype, device_of(x, weights))


def _bincount_vjp(grad, out, x, weights=None, minlength=0):
    """Each weight was added to the count of its value: its gradient is that count's."""
    if not is_differentiable(weights):
        return None, None
    return None, input_grad(weights, op.take(grad, x))


@primitive("bincount", category="other", meta=_bincount_meta, vjp=_bincount_vjp)
def bincount(xp, x, weights=None, minlength=0):
    """numpy.bincount where x's dtype makes the length minlength (NOTE(bincount-length))."""
    return xp.bincount(x, weights, minlength)
