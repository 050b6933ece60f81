"""Sorting and searching: sort (the values) and argsort (the order), along one axis or
flattened; partition and argpartition; searchsorted.

Both run NumPy's (or CuPy's) own sort, unfused (category "other"), so `kind`, `stable`,
the placement of NaNs (last, as NumPy puts them) and the order argsort gives equal
elements are NumPy's exactly. `kind` and `stable` are checked by NumPy itself on an
empty array, so a bad one raises what NumPy raises. `order=` (fields of structured
arrays) is not modelled. partition, argpartition and searchsorted likewise run NumPy's
(CuPy's) own functions.
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
from .reductions import arg_reduction_meta
from .registry import op, primitive
from .shape_rules import normalize_axis


def _check_kind(kind, stable) -> None:
    np.sort(np.zeros(0), kind=kind, stable=stable)


def _stable_option(stable) -> dict:
    """NumPy 2's `stable=`, passed only when given (CuPy's sort has no such keyword)."""
    return {} if stable is None else {"stable": stable}


def _sorted_shape(x: TensorMeta, axis) -> tuple:
    if axis is None:
        return (x.numel,)
    normalize_axis(axis, x.ndim)
    return x.shape


def _sort_meta(x: TensorMeta, axis=-1, kind=None, stable=None) -> TensorMeta:
    _check_kind(kind, stable)
    return TensorMeta(_sorted_shape(x, axis), x.dtype, x.device)


def _argsort_meta(x: TensorMeta, axis=-1, kind=None, stable=None) -> TensorMeta:
    """A 0-d array is argsorted as one element (NumPy flattens it first)."""
    _check_kind(kind, stable)
    return TensorMeta(_sorted_shape(x, None if x.ndim == 0 else axis), np.dtype(np.intp), x.device)


def _leading_positions(shape: tuple) -> tuple:
    """Index arrays that, with an order along the last axis, pick every row of an array
    of `shape`: the positions along each leading axis, shaped to broadcast."""
    if not all(isinstance(size, int) for size in shape[:-1]):
        raise NotImplementedError("the gradient of sort needs static sizes of the axes it does not sort")
    ndim = len(shape)
    return tuple(np.arange(size).reshape((1,) * axis + (size,) + (1,) * (ndim - axis - 1)).tolist()
                 for axis, size in enumerate(shape[:-1]))


def _sort_vjp(grad, out, x, axis=-1, kind=None, stable=None):
    """sort(x) reads x at the positions argsort gives, so the gradient goes back to
    them (index_add, as for any gather); any kind sorts to the same values."""
    if not is_differentiable(x):
        return (None,)
    if axis is None:
        flat = op.reshape(x, (-1,))
        scattered = op.index_add(op.zeros_like(flat), (op.argsort(flat, 0, "stable"),), grad)
        return (input_grad(x, op.reshape(scattered, x.shape)),)
    axis = normalize_axis(axis, x.ndim)
    moved, grad = op.moveaxis(x, axis, -1), op.moveaxis(grad, axis, -1)
    index = (*_leading_positions(moved.shape), op.argsort(moved, -1, "stable"))
    scattered = op.index_add(op.zeros_like(moved), index, grad)
    return (input_grad(x, op.moveaxis(scattered, -1, axis)),)


@primitive("sort", category="other", meta=_sort_meta, vjp=_sort_vjp)
def sort(xp, x, axis=-1, kind=None, stable=None):
    """numpy.sort: a sorted copy along `axis` (of the flattened array when None), NaNs last."""
    return xp.sort(x, axis=axis, kind=kind, **_stable_option(stable))


@primitive("argsort", category="other", meta=_argsort_meta)
def argsort(xp, x, axis=-1, kind=None, stable=None):
    """numpy.argsort: the positions that sort `x` along `axis`; with kind="stable" (or
    stable=True) equal elements keep their order."""
    return xp.argsort(x, axis=axis, kind=kind, **_stable_option(stable))


# -- partition ----------------------------------------------------------------------------
def _check_kth(kth, size) -> None:
    """NumPy's checks of kth against the size of the partitioned axis."""
    for k in np.atleast_1d(np.asarray(kth)).reshape(-1).tolist():
        if not isinstance(k, int):
            raise TypeError("Partition index must be integer")
        if not -size <= k < size:
            raise ValueError(f"kth(={k}) out of bounds ({size})")


