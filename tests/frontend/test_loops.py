"""pyjit/frontend/loops.py: a `for` loop over a range whose body is array code is one
loop node (NOTE(loop-capture)), its body traced once, on every backend; loops whose
body cannot be traced once unroll as before, with the reason; results, in-place
updated arguments included, are NumPy's."""

import copy

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

BACKENDS = ["eager", "aot_eager", "inductor"]


def jacobi_1d(A, B, T):
    for t in range(1, T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(A, B, T):
    for t in range(1, T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def recurrence(y, x, a):
    for t in range(1, y.shape[0]):
        y[t] = a * y[t - 1] + x[t]
    return y


def floyd_warshall(D):
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k, None] + D[None, k, :])
    return D


def row_prefix_sums(A, x):
    for i in range(1, x.shape[0] - 1):  # A[i, :i] and A[i + 1:, i]: slices that move with i
        x[i] = x[i] + A[i, :i].sum() - A[i + 1:, i].sum()
    return x


def accumulate(x):
    acc = x[0] * 0.0
    for i in range(len(x)):
        acc = acc + x[i] * i
    return acc


def every_other_backwards(x):
    for i in range(x.shape[0] - 1, 0, -2):
        x[i] = x[i - 1] * 2.0
    return x


def with_inner_loop(x, T):
    for t in range(T):
        for k in range(3):
            x[k] = x[k] + t
    return x


def leapfrog(u, u_prev, steps):
    for t in range(steps):  # u_prev takes the iteration's incoming u: a carry ends as another's start
        u, u_prev = 2.0 * u - u_prev + 0.1 * np.sin(u), u
    return u, u_prev


def assign_then_alias(u, v, steps):
    for t in range(steps):  # u is assigned into (donated to the body); v then names the same array
        u[1:] = u[:-1] + v[1:]
        v = u
    return u, v


def forward_substitution(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):  # L[i, :i] @ x[:i] is empty at i = 0: the same expression
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):  # A[j + 1:, j] is empty at the last j
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def lu(A):
    LU = A.copy()
    for k in range(LU.shape[0]):
        LU[k + 1:, k] /= LU[k, k]
        LU[k + 1:, k + 1:] -= np.outer(LU[k + 1:, k], LU[k, k + 1:])
    return LU


def gram_schmidt(A):
    Q = np.zeros_like(A)
    for k in range(A.shape[1]):  # classical: against the columns so far, none at k = 0
        v = A[:, k] - Q[:, :k] @ (Q[:, :k].T @ A[:, k])
        Q[:, k] = v / np.linalg.norm(v)
    return Q


def floyd_warshall_slices(D):
    for k in range(D.shape[0]):  # D[:, k:k + 1]: a slice whose stop reaches the size
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


def index_after_the_loop(x):
    for i in range(40):
        x = x * 0.5 + 1.0
    return x + i


PROGRAMS = {
    "jacobi_1d": (jacobi_1d, lambda rng: (rng.random(64), rng.random(64), 12)),
    "jacobi_2d": (jacobi_2d, lambda rng: (rng.random((9, 9)), rng.random((9, 9)), 6)),
    "recurrence": (recurrence, lambda rng: (np.zeros(40), rng.random(40), 0.5)),
    "floyd_warshall": (floyd_warshall, lambda rng: (rng.random((20, 20)),)),
    "symbolic_slices": (row_prefix_sums, lambda rng: (rng.random((12, 12)), rng.random(12))),
    "accumulator": (accumulate, lambda rng: (rng.random((30, 3)),)),
    "negative_step": (every_other_backwards, lambda rng: (rng.random(61),)),
    "nested": (with_inner_loop, lambda rng: (rng.random(4), 5)),
    "swapped_carries": (leapfrog, lambda rng: (rng.random(16), rng.random(16), 9)),
    "index_after": (index_after_the_loop, lambda rng: (rng.random(3),)),
    "donated_aliased": (assign_then_alias, lambda rng: (rng.random(16), rng.random(16), 7)),
    "forward_substitution": (forward_substitution, lambda rng: (np.tril(rng.random((20, 20))) + 20 * np.eye(20),
                                                                rng.random(20))),
    "cholesky": (cholesky, lambda rng: (spd(rng, 12),)),
    "lu": (lu, lambda rng: (rng.random((12, 12)) + 12 * np.eye(12),)),
    "gram_schmidt": (gram_schmidt, lambda rng: (rng.random((14, 10)) + np.eye(14, 10),)),
    "floyd_warshall_slices": (floyd_warshall_slices, lambda rng: (rng.random((24, 24)) * 100,)),
}


