"""pyjit/frontend/explain.py and pyjit.explain: one call under capture, reported as its
graphs, breaks, ops, guards and compile times."""

import numpy as np
import pytest

import pyjit
from pyjit.frontend import BreakReason, ExplainOutput
from pyjit.utils import counters


def with_print(x):
    y = np.sin(x) + 1
    print("woo")
    return y * 2


def with_branch(x):
    y = np.cos(np.cos(x))
    if y.mean() > 0.5:
        y = y / 1.1
    return y * 3


def bar(a, b):  # SPEC section 5, example 3 (the Dynamo tutorial's explain example)
    x = a / (np.abs(a) + 1)
    print("woo")
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_a_print_gives_two_graphs_and_one_break(jit, capsys):
    explanation = pyjit.explain(with_print)(np.ones(3))
    assert isinstance(explanation, ExplainOutput)
    assert explanation.graph_count == 2 and explanation.graph_break_count == 1
    assert explanation.ops_per_graph == [["sin", "add"], ["multiply"]] and explanation.op_count == 3
    (reason,) = explanation.break_reasons
    assert isinstance(reason, BreakReason) and reason.explanation == "a call to the function print is not captured"
    assert reason.where.lineno == with_print.__code__.co_firstlineno + 2
    assert len(explanation.out_guards) == 2 and "x is numpy.ndarray" in explanation.out_guards[0]
    assert len(explanation.compile_times) == 2 and all(t > 0 for t in explanation.compile_times)
    assert capsys.readouterr().out == "woo\n"


def test_a_data_dependent_if(jit):
    explanation = pyjit.explain(with_branch)(np.zeros(4))
    assert explanation.graph_count == 2 and explanation.graph_break_count == 1
    assert explanation.break_reasons[0].kind == "data_dependent"
    assert explanation.ops_per_graph[1] == ["divide", "multiply"]


def test_the_tutorials_example_and_its_summary(jit, capsys):
    a, b = np.linspace(-1, 1, 10), -np.ones(10)
    explanation = pyjit.explain(bar)(a, b)
    assert explanation.graph_count == 3 and explanation.graph_break_count == 2
    assert [r.kind for r in explanation.break_reasons] == ["unsupported", "data_dependent"]
    text = str(explanation)
    assert text.startswith(f"Graph Count: 3\nGraph Break Count: 2\nOp Count: {explanation.op_count}\n")
    assert "Break Reason 1:\n    Reason: a call to the function print is not captured" in text and "Graph 3" in text
    print_line = bar.__code__.co_firstlineno + 2
    assert f"    User Stack: {__file__}:{print_line}\n      print(\"woo\")" in text


def test_explain_leaves_the_functions_entries_in_place(jit, capsys):
    compiled = jit(with_print)
    compiled(np.ones(3))
    before = pyjit.cache_entries(with_print)
    explanation = pyjit.explain(compiled)(np.ones(3))  # the function it wraps is explained
    assert explanation.graph_count == 2  # earlier entries do not hide the graphs
    assert pyjit.cache_entries(with_print) == before and len(before) == 1
    graphs = counters["stats"]["unique_graphs"]
    np.testing.assert_allclose(compiled(np.ones(3)), with_print(np.ones(3)))
    assert counters["stats"]["unique_graphs"] == graphs  # served from the entries it had


def item_then_multiply(x):
    y = np.sin(x)
    s = y.sum().item()
    return y * s


def backward_then_multiply(x):
    loss = np.sin(x).sum()
    loss.backward()
    return loss * 2


@pytest.mark.parametrize("fn, make, kind", [
    (item_then_multiply, np.ones, "data_dependent"),
    (backward_then_multiply, lambda n: pyjit.tensor(np.ones(n), requires_grad=True), "unsupported")])
def test_one_item_or_backward_call_is_one_break(jit, fn, make, kind):
    explanation = pyjit.explain(fn)(make(3))
    assert explanation.graph_count == 2 and explanation.graph_break_count == 1
    (reason,) = explanation.break_reasons
    assert reason.kind == kind and reason.where.lineno == fn.__code__.co_firstlineno + 2
