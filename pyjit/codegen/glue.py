"""The glue that runs a scheduled graph (pyjit/codegen/scheduling/scheduler.py), as
Python source.

NOTE(glue): the glue of a graph is one generated Python function taking the graph's
inputs. In order, it
  1. checks each input's type and dtype (exact `numpy.ndarray`, the dtype object NumPy
     keeps for the example's dtype) and shape, binding size symbols from the shapes
     (`s0 = x.shape[0]`) and from int inputs that are symbols (a loop body's index:
     `s3 = v_index`), and checking every other occurrence and the graph's size
     guards: anything unexpected (an autograd Tensor, a CuPy array, another dtype or
     size) runs the graph module eagerly instead (`eager(...)`), which gives NumPy's
     result or error, and the tape for tensors that require grad;
  2. checks the layout each input was compiled for (NOTE(layouts)): a mismatch goes to
     `variant(...)`, which runs (compiling it the first time) the variant for the
     layouts at hand;
  3. runs the steps: `numpy.empty` for each buffer a kernel writes, the kernel calls
     (arrays, then sizes), eager calls of the nodes no kernel computes;
  4. returns the graph's outputs in the graph's structure. A 0-d value that eager
     execution holds as a NumPy scalar (`scalar_values`) is passed to eager ops and
     returned as that scalar.
Nothing else runs per call: the checks are attribute reads and tuple compares.

NOTE(buffer-reuse): with `reuse_buffers` (the CPU's reduce-overhead and max-autotune
modes), each buffer a kernel writes comes from the graph's previous call when nothing
else refers to it any more: the glue keeps each buffer it allocated in a pool (one per
buffer of the graph) when it is done with it (an intermediate after its last use, an
output when it is returned), and the next call takes it back only if its reference
count shows no one else holds it: not the caller, not a view of it (a view refers to
its base), not another thread's call (taking is `list.pop`, atomic under the GIL, so
two calls never share one). Otherwise it allocates, as without the option. So, unlike
torch's CUDA graphs, a result the caller keeps is never overwritten by a later call;
the price is that the pool keeps a graph's last buffers alive after the caller drops
them (one set per graph, or per concurrent call).
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from ..graph import SymInt, TensorMeta
from ..graph.node import Node, map_nodes
from ..graph.printer import literal_text
from .cfamily.reductions import refuses_empty
from .scheduling.lowering import canonical, is_one
from .scheduling.scheduler import EagerStep, KernelStep, Schedule, reduction_parameters, returns_new_array


class GlueError(Exception):
    """The graph cannot be run by generated glue (a size symbol no input shape gives)."""


def glue_source(schedule: Schedule, layouts: dict[str, str], name: str = "run", xp=np,
                reuse_buffers: bool = False) -> tuple[str, dict]:
    """(Python source defining `name`, the names it reads besides the kernels `k_<kernel
    name>`, `eager` and `variant`, which the caller adds). `xp` is the array module of
    the inputs and of the buffers the glue allocates (NumPy, or CuPy for CUDA kernels).
    `reuse_buffers`: NOTE(buffer-reuse)."""
    return GlueWriter(schedule, layouts, name, xp, reuse_buffers).write()


def assignments_in_place(schedule: Schedule, layouts: dict[str, str]) -> set[int]:
    """Indices of the index_put steps the glue (without buffer reuse) runs as item
    assignment in place (NOTE(assignment-in-place))."""
    return GlueWriter(schedule, layouts, "run")._assignments_in_place()


def _unshared_count() -> int:
    """sys.getrefcount of a buffer just taken from a pool that no one else holds, as the
    glue's check sees it (NOTE(buffer-reuse))."""
    pool = [np.empty(1)]
    taken = pool.pop()
    return sys.getrefcount(taken)


UNSHARED = _unshared_count()


def layout_of(array) -> str:
    """"C" for a C-contiguous array, "strided" for any other (NOTE(layouts) in
    pyjit/backends/inductor.py)."""
    return "C" if array.flags.c_contiguous else "strided"


