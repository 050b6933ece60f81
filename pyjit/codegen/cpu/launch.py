"""Which scheduled graphs run from the C launcher (NOTE(c-launcher) in csrc/launcher.cpp)
instead of their generated glue, and its description of them.

The glue (NOTE(glue)) is a Python function: its checks, allocations and kernel calls
cost a frame and a few hundred nanoseconds, more than NumPy's own work on small arrays.
A graph qualifies when the launcher can do all the glue does: every input an array
compiled as C-contiguous, whose sizes are static or size symbols (each axis's size as
the input's meta has it and as the shape env canonicalizes it); size guards between
symbols and constants; every step a C kernel (`_C.Kernel`: the CPU target) whose size
arguments are symbols, a matrix product the launcher calls NumPy's matmul for
(NOTE(c-launcher-matmul) in csrc/launcher.cpp: two operands the launcher holds, of the
product's dtype, and a product that is not 0-d), or a reshape, transpose or basic index
by constants of a value the launcher holds, which no kernel reads, and which is not 0-d
(NOTE(c-launcher-views)); buffers whose sizes are static or
symbols; no reduction NumPy refuses over an empty axis (max, argmax: NOTE(reduction-rule))
over a symbolic axis (the glue runs those eagerly when the axis is empty); and outputs
that are arrays the steps made (or inputs), one or a tuple of them, none a 0-d value
that eager execution holds as a NumPy scalar. The glue stays the fallback, for every
call the launcher does not take.

Sizes travel as ints: >= 0 a static size, -(k + 1) the k-th size symbol.
"""

from __future__ import annotations

import numpy as np

from ... import _C
from ...graph import Node, SymInt, TensorMeta
from ...ops.views import permutation
from ..cfamily.reductions import refuses_empty
from ..glue import BLAS_DTYPES, scalar_values, stacked_by_matrix
from ..scheduling.lowering import canonical
from ..scheduling.scheduler import EagerStep, KernelStep, reduction_parameters

_VIEWS = ("reshape", "transpose", "getitem")  # NOTE(c-launcher-views)


class _Unsupported(Exception):
    """The graph needs what only the glue does."""


def c_launcher(schedule, layouts: dict[str, str], glue, kernels: dict, reuse_buffers: bool = False):
    """A `_C.Launcher` running `schedule` with `glue` as its fallback, or None when the
    graph does not qualify. `kernels` maps "k_<kernel name>" to the loaded kernels;
    `reuse_buffers`: NOTE(launcher-buffer-reuse)."""
    try:
        return _Description(schedule, kernels).launcher(layouts, glue, reuse_buffers)
    except _Unsupported:
        return None


