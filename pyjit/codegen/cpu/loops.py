"""A loop body's steps as one C loop (NOTE(c-loops)).

NOTE(c-loops): a loop node (NOTE(loop-capture) in pyjit/frontend/loops.py) runs its
compiled body once per index, and the body's glue (NOTE(glue)) costs a Python frame,
its checks and an allocation per buffer at every index: for a recurrence
`y[t] = a * y[t - 1] + x[t]` that is all the time there is. So when the inductor
backend compiles a body for the CPU and the body's schedule allows it, the body's
translation unit gets one more function, `<prefix>loop`, with the kernels' ABI
(buffers, then sizes: start, stop, step and the other size symbols):

    for (i = start; step > 0 ? i < stop : i > stop; i += step) { kernel_1(...); ... }

each kernel called with the index for its symbol, and each item assignment run as a
copy kernel of its own (`put`: a loop over the assigned view, its offsets affine in
the index). The loop op (`_loop_op` in frontend/loops.py) calls the compiled body's
`run_loop` once; its Python entry checks once what the glue checks at every index
(types, dtypes, shapes, C-contiguity, size guards), allocates each buffer a kernel
writes once, and returns None, which makes the loop op run its Python loop as before,
for anything it was not compiled for. OpenMP threads run inside each kernel as they do
anywhere (a kernel decides by its own work); iterations run in order, one after
the other, since each may read what the one before wrote.

A body qualifies when
  * every array input was compiled C-contiguous (NOTE(layouts)), and every other input
    is a size symbol (the index, an enclosing loop's index) or a Python number; every
    symbol an input's size names is one some input gives alone (an axis `s0`, not only
    `4*s0`), which the entry binds without solving for it;
  * every step is a C kernel whose size arguments are symbols (no strides), or an
    item assignment `x[key] = values` the glue runs in place (NOTE(assignment-in-place):
    into a donated carry or a buffer of its own) with a basic `key` (ints, slices and
    size expressions) and `values` an array the steps hold of the target's dtype, not
    the target itself; BLAS calls, allocations and other eager ops keep the Python loop;
  * each output is the array its carry came in as: the body updates its carries in
    place (NOTE(donated-carries)). A body that rebinds a carry to a new array
    (`u = 0.5 * (u[:-2] + u[2:])`) keeps the Python loop;
  * every size guard names only symbols the inputs give and is linear in the index:
    it is checked at the first and the last index, and a linear inequality that holds
    at both ends holds between them;
  * no reduction without an identity (max, argmax) runs over a symbolic axis (NumPy
    raises on an empty one; the glue runs it eagerly to raise), and the kernels are not
    autotuned (a tuned kernel chooses per call, NOTE(cpu-autotune)).
An assignment whose values a kernel already stored into the target (NOTE(assignment-by-
kernel) in the scheduler: a Jacobi sweep's `B[1:-1] = ...`) is no call at all: its result
is the target's buffer.

A buffer whose size depends on the index (`L[i, :i] * x[:i]` kept in a buffer) is
allocated once at the largest size of the range: each axis's size is linear in the
index, so largest at one end.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...graph import SymInt, TensorMeta
from ...graph.node import Node
from ...ops.views import basic_index_shape
from ...utils import counters
from ..glue import assignments_in_place, guard_symbols, guard_text, lone_symbol
from ..ir.index import Index
from ..ir.kernel_ir import Call, Constant, Dim, Load, Loop, Reduce, Store, walk_values
from ..scheduling.lowering import NotLowerable, assignment_index, broadcast_index, canonical, is_one, offset
from ..scheduling.scheduler import EagerStep, KernelStep, make_kernel_step
from .launch import reduces_symbolic_axis_without_identity

_FIXED_SIZES = 3  # start, stop, step
# NOTE(small-bodies): the kernels are functions of the library, which code built with
# -fPIC may not inline (another library could interpose them), so each iteration of the
# C loop would call each of them: for the recurrence that call costs more than its
# work. A body of at most SMALL_BODY loads and operations calls its kernels through
# local aliases (`static ... __attribute__((alias(...)))`), which GCC may inline: the
# recurrence's loop then compiles to one tight loop of five instructions. Larger bodies
# keep their calls, so no loop function grows past what NOTE(long-kernels) measures.
SMALL_BODY = 64


@dataclasses.dataclass(frozen=True)
class CLoop:
    """The C function of NOTE(c-loops), rendered into its graph's translation unit
    after the kernels it calls."""

    name: str
    text: str
    buffers: int
    sizes: int


class _Unsupported(Exception):
    """The body needs what only its glue does."""


def c_loop(schedule, layouts: dict[str, str], prefix: str) -> LoopPlan | None:
    """The plan of `schedule`'s body as one C loop (NOTE(c-loops)), or None when its
    graph is not a loop body or does not qualify."""
    try:
        return _Planner(schedule, layouts, prefix).plan()
    except (_Unsupported, NotLowerable):
        return None


@dataclasses.dataclass
class LoopPlan:
    """What the unit needs (`kernels`: the copy kernels, then the CLoop) and what its
    Python entry checks and allocates."""

    kernels: list
    loop: CLoop
    index: str  # the index's symbol
    # per input after the index: ("array", dtype, ((size, canonical size), ...)) | ("symbol", name)
    # | ("scalar", type)
    inputs: list
    slots: list  # per buffer of the loop: ("input", position) | ("scalar", position, dtype) | ("buffer", dtype, shape)
    sizes: list[str]  # the symbols passed after start, stop, step
    guards: list  # (symbols, compiled guard text)
    carries: int

    def bind(self, library) -> LoopEntry:
        return LoopEntry(self, library.kernel(self.loop.name, self.loop.buffers, self.loop.sizes))


class _Planner:
    def __init__(self, schedule, layouts: dict[str, str], prefix: str):
        self.schedule, self.layouts, self.prefix = schedule, layouts, prefix
        self.graph = schedule.graph
        self.slots: dict[str, int] = {}  # the glue's name of a value -> its buffer slot
        self.slot_specs: list = []
        self.symbols: set[str] = set()  # symbols the inputs bind
        self.kernels: list = []
        self.calls: list[tuple[str, list[int], list[str]]] = []
        self.work = 0  # the loads and calls of the kernels called (NOTE(small-bodies))

    def plan(self) -> LoopPlan:
        placeholders = self.graph.placeholders
        index = lone_symbol(placeholders[0].meta) if placeholders else None
        output = self.graph.output_node.args[0]
        if index is None or type(output) is not tuple or len(output) >= len(placeholders):
            raise _Unsupported("not a loop body")
        self.index = index
        self.symbols.add(index)
        inputs = [self._input(position, node) for position, node in enumerate(placeholders[1:])]
        if any(isinstance(each, SymInt) and not each.symbols() <= self.symbols
               for spec in inputs if spec[0] == "array" for forms in spec[2] for each in forms):
            raise _Unsupported("an input's size names a symbol no input gives alone (`4*s0`)")
        if reduces_symbolic_axis_without_identity(self.graph):
            raise _Unsupported("a reduction without an identity over a symbolic axis")
        self._steps()
        for carry, node in zip(placeholders[1:], output):
            if self.slots.get(self.schedule.names.get(node)) != self.slots[self.schedule.names[carry]]:
                raise _Unsupported("a carry the body does not update in place")
        guards = [self._guard(guard) for guard in self.graph.shape_env.guards]
        sizes = sorted(self.symbols - {index}, key=lambda name: int(name[1:]))
        loop = CLoop(f"{self.prefix}loop", self._text(f"{self.prefix}loop", sizes), len(self.slot_specs),
                     _FIXED_SIZES + len(sizes))
        return LoopPlan([*self.kernels, loop], loop, index, inputs, self.slot_specs, sizes, guards, len(output))

    def _steps(self) -> None:
        """The calls of the loop's body, in the schedule's order."""
        in_place = assignments_in_place(self.schedule, self.layouts)
        for position, step in enumerate(self.schedule.steps):
            if isinstance(step, KernelStep):
                self._kernel(step)
            elif isinstance(step, EagerStep) and step.node in self.schedule.assigned:
                self._assigned_by_kernel(step.node)
            elif isinstance(step, EagerStep) and position in in_place:
                self._assignment(step.node)
            else:
                raise _Unsupported("a step that is not a kernel or an assignment in place")

    def _input(self, position: int, node: Node) -> tuple:
        meta, name = node.meta, self.schedule.names[node]
        if isinstance(meta, TensorMeta):
            if self.layouts.get(node.name, "C") != "C":
                raise _Unsupported("a strided input")
            self._slot(name, ("input", position))
            for size in meta.shape:
                self.symbols.update(lone_symbol(each) for each in (size, canonical(size)) if lone_symbol(each))
            # Each size as traced and as known now: the shape env may learn more later.
            return "array", np.dtype(meta.dtype), tuple((size, canonical(size)) for size in meta.shape)
        symbol = lone_symbol(meta)
        if symbol is not None:
            self.symbols.add(symbol)
            return "symbol", symbol
        if meta not in (bool, int, float):
            raise _Unsupported(f"an input of type {meta}")
        array = self.schedule.buffers.get(f"{name}_array")
        if array is not None:
            self._slot(array.name, ("scalar", position, array.dtype))
        return "scalar", meta

    def _slot(self, name: str, spec: tuple) -> int:
        self.slots[name] = len(self.slot_specs)
        self.slot_specs.append(spec)
        return self.slots[name]

    def _kernel(self, step: KernelStep) -> None:
        slots = []
        for name, param in zip(step.buffers, step.kernel.buffers):
            if param.output and name not in self.slots and name in self.schedule.allocations:
                shape = tuple(canonical(size) for size in self.schedule.buffers[name].shape)
                for size in shape:
                    if isinstance(size, SymInt) and not (self._linear(size) and size.symbols() <= self.symbols):
                        raise _Unsupported(f"a buffer of size {size}, which no input gives")
                self._slot(name, ("buffer", np.dtype(param.dtype), shape))
            if name not in self.slots:
                raise _Unsupported(f"{name}, a value no input or kernel gives")
            slots.append(self.slots[name])
        if not set(step.kernel.sizes) <= self.symbols:
            raise _Unsupported("a kernel size that is not a bound symbol (a stride)")
        self.calls.append((step.kernel.name, slots, list(step.kernel.sizes)))
        self.work += sum(1 for statement in step.kernel.statements() if isinstance(statement, (Store, Reduce))
                         for value in walk_values(statement.value) if isinstance(value, (Load, Call)))

    def _assigned_by_kernel(self, node: Node) -> None:
        """An assignment whose values a kernel stored into the target (NOTE(assignment-by-
        kernel)): its result is the target's buffer."""
        names = self.schedule.names
        target = names.get(node.args[0])
        if target not in self.slots:
            raise _Unsupported("an assignment into a value the loop does not hold")
        self.slots[names[node]] = self.slots[target]

    def _assignment(self, node: Node) -> None:
        """`target[key] = values` in place, as a copy kernel over the view."""
        target, key, values = node.args
        names, buffers = self.schedule.names, self.schedule.buffers
        target_name = names.get(target)
        view_shape = basic_index_shape(target.meta.shape, key)
        dims = [Dim(f"i{axis}", Index.of(canonical(size))) for axis, size in enumerate(view_shape)
                if not is_one(size)]
        variables = iter(Index.name(dim.var) for dim in dims)
        index = tuple(Index.const(0) if is_one(size) else next(variables) for size in view_shape)
        dtype = np.dtype(target.meta.dtype)
        if target_name not in self.slots:
            raise _Unsupported("an assignment into a value the loop does not hold")
        if isinstance(values, Node):
            source = self._values(names.get(values), values.meta, index, target_name)
        else:
            source = Constant(_assigned_constant(values, dtype), dtype)
        store = Store(target_name, offset(buffers[target_name].strides,
                                          assignment_index(target.meta.shape, key, index)), source)
        body = (Loop(tuple(dims), (store,), parallel=True),) if dims else (store,)
        step = make_kernel_step(f"{self.prefix}put{len(self.kernels)}", body, buffers)
        self.kernels.append(step.kernel)
        self.slots[names[node]] = self.slots[target_name]  # the assignment's result is its target
        self._kernel(step)

    def _values(self, name: str | None, meta, index: tuple, target_name: str) -> Load:
        """The assigned array at `index` of the view: one the loop holds, of the target's
        dtype (no cast), not the target (no overlap), broadcast to the view."""
        if name not in self.slots or self.slots[name] == self.slots[target_name]:
            raise _Unsupported("an assignment of a value the loop does not hold, or of the target itself")
        if not isinstance(meta, TensorMeta) or np.dtype(meta.dtype) != self.schedule.buffers[target_name].dtype \
                or meta.ndim > len(index):
            raise _Unsupported("an assignment that casts, or of more axes than the view")
        buffer = self.schedule.buffers[name]
        return Load(name, offset(buffer.strides, broadcast_index(index, meta.shape)), np.dtype(meta.dtype))

    def _guard(self, guard) -> tuple:
        symbols = guard_symbols(guard)
        if not symbols <= self.symbols:
            raise _Unsupported(f"the size guard {guard} names a size no input gives")
        if self.index in symbols and (not isinstance(guard.lhs, SymInt) or not all(
                self._linear(side) for side in (guard.lhs, guard.rhs))):
            raise _Unsupported(f"the size guard {guard} is not linear in the index")
        return symbols, compile(guard_text(guard), "<pyjit loop guard>", "eval")

    def _linear(self, size) -> bool:
        if isinstance(size, SymInt) and any(monomial.count(self.index) > 1 for monomial in size.terms):
            raise _Unsupported(f"the size {size} is not linear in the index")
        return True

    def _text(self, name: str, sizes: list[str]) -> str:
        arguments = {symbol: f"sizes[{_FIXED_SIZES + position}]" for position, symbol in enumerate(sizes)}
        arguments[self.index] = "i"
        kernels = dict.fromkeys(call[0] for call in self.calls)
        if self.work <= SMALL_BODY:  # NOTE(small-bodies): local names GCC may inline
            callee = {kernel: f"{kernel}_here" for kernel in kernels}
            lines = [f"static void {callee[kernel]}(char *const *buffers, const int64_t *sizes) "
                     f"__attribute__((alias(\"{kernel}\")));" for kernel in kernels]
        else:
            callee = {kernel: kernel for kernel in kernels}
            lines = [f"void {kernel}(char *const *buffers, const int64_t *sizes);" for kernel in kernels]
        lines += [f"void {name}(char *const *buffers, const int64_t *sizes) {{",
                  "    const int64_t start = sizes[0], stop = sizes[1], step = sizes[2];",
                  "    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {"]
        for kernel, slots, kernel_sizes in self.calls:
            pointers = ", ".join(f"buffers[{slot}]" for slot in slots)
            values = ", ".join(arguments[size] for size in kernel_sizes) or "0"
            lines.append(f"        {{ char *const b[] = {{{pointers}}}; const int64_t z[] = {{{values}}}; "
                         f"{callee[kernel]}(b, z); }}")
        return "\n".join(lines + ["    }", "}"])


