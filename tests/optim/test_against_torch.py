"""Training runs of pyjit.optim against torch.optim from the same initial weights, in
float64 (skipped where torch is not installed; it is never a dependency)."""

import numpy as np
import pytest

import pyjit
from pyjit import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_models(seed: int):
    """A pyjit MLP with LayerNorm and GELU, and its torch copy."""
    pyjit.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16, dtype=np.float64), nn.LayerNorm(16, dtype=np.float64), nn.GELU(),
                          nn.Linear(16, 3, dtype=np.float64))
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                               torch.nn.Linear(16, 3)).double()
    twin.load_state_dict({name: torch.from_numpy(value) for name, value in model.state_dict().items()})
    return model, twin


def run_both(make_pyjit_optimizer, make_torch_optimizer, steps: int = 50):
    """Cross-entropy training of both models on the same data; their losses and final
    weights."""
    model, twin = make_models(seed=4)
    data = np.random.default_rng(4)
    x, target = data.standard_normal((24, 4)), data.integers(0, 3, 24)
    optimizer, twin_optimizer = make_pyjit_optimizer(model.parameters()), make_torch_optimizer(twin.parameters())
    losses, twin_losses = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(pyjit.tensor(x)), pyjit.tensor(target))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        twin_optimizer.zero_grad()
        twin_loss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(target))
        twin_loss.backward()
        twin_optimizer.step()
        twin_losses.append(twin_loss.item())
    return losses, twin_losses, model.state_dict(), twin.state_dict()


def assert_same_run(result):
    losses, twin_losses, state, twin_state = result
    np.testing.assert_allclose(losses, twin_losses, rtol=1e-8, atol=1e-10)
    for name, value in state.items():
        np.testing.assert_allclose(value, twin_state[name].numpy(), rtol=1e-8, atol=1e-10, err_msg=name)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("settings", [
    {"lr": 0.01},
    {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05},
    {"lr": 0.01, "amsgrad": True},
])
def test_adam_matches_torch_over_fifty_steps(settings):
    assert_same_run(run_both(lambda params: optim.Adam(params, **settings),
                             lambda params: torch.optim.Adam(params, **settings)))


@pytest.mark.parametrize("settings", [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001},
    {"lr": 0.05, "momentum": 0.7, "dampening": 0.2},
])
def test_sgd_matches_torch_over_fifty_steps(settings):
    assert_same_run(run_both(lambda params: optim.SGD(params, **settings),
                             lambda params: torch.optim.SGD(params, **settings)))
