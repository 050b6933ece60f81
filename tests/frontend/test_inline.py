"""pyjit/frontend/inline.py: calls of user functions, methods and callable objects are
traced into the caller's graph, guarded by what they read; a callee that cannot be
captured whole runs in Python, where it is captured as a frame of its own."""

import types

import numpy as np
import pytest

import pyjit
from pyjit.frontend.assemble import assemble
from pyjit.frontend.bytecode import Instr, decode
from pyjit.utils import counters

from .test_interpreter import same

SCALE = 2.0


def scaled_sine(a, scale=SCALE, *, offset=0.5):
    return np.sin(a) * scale + offset


def summed(*arrays):
    return arrays[0] + arrays[-1] * len(arrays)


def make_shift(amount):
    def shift(a):
        return a + amount

    return shift


class Affine:
    def __init__(self, weight):
        self.weight = weight

    def apply(self, x):
        return x * self.weight

    def __call__(self, x):
        return self.apply(x) + 1


def graphs_and_breaks(fn, *args):
    explanation = pyjit.explain(fn)(*args)
    return explanation.graph_count, explanation.graph_break_count


def test_a_helper_is_traced_into_the_callers_graph(jit):
    def caller(x):
        return scaled_sine(x) + scaled_sine(x, 3.0, offset=1.0)

    x = np.linspace(0, 1, 5)
    assert same(jit(caller)(x), caller(x))
    assert counters["stats"]["unique_graphs"] == 1
    assert not pyjit._C.cache_entries(scaled_sine.__code__)  # never a frame of its own
    assert graphs_and_breaks(caller, x) == (1, 0)


def test_defaults_are_guarded(jit):
    def caller(x):
        return scaled_sine(x)

    compiled, x = jit(caller), np.ones(3)
    compiled(x)
    saved = scaled_sine.__defaults__
    try:
        scaled_sine.__defaults__ = (5.0,)
        assert same(compiled(x), caller(x))
    finally:
        scaled_sine.__defaults__ = saved
    assert len(pyjit.cache_entries(compiled)) == 2


def test_closures_and_star_args(jit):
    shift = make_shift(4.0)

    def caller(x, y):
        return shift(summed(x, y, x))

    x, y = np.ones(3), np.arange(3.0)
    assert same(jit(caller)(x, y), caller(x, y))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_methods_and_callable_objects(jit):
    affine = Affine(np.full(3, 2.0))

    def caller(x):
        return affine(x) + affine.apply(x)

    compiled, x = jit(caller), np.arange(3.0)
    assert same(compiled(x), caller(x))
    assert counters["stats"]["unique_graphs"] == 1
    affine.weight = np.full(3, 5.0)  # an attribute read through its source: no recompile
    assert same(compiled(x), caller(x))
    assert len(pyjit.cache_entries(compiled)) == 1


def test_a_rebound_method_or_a_shadowing_attribute_recompiles(jit):
    class Local(Affine):
        pass

    obj = Local(np.ones(2))

    def caller(x):
        return obj.apply(x)

    compiled, x = jit(caller), np.arange(2.0)
    compiled(x)
    Local.apply = lambda self, x: x - 7
    assert same(compiled(x), x - 7)
    obj.apply = lambda x: x * 100
    assert same(compiled(x), x * 100)
    assert len(pyjit.cache_entries(compiled)) == 3


def test_globals_of_another_module_are_read_through_the_function():
    module = types.ModuleType("elsewhere")
    exec("import numpy as np\nFACTOR = 3.0\ndef scale(a):\n    return np.cos(a) * FACTOR\n", module.__dict__)

    def caller(x):
        return module.scale(x)

    pyjit.reset()
    compiled, x = pyjit.compile(caller, backend="eager"), np.ones(3)
    assert same(compiled(x), np.cos(x) * 3.0)
    module.FACTOR = 10.0
    assert same(compiled(x), np.cos(x) * 10.0)
    assert len(pyjit.cache_entries(compiled)) == 2
    pyjit.reset()


def test_a_callee_that_breaks_runs_as_its_own_frame(jit, capsys):
    def inner(a):
        b = np.exp(a)
        print("inside")
        return b + 1

    def outer(x):
        y = np.sin(x)
        return inner(y) * 2

    x = np.arange(3.0)
    assert same(jit(outer)(x), np.exp(np.sin(x)) * 2 + 2)
    assert capsys.readouterr().out == "inside\n"
    assert len(pyjit._C.cache_entries(inner.__code__)) == 1  # captured, broken and resumed in the callee
    # The callee's exp was rolled back: the caller's graphs hold sin and the final multiply only.
    assert counters["stats"]["calls_captured"] == 2 + 2  # sin, multiply; exp, add in inner's frames