def spd(rng, n):
    M = rng.random((n, n))
    return M @ M.T / n + np.eye(n)


def run_both(jit, fn, args, backend):
    """fn's result and arguments after a compiled call and after a plain one."""
    plain_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
    want = fn(*plain_args)
    got = jit(fn, backend=backend)(*compiled_args)
    return (got, compiled_args), (want, plain_args)


def assert_same(got, want):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, np.ndarray):
        # The body runs the same ops in the same order as NumPy: the same rounding, up to
        # the kernels' contraction of a * b + c (a fused multiply-add where the CPU has one).
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    else:
        assert got == want


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_loops_are_captured_as_one_node_and_equal_numpy(jit, name, backend):
    fn, make = PROGRAMS[name]
    got, want = run_both(jit, fn, make(np.random.default_rng(0)), backend)
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 1 and not counters["loops_unrolled"]
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


@pytest.mark.parametrize("backend", BACKENDS)
def triangular_nest(A, x):
    for i in range(x.shape[0]):
        for j in range(i):  # zero trips at i = 0
            x[i] = x[i] - A[i, j] * x[j]
    return x


def substitution_by_elements(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        total = b[i]
        for j in range(i):  # a carried 0-d value
            total = total - L[i, j] * x[j]
        x[i] = total / L[i, i]
    return x


def gram_matrix_upper(c):
    d = c.shape[1]
    r = np.zeros((d, d))
    for a in range(d):
        for b in range(a, d):  # a symbolic start
            r[a, b] = r[b, a] = c[:, a] @ c[:, b]
    return r


def three_deep(x):
    for i in range(x.shape[0]):
        for j in range(i):
            for k in range(j, i):
                x[i] = x[i] + x[k] * 0.5 + j
    return x


NESTED = {
    "triangular_nest": (triangular_nest, lambda rng: (rng.random((12, 12)), rng.random(12)), 2),
    "substitution_by_elements": (substitution_by_elements, lambda rng: (
        np.tril(rng.random((12, 12))) + np.eye(12), rng.random(12)), 2),
    "symbolic_start": (gram_matrix_upper, lambda rng: (rng.random((5, 9)),), 2),
    "three_deep": (three_deep, lambda rng: (rng.random(9) / 10,), 3),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(NESTED))
def test_inner_loops_over_ranges_of_the_outer_index_are_loop_nodes_inside_the_body(jit, name, backend):
    """NOTE(nested-loops): `range(i)`, `range(a, d)` inside a captured body is a loop node of
    that body, its bounds the outer index; one graph, equal NumPy, zero-trip inner loops too."""
    fn, make, loops = NESTED[name]
    got, want = run_both(jit, fn, make(np.random.default_rng(1)), backend)
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == loops and not counters["loops_unrolled"]
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_a_nested_loop_node_is_one_op_of_the_outer_body(jit):
    explained = pyjit.explain(triangular_nest)(np.ones((12, 12)), np.ones(12))
    assert explained.ops_per_graph == [["loop", "loop_result"]]


def inner_compares_index(x):
    for i in range(x.shape[0]):
        for j in range(i):
            if j == 2:  # an equality on the inner index: the inner loop cannot be one node
                x[i] = x[i] + 1.0
    return x


def test_an_inner_loop_that_cannot_be_captured_unrolls_the_outer_one_with_it(jit):
    got, want = run_both(jit, inner_compares_index, (np.zeros(12),), "eager")
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 0 and counters["stats"]["unique_graphs"] == 1
    assert counters["loops_unrolled"]["the loop's body compares its index for equality"] >= 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_body_is_traced_once_whatever_the_trip_count(jit, backend):
    """The graph holds the loop node and its carries, not one op per iteration."""
    calls = []
    for steps in (5, 400):
        counters.clear()
        pyjit.reset()
        A, B = np.linspace(0, 1, 32), np.zeros(32)
        jit(jacobi_1d, backend=backend)(A, B, steps)
        want_A, want_B = np.linspace(0, 1, 32), np.zeros(32)
        jacobi_1d(want_A, want_B, steps)
        assert_same((A, B), (want_A, want_B))
        calls.append(counters["stats"]["calls_captured"])
    assert calls == [3, 3]  # loop, and one result per carried array


def leaves_early(x):
    for i in range(x.shape[0]):
        if i > 3:
            break
        x[i] = 1.0
    return x


def returns_inside(x):
    for i in range(5):
        x = x + i
        if i == 2:
            return x
    return -x


def prints_inside(x):
    for i in range(3):
        x = x + 1.0
        print("step", i)
    return x


def appends_inside(x):
    seen = []
    for i in range(3):
        x = x * 2.0
        seen.append(len(seen))
    return x, seen


def two_slots(x, T):
    for t in range(T):
        x[t % 2] = x[(t + 1) % 2] + 1.0
    return x


def temporary_read_after(x):
    for i in range(3):
        y = x * i
        x = x + 1.0
    return x + y


@pytest.mark.parametrize("fn, args, reason", [
    (leaves_early, (np.zeros(9),), "a break or return inside the loop"),
    (returns_inside, (np.ones(3),), "a break or return inside the loop"),
    (appends_inside, (np.ones(3),), "the loop's body changes Python state (a list, dict or attribute)"),
    (two_slots, (np.ones(2), 6), "the loop's body relies on (s0 + 1) % 2 == 0, which does not hold for the index 0"),
    (temporary_read_after, (np.ones(3),), "the loop's body sets 'y', which is read after the loop, to a value that "
                                          "is not an array it held before the loop"),
], ids=lambda value: getattr(value, "__name__", None) if callable(value) else "")
def test_loops_that_cannot_be_traced_once_unroll_with_the_reason(jit, fn, args, reason):
    got, want = run_both(jit, fn, args, "eager")
    assert_same(got, want)
    assert counters["loops_unrolled"] == {reason: 1}
    assert counters["stats"]["loops_captured"] == 0


def test_a_break_inside_the_body_unrolls_the_loop_and_breaks_there(jit, capsys):
    got, want = run_both(jit, prints_inside, (np.ones(3),), "eager")
    assert_same(got, want)
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n" * 2
    assert list(counters["loops_unrolled"]) == ["a call to the function print is not captured"]


@pytest.mark.parametrize("steps", [0, 1])
def test_loops_of_fewer_than_two_trips_unroll(jit, steps):
    A, B = np.linspace(0, 1, 8), np.ones(8)
    got, want = run_both(jit, jacobi_1d, (A, B, steps + 1), "eager")
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 0 and not counters["loops_unrolled"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_carry_read_under_another_name_unrolls(jit, backend):
    """`y = w`, then a body reading y and w: one placeholder for both would make every
    iteration after the first read y's value for w."""
    def decay(x, w, T):
        y = w
        for t in range(T):
            y = np.tanh(y * x + w)
        return y

    got, want = run_both(jit, decay, (np.linspace(0, 1, 4), np.ones(4), 40), backend)
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 0
    assert list(counters["loops_unrolled"]) == ["the loop's body reads 'w', the array 'y' held before the loop"]


def test_config_capture_loops_false_unrolls(jit):
    with pyjit.config.patch(capture_loops=False):
        got, want = run_both(jit, jacobi_1d, (np.linspace(0, 1, 8), np.ones(8), 4), "eager")
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 0 and counters["stats"]["calls_captured"] > 3


def test_the_logs_show_the_captured_body(jit, caplog):
    import logging

    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_code"):
        jit(jacobi_1d)(np.linspace(0, 1, 8), np.ones(8), 4)
    text = caplog.text
    assert "TRACED LOOP at" in text and "over range(1, 4), carries B, A" in text
    assert "def body(index, " in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_compile_serves_every_trip_count(jit, backend):
    """NOTE(loop-bounds): T, read only as the range's stop, is an input of the graph."""
    compiled = jit(jacobi_1d, backend=backend)
    for steps in (10, 400, 0, 1, 2):
        A, B = np.linspace(0, 1, 16), np.ones(16)
        want_A, want_B = A.copy(), B.copy()
        compiled(A, B, steps)
        jacobi_1d(want_A, want_B, steps)
        assert_same((A, B), (want_A, want_B))
    assert len(pyjit.cache_entries(compiled)) == 1 and counters["stats"]["unique_graphs"] == 1
    assert "type(T) is int" in str(pyjit.cache_entries(compiled)[0][0])


def last_index_read_after(x, T):
    for i in range(T):
        x = x + 1.0
    return x * i


def stop_read_elsewhere(x, T):
    for i in range(T):
        x = x + 1.0
    return x * T


@pytest.mark.parametrize("fn", [last_index_read_after, stop_read_elsewhere])
def test_a_trip_count_the_code_depends_on_otherwise_stays_a_constant(jit, fn):
    compiled = jit(fn)
    for steps in (70, 71):  # more than SHORT_LOOP_OPS: not unrolled (NOTE(short-loops))
        np.testing.assert_array_equal(compiled(np.ones(2), steps), fn(np.ones(2), steps))
    assert len(pyjit.cache_entries(compiled)) == 2 and counters["stats"]["loops_captured"] == 2


def test_explain_shows_the_loop_node(jit):
    explained = pyjit.explain(jacobi_1d)(np.ones(8), np.ones(8), 5)
    assert explained.ops_per_graph == [["loop", "loop_result", "loop_result"]]
    assert explained.graph_break_count == 0


def three_sines(x):
    for i in range(3):
        x = np.sin(x)
    return x


def test_short_loops_of_constant_trip_count_unroll_to_fuse(jit):
    """NOTE(short-loops): three ops unrolled fuse into one kernel; not a reason to report."""
    got, want = run_both(jit, three_sines, (np.linspace(0, 1, 5),), "eager")
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 0 and not counters["loops_unrolled"]
    assert counters["stats"]["calls_captured"] == 3


def test_a_carry_the_body_assigns_into_is_donated_and_written_in_place(jit):
    """NOTE(donated-carries): the body's item assignments write into the loop's own copies
    of A and B rather than copying them each iteration; the caller's arrays change only
    by the write-back, as NumPy leaves them."""
    from pyjit.backends.inductor import inductor

    bodies = []

    def spying(graph_module, example_inputs):
        compiled = inductor(graph_module, example_inputs)
        if graph_module.graph.donated:
            bodies.append((graph_module.graph.donated, getattr(compiled, "fallback", compiled).glue))
        return compiled

    got, want = run_both(jit, jacobi_1d, PROGRAMS["jacobi_1d"][1](np.random.default_rng(1)), spying)
    assert_same(got, want)
    ((donated, glue),) = bodies
    assert donated == {"A_in", "B_in"}
    # each kernel stores into its carry (NOTE(assignment-by-kernel)): no buffer, no copy
    assert "v_index_put = v_B_in\n" in glue and "v_index_put_1 = v_A_in\n" in glue and "] = " not in glue


def window(x, start, stop):
    for t in range(start, stop):
        x[1:] = x[1:] * 0.5 + x[:-1]
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_given_by_an_argument_is_an_input_too(jit, backend):
    """NOTE(loop-bounds): `range(start, stop)` from two int arguments: one compile for all."""
    compiled = jit(window, backend=backend)
    for start, stop in ((3, 80), (0, 5), (10, 10), (7, 2), (-4, 3)):
        got, want = compiled(np.linspace(0, 1, 9), start, stop), window(np.linspace(0, 1, 9), start, stop)
        assert_same(got, want)
    assert len(pyjit.cache_entries(compiled)) == 1 and counters["stats"]["loops_captured"] == 1


def countdown(x, T):
    for t in range(T, 0, -1):  # a negative step with an argument as its start
        x = x * 0.5 + 1.0
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_steps_and_zero_trips(jit, backend):
    compiled = jit(countdown, backend=backend)
    for steps in (90, 0, 1, 3):
        assert_same(compiled(np.linspace(0, 1, 4), steps), countdown(np.linspace(0, 1, 4), steps))
    assert len(pyjit.cache_entries(compiled)) == 1 and counters["stats"]["loops_captured"] == 1


def running_sum(x, y):
    acc = 0.0
    for i in range(len(x)):
        acc += x[i]  # a Python float before the loop, a NumPy scalar after one iteration
        y[i] = acc
    return y, acc


def wrapping_recurrence(y, x):
    for t in range(y.shape[0]):  # y[t - 1] is y[-1] at t = 0: that iteration is another case
        y[t] = 0.5 * y[t - 1] + x[t]
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make", [
    (running_sum, lambda rng: (rng.random(40), np.zeros(40))),
    (wrapping_recurrence, lambda rng: (rng.random(40), rng.random(40))),
], ids=["carried_accumulator", "first_index_differs"])
def test_a_first_iteration_that_differs_is_peeled(jit, fn, make, backend):
    """NOTE(loop-peeling): the first iteration unrolled, the other 39 one loop node."""
    got, want = run_both(jit, fn, make(np.random.default_rng(2)), backend)
    assert_same(got, want)
    assert type(got[0][-1]) is type(want[0][-1])
    assert counters["stats"]["loops_captured"] == 1 and not counters["loops_unrolled"]
    assert counters["stats"]["unique_graphs"] == 1


