"""pyjit/graph/printer.py: a graph as runnable Python (NOTE(printed-code))."""

import math

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.graph.printer import literal_text, python_code


def run_text(code, constants, name, *args):
    """Execute printed code on its own, as NOTE(printed-code) promises it can run."""
    namespace = {"constants": constants}
    exec(compile(code, "<printed>", "exec"), namespace)
    return namespace[name](*args)


def same_bits(left, right) -> bool:
    """Equal type and value, telling -0.0 from 0.0 and any nan from any other value."""
    if type(left) in (int, str, bytes):
        return type(left) is type(right) and left == right
    return type(left) is type(right) and np.asarray(left).tobytes() == np.asarray(right).tobytes()


LITERALS = [
    None, Ellipsis, True, False, 0, -7, 2**80, 1.5, -0.0, 0.0, float("nan"), float("inf"), -float("inf"), 1e-310,
    complex(1, -2), complex(float("nan"), -0.0), complex(-float("inf"), float("nan")), "text", "it's", b"\x00b",
    int, float, bool, complex,
    np.dtype("float32"), np.dtype(">i8"), np.dtype("<U3"), np.dtype("M8[s]"), np.dtype("O"), np.dtype("bool"),
    np.float32, np.float64, np.int8, np.uint64, np.bool_, np.complex64, np.longdouble, np.generic, np.floating,
    np.float32(1.5), np.float16("nan"), np.float64(-0.0), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True),
    np.complex128(complex(float("nan"), 1)), np.complex64(1 - 2j), np.float32("-inf"),
    slice(1, None, 2), slice(None), slice(-1, 5), (1, 2.5), (None,), (), (slice(None), Ellipsis, None),
]


@pytest.mark.parametrize("value", LITERALS, ids=repr)
def test_literal_text_round_trips(value):
    text = literal_text(value)
    assert text is not None
    back = eval(text, {"numpy": np})
    if isinstance(value, (type, np.dtype)) or value is None or value is Ellipsis:
        assert back == value if isinstance(value, np.dtype) else back is value
    elif isinstance(value, (tuple, slice)):
        assert back == value and type(back) is type(value)
    else:
        assert same_bits(back, value)


@pytest.mark.parametrize("value", [np.ones(2), [1, 2], {"a": 1}, np.longdouble("0.1"), np.clongdouble(1),
                                   np.datetime64("2020-01-01"), np.dtype([("a", "f4")]), object(), math.sqrt,
                                   (1, np.ones(1)), slice(np.ones(1))], ids=repr)
def test_values_without_literal_form_have_no_text(value):
    assert literal_text(value) is None


def graph_of_everything():
    graph = Graph("everything")
    x = graph.placeholder("x", TensorMeta((2, 3), np.float64))
    n = graph.placeholder("n", float)
    table = np.arange(6.0).reshape(2, 3)
    t = graph.constant(table, "table")
    a = graph.call(ops.add, x, t)
    b = graph.call(ops.multiply, a, n)
    c = graph.call(ops.sum, b, axis=(0,), keepdims=True)
    d = graph.call(lambda v, k: v[k], b, (slice(None), 1))
    e = graph.call(math.fsum, graph.call(ops.reshape, b, (-1,)))
    graph.output({"c": c, "d": d, "e": e, 3: [x, float("nan"), np.float32]})
    return graph, table


def test_printed_code_runs_standalone_and_equals_the_graph_module():
    graph, table = graph_of_everything()
    module = GraphModule(graph)
    x = np.linspace(0, 1, 6).reshape(2, 3)
    expected = module(x, 2.0)
    printed = python_code(graph)
    assert printed.text == module.code
    got = run_text(printed.text, printed.constants, "everything", x, 2.0)
    assert got.keys() == expected.keys()
    np.testing.assert_array_equal(got["c"], np.sum((x + table) * 2.0, axis=0, keepdims=True))
    np.testing.assert_array_equal(got["d"], ((x + table) * 2.0)[:, 1])
    assert got["e"] == expected["e"] == math.fsum(((x + table) * 2.0).ravel())
    assert got[3][0] is x and math.isnan(got[3][1]) and got[3][2] is np.float32


def test_printed_code_shape():
    graph, _ = graph_of_everything()
    code = GraphModule(graph).code
    assert code.startswith("import numpy\nimport pyjit.ops as ops\n")
    assert "import math as math" in code
    assert "\ndef everything(x, n):\n" in code
    assert "    add = ops.add(x, table)\n" in code
    assert "    sum = ops.sum(multiply, axis=(0,), keepdims=True)\n" in code
    assert "    reshape = ops.reshape(multiply, (-1,))\n" in code
    assert "    fsum = math.fsum(reshape)\n" in code
    assert "return {'c': sum, 'd': _lambda_, 'e': fsum, 3: [x, float('nan'), numpy.float32]}" in code


