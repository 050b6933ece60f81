"""Loops captured as loops: a `for` over a range whose body is array code becomes one
node of the graph, its body traced once (NOTE(loop-capture)); `while` loops on carried
Python numbers reuse this machinery (NOTE(while-capture) in while_loops.py).

NOTE(loop-capture): at GET_ITER on a constant `range` that heads a `for` loop of two or
more trips (with `config.capture_loops`; inside another captured body too, and over a
range of the enclosing index: NOTE(nested-loops) in loop_ranges.py), the
interpreter walks the loop's body once (`Tracer.walk` with the loop's region) into a
graph of its own, the *body*, with the induction variable a symbol of the shape env
(`ShapeEnv.create_index`, its hint the range's middle value) that slices and indices
carry (`A[i, :i]` is a getitem whose bounds are `s3`). An array of the enclosing graph
that the body reads becomes a placeholder of the body (`LoopBody.lift`). After the walk:

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
op runs it once per index, in Python, on the arrays the previous iteration returned,
or once in all where the compiled body has a `run_loop` (NOTE(c-loops) in
pyjit/codegen/cpu/loops.py: the inductor's C loop around the body's kernels). A `while`
loop whose condition compares Python numbers the loop carries is captured the same way,
as a `while_loop` node whose op evaluates the condition and the numbers in Python
(NOTE(while-capture) in while_loops.py); a condition on array values stays a break.

NOTE(short-loops): a loop whose trip count is a constant of the trace and whose
unrolled ops would number at most SHORT_LOOP_OPS (64: trips times the body's ops) is
unrolled after its body was traced: its ops then fuse across iterations
(`for i in range(3): x = np.sin(x)` is one kernel, where a loop node would run three)
and it compiles as fast. The threshold is a choice, not yet a measurement; a trip
count that is an input (NOTE(loop-bounds)) is always a loop node.

NOTE(loop-bounds): the range's bounds are constants of the trace, with one exception
that makes the trip count an input: a stop (or start) given by an int argument of the
frame that the code reads nowhere else (`for t in range(1, T)`, `range(T)`,
`range(t0, T)`, `range(T, 0, -1)`; builtin_calls.py keeps the values each `range()` was
called with; the step stays a constant) becomes an int input of the graph,
guarded by its type only (`GuardSet.unpin`), so one compile serves every T, zero and
one included. That holds only where nothing in the trace depends on T's value: the
body took no decision on its index (no size guard mentions it) and the loop variable is
not read after the loop (its last value depends on T). Otherwise the stop stays a
constant, and a new T recompiles, each time tracing the body once.

NOTE(loop-peeling): a loop whose first iteration is another case than the rest has that
iteration traced as unrolled, and the rest of the range (a constant) captured: where a
local the body reads on its next iteration (or after the loop) is a Python number before
the loop and an array after one iteration (`acc = 0.0; for i in ...: acc += x[i]`), and
where a guard fails at the first index only (`y[t - 1]` is `y[-1]` at t = 0). Which
locals the next iteration reads is found on the bytecode (`locals_read_first`: read
before written on some path through the body); any other local the body changes that
way makes the loop unroll.

What the body relied on must hold on every iteration, not only the one it was traced
for: the comparisons the symbol met (slice clamping, bounds checks) are recorded as
size guards, and each one that mentions it must hold for every index of the range
(checked as NOTE(nested-loops) says), mention no symbol but loop indices and learn no
equality; they are then dropped, the range being
part of the trace. Anything else makes the loop unroll as before (NOTE(loop-unrolling)),
with the reason in the `graph_breaks` log and `counters["loops_unrolled"]`: a break, a
`break`, `return` or exception handler in the body, a side effect on Python state
(list, dict or attribute changes), a Python value that changes across iterations and is
read after the loop or by the next iteration, an array first assigned in the body and
read after it, a carry whose shape or dtype changes, two carries that start as one
array, a local carry whose value before the loop the body also reads under another
name, CuPy arrays, a backend that fails on the body, or a range too long to check its
guards on. A body that reads pyjit.Tensor values makes a loop node that differentiates
(NOTE(loop-gradient) in pyjit/autograd/loops.py), or unrolls where its gradient cannot
be built (inside another loop node, or with symbolic sizes, it unrolls).
"""

