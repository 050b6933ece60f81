"""pyjit/frontend/opcode_table.py: every opcode of the running interpreter is handled,
listed as unhandled with a reason, or listed as never appearing in decoded code;
registration refuses unknown opcodes and second handlers; the break behaviour each opcode
declares is CPython's stack effect (NOTE(break-behaviour))."""

import dis

import pytest

from pyjit.frontend import opcode_table
from pyjit.frontend.breaks import Break
from pyjit.frontend.bytecode import Instr, decoded


def test_every_opcode_is_accounted_for():
    # Pseudo-instructions (numbered from 256: JUMP, SETUP_FINALLY, 3.12's LOAD_METHOD, ...)
    # are the compiler's own and never appear in a code object.
    real = {name for name, number in dis.opmap.items() if number < 256}
    handled, unhandled, absent = set(opcode_table.HANDLERS), set(opcode_table.UNHANDLED), set(opcode_table.NOT_IN_CODE)
    assert real - handled - unhandled - absent == set()
    assert handled & unhandled == set() and handled & absent == set() and unhandled & absent == set()
    assert (handled | unhandled | absent) <= real


def test_every_unhandled_opcode_has_a_kind_and_a_reason():
    for name, (kind, reason) in opcode_table.UNHANDLED.items():
        assert kind in ("break", "skip") and reason, name
        assert isinstance(opcode_table.unhandled_reason(name), Break)


def test_registration_refuses_unknown_and_duplicate_opcodes():
    with pytest.raises(ValueError, match="not an opcode"):
        opcode_table.handler("NOT_AN_OPCODE")(lambda tracer, instr: None)
    with pytest.raises(ValueError, match="two handlers"):
        opcode_table.handler("LOAD_FAST")(lambda tracer, instr: None)
    # Out of the version range: not registered, so no error.
    opcode_table.handler("NOT_AN_OPCODE", until=(3, 0))(lambda tracer, instr: None)
    assert "NOT_AN_OPCODE" not in opcode_table.HANDLERS


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
    code = breaking_opcodes.__code__
    raw = [instr for instr in dis.get_instructions(code) if instr.opname != "EXTENDED_ARG"]
    instructions = decoded(code).instructions
    ours = [item for item in instructions if isinstance(item, Instr)]
    assert [instr.opname for instr in raw] == [instr.name for instr in ours]
    raw_of = {id(item): instr for item, instr in zip(ours, raw)}
    checked = set()
    for index, item in enumerate(instructions):
        on_break = opcode_table.ON_BREAK.get(getattr(item, "name", None))
        if on_break is None:
            continue
        takes, leaves, redo, resume_at = on_break.effect(instructions, index)
        covered = [raw_of[id(step)] for step in instructions[on_break.start(instructions, index):index + 1]]
        effect = sum(dis.stack_effect(step.opcode, step.arg, jump=False) for step in covered)
        assert len(leaves) - takes == effect, item.name
        assert redo and resume_at[0] == index + 1
        checked.add(item.name)
    assert {"CALL", "LOAD_ATTR", "BINARY_OP", "COMPARE_OP", "CONTAINS_OP", "IS_OP", "BEFORE_WITH"} <= checked