def test_values_without_literal_form_go_through_constants():
    graph, table = graph_of_everything()
    module = GraphModule(graph)
    assert "    table = constants['table']\n" in module.code
    assert module.constants["table"] is table
    lambdas = [key for key, value in module.constants.items() if callable(value)]
    assert len(lambdas) == 1
    assert f"_lambda_ = constants[{lambdas[0]!r}](multiply, (slice(None, None, None), 1))" in module.code
    assert set(module.constants) == {"table", lambdas[0]}


def test_one_object_used_twice_is_one_constant():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    weights = np.array([3.0, 4.0])
    graph.output((graph.call(ops.add, x, graph.constant(weights)), graph.call(ops.multiply, x, graph.constant(weights))))
    module = GraphModule(graph)
    assert list(module.constants.values()) == [weights]
    assert "const_1 = constants['const']" in module.code


def test_constants_of_different_nodes_with_one_name_hint_stay_apart():
    graph = Graph()
    first, second = np.zeros(1), np.ones(1)
    graph.output((graph.constant(first, "w"), graph.constant(second, "w")))
    module = GraphModule(graph)
    assert module.constants == {"w": first, "w_1": second}
    left, right = module()
    assert left is first and right is second


def test_module_aliases_avoid_node_names():
    graph = Graph()
    ops_input = graph.placeholder("ops", TensorMeta((2,), np.float64))
    math_input = graph.placeholder("math", float)
    graph.output((graph.call(ops.exp, ops_input), graph.call(math.sqrt, math_input)))
    module = GraphModule(graph)
    assert "import pyjit.ops as ops_1" in module.code and "import math as math_1" in module.code
    value, root = module(np.zeros(2), 9.0)
    np.testing.assert_array_equal(value, np.ones(2))
    assert root == 3.0


def test_dict_arguments_with_literal_keys_print_their_nodes():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    y = graph.call(lambda table: table[1] + table[(2, None)], {1: x, (2, None): x})
    graph.output(y)
    module = GraphModule(graph)
    assert "{1: x, (2, None): x}" in module.code
    np.testing.assert_array_equal(module(np.ones(2)), np.full(2, 2.0))


@pytest.mark.parametrize("new_shape", ["(-1,)", "s0*4", "(2, s0*2)", "(s0, 2, 2)", "(-1, s0)", "[2, -1, 2]"])
@pytest.mark.parametrize("run_size", [3, 5, 8])
def test_symbolic_sizes_are_bound_from_inputs(new_shape, run_size):
    graph = Graph()
    s0 = graph.shape_env.create_symbol(3, "x.shape[0]")
    x = graph.placeholder("x", TensorMeta((s0, 4), np.float32))
    shape = eval(new_shape, {"s0": s0})
    y = graph.call(ops.reshape, graph.call(ops.exp, x), shape)
    graph.output(y)
    module = GraphModule(graph)
    assert "    s0 = x.shape[0]\n" in module.code
    assert module.code.index("s0 = x.shape[0]") < module.code.index("exp = ")
    array = np.arange(run_size * 4, dtype=np.float32).reshape(run_size, 4) / 10
    expected_shape = tuple(graph.shape_env.evaluate(size, {"s0": run_size}) for size in y.meta.shape)
    result = module(array)
    assert result.shape == expected_shape == np.reshape(array, eval(new_shape, {"s0": run_size})).shape
    np.testing.assert_array_equal(result.ravel(), np.exp(array).ravel())


def test_symbols_are_bound_once_from_the_first_input_that_has_them():
    graph = Graph()
    s0 = graph.shape_env.create_symbol(3)
    s1 = graph.shape_env.create_symbol(5)
    x = graph.placeholder("x", TensorMeta((2, s0), np.float64))
    y = graph.placeholder("y", TensorMeta((s1, s0), np.float64))
    z = graph.call(ops.reshape, y, (s0 * s1,))
    graph.output((graph.call(ops.reshape, x, (2 * s0,)), z))
    code = GraphModule(graph).code
    assert "    s0 = x.shape[1]\n    s1 = y.shape[0]\n" in code
    assert code.count("s0 = ") == 1


