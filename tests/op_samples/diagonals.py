"""Sample rows of diagonal and trace (pyjit/ops/diagonals.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError


def diagonal_samples():
    """Square and oblong, offsets in and beyond range, other axes kept, axes apart or
    reversed, and the errors of NumPy's checks."""
    return [S(A((3, 3))), S(A((3, 4)), 1), S(A((4, 3)), -2), S(A((3, 4)), offset=5), S(A((2, 3, 4), "float32")),
            S(A((2, 3, 4)), 0, 0, 2), S(A((2, 3, 4)), 1, 2, 0), S(A((3, 4, 5)), -1, axis1=-1, axis2=-2),
            S(A((2, 3, 4, 5)), 0, 1, 3), S(A((4, 4), "int32", -5, 5)), S(A((3, 3), "bool")), S(A((3, 4), layout="F"), 1),
            S(A((4, 6), layout="strided")), S(A((0, 3))), S(A((3,)), raises=ValueError),
            S(A((3, 3)), 0, 1, 1, raises=ValueError), S(A((3, 3)), 0, 0, 2, raises=AxisError),
            S(A((3, 3)), 1.5, raises=TypeError)]


SAMPLES = {
    "diagonal": diagonal_samples(),
    "trace": [*diagonal_samples(), S(A((3, 3), "uint8", 0, 9))],
}
