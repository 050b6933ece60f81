"""Sample rows of diff, convolve, correlate and interp (pyjit/ops/signal.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError
COMPLEX = np.array([1.0 + 2.0j, -0.5 + 0.25j, 2.0 - 1.0j, 0.75j])


def convolution_samples(zero_d_error=None):
    """Every mode with the first operand longer, shorter and as long; dtypes; errors."""
    rows = [S(A((6,)), A((3,)), mode) for mode in ("full", "same", "valid")]
    rows += [S(A((3,)), A((6,)), mode) for mode in ("full", "same", "valid")]
    rows += [S(A((4,)), A((7,)), "same"), S(A((5,)), A((4,)), "same"), S(A((4,)), A((4,)), "valid"),
             S(A((5,), "float32"), A((3,), "float32")), S(A((5,), "int32", -3, 3), A((2,), "int32", -3, 3)),
             S(A((5,)), A((3,), "int8", -3, 3), "same"), S(COMPLEX, A((3,)), "full"), S(A((5,)), COMPLEX, "same"),
             S(COMPLEX, COMPLEX[::-1].copy(), "valid"), S(np.array(2.0), A((3,)), "full", raises=zero_d_error),
             S(A((6,)), A((3,)), 2), S(A((6,)), A((3,)), "Same", raises=ValueError),
             S(A((6,)), A((3,)), 0), S(A((8,), layout="strided"), A((3,))),
             S(A((0,)), A((3,)), raises=ValueError), S(A((3,)), A((0,)), raises=ValueError),
             S(A((3, 2)), A((3,)), raises=ValueError), S(A((4,)), A((2,)), "bogus", raises=ValueError)]
    return rows


SAMPLES = {
    "diff": [S(A((5,))), S(A((3, 4))), S(A((3, 4)), axis=0), S(A((6,)), 2), S(A((3, 4)), 3, -1), S(A((4,)), 0),
             S(A((2, 3, 4), "float32"), axis=1), S(A((5,), "int32", -5, 5)), S(A((5,), "uint8", 0, 9)),
             S(A((6,), "bool")), S(A((4,)), prepend=0.0), S(A((4,), "int64", 0, 5), prepend=1, append=2.5),
             S(A((3, 4)), axis=0, append=A((1, 4))), S(A((3, 4)), prepend=A((3, 2))), S(A((4, 3), layout="F"), axis=0),
             S(A((0, 3))), S(A((3, 0)), axis=0), S(A((2,)), 3),
             S(np.array(1.0), raises=ValueError), S(A((4,)), -1, raises=ValueError), S(A((3, 4)), axis=2, raises=AxisError),
             S(A((3, 4)), prepend=A((2, 2)), raises=ValueError)],
    "convolve": [*convolution_samples()],
    "correlate": [*convolution_samples(zero_d_error=ValueError)],
    "interp": [S(A((5,)), np.array([-1.0, 0.0, 0.5, 1.5]), A((4,))), S(A((2, 3)), np.array([-1.0, 1.0]), A((2,))),
               S(A((5,)), np.array([-1.0, 0.0, 1.0]), A((3,)), left=-9.0, right=9.0),
               S(A((5,)), np.array([0.0, 1.0, 2.0]), A((3,)), period=2.0),
               S(A((4,), "float32"), np.array([-1.0, 1.0], dtype=np.float32), A((2,), "float32")),
               S(A((4,), "int32", -3, 3), np.array([-2, 0, 2]), A((3,), "int32", 0, 5)),
               S(A((4,)), np.array([-1.0, 0.0, 1.0]), COMPLEX[:3].copy()), S(A((0,)), np.array([0.0, 1.0]), A((2,))),
               S(A((4,)), np.array([0.0, 1.0]), A((3,)), raises=ValueError),
               S(A((4,)), A((0,)), A((0,)), raises=ValueError),
               S(A((4,)), np.array([0.0, 1.0]), A((2,)), period=0.0, raises=ValueError),
               S(A((4,)), A((2, 2)), A((2, 2)), raises=ValueError)],
}
