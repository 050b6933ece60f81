"""Loops captured as loops: a `for` over a range whose body is array code becomes one
node of the graph, its body traced once (NOTE(loop-capture)).

NOTE(loop-capture): at GET_ITER on a constant `range` that heads a `for` loop of two or
more trips (with `config.capture_loops`, outside any other captured body), the
interpreter walks the loop's body once (`Tracer.walk` with the loop's region) into a
graph of its own, the *body*, with the induction variable a symbol of the shape env
(`ShapeEnv.create_index`, its hint the range's middle value) that slices and indices
carry (`A[i, :i]` is a getitem whose bounds are `s3`). An array of the enclosing graph
that the body reads becomes a placeholder of the body (`_Body.lift`). After the walk:

* the *carries* are the values the body changed: arrays it updated in place
  (NOTE(functionalisation): the `rebound` journal of the capture) and locals it
  rebound to arrays that held arrays before the loop; each carry's value before the
  loop is the body's placeholder for it, and its value at the end of the body is the
  body's output, so iteration k + 1 reads what iteration k left;
* every other placeholder is a loop invariant;
* the body's output is a tuple of the carries, and the enclosing graph gets one node
  `loop(start, stop, step, *carries, *invariants)` (an op of category "other", run by
  every backend as it is) whose value is that tuple, and a `loop_result` node per
  carry; the carries' values, and the inputs written back, are those results.

The body is compiled by the capture's own backend when it is captured, and the loop
op runs it once per index, in Python, on the arrays the previous iteration returned
(the C loop around the kernels is a later step).

NOTE(short-loops): a loop whose trip count is a constant of the trace and whose
unrolled ops would number at most SHORT_LOOP_OPS (64: trips times the body's ops) is
unrolled after its body was traced: its ops then fuse across iterations
(`for i in range(3): x = np.sin(x)` is one kernel, where a loop node would run three)
and it compiles as fast. The threshold is a choice, not yet a measurement; a trip
count that is an input (NOTE(loop-bounds)) is always a loop node.

NOTE(loop-bounds): the range's bounds are constants of the trace, with one exception
that makes the trip count an input: a stop given by an int argument of the frame that
the code reads nowhere else (`for t in range(1, T)`, `range(T)`; builtin_calls.py
keeps the values each `range()` was called with) becomes an int input of the graph,
guarded by its type only (`GuardSet.unpin`), so one compile serves every T, zero and
one included. That holds only where nothing in the trace depends on T's value: the
body took no decision on its index (no size guard mentions it) and the loop variable is
not read after the loop (its last value depends on T). Otherwise the stop stays a
constant, and a new T recompiles, each time tracing the body once.

What the body relied on must hold on every iteration, not only the one it was traced
for: the comparisons the symbol met (slice clamping, bounds checks) are recorded as
size guards, and each one that mentions it must hold for every index of the range,
mention no other symbol and learn no equality; they are then dropped, the range being
part of the trace. Anything else makes the loop unroll as before (NOTE(loop-unrolling)),
with the reason in the `graph_breaks` log and `counters["loops_unrolled"]`: a break, a
`break`, `return` or exception handler in the body, a side effect on Python state
(list, dict or attribute changes), a Python value that changes across iterations and is
read after the loop, an array first assigned in the body and read after it, a carry
whose shape or dtype changes, two carries that start as one array, a local carry whose
value before the loop the body also reads under another name, CuPy arrays, a backend
that fails on the body, or a range too long to check its guards on. A body that reads
pyjit.Tensor values makes a loop node that differentiates (NOTE(loop-gradient) in
pyjit/autograd/loops.py), or unrolls where its gradient cannot be built.
"""

from __future__ import annotations

import builtins
import logging

import numpy as np

from .. import config
from ..autograd import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.loops import differentiable_loop, unpacked
from ..graph import Graph, GraphModule, Node, SymInt, TensorMeta
from ..ops.registry import Op
from ..utils import counters
from .breaks import Break
from .sources import LocalSource
from .bytecode import Instr, Label, local_reads, locals_read_after
from .values import ArrayValue, ConstantValue, IteratorValue, Value

