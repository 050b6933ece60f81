"""The loop-level kernel IR that both renderers translate (C: cpu/renderer.py, CUDA: cuda/renderer.py).

NOTE(kernel-ir): a `Kernel` is a function of buffers (typed element pointers) and
integer size parameters, whose body is a list of statements (and `Scratch`, a private
array declared in a loop body: NOTE(kept-values)):
  * `Loop(dims, body, parallel)`: a nest of loops over `dims` (each a variable and an
    extent). A renderer may run the outermost dims of a parallel loop on several threads
    and vectorizes the innermost dim of a loop (or reduction) that has no loop inside;
  * `Reduce(name, kind, dtype, value, dims)`: the scalar `name` is `value` combined over
    the nest `dims` by `kind` (NOTE(reduction-kinds));
  * `Store(buffer, index, value)`: one element written.
Values are typed scalar expressions over `Load(buffer, index)`, `Constant`,
`IndexValue` (an integer expression used as a value), `Var` (a reduction's result) and
`Call(op, args)` for the scalar ops of the formula language (pyjit/ops/formula.py) and
`cast`. Every `Call` is already in its loop dtype: its arguments carry the dtypes NumPy
resolves for the op (casts are explicit `Call("cast")` nodes), so a renderer never
decides a type. Indices are `Index` polynomials (index.py) over loop variables and size
parameters, so a symbolic size is just another parameter and a view is an index.
Nothing here knows about a target: what the text of `add` or a parallel loop is, is
the renderer's business.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from ...ops.formula import SCALAR_OPS
from .index import Index

# -- scalar values -------------------------------------------------------------------
# NOTE(flat-walks): a fused expression is as deep as the chain of ops it inlines (an
# unrolled loop gives thousands), so no walk of one, or of the graph nodes it comes
# from, recurses: each keeps its own stack, a KernelValue's hash is computed when it is built
# (from its arguments' hashes) and Call equality compares pairs off a list. Any chain
# compiles at the default recursion limit, in time linear in its length, with no deep
# Python stack under the frame hook (which once overflowed the C stack on 3.11). Only
# statement nesting, a kernel's few levels of loops, is walked recursively.
class KernelValue:
    """A typed scalar expression. Values are immutable and compare structurally; their
    hash is computed once, when built (NOTE(flat-walks))."""

    dtype: np.dtype

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, field.name) for field in dataclasses.fields(self))))

    def __hash__(self) -> int:
        return self._hash


def kernel_value(cls):
    """A frozen dataclass of KernelValue, keeping the hash computed when built (a
    dataclass's own would hash the fields again, recursively)."""
    cls = dataclasses.dataclass(frozen=True, eq=True)(cls)
    cls.__hash__ = KernelValue.__hash__
    return cls


@kernel_value
class Load(KernelValue):
    buffer: str
    index: Index
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.buffer}[{self.index}]"


@kernel_value
class Constant(KernelValue):
    """A scalar already converted to `dtype` (a Python bool, int or float holding it exactly)."""

    value: object
    dtype: np.dtype

    def __eq__(self, other) -> bool:
        # 0.0 and -0.0 (and NaNs) are different constants: compare by representation.
        return (isinstance(other, Constant) and self.dtype == other.dtype
                and type(self.value) is type(other.value) and repr(self.value) == repr(other.value))

    def __str__(self) -> str:
        return repr(self.value)


@kernel_value
class IndexValue(KernelValue):
    """An integer expression (a size, a position) used as a value of dtype `dtype`."""

    index: Index
    dtype: np.dtype

    def __str__(self) -> str:
        return f"({self.index})"


@kernel_value
class Var(KernelValue):
    """The result of the Reduce statement named `name`."""

    name: str
    dtype: np.dtype

    def __str__(self) -> str:
        return self.name


