"""pyjit/nn/functional.py against hand-written NumPy forwards and derivatives."""

import math

import numpy as np
import pytest

import pyjit
import pyjit.nn.functional as F

rng = np.random.default_rng(7)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_normal_cdf(x):
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_linear_forward_and_gradients(run_backward):
    x, weight, bias = rng.standard_normal((5, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    out, (dx, dw, db), g = run_backward(F.linear, x, weight, bias)
    np.testing.assert_allclose(out, x @ weight.T + bias, rtol=1e-12)
    np.testing.assert_allclose(dx, g @ weight, rtol=1e-12)
    np.testing.assert_allclose(dw, g.T @ x, rtol=1e-12)
    np.testing.assert_allclose(db, g.sum(0), rtol=1e-12)


def test_linear_without_bias_on_batched_input(run_backward):
    x, weight = rng.standard_normal((2, 5, 3)), rng.standard_normal((4, 3))
    out, (dx, dw), g = run_backward(F.linear, x, weight)
    np.testing.assert_allclose(out, x @ weight.T, rtol=1e-12)
    np.testing.assert_allclose(dw, np.einsum("bno,bni->oi", g, x), rtol=1e-12)
    np.testing.assert_allclose(dx, g @ weight, rtol=1e-12)


def test_relu_forward_and_gradient(run_backward):
    x = np.array([-2.0, -0.0, 0.0, 0.5, 3.0])
    out, (dx,), g = run_backward(F.relu, x)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    np.testing.assert_array_equal(dx, g * (x > 0))  # 0 at 0, as torch


def test_gelu_exact_forward_and_gradient(run_backward):
    x = rng.standard_normal(20) * 3
    out, (dx,), g = run_backward(F.gelu, x)
    np.testing.assert_allclose(out, x * np_normal_cdf(x), rtol=1e-12, atol=1e-15)
    density = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(dx, g * (np_normal_cdf(x) + x * density), rtol=1e-10, atol=1e-15)


def test_gelu_tanh_forward_and_gradient(run_backward):
    x = rng.standard_normal(20) * 3
    out, (dx,), g = run_backward(lambda t: F.gelu(t, approximate="tanh"), x)
    c = math.sqrt(2 / math.pi)
    inner = np.tanh(c * (x + 0.044715 * x**3))
    np.testing.assert_allclose(out, 0.5 * x * (1 + inner), rtol=1e-12, atol=1e-15)
    slope = 0.5 * (1 + inner) + 0.5 * x * (1 - inner**2) * c * (1 + 3 * 0.044715 * x**2)
    np.testing.assert_allclose(dx, g * slope, rtol=1e-10, atol=1e-15)


def test_tanh_and_sigmoid_forward_and_gradient(run_backward):
    x = rng.standard_normal(10) * 4
    out, (dx,), g = run_backward(F.tanh, x)
    np.testing.assert_allclose(out, np.tanh(x), rtol=1e-12)
    np.testing.assert_allclose(dx, g * (1 - np.tanh(x) ** 2), rtol=1e-10)
    out, (dx,), g = run_backward(F.sigmoid, x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out, s, rtol=1e-12)
    np.testing.assert_allclose(dx, g * s * (1 - s), rtol=1e-10)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_log_softmax_forward_and_gradient(run_backward, axis):
    x = rng.standard_normal((3, 4)) * 5
    out, (dx,), g = run_backward(lambda t: F.softmax(t, axis), x)
    s = np_softmax(x, axis)
    np.testing.assert_allclose(out, s, rtol=1e-12)
    np.testing.assert_allclose(dx, s * (g - (g * s).sum(axis, keepdims=True)), rtol=1e-10, atol=1e-15)
    out, (dx,), g = run_backward(lambda t: F.log_softmax(t, axis=axis), x)
    np.testing.assert_allclose(out, np.log(s), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dx, g - s * g.sum(axis, keepdims=True), rtol=1e-10, atol=1e-15)


def test_softmax_takes_dim_or_axis_but_not_both_or_neither():
    x = pyjit.tensor(rng.standard_normal((2, 3)))
    np.testing.assert_allclose(F.softmax(x, dim=0).numpy(), F.softmax(x, axis=0).numpy())
    with pytest.raises(TypeError, match="both dim and axis"):
        F.softmax(x, 0, axis=0)
    with pytest.raises(TypeError, match="needs the axis"):
        F.log_softmax(x)


def np_layer_norm(x, weight, bias, eps, axes):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def np_layer_norm_grads(x, weight, eps, g):
    """Gradients of layer_norm over the last axis: input, weight, bias."""
    mean = x.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    normed = (x - mean) * inv_std
    dnormed = g * weight
    dx = inv_std * (dnormed - dnormed.mean(-1, keepdims=True) - normed * (dnormed * normed).mean(-1, keepdims=True))
    reduce = tuple(range(x.ndim - 1))
    return dx, (g * normed).sum(reduce), g.sum(reduce)


def test_layer_norm_forward_and_gradients(run_backward):
    x, weight, bias = rng.standard_normal((2, 3, 6)) * 2 + 1, rng.standard_normal(6), rng.standard_normal(6)
    out, grads, g = run_backward(lambda a, w, b: F.layer_norm(a, (6,), w, b, eps=1e-3), x, weight, bias)
    np.testing.assert_allclose(out, np_layer_norm(x, weight, bias, 1e-3, -1), rtol=1e-10, atol=1e-12)
    for got, expected in zip(grads, np_layer_norm_grads(x, weight, 1e-3, g)):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_layer_norm_over_two_axes_without_affine():
    x = rng.standard_normal((2, 3, 4))
    out = F.layer_norm(pyjit.tensor(x), (3, 4)).numpy()
    np.testing.assert_allclose(out, np_layer_norm(x, 1.0, 0.0, 1e-5, (1, 2)), rtol=1e-10, atol=1e-12)


def np_cross_entropy(logits, target, weight, ignore_index, reduction):
    """Loss per sample with a loop, then reduced as torch reduces; and the gradient of
    the reduced loss with respect to the logits (an upstream gradient of 1)."""
    log_probs = np.log(np_softmax(logits, 1))
    weight = np.ones(logits.shape[1]) if weight is None else weight
    losses, grad, total = np.zeros(len(target)), np.zeros_like(logits), 0.0
    for row, cls in enumerate(target):
        if cls == ignore_index:
            continue
        losses[row] = -weight[cls] * log_probs[row, cls]
        onehot = np.eye(logits.shape[1])[cls]
        grad[row] = weight[cls] * (np.exp(log_probs[row]) - onehot)
        total += weight[cls]
    if reduction == "none":
        return losses, grad
    if reduction == "sum":
        return losses.sum(), grad
    return losses.sum() / total, grad / total


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_forward_and_gradient(run_backward, reduction, weighted):
    logits, target = rng.standard_normal((6, 4)) * 3, np.array([0, 3, 1, -100, 3, 2])
    weight = rng.uniform(0.5, 2.0, 4) if weighted else None
    upstream = np.ones(6) if reduction == "none" else 1.0
    out, (dx,), _ = run_backward(lambda t: F.cross_entropy(t, pyjit.tensor(target), weight=weight, reduction=reduction),
                                 logits, upstream=upstream)
    loss, grad = np_cross_entropy(logits, target, weight, -100, reduction)
    np.testing.assert_allclose(out, loss, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dx, grad, rtol=1e-10, atol=1e-15)


def test_cross_entropy_with_a_custom_ignore_index_and_float32():
    logits, target = rng.standard_normal((4, 3)).astype(np.float32), np.array([2, 1, 1, 0])
    loss = F.cross_entropy(pyjit.tensor(logits), pyjit.tensor(target), ignore_index=1)
    assert loss.dtype == np.float32
    expected, _ = np_cross_entropy(logits.astype(np.float64), target, None, 1, "mean")
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)


def test_cross_entropy_with_spatial_axes_and_one_sample():
    logits, target = rng.standard_normal((2, 4, 3)), rng.integers(0, 4, (2, 3))
    flat_logits = np.moveaxis(logits, 1, -1).reshape(-1, 4)
    per_sample = F.cross_entropy(pyjit.tensor(logits), pyjit.tensor(target), reduction="none")
    assert per_sample.shape == (2, 3)
    expected, _ = np_cross_entropy(flat_logits, target.reshape(-1), None, -100, "none")
    np.testing.assert_allclose(per_sample.numpy(), expected.reshape(2, 3), rtol=1e-12)
    single = F.cross_entropy(pyjit.tensor(logits[0, :, 0]), pyjit.tensor(np.array(2)))
    np.testing.assert_allclose(single.numpy(), -np.log(np_softmax(logits[0, :, 0], 0))[2], rtol=1e-12)


def test_cross_entropy_refuses_bad_targets_and_reductions():
    logits = pyjit.tensor(rng.standard_normal((3, 4)))
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(logits, pyjit.tensor(np.zeros((3, 4))))
    with pytest.raises(ValueError, match="does not match"):
        F.cross_entropy(logits, pyjit.tensor(np.array([0, 1])))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, pyjit.tensor(np.array([0, 1, 2])), reduction="average")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_forward_and_gradients(run_backward, reduction):
    x, target = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    upstream = np.ones((3, 4)) if reduction == "none" else 1.0
    out, (dx, dt), _ = run_backward(lambda a, b: F.mse_loss(a, b, reduction=reduction), x, target, upstream=upstream)
    squares, slope = (x - target) ** 2, 2 * (x - target)
    expected = {"mean": (squares.mean(), slope / 12), "sum": (squares.sum(), slope), "none": (squares, slope)}
    np.testing.assert_allclose(out, expected[reduction][0], rtol=1e-12)
    np.testing.assert_allclose(dx, expected[reduction][1], rtol=1e-12)
    np.testing.assert_allclose(dt, -expected[reduction][1], rtol=1e-12)


