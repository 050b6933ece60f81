"""`while` loops captured as loops: a `while` whose condition is Python arithmetic on
numbers the loop carries becomes one node of the graph (NOTE(while-capture)).

NOTE(while-capture): CPython 3.11 to 3.13 compile `while cond: body` as the condition,
a jump past the loop when it is false, the body, and the condition again with the jump
back (3.11: POP_JUMP_BACKWARD_IF_TRUE; 3.12, 3.13: POP_JUMP_IF_FALSE past the loop and
JUMP_BACKWARD); `find_while_loops` finds that shape, the two conditions being the same
instructions on the `while` line, straight code (an `and`/`or` condition is not
captured). Where the walk reaches the first condition (with `config.capture_loops`,
outside any loop body being traced), the loop is captured like a `for` loop
(NOTE(loop-capture) in loops.py) with these differences:

* its state has numbers as well as arrays: each local the loop stores that holds a
  Python int or float before it is a *carried number*, and each int or float argument
  of the frame that the condition reads and the code reads nowhere outside the loop
  (`t_end`, `steps`) is a *number input*: an input of the graph guarded by its type
  only (`GuardSet.unpin`), so the trip count is never a guard and one compile serves
  every bound; a carried number that is such an argument starts from an input too.
  They are CarriedNumbers in the trace (NOTE(carried-numbers) in carried_numbers.py);
* the condition is traced once, from the first copy: it must come out a comparison of
  carried numbers. A condition that reads array values (`np.max(err) > tol`) records
  array ops or needs an array's truth, and the loop is not captured: it runs as before,
  unrolled by the walk until that truth value, which is a data-dependent break;
* the body is traced once, to the second copy of the condition (a `continue`, a jump
  back to the first copy, ends the iteration there); its array code becomes the body's
  graph, as a `for` loop's, with the numbers it uses as Python-scalar inputs; the
  carried numbers' values at its end are expressions of their values at its start;
* the node is `while_loop(*numbers, *number inputs, *array carries, *invariants)`; its
  op evaluates the condition and the numbers with Python's operators and runs the
  compiled body while the condition holds (zero times included), in Python; its
  results are the array carries and then the carried numbers (`loop_result` nodes).
  A carried number read after the loop is taken from the graph's result as the
  Python number it is (NOTE(carried-numbers)).

The loop is not captured, and runs as before (`counters["loops_unrolled"]` and the
`graph_breaks` log say why), where the body breaks, has a `break` or `return`, changes
Python state, uses a carried number other than by arithmetic (its truth, `int()`, a
slice bound), changes a carried number's type (`n = n / 2`) or makes it an array, or
reads pyjit.Tensor values (gradients through a while loop are not built: it unrolls,
as before); and inside another loop being captured, where `for` loops inside a while
loop's body are unrolled. Short while loops are captured too: their trip count is
known only when they run.
"""

from __future__ import annotations

import dataclasses
import logging

from .. import config
from ..autograd import Tensor
from ..graph import Graph, GraphModule, Node, TensorMeta
from ..ops.registry import Op
from ..utils import counters
from .breaks import Break
from .bytecode import Instr, Label, local_reads, local_stores, locals_read_after, locals_read_first
from .carried_numbers import CarriedNumber, after_loop, evaluate, leaf
from .codemap import CodeMap
from .loops import (LOOP_RESULT, LoopBody, assigned_into, bind_symbols, check_carries, example_of, holder_name,
                    log_unrolled, owned_state)
from .sources import LocalSource
from .values import ArrayValue, ConstantValue, Value

_code_log = logging.getLogger("pyjit.graph_code")
_NUMBERS = (int, float)
_ENTRY_JUMPS = ("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE")
_loops = CodeMap()


@dataclasses.dataclass(frozen=True)
class WhileSpan:
    """Indices in a code's instructions of one `while` loop: the first condition's first
    instruction and its jump past the loop, the body's label, where the second condition
    starts (the body's end), and the label past the loop."""

    condition: int
    entry_jump: int
    head: int
    body_end: int
    exit: int


def while_loops(tracer) -> dict[int, WhileSpan]:
    """The `while` loops of the tracer's code, by the index of their first condition."""
    return _loops.get(tracer.code, lambda: find_while_loops(tracer.bytecode.instructions))