from __future__ import annotations

import builtins
import logging
from typing import NamedTuple

import numpy as np

from .. import config
from ..autograd import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.loops import differentiable_loop, unpacked
from ..graph import Graph, GraphModule, Node, SymInt, TensorMeta
from ..graph.printer import symbol_axes
from ..ops.registry import Op
from ..utils import counters
from .breaks import Break
from .bytecode import local_reads, locals_read_after, locals_read_first
from .iteration import iterate
from .loop_ranges import SymbolicRange, evaluate_range, first_failure, loop_span, size_conditions
from .sources import LocalSource
from .values import ArrayValue, ConstantValue, IteratorValue, Value

MIN_TRIPS = 2  # one trip is cheaper unrolled than compiled as a body
# A loop of constant trip count whose unrolled ops number at most this is unrolled after
# all (NOTE(short-loops)).
SHORT_LOOP_OPS = 64
HINTS_TRIED = 4  # indices a body is traced for before a loop whose sizes are 0 or 1 there unrolls
_log = logging.getLogger("pyjit.graph_breaks")
_code_log = logging.getLogger("pyjit.graph_code")


def _result(loop: tuple, position: int):
    return loop[position]


# The carries of a loop node's tuple, one node each.
LOOP_RESULT = Op("loop_result", category="other", impl=lambda xp, loop, position: loop[position], meta=_result,
                 doc="one carry of a loop node's result (NOTE(loop-capture))")


class LoopBody:
    """A loop body being traced: its graph, the placeholders lifted into it, its index and
    range, and the body it is nested in (NOTE(nested-loops))."""

    def __init__(self, parent: Graph, index: SymInt, steps: range | SymbolicRange, outer: LoopBody | None):
        self.parent, self.steps, self.outer = parent, steps, outer
        self.graph = Graph("body", shape_env=parent.shape_env)
        self.index = index
        self.name = next(iter(index.symbols()))
        self.index_node = self.graph.placeholder("index", index)
        self.lifted: dict[Node, Node] = {}  # enclosing graph's node -> its placeholder here
        self.relies_on_index = False  # a nested loop checked its guards on this loop's indices
        self.nested_loops = 0  # loop nodes captured inside, at any depth

    leading = 1  # placeholders before the lifted ones: the index
    def outside(self, node: Node) -> Node:
        """`node`, of this body's graph or one around it, as a node of the enclosing graph."""
        return node if node.graph is self.parent else self.outer.lift(node)

    def lift(self, node: Node) -> Node:
        node = self.outside(node)
        if node not in self.lifted:
            with self.graph.at(node.loc):
                placeholder = self.graph.placeholder(f"{node.name}_in", node.meta)
            self.graph.nodes.remove(placeholder)
            self.graph.nodes.insert(len(self.lifted) + self.leading, placeholder)
            self.lifted[node] = placeholder
        return self.lifted[node]

    def forget(self, nodes: list[Node]) -> list[Node]:
        """Drop the placeholders of `nodes`, inputs a rollback removes; the placeholders
        dropped, which a body nested in this one forgets in turn."""
        dropped = []
        for node in nodes:
            placeholder = self.lifted.pop(node, None)
            if placeholder is not None:
                self.graph.erase(placeholder)
                dropped.append(placeholder)
        return dropped


def capture_loop(tracer, iterable: Value) -> IteratorValue | None:
    """At GET_ITER: the loop over `iterable` captured as one node (NOTE(loop-capture)),
    and the exhausted iterator FOR_ITER then leaves the loop with; None to unroll it. A
    SymbolicRange that is not captured is specialised and unrolled (NOTE(nested-loops))."""
    steps = iterable.value if isinstance(iterable, ConstantValue) else None
    if type(steps) is SymbolicRange:
        captured = _attempt(tracer, steps)
        return captured if captured is not None else iterate(tracer, ConstantValue(steps.specialised()))
    if not (config.capture_loops and type(steps) is range) or len(steps) < MIN_TRIPS:
        return None
    return _attempt(tracer, steps)


class PeelFirst(Break):
    """The loop's first iteration differs from the others (NOTE(loop-peeling))."""


