"""pyjit/graph/module.py: GraphModule runs the printed code and reports failures at the user's line."""

import sys
import traceback

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.exc import LintError
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.source import SourceLoc


def here() -> SourceLoc:
    """The caller's line, as the frontend would record it."""
    frame = sys._getframe(1)
    return SourceLoc(frame.f_code.co_filename, frame.f_lineno)


def adding_graph():
    """x + y, recorded at a line of this file; built for shapes (3,) and (3,)."""
    graph = Graph("adder")
    x = graph.placeholder("x", TensorMeta((3,), np.float64))
    y = graph.placeholder("y", TensorMeta((3,), np.float64))
    loc = here()  # the user's line, which the note quotes
    with graph.at(loc):
        total = graph.call(ops.add, x, y)
        scaled = graph.call(ops.multiply, total, 2.0)
    graph.output(scaled)
    return graph, loc


def test_calling_runs_the_graph():
    graph, _ = adding_graph()
    module = GraphModule(graph)
    x, y = np.arange(3.0), np.full(3, 0.5)
    np.testing.assert_array_equal(module(x, y), (x + y) * 2.0)
    assert module.graph is graph
    assert repr(module) == "GraphModule(adder, 5 nodes)"


def test_a_failing_node_keeps_its_exception_type_and_gets_a_note_with_the_user_line():
    graph, loc = adding_graph()
    module = GraphModule(graph)
    with pytest.raises(ValueError, match="could not be broadcast") as caught:
        module(np.ones(2), np.ones(3))
    (note,) = caught.value.__notes__
    assert note.startswith("while running node add of graph adder, from ")
    assert f"{__file__}:{loc.lineno}" in note
    assert note.endswith("\n    loc = here()  # the user's line, which the note quotes")


def test_a_failure_in_a_node_without_location_names_the_node():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    graph.output(graph.call(lambda value: {}[value.shape], x))
    module = GraphModule(graph)
    with pytest.raises(KeyError) as caught:
        module(np.zeros(2))
    assert caught.value.__notes__ == ["while running node _lambda_ of graph forward"]


def test_an_error_from_a_later_node_names_that_node():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    e = graph.call(ops.exp, x)
    with graph.at(SourceLoc("model.py", 7)):
        bad = graph.call(ops.reshape, e, (2,))
    graph.output(bad)
    module = GraphModule(graph)
    with pytest.raises(ValueError) as caught:
        module(np.zeros(3))
    assert caught.value.__notes__ == ["while running node reshape of graph forward, from model.py:7"]


def test_wrong_argument_count_gets_no_node_note():
    graph, _ = adding_graph()
    module = GraphModule(graph)
    with pytest.raises(TypeError) as caught:
        module(np.ones(3))
    assert not getattr(caught.value, "__notes__", [])


def test_tracebacks_show_the_generated_line():
    graph, _ = adding_graph()
    module = GraphModule(graph)
    with pytest.raises(ValueError) as caught:
        module(np.ones(2), np.ones(3))
    text = "".join(traceback.format_exception(caught.value))
    assert module.filename in text
    assert "add = ops.add(x, y)" in text


def test_each_module_has_its_own_file_name():
    first, second = GraphModule(adding_graph()[0]), GraphModule(adding_graph()[0])
    assert first.filename != second.filename


def test_construction_lints_the_graph():
    graph, _ = adding_graph()
    graph.nodes[2].name = "class"
    with pytest.raises(LintError, match="not a legal, free Python name"):
        GraphModule(graph)


def test_code_and_line_map_are_exposed():
    graph, _ = adding_graph()
    module = GraphModule(graph)
    lines = module.code.splitlines()
    names = {node.name: lineno for lineno, node in module.line_map.items()}
    assert lines[names["add"] - 1].strip().startswith("add = ops.add(x, y)")
    assert lines[names["multiply"] - 1].strip().startswith("multiply = ops.multiply(add, 2.0)")


def guarded_graph():
    """x[:2] + y.sum(axis=1) for symbolic sizes of x and y: the slice decides s0 >= 2 (a
    size of 2 is its own clamp)."""
    graph = Graph("guarded")
    s0, s1 = graph.shape_env.create_symbol(5), graph.shape_env.create_symbol(3)
    x = graph.placeholder("x", TensorMeta((s0,), np.float64))
    y = graph.placeholder("y", TensorMeta((2, s1), np.float64))
    head = graph.call(ops.getitem, x, slice(None, 2, None))
    graph.output(graph.call(ops.add, head, graph.call(ops.sum, y, axis=1)))
    return graph


def test_sizes_and_size_guards_are_checked_on_each_call_when_asked():
    graph = guarded_graph()
    assert graph.shape_env.guard_texts() == ["s0 >= 2"]
    checked, unchecked = GraphModule(graph, check_sizes=True), GraphModule(graph)
    np.testing.assert_array_equal(checked(np.arange(4.0), np.ones((2, 7))), [7.0, 8.0])
    np.testing.assert_array_equal(checked(np.arange(2.0), np.ones((2, 7))), [7.0, 8.0])
    with pytest.raises(ValueError, match=r"sizes \(s0=1, s1=7\) break the size guard s0 >= 2 .* guarded"):
        checked(np.arange(1.0), np.ones((2, 7)))
    with pytest.raises(ValueError, match=r"input y of graph guarded has shape \(3, 7\); .* f64\[2, s1\]"):
        checked(np.arange(4.0), np.ones((3, 7)))
    with pytest.raises(ValueError, match=r"input x .* shape \(4, 1\)"):
        checked(np.ones((4, 1)), np.ones((2, 7)))
    with pytest.raises(ValueError, match=r"break the size guard s1 >= 2"):  # a symbol is never 0 or 1
        checked(np.arange(4.0), np.ones((2, 1)))
    unchecked(np.arange(2.0), np.ones((2, 7)))  # the frontend's own guards decide for its graphs


def test_straight_line_calls_the_resolved_targets_and_runs_the_module_for_other_input_types():
    graph, loc = adding_graph()
    module = GraphModule(graph)
    called = []

    def resolve(target):
        def run(*args):
            called.append(target.name)
            return target.numpy_impl(*args)
        return run

    straight = module.straight_line(resolve, [np.ndarray, None])
    x, y = np.arange(3.0), np.full(3, 0.5)
    np.testing.assert_array_equal(straight(x, y), (x + y) * 2.0)
    assert called == ["add", "multiply"] and straight.graph_module is module
    np.testing.assert_array_equal(straight([0.0, 1.0, 2.0], y), (x + y) * 2.0)  # a list: the module ran
    assert called == ["add", "multiply"]
    with pytest.raises(ValueError, match="could not be broadcast") as caught:
        straight(np.ones(2), y)
    (note,) = caught.value.__notes__
    assert note.startswith("while running node add of graph adder, from ") and f"{__file__}:{loc.lineno}" in note
