"""pyjit/frontend/convert.py: each guard kind causes exactly one recompile, sizes that
change become symbolic, recompile_limit stops recompiling with a warning, the logs say
why, and two threads can share a compiled function."""

import contextlib
import logging
import sys
import threading

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

FACTOR = 2.0


def scaled(x, k):
    return np.sin(x) * k * FACTOR


def entries(fn):
    return pyjit.cache_entries(fn)


@pytest.mark.parametrize("first, second, failure", [
    ((np.ones(3, np.float64), 2), (np.ones(3, np.float32), 2), "dtype"),
    ((np.ones(3), 2), (np.ones((3, 1)), 2), "'x'"),
    ((np.ones(3), 2), (np.ones(3), 3), "'k' value mismatch"),
    ((np.ones(3), 2), (np.ones(3), 2.0), "'k'"),
    ((np.ones(3), 2), (np.ones(4), 2), "size mismatch"),
], ids=["dtype", "ndim", "constant", "constant-type", "size"])
def test_each_guard_kind_recompiles_once(jit, caplog, first, second, failure):
    compiled = jit(scaled)
    with caplog.at_level(logging.DEBUG, logger="pyjit.recompiles"):
        for args in (first, second, first, second):
            np.testing.assert_allclose(compiled(*args), scaled(*args), rtol=1e-6)
    assert len(entries(compiled)) == 2
    assert counters["stats"]["unique_graphs"] == 2
    (record,) = [r for r in caplog.records if r.name == "pyjit.recompiles"]
    assert failure in record.getMessage() and "scaled" in record.getMessage()


def test_a_rebound_global_recompiles_once(jit, monkeypatch):
    compiled = jit(scaled)
    x = np.ones(3)
    compiled(x, 1)
    monkeypatch.setitem(globals(), "FACTOR", 5.0)
    np.testing.assert_allclose(compiled(x, 1), np.sin(x) * 5.0)
    compiled(x, 1)
    assert len(entries(compiled)) == 2


def test_a_changed_size_becomes_symbolic(jit, caplog):
    def total(x):
        return np.cos(x).sum(0) * x.shape[0]

    compiled = jit(total)
    with caplog.at_level(logging.DEBUG, logger="pyjit.dynamic"):
        for rows in (4, 5, 6, 7):
            x = np.arange(rows * 3.0).reshape(rows, 3)
            np.testing.assert_allclose(compiled(x), total(x))
    assert len(entries(compiled)) == 2  # 4 static, then s0 for 5, 6 and 7
    assert "shape=(s0, 3)" in entries(compiled)[0][0]
    assert any("x.shape[0] as dynamic" in r.getMessage() for r in caplog.records)
    one_row = np.ones((1, 3))
    np.testing.assert_allclose(compiled(one_row), total(one_row))  # 0 and 1 stay static
    assert len(entries(compiled)) == 3


def test_dynamic_false_keeps_sizes_static_and_true_starts_symbolic(jit):
    def double(x):
        return x * 2

    static = jit(double, dynamic=False)
    for size in (4, 5, 6):
        static(np.ones(size))
    assert len(entries(static)) == 3
    pyjit.reset()
    dynamic = jit(double, dynamic=True)
    for size in (4, 5, 6):
        dynamic(np.ones(size))
    assert len(entries(dynamic)) == 1


def test_recompile_limit_warns_and_runs_eagerly(jit):
    compiled = jit(scaled)
    x = np.ones(2)
    with pyjit.config.patch(recompile_limit=2):
        compiled(x, 0)
        compiled(x, 1)
        with pytest.warns(UserWarning, match=r"recompile_limit \(2\).*'k' value mismatch"):
            np.testing.assert_allclose(compiled(x, 7), scaled(x, 7))
        np.testing.assert_allclose(compiled(x, 8), scaled(x, 8))  # warned once
        np.testing.assert_allclose(compiled(x, 1), scaled(x, 1))  # entries keep serving
    assert len(entries(compiled)) == 2


def test_logs_show_graph_guards_and_code(jit, caplog):
    with contextlib.ExitStack() as stack:
        for name in ("graph_code", "guards", "bytecode"):
            stack.enter_context(caplog.at_level(logging.DEBUG, logger=f"pyjit.{name}"))
        jit(scaled)(np.ones(2), 3)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "ops.sin(x)" in text and "k == 3" in text and "CALL" in text


def test_fullgraph_raises_unsupported_at_the_users_line(jit):
    def prints(x):
        y = x + 1
        print(y)  # the breaking line
        return y

    compiled = jit(prints, fullgraph=True)
    for _ in range(2):  # the second call raises from the cache entry
        with pytest.raises(pyjit.exc.Unsupported, match="call to the function print") as info:
            compiled(np.ones(2))
        assert f"{__file__}:{prints.__code__.co_firstlineno + 2}" in str(info.value)
        assert "the breaking line" in str(info.traceback[-1].statement)
    assert counters["graph_break"]["a call to the function print is not captured"] == 1


