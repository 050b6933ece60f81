"""pyjit/graph/graph.py and node.py: building graphs, names, metas, locations, users, passes."""

import keyword
import math
import sys

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.graph import Graph, GraphModule, Node, TensorMeta, map_nodes
from pyjit.source import SourceLoc

F32 = TensorMeta((2, 3), np.float32)


class Recorder:
    """A pure target whose meta rule records what the graph hands it."""

    pure = True

    def __init__(self, name="recorder"):
        self.name = name
        self.seen = []

    def __call__(self, *args, **kwargs):
        return args[0]

    def meta(self, *args, **kwargs):
        self.seen.append((args, kwargs))
        return args[0]


def impure(x):
    """No `pure` attribute: the graph must keep and never merge its calls."""
    return x


def pick(x, value):
    """A pure target without a meta rule: returns its second argument."""
    return value


pick.pure = True


def here() -> SourceLoc:
    frame = sys._getframe(1)
    return SourceLoc(frame.f_code.co_filename, frame.f_lineno)


def test_builder_appends_nodes_of_each_kind_in_order():
    graph = Graph("f")
    x = graph.placeholder("x", F32)
    c = graph.constant(2.0)
    y = graph.call(ops.multiply, x, c)
    out = graph.output(y)
    assert [node.kind for node in graph.nodes] == ["placeholder", "constant", "call", "output"]
    assert graph.placeholders == [x] and graph.calls() == [y] and graph.output_node is out
    assert (c.target, c.meta) == (2.0, float)
    assert y.target is ops.multiply and y.args == (x, c) and y.kwargs == {}
    assert out.args == (y,)
    assert isinstance(y, Node) and repr(y) == "%multiply"


def test_constant_arrays_get_their_meta():
    graph = Graph()
    node = graph.constant(np.zeros((4, 1), dtype=np.int16))
    assert node.meta.shape == (4, 1) and node.meta.dtype == np.int16


@pytest.mark.parametrize("requested", ["class", "None", "lambda", "match", "case", "type", "_",
                                       "s0", "s12", "constants", "numpy", "int", "bool", "float", "complex",
                                       "slice", "Ellipsis", "1x", "0", "x-y", "a.b", "", "x y", "ℌ", "x²"])
def test_names_are_legal_and_free_python_names(requested):
    graph = Graph()
    node = graph.placeholder(requested)
    assert node.name.isidentifier() and node.name.isascii()
    assert not keyword.iskeyword(node.name) and not keyword.issoftkeyword(node.name)
    assert node.name not in {"s0", "s12", "constants", "numpy", "int", "bool", "float", "complex",
                             "slice", "Ellipsis"}


def test_duplicate_names_get_suffixes():
    graph = Graph()
    names = [graph.placeholder(name, F32).name for name in ["x", "x", "x_1", "x"]]
    assert names == ["x", "x_1", "x_1_1", "x_2"]
    a = graph.call(ops.exp, graph.nodes[0])
    b = graph.call(ops.exp, graph.nodes[0])
    assert (a.name, b.name) == ("exp", "exp_1")


def test_names_stay_unique_when_suffixed_names_are_taken_out_of_order():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), F32))
    taken = graph.placeholder("exp_2", TensorMeta((2,), F32))
    names = [graph.call(ops.exp, x).name for _ in range(4)]
    assert names == ["exp", "exp_1", "exp_3", "exp_4"] and taken.name == "exp_2"
    graph.erase(graph.nodes[-1])
    assert graph.call(ops.exp, x).name not in {node.name for node in graph.nodes[:-1]}


def test_names_that_python_folds_together_stay_distinct():
    graph = Graph()
    first, second = graph.placeholder("ℌ"), graph.placeholder("H")
    assert first.name != second.name
    graph.output((first, second))
    module = GraphModule(graph)
    assert module(1, 2) == (1, 2)


def test_awkward_names_print_and_run():
    graph = Graph()
    inputs = [graph.placeholder(name, int) for name in ["class", "s0", "constants", "numpy", "int", "2", "ops"]]
    total = graph.call(ops.add, inputs[0], inputs[-1])
    graph.output(tuple(inputs) + (total,))
    result = GraphModule(graph)(*range(7))
    assert result == (0, 1, 2, 3, 4, 5, 6, 6)


def test_meta_is_computed_through_the_protocol():
    graph = Graph()
    x = graph.placeholder("x", F32)
    n = graph.placeholder("n", int)
    c = graph.constant(np.ones(3, dtype=np.int8))
    target = Recorder()
    y = graph.call(target, [x, (n, 7)], c, key=x, other="text")
    ((args, kwargs),) = target.seen
    assert args[0] == [F32, (int, 7)] and type(args[0][1]) is tuple
    assert args[1].shape == (3,) and args[1].dtype == np.int8
    assert kwargs == {"key": F32, "other": "text"}
    assert y.meta == [F32, (int, 7)]