class GlueWriter:
    """Writes the glue of one scheduled graph (NOTE(glue)): `write()` gives what
    `glue_source` returns."""

    def __init__(self, schedule: Schedule, layouts: dict[str, str], name: str, xp=np, reuse_buffers: bool = False):
        self.schedule = schedule
        self.reuse = reuse_buffers
        self.graph = schedule.graph
        self.layouts = layouts
        self.name = name
        self.namespace: dict = {"ndarray": xp.ndarray, "empty": xp.empty, "asarray": xp.asarray, "numpy": np}
        self.lines: list[str] = []
        self.bound: set[str] = set()
        self.params = [schedule.names[node] for node in self.graph.placeholders]
        self.scalars = scalar_values(self.graph)
        # eager results a kernel reads, which the glue makes arrays (0-d ones included)
        self.loaded = {name for step in schedule.steps if isinstance(step, KernelStep) for name in step.buffers}
        self.eager_call = f"eager({', '.join(self.params)})"

    def write(self) -> tuple[str, dict]:
        self._check_inputs()
        allocated = self._run_steps()
        if self.reuse:
            kept = self._kept()
            for name in sorted(allocated & kept):
                self._emit(f"pool_{name}.append({name})")
        self._emit(f"return {self._output(self.graph.output_node.args[0])}")
        head = f"def {self.name}({', '.join(self.params + ['*', '_layouts_checked=False'])}):"
        return "\n".join([head] + self.lines) + "\n", self.namespace

    def _emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    def _refuse(self, condition: str, call: str | None = None) -> None:
        self._emit(f"if {condition}:")
        self._emit(f"return {call or self.eager_call}", 2)

    def _global(self, value, hint: str) -> str:
        for key, existing in self.namespace.items():
            if existing is value and key.startswith(hint):
                return key
        key = f"{hint}{len(self.namespace)}"
        self.namespace[key] = value
        return key

    # -- 1. and 2.: inputs ---------------------------------------------------------------
    def _check_inputs(self) -> None:
        later = []
        for node, param in zip(self.graph.placeholders, self.params):
            meta = node.meta
            if not isinstance(meta, TensorMeta):
                self._check_scalar(param, meta)
                continue
            dtype = self._global(np.dtype(meta.dtype), "dtype_")
            # `is` is the fast path; equal dtypes that are not NumPy's cached object (from
            # a pickle) compare equal; a byte-swapped dtype does not.
            self._refuse(f"type({param}) is not ndarray or ({param}.dtype is not {dtype} and {param}.dtype != {dtype})")
            later += self._check_shape(param, meta.shape)
        for check in later:
            self._refuse(check)
        for guard in self.graph.shape_env.guards:
            text = guard_text(guard)
            if not guard_symbols(guard) <= self.bound:
                raise GlueError(f"the size guard {text} names a size no input axis gives")
            self._refuse(f"not ({text})")
        for name in sorted(set().union(*(k.kernel.sizes for k in self.schedule.steps if isinstance(k, KernelStep)))):
            if not name.startswith("st_") and name not in self.bound:
                raise GlueError(f"size {name} is not the size of any input axis")
        self._check_nonempty_reductions()
        for node, param in zip(self.graph.placeholders, self.params):
            if isinstance(node.meta, TensorMeta):
                self._check_layout(node, param)

    def _check_scalar(self, param: str, meta) -> None:
        symbol = lone_symbol(meta)
        if symbol is not None and symbol not in self.bound:
            # A loop body's index, or an enclosing loop's (NOTE(loop-capture)): it binds its symbol.
            self._refuse(f"type({param}) is not int")
            self._emit(f"{symbol} = {param}")
            self.bound.add(symbol)
        elif meta is int:
            self._refuse(f"type({param}) is not int or not -9223372036854775808 <= {param} <= 9223372036854775807")
        elif meta in (float, bool):
            self._refuse(f"type({param}) is not {meta.__name__}")
        array_name = f"{param}_array"
        if array_name in self.schedule.buffers:
            dtype = self._global(self.schedule.buffers[array_name].dtype, "dtype_")
            self._emit(f"{array_name} = asarray({param}, {dtype})")

    def _check_shape(self, param: str, shape: tuple) -> list[str]:
        """Checks now, bindings of new symbols; the checks of sizes that are expressions
        of symbols are returned, to run once every symbol is bound."""
        if not any(isinstance(size, SymInt) for size in shape):
            self._refuse(f"{param}.shape != {shape!r}")
            return []
        self._emit(f"shape_{param} = {param}.shape")
        self._refuse(f"len(shape_{param}) != {len(shape)}")
        later = []
        for axis, original in enumerate(shape):
            # Both the size as the input's meta has it and with the equalities learnt
            # since (NOTE(symbolic-sizes)): kernels use the latter, guards either.
            sizes = [original] if str(canonical(original)) == str(original) else [original, canonical(original)]
            for size in sizes:
                lone = lone_symbol(size) is not None
                if lone and str(size) not in self.bound:
                    self._emit(f"{size} = shape_{param}[{axis}]")
                    self.bound.add(str(size))
                    continue
                text = size.python() if isinstance(size, SymInt) else str(size)
                check = f"shape_{param}[{axis}] != {text}"
                (self._refuse(check) if not isinstance(size, SymInt) or lone else later.append(check))
        return later

    def _check_nonempty_reductions(self) -> None:
        """A reduction NumPy refuses over an empty axis (max, argmax: NOTE(reduction-rule))
        raises: with a symbolic reduced size of 0 the graph runs eagerly (and raises there)."""
        for node in self.graph.calls():
            if not refuses_empty(node):
                continue
            x, axes, _ = reduction_parameters(node)
            for axis in axes:
                size = canonical(x.meta.shape[axis])
                if isinstance(size, SymInt):
                    self._refuse(f"{size.python()} == 0")

    def _check_layout(self, node: Node, param: str) -> None:
        meta = node.meta
        if self.layouts.get(node.name, "C") == "C":
            if any(isinstance(size, SymInt) for size in meta.shape):
                condition = f"not {param}.flags.c_contiguous"
            else:
                strides = np.empty(0, meta.dtype).itemsize * np.array(
                    [int(np.prod(meta.shape[axis + 1:], dtype=np.int64)) for axis in range(meta.ndim)], np.int64)
                condition = f"{param}.strides != {tuple(int(stride) for stride in strides)!r}"
            self._refuse(f"not _layouts_checked and {condition}", f"variant({', '.join(self.params)})")
            return
        itemsize = meta.dtype.itemsize
        axes = [axis for axis, size in enumerate(meta.shape) if not is_one(size)]
        if not axes:
            return
        self._emit(f"strides_{param} = {param}.strides")
        self._refuse(" or ".join(f"strides_{param}[{axis}] % {itemsize}" for axis in axes))
        for axis in axes:
            self._emit(f"st_{node.name}_{axis} = strides_{param}[{axis}] // {itemsize}")

    # -- 3.: steps ------------------------------------------------------------------------
    def _run_steps(self) -> set[str]:
        """The steps; returns the buffers the glue allocates."""
        allocated = set()
        freed = self._last_uses()
        in_place = self._assignments_in_place()
        for index, step in enumerate(self.schedule.steps):
            if isinstance(step, KernelStep):
                for name, param in zip(step.buffers, step.kernel.buffers):
                    if param.output and name not in allocated and name in self.schedule.allocations:
                        allocated.add(name)
                        self._allocate(name, self.schedule.buffers[name].shape, np.dtype(param.dtype))
                arguments = list(step.buffers) + list(step.kernel.sizes)
                self._emit(f"k_{step.kernel.name}({', '.join(arguments)})")
            elif isinstance(step, EagerStep):
                node = step.node
                name = self.schedule.names[node]
                target = self._global(node.target, "op_")
                args = [self._argument(arg) for arg in node.args]
                args += [f"{key}={self._argument(value)}" for key, value in node.kwargs.items()]
                if node in self.schedule.assigned:  # the values are in the target already
                    self._emit(f"{name} = {args[0]}")
                elif index in in_place:
                    target_name, index_text, values = args
                    self._emit(f"{target_name}[{index_text}] = {values}")
                    self._emit(f"{name} = {target_name}")
                elif stacked_by_matrix(node):
                    self.namespace["matmul_rows"] = matmul_rows
                    self._emit(f"{name} = matmul_rows({target}, {', '.join(args)})")
                else:
                    self._emit(f"{name} = {target}({', '.join(args)})")
                if name in self.loaded:  # a kernel reads it, or writes it in place (NOTE(epilogue-in-place))
                    self._emit(f"{name} = asarray({name}, order='C')")
            if freed.get(index):
                for name in (name for name in freed[index] if self.reuse and name in allocated):
                    self._emit(f"pool_{name}.append({name})")
                self._emit(f"del {', '.join(freed[index])}")
        return allocated

    # NOTE(assignment-in-place): item assignment is the functional index_put
    # (NOTE(functionalisation)), whose op copies the whole array before writing the
    # items: a program that fills a new array piece by piece (`result = np.empty(n);
    # result[0] = ...; result[1:] = ...`) copied it once per assignment, where NumPy
    # writes into it. The glue writes in place instead when no one can see the old
    # value: the array is one the glue made (a buffer it allocated for a kernel, or the
    # result of an op that always returns a new array: `returns_new_array`), the
    # assignment is its last use, and no array that may be a view of it (any other eager
    # result that read it, however indirectly) is used later or returned. NumPy's
    # assignment copies `values` first where it overlaps the target, as the op does.
    # Inputs are never written (the caller's arrays change only by the write-back after
    # the graph), but for those the caller donates (NOTE(donated-carries)). With reused buffers (NOTE(buffer-reuse)) a kernel's buffer goes
    # back to its pool after its last use, so only eager results are written there.
    def _assignments_in_place(self) -> set[int]:
        """Indices of the index_put steps the glue runs as `x[index] = values`."""
        donated = {self.schedule.names[node] for node in self.graph.placeholders if node.name in self.graph.donated}
        steps, kept = self.schedule.steps, self._kept() - donated
        last: dict[str, float] = {}
        for index, step in enumerate(steps):
            for name in self._step_names(step):
                last[name] = math.inf if name in kept else index
        owned = donated | (set() if self.reuse else set(self.schedule.allocations))
        views: dict[str, set[str]] = {}  # name -> the arrays it may be a view of
        chosen = set()
        for index, step in enumerate(steps):
            if not isinstance(step, EagerStep):
                continue
            node, name = step.node, self.schedule.names[step.node]
            reads = {self.schedule.names.get(used) for used in node.inputs() if isinstance(used, Node)} - {None}
            if returns_new_array(node):
                owned.add(name)
            else:
                views[name] = reads.union(*(views.get(read, ()) for read in reads))
            if (getattr(node.target, "name", None) != "index_put" or len(node.args) != 3 or node.kwargs
                    or node in self.schedule.assigned):  # a kernel wrote it (NOTE(assignment-by-kernel))
                continue
            target = self.schedule.names.get(node.args[0]) if isinstance(node.args[0], Node) else None
            if target in owned and last.get(target) == index and all(
                    last[alias] <= index for alias, sources in views.items() if target in sources):
                chosen.add(index)
        return chosen

    def _step_names(self, step) -> list[str]:
        """The glue's names a step reads or writes."""
        if isinstance(step, KernelStep):
            return list(step.buffers)
        names = [self.schedule.names[step.node]]
        map_nodes((step.node.args, step.node.kwargs), lambda node: names.append(self.schedule.names.get(node)))
        return [name for name in names if name is not None]

    def _allocate(self, name: str, shape: tuple, dtype: np.dtype) -> None:
        """`name = empty(...)`, or with reuse a pooled buffer (NOTE(buffer-reuse))."""
        allocation = f"empty({self._shape(shape)}, {self._global(dtype, 'dtype_')})"
        if not self.reuse:
            self._emit(f"{name} = {allocation}")
            return
        self.namespace[f"pool_{name}"] = []
        self.namespace["refcount"] = sys.getrefcount
        static = all(isinstance(size, int) for size in map(canonical, shape))
        self._emit(f"{name} = pool_{name}.pop() if pool_{name} else None")
        self._emit(f"if {name} is None or refcount({name}) > {UNSHARED}"
                   + ("" if static else f" or {name}.shape != {self._shape(shape)}") + ":")
        self._emit(f"{name} = {allocation}", 2)

    def _kept(self) -> set[str]:
        """The inputs and outputs: values the glue never drops."""
        kept = set(self.params)
        map_nodes(self.graph.output_node.args[0], lambda node: kept.add(self.schedule.names.get(node)))
        return kept

    def _last_uses(self) -> dict[int, list[str]]:
        """Step index -> the values to drop after it: those it is the last step to read
        or write, which are neither inputs nor outputs. As the printed graphs do
        (NOTE(printed-code)), so the glue holds no more intermediates at once than the
        graph needs (a backward graph's buffers would otherwise all live until it returns)."""
        kept = self._kept()
        last: dict[str, int] = {}
        for index, step in enumerate(self.schedule.steps):
            for name in self._step_names(step):
                if name not in kept:
                    last[name] = index
        freed: dict[int, list[str]] = {}
        for name, index in last.items():
            freed.setdefault(index, []).append(name)
        return freed

    def _shape(self, shape: tuple) -> str:
        items = [_size_text(size) for size in shape]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    def _argument(self, value) -> str:
        if isinstance(value, Node):
            if value not in self.schedule.names:
                return self._global(value.target, "const_")
            name = self.schedule.names[value]
            buffer = self.schedule.buffers.get(name)
            arrays = buffer is not None and (buffer.origin == "kernel" or name in self.loaded)
            if arrays and value in self.scalars:
                return f"{name}[()]"  # the NumPy scalar eager execution would hold
            return name
        if isinstance(value, SymInt):
            return f"({_size_text(value)})"
        if type(value) in (tuple, list):
            inner = ", ".join(self._argument(item) for item in value)
            return f"({inner}{',' if len(value) == 1 else ''})" if type(value) is tuple else f"[{inner}]"
        if type(value) is dict:
            return "{" + ", ".join(f"{key!r}: {self._argument(item)}" for key, item in value.items()) + "}"
        if isinstance(value, slice):
            return f"slice({self._argument(value.start)}, {self._argument(value.stop)}, {self._argument(value.step)})"
        text = literal_text(value)
        return text if text is not None else self._global(value, "const_")

    # -- 4.: outputs ----------------------------------------------------------------------
    def _output(self, value) -> str:
        if type(value) in (tuple, list):
            inner = ", ".join(self._output(item) for item in value)
            return f"({inner}{',' if len(value) == 1 else ''})" if type(value) is tuple else f"[{inner}]"
        return self._argument(value)