def _attempt(tracer, steps: range | SymbolicRange) -> IteratorValue | None:
    span = loop_span(tracer.bytecode.instructions, tracer.index)
    # A while loop's body (index None) unrolls the loops in it (NOTE(while-capture) in while_loops.py).
    if span is None or tracer.capture.compile_body is None or any(body.index is None for body in tracer.capture.bodies):
        return None
    try:
        return _Capturing(tracer, steps, span).run()
    except PeelFirst as why:
        return _peeled(tracer, steps, span, why)
    except Break as why:
        log_unrolled(tracer, why)
        return None


def log_unrolled(tracer, why: Break) -> None:
    where = tracer.loc.describe() if tracer.loc is not None else "?"
    counters["loops_unrolled"][why.explanation] += 1
    _log.debug("Loop at %s unrolled: %s", where, why.explanation)


def _peeled(tracer, steps: range, span: tuple[int, int, int], why: Break) -> IteratorValue | None:
    """NOTE(loop-peeling): the first iteration traced as unrolled, then the rest of the
    range captured (or unrolled); None (the whole loop unrolled) where the first
    iteration itself breaks."""
    mark, saved = tracer.capture.checkpoint(), (dict(tracer.locals), list(tracer.stack))
    position = (tracer.instr, tracer.index, tracer.loc, tracer.stack_before)
    try:
        tracer.push(IteratorValue([], made_by=(builtins.iter, [], range(0))))
        tracer.push(ConstantValue(steps[0]))
        tracer.walk(span[1] + 1, (span[0], span[2]))
    except Break:
        tracer.capture.rollback(mark)
        tracer.locals.clear()
        tracer.locals.update(saved[0])
        log_unrolled(tracer, why)
        return None
    finally:
        tracer.stack, tracer.returned, tracer.jump_to = saved[1], None, None
        tracer.instr, tracer.index, tracer.loc, tracer.stack_before = position
    rest = steps[1:]
    captured = None
    if len(rest) >= MIN_TRIPS:
        try:
            captured = _Capturing(tracer, rest, span).run()
        except Break as again:
            log_unrolled(tracer, again)
    return captured if captured is not None else iterate(tracer, ConstantValue(rest))


