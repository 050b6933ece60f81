"""NumPy's library functions as users call them (np.linalg.solve, np.fft.rfft, np.cov,
np.histogram, ...) inside a compiled function: each is one graph with no break
(NOTE(numpy-names) in pyjit/ops/registry.py maps numpy.linalg's and numpy.fft's names),
and every backend gives NumPy's results."""

import numpy as np
import pytest

import pyjit

RNG = np.random.default_rng(21)
MATRIX = RNG.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)
SPD = MATRIX @ MATRIX.T
VECTOR = RNG.uniform(-1, 1, 4)
SIGNAL = RNG.uniform(-1, 1, 16)
DATA = RNG.uniform(-1, 1, (3, 10))
NANS = np.where(RNG.random((3, 5)) < 0.3, np.nan, RNG.uniform(-1, 1, (3, 5)))


def solve(a, b):
    return np.linalg.solve(a, b) * 2.0


def cholesky_solve(a, b):
    lower = np.linalg.cholesky(a)
    return np.linalg.solve(lower.T, np.linalg.solve(lower, b))


def inverse_and_determinant(a):
    return np.linalg.inv(a) @ a, np.linalg.det(a), np.linalg.norm(a), np.linalg.norm(a, 1, axis=0)


def eigen(a):
    values, vectors = np.linalg.eigh(a)
    q, r = np.linalg.qr(a[:, :3])
    u, s, vh = np.linalg.svd(a[:, :3], full_matrices=False)
    return values, np.abs(vectors), np.linalg.eigvalsh(a), q @ r, np.linalg.qr(a, "r"), (u * s) @ vh, np.linalg.svdvals(a)


def least_squares(a, b):
    x, residuals, rank, values = np.linalg.lstsq(a[:3], b[:3], rcond=None)  # wide: no residuals
    return x * 2, residuals, rank + 1, values, np.linalg.lstsq(a, np.stack([b, b], 1))[0]


def spectrum(x):
    half = np.fft.rfft(x)
    return np.fft.irfft(half * np.conj(half), n=x.shape[0]), np.abs(np.fft.ifft(np.fft.fft(x))), np.fft.fft2(
        x.reshape(4, 4))


def covariance(x):
    return np.cov(x), np.corrcoef(x), np.average(x, axis=1, weights=np.abs(x[0]) + 0.5)


def log_determinant(a):
    sign, logarithm = np.linalg.slogdet(a)
    return sign * np.exp(logarithm), np.linalg.slogdet(a[::-1])[0], np.nanargmax(a, axis=1), np.nanargmin(a)


def histogram(x):
    counts, edges = np.histogram(x, bins=5, range=(-1.0, 1.0))
    return counts * 1.0, edges


def nan_statistics(x):
    return np.nansum(x, axis=1), np.nanmean(x), np.nanmax(x, axis=0), np.nanstd(x), np.nanmin(x)


def order_statistics(x):
    return np.median(x, axis=1), np.percentile(x, [10, 90], axis=0), np.quantile(x, 0.25), np.ptp(x, axis=1)


def differences(x):
    return np.diff(x, axis=1), np.diff(x[0], n=2, prepend=0.0), np.count_nonzero(x > 0, axis=1)


def searching(x):
    ordered = np.sort(x[0])
    return np.searchsorted(ordered, x[1]), np.partition(x[2], 4), np.argmax(x, axis=1)


POINTS, VALUES = np.array([-1.0, 0.0, 1.0]), np.array([0.0, 2.0, 1.0])


def signals(x):
    return np.convolve(x, x[:5], mode="same"), np.correlate(x, x[:3]), np.interp(x, POINTS, VALUES)


def products(a, b):
    return np.vdot(a, b), np.inner(a, b), np.kron(a[:2, :2], b[:2, :2]), np.cross(a[:, :3], b[:, :3])


CASES = {
    "linalg.solve": (solve, (MATRIX, VECTOR)), "linalg.cholesky": (cholesky_solve, (SPD, VECTOR)),
    "linalg.inv-det-norm": (inverse_and_determinant, (MATRIX,)), "linalg.eigh-qr-svd": (eigen, (SPD,)),
    "linalg.slogdet-nanargmax": (log_determinant, (MATRIX,)), "linalg.lstsq": (least_squares, (MATRIX, VECTOR)), "fft": (spectrum, (SIGNAL,)),
    "cov-corrcoef-average": (covariance, (DATA,)), "histogram": (histogram, (SIGNAL,)),
    "nan-reductions": (nan_statistics, (NANS,)), "median-percentile-quantile-ptp": (order_statistics, (DATA,)),
    "diff-count_nonzero": (differences, (DATA,)), "searchsorted-partition": (searching, (DATA,)),
    "convolve-correlate-interp": (signals, (SIGNAL,)), "vdot-inner-kron-cross": (products, (MATRIX, MATRIX.T.copy())),
}