def counts_in_python(x):
    n = 0
    for i in range(40):
        x = x * 0.5
        x[0] = n  # the next iteration reads n, a Python int the body changes
        n += 1
    return x


def test_a_python_value_the_next_iteration_reads_unrolls_the_loop(jit):
    got, want = run_both(jit, counts_in_python, (np.ones(3),), "eager")
    assert_same(got, want)
    assert counters["loops_unrolled"] == {"the loop's body changes 'n', which its next iteration reads, and it is "
                                          "not an array before and after the body": 1}


def until_converged(x, tol):
    err = np.abs(x).max()
    while err > tol:  # a condition on array values
        x = x * 0.5
        err = np.abs(x).max()
    return x


def test_a_while_loop_on_array_values_is_a_graph_break_with_its_reason(jit):
    got, want = run_both(jit, until_converged, (np.linspace(1, 4, 5), 1e-3), "eager")
    assert_same(got, want)
    assert list(counters["graph_break"]) == ["the truth value of an array depends on its values"]
    assert counters["stats"]["loops_captured"] == 0


def short_prefixes(x, y):
    for i in range(3):  # the middle index, 1, makes x[:i] as long as a broadcast axis
        head = x[:i]
        y[:i] = y[:i] + np.sin(head) * np.cos(head) + np.tanh(head) * np.exp(-head) + np.sqrt(head + 1.0) * np.sin(
            2.0 * head) + np.cos(3.0 * head) * np.tanh(head - 1.0) + np.arctan(head) * np.log1p(head)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_body_is_traced_for_an_index_where_its_sizes_are_not_0_or_1(jit, backend):
    """NOTE(index-hints): traced at i = 1, the kernels would take x[:i] for a broadcast."""
    got, want = run_both(jit, short_prefixes, (np.linspace(0.1, 1, 5), np.linspace(1, 2, 5)), backend)
    assert_same(got, want)
    assert counters["stats"]["loops_captured"] == 1 and not counters["loops_unrolled"]
