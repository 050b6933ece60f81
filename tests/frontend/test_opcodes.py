"""pyjit/frontend/opcodes.py: every opcode of the running interpreter is handled, listed
as unhandled with a reason, or listed as never appearing in decoded code; registration
refuses unknown opcodes and second handlers."""

import dis

import pytest

from pyjit.frontend import opcodes
from pyjit.frontend.breaks import Break


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
