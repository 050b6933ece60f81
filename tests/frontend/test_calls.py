"""pyjit/frontend/calls.py: NumPy calls bind as NumPy binds them (NOTE(numpy-calls)),
arguments the registry does not model make the frame run as it is, and constants fold."""

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.utils import counters


def graph_calls(compiled):
    ((_, code),) = pyjit.cache_entries(compiled)
    graph_module = next(const.graph_module for const in code.co_consts if hasattr(const, "graph_module"))
    return [(node.target.name, node.args) for node in graph_module.graph.calls()]


def test_positional_options_bind_by_numpy_names(jit):
    def mean_rows(x):
        return np.mean(x, 0), x.sum(1, None, None, True)

    x = np.arange(6.0).reshape(2, 3)
    compiled = jit(mean_rows)
    got, want = compiled(x), mean_rows(x)
    assert all(np.array_equal(a, b) and a.shape == b.shape for a, b in zip(got, want))
    calls = graph_calls(compiled)
    assert [name for name, _ in calls][-1] == "sum" and calls[-1][1][1:] == (1, True)


@pytest.mark.parametrize("fn", [
    lambda x: np.sum(x, dtype=np.float32),
    lambda x: x.mean(0, np.float32),
], ids=["dtype", "positional-dtype"])
def test_unmodelled_arguments_break_and_the_call_runs_in_python(jit, fn):
    x = np.arange(4.0)
    want = fn(x.copy())
    np.testing.assert_array_equal(jit(fn)(x), want)
    assert counters["graph_break"]  # the call runs in Python at a graph break


def test_methods_take_unpacked_sizes_and_axes(jit):
    def reshaped(x):
        return x.reshape(3, 2), x.reshape((2, 3)).transpose(1, 0), x.reshape(-1, 1).transpose()

    x = np.arange(6.0)
    for got, want in zip(jit(reshaped)(x), reshaped(x)):
        np.testing.assert_array_equal(got, want)
        assert got.shape == want.shape


def test_constants_fold_and_builtins_answer(jit):
    def folded(x):
        n = len(x) + max(2, 3) + int(2.5)
        flag = isinstance(x, np.ndarray) and not isinstance(n, float)
        return x * n, flag, tuple([1, 2])

    x = np.ones(4)
    got = jit(folded)(x)
    assert np.array_equal(got[0], x * 9) and got[1:] == (True, (1, 2))


def test_bool_operators_are_logical_only_on_bools(jit):
    def bits(a, b):
        return a & b

    ints = np.array([1, 2, 3])
    np.testing.assert_array_equal(jit(bits)(ints, ints), ints)
    assert counters["graph_break"]


def test_user_object_attributes_are_read_through_sources(jit):
    class Config:
        scale = 2.0

        def __init__(self, shift):
            self.shift = shift

    def shifted(x, cfg):
        return x * cfg.scale + cfg.shift

    compiled = jit(shifted)
    x = np.ones(2)
    np.testing.assert_array_equal(compiled(x, Config(1.0)), x * 2 + 1)
    np.testing.assert_array_equal(compiled(x, Config(3.0)), x * 2 + 3)  # cfg.shift is guarded
    guard = pyjit.cache_entries(compiled)[0][0]
    assert "cfg.shift == 3.0" in guard and "type(cfg) is" in guard


class Checked(type):
    """A metaclass whose instance check answers from a list, one answer per call."""

    answers: list = []

    def __instancecheck__(cls, obj):
        return Checked.answers.pop(0)


class Anything(metaclass=Checked):
    pass


def test_isinstance_that_runs_python_is_not_folded(jit):
    """NOTE(isinstance-folding): a metaclass's __instancecheck__ runs on every call, not
    once at trace time with its answer baked in."""
    def pick(x, obj):
        return x + 1 if isinstance(obj, Anything) else x - 1

    Checked.answers[:] = [True, False]
    compiled, x = jit(pick), np.zeros(2)
    np.testing.assert_array_equal(compiled(x, object()), x + 1)
    np.testing.assert_array_equal(compiled(x, object()), x - 1)
    assert Checked.answers == []
    assert any("decides instances in Python" in reason for reason in counters["graph_break"])