class _Capturing:
    """One attempt at capturing a loop: the walk of its body, then its node."""

    def __init__(self, tracer, steps: range | SymbolicRange, span: tuple[int, int, int]):
        self.tracer, self.capture, self.steps, self.span = tracer, tracer.capture, steps, span
        self.env = self.capture.root_graph.shape_env
        self.locals, self.stack = dict(tracer.locals), list(tracer.stack)
        self.position = (tracer.instr, tracer.index, tracer.loc, tracer.stack_before)  # GET_ITER's
        self.env_guards, self.env_replacements = list(self.env.guards), dict(self.env.replacements)
        self.mark = self.capture.checkpoint()
        self.bound_sources = _argument_bounds(tracer, steps) if type(steps) is range else {}  # NOTE(loop-bounds)
        self.tensors = False  # the body reads pyjit.Tensor values (NOTE(loop-gradient))

    def run(self) -> IteratorValue | None:
        """NOTE(index-hints): the body is traced for one index, its hint; a hint at which
        a size of the body is 0 or 1 (`x[:i]` at i = 1) would be taken for a broadcast
        size, so the body is traced again for another index, up to HINTS_TRIED of them."""
        at_hints = evaluate_range(self.steps, self.env.hints)
        middle = len(at_hints) // 2
        hints = sorted(range(len(at_hints)), key=lambda position: abs(position - middle))[:HINTS_TRIED]
        bound_sources = dict(self.bound_sources)
        for position in hints:
            try:
                return self._run_at(at_hints[position])
            except _SmallSize:
                self.bound_sources = dict(bound_sources)
        if not hints:
            return self._run_at(at_hints.start)
        raise Break("unsupported", "a size in the loop's body is 0 or 1 at every index it was traced for")

    def _run_at(self, hint: int) -> IteratorValue | None:
        tracer, capture = self.tracer, self.capture
        outer = capture.bodies[-1] if capture.bodies else None
        body = LoopBody(capture.graph, self.env.create_index(hint, "a loop index"), self.steps, outer)
        capture.bodies.append(body)
        capture.graph = body.graph
        try:
            tracer.push(IteratorValue([], made_by=(builtins.iter, [], range(0))))
            tracer.push(ConstantValue(body.index))
            tracer.walk(self.span[1] + 1, (self.span[0], self.span[2]))
            self._check_stack()
            if _has_small_size(body.graph):
                raise _SmallSize("unsupported", "a size in the loop's body is 0 or 1 at the traced index")
            self._check_guards(body, capture.bodies)
            carries = self._carries(body)
            # Unrolled, a nested loop node would be compiled again for each iteration.
            short = type(self.steps) is range and not self.bound_sources and not body.nested_loops \
                and len(self.steps) * len(body.graph.calls()) <= SHORT_LOOP_OPS
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

    def _leave(self, body: LoopBody) -> None:
        """Record into the enclosing graph again (once, whatever ended the walk)."""
        if self.capture.bodies and self.capture.bodies[-1] is body:
            self.capture.graph = body.parent
            self.capture.bodies.pop()

    def _back_at_get_iter(self) -> None:
        tracer = self.tracer
        tracer.stack, tracer.returned, tracer.jump_to = list(self.stack), None, None  # an attempt may follow
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

    def _check_guards(self, body: LoopBody, loops: list[LoopBody]) -> None:
        """NOTE(loop-capture): the size guards on the index hold for every index of `loops`
        (this loop's body, innermost last, and the bodies around it: NOTE(nested-loops))."""
        name = body.name
        if body.relies_on_index:
            self.bound_sources = {}  # a nested loop relied on this loop's indices: NOTE(loop-bounds)
        if any(name in str(value) for value in self.env.replacements.values()) or name in self.env.replacements:
            raise Break("unsupported", "the loop's body compares its index for equality")
        indices = {loop.name for loop in loops}
        kept = []
        for guard in self.env.guards[len(self.env_guards):]:
            symbols = _guard_symbols(guard)
            if name not in symbols:
                kept.append(guard)
                continue
            self.bound_sources = {}  # the body relies on the index's values: NOTE(loop-bounds)
            for position, enclosing in enumerate(loops[:-1]):  # their indices decide this one's too
                if enclosing.name in symbols or any(type(loop.steps) is not range for loop in loops[position + 1:]):
                    enclosing.relies_on_index = True
            if not symbols <= indices or any(type(loop.steps) is not range and not loop.steps.symbols() <= indices
                                             for loop in loops):
                kept += self._size_conditions(guard, loops)  # NOTE(dynamic-ranges)
                continue
            failed = first_failure(guard, loops, self.env.hints)
            if failed is not None:
                self._guard_fails(body, guard, failed)
        self.env.guards[len(self.env_guards):] = kept

    def _size_conditions(self, guard, loops: list[LoopBody]) -> list:
        conditions = size_conditions(guard, loops)
        if conditions is None or not all(condition.holds(self.env.hints) for condition in conditions):
            raise Break("unsupported", f"the loop's body relies on {guard}, which cannot be checked for every index")
        return conditions

    def _guard_fails(self, body: LoopBody, guard, failed: tuple) -> None:
        if len(failed) > 1:
            raise Break("unsupported", f"the loop's body relies on {guard}, which does not hold for the indices "
                        f"{failed}")
        # Where only the first index fails (`y[t - 1]` from t = 0), the rest can be a node.
        if type(self.steps) is range and failed[0] == self.steps[0] \
                and first_failure(guard, [_Rest(body.name, self.steps[1:])], self.env.hints) is None:
            raise PeelFirst("unsupported", f"the loop's body relies on {guard}, which does not hold for the index "
                            f"{failed[0]}")
        raise Break("unsupported", f"the loop's body relies on {guard}, which does not hold for the index {failed[0]}")

    def _carries(self, body: LoopBody) -> list[tuple]:
        """The loop's carries: (holder, node before the loop, node at the end of the body),
        the holder a value updated in place or a local's name; locals the body set and
        nobody reads after it are put back."""
        first_node: dict[int, tuple[ArrayValue, Node]] = {}
        for value, node in self.capture.rebound[self.mark.rebound:]:
            first_node.setdefault(id(value), (value, node))
        carries = [(value, node, value.node) for value, node in first_node.values() if node.graph is not body.graph]
        instructions = self.tracer.bytecode.instructions
        head, for_iter, end = self.span
        read_after = locals_read_after(instructions, end, range(head, end))
        read_next = locals_read_first(instructions, for_iter + 1, (head, end))  # by the next iteration
        for name in set(self.locals) | set(self.tracer.locals):
            before, after = self._before(name), self.tracer.locals.get(name)
            if after is before:
                continue
            if isinstance(before, ArrayValue) and isinstance(after, ArrayValue):
                start = first_node.get(id(before), (None, before.node))[1]
                carries.append((name, start, after.node))
            elif name in read_after | read_next and _is_scalar(before) and isinstance(after, ArrayValue) \
                    and type(self.steps) is range:
                raise PeelFirst("unsupported", f"the loop's body makes {name!r}, a Python number before the "
                                "loop, an array")
            elif name in read_after and not (isinstance(after, ConstantValue) and after.value is body.index):
                raise Break("unsupported", f"the loop's body sets {name!r}, which is read after the loop, to "
                            "a value that is not an array it held before the loop")
            elif name in read_next:
                raise Break("unsupported", f"the loop's body changes {name!r}, which its next iteration reads, and "
                            "it is not an array before and after the body")
            elif before is None:
                del self.tracer.locals[name]
            else:
                self.tracer.locals[name] = before
            if isinstance(after, ConstantValue) and after.value is body.index and name in read_after:
                self._index_after_the_loop(name)
        check_carries(carries)
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

    def _check_tensors(self, body: LoopBody, carries: list[tuple]) -> None:
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
            self.bound_sources = {}

    def _index_after_the_loop(self, name: str) -> None:
        """The loop variable, read after the loop: its last value."""
        if type(self.steps) is not range:
            raise Break("unsupported", f"{name!r}, the variable of a loop whose trip count depends on an enclosing "
                        "loop's index, is read after the loop")
        self.tracer.locals[name] = ConstantValue(self.steps[-1])
        self.bound_sources = {}  # its last value depends on the stop: NOTE(loop-bounds)

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

    def _build(self, body: LoopBody, carries: list[tuple]) -> None:
        """The body's graph, compiled; the loop node and its results in the enclosing graph."""
        capture, graph = self.capture, body.graph
        carry_in = [body.lift(start) for _, start, _ in carries]
        # A carry the body rebinds to an array from outside it (`u, u_prev = new, u`
        # passes the iteration's incoming `u` on) ends as that array's placeholder.
        carry_out = [body.lift(end) if end.graph is not graph else end for _, _, end in carries]
        invariants = [node for node in body.lifted if body.lifted[node] not in carry_in]
        symbols = bind_symbols(graph)  # NOTE(nested-loops)
        order = [body.index_node, *carry_in, *(body.lifted[node] for node in invariants), *symbols]
        graph.nodes[:len(order)] = order
        graph.output(tuple(carry_out))
        donated = [position for position, placeholder in enumerate(carry_in) if assigned_into(placeholder)]
        # Neither the correctness check nor the gradient's recomputation (NOTE(loop-gradient))
        # may have the body write over arrays it runs the body on again.
        if not (config.verify_correctness or self.tensors):
            graph.donated = frozenset(carry_in[position].name for position in donated)
        module = GraphModule(graph)
        examples = [body.index.hint, *(example_of(node) for node in order[1:])]
        try:
            compiled = capture.compile_body(module, examples)
        except Exception as error:  # correctness first: the loop unrolls (NOTE(loop-capture))
            self._undo()
            raise Break("unsupported", f"the backend failed on the loop's body: {error.__cause__ or error}") from None
        try:
            # The backend's lowering compared the index too (a view's bounds, NOTE(dynamic-
            # ranges)): what it relied on must hold for every index, as the trace's own.
            self._check_guards(body, [*capture.bodies, body])
        except Break:
            self._undo()
            raise
        loop = _loop_op(compiled, len(carries), pure=not graph.impure_calls(),
                        owned=tuple(donated) if graph.donated else ())
        starts = [start for _, start, _ in carries]
        if self.tensors:
            if symbols or body.outer is not None:
                self._undo()
                raise Break("unsupported", "a loop whose body reads pyjit.Tensor values is differentiated only "
                            "outside other loops and without symbolic sizes")
            loop = self._differentiable(loop, module, examples, starts, invariants, body)
        steps = self.steps
        start, stop = (self.tracer.number_input(self.bound_sources[part], value) if part in self.bound_sources
                       else value for part, value in (("start", steps.start), ("stop", steps.stop)))
        with body.parent.at(self.tracer.loc):
            node = body.parent.call(loop, start, stop, steps.step,
                                    *(body.outside(start) for _, start, _ in carries), *invariants,
                                    *(symbol.meta for symbol in symbols))
            results = unpacked(node, starts) if self.tensors else [
                body.parent.call(LOOP_RESULT, node, position) for position in range(len(carries))]
        del capture.rebound[self.mark.rebound:]
        for (holder, start, _), result in zip(carries, results):
            if isinstance(holder, ArrayValue):
                capture.rebound.append((holder, start))
                holder.node = result
            else:
                self.tracer.locals[holder] = ArrayValue(result, tensor=self.tensors)
        if body.outer is not None:  # counted with the outermost loop, which may still unroll
            body.outer.nested_loops += 1 + body.nested_loops
        else:
            counters["stats"]["loops_captured"] += 1 + body.nested_loops
        where = self.tracer.loc.describe() if self.tracer.loc is not None else "?"
        in_c = ", run as one C loop (NOTE(c-loops))" if getattr(compiled, "run_loop", None) is not None else ""
        _code_log.debug("TRACED LOOP at %s over %r, carries %s%s\n%s", where, steps,
                        ", ".join(holder_name(holder) for holder, _, _ in carries), in_c, module.code)

    def _differentiable(self, loop: Op, module: GraphModule, examples: list, starts: list[Node],
                        invariants: list[Node], body: LoopBody) -> Op:
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
            self._check_guards(body, [*self.capture.bodies, body])
        except Exception as error:  # correctness first: the loop unrolls (NOTE(loop-capture))
            self._undo()
            if isinstance(error, PeelFirst):  # the gradient's decisions fail at the first index alone
                raise
            why = error.explanation if isinstance(error, Break) else error.__cause__ or error
            raise Break("unsupported", f"the loop's gradient cannot be built: {why}") from None
        return differentiable


