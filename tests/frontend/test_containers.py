"""pyjit/frontend/containers.py: what list, dict and set methods do to their values; what
cannot be followed is a graph break that says why in plain words."""

import numpy as np

from pyjit.utils import counters


def test_popping_from_a_set_passed_in_runs_in_python_and_says_why(jit):
    def pops(x, s):
        y = x * 2
        return y, s.pop()

    got, want = jit(pops)(np.ones(2), {3, 1, 2}), pops(np.ones(2), {3, 1, 2})
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
    assert list(counters["graph_break"]) == ["set.pop() of a set the function did not make: which element CPython "
                                             "pops depends on a cursor the set keeps"]
