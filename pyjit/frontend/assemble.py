"""Assembling: an editable instruction list back into a code object.

`assemble` recomputes everything that derives from the instructions: the code string
with its EXTENDED_ARG prefixes and inline caches, jump offsets and directions, the
constant, name and variable tables (new entries are appended), the location table,
the exception table (NOTE(exception-handlers) in bytecode.py) and the stack size. What
differs between CPython versions is the data pyjit/frontend/bytecode.py builds
(NOTE(bytecode-versions)), and the two version facts of the writers kept here
(`_SPLIT_LOCATIONS`, `_JUMP_ARG_START_AT_TARGET`).
"""

import dis
import itertools
import types

from .bytecode import (ARG_CONST, ARG_FREE, ARG_JUMP, ARG_KIND, ARG_LOCAL, ARG_NAME, ARG_PAIR, ARG_RAW, CACHE_UNITS,
                       CODE_OPCODES, DIRECTIONS, EFFECT_FIXES, EXTENDED_ARG, FLAG_BITS, NO_FALLTHROUGH, PAIRS,
                       TAKES_ARG, VERSION, Bytecode, ExceptHandler, FreeVar, Instr, Label, localsplus)


def assemble(bytecode: Bytecode) -> types.CodeType:
    """A new code object running `bytecode`'s instructions (see the module docstring)."""
    tables = _Tables(bytecode)
    ops, opargs, sources, jumps, label_at = _lower(bytecode.instructions, tables)
    if not ops:
        raise ValueError("a code object needs at least one instruction")
    offsets = _place_jumps(ops, opargs, jumps)
    sizes = [end - start for start, end in zip(offsets, offsets[1:])]
    handlers = [None if s.handler is None else _handler_start(s.handler, label_at, len(ops))
                for s in sources]
    targets = [None] * len(ops)
    for index, target, _ in jumps:
        targets[index] = target
    return types.CodeType(
        bytecode.argcount, bytecode.posonlyargcount, bytecode.kwonlyargcount,
        len(tables.varnames), _stack_size(ops, opargs, targets, handlers, sources), bytecode.flags,
        _code_string(ops, opargs), tuple(tables.consts), tuple(tables.names),
        tuple(tables.varnames), bytecode.filename, bytecode.name, bytecode.qualname,
        bytecode.first_lineno, _location_table(sources, sizes, bytecode.first_lineno),
        _exception_table(sources, offsets, label_at), tuple(bytecode.freevars),
        tuple(bytecode.cellvars))


def _where(instr: Instr, message: str) -> ValueError:
    return ValueError(f"{instr!r}: {message}")


class _Tables:
    """The constant, name and variable tables of the code object being assembled.

    Constants are found by identity first, so a decoded code object gets its own table
    back even where two entries compare equal, then by type and value as CPython's
    compiler shares them (0, 0.0, False and -0.0 stay apart).
    """

    def __init__(self, bytecode: Bytecode):
        self.consts = list(bytecode.consts)
        self.const_ids = {}
        for index, value in enumerate(self.consts):
            self.const_ids.setdefault(id(value), index)
        self.const_keys = None
        self.names = list(bytecode.names)
        self.name_index = {}
        for index, name in enumerate(self.names):
            self.name_index.setdefault(name, index)
        self.varnames = list(bytecode.varnames) + _new_locals(bytecode)
        self.slots, self.free_slots = {}, {}
        for index, name in enumerate(localsplus(self.varnames, bytecode.cellvars, bytecode.freevars)):
            (self.free_slots if type(name) is FreeVar else self.slots).setdefault(name, index)
        self.cells = set(bytecode.cellvars) | set(bytecode.freevars)

    def oparg(self, kind: str | None, instr: Instr) -> int:
        arg = instr.arg
        if kind is None:
            if arg is not None:
                raise _where(instr, "this opcode takes no argument")
            return 0
        if kind is ARG_RAW:
            if type(arg) is not int or not 0 <= arg < 1 << 32:
                raise _where(instr, "the argument must be an int in [0, 2**32)")
            return arg
        if kind is ARG_CONST:
            return self.const(arg)
        if kind is ARG_NAME:
            bits = FLAG_BITS.get(instr.name)
            if not bits:
                return self.name(instr, arg)
            if not (isinstance(arg, tuple) and len(arg) == 2 and arg[1] in range(1 << bits)):
                raise _where(instr, f"the argument must be a (name, flags < {1 << bits}) pair")
            return self.name(instr, arg[0]) << bits | arg[1]
        if kind is ARG_FREE and arg not in self.cells:
            raise _where(instr, f"{arg!r} is not a cell or free variable")
        return self.slot(instr, arg)

    def slot(self, instr: Instr, name: str) -> int:
        index = None if type(name) is FreeVar else self.slots.get(name)
        if index is None:
            index = self.free_slots.get(name)
        if index is None:
            raise _where(instr, f"{name!r} is not a variable of this code")
        return index

    def const(self, value) -> int:
        index = self.const_ids.get(id(value))
        if index is None:
            if self.const_keys is None:
                self.const_keys = {}
                for position, known in enumerate(self.consts):
                    self.const_keys.setdefault(_const_key(known), position)
            index = self.const_keys.setdefault(_const_key(value), len(self.consts))
            if index == len(self.consts):
                self.consts.append(value)
            self.const_ids[id(value)] = index
        return index

    def name(self, instr: Instr, name) -> int:
        if type(name) is not str:
            raise _where(instr, "the name must be a str")
        index = self.name_index.setdefault(name, len(self.names))
        if index == len(self.names):
            self.names.append(name)
        return index


