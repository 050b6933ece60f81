"""pyjit/frontend/assemble.py: what a caller that edits an instruction list relies on.
Code that moves keeps its jumps and exception handlers pointing at the same
instructions (EXTENDED_ARG prefixes included), positions come back as written, and
constants that compare equal but differ in type stay apart. The byte-for-byte round
trip of unedited code is tests/frontend/test_bytecode.py's."""

import dis
import types

from pyjit.frontend.assemble import assemble
from pyjit.frontend.bytecode import Bytecode, ExceptHandler, Instr, Label, decode

CO_OPTIMIZED_NEWLOCALS = 0x3


def layout(bytecode: Bytecode) -> list[tuple]:
    """Each instruction with its jump target and handler target as instruction indices,
    so two lists compare equal when every jump and handler leads to the same place."""
    index_of, count = {}, 0
    for item in bytecode.instructions:
        if isinstance(item, Label):
            index_of[item] = count
        else:
            count += 1

    def handler(instr):
        h = instr.handler
        return None if h is None else (index_of[h.target], h.depth, h.lasti)

    return [(instr.name, index_of[instr.arg] if isinstance(instr.arg, Label) else instr.arg, handler(instr))
            for instr in bytecode.instructions if isinstance(instr, Instr)]


def loop_with_try(items):
    total = 0
    for item in items:
        try:
            if item is None:
                continue
            total += 10 // item
        except ZeroDivisionError:
            total -= 1
            if total < -2:
                break
        finally:
            total += 100
    else:
        total += 1000
    return total


def padded(bytecode: Bytecode, every: int, count: int) -> Bytecode:
    """`bytecode` with `count` NOPs before every `every`-th instruction, each in its
    neighbour's try region and at its position, so every offset moves."""
    instructions = []
    for position, item in enumerate(bytecode.instructions):
        if isinstance(item, Instr) and item.name != "RESUME" and position % every == 0:
            instructions += [Instr("NOP", loc=item.loc, handler=item.handler) for _ in range(count)]
        instructions.append(item)
    bytecode.instructions = instructions
    return bytecode


def test_jumps_and_handlers_lead_to_the_same_instructions_after_code_moves():
    edited = padded(decode(loop_with_try.__code__), every=5, count=40)
    code = assemble(edited)
    assert "EXTENDED_ARG" in [instr.opname for instr in dis.get_instructions(code)]  # jumps past 255 units
    assert layout(decode(code)) == layout(edited)
    moved = types.FunctionType(code, loop_with_try.__globals__)
    for items in ([1, 2, None, 0, 5], [0, 0, 0, 0, 7], [], [None]):
        assert moved(items) == loop_with_try(items)


def test_one_exception_table_entry_per_run_of_equal_handlers():
    outer, inner = Label(), Label()
    catch, nested = ExceptHandler(outer, depth=0, lasti=False), ExceptHandler(inner, depth=1, lasti=True)
    bytecode = Bytecode(
        [Instr("RESUME", 0),
         Instr("LOAD_FAST", "x", handler=catch), Instr("POP_TOP", handler=catch),
         Instr("NOP"),
         Instr("LOAD_FAST", "x", handler=catch), Instr("LOAD_FAST", "x", handler=nested),
         Instr("BINARY_OP", dis._nb_ops.index(("NB_TRUE_DIVIDE", "/")), handler=nested),
         Instr("RETURN_VALUE"),
         inner, Instr("POP_TOP"), Instr("POP_TOP"), Instr("LOAD_CONST", "inner"), Instr("RETURN_VALUE"),
         outer, Instr("POP_TOP"), Instr("LOAD_CONST", "outer"), Instr("RETURN_VALUE")],
        name="divide", argcount=1, flags=CO_OPTIMIZED_NEWLOCALS, varnames=["x"])
    code = assemble(bytecode)
    offset = {instr.offset: index for index, instr in enumerate(dis.get_instructions(code))}
    entries = [(offset[e.start], offset.get(e.end), offset[e.target], e.depth, e.lasti)
               for e in dis.Bytecode(code).exception_entries]
    assert entries == [(1, 3, 12, 0, False), (4, 5, 12, 0, False), (5, 7, 8, 1, True)]
    assert layout(decode(code)) == layout(bytecode)
    divide = types.FunctionType(code, {})
    assert divide(4) == 1.0 and divide(0) == "inner"


def test_positions_come_back_as_written():
    locations = [dis.Positions(10, 10, 4, 9), None, dis.Positions(10, 10, 4, 9), dis.Positions(11, 11, 0, 127),
                 dis.Positions(3, 3, 2, 6), dis.Positions(3, 5, 200, 1), dis.Positions(2000, 2000, None, None),
                 dis.Positions(12, 12, 90, 130)]
    instructions = [Instr("RESUME", 0)]
    for loc in locations:
        instructions += [Instr("LOAD_CONST", None, loc=loc), Instr("POP_TOP", loc=loc)]
    instructions += [Instr("LOAD_CONST", None), Instr("RETURN_VALUE")]
    code = assemble(Bytecode(instructions, first_lineno=10))
    positions = list(code.co_positions())[1:-2]
    none = (None, None, None, None)
    assert positions == [tuple(loc) if loc else none for loc in locations for _ in range(2)]


def test_equal_constants_of_different_types_stay_apart():
    values = [0, 0.0, -0.0, False, 1, 1.0, True, (0,), (0.0,), (False,)]
    instructions = [Instr("RESUME", 0)] + [Instr("LOAD_CONST", value) for value in values]
    instructions += [Instr("BUILD_TUPLE", len(values)), Instr("RETURN_VALUE")]
    made = types.FunctionType(assemble(Bytecode(instructions, flags=CO_OPTIMIZED_NEWLOCALS)), {})()
    assert [(type(value), repr(value)) for value in made] == [(type(value), repr(value)) for value in values]
