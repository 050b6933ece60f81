"""pyjit/autograd/compiled_autograd/runtime.py: backward() and autograd.grad through
compiled autograd give the tape's gradients, hooks, errors and `.grad` states."""

import functools
import gc
import weakref

import numpy as np
import pytest

import pyjit
from pyjit.autograd.finite_differences import numerical_vjp
from pyjit.autograd.nodes import FREED_MESSAGE
from pyjit.utils import counters


def identity(gm):
    return gm


def wrapping(gm):
    """A compiler that returns a new callable (as a real backend does), not the module itself."""
    return lambda *args: gm(*args)


COMPILERS = [identity, wrapping]


def leaves(*shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [pyjit.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True) for shape in shapes]


def grads(tensors):
    return [None if tensor.grad is None else tensor.grad.numpy().copy() for tensor in tensors]


def both(step, make, compiler=identity):
    """`step(*tensors)` on the tape and under compiled autograd, each on fresh tensors: their `.grad`s."""
    tape_tensors = make()
    step(*tape_tensors)
    compiled_tensors = make()
    with pyjit.compiled_autograd.enable(compiler):
        step(*compiled_tensors)
    assert counters["compiled_autograd"]["captures"] >= 1  # the backward was compiled, not run on the tape
    return grads(tape_tensors), grads(compiled_tensors)


def assert_same(expected, actual):
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


MODELS = {
    "mlp": (lambda x, w, b: np.tanh(x @ w + b).sum(), ((4, 3), (3, 5), (5,))),
    "broadcast_div": (lambda x, y: (x / (y * y + 1)).mean(), ((4, 3), (3,))),
    "indexing": (lambda x, y: (x[1:, ::2] * y[:, :2].T.sum()).sum(), ((4, 4), (3, 2))),
    "reused": (lambda x, y: ((x * y).exp() + x.sin() * x).sum(), ((5,), (5,))),
}


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("model", MODELS)
def test_gradients_are_the_tapes(model, compiler):
    fn, shapes = MODELS[model]
    tape, compiled = both(lambda *ts: fn(*ts).backward(), lambda: leaves(*shapes), compiler)
    assert_same(tape, compiled)
    assert counters["compiled_autograd"]["compiles"] == 1


def test_gradients_match_finite_differences():
    fn, shapes = MODELS["mlp"]
    tensors = leaves(*shapes)
    with pyjit.compiled_autograd.enable(identity):
        fn(*tensors).backward()
    arrays = [tensor.numpy().copy() for tensor in tensors]
    function = lambda *a: (np.asarray(fn(*map(pyjit.tensor, a)).numpy()),)  # noqa: E731
    for index, tensor in enumerate(tensors):
        expected = numerical_vjp(function, arrays, index, [np.ones(())])
        np.testing.assert_allclose(tensor.grad.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_grad_accumulates_into_existing_grad_in_place():
    def step(x, y):
        (x * y).sum().backward()
        first = x.grad
        (x * y * 3).sum().backward()
        assert x.grad is first  # added in place, as the tape does
    tape, compiled = both(step, lambda: leaves((3,), (3,)))
    assert_same(tape, compiled)


def test_leaf_dtype_is_kept_when_the_gradient_is_wider():
    def step(x, y):
        (x * y.astype(np.float64)).sum().backward()
    tape, compiled = both(step, lambda: leaves((3,), (3,), dtype=np.float32))
    assert_same(tape, compiled)


def test_a_gradient_reaching_two_leaves_is_not_shared():
    x, y = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity):
        (x + y).sum().backward()
    x.grad.numpy()[0] = 100.0
    assert y.grad.numpy()[0] == 1.0


def test_retain_graph_and_the_second_backward_error():
    x, y = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity):
        loss = (x * y).exp().sum()
        loss.backward(retain_graph=True)
        loss.backward()
        before = grads([x, y])
        with pytest.raises(RuntimeError) as error:
            loss.backward()
    assert str(error.value) == FREED_MESSAGE
    assert_same(before, grads([x, y]))
    tape_x, tape_y = leaves((3,), (3,))
    tape_loss = (tape_x * tape_y).exp().sum()
    tape_loss.backward(retain_graph=True)
    tape_loss.backward()
    assert_same(grads([tape_x, tape_y]), before)


