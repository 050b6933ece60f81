"""The per-code cache in co_extra (csrc/code_cache.cpp): entries and their order,
recompiles, SKIP marks, reset, and how long cached objects live."""

import gc
import types
import weakref

import numpy as np
import pytest

from pyjit import _C


def tagged(x):
    return x, "orig"


class PerType:
    """A backend compiling one entry per argument type; each returns its type's name."""

    def __init__(self, fn, replace):
        self.code = fn.__code__
        self.replace = replace
        self.calls = 0
        self.compiled = {}  # type -> (guard, code) handed to the hook

    def __call__(self, frame):
        if frame.f_code is not self.code:
            return None
        self.calls += 1
        kind = type(frame.args[0])
        guard = _C.GuardProgram([("local", 0, "x")], [("type", 0, kind)])
        self.compiled[kind] = (guard, self.replace(self.code, "orig", kind.__name__))
        return self.compiled[kind]


def test_cache_starts_empty_and_holds_the_entry(const_swap, hooked):
    assert _C.cache_entries(tagged.__code__) == []
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        tagged(1)
    ((guard, code),) = _C.cache_entries(tagged.__code__)
    assert isinstance(guard, _C.GuardProgram)
    assert code is backend.transformed
    assert "int" in str(guard)


def test_recompile_keeps_every_entry_serving(hooked, replaced_const):
    backend = PerType(tagged, replaced_const)
    with hooked(backend):
        assert tagged(1) == (1, "int")
        assert tagged("a") == ("a", "str")
        assert tagged(2.5) == (2.5, "float")
        assert backend.calls == 3
        assert tagged(3) == (3, "int")
        assert tagged("b") == ("b", "str")
        assert tagged(0.5) == (0.5, "float")
    assert backend.calls == 3
    assert len(_C.cache_entries(tagged.__code__)) == 3


def entry_codes(code):
    return [entry_code for _, entry_code in _C.cache_entries(code)]


def test_entries_are_listed_most_recently_hit_first(hooked, replaced_const):
    backend = PerType(tagged, replaced_const)
    code_for = lambda kind: backend.compiled[kind][1]  # noqa: E731
    with hooked(backend):
        tagged(1)
        tagged("a")
        assert entry_codes(tagged.__code__) == [code_for(str), code_for(int)]
        tagged(2)
        assert entry_codes(tagged.__code__) == [code_for(int), code_for(str)]
        tagged(2.5)
        tagged("b")
        assert entry_codes(tagged.__code__) == [code_for(str), code_for(float), code_for(int)]
    guards = [str(guard) for guard, _ in _C.cache_entries(tagged.__code__)]
    assert guards == [str(backend.compiled[kind][0]) for kind in (str, float, int)]


