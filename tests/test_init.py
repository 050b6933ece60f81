"""pyjit's public names that exist so far (pyjit/__init__.py)."""

import numpy as np
import pytest

import pyjit
from pyjit import _C


def double(x):
    return x * 2


def compile_double_as_triple(frame):
    if frame.f_code is not double.__code__:
        return None
    guard = _C.GuardProgram([("local", 0, "x")], [("type", 0, type(frame.args[0]))])
    consts = tuple(3 if const == 2 else const for const in double.__code__.co_consts)
    return guard, double.__code__.replace(co_consts=consts)


def run_compiled(x):
    return _C.CompiledFunction(double, compile_double_as_triple)(x)


def test_cache_entries_gives_guard_text_and_code():
    pyjit.reset()
    assert run_compiled(5) == 15
    ((guard_text, code),) = pyjit.cache_entries(double)
    assert guard_text == "type(x) is int"
    assert code.co_consts != double.__code__.co_consts
    pyjit.reset()


def test_cache_entries_sees_through_a_wrapper():
    pyjit.reset()
    compiled = _C.CompiledFunction(double, compile_double_as_triple)
    assert compiled(1.5) == 4.5
    assert [text for text, _ in pyjit.cache_entries(compiled)] == ["type(x) is float"]
    pyjit.reset()


def test_reset_forgets_compiled_entries():
    assert run_compiled(5) == 15
    pyjit.reset()
    assert pyjit.cache_entries(double) == []
    assert double(5) == 10


def test_reset_starts_the_counters_again():
    import numpy as np

    from pyjit.utils import counters

    pyjit.compile(lambda x: x + 1, backend="eager")(np.ones(2))
    assert counters["stats"]["unique_graphs"] >= 1
    pyjit.reset()
    assert not any(counters.values())


def test_compile_uses_the_inductor_backend_unless_told_otherwise(monkeypatch):
    import numpy as np

    from pyjit.backends import registry

    used = []

    def spy(graph_module, example_inputs):
        used.append("inductor")
        return graph_module

    monkeypatch.setitem(registry._BACKENDS, "inductor", spy)
    pyjit.reset()
    try:
        def shifted(x):
            return np.sin(x) + 1.0

        np.testing.assert_array_equal(pyjit.compile(shifted)(np.arange(3.0)), np.sin(np.arange(3.0)) + 1.0)
    finally:
        pyjit.reset()
    assert used == ["inductor"]


def test_compiling_a_module_compiles_its_forward():
    pyjit.reset()
    layer = pyjit.nn.Linear(4, 3)
    compiled = pyjit.compile(layer, backend="eager")
    assert isinstance(compiled, pyjit.nn.CompiledModule) and compiled._orig_mod is layer
    assert compiled.weight is layer.weight  # attributes are the module's
    x = pyjit.tensor(np.linspace(-1, 1, 8).reshape(2, 4))
    np.testing.assert_array_equal(compiled(x).numpy(), layer(x).numpy())
    ((guards, _),) = pyjit.cache_entries(type(layer).forward)
    assert "self._parameters['weight']" in guards
    pyjit.reset()


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
def test_every_mode_compiles_and_agrees(mode):
    def chain(x):
        return np.sin(x) * np.cos(x) + 1

    x = np.linspace(0, 1, 33)
    np.testing.assert_allclose(pyjit.compile(chain, mode=mode)(x), chain(x), rtol=1e-12)
    assert isinstance(pyjit.list_mode_options(mode), dict)


def test_an_unknown_mode_is_refused_when_compiling():
    with pytest.raises(RuntimeError, match="Unrecognized mode='fastest'"):
        pyjit.compile(lambda x: x, mode="fastest")
    assert pyjit.list_mode_options("reduce-overhead") == {"cuda_graphs": True, "reuse_buffers": True}


def test_options_a_backend_does_not_take_are_refused_when_compiling():
    with pytest.raises(RuntimeError, match="Unexpected optimization option 'bogus'.*'eager' takes no options"):
        pyjit.compile(double, backend="eager", options={"bogus": 1})
    with pytest.raises(RuntimeError, match="takes no options"):
        pyjit.compile(double, backend=lambda graph_module, example_inputs: graph_module, options={"x": 1})
    seen = []

    def with_options(graph_module, example_inputs, options=None):
        seen.append(options)
        return graph_module

    assert pyjit.compile(double, backend=with_options, options={"x": 1})(np.ones(2)).tolist() == [2, 2]
    assert seen == [{"x": 1}]
    assert pyjit.compile(double, backend="eager", options={})(np.ones(2)).tolist() == [2, 2]
    pyjit.reset()
