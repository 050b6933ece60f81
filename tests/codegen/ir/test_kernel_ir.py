"""pyjit/codegen/ir/kernel_ir.py: typed values, statements, listings."""

import numpy as np
import pytest

from pyjit.codegen.ir.index import Index
from pyjit.codegen.ir.kernel_ir import (BufferParam, Call, Constant, Dim, Kernel, Load, Loop, Reduce, Store, Var,
                                        collapse_loops, format_kernel, keep_reduced_values, substitute_body,
                                        unrolled_accumulation, walk_values)

F32 = np.dtype(np.float32)
name = Index.name


def test_values_compare_structurally_and_constants_by_representation():
    load = Load("x", name("i0"), F32)
    assert Load("x", name("i0"), F32) == load and hash(Load("x", name("i0"), F32)) == hash(load)
    assert Call("exp", (load,), F32) == Call("exp", (Load("x", name("i0"), F32),), F32)
    assert Constant(0.0, F32) != Constant(-0.0, F32)
    assert Constant(1, np.dtype(np.int64)) != Constant(1.0, F32)


def test_hashing_a_deeply_shared_value_is_linear():
    value = Load("x", Index.const(0), F32)
    for _ in range(200):  # 2**200 paths through the tree: hashing must not walk them
        value = Call("mul", (value, value), F32)
    assert hash(value) == hash(value)
    assert len(list(walk_values(value))) == 201


def chain_of(length, leaf):
    """`leaf` * 0.5 + 1 * 0.5 + 1 ... : `length` calls, each reading the one before."""
    value = leaf
    for step in range(length):
        value = Call("multiply" if step % 2 == 0 else "add", (value, Constant(0.5 if step % 2 == 0 else 1.0, F32)), F32)
    return value


def test_a_value_as_deep_as_a_long_chain_of_ops_is_walked_at_the_default_recursion_limit():
    """NOTE(flat-walks): hashing, comparing, listing, printing and substituting a value
    10000 calls deep."""
    deep, twin = chain_of(10000, Load("x", name("i0"), F32)), chain_of(10000, Load("x", name("i0"), F32))
    assert deep == twin and hash(deep) == hash(twin) and deep != chain_of(10000, Load("y", name("i0"), F32))
    assert deep != chain_of(9999, Load("x", name("i0"), F32))
    walked = list(walk_values(deep))
    assert len(walked) == 1 + 2 * 10000 and walked[0] == Load("x", name("i0"), F32) and walked[-1] is deep
    assert str(chain_of(2, Load("x", name("i0"), F32))) == "add(multiply(x[i0], 0.5), 1.0)"
    assert str(deep).startswith("add(multiply(add(") and str(deep).count("(") == 10000
    assert repr(deep).startswith("Call(op='add', args=(Call(op='multiply', args=(Call(op='add'")
    (moved,) = substitute_body((Store("out", name("i0"), deep),), {"i0": name("i0") + 1})
    assert moved.value == chain_of(10000, Load("x", name("i0") + 1, F32))


def test_format_kernel_lists_loops_reductions_and_stores():
    x = Load("x", name("i0") * 8 + name("r1"), F32)
    kernel = Kernel("k", (BufferParam("x", F32, False), BufferParam("y", F32, True)), ("s0",), (
        Loop((Dim("i0", name("s0")),), (
            Reduce("acc", "sum", F32, x, (Dim("r1", Index.const(8)),)),
            Store("y", name("i0"), Var("acc", F32)),
        ), parallel=True),))
    assert format_kernel(kernel) == (
        "kernel k(in x: float32, out y: float32; sizes: s0)\n"
        "    parallel for i0 < s0:\n"
        "        acc = sum[float32] over r1 < 8: x[8*i0 + r1]\n"
        "        y[i0] = acc")
    assert [type(statement).__name__ for statement in kernel.statements()] == ["Loop", "Reduce", "Store"]


@pytest.mark.parametrize("value", [Constant(1.5, F32), Var("a", F32)])
def test_leaves_print_themselves(value):
    assert str(value) in ("1.5", "a")


def loop_over(stride_pairs, extents):
    """A Loop over dims i0, i1, ... of `extents` storing y[...] = x[...] for each
    (y strides, x strides) pair, collapsed."""
    dims = tuple(Dim(f"i{n}", Index.const(e)) for n, e in enumerate(extents))

    def at(strides):
        return sum((Index.name(f"i{n}") * s for n, s in enumerate(strides)), Index.const(0))
    body = tuple(Store("y", at(out), Load("x", at(source), F32)) for out, source in stride_pairs)
    return collapse_loops(dims, body, parallel=True)