def test_multiple_roots_with_their_gradients():
    def step(x, y):
        pyjit.autograd.backward([x * y, (x + y).sum()], [pyjit.tensor(np.arange(3.0)), None])
    tape, compiled = both(step, lambda: leaves((3,), (3,)))
    assert_same(tape, compiled)


def test_grad_with_inputs_none_for_unused_and_no_grad_written():
    def compute(x, y, z):
        hidden = x * y
        return pyjit.autograd.grad((hidden * hidden).sum(), [hidden, x, z], allow_unused=True)

    tape = compute(*leaves((3,), (3,), (2,)))
    tensors = leaves((3,), (3,), (2,))
    with pyjit.compiled_autograd.enable(identity):
        compiled = compute(*tensors)
    assert compiled[2] is None
    assert_same([value.numpy() for value in tape[:2]], [value.numpy() for value in compiled[:2]])
    assert all(tensor.grad is None for tensor in tensors)


def test_grad_of_an_unused_input_without_allow_unused_raises():
    x, y = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity), pytest.raises(RuntimeError, match="allow_unused=True"):
        pyjit.autograd.grad((x * 2).sum(), [x, y])


def test_hooks_returning_none_and_new_gradients_and_retain_grad():
    calls = []

    def step(x, y):
        x.register_hook(lambda grad: grad + 10)
        y.register_hook(lambda grad: calls.append(grad.numpy().copy()))
        hidden = x * y
        hidden.retain_grad()
        hidden.register_hook(lambda grad: grad * 2)
        (hidden * hidden).sum().backward()
        return hidden

    tape_tensors = leaves((3,), (3,))
    tape_hidden = step(*tape_tensors)
    tensors = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity):
        hidden = step(*tensors)
    assert_same(grads(tape_tensors), grads(tensors))
    np.testing.assert_allclose(hidden.grad.numpy(), tape_hidden.grad.numpy())
    assert len(calls) == 2  # once per backward: tracing runs no hook
    np.testing.assert_allclose(calls[0], calls[1])


def test_a_new_hook_each_step_reuses_the_graph():
    x, y = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity):
        for scale in (1.0, 2.0, 3.0):
            handle = x.register_hook(lambda grad, scale=scale: grad * scale)
            x.grad = y.grad = None
            (x * y).sum().backward()
            handle.remove()
            np.testing.assert_allclose(x.grad.numpy(), y.numpy() * scale)
    assert counters["compiled_autograd"]["compiles"] == 1


@pytest.mark.parametrize("hook", [lambda grad: grad.sum(), lambda grad: grad[:2]])
def test_a_hook_changing_the_shape_raises_the_tapes_error_and_writes_nothing(hook):
    def step(x, y):
        (x * y).sum().backward()
        y.register_hook(hook)
        (x * y).sum().backward()

    tape_tensors = leaves((3,), (3,))
    with pytest.raises(RuntimeError) as tape_error:
        step(*tape_tensors)
    tensors = leaves((3,), (3,))
    with pytest.raises(RuntimeError) as error, pyjit.compiled_autograd.enable(identity):
        step(*tensors)
    assert str(error.value) == str(tape_error.value)
    first = leaves((3,), (3,))
    (first[0] * first[1]).sum().backward()
    assert_same(grads(first), grads(tensors))  # only the first backward's gradients: nothing half-written


def test_a_hook_returning_a_wrong_type_raises_the_tapes_exception_type():
    def step(x, y):
        y.register_hook(lambda grad: "not a gradient")
        (x * y).sum().backward()

    with pytest.raises(Exception) as tape_error:
        step(*leaves((3,), (3,)))
    tensors = leaves((3,), (3,))
    with pytest.raises(type(tape_error.value)), pyjit.compiled_autograd.enable(identity):
        step(*tensors)
    assert grads(tensors) == [None, None]


