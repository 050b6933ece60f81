"""Array manipulation as NumPy's routines do it, decomposed into views, concatenation and
copies (composites: their derivatives are their primitives')."""

from __future__ import annotations

import operator

import numpy as np

from ..graph import SymInt
from .registry import composite, op
from .shape_rules import normalize_axes, normalize_axis


def along(x, axis: int, item):
    """x[..., item, ...] with `item` (a slice) on `axis`."""
    return op.getitem(x, (slice(None),) * axis + (item,))


@composite("copy")
def copy(a, order="K", subok=False):
    """numpy.copy: a new array of the same values (memory order is not modelled)."""
    return op.astype(a, a.dtype)


@composite("ascontiguousarray")
def ascontiguousarray(a, dtype=None):
    """numpy.ascontiguousarray: at least 1-d, in `dtype`; the array itself (a view here)
    where NumPy may return it, so a later write is refused as a write through a view
    (NOTE(functionalisation) in pyjit/frontend/functionalise.py)."""
    result = op.reshape(a, (1,) if a.ndim == 0 else tuple(a.shape))
    return result if dtype is None or np.dtype(dtype) == a.dtype else op.astype(result, dtype)


@composite("ravel")
def ravel(a, order="C"):
    """numpy.ravel in C order, or in F order (the transpose's C order: a copy). Orders
    "A" and "K" follow the input's memory layout, which a graph does not model."""
    if order in ("F", "f"):
        a = op.transpose(a, tuple(reversed(range(a.ndim))))
    elif order in ("A", "a", "K", "k"):
        raise NotImplementedError(f"ravel(order={order!r}) is not captured")
    elif order not in ("C", "c", None):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return op.reshape(a, (-1,))


@composite("flip")
def flip(m, axis=None):
    """numpy.flip: a view reversing `axis` (all axes when None)."""
    axes = normalize_axes(axis, m.ndim)
    return op.getitem(m, tuple(slice(None, None, -1) if index in axes else slice(None) for index in range(m.ndim)))


@composite("fliplr")
def fliplr(m):
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@composite("flipud")
def flipud(m):
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def _roll_cut(size, shift):
    """Where the rolled axis is cut: size - shift % size. With a symbolic size (or shift)
    the shift must lie within one length either way (-size <= shift <= size: the
    comparisons are guards), since a symbolic remainder has no size expression."""
    if not isinstance(size, SymInt) and not isinstance(shift, SymInt):
        return size - shift % size if size else 0
    if not -size <= shift <= size:
        raise NotImplementedError("roll by more than the length of an axis of symbolic size is not captured")
    return size - shift if shift >= 0 else -shift


@composite("roll")
def roll(a, shift, axis=None):
    """numpy.roll: the last `shift` elements along `axis` moved to the front."""
    if axis is None:
        return op.reshape(roll(op.reshape(a, (-1,)), shift, 0), tuple(a.shape))
    for each_shift, each_axis in np.broadcast(shift, axis):
        each_axis = normalize_axis(int(each_axis), a.ndim)
        size = a.shape[each_axis]
        cut = _roll_cut(size, each_shift if isinstance(each_shift, SymInt) else operator.index(each_shift))
        if 0 < cut < size:
            a = op.concatenate([along(a, each_axis, slice(cut, None)), along(a, each_axis, slice(None, cut))],
                               axis=each_axis)
    return a


