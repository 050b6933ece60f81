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
    assert graphs() == 2 and counters["graph_break"]["a call to the function print is not captured"] == 1


@pytest.mark.parametrize("fn", [
    lambda x: x * np.cos(x).max().item(),
    lambda x: np.sqrt(np.unwrap(np.cos(x)) ** 2),
    lambda x: np.cos(x).sum(where=x > 0) + x,
    lambda x: np.add(np.cos(x), np.unwrap(x)),
    lambda x: np.cos(x)[np.sin(x) > 0] * 2,
], ids=["item", "unknown-call", "method-with-where", "call-pending-below", "boolean-mask"])
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
    pyjit.reset()  # a recapture makes the same resume code again (and the counters start again)
    compiled(x)
    assert resume_codes(printing) == [code] and graphs() == 2


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
    def looping(x, steps):
        y = np.cos(x)
        for step in steps:  # an iterator made outside the trace: not unrolled
            y = y + step
        return y

    compiled = jit(looping)
    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        assert same(compiled(np.ones(2), iter(range(3))), looping(np.ones(2), iter(range(3))))
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


def test_why_a_break_with_nothing_before_it_is_not_resumed_is_said_in_plain_words(jit, caplog):
    def stores_into_its_closure(x):
        scale = 1

        def scaled():
            return x * scale

        scale = 2  # STORE_DEREF: a break that is resumed only by splitting the frame
        return scaled()

    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        assert same(jit(stores_into_its_closure)(np.ones(2)), stores_into_its_closure(np.ones(2)))
    (record,) = [r.getMessage() for r in caplog.records if "stores_into_its_closure (" in r.getMessage()]
    assert "the frame runs as it is: nothing was captured before the break" in record and "STORE_DEREF is" not in record


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


def test_resume_functions_of_resume_functions_do_not_grow(jit):
    def many_breaks(x):
        y = x + 1
        hash(1)  # a break (hash is not modelled)
        y = y * 2
        hash(2)
        y = y - 3
        hash(3)
        return y / 4

    x = np.arange(3.0)
    assert same(jit(many_breaks)(x), many_breaks(x))
    chain, code = [], many_breaks.__code__
    while resume._codes.get(code, dict):
        (code,) = resume._codes.get(code, dict).values()
        chain.append(code)
    assert len(chain) == 3
    first = many_breaks.__code__.co_firstlineno
    assert [code.co_name for code in chain] == [f"pyjit_resume_in_many_breaks_at_{first + n}" for n in (2, 4, 6)]
    sizes = [len(code.co_code) for code in chain]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] < len(many_breaks.__code__.co_code)


# -- breaks inside unrolled loops (NOTE(loop-unrolling)) -------------------------------------------
def print_in_loop(x):
    for i in range(3):
        x = x + i
        print("step", i)
    return x * 2


def test_a_break_inside_a_loop_resumes_inside_it(jit, capsys):
    explanation = pyjit.explain(print_in_loop)(np.ones(2))
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n"
    # Each resume function unrolls the rest of the loop up to the next print.
    assert explanation.graph_count == 4 and explanation.graph_break_count == 3
    assert explanation.ops_per_graph == [["add"], ["add"], ["add"], ["multiply"]]
    compiled = jit(print_in_loop)
    for _ in range(2):
        assert same(compiled(np.ones(2)), print_in_loop(np.ones(2)))
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n" * 4


def test_a_data_dependent_branch_inside_a_loop(jit):
    def branchy(x, y):
        for scale in (1.0, 2.0, 3.0):
            if (x * scale).sum() > 10:
                x = x - scale
            else:
                y = y + x * scale
        return x, y

    compiled = jit(branchy)
    for x in (np.arange(4.0), np.ones(4)):
        assert same(compiled(x, np.zeros(4)), branchy(x, np.zeros(4)))
    assert graphs() >= 4 and breaks() >= 3


def grows_while_iterated(x, items):
    for v in items:
        x = x + v
        print(end="")  # the rest runs in Python, where the list grows
        if len(items) < 4:
            items.append(v * 10)
    return x


def enumerates_and_zips_a_list(x, items):
    for i, (v, w) in enumerate(zip(items, reversed((1.0, 2.0, 3.0, 4.0))), 1):
        x = x * v + i * w
        print(end="")
        if len(items) < 4:
            items.append(v * 10)
    return x


def reverses_a_shrinking_list(x, items):
    for v in reversed(items):
        x = x + v
        print(end="")
        items.pop(0)  # Python's reversed list iterator counts its index down regardless
    return x


@pytest.mark.parametrize("fn", [grows_while_iterated, enumerates_and_zips_a_list, reverses_a_shrinking_list],
                         ids=lambda fn: fn.__name__)
def test_an_iterator_over_a_list_sees_it_change_after_a_break(jit, fn):
    plain_items, compiled_items = [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]
    want = fn(np.ones(2), plain_items)
    assert same(jit(fn)(np.ones(2), compiled_items), want)
    assert compiled_items == plain_items
    assert graphs() >= 1  # resumed: the iterator is rebuilt over the list itself


def counting_for(x):
    for _ in range(40):  # about 4 instructions an iteration
        x = x + 1
    return x


def counting_while(x):
    n = 0
    while n < 40:
        x = x * 1.01
        n += 1
    return x, n