def find_while_loops(instructions: list) -> dict[int, WhileSpan]:
    label_at = {id(item): index for index, item in enumerate(instructions) if isinstance(item, Label)}
    found = {}
    for jump, instr in enumerate(instructions):
        if not (isinstance(instr, Instr) and instr.name in _ENTRY_JUMPS) or jump + 1 >= len(instructions) \
                or not isinstance(instructions[jump + 1], Label):
            continue
        exit = label_at[id(instr.arg)]
        second_end = _back_edge(instructions, jump + 1, exit)
        span = None if second_end is None else _conditions(instructions, jump, second_end)
        if span is not None:
            found[span[0]] = WhileSpan(span[0], jump, jump + 1, span[1], exit)
    return found


def _back_edge(instructions: list, head: int, exit: int) -> int | None:
    """Where the second condition ends: before the jump back to `head` that comes right
    before `exit` (3.11), or before the jump past the loop that precedes it (3.12+)."""
    if exit - 2 <= head:
        return None
    back, before = instructions[exit - 1], instructions[exit - 2]
    if not isinstance(back, Instr) or back.arg is not instructions[head]:
        return None
    if back.name in ("POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_IF_TRUE"):
        return exit - 1
    if back.name == "JUMP_BACKWARD" and isinstance(before, Instr) and before.name == "POP_JUMP_IF_FALSE" \
            and before.arg is instructions[exit]:
        return exit - 2
    return None


def _conditions(instructions: list, jump: int, second_end: int) -> tuple[int, int] | None:
    """(first condition's start, second condition's start): the same straight code on
    the `while` line before the entry jump and before `second_end`; None if the
    condition is not one straight piece of code."""
    line = _line(instructions[jump])
    first, second = jump - 1, second_end - 1
    while first >= 0 and isinstance(instructions[first], Instr) and isinstance(instructions[second], Instr) \
            and _line(instructions[first]) == line == _line(instructions[second]) \
            and _same(instructions[first], instructions[second]) and not isinstance(instructions[first].arg, Label):
        first, second = first - 1, second - 1
    if first == jump - 1:
        return None
    before = next((item for item in reversed(instructions[:first + 1]) if isinstance(item, Instr)), None)
    if before is not None and _line(before) == line:
        return None  # the condition starts earlier (it has jumps of its own) or shares its line
    return first + 1, second + 1


def _line(instr: Instr) -> int | None:
    return instr.loc.lineno if instr.loc is not None else None


def _same(a: Instr, b: Instr) -> bool:
    """The same instruction: a constant the same object, names (with flags) equal."""
    return a.name == b.name and (a.arg is b.arg or type(a.arg) is type(b.arg) and type(a.arg) in (str, int, tuple)
                                 and a.arg == b.arg)


def capture_while(tracer, span: WhileSpan) -> int | None:
    """At the first condition of a `while` loop: the loop captured as one node, and the
    index to walk on from (past the loop); None where it runs as before."""
    capture = tracer.capture
    if not config.capture_loops or capture.compile_body is None or capture.bodies:
        return None
    attempt = _WhileCapture(tracer, span)
    try:
        return attempt.run()
    except Break as why:
        attempt.undo()
        log_unrolled(tracer, why)
        return None


class _WhileBody(LoopBody):
    """A while loop's body being traced: no index; the numbers its array code uses are
    its first placeholders (NOTE(carried-numbers))."""

    def __init__(self, parent: Graph):
        self.parent, self.steps, self.outer, self.index, self.name = parent, None, None, None, None
        self.graph = Graph("body", shape_env=parent.shape_env)
        self.lifted: dict[Node, Node] = {}
        self.numbers: dict[int, tuple[CarriedNumber, Node]] = {}  # id(number) -> it, its placeholder
        self.relies_on_index, self.nested_loops = False, 0

    @property
    def leading(self) -> int:
        return len(self.numbers)

    def number(self, number: CarriedNumber) -> Node:
        """The placeholder that gives the body `number` (evaluated by the loop op)."""
        found = self.numbers.get(id(number))
        if found is None:
            placeholder = self.graph.placeholder(f"number{len(self.numbers)}", type(number.hint))
            self.graph.nodes.remove(placeholder)
            self.graph.nodes.insert(len(self.numbers), placeholder)
            found = self.numbers[id(number)] = (number, placeholder)
        return found[1]


def number_arg(tracer, number: CarriedNumber) -> Node:
    """What a graph op takes for a CarriedNumber: its placeholder in the while loop's body."""
    bodies = tracer.capture.bodies
    if number.node is not None or not bodies or not isinstance(bodies[-1], _WhileBody):
        raise Break("unsupported", "array code after a while loop reads a number the loop computed",
                    hint="the loop is captured; compute with the number outside the compiled function")
    return bodies[-1].number(number)