@kernel_value
class Call(KernelValue):
    """A scalar op of SCALAR_OPS, or `cast` (to `dtype`), applied to typed arguments."""

    op: str
    args: tuple
    dtype: np.dtype

    def __eq__(self, other) -> bool:
        pending = [(self, other)]  # NOTE(flat-walks)
        while pending:
            left, right = pending.pop()
            if left is right:
                continue
            if not isinstance(left, Call):
                if left != right:
                    return False
                continue
            if (not isinstance(right, Call) or left.op != right.op or left.dtype != right.dtype
                    or len(left.args) != len(right.args)):
                return False
            pending.extend(zip(left.args, right.args))
        return True

    def __str__(self) -> str:
        return _text(self, lambda call: f"{dtype_name(call.dtype) if call.op == 'cast' else call.op}(",
                     lambda call: ")", str)

    def __repr__(self) -> str:
        return _text(self, lambda call: f"Call(op={call.op!r}, args=(",
                     lambda call: f"{',' if len(call.args) == 1 else ''}), dtype={call.dtype!r})", repr)


def _text(value: KernelValue, head, tail, leaf) -> str:
    """The text of `value`: `leaf(value)` for a value that is not a Call, and for a Call
    `head(call)`, its arguments' text between commas, `tail(call)` (NOTE(flat-walks))."""
    pieces = []
    pending: list = [value]  # values, and text to write as it is
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, Call):
            parts = [head(item)]
            for position, arg in enumerate(item.args):
                parts += [", ", arg] if position else [arg]
            pending.extend(reversed([*parts, tail(item)]))
        else:
            pieces.append(leaf(item))
    return "".join(pieces)


def dtype_name(dtype: np.dtype) -> str:
    return "bool" if dtype == np.bool_ else dtype.name


def walk_values(value: KernelValue, known=()):
    """Every distinct subexpression of `value`, arguments before the calls that use them,
    leaving out those in `known` with their arguments (a renderer's named values): each
    is looked up there when the walk reaches it, so a caller may add to `known` as it
    goes. NOTE(flat-walks)."""
    seen: set[int] = set()
    pending: list[tuple[KernelValue, bool]] = [(value, False)]
    while pending:
        node, finished = pending.pop()
        if finished:
            yield node
            continue
        if id(node) in seen or node in known:
            continue
        seen.add(id(node))
        pending.append((node, True))
        if isinstance(node, Call):
            pending.extend((arg, False) for arg in reversed(node.args))


def unnamed_values(value: KernelValue, names: dict):
    """The loads and calls of `value` that `names` lacks, arguments first: a renderer's
    temporaries, each named in `names` as it comes."""
    return (node for node in walk_values(value, names) if isinstance(node, (Load, Call)))


# -- statements ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Dim:
    """One loop: variable `var` runs over range(extent)."""

    var: str
    extent: Index

    def __str__(self) -> str:
        return f"{self.var} < {self.extent}"


# NOTE(reduction-kinds): what a Reduce combines is named by `kind`, the name of a
# registry reduction, and computed as its rule says (NOTE(reduction-rule),
# NOTE(registry-reductions) in cfamily/reductions.py), as NumPy's reductions are: sums
# and products of integers wrap around, a maximum or minimum propagates NaN, a
# positional one gives the first extreme element in the C order of the reduction dims
# (a NaN counting as the extreme). The dtype is the result's; the rule says what
# accumulates it (docs/codegen.md says which and why).
@dataclasses.dataclass(frozen=True)
class Reduce:
    """`name` = `value` combined over `dims` by `kind`; `stores` run at every step too
    (NOTE(kept-values))."""

    name: str
    kind: str
    dtype: np.dtype
    value: KernelValue
    dims: tuple[Dim, ...]
    stores: tuple = ()


@dataclasses.dataclass(frozen=True)
class Scratch:
    """A private array of `size` elements for the rest of the enclosing loop body (each
    thread has its own), read and written like a buffer named `name`."""

    name: str
    dtype: np.dtype
    size: int


@dataclasses.dataclass(frozen=True)
class Store:
    buffer: str
    index: Index
    value: KernelValue


