"""pyjit._C.erf: a NumPy ufunc with the C library's erf."""

import math

import numpy as np
import pytest

from pyjit import _C


def test_erf_float64_equals_math_erf():
    x = np.random.default_rng(0).uniform(-6, 6, 1000)
    np.testing.assert_array_equal(_C.erf(x), [math.erf(value) for value in x])


@pytest.mark.parametrize(("dtype", "result"), [("float16", "float16"), ("float32", "float32"),
                                               ("float64", "float64"), ("longdouble", "longdouble"),
                                               ("int32", "float64"), ("bool", "float16")])
def test_erf_keeps_numpy_dtype_rules(dtype, result):
    assert _C.erf(np.ones(3, dtype)).dtype == np.dtype(result)
    assert np.sin(np.ones(3, dtype)).dtype == np.dtype(result)


def test_erf_float32_is_close_to_float64():
    x = np.linspace(-4, 4, 4001, dtype=np.float32)
    np.testing.assert_allclose(_C.erf(x), _C.erf(x.astype(np.float64)), rtol=2e-7, atol=1e-7)


def test_erf_special_values():
    result = _C.erf(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0]))
    np.testing.assert_array_equal(result, [np.nan, 1.0, -1.0, 0.0, -0.0])
    assert np.signbit(result[-1])


def test_erf_is_a_full_ufunc():
    out = np.empty((2, 3))
    x = np.arange(6.0).reshape(3, 2).T  # non-contiguous
    assert _C.erf(x, out=out) is out
    np.testing.assert_array_equal(out, [[math.erf(v) for v in row] for row in x])
    np.testing.assert_array_equal(_C.erf(x, where=x > 2, out=np.zeros((2, 3)))[x <= 2], 0.0)


def test_erf_refuses_complex_like_numpy_refuses_unsupported_types():
    with pytest.raises(TypeError):
        _C.erf(np.ones(2, np.complex128))
