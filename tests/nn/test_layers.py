"""pyjit/nn/layers.py: each layer's initialisation, and its forward and gradients
against NumPy."""

import math

import numpy as np
import pytest

import pyjit
from pyjit import nn

rng = np.random.default_rng(5)


def backward_through(module, x, upstream=None):
    """module(x) and the gradient of sum(module(x) * upstream) for x and every parameter."""
    inputs = pyjit.tensor(x, requires_grad=True)
    output = module(inputs)
    upstream = rng.standard_normal(output.shape) if upstream is None else upstream
    (output * upstream).sum().backward()
    grads = {name: param.grad.numpy() for name, param in module.named_parameters()}
    return output.numpy(), inputs.grad.numpy(), grads, upstream


def test_linear_initialisation_is_uniform_in_the_fan_in_bound_and_seeded():
    pyjit.manual_seed(0)
    layer = nn.Linear(400, 30)
    assert layer.weight.shape == (30, 400) and layer.bias.shape == (30,)
    assert layer.weight.dtype == np.float32 and layer.weight.requires_grad
    bound = 1 / math.sqrt(400)
    weights = layer.weight.numpy()
    assert np.abs(weights).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    assert abs(weights.std() - bound / math.sqrt(3)) < 0.05 * bound  # the std of U(-b, b)
    pyjit.manual_seed(0)
    np.testing.assert_array_equal(nn.Linear(400, 30).weight.numpy(), weights)
    assert nn.Linear(4, 2, dtype=np.float64).weight.dtype == np.float64
    assert nn.Linear(4, 2, bias=False).bias is None


def test_linear_forward_and_gradients():
    layer = nn.Linear(3, 4, dtype=np.float64)
    weight, bias = layer.weight.numpy().copy(), layer.bias.numpy().copy()
    x = rng.standard_normal((2, 5, 3))
    out, dx, grads, g = backward_through(layer, x)
    np.testing.assert_allclose(out, x @ weight.T + bias, rtol=1e-12)
    np.testing.assert_allclose(dx, g @ weight, rtol=1e-12)
    np.testing.assert_allclose(grads["weight"], np.einsum("bno,bni->oi", g, x), rtol=1e-12)
    np.testing.assert_allclose(grads["bias"], g.sum((0, 1)), rtol=1e-12)
    assert nn.Linear(3, 4)(pyjit.tensor(x.astype(np.float32))).dtype == np.float32


@pytest.mark.parametrize("module, forward, slope", [
    (nn.ReLU(), lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
    (nn.Tanh(), np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x)), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    (nn.GELU(), lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
     lambda x: 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), None),
])
def test_activations_forward_and_gradient(module, forward, slope):
    x = rng.standard_normal((4, 6)) * 3
    out, dx, grads, g = backward_through(module, x)
    assert grads == {}
    np.testing.assert_allclose(out, forward(x), rtol=1e-10, atol=1e-14)
    if slope is None:  # by central differences of the reference
        slope = lambda x: (forward(x + 1e-6) - forward(x - 1e-6)) / 2e-6  # noqa: E731
        np.testing.assert_allclose(dx, g * slope(x), rtol=1e-6, atol=1e-8)
    else:
        np.testing.assert_allclose(dx, g * slope(x), rtol=1e-10, atol=1e-14)


def test_gelu_refuses_an_unknown_approximation():
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        nn.GELU("fast")


def test_layer_norm_forward_and_gradients():
    layer = nn.LayerNorm(6, eps=1e-4, dtype=np.float64)
    assert not layer.bias.numpy().any() and (layer.weight.numpy() == 1).all()
    weight, bias = rng.standard_normal(6), rng.standard_normal(6)
    layer.load_state_dict({"weight": weight, "bias": bias})
    x = rng.standard_normal((3, 4, 6)) * 2 + 0.5
    out, dx, grads, g = backward_through(layer, x)
    mean = x.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-4)
    normed = (x - mean) * inv_std
    np.testing.assert_allclose(out, normed * weight + bias, rtol=1e-10, atol=1e-12)
    dnormed = g * weight
    expected_dx = inv_std * (dnormed - dnormed.mean(-1, keepdims=True)
                             - normed * (dnormed * normed).mean(-1, keepdims=True))
    np.testing.assert_allclose(dx, expected_dx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["weight"], (g * normed).sum((0, 1)), rtol=1e-10)
    np.testing.assert_allclose(grads["bias"], g.sum((0, 1)), rtol=1e-10)


def test_layer_norm_over_two_axes_passes_gradcheck():
    layer = nn.LayerNorm((4, 6), eps=1e-3, dtype=np.float64)
    layer.load_state_dict({"weight": rng.standard_normal((4, 6)), "bias": rng.standard_normal((4, 6))})
    x = pyjit.tensor(rng.standard_normal((3, 4, 6)) * 3 + 2, requires_grad=True)
    assert pyjit.autograd.gradcheck(layer, x, atol=1e-7, rtol=1e-6)


def test_layer_norm_shapes_and_options():
    plain = nn.LayerNorm((2, 3), elementwise_affine=False)
    assert list(plain.parameters()) == [] and plain.normalized_shape == (2, 3)
    assert nn.LayerNorm(4, bias=False).bias is None
    x = rng.standard_normal((5, 2, 3))
    out = plain(pyjit.tensor(x)).numpy()
    centered = x - x.mean((1, 2), keepdims=True)
    np.testing.assert_allclose(out, centered / np.sqrt((centered**2).mean((1, 2), keepdims=True) + 1e-5), rtol=1e-10)
    assert repr(plain) == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=False)"


def test_dropout_in_training_and_in_eval():
    layer = nn.Dropout(0.25)
    x = rng.standard_normal((40, 50)) + 3
    pyjit.manual_seed(1)
    out, dx, _, g = backward_through(layer, x)
    kept = out != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(out[kept], x[kept] / 0.75, rtol=1e-12)
    np.testing.assert_allclose(dx, g * kept / 0.75, rtol=1e-12)
    layer.eval()
    tensor = pyjit.tensor(x)
    assert layer(tensor) is tensor
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)


def test_embedding_lookup_and_accumulated_gradient():
    pyjit.manual_seed(2)
    table = nn.Embedding(1000, 16)
    values = table.weight.numpy()
    assert values.shape == (1000, 16) and values.dtype == np.float32
    assert abs(values.mean()) < 0.02 and abs(values.std() - 1) < 0.02  # N(0, 1)
    small = nn.Embedding(5, 3, dtype=np.float64)
    indices = np.array([[0, 2, 2], [4, 0, 2]])
    output = small(pyjit.tensor(indices))
    np.testing.assert_array_equal(output.numpy(), small.weight.numpy()[indices])
    upstream = rng.standard_normal((2, 3, 3))
    (output * upstream).sum().backward()
    expected = np.zeros((5, 3))
    np.add.at(expected, indices, upstream)
    np.testing.assert_allclose(small.weight.grad.numpy(), expected, rtol=1e-12)
    with pytest.raises(IndexError):
        small(pyjit.tensor(np.array([0.0, 1.0])))
    assert repr(small) == "Embedding(5, 3)"
