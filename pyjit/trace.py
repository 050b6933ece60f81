"""Structured compile events, as JSON lines, for `python -m pyjit.report`.

NOTE(trace): when `config.trace_dir` is set (PYJIT_TRACE_DIR, read when pyjit is
imported), each process appends its compile events to `<trace_dir>/pyjit-<pid>.jsonl`,
one JSON object per line, as torch's TORCH_TRACE does for tlparse. Every event has
`event` (its kind), `time` (seconds since the epoch), `pid`, and `compile_id` ("F/N":
the N-th compile of the F-th code object this process compiled, as torch's "[F/N]")
when it happens while a frame compiles; `frame(...)` sets that id for the events the
frontend, codegen and backends emit meanwhile, so a kernel built for a graph is filed
under the frame that asked for it. Kinds and their fields: docs/report.md.

Writing never fails a compile: a directory that cannot be written, or a symlink, FIFO
or anything but a regular file at the process's file name, warns once and tracing to
it stops for this process (the file is opened with O_NOFOLLOW | O_NONBLOCK: nothing is
written through a link or waited on). Each event is one write() to a file opened for
appending, so lines of two threads never interleave.
With no trace_dir, `emit` returns at once and nothing is built.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import threading
import time
import warnings
import weakref

from . import config

__all__ = ["emit", "enabled", "frame", "stage"]

_state = threading.local()  # .compile_id: the frame being compiled on this thread
_lock = threading.Lock()
_frame_numbers = itertools.count()
_compile_ids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code -> [F, compiles so far]
_broken: set[str] = set()  # directories that could not be written


def enabled() -> bool:
    return bool(config.trace_dir)


def emit(event: str, **fields) -> None:
    """Write one event (NOTE(trace)); values that JSON cannot hold are written as str()."""
    directory = config.trace_dir
    if not directory or directory in _broken:
        return
    record = {"event": event, "time": time.time(), "pid": os.getpid()}
    compile_id = getattr(_state, "compile_id", None)
    if compile_id is not None:
        record["compile_id"] = compile_id
    record.update(fields)
    _append(directory, json.dumps(record, default=str) + "\n")


@contextlib.contextmanager
def frame(code):
    """Events emitted inside belong to a new compile of `code` (its compile_id)."""
    if not enabled():
        yield None
        return
    with _lock:
        counts = _compile_ids.get(code)
        if counts is None:
            counts = _compile_ids[code] = [next(_frame_numbers), 0]
        number, attempt = counts
        counts[1] += 1
    saved = getattr(_state, "compile_id", None)
    _state.compile_id = f"{number}/{attempt}"
    try:
        yield _state.compile_id
    finally:
        _state.compile_id = saved


@contextlib.contextmanager
def stage(name: str, **fields):
    """Time the block and emit a `stage` event with its seconds (also when it raises)."""
    if not enabled():
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        emit("stage", stage=name, seconds=time.perf_counter() - started, **fields)


def _append(directory: str, line: str) -> None:
    # Opened per event: compiles emit tens of events in milliseconds of work, and no file
    # is left open (nor shared with a forked child).
    # A link or a FIFO planted at our name is refused, not written through or waited on.
    path = os.path.join(directory, f"pyjit-{os.getpid()}.jsonl")
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path} is not a regular file")
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as error:
        with _lock:
            if directory in _broken:
                return
            _broken.add(directory)
        warnings.warn(f"pyjit: cannot write compile events to {path} ({_why(path, error)}); "
                      f"tracing is off for this process", stacklevel=4)


def _why(path: str, error: OSError) -> str:
    """What stopped the write, in words (open's ELOOP or ENXIO say it poorly)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return error.strerror or str(error)
    if stat.S_ISLNK(mode):
        return "it is a symbolic link"
    return error.strerror if stat.S_ISREG(mode) else "it is not a regular file"
