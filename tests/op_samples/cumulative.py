"""Sample rows of the cumulative ops (pyjit/ops/cumulative.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError


def cumulative_samples():
    """Flattened and along an axis, integer and bool widening, 0-d and empty inputs."""
    return [S(A((2, 3))), S(A((2, 3)), 1), S(A((2, 3, 4), "float32"), axis=-2), S(A((3, 4), layout="F"), axis=0),
            S(A((4, 6), layout="strided"), axis=1), S(A((4,), "int32", -5, 5)), S(A((3, 2), "uint8", 0, 4), axis=0),
            S(A((5,), "bool")), S(A((0, 3)), axis=0), S(A((0, 3))), S(np.array(1.5)), S(np.array(2.0), axis=0),
            S(A((2, 3)), axis=2, raises=AxisError), S(np.array(1.0), axis=1, raises=AxisError),
            S(A((2, 3)), axis=1.0, raises=TypeError)]


def zero_samples():
    """cumprod through zeros: one zero, two zeros in a row, a zero first."""
    return [S(np.array([1.5, 0.0, 2.0, -1.0, 0.5])), S(np.array([[2.0, 0.0, 0.0, 3.0], [0.0, 1.5, 2.0, 0.5]]), axis=1),
            S(np.array([[0.5, 2.0], [0.0, 3.0], [1.5, 0.0]]), axis=0), S(np.array([[0.5, 0.0], [2.0, -1.0]]))]


SAMPLES = {
    "cumsum": cumulative_samples(),
    "cumprod": [*cumulative_samples(), *zero_samples()],
}


def accumulate_samples(ufunc):
    """ufunc.accumulate along an axis (0 by default, negative), dtypes kept, ties, NaN,
    layouts, an empty axis; NumPy's errors (a 0-d array, a bad axis, a float axis)."""
    def reference(x, axis=0):
        return ufunc.accumulate(x, axis=axis)

    rows = [S(A((5,))), S(A((3, 4))), S(A((3, 4)), 1), S(A((2, 3, 4), "float32"), axis=-1),
            S(A((4, 3), "int8", -9, 9), 0), S(A((6,), "bool")), S(A((3, 4), layout="F"), axis=1),
            S(A((3, 6), layout="strided"), 1), S(A((0, 3))), S(A((0, 3)), 1),
            S(np.array([[1.0, 3.0, 3.0, 2.0], [np.nan, 1.0, 4.0, 0.0]]), 1),
            S(np.array(1.0), raises=TypeError), S(A((2, 3)), 2, raises=AxisError), S(A((2, 3)), 1.0, raises=TypeError)]
    return [S(*row.args, **row.kwargs, raises=row.raises, reference=reference) for row in rows]


SAMPLES.update({
    "maximum_accumulate": accumulate_samples(np.maximum),
    "minimum_accumulate": accumulate_samples(np.minimum),
    "logical_and_accumulate": accumulate_samples(np.logical_and),
    "logical_or_accumulate": accumulate_samples(np.logical_or),
    "logical_xor_accumulate": accumulate_samples(np.logical_xor),
})
