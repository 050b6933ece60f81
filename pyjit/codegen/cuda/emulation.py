"""Running the CUDA renderer's kernels on the CPU, to check them without a GPU.

NOTE(cuda-emulation): the generated `.cu` text is compiled unchanged by the host C++
compiler after a small header that defines what CUDA provides: `threadIdx`, `blockIdx`
(per thread), `blockDim`, `gridDim`, `__syncthreads` (an OpenMP barrier), warp shuffles
(one exchange step for both: each thread publishes its value, a barrier, each reads
another thread's; `__shfl_down_sync` reads its lane + offset within its warp of 32, or
keeps its own value past the warp's end, `__shfl_sync` a given lane of its warp),
`__shared__` (a static: one copy for the block, blocks run one after the other), the
bit casts, the float16 conversions (the host compiler's `_Float16`), and the math
functions (the C library's). A launch runs its blocks in a loop and the threads of a
block as that many OpenMP threads, so barriers and shuffles behave as on a GPU for
code that reaches them from every thread (NOTE(block-reduce)). What this
cannot show: timing, memory coalescing, warp divergence, and the GPU's own math library
(its ulp errors differ from glibc's; NaN and infinities do not).
Each launch gets a C-ABI wrapper (`void emu_NAME(char *const *buffers, const int64_t
*sizes)`, sizes[0] and sizes[1] the grid and block), loaded through pyjit._C's kernel
loader; `run` sizes the grids as the CuPy launcher does (`Launch.grid`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

from ... import _C
from ...exc import PyjitError
from .launch import BLOCK_REDUCING, CudaUnit

HEADER = r"""/* pyjit's CUDA emulation header (NOTE(cuda-emulation) in pyjit/codegen/cuda/emulation.py) */
#define PYJIT_CUDA_EMULATION 1
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <omp.h>

struct pyjit_dim3 { unsigned x, y, z; };
static thread_local pyjit_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static pyjit_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static int pyjit_emulation_failed = 0;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __restrict__ __restrict
#define __shared__ static

static inline void __syncthreads() {
    _Pragma("omp barrier")
}

/* A warp shuffle is one exchange among the block's threads: each publishes its value, a
   barrier, then each reads the value of thread `source` (its own where `inside` is
   false). Two exchange buffers used in turn: a thread writes one only after the barrier
   of the previous exchange, which every thread reaches after reading the buffer of the
   one before, so one barrier an exchange suffices. */
static thread_local unsigned pyjit_exchange = 0;

template <typename T>
static T pyjit_exchange_read(T value, unsigned source, bool inside) {
    static T slots[2][1024];
    const unsigned turn = pyjit_exchange++ & 1u;
    slots[turn][threadIdx.x] = value;
    _Pragma("omp barrier")
    return inside ? slots[turn][source] : value;
}

/* lane + offset within the thread's warp, or its own value past the warp's end */
template <typename T>
static T __shfl_down_sync(unsigned, T value, unsigned offset) {
    const unsigned self = threadIdx.x;
    return pyjit_exchange_read(value, self + offset, (self & 31u) + offset < 32u && self + offset < blockDim.x);
}

/* __shfl_sync(mask, value, 0), the only lane the renderer reads (NOTE(warp-rows)): the
   first lane of the thread's warp. */
template <typename T>
static T __shfl_sync(unsigned, T value, int lane) {
    return pyjit_exchange_read(value, (threadIdx.x & ~31u) + (unsigned)lane, true);
}

/* float16 (NOTE(cuda-half) in cuda/renderer.py): the host compiler's _Float16 converts
   with round to nearest even, straight from float or double. */
struct pyjit_half { unsigned short bits; };
static inline float pyjit_half2float(const pyjit_half h) { _Float16 v; memcpy(&v, &h.bits, 2); return (float)v; }
static inline pyjit_half pyjit_float2half(const float f) {
    const _Float16 v = (_Float16)f; pyjit_half h; memcpy(&h.bits, &v, 2); return h; }
static inline pyjit_half pyjit_double2half(const double d) {
    const _Float16 v = (_Float16)d; pyjit_half h; memcpy(&h.bits, &v, 2); return h; }

static inline float __int_as_float(int bits) { float value; memcpy(&value, &bits, 4); return value; }
static inline double __longlong_as_double(long long bits) { double value; memcpy(&value, &bits, 8); return value; }

