"""Sample rows of sort and argsort (pyjit/ops/sorting.py). The rows of sort have no ties
(random floats), where its derivative is not defined, and no NaNs, which finite
differences cannot take (argsort's last rows sort NaNs)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError
NAN = float("nan")


def sorting_samples():
    return [S(A((5,))), S(A((3, 4))), S(A((3, 4)), axis=0), S(A((2, 3, 4), "float32"), axis=1),
            S(A((3, 4)), None), S(A((3, 4), layout="F"), axis=-1, kind="stable"), S(A((3, 6), layout="strided"), 0),
            S(A((4, 5), "int32", -3, 3), kind="mergesort"), S(A((6,), "bool")), S(A((2, 3), "uint8", 0, 4), stable=True),
            S(A((0, 3))), S(A((0, 3)), axis=0),
            S(A((3, 3)), kind="heapsort"), S(A((3, 4)), axis=2, raises=AxisError),
            S(A((3, 4)), kind="bogus", raises=ValueError), S(A((3, 4)), kind=3, raises=TypeError),
            S(A((3, 4)), kind="stable", stable=True, raises=ValueError)]


SAMPLES = {
    "sort": [*sorting_samples(), S(np.array(1.0), raises=AxisError), S(np.array(1.0), None)],
    "argsort": [*sorting_samples(), S(np.array(1.0)), S(np.array([3, 1, 3, 1, 2, 1]), kind="stable"),
                S(np.array([[2.0, NAN, -1.0, 0.0], [NAN, NAN, 3.0, -np.inf]])),
                S(np.array([[0.5, NAN, 0.5], [NAN, -1.0, NAN]]), axis=1, stable=True)],
}


def partition_samples():
    """Random floats (no ties, so a derivative); kth one or several, negative; NumPy's errors."""
    return [S(A((7,)), 3), S(A((3, 5)), 1), S(A((3, 5)), 2, axis=0), S(A((3, 5)), [0, 2, -1]), S(A((3, 5)), 4, None),
            S(A((2, 3, 4), "float32"), 1, axis=1), S(A((6,), "int32", -9, 9), 2), S(A((5,), "bool"), 1),
            S(A((4, 6), layout="strided"), 3), S(A((0, 3)), 1), S(A((3, 4), layout="F"), -2, axis=-1),
            S(A((5,)), 5, raises=ValueError), S(A((5,)), -6, raises=ValueError), S(A((5,)), 1.0, raises=TypeError),
            S(A((3, 4)), 1, axis=2, raises=AxisError), S(A((5,)), 1, kind="quick", raises=ValueError)]


SAMPLES["partition"] = [*partition_samples(), S(np.array(1.0), 0, raises=AxisError)]
SAMPLES["argpartition"] = [*partition_samples(), S(np.array(1.0), 0)]
SORTED = np.array([-1.5, -0.5, 0.0, 0.0, 1.0, 2.5])
SAMPLES["searchsorted"] = [
    S(SORTED, A((4,))), S(SORTED, A((2, 3)), side="right"), S(SORTED, 0.0), S(SORTED, 0.0, "right"), S(SORTED, [0, 3]),
    S(SORTED.astype(np.float32), A((3,), "float64")), S(np.array([1, 3, 5]), A((4,), "int32", 0, 7)),
    S(np.array([2.0, -1.0, 0.5]), A((3,)), sorter=np.array([1, 2, 0])), S(SORTED, A((0,))), S(A((0,)), A((3,))),
    S(np.array([1.0, 2.0, NAN]), np.array([NAN, 1.5])),
    S(A((2, 3)), A((2,)), raises=ValueError), S(np.array(1.0), 1.0, raises=ValueError),
    S(SORTED, A((2,)), side="middle", raises=ValueError), S(SORTED, A((2,)), sorter=np.array([0, 1]), raises=ValueError)]


def nan_arg_samples():
    """NaNs skipped along an axis or the whole array; integers and bools (no NaNs); ties
    (the first); keepdims; the errors the shapes decide (an empty slice, a bad axis). An
    all-NaN slice, which only the values decide, is tests/ops/test_sorting.py's."""
    with_nans = np.array([[2.0, NAN, -1.0, 3.0], [NAN, 0.5, 0.5, -np.inf], [1.0, 1.0, NAN, 1.0]])
    return [S(with_nans), S(with_nans, axis=1), S(with_nans, 0), S(with_nans.astype(np.float32), axis=-1, keepdims=True),
            S(A((3, 4), "int32", -5, 5), axis=0), S(A((5,), "bool")), S(A((2, 3, 4)), axis=1), S(A((3, 4), layout="F")),
            S(np.array(2.5)), S(A((0, 3)), axis=1), S(A((0, 3)), raises=ValueError),
            S(A((0, 3)), axis=0, raises=ValueError), S(A((3, 4)), axis=2, raises=AxisError)]


SAMPLES["nanargmax"] = nan_arg_samples()
SAMPLES["nanargmin"] = nan_arg_samples()
