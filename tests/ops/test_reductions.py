"""Derivatives of the reductions at the points the generated tests avoid: prod at zeros
(where dividing the product by a factor fails) and max/min at ties."""

import numpy as np
import pytest

from pyjit import ops

WITH_ZEROS = np.array([[0.0, 2.0, 3.0, 0.5],
                       [0.0, 0.0, 5.0, 1.5],
                       [1.0, 2.0, 3.0, -2.0]])


def central_difference(function, x, cotangent, eps=1e-3):
    """Exact up to rounding for prod, which is linear in each factor."""
    gradient = np.zeros_like(x)
    for flat in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[flat] += eps
        down.flat[flat] -= eps
        gradient.flat[flat] = np.sum(cotangent * (function(up) - function(down))) / (2 * eps)
    return gradient


@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), (0, True), ((0, 1), True), (-1, True)])
def test_prod_derivative_is_exact_at_zeros(axis, keepdims):
    out = ops.prod(WITH_ZEROS, axis=axis, keepdims=keepdims)
    cotangent = np.random.default_rng(0).uniform(-1, 1, np.shape(out))
    (gradient,) = ops.prod.vjp(cotangent, out, WITH_ZEROS, axis=axis, keepdims=keepdims)
    expected = central_difference(lambda x: np.prod(x, axis=axis, keepdims=keepdims), WITH_ZEROS, cotangent)
    np.testing.assert_allclose(gradient, expected, rtol=1e-12, atol=1e-12)


def test_prod_derivative_with_one_zero_is_the_product_of_the_others():
    x = np.array([2.0, 0.0, 3.0])
    (gradient,) = ops.prod.vjp(np.float64(1.0), ops.prod(x), x)
    np.testing.assert_array_equal(gradient, [0.0, 6.0, 0.0])


def test_prod_of_integers_has_no_derivative():
    x = np.arange(1, 4)
    assert ops.prod.vjp(np.int64(1), ops.prod(x), x) == (None,)


@pytest.mark.parametrize(("name", "x", "expected"), [
    ("max", [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]),
    ("min", [[1.0, 3.0, 1.0], [-4.0, 2.0, 2.0]], [[0.5, 0.0, 0.5], [1.0, 0.0, 0.0]]),
])
def test_max_and_min_split_the_gradient_among_ties(name, x, expected):
    x = np.array(x)
    entry = ops.REGISTRY[name]
    (gradient,) = entry.vjp(np.ones(2), entry(x, axis=1), x, axis=1)
    np.testing.assert_allclose(gradient, expected, rtol=1e-15)


def test_max_of_nan_gives_no_gradient_and_no_warning():
    x = np.array([1.0, np.nan, 2.0])
    (gradient,) = ops.max.vjp(np.float64(1.0), ops.max(x), x)
    np.testing.assert_array_equal(gradient, [0.0, 0.0, 0.0])


def test_max_derivative_keeps_float32():
    x = np.array([[1.0, 4.0], [4.0, 4.0]], np.float32)
    (gradient,) = ops.max.vjp(np.float32(1.0), ops.max(x), x)
    assert gradient.dtype == np.float32
    np.testing.assert_allclose(gradient, [[0.0, 1 / 3], [1 / 3, 1 / 3]], rtol=1e-6)