def test_reset_drops_entries_and_asks_again(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        tagged(1)
        _C.reset()
        assert _C.cache_entries(tagged.__code__) == []
        assert tagged(1) == (1, "jit")
    assert backend.calls == 2


def test_mark_skip_until_reset(hooked):
    asked = []
    with hooked(lambda frame: asked.append(frame.f_code)):
        assert not _C.is_skipped(tagged.__code__)
        _C.mark_skip(tagged.__code__)
        assert _C.is_skipped(tagged.__code__)
        tagged(1)
        assert tagged.__code__ not in asked
        _C.reset()
        assert not _C.is_skipped(tagged.__code__)
        tagged(1)
        assert tagged.__code__ in asked


def test_skip_mark_wins_over_cache_entries(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    with hooked(backend):
        assert tagged(1) == (1, "jit")
        _C.mark_skip(tagged.__code__)
        assert tagged(1) == (1, "orig")


@pytest.mark.parametrize("function", [_C.cache_entries, _C.mark_skip, _C.is_skipped])
def test_code_functions_reject_non_code(function):
    with pytest.raises(TypeError):
        function(tagged)


class Token:
    """Weak-referenceable stand-in for a guarded module or parameter."""


def guard_on_identity(frame):
    # Built from the frame, so nothing in the test closes over the guarded object.
    return _C.GuardProgram([("local", 0, "x")], [("id", 0, frame.args[0])])


def test_reset_releases_guarded_objects(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit", guard=guard_on_identity)
    token = Token()
    alive = weakref.ref(token)
    with hooked(backend):
        assert tagged(token)[1] == "jit"
    del token
    gc.collect()
    assert alive() is not None, "the id guard must keep its object until reset"
    _C.reset()
    gc.collect()
    assert alive() is None


def test_entries_die_with_their_code_object(hooked, replaced_const):
    namespace = {}
    exec(compile("def short_lived(x):\n    return x, 'orig'\n", "<pyjit-test-short-lived>", "exec"), namespace)
    short_lived = namespace.pop("short_lived")
    transformed = replaced_const(short_lived.__code__, "orig", "jit")

    def callback(frame):
        if frame.f_code is short_lived.__code__:
            return guard_on_identity(frame), transformed

    token = Token()
    alive = {"token": weakref.ref(token), "code": weakref.ref(short_lived.__code__),
             "transformed": weakref.ref(transformed)}
    with hooked(callback):
        assert short_lived(token)[1] == "jit"
    del token, callback, transformed, short_lived
    gc.collect()
    assert {name: ref() is None for name, ref in alive.items()} == dict.fromkeys(alive, True)


def test_reset_survives_a_cache_freed_by_another(hooked, replaced_const):
    # `tagged`'s entry is all that keeps `victim` alive, and `victim`'s code has a cache
    # of its own: releasing the first cache frees the second in the middle of reset().
    victim = types.FunctionType(tagged.__code__.replace(), {})
    victim_transformed = replaced_const(victim.__code__, "orig", "jit")
    tagged_transformed = replaced_const(tagged.__code__, "orig", "jit")

    def callback(frame):
        if frame.f_code is victim.__code__:
            return _C.GuardProgram([], []), victim_transformed
        if frame.f_code is tagged.__code__:
            return guard_on_identity(frame), tagged_transformed

    with hooked(callback):
        assert victim(1) == (1, "jit")
        assert tagged(victim)[1] == "jit"
    alive = weakref.ref(victim.__code__)
    del victim, victim_transformed, callback
    gc.collect()
    assert alive() is not None
    _C.reset()
    assert alive() is None
    assert _C.cache_entries(tagged.__code__) == []


def test_mark_skip_while_entries_are_dropped_runs_no_freed_cache(hooked, replaced_const):
    # Dropping an entry may run Python code (a guarded object's __del__) that calls the
    # very function being marked: it must see the SKIP mark, not the dying cache.
    calls_during_drop = []

    class CallsTaggedWhenFreed:
        def __del__(self):
            calls_during_drop.append(tagged(0))

    transformed = replaced_const(tagged.__code__, "orig", "jit")

    def callback(frame):
        if frame.f_code is tagged.__code__:
            return guard_on_identity(frame), transformed

    with hooked(callback):
        tagged(CallsTaggedWhenFreed())
        _C.mark_skip(tagged.__code__)
    assert calls_during_drop == [(0, "orig")]
    assert _C.cache_entries(tagged.__code__) == []


# --- the hook's lookup ---------------------------------------------------------------


def first_size(x):
    return x.shape[0], "orig"


def symbolic_size(frame):
    spec = {"type": np.ndarray, "dtype": "float64", "shape": ("s0",)}
    return _C.GuardProgram([("local", 0, "x")], [("array", 0, spec)])


def test_lookup_evaluates_an_array_guard(const_swap, hooked):
    backend = const_swap(first_size, "orig", "jit", guard=symbolic_size)
    with hooked(backend):
        assert first_size(np.zeros(3)) == (3, "jit")
        assert first_size(np.zeros(70)) == (70, "jit")
        assert backend.calls == 1
        assert first_size(np.zeros(1)) == (1, "jit")  # size 1 is not symbolic: a miss
        assert backend.calls == 2
        assert first_size(np.zeros(2, np.float32)) == (2, "jit")
        assert backend.calls == 3


SCALE = 2


def reads_scale(x):
    return x * SCALE, "orig"


def test_lookup_evaluates_a_global_guard(const_swap, hooked, monkeypatch):
    def on_scale(frame):
        return _C.GuardProgram([("global", "SCALE")], [("eq", 0, frame.f_globals.get("SCALE"))])

    backend = const_swap(reads_scale, "orig", "jit", guard=on_scale)
    with hooked(backend):
        assert reads_scale(1) == (2, "jit")
        assert reads_scale(2) == (4, "jit")
        monkeypatch.setitem(reads_scale.__globals__, "SCALE", 10)
        assert reads_scale(1) == (10, "jit")
        monkeypatch.delitem(reads_scale.__globals__, "SCALE")
        with pytest.raises(NameError):
            reads_scale(1)  # unreadable global: a miss, then the code itself fails
    assert backend.calls == 3


class PerShape:
    """A backend compiling one entry per static shape: entries share their dispatch
    signature (type, dtype, ndim) and differ only in what their full guards check."""

    def __init__(self, fn, replace):
        self.code = fn.__code__
        self.transformed = replace(self.code, "orig", "jit")
        self.calls = 0

    def __call__(self, frame):
        if frame.f_code is not self.code:
            return None
        self.calls += 1
        spec = {"type": np.ndarray, "dtype": "float64", "shape": frame.args[0].shape}
        return _C.GuardProgram([("local", 0, "x")], [("array", 0, spec)]), self.transformed


def test_entries_with_the_same_signature_are_told_apart_by_their_guards(hooked, replaced_const):
    backend = PerShape(first_size, replaced_const)
    with hooked(backend):
        for size in (4, 5, 6):
            assert first_size(np.zeros(size)) == (size, "jit")
        for size in (4, 6, 5, 4):
            assert first_size(np.zeros(size)) == (size, "jit")
    assert backend.calls == 3


def test_entries_without_a_shared_signature_slot_still_dispatch(hooked, replaced_const):
    # One entry checks its argument only through a python check, the other by type: no
    # argument slot has a signature check in every entry, so each full guard decides.
    transformed = replaced_const(reads_scale.__code__, "orig", "jit")
    asked = []

    def callback(frame):
        if frame.f_code is not reads_scale.__code__:
            return None
        asked.append(type(frame.args[0]))
        if type(frame.args[0]) is int:
            return _C.GuardProgram([("local", 0, "x")], [("type", 0, int)]), transformed
        is_float = ("python", 0, lambda value: type(value) is float, "is_float")
        return _C.GuardProgram([("local", 0, "x")], [is_float]), transformed

    with hooked(callback):
        assert reads_scale(1.5) == (3.0, "jit")
        assert reads_scale(3) == (6, "jit")
        assert reads_scale(2.5) == (5.0, "jit")
        assert reads_scale(4) == (8, "jit")
    assert asked == [float, int]
