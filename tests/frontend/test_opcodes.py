"""pyjit/frontend/opcodes.py: every opcode of the running interpreter is handled, listed
as unhandled with a reason, or listed as never appearing in decoded code; registration
refuses unknown opcodes and second handlers; loops unroll (NOTE(loop-unrolling))."""

import dis
import sys

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.frontend import opcodes
from pyjit.frontend.breaks import Break
from pyjit.utils import counters


def test_every_opcode_is_accounted_for():
    # Pseudo-instructions (numbered from 256: JUMP, SETUP_FINALLY, 3.12's LOAD_METHOD, ...)
    # are the compiler's own and never appear in a code object.
    real = {name for name, number in dis.opmap.items() if number < 256}
    handled, unhandled, absent = set(opcodes.HANDLERS), set(opcodes.UNHANDLED), set(opcodes.NOT_IN_CODE)
    assert real - handled - unhandled - absent == set()
    assert handled & unhandled == set() and handled & absent == set() and unhandled & absent == set()
    assert (handled | unhandled | absent) <= real


def test_every_unhandled_opcode_has_a_kind_and_a_reason():
    for name, (kind, reason) in opcodes.UNHANDLED.items():
        assert kind in ("break", "skip") and reason, name
        assert isinstance(opcodes.unhandled_reason(name), Break)


def test_straight_line_opcodes_are_handled():
    for name in ("RESUME", "LOAD_FAST", "STORE_FAST", "LOAD_CONST", "RETURN_VALUE", "LOAD_GLOBAL", "LOAD_ATTR",
                 "CALL", "BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "BUILD_TUPLE", "UNPACK_SEQUENCE", "LOAD_DEREF"):
        assert name in opcodes.HANDLERS


def test_registration_refuses_unknown_and_duplicate_opcodes():
    with pytest.raises(ValueError, match="not an opcode"):
        opcodes.handler("NOT_AN_OPCODE")(lambda tracer, instr: None)
    with pytest.raises(ValueError, match="two handlers"):
        opcodes.handler("LOAD_FAST")(lambda tracer, instr: None)
    # Out of the version range: not registered, so no error.
    opcodes.handler("NOT_AN_OPCODE", until=(3, 0))(lambda tracer, instr: None)
    assert "NOT_AN_OPCODE" not in opcodes.HANDLERS


def breaking_opcodes(x, items, flag):
    y = -x
    z = not flag
    w = x[1:2] + items.count(x) + x.sum(axis=0) + (x in items) + (x is None) + (x < 2)
    with open(__file__) as f:
        w = w + len(f.name)
    if x:
        y = y + 1
    return y, z, w, ~x, x.T, print(x, sep="")


def test_each_break_behaviour_takes_and_leaves_what_cpython_says():
    """NOTE(break-behaviour): the stack effect an opcode declares for the break path is
    CPython's own for the instructions it covers (a call from its KW_NAMES and PRECALL),
    whichever Python runs."""
    from pyjit.frontend.bytecode import Instr, decoded

    code = breaking_opcodes.__code__
    raw = [instr for instr in dis.get_instructions(code) if instr.opname != "EXTENDED_ARG"]
    instructions = decoded(code).instructions
    ours = [item for item in instructions if isinstance(item, Instr)]
    assert [instr.opname for instr in raw] == [instr.name for instr in ours]
    raw_of = {id(item): instr for item, instr in zip(ours, raw)}
    checked = set()
    for index, item in enumerate(instructions):
        on_break = opcodes.ON_BREAK.get(getattr(item, "name", None))
        if on_break is None:
            continue
        takes, leaves, redo, resume_at = on_break.effect(instructions, index)
        covered = [raw_of[id(step)] for step in instructions[on_break.start(instructions, index):index + 1]]
        effect = sum(dis.stack_effect(step.opcode, step.arg, jump=False) for step in covered)
        assert len(leaves) - takes == effect, item.name
        assert redo and resume_at[0] == index + 1
        checked.add(item.name)
    assert {"CALL", "LOAD_ATTR", "BINARY_OP", "COMPARE_OP", "CONTAINS_OP", "IS_OP", "BEFORE_WITH"} <= checked


# -- loops (NOTE(loop-unrolling)) ---------------------------------------------------------------
def test_loop_opcodes_are_handled():
    for name in ("GET_ITER", "FOR_ITER", "JUMP_BACKWARD", "UNPACK_EX", *(n for n in ("END_FOR",) if n in dis.opmap)):
        assert name in opcodes.HANDLERS


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