@pytest.mark.parametrize(("fn", "args"), CASES.values(), ids=CASES.keys())
def test_each_call_is_captured_in_one_graph_without_a_break(fn, args):
    explanation = pyjit.explain(fn)(*args)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0), explanation.break_reasons


def assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for one, other in zip(got, want):
            assert_same(one, other)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize(("fn", "args"), CASES.values(), ids=CASES.keys())
def test_every_backend_gives_numpys_results(jit, backend, fn, args):
    assert_same(jit(fn, backend=backend)(*args), fn(*args))


def test_a_singular_matrix_raises_numpys_linalg_error_from_the_graph(jit):
    compiled = jit(solve)
    compiled(MATRIX, VECTOR)
    with pytest.raises(np.linalg.LinAlgError):
        compiled(np.ones((4, 4)), VECTOR)


def test_a_linalg_function_whose_name_numpy_uses_for_another_is_not_mistaken_for_it(jit):
    """numpy.linalg.diagonal takes the last two axes, numpy.diagonal the first two."""
    def diagonal(x):
        return np.linalg.diagonal(x) + 1.0

    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(jit(diagonal)(x), diagonal(x))


def test_lstsq_of_a_tall_matrix_is_a_break_saying_that_the_rank_decides_the_residuals(jit):
    """NOTE(lstsq-residuals): full column rank gives one residual per column, a lower rank none."""
    def fitted(a, b):
        x, residuals, rank, values = np.linalg.lstsq(a, b, rcond=None)
        return x, residuals * 2, rank, values

    tall = np.concatenate([MATRIX, MATRIX[:2]])[:, :3]
    deficient = tall.copy()
    deficient[:, 2] = deficient[:, 1]
    b = np.arange(6.0)
    (reason,) = pyjit.explain(fitted)(tall, b).break_reasons
    assert "the length of its residuals depends on the rank the values give" in reason.explanation
    compiled = jit(fitted)
    for a in (tall, deficient):
        got, want = compiled(a, b), fitted(a, b)
        assert [type(value) for value in got] == [type(value) for value in want]
        assert_same(got, want)
    assert compiled(deficient, b)[1].shape == (0,) and compiled(tall, b)[1].shape == (1,)


def test_bincount_is_a_break_with_its_reason_where_the_values_decide_its_length():
    def counted(x):
        return np.bincount(x, minlength=4) * 2

    x = np.array([0, 1, 1, 3])
    explanation = pyjit.explain(counted)(x)
    assert [reason.explanation for reason in explanation.break_reasons] == [
        "bincount: the length of its result is max(x) + 1 where that exceeds minlength, which only the values decide "
        "(x of dtype int64 may hold values up to 9223372036854775807, minlength is 4)"]
    np.testing.assert_array_equal(pyjit.compile(counted)(x), counted(x))


def test_bincount_is_captured_where_the_dtype_of_x_makes_its_length_minlength():
    """NOTE(bincount-length): a uint8 x has no value above 255."""
    def histogram_of_bytes(x, weights):
        return np.bincount(x, minlength=256) * 2, np.bincount(x, weights, 300)

    x, weights = np.array([3, 0, 255, 3], dtype=np.uint8), np.array([0.5, 1.0, 2.0, 0.25])
    explanation = pyjit.explain(histogram_of_bytes)(x, weights)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)
    assert_same(pyjit.compile(histogram_of_bytes)(x, weights), histogram_of_bytes(x, weights))
    with pytest.raises(ValueError):  # a negative value, which only the values show, as NumPy raises it
        pyjit.compile(lambda x: np.bincount(x, minlength=256))(np.array([1, -1], dtype=np.int8))


@pytest.mark.parametrize("call", [np.unique, np.nonzero, np.flatnonzero, np.argwhere, np.trim_zeros])
def test_a_call_whose_shape_the_values_decide_is_a_break_with_that_reason(call):
    """NOTE(value-shaped-calls)."""
    def shaped_by_values(x):
        return call(x)

    x = np.array([0.0, 2.0, 2.0, 0.0, 1.0])
    (reason,) = pyjit.explain(shaped_by_values)(x).break_reasons
    assert reason.explanation == f"numpy.{call.__name__}() is a graph break: the shape of its result depends on " \
                                 "the values, which a graph cannot know"


def test_eig_is_a_break_saying_that_the_values_decide_its_dtype():
    def eigenvalues(a):
        return np.linalg.eigvals(a) * 2

    (reason,) = pyjit.explain(eigenvalues)(MATRIX).break_reasons
    assert reason.explanation.startswith("numpy.linalg.eigvals() is a graph break: for a real matrix its dtype "
                                         "depends on the values")
    np.testing.assert_array_equal(pyjit.compile(eigenvalues)(MATRIX), eigenvalues(MATRIX))
