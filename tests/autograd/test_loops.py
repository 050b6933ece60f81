"""pyjit/autograd/loops.py: a loop whose body reads pyjit.Tensor values is captured as
one loop node (NOTE(loop-capture)) that differentiates (NOTE(loop-gradient)) on every
backend: its gradients pass gradcheck (finite differences), equal the tape's on the same
code run plain (unrolled), and equal torch's where torch is installed."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd import gradcheck
from pyjit.utils import counters

BACKENDS = ["eager", "aot_eager", "inductor"]
# float64 throughout. Inductor's kernels are within 4 ulp of the exact tanh, sin and cos
# (docs/codegen.md, "Numerics") where the tape calls NumPy's; through 20 iterations of
# these contracting bodies that stays far below this bound.
RTOL = 1e-10


def _forget_compiled_code_and_counters():
    pyjit.reset()
    counters.clear()


@pytest.fixture(autouse=True)
def fresh():
    """Each test compiles afresh and counts its own loops."""
    _forget_compiled_code_and_counters()
    yield
    _forget_compiled_code_and_counters()


def rnn_loss(W, U, h, xs):
    """An RNN's time loop: the hidden state is the carry, W, U and xs are invariants."""
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return (h * h).sum()


def accumulate(x, w):
    """A carried accumulator."""
    acc = w * 0.0
    for i in range(x.shape[0]):
        acc = acc + np.sin(x[i]) * w
    return acc


def window(x, w):
    """Slices that move with the index (x[i:i + 3], its offset a symbol of the body)."""
    y = w * 1.0
    for i in range(x.shape[0] - 3):
        y = np.cos(y) * x[i:i + 3] + w
    return y


def prefix(x, w):
    """A slice whose size is the index (x[:i], a symbolic size inside the body)."""
    s = w * 1.0
    for i in range(1, x.shape[0]):
        s = s * 0.9 + x[:i].sum() * w
    return s


def horner(x, w):
    """A loop that runs backwards (a negative step)."""
    acc = w * 0.0
    for i in range(x.shape[0] - 1, -1, -1):
        acc = acc * w + x[i]
    return acc


def decay(x, w, T):
    """A trip count that is an argument: one compile for every T (NOTE(loop-bounds))."""
    y = w * 1.0
    for t in range(T):
        y = np.tanh(y * x + w)
    return y


def _inputs(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [pyjit.tensor(rng.normal(size=shape) * 0.5, requires_grad=True) for shape in shapes]


def assert_captured_as_loop():
    assert counters["stats"]["loops_captured"] >= 1
    assert not counters["loops_unrolled"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, shapes", [
    (accumulate, [(20, 3), (3,)]),
    (window, [(20,), (3,)]),
    (prefix, [(20,), ()]),
    (horner, [(30, 2), (2,)]),
    (rnn_loss, [(3, 3), (3, 2), (3,), (20, 2)]),
], ids=["accumulator", "moving-slices", "prefix-slices", "negative-step", "rnn"])
def test_gradcheck_through_a_loop_node(backend, program, shapes):
    inputs = _inputs(0, *shapes)
    assert gradcheck(pyjit.compile(program, backend=backend), tuple(inputs))
    assert_captured_as_loop()


def _gradients(fn, inputs, *extra):
    copies = [pyjit.tensor(value.numpy(), requires_grad=True) for value in inputs]
    result = fn(*copies, *extra)
    result.sum().backward()
    return result.numpy(), [None if value.grad is None else value.grad.numpy() for value in copies]


def _assert_close(got, want):
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=1e-14)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_compile_serves_every_trip_count_and_gives_the_tapes_gradients(backend):
    inputs = _inputs(1, (4,), (4,))
    compiled = pyjit.compile(decay, backend=backend)
    for T in (40, 7, 1):
        _assert_close(_gradients(compiled, inputs, T), _gradients(decay, inputs, T))
    # Zero trips: the loop node reads x whatever the trip count, so x gets a gradient of
    # zeros where the plain code never reads x and its .grad stays None (docs/autograd.md).
    got, want = _gradients(compiled, inputs, 0), _gradients(decay, inputs, 0)
    assert want[1][0] is None
    _assert_close((got[0], [got[1][1]]), (want[0], [want[1][1]]))
    np.testing.assert_array_equal(got[1][0], np.zeros(4))
    assert counters["stats"]["unique_graphs"] == 1
    assert_captured_as_loop()


def train(loss_fn, W, U, h0, xs, steps=3, lr=0.1):
    """SGD on the RNN's parameters: losses and the parameters after each step."""
    history = []
    for _ in range(steps):
        loss = loss_fn(W, U, h0, xs)
        loss.backward()
        with pyjit.no_grad():
            for parameter in (W, U, h0):
                parameter -= lr * parameter.grad
                parameter.grad = None
        history.append((loss.item(), W.numpy().copy(), U.numpy().copy(), h0.numpy().copy()))
    return history


def _rnn_parameters_and_data(seed):
    W, U, h0, xs = _inputs(seed, (8, 8), (8, 3), (8,), (25, 3))
    return W, U, h0, pyjit.tensor(xs.numpy())  # the data requires no grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_loop_with_an_inner_time_loop_matches_the_unrolled_tape(backend):
    want = train(rnn_loss, *_rnn_parameters_and_data(2))
    got = train(pyjit.compile(rnn_loss, backend=backend), *_rnn_parameters_and_data(2))
    for got_step, want_step in zip(got, want):
        for g, w in zip(got_step, want_step):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-14)
    assert_captured_as_loop()
    assert counters["stats"]["unique_graphs"] == 1  # the steps reuse the one compile


