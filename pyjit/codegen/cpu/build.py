"""C source to a loaded kernel library: the system C compiler, and the on-disk cache.

NOTE(kernel-cache): `load(source)` returns a `_C.KernelLibrary` for generated C source.
A library is looked up, in order, in

1. this process's table of loaded libraries (a dict: no file is touched);
2. the disk cache, `<config.cache_dir>/kernels/<key>.so`, where
   key = sha256 of (layout version, source, its flags (NOTE(long-kernels)), compiler
   path, compiler --version text, CPU identity). The CPU is part of it because
   -march=native code (the default of config.kernel_march) may not run on another CPU
   sharing the same home directory.
   A file is loaded only if the cache trusts it and its sidecar `<key>.so.sha256`
   (NOTE(cache-directory)) and dlopen accepts it. Anything else is rebuilt, never
   loaded;
3. the remote cache, when `config.remote_cache` names one (NOTE(remote-cache) in
   pyjit/codegen/remote.py): a signed library found there is written to the disk cache
   as step 4 writes one, then loaded;
4. the compiler: `<key>.c` is saved, compiled to a temporary name in the same
   directory and renamed over `<key>.so` (os.replace: readers never see half a
   file), then the sidecar is written the same way, and the library is stored in
   the remote cache if there is one. With a remote cache, the compile happens under
   the kernel's build lease (NOTE(build-lease)): processes missing it at the same
   moment wait for one to compile it, then load it from the remote cache.

The directory, and how its files are read and written, follow the cache's rules
(NOTE(cache-directory) in pyjit/codegen/cache.py).

Warm start: the key needs the compiler's --version text and the working flags, and
finding them costs a subprocess and a trial compile per flag set. They are stored in
`toolchain-<id>.json` in each kernel directory used, where <id> hashes the compiler command,
the binary's real path, inode, size and mtime, and the CPU identity; a process that
finds it (and the kernel) runs no subprocess at all. Upgrading the compiler changes
the binary's identity, hence a new probe and new keys.

NOTE(parallel-builds): `start(source)` compiles a library on a background thread (at
most one compiler run per CPU at once, two on one CPU) while the caller goes on, and a
later `load(source)` waits for it. On a cold cache a first call ran, one after another,
the toolchain probe, the OpenMP team's library (pyjit/codegen/cpu/threads.py) and the
graph's kernels, 0.05-0.5 s each on this 2-core machine. Now the CPU target starts the
kernels' unit (the probe first, on that thread) before it loads the team's library, so
the team's library compiles beside the kernels. (Starting the team's library before a
graph is scheduled overlapped the probe with scheduling too, but a graph that then had
no kernels, a loop body that does not lower, paid for a build it never used: its first
call took 0.1-0.3 s longer.) Only files are made in the background: a library is
opened by the thread that loads it (the team's library must be opened first,
NOTE(stacked-team)), and a build's error is raised there. `start` reads $CC, $PATH and
the config on the calling thread. Two threads loading one source wait for one build;
different sources compile at the same time (no lock is held while the compiler runs).
With a remote cache, `start` does nothing: the build lease is taken by `load`.

Counters: counters["inductor"]["compiles"] (compiler runs, counted when their library
is loaded, or fails to), ["disk_hits"] (libraries loaded from disk),
["compiler_probes"] (toolchain probes: --version plus trial compiles), and the remote
cache's (NOTE(remote-cache)). With `config.trace_dir` set, each library this process
loads is a `kernel` event (NOTE(trace)): its key, source, origin ("disk", "remote" or
"compiled") and the seconds it took (a background build's included).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from typing import NamedTuple

import numpy as np

from pyjit import _C, config, trace
from pyjit.utils import counters

from .. import cache, remote
from ..target import BuildError, CompilerUnavailable

__all__ = ["flags", "kernel_directories", "load", "reset", "start"]

# -ffast-math would change NaN/Inf and rounding; -ffp-contract=off keeps a*b+c rounded
# twice, as NumPy computes it. -fno-trapping-math changes no value (it lets GCC compute
# both sides of a select, so a loop with `np.where` vectorizes; only the floating-point
# exception flags can differ, and kernels raise no NumPy warnings anyway). Kernels use
# OpenMP pragmas freely: without -fopenmp the `parallel` ones are ignored,
# -fopenmp-simd keeps the `simd` ones.
PREFERRED_FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-fno-builtin",
                   "-ffp-contract=off", "-fPIC", "-shared", "-std=gnu11")
LIBRARIES = ("-lm",)
# NOTE(long-kernels): GCC's points-to analysis ("tree PTA") tracks every SSA value, floats
# included, and its time grows with the square of a function's length: on a straight-line
# loop body of N temporaries (a fused chain of N ops) it was 9% of GCC's run at 1000
# statements, 30% at 2000 and 57-61% at 10000 (-ftime-report, GCC 12), where the 10000-op
# kernel took 3.9 s, 1.0 s without it. PTA is how GCC uses `restrict`; the kernels need it
# little, since the renderer marks the innermost loop of every nest `omp simd`, which
# vectorizes without alias analysis. With -fno-tree-pta GCC 12 built the same machine code
# for a 2000-op chain, and for 24 of the 26 kernel libraries of benchmarks/workloads.py
# (the other two: register choices and instruction order only). So a source with a
# function of LONG_BODY_STATEMENTS statements or more (1000: where PTA starts to count,
# far above the workloads' longest function, 80) is compiled with LONG_BODY_FLAGS too,
# when the compiler takes them without a word (the toolchain probe checks: Clang 14
# rejects -fno-tree-pta, and is never given it). The flags are part of the kernel's key.
LONG_BODY_STATEMENTS = 1000
LONG_BODY_FLAGS = ("-fno-tree-pta",)
_LAYOUT_VERSION = "pyjit-kernels-1"
_COMPILER_NAMES = ("cc", "gcc")  # tried after $CC
_PROBE_SOURCE = """\
#include <math.h>
#include <stdint.h>
void pyjit_probe(char *const *buffers, const int64_t *sizes) {
  double *out = (double *)buffers[0];
#pragma omp parallel for simd
  for (int64_t i = 0; i < sizes[0]; ++i) out[i] = exp((double)i);
}
"""


class _Setting(NamedTuple):
    """What chooses the toolchain: $CC, $PATH and config.kernel_march, read by the
    thread that asks for a library (a background build uses its caller's)."""
    cc: str | None
    path: str | None
    march: str


def _setting() -> _Setting:
    return _Setting(os.environ.get("CC"), os.environ.get("PATH"), config.kernel_march)


class _Toolchain(NamedTuple):
    command: tuple[str, ...]  # the resolved compiler, then any arguments $CC carries
    version: str
    flags: tuple[str, ...]
    long_body_flags: tuple[str, ...]  # those of LONG_BODY_FLAGS the compiler takes
    cpu: str
    record_name: str  # its toolchain-<id>.json in a kernel directory

    def record(self) -> dict:
        return {"command": list(self.command), "version": self.version, "flags": list(self.flags),
                "long_body_flags": list(self.long_body_flags)}

    def flags_for(self, source: str) -> tuple[str, ...]:
        """The flags `source` compiles with (NOTE(long-kernels))."""
        return (*self.flags, *self.long_body_flags) if _longest_body(source) >= LONG_BODY_STATEMENTS else self.flags


def _longest_body(source: str) -> int:
    """The most statements in one function of generated C: the renderers close each
    function with a `}` at the start of a line and end each statement with `;` and a
    newline (top-level declarations count towards the first function: a few dozen)."""
    return max(body.count(";\n") for body in source.split("\n}"))


_lock = threading.Lock()  # the tables below; held while a library is opened, never while one compiles
_libraries: dict[tuple[str, str], _C.KernelLibrary] = {}
_building: dict[tuple[str, str], _Build] = {}  # (directory, key) -> its build, started and not yet opened
_toolchains: dict[_Setting, _Toolchain | str] = {}  # str: why unavailable
_recorded: set[tuple[str, _Toolchain]] = set()  # directories known to hold a toolchain's record
# Compiler runs at once: one per CPU, and two on one CPU (a library and the team's).
_compilers = threading.BoundedSemaphore(max(2, os.cpu_count() or 1))


def _forget_other_threads() -> None:
    """In a forked child, which has only the thread that forked: the builds other threads
    ran, and the locks they held, are not its own."""
    global _lock, _compilers
    _lock = threading.Lock()
    _compilers = threading.BoundedSemaphore(max(2, os.cpu_count() or 1))
    _building.clear()


os.register_at_fork(after_in_child=_forget_other_threads)


def load(source: str) -> _C.KernelLibrary:
    """The shared library compiled from C `source` (see NOTE(kernel-cache)); one that
    `start` began is waited for.

    Raises CompilerUnavailable or BuildError."""
    slot, found, new = _claim(source, kernel_directories(), _setting())
    if new:
        found.run()
    return _finish(slot, found) if isinstance(found, _Build) else found


def start(source: str) -> None:
    """Begin compiling C `source` on a background thread, for a later `load` of it to
    take (NOTE(parallel-builds)); nothing when its library is loaded, being built, or
    when a remote cache is configured (its build lease is taken by `load`). A failed
    build, or no compiler, raises at that `load`. The toolchain probe, on a cold cache,
    runs on the background thread too."""
    if config.remote_cache:
        return
    threading.Thread(target=_start, args=(source, kernel_directories(), _setting()), name="pyjit-build").start()


def _start(source: str, directories: cache.Directories, setting: _Setting) -> None:
    try:
        _, found, new = _claim(source, directories, setting)
    except Exception:  # the load that takes it meets the same error on its own thread
        return
    if new:
        found.run()


def _claim(source: str, directories: cache.Directories,
           setting: _Setting) -> tuple[tuple[str, str], _C.KernelLibrary | _Build, bool]:
    """(its slot, the library loaded or the build under way, whether that build is new
    and the caller's to run)."""
    with _lock:
        toolchain = _toolchain(directories, setting)
        key = _key(source, toolchain)
        slot = (directories.write, key)
        found = _libraries.get(slot) or _building.get(slot)
        if found is not None:
            return slot, found, False
        found = _building[slot] = _Build(directories, key, source, toolchain)
        return slot, found, True


class _Build:
    """One library's file, found on disk or compiled into the disk cache by the thread
    that `run`s it (NOTE(parallel-builds)); opened by `_finish`, on the loading thread."""

    def __init__(self, directories: cache.Directories, key: str, source: str, toolchain: _Toolchain):
        self.directories, self.key, self.source, self.toolchain = directories, key, source, toolchain
        self.done = threading.Event()
        self.origin: str | None = None  # "disk" (a trusted copy's path), "compiled" or "remote"
        self.path: str | None = None
        self.library: _C.KernelLibrary | None = None  # opened already (with a remote cache)
        self.compiled = False  # the compiler ran (also when it failed)
        self.error: BaseException | None = None
        self.seconds = 0.0

    def run(self) -> None:
        started = time.perf_counter()
        try:
            self.path = _cached_path(self.directories.read, self.key)
            if self.path is not None:
                self.origin = "disk"
            elif config.remote_cache:  # then only `load` runs it, on the loading thread
                self.origin, self.library = _fetch_or_build(self.directories.write, self.key, self.source,
                                                            self.toolchain)
            else:
                with _compilers:
                    self.compiled = True
                    self.path = _build(self.directories.write, self.key, self.source, self.toolchain)
                self.origin = "compiled"
        except BaseException as error:  # raised by the thread that loads it
            self.error = error
        finally:
            self.seconds = time.perf_counter() - started
            self.done.set()


def _finish(slot: tuple[str, str], pending: _Build) -> _C.KernelLibrary:
    """The library `pending` made, opened once for all threads waiting for it."""
    pending.done.wait()
    with _lock:
        library = _libraries.get(slot)
        if library is not None:
            return library
        if _building.get(slot) is pending:
            del _building[slot]
            if pending.compiled:
                counters["inductor"]["compiles"] += 1
        if pending.error is not None:
            raise pending.error
        started = time.perf_counter()
        origin, library = _open_found(pending)
        _libraries[slot] = library
    trace.emit("kernel", key=pending.key, origin=origin, seconds=pending.seconds + time.perf_counter() - started,
               source=pending.source)
    return library


def _open_found(pending: _Build) -> tuple[str, _C.KernelLibrary]:
    """(where it came from, the library): the library `pending` opened, or the file it
    compiled or found, else (a trusted copy that dlopen refuses) another copy or a new build."""
    directories, key = pending.directories, pending.key
    if pending.library is not None:
        return pending.origin, pending.library
    if pending.origin == "compiled":
        return "compiled", _open_built(pending.path)
    try:
        library = _open(pending.path)
    except OSError:
        found_in = directories.read.index(os.path.dirname(pending.path))
        library = _load_cached(directories.read[found_in + 1:], key)
    else:
        counters["inductor"]["disk_hits"] += 1
    if library is not None:
        return "disk", library
    return _fetch_or_build(directories.write, key, pending.source, pending.toolchain)


def _fetch_or_build(directory: str, key: str, source: str, toolchain: _Toolchain) -> tuple[str, _C.KernelLibrary]:
    """The remote cache (NOTE(remote-cache)), else the compiler, whose library is then shared."""
    # A process missing this kernel at the same moment waits for this one (NOTE(build-lease)).
    with remote.build_lease(key) as shared:
        library = _adopt(directory, key, source, shared) if shared is not None else None
        if library is not None:
            return "remote", library
        counters["inductor"]["compiles"] += 1
        library = _open_built(_build(directory, key, source, toolchain))
        if config.remote_cache:
            with open(library.path, "rb") as file:
                remote.store(key, file.read())
    return "compiled", library


def _adopt(directory: str, key: str, source: str, binary: bytes) -> _C.KernelLibrary | None:
    """A verified library from the remote cache, written to the disk cache as if built
    here (NOTE(kernel-cache) step 4) and loaded; None if dlopen refuses it."""
    library_path = os.path.join(directory, f"{key}.so")
    cache.write_atomic(os.path.join(directory, f"{key}.c"), source.encode())
    cache.write_checked(library_path, binary, mode=0o700)
    try:
        return _open(library_path)
    except OSError:
        return None


def flags(source: str = "") -> tuple[str, ...]:
    """The compiler command and flags this process compiles `source` with (for logs and
    docs); those of short sources when it is left out."""
    with _lock:
        toolchain = _toolchain(kernel_directories(), _setting())
    return (*toolchain.command, *toolchain.flags_for(source), *LIBRARIES)


def reset() -> None:
    """Forget the libraries this process loaded and the directories it checked. The disk
    cache stays, and so does the compiler found for the current $CC and $PATH (changing
    either makes the next load look again). The remote cache's connection is closed."""
    with _lock:
        unfinished = list(_building.values())
        _building.clear()
        _libraries.clear()
        cache.reset()
        _recorded.clear()
        remote.reset()
    for pending in unfinished:  # none writes after this returns
        pending.done.wait()


# ---- the cache directory ----------------------------------------------------------

def kernel_directories() -> cache.Directories:
    """Where C libraries are written and read (NOTE(cache-directory))."""
    return cache.directories(os.path.join(config.cache_dir, "kernels"))


# ---- kernels ----------------------------------------------------------------------

def _key(source: str, toolchain: _Toolchain) -> str:
    identity = [_LAYOUT_VERSION, source, toolchain.flags_for(source), LIBRARIES, toolchain.command,
                toolchain.version, toolchain.cpu]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()


def _cached_path(directories: tuple[str, ...], key: str) -> str | None:
    """The library file of `key` in the first of `directories` with a trusted copy of it."""
    for directory in directories:
        path = os.path.join(directory, f"{key}.so")
        if cache.read_checked(path) is not None:
            return path
    return None


def _load_cached(directories: tuple[str, ...], key: str) -> _C.KernelLibrary | None:
    """The library of `key` from the first of `directories` with a trusted copy of it
    that dlopen takes."""
    for directory in directories:
        path = _cached_path((directory,), key)
        if path is None:
            continue
        try:
            library = _open(path)
        except OSError:
            continue
        counters["inductor"]["disk_hits"] += 1
        return library
    return None


def _open(path: str) -> _C.KernelLibrary:
    """dlopen `path` (OpenMP's idle threads spin briefly, then sleep: NOTE(omp-wait-policy)
    in csrc/kernel_loader.cpp)."""
    return _C.KernelLibrary(path)


def _build(directory: str, key: str, source: str, toolchain: _Toolchain) -> str:
    """Compile `source` into the disk cache (NOTE(kernel-cache) step 4): its library's path."""
    source_path = os.path.join(directory, f"{key}.c")
    library_path = os.path.join(directory, f"{key}.so")
    cache.write_atomic(source_path, source.encode())
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".so.tmp")
    os.close(fd)
    try:
        flags = toolchain.flags_for(source)
        result = _run_compiler(toolchain.command, flags, source_path, temporary)
        if result.returncode != 0:
            command = shlex.join([*toolchain.command, *flags, "-o", library_path,
                                  source_path, *LIBRARIES])
            raise BuildError(f"the C compiler failed on generated source {source_path}\n"
                             f"$ {command}\n{result.stderr.strip()}")
        # The linker gives its output the umask's mode; cache files are the user's alone.
        os.chmod(temporary, 0o700)
        with open(temporary, "rb") as file:
            digest = hashlib.sha256(file.read()).hexdigest()
        os.replace(temporary, library_path)
    finally:
        cache.remove(temporary)
    cache.write_sidecar(library_path, digest)
    return library_path