# NOTE(flat-matmul): NumPy's matmul of a stack of matrices (batch, rows, k) by one
# matrix (k, n) calls the BLAS once per matrix of the stack, and OpenBLAS packs the
# shared (k, n) operand again at each call: for the transformer block's (16, 128, 512)
# activations by its weights, 16 GEMMs of 128 rows took 1.2-1.4x the time of one GEMM
# of 2048 rows. When the stack is C-contiguous its rows are one (batch * rows, k)
# matrix, so the glue multiplies that (a view) and gives the product back its shape
# (a view of the 2-D result). Each element is still one dot product of a row and a
# column by the same BLAS, within float rounding of the batched product (no BLAS
# promises a blocking independent of the row count: NumPy 2.4's OpenBLAS differs in
# the last bit for a (16, 128, 512) stack by (512, 512)). A stack
# that is not contiguous (a transposed view) goes to matmul as it is.
BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def stacked_by_matrix(node: Node) -> bool:
    """Whether eager `node` is a float matmul of a stack of matrices by one matrix."""
    if getattr(node.target, "name", None) != "matmul" or len(node.args) != 2 or node.kwargs:
        return False
    a, b = node.args
    return (all(isinstance(arg, Node) and isinstance(arg.meta, TensorMeta) for arg in (a, b))
            and a.meta.ndim > 2 and b.meta.ndim == 2 and np.dtype(node.meta.dtype) in BLAS_DTYPES
            and np.dtype(a.meta.dtype) == np.dtype(b.meta.dtype) == np.dtype(node.meta.dtype))


