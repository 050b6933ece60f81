"""pyjit.nn against torch.nn, outputs and gradients, in float64 from the same weights
(skipped where torch is not installed; it is never a dependency)."""

import numpy as np
import pytest

import pyjit
import pyjit.nn.functional as F
from pyjit import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


rng = np.random.default_rng(21)


def copy_weights(module, twin):
    twin.load_state_dict({name: torch.from_numpy(value) for name, value in module.state_dict().items()})


def both_backward(pyjit_fn, torch_fn, arrays, upstreams):
    """Run each function on its own tensors made from `arrays`, backward with
    sum(output_i * upstream_i); return the outputs and the inputs' gradients."""
    ours = [pyjit.tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]
    outputs, twin_outputs = pyjit_fn(*ours), torch_fn(*theirs)
    sum(((out * up).sum() for out, up in zip(outputs, upstreams)), start=0.0).backward()
    sum((out * torch.from_numpy(up)).sum() for out, up in zip(twin_outputs, upstreams)).backward()
    return ([out.numpy() for out in outputs], [out.detach().numpy() for out in twin_outputs],
            [t.grad.numpy() for t in ours], [t.grad.numpy() for t in theirs])


def assert_all_close(got, expected, rtol=1e-10, atol=1e-12):
    assert len(got) == len(expected)
    for index, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"item {index}")


def make_attention(embed, heads, batch_first=True):
    module = nn.MultiheadAttention(embed, heads, batch_first=batch_first, dtype=np.float64)
    state = module.state_dict()
    state["in_proj_bias"] = rng.standard_normal(3 * embed)
    state["out_proj.bias"] = rng.standard_normal(embed)
    module.load_state_dict(state)
    twin = torch.nn.MultiheadAttention(embed, heads, batch_first=batch_first).double()
    copy_weights(module, twin)
    return module, twin


MASKS = {
    "none": {},
    "causal bool": {"attn_mask": np.triu(np.ones((5, 5), dtype=bool), 1)},
    "float per head": {"attn_mask": rng.standard_normal((3 * 4, 5, 5))},
    "padding and causal": {"attn_mask": np.triu(np.ones((5, 5), dtype=bool), 1),
                           "key_padding_mask": np.array([[False] * 4 + [True], [False] * 5, [False] * 3 + [True] * 2])},
}


@pytest.mark.parametrize("mask", MASKS, ids=str)
@pytest.mark.parametrize("average", [True, False])
def test_multihead_self_attention_outputs_and_gradients(mask, average):
    module, twin = make_attention(8, 4)
    x = rng.standard_normal((3, 5, 8))
    ours_masks, torch_masks = MASKS[mask], {key: torch.from_numpy(value) for key, value in MASKS[mask].items()}
    upstreams = [rng.standard_normal((3, 5, 8)), rng.standard_normal((3, 5, 5) if average else (3, 4, 5, 5))]
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda t: module(t, t, t, average_attn_weights=average, **ours_masks),
        lambda t: twin(t, t, t, average_attn_weights=average, **torch_masks), [x], upstreams)
    assert_all_close(outputs, twin_outputs)
    assert_all_close(grads, twin_grads)
    assert_all_close([p.grad.numpy() for p in module.parameters()], [p.grad.numpy() for p in twin.parameters()])


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_cross_attention_in_both_layouts(batch_first):
    module, twin = make_attention(6, 2, batch_first)
    shape = (2, 3, 6) if batch_first else (3, 2, 6)
    source_shape = (2, 7, 6) if batch_first else (7, 2, 6)
    arrays = [rng.standard_normal(shape), rng.standard_normal(source_shape), rng.standard_normal(source_shape)]
    upstreams = [rng.standard_normal(shape)]
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda q, k, v: module(q, k, v, need_weights=False)[:1],
        lambda q, k, v: twin(q, k, v, need_weights=False)[:1], arrays, upstreams)
    assert_all_close(outputs, twin_outputs)
    assert_all_close(grads, twin_grads)


