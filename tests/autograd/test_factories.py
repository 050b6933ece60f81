"""pyjit/autograd/factories.py: tensor, as_tensor, from_numpy, zeros, ones, rand, randn, arange."""

import numpy as np
import pytest

import pyjit


@pytest.mark.parametrize(("data", "dtype"), [
    ([1.0, 2.0], np.float32), (1.5, np.float32), ([1, 2], np.int64), (True, np.bool_), ([1j], np.complex64),
    (np.array([1.0]), np.float64), (np.float64(1.0), np.float64), (np.arange(3, dtype=np.int8), np.int8),
    ([np.float64(1.0), 2.0], np.float64), ([pyjit.tensor(np.ones(2)), pyjit.tensor(np.ones(2))], np.float64),
])
def test_tensor_infers_pytorchs_defaults_for_python_data_and_keeps_numpys_dtype(data, dtype):
    assert pyjit.tensor(data).dtype == dtype


def test_tensor_copies_and_takes_dtype_device_and_requires_grad():
    array = np.ones(2)
    t = pyjit.tensor(array, requires_grad=True, dtype=np.float32, device="cpu")
    assert t.dtype == np.float32 and t.requires_grad and t.is_leaf and t.device == "cpu"
    assert not np.shares_memory(pyjit.tensor(array).array, array)
    source = pyjit.tensor([1.0], requires_grad=True) * 2
    copied = pyjit.tensor(source)
    assert copied.is_leaf and not copied.requires_grad and copied.array is not source.array


def test_as_tensor_and_from_numpy_share_memory():
    array = np.zeros(3)
    assert pyjit.as_tensor(array).array is array
    shared = pyjit.from_numpy(array)
    array[0] = 5
    assert shared.tolist()[0] == 5.0
    t = pyjit.tensor([1.0])
    assert pyjit.as_tensor(t) is t and pyjit.as_tensor(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="expected np.ndarray"):
        pyjit.from_numpy([1.0])


@pytest.mark.parametrize("factory", [pyjit.zeros, pyjit.ones, pyjit.rand, pyjit.randn])
def test_shape_factories_take_sizes_or_a_tuple_and_default_to_float32(factory):
    assert factory(2, 3).shape == factory((2, 3)).shape == factory([2, 3]).shape == (2, 3)
    assert factory(2).dtype == np.float32
    assert factory(2, dtype=np.float64).dtype == np.float64
    assert factory(2, dtype=np.float16).dtype == np.float16
    assert factory(2, requires_grad=True).requires_grad


def test_constant_factories_fill():
    assert pyjit.zeros(2).tolist() == [0.0, 0.0] and pyjit.ones(1, 2).tolist() == [[1.0, 1.0]]
    values = pyjit.rand(1000).numpy()
    assert values.min() >= 0 and values.max() < 1


def test_arange_follows_pytorchs_dtypes():
    assert pyjit.arange(4).tolist() == [0, 1, 2, 3] and pyjit.arange(4).dtype == np.int64
    assert pyjit.arange(1, 2, 0.25).dtype == np.float32
    np.testing.assert_allclose(pyjit.arange(1, 2, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75])
    assert pyjit.arange(3, dtype=np.float64, requires_grad=True).requires_grad

