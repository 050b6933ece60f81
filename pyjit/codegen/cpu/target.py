"""The CPU target (NOTE(targets)): one C translation unit, built through the disk cache."""

from __future__ import annotations

from ..target import OnHost
from . import build, renderer, threads
from .autotune import TunedLibrary


class CpuTarget(OnHost):
    name = "cpu"
    lowers_half = False  # float16 nodes run eagerly (NOTE(half-lowering))

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        """The kernels' library; with `autotune`, every variant of each, timed at its first
        call (NOTE(cpu-autotune)). NumPy's BLAS moves onto the kernels' threads first
        (NOTE(blas-pool))."""
        threads.share_with_blas()
        if not autotune:
            return build.load(renderer.render_unit(kernels))
        library = build.load(renderer.render_unit(kernels, variants=True))
        return TunedLibrary(library, {kernel.name: tuple(renderer.kernel_variants(kernel)) for kernel in kernels})

    @staticmethod
    def source(kernels: list) -> str:
        return renderer.render_unit(kernels)