def test_a_compiler_that_raises_leaves_grad_as_it_was():
    def failing(gm):
        raise ValueError("no compiler today")

    x, y = leaves((3,), (3,))
    (x * y).sum().backward()
    before = grads([x, y])
    with pytest.raises(ValueError, match="no compiler today"), pyjit.compiled_autograd.enable(failing):
        (x * y).sum().backward()
    assert_same(before, grads([x, y]))


def test_a_compiler_returning_a_non_callable_is_a_type_error_naming_compiler_fn():
    x, y = leaves((3,), (3,))
    with pytest.raises(TypeError, match="compiler_fn"), pyjit.compiled_autograd.enable(lambda gm: 42):
        (x * y).sum().backward()
    assert grads([x, y]) == [None, None]


def test_enable_refuses_a_non_callable_compiler():
    with pytest.raises(TypeError, match="compiler_fn"):
        with pyjit.compiled_autograd.enable("inductor"):
            pass


def test_enable_nests_and_none_turns_it_off():
    x, y = leaves((3,), (3,))
    with pyjit.compiled_autograd.enable(identity):
        assert pyjit.compiled_autograd.active_compiler() is identity
        with pyjit.compiled_autograd.enable(None):
            assert pyjit.compiled_autograd.active_compiler() is None
            (x * y).sum().backward()
        assert pyjit.compiled_autograd.active_compiler() is identity
    assert pyjit.compiled_autograd.active_compiler() is None
    assert counters["compiled_autograd"]["captures"] == 0


def test_double_backward_is_the_tapes_error():
    (x,) = leaves((3,))
    with pyjit.compiled_autograd.enable(identity), pytest.raises(NotImplementedError, match="create_graph"):
        (x * x).sum().backward(create_graph=True)


def test_backward_inside_make_fx_records_into_that_trace():
    def f(x):
        (grad,) = pyjit.autograd.grad((x * x).sum(), x)
        return grad

    with pyjit.compiled_autograd.enable(identity):
        gm = pyjit.make_fx(f)(pyjit.tensor(np.arange(3.0), requires_grad=True))
    assert counters["compiled_autograd"]["captures"] == 0
    np.testing.assert_allclose(gm(np.arange(3.0, 6.0)), 2 * np.arange(3.0, 6.0))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_pyjit_compile_as_compiler(backend):
    fn, shapes = MODELS["mlp"]
    tape, compiled = both(lambda *ts: fn(*ts).backward(), lambda: leaves(*shapes, dtype=np.float32),
                          lambda gm: pyjit.compile(gm.forward, backend=backend))
    for want, got in zip(tape, compiled):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_training_with_an_optimizer_matches_the_tape():
    def train(compiler):
        pyjit.manual_seed(0)
        model = pyjit.nn.Linear(10, 10)
        optimizer = pyjit.optim.SGD(model.parameters(), lr=0.1)
        x = pyjit.tensor(np.linspace(-1, 1, 40).reshape(4, 10))
        for _ in range(3):
            optimizer.zero_grad()
            loss = model(x).sum()
            with pyjit.compiled_autograd.enable(compiler):
                loss.backward()
            optimizer.step()
        return [parameter.numpy().copy() for parameter in model.parameters()]

    assert_same(train(None), train(identity))
    assert counters["compiled_autograd"]["captures"] >= 1


def test_node_post_hooks_see_and_replace_what_the_node_sends_on():
    seen = []

    def step(x, y):
        product = x * y
        product.grad_fn.register_hook(
            lambda grad_inputs, grad_outputs: seen.append(len(grad_outputs)) or (grad_inputs[0] * 2, grad_inputs[1]))
        (product * product).sum().backward()

    tape, compiled = both(step, lambda: leaves((3,), (3,)))
    assert_same(tape, compiled)
    assert seen == [1, 1]