template <typename Body>
static void pyjit_emulate(int64_t grid, int64_t block, Body body) {
    gridDim.x = (unsigned)grid;
    blockDim.x = (unsigned)block;
    omp_set_dynamic(0);
    for (int64_t b = 0; b < grid; ++b) {
        #pragma omp parallel num_threads((int)block)
        {
            if (omp_get_num_threads() != (int)block) {
                pyjit_emulation_failed = 1;
            } else {
                threadIdx.x = (unsigned)omp_get_thread_num();
                pyjit_exchange = 0;
                blockIdx.x = (unsigned)b;
                body();
            }
        }
    }
}

extern "C" void pyjit_emulation_status(char *const *buffers, const int64_t *) {
    *(int64_t *)buffers[0] = pyjit_emulation_failed;
}
"""


class EmulationError(PyjitError):
    """The host compiler rejected the emulated source, or a block did not get its threads."""


class NoHostCompiler(PyjitError):
    """No C++ compiler on this machine to build the emulation with."""


def compiler() -> str | None:
    """The host C++ compiler ($CXX, else c++, else g++), None when there is none."""
    for candidate in (os.environ.get("CXX"), "c++", "g++"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate
    return None


def wrappers(unit: CudaUnit) -> str:
    lines = []
    for kernel in unit.kernels.values():
        casts = [f"({'' if output else 'const '}{ctype} *)buffers[{position}]"
                 for position, (ctype, output) in enumerate(kernel.buffers)]
        casts.append(f"(uint8_t *)buffers[{len(kernel.buffers)}]")
        casts += [f"sizes[{2 + position}]" for position in range(len(kernel.sizes))]
        for launch in kernel.launches:
            lines.append(f'extern "C" void emu_{launch.function}(char *const *buffers, const int64_t *sizes) {{')
            lines.append(f"    pyjit_emulate(sizes[0], sizes[1], [&]() {{ {launch.function}({', '.join(casts)}); }});")
            lines.append("}")
    return "\n".join(lines) + "\n"


class Emulated:
    """`unit` compiled for the CPU: `run(name, arrays, sizes)` runs one IR kernel."""

    def __init__(self, unit: CudaUnit):
        command = compiler()
        if command is None:
            raise NoHostCompiler("no host C++ compiler (c++, g++ or $CXX) on PATH")
        self.unit = unit
        self.source = unit.source
        with tempfile.TemporaryDirectory(prefix="pyjit-cuda-emulation-") as folder:
            source = os.path.join(folder, "emulated.cpp")
            with open(source, "w") as file:
                file.write(HEADER + unit.source + wrappers(unit))
            library = os.path.join(folder, "emulated.so")
            # -O0: the corpus of the tests is megabytes of source; speed does not matter here.
            done = subprocess.run(command.split() + ["-x", "c++", "-std=c++17", "-O0", "-fopenmp", "-fPIC", "-shared",
                                                     source, "-o", library, "-lm"], capture_output=True, text=True)
            if done.returncode:
                raise EmulationError(f"the host compiler rejected the emulated source:\n{done.stderr[-4000:]}")
            self.library = _C.KernelLibrary(library)  # loaded: the file may go
        self.status = self.library.kernel("pyjit_emulation_status", 1, 0)
        self.functions: dict = {}

    def kernel(self, name: str, num_buffers: int, num_sizes: int):
        """`k(*arrays, *sizes)` running the IR kernel `name` (the C kernel loader's calling
        convention, so the inductor glue calls it unchanged)."""
        names = self.unit.kernels[name].sizes

        def run(*args):
            self.run(name, list(args[:num_buffers]), dict(zip(names, args[num_buffers:])))
        return run

    def run(self, name: str, arrays: list[np.ndarray], sizes: dict[str, int] | None = None, block: int = 64,
            max_grid: int = 3) -> None:
        """Run the IR kernel `name` on `arrays` (its buffers, in order) with `block`
        threads a block and at most `max_grid` blocks a launch (few blocks: grid-stride
        loops then step several times). Launches without block reductions get one warp
        a block: their threads never meet, and fewer threads emulate faster."""
        kernel = self.unit.kernels[name]
        sizes = sizes or {}
        workspace = np.zeros(max(kernel.workspace_bytes, 16), dtype=np.uint8)
        arguments = [sizes[size] for size in kernel.sizes]
        for launch in kernel.launches:
            threads = block if launch.mode in BLOCK_REDUCING else 32
            grid = launch.grid(sizes, threads, max_grid)
            function = self.functions.get(launch.function)
            if function is None:
                function = self.functions[launch.function] = self.library.kernel(f"emu_{launch.function}",
                                                                                 len(arrays) + 1)
            function(*arrays, workspace, grid, threads, *arguments)
        failed = np.zeros(1, dtype=np.int64)
        self.status(failed)
        if failed[0]:
            raise EmulationError(f"OpenMP gave a block fewer than {block} threads (OMP_THREAD_LIMIT?)")