@dataclasses.dataclass(frozen=True)
class Loop:
    dims: tuple[Dim, ...]
    body: tuple
    parallel: bool = False


@dataclasses.dataclass(frozen=True)
class BufferParam:
    name: str
    dtype: np.dtype
    output: bool


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A function of `buffers` (in order) and the integer parameters `sizes` (in order)."""

    name: str
    buffers: tuple[BufferParam, ...]
    sizes: tuple[str, ...]
    body: tuple

    def statements(self):
        """Every statement, nested ones included, outer before inner."""
        pending = list(self.body)
        while pending:
            statement = pending.pop(0)
            yield statement
            if isinstance(statement, Loop):
                pending[:0] = statement.body

    def __str__(self) -> str:
        return format_kernel(self)


def format_kernel(kernel: Kernel) -> str:
    """A readable Python-like listing of a kernel (for logs, tests and docs)."""
    params = [f"{'out' if buffer.output else 'in'} {buffer.name}: {dtype_name(buffer.dtype)}"
              for buffer in kernel.buffers]
    lines = [f"kernel {kernel.name}({', '.join(params)}; sizes: {', '.join(kernel.sizes) or '-'})"]
    _format_body(kernel.body, lines, 1)
    return "\n".join(lines)


def _format_body(body, lines: list[str], depth: int) -> None:
    pad = "    " * depth
    for statement in body:
        if isinstance(statement, Loop):
            kind = "parallel for" if statement.parallel else "for"
            lines.append(f"{pad}{kind} {', '.join(map(str, statement.dims))}:")
            _format_body(statement.body, lines, depth + 1)
        elif isinstance(statement, Reduce):
            over = ", ".join(map(str, statement.dims)) or "()"
            lines.append(f"{pad}{statement.name} = {statement.kind}[{dtype_name(statement.dtype)}] "
                         f"over {over}: {statement.value}")
            lines += [f"{pad}    and {store.buffer}[{store.index}] = {store.value}" for store in statement.stores]
        elif isinstance(statement, Scratch):
            lines.append(f"{pad}{statement.name} = scratch[{dtype_name(statement.dtype)}]({statement.size})")
        else:
            lines.append(f"{pad}{statement.buffer}[{statement.index}] = {statement.value}")


def nests_parallel_in_serial(body) -> bool:
    """Whether a kernel body has parallel loops inside a serial one (the columnar
    reductions of NOTE(columnar-reductions)): all its parallel loops share one
    partition of their iterations, which renderers keep across the whole body."""
    def parallel_inside(statements) -> bool:
        return any(isinstance(s, Loop) and (s.parallel or parallel_inside(s.body)) for s in statements)

    return any(isinstance(s, Loop) and not s.parallel and parallel_inside(s.body) for s in body)


# -- passes ---------------------------------------------------------------------------
# NOTE(leading-kept-dims): in a kernel of NOTE(columnar-reductions) every parallel loop
# runs over the same kept dims, and what is computed at one kept point reads only that
# point's values, so any of those dims may run outermost instead. A CPU renderer takes
# as its outermost, parallel loop the leading kept dims that step farther in memory than
# the reduced dims (the batch of a middle-axis sum): each thread then reads its own
# contiguous block of the input once, its slice of the accumulators staying in cache,
# where the team form streams every accumulator again at each step of the reduced axes.
# Each result is combined in the same order, so the results are the same bits. One kept
# dim at least stays inside, so the innermost loops remain free of carried dependences.
def hoist_leading_dims(body: tuple) -> tuple:
    """A columnar kernel's body with NOTE(leading-kept-dims) applied; any other body as it is."""
    if not nests_parallel_in_serial(body):
        return body
    kept = next(loop.dims for loop in _loops(body) if loop.parallel)
    serial = [dim.var for loop in _loops(body) if not loop.parallel for dim in loop.dims]
    indices = list(_indices(body))
    count = 0
    while count < len(kept) - 1 and all(_steps_farther(index, kept[count].var, serial) for index in indices):
        count += 1
    if not count:
        return body
    return (Loop(kept[:count], _without_dims(body, set(kept[:count])), parallel=True),)


