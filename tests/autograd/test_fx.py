"""pyjit/autograd/fx.py: make_fx traces functions on tensors, their backward included,
into flat graphs of registry ops, in real, fake and symbolic modes."""

import numpy as np
import pytest

import pyjit
from pyjit.exc import DataDependentError
from pyjit.graph import SymInt

MODES = ("real", "fake", "symbolic")


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def cos_cos_with_grad(x):
    y = x.cos().cos()
    (grad,) = pyjit.autograd.grad(y.sum(), x)
    return y, grad


def targets(module) -> list[str]:
    return [node.target.name for node in module.graph.calls()]


@pytest.mark.parametrize("mode", MODES)
def test_a_function_with_autograd_grad_gives_its_joint_graph(mode):
    x = leaf([0.1, 0.5, 1.0, 2.0])
    module = pyjit.make_fx(cos_cos_with_grad, tracing_mode=mode)(x)
    assert targets(module)[:3] == ["cos", "cos", "sum"]  # the forward, then its backward
    assert targets(module).count("sin") == 2 and "multiply" in targets(module)
    values = np.array([0.3, -1.2, 2.5, 0.0])
    y, grad = module(values)
    np.testing.assert_allclose(y, np.cos(np.cos(values)))
    np.testing.assert_allclose(grad, np.sin(np.cos(values)) * np.sin(values))


def test_backward_and_the_grad_it_accumulates_are_traced():
    def step(x, w):
        loss = ((x @ w).tanh() ** 2).sum()
        loss.backward()
        return loss, w.grad

    x, w = pyjit.tensor(np.ones((2, 3))), leaf(np.arange(12.0).reshape(3, 4) / 10)
    module = pyjit.make_fx(step)(x, w)
    assert [node.name for node in module.graph.placeholders] == ["x", "w"]
    x2, w2 = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0, 1, 12).reshape(3, 4)
    tape_w = leaf(w2)
    expected = ((pyjit.tensor(x2) @ tape_w).tanh() ** 2).sum()
    expected.backward()
    loss, grad = module(x2, w2)
    np.testing.assert_allclose(loss, expected.item())
    np.testing.assert_allclose(grad, tape_w.grad.numpy())


def test_the_printed_code_is_runnable_python_on_its_own():
    module = pyjit.make_fx(cos_cos_with_grad)(leaf([1.0, 2.0]))
    namespace = {}
    exec(compile(module.code, "<make_fx>", "exec"), namespace)
    y, grad = namespace["forward"](np.array([0.5, 1.5]))
    np.testing.assert_allclose(grad, np.sin(np.cos([0.5, 1.5])) * np.sin([0.5, 1.5]))


def test_nodes_carry_the_users_lines():
    module = pyjit.make_fx(cos_cos_with_grad)(leaf([1.0, 2.0]))
    lines = {node.loc.lineno for node in module.graph.calls()}
    first = cos_cos_with_grad.__code__.co_firstlineno
    assert lines == {first + 1, first + 2}
    assert all(node.loc.filename == __file__ for node in module.graph.calls())


def test_fake_mode_allocates_nothing_and_computes_nothing():
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (100_000, 100_000), (0, 0))
    module = pyjit.make_fx(lambda a, b: (a @ b).sum(), tracing_mode="fake")(pyjit.Tensor(huge), pyjit.Tensor(huge))
    (matmul, total) = module.graph.calls()
    assert str(matmul.meta) == "f32[100000, 100000]" and str(total.meta) == "f32[]"


def test_symbolic_mode_gives_sizes_as_symbols():
    def f(x, y):
        return (x.reshape(-1) * 2).sum() + y.mean(axis=0)

    module = pyjit.make_fx(f, tracing_mode="symbolic")(pyjit.ones((3, 4)), pyjit.ones((5, 2)))
    placeholders = module.graph.placeholders
    assert all(isinstance(size, SymInt) for node in placeholders for size in node.meta.shape)
    assert "s0 = x.shape[0]" in module.code
    reshape = next(node for node in module.graph.calls() if node.target.name == "reshape")
    assert isinstance(reshape.meta.shape[0], SymInt)  # s0*s1
    x, y = np.arange(6.0).reshape(2, 3), np.ones((7, 2))
    np.testing.assert_allclose(module(x, y), (x * 2).sum() + y.mean(axis=0))


