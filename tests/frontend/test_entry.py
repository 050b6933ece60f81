"""pyjit/frontend/entry.py and its public wrappers in pyjit/__init__.py: the ways to
call compile, optimize as a context manager and a decorator, disable, graph_break."""

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
    assert counters["stats"]["unique_graphs"] == 1