_BY_VALUE = frozenset((int, bool, str, bytes, type(None), type(...)))


def _const_key(value):
    kind = type(value)
    if kind is tuple or kind is frozenset:
        return kind, kind(map(_const_key, value))
    if kind is float or kind is complex:
        return kind, repr(value)
    return kind, value if kind in _BY_VALUE else id(value)


def _new_locals(bytecode: Bytecode) -> list[str]:
    """Names the *_FAST instructions use that are no variable yet, in order of use."""
    known = set(localsplus(bytecode.varnames, bytecode.cellvars, bytecode.freevars))
    new = []
    for instr in bytecode.instructions:
        kind = ARG_KIND[instr.name] if isinstance(instr, Instr) else None
        if kind is ARG_LOCAL or kind is ARG_PAIR:
            for name in (instr.arg,) if kind is ARG_LOCAL else instr.arg:
                if not isinstance(name, str):
                    raise _where(instr, "variable names must be str")
                if name not in known and type(name) is not FreeVar:
                    known.add(name)
                    new.append(name)
    return new


def _lower(instructions, tables: _Tables):
    """Opcode numbers and opargs, the `Instr` each came from, and the jumps as
    (index, target index, backward) with their direction already chosen."""
    ops, opargs, sources, pending, label_at = [], [], [], [], {}
    for instr in instructions:
        if isinstance(instr, Label):
            if instr in label_at:
                raise ValueError(f"{instr!r} is placed twice")
            label_at[instr] = len(ops)
            continue
        kind = ARG_KIND[instr.name]
        if kind is ARG_JUMP:
            pending.append((len(ops), instr))
            ops.append(None)
            opargs.append(0)
            sources.append(instr)
        elif kind is ARG_PAIR:
            _lower_pair(instr, tables, ops, opargs, sources)
        else:
            ops.append(CODE_OPCODES[instr.name])
            opargs.append(tables.oparg(kind, instr))
            sources.append(instr)
    jumps = []
    for index, instr in pending:
        target = _label_index(instr, instr.arg, label_at, len(ops))
        backward = target <= index
        name = DIRECTIONS.get(instr.name, (instr.name, None))[backward]
        if name is None:
            raise _where(instr, f"Python {VERSION[0]}.{VERSION[1]} has no such jump "
                                f"{'backward' if backward else 'forward'}")
        ops[index] = CODE_OPCODES[name]
        jumps.append((index, target, backward))
    return ops, opargs, sources, jumps, label_at


def _lower_pair(instr, tables, ops, opargs, sources):
    """A 3.13 two-local instruction, split in two when a slot does not fit in 4 bits."""
    if not (isinstance(instr.arg, tuple) and len(instr.arg) == 2):
        raise _where(instr, "the argument must be a pair of variable names")
    first, second = (tables.slot(instr, name) for name in instr.arg)
    if first < 16 and second < 16:
        ops.append(CODE_OPCODES[instr.name])
        opargs.append(first << 4 | second)
        sources.append(instr)
        return
    for part, slot in zip(PAIRS[instr.name], (first, second)):
        ops.append(CODE_OPCODES[part])
        opargs.append(slot)
        sources.append(instr)