def test_sizes_0_and_1_stay_static_in_symbolic_mode():
    module = pyjit.make_fx(lambda x: x + 1, tracing_mode="symbolic")(pyjit.ones((1, 3)))
    (size, symbol) = module.graph.placeholders[0].meta.shape
    assert size == 1 and isinstance(symbol, SymInt)


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
@pytest.mark.parametrize("decision", [bool, float, pyjit.Tensor.item])
def test_a_decision_on_a_value_without_data_names_the_line_and_real_mode(mode, decision):
    def f(x):
        total = x.sum()
        return x * 2 if decision(total) else x  # the data-dependent line

    with pytest.raises(DataDependentError) as raised:
        pyjit.make_fx(f, tracing_mode=mode)(leaf([1.0, 2.0]))
    line = f.__code__.co_firstlineno + 2
    assert f"{__file__}:{line}" in str(raised.value)
    assert "the data-dependent line" in str(raised.value)
    assert 'tracing_mode="real"' in str(raised.value)


def test_real_mode_takes_the_branch_of_its_inputs():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    module = pyjit.make_fx(f)(leaf([1.0, 2.0]))
    assert targets(module) == ["multiply"]  # the comparison only decided the branch
    np.testing.assert_allclose(module(np.array([-5.0, 1.0])), [-10.0, 2.0])
    with pytest.raises(ValueError, match=r"input x of graph forward has shape \(3,\); .* traced for f64\[2\]"):
        module(np.ones(3))  # real and fake graphs hold the traced shapes