def test_registry_ops_give_metas():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2, 1), np.float32))
    y = graph.placeholder("y", TensorMeta((3,), np.float32))
    z = graph.call(ops.add, x, y)
    assert z.meta.shape == (2, 3) and z.meta.dtype == np.float32
    assert (z.shape, z.dtype, z.ndim, z.device) == ((2, 3), np.float32, 2, "cpu")


def test_targets_without_meta_get_none():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.call(impure, x)
    assert y.meta is None
    with pytest.raises(AttributeError, match="not an array"):
        y.shape


def test_a_failing_meta_rule_adds_no_node():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float32))
    y = graph.placeholder("y", TensorMeta((3,), np.float32))
    with pytest.raises(ValueError):
        graph.call(ops.add, x, y)
    assert graph.nodes == [x, y] and not x.users and not y.users


def test_calling_an_op_on_nodes_records_into_the_graph():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = ops.exp(x)
    assert isinstance(y, Node) and y.graph is graph and y.target is ops.exp


def test_at_sets_the_location_of_nodes_created_inside():
    graph = Graph()
    x = graph.placeholder("x", F32)
    outer, inner = here(), SourceLoc("other.py", 3)
    with graph.at(outer):
        a = graph.call(ops.exp, x)
        with graph.at(inner):
            b = graph.call(ops.exp, a)
        c = graph.call(ops.exp, b)
    d = graph.call(ops.exp, c)
    assert (x.loc, a.loc, b.loc, c.loc, d.loc) == (None, outer, inner, outer, None)
    with pytest.raises(RuntimeError), graph.at(inner):
        raise RuntimeError
    assert graph.call(ops.exp, d).loc is None


def test_users_are_tracked_through_nested_arguments():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.placeholder("y", F32)
    a = graph.call(impure, [x, (y,)], key={"k": x}, s=slice(None, y))
    b = graph.call(ops.add, x, x)
    assert list(x.users) == [a, b] and list(y.users) == [a]
    assert a.inputs() == [x, y] and b.inputs() == [x]


def test_replace_all_uses_with_moves_users():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.placeholder("y", F32)
    a = graph.call(impure, [x, x], key=x)
    x.replace_all_uses_with(y)
    assert a.args == ([y, y],) and a.kwargs == {"key": y}
    assert not x.users and list(y.users) == [a]


def test_map_nodes_rebuilds_structures():
    graph = Graph()
    x = graph.placeholder("x")
    structure = (x, [x, 1], {"k": x}, slice(x, None), "x")
    assert map_nodes(structure, lambda node: node.name) == ("x", ["x", 1], {"k": "x"}, slice("x", None), "x")


def test_erase_refuses_a_used_node():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.call(ops.exp, x)
    graph.output(y)
    with pytest.raises(ValueError, match="cannot erase exp: it is used by output"):
        graph.erase(y)
    assert y in graph.nodes


def test_erase_forgets_the_node():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.call(ops.exp, x)
    graph.erase(y)
    assert graph.nodes == [x] and not x.users


def test_dead_code_elimination_removes_unused_pure_calls_and_constants():
    graph = Graph()
    x = graph.placeholder("x", F32)
    unused_input = graph.placeholder("unused", F32)
    dead_chain = graph.call(ops.exp, graph.call(ops.add, x, graph.constant(1.0)))
    kept_effect = graph.call(impure, x)
    live = graph.call(ops.multiply, x, x)
    graph.output(live)
    assert graph.eliminate_dead_code() == 3
    assert graph.nodes == [x, unused_input, kept_effect, live, graph.output_node]
    assert dead_chain not in graph.nodes and list(x.users) == [kept_effect, live]
    graph.lint()
    assert graph.eliminate_dead_code() == 0
    assert graph.impure_calls() == [kept_effect]


def cse(build):
    """The graph `build(graph, x)` returns the output of, and what CSE merged."""
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3,), np.float64))
    graph.output(build(graph, x))
    before = GraphModule(graph)(np.arange(3.0))
    merged = graph.eliminate_common_subexpressions()
    graph.lint()
    after = GraphModule(graph)(np.arange(3.0))
    for one, other in zip(before, after):  # the same values, bit for bit (nan, -0.0) and type
        assert type(one) is type(other) and np.asarray(one).dtype == np.asarray(other).dtype
        assert np.asarray(one).tobytes() == np.asarray(other).tobytes()
    return graph, merged


