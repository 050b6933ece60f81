"""pyjit/frontend/policy.py: what the frontend skips, inlines and takes as a graph input,
declared in one place (NOTE(skipped-files))."""

import importlib
import json
import os
import pstats
import sys
import textwrap

import numpy as np
import pytest

import pyjit
from pyjit import nn
from pyjit.frontend import policy
from pyjit.frontend.policy import (code_file, is_library_code, is_pyjit_class, is_skipped_code, is_skipped_file,
                                  protocol_of)
from pyjit.utils import counters


def test_pyjit_numpy_and_the_standard_library_are_skipped_and_the_users_files_are_not():
    for module in (pyjit, np, json, os):
        assert is_skipped_file(module.__file__), module.__name__
    assert not is_skipped_file(__file__)


def test_pyjit_nn_is_skipped_but_inlined_as_it_declares():
    linear, numpy_function, compile_ = nn.functional.linear, np.testing.assert_allclose, pyjit.compile
    assert is_skipped_file(nn.functional.__file__) and not is_library_code(linear.__code__, linear.__globals__)
    assert is_library_code(numpy_function.__code__, numpy_function.__globals__)
    assert is_library_code(compile_.__code__, compile_.__globals__)


def test_only_pyjits_own_tensor_classes_are_graph_inputs(jit):
    class Mine(pyjit.Tensor):
        pass

    assert is_pyjit_class(pyjit.Tensor) and is_pyjit_class(nn.Parameter) and not is_pyjit_class(Mine)

    def double(t):
        return t * 2

    compiled = jit(double)
    np.testing.assert_array_equal(compiled(nn.Parameter(np.ones(2))).numpy(), [2.0, 2.0])
    assert len(pyjit.cache_entries(compiled)) == 1


def test_a_module_calls_its_forward_as_it_declares():
    class Doubling(nn.Module):
        def forward(self, x):
            return x * 2

    assert protocol_of(Doubling, "__call__").call == "forward"


def test_a_class_declares_its_protocol_and_a_subclass_redefining_a_method_loses_that_part():
    """NOTE(inline-declarations): the class attribute is the declaration, read through
    the MRO; it holds for a special method only while the declaring class provides it."""
    class Runner:
        __pyjit_inline_protocol__ = {"call": "run", "attribute_dicts": ("_slots",)}

        def __call__(self, x):
            return self.run(x)

        def __getattr__(self, name):
            return self.__dict__["_slots"][name]

    class OwnCall(Runner):
        def __call__(self, x):
            return x

    assert protocol_of(Runner, "__call__").call == "run"
    assert protocol_of(OwnCall, "__call__") is None
    assert protocol_of(OwnCall, "__getattr__").attribute_dicts == ("_slots",)
    assert protocol_of(type("Plain", (), {"__call__": Runner.__call__}), "__call__") is None


def test_generated_code_belongs_to_the_module_whose_globals_it_runs_with():
    """A dataclass's generated __init__ has the file name `<string>`; its module says whose it is."""
    init = pstats.FunctionProfile.__init__
    assert init.__code__.co_filename == "<string>" and not is_skipped_file(init.__code__.co_filename)
    assert code_file(init.__code__, init.__globals__) == pstats.__file__
    assert is_skipped_file(code_file(init.__code__, init.__globals__))
    namespace = {"__name__": "not_a_module"}
    exec("def made(x):\n    return x\n", namespace)
    assert code_file(namespace["made"].__code__, namespace) == "<string>"  # no module: its own file name


@pytest.mark.parametrize("name, skipped", [("cupy._core.pyjit_policy_test", True), ("cuda.pathfinder.pyjit_test", True),
                                           ("pyjit_policy_user_module", False)])
def test_cupys_packages_are_skipped_wherever_they_are_installed(monkeypatch, name, skipped):
    module = type(sys)(name)
    module.__file__ = "/somewhere/site-packages/" + name.replace(".", "/") + ".py"
    exec("def made(x):\n    return x\n", module.__dict__)
    monkeypatch.setitem(sys.modules, name, module)
    made = module.made
    assert is_skipped_code(made.__code__, made.__globals__) is skipped


LIBRARY = """
    import dataclasses

    import numpy as np


    @dataclasses.dataclass
    class Options:
        scale: float

        def __post_init__(self):
            self.scale = float(np.float64(self.scale))


    exec("def made(x):\\n    return x * 2\\n", globals())
"""


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A module the policy takes for a library: its folder is skipped as NumPy's is."""
    (tmp_path / "pyjit_test_library.py").write_text(textwrap.dedent(LIBRARY))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(policy, "_SKIPPED_DIRS", (*policy._SKIPPED_DIRS, os.path.join(str(tmp_path), "")))
    module = importlib.import_module("pyjit_test_library")
    yield module
    sys.modules.pop("pyjit_test_library", None)


def test_a_librarys_dataclass_made_in_a_compiled_function_is_not_captured_as_user_code(library, jit):
    """As CuPy's kernel compile does: the library's generated __init__ (`<string>`) runs
    inside the user's compiled function; the frame callback skips it, so its call to the
    library's __post_init__ breaks no graph and the only break is the user's own call."""
    def f(x):
        options = library.Options(3)
        return np.sin(x) * options.scale

    explained = pyjit.explain(f)(np.ones(3))
    assert [reason.explanation for reason in explained.break_reasons] == [
        "a call to the class pyjit_test_library.Options is not captured"]
    counters.clear()
    np.testing.assert_allclose(jit(f)(np.ones(3)), 3 * np.sin(np.ones(3)))
    assert sum(counters["graph_break"].values()) == 1
    assert pyjit.cache_entries(library.Options.__init__) == []


def test_a_function_a_library_generates_is_library_code(library):
    def f(x):
        return library.made(np.sin(x))

    (reason,) = pyjit.explain(f)(np.ones(3)).break_reasons
    assert "is library code" in reason.explanation and library.__file__ in reason.explanation


def test_a_library_that_declares_itself_inlined_is_inlined(library, monkeypatch):
    """NOTE(inline-declarations): the module's `__pyjit_inline__`, not its name or file,
    makes its functions inlined like the user's."""
    def f(x):
        return library.made(np.sin(x))

    monkeypatch.setattr(library, "__pyjit_inline__", True, raising=False)
    assert is_skipped_code(library.made.__code__, library.made.__globals__)
    assert not is_library_code(library.made.__code__, library.made.__globals__)
    explained = pyjit.explain(f)(np.ones(3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


def test_the_methods_namedtuple_writes_are_the_standard_librarys_though_their_file_is_a_string():
    import collections

    from pyjit.frontend.policy import is_namedtuple_method

    pair = collections.namedtuple("Pair", "first second")
    namespace = {}
    exec("def user(x):\n    return x\n", namespace)  # a user's code run with exec has "<string>" too
    assert pair.__new__.__code__.co_filename == namespace["user"].__code__.co_filename == "<string>"
    assert is_namedtuple_method(pair.__new__.__globals__)
    assert not is_namedtuple_method(namespace["user"].__globals__)


def test_a_named_tuple_made_inside_a_graphs_op_is_no_break():
    """numpy.linalg.eigh returns its EighResult from the op the graph runs: the tuple's
    __new__ frame is the standard library's, not a frame to capture."""
    def eigen(a):
        values, vectors = np.linalg.eigh(a)
        return values * 2.0

    a = np.diag([1.0, 2.0, 3.0]) + 0.1
    explanation = pyjit.explain(eigen)(a)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0), explanation.break_reasons
