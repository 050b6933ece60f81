"""Row reductions in fewer passes: a CPU renderer's rewrites of the kernel IR
(pyjit/codegen/ir/kernel_ir.py) before it renders a kernel (the C renderer applies them;
the CUDA renderer, which spreads a row over a block's threads, does not).

NOTE(one-pass-moments): a float32 sum of squared deviations from a value that is fixed
along the row, `sum((u - c)**2)` (a variance, layer norm's second sum), reads the row
a second time after the pass that computes `c` (the mean). Written with a shift `x0`,
the first element of the row,

    sum((u - c)**2) = S2 - 2*(c - x0)*S1 + n*(c - x0)**2,   S1 = sum(u - x0), S2 = sum((u - x0)**2)

needs only S1 and S2, which the pass over the row that computes the mean also
accumulates (in double: NOTE(reduction-merging) in cpu/renderer.py runs them in one loop);
the sum is then combined once per row and rounded to float32 once. Where that pass sums
u itself (the mean's sum), S1 + n*x0 is that sum (in double, rounded once, as every
float32 sum is), so the loop keeps two accumulators, not three. Why it is safe:
every term is computed in double from float32 values (differences of float32 values
lose at most double's rounding), and because x0 is an element of the row, the result is
at least half the square of the largest |u - x0|, which bounds every term the
combination cancels; for rows up to 2**20 elements the error stays below float32's half
ulp, where NumPy's own float32 pairwise sum of rounded squares errs by several ulps
(docs/codegen.md, "Numerics"). The values of the graph are computed in float32, so the
result may differ from NumPy's in the last bits, as every float32 sum does. float64 sums
keep two passes (double has no wider type to absorb the cancellation), and so do rows
of symbolic or empty length (x0 would be read before knowing the row has an element).
The row is cache-resident in either form; the gain is a pass of arithmetic
(docs/benchmarks.md has the figures).

NOTE(duplicate-reductions): a kernel that computes the same reduction twice (`x.std()`
beside `((x - x.mean()) ** 2).sum()` both take the row's sum) keeps the first and reads
its result for the second: the same values in the same order, the same bits.
"""

from __future__ import annotations

import numpy as np

from ..cfamily.reductions import sums
from ..ir.index import Index
from ..ir.kernel_ir import Call, Constant, IndexValue, Load, Loop, Reduce, Var, substitute_body, walk_values

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def fewer_passes(body: tuple) -> tuple:
    """`body` and the bodies of its loops with NOTE(duplicate-reductions) and
    NOTE(one-pass-moments) applied."""
    body = tuple(Loop(s.dims, fewer_passes(s.body), s.parallel) if isinstance(s, Loop) else s for s in body)
    return _one_pass_moments(_without_duplicates(body))


def _without_duplicates(body: tuple) -> tuple:
    statements = list(body)
    written = _written(body)
    position = 0
    while position < len(statements):
        statement = statements[position]
        first = next((other for other in statements[:position] if isinstance(statement, Reduce)
                      and isinstance(other, Reduce) and not statement.stores and not other.stores
                      and not _loads(statement.value, written)
                      and (other.kind, other.dtype, other.value, other.dims)
                      == (statement.kind, statement.dtype, statement.value, statement.dims)), None)
        if first is None:
            position += 1
            continue
        statements[position:] = substitute_body(tuple(statements[position + 1:]), {},
                                                {Var(statement.name, statement.dtype): Var(first.name, first.dtype)})
    return tuple(statements)


def _one_pass_moments(body: tuple) -> tuple:
    statements = list(body)
    position = 0
    while position < len(statements):
        deviation = _squared_deviation(statements[position])
        run = _run(statements, position, deviation[0]) if deviation is not None else None
        if run is not None:
            start, end = run
            x0, (s1, s2), combined = _rewritten(statements[position], *deviation)
            statements[position] = combined
            found = _row_sum(statements, start, end, deviation[0])
            if found is None:
                statements[end:end] = [s1, s2]
            else:  # S1 serves as the row's sum too: sum(u) = S1 + n*x0
                row_sum, statements[found] = statements[found], s1
                shift = _mul(Constant(float(_count(s1.dims)), F64), Var(x0.name, F64))
                total = Call("add", (Var(s1.name, F64), shift), F64)
                statements[end:end] = [s2, Reduce(row_sum.name, row_sum.kind, F32, Call("cast", (total,), F32), ())]
            statements.insert(start, x0)
            position += 3
        position += 1
    return tuple(statements)


