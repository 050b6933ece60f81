"""Which scheduled graphs run from the C launcher (NOTE(c-launcher) in csrc/launcher.cpp)
instead of their generated glue, and its description of them.

The glue (NOTE(glue)) is a Python function: its checks, allocations and kernel calls
cost a frame and a few hundred nanoseconds, more than NumPy's own work on small arrays.
A graph qualifies when the launcher can do all the glue does: every input an array of
static shape compiled as C-contiguous, every step a C kernel (`_C.Kernel`: the CPU
target) with no size arguments (static shapes), no size guards, and outputs that are arrays the kernels wrote (or
inputs), one or a tuple of them, none a 0-d value that eager execution holds as a NumPy
scalar. The glue stays the fallback, for every call the launcher does not take.
"""

from __future__ import annotations

import numpy as np

from .. import _C
from ..codegen.lowering import canonical
from ..codegen.scheduler import KernelStep
from ..codegen.wrapper import scalar_values
from ..graph import Node, TensorMeta


def c_launcher(schedule, layouts: dict[str, str], glue, kernels: dict):
    """A `_C.Launcher` running `schedule` with `glue` as its fallback, or None when the
    graph does not qualify. `kernels` maps "k_<kernel name>" to the loaded kernels."""
    graph = schedule.graph
    if graph.shape_env.guards:
        return None
    slots, inputs = {}, []
    for node in graph.placeholders:
        meta = node.meta
        if not isinstance(meta, TensorMeta) or layouts.get(node.name, "C") != "C" or _static(meta.shape) is None:
            return None
        slots[schedule.names[node]] = len(inputs)
        inputs.append((np.dtype(meta.dtype), meta.shape))
    steps = _steps(schedule, slots, len(inputs), kernels)
    outputs = _outputs(schedule, slots)
    if steps is None or outputs is None:
        return None
    steps, buffers = steps
    _add_releases(steps, set(outputs if isinstance(outputs, tuple) else (outputs,)) | set(range(len(inputs))))
    return _C.Launcher(glue, inputs, buffers, [tuple(step) for step in steps], outputs)


def _static(shape: tuple) -> tuple | None:
    sizes = tuple(canonical(size) for size in shape)
    return sizes if all(type(size) is int for size in sizes) else None


def _steps(schedule, slots: dict[str, int], first_buffer: int, kernels: dict):
    """([kernel, slots, allocate, release] per step, the buffers' (dtype, shape)), as
    the glue runs them: a kernel's output is a new buffer where it is first written."""
    steps, buffers, allocated = [], [], set()
    for step in schedule.steps:
        if not isinstance(step, KernelStep) or step.kernel.sizes or \
                not isinstance(kernels[f"k_{step.kernel.name}"], _C.Kernel):  # a CPU kernel
            return None
        used, allocate = [], []
        for name, param in zip(step.buffers, step.kernel.buffers):
            if param.output and name not in allocated:
                shape = _static(schedule.buffers[name].shape)
                if shape is None:
                    return None
                allocated.add(name)
                slots[name] = first_buffer + len(buffers)
                buffers.append((np.dtype(param.dtype), shape))
                allocate.append(slots[name])
            if name not in slots:  # a value no kernel wrote: a constant or a scalar input
                return None
            used.append(slots[name])
        steps.append([kernels[f"k_{step.kernel.name}"], used, allocate, []])
    return steps, buffers


def _outputs(schedule, slots: dict[str, int]) -> int | tuple | None:
    output = schedule.graph.output_node.args[0]
    nodes = [output] if isinstance(output, Node) else output
    if type(nodes) not in (list, tuple) or not all(isinstance(node, Node) for node in nodes):
        return None
    if any(node.meta.shape == () for node in nodes) and set(nodes) & scalar_values(schedule.graph):
        return None
    found = [slots.get(schedule.names.get(node)) for node in nodes]
    if None in found:
        return None
    return found[0] if isinstance(output, Node) else tuple(found)


def _add_releases(steps: list, kept: set[int]) -> None:
    """Each buffer no output holds is dropped after the last step that uses it."""
    last = {}
    for index, (_, used, _, _) in enumerate(steps):
        for slot in used:
            last[slot] = index
    for slot, index in last.items():
        if slot not in kept:
            steps[index][3].append(slot)
