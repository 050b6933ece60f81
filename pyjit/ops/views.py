"""Views: reshaping, transposing and slicing without copying."""

from __future__ import annotations

import math

from ..graph import TensorMeta, broadcast_shapes
from .gradients import input_grad
from .registry import op, primitive


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


@primitive("reshape", category="view",
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


@primitive("broadcast_to", category="view", meta=_broadcast_to_meta,
           vjp=lambda grad, out, x, shape: (input_grad(x, grad),))
def broadcast_to(xp, x, shape):
    """numpy.broadcast_to (a read-only view)."""
    return xp.broadcast_to(x, shape)
