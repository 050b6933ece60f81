"""Graph breaks that resume: the transformed code of a frame that stopped at a break,
and the resume functions it calls.

NOTE(resume-functions): when the interpreter stops at an instruction it cannot model
(a call, an attribute, an operator, the truth value of an array), the transformed code

1. calls the graph recorded so far, which returns every computed array still live (on
   the stack below the instruction or in a local the rest of the code may read);
2. materialises the live values in temporaries, each once (a list held on the stack and
   in a local stays one list), reading sources before anything runs, then replays the
   pending side effects (NOTE(side-effects)), which the instruction may observe;
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

An instruction that cannot be redone in the transformed code (the GET_ITER of a loop
that is not unrolled, the back edge where the unroll limit is reached, BEFORE_WITH, a
store; or any instruction inside a `try` body, whose handler the
copy would lack) splits the frame before it instead: the graph so far runs and the
resume function starts at that instruction (the hook then runs it as it is), which is
worth it only when some op was captured. Not resumed, so the frame runs as it is
(NOTE(skip-for-now)) with the reason logged: such an instruction with no op before it,
a list held in two places, live values the transformed code cannot rebuild, and a frame
that looks at itself (zero-argument `super()`, whose `__class__` cell and first local a
resume function would not keep; `locals()`, `vars()`, `dir()`, which would list the
temporaries). The
resume function of a split meets the same instruction first; that break is logged and
counted once (`repeats_a_break`), and it unrolls no loop (`is_split`).

A break inside an unrolled loop passes the loop's iterator, on the stack, as a tuple of
its remaining items, which the resume function's prologue iterates again (a layout slot
"iterator"), so its trace goes on unrolling (NOTE(loop-unrolling) in control_flow.py).

Python code after the break works on the graph's outputs, so an output that is a view
of an input must come back as a view (the eager backend's are NumPy's own).
"""

from __future__ import annotations

import dataclasses
import types
from collections import Counter
from typing import Callable

from .breaks import Break
from .assemble import assemble
from .bytecode import Instr, Label, decoded, locals_read_after, make_function, reachable_from
from .codemap import CodeMap
from .opcode_table import ON_BREAK
from .emit import (ITERATOR, TEMP, handler_code, iterates_a_list, keep, prologue, redo, resume_call, resume_prologue,
                   under_handler)
from .output import Output, graph_call
from .values import NULL, CallableValue, DictValue, IteratorValue, SequenceValue, Value, contents

_STACK = "__pyjit_stack{}"
# Resume functions of resume functions deeper than this no longer go on unrolling the
# loop they resume in: with a break in every iteration, a long loop would make, trace
# and compile one resume code per iteration, each guarding every item left
# (NOTE(loop-unrolling)).
UNROLLED_RESUME_DEPTH = 8
_RESUME_NAME, _RESUME_QUALNAME = "pyjit_resume_in_", ".<resume at line "
_VARARGS_FLAGS = 0x04 | 0x08  # CO_VARARGS, CO_VARKEYWORDS: a resume function takes plain arguments
_INTROSPECTION = frozenset({"locals", "vars", "dir"})


