"""pyjit/optim/optimizer.py: parameter groups, state, zero_grad and the step contract."""

import numpy as np
import pytest

import pyjit
from pyjit import nn, optim


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_groups_take_the_defaults_and_may_override_them():
    first, second = leaf([1.0]), leaf([2.0])
    optimizer = optim.SGD([{"params": [first]}, {"params": second, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [group["lr"] for group in optimizer.param_groups] == [0.1, 0.5]
    assert optimizer.param_groups[1]["params"] == [second] and optimizer.param_groups[1]["momentum"] == 0.9
    first.grad, second.grad = pyjit.tensor(np.array([1.0])), pyjit.tensor(np.array([1.0]))
    optimizer.step()
    np.testing.assert_allclose([first.item(), second.item()], [0.9, 1.5])
    third = leaf([0.0])
    optimizer.add_param_group({"params": [third], "momentum": 0.0})
    assert optimizer.param_groups[2] == {"params": [third], "lr": 0.1, "momentum": 0.0, "dampening": 0.0,
                                         "weight_decay": 0.0, "nesterov": False}
    assert "Parameter Group 2" in repr(optimizer)


def test_bad_parameter_lists_are_refused():
    param = leaf([1.0])
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(param, lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([param, param], lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([{"params": [param]}, {"params": [param]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([param * 2], lr=0.1)


def test_step_updates_in_place_and_skips_parameters_without_a_gradient():
    model = nn.Linear(2, 1, dtype=np.float64)
    weight, bias = model.weight, model.bias
    before = bias.numpy().copy()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    model.weight.grad = pyjit.tensor(np.ones((1, 2)))
    optimizer.step()
    assert model.weight is weight and model.bias is bias
    np.testing.assert_array_equal(bias.numpy(), before)
    assert weight.grad_fn is None and weight.requires_grad
    assert bias not in optimizer.state


def test_step_calls_the_closure_with_grad_enabled_and_returns_its_loss():
    param = leaf([3.0])
    optimizer = optim.SGD([param], lr=0.25)

    def closure():
        optimizer.zero_grad()
        loss = (param * param).sum()
        loss.backward()
        return loss

    with pyjit.no_grad():
        loss = optimizer.step(closure)
    assert loss.item() == 9.0
    assert param.item() == 3.0 - 0.25 * 6.0


def test_zero_grad_sets_none_or_zeros():
    param = leaf([1.0, 2.0])
    optimizer = optim.Adam([param])
    param.grad = pyjit.tensor(np.array([1.0, 1.0]))
    optimizer.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(param.grad.numpy(), [0.0, 0.0])
    optimizer.zero_grad()
    assert param.grad is None
