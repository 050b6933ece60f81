"""pyjit/frontend/array_calls.py: NumPy calls bind as NumPy binds them (NOTE(numpy-calls)),
arguments the registry does not model make the frame run as it is, ndarray and Tensor
methods are recorded, and a method that is not captured breaks once, at its call."""

import inspect

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.frontend.array_calls import _with_input_device
from pyjit.frontend.values import ConstantValue
from pyjit.graph import Graph, TensorMeta
from pyjit.ops import REGISTRY
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
    lambda x: np.sum(x, where=x > 1),
    lambda x: x.sum(0, None, None, False, 1.0),
], ids=["where", "positional-initial"])
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


def test_backward_inside_a_compiled_function_runs_at_a_break(jit):
    def step(t):
        loss = (t.sin() ** 2).sum()
        loss.backward()
        return t.grad * 1.0

    captured, eager = tensor_pair()
    np.testing.assert_allclose(jit(step)(captured).numpy(), step(eager).numpy(), rtol=1e-12)
    assert any("Tensor.backward" in reason for reason in counters["graph_break"])


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


# -- sorting, scans, repeats, diagonals and complex parts (issue 20) ---------------------------------
def ordering_calls(x):
    return (np.cumsum(x, axis=1), x.cumsum(), x.cumprod(0), np.cumprod(x), np.sort(x), np.sort(x, axis=None),
            np.sort(x, 0, kind="mergesort"), x.argsort(kind="stable"), np.argsort(x, axis=0, stable=True),
            x.repeat(2, axis=0), np.repeat(x, [1, 2, 0, 1], axis=1), np.repeat(x, 3))


def diagonal_calls(x):
    return (x.diagonal(), np.diagonal(x, -1) * 2, np.trace(x, 1), x.trace(), x.view(), x.conj(), x.conjugate(),
            np.conj(x), x.real + 0, x.imag, np.real(x), np.imag(x))


NAN = float("nan")
ORDERING_INPUTS = {
    "float": np.random.default_rng(0).standard_normal((3, 4)),
    "int": np.array([[3, -1, 3, 0], [2, 2, -5, 2], [0, 7, 0, 1]], dtype=np.int32),
    "nan-and-ties": np.array([[1.0, NAN, -2.0, 1.0], [NAN, 0.5, NAN, -np.inf], [0.0, -0.0, 2.0, 0.0]]),
    "bool": np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]]),
}


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("calls", [ordering_calls, diagonal_calls])
@pytest.mark.parametrize("kind", list(ORDERING_INPUTS))
def test_sorting_scans_repeats_and_diagonals_compile_in_one_graph(jit, backend, calls, kind):
    x = ORDERING_INPUTS[kind]
    with np.errstate(invalid="ignore"):  # cumprod meets inf * 0 in NumPy and in the graph
        got, want = jit(calls, backend=backend, fullgraph=True)(x.copy()), calls(x.copy())
    for got_item, want_item in zip(got, want, strict=True):
        assert type(got_item) is type(want_item) and got_item.dtype == want_item.dtype
        assert got_item.shape == want_item.shape
        np.testing.assert_allclose(got_item, want_item, rtol=1e-12)  # inductor's float sums (docs/codegen.md)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_complex_parts_compile_in_one_graph(jit, backend):
    def parts(z):
        return z.real * 2, z.imag - 1, np.conj(z), z.conj().imag, np.real(z.cumsum()), (z.real + z.imag).sum()

    z = np.array([[1.5 - 2.0j, -0.5j], [0.25 + 1.0j, 3.0]])
    for got, want in zip(jit(parts, backend=backend, fullgraph=True)(z), parts(z), strict=True):
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_conj_of_a_real_array_is_the_array_itself_as_in_numpy(jit):
    def conjugated(x):
        return x.conj(), x.conjugate(), np.conj(x)

    x = np.arange(3.0)
    got = jit(conjugated, fullgraph=True)(x)
    assert got[0] is x and got[1] is x and got[2] is not x and same(got[2], np.conj(x))


