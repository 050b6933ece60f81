"""Sorting: sort (the values) and argsort (the order), along one axis or flattened.

Both run NumPy's (or CuPy's) own sort, unfused (category "other"), so `kind`, `stable`,
the placement of NaNs (last, as NumPy puts them) and the order argsort gives equal
elements are NumPy's exactly. `kind` and `stable` are checked by NumPy itself on an
empty array, so a bad one raises what NumPy raises. `order=` (fields of structured
arrays) is not modelled.
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
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