# NOTE(unrolled-accumulation): a columnar accumulation loads and stores its accumulator
# once per step of the reduced axes (`acc[k] = acc[k] + x[r, k]`). A CPU renderer
# combines ACCUMULATE_STEPS steps in one pass instead, `acc[k] = ((acc[k] + x[r, k]) +
# x[r+1, k]) + ...`, the rest of the steps as before: the accumulator moves a quarter as
# often and each result is still combined in the same order, so the results are the
# same bits (a (4096, 4096) float32 column sum: 2.6 ms to 1.7 ms on one thread here).
ACCUMULATE_STEPS = 4


def unrolled_accumulation(loop: Loop) -> tuple | None:
    """The loops that run `loop` with NOTE(unrolled-accumulation), or None where it does
    not apply (a parallel loop, one over several dims, or other statements)."""
    return tuple(_unrolled(loop)) if not loop.parallel and len(loop.dims) == 1 and _accumulates(loop) else None


def _accumulates(loop: Loop) -> bool:
    """Whether every statement under `loop` is `acc[i] = combine(acc[i], value)` in a loop
    of its own, indexed without `loop`'s dim, and no value reads what the loop writes."""
    if not all(isinstance(inner, Loop) for inner in loop.body):
        return False
    stores = [statement for inner in loop.body for statement in inner.body]
    if not stores or not all(isinstance(store, Store) and isinstance(store.value, Call) for store in stores):
        return False
    written = {store.buffer for store in stores}
    return all(len(store.value.args) == 2 and store.value.args[0] == Load(store.buffer, store.index, store.value.dtype)
               and loop.dims[0].var not in store.index.names()
               and not any(isinstance(value, Load) and value.buffer in written
                           for value in walk_values(store.value.args[1])) for store in stores)


def _unrolled(loop: Loop) -> list:
    """The steps of `loop`'s one dim in groups of ACCUMULATE_STEPS, then the rest."""
    (dim,) = loop.dims
    groups = Dim(f"{dim.var}g", dim.extent.floordiv(ACCUMULATE_STEPS))
    rest = Dim(f"{dim.var}t", dim.extent.mod(ACCUMULATE_STEPS))
    first = Index.name(groups.var) * ACCUMULATE_STEPS

    def grouped(store: Store) -> Store:
        combined = store.value.args[0]
        for step in range(ACCUMULATE_STEPS):
            (moved,) = substitute_body((store,), {dim.var: first + step})
            combined = Call(store.value.op, (combined, moved.value.args[1]), store.value.dtype)
        return Store(store.buffer, store.index, combined)

    main = tuple(Loop(inner.dims, tuple(map(grouped, inner.body)), inner.parallel) for inner in loop.body)
    tail = substitute_body(loop.body, {dim.var: groups.extent * ACCUMULATE_STEPS + Index.name(rest.var)})
    return [Loop((dim,), body) for dim, body in ((groups, main), (rest, tail)) if dim.extent.constant_value() != 0]


def _loops(body):
    for statement in body:
        if isinstance(statement, Loop):
            yield statement
            yield from _loops(statement.body)


def _steps_farther(index: Index, var: str, others: list[str]) -> bool:
    """Whether `var`'s stride in `index` is at least each of `others`' (an index that
    does not read `var` does not count)."""
    step = index.coefficient(var)
    if step is not None and step.constant_value() == 0:
        return True
    return step is not None and all(_at_least(step, index.coefficient(other)) for other in others)


