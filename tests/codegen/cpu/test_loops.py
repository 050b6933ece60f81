"""pyjit/codegen/cpu/loops.py: a loop body the inductor backend compiles for the CPU runs
as one C loop around its kernels (NOTE(c-loops)), with NumPy's results; bodies the C
loop cannot express keep the loop op's Python loop, with the same results."""

import logging

import numpy as np
import pytest

import pyjit
import pyjit.ops as ops
from pyjit.codegen.cpu.loops import c_loop
from pyjit.codegen.cpu.target import CpuTarget
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, ShapeEnv, TensorMeta
from pyjit.utils import counters


@pytest.fixture
def jit():
    pyjit.reset()
    counters.clear()
    yield lambda fn: pyjit.compile(fn, backend="inductor")
    pyjit.reset()
    counters.clear()


def recurrence(y, x, a):
    for t in range(1, y.shape[0]):
        y[t] = a * y[t - 1] + x[t]
    return y


def jacobi_1d(A, B, T):
    for t in range(1, T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(A, B, T):
    for t in range(T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def forward_substitution_sum(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]
    return x


def forward_substitution_dot(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def fir_filter(y, x, h):
    for k in range(h.shape[0]):
        y[k:] += h[k] * x[:x.shape[0] - k]
    return y


def every_other_backwards(x):
    for i in range(x.shape[0] - 1, 0, -2):
        x[i] = x[i - 1] * 2.0 + x[i]
    return x


def rows_backwards(A, T):
    for i in range(T, 0, -1):
        A[i - 1, :] = A[i, :] * 0.5 + A[i - 1, :]


def running_maximum(y, x):
    for i in range(1, x.shape[0]):
        y[i] = np.max(y[:i]) + x[i]  # a max over an axis as long as the index (NumPy refuses empty ones)
    return y


def rebinding(u):
    for _ in range(40):
        u = 0.5 * u + 1.0
    return u


def floyd_warshall(D):
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k, None] + D[None, k, :])
    return D


def triangular(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] = A[i, j] - A[j, j] * 0.25
    return A


def test_the_recurrence_runs_as_one_c_loop(jit, caplog):
    x = np.random.default_rng(0).standard_normal(1000)
    y = np.zeros(1000)
    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_code"):
        result = jit(recurrence)(y.copy(), x, 0.9)
    np.testing.assert_array_equal(result, recurrence(y.copy(), x, 0.9))
    assert counters["inductor"]["loops_in_c"] == 1 and counters["inductor"]["loop_runs_in_c"] == 1
    assert "carries y, run as one C loop" in caplog.text


@pytest.mark.parametrize("fn, shape", [(jacobi_1d, (300,)), (jacobi_2d, (40, 30))])
def test_jacobi_compiles_once_for_every_trip_count_and_runs_in_c(jit, fn, shape):
    compiled = jit(fn)
    rng = np.random.default_rng(1)
    for runs, steps in enumerate((5, 12, 1, 0, 3), start=1):
        A = rng.standard_normal(shape)
        B = rng.standard_normal(shape)
        A_numpy, B_numpy = A.copy(), B.copy()
        compiled(A, B, steps)
        fn(A_numpy, B_numpy, steps)
        np.testing.assert_array_equal(A, A_numpy)
        np.testing.assert_array_equal(B, B_numpy)
        assert counters["inductor"]["loop_runs_in_c"] == runs  # zero trips included
    assert len(pyjit.cache_entries(compiled)) == 1 and counters["inductor"]["loops_in_c"] == 1


def test_an_assignment_its_kernel_stores_into_the_target_runs_in_c(jit):
    """`y[k:] += ...`: the scheduler has the kernel store into y (NOTE(assignment-by-
    kernel)); the C loop makes no call for the assignment itself."""
    rng = np.random.default_rng(5)
    x, h = rng.standard_normal(500), rng.standard_normal(16)
    y = jit(fir_filter)(np.zeros(500), x, h)
    np.testing.assert_array_equal(y, fir_filter(np.zeros(500), x, h))
    assert counters["inductor"]["loops_in_c"] == 1 and counters["inductor"]["loop_runs_in_c"] == 1


@pytest.mark.parametrize("fn", [forward_substitution_sum, forward_substitution_dot])
def test_forward_substitution_runs_in_c_its_dot_a_reduction(jit, fn):
    """np.sum(L[i, :i] * x[:i]) is a reduction inside the C loop, and so is `@` of two
    vectors in a loop's body (NOTE(dots-in-loops))."""
    rng = np.random.default_rng(2)
    L = np.tril(rng.standard_normal((60, 60))) + 60.0 * np.eye(60)
    b = rng.standard_normal(60)
    x = jit(fn)(L, b)
    # Diagonally dominant: each row's sum, in whatever order, moves x by a few ulps at most.
    np.testing.assert_allclose(x, fn(L, b), rtol=1e-12, atol=0)
    np.testing.assert_allclose(L @ x, b, rtol=1e-12, atol=1e-12)
    assert counters["stats"]["loops_captured"] == 1
    assert counters["inductor"]["loops_in_c"] == 1 and counters["inductor"]["loop_runs_in_c"] == 1


def mix_rows(X, W):
    for i in range(1, X.shape[0]):
        X[i] = X[i - 1] @ W + X[i]  # a vector times a matrix: BLAS, an eager step
    return X


def test_a_body_that_calls_blas_keeps_the_python_loop(jit):
    rng = np.random.default_rng(3)
    X, W = rng.standard_normal((30, 8)), rng.standard_normal((8, 8)) / 8
    np.testing.assert_allclose(jit(mix_rows)(X.copy(), W), mix_rows(X.copy(), W), rtol=1e-12, atol=1e-12)
    assert counters["stats"]["loops_captured"] == 1
    assert counters["inductor"]["loops_in_c"] == 0 and counters["inductor"]["loop_runs_in_c"] == 0


def test_negative_steps(jit):
    x = np.random.default_rng(4).standard_normal(51)
    np.testing.assert_array_equal(jit(every_other_backwards)(x.copy()), every_other_backwards(x.copy()))
    compiled = jit(rows_backwards)
    for steps in (29, 20, 0):
        A = np.random.default_rng(steps).standard_normal((30, 5))
        expected = A.copy()
        compiled(A, steps)
        rows_backwards(expected, steps)
        np.testing.assert_array_equal(A, expected)
    assert counters["inductor"]["loop_runs_in_c"] == 3  # zero trips run no loop node


@pytest.mark.parametrize("fn, make", [
    (running_maximum, lambda rng: (np.zeros(30), rng.standard_normal(30))),
    (rebinding, lambda rng: (rng.standard_normal(50),)),
    (floyd_warshall, lambda rng: (rng.uniform(1.0, 9.0, (30, 30)),)),
])
def test_bodies_the_c_loop_cannot_express_keep_the_python_loop(jit, fn, make):
    args = make(np.random.default_rng(5))
    expected = fn(*(arg.copy() for arg in args))
    np.testing.assert_array_equal(jit(fn)(*(arg.copy() for arg in args)), expected)
    assert counters["stats"]["loops_captured"] == 1 and counters["inductor"]["loops_in_c"] == 0


def test_a_triangular_inner_loop_runs_in_c_inside_the_outer_body(jit):
    A = np.random.default_rng(6).standard_normal((9, 9))
    np.testing.assert_array_equal(jit(triangular)(A.copy()), triangular(A.copy()))
    assert counters["stats"]["loops_captured"] == 2 and counters["inductor"]["loops_in_c"] == 1
    assert counters["inductor"]["loop_runs_in_c"] == 8  # the inner loop, once per outer index


def test_the_callers_arrays_are_written_only_by_the_write_back(jit):
    def shifted(x, y):
        for t in range(1, 20):
            y[t] = y[t - 1] + x[t]
        return y * 1.0

    x = np.arange(20.0)
    y = np.zeros(20)
    result = jit(shifted)(x, y)
    np.testing.assert_array_equal(result, np.cumsum(np.r_[0.0, x[1:]]))
    np.testing.assert_array_equal(y, result)  # the assignment to the argument, as NumPy made it
    assert counters["inductor"]["loop_runs_in_c"] == 1


def test_a_c_loop_of_other_layouts_or_dtypes_runs_its_python_loop(jit):
    compiled = jit(recurrence)
    x = np.random.default_rng(7).standard_normal(200)
    compiled(np.zeros(100), x[::2].copy(), 0.5)
    strided = x[::2]  # another layout: the graph's guards send it to another entry or variant
    np.testing.assert_array_equal(compiled(np.zeros(100), strided, 0.5), recurrence(np.zeros(100), strided, 0.5))
    as_float32 = x[:100].astype(np.float32)
    np.testing.assert_allclose(compiled(np.zeros(100, np.float32), as_float32, 0.5),
                               recurrence(np.zeros(100, np.float32), as_float32, 0.5), rtol=1e-6)


def lower_triangle_cleared(A):
    for i in range(1, A.shape[0]):
        A[i, :i] = 0.0  # a Python number assigned into a view as long as the index
        A[i, i] = A[i, i] * 2.0
    return A


def test_a_number_assigned_into_a_moving_view(jit):
    A = np.random.default_rng(8).standard_normal((40, 40))
    np.testing.assert_array_equal(jit(lower_triangle_cleared)(A.copy()), lower_triangle_cleared(A.copy()))
    assert counters["inductor"]["loop_runs_in_c"] == 1


def smoothed_in_place(A, T):
    for t in range(T):
        A[1:-1] = 0.5 * (A[:-2] + A[2:])  # reads the array it assigns into: NumPy computes the right side first


def test_a_kernel_that_reads_the_array_it_assigns_into_writes_a_buffer_first(jit):
    compiled = jit(smoothed_in_place)
    for steps in (9, 4):
        A = np.random.default_rng(steps).standard_normal(200)
        expected = A.copy()
        compiled(A, steps)
        smoothed_in_place(expected, steps)
        np.testing.assert_array_equal(A, expected)
    assert counters["inductor"]["loop_runs_in_c"] == 2


def recurrence_body(length: int):
    """The body graph the frontend captures for `recurrence`: y[i] = 0.5 * y[i - 1] + x[i]."""
    env = ShapeEnv()
    index = env.create_index(length // 2)
    assert index >= 1 and index < length  # what the frontend's trace of y[i - 1] and x[i] checked
    graph = Graph("body", shape_env=env)
    graph.placeholder("index", index)
    y = graph.placeholder("y", TensorMeta((length,), np.float64))
    x = graph.placeholder("x", TensorMeta((length,), np.float64))
    value = ops.add(ops.multiply(0.5, ops.getitem(y, index - 1)), ops.getitem(x, index))
    graph.output((ops.index_put(y, index, value),))
    graph.donated = frozenset({"y"})
    return graph


def test_an_input_whose_size_names_a_symbol_no_input_gives_alone_has_no_c_loop():
    """`z` of 4*s0 elements, s0 an axis of no input: the entry could not bind s0."""
    env = ShapeEnv()
    quarter = env.create_symbol(4)
    index = env.create_index(3)
    graph = Graph("body", shape_env=env)
    graph.placeholder("index", index)
    z = graph.placeholder("z", TensorMeta((4 * quarter,), np.float64))
    graph.output((ops.index_put(z, index, ops.multiply(ops.getitem(z, index), 0.5)),))
    graph.donated = frozenset({"z"})
    assert c_loop(schedule(graph, {}), {}, "t_") is None


def test_the_entry_runs_the_range_and_hands_back_what_it_was_not_compiled_for():
    scheduled = schedule(recurrence_body(16), {})
    plan = c_loop(scheduled, {}, "t_")
    assert plan is not None and "for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)" in plan.loop.text
    assert "__attribute__((alias(" in plan.loop.text  # a small body: its kernels may be inlined
    entry = plan.bind(CpuTarget.load(scheduled.kernels + plan.kernels))
    x = np.random.default_rng(9).standard_normal(16)
    y = np.zeros(16)
    assert entry(1, 16, 1, y, x) == (y,)
    np.testing.assert_array_equal(y, recurrence(np.zeros(16), x, 0.5))
    before = y.copy()
    assert entry(5, 5, 1, y, x) == (y,)  # no trip
    assert entry(15, 1, -7, y, x) == (y,)  # 15 and 8, backwards
    before[15] = 0.5 * before[14] + x[15]
    before[8] = 0.5 * before[7] + x[8]
    np.testing.assert_array_equal(y, before)
    assert entry(0, 16, 1, y, x) is None  # y[i - 1] at i = 0: a guard fails at the first index
    for other in (x.astype(np.float32), x[::-1], np.zeros(17), list(x)):
        assert entry(1, 16, 1, y, other) is None


def test_bodies_that_are_not_loop_bodies_or_update_no_carry_in_place_have_no_c_loop():
    graph = recurrence_body(16)
    graph.donated = frozenset()  # not donated: the glue copies y at the assignment
    assert c_loop(schedule(graph, {}), {}, "t_") is None
    plain = Graph()
    x = plain.placeholder("x", TensorMeta((4,), np.float64))
    plain.output((ops.sin(x),))
    assert c_loop(schedule(plain, {}), {}, "t_") is None
