"""pyjit/frontend/emit.py: the instruction sequences of the break path, run as code
objects of their own (NOTE(emitter)): the breaking instruction redone on its operands,
the call of a resume function, a resume function's prologue rebuilding the stack, and
the code that raises (fullgraph=True, a failing backend)."""

import dataclasses
import types

import pytest

from pyjit.frontend.assemble import assemble
from pyjit.frontend.bytecode import Instr, Label, decoded
from pyjit.frontend.emit import ITERATOR, prologue, raise_new, redo, resume_call, resume_prologue
from pyjit.frontend.sources import LocalSource
from pyjit.frontend.values import ConstantValue


def two_arguments(a, b):
    return None


def run(body: list, *arguments):
    """`body` as the code after the prologue of `two_arguments`, called on `arguments`."""
    bytecode = decoded(two_arguments.__code__)
    code = assemble(dataclasses.replace(bytecode, instructions=prologue(bytecode) + body))
    return types.FunctionType(code, {})(*arguments)


def local(name):
    """A value the code reads from the argument `name` of `two_arguments`."""
    return ConstantValue(0, LocalSource(two_arguments.__code__.co_varnames.index(name), name))


@pytest.mark.parametrize("wrap, expected", [(None, 3 + 4), (lambda value: value * 10, 30 + 4)])
def test_redo_pushes_the_operands_runs_the_instruction_and_keeps_its_result(wrap, expected):
    add = [Instr("BINARY_OP", 0)]  # `+`
    body = redo([local("a"), local("b")], add, ["a"], {}, [], two_arguments.__code__, None, wrap)
    assert run(body + [Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE")], 3, 4) == expected


def test_redo_reads_an_operand_kept_in_a_temporary_from_it():
    kept = local("a")
    body = redo([kept, local("b")], [Instr("BINARY_OP", 0)], ["b"], {id(kept): "b"}, [], two_arguments.__code__,
                None)
    assert run(body + [Instr("LOAD_FAST", "b"), Instr("RETURN_VALUE")], 3, 4) == 8  # b + b, a never read


def test_resume_call_calls_through_with_the_function_and_the_named_locals():
    calls = []

    def through(function, *arguments):
        calls.append((function, arguments))
        return "resumed"

    body = resume_call(through, [Instr("LOAD_CONST", len)], ["b", "a"], None)
    assert run(body, 1, 2) == "resumed" and calls == [(len, (2, 1))]


def test_resume_prologue_rebuilds_the_stack_from_the_arguments():
    bytecode = decoded(two_arguments.__code__)
    start = Label()
    body = resume_prologue(prologue(bytecode), [], (True, ITERATOR), ["a", "b"], start, None)
    body += [start, Instr("BUILD_TUPLE", 2), Instr("RETURN_VALUE")]
    code = assemble(dataclasses.replace(bytecode, instructions=body))
    first, iterator = types.FunctionType(code, {})("kept", (5, 6))
    assert first == "kept" and type(iterator) is type(iter(())) and list(iterator) == [5, 6]


def test_raise_new_raises_a_new_exception_each_time_from_its_cause():
    cause = KeyError("inner")
    body = raise_new(ValueError, "what went wrong", cause, None)
    raised = []
    for _ in range(2):
        with pytest.raises(ValueError, match="what went wrong") as error:
            run(body, 1, 2)
        assert error.value.__cause__ is cause
        raised.append(error.value)
    assert raised[0] is not raised[1]