class _Description:
    def __init__(self, schedule, kernels: dict):
        self.schedule = schedule
        self.kernels = kernels
        self.symbols: dict[str, int] = {}
        self.slots: dict[str, int] = {}

    def launcher(self, layouts: dict[str, str], glue, reuse_buffers: bool):
        graph = self.schedule.graph
        _refuse_empty_axis_reductions(graph)
        inputs = [self._input(node, layouts) for node in graph.placeholders]
        guards = [self._guard(guard) for guard in graph.shape_env.guards]
        steps, buffers = self._steps(len(inputs))
        outputs = self._outputs()
        _add_releases(steps, set(outputs if isinstance(outputs, tuple) else (outputs,)) | set(range(len(inputs))))
        return _C.Launcher(glue, inputs, buffers, [tuple(step) for step in steps], outputs, guards,
                           reuse_buffers=reuse_buffers)

    def _size(self, size, bind: bool = False) -> int:
        """A size as the launcher takes it; `bind`: a new symbol may be bound here."""
        if type(size) is int:
            return size
        if not isinstance(size, SymInt) or len(size.terms) != 1 or str(size) not in size.symbols():
            raise _Unsupported(f"size {size} is not a lone symbol")
        name = str(size)
        if name not in self.symbols:
            if not bind:
                raise _Unsupported(f"no input binds {name}")
            self.symbols[name] = len(self.symbols)
        return -(self.symbols[name] + 1)

    def _input(self, node: Node, layouts: dict[str, str]) -> tuple:
        meta = node.meta
        if not isinstance(meta, TensorMeta) or layouts.get(node.name, "C") != "C":
            raise _Unsupported(f"input {node.name} is not a C-contiguous array")
        self.slots[self.schedule.names[node]] = len(self.slots)
        axes = []
        for size in meta.shape:
            sizes = [size] if str(canonical(size)) == str(size) else [size, canonical(size)]
            axes.append(tuple(self._size(each, bind=True) for each in sizes))
        return np.dtype(meta.dtype), tuple(axes)

    def _guard(self, guard) -> tuple:
        if guard.relation not in ("==", "!=", "<", "<=", ">", ">="):
            raise _Unsupported(f"size guard {guard}")
        return self._size(guard.lhs), guard.relation, self._size(guard.rhs)

    def _steps(self, first_buffer: int) -> tuple[list, list]:
        """([kernel, slots, sizes, allocate, release] per step, the buffers' (dtype,
        shape)), as the glue runs them: a kernel's output is a new buffer where it is
        first written."""
        steps, buffers, allocated = [], [], set()
        read = {name for step in self.schedule.steps if isinstance(step, KernelStep) for name in step.buffers}
        for step in self.schedule.steps:
            if isinstance(step, EagerStep) and getattr(step.node.target, "name", None) in _VIEWS:
                steps.append(self._view(step.node, first_buffer, buffers, read))
                continue
            if isinstance(step, EagerStep):
                steps.extend(self._matmul(step.node, first_buffer, buffers, allocated, read))
                continue
            kernel = self.kernels.get(f"k_{step.kernel.name}") if isinstance(step, KernelStep) else None
            if not isinstance(kernel, _C.Kernel):  # an eager step, or a kernel of another target
                raise _Unsupported("a step that is not a C kernel")
            used, allocate = [], []
            for name, param in zip(step.buffers, step.kernel.buffers):
                if param.output and name not in allocated:
                    allocated.add(name)
                    self.slots[name] = self._buffer(first_buffer, buffers, np.dtype(param.dtype),
                                                    self.schedule.buffers[name].shape)
                    allocate.append(self.slots[name])
                if name not in self.slots:
                    raise _Unsupported(f"{name} is a value no kernel wrote: a constant or a scalar input")
                used.append(self.slots[name])
            if not set(step.kernel.sizes) <= set(self.symbols):
                raise _Unsupported("a kernel size that is not a bound symbol (a stride)")
            sizes = [-(self.symbols[name] + 1) for name in step.kernel.sizes]
            steps.append([kernel, used, sizes, allocate, []])
        return steps, buffers

    def _matmul(self, node: Node, first_buffer: int, buffers: list, allocated: set, read: set) -> list:
        """The steps of a matrix product into a new buffer (NOTE(c-launcher-matmul)),
        which a kernel after it may write in place (NOTE(epilogue-in-place)), or into a
        view of one (NOTE(product-layout))."""
        if getattr(node.target, "name", None) != "matmul" or len(node.args) != 2 or node.kwargs:
            raise _Unsupported("an eager step that is not a matrix product")
        dtype = np.dtype(node.meta.dtype)
        operands = [self.slots.get(self.schedule.names.get(arg)) if isinstance(arg, Node) else None
                    for arg in node.args]
        if None in operands or any(np.dtype(arg.meta.dtype) != dtype for arg in node.args) or not node.meta.shape:
            raise _Unsupported("a matrix product of values the launcher does not hold, of mixed dtypes, or 0-d")
        name = self.schedule.names[node]
        allocated.add(name)
        axes = None if name in read else _transposed_user(node)
        if axes is None:
            self.slots[name] = self._buffer(first_buffer, buffers, dtype, node.meta.shape)
            return [[np.matmul, operands + [self.slots[name]], stacked_by_matrix(node), [self.slots[name]], []]]
        transposed = self._buffer(first_buffer, buffers, dtype, tuple(node.meta.shape[axis] for axis in axes))
        self.slots[name] = self._buffer(first_buffer, buffers, dtype, node.meta.shape)
        inverse = sorted(range(len(axes)), key=axes.__getitem__)
        return [["transpose", [transposed, self.slots[name]], inverse, [transposed], []],
                [np.matmul, operands + [self.slots[name]], False, [], []]]

    def _buffer(self, first_buffer: int, buffers: list, dtype: np.dtype, shape: tuple) -> int:
        """The slot of a new value of `shape` (static sizes or lone symbols)."""
        buffers.append((dtype, tuple((self._size(canonical(size)),) for size in shape)))
        return first_buffer + len(buffers) - 1

    def _view(self, node: Node, first_buffer: int, buffers: list, read: set) -> list:
        """The step of a view (NOTE(c-launcher-views)): the step fills its result's
        slot, which is never allocated."""
        name, source = self.schedule.names[node], node.args[0]
        slot = self.slots.get(self.schedule.names.get(source)) if isinstance(source, Node) else None
        if slot is None or name in read or not node.meta.shape or node.kwargs:
            raise _Unsupported("a view of a value the launcher does not hold, read by a kernel, or 0-d")
        kind = node.target.name
        if kind == "reshape":
            parameters = [self._size(canonical(size)) for size in node.meta.shape]
        elif kind == "transpose":
            parameters = list(permutation(node.args[1] if len(node.args) > 1 else None, source.meta.ndim))
        else:
            parameters = node.args[1]
            if not _constant_index(parameters):
                raise _Unsupported(f"an index that is not a constant: {parameters!r}")
        self.slots[name] = self._buffer(first_buffer, buffers, np.dtype(node.meta.dtype), node.meta.shape)
        return [kind, [slot, self.slots[name]], parameters, [], []]

    def _outputs(self) -> int | tuple:
        output = self.schedule.graph.output_node.args[0]
        nodes = [output] if isinstance(output, Node) else output
        if type(nodes) not in (list, tuple) or not all(isinstance(node, Node) for node in nodes):
            raise _Unsupported("outputs that are not arrays")
        if any(node.meta.shape == () for node in nodes) and set(nodes) & scalar_values(self.schedule.graph):
            raise _Unsupported("an output eager execution holds as a NumPy scalar")
        found = [self.slots.get(self.schedule.names.get(node)) for node in nodes]
        if None in found:
            raise _Unsupported("an output no kernel wrote")
        return found[0] if isinstance(output, Node) else tuple(found)


