"""pyjit/autograd/methods.py: tensor methods as registry entries, NumPy names, PyTorch keywords."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd.methods import FORWARDED, NUMPY_ALIASES, numpy_entry
from pyjit.ops import REGISTRY


def test_every_forwarded_method_names_a_registry_entry():
    assert set(FORWARDED.values()) <= set(REGISTRY)
    assert set(NUMPY_ALIASES.values()) <= set(REGISTRY)


@pytest.mark.parametrize("call", [
    lambda x: np.absolute(x), lambda x: np.remainder(x, 2.0), lambda x: np.amax(x), lambda x: np.amin(x),
    lambda x: np.around(x), lambda x: np.concat([x, x]), lambda x: np.permute_dims(x)])
def test_numpy_functions_under_other_names_reach_the_entry_numpy_means(call):
    array = np.array([[1.5, -2.5]])
    result = call(pyjit.tensor(array))
    assert isinstance(result, pyjit.Tensor)
    np.testing.assert_allclose(result.numpy(), call(array))
    assert numpy_entry("absolute")(array).tolist() == [[1.5, 2.5]]


def test_methods_match_numpy():
    array = np.random.default_rng(0).uniform(0.1, 1.0, (2, 3))
    x = pyjit.tensor(array)
    for method in ("exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "square", "floor", "sum", "mean", "max",
                   "min", "prod", "argmax", "any", "all"):
        np.testing.assert_allclose(getattr(x, method)().numpy(), getattr(np, method)(array), err_msg=method)
    np.testing.assert_allclose(x.sum(axis=1, keepdims=True).numpy(), array.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(x.max(dim=0).numpy(), array.max(axis=0))  # values only, as NumPy gives
    np.testing.assert_allclose(x.var(dim=1).numpy(), array.var(axis=1))
    np.testing.assert_allclose(x.std(1, correction=1).numpy(), array.std(axis=1, ddof=1))
    np.testing.assert_allclose(x.var(unbiased=True).numpy(), array.var(ddof=1))
    np.testing.assert_allclose(x.clamp(min=0.5).numpy(), np.clip(array, 0.5, None))
    np.testing.assert_allclose(x.pow(2).numpy(), array ** 2)
    np.testing.assert_allclose(x.neg().numpy(), -array)
    np.testing.assert_allclose(x.softmax(dim=-1).sum(axis=-1).numpy(), [1.0, 1.0])
    np.testing.assert_allclose(x.masked_fill(x > 0.5, 0.0).numpy(), np.where(array > 0.5, 0.0, array))


@pytest.mark.parametrize("method", ["sum", "prod", "mean", "var", "std", "cumsum", "cumprod"])
def test_reductions_take_dtype_and_compute_in_it_with_gradients(method):
    """NOTE(dtype-reductions): x.sum(dtype=np.float64) casts first, as NumPy computes it,
    on the tape as in a compiled function; the gradient comes back in x's dtype."""
    array = np.random.default_rng(1).uniform(0.5, 1.5, (3, 4)).astype(np.float32)
    want = getattr(array, method)(axis=1, dtype=np.float64)

    def reduce(x):
        return getattr(x, method)(axis=1, dtype=np.float64)

    for function in (reduce, pyjit.compile(reduce, fullgraph=True)):
        x = pyjit.tensor(array, requires_grad=True)
        got = function(x)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        got.sum().backward()
        assert x.grad.dtype == np.float32 and np.all(np.isfinite(x.grad.numpy()))
    assert pyjit.tensor(array).sum(dtype=None).dtype == np.float32


def test_var_and_std_take_pytorchs_corrections_in_compiled_functions():
    array = np.random.default_rng(2).standard_normal((3, 4))

    def deviations(x):
        return x.var(dim=1, correction=1), x.std(unbiased=True), x.std(0, keepdim=True)

    got = pyjit.compile(deviations, fullgraph=True)(pyjit.tensor(array))
    want = (array.var(axis=1, ddof=1), array.std(ddof=1), array.std(axis=0, keepdims=True))
    for got_item, want_item in zip(got, want, strict=True):
        np.testing.assert_allclose(got_item.numpy(), want_item, rtol=1e-12)


def test_shape_methods_take_numpy_and_pytorch_spellings():
    x = pyjit.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x.reshape(6, 4).shape == x.reshape((6, 4)).shape == x.view(-1, 4).shape == (6, 4)
    assert x.flatten().shape == (24,) and x.flatten(1).shape == (2, 12) and pyjit.tensor(1.0).flatten().shape == (1,)
    assert x.transpose().shape == x.T.shape == (4, 3, 2)
    assert x.transpose((1, 0, 2)).shape == x.transpose(1, 0, 2).shape == x.permute(1, 0, 2).shape == (3, 2, 4)
    assert x.transpose(-2, -1).shape == x.mT.shape == x.swapaxes(1, 2).shape == (2, 4, 3)
    assert x.transpose(dim0=0, dim1=2).shape == (4, 3, 2)
    assert x.unsqueeze(0).shape == x.expand_dims(0).shape == (1, 2, 3, 4)
    assert x[:, :1].squeeze(1).shape == (2, 4)
    assert x[:1].expand(5, -1, -1).shape == x[:1].broadcast_to((5, 3, 4)).shape == (5, 3, 4)


def test_a_matrix_transpose_of_two_axes_is_numpys_or_refused_when_ambiguous():
    m = pyjit.tensor(np.arange(6.0).reshape(2, 3))
    assert m.transpose(1, 0).shape == (3, 2)
    with pytest.raises(ValueError, match="ambiguous"):
        m.transpose(0, 1)
    with pytest.raises(ValueError, match="ambiguous"):
        m.transpose(-2, -1)


def test_methods_record_on_the_tape():
    x = pyjit.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    x.T.exp().mean(dim=0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.numpy()) / 2)
