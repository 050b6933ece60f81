"""pyjit/backends/eager.py: the graph's ops run one by one, with NumPy's results."""

import numpy as np
import pytest

import pyjit
import pyjit.ops as ops
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.source import SourceLoc


def small_graph_module():
    """sum(exp(x) * y + 1, axis=0), and broadcast_to/reshape of x."""
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2, 3), np.float32))
    y = graph.placeholder("y", TensorMeta((3,), np.float32))
    body = graph.call(ops.add, graph.call(ops.multiply, graph.call(ops.exp, x), y), 1)
    total = graph.call(ops.sum, body, axis=0)
    wide = graph.call(ops.broadcast_to, graph.call(ops.reshape, x, (1, 6)), (2, 6))
    graph.output((total, wide))
    return GraphModule(graph)


def test_eager_gives_numpys_results():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.array([0.5, -2.0, 3.0], dtype=np.float32)
    module = small_graph_module()
    compiled = lookup_backend("eager")(module, [x, y])
    assert callable(compiled)
    total, wide = compiled(x, y)
    expected = np.sum(np.exp(x) * y + 1, axis=0)
    assert total.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(total, expected, rtol=1e-6)
    np.testing.assert_array_equal(wide, np.broadcast_to(x.reshape(1, 6), (2, 6)))


def test_eager_runs_other_inputs_of_the_same_shapes():
    module = small_graph_module()
    compiled = lookup_backend("eager")(module, [np.zeros((2, 3), np.float32), np.zeros(3, np.float32)])
    x, y = np.ones((2, 3), np.float32), np.full(3, 2.0, np.float32)
    total, _ = compiled(x, y)
    np.testing.assert_allclose(total, np.sum(np.exp(x) * y + 1, axis=0), rtol=1e-6)


def test_numpy_inputs_run_without_per_op_dispatch(monkeypatch):
    """NOTE(eager-straight-line): with NumPy examples, a call dispatches no registry op."""
    x, y = np.ones((2, 3), np.float32), np.full(3, 2.0, np.float32)
    compiled = lookup_backend("eager")(small_graph_module(), [x, y])

    def no_dispatch(*args, **kwargs):
        raise AssertionError("a registry op dispatched")

    monkeypatch.setattr(ops.Op, "__call__", no_dispatch)
    total, wide = compiled(x, y)
    np.testing.assert_allclose(total, np.sum(np.exp(x) * y + 1, axis=0), rtol=1e-6)
    np.testing.assert_array_equal(wide, np.broadcast_to(x.reshape(1, 6), (2, 6)))


def test_a_tensor_input_runs_the_graph_module_and_records_on_the_tape():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.array([0.5, -2.0, 3.0], dtype=np.float32)
    compiled = lookup_backend("eager")(small_graph_module(), [x, y])
    tensor = pyjit.Tensor(x, requires_grad=True)
    total, _ = compiled(tensor, y)
    assert isinstance(total, pyjit.Tensor)
    total.sum().backward()
    np.testing.assert_allclose(tensor.grad, np.exp(x) * y, rtol=1e-6)


def test_tensor_examples_get_the_graph_module():
    module = small_graph_module()
    examples = [pyjit.Tensor(np.zeros((2, 3), np.float32)), np.zeros(3, np.float32)]
    assert lookup_backend("eager")(module, examples) is module


def test_an_error_keeps_its_type_and_names_the_node_and_the_user_line():
    graph = Graph("adder")
    x = graph.placeholder("x", TensorMeta((3,), np.float64))
    y = graph.placeholder("y", TensorMeta((3,), np.float64))
    with graph.at(SourceLoc("model.py", 7)):
        graph.output(graph.call(ops.add, x, y))
    compiled = lookup_backend("eager")(GraphModule(graph), [np.ones(3), np.ones(3)])
    with pytest.raises(ValueError, match="could not be broadcast") as caught:
        compiled(np.ones(2), np.ones(3))
    assert caught.value.__notes__ == ["while running node add of graph adder, from model.py:7"]


def test_compiled_functions_give_numpys_results_and_guard_their_inputs():
    def step(x, scale):
        return np.tanh(x) * scale + x.sum(axis=0)

    compiled = pyjit.compile(step, backend="eager")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for args in ((x, 2.0), (x, 3.0), (x.astype(np.float64), 2.0), (np.ones((4, 3), np.float32), 2.0)):
        got, want = compiled(*args), step(*args)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
