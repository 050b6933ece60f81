"""pyjit/frontend/control_flow.py: jumps on conditions known at trace time, and loops,
which unroll (NOTE(loop-unrolling)); a condition on array data is a graph break."""

import dis

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.frontend import opcode_table
from pyjit.utils import counters


def test_loop_opcodes_are_handled():
    for name in ("GET_ITER", "FOR_ITER", "JUMP_BACKWARD", "UNPACK_EX", *(n for n in ("END_FOR",) if n in dis.opmap)):
        assert name in opcode_table.HANDLERS


def over_range(x):
    for i in range(3):
        x = x + i
    return x


def over_tuple_and_list(x):
    for k in (1.0, 2.0):
        x = x * k
    for k in [3.0, x]:
        x = x + k
    return x


def over_rows(x):
    total = 0
    for row in x:
        total = total + row
    return total


def nested_with_continue(x):
    for i in range(2):
        for j in range(3):
            if j == 1:
                continue
            x = x + i * j
    return x


def folded_while(x):
    n = 0
    while n < 4:
        x = x * 2
        n += 1
    return x, n


def break_and_else(x):
    for i in range(10):
        if i == 3:
            break
        x = x + i
    else:
        x = x * 100
    for i in ():
        pass
    else:
        x = x - 1
    return x


def return_inside(x):
    for i in range(5):
        x = x + i
        if i == 2:
            return x
    return -x


def starred_and_strings(x):
    first, *middle, last = (1, 2, 3, 4)
    for c in "ab":
        x = x + len(c)
    return x * first + last, middle


@pytest.mark.parametrize("fn", [over_range, over_tuple_and_list, over_rows, nested_with_continue, folded_while,
                                break_and_else, return_inside, starred_and_strings], ids=lambda fn: fn.__name__)
def test_loops_unroll_into_one_graph(jit, fn):
    x = np.arange(6.0).reshape(2, 3)
    compiled = jit(fn)
    for _ in range(2):
        assert same(compiled(x), fn(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_a_loop_over_a_list_argument_guards_its_length(jit):
    def weighted(x, ws):
        for w in ws:
            x = x @ w
        return x

    compiled = jit(weighted)
    x, w = np.ones((2, 2)), np.full((2, 2), 0.5)
    for ws in ([w, w], [w, w * 2], [w, w, w]):
        np.testing.assert_array_equal(compiled(x, ws), weighted(x, ws))
    assert counters["stats"]["unique_graphs"] == 2  # the second list hits the first entry
    assert len(pyjit.cache_entries(compiled)) == 2


def test_a_while_on_array_data_is_a_data_dependent_break(jit):
    def halve(x):
        while x.sum() > 1:
            x = x / 2
        return x

    np.testing.assert_array_equal(jit(halve)(np.ones(4)), halve(np.ones(4)))
    assert any("truth value of an array" in key for key in counters["graph_break"])