def test_collapse_merges_dims_that_every_index_steps_through_as_one():
    (loop,) = loop_over([((12, 4, 1), (12, 4, 1))], (2, 3, 4))  # contiguous: one loop
    assert [dim.extent for dim in loop.dims] == [24]
    assert loop.body[0].index == Index.name("i2") and loop.body[0].value.index == Index.name("i2")
    (loop,) = loop_over([((12, 4, 1), (0, 0, 1))], (2, 3, 4))  # broadcast over the two outer dims
    assert [dim.extent for dim in loop.dims] == [6, 4]
    (loop,) = loop_over([((12, 4, 1), (1, 2, 6))], (2, 3, 4))  # a transposed read: nothing merges
    assert len(loop.dims) == 3


def test_collapse_reaches_reductions_inside_loops():
    value = Load("x", Index.name("i0") * 12 + Index.name("r1") * 4 + Index.name("r2"), F32)
    reduce = Reduce("acc", "sum", F32, value, (Dim("r1", Index.const(3)), Dim("r2", Index.const(4))))
    (loop,) = collapse_loops((Dim("i0", Index.const(5)),), (reduce, Store("y", Index.name("i0"), Var("acc", F32))),
                             parallel=True)
    assert [dim.extent for dim in loop.body[0].dims] == [12]
    assert loop.body[0].value.index == Index.name("i0") * 12 + Index.name("r2")


def row_kernel(op: str, extent: int = 8):
    """for i0 < 4: s = sum over the row of op(x); y[row] = op(x) / s."""
    row = (Dim("r1", Index.const(extent)),)
    value = Call(op, (Load("x", Index.name("i0") * extent + Index.name("r1"), F32),), F32)
    store = Store("y", Index.name("i0") * extent + Index.name("r1"), Call("div", (value, Var("s", F32)), F32))
    loop = Loop((Dim("i0", Index.const(4)),), (Reduce("s", "sum", F32, value, row), Loop(row, (store,))), parallel=True)
    return Kernel("k", (BufferParam("x", F32, False), BufferParam("y", F32, True)), (), (keep_reduced_values(loop),))


def test_an_expensive_row_value_is_kept_by_the_reduction_for_the_loop_after_it():
    assert format_kernel(row_kernel("exp")).splitlines()[1:] == [
        "    parallel for i0 < 4:",
        "        kept0 = scratch[float32](8)",
        "        s = sum[float32] over r1 < 8: exp(x[8*i0 + r1])",
        "            and kept0[r1] = exp(x[8*i0 + r1])",
        "        for r1 < 8:",
        "            y[8*i0 + r1] = div(kept0[r1], s)"]


def test_cheap_or_long_rows_are_recomputed():
    assert "scratch" not in format_kernel(row_kernel("neg"))
    assert "scratch" not in format_kernel(row_kernel("exp", extent=1 << 20))



def test_an_accumulation_runs_four_steps_a_pass_in_the_same_order():
    """NOTE(unrolled-accumulation): ((acc + x[4g]) + x[4g+1]) + ..., then the rest."""
    r, k = name("r"), name("k")

    def accumulate(buffer, value):
        return Loop((Dim("k", Index.const(8)),), (Store(buffer, k, Call("add", (Load(buffer, k, F32), value), F32)),))

    row = Load("x", 8 * r + k, F32)
    loop = Loop((Dim("r", Index.const(10)),), (accumulate("acc", row),))
    main, rest = unrolled_accumulation(loop)
    assert main.dims == (Dim("rg", Index.const(2)),) and rest.dims == (Dim("rt", Index.const(2)),)
    (store,) = main.body[0].body
    assert str(store.value) == ("add(add(add(add(acc[k], x[k + 32*rg]), x[8 + k + 32*rg]), x[16 + k + 32*rg]), "
                                "x[24 + k + 32*rg])")
    assert str(rest.body[0].body[0].value) == "add(acc[k], x[64 + k + 8*rt])"  # from row 8 on
    # a second accumulation reading the first's partial result must see every step
    chained = Loop(loop.dims, (accumulate("acc", row), accumulate("total", Load("acc", k, F32))))
    assert unrolled_accumulation(chained) is None
    assert unrolled_accumulation(Loop(loop.dims, loop.body, parallel=True)) is None