def test_isinstance_of_plain_classes_folds(jit):
    def pick(x, obj):
        return x + 1 if isinstance(obj, (str, (bytes, complex))) else x - 1

    compiled, x = jit(pick), np.zeros(2)
    np.testing.assert_array_equal(compiled(x, b"2"), x + 1)
    np.testing.assert_array_equal(compiled(x, object()), x - 1)
    assert not counters["graph_break"]


class Settings:
    scale = 2.0
    offsets = [1.0]


def test_class_attributes_are_guarded_not_baked_in(jit):
    def scaled(x):
        return x * Settings.scale + Settings.offsets[0]

    compiled, x = jit(scaled), np.ones(1)
    try:
        np.testing.assert_array_equal(compiled(x), [3.0])
        Settings.scale, Settings.offsets[0] = 3.0, 5.0
        np.testing.assert_array_equal(compiled(x), [8.0])
    finally:
        Settings.scale, Settings.offsets[0] = 2.0, 1.0
    guards = [guard for guard, _ in pyjit.cache_entries(compiled)]
    assert len(guards) == 2 and any("Settings.scale == 3.0" in g and "Settings.offsets[0] == 5.0" in g for g in guards)


def test_attributes_of_constants_keep_their_identity(jit):
    def bounds(x, s):
        return x + 1, s.start, s.stop

    compiled, x = jit(bounds), np.zeros(2)
    first, second = slice([1], 2), slice([1], 2)  # equal, so one entry serves both
    for s in (first, second):
        _, start, stop = compiled(x, s)
        assert start is s.start and stop == 2
    assert len(pyjit.cache_entries(compiled)) == 1


# -- pyjit.Tensor values (NOTE(tensor-capture)) ---------------------------------------------------
def tensor_pair(requires_grad=True):
    values = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
    return (pyjit.tensor(values, requires_grad=requires_grad),
            pyjit.tensor(values.copy(), requires_grad=requires_grad))


def tensor_methods(t):
    moved = t.transpose(0, 2).permute(2, 1, 0).view(6, 4)  # torch's two-axis transpose swaps on 3-D
    return (moved.cos().cos().sum(dim=1, keepdim=True) * t.float().mean()).double().sum()


def test_tensor_methods_are_recorded_and_their_gradients_are_the_tapes(jit):
    compiled = jit(tensor_methods)
    captured, eager = tensor_pair()
    got, want = compiled(captured), tensor_methods(eager)
    assert type(got) is pyjit.Tensor and got.grad_fn is not None
    got.backward()
    want.backward()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(captured.grad.numpy(), eager.grad.numpy(), rtol=1e-12)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_requires_grad_and_grad_mode_are_guarded(jit):
    compiled = jit(lambda t: (t * 2).sum())
    with_grad, without_grad = tensor_pair()[0], tensor_pair(requires_grad=False)[0]
    assert compiled(with_grad).requires_grad
    assert not compiled(without_grad).requires_grad
    with pyjit.no_grad():
        assert not compiled(with_grad).requires_grad
    assert len(pyjit.cache_entries(compiled)) == 3


def test_backward_inside_a_compiled_function_runs_at_a_break(jit):
    def step(t):
        loss = (t.sin() ** 2).sum()
        loss.backward()
        return t.grad * 1.0

    captured, eager = tensor_pair()
    np.testing.assert_allclose(jit(step)(captured).numpy(), step(eager).numpy(), rtol=1e-12)
    assert any("Tensor.backward" in reason for reason in counters["graph_break"])


def iteration_builtins(x):
    total = x * 0
    for i, (a, b) in enumerate(zip((1.0, 2.0, 3.0), reversed(x)), start=1):
        total = total + a * b * i
    it = iter((5, 6, 7))
    first, rest = next(it), list(it)
    return total, first, rest, next(it, None), tuple(x), list(enumerate("ab")), sum(x), sum((0.1, 0.2, 0.3))


