"""Making tensors: from data (`tensor`, `as_tensor`, `from_numpy`) and from a shape
(`zeros`, `ones`, `rand`, `randn`, `arange`).

Dtypes follow PyTorch's defaults where the data does not decide: shapes and Python
floats give float32, Python ints int64; a NumPy array keeps its dtype. `tensor`
copies its data; `as_tensor` and `from_numpy` share the array's memory.
"""

from __future__ import annotations

import numpy as np

from . import random
from .device import normalize_device, to_device
from .tensor import DEFAULT_FLOAT, Tensor, as_array


def tensor(data, requires_grad: bool = False, dtype=None, device=None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (an array, a tensor, nested lists, a scalar)."""
    return _leaf(as_array(data, dtype, device, copy=True), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor without copying where possible: a tensor of the right dtype
    and device is returned as it is, an array is wrapped and shares its memory."""
    if isinstance(data, Tensor):
        same_dtype = dtype is None or np.dtype(dtype) == data.dtype
        same_device = device is None or normalize_device(device) == data.device
        if same_dtype and same_device:
            return data
    return Tensor(as_array(data, dtype, device))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing `array`'s memory: changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return Tensor(array)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(_on(np.zeros(_shape(size), _dtype(dtype)), device), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(_on(np.ones(_shape(size), _dtype(dtype)), device), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from pyjit's generator (pyjit/autograd/random.py)."""
    dtype = _dtype(dtype)
    if dtype in (np.float32, np.float64):
        values = random.generator().standard_normal(_shape(size), dtype=dtype)
    else:
        values = random.generator().standard_normal(_shape(size)).astype(dtype)
    return _leaf(_on(values, device), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from pyjit's generator."""
    dtype = _dtype(dtype)
    if dtype in (np.float32, np.float64):
        values = random.generator().random(_shape(size), dtype=dtype)
    else:
        values = random.generator().random(_shape(size)).astype(dtype)
    return _leaf(_on(values, device), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """[start, end) in steps of `step` (`arange(n)` counts from 0): int64 when every
    bound is an integer, float32 otherwise, as in PyTorch."""
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)  # int64 or float64, cast after: float32 steps would drift
    if dtype is None:
        dtype = np.int64 if values.dtype.kind in "iu" else DEFAULT_FLOAT
    return _leaf(_on(values.astype(dtype, copy=False), device), requires_grad)


def _leaf(array, requires_grad: bool) -> Tensor:
    return Tensor(array, requires_grad=requires_grad)


def _shape(size: tuple) -> tuple:
    """zeros(2, 3) and zeros((2, 3)) alike."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _dtype(dtype) -> np.dtype:
    return DEFAULT_FLOAT if dtype is None else np.dtype(dtype)


def _on(array: np.ndarray, device):
    return array if device is None else to_device(array, normalize_device(device))