MIN_TRIPS = 2  # one trip is cheaper unrolled than compiled as a body
# A loop of constant trip count whose unrolled ops number at most this is unrolled after
# all (NOTE(short-loops)).
SHORT_LOOP_OPS = 64
GUARD_CHECK_LIMIT = 1 << 16  # indices a guard is checked on before the loop is unrolled instead
_log = logging.getLogger("pyjit.graph_breaks")
_code_log = logging.getLogger("pyjit.graph_code")


def _result(loop: tuple, position: int):
    return loop[position]


# The carries of a loop node's tuple, one node each.
LOOP_RESULT = Op("loop_result", category="other", impl=lambda xp, loop, position: loop[position], meta=_result,
                 doc="one carry of a loop node's result (NOTE(loop-capture))")


class _Body:
    """A loop body being traced: its graph and the placeholders lifted into it."""

    def __init__(self, parent: Graph, index: SymInt):
        self.parent = parent
        self.graph = Graph("body", shape_env=parent.shape_env)
        self.index = index
        self.index_node = self.graph.placeholder("index", index)
        self.lifted: dict[Node, Node] = {}  # enclosing graph's node -> its placeholder here

    def lift(self, node: Node) -> Node:
        if node not in self.lifted:
            with self.graph.at(node.loc):
                placeholder = self.graph.placeholder(f"{node.name}_in", node.meta)
            self.graph.nodes.remove(placeholder)
            self.graph.nodes.insert(len(self.lifted) + 1, placeholder)
            self.lifted[node] = placeholder
        return self.lifted[node]

    def forget(self, nodes: list[Node]) -> None:
        """Drop the placeholders of `nodes`, inputs a rollback removes."""
        for node in nodes:
            placeholder = self.lifted.pop(node, None)
            if placeholder is not None:
                self.graph.erase(placeholder)


def capture_loop(tracer, iterable: Value) -> IteratorValue | None:
    """At GET_ITER: the loop over `iterable` captured as one node (NOTE(loop-capture)),
    and the exhausted iterator FOR_ITER then leaves the loop with; None to unroll it."""
    if not (config.capture_loops and isinstance(iterable, ConstantValue) and type(iterable.value) is range):
        return None
    capture = tracer.capture
    span = _loop_span(tracer)
    if span is None or len(iterable.value) < MIN_TRIPS or capture.bodies or capture.compile_body is None:
        return None
    try:
        return _Capturing(tracer, iterable.value, span).run()
    except Break as why:
        where = tracer.loc.describe() if tracer.loc is not None else "?"
        counters["loops_unrolled"][why.explanation] += 1
        _log.debug("Loop at %s unrolled: %s", where, why.explanation)
        return None


def _loop_span(tracer) -> tuple[int, int, int] | None:
    """(head label, FOR_ITER, exit label) indices of the loop GET_ITER starts; None when
    GET_ITER does not head a `for` loop."""
    instructions = tracer.bytecode.instructions
    head = tracer.index + 1
    if head + 1 >= len(instructions) or not isinstance(instructions[head], Label):
        return None
    for_iter = instructions[head + 1]
    if not isinstance(for_iter, Instr) or for_iter.name != "FOR_ITER":
        return None
    end = next(i for i, item in enumerate(instructions) if item is for_iter.arg)
    return (head, head + 1, end) if end > head else None


