"""Graph breaks that resume: the transformed code of a frame that stopped at a break,
and the resume functions it calls.

NOTE(resume-functions): when the interpreter stops at an instruction it cannot model
(a call, an attribute, an operator, the truth value of an array), the transformed code

1. calls the graph recorded so far, which returns every computed array still live (on
   the stack below the instruction or in a local the rest of the code may read);
2. materialises the live values in temporaries, each once (a list held on the stack and
   in a local stays one list), reading sources before anything runs;
3. pushes the instruction's operands (NULLs of the call protocol included) and runs the
   instruction itself in Python, at the user's position;
4. calls a resume function with the stack left below and above it (NULLs dropped) and
   the live locals as arguments, and returns what it returns.

A conditional jump on an array does step 3 with the jump itself and calls one resume
function per side. A resume function is a new code object made from the original: its
arguments are the stack values and the live locals, its prologue (the original's, then
the stack rebuilt with PUSH_NULL where a NULL was) jumps to the instruction after the
break, and the rest is the original code, positions and exception table included, so a
traceback after the break shows the user's file and line. Its free variables are the
original's free and cell variables (the transformed code makes it with MAKE_FUNCTION
over the frame's cells, so a cell an inner function writes stays shared), its globals
the frame's (MAKE_FUNCTION takes them). It is an ordinary call, so the frame hook
captures it like any frame: its own graph, guards and cache entries. Resume codes are
cached per (original code, instruction, stack layout, live locals), so recapturing the
original reuses them and their cache entries.

Live locals are those some instruction reachable from the resume point reads
(`locals_read_after`) among the ones bound where the break happened (the arguments and
what the traced path stored); on 3.12+ LOAD_FAST assumes its local bound, and the
compiler proved that for every path, the traced one included, so passing these is
enough.

An instruction that cannot be redone in the transformed code (a loop's GET_ITER or back
edge, BEFORE_WITH, a store; or any instruction inside a `try` body, whose handler the
copy would lack) splits the frame before it instead: the graph so far runs and the
resume function starts at that instruction (the hook then runs it as it is), which is
worth it only when some op was captured. Not resumed, so the frame runs as it is
(NOTE(skip-for-now)) with the reason logged: such an instruction with no op before it,
a list held in two places, live values the transformed code cannot rebuild, and a frame
that looks at itself (zero-argument `super()`, whose `__class__` cell and first local a
resume function would not keep; `locals()`, `vars()`, `dir()`, which would list the
temporaries). The
resume function of a split meets the same instruction first; that break is logged and
counted once (`repeats_a_break`).

Python code after the break works on the graph's outputs, so an output that is a view
of an input must come back as a view (the eager backend's are NumPy's own).
"""

from __future__ import annotations

import dataclasses
import dis
import functools
import types
import weakref
from collections import Counter
from typing import Callable

from .breaks import Break
from .bytecode import (NULL_BEFORE_CALLABLE, Instr, Label, assemble, attribute_load, call_instructions, call_start,
                       decode, is_method_load, locals_read_after, make_function, name_arg, replay_call, replay_jump)
from .output import Output, graph_call, prologue, rebuild
from .values import NULL, CallableValue, SequenceValue, Value

