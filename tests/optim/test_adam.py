"""pyjit/optim/adam.py: the update rule against NumPy, its checks, and training an MLP."""

import math

import numpy as np
import pytest

import pyjit
from pyjit import optim


def numpy_adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
    """Adam as Kingma and Ba write it, with torch's placement of eps (added to the
    bias-corrected root of the second moment), L2 weight decay and AMSGrad."""
    first, second, peak = {}, {}, {}

    def update(params, grads, step):
        for index, (param, grad) in enumerate(zip(params, grads)):
            grad = grad + weight_decay * param
            first[index] = betas[0] * first.get(index, 0.0) + (1 - betas[0]) * grad
            second[index] = betas[1] * second.get(index, 0.0) + (1 - betas[1]) * grad**2
            peak[index] = np.maximum(peak.get(index, 0.0), second[index])
            moment = peak[index] if amsgrad else second[index]
            corrected_first = first[index] / (1 - betas[0] ** step)
            param -= lr * corrected_first / (np.sqrt(moment) / math.sqrt(1 - betas[1] ** step) + eps)
    return update


SETTINGS = [
    {},
    {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6},
    {"lr": 0.01, "weight_decay": 0.1},
    {"lr": 0.01, "amsgrad": True},
    {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05},  # together, as the torch run has them
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_steps_follow_the_update_rule(settings):
    values = np.array([1.0, -2.0, 0.5])
    param = pyjit.tensor(values, requires_grad=True)
    optimizer = optim.Adam([param], **settings)
    expected, update = [values.copy()], numpy_adam(**settings)
    for step, grad in enumerate((np.array([0.5, 0.1, -1.0]), np.array([-0.2, 0.3, 0.4]), np.array([0.1, 1.0, 3.0]))):
        param.grad = pyjit.tensor(grad)
        optimizer.step()
        update(expected, [grad], step + 1)
        np.testing.assert_allclose(param.numpy(), expected[0], rtol=1e-13)
    state = optimizer.state[param]
    assert state["step"] == 3 and ("max_exp_avg_sq" in state) == settings.get("amsgrad", False)


def test_float32_parameters_keep_their_dtype_and_state_lives_beside_them():
    param = pyjit.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    optimizer = optim.Adam([param], lr=0.1)
    param.grad = pyjit.tensor(np.array([1.0, -1.0, 0.0], dtype=np.float32))
    optimizer.step()
    assert param.dtype == np.float32 and optimizer.state[param]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(param.numpy(), [0.9, 1.1, 1.0], rtol=1e-6)


def test_invalid_settings_are_refused():
    param = [pyjit.tensor(np.ones(2), requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam(param, lr=-1)
    with pytest.raises(ValueError, match="Invalid epsilon"):
        optim.Adam(param, eps=-1e-8)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam(param, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid weight_decay"):
        optim.Adam(param, weight_decay=-0.1)


# The loss after 150 steps from seed 0 (1 for Adam): a change here means the initialisation, the
# data or the arithmetic changed.
FINAL_ADAM_LOSS = 0.012827567149448256


def test_an_mlp_trained_with_adam_follows_numpy_and_reaches_a_fixed_loss(mlp):
    model, x, y = mlp.make_problem(seed=1)
    params = [param.numpy().copy() for param in model.parameters()]
    losses = mlp.train(model, optim.Adam(model.parameters(), lr=0.02), x, y, steps=150)
    expected = mlp.train_numpy(params, numpy_adam(lr=0.02), x, y, steps=150)
    np.testing.assert_allclose(losses, expected, rtol=1e-9)
    assert losses[-1] < 0.05 * losses[0]
    assert losses[-1] == pytest.approx(FINAL_ADAM_LOSS, rel=1e-6)