class _WhileCapture:
    """One attempt at capturing a while loop: the walks of its condition and body, then its node."""

    def __init__(self, tracer, span: WhileSpan):
        self.tracer, self.capture, self.span = tracer, tracer.capture, span
        self.position = (tracer.instr, tracer.index, tracer.loc, tracer.stack_before)
        self.stack = list(tracer.stack)
        self.mark = self.capture.checkpoint()
        self.locals = dict(tracer.locals)
        self.body: _WhileBody | None = None

    def run(self) -> int:
        tracer, span = self.tracer, self.span
        numbers = self._numbers()
        body = self.body = _WhileBody(self.capture.graph)
        self.capture.bodies.append(body)
        self.capture.graph = body.graph
        try:
            tracer.walk(span.condition, (span.head, span.exit), until=span.entry_jump)
            condition = tracer.pop()
            if body.graph.nodes or not (isinstance(condition, ConstantValue)
                                        and isinstance(condition.value, CarriedNumber)):
                raise Break("unsupported", "the while loop's condition reads array values" if body.graph.nodes
                            or isinstance(condition, ArrayValue) else
                            "the while loop's condition is not a comparison of numbers its body changes")
            # `continue` jumps back to the first condition's label: the iteration ends there too.
            tracer.walk(span.head + 1, (span.condition - 1, span.exit), until=span.body_end)
            self._check_state()
            arrays = self._arrays(numbers)
        finally:
            self.capture.graph = body.parent
            self.capture.bodies.pop()
        self._build(numbers, condition.value, arrays)
        tracer.stack, tracer.returned, tracer.jump_to = list(self.stack), None, None
        tracer.instr, tracer.index, tracer.loc, tracer.stack_before = self.position
        return span.exit

    def undo(self) -> None:
        tracer = self.tracer
        if self.capture.bodies and self.capture.bodies[-1] is self.body:
            self.capture.graph = self.body.parent
            self.capture.bodies.pop()
        self.capture.rollback(self.mark)
        tracer.locals.clear()
        tracer.locals.update(self.locals)
        tracer.stack, tracer.returned, tracer.jump_to = list(self.stack), None, None
        tracer.instr, tracer.index, tracer.loc, tracer.stack_before = self.position

    def _numbers(self) -> list[tuple[str, Value | LocalSource]]:
        """The loop's numbers, carried ones first: (local, its value before the loop, or
        the argument's source where it is a number input); each local then holds its leaf."""
        tracer, span = self.tracer, self.span
        instructions = tracer.bytecode.instructions
        in_loop = local_reads(instructions[span.condition:span.exit + 1])
        everywhere = local_reads(instructions)
        stored = local_stores(instructions[span.head:span.exit])
        read_by_condition = local_reads(instructions[span.condition:span.entry_jump])
        carried, inputs = [], []
        for name in sorted(stored | set(read_by_condition)):
            source = self._number_argument(name, in_loop, everywhere)
            if name in stored:
                if source is None and name not in tracer.locals and name not in tracer.arguments:
                    continue  # first set in the body
                before = source if source is not None else tracer.load_local(name)
                if source is not None or type(before.value if isinstance(before, ConstantValue) else None) \
                        in _NUMBERS:
                    carried.append((name, before))
            elif source is not None:
                inputs.append((name, source))
        self.mark, self.locals = self.capture.checkpoint(), dict(tracer.locals)  # what loading them recorded stays
        numbers = carried + inputs
        for position, (name, before) in enumerate(numbers):
            hint = self._number_example(before)
            tracer.locals[name] = ConstantValue(leaf(position, hint))
        self.carried = len(carried)
        return numbers

    def _number_argument(self, name: str, in_loop: dict, everywhere: dict) -> LocalSource | None:
        """The source of the frame's int or float argument `name` where only the loop reads
        it and it is not read yet: an input of the graph (NOTE(while-capture))."""
        tracer = self.tracer
        slot = tracer.arguments.get(name)
        if slot is None or tracer.root is not tracer or name in tracer.locals or name in tracer.code.co_cellvars \
                or everywhere.get(name) != in_loop.get(name):
            return None
        return LocalSource(slot, name) if type(self.capture.frame.args[slot]) in _NUMBERS else None

    def _number_example(self, before: Value | LocalSource):
        return self.capture.frame.args[before.slot] if isinstance(before, LocalSource) else before.value

    def _check_state(self) -> None:
        stack = self.tracer.stack
        if len(stack) != len(self.stack) or any(a is not b for a, b in zip(stack, self.stack)):
            raise Break("unsupported", "the loop's body leaves the stack changed")
        if self.capture.side_effects.checkpoint()[0] != self.mark.side_effects[0]:
            raise Break("unsupported", "the loop's body changes Python state (a list, dict or attribute)")

    def _arrays(self, numbers: list) -> list[tuple]:
        """The array carries (holder, node before the loop, node at the end of the body);
        checks the carried numbers and puts back the locals nobody reads after the body."""
        tracer, span, body = self.tracer, self.span, self.body
        instructions = tracer.bytecode.instructions
        first_node: dict[int, tuple[ArrayValue, Node]] = {}
        for value, node in self.capture.rebound[self.mark.rebound:]:
            first_node.setdefault(id(value), (value, node))
        carries = [(value, node, value.node) for value, node in first_node.values() if node.graph is not body.graph]
        read_after = locals_read_after(instructions, span.exit, range(span.condition, span.exit))
        read_next = locals_read_first(instructions, span.head + 1, (span.head, span.exit))
        carried_names = {name for name, _ in numbers[:self.carried]}
        for name in set(self.locals) | set(tracer.locals):
            before, after = self.locals.get(name), tracer.locals.get(name)
            if name in carried_names:
                self._check_number(name, numbers, after)
            elif after is before or any(name == number for number, _ in numbers) or _first_read(name, before, after):
                continue
            elif isinstance(before, ArrayValue) and isinstance(after, ArrayValue):
                carries.append((name, first_node.get(id(before), (None, before.node))[1], after.node))
            elif name in read_after | read_next:
                raise Break("unsupported", f"the loop's body sets {name!r}, which is read after the loop or by "
                            "its next iteration, to a value that is not an array it held before the loop")
            elif before is None:
                tracer.locals.pop(name, None)
            else:
                tracer.locals[name] = before
        if not carries:  # Python arithmetic alone: folded as before, its numbers stay constants after the loop
            raise Break("unsupported", "the while loop carries no array")
        check_carries(carries)
        if any(isinstance(node.meta, TensorMeta) and node.meta.device != "cpu" for node in body.lifted):
            raise Break("unsupported", "the loop's body reads a CuPy array or a GPU Tensor (loop nodes are "
                            "built for NumPy arrays and CPU Tensors only)")
        self._check_tensors(carries)
        return carries

    def _check_number(self, name: str, numbers: list, after: Value | None) -> None:
        position = next(position for position, (carried, _) in enumerate(numbers) if carried == name)
        before = self._number_example(numbers[position][1])
        value = after.value if isinstance(after, ConstantValue) else None
        hint = value.hint if isinstance(value, CarriedNumber) else value
        if isinstance(after, ArrayValue):
            raise Break("unsupported", f"the loop's body makes {name!r}, a Python number before the loop, an "
                        "array")
        if type(hint) is not type(before) or (isinstance(value, CarriedNumber) and value.node is not None):
            raise Break("unsupported", f"the loop's body changes the type of {name!r}, a number it carries")

    def _check_tensors(self, carries: list[tuple]) -> None:
        tensors = {node for _, example, node in self.capture.inputs if isinstance(example, Tensor)}
        tensors.update(value.node for value in self.locals.values() if isinstance(value, ArrayValue) and value.tensor)
        if any(node.depends_on(tensors) for node in self.body.lifted):
            raise Break("unsupported", "a while loop whose body reads pyjit.Tensor values is not captured "
                        "(its gradient is not built)")

    def _build(self, numbers: list, condition: CarriedNumber, carries: list[tuple]) -> None:
        """The body's graph, compiled; the loop node and its results in the enclosing graph."""
        tracer, capture, body = self.tracer, self.capture, self.body
        graph = body.graph
        carry_in = [body.lift(start) for _, start, _ in carries]
        carry_out = [body.lift(end) if end.graph is not graph else end for _, _, end in carries]
        operands = [number for number, _ in body.numbers.values()]
        invariants = [node for node in body.lifted if body.lifted[node] not in carry_in]
        symbols = bind_symbols(graph)
        order = [*carry_in, *(placeholder for _, placeholder in body.numbers.values()),
                 *(body.lifted[node] for node in invariants), *symbols]
        graph.nodes[:len(order)] = order
        graph.output(tuple(carry_out))
        donated = [position for position, placeholder in enumerate(carry_in) if assigned_into(placeholder)]
        if not config.verify_correctness:
            graph.donated = frozenset(carry_in[position].name for position in donated)
        module = GraphModule(graph)
        examples = [*(example_of(node) for node in carry_in), *(number.hint for number in operands),
                    *(example_of(node) for node in order[len(carry_in) + len(operands):])]
        try:
            compiled = capture.compile_body(module, examples)
        except Exception as error:  # correctness first: the loop runs as before
            raise Break("unsupported", f"the backend failed on the loop's body: {error.__cause__ or error}") from None
        updates = [tracer.locals[name].value for name, _ in numbers[:self.carried]]
        types = tuple(type(self._number_example(before)) for _, before in numbers[:self.carried])
        loop = _while_op(compiled, _Program(condition, updates, operands), (len(numbers), len(carries)), types,
                         pure=not graph.impure_calls(), owned=tuple(donated) if graph.donated else ())
        starts = [tracer.number_input(before, self._number_example(before)) if isinstance(before, LocalSource)
                  else before.value for _, before in numbers]
        with body.parent.at(tracer.loc):
            node = body.parent.call(loop, *starts, *(start for _, start, _ in carries), *invariants,
                                    *(symbol.meta for symbol in symbols))
            self._results(node, numbers, carries)
        counters["stats"]["loops_captured"] += 1
        where = tracer.loc.describe() if tracer.loc is not None else "?"
        _code_log.debug("TRACED WHILE LOOP at %s, carries %s\n%s", where,
                        ", ".join([*(name for name, _ in numbers[:self.carried]),
                                   *(holder_name(holder) for holder, _, _ in carries)]), module.code)

    def _results(self, node: Node, numbers: list, carries: list[tuple]) -> None:
        """The loop's results: the array carries' new values, and the carried numbers read
        after the loop (NOTE(carried-numbers)); the other numbers' locals as before."""
        tracer, capture, parent = self.tracer, self.capture, node.graph
        del capture.rebound[self.mark.rebound:]
        for position, (holder, start, _) in enumerate(carries):
            result = parent.call(LOOP_RESULT, node, position)
            if isinstance(holder, ArrayValue):
                capture.rebound.append((holder, start))
                holder.node = result
            else:
                tracer.locals[holder] = ArrayValue(result)
        read_after = locals_read_after(tracer.bytecode.instructions, self.span.exit,
                                       range(self.span.condition, self.span.exit))
        for position, (name, before) in enumerate(numbers):
            if position < self.carried and name in read_after:
                result = parent.call(LOOP_RESULT, node, len(carries) + position)
                tracer.locals[name] = ConstantValue(after_loop(result, self._number_example(before)))
            elif name in self.locals:
                tracer.locals[name] = self.locals[name]
            else:
                tracer.locals.pop(name, None)


