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
        (NOTE(blas-pool)); the team's library is built while the kernels compile
        (NOTE(parallel-builds))."""
        unit = renderer.render_unit(kernels, variants=autotune)
        build.start(unit)
        threads.share_with_blas()
        library = build.load(unit)
        if not autotune:
            return library
        return TunedLibrary(library, {kernel.name: tuple(renderer.kernel_variants(kernel)) for kernel in kernels})

    @staticmethod
    def source(kernels: list) -> str:
        return renderer.render_unit(kernels)