def _open_built(library_path: str) -> _C.KernelLibrary:
    try:
        return _open(library_path)
    except OSError as error:
        raise BuildError(f"the library built from {library_path.removesuffix('.so')}.c does not load: "
                         f"{error}") from None


def _run_compiler(command, flags, source_path, output_path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*command, *flags, "-o", output_path, source_path, *LIBRARIES],
                              capture_output=True, text=True, errors="replace", check=False)
    except OSError as error:
        raise CompilerUnavailable(f"cannot run the C compiler {command[0]}: {error}") from None


# ---- the toolchain ----------------------------------------------------------------

def _toolchain(directories: cache.Directories, setting: _Setting) -> _Toolchain:
    """The compiler for `setting` ($CC, $PATH and config.kernel_march), found once per
    process; its record is kept in the directory written too, so later processes using
    it need no probe."""
    directory = directories.write
    if setting not in _toolchains:
        try:
            _toolchains[setting] = _find_toolchain(directories, setting)
        except CompilerUnavailable as error:
            _toolchains[setting] = str(error)
    found = _toolchains[setting]
    if isinstance(found, str):
        raise CompilerUnavailable(found)
    if (directory, found) not in _recorded:
        path = os.path.join(directory, found.record_name)
        if _read_record(path, found.command) != found.record():
            cache.write_atomic(path, json.dumps(found.record(), indent=1).encode())
        _recorded.add((directory, found))
    return found