def check_carries(carries: list[tuple]) -> None:
    """Each carry (holder, start, end) starts as an array of its own and keeps its shape and dtype."""
    starts = [start for _, start, _ in carries]
    if len(set(starts)) != len(starts):
        raise Break("unsupported", "two of the loop's carries start as one array")
    for holder, start, end in carries:
        if not (isinstance(end.meta, TensorMeta) and end.meta.dtype == start.meta.dtype
                and end.meta.same_as(start.meta)):
            raise Break("unsupported", f"the loop's body changes the shape or dtype of {holder_name(holder)}")


def _argument_bounds(tracer, steps: range) -> dict[str, LocalSource]:
    """"start" and "stop" -> the frame's int argument that gave `steps` that bound and is
    read nowhere else (NOTE(loop-bounds)); the step stays a constant (its sign decides
    the trip count, and 0 raises)."""
    made = tracer.capture.ranges.get(id(steps))
    if made is None or made[0] is not steps or tracer.root is not tracer:
        return {}
    args = made[1]
    bounds = {"stop": args[0]} if len(args) == 1 else {"start": args[0], "stop": args[1]}
    reads = local_reads(tracer.bytecode.instructions)
    sources = {}
    for part, value in bounds.items():
        source = value.source if isinstance(value, ConstantValue) and type(value.value) is int else None
        if isinstance(source, LocalSource) and source.name not in tracer.code.co_cellvars \
                and reads.get(source.name) == 1:
            sources[part] = source
    return sources


