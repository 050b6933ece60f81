"""pyjit/autograd/aot/runtime.py: compiled graphs on the tape, one CompiledFunctionBackward
node per call, behaving as the tape does (through pyjit.compile with aot_eager)."""

import logging
import re

import numpy as np
import pytest

import pyjit
from pyjit.autograd.finite_differences import numerical_vjp
from pyjit.autograd.nodes import FREED_MESSAGE
from pyjit.utils import counters


@pytest.fixture(autouse=True)
def fresh():
    pyjit.reset()
    yield
    pyjit.reset()


def compiled(fn, partitioner="default", **kwargs):
    """`fn` compiled with aot_eager; the partitioner is read when a graph is compiled,
    at a call, so each call runs under it."""
    inner = pyjit.compile(fn, backend="aot_eager", **kwargs)

    def run(*args):
        with pyjit.config.patch(aot_partitioner=partitioner):
            return inner(*args)

    return run


def leaf(values, requires_grad=True):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def cos_cos(x):
    return x.cos().cos()


def test_cos_cos_saves_exactly_x_with_min_cut():
    x = leaf(np.linspace(-1, 1, 5))
    with pyjit.config.patch(aot_partitioner="min_cut"):
        out = pyjit.compile(cos_cos, backend="aot_eager")(x)
    assert out.grad_fn.name() == "CompiledFunctionBackward" and out.grad_fn.kind == "aot"
    (saved,) = out.grad_fn.saved_tensors
    assert saved.array is x.array
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.sin(np.cos(x.numpy())) * np.sin(x.numpy()), rtol=1e-14)


def test_the_node_follows_the_tape_protocol():
    x, w = leaf(np.ones((2, 3))), leaf(np.ones((3, 4)))
    b = leaf(np.ones(4), requires_grad=False)
    out = compiled(lambda x, w, b: np.tanh(x @ w + b))(x, w, b)
    node = out.grad_fn
    assert [edge[0].name() if edge[0] is not None else None for edge in node.next_functions] == \
        ["AccumulateGrad", "AccumulateGrad", None]
    assert node.saved_sizes and all(isinstance(label, str) for label, _ in node.saved_values())
    assert node.backward_graph.graph.name == "backward"
    assert [n.name() for n in pyjit.autograd.graph_nodes(out)] == \
        ["CompiledFunctionBackward", "AccumulateGrad", "AccumulateGrad"]


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_gradients_match_the_tape_and_finite_differences(partitioner):
    def f(x, w):
        hidden = pyjit.nn.functional.gelu(x @ w)
        return pyjit.nn.functional.log_softmax(hidden, dim=-1).mean()

    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    x, w = leaf(x0), leaf(w0)
    compiled(f, partitioner)(x, w).backward()
    tape_x, tape_w = leaf(x0), leaf(w0)
    f(tape_x, tape_w).backward()
    np.testing.assert_allclose(x.grad.numpy(), tape_x.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), tape_w.grad.numpy(), rtol=1e-12, atol=1e-14)

    def on_arrays(a, b):
        return f(pyjit.tensor(a), pyjit.tensor(b)).numpy()

    numeric = numerical_vjp(on_arrays, [x0, w0], 1, [np.array(1.0)])
    np.testing.assert_allclose(w.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_forward_graph_breaks_chain_one_node_per_graph():
    def f(x):
        y = x.sin() * 2
        pyjit.graph_break()
        return (y.exp() * x).sum()

    x = leaf(np.linspace(0, 1, 4))
    out = compiled(f)(x)
    nodes = [node.name() for node in pyjit.autograd.graph_nodes(out)]
    assert nodes.count("CompiledFunctionBackward") == 2
    out.backward()
    v = x.numpy()
    expected = np.exp(2 * np.sin(v)) * (2 * np.cos(v) * v + 1)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-13)


def test_grad_accumulates_across_calls_and_hooks_run():
    x = leaf([1.0, 2.0, 3.0])
    f = compiled(lambda x: (x * x).sum())
    f(x).backward()
    seen = []
    out = f(x)
    out.register_hook(lambda grad: seen.append(grad.item()) or grad * 10)
    out.backward()
    assert seen == [1.0]
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x.numpy() + 20 * x.numpy())


def test_an_output_that_gets_no_gradient_gets_zeros():
    x = leaf([1.0, 2.0])
    a, b = compiled(lambda x: (x.exp(), x * 3))(x)
    b.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_autograd_grad_goes_through_the_node_and_touches_no_grad():
    x = leaf([0.5, 1.5])
    (grad,) = pyjit.autograd.grad(compiled(lambda x: x.sin().sum())(x), [x])
    np.testing.assert_allclose(grad.numpy(), np.cos(x.numpy()), rtol=1e-15)
    assert x.grad is None


