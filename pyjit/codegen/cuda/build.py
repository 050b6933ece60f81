"""CUDA kernels on a GPU: NVRTC compiles the renderer's source into a cubin for the
current GPU, kept in a disk cache, and CuPy loads and launches it.

NOTE(cuda-cache): a cubin is cached under `<pyjit.config.cache_dir>/cuda` (a directory
only the user may write: the C cache's rules, NOTE(cache-directory) in pyjit/codegen/cache.py) as
`<key>.cubin` with a `<key>.cubin.sha256` sidecar and the `<key>.cu` source beside it.
The key hashes the layout version, the source, the GPU architecture (`sm_80`), and the
versions of CuPy, the CUDA runtime and NVRTC, so a new GPU or toolkit compiles again. A
cubin is used only if it and its sidecar are regular files of the user's that no one
else may write, and its hash matches; anything else is compiled again and replaced
(written to a temporary name, then renamed). After the disk, the remote cache is asked
(`pyjit:<key id>:cubin:<key>`, signed: NOTE(remote-cache)); a cubin compiled here is stored there,
one fetched is written to disk. Without the NVRTC wheel, CuPy compiles the source itself
(its own cache).
NOTE(cuda-launch): `CudaLibrary.kernel(name, buffers, sizes)` is called as the C kernels
are (`k(*arrays, *sizes)`, NOTE(glue)): each launch of the IR kernel (NOTE(cuda-renderer))
runs in order on CuPy's current stream with `block` threads a block (256 unless
autotuning chose another: NOTE(cuda-autotune)); a kernel with split reductions gets a
workspace from CuPy's memory pool.
NOTE(cuda-autotune): under max-autotune, the first call of a kernel at given size
arguments times each block size of BLOCK_CHOICES with CUDA events (a warm-up launch,
then the median of 5) and keeps the fastest. A choice is looked up in the launcher's
table (this process), then as NOTE(autotune-records) in pyjit/codegen/cache.py says: the disk
cache (`<cache_dir>/cuda/autotune/<key>.json`), the remote cache, timing (stored in
both). The key hashes the unit's cubin key (source, GPU architecture, CuPy, CUDA
runtime and NVRTC versions), the kernel's name and its size arguments (what the launch
plan depends on). Results can differ in the last bits between block sizes (a
reduction's order follows the partition), and are the same for the same choice.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ... import config
from .. import cache, remote
from ..target import BuildError, CompilerUnavailable
from . import nvrtc
from .launch import CudaKernel, CudaUnit, launch_plan

_LAYOUT_VERSION = "pyjit-cuda-1"
DEFAULT_BLOCK = 256
BLOCK_CHOICES = (128, 256, 512)


def cupy_module():
    try:
        import cupy
    except ImportError:
        raise CompilerUnavailable("CUDA kernels need CuPy (pip install 'pyjit[cuda]')") from None
    return cupy


def cache_key(source: str, arch: str, versions: dict) -> str:
    identity = [_LAYOUT_VERSION, source, arch, sorted(versions.items())]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()


def cached_cubin(source: str, arch: str, versions: dict, compile_cubin=nvrtc.compile_cubin) -> tuple[bytes, str]:
    """(cubin, path) for `source` on `arch`: from the disk cache when a trusted copy is
    there (NOTE(cuda-cache)), else compiled by `compile_cubin(source, arch)` and stored."""
    directory = cache.write_directory(os.path.join(config.cache_dir, "cuda"))
    key = cache_key(source, arch, versions)
    path = os.path.join(directory, f"{key}.cubin")
    binary = cache.read_checked(path)
    if binary is not None:
        return binary, path
    binary = remote.fetch(key, "cubin")
    if binary is None:
        try:
            binary = compile_cubin(source, arch)
        except nvrtc.CudaCompileError as error:
            cache.write_atomic(os.path.join(directory, f"{key}.cu"), source.encode())
            raise BuildError(f"{error}\n(source: {os.path.join(directory, key)}.cu)") from None
        remote.store(key, binary, "cubin")
    cache.write_atomic(os.path.join(directory, f"{key}.cu"), source.encode())
    cache.write_checked(path, binary)
    return binary, path


def autotune_key(unit_key: str, kernel: str, sizes: tuple) -> str:
    identity = [_LAYOUT_VERSION, "autotune", unit_key, kernel, [int(size) for size in sizes]]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()


def autotuned_block(unit_key: str, kernel: str, sizes: tuple, time_block) -> int:
    """The block size for `kernel` of the unit whose cubin key is `unit_key` at these size
    arguments: stored on disk or in the remote cache, else the fastest by
    `time_block(block)` (milliseconds a launch), then stored (NOTE(cuda-autotune),
    NOTE(autotune-records))."""
    return cache.stored_choice(os.path.join(config.cache_dir, "cuda", "autotune"),
                                  autotune_key(unit_key, kernel, sizes), "block", BLOCK_CHOICES, time_block)


def load(unit: CudaUnit):
    """The unit's kernels on the current GPU, as a CudaLibrary."""
    cupy = cupy_module()
    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    versions = {"cupy": cupy.__version__, "runtime": cupy.cuda.runtime.runtimeGetVersion(),
                "nvrtc": nvrtc.version()}
    if nvrtc.library() is None:
        module = cupy.RawModule(code=unit.source, options=("--std=c++17",))
    else:
        _, path = cached_cubin(unit.source, arch, versions)
        module = cupy.RawModule(path=path)
    return CudaLibrary(unit, module, cupy, cache_key(unit.source, arch, versions))


