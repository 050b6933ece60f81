"""Code generation: fusion scheduling into a loop-level kernel IR (ir/, scheduling/),
the glue that runs a scheduled graph, and the targets that turn kernel IR into loaded
kernels: C on the CPU (cpu/), CUDA through CuPy or emulated on the CPU (cuda/), over a
shared C-family layer (cfamily/) and the disk and remote caches.

What is exported here is what a backend needs (NOTE(targets)); backends import nothing
else of codegen.
"""

from .cpu.autotune import TunedKernel
from .cpu.launch import c_launcher
from .cpu.loops import c_loop
from .cpu.renderer import render_kernel, render_unit
from .cpu.target import CpuTarget
from .cuda.graphs import CudaGraphed, is_dynamic
from .cuda.target import CudaEmulationTarget, CudaTarget
from .glue import GlueError, glue_source, layout_of
from .ir.index import Index
from .ir.kernel_ir import Kernel, format_kernel
from .scheduling.lowering import NotLowerable, lowering_half
from .scheduling.scheduler import Schedule, schedule
from .target import BuildError, CompilerUnavailable, Target, graph_device

TARGETS = {target.name: target for target in (CpuTarget, CudaTarget, CudaEmulationTarget)}


def target_for(graph) -> type:
    """The target of a graph: CUDA when its arrays live on a GPU."""
    return CudaTarget if CudaTarget.accepts(graph_device(graph)) else CpuTarget


__all__ = ["BuildError", "CompilerUnavailable", "CpuTarget", "CudaEmulationTarget", "CudaGraphed", "CudaTarget",
           "GlueError", "Index", "Kernel", "NotLowerable", "Schedule", "TARGETS", "Target", "TunedKernel",
           "c_launcher", "c_loop", "format_kernel", "glue_source", "graph_device", "is_dynamic", "layout_of",
           "lowering_half", "render_kernel", "render_unit", "schedule", "target_for"]