def test_two_threads_share_a_compiled_function(jit):
    compiled = jit(scaled)
    results, errors = {}, []

    def work(index):
        try:
            x = np.full(4 + index % 2, float(index))
            results[index] = [np.allclose(compiled(x, 2), scaled(x, 2)) for _ in range(50)]
        except Exception as error:  # noqa: BLE001  (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and all(all(ok) for ok in results.values()) and len(results) == 4
    assert 1 <= len(entries(compiled)) <= 2


def test_a_size_the_result_needs_as_an_int_stays_static(jit):
    def with_length(x):
        return x * 2, x.shape[0]

    compiled = jit(with_length)
    for size in (4, 5, 6):
        got = compiled(np.ones(size))
        assert got[1] == size and np.array_equal(got[0], np.full(size, 2.0))
    assert len(entries(compiled)) == 3 and not counters["graph_break"]


def test_graph_breaks_log_the_reason_record(jit, caplog):
    def prints(x):
        print(end="")  # the breaking line
        return x * 2

    with caplog.at_level(logging.DEBUG, logger="pyjit.graph_breaks"):
        jit(prints)(np.ones(2))
    (record,) = [r for r in caplog.records if r.name == "pyjit.graph_breaks"]
    message = record.getMessage()
    assert "call to the function print" in message and "the breaking line" in message and "hint:" in message
    assert "(unsupported)" in message and "(resumed)" in message


def test_a_frame_near_the_recursion_limit_runs_as_it_is(jit, monkeypatch):
    reports = []
    monkeypatch.setattr(sys, "unraisablehook", reports.append)
    compiled = jit(lambda x: x + 1)

    def near_the_limit(x):
        try:
            below = near_the_limit(x)
        except RecursionError:
            return 5  # frames to unwind: the callback itself needs a frame or two
        if type(below) is not int:
            return below
        return compiled(x) if below == 0 else below - 1

    assert near_the_limit(np.ones(2)).tolist() == [2.0, 2.0]
    assert reports == []
    assert compiled(np.ones(2)).tolist() == [2.0, 2.0]
    assert pyjit.cache_entries(compiled)  # not marked SKIP: a normal depth compiles


class Payload:
    """An argument whose death a weakref can watch (arrays cannot be weakly referenced by
    every NumPy, plain objects can)."""


def test_a_graph_break_keeps_no_argument_alive_after_the_call(jit):
    import gc
    import weakref

    def broken(x, payload):
        y = x + 1
        pyjit.graph_break()
        return y * 2

    compiled = jit(broken)
    payload = Payload()
    watch = weakref.ref(payload)
    gc.disable()
    try:
        compiled(np.arange(3.0), payload)
        del payload
        assert watch() is None  # no cycle through the tracer's frame holds it
    finally:
        gc.enable()


class Box:
    def __init__(self, value):
        self.value = value


class OtherBox(Box):
    pass


def unboxed(x, box):
    return x * box.value


@pytest.mark.parametrize("first, second, failure", [
    ((np.ones(3), Box(2.0)), (np.ones(3), OtherBox(2.0)), "'box' type mismatch"),
    ((np.ones(3), Box(2.0)), (np.ones(3), Box(3.0)), "box.value"),
    ((pyjit.tensor(np.ones(3), requires_grad=True), Box(2.0)), (pyjit.tensor(np.ones(3)), Box(2.0)),
     "x._requires_grad"),
], ids=["object-type", "attribute", "requires_grad"])
def test_object_and_tensor_guards_recompile_once(jit, caplog, first, second, failure):
    compiled = jit(unboxed)
    with caplog.at_level(logging.DEBUG, logger="pyjit.recompiles"):
        for args in (first, second, first, second):
            got, want = compiled(*args), unboxed(*args)
            np.testing.assert_array_equal(np.asarray(getattr(got, "numpy", lambda: got)()),
                                          np.asarray(getattr(want, "numpy", lambda: want)()))
    assert len(entries(compiled)) == 2
    (record,) = [r for r in caplog.records if r.name == "pyjit.recompiles"]
    assert failure in record.getMessage(), record.getMessage()


def test_grad_mode_recompiles_once(jit):
    compiled = jit(lambda t: t * 2)
    t = pyjit.tensor(np.ones(3), requires_grad=True)
    for _ in range(2):
        assert compiled(t).requires_grad
        with pyjit.no_grad():
            assert not compiled(t).requires_grad
    assert len(pyjit._C.cache_entries(compiled.__wrapped__.__code__)) == 2


def test_wrappers_with_different_backends_keep_their_own_graphs(jit):
    compiled_by = []

    def recording(name):
        def compiler(graph_module, example_inputs):
            compiled_by.append(name)
            return graph_module
        return compiler

    first, second = jit(scaled, backend=recording("first")), jit(scaled, backend=recording("second"))
    x = np.ones(3)
    for _ in range(2):
        np.testing.assert_array_equal(first(x, 2), scaled(x, 2))
        np.testing.assert_array_equal(second(x, 2), scaled(x, 2))
    assert compiled_by == ["first", "second"]
    guards = [guard for guard, _ in entries(first)]
    assert len(guards) == 2 and "the backend is compiler" in guards[0]


