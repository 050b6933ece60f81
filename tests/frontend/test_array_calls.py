"""pyjit/frontend/array_calls.py: NumPy calls bind as NumPy binds them (NOTE(numpy-calls)),
arguments the registry does not model make the frame run as it is, ndarray and Tensor
methods are recorded, and a method that is not captured breaks once, at its call."""

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.utils import counters


def graph_calls(compiled):
    ((_, code),) = pyjit.cache_entries(compiled)
    graph_module = next(const.graph_module for const in code.co_consts if hasattr(const, "graph_module"))
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
    lambda x: x.mean(0, np.float32),
], ids=["dtype", "positional-dtype"])
def test_unmodelled_arguments_break_and_the_call_runs_in_python(jit, fn):
    x = np.arange(4.0)
    want = fn(x.copy())
    np.testing.assert_array_equal(jit(fn)(x), want)
    assert counters["graph_break"]  # the call runs in Python at a graph break


def test_methods_take_unpacked_sizes_and_axes(jit):
    def reshaped(x):
        return x.reshape(3, 2), x.reshape((2, 3)).transpose(1, 0), x.reshape(-1, 1).transpose()

    x = np.arange(6.0)
    for got, want in zip(jit(reshaped)(x), reshaped(x)):
        np.testing.assert_array_equal(got, want)
        assert got.shape == want.shape


# -- pyjit.Tensor values (NOTE(tensor-capture)) ---------------------------------------------------
def tensor_pair(requires_grad=True):
    values = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
    return (pyjit.tensor(values, requires_grad=requires_grad),
            pyjit.tensor(values.copy(), requires_grad=requires_grad))


def tensor_methods(t):
    moved = t.transpose(0, 2).permute(2, 1, 0).view(6, 4)  # torch's two-axis transpose swaps on 3-D
    return (moved.cos().cos().sum(dim=1, keepdim=True) * t.float().mean()).double().sum()


def test_tensor_methods_are_recorded_and_their_gradients_are_the_tapes(jit):
    compiled = jit(tensor_methods)
    captured, eager = tensor_pair()
    got, want = compiled(captured), tensor_methods(eager)
    assert type(got) is pyjit.Tensor and got.grad_fn is not None
    got.backward()
    want.backward()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(captured.grad.numpy(), eager.grad.numpy(), rtol=1e-12)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_backward_inside_a_compiled_function_runs_at_a_break(jit):
    def step(t):
        loss = (t.sin() ** 2).sum()
        loss.backward()
        return t.grad * 1.0

    captured, eager = tensor_pair()
    np.testing.assert_allclose(jit(step)(captured).numpy(), step(eager).numpy(), rtol=1e-12)
    assert any("Tensor.backward" in reason for reason in counters["graph_break"])


def test_an_array_method_that_is_not_captured_breaks_once_at_its_call(jit):
    def uses_methods(x):
        y = np.sin(x)
        values = y.tolist()  # one break, at the call
        copied, flat = y.copy(), y.flatten()  # captured: new arrays
        return y.__class__ is np.ndarray, values, copied, flat, flat.base is None

    x = np.linspace(0, 1, 4)
    got, want = jit(uses_methods)(x), uses_methods(x)
    assert got[0] is want[0] is True and got[1] == want[1] and got[4] is want[4] is True
    assert same(got[2], want[2]) and same(got[3], want[3]) and got[2] is not got[3]
    tolist = "ndarray.tolist() needs the array's values, which exist only when the graph runs"
    assert counters["graph_break"][tolist] == 1 and not any("copy" in reason or "flatten" in reason
                                                            for reason in counters["graph_break"])
