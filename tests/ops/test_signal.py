"""convolve and correlate (pyjit/ops/signal.py): the VJPs for complex signals, which the
generated tests leave out, against finite differences in the real and imaginary parts
(NOTE(convolution-gradients)), in every mode and with either operand the longer."""

import numpy as np
import pytest
from op_samples.finite_differences import complex_numerical_vjp

from pyjit.ops import REGISTRY

RNG = np.random.default_rng(8)


def signal(length, complex_values=True):
    values = RNG.uniform(-1, 1, length)
    return values + 1j * RNG.uniform(-1, 1, length) if complex_values else values


CALLS = [(name, lengths, mode, kinds) for name in ("convolve", "correlate")
         for lengths in ((6, 3), (3, 6), (4, 7), (5, 4)) for mode in ("full", "same", "valid")
         for kinds in ((True, True), (False, True))]


@pytest.mark.parametrize(("name", "lengths", "mode", "kinds"), CALLS)
def test_vjp_matches_finite_differences_for_complex_signals(name, lengths, mode, kinds):
    entry = REGISTRY[name]
    args = [signal(length, kind) for length, kind in zip(lengths, kinds)]
    out = entry(*args, mode)
    cotangent = RNG.uniform(-1, 1, out.shape) + 1j * RNG.uniform(-1, 1, out.shape)
    analytic = entry.vjp(cotangent, out, *args, mode)
    for index in range(2):
        numeric = complex_numerical_vjp(lambda a, v: entry(a, v, mode), args, index, cotangent)
        assert analytic[index].dtype == args[index].dtype
        np.testing.assert_allclose(analytic[index], numeric, rtol=1e-6, atol=1e-8, err_msg=f"argument {index}")
