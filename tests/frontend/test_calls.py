"""pyjit/frontend/calls.py: NumPy calls bind as NumPy binds them (NOTE(numpy-calls)),
arguments the registry does not model make the frame run as it is, and constants fold."""

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters


def graph_calls(compiled):
    ((_, code),) = pyjit.cache_entries(compiled)
    graph_module = next(const for const in code.co_consts if isinstance(const, pyjit.graph.GraphModule))
    return [(node.target.name, node.args) for node in graph_module.graph.calls()]


def test_positional_options_bind_by_numpy_names(jit):
    def mean_rows(x):
        return np.mean(x, 0), x.sum(1, None, None, True)

    x = np.arange(6.0).reshape(2, 3)
    compiled = jit(mean_rows)
    got, want = compiled(x), mean_rows(x)
    assert all(np.array_equal(a, b) and a.shape == b.shape for a, b in zip(got, want))
    calls = graph_calls(compiled)
    assert [name for name, _ in calls][-1] == "sum" and calls[-1][1][1:] == (1, True)


@pytest.mark.parametrize("fn", [
    lambda x: np.sum(x, dtype=np.float32),
    lambda x: np.add(x, 1, x),
    lambda x: x.mean(0, np.float32),
], ids=["dtype", "out", "positional-dtype"])
def test_unmodelled_arguments_run_as_they_are(jit, fn):
    x = np.arange(4.0)
    want = fn(x.copy())
    np.testing.assert_array_equal(jit(fn)(x), want)
    assert counters["graph_break"] and not pyjit.cache_entries(fn)


def test_methods_take_unpacked_sizes_and_axes(jit):
    def reshaped(x):
        return x.reshape(3, 2), x.reshape((2, 3)).transpose(1, 0), x.reshape(-1, 1).transpose()

    x = np.arange(6.0)
    for got, want in zip(jit(reshaped)(x), reshaped(x)):
        np.testing.assert_array_equal(got, want)
        assert got.shape == want.shape


def test_constants_fold_and_builtins_answer(jit):
    def folded(x):
        n = len(x) + max(2, 3) + int(2.5)
        flag = isinstance(x, np.ndarray) and not isinstance(n, float)
        return x * n, flag, tuple([1, 2])

    x = np.ones(4)
    got = jit(folded)(x)
    assert np.array_equal(got[0], x * 9) and got[1:] == (True, (1, 2))


def test_bool_operators_are_logical_only_on_bools(jit):
    def bits(a, b):
        return a & b

    ints = np.array([1, 2, 3])
    np.testing.assert_array_equal(jit(bits)(ints, ints), ints)
    assert counters["graph_break"]


def test_user_object_attributes_are_read_through_sources(jit):
    class Config:
        scale = 2.0

        def __init__(self, shift):
            self.shift = shift

    def shifted(x, cfg):
        return x * cfg.scale + cfg.shift

    compiled = jit(shifted)
    x = np.ones(2)
    np.testing.assert_array_equal(compiled(x, Config(1.0)), x * 2 + 1)
    np.testing.assert_array_equal(compiled(x, Config(3.0)), x * 2 + 3)  # cfg.shift is guarded
    guard = pyjit.cache_entries(compiled)[0][0]
    assert "cfg.shift == 3.0" in guard and "type(cfg) is" in guard