def test_cse_merges_the_same_op_on_the_same_arguments():
    def build(graph, x):
        return (graph.call(ops.add, x, 1.0), graph.call(ops.add, x, 1.0), graph.call(ops.add, 1.0, x))

    graph, merged = cse(build)
    assert merged == 1
    first, swapped = graph.calls()
    assert graph.output_node.args[0] == (first, first, swapped)


def test_cse_merges_chains_whose_inputs_were_merged():
    def build(graph, x):
        return (graph.call(ops.exp, graph.call(ops.add, x, 1)), graph.call(ops.exp, graph.call(ops.add, x, 1)))

    graph, merged = cse(build)
    assert merged == 2 and len(graph.calls()) == 2


@pytest.mark.parametrize("left, right", [
    ({"axis": 0}, {"axis": None}), ({"axis": 0}, {}), ({"axis": 0, "keepdims": True}, {"axis": 0}),
    ({"axis": (0,)}, {"axis": 0}), ({"axis": 0}, {"axis": -1}),
], ids=str)
def test_cse_keeps_calls_with_different_keywords_apart(left, right):
    graph, merged = cse(lambda graph, x: (graph.call(ops.sum, x, **left), graph.call(ops.sum, x, **right)))
    assert merged == 0


@pytest.mark.parametrize("left, right", [
    (1, 1.0), (1, True), (1.0, True), (0.0, -0.0), (0, False), (1.0, 1 + 0j),
    (complex(0, 0.0), complex(0, -0.0)), (np.float64(0.0), np.float64(-0.0)), (np.float32(1), np.float64(1)),
    (np.float32(2), 2.0), (np.int64(1), 1),
], ids=repr)
def test_cse_keeps_different_literals_apart(left, right):
    graph, merged = cse(lambda graph, x: (graph.call(pick, x, left), graph.call(pick, x, right)))
    assert merged == 0
    graph, merged = cse(lambda graph, x: (graph.call(pick, x, (left,)), graph.call(pick, x, (right,))))
    assert merged == 0
    graph, merged = cse(lambda graph, x: (graph.constant(left), graph.constant(right)))
    assert merged == 0


@pytest.mark.parametrize("value", [float("nan"), np.float32("nan"), complex(float("nan"), 1), -0.0, 2])
def test_cse_merges_equal_literals_even_nan(value):
    graph, merged = cse(lambda graph, x: (graph.call(pick, x, value), graph.call(pick, x, value)))
    assert merged == 1
    graph, merged = cse(lambda graph, x: (graph.constant(value), graph.constant(value)))
    assert merged == 1


def test_cse_compares_arrays_by_identity():
    shared = np.ones(3)

    def build(graph, x):
        equal_copy = np.ones(3)
        return (graph.call(pick, x, shared), graph.call(pick, x, shared), graph.call(pick, x, equal_copy),
                graph.constant(shared), graph.constant(shared), graph.constant(equal_copy))

    graph, merged = cse(build)
    assert merged == 2
    outputs = graph.output_node.args[0]
    assert outputs[0] is outputs[1] and outputs[2] is not outputs[0]
    assert outputs[3] is outputs[4] and outputs[5] is not outputs[3]


def test_cse_never_merges_impure_calls():
    graph = Graph()
    x = graph.placeholder("x", F32)
    graph.output((graph.call(impure, x), graph.call(impure, x)))
    assert graph.eliminate_common_subexpressions() == 0
    assert len(graph.calls()) == 2


def test_cse_never_merges_different_targets_or_placeholders():
    graph = Graph()
    x = graph.placeholder("x", F32)
    y = graph.placeholder("x", F32)
    graph.output((graph.call(ops.exp, x), graph.call(ops.exp, y), graph.call(Recorder(), x), graph.call(Recorder(), x)))
    assert graph.eliminate_common_subexpressions() == 0


def test_nan_constant_keys_are_not_confused_with_other_floats():
    graph = Graph()
    nan, inf = graph.constant(math.nan), graph.constant(math.inf)
    graph.output((nan, inf))
    assert graph.eliminate_common_subexpressions() == 0


def test_depends_on_walks_back_through_the_nodes_a_node_reads():
    graph = Graph("g")
    x, y = graph.placeholder("x", F32), graph.placeholder("y", F32)
    total = graph.call(ops.add, graph.call(ops.sin, x), y)
    assert total.depends_on({x}) and total.depends_on({y}) and total.depends_on({total})
    assert not x.depends_on({y}) and not total.depends_on(set())
