"""pyjit/autograd/engine.py: backward, autograd.grad, hooks, retain_graph, graph_nodes."""

import numpy as np
import pytest

import pyjit
from pyjit import autograd
from pyjit.utils import counters


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# -- backward -------------------------------------------------------------------------------
def test_backward_accumulates_into_every_leaf_along_every_path():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = x * w
    z = (y + y * x).sum()  # x reaches z along three paths
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0 + 2 * 3.0, 4.0 + 2 * 2 * 4.0])
    np.testing.assert_allclose(w.grad.numpy(), [1.0 + 1.0, 2.0 + 4.0])


def test_grad_accumulates_over_backward_calls_in_the_leafs_dtype():
    x = pyjit.tensor(np.ones(2, np.float32), requires_grad=True)
    (x * np.float64(2.0)).sum().backward()  # a float64 result
    (x * 3).sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [5.0, 5.0]
    grad = x.grad
    (x * 1).sum().backward()
    assert x.grad is grad and grad.tolist() == [6.0, 6.0]  # accumulated in place, as PyTorch does


def test_the_first_gradient_is_a_copy_never_an_alias_of_another_gradient():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x + y).backward(np.array([1.0, 1.0]))
    x.grad += 1
    assert y.grad.tolist() == [1.0, 1.0] and x.grad.array.flags.writeable