def test_a_view_from_diagonal_or_real_sees_a_later_write_as_numpy_shows_it(jit):
    def written_after_views(x):
        diagonal, real = x.diagonal(), x.real
        x[0, 0] = 5.0
        return diagonal + 0, real * 1

    got, want = jit(written_after_views)(np.ones((3, 3))), written_after_views(np.ones((3, 3)))
    assert all(same(a, b) for a, b in zip(got, want)) and got[0][0] == 5.0


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_gradients_of_sorting_scans_repeats_and_diagonals_match_finite_differences(jit, backend):
    def loss(t):
        scanned = t.cumsum(1) * t.cumprod(0)
        ordered = np.sort(t, axis=0) * np.arange(1.0, 5.0)
        return (scanned.diagonal() * t.trace() + ordered.repeat(2, axis=1).sum(1)).sum() + np.sort(t, axis=None)[-3:]

    compiled = jit(loss, backend=backend, fullgraph=True)
    values = np.random.default_rng(3).uniform(0.5, 2.0, (3, 4))
    values[1, 2] = 0.0  # cumprod's derivative at a zero
    assert pyjit.autograd.gradcheck(compiled, (pyjit.tensor(values, requires_grad=True),))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_functions_out_argument_is_written_and_returned_as_numpy_does(jit, backend):
    """np.clip is no ufunc: its out= is the function's result written into the array
    (NOTE(functionalisation)), which the call returns; one graph, no break."""
    def step(position, velocity):
        position += velocity
        clipped = np.clip(position, 0.0, 1.0, out=position)
        totals = np.sum(np.outer(position, velocity), axis=0, out=np.zeros(position.shape[0]))
        return clipped, totals

    args = np.linspace(-1.0, 2.0, 7), np.full(7, 0.25)
    got_args, want_args = [a.copy() for a in args], [a.copy() for a in args]
    got, want = jit(step, backend=backend)(*got_args), step(*want_args)
    assert want[0] is want_args[0] and got[0] is got_args[0]
    assert all(np.array_equal(a, b) for a, b in zip([*got, *got_args], [*want, *want_args]))
    assert not counters["graph_break"]


@pytest.mark.parametrize("fn, reason", [
    (lambda x: x.sort(), "ndarray.sort() changes the array in place, which is not captured"),
    (lambda x: x.view(np.int64), "ndarray.view(dtype or type) reinterprets the array's memory, which is not modelled"),
    (lambda x, counts=np.array([1, 2, 0, 1]): np.repeat(x, counts, axis=1),
     "repeat: counts held in an array: their values decide the shape of the result, which a graph cannot know"),
], ids=["sort-in-place", "view-dtype", "repeat-array-counts"])
def test_what_is_not_modelled_breaks_with_a_plain_reason(jit, fn, reason):
    x = np.random.default_rng(1).standard_normal((3, 4))
    got_x, want_x = x.copy(), x.copy()
    got, want = jit(fn)(got_x), fn(want_x)
    assert same(got, want) and same(got_x, want_x)
    assert reason in counters["graph_break"]


# -- creation from shapes (issue 30) ----------------------------------------------------------
def creation_calls(x):
    n, m = x.shape
    return (np.zeros((n, m), dtype=np.float32) + x, np.ones(n), np.full(x.shape, 2.5) * x, np.full((2, m), x[0]),
            np.empty((n, 0)), np.eye(n, m, 1), np.identity(m, dtype=int), np.tri(n, k=-1), np.triu(x), np.tril(x, 1),
            np.linspace(0, 1, m), np.logspace(0, 2, n, base=2.0), np.arange(m, dtype=np.float32), np.zeros(m, "i8"),
            np.hanning(m) * x, np.hamming(n), np.blackman(m), np.bartlett(n), np.kaiser(m, 5.0), np.indices(x.shape),
            np.indices((n, 2), dtype=np.float32), np.fft.fftfreq(m, 0.5) * x, np.fft.rfftfreq(m),
            np.linspace(x[0], x[1], 3, axis=-1), np.linspace(0.5, x, 4, endpoint=False))


