"""pyjit/backends/eager.py: the graph's ops run one by one, with NumPy's results."""

import numpy as np

import pyjit.ops as ops
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, TensorMeta


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