def test_a_non_scalar_output_needs_a_gradient_of_its_shape():
    x = leaf([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(np.ones(3))
    y.backward(pyjit.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]


def test_backward_of_something_that_does_not_require_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        pyjit.tensor([1.0]).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        (leaf([1.0]) > 0).sum().backward()


def test_backward_of_a_leaf_accumulates_the_gradient_given():
    x = leaf([1.0, 2.0])
    x.backward(np.array([3.0, 4.0]))
    assert x.grad.tolist() == [3.0, 4.0]


def test_backward_of_several_outputs_sums_their_contributions():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y
    autograd.backward([y.sum(), z.sum()])  # z depends on y: y's node waits for z's
    assert x.grad.tolist() == [2.0 + 8 * 1.0, 2.0 + 8 * 2.0]


# -- retain_graph -----------------------------------------------------------------------------
def test_a_second_backward_needs_retain_graph_where_saved_values_are_read():
    x = leaf([0.5, 1.0])
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_a_second_backward_through_ops_that_read_only_shapes_works_as_in_pytorch():
    x = leaf([1.0, 2.0])
    y = (x + 1).reshape(2, 1)[0].sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 0.0]


def test_released_nodes_keep_the_sizes_of_what_they_saved():
    x = leaf(np.ones((2, 3)))
    y = x.sin()
    y.sum().backward()
    assert y.grad_fn.saved_sizes == ((2, 3), (2, 3))
    with pytest.raises(RuntimeError, match="second time"):
        y.grad_fn.saved_tensors  # noqa: B018


# -- in-place changes to saved values ------------------------------------------------------------
def test_a_saved_value_modified_in_place_raises_at_backward():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y.exp()  # saves its output
    z += 1
    with pytest.raises(RuntimeError, match=r"output 0 of ExpBackward, is at version 1; expected version 0"):
        z.sum().backward()
    a = x * 1
    b = a * x  # saves a
    with pyjit.no_grad():
        a += 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*input 0 of MulBackward"):
        b.sum().backward()


def test_an_in_place_change_that_the_gradient_does_not_read_is_fine():
    x = leaf([1.0, 2.0])
    a = x * 1
    b = a + x  # add reads only shapes
    a += 5
    b.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_the_optimizer_pattern_updates_leaves_under_no_grad():
    w = leaf([1.0, -1.0])
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with pyjit.no_grad():
            w -= 0.25 * w.grad
        w.grad = None
    np.testing.assert_allclose(w.numpy(), [0.125, -0.125])


# -- hooks -----------------------------------------------------------------------------------
def test_a_hook_sees_and_may_replace_the_gradient_of_a_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 3
    seen = []
    y.register_hook(lambda grad: seen.append(grad.tolist()))
    y.register_hook(lambda grad: grad + 10)
    (y * 2).sum().backward()
    assert seen == [[2.0, 2.0]] and x.grad.tolist() == [36.0, 36.0]


def test_a_hook_on_a_leaf_runs_before_accumulation_and_can_be_removed():
    x = leaf([1.0, 2.0])
    handle = x.register_hook(lambda grad: grad * 0 + 7)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    handle.remove()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [10.0, 10.0]


def test_hooks_are_for_tensors_that_require_grad_and_keep_the_shape():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pyjit.tensor([1.0]).register_hook(print)
    x = leaf([1.0, 2.0])
    x.register_hook(lambda grad: np.ones(3))
    with pytest.raises(RuntimeError, match="changed the size"):
        (x * 1).sum().backward()


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        pyjit.tensor([1.0]).retain_grad()


# -- autograd.grad -----------------------------------------------------------------------------
def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (x * w).sum()
    gx, gw = autograd.grad(y, [x, w], retain_graph=True)
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    (gx2,) = autograd.grad([y], x)
    assert gx2.tolist() == [3.0, 4.0]


def test_grad_with_respect_to_an_intermediate_tensor_applies_its_hooks():
    x = leaf([1.0, 2.0])
    h = x * 2
    h.register_hook(lambda grad: grad * 100)
    out = (h * h).sum()
    (gh,) = autograd.grad(out, h, retain_graph=True)
    assert gh.tolist() == [400.0, 800.0]
    (gx,) = autograd.grad(out, x)
    assert gx.tolist() == [800.0, 1600.0]


def test_grad_runs_only_the_nodes_that_lead_to_the_inputs():
    x, other = leaf([1.0]), leaf([2.0])
    ran = []
    side = other * 3
    side.register_hook(lambda grad: ran.append("side"))
    out = (x * 2 + side).sum()
    autograd.grad(out, x)
    assert ran == [] and other.grad is None


def test_grad_with_grad_outputs_and_unused_inputs():
    x, unused = leaf([1.0, 2.0]), leaf([0.0])
    y = x * x
    (gx, none) = autograd.grad(y, [x, unused], grad_outputs=pyjit.tensor([1.0, 0.5]), allow_unused=True,
                               retain_graph=True)
    assert gx.tolist() == [2.0, 2.0] and none is None
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        autograd.grad(y.sum(), [unused])
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(y, [pyjit.tensor([1.0])])


def test_create_graph_is_not_supported():
    x = leaf([1.0])
    with pytest.raises(NotImplementedError, match="create_graph"):
        autograd.grad((x * x).sum(), x, create_graph=True)


# -- graph_nodes -------------------------------------------------------------------------------
def test_graph_nodes_lists_the_tape_in_execution_order_with_kinds_and_saved_sizes():
    x = leaf(np.ones((2, 3)))
    w = leaf(np.ones((3, 4)))
    loss = (x @ w).cos().sum()
    nodes = autograd.graph_nodes(loss)
    assert [node.name() for node in nodes] == ["SumBackward", "CosBackward", "MatmulBackward", "AccumulateGrad",
                                               "AccumulateGrad"]
    assert [node.kind for node in nodes] == ["op", "op", "op", "accumulate_grad", "accumulate_grad"]
    assert nodes[1].saved_sizes == ((2, 4), (2, 4)) and nodes[2].saved_sizes == ((2, 3), (3, 4), (2, 4))
    assert {nodes[3].variable, nodes[4].variable} == {x, w}
    assert nodes[2].next_functions == ((nodes[3], 0), (nodes[4], 0)) or \
        nodes[2].next_functions == ((nodes[4], 0), (nodes[3], 0))
    assert autograd.graph_nodes(pyjit.tensor([1.0])) == []


def test_hooks_run_with_grad_mode_off():
    x, w = leaf([1.0]), leaf([2.0])
    seen = []
    x.register_hook(lambda grad: seen.append((pyjit.autograd.is_grad_enabled(), (grad * w).requires_grad)))
    (x * 3).sum().backward()
    assert seen == [(False, False)] and pyjit.autograd.is_grad_enabled()


def test_an_in_place_change_through_a_view_is_seen_by_the_values_saved_from_its_base():
    x = leaf([1.0, 2.0])
    h = x * 1
    y = (h * h).sum()  # saves h
    view = h.reshape(2, 1).T
    assert view._version_counter is h._version_counter and view._base is h
    with pyjit.no_grad():
        view += 1
    assert h.tolist() == [2.0, 3.0] and h._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


# -- NOTE(gradient-stealing): `.grad` never shares memory with what the program can see --
@pytest.mark.parametrize("compiled", [False, True])
def test_a_fresh_first_gradient_becomes_grad_without_a_copy(compiled):
    counters.clear()
    w = pyjit.tensor(np.ones((3, 2)), requires_grad=True)
    x = pyjit.tensor(np.arange(6.0).reshape(2, 3))
    step = pyjit.compile(lambda x, w: (x @ w).sum(), backend="aot_eager") if compiled else lambda x, w: (x @ w).sum()
    step(x, w).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.repeat(x.numpy().sum(0)[:, None], 2, axis=1))
    assert counters["autograd"]["gradients_taken_without_copy"] == 1