def _compiler_command(setting: _Setting) -> tuple[str, ...]:
    words = shlex.split(setting.cc or "")
    candidates = ([words] if words else []) + [[name] for name in _COMPILER_NAMES]
    for program, *arguments in candidates:
        path = shutil.which(program, path=setting.path)
        if path:
            return (path, *arguments)
    tried = ", ".join(candidate[0] for candidate in candidates)
    raise CompilerUnavailable(f"no C compiler found: none of {tried} is an executable on PATH "
                              f"($CC names the compiler to use)")


def _find_toolchain(directories: cache.Directories, setting: _Setting) -> _Toolchain:
    command = _compiler_command(setting)
    binary = os.path.realpath(command[0])
    info = os.stat(binary)
    cpu = _cpu_identity()
    # The flags we ask for are part of it: a record probed for other flags is stale.
    identity = json.dumps([_LAYOUT_VERSION, command, binary, info.st_ino, info.st_size,
                           info.st_mtime_ns, cpu, _preferred_flags(setting.march), LONG_BODY_FLAGS])
    record_name = f"toolchain-{hashlib.sha256(identity.encode()).hexdigest()[:32]}.json"
    records = (_read_record(os.path.join(directory, record_name), command) for directory in directories.read)
    record = next((found for found in records if found is not None), None)
    if record is None:
        counters["inductor"]["compiler_probes"] += 1
        record = {"version": _compiler_version(command),
                  "flags": _working_flags(command, setting.march, directories.write),
                  "long_body_flags": _quietly_taken(command, LONG_BODY_FLAGS)}
    return _Toolchain(command, record["version"], tuple(record["flags"]), tuple(record["long_body_flags"]), cpu,
                      record_name)