def _label_index(instr, label, label_at, count) -> int:
    index = label_at.get(label) if isinstance(label, Label) else None
    if index is None or index == count:
        raise _where(instr, "the target must be a Label placed before an instruction")
    return index


def _handler_start(handler: ExceptHandler, label_at, count) -> tuple[int, int]:
    """(index, stack depth) at which an exception handler starts."""
    index = label_at.get(handler.target)
    if index is None or index == count:
        raise ValueError(f"{handler!r}: the target must be a Label placed before an instruction")
    return index, handler.depth + 1 + bool(handler.lasti)


def _size(op: int, oparg: int) -> int:
    """Code units of an instruction with its EXTENDED_ARG prefixes and caches."""
    return 1 + (oparg > 0xFF) + (oparg > 0xFFFF) + (oparg > 0xFFFFFF) + CACHE_UNITS[op]


_JUMP_ARG_START_AT_TARGET = VERSION >= (3, 13)


def _place_jumps(ops, opargs, jumps) -> list[int]:
    """Set the jumps' opargs; return each instruction's first code unit and the total.

    A longer oparg may need an EXTENDED_ARG prefix, which moves later code and may
    lengthen other jumps, so sizes are recomputed until none changes. More than one
    layout can be stable (a backward jump of 255 units without prefix, or of 256 with
    one), and CPython's pick depends on where it starts: from a zero oparg in 3.11,
    from the target's instruction index in 3.13 (`_JUMP_ARG_START_AT_TARGET`). 3.12
    starts from its compiler's label numbers, which no code object records; zero
    matches it on all but a handful of the round-trip test's code objects.
    """
    if _JUMP_ARG_START_AT_TARGET:
        for index, target, _ in jumps:
            opargs[index] = target
    sizes = [_size(op, oparg) for op, oparg in zip(ops, opargs)]
    while True:
        offsets = list(itertools.accumulate(sizes, initial=0))
        changed = False
        for index, target, backward in jumps:
            end = offsets[index + 1]
            oparg = end - offsets[target] if backward else offsets[target] - end
            opargs[index] = oparg
            size = _size(ops[index], oparg)
            if size != sizes[index]:
                sizes[index] = size
                changed = True
        if not changed:
            return offsets


_CACHE_BYTES = [bytes(2 * units) for units in CACHE_UNITS]


def _code_string(ops, opargs) -> bytes:
    code = bytearray()
    for op, oparg in zip(ops, opargs):
        if oparg > 0xFF:
            for shift in (24, 16, 8):
                if oparg >> shift:
                    code += bytes((EXTENDED_ARG, (oparg >> shift) & 0xFF))
        code.append(op)
        code.append(oparg & 0xFF)
        code += _CACHE_BYTES[op]
    return bytes(code)


def _location_table(sources, sizes, first_lineno: int) -> bytes:
    """co_linetable: runs of code units sharing a source position (CPython's
    Objects/locations.md), lines relative to the previous entry's line."""
    table = bytearray()
    line = first_lineno
    loc, units = None, 0
    for source, size in zip(sources, sizes):
        if source.loc != loc or _SPLIT_LOCATIONS:
            line = _write_location(table, loc, units, line)
            loc, units = source.loc, 0
        units += size
    _write_location(table, loc, units, line)
    return bytes(table)


# 3.11 writes every instruction's position separately; 3.12+ join neighbours at one position.
_SPLIT_LOCATIONS = VERSION < (3, 12)
_NO_LOCATION, _NO_COLUMNS, _LONG, _ONE_LINE = 15, 13, 14, 10


