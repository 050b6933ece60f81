"""Code objects as editable instruction lists: `decode` a code object, edit, assemble
(pyjit/frontend/assemble.py).

A `Bytecode` holds a list of `Instr` and `Label` plus the code object's other fields
(names, argument counts, flags, constant and variable tables). Arguments are resolved:
a jump holds the `Label` it goes to, LOAD_CONST the constant, LOAD_FAST the local's
name, and every instruction carries its source position and its exception handler.
The module ends with the version-neutral instruction shapes the interpreter and the
emitter (NOTE(emitter)) build on, and the control flow questions resume functions ask.

NOTE(bytecode-versions): this module (with assemble.py, which writes what its tables
say) and csrc/cpython_compat.h are the only places that know how CPython versions
differ. Here the differences between 3.11, 3.12 and 3.13 are data, built once at
import from the running interpreter's `opcode` module:

* which opcodes take an argument (`HAVE_ARGUMENT` on 3.11, `opcode.hasarg` later);
* how many CACHE units follow each opcode (`opcode._inline_cache_entries`, a list by
  number before 3.13, a dict by name on 3.13; no public API gives it);
* which name arguments carry flag bits below the name index (`FLAG_BITS`);
* which jumps exist in which direction (`DIRECTIONS`): 3.11 has forward and backward
  variants of each conditional jump, 3.12 and 3.13 only forward ones;
* 3.13's instructions on two locals at once (`PAIRS`);
* how the assembler writes positions (`_SPLIT_LOCATIONS`) and where its EXTENDED_ARG
  fixpoint starts (`_JUMP_ARG_START_AT_TARGET`), so that round trips are byte-identical;
* stack effects, which come from `dis.stack_effect`, CPython's own table for the
  running version, so none is typed here but one fix (`EFFECT_FIXES`).

Code elsewhere in pyjit names opcodes through `Instr` and never reads `sys.version_info`.

NOTE(exception-handlers): each instruction names its exception handler (an
`ExceptHandler`: target label, stack depth to unwind to, whether to push the offset of
the raising instruction), or None. This is how CPython's compiler holds it too: an
inserted instruction states its own handler, copied instructions keep theirs, and the
assembler writes one table entry per run of consecutive instructions sharing a handler.
"""

import dataclasses
import dis
import opcode
import sys
import types
from typing import NamedTuple

from .codemap import CodeMap

VERSION = sys.version_info[:2]

# Opcodes that exist in the code string; pseudo-instructions (numbered from 256) are
# the compiler's own and have no encoding.
CODE_OPCODES = {name: number for name, number in opcode.opmap.items() if number < 256}
EXTENDED_ARG = opcode.EXTENDED_ARG
if VERSION < (3, 12):
    TAKES_ARG = frozenset(n for n in CODE_OPCODES.values() if n >= opcode.HAVE_ARGUMENT)
else:
    TAKES_ARG = frozenset(opcode.hasarg)
_caches = opcode._inline_cache_entries
CACHE_UNITS = [0] * 256
for _name, _number in CODE_OPCODES.items():
    CACHE_UNITS[_number] = _caches.get(_name, 0) if isinstance(_caches, dict) else _caches[_number]