def assert_gives_numpys_results(compiled, fn, *inputs, rtol=0.0):
    """`compiled(*inputs)` returns what `fn(*inputs)` does: the same types, dtypes, shapes
    and values (within `rtol`)."""
    got, want = compiled(*inputs), fn(*inputs)
    for got_item, want_item in zip(got, want, strict=True):
        assert type(got_item) is type(want_item) and np.shape(got_item) == np.shape(want_item)
        assert np.asarray(got_item).dtype == np.asarray(want_item).dtype
        np.testing.assert_allclose(got_item, want_item, rtol=rtol)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_creation_from_shapes_runs_in_one_graph(jit, backend, dynamic):
    compiled = jit(creation_calls, backend=backend, fullgraph=True, dynamic=dynamic)
    for shape in ((3, 4), (5, 6)):
        assert_gives_numpys_results(compiled, creation_calls, np.random.default_rng(2).standard_normal(shape),
                                    rtol=1e-12)
    assert counters["stats"]["unique_graphs"] == (1 if dynamic else 2)


def spaced(x):
    samples, step = np.linspace(0.0, 1.0, x.shape[0], retstep=True)
    between, steps = np.linspace(x[0], x, 4, endpoint=False, retstep=True)
    counts, unit = np.linspace(0, 10, 5, dtype=np.int32, retstep=True)
    return samples * x + step, step, between, steps, counts, unit, np.linspace(0, 1, 1, retstep=True)[1]


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_linspace_with_retstep_gives_the_samples_and_numpys_step_in_one_graph(jit, backend, dynamic):
    """NOTE(linspace-retstep): the step a NumPy scalar between scalars, an array between arrays."""
    compiled = jit(spaced, backend=backend, fullgraph=True, dynamic=dynamic)
    for size in (5, 7):
        x = np.random.default_rng(3).standard_normal(size)
        got, want = compiled(x), spaced(x)
        assert [type(value) for value in got] == [type(value) for value in want]
        for one, other in zip(got, want):
            np.testing.assert_allclose(one, other, rtol=1e-15)
            assert np.asarray(one).dtype == np.asarray(other).dtype


class _Capture:
    """A tracer whose frame has no argument left to read."""

    def __init__(self, *devices):
        self.capture = self.root = self
        self.arguments, self.locals = {}, {}
        self.inputs = [(None, None, Graph().placeholder(f"x{index}", TensorMeta((2,), np.float32, device)))
                       for index, device in enumerate(devices)]


@pytest.mark.parametrize("devices, chosen", [(("cuda:1", "cuda:1"), "cuda:1"), (("cpu",), None), ((), None),
                                             (("cpu", "cuda:0"), None)])
def test_creation_ops_follow_the_device_of_the_frames_inputs(devices, chosen):
    """NOTE(devices-follow-inputs): np.zeros(n) in a function of CuPy arrays is a CuPy array."""
    tracer = _Capture(*devices)
    kwargs = _with_input_device(tracer, REGISTRY["zeros"], (ConstantValue(3),), {})
    assert (kwargs["device"].value if kwargs else None) == chosen
    if chosen is not None:
        assert REGISTRY["zeros"].meta(3, device=kwargs["device"].value).device == chosen
    given = {"device": ConstantValue("cpu")}
    assert _with_input_device(tracer, REGISTRY["arange"], (ConstantValue(3),), given) is given
    assert _with_input_device(tracer, REGISTRY["triu"], (ConstantValue(3),), {}) == {}


class _StandInCupyArray:
    """What the frontend sees of a cupy.ndarray's type (its name and module): no values."""


_StandInCupyArray.__name__, _StandInCupyArray.__module__ = "ndarray", "cupy._core.core"


