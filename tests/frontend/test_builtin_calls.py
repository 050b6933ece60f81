"""pyjit/frontend/builtin_calls.py: builtins answer on symbolic values and fold on
constants; isinstance folds only where it runs no Python (NOTE(isinstance-folding))."""

import numpy as np

import pyjit
from pyjit.utils import counters


def test_constants_fold_and_builtins_answer(jit):
    def folded(x):
        n = len(x) + max(2, 3) + int(2.5)
        flag = isinstance(x, np.ndarray) and not isinstance(n, float)
        return x * n, flag, tuple([1, 2])

    x = np.ones(4)
    got = jit(folded)(x)
    assert np.array_equal(got[0], x * 9) and got[1:] == (True, (1, 2))


class Checked(type):
    """A metaclass whose instance check answers from a list, one answer per call."""

    answers: list = []

    def __instancecheck__(cls, obj):
        return Checked.answers.pop(0)


class Anything(metaclass=Checked):
    pass


def test_isinstance_that_runs_python_is_not_folded(jit):
    """NOTE(isinstance-folding): a metaclass's __instancecheck__ runs on every call, not
    once at trace time with its answer baked in."""
    def pick(x, obj):
        return x + 1 if isinstance(obj, Anything) else x - 1

    Checked.answers[:] = [True, False]
    compiled, x = jit(pick), np.zeros(2)
    np.testing.assert_array_equal(compiled(x, object()), x + 1)
    np.testing.assert_array_equal(compiled(x, object()), x - 1)
    assert Checked.answers == []
    assert any("decides instances in Python" in reason for reason in counters["graph_break"])


def test_isinstance_of_plain_classes_folds(jit):
    def pick(x, obj):
        return x + 1 if isinstance(obj, (str, (bytes, complex))) else x - 1

    compiled, x = jit(pick), np.zeros(2)
    np.testing.assert_array_equal(compiled(x, b"2"), x + 1)
    np.testing.assert_array_equal(compiled(x, object()), x - 1)
    assert not counters["graph_break"]


class _Weights:
    def __init__(self):
        self.scale, self.shift = np.full(3, 2.0), np.full(3, -1.0)


def test_getattr_with_a_constant_name_reads_the_attribute(jit):
    weights = _Weights()
    compiled = jit(lambda x, name: x * getattr(weights, name))
    x = np.arange(3.0)
    np.testing.assert_array_equal(compiled(x, "scale"), x * 2.0)
    np.testing.assert_array_equal(compiled(x, "shift"), x * -1.0)  # the name is guarded: a recompile
    assert counters["stats"]["unique_graphs"] == 2 and not counters["graph_break"]


def test_isinstance_sees_tensors_and_parameters(jit):
    def kinds(t, p, a):
        return (isinstance(t, pyjit.Tensor), isinstance(p, pyjit.nn.Parameter), isinstance(t * 2, pyjit.Tensor),
                isinstance(a, pyjit.Tensor), isinstance(a + 1, np.ndarray), isinstance(t + a, np.ndarray), a * 2)

    args = pyjit.tensor(np.ones(2)), pyjit.nn.Parameter(pyjit.tensor(np.ones(2))), np.ones(2)
    got, want = jit(kinds)(*args), kinds(*args)
    assert got[:-1] == want[:-1] == (True, True, True, False, True, False)


def test_operator_getitem_indexes_as_the_subscript_does(jit):
    import operator

    def pick(x, pair):
        return operator.getitem(x, 1) * operator.getitem(pair, 0)

    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(jit(pick)(x, (2.0, 3.0)), pick(x, (2.0, 3.0)))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