# NOTE(donated-carries): item assignment in the body is index_put, whose op copies the
# whole array, so `B[1:-1] = ...` in a loop copied B once per iteration (the 1-D Jacobi
# loop: 80 copies of 3.2 MB a call, where NumPy writes in place). A carry the body
# assigns into is therefore *donated*: the body's graph names its placeholder in
# `Graph.donated`, and the glue may write into that array at the assignment when nothing
# reads its old value later (NOTE(assignment-in-place) in pyjit/codegen/glue.py). The
# loop op makes that safe: it copies those carries once before the first iteration (the
# caller's arrays, and those of the enclosing graph, are never written), and after each
# iteration copies again any of them the body returned that it does not own alone (an
# array the loop was given, passed on or swapped into its place; an array returned
# twice; a view). A backend that ignores `donated` costs the one copy. Under
# config.verify_correctness nothing is donated: the check runs the body again on the
# same arrays.
def assigned_into(placeholder: Node) -> bool:
    return any(getattr(user.target, "name", None) == "index_put" and user.args[0] is placeholder
               for user in placeholder.users)


def owned_state(state: tuple, owned: tuple[int, ...], shared: tuple) -> tuple:
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
    whole_loop = getattr(body, "run_loop", None)  # None: the backend runs the body per index

    def run(xp, start, stop, step, *arrays):
        state, invariants = arrays[:carries], arrays[carries:]
        shared = arrays  # what the body must never write: every array the loop was given
        if owned and len(range(start, stop, step)):
            state = tuple(array.copy() if position in owned else array for position, array in enumerate(state))
        if whole_loop is not None:  # every index in one call (NOTE(c-loops) in pyjit/codegen/cpu/loops.py)
            result = whole_loop(start, stop, step, *state, *invariants)
            if result is not None:
                return result
        for index in range(start, stop, step):
            state = body(index, *state, *invariants)
            if owned:
                state = owned_state(state, owned, shared)
        return tuple(state)

    def meta(start, stop, step, *metas):
        return tuple(metas[:carries])

    op = Op("loop", category="other", impl=run, meta=meta, doc="a captured loop (NOTE(loop-capture))")
    op.pure = pure
    return op


