"""pyjit/frontend/iteration.py: iter, enumerate, zip and reversed unroll (NOTE(loop-unrolling)),
and an iterator the code also holds elsewhere is not taken at once."""

import numpy as np
from frontend.test_interpreter import same

from pyjit.utils import counters


def iteration_builtins(x):
    total = x * 0
    for i, (a, b) in enumerate(zip((1.0, 2.0, 3.0), reversed(x)), start=1):
        total = total + a * b * i
    it = iter((5, 6, 7))
    first, rest = next(it), list(it)
    return total, first, rest, next(it, None), tuple(x), list(enumerate("ab")), sum(x), sum((0.1, 0.2, 0.3))


def test_iteration_builtins_unroll(jit):
    x = np.arange(6.0).reshape(3, 2)
    compiled = jit(iteration_builtins)
    for _ in range(2):
        assert same(compiled(x), iteration_builtins(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_an_iterator_also_held_elsewhere_is_not_taken_at_once(jit):
    def pairs(x):
        it = iter((1, 2, 3, 4))
        for a, b in zip(it, it):  # Python's zip takes from `it` lazily
            x = x + a * b
        return x

    np.testing.assert_array_equal(jit(pairs)(np.zeros(2)), pairs(np.zeros(2)))
    assert any("also holds elsewhere" in key for key in counters["graph_break"])
