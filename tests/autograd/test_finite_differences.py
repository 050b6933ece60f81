"""pyjit/autograd/finite_differences.py: gradcheck compares the tape's gradients with
central finite differences in float64 and reports where they differ."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd import GradcheckError, gradcheck
from pyjit.autograd.finite_differences import numerical_jacobian, numerical_vjp


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


class HalfSquare(pyjit.autograd.Function):
    """x * x with a backward off by a factor of two: what gradcheck must catch."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


def test_numerical_jacobian_of_a_linear_map_is_its_matrix():
    matrix = np.arange(6.0).reshape(2, 3)
    (jacobian,) = numerical_jacobian(lambda x: matrix @ x, [np.ones(3)], 0)
    np.testing.assert_allclose(jacobian, matrix.T, atol=1e-8)  # a row per input element
    np.testing.assert_allclose(numerical_vjp(lambda x: matrix @ x, [np.ones(3)], 0, [np.array([1.0, -1.0])]),
                               [-3.0, -3.0, -3.0], atol=1e-8)


def test_correct_gradients_pass_with_several_inputs_and_outputs():
    x, w = leaf(np.linspace(-1, 1, 6).reshape(2, 3)), leaf(np.linspace(0, 2, 12).reshape(3, 4))

    def f(a, b, scale):
        return (a @ b).tanh() * scale, a.sum(axis=0), pyjit.tensor(np.arange(3))  # an integer output is left out

    assert gradcheck(f, (x, w, 2.0))
    assert gradcheck(f, (x, w, 2.0), fast_mode=True)
    assert gradcheck(lambda a: a.exp(), x)  # a lone tensor is one input


def test_a_wrong_backward_is_reported_with_its_input_and_worst_entry():
    x = leaf([0.5, -1.0, 3.0])
    with pytest.raises(GradcheckError) as raised:
        gradcheck(lambda a, b: (a + b, HalfSquare.apply(b)), (leaf([1.0, 1.0, 1.0]), x))
    message = str(raised.value)
    assert "the Jacobian of output 1 with respect to input 1 differs" in message
    assert "worst at input element (2,), output element (2,): numerical 6, analytical 3" in message
    assert "3 of 9 entries differ" in message


@pytest.mark.parametrize("fast_mode", [False, True])
def test_without_raise_exception_a_mismatch_returns_false(fast_mode):
    assert gradcheck(HalfSquare.apply, leaf([1.0, 2.0]), raise_exception=False, fast_mode=fast_mode) is False


def test_a_gradient_the_tape_drops_is_a_mismatch():
    class Detached(pyjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return None

    with pytest.raises(GradcheckError, match="numerical 3, analytical 0"):
        gradcheck(Detached.apply, leaf([1.0]))


def test_inputs_must_be_float64_and_some_must_require_grad():
    with pytest.raises(ValueError, match="input 0 requires grad and is float32"):
        gradcheck(lambda a: a * 2, pyjit.tensor(np.ones(2, np.float32), requires_grad=True))
    with pytest.raises(ValueError, match="at least one input tensor that requires grad"):
        gradcheck(lambda a: a * 2, pyjit.tensor(np.ones(2)))
    with pytest.raises(ValueError, match="floating tensor"):
        gradcheck(lambda a: a > 0, leaf([1.0]))


def test_the_inputs_are_left_as_they_were():
    x = leaf([1.0, 2.0])
    gradcheck(lambda a: a * a, x)
    assert x.tolist() == [1.0, 2.0] and x.grad is None