def test_dropout_scales_the_kept_elements_and_draws_from_the_seeded_generator(run_backward):
    x = rng.standard_normal((50, 40)) + 5
    pyjit.manual_seed(3)
    out, (dx,), g = run_backward(lambda t: F.dropout(t, 0.3), x)
    kept = out != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(out[kept], x[kept] / 0.7, rtol=1e-12)
    np.testing.assert_allclose(dx, g * kept / 0.7, rtol=1e-12)
    pyjit.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(pyjit.tensor(x), 0.3).numpy(), out)


def test_dropout_edge_probabilities_and_eval():
    x = pyjit.tensor(rng.standard_normal((4, 5)))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [{"ignore_index": 2}, {"weight": rng.uniform(0.5, 2, 5), "ignore_index": 0}],
                         ids=str)
def test_cross_entropy_gradients_with_a_custom_ignore_index_pass_gradcheck(reduction, options):
    logits, target = rng.standard_normal((8, 5)) * 2, pyjit.tensor(np.array([0, 2, 1, 4, 2, 0, 3, 1]))
    assert pyjit.autograd.gradcheck(lambda t: F.cross_entropy(t, target, reduction=reduction, **options),
                                    pyjit.tensor(logits, requires_grad=True), atol=1e-7, rtol=1e-6)


def test_cross_entropy_gradients_with_spatial_axes_pass_gradcheck():
    logits, target = rng.standard_normal((2, 4, 3, 5)), pyjit.tensor(rng.integers(0, 4, (2, 3, 5)))
    assert pyjit.autograd.gradcheck(lambda t: F.cross_entropy(t, target), pyjit.tensor(logits, requires_grad=True),
                                    atol=1e-7, rtol=1e-6)
