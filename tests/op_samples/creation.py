"""Sample rows of the creation ops (pyjit/ops/creation.py)."""

import numpy as np

from . import A, S

SMALL_INTS = dict(low=-3, high=3)


def like_rows():
    """Rows every `*_like` op shares: dtypes, a dtype override, a layout, a bad dtype."""
    return [S(A((2, 3))), S(A((2, 3), "float32"), dtype="int32"), S(A((3,), "int64", **SMALL_INTS)),
            S(A((2, 2), "bool")), S(A((0, 2))), S(A((2, 3), layout="F")), S(np.array(1.5), dtype=np.float32),
            S(A((2,)), dtype="foo", raises=TypeError)]


SAMPLES = {
    "zeros_like": like_rows(),
    "ones_like": like_rows(),
    # NOTE(empty-like) in pyjit/ops/creation.py: only empty arrays, whose values compare.
    "empty_like": [S(A((0, 3))), S(A((2, 0), "float32"), dtype="int64"), S(A((0,), "bool")),
                   S(A((0, 2), layout="F")), S(A((0, 2)), dtype="foo", raises=TypeError)],
    "full_like": [
        S(A((2, 3)), 2.5), S(A((2, 3), "int8", **SMALL_INTS), 7), S(A((2, 3), "int8", **SMALL_INTS), 2.7),
        S(A((2,), "float32"), 3, dtype="float64"), S(A((2, 3)), A((3,))), S(A((2, 3), "float32"), A((2, 1))),
        S(A((0, 3)), 1.0), S(A((2, 3), layout="F"), -1.5),
        S(A((2,), "bool"), 3), S(A((3,), "int8"), 300, raises=OverflowError),
        S(A((3,), "uint8", 0, 3), -1, raises=OverflowError), S(A((2, 3)), A((4,)), raises=ValueError),
        S(A((2, 3)), A((2, 2, 3)), raises=ValueError),
    ],
    # No array arguments: the rows reach the meta rule only where the test's trace records
    # a call that has no placeholder to dispatch on.
    "arange": [
        S(5), S(5.0), S(1, 5, 0.5), S(2, 10, 3), S(5, 1), S(10, 0, -3), S(0, 5, dtype="float32"),
        S(np.float32(0.1), np.float32(0.7), np.float32(0.1)), S(np.int8(3)), S(0, 2, dtype=bool), S(1, None, 2),
        S(1 + 1j, 5 + 2j), S(0.0, 1e-300, 1e300), S(1.5, 4, dtype=np.int8),
        S(1, 5, 0, raises=ZeroDivisionError), S(float("nan"), raises=ValueError),
        S(float("inf"), raises=ValueError), S(0, 5, dtype=bool, raises=TypeError),
        S(-3, 3, dtype=np.uint8, raises=OverflowError), S(-1.5, 0, dtype=np.uint8, raises=OverflowError),
        S(1 + 0j, 3, dtype=float, raises=TypeError), S(None, raises=TypeError),
    ],
}
