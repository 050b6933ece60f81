"""Sample rows of the reductions (pyjit/ops/reductions.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError


def sum_to_shape_reference(x, shape):
    leading = x.ndim - len(shape)
    axes = tuple(range(leading)) + tuple(leading + i for i, size in enumerate(shape)
                                         if size == 1 and x.shape[leading + i] != 1)
    return np.sum(x, axis=axes, keepdims=True).reshape(shape)


def axis_errors():
    """The rows every reduction over axes shares: an axis out of range, a repeated axis."""
    return [S(A((2, 3)), axis=2, raises=AxisError), S(A((2, 3)), axis=-3, raises=AxisError),
            S(A((2, 3)), axis=(0, -2), raises=ValueError)]


def extremum_samples():
    """max and min: random floats, so no ties (the derivative is not defined at a tie)."""
    return [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32"), axis=(0, 2), keepdims=True),
            S(A((3, 4), layout="strided"), axis=-1), S(A((2, 3)), axis=()), S(A((0, 3)), axis=1),
            S(A((4,), "int32", -5, 5)), S(A((3,), "bool")), S(A((2, 3), "uint8", 0, 9), axis=0),
            S(A((0, 3)), raises=ValueError), S(A((0, 3)), axis=0, raises=ValueError),
            S(A((3, 0)), axis=(0, 1), keepdims=True, raises=ValueError), *axis_errors()]


def index_samples():
    """argmax and argmin: one axis or none, keepdims; empty sequences are refused."""
    return [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3)), axis=-2, keepdims=True),
            S(A((2, 3)), keepdims=True), S(A((3, 4), "int8", -2, 2, layout="F"), axis=0),
            S(A((5,), "bool")), S(A((0, 3)), axis=1), S(A((3, 0)), axis=0, keepdims=True),
            S(A((0, 3)), raises=ValueError), S(A((0, 3)), axis=0, raises=ValueError),
            S(A((2, 3)), axis=(0, 1), raises=TypeError), S(A((2, 3)), axis=1.0, raises=TypeError),
            S(A((2, 3)), axis=2, raises=AxisError)]


def truth_samples():
    """any and all: bool results from any dtype; empty reductions give the identity."""
    return [S(A((2, 3), "bool")), S(A((2, 3), "bool"), axis=1), S(A((2, 3), "int32", 0, 2), axis=(0, 1), keepdims=True),
            S(A((3, 4), "float32", layout="F"), axis=0), S(A((0, 3), "bool"), axis=0), S(A((0, 3))),
            S(A((4, 2), "bool", layout="strided"), axis=-1), *axis_errors()]


SAMPLES = {
    "sum": [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32"), axis=(0, 2), keepdims=True),
            S(A((2, 3)), axis=-1), S(A((0, 3)), axis=0), S(A((4,), "int32")), S(A((3,), "bool")),
            S(A((2, 3)), axis=2, raises=np.exceptions.AxisError),
            S(A((2, 3)), axis=(0, 0), raises=ValueError)],
    "sum_to_shape": [S(A((4, 2, 3)), (2, 1), reference=sum_to_shape_reference),
                     S(A((2, 3)), (2, 3), reference=sum_to_shape_reference),
                     S(A((2, 3), "float32"), (3,), reference=sum_to_shape_reference)],
    "prod": [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32", 0.5, 1.5), axis=(0, 2), keepdims=True),
             S(A((3, 2), layout="F"), axis=-1), S(A((0, 3)), axis=0), S(A((4,), "int32", -3, 4)),
             S(A((3,), "bool")), S(A((2, 3), "uint8", 0, 4), axis=0), *axis_errors()],
    "max": extremum_samples(),
    "min": extremum_samples(),
    "argmax": index_samples(),
    "argmin": index_samples(),
    "any": truth_samples(),
    "all": truth_samples(),
}
