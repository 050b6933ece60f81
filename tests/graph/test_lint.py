"""pyjit/graph/lint.py: every invariant, broken by hand, is named with a fix and the graph."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.exc import LintError, PyjitError
from pyjit.graph import Graph, Node, TensorMeta

F64 = TensorMeta((3,), np.float64)


def small_graph():
    """x, y -> exp(x) + y, returned; every invariant holds."""
    graph = Graph("small")
    x = graph.placeholder("x", F64)
    y = graph.placeholder("y", F64)
    e = graph.call(ops.exp, x)
    s = graph.call(ops.add, e, y)
    graph.output(s)
    graph.lint()
    return graph, x, y, e, s


def assert_lint_names(graph, *phrases):
    with pytest.raises(LintError) as caught:
        graph.lint()
    message = str(caught.value)
    for phrase in phrases:
        assert phrase in message
    assert "\n  fix: " in message
    assert f"graph {graph.name}:" in message  # the graph table follows
    assert "name" in message and "kind" in message and "target" in message
    assert isinstance(caught.value, PyjitError)
    return message


def test_a_well_formed_graph_passes():
    small_graph()


@pytest.mark.parametrize("name", ["constants", "numpy", "s0", "class", "my graph", ""])
def test_an_illegal_or_reserved_graph_name(name):
    graph, *_ = small_graph()
    graph.name = name
    assert_lint_names(graph, f"graph name {name!r} is not a legal, free Python name", "printed function")


def test_no_output_node():
    graph, *_ = small_graph()
    graph.nodes.pop()
    assert_lint_names(graph, "has 0 output nodes", "graph.output")


def test_two_output_nodes():
    graph, *_, s = small_graph()
    graph.output(s)
    assert_lint_names(graph, "has 2 output nodes")


def test_a_node_after_the_output():
    graph, x, *_ = small_graph()
    late = Node(graph, "call", "late", ops.exp, (x,), {}, None, None)
    x.users[late] = None
    graph.nodes.append(late)
    assert_lint_names(graph, "node late comes after the output node", "must be the last node")


def test_a_node_of_another_graph_in_the_list():
    graph, *_ = small_graph()
    other = Graph("other")
    stranger = other.placeholder("stranger", F64)
    graph.nodes.insert(0, stranger)
    assert_lint_names(graph, "node stranger belongs to another graph")


def test_an_unknown_kind():
    graph, x, y, e, s = small_graph()
    e.kind = "call_method"
    assert_lint_names(graph, "node exp has kind 'call_method'", "placeholder, constant, call, output")


@pytest.mark.parametrize("name", ["class", "2x", "a b", "s0", "constants", "numpy", "ℌ", ""])
def test_an_illegal_or_reserved_name(name):
    graph, x, y, e, s = small_graph()
    e.name = name
    assert_lint_names(graph, f"node name {name!r} is not a legal, free Python name", "namer")


def test_two_nodes_with_one_name():
    graph, x, y, e, s = small_graph()
    s.name = "exp"
    assert_lint_names(graph, "two nodes are named exp")


def test_a_placeholder_after_a_call():
    graph, x, y, e, s = small_graph()
    graph.nodes.remove(y)
    graph.nodes.insert(graph.nodes.index(e) + 1, y)
    assert_lint_names(graph, "placeholder y comes after a call or constant", "every placeholder first")


def test_a_call_target_that_cannot_be_called():
    graph, x, y, e, s = small_graph()
    e.target = "exp"
    assert_lint_names(graph, "call node exp has a target that cannot be called: 'exp'")


def test_using_a_node_of_another_graph():
    graph, x, y, e, s = small_graph()
    other = Graph("other")
    stranger = other.placeholder("stranger", F64)
    e.args = (stranger,)
    stranger.users[e] = None
    x.users.clear()
    assert_lint_names(graph, "node exp uses stranger, which belongs to another graph", "placeholders")


def test_using_a_node_before_it_is_defined():
    graph, x, y, e, s = small_graph()
    graph.nodes.remove(e)
    graph.nodes.insert(graph.nodes.index(s) + 1, e)
    assert_lint_names(graph, "node add uses exp before it is defined", "in the order they run")


def test_a_use_missing_from_the_users():
    graph, x, y, e, s = small_graph()
    e.args = (y,)  # edited without replace_input: y does not know exp uses it
    x.users.clear()
    assert_lint_names(graph, "node exp uses y but is missing from its users", "node.replace_input")


def test_using_the_output_node():
    graph, x, y, e, s = small_graph()
    out = graph.output_node
    e.args = (out,)
    out.users[e] = None
    x.users.clear()
    assert_lint_names(graph, "node exp uses the output node", "the value the output returns")


def test_listing_a_user_that_is_not_in_the_graph():
    graph, x, y, e, s = small_graph()
    ghost = Node(graph, "call", "ghost", ops.exp, (x,), {}, None, None)
    x.users[ghost] = None
    assert_lint_names(graph, "x lists user ghost, which is not in the graph", "graph.erase")


def test_listing_a_user_that_does_not_use_it():
    graph, x, y, e, s = small_graph()
    y.users[e] = None
    assert_lint_names(graph, "y lists user exp, which does not use it", "node.replace_input")


def test_the_graph_table_in_the_message_names_the_nodes():
    graph, x, y, e, s = small_graph()
    e.target = None
    message = assert_lint_names(graph, "cannot be called")
    table = message.split("\n\n", 1)[1]
    assert table == str(graph)
    for name in ("x", "y", "exp", "add", "output"):
        assert f"  {name} " in table


def test_lint_passes_after_dead_code_and_common_subexpression_elimination():
    graph = Graph()
    x = graph.placeholder("x", F64)
    one = graph.constant(1.0)
    a = graph.call(ops.add, x, one)
    b = graph.call(ops.add, x, one)
    graph.call(ops.exp, graph.call(ops.multiply, a, b))  # dead
    graph.output((graph.call(ops.exp, a), graph.call(ops.exp, b), graph.call(ops.sum, b, axis=0)))
    assert graph.eliminate_dead_code() == 2
    graph.lint()
    assert graph.eliminate_common_subexpressions() == 2
    graph.lint()
    assert graph.eliminate_dead_code() == 0
    graph.lint()
    assert [node.target for node in graph.calls()] == [ops.add, ops.exp, ops.sum]
