"""pyjit/optim/sgd.py: the update rule against NumPy, its checks, and training an MLP."""

import numpy as np
import pytest

import pyjit
from pyjit import optim


def numpy_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    """The SGD update written from torch's documentation, on lists of arrays."""
    buffers = {}

    def update(params, grads, step):
        for index, (param, grad) in enumerate(zip(params, grads)):
            grad = grad + weight_decay * param
            if momentum:
                previous = buffers.get(index)
                buffers[index] = grad.copy() if previous is None else momentum * previous + (1 - dampening) * grad
                grad = grad + momentum * buffers[index] if nesterov else buffers[index]
            param -= lr * grad
    return update


SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001},
    {"lr": 0.05, "momentum": 0.7, "dampening": 0.2},  # dampening alone, as the torch run has it
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_steps_follow_the_update_rule(settings):
    values = np.array([1.0, -2.0, 0.5])
    param = pyjit.tensor(values, requires_grad=True)
    optimizer = optim.SGD([param], **settings)
    expected, update = [values.copy()], numpy_sgd(**settings)
    for step, grad in enumerate((np.array([0.5, 0.1, -1.0]), np.array([-0.2, 0.3, 0.4]), np.array([1.0, 1.0, 1.0]))):
        param.grad = pyjit.tensor(grad)
        optimizer.step()
        update(expected, [grad], step + 1)
        np.testing.assert_allclose(param.numpy(), expected[0], rtol=1e-14)
    assert ("momentum_buffer" in optimizer.state[param]) == bool(settings.get("momentum"))


def test_the_momentum_buffer_is_a_copy_of_the_first_gradient():
    param = pyjit.tensor(np.ones(2), requires_grad=True)
    optimizer = optim.SGD([param], lr=0.1, momentum=0.5)
    param.grad = pyjit.tensor(np.array([1.0, 2.0]))
    optimizer.step()
    param.grad.zero_()
    np.testing.assert_array_equal(optimizer.state[param]["momentum_buffer"].numpy(), [1.0, 2.0])


def test_invalid_settings_are_refused():
    param = [pyjit.tensor(np.ones(2), requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD(param, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid momentum"):
        optim.SGD(param, lr=0.1, momentum=-1)
    with pytest.raises(ValueError, match="Invalid weight_decay"):
        optim.SGD(param, lr=0.1, weight_decay=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD(param, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(param, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)


# The loss after 150 steps from seed 0 (1 for Adam): a change here means the initialisation, the
# data or the arithmetic changed.
FINAL_SGD_LOSS = 0.011345719456231449


def test_an_mlp_trained_with_sgd_follows_numpy_and_reaches_a_fixed_loss(mlp):
    model, x, y = mlp.make_problem(seed=0)
    params = [param.numpy().copy() for param in model.parameters()]
    losses = mlp.train(model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), x, y, steps=150)
    expected = mlp.train_numpy(params, numpy_sgd(lr=0.1, momentum=0.9), x, y, steps=150)
    np.testing.assert_allclose(losses, expected, rtol=1e-9)
    assert losses[-1] < 0.05 * losses[0]
    assert losses[-1] == pytest.approx(FINAL_SGD_LOSS, rel=1e-6)

