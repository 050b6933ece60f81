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