def test_the_tape_holds_one_node_for_the_loop():
    W, U, h, xs = _inputs(3, (3, 3), (3, 2), (3,), (20, 2))
    loss = pyjit.compile(rnn_loss, backend="eager")(W, U, h, xs)
    names = [node.name() for node in pyjit.autograd.graph_nodes(loss)]
    assert names.count("LoopBackward") == 1 and "TanhBackward" not in names


def test_compiled_autograd_captures_the_loops_backward():
    W, U, h, xs = _inputs(8, (3, 3), (3, 2), (3,), (20, 2))
    copies = [pyjit.tensor(value.numpy(), requires_grad=True) for value in (W, U, h, xs)]
    loss = pyjit.compile(rnn_loss, backend="eager")(*copies)
    with pyjit.compiled_autograd.enable(lambda module: module):
        loss.backward()
    assert counters["compiled_autograd"]["captures"] == 1
    assert_captured_as_loop()
    _assert_close((loss.numpy(), [value.grad.numpy() for value in copies]), _gradients(rnn_loss, [W, U, h, xs]))


def test_an_entry_captured_under_no_grad_is_not_reused_for_gradients():
    W, U, h, xs = _inputs(4, (3, 3), (3, 2), (3,), (20, 2))
    compiled = pyjit.compile(rnn_loss, backend="eager")
    with pyjit.no_grad():
        assert compiled(W, U, h, xs).grad_fn is None
    got = _gradients(lambda *args: compiled(*args), [W, U, h, xs])
    _assert_close(got, _gradients(rnn_loss, [W, U, h, xs]))
    assert counters["stats"]["loops_captured"] == 2


def test_a_second_backward_raises_the_tapes_error():
    W, U, h, xs = _inputs(5, (3, 3), (3, 2), (3,), (20, 2))
    loss = pyjit.compile(rnn_loss, backend="eager")(W, U, h, xs)
    loss.backward()
    assert_captured_as_loop()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_carries_of_two_dtypes_unroll_with_the_reason():
    def mixed(x, w):
        a, b = w * 1.0, w.astype(np.float32)
        for i in range(x.shape[0]):
            a, b = a + np.sin(x[i]), b * 0.5
        return a.sum() + b.sum()

    x, w = _inputs(6, (20, 3), (3,))
    got = _gradients(pyjit.compile(mixed, backend="eager"), [x, w])
    _assert_close(got, _gradients(mixed, [x, w]))
    assert counters["stats"]["loops_captured"] == 0
    assert any("more than one dtype" in reason for reason in counters["loops_unrolled"])


def test_rnn_gradients_equal_torchs(one_torch_thread):
    torch = pytest.importorskip("torch")
    W, U, h, xs = _inputs(7, (6, 6), (6, 4), (6,), (30, 4))
    got = _gradients(pyjit.compile(rnn_loss, backend="inductor"), [W, U, h, xs])
    assert_captured_as_loop()
    leaves = [torch.tensor(value.numpy(), requires_grad=True) for value in (W, U, h, xs)]
    state = leaves[2]
    for t in range(leaves[3].shape[0]):
        state = torch.tanh(leaves[0] @ state + leaves[1] @ leaves[3][t])
    (state * state).sum().backward()
    for g, leaf in zip(got[1], leaves):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_a_numpy_array_carried_next_to_tensors_unrolls():
    """The loop node's carries are Tensors when it runs: an array carried with them
    would come back as a Tensor."""
    def counted(x, w):
        count, acc = np.zeros(1), w * 0.0
        for i in range(x.shape[0]):
            count, acc = count + 1.0, acc + np.sin(x[i]) * w
        return count, acc

    x, w = _inputs(9, (30, 3), (3,))
    count, acc = pyjit.compile(counted, backend="eager")(x, w)
    assert type(count) is np.ndarray and count[0] == 30.0
    _assert_close((acc.numpy(), []), (counted(x, w)[1].numpy(), []))
    assert counters["stats"]["loops_captured"] == 0
    assert list(counters["loops_unrolled"]) == ["the loop carries a NumPy array next to pyjit.Tensor values"]


def test_a_carry_that_starts_as_an_array_keeps_the_trip_count_a_constant():
    """After zero trips the carry would still be the array: a new trip count recompiles."""
    def scaled(x, w, T):
        acc = np.zeros(3)
        for t in range(T):
            acc = np.tanh(acc * x + w)
        return acc

    x, w = _inputs(10, (3,), (3,))
    compiled = pyjit.compile(scaled, backend="eager")
    for T in (40, 41):
        _assert_close(_gradients(compiled, [x, w], T), _gradients(scaled, [x, w], T))
    assert counters["stats"]["loops_captured"] == 2 and counters["stats"]["unique_graphs"] == 2
    assert type(compiled(x, w, 0)) is np.ndarray


@pytest.mark.parametrize("backend", BACKENDS)
def test_symbolic_sizes_reuse_the_loop_and_its_gradient(backend):
    """A second size makes the sizes symbolic (automatic dynamic): the loop's backward
    is built on the symbolic body, whose VJPs decide on the index too."""
    compiled = pyjit.compile(accumulate, backend=backend)
    for size in (5, 7, 6):
        inputs = _inputs(size, (30, size), (size,))
        _assert_close(_gradients(compiled, inputs), _gradients(accumulate, inputs))
    assert counters["stats"]["loops_captured"] == 2 and counters["stats"]["unique_graphs"] == 2
    assert not counters["stats"]["compile_failures"] and not counters["loops_unrolled"]
