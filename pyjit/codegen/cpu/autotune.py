"""max-autotune on the CPU: a C kernel's variants, timed at its first call and the
choice kept (NOTE(autotune-records) in pyjit/codegen/cache.py).

NOTE(cpu-autotune): under max-autotune, each C kernel is also compiled as variants
(renderer.VARIANTS): one thread or every thread instead of the work threshold's guess
(NOTE(c-renderer)), 256-bit vectors instead of the widest the CPU has (an AVX-512
CPU may run a kernel faster at 256 bits: lower clocks, fewer lanes wasted on short
rows), and, for a nest that reads across its innermost loop, no tiles or tiles of 32
instead of renderer.TILE (NOTE(transposed-tiles)). The first call at given size
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

import os
import statistics

from ... import _C
from .. import cache
from . import build

CPU_TIMED_CALLS = 5
CPU_ROUNDS = 3


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
        key = cache.record_key("cpu", self.key, self.name, [int(size) for size in sizes], _threads())

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

        directory = os.path.join(build.kernel_directories().write, "autotune")
        return cache.stored_choice(directory, key, "variant", tuple(self.kernels), time_variant)


def _threads() -> int:
    """The threads an OpenMP region may use here (what the choice depends on)."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(value) if value.isdigit() else len(os.sched_getaffinity(0))
