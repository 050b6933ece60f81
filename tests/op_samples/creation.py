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


def linspace_step_reference(start, stop, num=50, endpoint=True):
    return np.linspace(start, stop, num, endpoint, retstep=True)[1]


def filled_rows(*fill):
    """Rows zeros, ones and empty share (after the fill value, for full): shapes as an
    int, a tuple, a list, with a zero size; dtypes; order; the errors of bad shapes."""
    return [S(3, *fill), S((2, 3), *fill), S([2, 0], *fill, dtype="int32"), S((), *fill, dtype=np.float32),
            S((2, 3), *fill, dtype=bool, order="F"), S(0, *fill, dtype="uint8"),
            S((2, -1), *fill, raises=ValueError), S(2.5, *fill, raises=TypeError),
            S((2,), *fill, dtype="foo", raises=TypeError), S((2,), *fill, order="X", raises=ValueError)]


SAMPLES.update({
    "zeros": filled_rows(),
    "ones": filled_rows(),
    # NOTE(empty-like): only empty arrays, whose values compare.
    "empty": [S(0), S((2, 0), dtype="int32"), S([0, 3], order="F"), S((2, -1), raises=ValueError),
              S(2.5, raises=TypeError)],
    "full": filled_rows(2.5) + [
        S((2, 3), 7), S((2,), True), S((2, 3), 2.7, dtype=np.int8), S((2, 3), A((3,))),
        S((2, 3), A((2, 1), "float32"), dtype="float64"), S((0, 3), A((3,), "int32")),
        S((3,), 300, dtype=np.int8, raises=OverflowError), S((2, 3), A((4,)), raises=ValueError)],
    "eye": [S(3), S(2, 4), S(4, 3, 1), S(3, k=-2, dtype=np.int32), S(0), S(3, 3, 5), S(2, order="F"),
            S(-1, raises=ValueError), S(2, k=1.5, raises=TypeError), S(2.0, raises=TypeError)],
    "identity": [S(3), S(2, dtype=np.float32), S(0, dtype=bool), S(-2, raises=ValueError)],
    "tri": [S(3), S(2, 4), S(4, 3, -1), S(3, k=1, dtype=np.int64), S(0, 2), S(-1), S(2, -3),
            S(2, k="a", raises=TypeError)],
    "linspace_step": [S(0, 1, 5, reference=linspace_step_reference), S(2.0, -1, 4, False, reference=linspace_step_reference),
                      S(np.float32(0), np.float32(1), 3, reference=linspace_step_reference),
                      S(1j, 2, 3, reference=linspace_step_reference), S(0, 1, 1, reference=linspace_step_reference),
                      S(0, 1, 0, False, reference=linspace_step_reference),
                      S(A((3,)), A((3,)), 5, reference=linspace_step_reference),
                      S(A((2, 3)), A((3,)), 4, False, reference=linspace_step_reference),
                      S(A((3,), "float32"), A((3,), "float32"), 4, reference=linspace_step_reference),
                      S(A((2,), "int32", 0, 9), 10, 3, reference=linspace_step_reference),
                      S(A((0, 2)), 1.0, 3, reference=linspace_step_reference),
                      S(0, 1, -1, raises=ValueError, reference=linspace_step_reference),
                      S(A((2,)), A((3,)), 3, raises=ValueError, reference=linspace_step_reference)],
    "linspace": [S(0, 1), S(0, 1, 5), S(2.0, -1, 4, endpoint=False), S(0, 10, 6, dtype=np.int32),
                 S(np.float32(0), np.float32(1), 3), S(1j, 2, 3), S(0, 1, 0), S(0, 1, 1), S(0, 1, 3, axis=-1),
                 S(0, 1, -1, raises=ValueError), S(0, 1, 2.5, raises=TypeError),
                 S(0, 1, 3, axis=1, raises=np.exceptions.AxisError),
                 # between arrays: broadcast bounds, the samples' axis, dtypes, endpoint
                 S(A((3,)), A((3,)), 5), S(A((2, 3)), A((3,)), 4, axis=1), S(0.5, A((2,)), 3, endpoint=False),
                 S(A((3,), "float32"), A((3,), "float32"), 4, axis=-1), S(A((2,), "int32", 0, 9), 10, 3),
                 S(A((2,)), A((2,)), 1), S(A((2,)), A((2,)), 0), S(A((0, 2)), 1.0, 3), S(np.array(1.5), A((2,)), 3),
                 S(A((2,)), A((2,)), 6, dtype=np.int64), S(A((2, 2)), A((2,)), 3, axis=-1, endpoint=False),
                 S(A((2,)), A((3,)), 3, raises=ValueError),
                 S(A((2,)), A((2,)), 3, axis=2, raises=np.exceptions.AxisError)],
    "logspace": [S(0, 2), S(0, 2, 3), S(0, 3, 4, base=2), S(1, 0, 3, endpoint=False, dtype=np.float32),
                 S(np.float32(0), np.float32(1), 3), S(0, 1, 0), S(0, 3, 4, base=2, dtype=np.int64),
                 S(0, 1, -1, raises=ValueError)],
    "triu": [S(A((3, 3))), S(A((3, 4)), 1), S(A((4, 3), "int32", **SMALL_INTS), -1), S(A((2, 3, 3), "float32")),
             S(A((3,))), S(A((0, 2))), S(A((3, 3), layout="F"), k=2), S(A((3, 3), "bool")),
             S(np.array(1.0), raises=TypeError)],
    "tril": [S(A((3, 3))), S(A((3, 4)), 1), S(A((4, 3), "int32", **SMALL_INTS), -1), S(A((2, 3, 3), "float32")),
             S(A((3,))), S(A((0, 2))), S(A((3, 3), layout="strided"), k=-2), S(np.array(1.0), raises=TypeError)],
})

SAMPLES["indices"] = [S((2, 3)), S([4]), S((2, 0, 3)), S(()), S((3, 2), dtype=np.float32), S((2, 2), np.int8),
                      S((2, -1), raises=ValueError), S(3, raises=TypeError)]