def test_a_backend_that_raises_gives_backend_compiler_failed_at_the_users_line(jit, monkeypatch):
    reports = []
    monkeypatch.setattr(sys, "unraisablehook", reports.append)

    def broken_backend(graph_module, example_inputs):
        raise ValueError("no kernels today")

    def shifted(x):
        y = x + 1  # the first op
        return y * 2

    compiled = jit(shifted, backend=broken_backend)
    for _ in range(2):  # the entry keeps raising for inputs its guards accept
        with pytest.raises(pyjit.exc.BackendCompilerFailed, match="no kernels today") as info:
            compiled(np.ones(2))
        assert isinstance(info.value.__cause__, ValueError)
        assert f"{__file__}:{shifted.__code__.co_firstlineno + 1}" in str(info.value)
        assert "the first op" in str(info.traceback[-1].statement)
    assert not reports and len(entries(compiled)) == 1


def test_assume_static_by_default_false_starts_symbolic(jit):
    def double(x):
        return x * 2

    for assume_static, graphs in ((True, 2), (False, 1)):
        pyjit.reset()
        counters.clear()
        with pyjit.config.patch(assume_static_by_default=assume_static):
            compiled = jit(double)
            for size in (4, 5, 6):
                np.testing.assert_array_equal(compiled(np.ones(size)), np.full(size, 2.0))
        # static first: 4, then symbolic from 5 on; not static: symbolic from the first call
        assert counters["stats"]["unique_graphs"] == graphs and len(entries(compiled)) == graphs


def test_assume_static_by_default_false_keeps_sizes_the_code_needs_static(jit):
    def sized(x):
        return np.ones(x.shape[0] + 1) * x.sum()  # a size the graph needs as a number

    with pyjit.config.patch(assume_static_by_default=False):
        compiled = jit(sized)
        for size in (4, 5):
            np.testing.assert_allclose(compiled(np.ones(size)), sized(np.ones(size)))


def test_verbose_puts_pyjits_traceback_in_its_errors(jit):
    def prints(x):
        print(x)
        return x + 1

    def broken_backend(graph_module, example_inputs):
        raise ValueError("no kernels today")

    for verbose in (False, True):
        pyjit.reset()
        with pyjit.config.patch(verbose=verbose), contextlib.redirect_stdout(None):
            with pytest.raises(pyjit.exc.Unsupported) as unsupported:
                jit(prints, fullgraph=True)(np.ones(2))
            with pytest.raises(pyjit.exc.BackendCompilerFailed) as failed:
                jit(lambda x: x + 1, backend=broken_backend)(np.ones(2))
        internal = "pyjit's internal traceback (pyjit.config.verbose)"
        assert (internal in str(unsupported.value)) is verbose
        assert ("pyjit/frontend/calls.py" in str(unsupported.value)) is verbose  # where the interpreter stopped
        assert (internal in str(failed.value)) is verbose
        assert ('raise ValueError("no kernels today")' in str(failed.value)) is verbose
        assert ("set pyjit.config.verbose = True" in str(failed.value)) is not verbose


def _failing(monkeypatch, name):
    """Make pyjit.frontend.convert's `name` raise as a bug in pyjit would; how often it ran."""
    import pyjit.frontend.convert as convert

    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise AttributeError("an internal error")

    monkeypatch.setattr(convert, name, broken)
    return calls


def test_a_compile_that_fails_inside_pyjit_warns_once_and_is_not_retried(jit, monkeypatch):
    """NOTE(internal-failures): one warning, then the original code for these inputs,
    from a cache entry: the failing build is not run again on the next call."""
    calls = _failing(monkeypatch, "build")
    compiled = jit(scaled)
    x = np.ones(3)
    with pytest.warns(UserWarning, match=r"compiling scaled .* failed inside pyjit: AttributeError: an internal"):
        np.testing.assert_allclose(compiled(x, 2), scaled(x, 2))
    for k in (2, 2, 2):  # no warning, no retrace: pytest makes either an error
        np.testing.assert_allclose(compiled(x, k), scaled(x, k))
    assert len(calls) == 1
    assert len(entries(compiled)) == 1
    compiled(x, 3)  # other inputs are traced again, and fail again quietly
    assert len(calls) == 2 and counters["stats"]["compile_failures"] == 2


def test_a_failure_before_any_guard_skips_the_code(jit, monkeypatch):
    calls = _failing(monkeypatch, "Tracer")
    compiled = jit(scaled)
    x = np.ones(3)
    with pytest.warns(UserWarning, match="failed inside pyjit"):
        compiled(x, 2)
    for k in (2, 3, 4):
        np.testing.assert_allclose(compiled(x, k), scaled(x, k))
    assert len(calls) == 1 and not entries(compiled)
