"""Fixtures for the tests of pyjit/nn: running a function forward and backward on tensors."""

import numpy as np
import pytest

import pyjit


def forward_backward(fn, *arrays, upstream=None, seed: int = 0):
    """fn applied to tensors made from `arrays` (each requiring grad), then backward
    with `upstream` as the output's gradient (a seeded standard-normal array by
    default). Returns (output, [gradient of each array], upstream) as NumPy arrays."""
    inputs = [pyjit.tensor(array, requires_grad=True) for array in arrays]
    output = fn(*inputs)
    if upstream is None:
        upstream = np.random.default_rng(seed).standard_normal(output.shape)
    output.backward(pyjit.tensor(np.asarray(upstream, dtype=output.dtype)))
    return output.numpy(), [None if item.grad is None else item.grad.numpy() for item in inputs], upstream


@pytest.fixture
def run_backward():
    """`forward_backward` (conftest modules cannot be imported in importlib mode)."""
    return forward_backward