class _Frame:
    """A tracer whose frame has arguments x, y, n and z, none read yet."""

    def __init__(self, *arguments):
        self.capture = self.root = self.frame = self
        self.args, self.arguments, self.locals, self.read = list(arguments), {"x": 0, "y": 1, "n": 2, "z": 3}, {}, []

    def load_local(self, name):
        self.read.append(name)


@pytest.mark.parametrize("first", [np.ones(2), _StandInCupyArray()])
def test_a_creation_call_reads_the_frames_array_arguments_first_where_one_is_a_cupy_array(first):
    """NOTE(devices-follow-inputs): `grid = np.arange(n)` before `x` is read still follows
    x's device; a frame of NumPy arrays is read as the code reads it (no input added)."""
    from pyjit.frontend.array_calls import _read_array_arguments

    tracer = _Frame(first, np.ones(3), 4, _StandInCupyArray() if type(first) is np.ndarray else None)
    _read_array_arguments(tracer)
    assert tracer.read == ["x", "y", "z"] if type(first) is np.ndarray else ["x", "y"]
    numpy_only = _Frame(np.ones(2), np.ones(3), 4, None)
    _read_array_arguments(numpy_only)
    assert numpy_only.read == []


# Every entry that makes an array from constants alone (NOTE(creation-device)), with a
# call NumPy accepts: a new entry with a device parameter needs a row here.
_CREATION_CALLS = {"arange": (3,), "zeros": (3,), "ones": ((2, 3),), "empty": (0,), "full": (3, 1.5),
                   "eye": (3,), "identity": (2,), "tri": (3,), "linspace": (0, 1, 5), "logspace": (0, 1, 5),
                   "linspace_step": (0, 1, 5), "indices": ((2, 3),), "fftfreq": (8,), "rfftfreq": (8, 0.5), "hanning": (5,), "hamming": (5,),
                   "blackman": (5,), "bartlett": (5,), "kaiser": (5, 2.0)}


def test_every_creation_op_takes_the_device_of_the_frames_inputs():
    """np.hanning(n), np.fft.fftfreq(n), np.indices(shape) in a function of CuPy arrays
    make their arrays on that GPU, as np.zeros does (NOTE(devices-follow-inputs))."""
    with_device = sorted(name for name, entry in REGISTRY.items()
                         if "device" in inspect.signature(getattr(entry, "impl", entry)).parameters)
    assert with_device == sorted(_CREATION_CALLS)
    tracer = _Capture("cuda:1")
    for name, args in _CREATION_CALLS.items():
        kwargs = _with_input_device(tracer, REGISTRY[name], tuple(map(ConstantValue, args)), {})
        assert kwargs["device"].value == "cuda:1", name
        assert REGISTRY[name].meta(*args, device="cuda:1").device == "cuda:1", name
        assert REGISTRY[name].meta(*args).device == "cpu", name


def more_ufuncs(x, y):
    return (np.exp2(x), np.log2(y), np.log10(y), np.cbrt(x), np.hypot(x, y), np.logaddexp(x, y),
            np.logaddexp2(x, 1.5), np.fmod(x, y), np.remainder(x, y), np.rint(x * 3), np.trunc(x * 3),
            np.fmin(x, np.nan), np.fmax(x, y), np.copysign(y, x), np.signbit(x), np.heaviside(x, 0.5),
            np.deg2rad(x), np.rad2deg(x), np.arcsinh(x), np.arccosh(y + 1), np.arctanh(x / 3), np.degrees(x),
            np.radians(x), np.nextafter(x, y), np.spacing(x), np.gcd(x.astype(int), 6), np.lcm(x.astype(int), 4))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_the_real_ufuncs_run_in_one_graph(jit, backend):
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
    compiled = jit(more_ufuncs, backend=backend, fullgraph=True)
    assert_gives_numpys_results(compiled, more_ufuncs, x, y, rtol=1e-14)  # within the C library's few ulp


