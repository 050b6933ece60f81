"""pyjit/autograd/compiled_autograd/capture.py: the walk of an autograd graph — its
order, keys and lifted values (NOTE(autograd-walk))."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd.compiled_autograd.capture import Walk
from pyjit.autograd.nodes import FREED_MESSAGE


def walk_of(loss, inputs=None):
    return Walk([loss._gradient_edge()], [np.ones(())], inputs)


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_the_walk_runs_the_nodes_in_the_tapes_order():
    x, w = leaf(np.ones((2, 3))), leaf(np.ones((3, 4)))
    loss = (x @ w).cos().sum()
    walk = walk_of(loss)
    assert walk.order == pyjit.autograd.graph_nodes(loss)
    assert [call.label for call in walk.calls[:3]] == ["GraphRoot (NodeCall 0)", "SumBackward (NodeCall 1)",
                                                       "CosBackward (NodeCall 2)"]


def test_saved_arrays_are_lifted_as_they_are():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    product = x * y
    walk = walk_of(product.sum())
    lifted = walk.lifted
    assert any(value is x.numpy() for value in lifted) and any(value is y.numpy() for value in lifted)
    assert any(value is product.numpy() for value in lifted)


def test_the_key_holds_structure_and_state_not_values():
    def key(values, axis):
        x = leaf(values)
        return walk_of(x.sum(axis=axis).sum()).key

    assert key(np.ones((2, 3)), 0) == key(np.zeros((2, 3)), 0)
    assert key(np.ones((2, 3)), 0) != key(np.ones((2, 3)), 1)


def test_unhashable_ctx_state_makes_the_node_opaque():
    class Keeps(pyjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.table = {"scale": 2.0}
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.table["scale"]

    x = leaf([1.0, 2.0])
    walk = walk_of(Keeps.apply(x).sum())
    assert [call.opaque for call in walk.calls[1:]] == [False, True, False]


def test_a_grad_walk_keeps_only_the_nodes_that_reach_an_input():
    x, y = leaf([1.0]), leaf([2.0])
    loss = x.exp().sum() + y.sin().sum()
    walk = walk_of(loss, [x._gradient_edge()])
    assert "SinBackward" not in [node.name() for node in walk.order]


def test_a_used_up_aot_output_raises_the_tapes_error_when_walked():
    compiled = pyjit.compile(lambda x: (x.exp(), x.sin()), backend="aot_eager")
    x = leaf([1.0, 2.0])
    first, _ = compiled(x)
    first.sum().backward()
    with pytest.raises(RuntimeError) as error:
        walk_of(first.sum())
    assert str(error.value) == FREED_MESSAGE