def _at_least(stride: Index, other: Index | None) -> bool:
    """Whether |stride| >= |other| for every value of the sizes: both one term, `other`'s
    factors among `stride`'s (a C layout's strides with symbolic sizes: s1*s2 and s2).
    Strides that are parameters of their own (a strided layout) compare as unknown."""
    if other is None:
        return False
    if other.constant_value() == 0:
        return True
    if len(stride.terms) != 1 or len(other.terms) != 1:
        return False
    ((factors, coeff),), ((other_factors, other_coeff),) = stride.terms.items(), other.terms.items()
    return abs(other_coeff) <= abs(coeff) and collections.Counter(other_factors) <= collections.Counter(factors)


def _without_dims(body: tuple, hoisted: set[Dim]) -> tuple:
    """`body` with the `hoisted` dims taken out of its parallel loops, which become serial."""
    return tuple(Loop(tuple(dim for dim in s.dims if dim not in hoisted), _without_dims(s.body, hoisted))
                 if isinstance(s, Loop) else s for s in body)


def collapse_loops(dims: tuple[Dim, ...], body: tuple, parallel: bool) -> tuple:
    """`body` inside a Loop over `dims`, with adjacent dims merged wherever every index
    steps through them as one (NOTE(dim-collapse)); the loops and reductions inside are
    collapsed the same way."""
    body = tuple(_collapse_inner(statement) for statement in body)
    dims, body = _merge_adjacent(dims, body)
    return (Loop(dims, body, parallel),) if dims else body


def _collapse_inner(statement):
    if isinstance(statement, Loop):
        dims, body = _merge_adjacent(statement.dims, statement.body)
        return Loop(dims, body, statement.parallel)
    if isinstance(statement, Reduce):
        dims, (store,) = _merge_adjacent(statement.dims, (Store("", Index.const(0), statement.value),))
        return Reduce(statement.name, statement.kind, statement.dtype, store.value, dims)
    return statement


# NOTE(dim-collapse): loops i (extent a) and j (extent b, inside) are one loop k over
# a*b when every index reads i and j only as c_i*i + c_j*j with c_i == c_j*b: then
# c_i*i + c_j*j == c_j*k for k = i*b + j. A C-contiguous array, its broadcasts (both
# strides 0) and a group's outputs satisfy it, so elementwise work over any shape of
# contiguous arrays is one flat loop, which vectorizes and splits evenly over threads.
def _merge_adjacent(dims: tuple[Dim, ...], body: tuple):
    dims = list(dims)
    position = 0
    while position + 1 < len(dims):
        outer, inner = dims[position], dims[position + 1]
        if all(_steps_as_one(index, outer, inner) for index in _indices(body)):
            body = substitute_body(body, {outer.var: Index.const(0)})
            dims[position:position + 2] = [Dim(inner.var, outer.extent * inner.extent)]
        else:
            position += 1
    return tuple(dims), body


def _steps_as_one(index: Index, outer: Dim, inner: Dim) -> bool:
    outer_coeff, inner_coeff = index.coefficient(outer.var), index.coefficient(inner.var)
    return outer_coeff is not None and inner_coeff is not None and outer_coeff == inner_coeff * inner.extent


def _indices(body):
    """Every load and store index in `body`, nested statements included."""
    for statement in body:
        if isinstance(statement, Loop):
            yield from _indices(statement.body)
            continue
        if isinstance(statement, Scratch):
            continue
        if isinstance(statement, Reduce):
            yield from _indices(statement.stores)
        if isinstance(statement, Store):
            yield statement.index
        for value in walk_values(statement.value):
            if isinstance(value, Load):
                yield value.index


