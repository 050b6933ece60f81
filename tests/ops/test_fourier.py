"""numpy.fft's transforms (pyjit/ops/fourier.py): the VJPs of rows with complex inputs or
results, which the generated tests leave out, against finite differences in the real
and imaginary parts (NOTE(fft-ops)); and fft2 equal to NumPy's exactly."""

import numpy as np
import pytest
from op_samples.finite_differences import complex_numerical_vjp

from pyjit.ops import REGISTRY

RNG = np.random.default_rng(11)
REAL = RNG.uniform(-1, 1, (3, 6))
COMPLEX = RNG.uniform(-1, 1, (3, 5)) + 1j * RNG.uniform(-1, 1, (3, 5))
CALLS = [(name, x, options) for name in ("fft", "ifft") for x in (REAL, COMPLEX)
         for options in ({}, {"n": 8}, {"n": 3, "axis": 0}, {"norm": "ortho"}, {"norm": "forward", "axis": 0})]
CALLS += [("rfft", REAL, options) for options in ({}, {"n": 9}, {"n": 4}, {"axis": 0, "norm": "ortho"})]
CALLS += [("irfft", COMPLEX, options) for options in ({}, {"n": 9}, {"n": 6}, {"n": 3}, {"axis": 0, "norm": "forward"})]


@pytest.mark.parametrize(("name", "x", "options"), CALLS, ids=[f"{name}-{index}" for index, (name, _, _) in
                                                               enumerate(CALLS)])
def test_vjp_matches_finite_differences_in_real_and_imaginary_parts(name, x, options):
    entry = REGISTRY[name]
    out = entry(x, **options)
    rng = np.random.default_rng(5)
    cotangent = rng.uniform(-1, 1, out.shape) + (1j * rng.uniform(-1, 1, out.shape) if out.dtype.kind == "c" else 0)
    (analytic,) = entry.vjp(cotangent, out, x, **options)
    numeric = complex_numerical_vjp(lambda value: entry(value, **options), [x], 0, cotangent)
    assert analytic.dtype == x.dtype
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


def test_fft2_is_numpy_fft2_exactly():
    x = RNG.uniform(-1, 1, (4, 6)) + 1j * RNG.uniform(-1, 1, (4, 6))
    np.testing.assert_array_equal(REGISTRY["fft2"](x, s=(5, 4), norm="ortho"), np.fft.fft2(x, s=(5, 4), norm="ortho"))
