"""Devices: "cpu" holds NumPy arrays, "cuda:N" CuPy arrays on GPU N. CuPy is imported
only when a CUDA array is made or met."""

from __future__ import annotations

import numpy as np

from .tracing import TracedArray


def normalize_device(device) -> str:
    """"cpu", or "cuda:N" ("cuda" means the current GPU); ValueError for anything else."""
    text = str(device)
    if text == "cpu":
        return text
    if text == "cuda":
        return f"cuda:{cupy_module().cuda.runtime.getDevice()}"
    kind, _, index = text.partition(":")
    if kind == "cuda" and index.isdigit():
        return f"cuda:{int(index)}"
    raise ValueError(f"unknown device {device!r}: pyjit tensors live on 'cpu' or 'cuda[:N]'")


def cupy_module():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("a 'cuda' device needs CuPy, which is not installed "
                           "(pip install cupy-cuda12x, or pyjit[cuda])") from None
    return cupy


def device_of(array) -> str:
    if type(array) is np.ndarray:
        return "cpu"
    if type(array) is TracedArray:
        return array.device
    return f"cuda:{array.device.id}"


def array_module(array):
    """numpy for a CPU array, cupy for a CUDA one, the trace for a traced one (NOTE(make-fx))."""
    if type(array) is np.ndarray:
        return np
    return array.tracer if type(array) is TracedArray else cupy_module()


def is_traced(array) -> bool:
    return type(array) is TracedArray


def to_device(array, device: str):
    """`array` on `device` (the same object when it is there already)."""
    if device_of(array) == device:
        return array
    if device == "cpu":
        return array.get()
    cupy = cupy_module()
    with cupy.cuda.Device(int(device.partition(":")[2])):
        return cupy.asarray(array)
