"""Symbolic sizes through the view ops of pyjit/ops/views.py: a graph captured with a
symbolic size gives NumPy's result for every size its guards admit, and the guards
exclude the sizes where it would not."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta


def symbolic_graph(build, hint=6, columns=3):
    """A graph of `build(x)` for x of shape (s0, columns), s0 hinted `hint`."""
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    size = env.create_symbol(hint, "x.size()[0]")
    x = graph.placeholder("x", TensorMeta((size, columns), np.float64))
    graph.output(build(x))
    return graph, env


def admitted(env, size):
    return all(guard.holds({"s0": size}) for guard in env.guards)


CASES = {
    "slice-from-one": lambda x: ops.getitem(x, (slice(1, None),)),
    "slice-last-two": lambda x: ops.getitem(x, (slice(-2, None), 0)),
    "every-other-row": lambda x: ops.getitem(x, (slice(None, None, 2),)),
    "reversed": lambda x: ops.getitem(x, (slice(None, None, -1), slice(1, 3))),
    "new-axis": lambda x: ops.getitem(x, (None, Ellipsis, 1)),
    "concatenate-with-self": lambda x: ops.concatenate([x, ops.getitem(x, (slice(1, None),))], axis=0),
    "split-in-halves": lambda x: ops.split(x, 2, axis=0),
    "flatten-then-reshape": lambda x: ops.reshape(ops.reshape(x, (-1,)), (3, -1)),
    "transpose-and-stack": lambda x: ops.stack([ops.transpose(x), ops.transpose(x)], axis=1),
}


@pytest.mark.parametrize("build", CASES.values(), ids=CASES.keys())
def test_symbolic_graph_matches_numpy_for_every_admitted_size(build):
    graph, env = symbolic_graph(build)
    module = GraphModule(graph)
    checked = 0
    for size in range(2, 15):
        x = np.arange(size * 3.0).reshape(size, 3)
        if not admitted(env, size):
            continue
        expected = build(x)
        actual = module(x)
        if isinstance(expected, list):
            assert len(actual) == len(expected)
            for one, other in zip(actual, expected):
                np.testing.assert_array_equal(one, other)
        else:
            np.testing.assert_array_equal(actual, expected)
        checked += 1
    assert checked >= 3  # the graph serves more than the size it was captured with


def test_a_stepped_slice_keeps_the_size_symbolic_with_a_parity_guard():
    graph, env = symbolic_graph(CASES["every-other-row"], hint=7)
    (size, columns) = graph.output_node.args[0].meta.shape
    assert str(size) == "1/2*s0 + 1/2" and columns == 3
    assert not admitted(env, 8) and admitted(env, 9)


def test_split_records_that_the_size_stays_divisible():
    graph, env = symbolic_graph(CASES["split-in-halves"], hint=6)
    assert admitted(env, 10) and not admitted(env, 7)