def test_fractional_sizes_print_as_integer_arithmetic():
    graph = Graph()
    s0 = graph.shape_env.create_symbol(4)
    x = graph.placeholder("x", TensorMeta((s0,), np.float64))
    y = graph.call(ops.reshape, x, (2, s0 // 2))
    graph.output(y)
    module = GraphModule(graph)
    assert "reshape = ops.reshape(x, (2, (s0) // 2))" in module.code
    assert module(np.arange(10.0)).shape == (2, 5)


def test_size_constants_print_as_expressions():
    graph = Graph()
    s0 = graph.shape_env.create_symbol(3)
    x = graph.placeholder("x", TensorMeta((s0,), np.float64))
    shape = graph.constant((2, s0), "shape")
    size = graph.constant(s0 * 2 + 1)
    assert size.meta is int  # a size is a Python int to the ops' meta rules
    scaled = graph.call(ops.multiply, x, size)
    graph.output((size, shape, graph.call(ops.broadcast_to, x, (2, s0)), scaled))
    module = GraphModule(graph)
    assert "    shape = (2, s0)\n" in module.code and "    const = (2*s0 + 1)\n" in module.code
    assert module.constants == {}
    size, printed_shape, wide, scaled = module(np.arange(4.0))
    assert (size, printed_shape, wide.shape) == (9, (2, 4), (2, 4))
    np.testing.assert_array_equal(scaled, np.arange(4.0) * 9)


def test_the_graph_name_is_never_shadowed_by_a_module_alias():
    graph = Graph("ops")
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    graph.output(graph.call(ops.exp, x))
    module = GraphModule(graph)
    assert "\ndef ops(x):\n" in module.code and "import pyjit.ops as ops_1\n" in module.code
    np.testing.assert_array_equal(module(np.zeros(2)), np.ones(2))


def test_numpy_functions_use_the_numpy_import():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    graph.output(graph.call(np.hypot, x, 4.0))
    module = GraphModule(graph)
    assert module.code.count("import numpy") == 1 and "hypot = numpy.hypot(x, 4.0)" in module.code
    np.testing.assert_array_equal(module(np.full(2, 3.0)), np.full(2, 5.0))


def test_line_map_maps_lines_to_the_nodes_they_compute():
    graph, _ = graph_of_everything()
    printed = python_code(graph)
    lines = printed.text.splitlines()
    computed = [node for node in graph.nodes if node.kind != "placeholder"]
    assert list(printed.line_map.values()) == computed
    for lineno, node in printed.line_map.items():
        line = lines[lineno - 1].strip()
        expected_start = "return " if node.kind == "output" else f"{node.name} = "
        assert line.startswith(expected_start), (lineno, line)


def test_a_node_location_is_printed_as_a_comment():
    from pyjit.source import SourceLoc

    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), np.float64))
    with graph.at(SourceLoc("user.py", 12)):
        y = graph.call(ops.exp, x)
    graph.output(y)
    assert "    exp = ops.exp(x)  # user.py:12\n" in GraphModule(graph).code


def test_an_empty_graph_prints_a_function_returning_none():
    graph = Graph("nothing")
    graph.output(None)
    module = GraphModule(graph)
    assert "def nothing():\n    return None\n" in module.code
    assert module() is None


def test_each_intermediate_is_dropped_after_its_last_use():
    import types
    import weakref

    graph = Graph()
    x = graph.placeholder("x", TensorMeta((4,), np.float64))
    graph.output(ops.add(ops.cos(ops.sin(x)), 1.0))  # `sin` is last read by cos
    module = GraphModule(graph)
    made, alive_at_add = [], []

    def sin(value):
        result = np.sin(value)
        made.append(weakref.ref(result))
        return result

    def add(left, right):
        alive_at_add.append(made[0]() is not None)
        return np.add(left, right)

    watched = types.SimpleNamespace(sin=sin, cos=np.cos, add=add)
    namespace = {}
    exec(module.code.replace("import pyjit.ops as ops\n", ""), {"ops": watched, "constants": module.constants},
         namespace)
    np.testing.assert_array_equal(namespace["forward"](np.ones(4)), np.cos(np.sin(np.ones(4))) + 1.0)
    assert alive_at_add == [False]  # freed before the last op ran, as NumPy step by step would


def test_a_symbol_that_is_an_int_input_is_bound_from_it():
    """A loop body's induction variable (NOTE(loop-capture)): its slices are computed
    from the index the body is called with."""
    graph = Graph("body")
    index = graph.shape_env.create_index(0, "a loop index")
    i = graph.placeholder("i", index)
    x = graph.placeholder("x", TensorMeta((6,), np.dtype("float64")))
    head = graph.call(ops.getitem, x, slice(None, index + 1, None))
    graph.output(graph.call(ops.sum, head))
    module = GraphModule(graph)
    assert f"{index} = i" in module.code
    x_value = np.arange(6.0)
    assert [module(step, x_value) for step in range(6)] == [x_value[:step + 1].sum() for step in range(6)]
