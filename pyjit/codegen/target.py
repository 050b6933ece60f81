"""Where the inductor backend's kernels run: the `Target` protocol each wing of
codegen implements (cpu/target.py, cuda/target.py), and the errors a target raises.

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
Each raises CompilerUnavailable when it cannot work on this machine and BuildError when
generated source is rejected, which the backend turns into eager execution with a
warning.
"""

from __future__ import annotations

from typing import Protocol

import numpy

from ..exc import PyjitError

__all__ = ["BuildError", "CompilerUnavailable", "OnHost", "Target", "graph_device"]


class CompilerUnavailable(PyjitError):
    """No working compiler for the target: none found ($CC, cc, gcc; CuPy for CUDA), or
    none builds a library that loads."""


class BuildError(PyjitError):
    """The compiler rejected generated source; the message has its output and the path
    of the saved source."""


class Target(Protocol):
    """What the inductor backend needs of a place kernels run (NOTE(targets))."""

    name: str
    lowers_half: bool  # whether float16 nodes are compiled (NOTE(half-lowering))

    @staticmethod
    def accepts(device: str) -> bool:
        """Whether the target compiles graphs of arrays on `device` ("cpu", "cuda:0")."""

    @staticmethod
    def array_module():
        """The module the glue allocates arrays with (numpy, cupy); raises
        CompilerUnavailable when it is missing."""

    @staticmethod
    def load(kernels: list, autotune: bool = False):
        """The library of the kernel IR `kernels`: `library.kernel(name, buffers, sizes)`
        is the kernel, callable as `k(*arrays, *sizes)`; with `autotune`, its variants
        are timed at the first call (NOTE(modes))."""

    @staticmethod
    def source(kernels: list) -> str:
        """The generated source of `kernels` (for logs and `run.source`)."""


class OnHost:
    """What a target whose kernels run on the CPU over NumPy arrays says of itself."""

    @staticmethod
    def accepts(device: str) -> bool:
        """Whether the target compiles graphs of arrays on `device` ("cpu", "cuda:0")."""
        return device == "cpu"

    @staticmethod
    def array_module():
        return numpy


def graph_device(graph) -> str:
    """The device of a graph's array inputs (the first one's; "cpu" without any)."""
    return next((node.meta.device for node in graph.placeholders if hasattr(node.meta, "device")), "cpu")