def substitute_body(body: tuple, mapping: dict[str, Index], values: dict | None = None) -> tuple:
    """`body` with names replaced by indices in every load and store, and the values in
    `values` replaced by theirs."""
    memo: dict[KernelValue, KernelValue] = dict(values or {})  # each value met, and what it becomes

    def value_of(value: KernelValue) -> KernelValue:
        for node in walk_values(value, memo):  # NOTE(flat-walks)
            if isinstance(node, Load):
                memo[node] = Load(node.buffer, node.index.substitute(mapping), node.dtype)
            elif isinstance(node, Call):
                memo[node] = Call(node.op, tuple(memo[arg] for arg in node.args), node.dtype)
            else:
                memo[node] = node
        return memo[value]

    def statement_of(statement):
        if isinstance(statement, Loop):
            return Loop(statement.dims, tuple(statement_of(s) for s in statement.body), statement.parallel)
        if isinstance(statement, Reduce):
            return dataclasses.replace(statement, value=value_of(statement.value),
                                       stores=tuple(statement_of(store) for store in statement.stores))
        if isinstance(statement, Scratch):
            return statement
        return Store(statement.buffer, statement.index.substitute(mapping), value_of(statement.value))

    return tuple(statement_of(statement) for statement in body)


# NOTE(kept-values): in a row kernel, a value that a reduction computes at each point of
# the row and that a later loop over the same row needs again (softmax's exp(x - max),
# used by the sum and by the division) is written to a private scratch row by the
# reduction (`Reduce.stores`) and read back by the later loop, instead of being computed
# twice, when it calls a costly scalar op (its entry's `costly`: EXPENSIVE_OPS) and the
# row has a static size of at most SCRATCH_LIMIT elements (the scratch lives on each
# thread's stack). The value read back is the one computed: results do not change.
EXPENSIVE_OPS = frozenset(name for name, entry in SCALAR_OPS.items() if entry.costly)
SCRATCH_LIMIT = 16384


def keep_reduced_values(loop: Loop) -> Loop:
    """The row loop `loop` with NOTE(kept-values) applied to the reductions in its body."""
    body = list(loop.body)
    scratches: list[Scratch] = []
    for position, statement in enumerate(body):
        if not isinstance(statement, Reduce) or not statement.dims:
            continue
        size = 1
        for dim in statement.dims:
            size = size * (dim.extent.constant_value() or SCRATCH_LIMIT + 1)
        later = [other for other in body[position + 1:] if getattr(other, "dims", None) == statement.dims]
        if size > SCRATCH_LIMIT or not later:
            continue
        needed = {value for other in later for value in _values_of(other)}
        kept = _largest_shared(statement.value, needed, {dim.var for dim in statement.dims})
        if not kept:
            continue
        flat = Index.const(0)
        for dim in statement.dims:
            flat = flat * dim.extent + Index.name(dim.var)
        loads = {}
        stores = []
        for value in kept:
            name = f"kept{len(scratches)}"
            scratches.append(Scratch(name, value.dtype, size))
            stores.append(Store(name, flat, value))
            loads[value] = Load(name, flat, value.dtype)
        body[position] = dataclasses.replace(statement, stores=statement.stores + tuple(stores))
        body[position + 1:] = substitute_body(tuple(body[position + 1:]), {}, loads)
    return Loop(loop.dims, tuple(scratches) + tuple(body), loop.parallel) if scratches else loop


def _values_of(statement):
    if isinstance(statement, Loop):
        for inner in statement.body:
            yield from _values_of(inner)
    elif not isinstance(statement, Scratch):
        yield from walk_values(statement.value)


def _largest_shared(value: KernelValue, needed: set[KernelValue], row_vars: set[str]) -> list[KernelValue]:
    """The outermost subexpressions of `value` that later statements use too, call an
    expensive op, and vary along the row."""
    found = []
    seen: set[int] = set()
    pending = [value]  # NOTE(flat-walks): outer before inner, arguments in order
    while pending:
        node = pending.pop()
        if not isinstance(node, Call) or id(node) in seen:
            continue
        seen.add(id(node))
        if node in needed and _costly(node) and _reads_row(node, row_vars):
            found.append(node)
        else:
            pending.extend(reversed(node.args))
    return found


def _costly(value: KernelValue) -> bool:
    return any(isinstance(node, Call) and node.op in EXPENSIVE_OPS for node in walk_values(value))


def _reads_row(value: KernelValue, row_vars: set[str]) -> bool:
    return any(isinstance(node, Load) and node.index.names() & row_vars for node in walk_values(value))
