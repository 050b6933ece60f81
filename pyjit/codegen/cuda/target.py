"""The CUDA targets (NOTE(targets)): CUDA source compiled by NVRTC and launched through
CuPy, or the same source emulated on the CPU (NOTE(cuda-emulation))."""

from __future__ import annotations

from ..target import BuildError, CompilerUnavailable, OnHost
from . import renderer


class CudaTarget:
    name = "cuda"
    lowers_half = True  # float16 loaded and computed in float32 (NOTE(cuda-half))

    @staticmethod
    def accepts(device: str) -> bool:
        """Whether the target compiles graphs of arrays on `device` ("cpu", "cuda:0")."""
        return device.startswith("cuda")

    @staticmethod
    def array_module():
        from . import build

        return build.cupy_module()

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        from . import build

        library = build.load(renderer.render_unit(kernels))
        library.autotune = autotune  # NOTE(cuda-autotune)
        return library

    @staticmethod
    def source(kernels: list) -> str:
        return renderer.render_unit(kernels).source


class CudaEmulationTarget(OnHost, CudaTarget):
    """The CUDA kernels, emulated on the CPU's arrays."""

    name = "cuda-emulation"

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        """The emulated kernels (`autotune` does nothing here: emulation times nothing)."""
        from . import emulation

        try:
            return emulation.Emulated(renderer.render_unit(kernels))
        except emulation.NoHostCompiler as error:
            raise CompilerUnavailable(str(error)) from None
        except emulation.EmulationError as error:
            raise BuildError(str(error)) from None