@composite("rot90")
def rot90(m, k=1, axes=(0, 1)):
    """numpy.rot90: flips and a transpose, as NumPy composes them."""
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not all(-m.ndim <= axis < m.ndim for axis in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return op.getitem(m, ())
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    order = list(range(m.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return op.transpose(flip(m, axes[1]), tuple(order))
    return flip(op.transpose(m, tuple(order)), axes[1])


@composite("tile")
def tile(A, reps):
    """numpy.tile: each axis repeated whole: a broadcast of interleaved new axes, reshaped."""
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    if any(int(rep) < 0 for rep in reps):
        raise ValueError("negative dimensions are not allowed")
    ndim = max(len(reps), A.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - A.ndim) + tuple(A.shape)
    interleaved = tuple(size for pair in zip((1,) * ndim, shape) for size in pair)
    spread = tuple(size for pair in zip(reps, shape) for size in pair)
    tiled = op.broadcast_to(op.reshape(A, interleaved), spread)
    return op.reshape(tiled, tuple(rep * size for rep, size in zip(reps, shape)))


def _pad_blocks(x, axis: int, before: int, after: int, mode: str, constant):
    size = x.shape[axis]
    if mode in ("reflect", "symmetric", "wrap") and max(before, after) > size - (mode == "reflect"):
        raise NotImplementedError(f"pad(mode={mode!r}) wider than the array is not captured")
    if mode in ("constant", "edge") and not isinstance(size, SymInt) and size == 0:
        raise NotImplementedError(f"pad(mode={mode!r}) of an empty axis is not captured")
    shape = list(x.shape)

    def edge(item, width):
        shape[axis] = width
        block = along(x, axis, item)
        if mode == "constant":
            block = op.full_like(block, constant)
        return op.broadcast_to(block, tuple(shape))

    if mode in ("constant", "edge"):
        return edge(slice(None, 1), before), edge(slice(-1, None), after)
    reverse = slice(None, None, -1)
    if mode == "reflect":
        return (along(along(x, axis, slice(1, before + 1)), axis, reverse),
                along(along(x, axis, slice(size - 1 - after, size - 1)), axis, reverse))
    if mode == "symmetric":
        return (along(along(x, axis, slice(None, before)), axis, reverse),
                along(along(x, axis, slice(size - after, None)), axis, reverse))
    return along(x, axis, slice(size - before, None)), along(x, axis, slice(None, after))


@composite("pad")
def pad(array, pad_width, mode="constant", constant_values=0):
    """numpy.pad in the modes constant (one scalar value), edge, reflect, symmetric and
    wrap, with widths up to the array's size: each axis in turn concatenated with its
    blocks."""
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"pad(mode={mode!r}) is not captured")
    if np.ndim(constant_values):
        raise NotImplementedError("pad with per-axis constant values is not captured")
    widths = np.broadcast_to(np.asarray(pad_width), (array.ndim, 2))
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    for axis, (before, after) in enumerate(widths.tolist()):
        if before or after:
            head, tail = _pad_blocks(array, axis, before, after, mode, constant_values)
            array = op.concatenate([piece for piece, width in ((head, before), (array, 1), (tail, after)) if width],
                                   axis=axis)
    return array


def _at_least(arys, shape_of):
    results = tuple(op.reshape(ary, shape_of(ary)) for ary in arys)
    return results[0] if len(results) == 1 else results


@composite("atleast_1d")
def atleast_1d(*arys):
    return _at_least(arys, lambda a: tuple(a.shape) or (1,))


@composite("atleast_2d")
def atleast_2d(*arys):
    return _at_least(arys, lambda a: {0: (1, 1), 1: (1, *a.shape)}.get(a.ndim, tuple(a.shape)))


@composite("atleast_3d")
def atleast_3d(*arys):
    return _at_least(arys, lambda a: {0: (1, 1, 1), 1: (1, *a.shape, 1), 2: (*a.shape, 1)}.get(a.ndim, tuple(a.shape)))


@composite("hstack")
def hstack(tup):
    """numpy.hstack: along the first axis for vectors, the second for the rest."""
    arrays = [atleast_1d(array) for array in tup]
    return op.concatenate(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


@composite("vstack")
def vstack(tup):
    return op.concatenate([atleast_2d(array) for array in tup], axis=0)


@composite("column_stack")
def column_stack(tup):
    """numpy.column_stack: vectors (and scalars) as columns, then along the second axis."""
    return op.concatenate([op.reshape(array, (-1, 1)) if array.ndim < 2 else array for array in tup], axis=1)


@composite("meshgrid")
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """numpy.meshgrid: each vector along its own axis (the first two swapped for "xy"),
    broadcast to the grid unless sparse, copied unless copy=False."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    positions = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        positions[0], positions[1] = 1, 0
    grids = [op.reshape(x, tuple(-1 if axis == position else 1 for axis in range(ndim)))
             for x, position in zip(xi, positions)]
    if not sparse:
        shape = tuple(grid.shape[position] for grid, position in sorted(zip(grids, positions), key=lambda p: p[1]))
        grids = [op.broadcast_to(grid, shape) for grid in grids]
        if copy:
            grids = [op.astype(grid, grid.dtype) for grid in grids]
    return tuple(grids)
