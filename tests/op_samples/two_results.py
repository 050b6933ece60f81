"""Sample rows of divmod, modf, frexp and ldexp (pyjit/ops/two_results.py)."""

import numpy as np

from . import A, S

SPECIAL = np.array([2.75, -2.75, -3.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -5e-324, 1e300, 0.5])
SPECIAL32 = np.array([2.75, -2.75, -3.0, -0.0, np.inf, np.nan, 1e-40, 3e38], dtype=np.float32)
POSITIVE = dict(low=0.5, high=3.0)


def float_part_rows():
    """modf and frexp: special values, float32 and float16, integer and bool inputs
    (converted to the float loop), broadcasting shapes, empty and 0-d arrays, complex
    (no loop: TypeError)."""
    return [S(A((3, 4))), S(SPECIAL), S(SPECIAL32), S(A((2, 3), "float16")),
            S(A((5,), "int32", -9, 9)), S(A((4,), "bool")), S(A((2, 3), layout="strided")), S(A((0, 3))),
            S(np.array(-7.25)), S(np.array([1 + 1j]), raises=TypeError)]


SAMPLES = {
    "divmod": [
        S(A((3, 4)), A((3, 4), **POSITIVE)), S(A((3, 4)), A((4,), low=-3.0, high=-0.5)), S(A((2, 3)), 0.75),
        S(A((2, 3), "int32", -9, 9), A((3,), "int32", 1, 4)), S(A((4,), "int64", -9, 9), -3),
        S(A((3,), "float32"), A((3,), "float32", **POSITIVE)), S(A((3,), "bool"), np.array([True, True, True])),
        S(A((0, 3)), A((3,), **POSITIVE)), S(np.array(-7.5), np.array(2.0)),
        S(A((2,)), A((3,), **POSITIVE), raises=ValueError), S(np.array([1j]), 2.0, raises=TypeError)],
    "modf": float_part_rows(),
    "frexp": float_part_rows(),
    "frexp_exponent": [S(*sample.args, raises=sample.raises, reference=lambda x: np.frexp(x)[1])
                       for sample in float_part_rows()],
    "ldexp": [
        S(A((3, 4)), A((3, 4), "int32", -5, 5)), S(A((2, 3), "float32"), A((3,), "int64", -5, 5)), S(A((3,)), 3),
        S(SPECIAL, -2), S(np.array([1.5, 1e-300, 1e300]), np.array([1000, 900, -2000])),
        S(A((4,), "int8", -3, 3), 2), S(A((2, 3), "float16"), A((2, 1), "int32", -2, 2)), S(A((0, 3)), 2),
        S(np.array(0.75), np.array(4)), S(A((3,)), 2.5, raises=TypeError),
        S(A((2,)), A((3,), "int32"), raises=ValueError)],
}
