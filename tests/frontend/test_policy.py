"""pyjit/frontend/policy.py: what the frontend skips, inlines and takes as a graph input,
declared in one place (NOTE(skipped-files))."""

import json
import os

import numpy as np

import pyjit
from pyjit import nn
from pyjit.frontend.policy import is_library, is_pyjit_class, is_skipped_file, protocol_of


def test_pyjit_numpy_and_the_standard_library_are_skipped_and_the_users_files_are_not():
    for module in (pyjit, np, json, os):
        assert is_skipped_file(module.__file__), module.__name__
    assert not is_skipped_file(__file__)


def test_pyjit_nn_is_skipped_but_inlined_as_it_declares():
    assert is_skipped_file(nn.functional.__file__) and not is_library(nn.functional.__file__)
    assert is_library(np.__file__) and is_library(pyjit.__file__)


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