def test_under_no_grad_nothing_is_recorded():
    x = leaf([1.0, 2.0])
    f = compiled(lambda x: x.cos() * 2)
    with pyjit.no_grad():
        out = f(x)
    assert not out.requires_grad and out.grad_fn is None


def test_an_output_viewing_an_input_is_a_view_of_it():
    x = leaf(np.arange(6.0)).reshape(2, 3)  # a non-leaf, so in-place changes are allowed
    flat, total = compiled(lambda x: (x.reshape(6), x.exp().sum()))(x)
    assert flat._base is x or flat._base is x._base
    assert flat.grad_fn.name() == "ReshapeBackward" and np.shares_memory(flat.array, x.array)
    assert total.grad_fn.name() == "CompiledFunctionBackward"


def tape_error(action):
    with pytest.raises(Exception) as error:
        action()
    return type(error.value), str(error.value)


def test_backward_twice_without_retain_graph_gives_the_tapes_error():
    x = leaf([1.0, 2.0])
    out = compiled(lambda x: x.exp().sum())(x)
    out.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)
    tape = x.exp().sum()
    tape.backward()
    assert tape_error(tape.backward) == (RuntimeError, FREED_MESSAGE)


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    out = compiled(lambda x: x.exp().sum())(x)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.numpy()), rtol=1e-15)


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_a_saved_value_modified_in_place_gives_the_tapes_error(partitioner):
    """NOTE(vjp-reads): the message names the op whose backward reads the value, as the tape's."""
    def f(x):
        return (x * x).sum()

    errors = []
    for run in (f, compiled(f, partitioner)):
        base = leaf([1.0, 2.0])
        x = base * 1  # a non-leaf: in-place changes are recorded
        out = run(x)
        x.mul_(2)
        errors.append(tape_error(out.backward))
        assert base.grad is None
    (tape_type, tape_message), (aot_type, aot_message) = errors
    assert aot_type is tape_type is RuntimeError
    # x * x reads x as both inputs: which position the message names may differ
    for message in (tape_message, aot_message):
        assert re.search(r"which is input [01] of MulBackward, is at version 1; expected version 0 instead", message)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_an_output_read_by_a_backward_in_the_graph_and_modified_after_gives_the_tapes_error(backend, partitioner):
    """NOTE(vjp-reads): abs's backward reads `v`, a graph output the caller then modifies;
    the tape raises whatever the partitioner saved (found by the differential fuzzer)."""
    def f(x):
        v = x * 1.0
        return v, np.abs(v)

    errors = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x = leaf([1.0, -2.0])
        with pyjit.config.patch(aot_partitioner=partitioner):
            v, magnitude = run(x)
        v -= magnitude
        errors.append(tape_error((v * v).sum().backward))
        assert x.grad is None
    assert errors[1] == errors[0]
    assert "input 0 of AbsBackward" in errors[0][1]


def test_an_output_saved_for_backward_and_modified_in_place_is_caught():
    x = leaf([1.0, 2.0])
    y = compiled(lambda x: x.exp(), "default")(x)
    loss = y.sum()
    y.mul_(2)  # exp's backward reads its output, which the forward saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert x.grad is None


@pytest.mark.parametrize(("action", "message"), [
    (lambda out: out.backward(), "grad can be implicitly created only for scalar outputs"),
    (lambda out: out.backward(np.ones(3)), r"Mismatch in shape: grad_output\[0\] has a shape of \(3,\)"),
    (lambda out: out.backward(np.ones(2), create_graph=True), "create_graph=True"),
])
def test_bad_backward_calls_give_the_tapes_errors(action, message):
    x = leaf([1.0, 2.0])
    out = compiled(lambda x: x.sin() * 2)(x)
    kind, text = tape_error(lambda: action(out))
    assert (kind, text) == tape_error(lambda: action(x.sin() * 2))
    assert x.grad is None
    assert pytest.raises(kind, lambda: action(out)).match(message)


def test_sizes_changing_after_automatic_dynamic_reuse_the_compiled_forward_and_backward():
    f = compiled(lambda x: (x.sin() * x).sum())
    for size in (4, 6, 9, 13):
        x = leaf(np.linspace(0, 1, size))
        f(x).backward()
        v = x.numpy()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-14)
        if size == 6:
            graphs = counters["aot"]["graphs"]
    assert counters["aot"]["graphs"] == graphs  # sizes 9 and 13 ran the symbolic entry


