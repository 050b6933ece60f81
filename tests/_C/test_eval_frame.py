"""The PEP 523 frame hook (csrc/eval_frame.cpp): which frames reach the callback, what
it sees, and how transformed code runs. See NOTE(hooked-tests) in tests/conftest.py."""

import gc
import os
import subprocess
import sys
import textwrap
import threading
import traceback
import weakref
from pathlib import Path

import pytest

from pyjit import _C


def tagged(x):
    return x, "orig"


def helper():
    # Not `return "helper"`: on 3.12+ that code has co_stacksize 0, which the hook
    # never hands over (see test_code_without_a_value_stack_is_skipped).
    value = "helper"
    return value


def calls_helper(x):
    return helper(), "orig"


def record_codes(seen):
    """A callback that records every code object it is asked about and runs it as is."""
    return lambda frame: seen.append(frame.f_code)


# --- installing callbacks ---------------------------------------------------------


def first_callback(frame):
    return None


second_callback = lambda frame: None  # noqa: E731


def test_set_eval_frame_returns_previous_and_nesting_restores(hooked):
    assert _C.get_eval_frame() is None
    assert _C.set_eval_frame(first_callback) is None
    assert _C.get_eval_frame() is first_callback
    assert _C.set_eval_frame(second_callback) is first_callback
    assert _C.get_eval_frame() is second_callback
    assert _C.set_eval_frame(first_callback) is second_callback
    assert _C.set_eval_frame(None) is first_callback
    assert _C.get_eval_frame() is None


def test_hook_installed_only_while_some_thread_has_a_callback(hooked):
    assert not _C.hook_installed()
    installed, release = threading.Event(), threading.Event()
    seen_in_thread = []

    def worker():
        previous = _C.set_eval_frame(first_callback)
        seen_in_thread.append(_C.get_eval_frame())
        installed.set()
        release.wait()
        _C.set_eval_frame(previous)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        installed.wait()
        # Only the worker has a callback: the hook is in, this thread's callback is not.
        assert _C.hook_installed()
        assert _C.get_eval_frame() is None
    finally:
        release.set()
        thread.join()
    assert seen_in_thread == [first_callback]
    assert not _C.hook_installed()
    with hooked(first_callback):
        assert _C.hook_installed()
    assert not _C.hook_installed()


def test_thread_exiting_with_a_callback_drops_it(hooked):
    class Callback:
        def __call__(self, frame):
            return None

    callback = Callback()
    callback_ref = weakref.ref(callback)

    def worker():
        _C.set_eval_frame(callback)  # never removed: the thread state's end must do it

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    del callback
    gc.collect()
    assert not _C.hook_installed()
    assert callback_ref() is None


# --- what reaches the callback -----------------------------------------------------


def signature_zoo(a, b=2, *rest, k, k2=5, **kw):
    return "orig", a, b, rest, k, k2, kw


def test_miss_hands_frame_info_to_callback(frame_of):
    frame = frame_of(tagged, 41)
    assert frame.f_code is tagged.__code__
    assert frame.f_func is tagged
    assert frame.f_globals is tagged.__globals__
    assert frame.f_builtins is tagged.__builtins__
    assert frame.args == (41,)
    assert frame.f_locals == {"x": 41}


def test_frame_info_args_are_bound_in_slot_order(frame_of):
    frame = frame_of(signature_zoo, 1, 3, 4, 5, k=6, z=7)
    # positional, keyword-only (defaults filled in), then the *args tuple, then **kwargs.
    assert frame.args == (1, 3, 6, 5, (4, 5), {"z": 7})
    assert frame.f_locals == {"a": 1, "b": 3, "k": 6, "k2": 5, "rest": (4, 5), "kw": {"z": 7}}


class Token:
    pass


def makes_a_local(x):
    local = Token()
    return weakref.ref(local)


def test_frame_info_keeps_no_frame_alive(hooked):
    kept = []
    with hooked(lambda frame: kept.append(frame) if frame.f_code is makes_a_local.__code__ else None):
        local_alive = makes_a_local(1)
    gc.collect()
    assert len(kept) == 1 and kept[0].args == (1,)
    assert local_alive() is None


