"""pyjit/frontend/opcodes.py: the opcodes that work on values are handled, comprehensions
restore their variable (NOTE(comprehensions)), `del` unbinds a local."""

import sys

import numpy as np
import pytest
from frontend.test_interpreter import same

from pyjit.frontend import opcode_table
from pyjit.utils import counters


def test_straight_line_opcodes_are_handled():
    for name in ("RESUME", "LOAD_FAST", "STORE_FAST", "LOAD_CONST", "RETURN_VALUE", "LOAD_GLOBAL", "LOAD_ATTR",
                 "CALL", "BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "BUILD_TUPLE", "UNPACK_SEQUENCE", "LOAD_DEREF"):
        assert name in opcode_table.HANDLERS


def test_inlined_comprehensions_are_captured_and_restore_their_variable(jit):
    def comprehensions(xs, y):
        a = "outer"  # a comprehension variable of the same name is saved and put back
        parts = [np.sin(a) * y for a in xs]
        squares = {b: b * b for b in range(3)}
        return sum(parts), a, squares, [c.shape for c in xs]

    xs = [np.ones(3), np.arange(3.0)]
    got, want = jit(comprehensions)(xs, 2.0), comprehensions(xs, 2.0)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    if sys.version_info >= (3, 12):  # 3.11 makes each comprehension a function of its own
        assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_del_unbinds_a_local_and_deleting_an_unbound_one_raises_pythons_error(jit):
    def freed(x, unused):
        y = np.sin(x)
        del x, unused
        return y * 2

    np.testing.assert_array_equal(jit(freed)(np.ones(3), np.zeros(2)), freed(np.ones(3), np.zeros(2)))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]

    def twice(x):
        del x
        del x

    with pytest.raises(UnboundLocalError):
        jit(twice)(np.ones(3))