def _refuse_empty_axis_reductions(graph) -> None:
    if reduces_symbolic_axis_without_identity(graph):
        raise _Unsupported("a reduction without an identity over a symbolic axis")


def reduces_symbolic_axis_without_identity(graph) -> bool:
    """Whether `graph` reduces a symbolic axis, which may be empty, by a reduction NumPy
    refuses over an empty one (max, argmax: NOTE(reduction-rule))."""
    for node in graph.calls():
        if refuses_empty(node):
            x, axes, _ = reduction_parameters(node)
            if any(isinstance(canonical(x.meta.shape[axis]), SymInt) for axis in axes):
                return True
    return False


# NOTE(product-layout): a batched product whose one use is a transpose that keeps the
# last axis last (the attention's heads, (batch, heads, length, width) transposed to
# (batch, length, heads, width) before they are merged into rows) is written by NumPy's
# matmul straight into a view of a buffer in the transposed layout: the transpose is
# then C-contiguous, and the reshape that merges the heads a view instead of a copy of
# the product. Each matrix of the output has unit column stride and a row stride no
# smaller than its width, so NumPy's loop calls the same GEMM on the same operands with
# another ldc; the BLAS accumulates each element in registers, so its bits are those of
# the glue's product into a fresh array (the tests compare them bit for bit). A stack
# by one matrix keeps NOTE(flat-matmul) instead: its rows are one GEMM. A transpose the
# graph returns keeps the eager product's layout, so the caller gets eager's strides.
def _transposed_user(node: Node) -> tuple[int, ...] | None:
    """The axes of the transpose that is `node`'s one use, when NOTE(product-layout)
    applies to the product `node`."""
    users = list(node.users)
    if len(users) != 1 or stacked_by_matrix(node) or np.dtype(node.meta.dtype) not in BLAS_DTYPES:
        return None
    user, ndim = users[0], node.meta.ndim
    if (getattr(user.target, "name", None) != "transpose" or user.kwargs or user.args[0] is not node
            or any(later.kind == "output" for later in user.users)):  # an output keeps eager's strides
        return None
    axes = permutation(user.args[1] if len(user.args) > 1 else None, ndim)
    return axes if axes[-1] == ndim - 1 and axes != tuple(range(ndim)) else None


def _constant_index(index) -> bool:
    """Whether a basic index holds only ints, slices of ints, None and Ellipsis."""
    if type(index) is tuple:
        return all(_constant_index(item) for item in index)
    if type(index) is slice:
        return all(bound is None or type(bound) is int for bound in (index.start, index.stop, index.step))
    return index is None or index is Ellipsis or type(index) is int


def _add_releases(steps: list, kept: set[int]) -> None:
    """Each buffer no output holds is dropped after the last step that uses it."""
    last = {}
    for index, step in enumerate(steps):
        for slot in step[1]:
            last[slot] = index
    for slot, index in last.items():
        if slot not in kept:
            steps[index][4].append(slot)
