"""The tape's gradients equal PyTorch's (float64, to 1e-8) on a set of ops and
compositions, including PyTorch's conventions at ties and kinks. Skipped without torch,
which pyjit never depends on."""

import numpy as np
import pytest

import pyjit

torch = pytest.importorskip("torch")
functional = torch.nn.functional


class Pyjit:
    """The functions the cases call that the two libraries spell differently."""

    tensor = staticmethod(lambda values: pyjit.tensor(values))
    where = staticmethod(np.where)
    cat = staticmethod(lambda tensors, dim: np.concatenate(tensors, axis=dim))
    stack = staticmethod(lambda tensors, dim: np.stack(tensors, axis=dim))
    einsum = staticmethod(np.einsum)
    atan2 = staticmethod(np.arctan2)
    asin = staticmethod(np.arcsin)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    erf = staticmethod(lambda x: x.erf())
    gelu = staticmethod(lambda x, approximate="none": pyjit.ops.gelu(x, approximate=approximate))
    layer_norm = staticmethod(lambda x, shape, weight, bias: pyjit.ops.layer_norm(x, shape, weight, bias, 1e-5))
    arange = staticmethod(lambda n: np.arange(n))


class Torch:
    tensor = staticmethod(lambda values: torch.tensor(values))
    where = staticmethod(torch.where)
    cat = staticmethod(torch.cat)
    stack = staticmethod(torch.stack)
    einsum = staticmethod(torch.einsum)
    atan2 = staticmethod(torch.atan2)
    asin = staticmethod(torch.asin)
    maximum = staticmethod(torch.maximum)
    minimum = staticmethod(torch.minimum)
    erf = staticmethod(torch.erf)
    gelu = staticmethod(lambda x, approximate="none": functional.gelu(x, approximate=approximate))
    layer_norm = staticmethod(lambda x, shape, weight, bias: functional.layer_norm(x, shape, weight, bias, 1e-5))
    arange = staticmethod(torch.arange)


TIES = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 0.0], [0.0, 0.5, 0.5, 0.0]]

# name: (function of (library, *inputs), input shapes or fixed values, positive inputs)
CASES = {
    "arithmetic": (lambda L, x, w: (x * w - x / (w * w + 1)) ** 2 + 3.0 - x, [(3, 4), (4,)]),
    "power": (lambda L, x, w: (x.abs() + 0.5) ** w + 2.0 ** x, [(3, 4), (4,)]),
    "exp_log": (lambda L, x: x.exp().log1p() + (x * x + 1).log() + x.expm1(), [(2, 5)]),
    "trig": (lambda L, x: x.sin() * x.cos() + x.tanh() + x.tan() + L.asin(x * 0.3), [(2, 5)]),
    "roots": (lambda L, x: (x * x + 1).sqrt() + (x * x + 1).reciprocal() + x.square(), [(2, 5)]),
    "activations": (lambda L, x: x.sigmoid() + x.relu() + L.gelu(x) + L.gelu(x, "tanh") + L.erf(x), [(3, 4)]),
    "relu_and_abs_at_zero": (lambda L, x: x.relu() + x.abs(), [np.array([-1.0, 0.0, 2.0])]),
    "softmaxes": (lambda L, x: x.softmax(dim=-1) * x.log_softmax(dim=-1) + x.logsumexp(dim=0), [(3, 4)]),
    "layer_norm": (lambda L, x, w, b: L.layer_norm(x, (4,), w, b), [(2, 3, 4), (4,), (4,)]),
    "batched_matmul": (lambda L, x, w: x @ w, [(2, 3, 4), (4, 5)]),
    "vector_matmul": (lambda L, v, m: (v @ m) * (m @ v[:3]).sum(), [(3,), (3, 3)]),
    "einsum": (lambda L, x, w: L.einsum("bij,jk->bik", x, w), [(2, 3, 4), (4, 2)]),
    "reductions": (lambda L, x: x.sum(dim=1) + x.mean(dim=1) + x.var(dim=1, correction=1) + x.std(dim=1, correction=0),
                   [(3, 4)]),
    "prod_with_a_zero": (lambda L, x: x.prod(dim=1), [np.array([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]])]),
    "amax_ties": (lambda L, x: x.amax(dim=1).sum() + x.amin(dim=0), [np.array(TIES)]),
    "maximum_ties": (lambda L, x, y: L.maximum(x, y) + L.minimum(x, y),
                     [np.array(TIES), np.array([[1.0, 2.0, 3.0, 0.0]] * 3)]),
    "clamp_and_where": (lambda L, x, w: x.clamp(-0.5, 0.5) + L.where(x > 0, x * w, w), [(3, 4), (3, 4)]),
    "atan2": (lambda L, y, x: L.atan2(y, x), [(3, 4), (3, 4)]),
    "indexing": (lambda L, x: x[1:, ::2].sum() + x[[0, 2, 0]] * 2 + x[:, None, 1:2], [(3, 4)]),
    "join": (lambda L, x, y: L.cat([x, y * 2], 0).sum(0) + L.stack([x, y], 0).sum(0), [(2, 3), (2, 3)]),
    "views": (lambda L, x: x.permute(2, 0, 1).reshape(4, 6).T.unsqueeze(0) * x.reshape(1, 6, 4), [(2, 3, 4)]),
    "cross_entropy": (lambda L, logits: -logits.log_softmax(dim=-1)[L.arange(3), [2, 0, 1]].mean(), [(3, 5)]),
}


def run(library, function, arrays, cotangent_seed=7):
    make = pyjit.tensor if library is Pyjit else torch.tensor
    inputs = [make(array, requires_grad=True) for array in arrays]
    output = function(library, *inputs)
    cotangent = np.random.default_rng(cotangent_seed).uniform(-1, 1, tuple(output.shape))
    (output * library.tensor(cotangent)).sum().backward()
    return [np.asarray(tensor.grad.detach() if library is Torch else tensor.grad) for tensor in inputs]


@pytest.mark.parametrize("name", CASES)
def test_gradients_equal_pytorchs(name):
    function, specs = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [spec if isinstance(spec, np.ndarray) else rng.uniform(-1.5, 1.5, spec) for spec in specs]
    ours, theirs = run(Pyjit, function, arrays), run(Torch, function, arrays)
    for index, (mine, reference) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-12, err_msg=f"input {index}")


def test_hooks_and_accumulation_agree_with_pytorch():
    def grads(make):
        x = make(np.array([1.0, -2.0]), requires_grad=True)
        y = x * 3
        y.register_hook(lambda grad: grad * 2)
        x.register_hook(lambda grad: grad + 1)
        (y * y).sum().backward()
        (x * 5).sum().backward()
        return np.asarray(x.grad.detach() if make is torch.tensor else x.grad)

    np.testing.assert_allclose(grads(pyjit.tensor), grads(torch.tensor), rtol=1e-12)
