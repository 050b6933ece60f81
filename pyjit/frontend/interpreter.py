"""The symbolic interpreter: runs a frame's bytecode on symbolic values, recording the
array operations into a graph and what it relied on into guards.

NOTE(symbolic-interpreter): `Tracer(frame, ...)` walks the decoded instructions of the
frame's code from the top, each through its one handler (pyjit/frontend/opcode_table.py),
on a stack and locals of values (NOTE(value-kinds)). Arguments, globals, closure cells
and what is read from them are *wrapped* when first loaded: an array becomes a graph
placeholder with an array guard, a constant a constant guard, a module an identity
guard, any other object a type guard (NOTE(guard-policy)). Nothing that is never loaded
is guarded, so an unused argument never causes a recompile. A handler that meets what
it cannot model raises `Break` (NOTE(break-reasons)); RETURN_VALUE ends the walk with
the returned value, from which pyjit/frontend/output.py builds the graph's output and
the transformed code.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import types
from typing import Any

import numpy as np

from .. import config
from ..autograd import Tensor, no_grad
from ..graph import Graph, Node, TensorMeta
from ..ops.registry import Composite, Op
from ..source import SourceLoc
from .breaks import Break, graph_break
from .bytecode import Instr, Label, decoded
from .carried_numbers import CarriedNumber
from .control_flow import WITH_CLEANUP
from .functionalise import check_new_input
from .guards import GuardSet
from .opcode_table import HANDLERS, unhandled_reason
from .opcodes import COMPREHENSION_CLEANUP
from .policy import is_pyjit_class
from .resume import is_split
from .side_effects import SideEffects
from .sources import BuiltinSource, ClosureSource, GlobalSource, LocalSource, Source
from .values import (NULL, ArrayValue, CallableValue, ConstantValue, ModuleValue, ObjectValue, SequenceValue,
                     SUPPORTED_BUILTINS, Value, describe, reaches, registry_entry)
from .while_loops import capture_while, number_arg, while_loops

_GRAD_MODE_EXIT = inspect.getattr_static(no_grad, "__exit__")  # never suppresses: NOTE(grad-mode-with)
# Python values a graph may bake in, checked by value (NOTE(constant-guards) in guards.py).
_SCALARS = (int, float, complex, str, bytes, bool, type(None), slice, range, np.dtype, np.generic)
# NumPy dtypes a graph input may have: numbers and bools (the registry's dtypes).
_ARRAY_KINDS = frozenset("biufc")


class Capture:
    """What one capture owns, shared by its frame and every call inlined into it.

    NOTE(capture): a capture is one graph with its guards, its inputs (source, example,
    placeholder), the inputs it writes back (NOTE(functionalisation)), its side effects
    (NOTE(side-effects)), its instruction budget (NOTE(loop-unrolling)), the `with`
    handler its graph runs under (NOTE(grad-mode-with)), and how it ended: for a
    capture that stopped at a break, whether the break was resumed, split before the
    instruction, or why it was not resumed and the frame runs as it is (`unresumable`);
    the frame's tracer holds the returned value of one that ran to its return. A `Tracer`
    is one frame's interpretation (code, stack, locals, the instruction it is at); the
    frame's tracer and those of the calls inlined into it (NOTE(inlining)) hold the
    same Capture, so no state is copied between them and what a callee records is the
    capture's.

    `dynamic_dims` is the set of (source, dim) the recompile policy made symbolic;
    `dynamic` is compile's `dynamic=` (None: automatic, True: every size >= 2 symbolic,
    False: every size static)."""

    def __init__(self, frame, dynamic_dims: frozenset = frozenset(), dynamic: bool | None = None):
        self.frame = frame
        self.graph = self.root_graph = Graph()  # `graph`: a loop body's while it is traced (NOTE(loop-capture))
        self.bodies: list = []  # the loop bodies being traced, innermost last (pyjit/frontend/loops.py)
        self.size_symbols: dict = {}  # (source, dim) -> its SymInt (Tracer._size)
        self.ranges: dict = {}  # id(range) -> (range, the values range() was called with): NOTE(loop-bounds)
        self.compile_body = None  # the backend, for a loop's body (NOTE(loop-capture)); None: loops unroll
        self.guards = GuardSet(frame.f_globals)
        self.dynamic_dims, self.dynamic = dynamic_dims, dynamic
        self.inputs: list[tuple[Source, Any, Node]] = []  # graph inputs: source, example, placeholder
        self.input_of: dict[Source, ArrayValue] = {}
        self.written: dict[Source, ArrayValue] = {}  # inputs the graph writes back (NOTE(functionalisation))
        self.rebound: list[tuple[ArrayValue, Node]] = []  # (value, node it stood for) per in-place update
        self.side_effects = SideEffects()
        self.first_op_instr: Instr | None = None  # where the transformed code's call points
        self.graph_handler = None  # the `with` cleanup the graph runs under (NOTE(grad-mode-with))
        self.graph_handler_stack: list[Value] = []
        # A resume function that starts at the instruction its original broke at (a
        # split) has no budget: the break it repeats was the limit.
        self.instruction_limit = 0 if is_split(frame.f_code) else config.unroll_limit
        self.instructions_run = 0
        self.unresumable: str | None = None  # why the break it stopped at was not resumed
        self.split = False  # the break was resumed by splitting the frame before it

    def break_outcome(self) -> str:
        """How a capture that stopped at a break ended, in words for the logs."""
        if self.unresumable is not None:
            return f"the frame runs as it is: {self.unresumable}"
        return "split before it; it runs in Python" if self.split else "resumed"

    def checkpoint(self) -> _Mark:
        return _Mark(len(self.graph.nodes) - _leading_placeholders(self.graph), len(self.inputs),
                     len(self.written), len(self.rebound), self.first_op_instr, self.side_effects.checkpoint())

    def rollback(self, mark: _Mark) -> None:
        """Forget what was recorded since `mark`: ops, graph inputs, side effects (an
        inlined call that broke, NOTE(inlining)). Guards stay: they only make the entry
        more specific. A value updated in place since the mark stands for its node of then
        again: the caller's arrays an inlined callee updated keep their values of before
        the call, whose ops are kept."""
        for value, node in reversed(self.rebound[mark.rebound:]):
            value.node = node
        del self.rebound[mark.rebound:]
        # Placeholders (new inputs, values a loop body lifts) go in before the ops, so the
        # ops recorded since the mark are counted from the first op.
        graph = self.graph
        for node in reversed(graph.nodes[_leading_placeholders(graph) + mark.ops:]):
            graph.erase(node)
        new_inputs = [node for _, _, node in self.inputs[mark.inputs:]]
        for source, _, _ in self.inputs[mark.inputs:]:
            del self.input_of[source]
        del self.inputs[mark.inputs:]
        forgotten = list(new_inputs)
        for body in self.bodies:  # outermost first: a nested body lifted its enclosing one's placeholders
            forgotten += body.forget(forgotten)
        for node in reversed(new_inputs):
            self.root_graph.erase(node)
        for source in list(self.written)[mark.written:]:
            del self.written[source]
        self.first_op_instr = mark.first_op_instr
        self.side_effects.rollback(mark.side_effects)


def _leading_placeholders(graph) -> int:
    count = 0
    while count < len(graph.nodes) and graph.nodes[count].kind == "placeholder":
        count += 1
    return count


@dataclasses.dataclass
class _Mark:
    ops: int  # nodes after the placeholders
    inputs: int
    written: int
    rebound: int
    first_op_instr: Any
    side_effects: Any


class Tracer:
    """The interpretation of one frame (NOTE(symbolic-interpreter)): its code, stack,
    locals and the instruction it is at; what it records goes to its `capture`
    (NOTE(capture)). `Tracer(frame, ...)` starts the capture of a frame."""

    def __init__(self, frame, dynamic_dims: frozenset = frozenset(), dynamic: bool | None = None):
        self._start(Capture(frame, dynamic_dims, dynamic), frame.f_code)
        slots = self.code.co_argcount + self.code.co_kwonlyargcount
        slots += bool(self.code.co_flags & 0x04) + bool(self.code.co_flags & 0x08)  # *args, **kwargs
        self.arguments = {name: slot for slot, name in enumerate(self.code.co_varnames[:slots])}
        self.depth = 0  # of inlined calls (NOTE(inlining))

    def _start(self, capture: Capture, code: types.CodeType) -> None:
        self.capture = capture
        self.code = code
        self.bytecode = decoded(code)
        self.stack: list[Value] = []
        self.locals: dict[str, Value] = {}
        self.kw_names: tuple[str, ...] = ()
        self.loc: SourceLoc | None = None
        self.instr: Instr | None = None
        self.index = 0  # of `instr` in `bytecode.instructions`
        self.stack_before: list[Value] = []  # the stack as `instr` found it (NOTE(resume-functions))
        self.returned: Value | None = None
        self.jump_to: Label | None = None

    # Every handler records into these: short for `tracer.capture.<name>`.
    graph = property(lambda self: self.capture.graph)
    guards = property(lambda self: self.capture.guards)
    side_effects = property(lambda self: self.capture.side_effects)

    # -- the walk ---------------------------------------------------------------------------
    def run(self) -> Value:
        """Interpret until RETURN; raises Break where the code cannot be captured. A jump
        handler sets `jump_to` (a label). Loops are unrolled (NOTE(loop-unrolling)) unless
        captured (NOTE(loop-capture)): each instruction interpreted counts in the capture's
        `instructions_run` (inlined calls share their frame's count), and a backward jump
        past `config.unroll_limit` is a break, so the walk always ends."""
        return self.walk(0)

    def walk(self, index: int, region: tuple[int, int] | None = None, until: int | None = None) -> Value | None:
        """Interpret from `instructions[index]` until RETURN (its value); with `region`
        (head, end), a loop body's instructions: until a jump back to the head (None),
        and a Break where control would leave the loop otherwise (NOTE(loop-capture));
        with `until`, also None on reaching `instructions[until]` (NOTE(while-capture))."""
        instructions = self.bytecode.instructions
        heads = while_loops(self)
        label_at = {id(item): index for index, item in enumerate(instructions) if isinstance(item, Label)}
        capture = self.capture
        limit = capture.instruction_limit
        while index < len(instructions):
            if index == until:
                return None
            instr = instructions[index]
            index += 1
            if isinstance(instr, Label):
                continue
            capture.instructions_run += 1
            self.instr, self.index, self.stack_before = instr, index - 1, list(self.stack)
            if instr.loc is not None and instr.loc.lineno is not None:
                self.loc = SourceLoc(self.code.co_filename, instr.loc.lineno)
            if index - 1 in heads:
                past = capture_while(self, heads[index - 1])
                if past is not None:
                    index = past
                    continue
            handler = HANDLERS.get(instr.name)
            if handler is None:
                raise unhandled_reason(instr.name)
            handler(self, instr)
            if self.returned is not None:
                # One reason for both: 3.12 and 3.13 compile a `break` followed by a
                # `return` as the return itself.
                if region is not None:
                    raise Break("unsupported", "a break or return inside the loop")
                return self.returned
            if self.jump_to is not None:
                target, self.jump_to = label_at[id(self.jump_to)], None
                if region is not None and target == region[0]:
                    return None
                if region is not None and not region[0] < target < region[1]:
                    raise Break("unsupported", "a break or return inside the loop")
                if target < index and capture.instructions_run > limit:
                    raise Break("unsupported", f"loop unrolled beyond config.unroll_limit ({limit} instructions)",
                                hint="the rest of the loop runs in Python; raise pyjit.config.unroll_limit to "
                                     "capture it whole")
                index = target
            if region is not None and index >= region[1]:
                raise Break("unsupported", "control leaves the loop")
        raise Break("unsupported", "control ran off the end of the instructions")

    @property
    def root(self) -> Tracer:
        """The tracer of the frame (an InlineTracer's is its caller's, NOTE(inlining))."""
        return self

    def callers(self):
        """The tracers of the calls this one is inlined into, innermost first."""
        return iter(())

    def inlined(self, function: types.FunctionType, source: Source, arguments: dict[str, Value]) -> Tracer:
        """The tracer of a call of `function` inlined here (NOTE(inlining))."""
        return InlineTracer(self, function, source, arguments)

    def holds(self, value: Value) -> bool:
        """Whether a stack or local of the frames being traced holds `value`, at any depth."""
        roots = [*self.stack, *self.locals.values()]
        for caller in self.callers():
            roots += [*caller.stack, *caller.locals.values()]
        return reaches(roots, value)

    def in_try_block(self) -> bool:
        """Whether an op recorded at the current instruction would need an exception
        handler the graph's call cannot have.

        NOTE(grad-mode-with): an error a graph raises must reach the handler its ops
        were under, so ops under a handler are refused, with one exception: the body of
        a `with` whose context manager is pyjit's grad-mode switch (`no_grad()`,
        `enable_grad()`, `set_grad_enabled()`), entered in Python at a break before the
        body (pyjit/frontend/resume.py redoes BEFORE_WITH). Its `__exit__` never
        suppresses an exception, so the transformed code can put the graph's call under
        a copy of the `with`'s cleanup (which restores the grad mode and re-raises)
        without the code after the `with` ever running from there. One graph runs under
        one handler: the first op or break inside such a body sets it."""
        handler = self.instr.handler if self.instr is not None else None
        if handler is not None and self._restores_only(handler):
            handler = None  # NOTE(comprehensions) in opcodes.py
        if handler is None:
            return self.capture.graph_handler is not None
        capture = self.capture
        if capture.graph_handler is None and not self.graph.calls() and self._exits_quietly(handler):
            # The stack the handler starts from, as it is while the graph's ops run.
            capture.graph_handler, capture.graph_handler_stack = handler, self.stack[:handler.depth]
        return handler != capture.graph_handler

    def _restores_only(self, handler) -> bool:
        """Whether `handler` is an inlined comprehension's cleanup (restore the outer
        binding of its variable, re-raise) with no handler of its own: an error it would
        see leaves the frame, so nothing can look at the variable it restores."""
        instructions = self.bytecode.instructions
        start = next(i for i, item in enumerate(instructions) if item is handler.target)
        end = start + 1 + len(COMPREHENSION_CLEANUP)
        cleanup = [item for item in instructions[start + 1:end] if isinstance(item, Instr)]
        return tuple(instr.name for instr in cleanup) == COMPREHENSION_CLEANUP \
            and all(instr.handler is None for instr in cleanup)

    def _exits_quietly(self, handler) -> bool:
        """Whether `handler` is the cleanup of a `with` on a grad-mode switch (NOTE(grad-mode-with))."""
        instructions = self.bytecode.instructions
        start = next((i for i, item in enumerate(instructions) if item is handler.target), None)
        cleanup = tuple(item.name for item in instructions[start:start + 4] if isinstance(item, Instr))[:2]
        if cleanup != WITH_CLEANUP or handler.depth > len(self.stack):
            return False
        exit_method = self.stack[handler.depth - 1]
        manager = getattr(getattr(exit_method, "value", None), "__self__", None)
        if exit_method.source is None or type(exit_method.value) is not types.MethodType \
                or inspect.getattr_static(type(manager), "__exit__", None) is not _GRAD_MODE_EXIT:
            return False
        self.guards.type(exit_method.source.attr("__self__"), type(manager))
        return True

    def note_first_op(self) -> None:
        """The graph call of the transformed code goes where the first op was recorded."""
        if self.capture.first_op_instr is None:
            self.capture.first_op_instr = self.instr

    def push(self, value: Value) -> None:
        self.stack.append(value)

    def pop(self) -> Value:
        return self.stack.pop()

    def popn(self, count: int) -> list[Value]:
        if count == 0:
            return []
        values = self.stack[-count:]
        del self.stack[-count:]
        return values

    # -- reading the frame --------------------------------------------------------------------
    def load_local(self, name: str) -> Value:
        if name in self.code.co_cellvars or name in self.code.co_freevars:
            # 3.13 loads a cell itself with LOAD_FAST to build a closure (LOAD_CLOSURE before).
            raise Break("unsupported", f"the cell of {name!r} is loaded to create a function",
                        hint="creating functions is not captured yet")
        return self._local(name)

    def _local(self, name: str) -> Value:
        value = self.locals.get(name)
        if value is NULL:  # unbound by LOAD_FAST_AND_CLEAR (NOTE(comprehensions) in opcodes.py)
            raise Break("user_error", f"local variable {name!r} is read before it is assigned")
        if value is None:
            slot = self.arguments.get(name)
            if slot is None:
                raise Break("user_error", f"local variable {name!r} is read before it is assigned")
            value = self.locals[name] = self.wrap(self.capture.frame.args[slot], LocalSource(slot, name))
        return value

    def load_global(self, name: str) -> Value:
        frame = self.capture.frame
        if name in frame.f_globals:
            return self.wrap(frame.f_globals[name], GlobalSource(name))
        if name in frame.f_builtins:
            return self.wrap(frame.f_builtins[name], BuiltinSource(name))
        raise Break("user_error", f"name {name!r} is not defined")

    def load_closure(self, name: str) -> Value:
        if name in self.code.co_freevars:
            index = self.code.co_freevars.index(name)
            try:
                contents = self.capture.frame.f_func.__closure__[index].cell_contents
            except ValueError:
                raise Break("user_error", f"free variable {name!r} is read before it is assigned") from None
            return self.wrap(contents, ClosureSource(index, name))
        return self._local(name)  # a cell of this frame: an argument an inner function captures

    # -- wrapping (NOTE(guard-policy)) --------------------------------------------------------
    def wrap(self, value: Any, source: Source) -> Value:
        """The value for `value`, read from `source`, with the guards that what it becomes
        relies on.

        NOTE(guard-policy): an array (an exact `numpy.ndarray` of a numeric or bool dtype)
        becomes a graph input guarded by type, dtype and shape; sizes are static unless
        the recompile policy or `dynamic=True` made them symbolic; strides are not
        guarded (every backend takes any layout: NOTE(layouts) in pyjit/backends/inductor.py).
        Scalars, slices, ranges, dtypes and NumPy scalars are constants guarded by value;
        tuples and lists by type and length, their items in turn; modules, functions,
        classes and the builtins the interpreter calls by identity; other objects by
        exact type (attributes read from them are guarded in turn)."""
        if type(value) is np.ndarray or _is_cupy_array(value):
            return self.array_input(value, source)
        if type(value) is Tensor or (issubclass(type(value), Tensor) and is_pyjit_class(type(value))):
            return self.array_input(value, source)  # Tensor and pyjit.nn.Parameter
        # NOTE(no-user-code-at-trace): checks look at `type(value)`, never `isinstance(value,
        # ...)` (which reads a user `__class__`) nor `hasattr(value, ...)` (a user
        # `__getattr__`): tracing must not run user code nor let its exceptions escape.
        kind = type(value)
        if issubclass(kind, _SCALARS) or (issubclass(kind, type) and issubclass(value, np.generic)):
            self.guards.constant(source, value)
            return ConstantValue(value, source)
        if kind in (list, dict, set):  # one value per object, mutations tracked (NOTE(side-effects))
            return self.side_effects.wrap_container(self, value, source)
        if kind is tuple:
            self.guards.type(source, type(value))
            self.guards.length(source, len(value))
            return SequenceValue(type(value), [self.wrap(item, source.item(i)) for i, item in enumerate(value)],
                                 source)
        return self._wrap_object(value, source)

    def _wrap_object(self, value: Any, source: Source) -> Value:
        kind = type(value)  # NOTE(no-user-code-at-trace)
        if issubclass(kind, types.ModuleType):
            self.guards.identity(source, value)
            return ModuleValue(value, source)
        entry = registry_entry(value)
        if entry is not None:
            self.guards.identity(source, value)
            return CallableValue("numpy", value, source=source)
        if kind in (Op, Composite):
            self.guards.identity(source, value)
            return CallableValue("op", value, source=source)
        if value is graph_break:
            self.guards.identity(source, value)
            return CallableValue("graph_break", value, source=source)
        if kind in (types.BuiltinMethodType, types.MethodType) \
                and not issubclass(type(value.__self__), types.ModuleType):
            # A bound method (`y.item`, passed to a resume function between its load
            # and its call) is made anew on each read: only ever called at a break, in
            # Python, so its type is all the trace relies on.
            self.guards.type(source, type(value))
            return ObjectValue(value, source)
        if kind is types.BuiltinFunctionType or issubclass(kind, type):
            self.guards.identity(source, value)
            if any(value is builtin for builtin in SUPPORTED_BUILTINS) or getattr(value, "__self__", None) is math:
                return CallableValue("builtin", value, source=source)  # math's functions fold on constants
            return ConstantValue(value, source) if issubclass(kind, type) else ObjectValue(value, source)
        if kind is types.FunctionType and isinstance(source.root, LocalSource):
            # NOTE(function-arguments): a function handed in as an argument (a hook in
            # compiled autograd's `hooks`, a callback) is often made anew for each call,
            # as torch's CLOSURE_MATCH knows: it is guarded by its code, globals and
            # number of defaults; what its inlined body reads (defaults, closure cells,
            # globals) is read through its source and guarded in turn.
            self.guards.type(source, kind)
            self.guards.identity(source.attr("__code__"), value.__code__)
            self.guards.identity(source.attr("__globals__"), value.__globals__)
            defaults = value.__defaults__
            self.guards.type(source.attr("__defaults__"), type(defaults))
            if defaults is not None:
                self.guards.length(source.attr("__defaults__"), len(defaults))
            return ObjectValue(value, source)
        if kind is types.FunctionType:
            self.guards.constant(source, value)
            return ObjectValue(value, source)
        if issubclass(kind, (np.ndarray, Tensor)) \
                or inspect.getattr_static(kind, "__array_function__", None) is not None:
            # NOTE(value-later)
            raise Break("unsupported", f"{source} is {describe(value)}; only numpy.ndarray and pyjit.Tensor "
                        "inputs are captured")
        self.guards.type(source, type(value))
        return ObjectValue(value, source)

    def array_input(self, example: np.ndarray | Tensor, source: Source) -> ArrayValue:
        """A graph input: a NumPy or CuPy ndarray, or a pyjit.Tensor (its array's device
        is the node's, and the array guard checks it).

        NOTE(tensor-capture): a pyjit.Tensor (or pyjit.nn.Parameter) is a graph input
        like an array, guarded by `GuardSet.tensor` (type, array, requires_grad) and by
        grad mode. The graph's nodes are registry ops, so when it runs on Tensors each
        op dispatches to the Tensor (NOTE(dispatch-protocol)) and is recorded on the
        tape: gradients come out exactly as without the JIT. An op with a Tensor among
        its arguments gives a Tensor value, whose methods are the Tensor's
        (`x.cos()`, `x.sum(dim=1)`); what reads or changes autograd state runs in Python
        at a break."""
        capture = self.capture
        known = capture.input_of.get(source)
        if known is not None:
            return known
        tensor = type(example) is not np.ndarray and not _is_cupy_array(example)
        array = example._array if tensor else example
        if array.dtype.kind not in _ARRAY_KINDS:
            raise Break("unsupported", f"{source} is an array of dtype {array.dtype}, which no graph op takes")
        check_new_input(self, source, example)
        shape = tuple(self._size(source, dim, size) for dim, size in enumerate(array.shape))
        device = "cpu" if type(array) is np.ndarray else f"cuda:{array.device.id}"
        meta = TensorMeta(shape, array.dtype, device)
        graph = capture.root_graph  # a loop body reads it through a placeholder of its own (NOTE(loop-capture))
        with graph.at(self.loc):
            node = graph.placeholder(str(source), meta)  # the graph makes it a name
        # Inputs are met as the code reads them; placeholders come first in a graph.
        graph.nodes.remove(node)
        graph.nodes.insert(len(capture.inputs), node)
        if tensor:
            self.guards.tensor(source, example, shape)
            self.guards.grad_mode()
        else:
            self.guards.array(source, example, shape)
        capture.inputs.append((source, example, node))
        value = capture.input_of[source] = ArrayValue(node, source, tensor)
        return value

    def number_input(self, source: Source, example: int | float) -> Node:
        """A graph input for the int or float at `source`, which the graph takes as an
        argument instead of baking it in (NOTE(loop-bounds) in loops.py, NOTE(while-capture)
        in while_loops.py); its guard is then its type alone."""
        capture = self.capture
        graph = capture.root_graph
        with graph.at(self.loc):
            node = graph.placeholder(str(source), type(example))
        graph.nodes.remove(node)
        graph.nodes.insert(len(capture.inputs), node)
        capture.inputs.append((source, example, node))
        capture.input_of[source] = ConstantValue(example, source)
        self.guards.unpin(source, type(example))
        return node

    def _size(self, source: Source, dim: int, size: int):
        capture = self.capture
        symbolic = capture.dynamic if capture.dynamic is not None else (source, dim) in capture.dynamic_dims
        if symbolic and size >= 2:
            # One symbol per size, kept across rollbacks as the guards that name it are.
            known = capture.size_symbols.get((source, dim))
            if known is None:
                known = capture.size_symbols[source, dim] = capture.root_graph.shape_env.create_symbol(
                    size, f"{source}.shape[{dim}]")
            return known
        return size

    # -- recording ops --------------------------------------------------------------------------
    def call_op(self, entry, args: tuple, kwargs: dict) -> Value:
        """Record `entry(*args, **kwargs)`; arguments are values."""
        if self.in_try_block():
            raise Break("unsupported", "an array op inside a try or with block is not captured: an error the graph "
                        "raises would miss the handler", hint="the code before the block is captured; a `with` "
                        "on pyjit.no_grad() and the other grad-mode switches is captured")
        node_args = tuple(self.as_arg(arg) for arg in args)
        node_kwargs = {name: self.as_arg(arg) for name, arg in kwargs.items()}
        from_constants = not _has_node((node_args, node_kwargs))
        if from_constants and type(entry) is not Op:
            raise Break("unsupported", f"pyjit.ops.{entry.name} called on no array",
                        hint="only primitive ops make arrays from constants in a graph")
        try:
            with self.graph.at(self.loc):
                # An op on constants only (`np.arange(k)`) is recorded as it is: called, it
                # would compute now, and the graph must make a new array on every call.
                result = self.graph.call(entry, *node_args, **node_kwargs) if from_constants \
                    else entry(*node_args, **node_kwargs)
        except NotImplementedError as error:  # what the registry does not model (docs/ops.md)
            raise Break("unsupported", f"{entry.name}: {error}") from error
        except Exception as error:  # the meta rules raise NumPy's errors for bad arguments
            raise Break("user_error", f"{entry.name}: {type(error).__name__}: {error}") from error
        self.note_first_op()
        # NOTE(tensor-capture): an op with a Tensor among its arguments gives Tensors.
        return self.wrap_result(result, tensor=any(_holds_tensor(value) for value in (*args, *kwargs.values())))

    def wrap_result(self, result: Any, tensor: bool = False) -> Value:
        if isinstance(result, Node):
            return ArrayValue(result, tensor=tensor)
        if type(result) in (tuple, list):
            return SequenceValue(type(result), [self.wrap_result(item, tensor) for item in result])
        return ConstantValue(result)

    def as_arg(self, value: Value) -> Any:
        """What a graph call takes for `value`: a node, a constant, or a tuple/list of them."""
        if isinstance(value, ArrayValue):
            node = value.node
            # A value from outside the loop body being traced: NOTE(loop-capture).
            return node if node.graph is self.graph else self.capture.bodies[-1].lift(node)
        if isinstance(value, ConstantValue):
            return number_arg(self, value.value) if isinstance(value.value, CarriedNumber) else value.value
        if isinstance(value, SequenceValue):
            return value.kind(self.as_arg(item) for item in value.items)
        if isinstance(value, CallableValue) and value.kind == "builtin" and value.target in (int, float, bool):
            return value.target  # a dtype given as a Python type (`dtype=int`)
        raise Break("unsupported", f"{describe(value)} cannot be an argument of a graph op")


class InlineTracer(Tracer):
    """The trace of one inlined call (NOTE(inlining)): the caller's capture
    (NOTE(capture)); its own code, stack and locals."""

    def __init__(self, parent: Tracer, function: types.FunctionType, source: Source, arguments: dict[str, Value]):
        self._start(parent.capture, function.__code__)
        self.parent, self.function, self.function_source = parent, function, source
        self.depth = parent.depth + 1
        self.locals = dict(arguments)
        self.loc = parent.loc  # until the callee's first positioned instruction
        self.arguments = {}

    @property
    def root(self) -> Tracer:
        return self.parent.root

    def callers(self):
        tracer = self
        while tracer is not tracer.root:
            tracer = tracer.parent
            yield tracer

    def in_try_block(self) -> bool:
        # A handler of the callee's code has no place in the transformed code of the frame.
        return (self.instr is not None and self.instr.handler is not None) or self.parent.in_try_block()

    def load_global(self, name: str) -> Value:
        namespace = self.function.__globals__
        frame = self.capture.frame
        if namespace is frame.f_globals:
            return super().load_global(name)
        globals_source = self.function_source.attr("__globals__")
        if name in namespace:
            return self.wrap(namespace[name], globals_source.item(name))
        if self.function.__builtins__ is not frame.f_builtins or name not in self.function.__builtins__:
            raise Break("user_error", f"name {name!r} is not defined")
        self.guards.python(globals_source, lambda namespace, name=name: name not in namespace,
                           f"{name!r} not in {globals_source}")
        return self.wrap(self.function.__builtins__[name], BuiltinSource(name))

    def load_closure(self, name: str) -> Value:
        if name not in self.code.co_freevars:
            return self._local(name)
        index = self.code.co_freevars.index(name)
        try:
            contents = self.function.__closure__[index].cell_contents
        except ValueError:
            raise Break("user_error", f"free variable {name!r} is read before it is assigned") from None
        return self.wrap(contents, self.function_source.attr("__closure__").item(index).attr("cell_contents"))

    def _local(self, name: str) -> Value:
        value = self.locals.get(name)
        if value is None:
            raise Break("user_error", f"local variable {name!r} is read before it is assigned")
        return value

    def note_first_op(self) -> None:
        if self.capture.first_op_instr is None:
            self.capture.first_op_instr = self.root.instr


def _holds_tensor(value: Value) -> bool:
    if isinstance(value, ArrayValue):
        return value.tensor
    return isinstance(value, SequenceValue) and any(map(_holds_tensor, value.items))


def _has_node(structure: Any) -> bool:
    if isinstance(structure, Node):
        return True
    if type(structure) in (tuple, list):
        return any(map(_has_node, structure))
    if type(structure) is dict:
        return any(map(_has_node, structure.values()))
    return False


def _is_cupy_array(value) -> bool:
    """A CuPy ndarray, told by its type alone (NOTE(no-user-code-at-trace))."""
    kind = type(value)
    return kind.__name__ == "ndarray" and kind.__module__.startswith("cupy")