class _Capturing:
    """One attempt at capturing a loop: the walk of its body, then its node."""

    def __init__(self, tracer, steps: range, span: tuple[int, int, int]):
        self.tracer, self.capture, self.steps, self.span = tracer, tracer.capture, steps, span
        self.env = self.capture.root_graph.shape_env
        self.locals, self.stack = dict(tracer.locals), list(tracer.stack)
        self.position = (tracer.instr, tracer.index, tracer.loc, tracer.stack_before)  # GET_ITER's
        self.env_guards, self.env_replacements = list(self.env.guards), dict(self.env.replacements)
        self.mark = self.capture.checkpoint()
        self.stop_source = _argument_stop(tracer, steps)  # NOTE(loop-bounds)
        self.tensors = False  # the body reads pyjit.Tensor values (NOTE(loop-gradient))

    def run(self) -> IteratorValue | None:
        tracer, capture = self.tracer, self.capture
        body = _Body(capture.graph, self.env.create_index(self.steps[len(self.steps) // 2], "a loop index"))
        capture.bodies.append(body)
        capture.graph = body.graph
        try:
            tracer.push(IteratorValue([], made_by=(builtins.iter, [], range(0))))
            tracer.push(ConstantValue(body.index))
            tracer.walk(self.span[1] + 1, (self.span[0], self.span[2]))
            self._check_stack()
            self._check_guards(body.index)
            carries = self._carries(body)
            short = self.stop_source is None and len(self.steps) * len(body.graph.calls()) <= SHORT_LOOP_OPS
        except Break:
            self._leave(body)
            self._undo()
            raise
        finally:
            self._leave(body)
        if short:
            self._undo()
            return None
        self._build(body, carries)
        self._back_at_get_iter()
        return IteratorValue([], made_by=(builtins.iter, [], range(0)))

    def _leave(self, body: _Body) -> None:
        """Record into the enclosing graph again (once, whatever ended the walk)."""
        if self.capture.bodies and self.capture.bodies[-1] is body:
            self.capture.graph = body.parent
            self.capture.bodies.pop()

    def _back_at_get_iter(self) -> None:
        tracer = self.tracer
        tracer.stack, tracer.returned, tracer.jump_to = self.stack, None, None
        tracer.instr, tracer.index, tracer.loc, tracer.stack_before = self.position

    def _undo(self) -> None:
        self.capture.rollback(self.mark)
        self.tracer.locals.clear()
        self.tracer.locals.update(self.locals)
        self._back_at_get_iter()
        self.env.guards[:] = self.env_guards
        self.env.replacements.clear()
        self.env.replacements.update(self.env_replacements)

    def _check_stack(self) -> None:
        stack = self.tracer.stack
        if len(stack) != len(self.stack) + 1 or any(a is not b for a, b in zip(stack, self.stack)):
            raise Break("unsupported", "the loop's body leaves the stack changed")
        if self.capture.side_effects.checkpoint()[0] != self.mark.side_effects[0]:
            raise Break("unsupported", "the loop's body changes Python state (a list, dict or attribute)")

    def _check_guards(self, index: SymInt) -> None:
        """NOTE(loop-capture): the size guards on the index hold for every index."""
        name = next(iter(index.symbols()))
        if any(name in str(value) for value in self.env.replacements.values()) or name in self.env.replacements:
            raise Break("unsupported", "the loop's body compares its index for equality")
        kept = []
        for guard in self.env.guards[len(self.env_guards):]:
            symbols = _guard_symbols(guard)
            if name not in symbols:
                kept.append(guard)
                continue
            self.stop_source = None  # the body relies on the index's values: NOTE(loop-bounds)
            if symbols != {name} or len(self.steps) > GUARD_CHECK_LIMIT:
                raise Break("unsupported", f"the loop's body relies on {guard}, which cannot be checked for every "
                            "index")
            hints = dict(self.env.hints)
            for step in self.steps:
                hints[name] = step
                if not guard.holds(hints):
                    raise Break("unsupported", f"the loop's body relies on {guard}, which does not hold for the "
                                f"index {step}")
        self.env.guards[len(self.env_guards):] = kept

    def _carries(self, body: _Body) -> list[tuple]:
        """The loop's carries: (holder, node before the loop, node at the end of the body),
        the holder a value updated in place or a local's name; locals the body set and
        nobody reads after it are put back."""
        first_node: dict[int, tuple[ArrayValue, Node]] = {}
        for value, node in self.capture.rebound[self.mark.rebound:]:
            first_node.setdefault(id(value), (value, node))
        carries = [(value, node, value.node) for value, node in first_node.values() if node.graph is body.parent]
        instructions = self.tracer.bytecode.instructions
        head, _, end = self.span
        read_after = locals_read_after(instructions, end, range(head, end))
        for name in set(self.locals) | set(self.tracer.locals):
            before, after = self._before(name), self.tracer.locals.get(name)
            if after is before:
                continue
            if isinstance(before, ArrayValue) and isinstance(after, ArrayValue):
                start = first_node.get(id(before), (None, before.node))[1]
                carries.append((name, start, after.node))
            elif name in read_after and not (isinstance(after, ConstantValue) and after.value is body.index):
                raise Break("unsupported", f"the loop's body sets {name!r}, which is read after the loop, to "
                            "a value that is not an array it held before the loop")
            elif before is None:
                del self.tracer.locals[name]
            else:
                self.tracer.locals[name] = before
            if isinstance(after, ConstantValue) and after.value is body.index:
                self.tracer.locals[name] = ConstantValue(self.steps[-1])
                if name in read_after:
                    self.stop_source = None  # its last value depends on the stop: NOTE(loop-bounds)
        self._check_carries(body, carries)
        self._check_other_names(carries)
        self._check_tensors(body, carries)
        return carries

    def _check_other_names(self, carries: list[tuple]) -> None:
        """A local carry's value before the loop is one placeholder of the body, however
        the body reads it: through another local that holds the same array (`y = w`,
        then `y = f(y, w)`), iteration k + 1 would read y's value for w."""
        head, _, end = self.span
        read_in_body = local_reads(self.tracer.bytecode.instructions[head:end])
        for holder, start, _ in carries:
            if not isinstance(holder, str):
                continue
            for name, value in self.locals.items():
                if name != holder and name in read_in_body and isinstance(value, ArrayValue) and value.node is start:
                    raise Break("unsupported", f"the loop's body reads {name!r}, the array {holder!r} held before "
                                "the loop")

    def _check_tensors(self, body: _Body, carries: list[tuple]) -> None:
        """A body that reads pyjit.Tensor values makes a differentiable loop
        (NOTE(loop-gradient)) whose carries are Tensors when it runs, so each must be one
        at the end of the body; one that was an array before the loop is an array after
        zero trips, so the trip count stays a constant (NOTE(loop-bounds))."""
        tensors, cupy = set(), set()
        for _, example, node in self.capture.inputs:
            if isinstance(example, Tensor):
                (tensors if example.device == "cpu" else cupy).add(node)
            elif type(example).__module__.startswith("cupy"):
                cupy.add(node)
        if any(lifted.depends_on(cupy) for lifted in body.lifted):
            raise Break("unsupported", "the loop's body reads a CuPy array or a GPU Tensor (loop nodes are built "
                        "for NumPy arrays and CPU Tensors only)")
        tensors.update(value.node for value in self.locals.values() if isinstance(value, ArrayValue) and value.tensor)
        self.tensors = any(lifted.depends_on(tensors) for lifted in body.lifted)
        ends = [holder if isinstance(holder, ArrayValue) else self.tracer.locals[holder] for holder, _, _ in carries]
        if not self.tensors and not any(end.tensor for end in ends):
            return  # a loop over NumPy arrays
        if not (self.tensors and all(end.tensor for end in ends)):
            raise Break("unsupported", "the loop carries a NumPy array next to pyjit.Tensor values")
        if any(isinstance(holder, str) and not self._before(holder).tensor for holder, _, _ in carries):
            self.stop_source = None

    def _before(self, name: str) -> Value | None:
        """The local's value before the loop; an argument the body was first to read is the
        argument's value (read lazily: NOTE(symbolic-interpreter))."""
        value = self.locals.get(name)
        slot = self.tracer.arguments.get(name)
        if value is not None or slot is None:
            return value
        source = LocalSource(slot, name)
        found = self.capture.input_of.get(source)
        after = self.tracer.locals.get(name)
        if found is None and after is not None and after.source == source:
            return after  # a Python value the body read and left as it was
        return found

    def _check_carries(self, body: _Body, carries: list[tuple]) -> None:
        starts = [start for _, start, _ in carries]
        if len(set(starts)) != len(starts):
            raise Break("unsupported", "two of the loop's carries start as one array")
        for holder, start, end in carries:
            if not (isinstance(end.meta, TensorMeta) and end.meta.dtype == start.meta.dtype
                    and end.meta.same_as(start.meta)):
                raise Break("unsupported", f"the loop's body changes the shape or dtype of {_holder_name(holder)}")

    def _build(self, body: _Body, carries: list[tuple]) -> None:
        """The body's graph, compiled; the loop node and its results in the enclosing graph."""
        capture, graph = self.capture, body.graph
        carry_in = [body.lift(start) for _, start, _ in carries]
        # A carry the body rebinds to an array of the enclosing graph (`u, u_prev = new, u`
        # passes the iteration's incoming `u` on) ends as that array's placeholder.
        carry_out = [body.lift(end) if end.graph is body.parent else end for _, _, end in carries]
        invariants = [node for node in body.lifted if body.lifted[node] not in carry_in]
        order = [body.index_node, *carry_in, *(body.lifted[node] for node in invariants)]
        graph.nodes[:len(order)] = order
        graph.output(tuple(carry_out))
        donated = [position for position, placeholder in enumerate(carry_in) if _assigned_into(placeholder)]
        # Neither the correctness check nor the gradient's recomputation (NOTE(loop-gradient))
        # may have the body write over arrays it runs the body on again.
        if not (config.verify_correctness or self.tensors):
            graph.donated = frozenset(carry_in[position].name for position in donated)
        module = GraphModule(graph)
        examples = [self.steps[0], *(_example(node) for node in order[1:])]
        try:
            compiled = capture.compile_body(module, examples)
        except Exception as error:  # correctness first: the loop unrolls (NOTE(loop-capture))
            self._undo()
            raise Break("unsupported", f"the backend failed on the loop's body: {error.__cause__ or error}") from None
        loop = _loop_op(compiled, len(carries), pure=not graph.impure_calls(),
                        owned=tuple(donated) if graph.donated else ())
        starts = [start for _, start, _ in carries]
        if self.tensors:
            loop = self._differentiable(loop, module, examples, starts, invariants, body.index)
        steps = self.steps
        stop = steps.stop if self.stop_source is None else self.tracer.int_input(self.stop_source, steps.stop)
        with body.parent.at(self.tracer.loc):
            node = body.parent.call(loop, steps.start, stop, steps.step, *starts, *invariants)
            results = unpacked(node, starts) if self.tensors else [
                body.parent.call(LOOP_RESULT, node, position) for position in range(len(carries))]
        del capture.rebound[self.mark.rebound:]
        for (holder, start, _), result in zip(carries, results):
            if isinstance(holder, ArrayValue):
                capture.rebound.append((holder, start))
                holder.node = result
            else:
                self.tracer.locals[holder] = ArrayValue(result, tensor=self.tensors)
        counters["stats"]["loops_captured"] += 1
        where = self.tracer.loc.describe() if self.tracer.loc is not None else "?"
        _code_log.debug("TRACED LOOP at %s over %r, carries %s\n%s", where, steps,
                        ", ".join(_holder_name(holder) for holder, _, _ in carries), module.code)

    def _differentiable(self, loop: Op, module: GraphModule, examples: list, starts: list[Node],
                        invariants: list[Node], index: SymInt) -> Op:
        """The loop op of a body that reads Tensors: one packed result and a VJP
        (NOTE(loop-gradient)); the gradient is built where a lifted value requires grad."""
        self.tracer.guards.grad_mode()
        requiring = {node for _, example, node in self.capture.inputs
                     if isinstance(example, Tensor) and example.requires_grad}
        wanted = [is_grad_enabled() and node.depends_on(requiring) for node in (*starts, *invariants)]
        try:
            differentiable = differentiable_loop(loop, module, len(starts), wanted, examples,
                                                 self.capture.compile_body)
            # The VJPs decided on the index too (x[i]'s scatters its gradient at i): those
            # decisions must hold for every index, as the body's own (NOTE(loop-capture)).
            self._check_guards(index)
        except Exception as error:  # correctness first: the loop unrolls (NOTE(loop-capture))
            self._undo()
            why = error.explanation if isinstance(error, Break) else error.__cause__ or error
            raise Break("unsupported", f"the loop's gradient cannot be built: {why}") from None
        return differentiable


def _argument_stop(tracer, steps: range) -> LocalSource | None:
    """The frame's int argument that gave `steps` its stop and is read nowhere else
    (NOTE(loop-bounds)); None when there is none."""
    made = tracer.capture.ranges.get(id(steps))
    if made is None or made[0] is not steps or tracer.root is not tracer:
        return None
    args = made[1]
    stop = args[0] if len(args) == 1 else args[1]
    source = stop.source if isinstance(stop, ConstantValue) and type(stop.value) is int else None
    if not isinstance(source, LocalSource) or source.name in tracer.code.co_cellvars:
        return None
    return source if local_reads(tracer.bytecode.instructions).get(source.name) == 1 else None


# NOTE(donated-carries): item assignment in the body is index_put, whose op copies the
# whole array, so `B[1:-1] = ...` in a loop copied B once per iteration (the 1-D Jacobi
# loop: 80 copies of 3.2 MB a call, where NumPy writes in place). A carry the body
# assigns into is therefore *donated*: the body's graph names its placeholder in
# `Graph.donated`, and the glue may write into that array at the assignment when nothing
# reads its old value later (NOTE(assignment-in-place) in pyjit/codegen/wrapper.py). The
# loop op makes that safe: it copies those carries once before the first iteration (the
# caller's arrays, and those of the enclosing graph, are never written), and after each
# iteration copies again any of them the body returned that it does not own alone (an
# array the loop was given, passed on or swapped into its place; an array returned
# twice; a view). A backend that ignores `donated` costs the one copy. Under
# config.verify_correctness nothing is donated: the check runs the body again on the
# same arrays.
def _assigned_into(placeholder: Node) -> bool:
    return any(getattr(user.target, "name", None) == "index_put" and user.args[0] is placeholder
               for user in placeholder.users)


def _owned(state: tuple, owned: tuple[int, ...], shared: tuple) -> tuple:
    """`state` with a copy of each donated carry that another value may share: one of
    `shared` (the invariants, the caller's arrays), another carry, or a view's base."""
    state = list(state)
    for position in owned:
        array = state[position]
        if array.base is not None or any(array is other for other in shared) or any(
                array is other for index, other in enumerate(state) if index != position):
            state[position] = array.copy()
    return tuple(state)


def _loop_op(body, carries: int, pure: bool, owned: tuple[int, ...] = ()) -> Op:
    """The op of one loop node: `body(index, *carries, *invariants)` for each index; the
    carries at positions `owned` are donated to the body (NOTE(donated-carries))."""
    def run(xp, start, stop, step, *arrays):
        state, invariants = arrays[:carries], arrays[carries:]
        shared = arrays  # what the body must never write: every array the loop was given
        if owned and len(range(start, stop, step)):
            state = tuple(array.copy() if position in owned else array for position, array in enumerate(state))
        for index in range(start, stop, step):
            state = body(index, *state, *invariants)
            if owned:
                state = _owned(state, owned, shared)
        return tuple(state)

    def meta(start, stop, step, *metas):
        return tuple(metas[:carries])

    op = Op("loop", category="other", impl=run, meta=meta, doc="a captured loop (NOTE(loop-capture))")
    op.pure = pure
    return op


def _example(placeholder: Node):
    meta = placeholder.meta
    shape = tuple(size.hint if isinstance(size, SymInt) else size for size in meta.shape)
    return np.zeros(shape, meta.dtype)


def _guard_symbols(guard) -> set[str]:
    lhs = guard.lhs if isinstance(guard.lhs, SymInt) else guard.lhs.expr  # or a remainder `expr % n`
    return lhs.symbols() | (guard.rhs.symbols() if isinstance(guard.rhs, SymInt) else set())


def _holder_name(holder) -> str:
    if isinstance(holder, str):
        return holder
    return str(holder.source) if holder.source is not None else holder.node.name
