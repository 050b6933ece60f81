"""pyjit/autograd/compiled_autograd/trace.py: what the captured graph is made of —
lifted inputs, call_hook, accumulate_grad, inlined aot{N}_ nodes, opaque call_node."""

import numpy as np
import pytest

import pyjit


class Recorder:
    """A compiler_fn keeping the graphs it is handed."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm):
        self.graphs.append(gm)
        return gm

    def calls(self, graph_index=-1):
        return [node for node in self.graphs[graph_index].graph.calls()]

    def names(self, graph_index=-1):
        return [node.name for node in self.calls(graph_index)]


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_saved_values_and_gradients_are_graph_inputs_not_constants():
    recorder = Recorder()
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pyjit.compiled_autograd.enable(recorder):
        (x * y).sum().backward()
    graph = recorder.graphs[0].graph
    assert not any(node.kind == "constant" and getattr(node.target, "shape", ()) == (2,) for node in graph.nodes)
    assert [node.name for node in graph.placeholders][0] == "tangents"
    x, z = leaf([5.0, 6.0]), leaf([7.0, 8.0])
    with pyjit.compiled_autograd.enable(recorder):
        (x * z).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 8.0])  # the same graph, the new saved values
    np.testing.assert_allclose(z.grad.numpy(), [5.0, 6.0])
    assert len(recorder.graphs) == 1


def test_hooks_are_call_hook_nodes_and_accumulation_is_a_node():
    recorder = Recorder()
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    ran = []
    x.register_hook(lambda grad: ran.append(1) or grad + 10)
    with pyjit.compiled_autograd.enable(recorder):
        (x * y).sum().backward()
    names = recorder.names()
    assert names.count("call_hook") == 1
    assert sorted(name for name in names if name.startswith("accumulate_grad")) == ["accumulate_grad",
                                                                                     "accumulate_grad_1"]
    assert ran == [1]
    np.testing.assert_allclose(x.grad.numpy(), [13.0, 14.0])


def test_aot_backward_graphs_are_inlined_with_aot_prefixes_across_graph_breaks():
    def forward(x):
        x = x.sin()
        pyjit.graph_break()
        x = x * 2
        pyjit.graph_break()
        return x.cos()

    compiled = pyjit.compile(forward, backend="aot_eager")
    recorder = Recorder()
    x = leaf([0.1, 0.2, 0.3])
    with pyjit.compiled_autograd.enable(recorder):
        compiled(x).sum().backward()
    assert len(recorder.graphs) == 1
    prefixes = {name.split("_")[0] for name in recorder.names() if name.startswith("aot")}
    assert prefixes == {"aot0", "aot1", "aot2"}
    expected = -np.sin(2 * np.sin(x.numpy())) * 2 * np.cos(x.numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected)


class Cube(pyjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.power = 3
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.power * x ** (ctx.power - 1)


class DecidesOnValues(pyjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 if float(x.sum()) > 0 else grad * -2


class KeepsAnArray(pyjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = np.full(x.shape, 4.0)  # not saved: no version check, no key
        return x * 4

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale


def test_a_traceable_function_is_traced_and_its_state_is_part_of_the_key():
    recorder = Recorder()
    x = leaf([1.0, 2.0])
    with pyjit.compiled_autograd.enable(recorder):
        Cube.apply(x).sum().backward()
    assert "call_node" not in recorder.names()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


@pytest.mark.parametrize("function", [DecidesOnValues, KeepsAnArray])
def test_a_function_that_cannot_be_traced_is_an_opaque_call(function):
    recorder = Recorder()
    values = []
    for sign in (1.0, -1.0):
        x = leaf([sign, 2 * sign])
        with pyjit.compiled_autograd.enable(recorder):
            (function.apply(x) * x).sum().backward()
        tape_x = leaf([sign, 2 * sign])
        (function.apply(tape_x) * tape_x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tape_x.grad.numpy())
        values.append(x.grad.numpy())
    assert "call_node" in recorder.names(0)
    assert len(recorder.graphs) == 1


class NoGradientForTheSecond(pyjit.autograd.Function):
    """Opaque (it decides on a value), and its backward gives None to an input that requires grad."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * 2 if float(x.sum()) > 0 else grad * -2), None


def test_an_opaque_nodes_none_keeps_grad_none_as_on_the_tape():
    recorder = Recorder()
    for step in range(3):
        x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        with pyjit.compiled_autograd.enable(recorder):
            (NoGradientForTheSecond.apply(x, y) * y).sum().backward()
        tape_x, tape_y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        (NoGradientForTheSecond.apply(tape_x, tape_y) * tape_y).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tape_x.grad.numpy())
        np.testing.assert_allclose(y.grad.numpy(), tape_y.grad.numpy())  # only through the product's own edge
    hidden, z = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pyjit.compiled_autograd.enable(recorder):
        NoGradientForTheSecond.apply(hidden, z).sum().backward()
    assert z.grad is None and hidden.grad is not None  # the tape leaves it None: no zeros
    assert "call_node" in recorder.names()


def test_a_leaf_reached_only_through_an_opaque_none_is_traced_without_it():
    recorder = Recorder()
    for _ in range(3):
        x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        with pyjit.compiled_autograd.enable(recorder):
            NoGradientForTheSecond.apply(x, y).sum().backward()
        assert y.grad is None
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    assert len(recorder.graphs) == 2  # traced for a gradient on every edge, then for the None it gave
    assert len(recorder.graphs[-1].graph.output_node.args[0]) == 1  # only x's .grad


def test_grad_mode_captures_without_accumulating():
    recorder = Recorder()
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pyjit.compiled_autograd.enable(recorder):
        (gx,) = pyjit.autograd.grad((x * y).sum(), [x])
    assert not any(name.startswith("accumulate_grad") for name in recorder.names())
    np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