class OnlyTheFirst(pyjit.autograd.Function):
    """x * y, whose backward gives y no gradient."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


@pytest.mark.parametrize("product, hook", [
    (lambda x, y: x * y, lambda grad_inputs, grad_outputs: (grad_inputs[0], None)),  # takes y's gradient away
    (OnlyTheFirst.apply, lambda grad_inputs, grad_outputs: (grad_inputs[0] * 3, np.ones(3))),  # gives y one
], ids=["takes", "gives"])
def test_a_post_hook_changing_which_gradients_exist_gives_the_tapes_grads(product, hook):
    def step(x, y):
        result = product(x, y)
        result.grad_fn.register_hook(hook)
        result.sum().backward()

    for _ in range(3):
        tape, compiled = both(step, lambda: leaves((3,), (3,)))
        assert_same(tape, compiled)
    # The first backward learnt which gradients the hook gives; the rest reuse one graph traced for it.
    assert counters["compiled_autograd"]["compiles"] == 2


def test_a_post_hook_changing_which_gradients_exist_writes_nothing_when_it_raises_later():
    x, y = leaves((3,), (3,))
    product = x * y
    product.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0], None))
    x.register_hook(lambda grad: grad[:1])
    with pytest.raises(RuntimeError, match="changed the size"), pyjit.compiled_autograd.enable(identity):
        product.sum().backward()
    assert grads([x, y]) == [None, None]


def returning(make_outputs):
    """A compiler whose callable runs the graph, then returns `make_outputs(its outputs)` instead."""
    return lambda gm: lambda *args: make_outputs(gm(*args))


@pytest.mark.parametrize("outputs, error, message", [
    (lambda out: (out[0], np.zeros(5)), RuntimeError, "output 1 .* shape \\(5,\\).* shape \\(3,\\)"),
    (lambda out: (out[0], out[1].astype(np.float32)), RuntimeError, "output 1 .* float32 .* float64"),
    (lambda out: ("a", "b"), TypeError, "output 0 .* a str \\('a'\\), not a gradient: .* float64 array of shape"),
    (lambda out: (out[0], out[1].tolist()), TypeError, "output 1 .* a list"),
])
def test_a_callable_returning_wrong_gradients_is_refused_before_any_grad_is_written(outputs, error, message):
    x, y = leaves((3,), (3,))
    (x * y).sum().backward()
    before = grads([x, y])
    with pytest.raises(error, match=message), pyjit.compiled_autograd.enable(returning(outputs)):
        (x * y).sum().backward()
    assert_same(before, grads([x, y]))
    (x * y).sum().backward()  # the tape still works on these leaves
    assert_same([2 * want for want in before], grads([x, y]))


def test_grad_refuses_a_callable_returning_a_value_where_the_graph_returns_none():
    x, y = leaves((3,), (3,))
    with pytest.raises(TypeError, match="output 1 .* where the graph returns None"), \
            pyjit.compiled_autograd.enable(returning(lambda out: (out[0], np.zeros(3)))):
        pyjit.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)


def test_equal_partial_compilers_share_one_cache():
    """Each pyjit.compile makes its backward compiler as a partial of its settings: equal
    settings are one cache, as torch's compiled autograd has one."""
    def scaled(gm, scale):
        return gm

    x, y = leaves((3,), (3,))
    for compiler in (functools.partial(scaled, scale=1), functools.partial(scaled, scale=1),
                     functools.partial(scaled, scale=2)):
        x.grad = y.grad = None  # the same structure each time
        with pyjit.compiled_autograd.enable(compiler):
            (x * y).sum().backward()
    assert counters["compiled_autograd"]["compiles"] == 2  # the second partial reused the first's graph


def test_a_compiler_dropped_after_its_block_takes_its_cache_with_it():
    x, y = leaves((3,), (3,))
    compiler = lambda gm: gm  # noqa: E731 - a compiler made for one block, as users write it
    alive = weakref.ref(compiler)
    with pyjit.compiled_autograd.enable(compiler):
        (x * y).sum().backward()
    del compiler
    gc.collect()
    assert alive() is None


def test_a_failing_hook_leaves_retained_grads_as_they_were():
    x, y = leaves((3,), (3,))
    hidden = x * y
    hidden.retain_grad()
    x.register_hook(lambda grad: grad[:1])
    with pytest.raises(RuntimeError, match="changed the size"), pyjit.compiled_autograd.enable(identity):
        (hidden * hidden).sum().backward()
    assert hidden.grad is None and grads([x, y]) == [None, None]
