"""Sample rows of the reductions (pyjit/ops/reductions.py)."""

import numpy as np

from . import A, S


def sum_to_shape_reference(x, shape):
    leading = x.ndim - len(shape)
    axes = tuple(range(leading)) + tuple(leading + i for i, size in enumerate(shape)
                                         if size == 1 and x.shape[leading + i] != 1)
    return np.sum(x, axis=axes, keepdims=True).reshape(shape)


SAMPLES = {
    "sum": [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32"), axis=(0, 2), keepdims=True),
            S(A((2, 3)), axis=-1), S(A((0, 3)), axis=0), S(A((4,), "int32")), S(A((3,), "bool")),
            S(A((2, 3)), axis=2, raises=np.exceptions.AxisError),
            S(A((2, 3)), axis=(0, 0), raises=ValueError)],
    "sum_to_shape": [S(A((4, 2, 3)), (2, 1), reference=sum_to_shape_reference),
                     S(A((2, 3)), (2, 3), reference=sum_to_shape_reference),
                     S(A((2, 3), "float32"), (3,), reference=sum_to_shape_reference)],
}
