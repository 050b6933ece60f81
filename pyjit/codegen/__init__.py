"""Code generation: fusion scheduling, a loop-level kernel IR, renderers for C (CPU)
and CUDA (CuPy), and building generated C into loaded kernels (`build`)."""

from .c_renderer import render_kernel, render_unit
from .index import Index
from .kernel_ir import Kernel, format_kernel
from .scheduler import Schedule, schedule

__all__ = ["Index", "Kernel", "Schedule", "format_kernel", "render_kernel", "render_unit", "schedule"]
