"""pyjit/codegen/scheduling/lowering.py: formulas typed as NumPy types them, views as index arithmetic."""

import itertools

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.codegen.ir.index import Index
from pyjit.codegen.ir.kernel_ir import Call, Constant, Load
from pyjit.codegen.scheduling.lowering import (NotLowerable, Operand, contiguous_strides, offset, typed_formula,
                                               view_source_index)
from pyjit.graph import Graph, ShapeEnv, TensorMeta
from pyjit.ops.formula import Arg, F


def array(dtype, name="x"):
    return Operand.strong(Load(name, Index.const(0), np.dtype(dtype)))


def typed(expression, *operands):
    return typed_formula(expression, dict(enumerate(operands))).value


def test_a_weak_python_float_keeps_float32_and_is_rounded_to_it():
    result = typed(F.mul(Arg(0), 0.1), array("float32"))
    assert result.dtype == np.float32
    assert result.args[1] == Constant(float(np.float32(0.1)), np.dtype(np.float32))


def test_operands_are_cast_to_the_loop_dtypes_numpy_resolves():
    result = typed(F.add(Arg(0), Arg(1)), array("int32"), array("float32", "y"))
    assert result.dtype == np.float64
    assert [arg.op for arg in result.args] == ["cast", "cast"]
    divided = typed(F.div(Arg(0), 2), array("int64"))
    assert divided.dtype == np.float64 and divided.args[1] == Constant(2.0, np.dtype(np.float64))


def test_where_promotes_its_branches_like_numpy():
    result = typed(F.where(Arg(0), Arg(1), 0), array("bool"), array("float32", "y"))
    assert result.dtype == np.float32 and result.args[2] == Constant(0.0, np.dtype(np.float32))
    assert typed(F.where(Arg(0), 1, 2.5), array("bool")).dtype == np.float64


@pytest.mark.parametrize(("op", "dtype", "scalar", "first", "answer"), [
    (F.lt, "int8", 300, True, True), (F.gt, "int8", 300, True, False), (F.eq, "int8", -300, True, False),
    (F.ne, "int8", 300, True, True), (F.lt, "int8", 300, False, False), (F.lt, "uint64", -1, True, False),
    (F.ge, "uint8", -1, True, True)])
def test_comparisons_with_python_ints_beyond_the_dtype_fold_to_numpys_answer(op, dtype, scalar, first, answer):
    expression = op(Arg(0), scalar) if first else op(scalar, Arg(0))
    result = typed(expression, array(dtype))
    assert result == Constant(answer, np.dtype(bool))
    reference = op.__name__
    values = np.array([0, 1, np.iinfo(dtype).max], dtype)
    numpy_op = {"lt": np.less, "gt": np.greater, "eq": np.equal, "ne": np.not_equal, "ge": np.greater_equal}[reference]
    expected = numpy_op(values, scalar) if first else numpy_op(scalar, values)
    assert (expected == answer).all()


def test_int64_against_uint64_comparisons_keep_mixed_loop_dtypes():
    result = typed(F.lt(Arg(0), Arg(1)), array("int64"), array("uint64", "y"))
    assert [arg.dtype for arg in result.args] == [np.dtype(np.int64), np.dtype(np.uint64)]


@pytest.mark.parametrize(("expression", "dtypes"), [
    (F.sqrt(Arg(0)), ["int8"]),  # a float16 loop
    (F.reciprocal(Arg(0)), ["int32"]),
    (F.pow(Arg(0), Arg(1)), ["int32", "int32"]),  # the exponent may be negative: NumPy raises
    (F.add(Arg(0), 1j), ["float64"]),  # complex
])
def test_what_c_cannot_compute_exactly_is_unsupported(expression, dtypes):
    with pytest.raises(NotLowerable):
        typed(expression, *(array(dtype, f"x{n}") for n, dtype in enumerate(dtypes)))


def test_integer_powers_with_a_never_negative_exponent_are_supported():
    assert typed(F.pow(Arg(0), 3), array("int32")).dtype == np.int32
    assert typed(F.pow(Arg(0), Arg(1)), array("int64"), array("uint8", "y")).dtype == np.int64


