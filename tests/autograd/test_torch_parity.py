"""The tape's gradients on a set of ops and compositions, including PyTorch's
conventions at ties and kinks: everywhere against finite differences (gradcheck) and
closed forms; where torch is installed (pyjit never depends on it) also equal to
PyTorch's, in float64 to 1e-8."""

import numpy as np
import pytest

import pyjit


class Pyjit:
    """The functions the cases call that the two libraries spell differently."""

    tensor = staticmethod(lambda values: pyjit.tensor(values))
    make = staticmethod(pyjit.tensor)
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


@pytest.fixture(scope="module")
def Torch():
    """The torch spellings of the functions the cases call (the test skips without torch)."""
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional

    class Torch:
        tensor = staticmethod(lambda values: torch.tensor(values))
        make = staticmethod(torch.tensor)
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

    return Torch


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


KINKS = {"relu_and_abs_at_zero", "amax_ties", "maximum_ties"}  # where finite differences do not decide


def inputs_of(name) -> list:
    rng = np.random.default_rng(0)
    return [spec if isinstance(spec, np.ndarray) else rng.uniform(-1.5, 1.5, spec) for spec in CASES[name][1]]


def run(library, function, arrays, cotangent_seed=7):
    inputs = [library.make(array, requires_grad=True) for array in arrays]
    output = function(library, *inputs)
    cotangent = np.random.default_rng(cotangent_seed).uniform(-1, 1, tuple(output.shape))
    (output * library.tensor(cotangent)).sum().backward()
    return [np.asarray(tensor.grad.detach() if library is not Pyjit else tensor.grad) for tensor in inputs]


@pytest.mark.parametrize("name", sorted(set(CASES) - KINKS))
def test_gradients_pass_gradcheck(name):
    function = CASES[name][0]
    leaves = [pyjit.tensor(array, requires_grad=True) for array in inputs_of(name)]
    assert pyjit.autograd.gradcheck(lambda *tensors: function(Pyjit, *tensors), leaves, atol=1e-7, rtol=1e-6)


def cotangent_of(name):
    function = CASES[name][0]
    shape = function(Pyjit, *map(pyjit.tensor, inputs_of(name))).shape
    return np.random.default_rng(7).uniform(-1, 1, shape)


def test_relu_and_abs_have_zero_gradient_at_zero():
    c = cotangent_of("relu_and_abs_at_zero")
    (grad,) = run(Pyjit, CASES["relu_and_abs_at_zero"][0], inputs_of("relu_and_abs_at_zero"))
    np.testing.assert_array_equal(grad, c * [-1.0, 0.0, 2.0])  # relu' + abs' at -1, 0, 2


def test_amax_and_amin_split_the_gradient_evenly_among_ties():
    c = cotangent_of("amax_ties")  # output: x.amax(dim=1).sum() + x.amin(dim=0), shape (4,)
    (grad,) = run(Pyjit, CASES["amax_ties"][0], inputs_of("amax_ties"))
    row_maxima = np.array([[0, 0.5, 0.5, 0], [0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]])
    column_minima = np.array([[0, 0, 0, 1 / 3], [0, 0, 1, 1 / 3], [1, 1, 0, 1 / 3]])
    np.testing.assert_allclose(grad, c.sum() * row_maxima + column_minima * c, rtol=1e-15)


def test_maximum_and_minimum_split_ties_so_their_sum_passes_the_gradient_whole():
    c = cotangent_of("maximum_ties")
    grads = run(Pyjit, CASES["maximum_ties"][0], inputs_of("maximum_ties"))
    for grad in grads:
        np.testing.assert_allclose(grad, c, rtol=1e-15)


def hooked_gradient(make, as_array):
    x = make(np.array([1.0, -2.0]), requires_grad=True)
    y = x * 3
    y.register_hook(lambda grad: grad * 2)
    x.register_hook(lambda grad: grad + 1)
    (y * y).sum().backward()
    (x * 5).sum().backward()
    return as_array(x.grad)


def test_hooks_run_before_accumulation_into_grad():
    # d(y*y)/dy = 6x, doubled by y's hook, times 3 to x, plus 1 by x's hook: 36x + 1;
    # then d(5x)/dx = 5, plus 1: the second backward adds 6.
    np.testing.assert_allclose(hooked_gradient(pyjit.tensor, np.asarray), [36 + 1 + 6, -72 + 1 + 6], rtol=1e-15)


@pytest.mark.parametrize("name", CASES)
def test_gradients_equal_pytorchs(name, Torch):
    function = CASES[name][0]
    arrays = inputs_of(name)
    ours, theirs = run(Pyjit, function, arrays), run(Torch, function, arrays)
    for index, (mine, reference) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-12, err_msg=f"input {index}")


def test_hooks_and_accumulation_agree_with_pytorch(Torch):
    np.testing.assert_allclose(hooked_gradient(pyjit.tensor, np.asarray),
                               hooked_gradient(Torch.make, lambda grad: grad.detach().numpy()), rtol=1e-12)
