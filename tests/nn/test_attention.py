"""pyjit/nn/attention.py: MultiheadAttention against a NumPy reference, its gradients
against central differences of that reference."""

import math

import numpy as np
import pytest

import pyjit
from pyjit import nn

rng = np.random.default_rng(11)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_additive(mask):
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def np_attention(query, key, value, state, num_heads, attn_mask=None, key_padding_mask=None):
    """Batch-first multi-head attention: (output (N, L, E), weights (N, H, L, S))."""
    weight, bias = state["in_proj_weight"], state["in_proj_bias"]
    (batch, target, embed), source = query.shape, key.shape[1]
    head = embed // num_heads
    q, k, v = (x @ weight[i * embed:(i + 1) * embed].T + bias[i * embed:(i + 1) * embed]
               for i, x in enumerate((query, key, value)))

    def heads(x):
        return x.reshape(batch, -1, num_heads, head).transpose(0, 2, 1, 3)

    scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / math.sqrt(head)
    if attn_mask is not None:
        additive = np_additive(attn_mask)
        scores = scores + (additive if additive.ndim == 2 else additive.reshape(batch, num_heads, target, source))
    if key_padding_mask is not None:
        scores = scores + np_additive(key_padding_mask)[:, None, None, :]
    weights = np_softmax(scores)
    merged = (weights @ heads(v)).transpose(0, 2, 1, 3).reshape(batch, target, embed)
    return merged @ state["out_proj.weight"].T + state["out_proj.bias"], weights


def attention_module(embed=8, heads=2, **kwargs):
    """A float64 module whose biases are not zero, so that they are tested too."""
    module = nn.MultiheadAttention(embed, heads, dtype=np.float64, **kwargs)
    state = module.state_dict()
    state["in_proj_bias"] = rng.standard_normal(3 * embed)
    state["out_proj.bias"] = rng.standard_normal(embed)
    module.load_state_dict(state)
    return module, state


def run(module, *arrays, **kwargs):
    output, weights = module(*(pyjit.tensor(array) for array in arrays), **kwargs)
    return output.numpy(), None if weights is None else weights.numpy()


def test_initialisation_follows_torch():
    module = nn.MultiheadAttention(16, 4)
    assert list(module.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert module.in_proj_weight.shape == (48, 16) and module.in_proj_weight.dtype == np.float32
    assert np.abs(module.in_proj_weight.numpy()).max() <= math.sqrt(6 / 64)
    assert not module.in_proj_bias.numpy().any() and not module.out_proj.bias.numpy().any()
    assert np.abs(module.out_proj.weight.numpy()).max() <= 1 / 4
    unbiased = nn.MultiheadAttention(16, 4, bias=False)
    assert unbiased.in_proj_bias is None and unbiased.out_proj.bias is None
    with pytest.raises(ValueError, match="multiple of num_heads"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("average", [True, False])
def test_self_attention_matches_the_reference(average):
    module, state = attention_module()
    x = rng.standard_normal((3, 5, 8))
    output, weights = run(module, x, x, x, average_attn_weights=average)
    expected, expected_weights = np_attention(x, x, x, state, 2)
    np.testing.assert_allclose(output, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights.mean(1) if average else expected_weights, rtol=1e-10)


def test_cross_attention_with_a_longer_source_and_no_weights():
    module, state = attention_module(embed=6, heads=3)
    query, key, value = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 7, 6)), rng.standard_normal((2, 7, 6))
    output, weights = run(module, query, key, value, need_weights=False)
    assert weights is None
    np.testing.assert_allclose(output, np_attention(query, key, value, state, 3)[0], rtol=1e-10, atol=1e-12)


def test_boolean_and_floating_masks():
    module, state = attention_module()
    x = rng.standard_normal((2, 4, 8))
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    padding = np.array([[False, False, False, True], [False, False, False, False]])
    output, weights = run(module, x, x, x, key_padding_mask=padding, attn_mask=causal, average_attn_weights=False)
    expected, expected_weights = np_attention(x, x, x, state, 2, causal, padding)
    np.testing.assert_allclose(output, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-15)
    assert (weights[:, :, causal] == 0).all() and (weights[0, :, :, 3] == 0).all()
    additive = rng.standard_normal((4, 4, 4))  # (N * num_heads, L, S)
    output, _ = run(module, x, x, x, attn_mask=additive)
    np.testing.assert_allclose(output, np_attention(x, x, x, state, 2, additive)[0], rtol=1e-10, atol=1e-12)


