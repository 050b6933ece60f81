"""The CUDA renderer: kernel IR (pyjit/codegen/ir/kernel_ir.py) as CUDA C++ for NVRTC.

NOTE(cuda-renderer): one IR kernel becomes one or more `__global__` functions, run in
order on one stream (its `launches`); all share one parameter list: the kernel's buffers
(typed `__restrict__` pointers), a byte workspace `ws`, and the size parameters as
`int64_t`. A launch (its record and grid: cuda/launch.py) is one of
  * `elements`: a parallel loop nest without inner loops, as a grid-stride loop over its
    flattened iterations (broadcasting and strides are already in the IR's indices); a
    float product over leading axes too, its rows a serial loop (NOTE(column-split));
  * `rows`: a parallel loop whose body reduces or loops over a row: a block per row
    (grid-stride over rows), the row's elements strided over the block's threads, each
    reduction combined per thread, then across the block by warp shuffles and shared
    memory; statements of the row itself are run by thread 0;
  * `warps`: the same for short rows (every loop of the row at most WARP_ROW elements,
    known when rendering): a warp per row, its elements strided over the 32 lanes and
    combined by shuffles alone (NOTE(warp-rows));
  * `column-split` + `column-finish`: each accumulation of a columnar reduction
    (NOTE(columnar-reductions)), and an argmax or argmin over leading axes
    (NOTE(column-positions)), its reduced axis cut into chunks over many threads and
    the partials folded by a second pass (NOTE(column-split));
  * `split` + `finish`: a reduction over the whole iteration space (a top-level Reduce),
    in two passes without atomics, so results are deterministic for a launch
    configuration: each block reduces a grid-stride share into a partial in `ws`, then
    one block combines the partials (in block order) into the result slot that later
    launches read;
  * `single`: top-level stores of scalar results, on one thread.
Indices are `int32_t` when the kernel has no size parameters and every index, extent and
loop counter fits (NOTE(cuda-index-width)), else `int64_t`.
Numbers: float32 and float64 as in C (float32 sums accumulate in double, integers wrap
in uint64), the CUDA math library without fast math (`expf`, `sinf`, ...: NaN and
infinities as IEEE and NumPy have them; ulp errors differ from glibc's); scalar ops are
their entries' CUDA spellings (NOTE(spelling)); float16 as NOTE(cuda-half). Kept values (NOTE(kept-values)) are
computed again instead of kept: a row lives across a block's threads, not in one stack.
"""

from __future__ import annotations

import dataclasses
import re
import struct

import numpy as np

from ...ops.formula import SCALAR_OPS
from ..cfamily.literals import literal
from ..cfamily.reductions import plan_of, rule_of
from ..cfamily.types import ctype, suffix, utype
from ..cfamily.writer import KernelWriter
from ..ir.index import Index, Mod
from ..ir.kernel_ir import (Call, IndexValue, Kernel, Load, Loop, Reduce, Scratch, Store, Var, nests_parallel_in_serial,
                            substitute_body, walk_values)
from ..target import BuildError
from .columns import ColumnAccumulation, ColumnPositions, column_plan, column_positions
from .launch import MAX_GRID, SPLIT_BLOCKS, CudaKernel, CudaUnit, Launch
from .prelude import COLUMN_ITEMS, PRELUDE

HALF = np.dtype(np.float16)
FLOAT = np.dtype(np.float32)

# NOTE(cuda-half): float16 is stored as half (`pyjit_half`, 16 bits) and computed in
# float32, as NumPy's float16 loops do: a load converts to float (exact), every float16
# value an op computes is rounded to half at once (`pyjit_round_half`: round to nearest
# even, so the next op sees what NumPy's next ufunc sees), a cast from float64 rounds
# straight from double (as NumPy does: no double rounding through float), and a store
# converts back (exact, the value being a half already). Reductions accumulate as for
# float32 (sums in double, the rest in float) and round once at the end. The conversions
# are PTX `cvt` instructions rather than cuda_fp16.h, which NVRTC from PyPI does not ship;
# the emulation header defines the same functions with the host compiler's _Float16
# (both in cuda/prelude.py).


def vtype(dtype) -> str:
    """The C type a value of `dtype` is computed in (float16 in float: NOTE(cuda-half)); a
    bool stays `uint8_t`: NOTE(bool-temporaries) steers GCC's vector width, and a GPU
    thread is scalar (docs/codegen.md, "CUDA")."""
    return "float" if np.dtype(dtype) == HALF else ctype(dtype)


