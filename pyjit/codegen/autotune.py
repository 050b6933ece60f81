"""max-autotune's choices: timed once, kept on disk and in the remote cache.

NOTE(autotune-records): a choice among a fixed set (a CUDA block size, NOTE(cuda-
autotune); a C kernel's variant, NOTE(cpu-autotune)) is looked up, in order, in the
disk cache (`<directory>/<key>.json`, read and written under the kernel cache's rules:
a file of the user's that no one else may write, renamed into place) and the remote
cache (`pyjit:<key id>:autotune:<key>`, signed as kernels are: NOTE(remote-cache)); only then is
each choice timed and the fastest kept, stored in both (one fetched from the server is
written to disk). A record that is not one of the choices (corrupt, foreign, from
another version) is timed again and overwritten. counters["inductor"]["autotuned"]
counts the choices timed here.

NOTE(cpu-autotune): under max-autotune, each C kernel is also compiled as variants
(c_renderer.VARIANTS): one thread or every thread instead of the work threshold's guess
(NOTE(c-renderer)), 256-bit vectors instead of the widest the CPU has (an AVX-512
CPU may run a kernel faster at 256 bits: lower clocks, fewer lanes wasted on short
rows), and, for a nest that reads across its innermost loop, no tiles or tiles of 32
instead of c_renderer.TILE (NOTE(transposed-tiles)). The first call at given size
arguments times each distinct variant on the call's own arrays (kernels only read their
inputs and write their outputs, so running one several times changes nothing: the
scheduler writes no epilogue over a matrix product for autotuned kernels,
NOTE(epilogue-in-place); the variants in turns for CPU_ROUNDS rounds, each round the
median of CPU_TIMED_CALLS calls after a warm-up, each variant its best round) and keeps
the fastest, under a key of the library's disk-cache key (source, flags, compiler,
CPU), the kernel, the size arguments and the OpenMP thread count. A kernel without size
arguments then calls its choice directly (no wrapper per call), and is chosen when the
graph is compiled, so the C launcher runs it (NOTE(tune-at-compile) in
pyjit/backends/inductor.py). Timings on a busy machine can choose badly; the choice is
on disk, so `rm -r <cache_dir>/kernels/autotune` times again. Variants compute the same
values; reductions may differ in the last bits between vector widths (lanes sum in
another order), as between CPUs.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics

from .. import _C
from ..utils import counters
from . import build, remote

_LAYOUT_VERSION = "pyjit-autotune-1"
CPU_TIMED_CALLS = 5
CPU_ROUNDS = 3


def record_key(*identity) -> str:
    """The key of a choice: a hash of what it depends on (JSON-serialisable parts)."""
    return hashlib.sha256(json.dumps([_LAYOUT_VERSION, *identity]).encode()).hexdigest()


def stored_choice(directory: str, key: str, field: str, choices: tuple, time_choice):
    """The choice kept for `key` (NOTE(autotune-records)), else the one of `choices`
    with the smallest `time_choice(choice)`, stored as `{field: choice}`."""
    directory = build._private_directory(directory)
    path = os.path.join(directory, f"{key}.json")
    choice = _stored(build._read_trusted(path), field, choices)
    if choice is not None:
        return choice
    choice = _stored(remote.fetch(key, "autotune"), field, choices)
    if choice is None:
        timings = {candidate: time_choice(candidate) for candidate in choices}
        choice = min(timings, key=timings.get)
        counters["inductor"]["autotuned"] += 1
        remote.store(key, _record(field, choice), "autotune")
    build._write_atomic(path, _record(field, choice))
    return choice


def _record(field: str, choice) -> bytes:
    return json.dumps({field: choice}).encode()


def _stored(record: bytes | None, field: str, choices: tuple):
    try:
        choice = json.loads(record)[field] if record is not None else None
    except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return choice if type(choice) in (int, str) and choice in choices else None


class TunedLibrary:
    """A C library built with variants (NOTE(cpu-autotune)); `kernel(...)` as
    _C.KernelLibrary's, `variants[name]` the variant functions of each kernel."""

    def __init__(self, library, variants: dict[str, tuple[str, ...]]):
        self.library, self.variants = library, variants
        self.path = library.path
        self.key = os.path.basename(library.path).partition(".")[0]

    def kernel(self, name: str, num_buffers: int, num_sizes: int):
        functions = self.variants[name]
        if len(functions) == 1:
            return self.library.kernel(name, num_buffers, num_sizes)
        kernels = {function: self.library.kernel(function, num_buffers, num_sizes) for function in functions}
        return TunedKernel(self.key, name, kernels, num_buffers, num_sizes)


class TunedKernel:
    """A kernel's variants, called as the kernel; the first call at given sizes picks one."""

    def __init__(self, key: str, name: str, kernels: dict, num_buffers: int, num_sizes: int):
        self.key, self.name, self.kernels, self.num_buffers = key, name, kernels, num_buffers
        self.static = num_sizes == 0
        self.chosen: dict[tuple, object] = {}
        self.namespace, self.global_name = None, None

    def bind(self, namespace: dict, global_name: str) -> None:
        """Where the glue finds this kernel: a static kernel is replaced there by its choice."""
        self.namespace, self.global_name = namespace, global_name

    def __call__(self, *args):
        sizes = tuple(args[self.num_buffers:])
        kernel = self.chosen.get(sizes)
        if kernel is None:
            kernel = self.kernels[self._choose(args, sizes)]
            self.chosen[sizes] = kernel
            if self.static and self.namespace is not None:
                self.namespace[self.global_name] = kernel
        kernel(*args)

    def _choose(self, args, sizes) -> str:
        key = record_key("cpu", self.key, self.name, [int(size) for size in sizes], _threads())

        timings: dict[str, float] = {}

        def time_variant(function: str) -> float:
            # Variants timed in turns, each keeping its best round: a slow spell of the
            # machine then slows every variant, not the one timed during it.
            if not timings:
                for _ in range(CPU_ROUNDS):
                    for name, kernel in self.kernels.items():
                        median = statistics.median(_C.bench(kernel, args, CPU_TIMED_CALLS, 1))
                        timings[name] = min(timings.get(name, median), median)
            return timings[function]

        directory = os.path.join(build._kernel_directories().write, "autotune")
        return stored_choice(directory, key, "variant", tuple(self.kernels), time_variant)


def _threads() -> int:
    """The threads an OpenMP region may use here (what the choice depends on)."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(value) if value.isdigit() else len(os.sched_getaffinity(0))
