"""The opcode table: which handler runs each opcode, how a graph break at it is resumed,
and every other opcode with the reason it is not handled (yet). The handlers themselves
live in the modules that are about what they do (opcodes.py: values, names, calls,
operators and containers; control_flow.py: jumps, loops and `with`), which register
them here when imported; the interpreter imports both.

NOTE(opcode-table): `@handler("NAME", since=, until=)` registers a handler for the
running interpreter when its version lies in the range (inclusive, (major, minor)), and
then the opcode must exist in the running interpreter (not a pseudo-instruction) and
have no handler yet. `UNHANDLED` names each opcode no handler takes, with its kind:
"break" (the interpreter stops there; for now the frame is skipped,
NOTE(skip-for-now), and with resume functions it becomes a graph break) or "skip" (code
that is never captured: generator, coroutine, module and class bodies, which the frame
hook never hands over). `NOT_IN_CODE` lists what never appears in a decoded code
object. A test requires every opcode of the running interpreter to be in exactly one of
the three. Handlers never read the Python version: what differs is data in
pyjit/frontend/bytecode.py (NOTE(bytecode-versions)).

NOTE(break-behaviour): what the graph-break path needs of an opcode is declared where
its handler is, `on_break=` (`resumes(...)` for one no handler takes, BEFORE_WITH):
its stack effect (how many items it takes, the layout of what it leaves), the
instructions that redo it in the transformed code, the indices the code resumes at,
and where code that runs it as it is starts (a call at its KW_NAMES and PRECALL).
pyjit/frontend/resume.py reads `ON_BREAK` and nothing else per opcode; an opcode
without an entry is not redone, and a break there splits the frame before it
(NOTE(resume-functions)). The exception-handler idioms the interpreter recognises
(`COMPREHENSION_CLEANUP`, `WITH_CLEANUP`) are declared beside the opcodes they belong
to. As in CPython's bytecodes.c, each of these is typed once and the tables derive.
"""

from __future__ import annotations

import dataclasses
import dis
import sys
from typing import Callable

from .breaks import Break
from .bytecode import Instr

HANDLERS: dict[str, Callable] = {}
# The opcodes a code object can contain (pseudo-instructions are numbered from 256).
OPCODES = frozenset(name for name, number in dis.opmap.items() if number < 256)


def _at(instructions: list, index: int) -> int:
    return index


@dataclasses.dataclass(frozen=True)
class OnBreak:
    """How a break at an opcode is resumed (NOTE(break-behaviour)): `effect(instructions,
    index)` is (items taken, layout left: True a value, False a NULL, the instructions
    redoing it, the indices the code resumes at); `start(instructions, index)` is where
    code that runs it as it is starts."""

    effect: Callable[[list, int], tuple[int, tuple[bool, ...], list, list[int]]]
    start: Callable[[list, int], int] = _at


ON_BREAK: dict[str, OnBreak] = {}


def _in_version(since: tuple[int, int] | None, until: tuple[int, int] | None) -> bool:
    version = sys.version_info[:2]
    return not ((since is not None and version < since) or (until is not None and version > until))


def handler(*names: str, since: tuple[int, int] | None = None, until: tuple[int, int] | None = None,
            on_break: OnBreak | None = None):
    """Register the decorated `fn(tracer, instr)` for `names` (NOTE(opcode-table)), and
    how a break at them is resumed (NOTE(break-behaviour))."""
    def register(fn: Callable) -> Callable:
        if not _in_version(since, until):
            return fn
        for name in names:
            _check_opcode(name)
            if name in HANDLERS:
                raise ValueError(f"{name} has two handlers")
            HANDLERS[name] = fn
        if on_break is not None:
            resumes(*names, on_break=on_break)
        return fn
    return register


def resumes(*names: str, on_break: OnBreak) -> None:
    """Declare how a break at `names` is resumed (NOTE(break-behaviour))."""
    for name in names:
        _check_opcode(name)
        ON_BREAK[name] = on_break


def _check_opcode(name: str) -> None:
    if name not in OPCODES:
        version = sys.version_info[:2]
        raise ValueError(f"{name} is not an opcode of Python {version[0]}.{version[1]}")


