"""Diagonals: diagonal (a view, as NumPy's is) and trace (its sum).

The diagonal of the two axes `axis1` and `axis2`, shifted by `offset` (above the main
diagonal when positive), becomes the last axis of the result, after the other axes in
their order. Its length depends on the two sizes and the offset, which the meta rule
needs as numbers: symbolic sizes there are not modelled (NotImplementedError, a graph
break).
"""

from __future__ import annotations

import operator

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import normalize_axis


def _diagonal_axes(ndim: int, offset, axis1, axis2) -> tuple[int, int, int]:
    """(offset, axis1, axis2) checked as NumPy checks them, the axes non-negative."""
    offset = operator.index(offset)
    if ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    first, second = normalize_axis(axis1, ndim), normalize_axis(axis2, ndim)
    if first == second:
        raise ValueError("axis1 and axis2 cannot be the same")
    return offset, first, second


def _diagonal_start(offset: int) -> tuple[int, int]:
    """Where the diagonal starts along axis1 and along axis2."""
    return max(-offset, 0), max(offset, 0)


def _diagonal_meta(x: TensorMeta, offset=0, axis1=0, axis2=1) -> TensorMeta:
    offset, first, second = _diagonal_axes(x.ndim, offset, axis1, axis2)
    rows, columns = x.shape[first], x.shape[second]
    if not (isinstance(rows, int) and isinstance(columns, int)):
        raise NotImplementedError("the length of a diagonal of axes with symbolic sizes is not modelled")
    row_start, column_start = _diagonal_start(offset)
    length = max(0, min(rows - row_start, columns - column_start))
    rest = tuple(size for axis, size in enumerate(x.shape) if axis not in (first, second))
    return TensorMeta(rest + (length,), x.dtype, x.device)


def _diagonal_index(ix, index: tuple, source_shape: tuple, shape: tuple, offset=0, axis1=0, axis2=1) -> tuple:
    """NOTE(view-index-rule): element (..., k) is at k + start along axis1 and axis2."""
    offset, first, second = _diagonal_axes(len(source_shape), offset, axis1, axis2)
    row_start, column_start = _diagonal_start(offset)
    rest = iter(index[:-1])
    position = index[-1]
    return tuple(position + ix.size(row_start) if axis == first else position + ix.size(column_start)
                 if axis == second else next(rest) for axis in range(len(source_shape)))


def _diagonal_vjp(grad, out, x, offset=0, axis1=0, axis2=1):
    """The gradient written back onto the diagonal of zeros (index_add). Two index lists
    standing next to each other put the diagonal's axis in their place; apart, first."""
    if not is_differentiable(x):
        return (None,)
    offset, first, second = _diagonal_axes(x.ndim, offset, axis1, axis2)
    row_start, column_start = _diagonal_start(offset)
    length = out.shape[-1]
    index = [slice(None)] * x.ndim
    index[first] = list(range(row_start, row_start + length))
    index[second] = list(range(column_start, column_start + length))
    placed = min(first, second) if abs(first - second) == 1 else 0
    return (input_grad(x, op.index_add(op.zeros_like(x), tuple(index), op.moveaxis(grad, -1, placed))),)


@primitive("diagonal", category="view", meta=_diagonal_meta, vjp=_diagonal_vjp, index_rule=_diagonal_index)
def diagonal(xp, x, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: a read-only view of the diagonal, as its last axis."""
    return xp.diagonal(x, offset, axis1, axis2)


@composite("trace")
def trace(x, offset=0, axis1=0, axis2=1):
    """numpy.trace: the sum along the diagonal (in np.sum's dtype)."""
    return op.sum(op.diagonal(x, offset, axis1, axis2), axis=-1)
