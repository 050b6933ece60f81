"""The C renderer: kernel IR (pyjit/codegen/ir/kernel_ir.py) as C with OpenMP.

NOTE(c-renderer): every kernel is `void NAME(char *const *buffers, const int64_t *sizes)`
(the ABI of pyjit._C's kernel loader); all kernels of a graph share one translation
unit and its prelude. Loops use int64_t indices; the outermost loop nest of a parallel
Loop is `omp parallel for` (collapsed), when its work is large enough to pay for waking
the threads (decided per call for symbolic sizes: NOTE(serial-copy)), and the innermost
loop of every nest is `omp simd`. Values are SSA temporaries computed unconditionally
(a `where` selects between computed values), so no call sits in a branch and every
loop vectorizes.
Math: the functions glibc's vector library (libmvec) implements are declared with
`#pragma omp declare simd notinbranch`, so in a vectorized loop GCC calls their vector
variants (`_ZGVdN8v_expf` on AVX2); the build uses -fno-math-errno, never -ffast-math,
so NaN, infinities and signed zeros keep IEEE semantics. Everything else that must
inline is a `__builtin_*` (the build passes -fno-builtin, which keeps GCC from treating
the declared names as its own builtins). Integer arithmetic that C leaves undefined on
overflow is done in unsigned types (NumPy wraps around); division by zero and the
other integer corner cases follow NumPy (docs/codegen.md lists them).
How each scalar op is written is its entry's C spelling (NOTE(spelling)).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...ops.formula import SCALAR_OPS
from ...ops.spelling import HELPERS
from ..cfamily.dialect import CDialect, index_text
from ..cfamily.literals import float_literal, literal
from ..cfamily.reductions import FIRST_POSITION, ReductionPlan, plan_of, rule_of
from ..cfamily.types import ctype
from ..cfamily.vector_math import VECTOR_MATH
from ..cfamily.writer import KernelWriter
from ..ir.index import Index
from ..ir.kernel_ir import (Call, Kernel, Load, Loop, Reduce, Scratch, Store, Var, hoist_leading_dims,
                            nests_parallel_in_serial, unrolled_accumulation, walk_values)
from ..scheduling.moments import fewer_passes
from .loops import CLoop


# Work (elements times a cost) below which a loop nest stays on one thread: about 30 µs
# of serial work here, more than handing work to a spinning OpenMP thread costs
# (NOTE(omp-wait-policy) in csrc/kernel_loader.cpp; the 16k-element sin/cos/exp chain stays serial).
# NOTE(serial-copy): where the work is symbolic or middling (NOTE(stacked-team)), a
# parallel loop nest (a team region, a top-level reduction) is rendered twice, `if
# (WORK >= PARALLEL_MIN_WORK && the team is apart)` the OpenMP form, `else` a copy with
# only its `omp simd` loops, chosen per call. An OpenMP `if`
# clause would keep one copy but still enter the runtime on every call (a team of one:
# about 0.6 µs, as much as `x + 1` on 16 elements costs NumPy) and run the loop as an
# outlined function. The serial copy is the same loops without the threads: elementwise
# results are the same bits either way; a reduction over every axis may differ in the
# last bits, as it does between thread counts ("Summation order", docs/codegen.md).
PARALLEL_MIN_WORK = 1 << 19
# NOTE(stacked-team) in threads.py: below this much work, a loop goes on threads only
# while the calling thread's team is on CPUs of its own (its serial copy runs otherwise).
APART_CHECKED_BELOW = 1 << 22
# How much more than an add one call of vector math costs, for that estimate.
VECTOR_MATH_COST = 8


def temporary_type(dtype: np.dtype) -> str:
    """NOTE(bool-temporaries): a bool temporary (a comparison, a mask) is an `int32_t`
    holding 0 or 1, not the `uint8_t` bool arrays are stored as. Every spelling yields 0
    or 1 for a bool, and C promotes a `uint8_t` to `int` in any expression anyway, so no
    value changes; but a loop mixing one-byte temporaries with 8-byte loads makes GCC
    pick a vector length of 64 lanes, and a short row (the k-means one-hot `labels ==
    arange(32)` cast to float) then stays scalar: 4.3 ms for the kernel against 1.5.
    The NaN flag a float max/min/argmax/argmin reduction keeps beside its extreme is
    one too (FLAG_TYPE): a one-byte flag made GCC run a softmax row's max pass 64 lanes
    at a time, packing four float comparisons into bytes per step, and that kernel took
    1.62 ms against 1.28 ms with the int32_t flag ((4096, 1024) float32, one thread)."""
    return "int32_t" if dtype.kind == "b" else ctype(dtype)


FLAG_TYPE = temporary_type(np.dtype(bool))


def spell(op: str, args: list[str], dtypes: list[np.dtype], out: np.dtype) -> str:
    """The C text of the scalar op `op` applied to `args`."""
    return SCALAR_OPS[op].spelling("c")(CDialect, args, dtypes, out)


def _declarations() -> str:
    lines = []
    for function in VECTOR_MATH.values():
        arity = 2 if function in ("atan2", "pow") else 1
        for type_name, tail in (("float", "f"), ("double", "")):
            params = ", ".join([type_name] * arity)
            lines.append("#pragma omp declare simd notinbranch")
            lines.append(f"extern {type_name} {function}{tail}({params}) __attribute__((const, nothrow));")
    return "\n".join(lines)


# The helpers the spellings call (NOTE(spelling)), as static inline C functions.
_HELPER_MACROS = "#define PYJIT_FN static inline\n#define PYJIT_B(name) __builtin_##name\n"
# NOTE(stacked-team): weak, so a kernel loaded where the team's library is not says apart.
_TEAM_CHECK = ("extern int pyjit_team_apart(void) __attribute__((weak));\n"
               "static inline int pyjit_team_apart_here(void) { return !pyjit_team_apart || pyjit_team_apart(); }\n")
PRELUDE = ("/* generated by pyjit's C renderer */\n#include <stdint.h>\n\n" + _declarations() + "\n"
           + _HELPER_MACROS + _TEAM_CHECK + HELPERS)


def render_unit(kernels: list[Kernel], variants: bool = False) -> str:
    """One translation unit holding `kernels`; with `variants`, each kernel's VARIANTS too
    (NOTE(cpu-autotune)). A CLoop among them is its text (NOTE(c-loops))."""
    texts = [text for kernel in kernels for text in ([kernel.text] if isinstance(kernel, CLoop)
                                                      else kernel_variants(kernel).values() if variants
                                                      else [render_kernel(kernel)])]
    return PRELUDE + "\n" + "\n\n".join(texts) + "\n"


def render_kernel(kernel: Kernel, threads: int | str | None = None, vector_bits: int | None = None,
                  tile: int | None = None) -> str:
    """`kernel` as a C function. `threads`: 1 (serial), "every" (every parallel loop
    on the threads) or None (the work threshold decides); `vector_bits`: the vector width
    GCC prefers (None: the CPU's widest); `tile`: the side of the tiles of nests that
    read or write across their innermost loop (NOTE(transposed-tiles)), 0 for none,
    None for TILE."""
    return _KernelWriter(kernel, threads, vector_bits, TILE if tile is None else tile).write()


# NOTE(cpu-autotune) in autotune.py: what max-autotune times, by function name suffix:
# (threads, vector width, tile).
VARIANTS = {"": (None, None, None), "_t1": (1, None, None), "_tall": ("every", None, None),
            "_w256": (None, 256, None), "_t1_w256": (1, 256, None), "_tall_w256": ("every", 256, None),
            "_untiled": (None, None, 0), "_tile32": (None, None, 32)}

# NOTE(transposed-tiles): a loop nest whose innermost loop steps across an array (a
# transposed operand: `x.T + y` reads x a column at a time) touches a new cache line
# per element and uses one float of it; the next row of the nest comes back for the
# next float of each line, after thousands of other lines went through the cache. Such
# a nest runs in square tiles of its two innermost loops, TILE a side: a tile reads
# TILE full lines of the transposed operand (TILE float32 is a 64-byte line) and the
# rows of the others, all while they are in L1. `x.T + y` on (4096, 4096) float32 took
# 49.6 ms untiled, 15.0 / 10.5 / 13.5 / 16.1 ms with tiles of 8 / 16 / 32 / 64 (NumPy
# 116 ms; two threads, hand-written kernels). The stores are the same, in another order.
TILE = 16


def kernel_variants(kernel: Kernel) -> dict[str, str]:
    """Function name -> C text of each distinct variant of `kernel` (the default first)."""
    found: dict[str, str] = {}
    for tail, (threads, bits, tile) in VARIANTS.items():
        text = render_kernel(kernel, threads, bits, tile)
        if text not in found.values():
            found[kernel.name + tail] = text
    return {name: text.replace(f"void {kernel.name}(", f"void {name}(", 1) for name, text in found.items()}


class _KernelWriter(KernelWriter):
    def __init__(self, kernel: Kernel, threads: int | str | None = None, vector_bits: int | None = None,
                 tile: int = TILE):
        super().__init__(kernel)
        self.threads, self.vector_bits, self.tile = threads, vector_bits, tile
        self.team: bool | None = None  # see _team_region

    def write(self) -> str:
        kernel = self.kernel
        attribute = (f'__attribute__((target("prefer-vector-width={self.vector_bits}"))) '
                     if self.vector_bits else "")
        head = [f"{attribute}void {kernel.name}(char *const *buffers, const int64_t *sizes) {{"]
        for position, buffer in enumerate(kernel.buffers):
            qualifier = "" if buffer.output else "const "
            head.append(f"    {qualifier}{ctype(buffer.dtype)} *restrict b{position} = "
                        f"({qualifier}{ctype(buffer.dtype)} *)buffers[{position}];")
        for position, name in enumerate(kernel.sizes):
            head.append(f"    const int64_t {name} = sizes[{position}];")
        body = fewer_passes(hoist_leading_dims(kernel.body))  # NOTE(leading-kept-dims), NOTE(one-pass-moments)
        if nests_parallel_in_serial(body):
            self._team_region(body)
        else:
            self._block(body, 1, {}, top=True)
        return "\n".join(head + self.lines + ["}"])

    def _team_region(self, body) -> None:
        """A kernel with parallel loops inside serial ones (columnar reductions: NOTE(
        columnar-reductions)) runs as one parallel region, each parallel loop a
        worksharing loop with the same static partition and no barrier; with too little
        work, every loop runs on this thread (NOTE(serial-copy))."""
        def region(depth: int, team: bool) -> None:
            self.team = team
            if not team:
                self._block(body, depth, {})
                return
            self._emit(depth, "#pragma omp parallel")
            self._emit(depth, "{")
            self._block(body, depth + 1, {})
            self._emit(depth, "}")

        self._on_threads(self._work(body), 1, region)

    # -- statements -------------------------------------------------------------------
    def _block(self, body, depth: int, scope: dict, top: bool = False) -> None:
        for statement in _merged_reductions(body):
            if isinstance(statement, Loop):  # an accumulation runs unrolled: NOTE(unrolled-accumulation)
                for loop in unrolled_accumulation(statement) or (statement,):
                    self._loop(loop, depth, scope)
            elif isinstance(statement, list):
                self._reduce(statement, depth, scope, parallel=top)
            elif isinstance(statement, Scratch):  # private to the thread running this body
                self.params[statement.name] = statement.name
                self._emit(depth, f"{ctype(statement.dtype)} {statement.name}[{statement.size}];")
            else:
                self._emit(depth, f"{self._element(statement)} = {self._value(statement.value, depth, scope)};")

    def _loop(self, loop: Loop, depth: int, scope: dict) -> None:
        innermost = not any(isinstance(statement, (Loop, Reduce)) for statement in loop.body)
        count = len(loop.dims)
        if self.team is not None:  # inside _team_region
            pragmas: dict[int, str] = {}
            if loop.parallel and self.team:
                simd = " simd" if innermost else ""
                pragmas[0] = f"for{simd}{_collapse(count)} schedule(static) nowait"
            elif innermost:
                pragmas[count - 1] = "simd"
            self._loop_nest(loop, depth, scope, pragmas)
            return

        tiled = innermost and count >= 2 and self.tile > 0 and _steps_across(loop)

        def nest(depth: int, threads: bool) -> None:
            if tiled:
                self._tiled_nest(loop, depth, scope, threads)
                return
            pragmas: dict[int, str] = {}
            if threads and innermost:
                pragmas[0] = "parallel for simd" if count == 1 else f"parallel for{_collapse(count - 1)}"
            elif threads:
                pragmas[0] = f"parallel for{_collapse(count)}"
            if innermost and count - 1 not in pragmas:
                pragmas[count - 1] = "simd"
            self._loop_nest(loop, depth, scope, pragmas)

        if loop.parallel:
            self._on_threads(self._work([loop]), depth, nest)
        else:
            nest(depth, False)

    def _loop_nest(self, loop: Loop, depth: int, scope: dict, pragmas: dict[int, str]) -> None:
        self._nest(loop.dims, depth, pragmas)
        self._block(loop.body, depth + len(loop.dims), dict(scope))
        self._close(len(loop.dims), depth)

    def _tiled_nest(self, loop: Loop, depth: int, scope: dict, threads: bool) -> None:
        """The nest with its two innermost loops in tiles (NOTE(transposed-tiles)): the
        outer loops and the tiles' loops on the threads, the innermost loop `omp simd`."""
        outer, inner = loop.dims[:-2], loop.dims[-2:]
        if threads:
            self._emit(depth, f"#pragma omp parallel for{_collapse(len(outer) + 2)}")
        self._nest(outer, depth, {})
        inside = depth + len(outer)
        for position, dim in enumerate(inner):
            self._emit(inside + position, f"for (int64_t {dim.var}_tile = 0; {dim.var}_tile < "
                                          f"{index_text(dim.extent)}; {dim.var}_tile += {self.tile}) {{")
        for position, dim in enumerate(inner):
            start, extent = f"{dim.var}_tile", index_text(dim.extent)
            stop = f"{start} + {self.tile} < {extent} ? {start} + {self.tile} : {extent}"
            if position == 1:
                self._emit(inside + 2 + position, "#pragma omp simd")
            self._emit(inside + 2 + position,
                       f"for (int64_t {dim.var} = {start}; {dim.var} < ({stop}); {dim.var}++) {{")
        self._block(loop.body, inside + 4, dict(scope))
        self._close(len(outer) + 4, depth)

    def _nest(self, dims, depth: int, pragmas: dict[int, str]) -> None:
        for position, dim in enumerate(dims):
            if position in pragmas:
                self._emit(depth + position, f"#pragma omp {pragmas[position]}")
            self._emit(depth + position,
                       f"for (int64_t {dim.var} = 0; {dim.var} < {index_text(dim.extent)}; {dim.var}++) {{")

    def _close(self, count: int, depth: int) -> None:
        for position in reversed(range(count)):
            self._emit(depth + position, "}")

    @staticmethod
    def _work(statements) -> Index:
        """What a list of statements costs: each element an add, a call of vector math
        VECTOR_MATH_COST more, times the iterations of the loops around it."""
        total = Index.const(0)
        for statement in statements:
            if isinstance(statement, Scratch):
                continue
            if isinstance(statement, Loop):
                part = _KernelWriter._work(statement.body)
            else:
                calls = sum(node.op in VECTOR_MATH for node in _calls(statement.value))
                part = Index.const(1 + VECTOR_MATH_COST * calls)
            for dim in getattr(statement, "dims", ()):
                part = part * dim.extent
            total = total + part
        return total

    def _on_threads(self, work: Index, depth: int, render) -> None:
        """`render(depth, threads)` the statements that cost `work` on the threads
        (threads=True) or on this one (False): as the work threshold or the variant
        says, or both, chosen per call when the work is symbolic or middling
        (NOTE(serial-copy), NOTE(stacked-team))."""
        if self.threads is not None:
            render(depth, self.threads != 1)
            return
        known = work.constant_value()
        if known is not None and (known < PARALLEL_MIN_WORK or known >= APART_CHECKED_BELOW):
            render(depth, known >= PARALLEL_MIN_WORK)
            return
        if known is not None:
            condition = "pyjit_team_apart_here()"
        else:
            text = index_text(work)
            condition = (f"({text}) >= {PARALLEL_MIN_WORK} && "
                         f"(({text}) >= {APART_CHECKED_BELOW} || pyjit_team_apart_here())")
        self._emit(depth, f"if ({condition}) {{")
        render(depth + 1, True)
        self._emit(depth, "} else {")
        render(depth + 1, False)
        self._emit(depth, "}")

    def _reduce(self, reduces: list[Reduce], depth: int, scope: dict, parallel: bool) -> None:
        """Reductions over the same dims in one loop (NOTE(reduction-merging)), `omp simd`
        with reduction clauses on the innermost loop, and on threads too where it is a
        kernel's top level; argmax/argmin in two such passes (NOTE(two-pass-positions))."""
        if rule_of(reduces[0].kind).positional:
            (reduce,) = reduces
            extreme, position = _position_plans(reduce)
            self._reduce_pass([reduce], [extreme], depth, scope, parallel)
            self._reduce_pass([dataclasses.replace(reduce, stores=())], [position], depth, scope, parallel)
        else:
            self._reduce_pass(reduces, [_reduction_plan(reduce) for reduce in reduces], depth, scope, parallel)

    def _reduce_pass(self, reduces: list[Reduce], plans: list[dict], depth: int, scope: dict, parallel: bool) -> None:
        for declaration in (line for plan in plans for line in plan["declare"]):
            self._emit(depth, declaration)
        clause = "".join(f" reduction({op}:{name})" for plan in plans for op, name in plan["clauses"])

        def nest(depth: int, threads: bool) -> None:
            self._reduce_nest(reduces, plans, clause, depth, scope, threads)

        if parallel and clause and reduces[0].dims:
            self._on_threads(self._work(reduces), depth, nest)
        else:
            nest(depth, False)
        for plan in plans:
            if plan["result"]:
                self._emit(depth, plan["result"])

    def _reduce_nest(self, reduces: list[Reduce], plans: list[dict], clause: str, depth: int, scope: dict,
                     threads: bool) -> None:
        dims = reduces[0].dims
        count = len(dims)
        pragmas: dict[int, str] = {}
        if clause and count:
            pragmas[0 if threads else count - 1] = (f"parallel for simd{_collapse(count)}{clause}" if threads
                                                    else f"simd{clause}")
        self._nest(dims, depth, pragmas)
        inner = depth + count
        if not count:
            self._emit(depth, "{")
            inner = depth + 1
        inner_scope = dict(scope)
        for reduce, plan in zip(reduces, plans):
            value = self._value(reduce.value, inner, inner_scope)
            for line in plan["combine"]:
                self._emit(inner, line.format(v=value))
            for store in reduce.stores:
                target = f"{self.params[store.buffer]}[{index_text(store.index)}]"
                self._emit(inner, f"{target} = {self._value(store.value, inner, inner_scope)};")
        self._close(max(count, 1), depth)

    # -- values ---------------------------------------------------------------------
    _temporary_type = staticmethod(temporary_type)
    _literal = staticmethod(literal)

    def _definition(self, node, scope: dict) -> str:
        """The text of a load, or of a call of values `scope` names."""
        if isinstance(node, Load):
            return self._element(node)
        args = [self._text(arg, scope) for arg in node.args]
        return spell(node.op, args, [arg.dtype for arg in node.args], node.dtype)


# NOTE(reduction-merging): consecutive reductions over the same dims, none reading
# another's result or what another stores, run as one loop with one reduction clause
# each: a row is read once for all of them (the row sum and the shifted sums of
# NOTE(one-pass-moments), the max and the sum of a row). Each accumulator sees the same
# values in the same order as in a loop of its own.
def _merged_reductions(body):
    """`body` with each run of mergeable Reduces as one list (a lone Reduce as a list of one)."""
    merged: list = []
    for statement in body:
        previous = merged[-1] if merged else None
        if isinstance(statement, Reduce) and isinstance(previous, list) and _merges(previous, statement):
            previous.append(statement)
        else:
            merged.append([statement] if isinstance(statement, Reduce) else statement)
    return merged


def _merges(group: list[Reduce], reduce: Reduce) -> bool:
    if not reduce.dims or reduce.dims != group[0].dims or any(
            rule_of(member.kind).positional or rule_of(member.kind).openmp is None for member in (*group, reduce)):
        return False
    names = {member.name for member in group}
    written = {store.buffer for member in group for store in member.stores}
    read = [node for value in (reduce.value, *(store.value for store in reduce.stores)) for node in walk_values(value)]
    return not any((isinstance(node, Var) and node.name in names) or (isinstance(node, Load) and node.buffer in written)
                   for node in read)


def _steps_across(loop: Loop) -> bool:
    """Whether some array of the nest's stores is read or written a line at a time by
    its second innermost loop and across lines by its innermost (NOTE(transposed-tiles))."""
    across, inner = loop.dims[-2].var, loop.dims[-1].var
    for statement in loop.body:
        if not isinstance(statement, Store):
            return False
        indices = [statement.index] + [value.index for value in walk_values(statement.value) if isinstance(value, Load)]
        for index in indices:
            step, line = index.coefficient(inner), index.coefficient(across)
            if step is not None and line is not None and line.constant_value() == 1 and (
                    step.constant_value() is None or abs(step.constant_value()) > 1):
                return True
    return False


def _collapse(count: int) -> str:
    return f" collapse({count})" if count > 1 else ""


def _calls(value):
    return [node for node in walk_values(value) if isinstance(node, Call)]


def _reduction_plan(reduce: Reduce) -> dict:
    """Declarations, OpenMP reduction clauses, the combining lines (`{v}`: the value) and
    the line defining the result for a Reduce, as its rule says (NOTE(reduction-rule)):
    an accumulator of the rule's dtype (float32 sums in double: docs/codegen.md,
    "Numerics") starting at the identity, combined by the rule's OpenMP operator, or by
    its combine op in a loop without a clause."""
    how = plan_of(reduce)
    if how.relation is not None:
        return _select_plan(how, f"{reduce.name}_acc", reduce.name)
    operator, result_type = how.rule.openmp, ctype(reduce.dtype)
    acc_type, acc = ctype(how.accumulator), f"{reduce.name}_acc"
    if operator is None:
        combined = spell(how.rule.combine, [acc, f"({acc_type}){{v}}"], [how.accumulator] * 2, how.accumulator)
        combine = f"{acc} = {combined};"
    else:
        combine = f"{acc} {operator}= ({acc_type}){{v}};"
    return {"declare": [f"{acc_type} {acc} = {literal(how.identity, how.accumulator)};"],
            "clauses": [(operator, acc)] if operator else [], "combine": [combine],
            "result": f"const {result_type} {reduce.name} = ({result_type}){acc};"}


def _select_plan(how: ReductionPlan, best: str, name: str) -> dict:
    """A max or min (`acc = v > acc ? v : acc` in an OpenMP max or min clause); for floats
    a flag beside it of whether any value is NaN (the comparison keeps NaN out), the
    result NaN where it is set. No result line for a positional reduction's first pass
    (NOTE(two-pass-positions))."""
    source_type, operator = ctype(how.source), how.rule.openmp
    combine = [f"{best} = {{v}} {how.relation} {best} ? {{v}} : {best};"]
    declare = [f"{source_type} {best} = {literal(how.identity, how.source)};"]
    clauses = [(operator, best)]
    result = "" if how.rule.positional else f"const {source_type} {name} = {best};"
    if how.source.kind == "f":
        nan = f"{name}_nan"  # a bool temporary: NOTE(bool-temporaries)
        declare.append(f"{FLAG_TYPE} {nan} = 0;")
        clauses.append(("|", nan))
        combine.append(f"{nan} |= {{v}} != {{v}};")
        if result:
            result = f"const {source_type} {name} = {nan} ? {float_literal(float('nan'), how.source)} : {best};"
    return {"declare": declare, "clauses": clauses, "combine": combine, "result": result}


def _position_plans(reduce: Reduce) -> tuple[dict, dict]:
    """NOTE(two-pass-positions): argmax/argmin as two vectorizable passes over the same
    dims instead of one branchy serial loop: the extreme value (and whether any value is
    NaN), then the smallest C-order position holding it (the first NaN, if any). That is
    NumPy's answer, the first extreme element, exactly: -0.0 and 0.0 compare equal in
    both passes, and a row of only infinities finds its first element. The value is
    computed in each pass; its kept-value stores (NOTE(kept-values)) run in the first."""
    name = reduce.name
    best, any_nan, acc = f"{name}_best", f"{name}_nan", f"{name}_acc"
    how = plan_of(reduce)
    extreme = _select_plan(how, best, name)
    if how.source.kind == "f":
        found = f"(({{v}} != {{v}}) == {any_nan}) & ({any_nan} | ({{v}} == {best}))"  # no branch: it vectorizes
    else:
        found = f"{{v}} == {best}"
    linear = Index.const(0)
    for dim in reduce.dims:
        linear = linear * dim.extent + Index.name(dim.var)
    at, result_type = index_text(linear), ctype(reduce.dtype)
    position = {"declare": [f"int64_t {acc} = INT64_MAX;"], "clauses": [(FIRST_POSITION, acc)],
                "combine": [f"{acc} = ({found}) ? ({at} < {acc} ? {at} : {acc}) : {acc};"],
                "result": f"const {result_type} {name} = ({result_type}){acc};"}
    return extreme, position