def redone(takes: int, leaves: tuple[bool, ...] = (True,)) -> OnBreak:
    """A break resumed by running the instruction itself on its operands."""
    def effect(instructions: list, index: int):
        instr = instructions[index]
        return takes, leaves, [Instr(instr.name, instr.arg, loc=instr.loc)], [index + 1]
    return OnBreak(effect)


# -- the opcodes no handler takes (NOTE(opcode-table)) ------------------------------------------
_PATTERNS = "a match statement is not captured"
_MUTATION = "a store into a closure variable, or a del statement, is not captured"
_CONTAINERS = "exception groups and type parameters are not captured"
_FUNCTIONS = ("defining a function, an import, super(), a failing assert or a call with * or ** unpacking is not "
              "captured yet")
_EXCEPTIONS = "raising or catching an exception is not captured"
_WITH = "a with statement is entered in Python at a graph break, and its body is compiled after it"
_NEVER_HANDED = "generators, coroutines and module or class bodies are never captured"
_UNHANDLED_GROUPS = {
    ("break", _PATTERNS): ("GET_LEN", "MATCH_CLASS", "MATCH_KEYS", "MATCH_MAPPING", "MATCH_SEQUENCE"),
    ("break", _MUTATION): (
        "STORE_DEREF", "DELETE_ATTR", "DELETE_GLOBAL", "DELETE_DEREF"),
    ("break", _CONTAINERS): ("CALL_INTRINSIC_2",),
    ("break", _FUNCTIONS): (
        "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "LOAD_CLOSURE", "CALL_FUNCTION_EX",
        "LOAD_SUPER_ATTR", "IMPORT_NAME", "IMPORT_FROM", "LOAD_ASSERTION_ERROR", "EXIT_INIT_CHECK"),
    ("break", _EXCEPTIONS): (
        "RAISE_VARARGS", "RERAISE", "PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "CHECK_EG_MATCH",
        "PREP_RERAISE_STAR", "WITH_EXCEPT_START"),
    ("break", _WITH): ("BEFORE_WITH",),
    ("skip", _NEVER_HANDED): (
        "RETURN_GENERATOR", "YIELD_VALUE", "SEND", "END_SEND", "GET_AWAITABLE", "GET_AITER", "GET_ANEXT",
        "END_ASYNC_FOR", "BEFORE_ASYNC_WITH", "ASYNC_GEN_WRAP", "GET_YIELD_FROM_ITER", "CLEANUP_THROW",
        "LOAD_NAME", "STORE_NAME", "DELETE_NAME", "LOAD_BUILD_CLASS", "SETUP_ANNOTATIONS", "IMPORT_STAR",
        "PRINT_EXPR", "LOAD_CLASSDEREF", "LOAD_LOCALS", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF"),
}
# name -> (kind, reason), for the opcodes of the running interpreter.
UNHANDLED = {name: group for group, names in _UNHANDLED_GROUPS.items() for name in names if name in OPCODES}

# Opcodes that never appear in a decoded code object (decode reads co_code, not the
# specialised or instrumented copy), with why.
NOT_IN_CODE = {name: reason for name, reason in (
    ("CACHE", "inline cache units; decode skips them"),
    ("EXTENDED_ARG", "an oparg prefix; decode folds it into the argument"),
    ("RESERVED", "a placeholder number"),
    ("ENTER_EXECUTOR", "only in the specialised code of a running interpreter"),
    ("INTERPRETER_EXIT", "only in the interpreter's own entry trampoline"),
    *((name, "instrumented form for sys.monitoring; co_code holds the plain one")
      for name in OPCODES if name.startswith("INSTRUMENTED_")),
) if name in OPCODES}


def unhandled_reason(name: str) -> Break:
    """The Break for an instruction with no handler."""
    return _unhandled_break(name, *UNHANDLED.get(name, ("break", "this instruction is not modelled")))


def every_unhandled_reason(name: str) -> list[Break]:
    """The Break of each group of the table, whichever Python runs, with `name` standing
    for the instruction (docs/troubleshooting.md lists them all)."""
    return [_unhandled_break(name, kind, reason) for kind, reason in _UNHANDLED_GROUPS]


def _unhandled_break(name: str, kind: str, reason: str) -> Break:
    whole = "" if kind == "break" else "; the whole function runs in Python"
    return Break("unsupported", f"{reason} ({name}){whole}")