def build_break(tracer, compiler: Callable, wrap: Callable | None = None) -> Output:
    """The transformed code of a frame the tracer stopped at a break
    (NOTE(resume-functions)); raises Break saying why when it cannot be resumed. With
    `wrap`, the breaking call calls `wrap(callable)` instead of the callable, and is
    never split before (NOTE(captured-backward))."""
    instr, code = tracer.instr, tracer.code
    instructions = tracer.bytecode.instructions
    _refuse_introspection(code, instructions)
    consumed, produced, replay, targets = _effect(tracer, wrap is not None)
    stack = tracer.stack_before
    below, operands = stack[:len(stack) - consumed], stack[len(stack) - consumed:]
    # Cells go in the closure; a local LOAD_FAST_AND_CLEAR unbound is not live.
    bound = {name for name in {*tracer.arguments, *tracer.locals} if tracer.locals.get(name) is not NULL} \
        - set(code.co_cellvars)
    live = [tuple(sorted(bound & locals_read_after(instructions, target), key=_slot_order(code)))
            for target in targets]
    names = sorted(set().union(*live), key=_slot_order(code))
    values = [v for v in below if v is not NULL] + [tracer.locals[n] for n in names if n in tracer.locals]
    effects = tracer.side_effects
    # A list or dict method about to be called is bound to the very object the code holds.
    containers = [value.self for value in (*values, *operands)
                  if isinstance(value, CallableValue) and value.kind == "container_method"]
    _refuse_shared_lists([*values, *operands, *containers, *effects.values()])
    loc = instr.loc
    # A method bound to a computed array is rebuilt from it by the emitter, whether it is an
    # operand or left below a split call (`y.max()` inside a try body).
    bound_to = [value.self for value in (*values, *operands)
                if isinstance(value, CallableValue) and value.self is not None]
    body, outputs, graph_module = graph_call(tracer, compiler, [*values, *operands, *bound_to, *effects.values()])
    handler = tracer.capture.graph_handler  # NOTE(grad-mode-with)
    body = under_handler(handler, tracer.capture.graph_handler_stack, body, code, loc)
    temps: dict[int, str] = {}
    # NOTE(side-effects): what runs after the replay is read before it stores anything.
    kept = [*values, *(v for v in operands if v is not NULL)] if effects.pending else values
    kept = kept + [value for value in operands if isinstance(value, IteratorValue)]  # one object, however held
    iterated = _stack_iterators(below, [*values, *operands, *containers, *effects.values()]) \
        if _depths.get(code, int) < UNROLLED_RESUME_DEPTH else set()
    body += keep([*containers, *kept], iterated, outputs, code, loc, temps)
    body += effects.replay(tracer, outputs, temps, [], loc)
    results = [TEMP.format(len(temps) + i) for i in range(sum(produced))]
    redone = redo(operands, replay, results, temps, outputs, code, loc, wrap)
    if instr.handler is not None:  # a break inside the body the graph ran under
        redone = under_handler(handler, tracer.capture.graph_handler_stack, redone, code, loc)
    body += redone
    stack_names = [temps[id(v)] for v in below if v is not NULL] + results
    layout = tuple(ITERATOR if id(v) in iterated else v is not NULL for v in below) + produced
    through = TailCall if _depths.get(code, int) > 0 else trampoline  # originals are 0 deep
    for number, (target, local_names) in enumerate(zip(targets, live)):
        if number:  # the side a conditional jump takes starts at its label
            body.append(replay[-1].arg)
        # A local the traced path never stored is the frame's own: passed as it is.
        local_temps = [temps[id(tracer.locals[n])] if n in tracer.locals else n for n in local_names]
        resumed = resume_code(code, target, layout, local_names, tracer.capture.split)
        body += resume_call(through, make_function(resumed, loc, code.co_cellvars), stack_names + local_temps, loc)
    if handler is not None:
        body += handler_code(instructions, handler)
    bytecode = dataclasses.replace(tracer.bytecode, instructions=prologue(tracer.bytecode) + body)
    return Output(assemble(bytecode), graph_module)


class TailCall:
    """What a resume function's transformed code returns instead of calling the next
    resume function (NOTE(resume-trampoline))."""

    __slots__ = ("function", "arguments")

    def __init__(self, function, *arguments):
        self.function, self.arguments = function, arguments


def trampoline(function, *arguments):
    """NOTE(resume-trampoline): the transformed code of a frame calls its resume function
    through here, and a resume function's own transformed code returns a TailCall
    instead of calling the next one, so a function with N breaks runs its resume
    functions one after another at one depth rather than N deep (which reached the
    recursion limit). Resume functions are only ever called from here, so returning
    a TailCall is always seen by a trampoline; one that runs as it is (its frame not
    captured) just returns its value."""
    result = function(*arguments)
    while type(result) is TailCall:
        result = result.function(*result.arguments)
    return result


def _refuse_introspection(code: types.CodeType, instructions: list) -> None:
    """Raises Break if the frame looks at itself, which a resume function would change:
    zero-argument `super()` reads the first local and the `__class__` cell, and
    `locals()`, `vars()` and `dir()` would list the resume function's temporaries."""
    if "__class__" in code.co_freevars:
        raise Break("unsupported", "a function that calls super() without arguments is not resumed after a "
                    "graph break")
    names = {instr.arg[0] for instr in instructions if isinstance(instr, Instr) and instr.name == "LOAD_GLOBAL"}
    read = sorted(names & _INTROSPECTION)
    if read:
        raise Break("unsupported", f"a function that calls {read[0]}() is not resumed after a graph break")


def _effect(tracer, wrapped: bool) -> tuple[int, tuple[bool, ...], list, list[int]]:
    """For the breaking instruction, as its opcode declares (NOTE(break-behaviour)):
    how many stack items it takes, the layout of what it leaves, the instructions that
    redo it, and the instruction indices the code resumes at; for one that cannot be
    redone, the frame is split before it when some op was captured and the call is not
    `wrapped` (NOTE(captured-backward))."""
    instr, index, instructions = tracer.instr, tracer.index, tracer.bytecode.instructions
    on_break = ON_BREAK.get(instr.name)
    try:
        if on_break is None:
            raise Break("unsupported", "nothing was captured before the break, and Python can run this "
                        "instruction only where the frame is split before it")
        consumed, produced, replay, targets = on_break.effect(instructions, index)
        if tracer.in_try_block() or (instr.handler is not None and len(targets) > 1):
            raise Break("unsupported", "the instruction is inside a try or with block")
    except Break:
        if not tracer.graph.calls() or wrapped:
            raise
        tracer.capture.split = True
        return 0, (), [], [on_break.start(instructions, index) if on_break is not None else index]
    return consumed, produced, replay, targets


