"""pyjit/frontend/calls.py: a call the interpreter cannot capture is a graph break whose
reason names what was called in plain words, and the call runs in Python."""

import numpy as np

from pyjit.utils import counters


def test_an_uncaptured_numpy_function_is_named_in_the_break_reason(jit):
    def differenced(x):
        return np.unwrap(x * 2) + 1  # np.unwrap is not in the op registry

    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(jit(differenced)(x), differenced(x))
    assert list(counters["graph_break"]) == ["a call to the function numpy.unwrap is not captured"]
