"""pyjit/frontend/entry.py and its public wrappers in pyjit/__init__.py: the ways to
call compile, optimize as a context manager and a decorator, disable, graph_break."""

import concurrent.futures
import importlib
import multiprocessing
import os
import pickle
import sys

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters


class Recorder:
    """A backend that records the graphs it is handed and runs them as they are."""

    def __init__(self):
        self.graphs, self.modes = [], []

    def __call__(self, graph_module, example_inputs, mode=None):
        self.graphs.append(graph_module)
        self.modes.append(mode)
        return graph_module


def cosine(x):
    return np.cos(x) + 1


@pytest.fixture
def recorder(jit):
    return Recorder()


def test_three_ways_to_call_compile(recorder):
    x = np.ones(3)
    bare = pyjit.compile(cosine, backend=recorder)

    @pyjit.compile(backend=recorder, mode="max-autotune")
    def with_arguments(x):
        return np.sin(x)

    @pyjit.compile
    def bare_decorator(x):
        return x * 2

    np.testing.assert_allclose(bare(x), cosine(x))
    np.testing.assert_allclose(with_arguments(x), np.sin(x))
    assert bare.__wrapped__ is cosine and bare.__name__ == "cosine"
    assert recorder.modes == [None, "max-autotune"]
    assert bare_decorator.__wrapped__.__name__ == "bare_decorator"
    assert pyjit.compile(cosine, disable=True) is cosine


def test_optimize_as_context_manager_and_decorator(recorder):
    x = np.ones(3)
    with pyjit.optimize(recorder):
        np.testing.assert_allclose(cosine(x), np.cos(x) + 1)
    assert pyjit._C.get_eval_frame() is None
    assert len(recorder.graphs) == 1

    @pyjit.optimize(recorder)
    def sine(x):
        return np.sin(x) * 2

    np.testing.assert_allclose(sine(x), np.sin(x) * 2)
    assert len(recorder.graphs) == 2


def test_optimize_blocks_nest(recorder):
    outer, inner = pyjit.optimize(recorder), pyjit.optimize(recorder)
    with outer:
        with inner:
            assert pyjit._C.get_eval_frame() is inner.callback
        assert pyjit._C.get_eval_frame() is outer.callback
    assert pyjit._C.get_eval_frame() is None


def test_optimize_nopython_is_fullgraph(recorder):
    def prints(x):
        print(x)
        return x

    with pytest.raises(pyjit.exc.Unsupported, match="call to the function print"):
        with pyjit.optimize(recorder, nopython=True):
            prints(np.ones(1))


def test_disable_runs_without_capture(recorder):
    disabled = pyjit.disable(cosine)
    with pyjit.optimize(recorder):
        np.testing.assert_allclose(disabled(np.ones(2)), np.cos(np.ones(2)) + 1)
    assert recorder.graphs == [] and pyjit.cache_entries(cosine) == []


def test_graph_break_does_nothing_in_plain_python():
    assert pyjit.graph_break() is None


def test_compile_refuses_what_is_no_function():
    with pytest.raises(TypeError, match="Python function"):
        pyjit.compile(len, backend="eager")


def test_reset_forgets_everything(jit):
    compiled = jit(cosine)
    compiled(np.ones(2))
    assert pyjit.cache_entries(compiled)
    pyjit.reset()
    assert pyjit.cache_entries(compiled) == []
    assert counters["stats"]["unique_graphs"] == 0  # the counters cover what happened since the last reset


# ---- pickling (NOTE(pickling)) -------------------------------------------------------

SHIPPED = '''
import os
import sys

import numpy as np
import pyjit
from pyjit.utils import counters


@pyjit.compile
def decorated(x):
    return np.sin(x) * 2 + 1


def plain(x):
    return np.exp(-x * x) - x


def prints(x):
    print("a graph break")
    return x + 1


compiled_plain = pyjit.compile(plain, dynamic=False)
strict = pyjit.compile(prints, fullgraph=True)


def call(fn, x):
    """Run in a worker: fn's result, the graphs this process compiled, its pid."""
    before = counters["stats"]["unique_graphs"]
    result = fn(x)
    result = result.numpy() if isinstance(result, pyjit.Tensor) else result
    return result, counters["stats"]["unique_graphs"] - before, os.getpid()
'''


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A module of compiled functions that worker processes can import; kernels the
    workers compile go to a cache of this test's own."""
    (tmp_path / "shipped_functions.py").write_text(SHIPPED)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers get the parent's sys.path
    monkeypatch.setenv("PYJIT_CACHE_DIR", str(tmp_path / "cache"))
    module = importlib.import_module("shipped_functions")
    yield module
    sys.modules.pop("shipped_functions", None)


def test_compiled_functions_and_modules_run_in_a_process_pool(shipped):
    x = np.linspace(-2, 2, 101)
    linear = pyjit.nn.Linear(4, 3, dtype=np.float64)
    compiled_linear = pyjit.compile(linear)
    inputs = pyjit.tensor(np.arange(8.0).reshape(2, 4))
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {name: pool.submit(shipped.call, fn, argument) for name, fn, argument in [
            ("decorated", shipped.decorated, x), ("compiled_plain", shipped.compiled_plain, x),
            ("module", compiled_linear, inputs), ("strict", shipped.strict, x)]}
        for name, expected in [("decorated", np.sin(x) * 2 + 1), ("compiled_plain", np.exp(-x * x) - x),
                               ("module", linear(inputs).numpy())]:
            result, graphs, pid = jobs[name].result(timeout=300)
            assert pid != os.getpid()
            assert graphs == 1, name  # compiled in the worker, on its first call
            np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12, err_msg=name)
        with pytest.raises(pyjit.exc.Unsupported, match="call to the function print"):  # fullgraph=True travelled too
            jobs["strict"].result(timeout=300)


def test_a_decorated_function_pickles_as_its_module_name(shipped):
    data = pickle.dumps(shipped.decorated)
    assert b"shipped_functions" in data and b"decorated" in data
    assert pickle.loads(data) is shipped.decorated
    copy = pickle.loads(pickle.dumps(shipped.compiled_plain))  # not a module name: rebuilt
    assert copy is not shipped.compiled_plain and copy.__wrapped__ is shipped.plain
    x = np.arange(3.0)
    np.testing.assert_array_equal(copy(x), shipped.plain(x))


def test_functions_optimize_decorates_do_not_pickle():
    with pytest.raises(pickle.PicklingError, match="not made by pyjit.compile"):
        pickle.dumps(pyjit.optimize("eager")(cosine))
    assert pickle.loads(pickle.dumps(pyjit.disable(cosine))).__wrapped__ is cosine


def test_a_graph_module_compiles_as_its_printed_forward_in_one_graph():
    """What compiled autograd hands `pyjit.compile(...)`: the printed code frees values
    with `del`, which is captured, so the whole module is one graph."""
    counters.clear()
    module = pyjit.make_fx(lambda x: np.cos(np.cos(x)).sum())(pyjit.ones(3))
    assert "del " in module.code
    compiled = pyjit.compile(module, backend="eager")
    x = np.linspace(0, 1, 3, dtype=np.float32)
    np.testing.assert_allclose(compiled(x), module(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
