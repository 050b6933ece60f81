"""pyjit/codegen/cuda/columns.py: which statements of a columnar kernel the CUDA renderer
splits (NOTE(column-split)). What the split kernels compute is checked in emulation
(tests/codegen/cuda/test_emulation.py); their launches in tests/codegen/cuda/test_renderer.py."""

import numpy as np

from pyjit.codegen.cuda.columns import ColumnAccumulation, ColumnPositions, column_plan, column_positions
from pyjit.codegen.ir.index import Index
from pyjit.codegen.ir.kernel_ir import Call, Constant, Dim, Load, Loop, Store
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, TensorMeta
from pyjit.ops import REGISTRY


def columnar_body(name: str, dtype=np.float32, shape=(300, 6)):
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(shape, np.dtype(dtype)))
    graph.output(REGISTRY[name](x, axis=0))
    (kernel,) = schedule(graph).kernels
    return kernel.body


def test_each_accumulation_starts_from_the_identity_store_before_it():
    plan = column_plan(columnar_body("var"))
    kinds = [type(step).__name__ for step in plan]
    assert kinds == ["ColumnAccumulation", "ColumnAccumulation", "Loop"]  # the sum, the squares, the division
    assert all(step.starts_at_identity() and step.reduce().kind == "sum" for step in plan[:2])


def test_the_reduction_is_the_registrys_entry_for_the_combine():
    for name in ("sum", "max", "min", "any", "all"):
        (step,) = column_plan(columnar_body(name, np.float64 if name in ("sum", "max", "min") else np.bool_))
        assert step.reduce().kind == name and step.splits()


def test_a_float_product_keeps_its_rows_in_order_and_an_integer_one_splits():
    (floats,) = column_plan(columnar_body("prod"))
    (integers,) = column_plan(columnar_body("prod", np.int32))
    assert not floats.splits() and integers.splits()


def test_a_start_that_is_not_the_identity_is_kept():
    f32 = np.dtype(np.float32)
    column, row = Dim("k", Index.const(4)), Dim("r", Index.const(8))
    acc = Load("out", Index.name("k"), f32)
    add = Store("out", Index.name("k"), Call("add", (acc, Load("x", Index.name("k") + Index.name("r") * 4, f32)), f32))
    for start, at_identity in ((0.0, True), (-0.0, False), (1.0, False)):
        init = Loop((column,), (Store("out", Index.name("k"), Constant(start, f32)),), parallel=True)
        (step,) = column_plan((init, Loop((row,), (Loop((column,), (add,), parallel=True),))))
        assert step == ColumnAccumulation((column,), (row,), add, Constant(start, f32))
        assert step.starts_at_identity() is at_identity


def test_a_body_of_another_shape_has_no_plan():
    f32 = np.dtype(np.float32)
    column, row = Dim("k", Index.const(4)), Dim("r", Index.const(8))
    store = Store("out", Index.name("k"), Load("x", Index.name("k") + Index.name("r") * 4, f32))  # no combine
    assert column_plan((Loop((row,), (Loop((column,), (store,), parallel=True),)),)) is None


def row_loop(name: str, shape, axis):
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(shape, np.dtype(np.float32)))
    graph.output(REGISTRY[name](x, axis=axis))
    (kernel,) = schedule(graph).kernels
    (loop,) = kernel.body
    return loop


def test_argmax_and_argmin_over_leading_axes_are_column_positions():
    for name, shape, axis in (("argmax", (300, 6), 0), ("argmin", (4, 300, 5), 1), ("argmax", (300, 2, 3), 0)):
        loop = row_loop(name, shape, axis)
        step = column_positions(loop)
        assert isinstance(step, ColumnPositions) and step.reduce().kind == name
        assert step.columns == loop.dims and step.rows == loop.body[0].dims and len(step.after) == 1


def test_argmax_over_the_last_axis_or_of_no_columns_stays_a_row_reduction():
    for name, shape, axis in (("argmax", (6, 300), 1), ("argmin", (4, 300, 5), 2), ("argmax", (4, 300, 1), 1),
                              ("argmax", (300, 0), 0)):
        assert column_positions(row_loop(name, shape, axis)) is None