_CALLS = ("CALL", "CALL_KW")
_UNARY = frozenset({"UNARY_NOT", "UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE", "TO_BOOL"})
_BINARY = frozenset({"BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "CONTAINS_OP", "IS_OP"})
_JUMPS = frozenset(f"POP_JUMP_{way}IF_{condition}" for way in ("", "FORWARD_")
                   for condition in ("TRUE", "FALSE", "NONE", "NOT_NONE"))
_STACK = "__pyjit_stack{}"
_TEMP = "__pyjit_tmp{}"
_VARARGS_FLAGS = 0x04 | 0x08  # CO_VARARGS, CO_VARKEYWORDS: a resume function takes plain arguments
_INTROSPECTION = frozenset({"locals", "vars", "dir"})


def build_break(tracer, compiler: Callable) -> Output:
    """The transformed code of a frame the tracer stopped at a break
    (NOTE(resume-functions)); raises Break saying why when it cannot be resumed."""
    instr, index, code = tracer.instr, tracer.index, tracer.code
    instructions = tracer.bytecode.instructions
    refused = _introspects(code)
    if refused is not None:
        raise Break("unsupported", refused)
    try:
        consumed, produced, replay, targets = _effect(tracer)
        if instr.handler is not None:
            raise Break("unsupported", "the instruction is inside a try or with block")
    except Break:
        if not tracer.graph.calls():
            raise
        start = call_start(instructions, index) if instr.name in _CALLS else index
        consumed, produced, replay, targets = 0, (), [], [start]  # split the frame before it
        tracer.split = True
    stack = tracer.stack_before
    below, operands = stack[:len(stack) - consumed], stack[len(stack) - consumed:]
    bound = (set(tracer.arguments) | set(tracer.locals)) - set(code.co_cellvars)  # cells go in the closure
    live = [tuple(sorted(bound & locals_read_after(instructions, target), key=_slot_order(code)))
            for target in targets]
    names = sorted(set().union(*live), key=_slot_order(code))
    values = [v for v in below if v is not NULL] + [tracer.locals[n] for n in names if n in tracer.locals]
    _refuse_shared_lists([*values, *operands])
    loc = instr.loc
    bound_to = [value.self for value in operands if isinstance(value, CallableValue) and value.self is not None]
    body, outputs, graph_module = graph_call(tracer, compiler, [*values, *operands, *bound_to])
    temps: dict[int, str] = {}
    for value in values:
        if id(value) not in temps:
            temps[id(value)] = _TEMP.format(len(temps))
            body += _push(value, outputs, tracer.code, loc) + [Instr("STORE_FAST", temps[id(value)], loc=loc)]
    for value in operands:
        body += [Instr("PUSH_NULL", loc=loc)] if value is NULL else _load(value, temps, outputs, tracer.code, loc)
    body += replay
    results = [_TEMP.format(len(temps) + i) for i in range(sum(produced))]
    body += [Instr("STORE_FAST", name, loc=loc) for name in reversed(results)]
    stack_args = [[Instr("LOAD_FAST", temps[id(v)], loc=loc)] for v in below if v is not NULL]
    stack_args += [[Instr("LOAD_FAST", name, loc=loc)] for name in results]
    layout = tuple(v is not NULL for v in below) + produced
    for number, (target, local_names) in enumerate(zip(targets, live)):
        if number:  # the side a conditional jump takes starts at its label
            body.append(replay[-1].arg)
        # A local the traced path never stored is the frame's own: passed as it is.
        local_args = [[Instr("LOAD_FAST", temps[id(tracer.locals[n])] if n in tracer.locals else n, loc=loc)]
                      for n in local_names]
        resumed = resume_code(code, target, layout, local_names, tracer.split)
        body += call_instructions(make_function(resumed, loc, code.co_cellvars), stack_args + local_args, loc)
        body.append(Instr("RETURN_VALUE", loc=loc))
    bytecode = dataclasses.replace(tracer.bytecode, instructions=prologue(tracer.bytecode) + body)
    return Output(assemble(bytecode), graph_module)


def _introspects(code: types.CodeType) -> str | None:
    """Why the frame cannot be resumed, if it looks at itself: zero-argument `super()`
    reads the first local and the `__class__` cell, which a resume function's arguments
    would change, and `locals()`, `vars()` and `dir()` would list the temporaries."""
    if "__class__" in code.co_freevars:
        return "zero-argument super() (the __class__ cell) is not resumed"
    names = {instr.argval for instr in dis.get_instructions(code) if instr.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    read = sorted(names & _INTROSPECTION)
    return f"a frame that calls {read[0]}() is not resumed" if read else None


def _effect(tracer) -> tuple[int, tuple[bool, ...], list, list[int]]:
    """For the breaking instruction: how many stack items it takes, the layout of what
    it leaves (True: a value, False: a NULL), the instructions that redo it, and the
    instruction indices the code resumes at."""
    instr, index = tracer.instr, tracer.index
    after = [index + 1]
    if instr.name in _CALLS:
        consumed = instr.arg + 2 + (instr.name == "CALL_KW")  # callable, NULL or self, (names,) arguments
        return consumed, (True,), replay_call(tracer.bytecode.instructions, index), after
    if instr.name in ("LOAD_ATTR", "LOAD_METHOD"):
        # A method load leaves `NULL, bound method` (or the reverse on 3.13), which a
        # CALL takes like `method, self`: the attribute is read plainly.
        produced = ((False, True) if NULL_BEFORE_CALLABLE else (True, False)) if is_method_load(instr) else (True,)
        return 1, produced, [attribute_load(instr)], after
    if instr.name in _UNARY or instr.name in _BINARY or instr.name == "BINARY_SLICE":
        count = 1 if instr.name in _UNARY else 3 if instr.name == "BINARY_SLICE" else 2
        return count, (True,), [Instr(instr.name, instr.arg, loc=instr.loc)], after
    if instr.name in _JUMPS:
        taken = Label()
        label_at = {id(item): i for i, item in enumerate(tracer.bytecode.instructions) if isinstance(item, Label)}
        return 1, (), replay_jump(instr, taken), [index + 1, label_at[id(instr.arg)]]
    raise Break("unsupported", f"a graph break at {instr.name} is not resumed")


def _slot_order(code: types.CodeType) -> Callable:
    order = {name: slot for slot, name in enumerate(code.co_varnames)}
    return lambda name: order.get(name, len(order))


def _refuse_shared_lists(values: list[Value]) -> None:
    """A list built during tracing is rebuilt once per place that holds it; only a list
    held directly by several places is materialised once and shared, so one nested in
    another value and held elsewhere too cannot be rebuilt as one object."""
    nested: Counter = Counter()
    top = {id(value): value for value in values}

    def walk(value: Value) -> None:
        for item in value.items if isinstance(value, SequenceValue) and value.source is None else ():
            if item.source is None and isinstance(item, SequenceValue) and item.kind is list:
                nested[id(item)] += 1
            walk(item)

    for value in top.values():
        walk(value)
    if any(count > 1 or key in top for key, count in nested.items()):
        raise Break("unsupported", "a list held in two places across a graph break is not resumed")


def _push(value: Value, outputs: list, code, loc) -> list:
    """`rebuild`, and an ndarray method bound to an array (`x.sum` about to be called)."""
    if isinstance(value, CallableValue) and value.kind == "method" and value.source is None:
        return rebuild(value.self, outputs, code, loc) + [Instr("LOAD_ATTR", name_arg(value.target, "LOAD_ATTR"),
                                                                loc=loc)]
    return rebuild(value, outputs, code, loc)


def _load(value: Value, temps: dict, outputs: list, code, loc) -> list:
    if id(value) in temps:
        return [Instr("LOAD_FAST", temps[id(value)], loc=loc)]
    return _push(value, outputs, code, loc)


# -- resume codes ---------------------------------------------------------------------------------
class CodeMap:
    """Values kept per code object (by identity: equal code objects may come from
    different files) for as long as the code lives."""

    def __init__(self):
        self._entries: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, code: types.CodeType, make: Callable):
        found = self._entries.get(id(code))
        if found is None or found[0]() is not code:
            # The callback binds the dict: at interpreter exit the module's globals are gone.
            forget = functools.partial(_forget, self._entries, id(code))
            found = self._entries[id(code)] = (weakref.ref(code, forget), make())
        return found[1]

    def __contains__(self, code: types.CodeType) -> bool:
        found = self._entries.get(id(code))
        return found is not None and found[0]() is code

    def clear(self) -> None:
        self._entries.clear()


def _forget(entries: dict, key: int, _) -> None:
    entries.pop(key, None)


_codes = CodeMap()
_splits = CodeMap()  # resume codes that start at an instruction the original broke at


def resume_code(code: types.CodeType, index: int, layout: tuple[bool, ...], names: tuple[str, ...],
                split: bool = False):
    """The resume code of `code` at instruction `index` of its decoded list, taking the
    stack described by `layout` (True: an argument, False: a NULL) and the locals
    `names`; `split`: `index` is the instruction the original broke at. Cached per code
    (NOTE(resume-functions))."""
    table = _codes.get(code, dict)
    key = (index, layout, names, split)
    made = table.get(key)
    if made is None:
        made = table[key] = _make(code, index, layout, names)
        if split:
            _splits.get(made, lambda: True)
    return made


def repeats_a_break(tracer) -> bool:
    """Whether the tracer's break is the one its frame's code was split before: a resume
    code that starts at that instruction meets it first, with no op recorded."""
    return tracer.code in _splits and not tracer.graph.calls()


def _make(code: types.CodeType, index: int, layout: tuple[bool, ...], names: tuple[str, ...]):
    bytecode = decode(code)
    instructions = bytecode.instructions
    head = prologue(bytecode)
    freevars = [*code.co_freevars, *code.co_cellvars]  # the original's cells come in the closure
    loc = next((item.loc for item in instructions[index:] if isinstance(item, Instr) and item.loc), None)
    stack_names = [_STACK.format(i) for i in range(sum(layout))]
    arguments = iter(stack_names)
    loads = [Instr("LOAD_FAST", next(arguments), loc=loc) if is_value else Instr("PUSH_NULL", loc=loc)
             for is_value in layout]
    start = Label()
    new_head = [Instr("COPY_FREE_VARS", len(freevars), loc=head[-1].loc)] if freevars else []
    new_head += [instr for instr in head if isinstance(instr, Label)
                 or instr.name not in ("COPY_FREE_VARS", "MAKE_CELL")]
    body = [*new_head, *loads, Instr("JUMP", start, loc=loc), *instructions[len(head):index], start,
            *instructions[index:]]
    parameters = [*stack_names, *names]
    line = loc.lineno if loc is not None else code.co_firstlineno
    return assemble(dataclasses.replace(
        bytecode, instructions=body, name=f"pyjit_resume_in_{code.co_name}_at_{line}",
        qualname=f"{code.co_qualname}.<resume at line {line}>", argcount=len(parameters), posonlyargcount=0,
        kwonlyargcount=0, flags=code.co_flags & ~_VARARGS_FLAGS, cellvars=[], freevars=freevars,
        varnames=parameters + [name for name in code.co_varnames if name not in names and name not in freevars]))
