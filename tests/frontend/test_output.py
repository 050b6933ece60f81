"""pyjit/frontend/output.py: the transformed code keeps the original's signature, free
variables and file, calls the compiled graph with its inputs read from their sources,
and rebuilds the result (NOTE(transformed-code))."""

import dis

import numpy as np

import pyjit
from pyjit.frontend.emit import disassembly

WEIGHTS = np.full(3, 2.0)


def make(bias):
    def affine(x, *, scale=1.0):
        return np.tanh(x * WEIGHTS * scale + bias)

    return affine


def transformed(compiled):
    ((_, code),) = pyjit.cache_entries(compiled)
    return code


def test_signature_free_variables_and_file_are_kept(jit):
    affine = make(np.ones(3))
    compiled = jit(affine)
    x = np.arange(3.0)
    np.testing.assert_allclose(compiled(x, scale=0.5), affine(x, scale=0.5))
    code, original = transformed(compiled), affine.__code__
    for field in ("co_argcount", "co_kwonlyargcount", "co_posonlyargcount", "co_freevars", "co_filename",
                  "co_name", "co_firstlineno"):
        assert getattr(code, field) == getattr(original, field), field
    assert code.co_varnames[:2] == original.co_varnames[:2]


def test_inputs_come_from_their_sources(jit):
    compiled = jit(make(np.ones(3)))
    compiled(np.arange(3.0))
    loads = [(instr.opname, instr.argval) for instr in dis.get_instructions(transformed(compiled))]
    assert ("LOAD_FAST", "x") in loads and ("LOAD_DEREF", "bias") in loads
    assert any(name == "LOAD_GLOBAL" and "WEIGHTS" in str(value) for name, value in loads)
    guards = pyjit.cache_entries(compiled)[0][0]
    assert "WEIGHTS is numpy.ndarray" in guards and "bias is numpy.ndarray" in guards


def test_a_single_array_result_is_returned_directly(jit):
    compiled = jit(make(np.ones(3)))
    compiled(np.arange(3.0))
    names = [instr.opname for instr in dis.get_instructions(transformed(compiled))]
    assert "STORE_FAST" not in names and names[-1] == "RETURN_VALUE"
    assert "CALL" in disassembly(transformed(compiled))


def test_a_value_computed_at_trace_time_is_not_the_literal_it_equals(jit):
    # NOTE(constant-identity)
    def rebuilt(x):
        a = b = "xyzpdq"
        c = a[:3] + b[3:]
        ten = 10
        big, literal = ten**20, 100000000000000000000
        y = np.cos(x)
        print(end="")  # a graph break: the strings and ints cross it as constants
        return a is c, c == a, big is literal, y

    assert jit(rebuilt)(np.ones(2))[:3] == rebuilt(np.ones(2))[:3] == (False, True, False)


def test_iterators_the_code_holds_keep_their_type_across_a_break(jit):
    def held(x, values):
        iterators = (enumerate(values), zip(values, values), reversed(values), reversed(range(3)), iter(values))
        y = x + 1
        firsts = [next(iterator) for iterator in iterators[:1]] + [next(iterators[2])]
        str(firsts)  # a break: the iterators are rebuilt for the code after it
        return y, [type(iterator).__name__ for iterator in iterators], [list(iterator) for iterator in iterators]

    x = np.ones(2)
    for values in ((1.0, 2.0, 3.0), "abc"):
        got, want = jit(held)(x, values), held(x, values)
        assert got[1:] == want[1:] and np.array_equal(got[0], want[0])
