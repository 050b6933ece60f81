"""pyjit/frontend/resume.py: graph breaks compile the graph so far, run the breaking
instruction in Python and continue in a resume function that is itself captured; the
results, side effects and errors are those of the plain run."""

import logging

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.frontend import resume
from pyjit.frontend.bytecode import decode, locals_read_after
from pyjit.utils import counters


def graphs() -> int:
    return counters["stats"]["unique_graphs"]


def breaks() -> int:
    return sum(counters["graph_break"].values())


def resume_codes(fn) -> list:
    return list(resume._codes.get(fn.__code__, dict).values())


def cos_then_branch(x):  # SPEC section 5, example 2
    y = np.cos(np.cos(x))
    if x.mean() > 0.5:
        return y * 2
    return y - 1


def test_a_data_dependent_branch_resumes_on_either_side(jit):
    compiled = jit(cos_then_branch)
    for x in (np.linspace(0.2, 1, 10), np.linspace(0, 0.5, 10), np.linspace(0.2, 1, 10)):
        assert same(compiled(x), cos_then_branch(x))
    assert graphs() == 3 and breaks() == 1  # cos cos mean >, then * 2 and - 1
    assert {code.co_name for code in resume_codes(cos_then_branch)} == {
        f"pyjit_resume_in_cos_then_branch_at_{cos_then_branch.__code__.co_firstlineno + 3}",
        f"pyjit_resume_in_cos_then_branch_at_{cos_then_branch.__code__.co_firstlineno + 4}"}


def test_a_print_between_array_ops_happens_once_in_order(jit, capsys):
    def printing(x):
        y = np.sin(x) * 2
        print("between", y.shape)
        return y + 1

    compiled = jit(printing)
    x = np.arange(3.0)
    assert same(compiled(x), printing(x))
    assert capsys.readouterr().out == "between (3,)\nbetween (3,)\n"
    assert graphs() == 2 and counters["graph_break"]["call to print"] == 1


@pytest.mark.parametrize("fn", [
    lambda x: x * np.cos(x).max().item(),
    lambda x: np.sqrt(np.fft.fft(np.cos(x)).real ** 2),
    lambda x: np.cos(x).sum(dtype=np.float32) + x,
    lambda x: np.add(np.cos(x), np.fft.fft(x).real),
    lambda x: np.cos(x)[np.sin(x) > 0] * 2,
], ids=["item", "unknown-call", "method-with-dtype", "call-pending-below", "boolean-mask"])
def test_breaks_inside_expressions_resume(jit, fn):
    compiled = jit(fn)
    x = np.arange(4.0)
    for _ in range(2):
        assert same(compiled(x), fn(x))
    assert graphs() >= 2 and breaks() >= 1


class Scaler:
    def __init__(self):
        self.k = 2.0

    def scale(self, x):
        return x * self.k


def tanh_plus_one(x):
    return np.tanh(x) + 1


def method_and_function(x, obj):
    y = np.sin(x)
    return obj.scale(y) + tanh_plus_one(y)


def and_of_arrays(x, y):
    return (x > 0).all() and y * 2


def aliased_lists(x):
    a = [np.sin(x)]
    b = a
    print(end="")
    b.append(1)
    return a


def nested_and_shared_list(x):
    a = [np.sin(x)]
    t = (a, 1)
    print(end="")
    a.append(2)
    return t


def while_loop(x):
    y = np.sin(x)
    while y.sum() > 0:
        y = y - 1
    return y


def with_block(x):
    y = np.sin(x)
    with np.errstate(all="ignore"):
        z = y / 0
    return z


@pytest.mark.parametrize("fn, args", [
    (method_and_function, (np.arange(3.0), Scaler())),
    (and_of_arrays, (np.arange(3.0), np.ones(2))),
    (and_of_arrays, (np.arange(1, 3.0), np.ones(2))),
    (aliased_lists, (np.arange(3.0),)),
    (nested_and_shared_list, (np.arange(3.0),)),
    (while_loop, (np.arange(3.0),)),
    (with_block, (np.arange(3.0),)),
], ids=lambda value: getattr(value, "__name__", ""))
def test_python_semantics_survive_breaks(jit, fn, args):
    compiled = jit(fn)
    for _ in range(2):
        assert repr(compiled(*args)) == repr(fn(*args))


def test_graph_break_splits_and_values_cross_it(jit):
    def split(x, *rest, scale=2, **options):
        a, n, items, nothing, text = np.sin(x), 3, [1, x], None, "s"
        pyjit.graph_break()
        return a * n + items[0] + scale + rest[0], items, nothing, text, a

    compiled = jit(split)
    x = np.arange(3.0)
    got, want = compiled(x, 5, scale=4, extra=1), split(x, 5, scale=4, extra=1)
    assert same(got, want)
    assert got[1][1] is x and counters["graph_break"]["pyjit.graph_break() was called"] == 1


def test_nested_breaks_give_three_graphs(jit, capsys):
    def twice(x):
        y = np.cos(x)
        print("one")
        y = y * 2
        print("two", end="!\n")
        return y + 1

    compiled = jit(twice)
    x = np.arange(3.0)
    assert same(compiled(x), twice(x))
    assert capsys.readouterr().out == "one\ntwo!\none\ntwo!\n"
    assert graphs() == 3 and breaks() == 2


def test_resume_functions_are_cached_and_hit_their_cache(jit, capsys):
    def printing(x):
        y = np.cos(x)
        print("p")
        return y + 1

    compiled = jit(printing)
    x = np.arange(3.0)
    compiled(x)
    (code,) = resume_codes(printing)
    compiled(x)
    assert graphs() == 2 and len(pyjit._C.cache_entries(code)) == 1
    pyjit.reset()  # a recapture makes the same resume code again
    compiled(x)
    assert resume_codes(printing) == [code] and graphs() == 4


