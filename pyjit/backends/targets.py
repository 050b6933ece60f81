"""Where the inductor backend's kernels run: C on the CPU, CUDA through CuPy, or the
CUDA kernels emulated on the CPU.

NOTE(targets): a target names the device whose graphs it compiles, the array module of
the glue (NOTE(glue)), and how a list of kernel IR becomes a library whose
`kernel(name, buffers, sizes)` is callable as `k(*arrays, *sizes)`:
  * "cpu": one C translation unit, built through the disk cache (NOTE(kernel-cache));
  * "cuda": one CUDA source (NOTE(cuda-renderer)), compiled by NVRTC into a cubin for the
    current GPU, cached on disk (NOTE(cuda-cache)), launched through CuPy;
  * "cuda-emulation": the same CUDA source run on the CPU over NumPy arrays
    (NOTE(cuda-emulation)): what the test suite uses to run every op's CUDA kernels
    without a GPU. Slow (a block's threads are OpenMP threads); for checking only.
Only the CUDA targets compile float16 nodes (`lowers_half`, NOTE(half-lowering)).
Each raises build.CompilerUnavailable when it cannot work on this machine and
build.BuildError when generated source is rejected, which the backend turns into eager
execution with a warning.
"""

from __future__ import annotations

import numpy

from ..codegen import autotune as autotune_module
from ..codegen import build
from ..codegen import c_renderer, cuda_renderer, threads


class CpuTarget:
    name = "cpu"
    lowers_half = False  # float16 nodes run eagerly (NOTE(half-lowering))

    @staticmethod
    def accepts(device: str) -> bool:
        """Whether the target compiles graphs of arrays on `device` ("cpu", "cuda:0")."""
        return device == "cpu"

    @staticmethod
    def array_module():
        return numpy

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        """The kernels' library; with `autotune`, every variant of each, timed at its first
        call (NOTE(cpu-autotune)). NumPy's BLAS moves onto the kernels' threads first
        (NOTE(blas-pool))."""
        threads.share_with_blas()
        if not autotune:
            return build.load(c_renderer.render_unit(kernels))
        library = build.load(c_renderer.render_unit(kernels, variants=True))
        return autotune_module.TunedLibrary(library, {kernel.name: tuple(c_renderer.kernel_variants(kernel))
                                                      for kernel in kernels})

    @staticmethod
    def source(kernels: list) -> str:
        return c_renderer.render_unit(kernels)


class CudaTarget:
    name = "cuda"
    lowers_half = True  # float16 loaded and computed in float32 (NOTE(cuda-half))

    @staticmethod
    def accepts(device: str) -> bool:
        return device.startswith("cuda")

    @staticmethod
    def array_module():
        from ..codegen import cuda_build

        return cuda_build.cupy_module()

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        from ..codegen import cuda_build

        library = cuda_build.load(cuda_renderer.render_unit(kernels))
        library.autotune = autotune  # NOTE(cuda-autotune)
        return library

    @staticmethod
    def source(kernels: list) -> str:
        return cuda_renderer.render_unit(kernels).source


class CudaEmulationTarget(CudaTarget):
    name = "cuda-emulation"
    accepts = CpuTarget.accepts

    @staticmethod
    def array_module():
        return numpy

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        """The emulated kernels (`autotune` does nothing here: emulation times nothing)."""
        from ..codegen import cuda_emulation

        try:
            return cuda_emulation.Emulated(cuda_renderer.render_unit(kernels))
        except cuda_emulation.NoHostCompiler as error:
            raise build.CompilerUnavailable(str(error)) from None
        except cuda_emulation.EmulationError as error:
            raise build.BuildError(str(error)) from None


TARGETS = {target.name: target for target in (CpuTarget, CudaTarget, CudaEmulationTarget)}


def graph_device(graph) -> str:
    """The device of a graph's array inputs (the first one's; "cpu" without any)."""
    return next((node.meta.device for node in graph.placeholders if hasattr(node.meta, "device")), "cpu")


def target_for(graph) -> type:
    """The target of a graph: CUDA when its arrays live on a GPU."""
    return CudaTarget if CudaTarget.accepts(graph_device(graph)) else CpuTarget