def _stack_iterators(below: list[Value], held: list[Value]) -> set[int]:
    """The ids of the iterators of unrolled loops on the stack below the break
    (NOTE(loop-unrolling)): each reaches the resume function as a tuple of its remaining
    items, and its prologue makes an iterator of that again, which the resume function's
    trace unrolls on. One also held elsewhere (`held`: the live values, nested ones
    included) would become two objects: not resumed. An iterator over a list is passed
    as a live iterator over the list, which the resume function runs in Python."""
    iterators = {id(value) for value in below if isinstance(value, IteratorValue) and not iterates_a_list(value)}
    held_times: Counter = Counter()
    todo, walked = list(held), set()
    while todo:
        value = todo.pop()
        held_times[id(value)] += 1
        if id(value) not in walked:
            walked.add(id(value))
            todo.extend(contents(value))
    if any(held_times[key] > 1 for key in iterators):
        raise Break("unsupported", "an iterator held in two places across a graph break is not resumed")
    return iterators


def _slot_order(code: types.CodeType) -> Callable:
    order = {name: slot for slot, name in enumerate(code.co_varnames)}
    return lambda name: order.get(name, len(order))


def _refuse_shared_lists(values: list[Value]) -> None:
    """A list, dict or iterator built during tracing is rebuilt once per place that holds
    it; only one held directly by several places is materialised once and shared, so one
    nested in another value and held elsewhere too cannot be rebuilt as one object."""
    nested: Counter = Counter()
    top = {id(value): value for value in values}

    def walk(value: Value) -> None:
        for item in contents(value):
            if item.source is None and (isinstance(item, (DictValue, IteratorValue)) or isinstance(item, SequenceValue)
                                        and item.kind is list):
                nested[id(item)] += 1
            walk(item)

    for value in top.values():
        walk(value)
    if any(count > 1 or key in top for key, count in nested.items()):
        raise Break("unsupported", "a list, dict or iterator held in two places across a graph break is not "
                    "resumed")


# -- resume codes ---------------------------------------------------------------------------------
_codes = CodeMap()
_splits = CodeMap()  # resume codes that start at an instruction the original broke at
_depths = CodeMap()  # how many resume functions deep a resume code runs (originals: none)


def resume_code(code: types.CodeType, index: int, layout: tuple, names: tuple[str, ...], split: bool = False):
    """The resume code of `code` at instruction `index` of its decoded list, taking the
    stack described by `layout` (True: an argument, False: a NULL, "iterator": an
    argument the prologue turns into an iterator with GET_ITER) and the locals
    `names`; `split`: `index` is the instruction the original broke at. Cached per code
    (NOTE(resume-functions))."""
    table = _codes.get(code, dict)
    key = (index, layout, names, split)
    made = table.get(key)
    if made is None:
        made = table[key] = _make(code, index, layout, names)
        _depths.get(made, lambda: _depths.get(code, int) + 1)
        if split:
            _splits.get(made, lambda: True)
    return made


def is_split(code: types.CodeType) -> bool:
    """Whether `code` is a resume code that starts at the instruction its original broke at."""
    return code in _splits


def repeats_a_break(tracer) -> bool:
    """Whether the tracer's break is the one its frame's code was split before: a resume
    code that starts at that instruction meets it first, with no op recorded."""
    return tracer.code in _splits and not tracer.graph.calls()


def _make(code: types.CodeType, index: int, layout: tuple, names: tuple[str, ...]):
    bytecode = decoded(code)
    instructions = bytecode.instructions
    head = prologue(bytecode)
    freevars = [*code.co_freevars, *code.co_cellvars]  # the original's cells come in the closure
    loc = next((item.loc for item in instructions[index:] if isinstance(item, Instr) and item.loc), None)
    stack_names = [_STACK.format(i) for i in range(sum(map(bool, layout)))]
    start = Label()
    # Only what the resume point reaches: a resume function of a resume function then
    # holds no more code than the original has left, whatever the number of breaks.
    reached = reachable_from(instructions, index)
    rest = [item for position, item in enumerate(instructions) if position >= len(head) and position in reached]
    rest.insert(rest.index(instructions[index]), start)
    body = [*resume_prologue(head, freevars, layout, stack_names, start, loc), *rest]
    parameters = [*stack_names, *names]
    line = loc.lineno if loc is not None else code.co_firstlineno
    name, qualname = code.co_name, code.co_qualname.split(_RESUME_QUALNAME)[0]
    if name.startswith(_RESUME_NAME):
        name = name[len(_RESUME_NAME):].rsplit("_at_", 1)[0]
    return assemble(dataclasses.replace(
        bytecode, instructions=body, name=f"{_RESUME_NAME}{name}_at_{line}",
        qualname=f"{qualname}{_RESUME_QUALNAME}{line}>", argcount=len(parameters), posonlyargcount=0,
        kwonlyargcount=0, flags=code.co_flags & ~_VARARGS_FLAGS, cellvars=[], freevars=freevars,
        varnames=parameters + [name for name in code.co_varnames if name not in names and name not in freevars]))
