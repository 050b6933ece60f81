"""pyjit/autograd/aot/partition.py: the default and min-cut partitioners."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.autograd.aot import build_joint, partition
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta

F32, F64 = np.float32, np.float64


def joint_of(build, *metas, requires=None, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    return build_joint(graph, requires or [True] * len(metas))


def run(cut, inputs, tangents):
    """The forward, then the backward on what it saved: (outputs, grads). The forward
    returns the outputs, then the saved values that are neither inputs nor outputs."""
    results = GraphModule(cut.forward)(*inputs)
    placeholders = [node.name for node in cut.forward.placeholders]
    outputs = len(results) - sum(node.kind == "call" for node in cut.saved)
    extra = iter(results[outputs:])
    saved = [inputs[placeholders.index(node.name)] if node.kind == "placeholder" else next(extra)
             for node in cut.saved]
    return results, GraphModule(cut.backward)(*saved, *tangents)


def cos_cos():
    return joint_of(lambda x: ops.cos(ops.cos(x)), TensorMeta((8,), F32))


def test_min_cut_saves_exactly_the_input_of_cos_cos():
    cut = partition(cos_cos(), "min_cut")
    assert [node.name for node in cut.saved] == ["x0"]
    assert cut.saved_bytes == 8 * 4


def test_default_saves_what_the_backward_reads():
    cut = partition(cos_cos(), "default")
    assert len(cut.saved) == 2 and all(node.kind == "call" for node in cut.saved)
    assert cut.saved_bytes == 2 * 8 * 4


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_both_partitions_compute_the_joint_graphs_gradient(partitioner):
    joint = joint_of(lambda x, w: ops.sum(ops.tanh(ops.matmul(ops.exp(x), w))),
                     TensorMeta((3, 4), F64), TensorMeta((4, 2), F64))
    x, w = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 1, 8).reshape(4, 2)
    expected = GraphModule(joint.graph)(x, w, np.array(1.0))
    cut = partition(joint, partitioner)
    results, grads = run(cut, [x, w], [np.array(1.0)])
    np.testing.assert_allclose(results[0], expected[0], rtol=1e-14)
    for grad, wanted in zip(grads, expected[1:]):
        np.testing.assert_allclose(grad, wanted, rtol=1e-14)


def test_min_cut_never_recomputes_a_matmul_or_a_reduction():
    joint = joint_of(lambda x, w: ops.sum(ops.sin(ops.divide(ops.matmul(x, w), ops.sum(x)))),
                     TensorMeta((3, 4), F64), TensorMeta((4, 2), F64))
    cut = partition(joint, "min_cut")
    backward_ops = [node.target.name for node in cut.backward.calls()]
    assert backward_ops.count("matmul") == 2  # the two gradients; the forward's product is saved
    assert {node.target.name for node in cut.saved if node.kind == "call"} >= {"matmul"}
    forward_reduction = [node for node in cut.backward.calls()
                         if node.target.name == "sum" and node.args[0].kind == "placeholder"
                         and node.args[0].name == "x0"]
    assert not forward_reduction


def test_min_cut_saves_no_more_than_default():
    def mlp(x, w1, w2):
        hidden = ops.tanh(ops.add(ops.matmul(x, w1), 1.0))
        return ops.sum(ops.exp(ops.negative(ops.square(ops.matmul(hidden, w2)))))

    metas = (TensorMeta((16, 32), F32), TensorMeta((32, 64), F32), TensorMeta((64, 8), F32))
    default, min_cut = (partition(joint_of(mlp, *metas), name) for name in ("default", "min_cut"))
    assert min_cut.saved_bytes < default.saved_bytes


def test_a_zero_memory_budget_recomputes_reductions_and_matmuls_too():
    joint = joint_of(lambda x, w: ops.sum(ops.exp(ops.matmul(x, w))), TensorMeta((3, 4), F64),
                     TensorMeta((4, 2), F64))
    within = partition(joint, "min_cut", memory_budget=0.0)
    assert all(node.kind == "placeholder" for node in within.saved)
    assert [node.target.name for node in within.backward.calls()].count("matmul") == 3


def test_an_unknown_partitioner_is_refused():
    with pytest.raises(ValueError, match="unknown partitioner 'fast'"):
        partition(cos_cos(), "fast")


def test_symbolic_sizes_flow_into_the_backward():
    env = ShapeEnv()
    rows = env.create_symbol(3, "x.shape[0]")
    joint = joint_of(lambda x: ops.sum(ops.sin(ops.reshape(x, (rows * 4,)))), TensorMeta((rows, 4), F64),
                     shape_env=env)
    for name in ("default", "min_cut"):
        cut = partition(joint, name)
        for size in (3, 5):
            x = np.linspace(0, 1, size * 4).reshape(size, 4)
            _, (grad,) = run(cut, [x], [np.array(1.0)])
            np.testing.assert_allclose(grad, np.cos(x), rtol=1e-14)


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_the_gradient_of_a_matrix_used_transposed_comes_out_row_ordered(partitioner):
    # NOTE(gradient-layout): a linear layer's weight gradient, (x.T @ g).T, is computed
    # as g.T @ x: a fresh C-ordered product, where the transpose was a column-ordered view.
    joint = joint_of(lambda x, w: ops.sum(ops.tanh(ops.matmul(x, ops.transpose(w)))),
                     TensorMeta((3, 4), F64), TensorMeta((5, 4), F64))
    cut = partition(joint, partitioner)
    grad_w = cut.backward.output_node.args[0][1]
    assert grad_w.target.name == "matmul"
    x, w = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 1, 20).reshape(5, 4)
    expected = GraphModule(joint.graph)(x, w, np.array(1.0))
    _, grads = run(cut, [x, w], [np.array(1.0)])
    np.testing.assert_allclose(grads[1], expected[2], rtol=1e-14)
    assert grads[1].flags.c_contiguous and grads[1].base is None



@pytest.mark.parametrize("memory_budget", [1.0, 0.0])
def test_min_cut_never_recomputes_what_a_max_compares_with_its_result(memory_budget):
    """NOTE(compared-values), fuzzer seed 777874 reduced: the max's backward compares
    tanh(x) with the max; recomputed by another kernel, it may round differently and
    match no element, so the forward's values are saved."""
    joint = joint_of(lambda x: ops.add(ops.max(ops.tanh(x)), x), TensorMeta((8,), F64))
    cut = partition(joint, "min_cut", memory_budget=memory_budget)
    assert "tanh" not in [node.target.name for node in cut.backward.calls()]
    assert "tanh" in [node.target.name for node in cut.saved if node.kind == "call"]
    x = np.linspace(-1.0, 2.0, 8)
    _, (grad,) = run(cut, [x], [np.ones(8)])
    expected = np.ones(8)
    expected[-1] += 8 * (1 - np.tanh(x[-1]) ** 2)
    np.testing.assert_allclose(grad, expected, rtol=1e-14)
