"""Sample rows of real, imag and conjugate (pyjit/ops/complex_parts.py)."""

import numpy as np

from . import A, S

COMPLEX = np.array([[1.5 - 2.0j, -0.5j, 3.0], [0.25 + 1.0j, -1.0 + 0.5j, 2.0 - 1.0j]])


def part_samples():
    return [S(A((2, 3))), S(A((2, 3), "float32")), S(A((3, 4), layout="F")), S(A((4, 6), layout="strided")),
            S(A((4,), "int32", -5, 5)), S(A((3,), "bool")), S(A((0, 3))), S(COMPLEX), S(COMPLEX.astype(np.complex64)),
            S(COMPLEX.T)]


SAMPLES = {
    "real": part_samples(),
    "imag": part_samples(),
    "conjugate": part_samples(),
}
