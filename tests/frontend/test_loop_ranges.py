"""pyjit/frontend/loop_ranges.py: what a loop's body relied on about its index is checked
for every index; a range over a dynamic size reduces those checks to guards on sizes
(NOTE(dynamic-ranges)), so a program whose trip count is an array's size compiles once
for every size."""

import numpy as np
import pytest

import pyjit
from pyjit.frontend.loop_ranges import SymbolicRange, size_conditions
from pyjit.graph import ShapeEnv, ShapeGuard
from pyjit.utils import counters

from .test_loops import BACKENDS, assert_same, cholesky, floyd_warshall_slices, forward_substitution, gram_schmidt, \
    lu, run_both, spd


class Loop:
    def __init__(self, index, steps):
        self.name, self.steps = str(index), steps


@pytest.fixture
def env():
    return ShapeEnv()


def test_a_guard_linear_in_the_index_becomes_guards_on_the_sizes_at_the_range_ends(env):
    n = env.create_symbol(9)
    i = env.create_index(4)
    conditions = size_conditions(ShapeGuard(-n, "<=", i), [Loop(i, SymbolicRange(0, n, 1))])
    # -n <= 0 at the first index and -n <= n - 1 at the last: both about n alone.
    assert [str(condition) for condition in conditions] == ["-s0 <= 0", "-2*s0 + 1 <= 0"]
    assert all(condition.holds({"s0": 5}) for condition in conditions)
    assert not conditions[1].holds({"s0": 0})


def test_a_negative_step_ends_one_past_its_stop(env):
    n = env.create_symbol(9)
    i = env.create_index(4)
    # i - 1 >= 0 at i = n - 1, and at the last index, 1, whatever n.
    (condition,) = size_conditions(ShapeGuard(i - 1, ">=", 0), [Loop(i, SymbolicRange(n - 1, 0, -1))])
    assert str(condition) == "s0 - 2 >= 0"


def test_nested_ranges_reduce_innermost_first(env):
    n = env.create_symbol(9)
    j = env.create_index(4)
    k = env.create_index(2)
    loops = [Loop(j, SymbolicRange(0, n, 1)), Loop(k, SymbolicRange(0, j + 1, 1))]
    conditions = size_conditions(ShapeGuard(k, "<", n), loops)  # k <= j <= n - 1
    assert conditions and all(condition.lhs.symbols() == {"s0"} for condition in conditions)
    assert all(condition.holds({"s0": 3}) for condition in conditions)


def test_what_cannot_be_reduced_is_none(env):
    n = env.create_symbol(9)
    i = env.create_index(4)
    whole = [Loop(i, SymbolicRange(0, n, 1))]
    assert size_conditions(ShapeGuard(i * i, "<", n * n), whole) is None  # not linear in the index
    assert size_conditions(ShapeGuard(i, "<", n), [Loop(i, SymbolicRange(0, n, 2))]) is None  # last index n - 2 or n - 1
    assert size_conditions(ShapeGuard(i - n, "!=", 0), whole) is None  # not an inequality
    assert size_conditions(ShapeGuard(i - 1, ">=", 0), [Loop(i, range(0, 5))]) is None  # fails at i = 0, sizes or not


SHAPE_DRIVEN = {
    "forward_substitution": (forward_substitution, lambda rng, n: (np.tril(rng.random((n, n))) + n * np.eye(n),
                                                                     rng.random(n))),
    "cholesky": (cholesky, lambda rng, n: (spd(rng, n),)),
    "lu": (lu, lambda rng, n: (rng.random((n, n)) + n * np.eye(n),)),
    "gram_schmidt": (gram_schmidt, lambda rng, n: (rng.random((n, n // 2)) + np.eye(n, n // 2),)),
    "floyd_warshall_slices": (floyd_warshall_slices, lambda rng, n: (rng.random((n, n)) * 100,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(SHAPE_DRIVEN))
def test_a_trip_count_given_by_a_size_compiles_once_for_every_size(jit, name, backend):
    fn, make = SHAPE_DRIVEN[name]
    compiled = jit(fn, backend=backend)
    rng = np.random.default_rng(7)
    for n in (20, 19, 17, 24, 18):  # long enough not to unroll as a short loop (NOTE(short-loops))
        args = make(rng, n)
        (got, got_args), (want, want_args) = run_both(lambda f, backend: compiled, fn, args, backend)
        assert_same(got, want)
        assert_same(got_args, want_args)
    # The first size is static; the second marks the sizes dynamic, and that graph serves the rest.
    assert len(pyjit.cache_entries(compiled)) == 2
    assert counters["stats"]["unique_graphs"] == 2 and counters["stats"]["loops_captured"] == 2
    assert not counters["graph_break"] and not counters["loops_unrolled"]