def _read_record(path: str, command: tuple[str, ...]) -> dict | None:
    data = cache.read_trusted(path)
    try:
        record = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    valid = (isinstance(record, dict) and record.get("command") == list(command)
             and isinstance(record.get("version"), str)
             and all(isinstance(record.get(field), list) and all(isinstance(flag, str) for flag in record[field])
                     for field in ("flags", "long_body_flags")))
    return record if valid else None


def _cpu_identity() -> str:
    """The machine and the first CPU's model and feature lines (what -march=native sees)."""
    try:
        with open("/proc/cpuinfo", "rb") as file:
            first_cpu = file.read(65536).split(b"\n\n")[0]
    except OSError:
        first_cpu = b""
    wanted = (b"vendor_id", b"model name", b"flags", b"CPU implementer", b"CPU part", b"Features", b"isa")
    lines = [line for line in first_cpu.splitlines() if line.split(b":")[0].strip() in wanted]
    return f"{os.uname().machine}-{hashlib.sha256(b'|'.join(lines)).hexdigest()[:16]}"


def _compiler_version(command: tuple[str, ...]) -> str:
    try:
        result = subprocess.run([*command, "--version"], capture_output=True, text=True,
                                errors="replace", check=False)
    except OSError as error:
        raise CompilerUnavailable(f"cannot run the C compiler {command[0]}: {error}") from None
    return (result.stdout + result.stderr).strip()