def _partition_meta(x: TensorMeta, kth, axis=-1, kind="introselect") -> TensorMeta:
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    shape = _sorted_shape(x, axis)
    _check_kth(kth, shape[0] if axis is None else shape[normalize_axis(axis, x.ndim)])
    return TensorMeta(shape, x.dtype, x.device)


def _argpartition_meta(x: TensorMeta, kth, axis=-1, kind="introselect") -> TensorMeta:
    """A 0-d array is partitioned as one element (NumPy flattens it first)."""
    meta = _partition_meta(x, kth, None if x.ndim == 0 else axis, kind)
    return TensorMeta(meta.shape, np.dtype(np.intp), x.device)


def _partition_vjp(grad, out, x, kth, axis=-1, kind="introselect"):
    """partition(x) reads x at the positions argpartition gives (the same selection
    algorithm on the same values), so the gradient goes back to them (index_add)."""
    if not is_differentiable(x):
        return (None,)
    if axis is None:
        flat = op.reshape(x, (-1,))
        scattered = op.index_add(op.zeros_like(flat), (op.argpartition(flat, kth, 0),), grad)
        return (input_grad(x, op.reshape(scattered, x.shape)),)
    axis = normalize_axis(axis, x.ndim)
    moved, grad = op.moveaxis(x, axis, -1), op.moveaxis(grad, axis, -1)
    index = (*_leading_positions(moved.shape), op.argpartition(moved, kth, -1))
    scattered = op.index_add(op.zeros_like(moved), index, grad)
    return (input_grad(x, op.moveaxis(scattered, -1, axis)),)


@primitive("partition", category="other", meta=_partition_meta, vjp=_partition_vjp)
def partition(xp, x, kth, axis=-1, kind="introselect"):
    """numpy.partition: each kth element where a sort would put it, smaller ones before
    it and larger ones after, in NumPy's (introselect's) order."""
    return xp.partition(x, kth, axis=axis, kind=kind)


@primitive("argpartition", category="other", meta=_argpartition_meta)
def argpartition(xp, x, kth, axis=-1, kind="introselect"):
    """numpy.argpartition: the positions that partition `x` along `axis`."""
    return xp.argpartition(x, kth, axis=axis, kind=kind)


# -- searchsorted -------------------------------------------------------------------------
def _searchsorted_meta(a: TensorMeta, v, side="left", sorter=None) -> TensorMeta:
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1
                         else "object of too small depth for desired array")
    if sorter is not None and (sorter.ndim != 1 or sorter.shape[0] != a.shape[0]):
        raise ValueError("sorter.size must equal a.size")
    v_dtype = v.dtype if isinstance(v, TensorMeta) else np.asarray(v).dtype
    np.searchsorted(np.zeros(1, dtype=a.dtype), np.zeros(1, dtype=v_dtype), side=side)  # NumPy's checks
    shape = v.shape if isinstance(v, TensorMeta) else np.shape(v)
    devices = {value.device for value in (a, v, sorter) if isinstance(value, TensorMeta)}
    if len(devices) > 1:
        raise ValueError(f"arguments are on different devices: {', '.join(sorted(devices))}")
    return TensorMeta(shape, np.dtype(np.intp), a.device)


@primitive("searchsorted", category="other", meta=_searchsorted_meta)
def searchsorted(xp, a, v, side="left", sorter=None):
    """numpy.searchsorted: where each v would be inserted into the sorted 1-D `a` to keep
    it sorted (before equal elements with side="left", after them with "right")."""
    return xp.searchsorted(a, v, side=side, sorter=sorter)


# -- nanargmax, nanargmin ------------------------------------------------------------------
# NOTE(nan-arg-reductions): NumPy's nanargmax and nanargmin skip NaNs and raise ValueError
# for a slice of NaNs only: the values decide whether they raise, so the primitives run
# NumPy's (CuPy's) own functions, unfused, and that ValueError comes when the graph runs,
# as LinAlgError does from solve. The shape and dtype are argmax's.
@primitive("nanargmax", category="other", meta=arg_reduction_meta("argmax"))
def nanargmax(xp, a, axis=None, keepdims=False):
    """numpy.nanargmax: the index of the first maximum, NaNs skipped (NOTE(nan-arg-reductions))."""
    return xp.nanargmax(a, axis=axis, keepdims=keepdims)


@primitive("nanargmin", category="other", meta=arg_reduction_meta("argmin"))
def nanargmin(xp, a, axis=None, keepdims=False):
    """numpy.nanargmin: the index of the first minimum, NaNs skipped (NOTE(nan-arg-reductions))."""
    return xp.nanargmin(a, axis=axis, keepdims=keepdims)