def backward_inside_a_compiled_function(loss):
    """`loss().backward()` run from a compiled function, where pyjit's frame hook is
    installed (the backward breaks the graph; its resume function runs it)."""
    def step():
        loss().backward()
    pyjit.compile(step, backend="aot_eager")()


@pytest.mark.parametrize("where", ["plain", "compiled function"])
def test_a_fresh_first_gradient_becomes_grad_without_a_copy_where_the_frame_hook_is(where):
    counters.clear()
    w = pyjit.tensor(np.ones((3, 2)), requires_grad=True)
    x = pyjit.tensor(np.arange(6.0).reshape(2, 3))
    loss = pyjit.compile(lambda: (x @ w).sum(), backend="aot_eager")
    if where == "plain":
        loss().backward()
    else:
        backward_inside_a_compiled_function(loss)
    assert counters["autograd"]["gradients_taken_without_copy"] == 1


@pytest.mark.parametrize("backward", [lambda loss: loss().backward(), backward_inside_a_compiled_function])
def test_a_gradient_a_hook_kept_is_copied_into_grad(backward):
    w = pyjit.tensor(np.ones(3), requires_grad=True)
    kept = []
    w.register_hook(kept.append)
    backward(lambda: (w * 2.0).sum())
    backward(lambda: (w * 2.0).sum())  # accumulates into .grad in place
    assert not np.shares_memory(w.grad.numpy(), kept[0].numpy())
    np.testing.assert_array_equal(kept[0].numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 4.0))


@pytest.mark.parametrize("backward", [lambda loss: loss().backward(), backward_inside_a_compiled_function])
def test_one_gradient_sent_to_two_leaves_gives_each_its_own_grad(backward):
    a, b = pyjit.tensor(np.ones(3), requires_grad=True), pyjit.tensor(np.ones(3), requires_grad=True)
    backward(lambda: (a + b).sum())  # add's VJP sends the same array to both
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.numpy()[:] = 5.0
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))


def test_node_post_hooks_replace_the_gradients_sent_on():
    x = pyjit.tensor([1.0, 2.0], requires_grad=True)
    y = pyjit.tensor([3.0, 4.0], requires_grad=True)
    product = x * y
    received = []

    def hook(grad_inputs, grad_outputs):
        received.append([grad.numpy().tolist() for grad in grad_outputs])
        return grad_inputs[0] * 10, None

    product.grad_fn.register_hook(hook)
    product.sum().backward()
    assert received == [[[1.0, 1.0]]]
    assert x.grad.numpy().tolist() == [30.0, 40.0]
    assert y.grad is None


def test_a_post_hook_returning_the_wrong_number_of_gradients_raises():
    x = pyjit.tensor([1.0, 2.0], requires_grad=True)
    product = x * x
    product.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0],) * 3)
    with pytest.raises(RuntimeError, match="incorrect number of values"):
        product.sum().backward()