def test_aot_graphs_logs_show_the_graphs_and_the_saved_bytes(caplog):
    pyjit.set_logs(aot_graphs=True)
    logger = logging.getLogger("pyjit.aot_graphs")
    logger.addHandler(caplog.handler)
    try:
        with pyjit.config.patch(aot_partitioner="min_cut"):
            pyjit.compile(cos_cos, backend="aot_eager")(leaf(np.ones(8)))
    finally:
        logger.removeHandler(caplog.handler)
        pyjit.set_logs()
    text = caplog.text
    for part in ("joint graph:", "def joint(x, tangents_0):", "forward graph:", "backward graph:",
                 "saved values, 64 bytes:", "f64[8] (64 bytes)"):
        assert part in text


def test_a_graph_the_joint_graph_cannot_model_runs_on_the_tape():
    from pyjit.autograd.aot import aot_function
    from pyjit.graph import Graph, GraphModule, TensorMeta
    import pyjit.ops as ops

    graph = Graph()
    x, low = (graph.placeholder(name, TensorMeta((3,), np.float64)) for name in ("x", "low"))
    graph.output(ops.clip(x, a_min=low))  # a keyword argument that requires grad
    module = GraphModule(graph)
    args = (leaf([1.0, -2.0, 3.0], requires_grad=False), leaf([0.0, 0.0, 0.0]))
    before = counters["aot"]["tape_fallbacks"]
    compiled = aot_function(module, args, fw_compiler=lambda gm, _: gm, bw_compiler=lambda gm, _: gm)
    assert counters["aot"]["tape_fallbacks"] == before + 1
    with pytest.raises(RuntimeError, match="gradients flow to positional arguments only") as compiled_error:
        compiled(*args)
    with pytest.raises(RuntimeError) as tape_error:
        module(*args)
    assert str(tape_error.value) == str(compiled_error.value)


