"""What VJPs share: bringing a result's gradient back to the shape and dtype of an input."""

from __future__ import annotations

import numpy as np

from .registry import op


def is_differentiable(value) -> bool:
    """Arrays (or graph nodes, or tensors) of a floating or complex dtype get gradients, and
    so do NumPy scalars, which is what NumPy returns for 0-d results; Python scalars and
    integer or boolean values do not."""
    if not hasattr(value, "dtype"):
        return False
    return np.dtype(value.dtype).kind in "fc"


def input_grad(value, grad):
    """`grad` (of a broadcast result) summed back to `value`'s shape and cast to its
    dtype; None when `value` gets no gradient."""
    if not is_differentiable(value):
        return None
    grad = op.sum_to_shape(grad, value.shape)
    return grad if np.dtype(grad.dtype) == np.dtype(value.dtype) else op.astype(grad, value.dtype)


def positions(x, axis: int | None):
    """Each element's index along `axis` (of the flattened x when None), as an array of
    x's shape made from x: a VJP's masks and weights must be arrays of the graph, since
    the meta rules take no constant arrays."""
    return op.subtract(op.cumsum(op.ones_like(x, dtype=np.intp), axis=axis), 1)