def test_a_scalar_exponent_of_two_one_or_a_half_needs_no_pow_call():
    # NOTE(scalar-exponent-power): NumPy's loop squares and takes square roots too.
    x = array("float32")
    assert typed(F.pow(Arg(0), 2), x) == Call("mul", (x.value, x.value), np.dtype(np.float32))
    assert typed(F.pow(Arg(0), 0.5), x) == Call("sqrt", (x.value,), np.dtype(np.float32))
    assert typed(F.pow(Arg(0), 1), x) is x.value
    assert typed(F.pow(Arg(0), 3), x).op == "pow"
    assert typed(F.pow(Arg(0), 2), array("int32")).op == "pow"  # integer powers keep their wrap-around helper


def test_contiguous_strides_and_offsets():
    env = ShapeEnv()
    s0 = env.create_symbol(5)
    strides = contiguous_strides((2, s0, 3))
    assert strides == (Index.name("s0") * 3, Index.const(3), Index.const(1))
    at = offset(strides, (Index.const(1), Index.name("i1"), Index.const(2)))
    assert at == Index.name("s0") * 3 + Index.name("i1") * 3 + 2


# -- views: every result element read through the index arithmetic equals NumPy's view --
def view_cases():
    return [
        ("reshape", (4, 6), lambda x: ops.reshape(x, (2, 2, 3, 2))),
        ("reshape", (4, 6), lambda x: ops.reshape(x, (24,))),
        ("reshape", (2, 3, 4), lambda x: ops.reshape(x, (6, 4))),
        ("reshape", (2, 3, 4), lambda x: ops.reshape(x, (4, 3, 2))),
        ("reshape", (1, 6, 1), lambda x: ops.reshape(x, (3, 1, 2))),
        ("transpose", (2, 3, 4), lambda x: ops.transpose(x, (2, 0, 1))),
        ("transpose", (2, 3), lambda x: ops.transpose(x)),
        ("broadcast_to", (3, 1), lambda x: ops.broadcast_to(x, (2, 3, 4))),
        ("getitem", (4, 5), lambda x: ops.getitem(x, (slice(None, None, -1), -2))),
        ("getitem", (4, 5), lambda x: ops.getitem(x, (None, Ellipsis, slice(3, 0, -2)))),
        ("getitem", (5,), lambda x: ops.getitem(x, slice(-100, 100, 3))),
        ("getitem", (5,), lambda x: ops.getitem(x, slice(4, -100, -2))),
        ("getitem", (2, 3, 4), lambda x: ops.getitem(x, (0, Ellipsis, 1))),
        ("getitem", (4, 6), lambda x: ops.getitem(x, (Ellipsis, slice(5, None, -2)))),
        ("diagonal", (3, 4), lambda x: ops.diagonal(x, 1)),
        ("diagonal", (4, 3), lambda x: ops.diagonal(x, -2)),
        ("diagonal", (2, 3, 4), lambda x: ops.diagonal(x, 1, 2, 0)),
        ("diagonal", (3, 2, 4, 5), lambda x: ops.diagonal(x, -1, -1, 0)),
    ]


@pytest.mark.parametrize(("kind", "shape", "view"), view_cases(),
                         ids=[f"{case[0]}-{n}" for n, case in enumerate(view_cases())])
def test_view_index_arithmetic_reads_the_elements_numpy_views(kind, shape, view):
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(shape, np.float64))
    node = view(x)
    assert node.target.name == kind
    values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    expected = np.asarray(view(values))
    for position in itertools.product(*(range(size) for size in expected.shape)):
        source, index = view_source_index(node, tuple(Index.const(p) for p in position))
        assert source is x
        assert values[tuple(part.constant_value() for part in index)] == expected[position]


def test_reshape_of_symbolic_sizes_groups_equal_products():
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    s0 = env.create_symbol(3)
    x = graph.placeholder("x", TensorMeta((s0, 4), np.float32))
    merged = ops.reshape(x, (s0 * 4,))
    _, index = view_source_index(merged, (Index.name("i0"),))
    assert index == (Index.name("i0").floordiv(4), Index.name("i0").mod(4))
    assert offset(contiguous_strides(x.meta.shape), index) == Index.name("i0")
    split = ops.reshape(x, (s0, 2, 2))
    _, index = view_source_index(split, (Index.name("i0"), Index.name("i1"), Index.name("i2")))
    assert index == (Index.name("i0"), Index.name("i1") * 2 + Index.name("i2"))


def test_call_nodes_print_like_formulas():
    call = typed(F.exp(F.neg(Arg(0))), array("float32"))
    assert isinstance(call, Call) and str(call) == "exp(neg(x[0]))"