def update_running_mean(w, running, x):
    running.mul_(0.9).add_(0.1 * x.mean(0))  # a buffer of the caller, updated in the graph
    return ((x @ w - running) ** 2).sum()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_a_graph_that_updates_an_input_buffer_gives_the_tapes_gradients(backend, partitioner):
    """NOTE(functionalisation) in pyjit/frontend/functionalise.py: the new buffer is a
    graph output written back after the call; the joint graph differentiates through it."""
    rng = np.random.default_rng(0)
    x, w0 = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    runs = []
    counters.clear()
    for fn in (pyjit.compile(update_running_mean, backend=backend), update_running_mean):
        w, running = pyjit.tensor(w0, requires_grad=True), pyjit.tensor(np.zeros(3))
        with pyjit.config.patch(aot_partitioner=partitioner):
            for _ in range(2):
                out = fn(w, running, pyjit.tensor(x))
                out.backward()
        runs.append((out.item(), w.grad.numpy(), running.numpy(), running._version, out.grad_fn.name()))
    (value, grad, buffer, version, node), (want_value, want_grad, want_buffer, _, _) = runs
    assert node == "CompiledFunctionBackward" and counters["stats"]["unique_graphs"] == 1
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    np.testing.assert_array_equal(buffer, want_buffer)
    assert version == 2  # one write back per call


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_random_draw_in_a_graph_with_gradients_gives_the_plain_runs_values_and_gradients(backend):
    """A draw is a graph op that computes a Tensor (NOTE(random-factories)); the compiled
    forward's outputs must still be the arrays the node's tensors hold."""
    def f(w):
        noise = pyjit.rand(3, dtype=np.float64)
        return (w * noise).sum(), noise.mean()

    pyjit.reset()
    results = []
    for run in (f, pyjit.compile(f, backend=backend)):
        pyjit.manual_seed(7)
        w = pyjit.tensor(np.arange(3.0), requires_grad=True)
        loss, mean = run(w)
        loss.backward()
        results.append((loss.item(), mean.item(), w.grad.numpy()))
    (plain_loss, plain_mean, plain_grad), (loss, mean, grad) = results
    assert (loss, mean) == (plain_loss, plain_mean)
    np.testing.assert_array_equal(grad, plain_grad)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_input_no_output_with_a_gradient_is_computed_from_gets_none_as_on_the_tape(backend):
    """NOTE(unreached-inputs): found by the differential fuzzer (the node used to send zeros)."""
    def f(x, y):
        return x * 2.0, (x - y).max()

    pyjit.reset()
    x, y = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.ones(3), requires_grad=True)
    doubled, _ = pyjit.compile(f, backend=backend)(x, y)
    doubled.sum().backward()
    assert y.grad is None
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_independent_outputs_of_one_graph_backward_separately_as_on_the_tape(backend):
    """NOTE(partial-release): a backward through one output leaves the other's path usable,
    and a second backward through a used-up path raises the tape's error."""
    def f(x, w):
        return (x * x).sum(), (w * w).sum()

    pyjit.reset()
    x, w = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.ones(3), requires_grad=True)
    first, second = pyjit.compile(f, backend=backend)(x, w)
    first.backward()
    second.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(3.0))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        first.backward()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_path_whose_backwards_read_nothing_can_be_gone_through_again_as_on_the_tape(backend):
    """NOTE(partial-release): the tape frees saved values, and an add's backward reads none,
    so a second backward through it works while another output is still unused (found by
    the differential fuzzer)."""
    def f(x, y):
        return y + y, (x * x).sum()

    grads = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        doubled, _ = run(x, y)
        doubled.sum().backward()
        (doubled * doubled).sum().backward()
        grads.append(y.grad.numpy())
        assert x.grad is None
    np.testing.assert_array_equal(grads[1], grads[0])
    np.testing.assert_array_equal(grads[0], 2 + 8 * np.array([3.0, 4.0]))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_random_draw_nothing_reads_still_moves_the_stream(backend):
    """An impure call runs though its value is dead, as in the plain run (found by the
    differential fuzzer: the compiled forward dropped it)."""
    def f(w):
        for _ in range(2):
            noise = pyjit.rand(3, dtype=np.float64)
        return (w * noise).sum()

    draws = []
    for run in (f, pyjit.compile(f, backend=backend)):
        pyjit.manual_seed(11)
        w = pyjit.tensor(np.arange(3.0), requires_grad=True)
        loss = run(w)
        loss.backward()
        draws.append((loss.item(), w.grad.numpy(), pyjit.rand(2).numpy()))
    assert draws[1][0] == draws[0][0]
    np.testing.assert_array_equal(draws[1][1], draws[0][1])
    np.testing.assert_array_equal(draws[1][2], draws[0][2])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_linear_layers_gradients_become_grad_without_a_copy(backend):
    # NOTE(gradient-layout) and the bias's sum (sum_to_shape): the backward returns fresh
    # C-ordered arrays, which NOTE(gradient-stealing) takes as `.grad` as they are.
    rng = np.random.default_rng(0)
    x = pyjit.tensor(rng.standard_normal((6, 4)))
    w, b = leaf(rng.standard_normal((3, 4))), leaf(rng.standard_normal(3))

    def loss(x):
        return ((x @ w.T + b) ** 2).mean()

    taken = counters["autograd"]["gradients_taken_without_copy"]
    pyjit.compile(loss, backend=backend)(x).backward()
    assert counters["autograd"]["gradients_taken_without_copy"] - taken == 2

    def on_arrays(w_value, b_value):
        return ((x.numpy() @ w_value.T + b_value) ** 2).mean()

    for index, parameter in enumerate((w, b)):
        want = numerical_vjp(on_arrays, [w.numpy(), b.numpy()], index, [np.array(1.0)])
        np.testing.assert_allclose(parameter.grad.numpy(), want, rtol=1e-6)
        assert parameter.grad.numpy().flags.c_contiguous


def view_then_update(x):
    """Fuzzer seed 777108, reduced: a view of a Tensor taken in a compiled graph, then an
    in-place update of that Tensor, which the tape refuses (it does not rebase views)."""
    v = np.sqrt(np.abs(x) + 1.0)
    pyjit.graph_break()
    w = v[::-1] + v  # noqa: F841 (the view is what matters)
    v += v
    return v


@pytest.mark.parametrize("backend", [None, "eager", "aot_eager", "aot_eager_default_partitioner", "inductor"])
def test_an_update_of_a_tensor_viewed_in_a_compiled_graph_gives_the_tapes_error(backend):
    """NOTE(recorded-views): the compiled call flags the input its graph took a view of."""
    run = view_then_update if backend is None else pyjit.compile(view_then_update, backend=backend)
    with pytest.raises(RuntimeError, match="does not record in-place operations on a view"):
        run(leaf(np.arange(4.0)))