def _preferred_flags(target: str) -> tuple[str, ...]:
    """PREFERRED_FLAGS, with -march=native replaced by -march=`target` (config.kernel_march)."""
    march = f"-march={target}"
    return tuple(march if flag == "-march=native" else flag for flag in PREFERRED_FLAGS)


def _candidate_flags(target: str):
    """The preferred flags, then without -march, then the same two with -fopenmp-simd
    for -fopenmp, then with neither OpenMP flag."""
    march = f"-march={target}"
    for openmp in ("-fopenmp", "-fopenmp-simd", None):
        for chosen_march in (march, None):
            chosen = {"-fopenmp": openmp, march: chosen_march}
            yield tuple(flag for flag in (chosen.get(f, f) for f in _preferred_flags(target)) if flag)


def _working_flags(command: tuple[str, ...], target: str, kernel_directory: str) -> tuple[str, ...]:
    """The first flag set that compiles, loads and runs the probe kernel. The probe is
    built where kernels are, so a file system that cannot map code shows up here."""
    with tempfile.TemporaryDirectory(dir=kernel_directory, prefix=".probe-") as directory:
        source_path = os.path.join(directory, "probe.c")
        with open(source_path, "w") as file:
            file.write(_PROBE_SOURCE)
        message = ""
        for index, candidate in enumerate(_candidate_flags(target)):
            output_path = os.path.join(directory, f"probe{index}.so")
            result = _run_compiler(command, candidate, source_path, output_path)
            message = result.stderr.strip()
            if result.returncode == 0 and _probe_runs(output_path):
                return candidate
    raise CompilerUnavailable(f"the C compiler {command[0]} builds no loadable shared library "
                              f"with any flag set tried; its last message:\n{message}")


def _quietly_taken(command: tuple[str, ...], wanted: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `wanted` that the compiler takes with no message (a compiler may reject a
    flag it does not know, or warn that it ignores it): each costs a syntax-only run on
    an empty file, about 10 ms."""
    taken = []
    for flag in wanted:
        try:
            result = subprocess.run([*command, flag, "-fsyntax-only", "-x", "c", os.devnull], capture_output=True,
                                    text=True, errors="replace", check=False)
        except OSError as error:
            raise CompilerUnavailable(f"cannot run the C compiler {command[0]}: {error}") from None
        if result.returncode == 0 and not result.stderr.strip():
            taken.append(flag)
    return tuple(taken)


def _probe_runs(path: str) -> bool:
    out = np.zeros(4)
    try:
        _open(path).kernel("pyjit_probe", 1, 1)(out, out.size)
    except (OSError, AttributeError):
        return False
    return bool(np.allclose(out, np.exp(np.arange(4.0))))
