"""pyjit/autograd/aot/joint.py: the joint graph (primals, tangents) -> (outputs, input grads)."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.autograd.aot import build_joint
from pyjit.autograd.finite_differences import numerical_vjp
from pyjit.graph import Graph, GraphModule, TensorMeta

F64 = np.float64


def graph_of(build, *metas):
    graph = Graph()
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    return graph


def test_cos_cos_joint_graph_computes_output_and_gradient():
    graph = graph_of(lambda x: ops.cos(ops.cos(x)), TensorMeta((5,), F64))
    joint = build_joint(graph, [True])
    names = [node.name for node in joint.graph.placeholders]
    assert names == ["x0", "tangents_0"]
    assert joint.differentiable == [True] and joint.grads[0] is not None
    x, tangent = np.linspace(-1, 2, 5), np.linspace(0.5, 1.5, 5)
    out, grad = GraphModule(joint.graph)(x, tangent)
    np.testing.assert_allclose(out, np.cos(np.cos(x)), rtol=1e-15)
    numeric = numerical_vjp(lambda v: np.cos(np.cos(v)), [x], 0, [tangent])
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-9)


def test_every_call_is_a_registry_op_recorded_by_the_vjps():
    graph = graph_of(lambda x, w: ops.sum(ops.tanh(ops.matmul(x, w))), TensorMeta((3, 4), F64), TensorMeta((4, 2), F64))
    joint = build_joint(graph, [True, True])
    assert {node.target.__module__ for node in joint.graph.calls()} == {"pyjit.ops"}
    assert sum(node.target.name == "matmul" for node in joint.graph.calls()) == 3  # forward, and one per input


def test_inputs_that_do_not_require_grad_get_no_gradient_and_no_dead_code():
    graph = graph_of(lambda x, w: ops.sum(ops.matmul(x, w)), TensorMeta((3, 4), F64), TensorMeta((4, 2), F64))
    joint = build_joint(graph, [False, True])
    assert joint.grads[0] is None and joint.grads[1] is not None
    # The VJP computes x's gradient too; nothing reads it, so it is dropped.
    assert sum(node.target.name == "matmul" for node in joint.graph.calls()) == 2


def test_outputs_that_need_no_gradient_get_no_tangent():
    graph = graph_of(lambda x, y: (ops.exp(x), ops.argmax(x), ops.sin(y)),
                     TensorMeta((4,), F64), TensorMeta((4,), F64))
    joint = build_joint(graph, [True, False])
    assert joint.differentiable == [True, False, False]
    assert len(joint.tangents) == 1


def test_gradients_of_a_value_used_twice_are_summed():
    graph = graph_of(lambda x: ops.multiply(ops.sin(x), x), TensorMeta((6,), F64))
    joint = build_joint(graph, [True])
    x, tangent = np.linspace(-2, 2, 6), np.ones(6)
    _, grad = GraphModule(joint.graph)(x, tangent)
    np.testing.assert_allclose(grad, np.cos(x) * x + np.sin(x), rtol=1e-14)


@pytest.mark.parametrize("requires", [[True, True], [True, False], [False, True]])
def test_list_arguments_get_their_items_gradients(requires):
    graph = graph_of(lambda a, b: ops.sum(ops.multiply(ops.concatenate([a, b]), 3.0)),
                     TensorMeta((2,), F64), TensorMeta((3,), F64))
    joint = build_joint(graph, requires)
    module = GraphModule(joint.graph)
    results = module(np.ones(2), np.ones(3), np.array(1.0))
    grads = list(results[1:])
    for wanted, size in zip(requires, (2, 3)):
        if wanted:
            np.testing.assert_array_equal(grads.pop(0), np.full(size, 3.0))