def test_closures_and_globals_survive_the_break(jit):
    def make(offset):
        def shifted(x):
            y = x + offset
            pyjit.graph_break()
            return y * offset + np.pi

        return shifted

    shifted = make(3.0)
    compiled = jit(shifted)
    assert same(compiled(np.ones(2)), shifted(np.ones(2)))
    assert resume_codes(shifted)[0].co_freevars == ("offset",)


def test_errors_after_the_break_show_the_users_line(jit):
    def fails_later(x, y):
        z = np.cos(x)
        print(end="")
        return z + y  # the failing line

    compiled = jit(fails_later)
    with pytest.raises(ValueError, match="broadcast") as info:
        compiled(np.ones(2), np.ones(3))
    last = info.traceback[-1]
    assert last.frame.code.raw.co_filename == __file__ and "the failing line" in str(last.statement)


def test_sizes_generalise_across_a_break(jit):
    compiled = jit(cos_then_branch)
    for size in (10, 8, 7, 6):
        x = np.linspace(0, 1, size)
        assert same(compiled(x), cos_then_branch(x))
    assert len(pyjit.cache_entries(compiled)) == 2 and "shape=(s0,)" in pyjit.cache_entries(compiled)[0][0]


def test_the_graph_before_a_loop_is_captured_and_the_loop_runs_in_python(jit, caplog):
    def looping(x):
        y = np.cos(x)
        for step in range(3):
            y = y + step
        return y

    compiled = jit(looping)
    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        assert same(compiled(np.ones(2)), looping(np.ones(2)))
    assert graphs() == 1 and breaks() == 1  # the resume function meets it again: counted once
    (code,) = resume_codes(looping)
    assert pyjit._C.is_skipped(code)
    (record,) = caplog.records
    assert "split before it" in record.getMessage()


class _Base:
    def scale(self, x):
        return x * 2


class _Derived(_Base):
    def scale(self, x):
        y = np.cos(x)
        print(end="")  # a graph break before the zero-argument super()
        return super().scale(y) + 1


def _dir_after_a_break(x):
    y = np.cos(x)
    print(end="")
    return sorted(dir()), y


def _locals_after_a_break(x):
    y = np.cos(x)
    print(end="")
    return sorted(locals()), sorted(vars())


@pytest.mark.parametrize("fn, reason", [(_Derived().scale, "super()"), (_dir_after_a_break, "dir()"),
                                        (_locals_after_a_break, "locals()")])
def test_a_frame_that_looks_at_itself_is_not_resumed(jit, caplog, fn, reason):
    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        assert same(jit(fn)(np.ones(2)), fn(np.ones(2)))
    assert resume_codes(fn) == []  # (the frame super() calls has its own graph)
    assert any("runs as it is: " in r.getMessage() and reason in r.getMessage() for r in caplog.records)


def test_a_break_inside_try_splits_before_it(jit, capsys):
    def guarded(x):
        y = np.cos(x)
        try:
            print("inside")
            z = y * 2
        except ValueError:
            z = y
        return z + 1

    assert same(jit(guarded)(np.ones(2)), guarded(np.ones(2)))
    assert capsys.readouterr().out == "inside\ninside\n" and graphs() == 1


def test_an_error_inside_try_reaches_its_handler(jit):
    def caught(x, index):
        y = np.cos(x)
        try:
            z = y[index]
        except IndexError:
            z = y * 0
        return z + 1

    compiled = jit(caught)
    x, bad = np.ones(3), np.array([7])
    assert same(compiled(x, np.array([1])), caught(x, np.array([1])))
    assert same(compiled(x, bad), caught(x, bad)) and graphs() == 1


def cell_read_by_lambda(x):
    y = np.cos(x)
    print(end="")
    return (lambda: y)() + 1


def argument_cells(x, k):
    y = np.cos(x) * k
    print(end="")
    f = lambda v: v * k + x  # noqa: E731
    return f(y)


def nonlocal_counter(x):
    y = np.cos(x)
    total = 0

    def add(v):
        nonlocal total
        total += v

    add(1)
    add(2)
    print(end="")
    return y * total


def cells_and_free_variables(a):
    def mid(x):
        b = np.sin(x) + a
        print(end="")
        return (lambda: b * a)() + x

    return mid


@pytest.mark.parametrize("fn, args", [
    (cell_read_by_lambda, (np.arange(3.0),)),
    (argument_cells, (np.arange(3.0), 2.0)),
    (nonlocal_counter, (np.arange(3.0),)),
    (cells_and_free_variables(3.0), (np.arange(3.0),)),
], ids=["cell", "argument-cells", "nonlocal", "cells-and-free"])
def test_cells_reach_the_resume_function_through_its_closure(jit, fn, args):
    compiled = jit(fn)
    for _ in range(2):
        assert same(compiled(*args), fn(*args))
    assert graphs() >= 1 and not pyjit._C.is_skipped(fn.__code__)
    assert all(set(fn.__code__.co_cellvars) <= set(code.co_freevars) for code in resume_codes(fn))


def test_fullgraph_still_raises_at_the_first_break(jit):
    with pytest.raises(pyjit.exc.Unsupported, match="truth value"):
        jit(cos_then_branch, fullgraph=True)(np.ones(2))


def test_live_locals_are_those_read_later():
    def reads(x, y, unused):
        z = x + 1
        print(z)
        return z * y

    instructions = decode(reads.__code__).instructions
    call = max(i for i, item in enumerate(instructions) if getattr(item, "name", "") == "CALL")
    assert locals_read_after(instructions, call + 1) == {"z", "y"}