class CudaLibrary:
    """A loaded unit; `kernel(...)` gives launchers (NOTE(cuda-launch))."""

    def __init__(self, unit: CudaUnit, module, cupy, key: str):
        self.unit, self.module, self.cupy, self.key = unit, module, cupy, key
        self.source = unit.source
        self.autotune = False

    def kernel(self, name: str, num_buffers: int, num_sizes: int):
        return _Launcher(self, self.unit.kernels[name], num_buffers)


class _Launcher:
    def __init__(self, library: CudaLibrary, kernel: CudaKernel, num_buffers: int):
        self.library, self.kernel, self.num_buffers = library, kernel, num_buffers
        self.functions = [library.module.get_function(launch.function) for launch in kernel.launches]
        self.blocks: dict[tuple, int] = {}  # sizes -> the block size autotuning chose

    def __call__(self, *args):
        cupy = self.library.cupy
        arrays, sizes = args[:self.num_buffers], args[self.num_buffers:]
        workspace = cupy.empty(max(self.kernel.workspace_bytes, 16), dtype=cupy.uint8)
        params = (*arrays, workspace, *(np.int64(size) for size in sizes))
        block = self.blocks.get(sizes)
        if block is None:
            block = (autotuned_block(self.library.key, self.kernel.name, sizes,
                                     lambda choice: self._time(params, sizes, choice))
                     if self.library.autotune else DEFAULT_BLOCK)
            self.blocks[sizes] = block
        self._launch(params, sizes, block)

    def _launch(self, params, sizes, block: int) -> None:
        plan = launch_plan(self.kernel, dict(zip(self.kernel.sizes, sizes)), block)
        for function, (_, grid) in zip(self.functions, plan):
            function((grid,), (block,), params)

    def _time(self, params, sizes, block: int) -> float:
        """Milliseconds a launch takes with `block` threads a block (NOTE(cuda-autotune))."""
        cupy = self.library.cupy
        self._launch(params, sizes, block)
        samples = []
        for _ in range(5):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            self._launch(params, sizes, block)
            stop.record()
            stop.synchronize()
            samples.append(cupy.cuda.get_elapsed_time(start, stop))
        return sorted(samples)[2]