@pytest.mark.parametrize("contiguous", [True, False])
def test_a_reshape_flags_its_input_only_where_it_shares_its_memory(contiguous):
    """NOTE(recorded-views): a reshape of a non-contiguous array copies, and the tape then
    lets the input be updated; of a contiguous one it is a view, and the tape refuses."""
    def f(v):
        w = v.reshape(-1) * 2.0  # noqa: F841
        v += 1.0
        return v

    outcomes = []
    for run in (f, pyjit.compile(f, backend="aot_eager")):
        x = leaf(np.arange(6.0).reshape(2, 3))
        v = x * 1.0 if contiguous else x.T * 1.0  # NumPy keeps the transpose's layout: not contiguous
        try:
            outcomes.append(run(v).detach().numpy())
        except RuntimeError as error:
            outcomes.append(str(error))
    if contiguous:
        assert "does not record in-place operations on a view" in outcomes[0] and outcomes[1] == outcomes[0]
    else:
        np.testing.assert_array_equal(outcomes[1], outcomes[0])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("updated", [0, 1])
def test_outputs_that_are_a_view_and_its_base_refuse_updates_as_on_the_tape(backend, updated):
    """NOTE(recorded-views): the tape refuses an in-place op on a view, and on the tensor a
    recorded view was taken of."""
    def f(x):
        v = x * 2.0
        return v, v[::-1]

    for run in (f, pyjit.compile(f, backend=backend)):
        outputs = run(leaf(np.arange(3.0)))
        with pytest.raises(RuntimeError, match="does not record in-place operations on a view"):
            outputs[updated].__iadd__(1.0)


@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_default_partitioner", "inductor"])
def test_a_path_of_adds_is_gone_through_again_after_every_output_had_a_backward(backend):
    """NOTE(tape-order): once every output has had a backward the saved values are freed,
    yet the tape still lets a backward through ops that read none of them."""
    def f(x, y):
        return y + y, (x * x).sum()

    grads = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        doubled, total = run(x, y)
        doubled.sum().backward()
        total.backward()
        (doubled * doubled).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            total.backward()  # mul's backward reads x, freed
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_default_partitioner", "inductor"])
def test_a_second_backward_that_raises_leaves_the_leaves_as_the_tape_does(backend):
    """Fuzzer seed 777533, reduced (NOTE(tape-order)): the tape runs an add's backward,
    which sends y its gradient, and raises only at the log1p below, whose saved input the
    first backward freed; y.grad keeps what it got, x.grad does not change."""
    def f(x, y):
        y = np.log1p(np.abs(x + x)) + y
        pyjit.graph_break()
        (x * (x - y).max()).sum().backward()
        return y * np.tanh(y)

    outcomes = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x, y = leaf([0.5, -1.0, 2.0]), leaf([1.0, 0.25, -0.5])
        out = run(x, y)
        first = (x.grad.numpy().copy(), y.grad.numpy().copy())
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            (out * out).sum().backward()
        outcomes.append((first, x.grad.numpy(), y.grad.numpy()))
    (first_tape, x_tape, y_tape), (first, x_grad, y_grad) = outcomes
    np.testing.assert_allclose(first[1], first_tape[1], rtol=1e-12)
    np.testing.assert_array_equal(x_tape, first_tape[0])  # the tape raised before x's accumulator ran
    assert not np.array_equal(y_tape, first_tape[1])       # ... and after y's
    np.testing.assert_allclose(x_grad, x_tape, rtol=1e-12)
    np.testing.assert_allclose(y_grad, y_tape, rtol=1e-12)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_backward_reading_a_modified_input_leaves_the_leaves_as_the_tape_does(backend):
    """NOTE(tape-order): the tape's add sends x its gradient before the multiply below it
    raises for the input modified in place; x.grad keeps it, as on the tape."""
    def f(x, v):
        return v * v + x

    grads = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        v = y * 1.0
        out = run(x, v)
        v.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
        grads.append(None if x.grad is None else x.grad.numpy())
    np.testing.assert_array_equal(grads[0], np.ones(2))
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_default_partitioner", "inductor"])
def test_an_input_the_graph_sends_no_gradient_gets_the_tapes_before_an_error(backend):
    """Fuzzer seed 777824, reduced (NOTE(aot-node)): the graph reads x but sends it no
    gradient, so on the tape x's accumulator waits for no node of the graph: the add
    below sends x its gradient before the multiply raises for `a` modified in place."""
    def f(x, y):
        return np.where(x > 0.0, y, 0.0) * 2.0

    grads = []
    for run in (f, pyjit.compile(f, backend=backend)):
        x, y = leaf([1.0, -2.0]), leaf([3.0, 4.0])
        a = run(x, y)
        out = a * a + x
        a += 1.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
        grads.append((None if x.grad is None else x.grad.numpy(), y.grad))
    np.testing.assert_array_equal(grads[0][0], np.ones(2))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    assert grads[0][1] is None and grads[1][1] is None
