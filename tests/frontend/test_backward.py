"""pyjit/frontend/backward.py: `loss.backward()` in compiled code is captured by compiled
autograd, not broken (NOTE(captured-backward)), with the tape's gradients."""

import logging

import numpy as np
import pytest

import pyjit
from pyjit import config, nn
from pyjit.exc import Unsupported
from pyjit.utils import counters


class Recording:
    """A backend that runs graphs eagerly and keeps every graph module it was given."""

    def __init__(self):
        self.graphs = []
        self.__name__ = "recording"

    def __call__(self, graph_module, example_inputs):
        self.graphs.append(graph_module)
        return pyjit.lookup_backend("aot_eager")(graph_module, example_inputs)


def tape_grads(model, x):
    model.zero_grad()
    model(x).sum().backward()
    grads = [parameter.grad.numpy().copy() for parameter in model.parameters()]
    model.zero_grad()
    return grads


def grads_of(model):
    return [parameter.grad.numpy() for parameter in model.parameters()]


@pytest.fixture
def model_and_input(jit):
    pyjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 10))
    return model, pyjit.randn(4, 10)


def train(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


def test_backward_under_compiled_autograd_is_captured_with_the_backend(model_and_input):
    model, x = model_and_input
    expected = tape_grads(model, x)
    backend = Recording()
    with config.patch(compiled_autograd=True):
        loss = pyjit.compile(train, backend=backend, fullgraph=True)(model, x)
    assert not counters["graph_break"]
    for got, want in zip(grads_of(model), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The forward, then the whole backward, which compiled autograd handed to the same backend.
    assert len(backend.graphs) == 2
    assert loss.grad_fn is not None and type(loss.grad_fn).__name__ == "CompiledFunctionBackward"


def test_without_compiled_autograd_backward_is_a_break(model_and_input):
    model, x = model_and_input
    expected = tape_grads(model, x)
    backend = Recording()
    pyjit.compile(train, backend=backend)(model, x)
    assert counters["graph_break"]["Tensor.backward() is not captured"] == 1
    assert len(backend.graphs) == 1  # the forward; backward ran on the tape
    for got, want in zip(grads_of(model), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(Unsupported, match="Tensor.backward"):
        pyjit.compile(train, backend="eager", fullgraph=True)(model, x)


def test_whether_compiled_autograd_is_on_is_guarded(model_and_input):
    model, x = model_and_input
    compiled = pyjit.compile(train, backend="eager", fullgraph=True)
    with config.patch(compiled_autograd=True):
        compiled(model, x)
    with pytest.raises(Unsupported):  # the entry traced with it on does not serve
        compiled(model, x)
    with config.patch(compiled_autograd=True):
        compiled(model, x)  # nor the one traced with it off
    assert len(pyjit.cache_entries(compiled)) == 2
    assert any("compiled autograd is on" in guard for guard, _ in pyjit.cache_entries(compiled))


def test_a_lambda_calling_backward_compiles_with_fullgraph(jit):
    x = pyjit.randn(5, requires_grad=True)
    loss = (x * 3).sum()
    with pytest.raises(Unsupported):
        jit(lambda: loss.backward(), fullgraph=True)()
    assert x.grad is None  # the raising entry ran nothing
    with config.patch(compiled_autograd=True):
        jit(lambda: loss.backward(), fullgraph=True)()
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


def test_the_user_compiler_of_enable_compiles_the_backward(model_and_input):
    model, x = model_and_input
    expected = tape_grads(model, x)
    seen = []

    def compiler_fn(graph_module):
        seen.append(graph_module)
        return graph_module

    backend = Recording()
    compiled = pyjit.compile(train, backend=backend, fullgraph=True)
    with pyjit.compiled_autograd.enable(compiler_fn):
        compiled(model, x)
    assert len(seen) == 1 and len(backend.graphs) == 1  # the backward went to compiler_fn, not the backend
    for got, want in zip(grads_of(model), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_backward_in_an_inlined_helper_is_captured_in_the_helper_frame(model_and_input):
    model, x = model_and_input
    expected = tape_grads(model, x)

    def step(loss):
        loss.backward()

    def outer(model, x):
        step(model(x).sum())

    with config.patch(compiled_autograd=True):
        pyjit.compile(outer, backend="eager", fullgraph=True)(model, x)
    assert not counters["graph_break"]
    for got, want in zip(grads_of(model), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_side_effects_before_backward_are_seen_by_its_hooks(jit):
    x = pyjit.randn(3, requires_grad=True)
    log = []
    x.register_hook(lambda grad: log.append(len(calls)))
    calls = []

    def f(x):
        calls.append("forward")
        (x * 2).sum().backward()

    with config.patch(compiled_autograd=True):
        jit(f)(x)
    assert calls == ["forward"] and log == [1]
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


def test_backward_in_a_try_block_runs_on_the_tape(jit, caplog):
    x = pyjit.randn(3, requires_grad=True)

    def f(x):
        loss = (x * 2).sum()
        try:
            loss.backward()
        finally:
            pass
        return loss

    with config.patch(compiled_autograd=True), caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        jit(f)(x)
    assert counters["graph_break"]["a backward pass under compiled autograd cannot be resumed here"] == 1
    np.testing.assert_allclose(x.grad.numpy(), 2.0)
    # The log says how the break ended: the frame ran as it is, and why.
    (record,) = [r.getMessage() for r in caplog.records if r.name == "pyjit.graph_breaks"]
    assert "the frame runs as it is: the instruction is inside a try or with block" in record


def test_forward_graph_breaks_do_not_split_the_backward(jit):
    """The tutorial's count: two graph_break()s give three forward graphs, each with its
    own AOT backward graph; under compiled autograd the backward is one graph, in which
    all three AOT backwards are inlined (aot0_, aot1_, aot2_: ops whose backward is not
    the identity, unlike the tutorial's `+ 10`)."""

    def fn(x):
        temp = x * 3
        pyjit.graph_break()
        temp = np.sin(temp)
        pyjit.graph_break()
        return temp.sum()

    x = pyjit.randn(10, 10, requires_grad=True)
    loss = jit(fn, backend="aot_eager")(x)
    assert counters["stats"]["unique_graphs"] == 3 and counters["aot"]["graphs"] == 3
    loss.backward(retain_graph=True)
    counters.clear()
    seen = []

    def compiler_fn(graph_module):
        seen.append(graph_module.code)
        return pyjit.compile(graph_module, backend="aot_eager")

    with pyjit.compiled_autograd.enable(compiler_fn):
        loss.backward()
    assert counters["stats"]["unique_graphs"] == 1 and len(seen) == 1
    assert all(f"aot{index}_" in seen[0] for index in range(3))
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * np.cos(3 * x.numpy()), rtol=1e-5, atol=1e-6)


def test_explain_counts_no_break_for_a_captured_backward(model_and_input):
    model, x = model_and_input
    assert pyjit.explain(train)(model, x).graph_break_count == 1
    with config.patch(compiled_autograd=True):
        explained = pyjit.explain(train)(model, x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1  # the forward; the backward is its own


def test_hooks_are_inlined_into_the_backward_graph(jit):
    x = pyjit.randn(6, 4, requires_grad=True)
    seen = []
    x.register_hook(lambda grad: np.clip(grad * 10, -1.0, 1.0))
    x.register_hook(lambda grad: seen.append(grad.shape))  # None: the gradient goes on unchanged
    loss = jit(lambda x: (x * np.arange(4.0, dtype=np.float32) * 0.05).sum(), backend="aot_eager")(x)
    counters.clear()
    with pyjit.compiled_autograd.enable(pyjit.compile(backend="eager", fullgraph=True)):
        loss.backward()
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to([0.0, 0.5, 1.0, 1.0], (6, 4)), rtol=1e-6)
    assert seen == [(6, 4)] and x.grad.dtype == np.float32


def test_a_hook_changing_the_shape_raises_the_tapes_error_and_leaves_grad(jit):
    x = pyjit.randn(3, requires_grad=True)
    x.grad = pyjit.ones(3)
    x.register_hook(lambda grad: grad[:2])
    loss = (x * 2).sum()
    with pytest.raises(RuntimeError, match="changed the size"):
        loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="changed the size"), \
            pyjit.compiled_autograd.enable(pyjit.compile(backend="eager")):
        loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 1.0)


def test_backward_keeps_its_arguments(jit):
    x = pyjit.randn(3, requires_grad=True)

    def twice(x, seed):
        y = x * x
        y.backward(seed, retain_graph=True)
        y.backward(gradient=seed)
        return y

    seed = pyjit.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    with config.patch(compiled_autograd=True):
        y = jit(twice)(x, seed)
    assert not counters["graph_break"] and counters["compiled_autograd"]["captures"] >= 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * x.numpy() * seed.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError):  # the graph was released by the second call, as on the tape
        y.backward(seed)


def test_hooks_the_graph_would_run_otherwise_run_in_python(jit):
    """A hook that changes its gradient in place, or keeps it, sees the Tensor the tape
    hands it: it is not inlined into the graph, which runs on arrays."""
    kept = []

    def in_place(grad):
        grad.mul_(3)

    for hook, reason in ((in_place, "changes the gradient in place"), (kept.append, None),
                         (lambda grad: kept.append(grad * 2), "keeps its gradient")):
        x = pyjit.ones(4, requires_grad=True)
        x.register_hook(hook)
        loss = jit(lambda x: (x * 2).sum(), backend="aot_eager")(x)
        counters.clear()
        with pyjit.compiled_autograd.enable(pyjit.compile(backend="eager")):
            loss.backward()
        if reason is not None:
            assert any(reason in key for key in counters["graph_break"]), counters["graph_break"]
        np.testing.assert_allclose(x.grad.numpy(), 6.0 if hook is in_place else 2.0)
    assert [type(value) for value in kept] == [pyjit.Tensor, pyjit.Tensor]
    np.testing.assert_allclose(kept[1].numpy(), 4.0)


def test_autograd_grad_and_backward_functions_are_captured_too(jit):
    x = pyjit.randn(3, requires_grad=True)

    def gradient(x):
        (found,) = pyjit.autograd.grad((x * x).sum(), [x])
        pyjit.autograd.backward((x * 3).sum())
        return found * 2

    with pytest.raises(Unsupported, match="not inlined"):
        jit(gradient, fullgraph=True)(x)
    with config.patch(compiled_autograd=True):
        doubled = jit(gradient, fullgraph=True)(x)
    assert counters["compiled_autograd"]["captures"] == 2
    np.testing.assert_allclose(doubled.numpy(), 4 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


def test_node_post_hooks_are_inlined_on_the_engines_terms(jit):
    x = pyjit.randn(5, requires_grad=True)
    loss = jit(lambda x: (np.sin(x) * 2).sum(), backend="aot_eager")(x)
    received = []
    loss.grad_fn.register_hook(lambda grad_inputs, grad_outputs: received.append(len(grad_inputs)))
    loss.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0.5,))
    counters.clear()
    with pyjit.compiled_autograd.enable(pyjit.compile(backend="eager", fullgraph=True)):
        loss.backward(retain_graph=True)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.numpy()), rtol=1e-5)
    assert received == [1]
    x.grad = None
    loss.backward()  # the tape agrees
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.numpy()), rtol=1e-5)


