"""Code objects as editable instruction lists: `decode` a code object, edit, `assemble`.

A `Bytecode` holds a list of `Instr` and `Label` plus the code object's other fields
(names, argument counts, flags, constant and variable tables). Arguments are resolved:
a jump holds the `Label` it goes to, LOAD_CONST the constant, LOAD_FAST the local's
name, and every instruction carries its source position and its exception handler.
`assemble` recomputes everything that derives from the instructions: the code string
with its EXTENDED_ARG prefixes and inline caches, jump offsets and directions, the
constant, name and variable tables (new entries are appended), the location table,
the exception table and the stack size.

NOTE(bytecode-versions): this module and csrc/cpython_compat.h are the only places that
know how CPython versions differ. Here the differences between 3.11, 3.12 and 3.13 are
data, built once at import from the running interpreter's `opcode` module:

* which opcodes take an argument (`HAVE_ARGUMENT` on 3.11, `opcode.hasarg` later);
* how many CACHE units follow each opcode (`opcode._inline_cache_entries`, a list by
  number before 3.13, a dict by name on 3.13; no public API gives it);
* which name arguments carry flag bits below the name index (`_FLAG_BITS`);
* which jumps exist in which direction (`_DIRECTIONS`): 3.11 has forward and backward
  variants of each conditional jump, 3.12 and 3.13 only forward ones;
* 3.13's instructions on two locals at once (`_PAIRS`);
* how the assembler writes positions (`_SPLIT_LOCATIONS`) and where its EXTENDED_ARG
  fixpoint starts (`_JUMP_ARG_START_AT_TARGET`), so that round trips are byte-identical;
* stack effects, which come from `dis.stack_effect`, CPython's own table for the
  running version, so none is typed here but one fix (`_EFFECT_FIXES`).

Code elsewhere in pyjit names opcodes through `Instr` and never reads `sys.version_info`.

NOTE(exception-handlers): each instruction names its exception handler (an
`ExceptHandler`: target label, stack depth to unwind to, whether to push the offset of
the raising instruction), or None. This is how CPython's compiler holds it too: an
inserted instruction states its own handler, copied instructions keep theirs, and the
assembler writes one table entry per run of consecutive instructions sharing a handler.
"""

import dataclasses
import dis
import itertools
import opcode
import sys
import types
from typing import NamedTuple

from .codemap import CodeMap

_VERSION = sys.version_info[:2]

# Opcodes that exist in the code string; pseudo-instructions (numbered from 256) are
# the compiler's own and have no encoding.
_OPCODES = {name: number for name, number in opcode.opmap.items() if number < 256}
_EXTENDED_ARG = opcode.EXTENDED_ARG
if _VERSION < (3, 12):
    _TAKES_ARG = frozenset(n for n in _OPCODES.values() if n >= opcode.HAVE_ARGUMENT)
else:
    _TAKES_ARG = frozenset(opcode.hasarg)
_caches = opcode._inline_cache_entries
_CACHE_UNITS = [0] * 256
for _name, _number in _OPCODES.items():
    _CACHE_UNITS[_number] = _caches.get(_name, 0) if isinstance(_caches, dict) else _caches[_number]

