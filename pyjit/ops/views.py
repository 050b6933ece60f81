"""Views (reshaping, transposing, basic indexing: no copies) and the ops that join
arrays or split them."""

from __future__ import annotations

import math

import numpy as np

from ..graph import SymInt, TensorMeta, broadcast_shapes
from ..graph.meta import could_be_one
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import device_of, normalize_axes, normalize_axis


def reshaped(shape: tuple, new_shape) -> tuple:
    """NumPy's reshape target with its one -1 resolved; ValueError when sizes differ."""
    new_shape = tuple(new_shape) if isinstance(new_shape, (tuple, list)) else (new_shape,)
    numel = math.prod(shape, start=1)
    unknown = [index for index, size in enumerate(new_shape) if isinstance(size, int) and size == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = math.prod((size for size in new_shape if not (isinstance(size, int) and size == -1)), start=1)
    if unknown:
        not_dividing = known == 0 or (isinstance(numel, int) and isinstance(known, int) and numel % known)
        try:
            resolved = None if not_dividing else numel // known
        except ValueError:  # a symbolic size the example sizes do not divide
            resolved = None
        if resolved is None:
            raise ValueError(f"cannot reshape array of size {numel} into shape {_shape_text(new_shape)}")
        new_shape = new_shape[: unknown[0]] + (resolved,) + new_shape[unknown[0] + 1:]
    elif known != numel:
        raise ValueError(f"cannot reshape array of size {numel} into shape {_shape_text(new_shape)}")
    return new_shape


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(size) for size in shape) + ("," if len(shape) == 1 else "") + ")"


# NOTE(view-index-rule): a view's entry says where in its source an element of the view
# is: `index_rule(ix, index, source_shape, shape, *args, **kwargs)` maps the view's index
# (a tuple of integer expressions) to the source's, given the op's own arguments after
# the source. `ix` is the indexing the caller computes with (pyjit/codegen/scheduling/lowering.py):
# `ix.zero()`, `ix.size(size)` (an int or graph size as an expression), `ix.is_one(size)`
# (a size of 1, decided without a guard), `ix.canonical(size)`, `ix.hint(expression,
# shape)` (its value at the example sizes); expressions add, multiply and have
# `floordiv` / `mod`. NotImplementedError: no index rule fits (advanced indexing).
def _reshape_index(ix, index: tuple, source_shape: tuple, shape: tuple, new_shape) -> tuple:
    """C-order reshape: the sizes other than 1 of both shapes are split into groups of
    equal product; within a group the view's index is flattened and unflattened into
    the source's (no division where a group is one source axis). An empty source has no
    element to find (and unflattening by its size 0 would divide by zero)."""
    result = [ix.zero()] * len(source_shape)
    if any(isinstance(size, int) and size == 0 for size in source_shape):
        return tuple(result)
    out_axes = [axis for axis, size in enumerate(shape) if not ix.is_one(size)]
    in_axes = [axis for axis, size in enumerate(source_shape) if not ix.is_one(size)]
    for out_group, in_group in _reshape_groups(ix, shape, out_axes, source_shape, in_axes):
        flat = ix.zero()
        for axis in out_group:
            flat = flat * ix.size(shape[axis]) + index[axis]
        after = ix.size(1)
        for position, axis in enumerate(reversed(in_group)):
            size = ix.size(source_shape[axis])
            part = flat.floordiv(after)
            result[axis] = part if position == len(in_group) - 1 else part.mod(size)
            after = after * size
    return tuple(result)


