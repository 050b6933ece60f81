"""Sample rows of the statistics (pyjit/ops/statistics.py). Arrays with NaNs are literal
(no slice all NaN, where NumPy warns and warnings are errors in the tests)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError
NAN = float("nan")


def with_nans(shape, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(-2, 2, shape)
    flat = values.reshape(-1)
    flat[::3] = NAN  # every slice along the last axis keeps values: shapes here have last axis > 2
    return values.astype(dtype)


NANS = with_nans((3, 4))


def nan_samples(extremum=False):
    rows = [S(NANS), S(NANS, axis=1), S(NANS, axis=0, keepdims=True), S(with_nans((2, 3, 4), "float32"), axis=(0, 2)),
            S(A((2, 3))), S(A((4,), "int32", -5, 5)), S(A((3, 4), layout="strided"), axis=-1),
            S(np.array([1.0, NAN, 2.0]).astype(np.complex128)), S(A((2, 3)), axis=2, raises=AxisError)]
    if extremum:
        return rows + [S(A((0, 3)), axis=1), S(A((0, 3)), raises=ValueError)]
    return rows + [S(A((0, 3)), axis=1)]


def order_samples(*q, reference=None):
    """median (no q), quantile and percentile: random floats (no ties, so a derivative)."""
    return [S(A((5,)), *q), S(A((6,)), *q), S(A((3, 4)), *q, axis=1), S(A((3, 4)), *q, axis=0, keepdims=True),
            S(A((2, 3, 4), "float32"), *q, axis=-1, reference=reference, rtol=1e-6), S(A((7,), "int32", -9, 9), *q),
            S(A((4, 5), layout="F"), *q, axis=0),
            S(A((3, 5)), *q, keepdims=True), S(A((0, 5)), *q, axis=1), S(A((3, 4)), *q, axis=2, raises=AxisError)]


def histogram_counts_reference(a, bins=10, range=None, density=None, weights=None):
    return np.histogram(a, bins, range, density=density, weights=weights)[0]


def histogram_samples(reference):
    return [S(A((20,)), reference=reference), S(A((20,)), 5, (-1.0, 1.0), reference=reference),
            S(A((4, 5), "float32"), 4, reference=reference), S(A((10,), "int32", 0, 9), [0, 2, 5, 9], reference=reference),
            S(A((10,)), np.array([-2.0, 0.0, 0.5, 2.0]), reference=reference), S(A((0,)), 3, (0, 1), reference=reference),
            S(A((12,)), 6, (0.0, 1.0), reference=reference),
            S(A((4, 3)), 3, None, None, A((4, 3), "int32", 0, 4), reference=reference),
            S(A((4, 3)), 3, None, None, A((4, 3), "float32", 0, 1), reference=reference),
            S(A((4, 3)), 3, (-1.0, 1.5), None, A((4, 3), low=0, high=1), reference=reference),
            S(A((20,)), 5, (-1.0, 1.0), True, reference=reference),
            S(A((20,)), 5, (-2, 2), density=True, reference=reference), S(A((20,)), 5, (-2, 2), True, reference=reference),
            S(A((20,)), 0, reference=reference, raises=ValueError), S(A((20,)), 5, (1.0, 0.0), reference=reference,
                                                                     raises=ValueError),
            S(A((20,)), [3, 1, 2], reference=reference, raises=ValueError),
            S(A((20,)), 2.5, reference=reference, raises=TypeError)]


def histogram_edges(a, bins=10, range=None, density=None, weights=None):
    return np.histogram(a, bins, range, density=density, weights=weights)


SAMPLES = {
    "nansum": nan_samples(), "nanprod": nan_samples(), "nanmean": nan_samples(),
    "nanvar": [*nan_samples(), S(NANS, axis=1, ddof=1), S(NANS, ddof=1, keepdims=True)],
    "nanstd": [*nan_samples(), S(NANS, axis=0, ddof=1)],
    "nanmax": nan_samples(extremum=True), "nanmin": nan_samples(extremum=True),
    "median": [*order_samples(reference=np.median), S(A((5, 3), "float16"), axis=0), S(A((3,), "bool")), S(np.array(2.5))],
    "quantile": [*order_samples(0.3, reference=np.quantile), *order_samples([0.0, 0.25, 1.0], reference=np.quantile),
                 S(A((6,)), 0.4, method="lower"),
                 S(A((6,)), 0.4, method="higher"), S(A((6,)), [0.3, 0.5, 0.7], method="nearest"),
                 S(A((6, 2)), 0.4, axis=0, method="midpoint"), S(A((5,), "int64", -9, 9), 0.4, method="lower"),
                 S(A((5,)), 0.5, method="midpoint"), S(A((5,)), np.float64(0.75)),
                 S(A((5,)), 1.5, raises=ValueError), S(A((5,)), 0.5, method="bogus", raises=ValueError)],
    "percentile": [*order_samples(30, reference=np.percentile), *order_samples((10, 50, 90), reference=np.percentile),
                   S(A((6,)), 40, method="nearest"),
                   S(A((5,)), 101, raises=ValueError)],
    "ptp": [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32"), axis=(0, 2), keepdims=True),
            S(A((5,), "int32", -5, 5)), S(A((0, 3)), axis=1), S(A((0, 3)), raises=ValueError),
            S(A((3,), "bool"), raises=TypeError), S(A((2, 3)), axis=3, raises=AxisError)],
    "count_nonzero": [S(A((3, 4), "int32", -1, 2)), S(A((3, 4), "int32", -1, 2), axis=1),
                      S(A((3, 4), "bool"), axis=(0, 1), keepdims=True), S(A((2, 3))), S(A((0, 3)), axis=0),
                      S(np.array([0.0, -0.0, NAN, 1.0])), S(A((2, 3)), axis=2, raises=AxisError)],
    "average": [S(A((2, 3))), S(A((2, 3)), 1), S(A((2, 3)), None, A((2, 3), low=0.5, high=1.5)),
                S(A((2, 3)), 0, A((2,), low=0.5, high=1.5)), S(A((2, 3, 4)), -1, A((4,), low=0.5, high=1.5), keepdims=True),
                S(A((2, 3, 4)), (2, 0), A((4, 2), low=0.5, high=1.5)), S(A((3,), "int32", -4, 4), None, A((3,), "int32", 1, 4)),
                S(A((4,), "float32"), None, A((4,), "float32", 0.5, 1.5)), S(A((0, 3)), 1, A((3,))),
                S(A((3, 2)), 1, A((2,), low=0.5, high=1.5), False),
                S(A((0, 3)), 1, raises=ZeroDivisionError), S(A((2, 3)), None, A((3,)), raises=TypeError),
                S(A((2, 3)), 1, A((2,)), raises=ValueError), S(A((2, 3)), 1, A((3, 1)), raises=ValueError),
                S(A((2, 3)), 3, raises=np.exceptions.AxisError)],
    "cov": [S(A((3, 5))), S(A((5,))), S(A((5, 3)), rowvar=False), S(A((3, 5)), A((2, 5))), S(A((3, 5)), bias=True),
            S(A((3, 5)), ddof=2), S(A((2, 6), "float32")), S(A((2, 6), "int32", -5, 5)),
            S(A((2, 4), "complex128")), S(A((3, 5)), dtype=np.float32, reference=np.cov, rtol=1e-5),
            S(A((2, 3, 4)), raises=ValueError), S(A((3, 5)), ddof=1.5, raises=ValueError)],
    "corrcoef": [S(A((3, 5))), S(A((5, 3)), rowvar=False), S(A((3, 5)), A((2, 5))), S(A((5,))),
                 S(A((2, 6), "float32")), S(A((2, 3, 4)), raises=ValueError)],
    "histogram": histogram_samples(histogram_edges),
    "histogram_counts": histogram_samples(histogram_counts_reference),
    "histogram_bin_edges": [S(A((20,))), S(A((20,)), 5, (-1.0, 1.0)), S(A((4, 5), "float32"), 4),
                            S(A((10,), "int32", 0, 9), [0, 2, 5, 9]), S(A((10,)), np.array([-2.0, 0.0, 0.5, 2.0])),
                            S(A((0,)), 3, (0, 1)), S(A((20,)), 0, raises=ValueError),
                            S(A((20,)), 5, (1.0, 0.0), raises=ValueError)],
}


# NOTE(bincount-length): captured where x's dtype makes the length minlength.
SMALL_VALUES = np.array([3, 0, 3, 255, 7, 3], dtype=np.uint8)
SAMPLES["bincount"] = [
    S(SMALL_VALUES, minlength=256), S(SMALL_VALUES, None, 300), S(SMALL_VALUES, A((6,)), 256),
    S(SMALL_VALUES, A((6,), "float32"), minlength=256), S(A((5,), "bool"), minlength=2), S(A((5,), "bool"), None, 4),
    S(A((7,), "int8", 0, 9), minlength=128), S(A((7,), "uint16", 0, 9), minlength=65536), S(A((0,), "int64"), minlength=3),
    S(A((0,), "int64"), A((0,)), 0), S(SMALL_VALUES[::2], minlength=256),
    S(A((2, 3), "uint8", 0, 4), minlength=256, raises=ValueError), S(np.array(1, np.uint8), minlength=256, raises=ValueError),
    S(A((3,)), minlength=256, raises=TypeError), S(SMALL_VALUES, minlength=-1, raises=ValueError),
    S(SMALL_VALUES, A((5,)), 256, raises=ValueError)]