def stype(dtype) -> str:
    """The C type an element of a buffer of `dtype` is stored as."""
    return "pyjit_half" if np.dtype(dtype) == HALF else ctype(dtype)


def _computed(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return FLOAT if dtype == HALF else dtype


# A workspace slot holds a value (up to 8 bytes) and a position (8 bytes).
SLOT_BYTES = 16
# NOTE(warp-rows): a row of a few hundred elements leaves most of a block idle, so rows
# whose loops all have at most WARP_ROW iterations (known when rendering) get a warp
# each: the block's warps take consecutive rows, a row's elements are strided over the
# 32 lanes, and reductions fold by shuffles alone (no shared memory, no barrier), to lane
# 0 and broadcast back, so every lane goes on with the same bits. Every warp of a block
# runs the row loop the same number of times: a warp past the last row redoes the last
# row with `active` false (it loads, reduces and stores nothing), so code that reaches
# shuffles from the whole block (and the emulation's block-wide exchange) stays convergent.
WARP_ROW = 256


class CudaDialect:
    """What the shared spellings need to know about CUDA (NOTE(spelling))."""

    ctype = staticmethod(vtype)
    utype = staticmethod(utype)
    suffix = staticmethod(suffix)

    @staticmethod
    def builtin(name: str) -> str:
        return name  # fabsf, sqrtf, ... are device functions that inline

    @staticmethod
    def float_literal(value: float, dtype: np.dtype) -> str:
        dtype = np.dtype(dtype)
        if value == value and value not in (float("inf"), float("-inf")):
            return float(value).hex() + suffix(dtype)
        if dtype == np.float32:
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            return f"__int_as_float({bits:#x})"
        bits = struct.unpack("<q", struct.pack("<d", value))[0]
        return f"__longlong_as_double({bits}LL)"


def spell(op: str, args: list[str], dtypes: list, out: np.dtype) -> str:
    """`op` on `args` as computed: float16 operands and results as float (NOTE(cuda-half))."""
    dtypes, out = [np.dtype(d) for d in dtypes], np.dtype(out)
    if HALF in dtypes and (op in ("maximum", "minimum", "fmax", "fmin") or (op == "cast" and out == np.uint32)):
        return _half_spelling(op, args)
    return SCALAR_OPS[op].spelling("cuda")(CudaDialect, args, [_computed(d) for d in dtypes], _computed(out))


def _half_spelling(op: str, args: list[str]) -> str:
    """Where NumPy's float16 loops are not its float32 ones: maximum and minimum (fmax and
    fmin) keep the first operand on ties (so of +0 and -0) and NaN (the number over a
    NaN), and a cast to uint32 goes through int64 (NaN and infinities give 0) instead of
    float32's offset trick."""
    if op == "cast":
        return f"(uint32_t)(int64_t){args[0]}"
    a, b = args
    relation = ">=" if op in ("maximum", "fmax") else "<="
    kept_nan = f"{b} != {b}" if op in ("fmax", "fmin") else f"{a} != {a}"
    return f"(({a} {relation} {b} || {kept_nan}) ? {a} : {b})"


def cuda_literal(value, dtype: np.dtype) -> str:
    dtype = _computed(dtype)
    return CudaDialect.float_literal(value, dtype) if dtype.kind == "f" else literal(value, dtype)


def render_unit(kernels: list[Kernel]) -> CudaUnit:
    """One CUDA source holding every launch of `kernels`."""
    pieces, rendered = [PRELUDE], {}
    for kernel in kernels:
        writer = _KernelWriter(kernel)
        pieces.append(writer.write())
        rendered[kernel.name] = writer.result
    return CudaUnit("\n".join(pieces) + "\n", rendered)


# -- kept values, undone ------------------------------------------------------------------
def forget_kept_values(body: tuple) -> tuple:
    """`body` with NOTE(kept-values) undone: each read of a scratch row becomes the value
    the reduction stored there."""
    result = []
    for statement in body:
        if isinstance(statement, Loop):
            inner = [s for s in statement.body if not isinstance(s, Scratch)]
            values = {}
            for position, inner_statement in enumerate(inner):
                if isinstance(inner_statement, Reduce) and inner_statement.stores:
                    kept = {store.buffer for store in inner_statement.stores}
                    values.update({Load(store.buffer, store.index, store.value.dtype): store.value
                                   for store in inner_statement.stores})
                    inner[position] = dataclasses.replace(inner_statement, stores=tuple(
                        store for store in inner_statement.stores if store.buffer not in kept))
            body_of = substitute_body(tuple(inner), {}, values) if values else tuple(inner)
            result.append(Loop(statement.dims, forget_kept_values(body_of), statement.parallel))
        else:
            result.append(statement)
    return tuple(result)


# -- index width ------------------------------------------------------------------------
# NOTE(cuda-index-width): 32-bit index arithmetic is cheaper on a GPU (64-bit multiplies
# are several instructions). A kernel uses it only when every bound is known here: no
# size parameter (a symbolic size or a strided layout's strides could be anything at run
# time), and every extent, every index (each term at its largest) and every grid-stride
# counter (an extent plus the largest grid of threads) below 2**31.
INT32_LIMIT = 2**31 - 1 - MAX_GRID * 1024


def _bound(index: Index, extents: dict[str, int]) -> float:
    total = 0.0
    for monomial, coeff in index.terms.items():
        product = float(abs(coeff))
        for atom in monomial:
            if isinstance(atom, str):
                product *= extents.get(atom, float("inf"))
            elif isinstance(atom, Mod):
                product *= _bound(atom.divisor, extents)
            else:
                product *= _bound(atom.numerator, extents)
        total += product
    return total


def _fits_int32(kernel: Kernel) -> bool:
    if kernel.sizes:
        return False
    extents: dict[str, int] = {}
    indices: list[Index] = []

    def visit(statements, outer: int) -> int:
        largest = outer
        for statement in statements:
            dims = getattr(statement, "dims", ())
            count = outer
            for dim in dims:
                extents[dim.var] = max(dim.extent.constant_value() - 1, 0)
                count *= dim.extent.constant_value()
            largest = max(largest, count)
            if isinstance(statement, Loop):
                largest = max(largest, visit(statement.body, count))
                continue
            if isinstance(statement, Scratch):
                continue
            if isinstance(statement, Store):
                indices.append(statement.index)
            for store in getattr(statement, "stores", ()):
                indices.append(store.index)
            indices.extend(v.index for v in walk_values(statement.value) if isinstance(v, (Load, IndexValue)))
        return largest

    largest = visit(kernel.body, 1)
    return largest < INT32_LIMIT and all(_bound(index, extents) < INT32_LIMIT for index in indices)


class _KernelWriter(KernelWriter):
    def __init__(self, kernel: Kernel):
        super().__init__(kernel)
        self.body = forget_kept_values(kernel.body)
        self.index_type = "int32_t" if _fits_int32(kernel) else "int64_t"
        self.dtypes = {buffer.name: np.dtype(buffer.dtype) for buffer in kernel.buffers}
        self.launches: list[Launch] = []
        self.slots: dict[str, tuple[int, np.dtype]] = {}  # top-level reduction -> (workspace offset, dtype)
        self.column_item_bytes = 0  # a column split's partial: a value, or a value and a position
        self.result: CudaKernel | None = None

    # -- structure ------------------------------------------------------------------------
    def write(self) -> str:
        if nests_parallel_in_serial(self.body):
            plan = column_plan(self.body)
            if plan is None:
                raise BuildError(f"kernel {self.kernel.name}: a columnar kernel of a shape the CUDA renderer does "
                                 f"not split (NOTE(column-split))")
            self._column_launches(plan)
        else:
            pending_stores: list = []
            for statement in self.body:
                if isinstance(statement, (Store, Loop)) and not (isinstance(statement, Loop) and statement.parallel):
                    pending_stores.append(statement)
                    continue
                self._flush(pending_stores)
                pending_stores = []
                if isinstance(statement, Reduce):
                    self._split_reduction(statement)
                elif (positions := column_positions(statement)) is not None:
                    self._split_columns(positions, positions.after)
                elif _is_row_loop(statement):
                    mode = "warps" if _is_short_row(statement) else "rows"
                    self._function(mode, _extent(statement.dims), lambda s=statement, m=mode: self._row_launch(s, m))
                else:
                    self._function("elements", _extent(statement.dims), lambda s=statement: self._elements(s))
            self._flush(pending_stores)
        kernel = self.kernel
        workspace = self._column_offset() + COLUMN_ITEMS * self.column_item_bytes
        self.result = CudaKernel(kernel.name, tuple((stype(b.dtype), b.output) for b in kernel.buffers),
                                 kernel.sizes, tuple(self.launches), workspace, self.index_type)
        return "\n".join(self.lines)

    def _flush(self, statements: list) -> None:
        if statements:
            self._function("single", Index.const(1),
                           lambda: self._emit_guarded(statements))

    def _emit_guarded(self, statements) -> None:
        self._emit(1, "if (blockIdx.x == 0 && threadIdx.x == 0) {")
        self._block(tuple(statements), 2, {}, "thread")
        self._emit(1, "}")

    def _function(self, mode: str, extent: Index, body, rows: Index | None = None) -> None:
        name = f"{self.kernel.name}_{len(self.launches)}"
        self.launches.append(Launch(name, mode, extent, rows))
        params = []
        for position, buffer in enumerate(self.kernel.buffers):
            qualifier = "" if buffer.output else "const "
            params.append(f"{qualifier}{stype(buffer.dtype)} *__restrict__ b{position}")
        params.append("uint8_t *__restrict__ ws")
        params += [f"const int64_t {size}" for size in self.kernel.sizes]
        self.lines.append(f'extern "C" __global__ void __launch_bounds__(1024) {name}({", ".join(params)}) {{')
        start = len(self.lines)
        for var, (offset, dtype) in self.slots.items():  # results of earlier split reductions
            self._emit(1, f"const {vtype(dtype)} {var} = *(const {vtype(dtype)} *)(ws + {offset});")
        self.temps = 0
        body()
        self.lines[start:] = _drop_unused_constants(self.lines[start:])
        self.lines.append("}")

    # -- launches -------------------------------------------------------------------------
    def _elements(self, loop: Loop) -> None:
        flat = self._grid_stride("f", _extent(loop.dims), 1, "blockIdx.x * blockDim.x + threadIdx.x",
                                 "gridDim.x * blockDim.x")
        self._unflatten(loop.dims, flat, 2)
        self._block(loop.body, 2, {}, "thread")
        self._emit(1, "}")

    def _row_launch(self, loop: Loop, mode: str) -> None:
        if mode == "rows":
            self._grid_stride("row", _extent(loop.dims), 1, "blockIdx.x", "gridDim.x")
            self._unflatten(loop.dims, "row", 2)
            self._block(loop.body, 2, {}, "block")
            self._emit(1, "}")
            return
        self._warp_loop(loop.dims, "row")
        self._block(loop.body, 2, {}, "warp")
        self._emit(1, "}")

    def _warp_loop(self, dims, name: str) -> None:
        """A warp per point of `dims` (`name`, flat): NOTE(warp-rows), every warp of the
        block runs this loop as often as the others."""
        t, count = self.index_type, self._index(_extent(dims))
        self._grid_stride("first", _extent(dims), 1, "blockIdx.x * (blockDim.x >> 5)",
                          "gridDim.x * (blockDim.x >> 5)")
        self._emit(2, f"const bool active = first + ({t})(threadIdx.x >> 5) < ({t})({count});")
        self._emit(2, f"const {t} {name} = active ? first + ({t})(threadIdx.x >> 5) : ({t})({count}) - 1;")
        self._unflatten(dims, name, 2)

    def _column_launches(self, plan: list) -> None:
        """NOTE(column-split)."""
        position = 0
        while position < len(plan):
            step, position = plan[position], position + 1
            if isinstance(step, Loop):
                self._function("elements", _extent(step.dims), lambda s=step: self._elements(s))
                continue
            after = []  # the stores of the kept shape that follow, run by the thread that stores the column
            while position < len(plan) and isinstance(plan[position], Loop) and plan[position].dims == step.columns:
                after += plan[position].body
                position += 1
            if step.splits():
                self._split_columns(step, after)
            else:  # a thread per column, its rows in order, as the IR has it
                start = () if step.start is None else (Store(step.store.buffer, step.store.index, step.start),)
                loop = Loop(step.columns, (*start, Loop(step.rows, (step.store,)), *after), parallel=True)
                self._function("elements", _extent(step.columns), lambda s=loop: self._elements(s))

    def _split_columns(self, step: ColumnAccumulation | ColumnPositions, after) -> None:
        columns, rows = _extent(step.columns), _extent(step.rows)
        self._function("column-split", columns, lambda: self._column_split(step, after), rows)
        self._function("column-finish", columns, lambda: self._column_finish(step, after), rows)

    def _chunks(self, step: ColumnAccumulation | ColumnPositions) -> tuple[str, str]:
        """Declares `chunks` (pyjit_column_chunks); the columns and rows as text."""
        columns, rows = self._index(_extent(step.columns)), self._index(_extent(step.rows))
        self._emit(1, f"const int64_t chunks = pyjit_column_chunks({columns}, {rows});")
        return columns, rows

    def _column_split(self, step: ColumnAccumulation | ColumnPositions, after) -> None:
        t, reduce = self.index_type, step.reduce()
        acc = vtype(self._acc_dtype(reduce))
        columns, rows = self._chunks(step)
        self._emit(1, f"const {t} span = ({t})(({rows} + chunks - 1) / chunks);")
        self._emit(1, f"for ({t} item = ({t})(blockIdx.x * blockDim.x + threadIdx.x); "
                      f"item < ({t})(chunks * {columns}); item += ({t})(gridDim.x * blockDim.x)) {{")
        self._emit(2, f"const {t} column = item % ({t})({columns});")
        self._emit(2, f"const {t} first = item / ({t})({columns}) * span;")
        self._emit(2, f"const {t} stop = first + span < ({t})({rows}) ? first + span : ({t})({rows});")
        self._unflatten(step.columns, "column", 2)
        value, position, item_bytes = self._column_partial(reduce, 2)
        self.column_item_bytes = max(self.column_item_bytes, item_bytes)
        self._emit(2, f"for ({t} row = first; row < stop; row++) {{")
        self._fold(reduce, "row", 3, {})
        self._emit(2, "}")
        self._emit(2, "if (chunks == 1) {")
        self._store_column(step, reduce, after, 3)
        self._emit(2, "} else {")
        slot = f"ws + {self._column_offset()} + {item_bytes} * (int64_t)item"
        self._emit(3, f"*({acc} *)({slot}) = {value};")
        if item_bytes == SLOT_BYTES:
            self._emit(3, f"*(int64_t *)({slot} + 8) = {position};")
        self._emit(2, "}")
        self._emit(1, "}")

    def _column_finish(self, step: ColumnAccumulation | ColumnPositions, after) -> None:
        reduce = step.reduce()
        acc = vtype(self._acc_dtype(reduce))
        rule = rule_of(reduce.kind)
        columns, _ = self._chunks(step)
        self._emit(1, "if (chunks == 1) return;  /* the first pass stored the results */")
        self._warp_loop(step.columns, "column")
        value, position, item_bytes = self._column_partial(reduce, 2)
        self._emit(2, "for (int64_t part = threadIdx.x & 31u; active && part < chunks; part += 32) {")
        slot = f"(ws + {self._column_offset()} + {item_bytes} * (part * ({columns}) + column))"
        if rule.positional:  # NOTE(column-positions): the pairs in any grouping give the first extreme
            self._emit(3, f"pyjit_arg_combine<{acc}, {_is_max(rule)}>({value}, {position}, *(const {acc} *){slot}, "
                          f"*(const int64_t *)({slot} + 8));")
        else:
            self._emit(3, f"{value} = {self._combine_text(reduce, value, f'*(const {acc} *){slot}')};")
        self._emit(2, "}")
        self._block_combine(reduce, 2, value, position, "warp")
        self._emit(2, "if (active && (threadIdx.x & 31u) == 0) {")
        self._store_column(step, reduce, after, 3)
        self._emit(2, "}")
        self._emit(1, "}")

    def _column_partial(self, reduce: Reduce, depth: int) -> tuple[str, str, int]:
        """Declares a column's running partial, at the identity: (its value, its position,
        the bytes a partial takes in the workspace: a value, or a value and a position)."""
        value, position = f"{reduce.name}_acc", f"{reduce.name}_pos"
        self._emit(depth, f"{vtype(self._acc_dtype(reduce))} {value} = {self._identity(reduce)};")
        if not rule_of(reduce.kind).positional:
            return value, position, 8
        self._emit(depth, f"int64_t {position} = -1;")
        return value, position, SLOT_BYTES

    def _store_column(self, step: ColumnAccumulation | ColumnPositions, reduce: Reduce, after, depth: int) -> None:
        """`buffer[k] = combine(start, the column's total)` (the total after an identity),
        or a position's result, then the statements `after` at this column."""
        if isinstance(step, ColumnPositions):
            final = self._final(reduce, f"{reduce.name}_acc", f"{reduce.name}_pos")
            self._emit(depth, f"const {vtype(reduce.dtype)} {reduce.name} = {final};")
            self._block(tuple(after), depth, {}, "thread")
            return
        call = step.store.value
        self._emit(depth, f"const {vtype(call.dtype)} col = {self._final(reduce, 'col_acc', '')};")
        if step.starts_at_identity():
            self._emit(depth, self._assign(step.store, "col"))
        else:
            start = Call(call.op, (step.start or call.args[0], Var("col", call.dtype)), call.dtype)
            self._emit(depth, self._assign(step.store, self._value(start, depth, {})))
        self._block(tuple(after), depth, {}, "thread")

    def _column_offset(self) -> int:
        """Where a column split's partials start in the workspace: after the slots."""
        return SLOT_BYTES * (SPLIT_BLOCKS + 2) * len(self.slots)

    def _split_reduction(self, reduce: Reduce) -> None:
        offset = SLOT_BYTES * (SPLIT_BLOCKS + 2) * len(self.slots)
        count, result = offset, offset + SLOT_BYTES
        partials = offset + 2 * SLOT_BYTES
        extent = _extent(reduce.dims)

        def first_pass():
            self._emit(1, f"if (blockIdx.x == 0 && threadIdx.x == 0) *(int64_t *)(ws + {count}) = gridDim.x;")
            self._reduction(reduce, 1, {}, "blockIdx.x * blockDim.x + threadIdx.x", "gridDim.x * blockDim.x",
                            lambda value, position: self._write_slot(f"ws + {partials} + {SLOT_BYTES} * blockIdx.x",
                                                                     value, position, reduce))

        def second_pass():
            self._emit(1, f"const int64_t parts = *(const int64_t *)(ws + {count});")
            self._combine_partials(reduce, partials, result)

        self._function("split", extent, first_pass)
        self._function("finish", Index.const(1), second_pass)
        self.slots[reduce.name] = (result, reduce.dtype)

    def _write_slot(self, address: str, value: str, position: str | None, reduce: Reduce) -> None:
        acc = vtype(self._acc_dtype(reduce))
        self._emit(1, "if (threadIdx.x == 0) {")
        self._emit(2, f"*({acc} *)({address}) = {value};")
        if position is not None:
            self._emit(2, f"*(int64_t *)({address} + 8) = {position};")
        self._emit(1, "}")

    def _combine_partials(self, reduce: Reduce, partials: int, result: int) -> None:
        """The finishing pass: one block folds the partials in block order."""
        acc_dtype = self._acc_dtype(reduce)
        acc = vtype(acc_dtype)
        rule = rule_of(reduce.kind)
        self._emit(1, f"{acc} value = {self._identity(reduce)};")
        if rule.positional:
            self._emit(1, "int64_t position = -1;")
        self._emit(1, "for (int64_t p = threadIdx.x; p < parts; p += blockDim.x) {")
        slot = f"(ws + {partials} + {SLOT_BYTES} * p)"
        if rule.positional:
            self._emit(2, f"const int64_t other_position = *(const int64_t *)({slot} + 8);")
            self._emit(2, f"if (other_position >= 0) pyjit_arg_combine<{acc}, {_is_max(rule)}>(value, position, "
                          f"*(const {acc} *){slot}, other_position);")
        else:
            self._emit(2, f"value = {self._combine_text(reduce, 'value', f'*(const {acc} *){slot}')};")
        self._emit(1, "}")
        self._block_combine(reduce, 1)
        final = self._final(reduce, "value", "position")
        self._emit(1, f"if (threadIdx.x == 0) *({vtype(reduce.dtype)} *)(ws + {result}) = {final};")

    # -- statements ---------------------------------------------------------------------
    def _block(self, body, depth: int, scope: dict, role: str) -> None:
        """`role`: "thread" (one thread runs the statements as written), "block" or "warp"
        (the body of a row: its loops and reductions spread over the block's threads or
        the warp's lanes)."""
        for statement in body:
            if isinstance(statement, Loop):
                self._loop(statement, depth, scope, role)
            elif isinstance(statement, Reduce):
                if role in _SPREAD:
                    self._reduction(statement, depth, scope, *_SPREAD[role][:2], None, role)
                else:
                    self._serial_reduction(statement, depth, scope)
            elif isinstance(statement, Scratch):
                raise AssertionError("kept values are undone before rendering")
            elif role in _SPREAD:  # a statement of the row: all threads agree, one writes
                value = self._value(statement.value, depth, scope)
                self._emit(depth, f"if ({_SPREAD[role][2]}) {self._assign(statement, value)}")
            else:
                self._emit(depth, self._assign(statement, self._value(statement.value, depth, scope)))

    def _loop(self, loop: Loop, depth: int, scope: dict, role: str) -> None:
        extent = _extent(loop.dims)
        if role in _SPREAD:
            flat = self._grid_stride(f"e{self.temps}", extent, depth, *_SPREAD[role][:2], role == "warp")
        else:
            flat = f"e{self.temps}"
            self.temps += 1
            self._emit(depth, f"for ({self.index_type} {flat} = 0; {flat} < {self._index(extent)}; {flat}++) {{")
        self._unflatten(loop.dims, flat, depth + 1)
        self._block(loop.body, depth + 1, dict(scope), "thread")
        self._emit(depth, "}")

    def _grid_stride(self, name: str, extent: Index, depth: int, start: str, step: str,
                     if_active: bool = False) -> str:
        """A strided loop; `if_active`: none of it in a warp past the last row (NOTE(warp-rows))."""
        self.temps += 1
        t = self.index_type
        condition = f"{name} < ({t})({self._index(extent)})"
        self._emit(depth, f"for ({t} {name} = ({t})({start}); {'active && ' if if_active else ''}{condition}; "
                          f"{name} += ({t})({step})) {{")
        return name

    def _unflatten(self, dims, flat: str, depth: int) -> None:
        after = Index.const(1)
        for position, dim in enumerate(reversed(dims)):
            part = f"{flat} / ({self._index(after)})" if after != Index.const(1) else flat
            text = part if position == len(dims) - 1 else f"({part}) % ({self._index(dim.extent)})"
            self._emit(depth, f"const {self.index_type} {dim.var} = {text};")
            after = after * dim.extent

    def _serial_reduction(self, reduce: Reduce, depth: int, scope: dict) -> None:
        acc_dtype = self._acc_dtype(reduce)
        rule = rule_of(reduce.kind)
        self._emit(depth, f"{vtype(acc_dtype)} {reduce.name}_acc = {self._identity(reduce)};")
        if rule.positional:
            self._emit(depth, f"int64_t {reduce.name}_pos = -1;")
        flat = f"e{self.temps}"
        self.temps += 1
        self._emit(depth, f"for ({self.index_type} {flat} = 0; {flat} < {self._index(_extent(reduce.dims))}; "
                          f"{flat}++) {{")
        self._fold(reduce, flat, depth + 1, scope)
        self._emit(depth, "}")
        self._emit(depth, f"const {vtype(reduce.dtype)} {reduce.name} = "
                          f"{self._final(reduce, reduce.name + '_acc', reduce.name + '_pos')};")

    def _reduction(self, reduce: Reduce, depth: int, scope: dict, start: str, step: str, write_slot,
                   role: str = "block") -> None:
        """A reduction spread over threads (`start`, `step`), then over the block (or the
        warp: `role`); its result is `reduce.name` in every thread, or
        `write_slot(value, position)`'s."""
        acc = vtype(self._acc_dtype(reduce))
        rule = rule_of(reduce.kind)
        value_name, position_name = (f"{reduce.name}_acc", f"{reduce.name}_pos")
        self._emit(depth, f"{acc} {value_name} = {self._identity(reduce)};")
        if rule.positional:
            self._emit(depth, f"int64_t {position_name} = -1;")
        flat = self._grid_stride(f"e{self.temps}", _extent(reduce.dims), depth, start, step, role == "warp")
        self._fold(reduce, flat, depth + 1, scope)
        self._emit(depth, "}")
        self._block_combine(reduce, depth, value_name, position_name, role)
        if write_slot is not None:
            write_slot(value_name, position_name if rule.positional else None)
        else:
            self._emit(depth, f"const {vtype(reduce.dtype)} {reduce.name} = "
                              f"{self._final(reduce, value_name, position_name)};")

    def _fold(self, reduce: Reduce, flat: str, depth: int, scope: dict) -> None:
        """One step of a reduction at flat position `flat` of its dims."""
        self._unflatten(reduce.dims, flat, depth)
        inner = dict(scope)
        value = self._value(reduce.value, depth, inner)
        rule = rule_of(reduce.kind)
        acc = f"{reduce.name}_acc"
        if rule.positional:
            self._emit(depth, f"pyjit_arg_combine<{vtype(reduce.value.dtype)}, {_is_max(rule)}>"
                              f"({acc}, {reduce.name}_pos, {value}, (int64_t){flat});")
        else:
            self._emit(depth, f"{acc} = {self._combine_text(reduce, acc, value)};")
        for store in reduce.stores:
            self._emit(depth, self._assign(store, self._value(store.value, depth, inner)))

    def _block_combine(self, reduce: Reduce, depth: int, value: str = "value", position: str = "position",
                       role: str = "block") -> None:
        rule = rule_of(reduce.kind)
        acc_dtype = self._acc_dtype(reduce)
        acc = vtype(acc_dtype)
        if rule.positional:
            self._emit(depth, f"pyjit_{role}_arg_reduce<{acc}, {_is_max(rule)}>({value}, {position});")
            return
        combine = f"[](const {acc} a, const {acc} b) -> {acc} {{ return {self._combine_text(reduce, 'a', 'b')}; }}"
        if role == "warp":
            self._emit(depth, f"{value} = pyjit_warp_reduce<{acc}>({value}, {combine});")
        else:
            self._emit(depth, f"{value} = pyjit_block_reduce<{acc}>({value}, ({acc}){self._identity(reduce)}, "
                              f"{combine});")

    def _combine_text(self, reduce: Reduce, acc: str, value: str) -> str:
        acc_dtype = self._acc_dtype(reduce)
        acc_type = vtype(acc_dtype)
        combined = spell(rule_of(reduce.kind).combine, [acc, f"({acc_type}){value}"],
                         [acc_dtype, acc_dtype], acc_dtype)
        return f"({acc_type})({combined})"

    def _identity(self, reduce: Reduce) -> str:
        how = plan_of(reduce)
        return cuda_literal(how.identity, how.accumulator) if how.accumulator == how.source else \
            f"({vtype(how.accumulator)}){cuda_literal(how.identity, how.source)}"

    def _final(self, reduce: Reduce, value: str, position: str) -> str:
        if rule_of(reduce.kind).positional:
            return f"({vtype(reduce.dtype)})({position} < 0 ? 0 : {position})"
        if reduce.dtype == HALF:  # accumulated in double or float (NOTE(cuda-half))
            return f"pyjit_round_half_double({value})"
        return f"({vtype(reduce.dtype)}){value}"

    def _acc_dtype(self, reduce: Reduce) -> np.dtype:
        """What a reduction accumulates in (its rule's: NOTE(reduction-rule))."""
        return plan_of(reduce).accumulator

    # -- values ---------------------------------------------------------------------------
    def _assign(self, store: Store, value: str) -> str:
        target = self._element(store)
        if self.dtypes[store.buffer] == HALF:
            value = f"pyjit_float2half({value})"
        return f"{target} = {value};"

    _temporary_type = staticmethod(vtype)
    _literal = staticmethod(cuda_literal)

    def _definition(self, node, scope: dict) -> str:
        """The text of a load, or of a call of values `scope` names."""
        if isinstance(node, Load):
            text = self._element(node)
            return f"pyjit_half2float({text})" if self.dtypes[node.buffer] == HALF else text
        args = [self._text(arg, scope) for arg in node.args]
        text = spell(node.op, args, [arg.dtype for arg in node.args], node.dtype)
        if node.dtype == HALF:  # NOTE(cuda-half)
            double = node.op == "cast" and node.args[0].dtype == np.float64
            text = f"pyjit_round_half_double({args[0]})" if double else f"pyjit_round_half({text})"
        return text


_DEFINITION = re.compile(r"^\s*const [a-z0-9_]+ (\w+) = ")
_WORD = re.compile(r"\w+")


def _drop_unused_constants(lines: list[str]) -> list[str]:
    """`lines` without the `const` definitions nothing reads (a loop variable no index
    uses, an earlier reduction's result a launch does not need): NVRTC warns about them."""
    while True:
        uses: dict[str, int] = {}
        for line in lines:
            for word in _WORD.findall(line):
                uses[word] = uses.get(word, 0) + 1
        kept = [line for line in lines
                if not ((match := _DEFINITION.match(line)) and uses.get(match.group(1), 0) == 1)]
        if len(kept) == len(lines):
            return lines
        lines = kept


def _extent(dims) -> Index:
    total = Index.const(1)
    for dim in dims:
        total = total * dim.extent
    return total


def _is_max(rule) -> str:
    return "true" if rule.combine == "maximum" else "false"


def _is_row_loop(statement) -> bool:
    return isinstance(statement, Loop) and any(isinstance(s, (Loop, Reduce)) for s in statement.body)


# How the body of a row is spread: (first element, step, the thread that writes the row's own results).
_SPREAD = {"block": ("threadIdx.x", "blockDim.x", "threadIdx.x == 0"),
           "warp": ("(threadIdx.x & 31u)", "32u", "active && (threadIdx.x & 31u) == 0")}


def _is_short_row(loop: Loop) -> bool:
    """NOTE(warp-rows): whether every loop and reduction of the row has at most WARP_ROW
    iterations, known when rendering (a symbolic length may be long)."""
    for statement in loop.body:
        if isinstance(statement, (Loop, Reduce)):
            extent = _extent(statement.dims).constant_value()
            if extent is None or extent > WARP_ROW:
                return False
    return True