def _assigned_constant(value, dtype: np.dtype):
    """A Python number as item assignment converts it into an array of `dtype`."""
    if type(value) not in (bool, int, float):
        raise _Unsupported(f"an assignment of {type(value).__name__}")
    try:
        with np.errstate(all="raise"):
            return np.array(value, dtype).item()
    except (OverflowError, ValueError, FloatingPointError) as error:  # NumPy raises at the assignment
        raise _Unsupported(str(error)) from None


class LoopEntry:
    """`run_loop(start, stop, step, *inputs)`: the carries after the whole loop, computed
    by the C loop, or None where the inputs are not what it was compiled for."""

    def __init__(self, plan: LoopPlan, function):
        self.plan, self.function = plan, function

    def __call__(self, start: int, stop: int, step: int, *args):
        plan = self.plan
        bound = self._bind(args)
        if bound is None:
            return None
        trips = range(start, stop, step)
        if not trips:
            counters["inductor"]["loop_runs_in_c"] += 1
            return tuple(args[:plan.carries])
        ends = [{**bound, plan.index: trips[0]}, {**bound, plan.index: trips[-1]}]
        for symbols, check in plan.guards:
            if not all(eval(check, {}, values) for values in (ends if plan.index in symbols else ends[:1])):
                return None
        buffers = []
        for spec in plan.slots:
            if spec[0] == "input":
                buffers.append(args[spec[1]])
            elif spec[0] == "scalar":
                buffers.append(np.asarray(args[spec[1]], spec[2]))
            else:
                shape = tuple(max(_value(size, values) for values in ends) for size in spec[2])
                buffers.append(np.empty(shape, spec[1]))
        self.function(*buffers, start, stop, step, *(bound[name] for name in plan.sizes))
        counters["inductor"]["loop_runs_in_c"] += 1
        return tuple(args[:plan.carries])

    def _bind(self, args) -> dict[str, int] | None:
        """The size symbols the inputs give; None where an input is not what the loop was
        compiled for."""
        bound: dict[str, int] = {}
        later = []
        if len(args) != len(self.plan.inputs):
            return None
        for arg, spec in zip(args, self.plan.inputs):
            if spec[0] == "symbol":
                if type(arg) is not int or bound.setdefault(spec[1], arg) != arg:
                    return None
            elif spec[0] == "scalar":
                if type(arg) is not spec[1]:
                    return None
            else:
                if (type(arg) is not np.ndarray or arg.dtype != spec[1] or arg.ndim != len(spec[2])
                        or not arg.flags.c_contiguous):
                    return None
                for forms, actual in zip(spec[2], arg.shape):
                    for each in forms:
                        symbol = lone_symbol(each)
                        if symbol is not None and symbol not in bound:
                            bound[symbol] = actual
                        else:
                            later.append((each, actual))
        if any(_value(size, bound) != actual for size, actual in later):
            return None
        return bound


def _value(size, values: dict[str, int]) -> int:
    return size.evaluate(values) if isinstance(size, SymInt) else size