def test_a_post_hook_returning_another_number_of_gradients_raises_the_tapes_error(jit):
    x = pyjit.randn(5, requires_grad=True)
    loss = jit(lambda x: (x * 2).sum(), backend="aot_eager")(x)
    loss.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0], grad_inputs[0]))
    with pytest.raises(RuntimeError, match="incorrect number of values"):
        loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="incorrect number of values"), \
            pyjit.compiled_autograd.enable(pyjit.compile(backend="eager")):
        loss.backward()
    assert x.grad is None


def test_a_fresh_hook_each_step_reuses_the_compiled_backward(jit):
    """A training loop registering `lambda g: np.clip(g, -1, 1)` anew each step, on a fresh
    tensor: the hook is a graph input, guarded by its code (NOTE(function-arguments))."""
    compiler = pyjit.compile(backend="eager", fullgraph=True)
    with pyjit.compiled_autograd.enable(compiler):
        for step in range(4):
            w = pyjit.tensor(np.linspace(-2.0, 2.0, 5) * (step + 1), requires_grad=True)
            w.register_hook(lambda g: np.clip(g, -1, 1))
            (w * w).sum().backward()
            np.testing.assert_allclose(w.grad.numpy(), np.clip(2 * w.numpy(), -1, 1))
    assert counters["compiled_autograd"]["compiles"] == 1
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_a_fresh_hook_is_guarded_on_what_the_graph_inlined_from_it(jit):
    """Another closure value, or another hook's code, is another graph: the guards check
    what the inlined hook read, not the hook object."""
    def clipping(limit):
        return lambda g: np.clip(g, -limit, limit)

    compiler = pyjit.compile(backend="eager", fullgraph=True)
    with pyjit.compiled_autograd.enable(compiler):
        for limit, hook in [(1.0, clipping(1.0)), (1.0, clipping(1.0)), (0.5, clipping(0.5)),
                            (None, lambda g: g * 3)]:
            w = pyjit.tensor(np.linspace(-2.0, 2.0, 5), requires_grad=True)
            w.register_hook(hook)
            (w * w).sum().backward()
            want = 2 * w.numpy() * 3 if limit is None else np.clip(2 * w.numpy(), -limit, limit)
            np.testing.assert_allclose(w.grad.numpy(), want)
    assert counters["stats"]["unique_graphs"] == 3  # limit 1.0 (twice), limit 0.5, the other hook