def two_result_ufuncs(x, y):
    quotient, remainder = np.divmod(x, y)
    fraction, whole = np.modf(x * 3)
    mantissa, exponent = np.frexp(x)
    return quotient, remainder, fraction, whole, mantissa, exponent, np.ldexp(mantissa, exponent + 1), \
        np.divmod(x.astype(np.int32), 3)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_the_ufuncs_with_two_results_run_in_one_graph(jit, backend):
    """NOTE(two-result-ufuncs): divmod, modf and frexp give tuples of NumPy's values."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-9, 9, (3, 4)), rng.uniform(0.5, 2, (4,))
    compiled = jit(two_result_ufuncs, backend=backend, fullgraph=True)
    assert_gives_numpys_results(compiled, two_result_ufuncs, x, y)


def test_the_real_ufuncs_have_gradients_on_tensors():
    x = pyjit.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    loss = (np.exp2(x) + np.log2(x * x) + np.cbrt(x) + np.hypot(x, 2.0) + np.logaddexp(x, 0.5) + np.arcsinh(x)).sum()
    loss.backward()
    v = x.detach().numpy()
    want = (np.exp2(v) * np.log(2) + 2 / (v * np.log(2)) + 1 / (3 * np.cbrt(v) ** 2) + v / np.hypot(v, 2.0)
            + np.exp(v - np.logaddexp(v, 0.5)) + 1 / np.sqrt(v * v + 1))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


# -- ufunc methods (NOTE(ufunc-methods)) ------------------------------------------------------
def ufunc_methods(x, v):
    return (np.add.outer(v, v), np.multiply.outer(x, v), np.subtract.outer(v, 2.0), np.outer(x, v),
            np.maximum.outer(v, x), np.add.reduce(x), np.multiply.reduce(x, 1), np.maximum.reduce(x, axis=None),
            np.minimum.reduce(x, keepdims=True), np.logical_or.reduce(x > 0, axis=1), np.add.accumulate(x),
            np.multiply.accumulate(x, axis=1), np.maximum.accumulate(x), np.minimum.accumulate(x, 1),
            np.logical_and.accumulate(x > -1, axis=1), np.logical_or.accumulate(x > 1), np.logical_xor.accumulate(x > 0))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_ufunc_methods_run_in_one_graph(jit, backend):
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal((3, 4)), rng.standard_normal(5)
    compiled = jit(ufunc_methods, backend=backend, fullgraph=True)
    assert_gives_numpys_results(compiled, ufunc_methods, x, v, rtol=1e-12)


def scatter_adds(totals, index, weights):
    np.add.at(totals, index, weights)  # repeated indices accumulate; totals is the caller's
    counts = np.zeros(totals.shape[0])
    np.add.at(counts, index, 1)
    return counts


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_add_at_adds_in_place_with_repeated_indices_in_one_graph(jit, backend):
    """NOTE(ufunc-methods): np.add.at is index_add written into its first argument."""
    index, weights = np.array([0, 2, 2, 4, 0, 2]), np.linspace(0.5, 3.0, 6)
    want_totals, got_totals = np.ones(5), np.ones(5)
    compiled = jit(scatter_adds, backend=backend, fullgraph=True)
    np.testing.assert_array_equal(compiled(got_totals, index, weights), scatter_adds(want_totals, index, weights))
    np.testing.assert_array_equal(got_totals, want_totals)


def scatter_updates(peaks, lows, index, values):
    np.maximum.at(peaks, index, values)  # repeated indices apply one after the other
    np.minimum.at(lows, index, values)
    spent = np.full(peaks.shape[0], 10.0)
    np.subtract.at(spent, index, values)
    scaled = np.ones(peaks.shape[0])
    np.multiply.at(scaled, index, 2)
    return spent, scaled


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_subtract_multiply_maximum_and_minimum_at_update_in_place_in_one_graph(jit, backend):
    """NOTE(ufunc-at)."""
    index, values = np.array([0, 2, 2, 4, 0, 2]), np.array([0.5, -1.0, 3.0, 2.0, 1.5, 0.25])
    want, got = (np.zeros(5), np.zeros(5)), (np.zeros(5), np.zeros(5))
    compiled = jit(scatter_updates, backend=backend, fullgraph=True)
    for one, other in zip(compiled(*got, index, values), scatter_updates(*want, index, values)):
        np.testing.assert_array_equal(one, other)
    for one, other in zip(got, want):
        np.testing.assert_array_equal(one, other)


def test_a_ufunc_method_without_a_registry_op_breaks_with_a_plain_reason(jit):
    x = np.arange(6.0)
    np.testing.assert_array_equal(jit(lambda x: np.subtract.accumulate(x) + 1)(x), np.subtract.accumulate(x) + 1)
    assert any("numpy.subtract.accumulate is not captured" in reason for reason in counters["graph_break"])


# -- NumPy scalars and dtype= (NOTE(scalar-values), NOTE(dtype-reductions)) -------------------
def accumulate_diagonal(a):
    s, p = 0.0, 1
    for i in range(3):
        s += np.tanh(a[i, i])
        p *= a[i, 0] + np.float32(0.5)
    total = 0
    total += a.sum(dtype=np.float32)
    return s, p, total, np.float64(a[1, 1]), np.int8(a), np.float32(2) * a[0], np.mean(a, 0, np.float32)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_numpy_scalars_and_python_accumulators_are_values_of_one_graph(jit, backend):
    a = np.random.default_rng(6).uniform(-3, 3, (3, 4))
    compiled = jit(accumulate_diagonal, backend=backend, fullgraph=True)
    assert_gives_numpys_results(compiled, accumulate_diagonal, a, rtol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1


def test_a_scalar_updated_in_place_leaves_its_aliases_alone(jit):
    def rebinds(a):
        s = a[0, 0]
        alias = s
        s += 1.0
        return s, alias

    a = np.arange(4.0).reshape(2, 2)
    assert jit(rebinds, fullgraph=True)(a) == rebinds(a) == (1.0, 0.0)


def test_where_with_one_argument_breaks_with_a_plain_reason(jit):
    x = np.array([1.0, -2.0, 3.0])
    (got,), (want,) = jit(lambda x: np.where(x > 0))(x), np.where(x > 0)
    np.testing.assert_array_equal(got, want)
    assert any("where(condition) with one argument is nonzero(condition)" in reason
               for reason in counters["graph_break"])


# -- manipulation (pyjit/ops/manipulation.py) --------------------------------------------------
def manipulations(x, v):
    grid_x, grid_y = np.meshgrid(v, v[:2])
    return (np.ravel(x), x.flatten(), np.flip(x), np.fliplr(x), np.flipud(x), np.roll(x, 1, axis=1), np.roll(v, -2),
            np.rot90(x), np.tile(v, (2, 1)), np.pad(x, 1), np.pad(x, ((0, 1), (2, 0)), mode="edge"),
            np.pad(x, 1, "reflect"), np.pad(v, 2, mode="wrap"), np.hstack([x, x]), np.vstack((v, v)),
            np.column_stack([v, v]), np.atleast_2d(v), np.atleast_3d(x), grid_x + grid_y, np.copy(x),
            np.ascontiguousarray(x.T), np.ravel(x, order="F"), x.ravel("F"), x.flatten(order="F"))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_manipulation_routines_run_in_one_graph(jit, backend):
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal((3, 4)), rng.standard_normal(5)
    assert_gives_numpys_results(jit(manipulations, backend=backend, fullgraph=True), manipulations, x, v)


def rolls(x):
    return np.roll(x, 2, axis=0), np.roll(x, -1), np.roll(x, x.shape[1] // 2, axis=1), np.roll(x, (1, -2), axis=(0, 1))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_roll_along_axes_of_symbolic_size_is_one_graph_for_every_size(jit, backend):
    compiled = jit(rolls, backend=backend, fullgraph=True, dynamic=True)
    for shape in ((3, 4), (5, 6), (4, 8)):
        assert_gives_numpys_results(compiled, rolls, np.random.default_rng(1).standard_normal(shape))
    assert counters["stats"]["unique_graphs"] == 1