def _squared_deviation(statement):
    """(u, c) when `statement` is a float32 sum of (u - c)**2 over rows of a static,
    positive length with `c` fixed along the row; None otherwise."""
    if not (isinstance(statement, Reduce) and sums(statement.kind) and statement.dtype == F32
            and not statement.stores and statement.dims
            and all((dim.extent.constant_value() or 0) > 0 for dim in statement.dims)):
        return None
    value = statement.value
    if not isinstance(value, Call) or value.dtype != F32:
        return None
    if value.op == "mul" and value.args[0] == value.args[1]:
        difference = value.args[0]
    elif value.op == "pow" and value.args[1] == Constant(2.0, F32):
        difference = value.args[0]
    elif value.op == "square":
        difference = value.args[0]
    else:
        return None
    if not isinstance(difference, Call) or difference.op != "sub" or difference.dtype != F32:
        return None
    row = {dim.var for dim in statement.dims}
    u, c = difference.args
    if _reads(c, row) or not _reads(u, row):
        return None
    return u, c


def _reads(value, names: set[str]) -> bool:
    return any(isinstance(node, (Load, IndexValue)) and node.index.names() & names for node in walk_values(value))


def _loads(value, buffers: set[str]) -> bool:
    return any(isinstance(node, Load) and node.buffer in buffers for node in walk_values(value))


def _written(body) -> set[str]:
    """The buffers and scratch rows that statements of `body` write (a kept value,
    NOTE(kept-values), is there only after the reduction that stores it)."""
    found = set()
    for statement in body:
        if isinstance(statement, Loop):
            found |= _written(statement.body)
        elif isinstance(statement, Reduce):
            found |= {store.buffer for store in statement.stores}
        elif hasattr(statement, "buffer"):
            found.add(statement.buffer)
    return found


def _run(statements: list, position: int, u) -> tuple[int, int] | None:
    """(start, end) of the reductions over the same row before `position` that `u` does
    not read, where S1 and S2 join their loop (NOTE(reduction-merging)); results of no
    row (earlier combined sums) may lie between. None when there are none, or when `u`
    reads what the kernel writes (x0 would be read before it is written)."""
    dims = statements[position].dims
    reads = {node.name for node in walk_values(u) if isinstance(node, Var)}
    if _loads(u, _written(statements)):
        return None

    def joins(statement) -> bool:
        return isinstance(statement, Reduce) and statement.name not in reads and statement.dims in (dims, ())

    end = position
    while end > 0 and joins(statements[end - 1]) and statements[end - 1].dims != dims:
        end -= 1
    start = end
    while start > 0 and joins(statements[start - 1]) and statements[start - 1].dims == dims:
        start -= 1
    return (start, end) if start < end else None


def _row_sum(statements: list, start: int, end: int, u) -> int | None:
    """The position of the run's float32 sum of `u` itself (the mean's), when nothing
    after it in the run reads it (its result is formed after the run); None otherwise."""
    for position in range(start, end):
        statement = statements[position]
        if sums(statement.kind) and (statement.dtype, statement.value, statement.stores) == (F32, u, ()) and not any(
                isinstance(node, Var) and node.name == statement.name
                for later in statements[position + 1:end] for node in walk_values(later.value)):
            return position
    return None


def _count(dims) -> int:
    count = 1
    for dim in dims:
        count *= dim.extent.constant_value()
    return count


def _rewritten(reduce: Reduce, u, c) -> tuple:
    """x0 (it goes before the run), S1 and S2 (they go at its end, where the C renderer
    merges them into its loop), and the sum they give (in place of `reduce`)."""
    name, kind = reduce.name, reduce.kind  # a sum: every Reduce here is one
    first = substitute_body((Reduce("", kind, F32, u, ()),), {dim.var: Index.const(0) for dim in reduce.dims})
    x0 = Var(f"{name}_x0", F64)
    shifted = Call("sub", (Call("cast", (u,), F64), x0), F64)
    s1, s2 = Var(f"{name}_s1", F64), Var(f"{name}_s2", F64)
    count = _count(reduce.dims)
    delta = Call("sub", (Call("cast", (c,), F64), x0), F64)
    combined = Call("add", (Call("sub", (s2, _mul(_mul(Constant(2.0, F64), delta), s1)), F64),
                            _mul(_mul(Constant(float(count), F64), delta), delta)), F64)
    row_sums = [Reduce(s1.name, kind, F64, shifted, reduce.dims), Reduce(s2.name, kind, F64, _mul(shifted, shifted),
                                                                         reduce.dims)]
    return (Reduce(x0.name, kind, F64, Call("cast", (first[0].value,), F64), ()), row_sums,
            Reduce(name, kind, F32, Call("cast", (combined,), F32), ()))


def _mul(left, right) -> Call:
    return Call("mul", (left, right), F64)