def _first_read(name: str, before: Value | None, after: Value | None) -> bool:
    """An argument the body was first to read, and left as it was."""
    return before is None and isinstance(after.source, LocalSource) and after.source.name == name


@dataclasses.dataclass(frozen=True)
class _Program:
    """A while loop's Python part: its condition, each carried number's next value, and
    the numbers its body takes, as expressions of the numbers (NOTE(carried-numbers))."""

    condition: CarriedNumber
    updates: list
    operands: list


def _while_op(body, program: _Program, counts: tuple[int, int], types: tuple, pure: bool,
              owned: tuple[int, ...]) -> Op:
    """The op of one while loop node (NOTE(while-capture)); the array carries at positions
    `owned` are donated to the body (NOTE(donated-carries) in loops.py)."""
    numbers, carries = counts
    condition, updates, operands = program.condition, program.updates, program.operands

    def run(xp, *args):
        values = list(args[:numbers])
        state, invariants = tuple(args[numbers:numbers + carries]), args[numbers + carries:]
        copied = not owned
        while evaluate(condition, values, {}):
            if not copied:  # the caller's arrays are never written
                state = tuple(array.copy() if position in owned else array for position, array in enumerate(state))
                copied = True
            memo: dict = {}
            state = body(*state, *(evaluate(number, values, memo) for number in operands), *invariants)
            if owned:
                state = owned_state(state, owned, args)
            values[:len(updates)] = [evaluate(update, values, memo) for update in updates]
        return (*state, *values[:len(updates)])

    def meta(*metas):
        return (*metas[numbers:numbers + carries], *types)

    op = Op("while_loop", category="other", impl=run, meta=meta, doc="a captured while loop (NOTE(while-capture))")
    op.pure = pure
    return op
