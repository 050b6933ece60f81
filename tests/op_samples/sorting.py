"""Sample rows of sort and argsort (pyjit/ops/sorting.py). The rows of sort have no ties
(random floats), where its derivative is not defined, and no NaNs, which finite
differences cannot take (tests/ops/test_sorting.py sorts NaNs)."""

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
