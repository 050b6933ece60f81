"""The index ranges of captured loops (NOTE(loop-capture) in loops.py): ranges whose bounds
are sizes of the trace, and the check that what a body relied on holds for every index.

NOTE(nested-loops): a loop inside a captured body is captured too, as a loop node of
the enclosing body's graph. Its range may depend on an enclosing loop's index
(`for j in range(i)`, `range(k + 1, n)`, `A[i, :i] @ x[:i]` inside): `range()` called
on a size of the trace right before the GET_ITER of a `for` loop makes a
`SymbolicRange` instead of specialising the size, and the inner loop node's bounds are
those expressions, which the enclosing body computes from its own index each time it
runs. Such a loop is always a loop node (its trip count changes from one outer iteration
to the next; zero trips included); where it cannot be captured, its range is specialised
to the example values, which puts an equality guard on the enclosing index, so the
enclosing loop unrolls instead, and every loop then has constant bounds. A symbol a body
uses but does not receive (the enclosing index, in `A[i, j]`) becomes an int input of the
body, passed by the loop node (`bind_symbols` in loops.py).

What a body relied on about its index (size guards) is checked for every index tuple
of the loops around it and its own, outermost first, each inner range evaluated at the
enclosing indices (`first_failure`). A guard that is linear in the innermost index and
an inequality is monotone in it, so only that range's first and last values are
checked: a single loop's `x[:i]`, `y[t - 1]` and `A[k + 1:, k]` cost two checks whatever
the trip count, and a triangular nest costs two per outer iteration. Other guards are
checked on every index, up to GUARD_CHECK_LIMIT checks.

NOTE(dynamic-ranges): a guard or a range that mentions a size that is not an index (a
dynamic dimension: `for i in range(n)` with `n = b.shape[0]` once sizes are dynamic)
cannot be checked on values. It is reduced instead (`size_conditions`): linear in the
innermost index, it holds on that range where it holds at the range's first and last
index, so each index is replaced by those two expressions, innermost loop first, and
what remains are guards on sizes alone, added to the graph's guards (checked on every
call, like any size guard). They are sufficient, not necessary: an end of a range that
is empty at run time adds a condition no index needed, and a call that fails one
compiles again. A guard that is not linear in an index after the replacements, a
symbolic range whose step is not 1 or -1, or a condition false at the example sizes
keeps the loop unrolled.
Slices are modelled so that empty ones are not a separate case (`x[:i]` at i = 0, and
`x[k + 1:]` at the last k, are the same expressions: pyjit/ops/views.py), which is what
makes the triangular loops of linear algebra capturable.
"""

from __future__ import annotations

import dataclasses

from .. import config
from ..graph import ShapeGuard, SymInt
from .breaks import Break
from .bytecode import Instr, Label
from .values import ConstantValue

GUARD_CHECK_LIMIT = 1 << 16  # index tuples a guard is checked on before the loop is unrolled instead
_MONOTONE = ("<", "<=", ">", ">=")


@dataclasses.dataclass(frozen=True)
class SymbolicRange:
    """`range(start, stop, step)` whose start or stop is a size expression of the trace
    (NOTE(nested-loops)); the step is a constant."""

    start: int | SymInt
    stop: int | SymInt
    step: int

    def at(self, hints: dict[str, int]) -> range:
        """The range for the symbols' values in `hints`."""
        return range(*(bound.evaluate(hints) if isinstance(bound, SymInt) else bound
                       for bound in (self.start, self.stop, self.step)))

    def symbols(self) -> set[str]:
        return {name for bound in (self.start, self.stop) if isinstance(bound, SymInt) for name in bound.symbols()}

    def specialised(self) -> range:
        """The range of the example values, guarded to stay so (for a loop that unrolls)."""
        return range(int(self.start), int(self.stop), self.step)


def loop_span(instructions: list, get_iter: int) -> tuple[int, int, int] | None:
    """(head label, FOR_ITER, exit label) indices of the loop the GET_ITER at `get_iter`
    starts; None when no `for` loop starts there."""
    head = get_iter + 1
    if not (isinstance(instructions[get_iter], Instr) and instructions[get_iter].name == "GET_ITER"):
        return None
    if head + 1 >= len(instructions) or not isinstance(instructions[head], Label):
        return None
    for_iter = instructions[head + 1]
    if not isinstance(for_iter, Instr) or for_iter.name != "FOR_ITER":
        return None
    end = next(i for i, item in enumerate(instructions) if item is for_iter.arg)
    return (head, head + 1, end) if end > head else None


