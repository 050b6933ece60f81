"""pyjit/graph/table.py: `str(graph)`, one row per node, and the size guards."""

import re

import numpy as np

import pyjit.ops as ops
from pyjit.graph import Graph, TensorMeta
from pyjit.source import SourceLoc


def rows(graph) -> dict[str, list[str]]:
    """The table's cells by node name (columns are separated by two or more spaces)."""
    lines = [line for line in str(graph).splitlines()[2:] if not line.startswith("size guards")]
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines)}


def test_table_shows_names_kinds_targets_arguments_metas_and_sources():
    graph = Graph("model")
    s0 = graph.shape_env.create_symbol(3)
    x = graph.placeholder("x", TensorMeta((s0, 4), np.float32))
    n = graph.placeholder("n", float)
    w = graph.constant(np.ones((4,), dtype=np.float32), "w")
    with graph.at(SourceLoc("model.py", 12)):
        y = graph.call(ops.add, x, w)
    z = graph.call(ops.sum, y, axis=(1,), keepdims=True)
    graph.output([z, n])
    text = str(graph)
    assert text.splitlines()[0] == "graph model:"
    assert text.splitlines()[1].split() == ["name", "kind", "target", "args", "meta", "source"]
    table = rows(graph)
    assert table["x"] == ["x", "placeholder", "f32[s0, 4]"]
    assert table["n"] == ["n", "placeholder", "float"]
    assert table["w"] == ["w", "constant", "<array float32[4]>", "f32[4]"]
    assert table["add"] == ["add", "call", "add", "%x, %w", "f32[s0, 4]", "model.py:12"]
    assert table["sum"] == ["sum", "call", "sum", "%add, axis=(1,), keepdims=True", "f32[s0, 1]"]
    assert table["output"] == ["output", "output", "[%sum, %n]"]
    assert "size guards" not in text


def test_table_lists_size_guards():
    graph = Graph()
    s0, s1 = graph.shape_env.create_symbol(3), graph.shape_env.create_symbol(3)
    x = graph.placeholder("x", TensorMeta((s0,), np.float64))
    y = graph.placeholder("y", TensorMeta((s1,), np.float64))
    graph.output(graph.call(ops.add, x, y))
    assert str(graph).splitlines()[-1] == "size guards: s0 == s1"


def test_table_shows_structured_arguments_and_targets_without_names():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2, 3), np.float64))
    picked = graph.call(lambda value, key: value[key], x, (slice(None), slice(1, None, 2), Ellipsis), extra={"k": [x]})
    graph.output((picked,))
    table = rows(graph)
    assert table["_lambda_"][2].endswith("<lambda>")
    assert table["_lambda_"][3] == "%x, (:, 1::2, Ellipsis), extra={'k': [%x]}"
    assert table["output"][2] == "(%_lambda_,)"


def test_table_columns_line_up():
    graph = Graph()
    x = graph.placeholder("a_rather_long_input_name", TensorMeta((2,), np.float64))
    graph.output(graph.call(ops.exp, x))
    lines = str(graph).splitlines()[1:]
    kind_column = lines[0].index("kind")
    assert all(line[kind_column - 2: kind_column] == "  " for line in lines)
    assert [line[kind_column:].split()[0] for line in lines] == ["kind", "placeholder", "call", "output"]