def _reshape_groups(ix, shape, out_axes, source_shape, in_axes):
    """Pairs (view axes, source axes) of equal size product, in order; one group of
    everything when symbolic products never line up."""
    groups, i, j = [], 0, 0
    while i < len(out_axes) and j < len(in_axes):
        out_group, in_group = [out_axes[i]], [in_axes[j]]
        out_size, in_size = ix.size(shape[out_axes[i]]), ix.size(source_shape[in_axes[j]])
        i, j = i + 1, j + 1
        while out_size != in_size:
            grow_out = ix.hint(out_size, shape) < ix.hint(in_size, source_shape)
            if grow_out and i < len(out_axes):
                out_group.append(out_axes[i])
                out_size = out_size * ix.size(shape[out_axes[i]])
                i += 1
            elif not grow_out and j < len(in_axes):
                in_group.append(in_axes[j])
                in_size = in_size * ix.size(source_shape[in_axes[j]])
                j += 1
            else:
                return [(out_axes, in_axes)]
        groups.append((out_group, in_group))
    if i < len(out_axes) or j < len(in_axes):
        return [(out_axes, in_axes)]
    return groups


@primitive("reshape", category="view", index_rule=_reshape_index,
           meta=lambda x, shape: TensorMeta(reshaped(x.shape, shape), x.dtype, x.device),
           vjp=lambda grad, out, x, shape: (input_grad(x, op.reshape(grad, x.shape)),))
def reshape(xp, x, shape):
    """numpy.reshape (C order)."""
    return xp.reshape(x, shape)


def _broadcast_to_meta(x: TensorMeta, shape) -> TensorMeta:
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {_shape_text(x.shape)} and requested shape {_shape_text(shape)}")
    return TensorMeta(shape, x.dtype, x.device)


def broadcast_index(ix, index: tuple, source_shape: tuple, shape: tuple = (), *args) -> tuple:
    """Broadcasting: leading axes dropped, index 0 read along axes of size 1."""
    lead = len(index) - len(source_shape)
    return tuple(ix.zero() if ix.is_one(size) else index[lead + axis] for axis, size in enumerate(source_shape))


@primitive("broadcast_to", category="view", meta=_broadcast_to_meta, index_rule=broadcast_index,
           vjp=lambda grad, out, x, shape: (input_grad(x, grad),))
def broadcast_to(xp, x, shape):
    """numpy.broadcast_to (a read-only view)."""
    return xp.broadcast_to(x, shape)


def permutation(axes, ndim: int) -> tuple[int, ...]:
    """transpose's `axes` as a permutation of range(ndim), checked like NumPy."""
    if axes is None:
        return tuple(reversed(range(ndim)))
    axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    normalized = tuple(normalize_axis(axis, ndim) for axis in axes)
    if len(set(normalized)) != ndim:
        raise ValueError("repeated axis in transpose")
    return normalized


def _transpose_vjp(grad, out, x, axes=None):
    perm = permutation(axes, x.ndim)
    inverse = tuple(sorted(range(x.ndim), key=perm.__getitem__))
    return (input_grad(x, op.transpose(grad, inverse)),)


def _transpose_index(ix, index: tuple, source_shape: tuple, shape: tuple, axes=None) -> tuple:
    result = [ix.zero()] * len(source_shape)
    for position, axis in enumerate(permutation(axes, len(source_shape))):
        result[axis] = index[position]
    return tuple(result)


@primitive("transpose", category="view", vjp=_transpose_vjp, index_rule=_transpose_index,
           meta=lambda x, axes=None: TensorMeta(tuple(x.shape[axis] for axis in permutation(axes, x.ndim)),
                                                x.dtype, x.device))
def transpose(xp, x, axes=None):
    """numpy.transpose: the axes reversed, or permuted by `axes`."""
    return xp.transpose(x, axes)


@composite("swapaxes")
def swapaxes(x, axis1, axis2):
    """numpy.swapaxes, as a transpose."""
    perm = list(range(x.ndim))
    first, second = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    perm[first], perm[second] = second, first
    return op.transpose(x, tuple(perm))


def _ordered_axes(axis, ndim: int, argument: str) -> tuple[int, ...]:
    """An int or sequence of axes, normalized, in the order given (NumPy's normalize_axis_tuple)."""
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    normalized = tuple(normalize_axis(each, ndim) for each in axes)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axis in `{argument}` argument")
    return normalized


