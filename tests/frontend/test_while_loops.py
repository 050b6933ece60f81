"""pyjit/frontend/while_loops.py: a `while` loop whose condition compares Python numbers
the loop carries is one loop node (NOTE(while-capture)), one compile for every bound, on
every backend; the carried numbers are Python's, bit for bit and type for type
(NOTE(carried-numbers)); a condition on array values, a `break`, or a body that cannot be
traced once runs as before, with the reason."""

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

BACKENDS = ["eager", "aot_eager", "inductor"]


def heat(u, t_end, dt):
    t = 0.0
    while t < t_end:
        u[1:-1] = u[1:-1] + dt * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        t += dt
    return u, t


def relax(x, b, steps):
    n = 0
    while n < steps:
        x = 0.5 * (x + b) - 0.25 * x
        n += 1
    return x


def forced(u, t_end):
    t = 0.0
    while t < t_end:  # t, a Python float, is weak beside the float32 array: u stays float32
        u = u + (t * 0.5 - u) * 0.125
        t = t + 0.1
    return u


def power_iteration(A, v, iterations):
    k = 0
    while k < iterations:  # a Newton or power iteration with a fixed count, written as a while
        w = A @ v
        v = w / np.sqrt(w @ w)
        k = k + 1
    return v, k


def run_both(jit, fn, args, backend, **options):
    compiled = jit(fn, backend=backend, **options)
    return compiled(*_copies(args)), fn(*_copies(args))


def _copies(args):
    return tuple(arg.copy() if isinstance(arg, np.ndarray) else arg for arg in args)


def assert_identical(got, want):
    """Arrays equal bit for bit with the same dtype; numbers equal with the same type."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_identical(g, w)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    else:
        assert type(got) is type(want) and got == want


def assert_one_graph_with_a_loop_node():
    assert counters["stats"]["loops_captured"] == 1 and not counters["loops_unrolled"]
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_carried_time_loop_is_one_node_with_t_read_after_it(jit, backend):
    """`t += dt` until `t_end`: the array and the final t (a Python float, the same bits:
    0.1 added 3 times is not 0.3) are plain Python's, and the graph is one loop node."""
    u = np.linspace(0.0, 1.0, 64) ** 2
    got, want = run_both(jit, heat, (u, 0.25, 0.1), backend)
    assert_identical(got, want)
    assert want[1] != 0.3  # the accumulated float really is carried, not recomputed
    assert_one_graph_with_a_loop_node()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int_bound_is_an_input_no_recompile_for_a_new_bound_zero_included(jit, backend):
    compiled = jit(relax, backend=backend)
    b = np.linspace(-1.0, 1.0, 33)
    for steps in (7, 40, 0, 1):
        x = np.cos(np.arange(33.0))
        assert_identical(compiled(x.copy(), b, steps), relax(x.copy(), b, steps))
    assert len(pyjit.cache_entries(compiled)) == 1
    assert_one_graph_with_a_loop_node()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_bound_is_an_input_too(jit, backend):
    compiled = jit(heat, backend=backend)
    for t_end in (0.3, 0.05, 0.0, -1.0, 1.25):
        u = np.linspace(0.0, 1.0, 40) ** 3
        assert_identical(compiled(u.copy(), t_end, 0.05), heat(u.copy(), t_end, 0.05))
    assert len(pyjit.cache_entries(compiled)) == 1
    assert_one_graph_with_a_loop_node()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_float_carry_keeps_a_float32_array_float32(jit, backend):
    u = np.linspace(0.0, 2.0, 17, dtype=np.float32)
    got, want = run_both(jit, forced, (u, 1.0), backend)
    assert want.dtype == np.float32
    assert_identical(got, want)
    assert_one_graph_with_a_loop_node()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fixed_count_iteration_written_as_while(jit, backend):
    rng = np.random.default_rng(0)
    A = rng.random((6, 6))
    A = A + A.T
    (got, k), (want, n) = run_both(jit, power_iteration, (A, np.ones(6), 30), backend)
    # matmul and sqrt in kernels: NumPy's values up to rounding (docs/codegen.md)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert type(k) is int and k == n == 30
    assert_one_graph_with_a_loop_node()