def test_a_custom_function_records_its_forward_and_backward():
    class Cube(pyjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    def f(x):
        (grad,) = pyjit.autograd.grad(Cube.apply(x).sum(), x)
        return grad

    module = pyjit.make_fx(f, tracing_mode="fake")(leaf([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(module(np.array([2.0, -1.0, 3.0])), [12.0, 3.0, 27.0])


def test_gradients_that_meet_are_summed_and_hooks_are_traced():
    def f(x):
        x.register_hook(lambda grad: grad * 10)
        y = x * x + x.exp()
        y.sum().backward()
        return x.grad

    module = pyjit.make_fx(f, tracing_mode="symbolic")(leaf([1.0, 2.0]))
    values = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(module(values), 10 * (2 * values + np.exp(values)))


def test_in_place_updates_of_intermediates_become_functional_ops():
    def f(x):
        y = x * 1.0
        y += 3  # recorded in place on a non-leaf
        with pyjit.no_grad():
            z = x * 2
            z *= x  # not recorded on the tape, still in the graph
        return y, z

    module = pyjit.make_fx(f)(leaf([1.0, 2.0]))
    y, z = module(np.array([3.0, -1.0]))
    assert y.tolist() == [6.0, 2.0] and z.tolist() == [18.0, 2.0]


def test_an_input_modified_in_place_is_refused():
    def f(x):
        x += 1
        return x

    with pytest.raises(NotImplementedError, match="modified its input 'x' in place"):
        pyjit.make_fx(f)(pyjit.ones(2))


def test_arrays_created_inside_become_constants_of_the_graph():
    weight = pyjit.tensor(np.array([1.0, 2.0, 3.0]))

    def f(x):
        return x * weight + pyjit.ones(3, dtype=np.float64)

    module = pyjit.make_fx(f, tracing_mode="fake")(leaf([0.0, 0.0, 0.0]))
    np.testing.assert_allclose(module(np.array([1.0, 1.0, 1.0])), [2.0, 3.0, 4.0])


def test_backward_twice_without_retain_graph_raises_the_tapes_error_while_tracing():
    def f(x):
        y = (x * x).sum()
        y.backward()
        y.backward()
        return x.grad

    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        pyjit.make_fx(f, tracing_mode="fake")(leaf([1.0, 2.0]))


def test_each_call_traces_afresh_and_arguments_must_be_tensors():
    traced = pyjit.make_fx(lambda x: x + 1)
    assert traced(pyjit.ones(2)).graph is not traced(pyjit.ones(3)).graph
    with pytest.raises(TypeError, match="argument 'x' is a ndarray"):
        traced(np.ones(2))
    with pytest.raises(ValueError, match="tracing_mode"):
        pyjit.make_fx(lambda x: x, tracing_mode="abstract")


def test_item_assignment_is_refused_with_a_hint():
    def f(x):
        y = x * 1.0
        with pyjit.no_grad():
            y[0] = 5.0
        return y

    with pytest.raises(NotImplementedError, match="item assignment"):
        pyjit.make_fx(f)(leaf([1.0, 2.0]))


def test_an_in_place_update_a_view_would_miss_is_refused():
    def f(x):
        with pyjit.no_grad():
            y = x * 2
            head = y[:1]
            y += 1  # NumPy's view `head` sees this; a functional graph's would not
        return head

    with pytest.raises(NotImplementedError, match="shares memory with a view"):
        pyjit.make_fx(f)(pyjit.ones(2))


def test_accumulating_into_the_grad_of_a_closed_over_tensor_is_refused():
    weight = pyjit.tensor(np.ones(2), requires_grad=True)
    weight.grad = pyjit.tensor(np.zeros(2))

    def f(x):
        (x * weight).sum().backward()
        return x.grad

    with pytest.raises(NotImplementedError, match="pass that tensor to the function as an argument"):
        pyjit.make_fx(f)(leaf([1.0, 2.0]))


def test_the_first_gradient_of_a_leaf_adds_no_copy_to_the_graph():
    def f(x):
        (x * 3).sum().backward()
        return x.grad

    module = pyjit.make_fx(f)(leaf([1.0, 2.0]))
    assert targets(module)[-1] == "multiply"


def test_a_symbolic_graph_refuses_sizes_that_break_its_decisions():
    def f(x):
        return x.sum() if x.shape[0] > 3 else x.mean()  # decided on the traced size, 5

    module = pyjit.make_fx(f, tracing_mode="symbolic")(pyjit.ones(5))
    assert module(np.ones(9, np.float32)) == 9.0
    with pytest.raises(ValueError, match="break the size guard s0 > 3"):
        module(np.ones(2, np.float32))


def forward_and_backward(inputs, grad_outputs):
    """The AOTAutograd walk-through's joint function: lists in, a pair of lists out."""
    x, y = inputs
    outputs = [x.cos().cos() * y]
    grads = pyjit.autograd.grad(outputs, inputs, grad_outputs)
    return outputs, list(grads)


@pytest.mark.parametrize("mode", MODES)
def test_lists_of_tensors_go_in_and_come_out_in_every_mode(mode):
    inputs = [leaf([0.5, 1.0, 2.0]), leaf([1.0, -1.0, 3.0])]
    grad_outputs = [pyjit.ones(3, dtype=np.float64)]
    module = pyjit.make_fx(forward_and_backward, tracing_mode=mode)(inputs, grad_outputs)
    assert [node.name for node in module.graph.placeholders] == ["inputs_0", "inputs_1", "grad_outputs_0"]
    x, y, g = np.array([0.3, -1.2, 2.5]), np.array([2.0, 0.5, -1.0]), np.array([1.0, 2.0, 3.0])
    outputs, grads = module([x, y], [g])
    assert type(outputs) is list and type(grads) is list and len(grads) == 2
    np.testing.assert_allclose(outputs[0], np.cos(np.cos(x)) * y)
    np.testing.assert_allclose(grads[0], g * y * np.sin(np.cos(x)) * np.sin(x))
    np.testing.assert_allclose(grads[1], g * np.cos(np.cos(x)))


@pytest.mark.parametrize("mode", MODES)
def test_nested_dicts_and_tuples_with_other_leaves_pass_through(mode):
    def f(batch, scale):
        out = batch["x"] * scale + batch["pair"][1]
        return {"out": out, "meta": (batch["tag"], None, 2)}

    def batch(x, b):
        return {"x": pyjit.tensor(x), "pair": (None, pyjit.tensor(b)), "tag": "train"}

    module = pyjit.make_fx(f, tracing_mode=mode)(batch(np.ones(4), np.zeros(4)), 3.0)
    assert [node.name for node in module.graph.placeholders] == ["batch_x", "batch_pair_1"]
    result = module(batch(np.arange(4.0), np.full(4, 0.5)), 3.0)
    assert result["meta"] == ("train", None, 2)
    np.testing.assert_allclose(result["out"], np.arange(4.0) * 3.0 + 0.5)
    with pytest.raises(ValueError, match="traced for the argument 3.0"):
        module(batch(np.arange(4.0), np.zeros(4)), 2.0)  # the graph holds 3.0
    with pytest.raises(ValueError, match="traced for arguments shaped"):
        module([np.arange(4.0)], 3.0)
