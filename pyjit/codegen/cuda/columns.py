"""Columnar reductions as the CUDA renderer splits them (NOTE(column-split)): which
statements of a columnar kernel (NOTE(columnar-reductions) in scheduler.py) are
accumulations, and which of those are cut into chunks of rows.

NOTE(column-split): a columnar reduction (NOTE(columnar-reductions): `acc[k] =
combine(acc[k], x[r, k])` for each row r in turn) on one thread per column leaves a GPU
idle when there are few columns and many rows. Each accumulation becomes two launches
instead. `column-split` cuts the rows into chunks (pyjit_column_chunks: from the sizes
alone) and gives each (chunk, column) pair a thread, consecutive threads on
consecutive columns (coalesced reads of a row), which folds its chunk's rows in order
into a partial in the workspace, accumulated as a row reduction is (float16 and
float32 sums in double, so no partial overflows where the total does not).
`column-finish` gives each column a warp that folds its chunks' partials in lane order
and then by shuffles to lane 0 (NOTE(warp-rows)), which stores the result. No atomics,
and the order depends on the sizes only, so every run, block size and grid gives the
same bits. With a single chunk (many columns or few rows) the first launch stores the
results itself and the second does nothing. A float product is not split: its running
value over- or underflows depending on the grouping (a chunk's product underflowing to
0 times another's infinity is NaN where NumPy has an infinity), so it keeps NumPy's
order, a thread per column (an `elements` launch of the IR's own statements). The
identity stores in front of an accumulation are its start instead of a launch; the
stores of the kept shape after it (a mean's division) run, column by column, on the
thread that stores the column's result; any other loop over the kept axes is an
`elements` launch. A columnar kernel of any other shape
(the scheduler builds none) is refused with BuildError: its graph runs eagerly. The
chunk count is pyjit_column_chunks in cuda/prelude.py.

NOTE(column-positions): argmax and argmin keep the row form in the IR (a parallel loop
over the kept axes, a Reduce over the reduced ones: NOTE(columnar-reductions)), which
on a GPU is a block or warp per column reading it strided. Where the reduced axes all
come before the last kept one (what makes a reduction columnar; the scheduler names a
loop's dims by their axis, `i<axis>` kept and `r<axis>` reduced, and a collapse keeps
the inner name), such a loop is split as an accumulation is, with the same chunks and
launches: each (chunk, column) thread folds its rows into a (value, position) pair,
the position counted from the first row, and the second pass folds a column's pairs.
pyjit_arg_combine (cuda/prelude.py) orders pairs by value, a NaN first, then by the
smaller position, so the fold gives NumPy's first extreme (or first NaN) in any
grouping. The stores after the Reduce (its result, pointwise ops of the kept shape)
run on the thread that stores the column.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..cfamily.reductions import kind_combining, rule_of
from ..ir.kernel_ir import Call, Constant, Load, Loop, Reduce, Store


@dataclasses.dataclass(frozen=True)
class ColumnAccumulation:
    """`store` (`buffer[k] = combine(buffer[k], value)`) for each step of `rows` and each
    point of `columns`, starting from the constant `start` (None: the buffer's value)."""

    columns: tuple
    rows: tuple
    store: Store
    start: Constant | None = None

    def reduce(self) -> Reduce:
        """The accumulation as the registry's reduction whose combine it is."""
        call = self.store.value
        return Reduce("col", kind_combining(call.op), call.dtype, call.args[1], self.rows)

    def starts_at_identity(self) -> bool:
        """Whether `start` is the reduction's identity, bit for bit (signed zeros differ),
        so that combine(start, total) is the total."""
        dtype = self.store.value.dtype
        identity = rule_of(self.reduce().kind).identity(dtype)
        return self.start is not None and np.asarray(self.start.value, dtype).tobytes() == \
            np.asarray(identity, dtype).tobytes()

    def splits(self) -> bool:
        """Whether the rows are cut into chunks: not for a float product, whose running
        value over- or underflows depending on the grouping (NOTE(column-split))."""
        return not (rule_of(self.reduce().kind).combine == "mul" and np.dtype(self.store.value.dtype).kind == "f")


def column_plan(body: tuple) -> list | None:
    """A columnar kernel's body as kept-axes loops and accumulations (NOTE(column-split)),
    None when it has another shape."""
    plan: list = []
    for statement in body:
        if isinstance(statement, Loop) and statement.parallel:
            plan.append(statement)
            continue
        accumulation = _accumulation(statement)
        if accumulation is None:
            return None
        store = accumulation.store
        init = plan[-1].body[0] if plan and isinstance(plan[-1], Loop) and len(plan[-1].body) == 1 else None
        if (isinstance(init, Store) and plan[-1].dims == accumulation.columns and init.buffer == store.buffer
                and init.index == store.index and isinstance(init.value, Constant)):
            plan[-1] = dataclasses.replace(accumulation, start=init.value)
        else:
            plan.append(accumulation)
    return plan


def _accumulation(statement) -> ColumnAccumulation | None:
    if not (isinstance(statement, Loop) and len(statement.body) == 1):
        return None
    (inner,) = statement.body
    if not (isinstance(inner, Loop) and inner.parallel and len(inner.body) == 1 and isinstance(inner.body[0], Store)):
        return None
    store = inner.body[0]
    call = store.value
    if not (isinstance(call, Call) and kind_combining(call.op) is not None and len(call.args) == 2
            and call.args[0] == Load(store.buffer, store.index, call.dtype)):
        return None
    return ColumnAccumulation(inner.dims, statement.dims, store)



@dataclasses.dataclass(frozen=True)
class ColumnPositions:
    """An argmax or argmin over leading axes in the row form (NOTE(column-positions)):
    `positional` over its dims for each point of `columns`, then the stores `after`."""

    columns: tuple
    positional: Reduce
    after: tuple

    @property
    def rows(self) -> tuple:
        return self.positional.dims

    def reduce(self) -> Reduce:
        return self.positional


_AXIS = re.compile(r"[ir](\d+)$")


def column_positions(loop: Loop) -> ColumnPositions | None:
    """`loop` as a positional reduction over leading axes (NOTE(column-positions)), None
    when it is another row loop."""
    if not (loop.parallel and loop.body and isinstance(loop.body[0], Reduce)):
        return None
    reduce, after = loop.body[0], loop.body[1:]
    if not (rule_of(reduce.kind).positional and not reduce.stores
            and all(isinstance(statement, Store) for statement in after)):
        return None
    kept, reduced = _axes(loop.dims), _axes(reduce.dims)
    if not (kept and reduced) or None in kept + reduced or max(reduced) > max(kept):
        return None
    if any(dim.extent.constant_value() == 0 for dim in loop.dims):  # no columns: nothing to split
        return None
    return ColumnPositions(loop.dims, reduce, tuple(after))


def _axes(dims) -> list:
    return [int(match.group(1)) if (match := _AXIS.match(dim.var)) else None for dim in dims]