def _write_location(table: bytearray, loc, units: int, line: int) -> int:
    """Entries of up to 8 code units at `loc`; returns the line the next entry starts from.

    The first byte of an entry is 1, a 4-bit form, the length - 1 in 3 bits. Each form
    is the shortest CPython's assembler would pick, so decoded tables come back equal.
    """
    while units > 0:
        length = 8 if units > 8 else units
        units -= length
        if loc is None:
            table.append(0x80 | _NO_LOCATION << 3 | (length - 1))
            continue
        lineno, end_lineno, col, end_col = loc
        end_lineno = lineno if end_lineno is None else end_lineno
        delta = lineno - line
        if col is None or end_col is None:
            if end_lineno == lineno:
                table.append(0x80 | _NO_COLUMNS << 3 | (length - 1))
                _write_signed(table, delta)
                line = lineno
                continue
        elif end_lineno == lineno and delta == 0 and col < 80 and 0 <= end_col - col < 16:
            table.append(0x80 | (col >> 3) << 3 | (length - 1))
            table.append((col & 7) << 4 | (end_col - col))
            continue
        elif end_lineno == lineno and 0 <= delta < 3 and col < 128 and end_col < 128:
            table.append(0x80 | (_ONE_LINE + delta) << 3 | (length - 1))
            table += bytes((col, end_col))
            line = lineno
            continue
        table.append(0x80 | _LONG << 3 | (length - 1))
        _write_signed(table, delta)
        _write_varint(table, end_lineno - lineno)
        _write_varint(table, 0 if col is None else col + 1)
        _write_varint(table, 0 if end_col is None else end_col + 1)
        line = lineno
    return line


def _write_varint(table: bytearray, value: int) -> None:
    """6-bit groups, least significant first, bit 6 set on all but the last."""
    while value >= 64:
        table.append(64 | (value & 63))
        value >>= 6
    table.append(value)


def _write_signed(table: bytearray, value: int) -> None:
    _write_varint(table, -value << 1 | 1 if value < 0 else value << 1)


def _exception_table(sources, offsets, label_at) -> bytes:
    """co_exceptiontable: one entry per run of instructions sharing a handler."""
    table = bytearray()
    current, start = None, 0
    for index, source in enumerate([*sources, None]):
        handler = None if source is None else source.handler
        if handler == current:
            continue
        if current is not None:
            target = offsets[label_at[current.target]]
            depth_lasti = current.depth << 1 | bool(current.lasti)
            for position, value in enumerate((start, offsets[index] - start, target, depth_lasti)):
                _write_exception_number(table, value, first=position == 0)
        current, start = handler, offsets[index]
    return bytes(table)


def _write_exception_number(table: bytearray, value: int, first: bool) -> None:
    """6-bit groups, most significant first, bit 6 set on all but the last, bit 7 set
    on the first byte of an entry."""
    groups = [value & 63]
    while value >= 64:
        value >>= 6
        groups.append(value & 63)
    for position, group in enumerate(reversed(groups)):
        continued = 64 if position < len(groups) - 1 else 0
        table.append(group | continued | (128 if first and position == 0 else 0))


def _stack_size(ops, opargs, targets, handlers, sources) -> int:
    """co_stacksize: the deepest the stack gets on any path from the first instruction.

    Each instruction has one depth on entry: the next instruction and a jump's target
    get the depth the instruction leaves (`dis.stack_effect` without and with the
    jump); a handler starts at the depth its `ExceptHandler` names. Code that no path
    reaches is not visited (CPython also counts the handlers of `try` bodies it proved
    cannot raise and removed, so its figure can be larger there).
    """
    depth_at = [None] * len(ops)
    pending = [(0, 0)]
    effect = dis.stack_effect
    while pending:
        index, depth = pending.pop()
        while True:
            if index == len(ops):
                raise _where(sources[-1], "control runs past this last instruction")
            if depth_at[index] is not None:
                if depth_at[index] != depth:
                    raise _where(sources[index], f"reached with stack depths {depth_at[index]} and {depth}")
                break
            depth_at[index] = depth
            op = ops[index]
            oparg = opargs[index] if op in TAKES_ARG else None
            handler = handlers[index]
            if handler is not None and depth_at[handler[0]] != handler[1]:
                pending.append(handler)
            if targets[index] is not None:
                pending.append((targets[index], depth + effect(op, oparg, jump=True)))
                depth += effect(op, oparg, jump=False)
            else:
                fixed = EFFECT_FIXES.get(op)
                depth += effect(op, oparg) if fixed is None else fixed
            if depth < 0:
                raise _where(sources[index], "pops an empty stack")
            if op in NO_FALLTHROUGH:
                break
            index += 1
    # The deepest point is where some instruction starts: a path's last instruction
    # (a return, raise or jump) does not leave more than it found.
    return max(depth for depth in depth_at if depth is not None)


