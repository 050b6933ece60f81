"""Fixtures shared by pyjit's tests.

NOTE(hooked-tests): a callback installed with `_C.set_eval_frame` is handed every Python
function frame its thread starts, pytest's own included. So tests install a callback
only around the calls they make (`with hooked(callback): ...`), every test callback
ignores the frames it does not target (returning None runs them as they are), and the
`hooked` fixture resets the caches before and after the test and puts back the callback
that was installed before it, even when the test fails half-way.

`pyjit._C` is imported inside the fixtures, not at the top of this file, so tests that
need no native core (tests/test_layers.py) run before the extension is built.
"""

import contextlib
import sys
import types
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir():
    """Kernels the tests compile go to <repo>/build/test-kernel-cache (build/ is ignored
    by git), shared by every Python version and every run, so only the first run pays
    the C compiler; the user's own cache is left alone."""
    try:
        from pyjit import config
    except ImportError:  # no native core built (tests/test_layers.py runs without one)
        yield None
        return
    previous = config.cache_dir
    config.cache_dir = str(Path(__file__).resolve().parents[1] / "build" / "test-kernel-cache")
    try:
        yield config.cache_dir
    finally:
        config.cache_dir = previous


@pytest.fixture(scope="module")
def one_torch_thread():
    """For tests comparing with torch (optional, never a dependency): its thread pool
    fights the other processes on a small machine (20x slower here on 2 shared cores),
    and those runs are tiny."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def replace_const(code: types.CodeType, old: object, new: object) -> types.CodeType:
    """`code` with its one constant equal to `old` (same type) replaced by `new`.

    The result keeps the signature, free variables, file name and line table, which is
    what the frame hook requires of a transformed code object; a test can tell which
    of the two ran from the constant it returns.
    """
    consts = code.co_consts
    hits = [i for i, const in enumerate(consts) if type(const) is type(old) and const == old]
    if len(hits) != 1:
        raise AssertionError(f"{code.co_name} has {len(hits)} constants equal to {old!r}")
    (index,) = hits
    return code.replace(co_consts=consts[:index] + (new,) + consts[index + 1 :])


def type_guard(frame, slot: int = 0):
    """A guard holding while argument `slot` has the type it has in `frame`."""
    from pyjit import _C

    name = frame.f_code.co_varnames[slot]
    return _C.GuardProgram([("local", slot, name)], [("type", 0, type(frame.args[slot]))])


class ConstSwap:
    """A test backend: frames of `fn` get `fn`'s code with constant `old` replaced by
    `new`, guarded by `guard(frame)` (default: the first argument's type).

    `calls` counts how often the hook asked about `fn`; every other frame is left alone.
    It keeps no argument alive, so reference-count and lifetime tests can use it.
    """

    def __init__(self, fn, old, new, guard=type_guard):
        self.code = fn.__code__
        self.transformed = replace_const(self.code, old, new)
        self.guard = guard
        self.calls = 0

    def __call__(self, frame):
        if frame.f_code is not self.code:
            return None
        self.calls += 1
        return self.guard(frame), self.transformed


@pytest.fixture
def hooked():
    """`with hooked(callback): ...` installs `callback` for the block (see NOTE(hooked-tests))."""
    from pyjit import _C

    outer = _C.get_eval_frame()
    _C.reset()

    @contextlib.contextmanager
    def install(callback):
        previous = _C.set_eval_frame(callback)
        try:
            yield callback
        finally:
            _C.set_eval_frame(previous)

    try:
        yield install
    finally:
        _C.set_eval_frame(outer)
        _C.reset()


@pytest.fixture
def const_swap(hooked):
    """The ConstSwap backend, with the caches reset around the test."""
    return ConstSwap


@pytest.fixture
def replaced_const():
    """`replace_const` for tests (conftest modules cannot be imported in importlib mode)."""
    return replace_const


@pytest.fixture
def frame_of(hooked):
    """frame_of(fn, *args, **kwargs) -> the FrameInfo the hook hands over for that call."""

    def capture(fn, *args, **kwargs):
        frames = []

        def record(frame):
            if frame.f_code is fn.__code__:
                frames.append(frame)

        with hooked(record):
            fn(*args, **kwargs)
        assert len(frames) == 1, f"the hook handed over {len(frames)} frames of {fn.__name__}"
        return frames[0]

    return capture


@pytest.fixture
def unraisable(monkeypatch):
    """The (exception type, message) of each error reported through sys.unraisablehook.

    It replaces pytest's own hook, which would turn the report into a failing warning;
    only the type and text are kept so no traceback keeps frames alive.
    """
    reports = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: reports.append((report.exc_type, str(report.exc_value))))
    return reports
