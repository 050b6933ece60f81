"""A small MLP, its NumPy twin (forward and backward by hand), and a training loop,
shared by the optimizer tests."""

import types

import numpy as np
import pytest

import pyjit
from pyjit import nn


def make_problem(seed: int = 0):
    """A float64 MLP 3 -> 8 -> 1 (tanh) and a regression problem, from `seed`."""
    pyjit.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8, dtype=np.float64), nn.Tanh(), nn.Linear(8, 1, dtype=np.float64))
    data = np.random.default_rng(seed)
    x = data.standard_normal((32, 3))
    y = np.sin(x @ np.array([[1.0], [-2.0], [0.5]])) + 0.1 * data.standard_normal((32, 1))
    return model, x, y


def numpy_loss_and_grads(params: list, x, y):
    """mse(tanh(x W1^T + b1) W2^T + b2, y) and its gradients, in `params`' order."""
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1.T + b1)
    out = hidden @ w2.T + b2
    dout = 2 * (out - y) / out.size
    dhidden = dout @ w2 * (1 - hidden**2)
    return np.mean((out - y) ** 2), [dhidden.T @ x, dhidden.sum(0), dout.T @ hidden, dout.sum(0)]


def train(model, optimizer, x, y, steps: int) -> list:
    """`steps` steps of full-batch training; the loss before each step."""
    inputs, targets, losses = pyjit.tensor(x), pyjit.tensor(y), []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_numpy(params: list, update, x, y, steps: int) -> list:
    """The same loop on NumPy arrays: `update(params, grads, step)` changes params in place."""
    losses = []
    for step in range(1, steps + 1):
        loss, grads = numpy_loss_and_grads(params, x, y)
        update(params, grads, step)
        losses.append(loss)
    return losses


@pytest.fixture
def mlp():
    """The helpers above as `mlp.train(...)` (conftest modules cannot be imported in
    importlib mode)."""
    return types.SimpleNamespace(make_problem=make_problem, numpy_loss_and_grads=numpy_loss_and_grads,
                                 train=train, train_numpy=train_numpy)