def test_recursion_and_generators_are_not_inlined(jit):
    def power(x, n):
        return x if n == 1 else x * power(x, n - 1)

    def squares(a):
        yield a * a

    def caller(x):
        return power(x, 3) + next(squares(x))

    x = np.arange(4.0)
    assert same(jit(caller)(x), caller(x))
    assert any("not inlined" in reason for reason in counters["graph_break"])


def test_an_error_in_a_callee_is_raised_from_the_callees_line(jit):
    def bad(a):
        return a.reshape(7)  # cannot reshape 4 elements

    def caller(x):
        return bad(x) + 1

    with pytest.raises(ValueError) as raised:
        jit(caller)(np.ones(4))
    assert [entry.name for entry in raised.traceback][-2:] == ["caller", "bad"]


def test_modules_are_inlined_through_their_protocol(jit):
    layer = pyjit.nn.Linear(3, 2)
    activation = pyjit.nn.GELU(approximate="tanh")

    def caller(t):
        return activation(layer(t)).sum()

    t = pyjit.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    compiled = jit(caller)
    got = compiled(t)
    got.backward()
    got_grads = t.grad.numpy().copy(), layer.weight.grad.numpy().copy()
    t.grad = layer.weight.grad = None
    want = caller(t)
    want.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(got_grads[0], t.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got_grads[1], layer.weight.grad.numpy(), rtol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_a_sequential_model_is_one_graph(jit):
    model = pyjit.nn.Sequential(pyjit.nn.Linear(4, 8), pyjit.nn.GELU(approximate="tanh"), pyjit.nn.Linear(8, 2))
    x = pyjit.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    with pyjit.no_grad():
        np.testing.assert_allclose(jit(model.forward)(x).numpy(), model(x).numpy(), rtol=1e-6)
    # Sequential.forward iterates the module: its __iter__ is inlined, over _modules.values()
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


OFFSET = np.ones(3)


def test_a_callee_that_reads_a_new_input_then_breaks_rolls_back_only_its_own_ops(jit):
    """The callee's new input goes in before the ops; rolling back the callee must not
    take the caller's last op with it (it crashed the transformed code)."""
    def helper(x):
        y = x + OFFSET
        print("a break inside the callee")
        return y

    def caller(x):
        doubled = x * 2  # the caller's last op before the call, used only after it
        return helper(x) + doubled

    x = np.arange(3.0)
    np.testing.assert_array_equal(jit(caller)(x), caller(x))
    assert any(key.startswith("inlining") and key.endswith("helper: a call to the function print is not captured")
               for key in counters["graph_break"])


def shift_five_times(p):
    for _ in range(5):
        p[1:] = p[:-1] + 1.0


def shift_many_times(steps, p):
    for _ in range(steps):
        shift_five_times(p)


def test_a_callee_that_breaks_after_updating_the_callers_array_gives_it_back_its_value(jit):
    """The callee's updates of the caller's array are rolled back with its ops: the array
    stood for an erased op and the graph could not be built (LintError at every call)."""
    p, want = np.zeros(10), np.zeros(10)
    shift_many_times(12, want)
    # Unrolled (not captured as loop nodes), the budget runs out inside a call.
    with pyjit.config.patch(capture_loops=False, unroll_limit=400):
        jit(shift_many_times)(12, p)
    np.testing.assert_array_equal(p, want)
    assert counters["stats"]["compile_failures"] == 0
    assert any("unroll_limit" in key for key in counters["graph_break"])


def test_a_hand_made_call_with_an_empty_argument_slot_is_refused_in_plain_words():
    def caller(a):
        return scaled_sine(a)

    bytecode = decode(caller.__code__)
    argument = next(i for i, instr in enumerate(bytecode.instructions)
                    if isinstance(instr, Instr) and instr.name == "LOAD_FAST" and instr.arg == "a")
    bytecode.instructions[argument] = Instr("PUSH_NULL", loc=bytecode.instructions[argument].loc)
    made = types.FunctionType(assemble(bytecode), globals(), "caller")
    with pytest.raises(pyjit.exc.Unsupported, match="built or edited by hand"):  # CPython would crash on it
        pyjit.compile(made, backend="eager", fullgraph=True)(np.ones(3))