def test_hit_runs_transformed_code_without_calling_callback(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        assert tagged(1) == (1, "jit")
        assert backend.calls == 1
        assert tagged(2) == (2, "jit")
        assert tagged(3) == (3, "jit")
    assert backend.calls == 1


def test_guard_miss_calls_callback_again(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        tagged(1)
        assert backend.calls == 1
        assert tagged("s") == ("s", "jit")
        assert backend.calls == 2


def test_callback_returning_none_runs_original_and_is_asked_again(hooked):
    asked = []

    def decline(frame):
        if frame.f_code is tagged.__code__:
            asked.append(frame.args)

    with hooked(decline):
        assert tagged(1) == (1, "orig")
        assert tagged(2) == (2, "orig")
    assert asked == [(1,), (2,)]


def test_callback_returning_skip_is_asked_once_until_reset(hooked):
    asked = []

    def skip(frame):
        if frame.f_code is tagged.__code__:
            asked.append(frame.args)
            return _C.SKIP
        return None

    with hooked(skip):
        for i in range(5):
            assert tagged(i) == (i, "orig")
        assert asked == [(0,)]
        assert _C.is_skipped(tagged.__code__)
        _C.reset()
        tagged(9)
    assert asked == [(0,), (9,)]


def returns_constant():
    return "constant"


def test_code_without_a_value_stack_is_skipped(hooked):
    # On 3.12+ `return "constant"` compiles to RETURN_CONST with co_stacksize 0: such a
    # frame has no slot for the stub's return value (docs/frame_hook.md) and nothing to
    # compile, so it is marked SKIP instead of being handed over. On 3.11 it has a slot.
    seen = []
    with hooked(record_codes(seen)):
        assert returns_constant() == "constant"
    has_stack = returns_constant.__code__.co_stacksize > 0
    assert (returns_constant.__code__ in seen) == has_stack
    assert _C.is_skipped(returns_constant.__code__) != has_stack


def test_frames_the_callback_starts_are_not_handed_to_it(hooked):
    seen, inner_results = [], []

    def callback(frame):
        seen.append(frame.f_code)
        if frame.f_code is tagged.__code__:
            # Both run with the hook off: no recursion into this callback.
            inner_results.append((helper(), tagged(0)))

    with hooked(callback):
        assert tagged(1) == (1, "orig")
    assert inner_results == [("helper", (0, "orig"))]
    assert seen.count(tagged.__code__) == 1
    assert helper.__code__ not in seen


def generator(x):
    yield helper()


async def coroutine(x):
    return helper()


async def async_generator(x):
    yield helper()


def run_generator():
    return list(generator(1))


def run_coroutine():
    step = coroutine(1)
    with pytest.raises(StopIteration):
        step.send(None)


def run_async_generator():
    agen = async_generator(1)
    with pytest.raises(StopIteration):
        agen.__anext__().send(None)
    with pytest.raises(StopAsyncIteration):
        agen.__anext__().send(None)


@pytest.mark.parametrize(
    ("run", "fn"),
    [(run_generator, generator), (run_coroutine, coroutine), (run_async_generator, async_generator)],
    ids=["generator", "coroutine", "async-generator"],
)
def test_generator_and_coroutine_frames_are_not_handed_over(hooked, run, fn):
    seen = []
    with hooked(record_codes(seen)):
        run()
    assert fn.__code__ not in seen
    # The hook was active: the function the body calls was handed over.
    assert helper.__code__ in seen


def test_module_and_class_body_frames_are_not_handed_over(hooked):
    module = compile("def inner():\n    one = 1\n    return one\nresult = inner()\n", "<pyjit-test-module>", "exec")
    namespace = {}
    seen = []
    with hooked(record_codes(seen)):
        exec(module, namespace)

        class Body:
            value = helper()

    assert namespace["result"] == 1 and Body.value == "helper"
    assert module not in seen
    assert namespace["inner"].__code__ in seen
    assert not [code for code in seen if code.co_name == "Body"]
    assert helper.__code__ in seen


def test_transformed_code_is_skipped_but_its_callees_are_hooked(const_swap, hooked):
    backend = const_swap(calls_helper, "orig", "jit")
    seen = []

    def callback(frame):
        seen.append(frame.f_code)
        return backend(frame)

    with hooked(callback):
        assert calls_helper(1) == ("helper", "jit")
        assert calls_helper(2) == ("helper", "jit")
    assert _C.is_skipped(backend.transformed)
    assert backend.transformed not in seen
    assert seen.count(helper.__code__) == 2


def test_cached_code_runs_only_where_a_callback_is_installed(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        assert tagged(1) == (1, "jit")
    assert tagged(1) == (1, "orig")
    from_thread = []
    with hooked(backend):
        # This thread has a callback; the worker has none, so it runs the original.
        thread = threading.Thread(target=lambda: from_thread.append(tagged(1)))
        thread.start()
        thread.join()
        assert tagged(1) == (1, "jit")
    assert from_thread == [(1, "orig")]


def main_only(x):
    return x


def worker_only(x):
    return x


def test_threads_with_different_callbacks_see_only_their_own_frames(hooked):
    seen_main, seen_worker = [], []
    both_hooked = threading.Barrier(2, timeout=30)

    def worker():
        previous = _C.set_eval_frame(record_codes(seen_worker))
        try:
            both_hooked.wait()
            for i in range(200):
                worker_only(i)
            both_hooked.wait()
        finally:
            _C.set_eval_frame(previous)

    thread = threading.Thread(target=worker)
    with hooked(record_codes(seen_main)):
        thread.start()
        both_hooked.wait()
        for i in range(200):
            main_only(i)
        both_hooked.wait()
        thread.join()
    assert seen_main.count(main_only.__code__) == 200
    assert seen_worker.count(worker_only.__code__) == 200
    assert worker_only.__code__ not in seen_main
    assert main_only.__code__ not in seen_worker


# --- running transformed code ------------------------------------------------------


def divide(x):
    return x / 1


def test_exception_in_transformed_code_has_the_users_traceback(hooked, replaced_const):
    # The transformed code divides by zero, so the error proves it ran.
    transformed = replaced_const(divide.__code__, 1, 0)

    def callback(frame):
        if frame.f_code is divide.__code__:
            return _C.GuardProgram([("local", 0, "x")], [("type", 0, int)]), transformed

    with hooked(callback):
        with pytest.raises(ZeroDivisionError) as error:
            divide(3)
    last = traceback.extract_tb(error.value.__traceback__)[-1]
    assert last.filename == divide.__code__.co_filename
    assert last.name == "divide"
    assert last.lineno == divide.__code__.co_firstlineno + 1
    assert last.line == "return x / 1"


def test_keyword_only_varargs_and_kwargs_reach_transformed_code(const_swap, hooked):
    backend = const_swap(signature_zoo, "orig", "jit")
    with hooked(backend):
        assert signature_zoo(1, 3, 4, 5, k=6, z=7) == ("jit", 1, 3, (4, 5), 6, 5, {"z": 7})
        assert signature_zoo(8, k=9) == ("jit", 8, 2, (), 9, 5, {})
        assert signature_zoo(1, 2, 3, k=4, k2=0, y=1, z=2) == ("jit", 1, 2, (3,), 4, 0, {"y": 1, "z": 2})
    assert backend.calls == 1


def make_scaler(scale):
    def scaled(x):
        return x * scale, "orig"

    def set_scale(value):
        nonlocal scale
        scale = value

    return scaled, set_scale


def captures_argument(x):
    read_x = lambda: x  # noqa: E731  (x becomes a cell variable of this frame)
    x = x + 1
    return read_x(), "orig"


def test_closures_work_in_transformed_code(const_swap, hooked):
    scaled, set_scale = make_scaler(10)
    backend = const_swap(scaled, "orig", "jit")
    with hooked(backend):
        assert scaled(2) == (20, "jit")
        set_scale(100)  # the transformed code reads the same cell
        assert scaled(2) == (200, "jit")
    assert backend.calls == 1


def test_cell_variables_work_in_transformed_code(const_swap, hooked):
    backend = const_swap(captures_argument, "orig", "jit")
    with hooked(backend):
        assert captures_argument(1) == (2, "jit")
        assert captures_argument(5) == (6, "jit")


def countdown(n):
    if n == 0:
        return "orig"
    return countdown(n - 1)


def stack_depth():
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


@pytest.fixture
def recursion_headroom():
    """recursion_headroom() -> n: lowers the recursion limit to n frames above the caller.

    NOTE: on 3.12 every frame run through a PEP 523 hook is entered from C and costs two
    units of the fixed C recursion budget (1500), so no hook gets deeper than about 740
    frames there, whatever sys.getrecursionlimit() says. A low limit keeps Python's
    limit the binding one on every supported version while still recursing a few
    hundred hooked frames deep.
    """
    old = sys.getrecursionlimit()

    def lower(headroom=300):
        sys.setrecursionlimit(stack_depth() + headroom)
        return headroom

    yield lower
    sys.setrecursionlimit(old)


def test_deep_recursion_on_cache_hits_reaches_the_limit(const_swap, hooked, recursion_headroom, unraisable):
    backend = const_swap(countdown, "orig", "jit")
    headroom = recursion_headroom()
    with hooked(backend):
        assert countdown(0) == "jit"
        assert countdown(headroom - 20) == "jit"
        with pytest.raises(RecursionError):
            countdown(headroom + 100)
        # The hook survives the overflow.
        assert countdown(10) == "jit"
    assert backend.calls == 1
    assert unraisable == []


def test_deep_recursion_on_misses_reaches_the_limit(hooked, recursion_headroom, unraisable):
    asked = []

    def decline(frame):
        if frame.f_code is countdown.__code__:
            asked.append(frame.args[0])

    # Each level also runs the callback (one more frame), hence the wider margin.
    depth = recursion_headroom() - 30
    with hooked(decline):
        assert countdown(depth) == "orig"
    assert len(asked) == depth + 1
    assert unraisable == []


def test_callback_error_is_reported_and_frame_runs_original(hooked, unraisable):
    def broken(frame):
        if frame.f_code is tagged.__code__:
            raise ValueError("backend exploded")

    with hooked(broken):
        assert tagged(1) == (1, "orig")
    assert unraisable == [(ValueError, "backend exploded")]


def test_reporting_a_callback_error_is_not_hooked():
    # A Python unraisablehook's frame must not reach the callback: one that fails on
    # every frame would fail again on it, recursing until the C stack overflows. Run in
    # a child so a regression is a failed test, not a crashed test run.
    child = textwrap.dedent("""
        import sys
        from pyjit import _C
        asked, reports = [], []

        def callback(frame):
            asked.append(frame.f_code.co_name)
            raise ValueError("callback failed")

        def f():
            value = 1
            return value

        sys.unraisablehook = lambda report: reports.append(str(report.exc_value))
        _C.set_eval_frame(callback)
        try:
            f()
        finally:
            _C.set_eval_frame(None)
        print(asked, reports)
    """)
    environment = dict(os.environ, PYTHONPATH=str(Path(_C.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True, text=True,
                            env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['f'] ['callback failed']"


def counts_references_to_its_varargs(*rest):
    return sys.getrefcount(rest)


def test_frame_info_releases_the_arguments_when_the_callback_returns(hooked):
    # The hook holds the FrameInfo, and through it the frame's arguments, only while the
    # callback runs, so a frame's `del x` frees what only the frame holds. A `*args`
    # tuple is such a value; an argument the caller passed is not (see "What an
    # installed hook costs everyone" in docs/frame_hook.md).
    plain = counts_references_to_its_varargs(Token())
    asked = []
    with hooked(lambda frame: asked.append(frame.f_code)):
        assert counts_references_to_its_varargs(Token()) == plain
    assert asked.count(counts_references_to_its_varargs.__code__) == 1


def test_keyboard_interrupt_in_callback_propagates_from_the_frame(hooked, unraisable):
    ran = []

    def interrupted(frame):
        if frame.f_code is records_run.__code__:
            raise KeyboardInterrupt("stop compiling")

    def records_run(x):
        ran.append(x)

    with hooked(interrupted):
        with pytest.raises(KeyboardInterrupt, match="stop compiling"):
            records_run(1)
    records_run(2)  # the interrupted frame was popped cleanly: calls still work
    assert ran == [2]
    assert unraisable == []


def takes_two(x, y):
    return x, y, "other"


def closes_over(x):
    scale = 2

    def inner(y):
        return x + y + scale

    return inner


@pytest.mark.parametrize(
    "make_result",
    [
        lambda guard, code: 42,
        lambda guard, code: (guard,),
        lambda guard, code: ("not a guard", code),
        lambda guard, code: (guard, "not code"),
        lambda guard, code: (guard, takes_two.__code__),
        lambda guard, code: (guard, closes_over(1).__code__),
    ],
    ids=["int", "one-tuple", "bad-guard", "bad-code", "other-signature", "other-freevars"],
)
def test_invalid_callback_result_never_runs_and_never_crashes(hooked, unraisable, make_result):
    guard = _C.GuardProgram([("local", 0, "x")], [("type", 0, int)])

    def callback(frame):
        if frame.f_code is tagged.__code__:
            return make_result(guard, tagged.__code__)

    with hooked(callback):
        try:
            result = tagged(1)
        except (TypeError, ValueError):
            return  # rejected to the caller: acceptable
    assert result == (1, "orig")
    assert [kind for kind, _ in unraisable] in ([TypeError], [ValueError])
    assert _C.cache_entries(tagged.__code__) == []


# --- leaks -------------------------------------------------------------------------


def pick(table):
    return table["orig"]


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm")
def test_cache_hits_leak_nothing(const_swap, hooked):
    result = object()
    table = {"orig": object(), "jit": result}
    backend = const_swap(pick, "orig", "jit")
    with hooked(backend):
        for _ in range(1000):
            assert pick(table) is result
        gc.collect()
        counts = [sys.getrefcount(obj) for obj in (table, result, pick.__code__, backend.transformed)]
        before = resident_bytes()
        for _ in range(100_000):
            pick(table)
        after = resident_bytes()
        assert [sys.getrefcount(obj) for obj in (table, result, pick.__code__, backend.transformed)] == counts
    assert backend.calls == 1
    assert after - before < 1 << 20
