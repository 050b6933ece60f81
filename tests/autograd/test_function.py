"""pyjit/autograd/function.py: custom autograd Functions, in both of PyTorch's styles."""

import numpy as np
import pytest

import pyjit
from pyjit import autograd
from pyjit.autograd import Function


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


class CosCos(Function):
    """SPEC section 5, example 2: cos(cos(x)) saving only x; backward recomputes cos(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.cos().cos()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inner = x.cos()
        return grad * -inner.sin() * -x.sin()


class Exp(Function):
    """The new style: forward without ctx, setup_context, an output saved."""

    @staticmethod
    def forward(x):
        return np.exp(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


def test_the_spec_example_saves_one_tensor_and_matches_the_builtin_gradient():
    x = leaf(np.linspace(-2, 2, 7))
    y = CosCos.apply(x)
    assert y.grad_fn.name() == "CosCosBackward" and y.grad_fn.kind == "function"
    assert len(y.grad_fn.saved_tensors) == 1 and y.grad_fn.saved_tensors[0] is x
    assert y.grad_fn.saved_sizes == ((7,),)
    np.testing.assert_allclose(y.numpy(), np.cos(np.cos(x.numpy())))
    (custom,) = autograd.grad(y.sum(), x)
    (builtin,) = autograd.grad(x.cos().cos().sum(), x)
    np.testing.assert_allclose(custom.numpy(), builtin.numpy(), rtol=1e-15)


def test_the_new_style_with_setup_context():
    x = leaf([0.0, 1.0])
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and y.grad_fn.saved_tensors[0] is y
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.0, 1.0]))


def test_a_function_chains_with_builtin_ops_and_exposes_its_edges():
    x = leaf([0.5])
    h = x * 3
    y = CosCos.apply(h)
    assert y.grad_fn.next_functions == ((h.grad_fn, 0),)
    (y + x).sum().backward()
    expected = np.sin(np.cos(1.5)) * -np.sin(1.5) * 3 * -1 + 1
    np.testing.assert_allclose(x.grad.numpy(), [expected])


class ScaleBy(Function):
    """Two tensor inputs and a constant; two outputs, one of them non-differentiable."""

    @staticmethod
    def forward(ctx, x, factor, scale):
        ctx.scale = scale
        ctx.save_for_backward(x, None, factor)
        seen.append(ctx.needs_input_grad)
        result, mask = x * factor * scale, x > 0
        ctx.mark_non_differentiable(mask)
        return result, mask

    @staticmethod
    def backward(ctx, grad, mask_grad):
        x, nothing, factor = ctx.saved_tensors
        assert nothing is None and mask_grad.tolist() == [0.0, 0.0]  # materialized
        return grad * factor * ctx.scale, (grad * x * ctx.scale).sum(), None


seen: list = []


def test_constants_several_outputs_and_non_differentiable_ones():
    x, factor = leaf([1.0, -2.0]), leaf(3.0)
    seen.clear()
    result, mask = ScaleBy.apply(x, factor, 2.0)
    assert seen == [(True, True, False)]
    assert result.requires_grad and not mask.requires_grad and mask.tolist() == [True, False]
    result.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0] and factor.grad.item() == -2.0


def test_no_node_without_an_input_that_requires_grad_or_under_no_grad():
    assert CosCos.apply(pyjit.tensor([1.0])).grad_fn is None
    with pyjit.no_grad():
        assert CosCos.apply(leaf([1.0])).grad_fn is None


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_an_input_returned_as_it_is_becomes_a_new_tensor():
    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward" and y.array is x.array
    y.sum().backward()
    assert x.grad.tolist() == [2.0]


class BroadcastGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x.sum()

    @staticmethod
    def backward(ctx, grad):
        return pyjit.ones(3, 2, dtype=np.float32) * grad  # broadcast, and float32


def test_a_gradient_that_broadcasts_to_the_input_is_summed_to_it_and_cast():
    x = leaf([1.0, 2.0])
    BroadcastGrad.apply(x).backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.dtype == np.float64


class Wrong(Function):
    returned: tuple = ()

    @staticmethod
    def forward(ctx, x, constant):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        return Wrong.returned


@pytest.mark.parametrize(("returned", "message"), [
    ((None,), "incorrect number of gradients"),
    ((None, None, 1.0), "incorrect number of gradients"),
    ((None, np.ones(1)), "was not a Tensor"),
    ((np.ones(3), None), "invalid gradient at index 0"),
])
def test_backward_returning_the_wrong_gradients_is_an_error(returned, message):
    Wrong.returned = returned
    with pytest.raises(RuntimeError, match=message):
        Wrong.apply(leaf([1.0, 2.0]), 5).sum().backward()


def test_extra_trailing_nones_are_allowed():
    Wrong.returned = (np.ones(2), None, None)
    x = leaf([1.0, 2.0])
    Wrong.apply(x, 5).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_saved_tensors_check_versions_and_are_freed_after_backward():
    x = leaf([1.0])
    h = x * 1
    y = CosCos.apply(h)
    with pyjit.no_grad():
        h += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    z = CosCos.apply(x)
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.grad_fn.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()


class Lazy(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 1, x * 2

    @staticmethod
    def backward(ctx, first, second):
        assert second is None
        return first


def test_without_materialized_grads_missing_gradients_are_none():
    x = leaf([1.0])
    first, _ = Lazy.apply(x)
    first.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_unimplemented_pieces_say_so():
    class Incomplete(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)

    with pytest.raises(NotImplementedError, match="mark_dirty"):
        Incomplete.apply(leaf([1.0]))
    with pytest.raises(NotImplementedError):
        Function.apply(leaf([1.0]))
    with pytest.raises(TypeError, match="save_for_backward"):
        autograd.FunctionCtx(Function, ()).save_for_backward(np.ones(1))