def test_multihead_attention_on_one_unbatched_sequence():
    module, twin = make_attention(8, 2)
    x = rng.standard_normal((4, 8))
    padding = np.array([False, False, True, False])
    output, weights = module(pyjit.tensor(x), pyjit.tensor(x), pyjit.tensor(x), key_padding_mask=padding)
    twin_output, twin_weights = twin(*(torch.from_numpy(x),) * 3, key_padding_mask=torch.from_numpy(padding))
    assert_all_close([output.numpy(), weights.numpy()], [twin_output.detach().numpy(), twin_weights.detach().numpy()])


def test_layer_norm_outputs_and_gradients():
    module = nn.LayerNorm((4, 6), eps=1e-3, dtype=np.float64)
    module.load_state_dict({"weight": rng.standard_normal((4, 6)), "bias": rng.standard_normal((4, 6))})
    twin = torch.nn.LayerNorm((4, 6), eps=1e-3).double()
    copy_weights(module, twin)
    x = rng.standard_normal((3, 4, 6)) * 3 + 2
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda t: [module(t)], lambda t: [twin(t)], [x], [rng.standard_normal((3, 4, 6))])
    assert_all_close(outputs, twin_outputs)
    assert_all_close(grads, twin_grads)
    assert_all_close([p.grad.numpy() for p in module.parameters()], [p.grad.numpy() for p in twin.parameters()])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [{}, {"ignore_index": 2}, {"weight": rng.uniform(0.5, 2, 5)},
                                     {"weight": rng.uniform(0.5, 2, 5), "ignore_index": 0}], ids=str)
def test_cross_entropy_outputs_and_gradients(reduction, options):
    logits, target = rng.standard_normal((8, 5)) * 2, rng.integers(0, 5, 8)
    torch_options = {key: torch.from_numpy(value) if isinstance(value, np.ndarray) else value
                     for key, value in options.items()}
    upstream = [rng.standard_normal(8) if reduction == "none" else np.array(1.0)]
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda t: [F.cross_entropy(t, pyjit.tensor(target), reduction=reduction, **options)],
        lambda t: [torch.nn.functional.cross_entropy(t, torch.from_numpy(target), reduction=reduction,
                                                     **torch_options)], [logits], upstream)
    assert_all_close(outputs, twin_outputs)
    assert_all_close(grads, twin_grads)


def test_cross_entropy_with_spatial_axes():
    logits, target = rng.standard_normal((2, 4, 3, 5)), rng.integers(0, 4, (2, 3, 5))
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda t: [F.cross_entropy(t, pyjit.tensor(target))],
        lambda t: [torch.nn.functional.cross_entropy(t, torch.from_numpy(target))], [logits], [np.array(1.0)])
    assert_all_close(outputs + grads, twin_outputs + twin_grads)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_outputs_and_gradients(approximate):
    x = rng.standard_normal(50) * 4
    outputs, twin_outputs, grads, twin_grads = both_backward(
        lambda t: [nn.GELU(approximate)(t)], lambda t: [torch.nn.GELU(approximate)(t)], [x], [rng.standard_normal(50)])
    assert_all_close(outputs + grads, twin_outputs + twin_grads)


def test_linear_and_embedding_gradients():
    linear, embedding = nn.Linear(5, 3, dtype=np.float64), nn.Embedding(10, 5, dtype=np.float64)
    twin_linear, twin_embedding = torch.nn.Linear(5, 3).double(), torch.nn.Embedding(10, 5).double()
    copy_weights(linear, twin_linear)
    copy_weights(embedding, twin_embedding)
    indices = rng.integers(0, 10, (4, 6))
    upstream = rng.standard_normal((4, 6, 3))
    output = linear(embedding(pyjit.tensor(indices)))
    twin_output = twin_linear(twin_embedding(torch.from_numpy(indices)))
    (output * upstream).sum().backward()
    (twin_output * torch.from_numpy(upstream)).sum().backward()
    np.testing.assert_allclose(output.numpy(), twin_output.detach().numpy(), rtol=1e-12)
    ours = [p.grad.numpy() for p in (*linear.parameters(), *embedding.parameters())]
    theirs = [p.grad.numpy() for p in (*twin_linear.parameters(), *twin_embedding.parameters())]
    assert_all_close(ours, theirs)
