"""pyjit/autograd/device.py: device names, and CuPy only when a CUDA device is asked for."""

import importlib.util

import numpy as np
import pytest

import pyjit
from pyjit.autograd.device import array_module, device_of, normalize_device, to_device

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cpu:0", 3])
def test_unknown_devices_are_refused(device):
    with pytest.raises(ValueError, match="unknown device"):
        normalize_device(device)


def test_cpu_arrays_stay_where_they_are():
    array = np.ones(2)
    assert normalize_device("cpu") == "cpu" and normalize_device("cuda:1") == "cuda:1"
    assert device_of(array) == "cpu" and array_module(array) is np and to_device(array, "cpu") is array


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed")
def test_a_cuda_device_without_cupy_is_a_clear_runtime_error():
    for make in (lambda: pyjit.zeros(2, device="cuda"), lambda: pyjit.tensor([1.0]).to("cuda"),
                 lambda: pyjit.tensor([1.0]).cuda(0)):
        with pytest.raises(RuntimeError, match="needs CuPy"):
            make()


@pytest.mark.skipif(not HAS_CUPY, reason="CuPy is not installed")
def test_tensors_move_to_the_gpu_and_back():
    x = pyjit.randn(3, dtype=np.float64, device="cuda")
    assert x.device == "cuda:0" and type(x.array).__module__.startswith("cupy")
    y = (x * 2).sin()
    np.testing.assert_allclose(y.cpu().numpy(), np.sin(2 * x.cpu().numpy()))
    w = pyjit.tensor([1.0, 2.0, 3.0], requires_grad=True, device="cuda")
    (w * w).sum().backward()
    assert w.grad.device == "cuda:0" and w.grad.cpu().tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="not recorded"):
        w.to("cpu")
