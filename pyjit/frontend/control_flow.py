"""The handlers of the opcodes that steer control (NOTE(opcode-table) in opcode_table.py):
jumps on conditions known at trace time, loops (unrolled), and `with` statements, which
are entered in Python at a graph break.
"""

from __future__ import annotations

from .breaks import Break
from .bytecode import Label, replay_jump
from .iteration import iterate
from .loops import capture_loop
from .opcode_table import OnBreak, handler, redone, resumes
from .operators import truth
from .values import ConstantValue, IteratorValue, describe


# -- jumps on conditions known at trace time --------------------------------------------------------
@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def _jump(tracer, instr):
    """Backward jumps too: loops are unrolled (NOTE(loop-unrolling))."""
    tracer.jump_to = instr.arg


def _is_none(value) -> bool:
    return isinstance(value, ConstantValue) and value.value is None


_CONDITIONS = {"TRUE": truth, "FALSE": lambda value: not truth(value),
               "NONE": _is_none, "NOT_NONE": lambda value: not _is_none(value)}


def _jump_effect(instructions: list, index: int):
    """A conditional jump on an array: redone in Python, resumed on each side."""
    instr = instructions[index]
    label_at = {id(item): i for i, item in enumerate(instructions) if isinstance(item, Label)}
    return 1, (), replay_jump(instr, Label()), [index + 1, label_at[id(instr.arg)]]


_JUMP_BREAK = OnBreak(_jump_effect)


def _pop_jump(condition):
    def jump_if(tracer, instr):
        if condition(tracer.pop()):
            tracer.jump_to = instr.arg
    return jump_if


for _name, _condition in _CONDITIONS.items():
    handler(f"POP_JUMP_IF_{_name}", since=(3, 12), on_break=_JUMP_BREAK)(_pop_jump(_condition))
    handler(f"POP_JUMP_FORWARD_IF_{_name}", until=(3, 11), on_break=_JUMP_BREAK)(_pop_jump(_condition))
    handler(f"POP_JUMP_BACKWARD_IF_{_name}", until=(3, 11))(_pop_jump(_condition))  # a break there splits
del _name, _condition


@handler("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", until=(3, 11))
def _jump_or_pop(tracer, instr):
    """`a or b`, `a and b` on 3.11: jump keeping the value, or pop it."""
    if truth(tracer.stack[-1]) == (instr.name == "JUMP_IF_TRUE_OR_POP"):
        tracer.jump_to = instr.arg
    else:
        tracer.pop()


# -- loops -----------------------------------------------------------------------------------------
# NOTE(loop-unrolling): a loop over a range is captured as one node where its body can be
# traced once (NOTE(loop-capture) in loops.py); other loops are unrolled at trace time,
# as TorchDynamo does. GET_ITER
# (and `iter`, `enumerate`, `zip`, `reversed`: pyjit/frontend/iteration.py) makes an
# IteratorValue of what the iterable yields: the items of a tuple or list value, of a
# constant tuple, list, str, bytes or range, or the rows `x[0], x[1], ...` of an array
# whose first size is static (getitem ops); anything else is a graph break before the
# loop, which then runs in Python. FOR_ITER pushes the next item, or, exhausted, leaves
# the loop as the version's bytecode expects (data: which FOR_ITER and END_FOR handler
# the version registers): 3.11 pops the iterator and jumps past the loop; 3.12 and 3.13
# jump to END_FOR (CPython skips it and pops the iterator itself; walking it with a
# stand-in for the item does the same: 3.12's END_FOR pops both, 3.13's pops the
# stand-in and the POP_TOP after it the iterator). Backward jumps are walked like
# forward ones, so a `while` loop not captured (NOTE(while-capture) in while_loops.py)
# whose condition folds unrolls too; a condition on
# array data is a data-dependent break. `Tracer.run` counts the instructions a trace
# interprets (inlined calls included) and a backward jump beyond `config.unroll_limit`
# is a graph break: the graph so far runs and the rest of the loop runs in Python.
# A break inside an unrolled loop resumes inside it: the iterator's remaining items
# reach the resume function, which rebuilds the iterator and goes on unrolling, for up
# to `UNROLLED_RESUME_DEPTH` levels of resume functions (NOTE(resume-functions)); an
# iterator whose items come from a list is rebuilt over the list itself, which code
# run at the break may change.
@handler("GET_ITER")
def _get_iter(tracer, instr):
    """A loop over a range is captured as one node where it can be (NOTE(loop-capture))."""
    iterable = tracer.pop()
    captured = capture_loop(tracer, iterable)
    tracer.push(iterate(tracer, iterable) if captured is None else captured)


def _next_item(tracer):
    """The next item of the iterator on top of the stack; None when it is exhausted."""
    iterator = tracer.stack[-1]
    if not isinstance(iterator, IteratorValue):
        raise Break("unsupported", f"a loop over {describe(iterator)} made outside the compiled function is not "
                    "unrolled", hint="the loop runs in Python; loop over the sequence itself to capture it")
    return iterator.next_item()


@handler("FOR_ITER", until=(3, 11))
def _for_iter_past_the_loop(tracer, instr):
    item = _next_item(tracer)
    if item is None:
        tracer.pop()
        tracer.jump_to = instr.arg
    else:
        tracer.push(item)


@handler("FOR_ITER", since=(3, 12))
def _for_iter_to_end_for(tracer, instr):
    item = _next_item(tracer)
    tracer.push(ConstantValue(None) if item is None else item)
    if item is None:
        tracer.jump_to = instr.arg


@handler("END_FOR", since=(3, 12), until=(3, 12))
def _end_for_both(tracer, instr):
    tracer.popn(2)


@handler("END_FOR", since=(3, 13))
def _end_for(tracer, instr):
    tracer.pop()


# -- with statements --------------------------------------------------------------------------------
# A with statement is entered in Python at a break (NOTE(grad-mode-with)), leaving its
# `__exit__` and what `__enter__` returned; its cleanup handler starts with WITH_CLEANUP.
resumes("BEFORE_WITH", on_break=redone(1, leaves=(True, True)))
WITH_CLEANUP = ("PUSH_EXC_INFO", "WITH_EXCEPT_START")