def test_sequence_first_layout_and_one_unbatched_sequence():
    module, state = attention_module()
    x = rng.standard_normal((2, 5, 8))
    expected, expected_weights = np_attention(x, x, x, state, 2)
    module.batch_first = False
    seq_first = x.transpose(1, 0, 2)
    output, weights = run(module, seq_first, seq_first, seq_first)
    np.testing.assert_allclose(output, expected.transpose(1, 0, 2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights.mean(1), rtol=1e-10)
    output, weights = run(module, x[1], x[1], x[1], key_padding_mask=np.zeros(5, dtype=bool))
    np.testing.assert_allclose(output, expected[1], rtol=1e-10, atol=1e-12)
    assert weights.shape == (5, 5)


def test_bad_masks_and_inputs_are_refused():
    module, _ = attention_module()
    x = pyjit.tensor(rng.standard_normal((2, 4, 8)))
    with pytest.raises(ValueError, match="attn_mask has shape \\(4, 3\\), but should be \\(4, 4\\)"):
        module(x, x, x, attn_mask=np.zeros((4, 3), dtype=bool))
    with pytest.raises(TypeError, match="boolean or floating"):
        module(x, x, x, attn_mask=np.zeros((4, 4), dtype=np.int64))
    with pytest.raises(ValueError, match="key_padding_mask has shape"):
        module(x, x, x, key_padding_mask=np.zeros((4, 2), dtype=bool))
    with pytest.raises(ValueError, match="3-D \\(batched\\) or 2-D"):
        module(x, x, x[0])


def test_dropout_on_the_weights_applies_in_training_only():
    module, state = attention_module(dropout=0.5)
    x = rng.standard_normal((2, 4, 8))
    expected, expected_weights = np_attention(x, x, x, state, 2)
    output, _ = run(module.eval(), x, x, x)
    np.testing.assert_allclose(output, expected, rtol=1e-10, atol=1e-12)
    pyjit.manual_seed(0)
    _, weights = run(module.train(), x, x, x, average_attn_weights=False)
    kept = weights != 0
    assert kept.any() and not kept.all()
    np.testing.assert_allclose(weights[kept], 2 * expected_weights[kept], rtol=1e-10)


def central_differences(loss, arrays, step=1e-6):
    grads = []
    for array in arrays:
        grad = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            saved = array[index]
            array[index] = saved + step
            above = loss()
            array[index] = saved - step
            below = loss()
            array[index] = saved
            grad[index] = (above - below) / (2 * step)
        grads.append(grad)
    return grads


def test_gradients_match_central_differences_of_the_reference():
    module, state = attention_module(embed=4, heads=2)
    query, key = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 2, 4))
    value = rng.standard_normal((2, 2, 4))
    mask = np.array([[False, True], [False, False], [False, False]])
    upstream, weight_upstream = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 2))
    inputs = [pyjit.tensor(array, requires_grad=True) for array in (query, key, value)]
    output, weights = module(*inputs, attn_mask=mask)
    ((output * upstream).sum() + (weights * weight_upstream).sum()).backward()
    got = [tensor.grad.numpy() for tensor in inputs] + [param.grad.numpy() for param in module.parameters()]

    arrays = [query, key, value] + [state[name] for name, _ in module.named_parameters()]

    def loss():
        out, per_head = np_attention(query, key, value, state, 2, mask)
        return (out * upstream).sum() + (per_head.mean(1) * weight_upstream).sum()

    for grad, expected in zip(got, central_differences(loss, arrays)):
        np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


MASKS = {
    "none": {},
    "causal bool": {"attn_mask": np.triu(np.ones((4, 4), dtype=bool), 1)},
    "float per head": {"attn_mask": rng.standard_normal((2 * 2, 4, 4))},
    "padding and causal": {"attn_mask": np.triu(np.ones((4, 4), dtype=bool), 1),
                           "key_padding_mask": np.array([[False] * 3 + [True], [False] * 4])},
}


@pytest.mark.parametrize("mask", MASKS, ids=str)
@pytest.mark.parametrize("average", [True, False])
def test_self_attention_gradients_pass_gradcheck_under_every_mask(mask, average):
    module, _ = attention_module(embed=4, heads=2)

    def attend(x):
        return module(x, x, x, average_attn_weights=average, **MASKS[mask])

    x = pyjit.tensor(rng.standard_normal((2, 4, 4)), requires_grad=True)
    assert pyjit.autograd.gradcheck(attend, x, atol=1e-7, rtol=1e-6)


def test_cross_attention_gradients_in_the_sequence_first_layout_pass_gradcheck():
    module, _ = attention_module(embed=4, heads=2, batch_first=False)
    query, key, value = (pyjit.tensor(rng.standard_normal(shape), requires_grad=True)
                         for shape in ((3, 2, 4), (5, 2, 4), (5, 2, 4)))
    assert pyjit.autograd.gradcheck(lambda q, k, v: module(q, k, v, need_weights=False)[0], (query, key, value),
                                    atol=1e-7, rtol=1e-6)


def test_one_unbatched_sequence_with_a_padded_key():
    module, state = attention_module()
    x = rng.standard_normal((4, 8))
    padding = np.array([False, False, True, False])
    output, weights = run(module, x, x, x, key_padding_mask=padding)
    expected, expected_weights = np_attention(x[None], x[None], x[None], state, 2, key_padding_mask=padding[None])
    np.testing.assert_allclose(output, expected[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights[0].mean(0), rtol=1e-10, atol=1e-15)
    assert (weights[:, 2] == 0).all()