def test_iteration_builtins_unroll(jit):
    x = np.arange(6.0).reshape(3, 2)
    compiled = jit(iteration_builtins)
    for _ in range(2):
        assert same(compiled(x), iteration_builtins(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_an_iterator_also_held_elsewhere_is_not_taken_at_once(jit):
    def pairs(x):
        it = iter((1, 2, 3, 4))
        for a, b in zip(it, it):  # Python's zip takes from `it` lazily
            x = x + a * b
        return x

    np.testing.assert_array_equal(jit(pairs)(np.zeros(2)), pairs(np.zeros(2)))
    assert any("also holds elsewhere" in key for key in counters["graph_break"])


class _Weights:
    def __init__(self):
        self.scale, self.shift = np.full(3, 2.0), np.full(3, -1.0)


def test_getattr_with_a_constant_name_reads_the_attribute(jit):
    weights = _Weights()
    compiled = jit(lambda x, name: x * getattr(weights, name))
    x = np.arange(3.0)
    np.testing.assert_array_equal(compiled(x, "scale"), x * 2.0)
    np.testing.assert_array_equal(compiled(x, "shift"), x * -1.0)  # the name is guarded: a recompile
    assert counters["stats"]["unique_graphs"] == 2 and not counters["graph_break"]


def test_isinstance_sees_tensors_and_parameters(jit):
    def kinds(t, p, a):
        return (isinstance(t, pyjit.Tensor), isinstance(p, pyjit.nn.Parameter), isinstance(t * 2, pyjit.Tensor),
                isinstance(a, pyjit.Tensor), isinstance(a + 1, np.ndarray), isinstance(t + a, np.ndarray), a * 2)

    args = pyjit.tensor(np.ones(2)), pyjit.nn.Parameter(pyjit.tensor(np.ones(2))), np.ones(2)
    got, want = jit(kinds)(*args), kinds(*args)
    assert got[:-1] == want[:-1] == (True, True, True, False, True, False)


# -- in-place operators on arrays the graph computed (NOTE(functionalisation)) ----------------
def test_in_place_operators_on_computed_arrays_are_functional_ops_in_the_graph(jit):
    def f(a):
        x = a * 2
        alias = x
        x += 1
        alias *= 3.0  # the same array: both names see both changes
        x //= 2
        return x, alias

    a = np.arange(5.0)
    compiled = jit(f)
    got, want = compiled(a), f(a)
    assert same(got, want) and got[0] is got[1]
    assert not counters["graph_break"]
    assert [name for name, _ in graph_calls(compiled)] == ["multiply", "add", "multiply", "floor_divide"]


def test_in_place_results_are_cast_back_as_numpys_in_place_ufuncs_cast(jit):
    def f(a, b):
        x = a * 2
        x += b  # a float64 result, written into float32
        return x

    a, b = np.arange(4, dtype=np.float32), np.full(4, 0.1)
    compiled = jit(f)
    got = compiled(a, b)
    assert same(got, f(a, b)) and got.dtype == np.float32
    assert [name for name, _ in graph_calls(compiled)][-1] == "astype"


def into_a_viewed_array(a):
    x = a * 2
    head = x[:2]
    x += 1
    return head


def into_a_view(a):
    x = (a * 2)[:2]
    x += 1
    return x


def int_plus_float(a):
    x = a.astype(np.int64)
    x += 1.5
    return x


def into_a_broadcast(a):
    x = a.sum(keepdims=True)
    x += a
    return x


@pytest.mark.parametrize(("fn", "reason"), [
    (into_a_viewed_array, "a view, or an array a view was taken of"),
    (into_a_view, "a view, or an array a view was taken of"),
    (int_plus_float, "NumPy does not cast to int64 in place"),
    (into_a_broadcast, "a result whose shape is not the array's"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_in_place_operators_that_the_graph_cannot_model_break_with_numpys_behaviour(jit, fn, reason):
    plain, compiled_input = np.arange(3.0), np.arange(3.0)
    try:
        want = fn(plain)
    except Exception as error:  # NumPy refuses: the compiled code raises the same
        with pytest.raises(type(error)):
            jit(fn)(compiled_input)
    else:
        assert same(jit(fn)(compiled_input), want) and same(compiled_input, plain)
    assert any(reason in key for key in counters["graph_break"]), dict(counters["graph_break"])


def test_in_place_on_a_tensor_gives_the_tapes_gradient():
    def f(w):
        x = w * 2
        x += 1
        return (x * x).sum()

    pyjit.reset()
    w, tape_w = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.arange(3.0), requires_grad=True)
    pyjit.compile(f, backend="aot_eager")(w).backward()
    f(tape_w).backward()
    np.testing.assert_array_equal(w.grad.numpy(), tape_w.grad.numpy())


def test_in_place_on_a_tensor_an_op_already_read_breaks():
    def f(w):
        x = w * 2
        y = x * x  # the tape saves x here; changing it in place fails at backward
        x += 1
        return y.sum()

    pyjit.reset()
    counters.clear()
    out = pyjit.compile(f, backend="aot_eager")(pyjit.tensor(np.arange(3.0), requires_grad=True))
    assert any("a pyjit.Tensor an op has already read" in key for key in counters["graph_break"])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_tensor_in_place_methods_are_functional_ops_too():
    def f(w):
        x = w * 2
        x.add_(1).mul_(w)
        x.sub_(0.5)
        x.div_(2.0)
        return x.sum()

    pyjit.reset()
    counters.clear()
    w, tape_w = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.arange(3.0), requires_grad=True)
    out = pyjit.compile(f, backend="aot_eager")(w)
    assert not counters["graph_break"] and out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    want = f(tape_w)
    want.backward()
    assert out.item() == want.item()
    np.testing.assert_array_equal(w.grad.numpy(), tape_w.grad.numpy())


def test_an_in_place_method_on_a_leaf_that_requires_grad_gives_the_tapes_error():
    def f(w):
        w.add_(1)
        return w

    pyjit.reset()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        pyjit.compile(f, backend="aot_eager")(pyjit.tensor(np.arange(3.0), requires_grad=True))


def formats(x, n, scale, log):
    log.append(f"n={n} scale={scale:.2f} shape={x.shape} {n:>4}|{n!r}|{'s'!a}")
    log.append("size {} of {}".format(x.shape[0], n) + " " + str(n) + repr(scale) + format(n, "03d"))
    log.append("-".join(["a", str(n)]).upper())
    return np.sin(x) * n


@pytest.mark.parametrize("dynamic", [None, True])
def test_f_strings_and_str_format_on_captured_values_are_folded(jit, dynamic):
    compiled = jit(formats, dynamic=dynamic)
    for size, n in ((4, 3), (4, 3), (5, 7), (6, 7)):
        got, want = [], []
        np.testing.assert_allclose(compiled(np.ones(size), n, 0.5, got), formats(np.ones(size), n, 0.5, want))
        assert got == want  # a new n or size is a new constant: guarded, never stale
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_formatting_an_array_breaks_and_gives_pythons_text(jit):
    def shows(x, log):
        y = np.cos(x)
        log.append(f"{y}")
        return y + 1

    got, want = [], []
    np.testing.assert_allclose(jit(shows)(np.zeros(3), got), shows(np.zeros(3), want))
    assert got == want
    assert any("formatting of an array needs its values" in reason for reason in counters["graph_break"])


def test_an_array_method_that_is_not_captured_breaks_once_at_its_call(jit):
    def uses_methods(x):
        y = np.sin(x)
        values = y.tolist()  # one break, at the call
        copied, flat = y.copy(), y.flatten()  # captured: new arrays
        return y.__class__ is np.ndarray, values, copied, flat, flat.base is None

    x = np.linspace(0, 1, 4)
    got, want = jit(uses_methods)(x), uses_methods(x)
    assert got[0] is want[0] is True and got[1] == want[1] and got[4] is want[4] is True
    assert same(got[2], want[2]) and same(got[3], want[3]) and got[2] is not got[3]
    tolist = "ndarray.tolist() needs the array's values, which exist only when the graph runs"
    assert counters["graph_break"][tolist] == 1 and not any("copy" in reason or "flatten" in reason
                                                            for reason in counters["graph_break"])


def test_operator_getitem_indexes_as_the_subscript_does(jit):
    import operator

    def pick(x, pair):
        return operator.getitem(x, 1) * operator.getitem(pair, 0)

    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(jit(pick)(x, (2.0, 3.0)), pick(x, (2.0, 3.0)))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