def matmul_rows(matmul, a, b):
    """`matmul(a, b)` of a stack `a` by a matrix `b`, as one 2-D product where `a` is
    C-contiguous (NOTE(flat-matmul))."""
    if not a.flags.c_contiguous:
        return matmul(a, b)
    leading = a.shape[:-1]
    return matmul(a.reshape(math.prod(leading), a.shape[-1]), b).reshape(leading + (b.shape[-1],))


def _size_text(size) -> str:
    """A size as Python text, canonical: a symbol the guards pinned to a number (`s0 == 8`
    learnt from a broadcast) canonicalizes to the plain int."""
    size = canonical(size)
    return size.python() if isinstance(size, SymInt) else str(size)

def scalar_values(graph) -> set[Node]:
    """The 0-d values of `graph` that eager execution holds as NumPy scalars rather than
    0-d arrays: what an op returns depends on what it is given (a ufunc or reduction
    returns a scalar, astype keeps what it got, np.where makes an array), so each 0-d
    call is asked of its op, given stand-ins of the right kinds, in graph order."""
    scalars: set[Node] = set()

    def stand_in(used: Node):
        meta = used.meta
        if not isinstance(meta, TensorMeta):
            return used.target if used.kind == "constant" else meta(1)
        dtype = np.dtype(meta.dtype)
        if used in scalars:
            return dtype.type(1)
        shape = tuple(size.hint if isinstance(size, SymInt) else size for size in meta.shape)
        return np.broadcast_to(np.ones((), dtype), shape)

    for node in graph.calls():
        if not isinstance(node.meta, TensorMeta) or node.meta.shape != ():
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                args = _hinted(map_nodes(node.args, stand_in))
                result = node.target(*args, **_hinted(map_nodes(node.kwargs, stand_in)))
            except Exception:
                continue
        if isinstance(result, np.generic):
            scalars.add(node)
    return scalars


def _hinted(structure):
    """`structure` with each size symbol replaced by its example value."""
    if isinstance(structure, SymInt):
        return structure.hint
    if type(structure) in (tuple, list):
        return type(structure)(_hinted(item) for item in structure)
    if type(structure) is dict:
        return {key: _hinted(value) for key, value in structure.items()}
    return structure


def guard_symbols(guard) -> set[str]:
    lhs = guard.lhs if isinstance(guard.lhs, SymInt) else guard.lhs.expr
    return lhs.symbols() | (guard.rhs.symbols() if isinstance(guard.rhs, SymInt) else set())


def guard_text(guard) -> str:
    lhs = guard.lhs
    if isinstance(lhs, SymInt):
        left = lhs.python()
    else:  # a remainder guard: (expr) % n
        left = f"({lhs.expr.python()}) % {lhs.modulus}"
    right = guard.rhs.python() if isinstance(guard.rhs, SymInt) else str(guard.rhs)
    return f"{left} {guard.relation} {right}"


def lone_symbol(size) -> str | None:
    """The name of a size that is one symbol (`s3`), else None."""
    if isinstance(size, SymInt) and len(size.terms) == 1 and str(size) in size.symbols():
        return str(size)
    return None