class _SmallSize(Break):
    """The body has a size of 0 or 1 at the index it was traced for (NOTE(index-hints))."""


def _has_small_size(graph: Graph) -> bool:
    for node in graph.nodes:
        metas = node.meta if isinstance(node.meta, (tuple, list)) else (node.meta,)
        for meta in metas:
            if isinstance(meta, TensorMeta) and any(isinstance(size, SymInt) and size.hint < 2 for size in meta.shape):
                return True
    return False


class _Rest(NamedTuple):
    name: str
    steps: range


def _is_scalar(value: Value | None) -> bool:
    return isinstance(value, ConstantValue) and type(value.value) in (bool, int, float, complex)


def bind_symbols(graph: Graph) -> list[Node]:
    """An int placeholder (appended) for each size symbol the body uses but none of its
    inputs gives, such as an enclosing loop's index (NOTE(nested-loops))."""
    bound = {node.meta.python() for node in graph.placeholders if isinstance(node.meta, SymInt)}
    bound |= set(symbol_axes(graph))
    used: set[str] = set()
    for node in graph.nodes:
        _collect_symbols((node.args, node.kwargs, node.meta), used)
    placeholders = []
    for name in sorted(used - bound, key=lambda name: int(name[1:])):
        placeholder = graph.placeholder(f"size_{name}", SymInt({(name,): 1}, graph.shape_env))
        graph.nodes.remove(placeholder)
        graph.nodes.insert(len(graph.placeholders), placeholder)
        placeholders.append(placeholder)
    return placeholders


def _collect_symbols(value, into: set[str]) -> None:
    if isinstance(value, SymInt):
        into.update(value.symbols())
    elif isinstance(value, TensorMeta):
        _collect_symbols(value.shape, into)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _collect_symbols(item, into)
    elif isinstance(value, dict):
        _collect_symbols(list(value.values()), into)
    elif isinstance(value, slice):
        _collect_symbols((value.start, value.stop, value.step), into)


def example_of(placeholder: Node):
    meta = placeholder.meta
    if isinstance(meta, SymInt):
        return meta.hint
    shape = tuple(size.hint if isinstance(size, SymInt) else size for size in meta.shape)
    return np.zeros(shape, meta.dtype)


def _guard_symbols(guard) -> set[str]:
    lhs = guard.lhs if isinstance(guard.lhs, SymInt) else guard.lhs.expr  # or a remainder `expr % n`
    return lhs.symbols() | (guard.rhs.symbols() if isinstance(guard.rhs, SymInt) else set())


def holder_name(holder) -> str:
    if isinstance(holder, str):
        return holder
    return str(holder.source) if holder.source is not None else holder.node.name