# Name arguments whose low bits are flags: 3.11+ LOAD_GLOBAL pushes a NULL first,
# 3.12+ LOAD_ATTR loads a method, 3.12+ LOAD_SUPER_ATTR loads a method (bit 0) and was
# called with two arguments (bit 1).
FLAG_BITS = {"LOAD_GLOBAL": 1}
if VERSION >= (3, 12):
    FLAG_BITS |= {"LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2}
# 3.13's instructions on two locals: the first acts on oparg >> 4, the second on oparg & 15.
PAIRS = {name: parts for name, parts in {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}.items() if name in CODE_OPCODES}

# Jump name -> (opcode used when the target lies after the jump, opcode used when it
# lies before; None where the version has no such jump). "JUMP" and "POP_JUMP_IF_*"
# are accepted on every version; the assembler picks each jump's direction.
_CONDITIONS = ("TRUE", "FALSE", "NONE", "NOT_NONE")
if VERSION < (3, 12):
    DIRECTIONS = {f"POP_JUMP_IF_{c}": (f"POP_JUMP_FORWARD_IF_{c}", f"POP_JUMP_BACKWARD_IF_{c}")
                   for c in _CONDITIONS}
else:
    DIRECTIONS = {f"POP_JUMP_IF_{c}": (f"POP_JUMP_IF_{c}", None) for c in _CONDITIONS}
DIRECTIONS["JUMP"] = ("JUMP_FORWARD", "JUMP_BACKWARD")
for _pair in list(DIRECTIONS.values()):
    DIRECTIONS.update((name, _pair) for name in _pair if name)
DIRECTIONS["JUMP_BACKWARD_NO_INTERRUPT"] = (None, "JUMP_BACKWARD_NO_INTERRUPT")
_BACKWARD = frozenset(CODE_OPCODES[back] for _, back in DIRECTIONS.values() if back)
# Stack effects `dis.stack_effect` gets wrong for our purpose: before 3.13 it counts
# RETURN_GENERATOR as 0, but the generator's frame resumes with the sent value pushed.
EFFECT_FIXES = {CODE_OPCODES["RETURN_GENERATOR"]: 1} if VERSION < (3, 13) else {}
# After these, control does not reach the next instruction.
NO_FALLTHROUGH = frozenset(CODE_OPCODES[name] for name in (
    "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT") if name in CODE_OPCODES)


def _names_of(numbers) -> frozenset:
    numbers = set(numbers)
    return frozenset(name for name, number in CODE_OPCODES.items() if number in numbers)


# How an instruction's argument is resolved, by opcode name.
ARG_RAW, ARG_JUMP, ARG_CONST, ARG_NAME, ARG_LOCAL, ARG_FREE, ARG_PAIR = (
    "raw", "jump", "const", "name", "local", "free", "pair")
ARG_KIND = dict.fromkeys(CODE_OPCODES, ARG_RAW)
ARG_KIND.update(dict.fromkeys(_names_of(opcode.hasjrel), ARG_JUMP))
ARG_KIND.update(dict.fromkeys(DIRECTIONS, ARG_JUMP))
ARG_KIND.update(dict.fromkeys(_names_of(opcode.hasconst), ARG_CONST))
ARG_KIND.update(dict.fromkeys(_names_of(opcode.hasname), ARG_NAME))
ARG_KIND.update(dict.fromkeys(_names_of(opcode.haslocal), ARG_LOCAL))
ARG_KIND.update(dict.fromkeys(_names_of(opcode.hasfree), ARG_FREE))
ARG_KIND.update(dict.fromkeys(PAIRS, ARG_PAIR))
ARG_KIND.update((name, None) for name, number in CODE_OPCODES.items() if number not in TAKES_ARG)
ARG_KIND_BY_NUMBER = [ARG_KIND.get(opcode.opname[number]) for number in range(256)]
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
    RETURN_CONST and KW_NAMES; the name for *ARG_NAME, *_ATTR, *_GLOBAL, IMPORT_* ops, as a
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
        if name not in ARG_KIND:
            raise ValueError(f"{name!r} is not an opcode of Python {VERSION[0]}.{VERSION[1]}")
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


def localsplus(varnames, cellvars, freevars) -> list[str]:
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
              localsplus(code.co_varnames, code.co_cellvars, code.co_freevars))
    positions = list(code.co_positions())
    opnames, kinds = opcode.opname, ARG_KIND_BY_NUMBER
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
        if kind is not ARG_RAW:
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
               if ARG_KIND_BY_NUMBER[op] is ARG_JUMP}
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
        if op == EXTENDED_ARG:
            prefix = oparg << 8
            index += 2
            continue
        index += 2 + 2 * CACHE_UNITS[op]
        spans.append((start, op, oparg, index >> 1))
        start, prefix = index >> 1, 0
    return spans


def _jump_target(op: int, oparg: int, end: int) -> int:
    """Jumps count code units from the end of the jump's caches."""
    return end - oparg if op in _BACKWARD else end + oparg


def _decode_arg(kind, op, oparg, end, labels, tables):
    consts, names, localsplus = tables
    if kind is ARG_JUMP:
        return labels[_jump_target(op, oparg, end)]
    if kind is ARG_CONST:
        return consts[oparg]
    if kind is ARG_NAME:
        bits = FLAG_BITS.get(opcode.opname[op])
        return (names[oparg >> bits], oparg & ((1 << bits) - 1)) if bits else names[oparg]
    if kind is ARG_PAIR:
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


# ------------------------------------------- what the interpreter and code emission need
# (NOTE(bytecode-versions): the symbolic interpreter's handlers and the code it emits
# read these instead of the version.)

NULL_BEFORE_CALLABLE = VERSION < (3, 13)
"""Where the NULL of a call goes: below the callable on 3.11 and 3.12 (PUSH_NULL before
it; LOAD_GLOBAL and method loads push NULL first), above it on 3.13 (`callable,
self_or_null`). A method load pushes `method, self` on every version."""


def compare_op(oparg: int) -> str:
    """The operator (`<`, `==`, ...) of a COMPARE_OP oparg: the index is the whole oparg
    on 3.11, oparg >> 4 on 3.12 and oparg >> 5 on 3.13 (bit 4 asks for a bool result)."""
    return dis.cmp_op[oparg >> (0 if VERSION < (3, 12) else 4 if VERSION < (3, 13) else 5)]


def name_arg(name: str, opname: str, flags: int = 0):
    """The `Instr` argument of a name instruction: `(name, flags)` where the version
    keeps flag bits in the oparg (LOAD_GLOBAL; LOAD_ATTR on 3.12+), else the name."""
    return (name, flags) if opname in FLAG_BITS else name