@composite("moveaxis")
def moveaxis(x, source, destination):
    """numpy.moveaxis, as a transpose."""
    source = _ordered_axes(source, x.ndim, "source")
    destination = _ordered_axes(destination, x.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [axis for axis in range(x.ndim) if axis not in source]
    for target, axis in sorted(zip(destination, source)):
        order.insert(target, axis)
    return op.transpose(x, tuple(order))


@composite("expand_dims")
def expand_dims(x, axis):
    """numpy.expand_dims: a reshape inserting sizes of 1, as NumPy itself does it."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = normalize_axes(axes, x.ndim + len(axes))
    sizes = iter(x.shape)
    return op.reshape(x, tuple(1 if index in axes else next(sizes) for index in range(x.ndim + len(axes))))


@composite("squeeze")
def squeeze(x, axis=None):
    """numpy.squeeze: a reshape dropping sizes of 1 (all of them, or those of `axis`)."""
    if axis is None:
        axes = tuple(index for index, size in enumerate(x.shape) if could_be_one(size) and size == 1)
    else:
        axes = normalize_axes(axis, x.ndim)
        if any(not could_be_one(x.shape[index]) or x.shape[index] != 1 for index in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return op.reshape(x, tuple(size for index, size in enumerate(x.shape) if index not in axes))


# -- basic indexing ------------------------------------------------------------------
# NOTE(index-items): an index is one item or a tuple of items; only a tuple is a
# multi-index (a list is an array, as in NumPy 2). Integers, slices, None and Ellipsis
# are basic items, handled here by `getitem`, a view; integer arrays (and lists) are
# advanced items, handled by `index` in indexing.py, which reuses these helpers. Sizes
# may be symbolic: bounds and slice lengths are decided with comparisons, which record
# guards (NOTE(symbolic-sizes)).
INVALID_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                 "and integer or boolean arrays are valid indices")


def index_items(index) -> tuple:
    return index if type(index) is tuple else (index,)


def item_kind(item) -> str:
    """"newaxis", "ellipsis", "slice", "integer" (basic items) or "array" (advanced: an
    array, a list, or a boolean scalar, which NumPy takes as a 0-d mask)."""
    if item is None:
        return "newaxis"
    if item is Ellipsis:
        return "ellipsis"
    if isinstance(item, slice):
        return "slice"
    if isinstance(item, (bool, np.bool_)):
        return "array"
    if isinstance(item, (int, np.integer, SymInt)):
        return "integer"
    if isinstance(item, (list, tuple)) or hasattr(item, "dtype"):
        return "array"
    raise IndexError(INVALID_INDEX)


def is_basic(index) -> bool:
    return all(item_kind(item) != "array" for item in index_items(index))


def expand_ellipsis(items: tuple, ndim: int) -> tuple:
    """`items` with the ellipsis replaced by the full slices it stands for, after NumPy's
    checks: one ellipsis at most, no more indexed axes than the array has."""
    kinds = [item_kind(item) for item in items]
    if kinds.count("ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    indexed = sum(kind not in ("newaxis", "ellipsis") for kind in kinds)
    if indexed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {indexed} were indexed")
    if "ellipsis" not in kinds:
        return items
    at = kinds.index("ellipsis")
    return items[:at] + (slice(None),) * (ndim - indexed) + items[at + 1:]


def check_in_bounds(index, size, axis: int) -> None:
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")


def _slice_bound(value):
    if value is not None and not isinstance(value, (int, np.integer, SymInt)):
        raise TypeError("slice indices must be integers or None or have an __index__ method")
    return value


def _clamped(bound, size, lower, upper):
    """A slice bound resolved against `size` the way slice.indices does it. A bound equal
    to the size is the size when stepping forward (`upper`), so it is compared with `>`:
    a symbolic bound then guards only what matters (`x[k + 1:]` at the last k is empty,
    not a different case: NOTE(loop-capture) in pyjit/frontend/loops.py)."""
    if bound < 0:
        bound = bound + size
        return lower if bound < 0 else bound
    if upper is size:
        return size if bound > size else bound
    return upper if bound >= size else bound


def slice_length(item: slice, size):
    """len(range(*item.indices(size))), for a symbolic `size` too."""
    step = _slice_bound(item.step)
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lower, upper = (0, size) if step > 0 else (-1, size - 1)
    start, stop = _slice_bound(item.start), _slice_bound(item.stop)
    start = (lower if step > 0 else upper) if start is None else _clamped(start, size, lower, upper)
    stop = (upper if step > 0 else lower) if stop is None else _clamped(stop, size, lower, upper)
    span = stop - start if step > 0 else start - stop
    if span < 0:  # an empty span is its own length: `x[:i]` is i long at i = 0 too
        return 0
    return span if step in (1, -1) else _ceil_div(span, abs(step))


def _ceil_div(span, step: int):
    """ceil(span / step) for span > 0. A symbolic span first drops the remainder its
    example value leaves, so the division is exact; SymInt's // then guards that the
    remainder stays the same."""
    last = span - 1
    if isinstance(last, SymInt):
        last = last - last.hint % step
    return last // step + 1


def basic_index_shape(shape: tuple, index) -> tuple:
    """The shape of x[index] for a basic index (NOTE(index-items))."""
    items = index_items(index)
    if not is_basic(items):
        raise TypeError("getitem takes basic indices (integers, slices, None, Ellipsis); "
                        "integer arrays go through the op `index`")
    result, axis = [], 0
    for item in expand_ellipsis(items, len(shape)):
        kind = item_kind(item)
        if kind == "newaxis":
            result.append(1)
            continue
        if kind == "integer":
            check_in_bounds(item, shape[axis], axis)
        else:
            result.append(slice_length(item, shape[axis]))
        axis += 1
    return tuple(result) + tuple(shape[axis:])


def gather_vjp(grad, out, x, index):
    """The derivative of reading x[index] (getitem, index): the gradient scattered back
    into zeros shaped like x, accumulating where the index repeats an element."""
    if not is_differentiable(x):
        return (None,)
    return (input_grad(x, op.index_add(op.zeros_like(x), index, grad)),)


def _getitem_index(ix, index: tuple, source_shape: tuple, shape: tuple, key) -> tuple:
    """Basic indexing: integers pick, slices start and step, None adds an axis
    (NOTE(index-items))."""
    items = expand_ellipsis(index_items(key), len(source_shape))
    result, position, axis = [], 0, 0
    for item in items:
        kind = item_kind(item)
        if kind == "newaxis":
            position += 1
        elif kind == "integer":
            size = ix.canonical(source_shape[axis])
            result.append(ix.size(ix.canonical(item + size if item < 0 else item)))
            axis += 1
        elif kind == "slice":
            start, step = _slice_start_step(ix, item, ix.canonical(source_shape[axis]))
            result.append(ix.size(start) + index[position] * step)
            position, axis = position + 1, axis + 1
        else:
            raise NotImplementedError("advanced indexing")
    return tuple(result) + tuple(index[position:])


def _slice_start_step(ix, item: slice, size):
    """The first position a slice takes and its step, as slice.indices computes them
    (comparisons of symbolic sizes repeat the guards the meta rule took)."""
    step = 1 if item.step is None else item.step
    start = item.start
    if start is None:
        return (0 if step > 0 else size - 1), step
    if start < 0:
        start = start + size
        if start < 0:
            start = 0 if step > 0 else -1
    elif step > 0 and start > size:
        start = size
    elif step < 0 and start >= size:
        start = size - 1
    return ix.canonical(start), step


@primitive("getitem", category="view", vjp=gather_vjp, index_rule=_getitem_index,
           meta=lambda x, index: TensorMeta(basic_index_shape(x.shape, index), x.dtype, x.device))
def getitem(xp, x, index):
    """x[index] for a basic index (NOTE(index-items)): a view, or a NumPy scalar when
    every axis is taken by an integer, exactly as NumPy gives it."""
    return x[index]


# -- joining and splitting -----------------------------------------------------------
def _concatenate_meta(arrays, axis=0) -> TensorMeta:
    if type(arrays) not in (list, tuple):
        raise TypeError("concatenate takes a list or tuple of arrays")
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if not all(isinstance(array, TensorMeta) for array in arrays):
        # NumPy would take a Python scalar as a 0-d array; the frontend passes arrays.
        raise TypeError("concatenate takes arrays, not Python scalars")
    dtype = np.result_type(*(array.dtype for array in arrays))
    if axis is None:
        return TensorMeta((sum(array.numel for array in arrays),), dtype, device_of(*arrays))
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, first.ndim)  # NumPy checks the axis before the other arrays
    for position, array in enumerate(arrays[1:], 1):
        _check_joinable(first, array, position, axis)
    shape = first.shape[:axis] + (sum(array.shape[axis] for array in arrays),) + first.shape[axis + 1:]
    return TensorMeta(shape, dtype, device_of(*arrays))


def _check_joinable(first: TensorMeta, array: TensorMeta, position: int, axis: int) -> None:
    if array.ndim != first.ndim:
        raise ValueError(f"all the input arrays must have same number of dimensions, but the array at index 0 "
                         f"has {first.ndim} dimension(s) and the array at index {position} has "
                         f"{array.ndim} dimension(s)")
    for dim, (size, other) in enumerate(zip(first.shape, array.shape)):
        if dim != axis and size != other:
            raise ValueError(f"all the input array dimensions except for the concatenation axis must match "
                             f"exactly, but along dimension {dim}, the array at index 0 has size {size} and "
                             f"the array at index {position} has size {other}")


def _concatenate_vjp(grad, out, arrays, axis=0):
    """Each input's gradient is its slice of the result's gradient."""
    if axis is not None:
        axis = normalize_axis(axis, arrays[0].ndim)
    pieces, offset = [], 0
    for array in arrays:
        size = math.prod(array.shape, start=1) if axis is None else array.shape[axis]
        if not is_differentiable(array):
            pieces.append(None)
        elif axis is None:
            pieces.append(input_grad(array, op.reshape(op.getitem(grad, slice(offset, offset + size)), array.shape)))
        else:
            pieces.append(input_grad(array, op.getitem(grad, (slice(None),) * axis + (slice(offset, offset + size),))))
        offset = offset + size
    return (pieces,)


@primitive("concatenate", category="other", meta=_concatenate_meta, vjp=_concatenate_vjp)
def concatenate(xp, arrays, axis=0):
    """numpy.concatenate of a list or tuple of arrays (axis=None joins them flattened)."""
    return xp.concatenate(arrays, axis=axis)


@composite("stack")
def stack(arrays, axis=0):
    """numpy.stack: each array given a new axis `axis`, then concatenated along it."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    if any(tuple(array.shape) != tuple(arrays[0].shape) for array in arrays[1:]):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, arrays[0].ndim + 1)
    return op.concatenate([op.expand_dims(array, axis) for array in arrays], axis=axis)


def _section_points(size, sections) -> list:
    """Where numpy.split(x, sections) cuts an axis of `size`; its errors for bad counts."""
    if sections == 0:
        raise ZeroDivisionError("integer modulo by zero")
    if (size.hint if isinstance(size, SymInt) else size) % sections:
        raise ValueError("array split does not result in an equal division")
    sections = int(sections)
    if sections < 0:
        raise ValueError("number sections must be larger than 0.")
    each = size // sections  # a symbolic size gets a guard that it stays divisible
    return [each * position for position in range(sections + 1)]


@composite("split")
def split(x, indices_or_sections, axis=0):
    """numpy.split: a list of slices of `x` along `axis`, cut into equal sections or at
    the given indices."""
    size = x.shape[axis]  # NumPy's IndexError for an axis out of range
    axis = axis % x.ndim
    if hasattr(indices_or_sections, "__len__"):
        points = [0, *indices_or_sections, size]
    else:
        points = _section_points(size, indices_or_sections)
    lead = (slice(None),) * axis
    return [op.getitem(x, lead + (slice(start, stop),)) for start, stop in zip(points, points[1:])]
