"""Every pyjit.nn module and functional, forward and loss, compiles whole
(`fullgraph=True`) and gives what it gives uncompiled: the output, and the gradients of
its inputs and parameters. `fullgraph=True` raises pyjit.exc.Unsupported on any graph
break, so each case proves the frontend models all of its code."""

import numpy as np
import pytest

import pyjit
import pyjit.nn.functional as F
from pyjit import nn

rng = np.random.default_rng(0)


def data(*shape):
    return rng.standard_normal(shape).astype(np.float32)


TARGETS = np.array([1, 0, 3, 2, 7, 7])
FUNCTIONALS = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [data(6, 8), data(5, 8), data(5)]),
    "relu": (F.relu, [data(6, 8)]),
    "gelu": (F.gelu, [data(6, 8)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [data(6, 8)]),
    "tanh": (F.tanh, [data(6, 8)]),
    "sigmoid": (F.sigmoid, [data(6, 8)]),
    "softmax": (lambda x: F.softmax(x, dim=-1), [data(6, 8)]),
    "log_softmax": (lambda x: F.log_softmax(x, dim=1), [data(6, 8)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (8,), w, b), [data(6, 8), data(8), data(8)]),
    "dropout": (lambda x: F.dropout(x, 0.25), [data(6, 8)]),
    "dropout_eval": (lambda x: F.dropout(x, 0.25, training=False), [data(6, 8)]),
    "mse_loss": (F.mse_loss, [data(6, 8), data(6, 8)]),
    "mse_loss_sum": (lambda x, y: F.mse_loss(x, y, reduction="sum"), [data(6, 8), data(6, 8)]),
    "cross_entropy": (F.cross_entropy, [data(6, 8), TARGETS]),
    "cross_entropy_weighted": (lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=7),
                               [data(6, 8), TARGETS, np.abs(data(8))]),
}


def modules():
    pyjit.manual_seed(0)
    sequential = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8), nn.Tanh())
    return {"Linear": (nn.Linear(8, 3), [data(6, 8)]), "ReLU": (nn.ReLU(), [data(6, 8)]),
            "GELU": (nn.GELU(), [data(6, 8)]), "Tanh": (nn.Tanh(), [data(6, 8)]),
            "Sigmoid": (nn.Sigmoid(), [data(6, 8)]), "LayerNorm": (nn.LayerNorm(8), [data(6, 8)]),
            "Dropout": (nn.Dropout(0.25), [data(6, 8)]), "Sequential": (sequential, [data(6, 8)]),
            "Embedding": (nn.Embedding(10, 4), [np.array([[1, 2], [9, 0]])]),
            "MultiheadAttention": (nn.MultiheadAttention(8, 2, batch_first=True), [data(2, 3, 8)] * 3)}


def run(fn, arrays, parameters=()):
    """Output and the gradients of the float inputs and of `parameters`, from one seed."""
    pyjit.manual_seed(1)
    inputs = [pyjit.tensor(array, requires_grad=array.dtype.kind == "f") for array in arrays]
    for parameter in parameters:
        parameter.grad = None
    output = fn(*inputs)
    output = output[0] if isinstance(output, tuple) else output  # MultiheadAttention: (output, weights)
    (output * pyjit.tensor(np.linspace(-1, 1, output.size).reshape(output.shape).astype(output.dtype))).sum() \
        .backward()
    grads = [item.grad.numpy() for item in [*inputs, *parameters] if item.requires_grad and item.grad is not None]
    return output.detach().numpy(), grads


def check(fn, compiled, arrays, parameters=()):
    want, want_grads = run(fn, arrays, parameters)
    got, got_grads = run(compiled, arrays, parameters)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(got_grads) == len(want_grads)
    for got_grad, want_grad in zip(got_grads, want_grads):
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_each_functional_compiles_whole(name, backend):
    fn, arrays = FUNCTIONALS[name]
    pyjit.reset()
    check(fn, pyjit.compile(fn, fullgraph=True, backend=backend), arrays)
    pyjit.reset()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("name", sorted(modules()))
def test_each_module_compiles_whole(name, backend):
    module, arrays = modules()[name]
    pyjit.reset()
    check(module, pyjit.compile(module, fullgraph=True, backend=backend), arrays, list(module.parameters()))
    pyjit.reset()


def test_every_public_module_and_functional_is_covered():
    public_modules = {name for name in nn.__all__ if isinstance(getattr(nn, name), type)
                      and issubclass(getattr(nn, name), nn.Module)} - {"Module", "ModuleList", "CompiledModule"}
    assert public_modules <= set(modules())
    functionals = {name for name, value in vars(F).items() if callable(value) and not name.startswith("_")
                   and getattr(value, "__module__", None) == F.__name__}
    assert functionals <= {name.split("_weighted")[0].split("_eval")[0].split("_sum")[0].split("_tanh")[0]
                           for name in FUNCTIONALS}