def call_instructions(load_callable: list, arguments: list[list], loc: dis.Positions | None = None) -> list:
    """Instructions calling what `load_callable` pushes with the values each list in
    `arguments` pushes, positionally, leaving the result on the stack."""
    null = [Instr("PUSH_NULL", loc=loc)]
    head = null + load_callable if NULL_BEFORE_CALLABLE else load_callable + null
    loads = [instr for argument in arguments for instr in argument]
    precall = [Instr("PRECALL", len(arguments), loc=loc)] if "PRECALL" in CODE_OPCODES else []
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
    load_cell = "LOAD_CLOSURE" if VERSION < (3, 13) else "LOAD_FAST"
    cells = [Instr(load_cell, name if name in cellvars else FreeVar(name), loc=loc) for name in freevars]
    if freevars:
        cells.append(Instr("BUILD_TUPLE", len(freevars), loc=loc))
    if VERSION < (3, 13):
        return cells + [Instr("LOAD_CONST", code, loc=loc), Instr("MAKE_FUNCTION", 8 if freevars else 0, loc=loc)]
    make = [Instr("LOAD_CONST", code, loc=loc), Instr("MAKE_FUNCTION", loc=loc)]
    return cells + make + ([Instr("SET_FUNCTION_ATTRIBUTE", 8, loc=loc)] if freevars else [])


_LOCAL_READS = frozenset(name for name in CODE_OPCODES if name.startswith("LOAD_FAST") or name == "DELETE_FAST")
_STOPS = _names_of(NO_FALLTHROUGH) | {"JUMP"}


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
            if ARG_KIND[instr.name] is ARG_JUMP:
                todo.append(label_at[id(instr.arg)])
            if instr.handler is not None:
                todo.append(label_at[id(instr.handler.target)])
            if instr.name in _STOPS:
                break
    return seen


def local_reads(instructions: list) -> dict[str, int]:
    """How many instructions read each local variable."""
    counts: dict[str, int] = {}
    for instr in instructions:
        if isinstance(instr, Label):
            continue
        names = [name for part, name in zip(PAIRS[instr.name], instr.arg) if part == "LOAD_FAST"] \
            if instr.name in PAIRS else [instr.arg] if instr.name in _LOCAL_READS else []
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def local_stores(instructions: list) -> set[str]:
    """The local variables some instruction stores or deletes."""
    names = set()
    for instr in instructions:
        if isinstance(instr, Label):
            continue
        if instr.name in PAIRS:
            names.update(name for part, name in zip(PAIRS[instr.name], instr.arg) if part == "STORE_FAST")
        elif instr.name in ("STORE_FAST", "DELETE_FAST"):
            names.add(instr.arg)
    return names


def locals_read_after(instructions: list, start: int, skipped: range = range(0)) -> set[str]:
    """The local variables some instruction reachable from `instructions[start]` reads,
    those at the indices `skipped` left out: a safe superset of the locals live there."""
    names = set()
    for index in reachable_from(instructions, start):
        instr = instructions[index]
        if isinstance(instr, Label) or index in skipped:
            continue
        if instr.name in PAIRS:
            names.update(name for part, name in zip(PAIRS[instr.name], instr.arg) if part == "LOAD_FAST")
        elif instr.name in _LOCAL_READS:
            names.add(instr.arg)
    return names


def locals_read_first(instructions: list, start: int, region: tuple[int, int]) -> set[str]:
    """The locals that some path from `instructions[start]` reads before writing them,
    within `region` (head, end) of a loop's body, a jump back to the head or out of the
    region ending the path: the values one iteration of the body takes from the one before."""
    head, end = region
    label_at = {id(item): index for index, item in enumerate(instructions) if isinstance(item, Label)}
    live: dict[int, frozenset] = {}
    changed = True
    while changed:  # backward liveness, to a fixed point
        changed = False
        for index in range(end - 1, head, -1):
            instr = instructions[index]
            after = _live_after(instr, index, instructions, label_at, live, region)
            if isinstance(instr, Instr):
                parts = PAIRS.get(instr.name, (instr.name,))
                names = instr.arg if instr.name in PAIRS else (instr.arg,)
                for part, name in reversed(list(zip(parts, names))):
                    if part == "STORE_FAST":
                        after = after - {name}
                    elif part in _LOCAL_READS:
                        after = after | {name}
            if live.get(index) != after:
                live[index], changed = frozenset(after), True
    return set(live.get(start, ()))


def _live_after(instr, index: int, instructions: list, label_at: dict, live: dict, region: tuple[int, int]):
    head, end = region
    targets = [] if isinstance(instr, Instr) and instr.name in _STOPS else [index + 1]
    if isinstance(instr, Instr):
        if ARG_KIND[instr.name] is ARG_JUMP:
            targets.append(label_at[id(instr.arg)])
        if instr.handler is not None:
            targets.append(label_at[id(instr.handler.target)])
    result = frozenset()
    for target in targets:
        if head < target < end:
            result |= live.get(target, frozenset())
    return result


def replay_jump(instr: Instr, target: Label) -> list:
    """Instructions that make the conditional jump `instr` to `target` on a value that
    may not be a bool: 3.13's POP_JUMP_IF_TRUE/FALSE take only a bool (its compiler puts
    TO_BOOL before them unless the value is one), so TO_BOOL goes first there."""
    jump = Instr(instr.name, target, loc=instr.loc)
    if VERSION >= (3, 13) and instr.name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        return [Instr("TO_BOOL", loc=instr.loc), jump]
    return [jump]