@pytest.mark.parametrize("fn", [counting_for, counting_while], ids=lambda fn: fn.__name__)
def test_the_unroll_limit_hands_the_rest_of_the_loop_to_python(jit, caplog, fn):
    # Unrolled, not a loop node (NOTE(loop-capture)).
    with pyjit.config.patch(unroll_limit=50, capture_loops=False), \
            caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        compiled = jit(fn)
        for _ in range(2):
            assert same(compiled(np.ones(2)), fn(np.ones(2)))
    # The graph holds the iterations unrolled so far; the resume function (a split) runs
    # the rest in Python rather than unrolling again.
    assert graphs() == 1 and list(counters["graph_break"]) == [
        "loop unrolled beyond config.unroll_limit (50 instructions)"]
    assert "split before it" in caplog.records[0].getMessage()
    (code,) = resume_codes(fn)
    assert pyjit._C.is_skipped(code)


def test_a_break_in_every_iteration_stops_nesting_resume_functions(jit):
    def long_loop(x):
        for i in range(40):
            x = x + i
            print(end="")
        return x

    compiled = jit(long_loop)
    for _ in range(2):
        assert same(compiled(np.ones(2)), long_loop(np.ones(2)))
    assert graphs() <= resume.UNROLLED_RESUME_DEPTH + 2


def append_across_a_break(x, out):
    local = [np.cos(x)]
    local.append(float(np.sum(np.sin(x))))  # `local.append` waits below the break at float()
    out.append(float(np.sum(x)))
    return local, out


def test_a_list_method_pending_at_a_break_is_bound_to_the_list_itself(jit):
    compiled = jit(append_across_a_break)
    for _ in range(2):
        plain, out = [], []
        got = compiled(np.arange(3.0), out)
        assert repr(got) == repr(append_across_a_break(np.arange(3.0), plain))
        assert got[1] is out and repr(out) == repr(plain)
    assert graphs() >= 2  # resumed, not run as it is


class _Noisy:
    log: list = []

    def __del__(self):
        _Noisy.log.append("del")


def test_the_result_of_a_call_made_for_its_effect_is_dropped_at_once(jit):
    import copy

    def drops(x, noisy):
        y = np.cos(x)
        copy.copy(noisy)  # a break; Python drops the copy here, running its __del__
        _Noisy.log.append("next")
        return y

    noisy = _Noisy()
    for fn in (drops, jit(drops)):
        _Noisy.log.clear()
        fn(np.ones(2), noisy)
        assert _Noisy.log == ["del", "next"]


# -- with blocks (NOTE(grad-mode-with)) --------------------------------------------------------
def no_grad_step(w, x):
    loss = (w * x).sum()
    with pyjit.no_grad():
        update = w * 0.5 + 1
        seen = pyjit.autograd.is_grad_enabled()  # a break inside the body: runs with grad off
        update = update.sum()
    return loss + update, seen


def test_the_body_of_a_no_grad_block_is_captured(jit):
    w, x = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.ones(3))
    compiled = jit(no_grad_step)
    for _ in range(2):
        (got, seen), (want, want_seen) = compiled(w, x), no_grad_step(w, x)
        assert got.item() == want.item() and got.requires_grad == want.requires_grad and seen is want_seen is False
        assert pyjit.autograd.is_grad_enabled()
    # multiply and sum before the block; multiply, add | sum inside it (a break between); add after
    assert counters["stats"]["calls_captured"] == 2 + 3 + 1 and counters["stats"]["unique_graphs"] == 4


def test_an_error_in_a_graph_under_no_grad_restores_grad_mode(jit):
    def pick(w, index):
        with pyjit.no_grad():
            doubled = w * 2
            return doubled[index]  # the failing line

    compiled, w = jit(pick), pyjit.tensor(np.arange(3.0), requires_grad=True)
    np.testing.assert_array_equal(compiled(w, np.array([2])).numpy(), [4.0])
    with pytest.raises(IndexError) as info:
        compiled(w, np.array([7]))
    assert pyjit.autograd.is_grad_enabled()
    assert any(f"{__file__}:{pick.__code__.co_firstlineno + 3}" in note for note in info.value.__notes__)


class Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")

    def __exit__(self, kind, value, traceback):
        self.log.append(f"exit {kind.__name__ if kind else None}")
        return kind is ZeroDivisionError  # suppresses one kind


def test_other_context_managers_run_their_block_in_python(jit):
    def guarded(x, log, divisor):
        y = x + 1
        with Recorder(log):
            y = y * 2
            y = y / divisor if divisor else 1 / divisor
        return y

    for divisor in (2.0, 0):
        plain_log, jit_log = [], []
        want = guarded(np.ones(2), plain_log, divisor)
        got = jit(guarded)(np.ones(2), jit_log, divisor)
        assert jit_log == plain_log and same(got, want)


def test_an_iterator_held_in_two_places_across_a_break_stays_one_object(jit):
    def held_twice(x, values):
        iterators = (enumerate(values), reversed(values))
        y = x + 1
        firsts = [next(iterator) for iterator in iterators[:1]]  # a break on 3.12+ (inlined comprehension)
        id(firsts)  # a break everywhere (id is not modelled)
        return y, [list(iterator) for iterator in iterators]

    x, values = np.ones(2), (1.0, 2.0, 3.0)
    got, want = jit(held_twice)(x, values), held_twice(x, values)
    assert got[1] == want[1] == [[(1, 2.0), (2, 3.0)], [3.0, 2.0, 1.0]] and same(got[0], want[0])


def max_inside_try(x):
    y = np.cos(x) + 1
    try:
        if y.max() > 0.5:  # split before the call: the method bound to `y` crosses the break
            raise KeyError("big")  # and `y` is not read after it
    except KeyError:
        return x * 2
    return x


def test_a_method_bound_to_a_computed_array_crosses_a_split(jit, unraisable):
    # Found by the differential fuzzer (tests/frontend/test_fuzz.py, seed 1268): the
    # split's transformed code rebuilt `y.max` from a graph output it had not returned.
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(jit(max_inside_try)(x), max_inside_try(x))
    assert unraisable == [] and counters["stats"]["unique_graphs"] >= 1