def symbolic_range(tracer, args: list) -> ConstantValue | None:
    """`range(*args)` as a SymbolicRange, when a bound is a size expression and a `for`
    loop over it starts at the next instruction (NOTE(nested-loops)); None otherwise."""
    values = [arg.value if isinstance(arg, ConstantValue) else None for arg in args]
    if not (1 <= len(values) <= 3 and any(isinstance(value, SymInt) for value in values)
            and all(type(value) is int or isinstance(value, SymInt) for value in values)):
        return None
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values, 1)[:3]
    if isinstance(step, SymInt) or step == 0 or not config.capture_loops or tracer.capture.compile_body is None:
        return None
    instructions = tracer.bytecode.instructions
    if tracer.index + 1 >= len(instructions) or loop_span(instructions, tracer.index + 1) is None:
        return None
    return ConstantValue(SymbolicRange(start, stop, step))


def evaluate_range(steps: range | SymbolicRange, hints: dict[str, int]) -> range:
    return steps if type(steps) is range else steps.at(hints)


def first_failure(guard, loops: list, hints: dict[str, int]) -> tuple | None:
    """The indices (outermost first) of `loops` (each with `.name` and `.steps`) for which
    `guard` does not hold, None where it holds for all (NOTE(nested-loops)); a Break when
    that takes more than GUARD_CHECK_LIMIT checks. Every range's bounds are constants or
    expressions of the other loops' indices (NOTE(dynamic-ranges) takes the rest)."""
    hints, budget = dict(hints), [GUARD_CHECK_LIMIT]
    last = len(loops) - 1
    monotone = _monotone_in(guard, loops[last].name)

    def visit(level: int, chosen: tuple) -> tuple | None:
        loop = loops[level]
        steps = evaluate_range(loop.steps, hints)
        if level == last and monotone:
            steps = [steps[0], steps[-1]] if steps else []
        for value in steps:
            budget[0] -= 1
            if budget[0] < 0:
                raise Break("unsupported", f"the loop's body relies on {guard}, which cannot be checked for every "
                            "index")
            hints[loop.name] = value
            found = (not guard.holds(hints)) if level == last else visit(level + 1, chosen + (value,))
            if found:
                return found if type(found) is tuple else chosen + (value,)
        return None

    return visit(0, ())


def size_conditions(guard, loops: list) -> list[ShapeGuard] | None:
    """Guards on sizes alone under which `guard` holds for every index of `loops` (each
    with `.name` and `.steps`), for a guard or a range that mentions a size that is not an
    index (NOTE(dynamic-ranges)); None where it cannot be reduced so."""
    if guard.relation not in _MONOTONE or not isinstance(guard.lhs, SymInt):
        return None
    expressions = [guard.lhs - guard.rhs]
    for loop in reversed(loops):
        ends = _ends(loop.steps)
        if ends is None:
            return None
        reduced = []
        for expression in expressions:
            if not isinstance(expression, SymInt) or loop.name not in expression.symbols():
                reduced.append(expression)
            elif not _linear_in(expression, loop.name):
                return None
            else:
                reduced += [expression.substitute(loop.name, end) for end in ends]
        expressions = reduced
    conditions = []
    for expression in expressions:
        if not isinstance(expression, SymInt):
            if not ShapeGuard.compare(expression, guard.relation, 0):
                return None
        elif expression.symbols() & expression.env.indices:
            return None  # an index of a loop around these: checked when that loop is
        else:
            conditions.append(ShapeGuard(expression, guard.relation, 0))
    return conditions


def _ends(steps: range | SymbolicRange) -> list | None:
    """The first and last index of `steps`, as expressions; None where the last one is not
    linear in the bounds (a symbolic range with a step other than 1 or -1)."""
    if type(steps) is range:
        return [steps[0], steps[-1]] if steps else []
    if steps.step not in (1, -1):
        return None
    return [steps.start, steps.stop - steps.step]


def _linear_in(expression: SymInt, name: str) -> bool:
    return all(monomial.count(name) <= 1 for monomial in expression.terms)


def _monotone_in(guard, name: str) -> bool:
    """Whether `guard` is an inequality whose two sides differ by an expression linear in
    `name`: it then holds on a range of `name` when it holds at both ends."""
    if guard.relation not in _MONOTONE or not isinstance(guard.lhs, SymInt):
        return False
    difference = guard.lhs - guard.rhs
    return not isinstance(difference, SymInt) or _linear_in(difference, name)
