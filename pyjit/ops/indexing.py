"""Advanced (integer-array) indexing, index_add, the scatter that is its derivative, and
index_put, the functional form of item assignment.

An index is one item or a tuple of items (NOTE(index-items) in views.py). `index` takes
integer arrays and lists mixed with basic items, and places the dimensions they index
by NumPy's rule: the advanced items (integers count too once an array is present)
broadcast together; their broadcast shape takes their place when they stand next to
each other, and comes first when a slice or None separates them.

Boolean masks, and boolean scalars (0-d masks), are not modelled: the shape of the
result depends on the mask's values, which no meta rule can know. The meta rules raise
NotImplementedError for them, and the frontend breaks the graph there and leaves the
indexing to NumPy.

Bounds: a meta rule sees integers and constant lists, and raises NumPy's IndexError for
values out of range; the values of an index array are known only when the op runs,
which then raises NumPy's IndexError itself.
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta, broadcast_shapes
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import device_of, normalize_axis, shape_of
from .views import (check_in_bounds, expand_ellipsis, gather_vjp, index_items, is_basic, item_kind,
                    slice_length)

BOOLEAN_INDEX = ("boolean index: the result's shape depends on the mask's values, which a graph "
                 "cannot know; pyjit leaves such an index to NumPy (a graph break)")


def _index_array(item) -> tuple[np.dtype, tuple, np.ndarray | None]:
    """dtype, shape and (for a constant: a list, a tuple, an ndarray) values of an
    advanced item; NotImplementedError for a boolean one."""
    if isinstance(item, TensorMeta):
        dtype, shape, values = item.dtype, item.shape, None
    else:
        values = np.asarray(item)
        if values.size == 0 and isinstance(item, (list, tuple)):
            values = values.astype(np.intp)  # NumPy takes an empty list as an integer index
        dtype, shape = values.dtype, values.shape
    if dtype.kind == "b":
        raise NotImplementedError(BOOLEAN_INDEX)
    return dtype, shape, values


def _array_item_shape(item, size, axis: int) -> tuple:
    dtype, shape, values = _index_array(item)
    if dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if values is not None and values.size:
        for extreme in (values.min(), values.max()):
            check_in_bounds(int(extreme), size, axis)
    return shape


def advanced_index_shape(shape: tuple, index) -> tuple:
    """The shape of x[index] for any index without booleans (module docstring)."""
    items = index_items(index)
    kinds = [item_kind(item) for item in items]
    for item, kind in zip(items, kinds):
        if kind == "array":
            _index_array(item)  # a boolean item counts its axes differently: refuse it first
    basic, advanced, insert_at, axis = [], [], None, 0
    for item in expand_ellipsis(items, len(shape)):
        kind = item_kind(item)
        if kind == "newaxis":
            basic.append(1)
            continue
        if kind == "slice":
            basic.append(slice_length(item, shape[axis]))
        elif kind == "integer":
            check_in_bounds(item, shape[axis], axis)
            advanced.append(())
        else:
            advanced.append(_array_item_shape(item, shape[axis], axis))
        if kind != "slice" and insert_at is None:
            insert_at = len(basic)
        axis += 1
    broadcast = _broadcast_index_shapes(advanced)
    # Positions in the index as written: an ellipsis separates even where it stands for no axis.
    positions = [position for position, kind in enumerate(kinds) if kind in ("integer", "array")]
    if not positions or positions[-1] - positions[0] + 1 != len(positions):
        insert_at = 0  # separated advanced items: their dimensions come first
    return tuple(basic[:insert_at]) + broadcast + tuple(basic[insert_at:]) + tuple(shape[axis:])


def _broadcast_index_shapes(shapes: list) -> tuple:
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        described = " ".join(str(tuple(shape)).replace(" ", "") for shape in shapes)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {described}") from None


def _index_device(x: TensorMeta, *others, index) -> str:
    return device_of(x, *others, *index_items(index))


@primitive("index", category="other", vjp=gather_vjp,
           meta=lambda x, index: TensorMeta(advanced_index_shape(x.shape, index), x.dtype,
                                            _index_device(x, index=index)))
def index(xp, x, index):
    """x[index] with integer arrays in the index: a copy, as NumPy makes it."""
    return x[index]


def _index_add_meta(x: TensorMeta, index, values) -> TensorMeta:
    return _written_meta(x, index, values, "array is not broadcastable to correct shape")


def _written_meta(x: TensorMeta, index, values, message: str) -> TensorMeta:
    """The meta of `x` with `values` written at `index`: ValueError(message) unless the
    values broadcast to the indexed shape."""
    target = advanced_index_shape(x.shape, index)
    try:
        fits = broadcast_shapes(shape_of(values), target) == target
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(message)
    return TensorMeta(x.shape, x.dtype, _index_device(x, values, index=index))


def _index_add_vjp(grad, out, x, index, values):
    """x's gradient passes through; values' is the gradient gathered at index (none
    when the sum is cast to x's integer or boolean dtype)."""
    values_grad = None
    if is_differentiable(values) and is_differentiable(x):
        gathered = op.getitem(grad, index) if is_basic(index) else op.index(grad, index)
        values_grad = input_grad(values, gathered)
    return (input_grad(x, grad), None, values_grad)


@primitive("index_add", category="other", meta=_index_add_meta, vjp=_index_add_vjp)
def index_add(xp, x, index, values):
    """A copy of `x` with `values` added at x[index]: numpy.add.at, made functional.
    Repeated indices accumulate. As in add.at, `values` becomes an array first (a
    Python scalar takes its default dtype), the sum is computed in the promoted dtype,
    and it is cast back to x's dtype whatever it loses."""
    result = xp.array(x, copy=True)
    if not is_basic(index):
        xp.add.at(result, index, values)
        return result
    # A basic index selects a view whose elements are distinct, and adding into the
    # view is many times faster than add.at. With an Ellipsis in the index, NumPy gives
    # a 0-d view where it would otherwise give a scalar.
    items = index_items(index)
    view = result[items if any(item is Ellipsis for item in items) else items + (Ellipsis,)]
    xp.add(view, xp.asarray(values), out=view, casting="unsafe")
    return result


# NOTE(ufunc-at): numpy.subtract.at, multiply.at, maximum.at and minimum.at (add.at is
# index_add) are one primitive, `ufunc_at`, that runs the ufunc's own `at` on a copy of
# x: repeated indices apply one after the other and the result is cast back to x's
# dtype, as NumPy does. The dtypes a ufunc refuses (subtract of booleans) are asked of
# NumPy on one element. Derivatives: subtract's is index_add's with the values' sign
# changed; maximum's and minimum's go to the elements equal to the result, shared evenly
# among ties (PyTorch's index_reduce amax/amin); multiply's reaches x (times the product
# of the values at its place), and the values' is not computed (NotImplementedError).
AT_UFUNCS = ("subtract", "multiply", "maximum", "minimum")


def _ufunc_at_meta(x: TensorMeta, index, values, ufunc: str) -> TensorMeta:
    if ufunc not in AT_UFUNCS:
        raise NotImplementedError(f"numpy.{ufunc}.at is not captured")
    meta = _written_meta(x, index, values, "array is not broadcastable to correct shape")
    probe = np.zeros(1, x.dtype)
    getattr(np, ufunc).at(probe, [0], np.zeros(1, values.dtype) if isinstance(values, TensorMeta) else values)
    return meta


def _gathered(x, index):
    return op.getitem(x, index) if is_basic(index) else op.index(x, index)


def _extreme_at_vjp(grad, out, x, index, values):
    """The gradient shared evenly among x's element and the values equal to the result."""
    at_x = op.equal(x, out)
    at_values = op.equal(values, _gathered(out, index))
    ones = op.ones_like(grad)
    counts = op.index_add(op.where(at_x, ones, 0.0), index, op.where(at_values, 1.0, 0.0))
    share = op.divide(grad, op.where(op.equal(counts, 0), ones, counts))
    values_grad = input_grad(values, op.where(at_values, _gathered(share, index), 0.0)) \
        if is_differentiable(values) else None
    return input_grad(x, op.where(at_x, share, 0.0)), None, values_grad


def _ufunc_at_vjp(grad, out, x, index, values, ufunc: str):
    if not is_differentiable(x):
        return None, None, None
    if ufunc in ("maximum", "minimum"):
        return _extreme_at_vjp(grad, out, x, index, values)
    if ufunc == "subtract":
        values_grad = input_grad(values, op.negative(_gathered(grad, index))) if is_differentiable(values) else None
        return input_grad(x, grad), None, values_grad
    if is_differentiable(values):
        raise NotImplementedError("the gradient of multiply.at with respect to its values is not computed")
    return input_grad(x, op.multiply(grad, op.ufunc_at(op.ones_like(x), index, values, "multiply"))), None, None


@primitive("ufunc_at", category="other", meta=_ufunc_at_meta, vjp=_ufunc_at_vjp)
def ufunc_at(xp, x, index, values, ufunc):
    """A copy of `x` with numpy.<ufunc>.at(x, index, values) applied (NOTE(ufunc-at))."""
    result = xp.array(x, copy=True)
    getattr(xp, ufunc).at(result, index, values)
    return result


def _mask_of(index):
    """The boolean mask that is the whole of `index` (an array or its meta), or None."""
    if isinstance(index, (TensorMeta, np.ndarray)) and np.dtype(index.dtype).kind == "b":
        return index
    return None


def _index_put_meta(x: TensorMeta, index, values) -> TensorMeta:
    mask = _mask_of(index)
    if mask is not None:
        # NOTE(functionalisation) in pyjit/frontend/functionalise.py: the count of True values is
        # not known, so only a mask over leading axes and a single value are modelled.
        if mask.ndim > x.ndim:
            raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {mask.ndim} were indexed")
        for axis, (size, masked) in enumerate(zip(x.shape, mask.shape)):
            if size != masked:
                raise IndexError(f"boolean index did not match indexed array along axis {axis}; size of axis is "
                                 f"{size} but size of corresponding boolean axis is {masked}")
        if shape_of(values) not in ((), (1,)):
            raise NotImplementedError(BOOLEAN_INDEX)
        return TensorMeta(x.shape, x.dtype, _index_device(x, values, index=index))
    target = advanced_index_shape(x.shape, index)
    return _written_meta(x, index, values,
                         f"could not broadcast input array from shape {tuple(shape_of(values))} into shape {target}")


def _index_put_vjp(grad, out, x, index, values):
    """x's gradient is the result's with zeros where `values` were written; values'
    is the result's gradient at those places (summed to its shape)."""
    if not is_differentiable(grad):
        return (None, None, None)
    cleared = op.index_put(grad, index, 0)
    values_grad = None
    if is_differentiable(values):
        picked = op.subtract(grad, cleared) if _mask_of(index) is not None \
            else op.getitem(grad, index) if is_basic(index) else op.index(grad, index)
        values_grad = input_grad(values, picked)
    return (input_grad(x, cleared), None, values_grad)


@primitive("index_put", category="other", meta=_index_put_meta, vjp=_index_put_vjp)
def index_put(xp, x, index, values):
    """A copy of `x` with `values` written at x[index]: item assignment `x[index] = values`,
    made functional (NOTE(functionalisation) in pyjit/frontend/functionalise.py). `values` is cast
    to x's dtype as assignment casts it; where an integer-array index repeats an element,
    one of the values written there is kept, as in NumPy."""
    result = xp.array(x, copy=True)
    result[index] = values
    return result


def _take_indices(indices):
    """`indices` as take reads them: arrays of integers as they are, booleans as 0 and 1,
    constants (lists, scalars) converted to integers the way NumPy forces them."""
    if not hasattr(indices, "dtype") or isinstance(indices, np.generic):
        return np.asarray(indices).astype(np.intp).tolist()
    kind = np.dtype(indices.dtype).kind
    if kind == "b":
        return op.astype(indices, np.dtype(np.intp))
    if kind not in "iu":
        raise TypeError(f"Cannot cast array data from dtype('{np.dtype(indices.dtype)}') to "
                        f"dtype('int64') according to the rule 'same_kind'")
    return indices


@composite("take")
def take(x, indices, axis=None):
    """numpy.take (mode="raise"): elements of the flattened `x`, or of `x` along `axis`."""
    indices = _take_indices(indices)
    if axis is None:
        return op.index(op.reshape(x, (-1,)), indices)
    axis = normalize_axis(axis, x.ndim)
    return op.index(x, (slice(None),) * axis + (indices,))


def _repeat_counts(repeats):
    """numpy.repeat's `repeats` as an int (one count for every element) or a list of
    counts, checked by NumPy itself; counts held in an array of the graph would decide
    the result's shape, which is not modelled."""
    if not isinstance(repeats, (bool, int, np.integer, list, tuple, np.ndarray)):
        raise NotImplementedError("counts held in an array: their values decide the shape of the result, "
                                  "which a graph cannot know")
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        return len(np.repeat(np.zeros(1), repeats))
    return repeats


@composite("repeat")
def repeat(x, repeats, axis=None):
    """numpy.repeat: each element repeated along `axis` (of the flattened array when None).
    One count is a broadcast between two reshapes; a count per element, an index."""
    if axis is None:
        x, axis = op.reshape(x, (-1,)), 0
    else:
        axis = normalize_axis(axis, x.ndim)
    counts = _repeat_counts(repeats)
    if isinstance(counts, int):
        spread = tuple(x.shape[:axis + 1]) + (counts,) + tuple(x.shape[axis + 1:])
        stretched = op.broadcast_to(op.expand_dims(x, axis + 1), spread)
        return op.reshape(stretched, tuple(x.shape[:axis]) + (x.shape[axis] * counts,) + tuple(x.shape[axis + 1:]))
    positions = np.repeat(np.arange(x.shape[axis]), counts).tolist()  # NumPy's errors for bad counts
    return op.index(x, (slice(None),) * axis + (positions,))
