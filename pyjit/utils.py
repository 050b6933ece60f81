"""Process-wide statistics pyjit keeps as it works, and running pyjit's own work unseen
by the frame hook.

`counters[group][name]` counts events, e.g. counters["stats"]["unique_graphs"] or
counters["inductor"]["compiles"] (C compiler runs). Every group is a Counter, created
on first use; tests and users read them, and may clear them (`counters.clear()`).
"""

import collections
import contextlib

from . import _C

counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


@contextlib.contextmanager
def capture_disabled():
    """NOTE(compile-without-capture): a compile that happens while compiled code runs (a
    graph variant made on first use: a new requires_grad pattern, a no-grad variant)
    runs inside the user's captured frame, where the hook is on; pyjit's own frames are
    skipped, but the library code they call (dataclasses' generated __init__, the
    standard library) would be captured and broken apart. The compile runs with this
    thread's callback removed, as the callback itself does."""
    previous = _C.set_eval_frame(None)
    try:
        yield
    finally:
        _C.set_eval_frame(previous)
