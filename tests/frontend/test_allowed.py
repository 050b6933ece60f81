"""pyjit/frontend/allowed.py: pyjit.allow_in_graph makes a function one op of the graph."""

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

calls = []


@pyjit.allow_in_graph
def running_total(a, scale):
    calls.append(a.shape)
    total = np.unwrap(np.cumsum(a))  # the interpreter would break here (np.unwrap is not captured)
    return total * scale


def uses_it(x):
    y = np.sin(x)
    return running_total(y, 2.0) + 1


def expected(x):
    return np.cumsum(np.sin(x)) * 2.0 + 1


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_an_allowed_function_is_one_node_of_one_graph(jit, backend):
    x = np.linspace(0, 1, 5)
    calls.clear()
    compiled = jit(uses_it, backend=backend)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x), expected(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    # once at capture on zeros (its meta), then once per call, never traced
    assert calls == [(5,)] * 3
    assert pyjit.explain(uses_it)(x).ops_per_graph == [["sin", "running_total", "add"]]


def test_without_it_the_function_breaks_the_graph(jit):
    def plain_total(a, scale):
        return np.unwrap(np.cumsum(a)) * scale

    def uses_plain(x):
        return plain_total(np.sin(x), 2.0) + 1

    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(jit(uses_plain)(x), expected(x))
    assert counters["graph_break"]


@pyjit.allow_in_graph
def squashed(a, scale):
    return np.tanh(a) * scale


def uses_squashed(x):
    return squashed(x * 3, 2.0).sum()


def test_tensors_and_symbolic_sizes_run_it_in_python(jit):
    t = pyjit.tensor(np.linspace(0, 1, 5), requires_grad=True)
    jit(uses_squashed)(t).backward()
    # d/dx 2 tanh(3x) = 6 (1 - tanh(3x)^2): the gradient is the tape's, not dropped
    np.testing.assert_allclose(t.grad.numpy(), 6 * (1 - np.tanh(3 * np.linspace(0, 1, 5)) ** 2), rtol=1e-6)
    assert any("allowed in the graph" in reason for reason in counters["graph_break"])
    dynamic = jit(uses_it, dynamic=True)
    np.testing.assert_allclose(dynamic(np.linspace(0, 1, 6)), expected(np.linspace(0, 1, 6)))
    assert any("symbolic sizes" in reason for reason in counters["graph_break"])


def test_it_takes_callables_only():
    with pytest.raises(TypeError, match="takes a function"):
        pyjit.allow_in_graph(3)
    assert pyjit.allow_in_graph(running_total) is running_total


def draws(x):
    noise = pyjit.randn(x.shape[0], dtype=np.float64)
    return np.sin(x) + noise + pyjit.rand(x.shape).numpy()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_random_draws_are_graph_ops_that_draw_what_the_plain_code_draws(jit, backend):
    compiled = jit(draws, backend=backend)
    x = np.linspace(0, 1, 4)
    pyjit.manual_seed(3)
    want = [draws(x).numpy() for _ in range(3)]
    pyjit.manual_seed(3)
    got = [compiled(x).numpy() for _ in range(3)]  # the capture itself draws nothing
    for got_one, want_one in zip(got, want):
        np.testing.assert_allclose(got_one, want_one, rtol=1e-6)
    assert "randn" in pyjit.explain(draws)(x).ops_per_graph[0]