# Name arguments whose low bits are flags: 3.11+ LOAD_GLOBAL pushes a NULL first,
# 3.12+ LOAD_ATTR loads a method, 3.12+ LOAD_SUPER_ATTR loads a method (bit 0) and was
# called with two arguments (bit 1).
_FLAG_BITS = {"LOAD_GLOBAL": 1}
if _VERSION >= (3, 12):
    _FLAG_BITS |= {"LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2}
# 3.13's instructions on two locals: the first acts on oparg >> 4, the second on oparg & 15.
_PAIRS = {name: parts for name, parts in {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}.items() if name in _OPCODES}

# Jump name -> (opcode used when the target lies after the jump, opcode used when it
# lies before; None where the version has no such jump). "JUMP" and "POP_JUMP_IF_*"
# are accepted on every version; the assembler picks each jump's direction.
_CONDITIONS = ("TRUE", "FALSE", "NONE", "NOT_NONE")
if _VERSION < (3, 12):
    _DIRECTIONS = {f"POP_JUMP_IF_{c}": (f"POP_JUMP_FORWARD_IF_{c}", f"POP_JUMP_BACKWARD_IF_{c}")
                   for c in _CONDITIONS}
else:
    _DIRECTIONS = {f"POP_JUMP_IF_{c}": (f"POP_JUMP_IF_{c}", None) for c in _CONDITIONS}
_DIRECTIONS["JUMP"] = ("JUMP_FORWARD", "JUMP_BACKWARD")
for _pair in list(_DIRECTIONS.values()):
    _DIRECTIONS.update((name, _pair) for name in _pair if name)
_DIRECTIONS["JUMP_BACKWARD_NO_INTERRUPT"] = (None, "JUMP_BACKWARD_NO_INTERRUPT")
_BACKWARD = frozenset(_OPCODES[back] for _, back in _DIRECTIONS.values() if back)
# Stack effects `dis.stack_effect` gets wrong for our purpose: before 3.13 it counts
# RETURN_GENERATOR as 0, but the generator's frame resumes with the sent value pushed.
_EFFECT_FIXES = {_OPCODES["RETURN_GENERATOR"]: 1} if _VERSION < (3, 13) else {}
# After these, control does not reach the next instruction.
_NO_FALLTHROUGH = frozenset(_OPCODES[name] for name in (
    "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT") if name in _OPCODES)


def _names_of(numbers) -> frozenset:
    numbers = set(numbers)
    return frozenset(name for name, number in _OPCODES.items() if number in numbers)


# How an instruction's argument is resolved, by opcode name.
_RAW, _JUMP, _CONST, _NAME, _LOCAL, _FREE, _PAIR = "raw", "jump", "const", "name", "local", "free", "pair"
_KIND = dict.fromkeys(_OPCODES, _RAW)
_KIND.update(dict.fromkeys(_names_of(opcode.hasjrel), _JUMP))
_KIND.update(dict.fromkeys(_DIRECTIONS, _JUMP))
_KIND.update(dict.fromkeys(_names_of(opcode.hasconst), _CONST))
_KIND.update(dict.fromkeys(_names_of(opcode.hasname), _NAME))
_KIND.update(dict.fromkeys(_names_of(opcode.haslocal), _LOCAL))
_KIND.update(dict.fromkeys(_names_of(opcode.hasfree), _FREE))
_KIND.update(dict.fromkeys(_PAIRS, _PAIR))
_KIND.update((name, None) for name, number in _OPCODES.items() if number not in _TAKES_ARG)
_KIND_BY_NUMBER = [_KIND.get(opcode.opname[number]) for number in range(256)]
del _caches, _name, _number, _pair


class Label:
    """A position in an instruction list: where jumps and exception handlers go."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Label {id(self):#x}>"


class ExceptHandler(NamedTuple):
    """Where an exception raised by an instruction goes (see NOTE(exception-handlers)).

    The handler starts with the stack cut to `depth` items, then the offset of the
    raising instruction pushed if `lasti`, then the exception.
    """

    target: Label
    depth: int
    lasti: bool = False


class Instr:
    """One instruction: opcode name, resolved argument, source position, handler.

    The argument is, by opcode: a `Label` for jumps; the constant for LOAD_CONST,
    RETURN_CONST and KW_NAMES; the name for *_NAME, *_ATTR, *_GLOBAL, IMPORT_* ops, as a
    `(name, flags)` pair for those whose low oparg bits are flags (LOAD_GLOBAL; LOAD_ATTR
    and LOAD_SUPER_ATTR on 3.12+); the variable name for *_FAST, *_DEREF, MAKE_CELL and
    LOAD_CLOSURE, a pair of names for 3.13's LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST
    and STORE_FAST_STORE_FAST; None for opcodes without argument; the int otherwise.
    `loc` is a `dis.Positions` or None.

    Besides the running version's opcodes, "JUMP" and "POP_JUMP_IF_TRUE/FALSE/NONE/
    NOT_NONE" are accepted everywhere, and every jump is given the direction its target
    needs when assembled (see NOTE(bytecode-versions)).
    """

    __slots__ = ("name", "arg", "loc", "handler")

    def __init__(self, name: str, arg=None, loc: dis.Positions | None = None,
                 handler: ExceptHandler | None = None):
        if name not in _KIND:
            raise ValueError(f"{name!r} is not an opcode of Python {_VERSION[0]}.{_VERSION[1]}")
        self.name = name
        self.arg = arg
        self.loc = loc
        self.handler = handler

    def __repr__(self) -> str:
        arg = "" if self.arg is None else f", {self.arg!r}"
        return f"Instr({self.name!r}{arg})"


@dataclasses.dataclass(eq=False)
class Bytecode:
    """A code object as an instruction list plus the fields `assemble` does not derive.

    The tables (`consts`, `names`, `varnames`, `cellvars`, `freevars`) keep their order;
    `assemble` appends what the instructions use and the tables lack (new locals go to
    `varnames`). Arguments are the first `varnames`, as in a code object; a cell
    variable that is also an argument is listed in both `varnames` and `cellvars`.
    """

    instructions: list
    name: str = "<pyjit>"
    qualname: str = "<pyjit>"
    filename: str = "<pyjit>"
    first_lineno: int = 1
    argcount: int = 0
    posonlyargcount: int = 0
    kwonlyargcount: int = 0
    flags: int = 0
    consts: list = dataclasses.field(default_factory=list)
    names: list = dataclasses.field(default_factory=list)
    varnames: list = dataclasses.field(default_factory=list)
    cellvars: list = dataclasses.field(default_factory=list)
    freevars: list = dataclasses.field(default_factory=list)


class FreeVar(str):
    """A free variable's name (a cell of an enclosing scope), as decoded arguments give it.

    It is a str and compares equal to the plain name, so only the assembler tells them
    apart: a class body may have a cell and a free variable of the same name
    (`__class__`), and a `FreeVar` picks the free one. A plain name means a local or
    cell variable first, a free variable if there is none.
    """

    __slots__ = ()


def _localsplus(varnames, cellvars, freevars) -> list[str]:
    """The frame's variable slots by index: locals, cells that are not locals, free variables."""
    return [*varnames, *(name for name in cellvars if name not in varnames), *map(FreeVar, freevars)]


# ----------------------------------------------------------------------------- decode



_decoded = CodeMap()


def decoded(code: types.CodeType) -> Bytecode:
    """`decode(code)`, kept for as long as the code lives: the interpreter and the
    resume functions read it, and nothing may change it (edit a copy made with
    `dataclasses.replace`)."""
    return _decoded.get(code, lambda: decode(code))


def decode(code: types.CodeType) -> Bytecode:
    """The instructions and fields of `code` (its `co_code`, never the specialised form)."""
    spans = _read_code(code.co_code)
    entries = _read_exception_table(code.co_exceptiontable)
    labels = _make_labels(code, spans, entries)
    tables = (code.co_consts, code.co_names,
              _localsplus(code.co_varnames, code.co_cellvars, code.co_freevars))
    positions = list(code.co_positions())
    opnames, kinds = opcode.opname, _KIND_BY_NUMBER
    instructions = []
    last_position = last_loc = None
    for (start, op, oparg, end), handler in zip(spans, _handlers(spans, entries, labels)):
        position = positions[start]
        if position != last_position:
            last_position = position
            last_loc = None if position[0] is None else dis.Positions._make(position)
        if start in labels:
            instructions.append(labels[start])
        kind = kinds[op]
        if kind is not _RAW:
            oparg = None if kind is None else _decode_arg(kind, op, oparg, end, labels, tables)
        instructions.append(Instr(opnames[op], oparg, last_loc, handler))
    return Bytecode(
        instructions, code.co_name, code.co_qualname, code.co_filename, code.co_firstlineno,
        code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
        list(code.co_consts), list(code.co_names), list(code.co_varnames),
        list(code.co_cellvars), list(code.co_freevars))


def _make_labels(code, spans, entries) -> dict[int, Label]:
    """A label for every code unit a jump or an exception handler goes to."""
    targets = {_jump_target(op, oparg, end) for start, op, oparg, end in spans
               if _KIND_BY_NUMBER[op] is _JUMP}
    targets.update(target for _, _, target, _, _ in entries)
    if not targets <= {start for start, _, _, _ in spans}:
        raise ValueError(f"{code.co_name}: a jump or handler lands inside an instruction")
    return {offset: Label() for offset in sorted(targets)}


def _handlers(spans, entries, labels) -> list[ExceptHandler | None]:
    """Each instruction's handler; the table's entries are sorted and do not overlap."""
    handlers = [None] * len(spans)
    index = 0
    for start, end, target, depth, lasti in entries:
        handler = ExceptHandler(labels[target], depth, lasti)
        while spans[index][0] < start:
            index += 1
        while index < len(spans) and spans[index][0] < end:
            handlers[index] = handler
            index += 1
    return handlers


def _read_code(raw: bytes) -> list[tuple[int, int, int, int]]:
    """(first unit, opcode, oparg, unit after its caches) per instruction, in code units;
    EXTENDED_ARG prefixes are folded into the oparg and the first unit."""
    spans = []
    start = prefix = 0
    index, size = 0, len(raw)
    while index < size:
        op, oparg = raw[index], raw[index + 1] | prefix
        if op == _EXTENDED_ARG:
            prefix = oparg << 8
            index += 2
            continue
        index += 2 + 2 * _CACHE_UNITS[op]
        spans.append((start, op, oparg, index >> 1))
        start, prefix = index >> 1, 0
    return spans


def _jump_target(op: int, oparg: int, end: int) -> int:
    """Jumps count code units from the end of the jump's caches."""
    return end - oparg if op in _BACKWARD else end + oparg


def _decode_arg(kind, op, oparg, end, labels, tables):
    consts, names, localsplus = tables
    if kind is _JUMP:
        return labels[_jump_target(op, oparg, end)]
    if kind is _CONST:
        return consts[oparg]
    if kind is _NAME:
        bits = _FLAG_BITS.get(opcode.opname[op])
        return (names[oparg >> bits], oparg & ((1 << bits) - 1)) if bits else names[oparg]
    if kind is _PAIR:
        return localsplus[oparg >> 4], localsplus[oparg & 15]
    return localsplus[oparg]


def _read_exception_table(raw: bytes) -> list[tuple[int, int, int, int, bool]]:
    """(start, end, target, depth, lasti) per entry, offsets in code units.

    Each entry is four numbers written in 6-bit groups, most significant first, bit 6
    set on all groups but the last, bit 7 set on the first byte of an entry.
    """
    numbers = []
    value = 0
    for byte in raw:
        value = (value << 6) | (byte & 63)
        if not byte & 64:
            numbers.append(value)
            value = 0
    entries = []
    for start, length, target, depth_lasti in zip(*[iter(numbers)] * 4):
        entries.append((start, start + length, target, depth_lasti >> 1, bool(depth_lasti & 1)))
    return entries


# --------------------------------------------------------------------------- assemble


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
        for index, name in enumerate(_localsplus(self.varnames, bytecode.cellvars, bytecode.freevars)):
            (self.free_slots if type(name) is FreeVar else self.slots).setdefault(name, index)
        self.cells = set(bytecode.cellvars) | set(bytecode.freevars)

    def oparg(self, kind: str | None, instr: Instr) -> int:
        arg = instr.arg
        if kind is None:
            if arg is not None:
                raise _where(instr, "this opcode takes no argument")
            return 0
        if kind is _RAW:
            if type(arg) is not int or not 0 <= arg < 1 << 32:
                raise _where(instr, "the argument must be an int in [0, 2**32)")
            return arg
        if kind is _CONST:
            return self.const(arg)
        if kind is _NAME:
            bits = _FLAG_BITS.get(instr.name)
            if not bits:
                return self.name(instr, arg)
            if not (isinstance(arg, tuple) and len(arg) == 2 and arg[1] in range(1 << bits)):
                raise _where(instr, f"the argument must be a (name, flags < {1 << bits}) pair")
            return self.name(instr, arg[0]) << bits | arg[1]
        if kind is _FREE and arg not in self.cells:
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
    known = set(_localsplus(bytecode.varnames, bytecode.cellvars, bytecode.freevars))
    new = []
    for instr in bytecode.instructions:
        kind = _KIND[instr.name] if isinstance(instr, Instr) else None
        if kind is _LOCAL or kind is _PAIR:
            for name in (instr.arg,) if kind is _LOCAL else instr.arg:
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
        kind = _KIND[instr.name]
        if kind is _JUMP:
            pending.append((len(ops), instr))
            ops.append(None)
            opargs.append(0)
            sources.append(instr)
        elif kind is _PAIR:
            _lower_pair(instr, tables, ops, opargs, sources)
        else:
            ops.append(_OPCODES[instr.name])
            opargs.append(tables.oparg(kind, instr))
            sources.append(instr)
    jumps = []
    for index, instr in pending:
        target = _label_index(instr, instr.arg, label_at, len(ops))
        backward = target <= index
        name = _DIRECTIONS.get(instr.name, (instr.name, None))[backward]
        if name is None:
            raise _where(instr, f"Python {_VERSION[0]}.{_VERSION[1]} has no such jump "
                                f"{'backward' if backward else 'forward'}")
        ops[index] = _OPCODES[name]
        jumps.append((index, target, backward))
    return ops, opargs, sources, jumps, label_at


def _lower_pair(instr, tables, ops, opargs, sources):
    """A 3.13 two-local instruction, split in two when a slot does not fit in 4 bits."""
    if not (isinstance(instr.arg, tuple) and len(instr.arg) == 2):
        raise _where(instr, "the argument must be a pair of variable names")
    first, second = (tables.slot(instr, name) for name in instr.arg)
    if first < 16 and second < 16:
        ops.append(_OPCODES[instr.name])
        opargs.append(first << 4 | second)
        sources.append(instr)
        return
    for part, slot in zip(_PAIRS[instr.name], (first, second)):
        ops.append(_OPCODES[part])
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
    return 1 + (oparg > 0xFF) + (oparg > 0xFFFF) + (oparg > 0xFFFFFF) + _CACHE_UNITS[op]


_JUMP_ARG_START_AT_TARGET = _VERSION >= (3, 13)


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


_CACHE_BYTES = [bytes(2 * units) for units in _CACHE_UNITS]


def _code_string(ops, opargs) -> bytes:
    code = bytearray()
    for op, oparg in zip(ops, opargs):
        if oparg > 0xFF:
            for shift in (24, 16, 8):
                if oparg >> shift:
                    code += bytes((_EXTENDED_ARG, (oparg >> shift) & 0xFF))
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
_SPLIT_LOCATIONS = _VERSION < (3, 12)
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
            oparg = opargs[index] if op in _TAKES_ARG else None
            handler = handlers[index]
            if handler is not None and depth_at[handler[0]] != handler[1]:
                pending.append(handler)
            if targets[index] is not None:
                pending.append((targets[index], depth + effect(op, oparg, jump=True)))
                depth += effect(op, oparg, jump=False)
            else:
                fixed = _EFFECT_FIXES.get(op)
                depth += effect(op, oparg) if fixed is None else fixed
            if depth < 0:
                raise _where(sources[index], "pops an empty stack")
            if op in _NO_FALLTHROUGH:
                break
            index += 1
    # The deepest point is where some instruction starts: a path's last instruction
    # (a return, raise or jump) does not leave more than it found.
    return max(depth for depth in depth_at if depth is not None)


# ------------------------------------------- what the interpreter and code emission need
# (NOTE(bytecode-versions): the symbolic interpreter's handlers and the code it emits
# read these instead of the version.)

NULL_BEFORE_CALLABLE = _VERSION < (3, 13)
"""Where the NULL of a call goes: below the callable on 3.11 and 3.12 (PUSH_NULL before
it; LOAD_GLOBAL and method loads push NULL first), above it on 3.13 (`callable,
self_or_null`). A method load pushes `method, self` on every version."""


def compare_op(oparg: int) -> str:
    """The operator (`<`, `==`, ...) of a COMPARE_OP oparg: the index is the whole oparg
    on 3.11, oparg >> 4 on 3.12 and oparg >> 5 on 3.13 (bit 4 asks for a bool result)."""
    return dis.cmp_op[oparg >> (0 if _VERSION < (3, 12) else 4 if _VERSION < (3, 13) else 5)]


def name_arg(name: str, opname: str, flags: int = 0):
    """The `Instr` argument of a name instruction: `(name, flags)` where the version
    keeps flag bits in the oparg (LOAD_GLOBAL; LOAD_ATTR on 3.12+), else the name."""
    return (name, flags) if opname in _FLAG_BITS else name


def call_instructions(load_callable: list, arguments: list[list], loc: dis.Positions | None = None) -> list:
    """Instructions calling what `load_callable` pushes with the values each list in
    `arguments` pushes, positionally, leaving the result on the stack."""
    null = [Instr("PUSH_NULL", loc=loc)]
    head = null + load_callable if NULL_BEFORE_CALLABLE else load_callable + null
    loads = [instr for argument in arguments for instr in argument]
    precall = [Instr("PRECALL", len(arguments), loc=loc)] if "PRECALL" in _OPCODES else []
    return head + loads + precall + [Instr("CALL", len(arguments), loc=loc)]


def call_start(instructions: list, index: int) -> int:
    """Where the call at `instructions[index]` (CALL, or 3.13's CALL_KW) begins: at the
    KW_NAMES naming its keyword arguments (3.11, 3.12) and 3.11's PRECALL before it, which
    set up what the CALL runs, so code resuming at the call starts there."""
    while index and isinstance(instructions[index - 1], Instr) and instructions[index - 1].name in ("KW_NAMES",
                                                                                                   "PRECALL"):
        index -= 1
    return index


def replay_call(instructions: list, index: int) -> list:
    """Instructions that make the call at `instructions[index]` again on a stack laid out
    as the original's was (`call_start`: its KW_NAMES and PRECALL first)."""
    loc = instructions[index].loc
    return [Instr(item.name, item.arg, loc=loc) for item in instructions[call_start(instructions, index):index + 1]]


def is_method_load(instr: Instr) -> bool:
    """Whether `instr` pushes a method and its self (or NULL and the attribute): 3.11's
    LOAD_METHOD, LOAD_ATTR with the method bit from 3.12."""
    return instr.name == "LOAD_METHOD" or (instr.name == "LOAD_ATTR" and isinstance(instr.arg, tuple)
                                           and bool(instr.arg[1] & 1))


def attribute_load(instr: Instr) -> Instr:
    """A plain LOAD_ATTR of the name `instr` (an attribute or method load) reads."""
    name = instr.arg[0] if isinstance(instr.arg, tuple) else instr.arg
    return Instr("LOAD_ATTR", name_arg(name, "LOAD_ATTR"), loc=instr.loc)


def make_function(code: types.CodeType, loc: dis.Positions | None = None, cellvars=()) -> list:
    """Instructions pushing a new function of `code` made in the running frame: the
    frame's globals, and for closure the frame's cells named `code.co_freevars` (its
    cell variables `cellvars`, else its free variables; LOAD_CLOSURE before 3.13, where
    it became LOAD_FAST of the cell's slot; 3.13 sets the closure with
    SET_FUNCTION_ATTRIBUTE)."""
    freevars = code.co_freevars
    load_cell = "LOAD_CLOSURE" if _VERSION < (3, 13) else "LOAD_FAST"
    cells = [Instr(load_cell, name if name in cellvars else FreeVar(name), loc=loc) for name in freevars]
    if freevars:
        cells.append(Instr("BUILD_TUPLE", len(freevars), loc=loc))
    if _VERSION < (3, 13):
        return cells + [Instr("LOAD_CONST", code, loc=loc), Instr("MAKE_FUNCTION", 8 if freevars else 0, loc=loc)]
    make = [Instr("LOAD_CONST", code, loc=loc), Instr("MAKE_FUNCTION", loc=loc)]
    return cells + make + ([Instr("SET_FUNCTION_ATTRIBUTE", 8, loc=loc)] if freevars else [])


_LOCAL_READS = frozenset(name for name in _OPCODES if name.startswith("LOAD_FAST") or name == "DELETE_FAST")
_STOPS = _names_of(_NO_FALLTHROUGH) | {"JUMP"}


def reachable_from(instructions: list, start: int) -> set[int]:
    """The indices of the items (instructions and labels) control can reach from
    `instructions[start]`: by falling through, jumping or raising into a handler."""
    label_at = {id(item): index for index, item in enumerate(instructions) if isinstance(item, Label)}
    seen, todo = set(), [start]
    while todo:
        index = todo.pop()
        while index < len(instructions) and index not in seen:
            seen.add(index)
            instr = instructions[index]
            index += 1
            if isinstance(instr, Label):
                continue
            if _KIND[instr.name] is _JUMP:
                todo.append(label_at[id(instr.arg)])
            if instr.handler is not None:
                todo.append(label_at[id(instr.handler.target)])
            if instr.name in _STOPS:
                break
    return seen


def locals_read_after(instructions: list, start: int) -> set[str]:
    """The local variables some instruction reachable from `instructions[start]` reads:
    a safe superset of the locals live there."""
    names = set()
    for index in reachable_from(instructions, start):
        instr = instructions[index]
        if isinstance(instr, Label):
            continue
        if instr.name in _PAIRS:
            names.update(name for part, name in zip(_PAIRS[instr.name], instr.arg) if part == "LOAD_FAST")
        elif instr.name in _LOCAL_READS:
            names.add(instr.arg)
    return names


def replay_jump(instr: Instr, target: Label) -> list:
    """Instructions that make the conditional jump `instr` to `target` on a value that
    may not be a bool: 3.13's POP_JUMP_IF_TRUE/FALSE take only a bool (its compiler puts
    TO_BOOL before them unless the value is one), so TO_BOOL goes first there."""
    jump = Instr(instr.name, target, loc=instr.loc)
    if _VERSION >= (3, 13) and instr.name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        return [Instr("TO_BOOL", loc=instr.loc), jump]
    return [jump]