def skips_the_rest(u, steps, skip):
    k = 0
    while k < steps:
        k += 1
        u = u + 1.0
        if skip:
            continue  # a jump back to the condition, which each Python version places differently
        u = u * 2.0
    return u, k


@pytest.mark.parametrize("skip", [True, False])
def test_continue_ends_the_iteration(jit, skip):
    compiled = jit(skips_the_rest)
    for steps in (3, 0, 6):
        assert_identical(compiled(np.ones(3), steps, skip), skips_the_rest(np.ones(3), steps, skip))
    assert_one_graph_with_a_loop_node()


def test_the_graph_holds_a_while_loop_node(jit):
    explained = pyjit.explain(relax)(np.ones(8), np.ones(8), 5)
    assert explained.ops_per_graph == [["while_loop", "loop_result"]]


def stops_on_the_error(x, tol):
    err = np.ones(1)
    while np.max(err) > tol:
        y = 0.5 * (x + 2.0 / x)
        err = np.abs(y - x)
        x = y
    return x


def test_a_condition_on_array_values_stays_a_break_with_its_reason(jit):
    got, want = run_both(jit, stops_on_the_error, (np.array([3.0]), 1e-12), "eager")
    assert_identical(got, want)
    assert counters["loops_unrolled"]["the while loop's condition reads array values"] == 1
    assert counters["stats"]["loops_captured"] == 0
    assert counters["graph_break"]["the truth value of an array depends on its values"] >= 1


def stops_early(x, steps, stop):
    n = 0
    while n < steps:
        x = x * 1.5
        n += 1
        if stop:
            break
    return x


def branches_on_the_count(x, steps):
    n = 0
    while n < steps:
        if n % 2 == 0:  # a decision on a carried number: known only as the loop runs
            x = x + 1.0
        n += 1
    return x


def halves(x, steps):
    n = 0
    while n < steps:
        x = x + 1.0
        n = n / 2 + 2  # int to float: the loop op could not keep the type
    return x, n


RUN_AS_BEFORE = {
    "break": (stops_early, (np.ones(3), 10, True), "a break or return inside the loop"),
    "decision_on_a_number": (branches_on_the_count, (np.zeros(2), 5),
                             "the truth value of a number a while loop carries, which is known only as the loop runs"),
    "number_changes_type": (halves, (np.zeros(2), 3), "the loop's body changes the type of 'n', a number it carries"),
}


@pytest.mark.parametrize("name", list(RUN_AS_BEFORE))
def test_a_body_that_cannot_be_traced_once_runs_the_loop_as_before_with_its_reason(jit, name):
    fn, args, reason = RUN_AS_BEFORE[name]
    got, want = run_both(jit, fn, args, "eager")
    assert_identical(got, want)
    assert counters["loops_unrolled"][reason] == 1 and counters["stats"]["loops_captured"] == 0


def doubled_after(x, steps):
    n = 0
    while n < steps:
        x = x + 1.0
        n += 2
    return x, n * 2


def test_arithmetic_on_the_carried_number_after_the_loop_is_a_break_there(jit):
    got, want = run_both(jit, doubled_after, (np.zeros(2), 7), "eager")
    assert_identical(got, want)
    assert counters["stats"]["loops_captured"] == 1
    assert counters["graph_break"]["arithmetic on a number a while loop computed, after the loop"] == 1


def tensor_steps(w, steps):
    n = 0
    while n < steps:
        w = w * 0.5 + 1.0
        n += 1
    return w.sum()


def test_a_while_loop_over_tensors_unrolls_and_differentiates(jit):
    w = pyjit.tensor(np.arange(3.0), requires_grad=True)
    loss = jit(tensor_steps)(w, 3)
    loss.backward()
    assert counters["loops_unrolled"]["a while loop whose body reads pyjit.Tensor values is not captured "
                                      "(its gradient is not built)"] == 1
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 0.125))  # d/dw of 0.5^3 w + const
