"""What the generated op tests cannot show for pyjit/ops/indexing.py: errors that only
the values of an index array decide, boolean masks, and symbolic sizes."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.graph import Graph, GraphModule, TensorMeta


def test_index_array_out_of_range_raises_index_error_when_run():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexError):
        x[np.array([0, 3])]
    with pytest.raises(IndexError):
        ops.index(x, np.array([0, 3]))
    with pytest.raises(IndexError):
        ops.index(x, (slice(None), np.array([-5])))
    with pytest.raises(IndexError):
        ops.take(x, np.array([12]))
    with pytest.raises(IndexError):
        ops.index_add(x, np.array([3]), 1.0)


def test_graph_with_an_index_array_out_of_range_raises_index_error_when_run():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3, 4), np.float64))
    rows = graph.placeholder("rows", TensorMeta((2,), np.int64))
    graph.output(ops.index(x, rows))
    module = GraphModule(graph)
    np.testing.assert_array_equal(module(np.eye(3, 4), np.array([2, -3])), np.eye(3, 4)[[2, -3]])
    with pytest.raises(IndexError):
        module(np.eye(3, 4), np.array([0, 3]))


@pytest.mark.parametrize("mask", [TensorMeta((3,), np.bool_), [True, False, True], True])
def test_boolean_masks_are_refused_by_the_meta_rule(mask):
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3, 4), np.float64))
    if isinstance(mask, TensorMeta):
        mask = graph.placeholder("mask", mask)
    with pytest.raises(NotImplementedError, match="boolean index"):
        ops.index(x, (mask, slice(None)))


def test_boolean_masks_run_eagerly_as_numpy_does():
    x = np.arange(6.0).reshape(2, 3)
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(ops.index(x, (slice(None), mask)), x[:, mask])


def test_index_add_accumulates_repeated_indices():
    result = ops.index_add(np.zeros(4), np.array([1, 1, 3, 1]), np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(result, [0.0, 7.0, 0.0, 3.0])


def test_index_add_into_integers_casts_the_sum_as_add_at_does_and_has_no_gradient():
    x, values = np.array([-1, 0, 1, 2], np.int32), np.array([-1.5, 0.7])
    expected = x.copy()
    np.add.at(expected, [3, 3], values)
    result = ops.index_add(x, [3, 3], values)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, expected)
    grads = ops.index_add.vjp(np.ones(4), result, x, [3, 3], values)
    assert grads == (None, None, None)


def symbolic_input(graph: Graph, name: str, sizes: tuple, dtype=np.float64):
    shape = tuple(graph.shape_env.create_symbol(size, name) if size >= 2 else size for size in sizes)
    return graph.placeholder(name, TensorMeta(shape, dtype))


def test_index_with_symbolic_sizes_keeps_them_and_guards_strided_slices():
    graph = Graph()
    x = symbolic_input(graph, "x", (7, 5))
    rows = symbolic_input(graph, "rows", (4,), np.int64)
    result = ops.index(x, (slice(None, None, 2), rows))
    assert str(result.meta) == "f64[1/2*s0 + 1/2, s2]"
    assert "(s0 - 1) % 2 == 0" in graph.shape_env.guard_texts()  # s0 stays odd
    graph.output(result)
    module = GraphModule(graph)
    x_value, rows_value = np.random.default_rng(0).random((9, 6)), np.array([0, 5, -1])
    np.testing.assert_array_equal(module(x_value, rows_value), x_value[::2, rows_value])


def test_take_and_index_add_with_symbolic_sizes():
    graph = Graph()
    x = symbolic_input(graph, "x", (6, 3))
    taken = ops.take(x, [0, -1], axis=0)
    assert str(taken.meta) == "f64[2, s1]"
    added = ops.index_add(x, (slice(1, None), 0), 1.0)
    assert str(added.meta) == "f64[s0, s1]"
