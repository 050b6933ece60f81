"""The disk cache every target keeps its compiled code and choices in, under
`config.cache_dir`: C libraries (NOTE(kernel-cache) in cpu/build.py), cubins
(NOTE(cuda-cache) in cuda/build.py) and autotuning records (NOTE(autotune-records)).
The remote cache beside it is pyjit/codegen/remote.py.

NOTE(cache-directory): a cache directory is created with mode 0700 (missing parents
too). If it exists but is not the user's, or group/other may write it, a warning says
so and this process uses a private temporary directory instead (removed at exit).
Whether it can be written is tried for real, by creating a file: a cache on a read-only
mount (a container image, a shared volume) passes the owner and mode checks and fails
there. Such a directory is still read (its files load, after the same checks), and the
files this process writes go to the private directory, with one warning.
A file is read only if it is a regular file (not a symlink) owned by the user and
writable by no one else (`read_trusted`); a compiled binary also needs a sidecar
`<file>.sha256` (same checks; `sha256sum -c` reads it) whose hash matches
(`read_checked`). Files are written to a temporary name in the same directory and
renamed into place (os.replace: readers never see half a file).

NOTE(autotune-records): a choice among a fixed set (a CUDA block size, NOTE(cuda-
autotune); a C kernel's variant, NOTE(cpu-autotune)) is looked up, in order, in the
disk cache (`<directory>/<key>.json`, read and written under the rules above) and the
remote cache (`pyjit:<key id>:autotune:<key>`, signed as kernels are:
NOTE(remote-cache)); only then is each choice timed and the fastest kept, stored in both
(one fetched from the server is written to disk). A record that is not one of the
choices (corrupt, foreign, from another version) is timed again and overwritten.
counters["inductor"]["autotuned"] counts the choices timed here.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import warnings
from typing import NamedTuple

from ..utils import counters
from . import remote

__all__ = ["Directories", "directories", "read_checked", "read_trusted", "record_key", "remove", "reset",
           "stored_choice", "write_atomic", "write_checked", "write_directory", "write_sidecar"]

_AUTOTUNE_LAYOUT_VERSION = "pyjit-autotune-1"


class Directories(NamedTuple):
    """Where this process writes one kind of cache file, and where it looks for them."""
    write: str
    read: tuple[str, ...]  # a cache directory it cannot write, then `write`


_directories: dict[str, Directories] = {}  # cache directory -> where it is written and read
_fallback_directory: str | None = None


def directories(path: str) -> Directories:
    """Where the files meant for the cache directory `path` are written and read
    (NOTE(cache-directory)); checked once per process."""
    path = os.path.abspath(path)
    if path not in _directories:
        _directories[path] = _checked_directories(path)
    return _directories[path]


def write_directory(path: str) -> str:
    """The directory this process writes the cache files meant for `path` to."""
    return directories(path).write


def reset() -> None:
    """Forget the directories this process checked (the files stay)."""
    _directories.clear()


def _checked_directories(path: str) -> Directories:
    readable = False
    try:
        _make_directories(path)
        info = os.stat(path)
    except OSError as error:
        problem = f"cannot be created ({error.strerror})"
    else:
        if not stat.S_ISDIR(info.st_mode):
            problem = "is not a directory"
        elif info.st_uid != os.geteuid():
            problem = "belongs to another user"
        elif info.st_mode & 0o022:
            problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
        else:
            problem = _unwritable(path)
            if problem is None:
                return Directories(path, (path,))
            readable = True
    fallback = _process_directory()
    kept = f" (those already in {path} still load)" if readable else ""
    warnings.warn(f"pyjit: the kernel cache directory {path} {problem}; kernels compiled by "
                  f"this process go to {fallback} and are not kept{kept}", stacklevel=4)
    return Directories(fallback, (path, fallback) if readable else (fallback,))


def _unwritable(path: str) -> str | None:
    """Why no file can be created in `path` (tried: a read-only mount passes every
    check of owner and mode), or None."""
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-test-")
    except OSError as error:
        return f"cannot be written ({error.strerror})"
    os.close(fd)
    os.unlink(probe)
    return None


def _make_directories(path: str) -> None:
    # os.makedirs gives missing parents the umask's mode, not 0700.
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass


def _process_directory() -> str:
    global _fallback_directory
    if _fallback_directory is None:
        _fallback_directory = tempfile.mkdtemp(prefix="pyjit-kernels-")
        atexit.register(shutil.rmtree, _fallback_directory, ignore_errors=True)
    return _fallback_directory


# ---- files ------------------------------------------------------------------------

def read_trusted(path: str) -> bytes | None:
    """The contents of `path` if it is a regular file of the user's that no one else may
    write (a symlink is refused); None otherwise, or if it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        return file.read()


def read_checked(path: str) -> bytes | None:
    """The trusted contents of `path` when its trusted sidecar `<path>.sha256` holds
    their hash; None otherwise (NOTE(cache-directory))."""
    binary = read_trusted(path)
    record = read_trusted(f"{path}.sha256")
    if binary is None or record is None or record.split()[:1] != [hashlib.sha256(binary).hexdigest().encode()]:
        return None
    return binary


def write_atomic(path: str, data: bytes, mode: int | None = None) -> None:
    directory, name = os.path.split(path)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if mode is not None:
                os.fchmod(file.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        remove(temporary)
        raise


def write_checked(path: str, binary: bytes, mode: int | None = None) -> None:
    """`binary` at `path`, then its sidecar (what `read_checked` accepts)."""
    write_atomic(path, binary, mode)
    write_sidecar(path, hashlib.sha256(binary).hexdigest())


def write_sidecar(path: str, digest: str) -> None:
    """The `<path>.sha256` of a file whose sha256 is `digest`."""
    write_atomic(f"{path}.sha256", f"{digest}  {os.path.basename(path)}\n".encode())


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# ---- autotuning records -----------------------------------------------------------

def record_key(*identity) -> str:
    """The key of a choice: a hash of what it depends on (JSON-serialisable parts)."""
    return hashlib.sha256(json.dumps([_AUTOTUNE_LAYOUT_VERSION, *identity]).encode()).hexdigest()


def stored_choice(directory: str, key: str, field: str, choices: tuple, time_choice):
    """The choice kept for `key` (NOTE(autotune-records)), else the one of `choices`
    with the smallest `time_choice(choice)`, stored as `{field: choice}`."""
    directory = write_directory(directory)
    path = os.path.join(directory, f"{key}.json")
    choice = _stored(read_trusted(path), field, choices)
    if choice is not None:
        return choice
    choice = _stored(remote.fetch(key, "autotune"), field, choices)
    if choice is None:
        timings = {candidate: time_choice(candidate) for candidate in choices}
        choice = min(timings, key=timings.get)
        counters["inductor"]["autotuned"] += 1
        remote.store(key, _record(field, choice), "autotune")
    write_atomic(path, _record(field, choice))
    return choice


def _record(field: str, choice) -> bytes:
    return json.dumps({field: choice}).encode()


def _stored(record: bytes | None, field: str, choices: tuple):
    try:
        choice = json.loads(record)[field] if record is not None else None
    except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return choice if type(choice) in (int, str) and choice in choices else None
