"""pyjit/codegen/scheduling/dots.py: a loop body's vector products become reductions
(NOTE(dots-in-loops)), with matmul's values; other products and other graphs keep matmul."""

import numpy as np
import pytest

from pyjit.codegen.scheduling.dots import dots_as_reductions, is_loop_body
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.ops.registry import REGISTRY


def body_with_product(a_shape, b_shape, a_dtype=np.float64, b_dtype=np.float64):
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    graph.placeholder("index", env.create_index(3))
    a = graph.placeholder("a", TensorMeta(a_shape, np.dtype(a_dtype)))
    b = graph.placeholder("b", TensorMeta(b_shape, np.dtype(b_dtype)))
    product = graph.call(REGISTRY["matmul"], a, b)
    graph.output((graph.call(REGISTRY["add"], product, 1.0),))
    return graph


@pytest.mark.parametrize("a_shape, b_shape", [((5, 4), (4,)), ((4,), (4,)), ((3, 0), (0,)), ((0,), (0,))])
def test_vector_products_become_sums_with_matmuls_values(a_shape, b_shape):
    graph = body_with_product(a_shape, b_shape)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    assert dots_as_reductions(graph) == 1
    assert [node.target.name for node in graph.calls()] == ["multiply", "sum", "add"]
    graph.lint()
    (result,) = GraphModule(graph)(3, a, b)
    np.testing.assert_allclose(result, a @ b + 1.0, rtol=1e-14, atol=1e-14)
    assert np.shape(result) == np.shape(a @ b)


@pytest.mark.parametrize("a_shape, b_shape, a_dtype, b_dtype", [
    ((4,), (4, 5), np.float64, np.float64),  # a vector times a matrix
    ((3, 4), (4, 5), np.float64, np.float64),
    ((3, 4), (4,), np.int64, np.int64),
    ((3, 4), (4,), np.float32, np.float64),
])
def test_other_products_stay_matmul(a_shape, b_shape, a_dtype, b_dtype):
    graph = body_with_product(a_shape, b_shape, a_dtype, b_dtype)
    assert dots_as_reductions(graph) == 0
    assert [node.target.name for node in graph.calls()] == ["matmul", "add"]


def test_only_a_graph_whose_first_input_is_an_index_is_a_loop_body():
    assert is_loop_body(body_with_product((5, 4), (4,)))
    graph = Graph()
    graph.placeholder("n", int)
    assert not is_loop_body(graph) and not is_loop_body(Graph())
