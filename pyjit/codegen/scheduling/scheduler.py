"""The fusion scheduler: a graph becomes a list of steps, kernels in the loop-level IR
(pyjit/codegen/ir/kernel_ir.py) and eager calls of the nodes no kernel computes.

NOTE(fusion): nodes are sorted into
  * pointwise ops with a formula the kernels can type exactly (NOTE(formula-typing)),
    reductions of kernel dtypes, and views (reshape, transpose, broadcast_to, basic
    getitem), which become index arithmetic and are never copied;
  * eager nodes: everything else (matmul and einsum go to BLAS through NumPy; ops with
    no formula, advanced indexing, concatenate, …), run by the glue one by one.
A value is *realized* (written to a buffer) when the glue needs it as an array: a graph
output, an argument of an eager node, a reduction read by a later kernel. Every other
pointwise value is inlined into the expressions that read it, recomputed where two
loops read it (softmax computes its exp twice, in the sum and in the division, and
never stores it).
Realized nodes are taken in graph order into the current *group*, one kernel, while
they fit its iteration space: a group has a full shape and, once it holds a reduction,
the reduced axes; its loops run over the kept axes (in parallel), and per point of
those, each reduction in turn over the reduced axes, then the pointwise results of the
full shape (one inner loop) or of the kept shape. A reduction read back by a later
member of its group is a local variable of the kernel, which the IR only allows at the
same point of the kept axes: a read anywhere else (a transpose of a row sum) closes the
group. So softmax and layer norm over the last axis are one kernel with one parallel
loop over rows and no intermediate buffer. An eager node that reads a value of the open
group closes it (the kernel runs first); one that does not runs before it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...graph.node import Node
from ...ops.formula import Arg, Const
from ...ops import views
from ...ops.shape_rules import normalize_axes
from ..cfamily.reductions import rule_of, selects
from ..cfamily.vector_math import VECTOR_MATH
from ..ir.index import Index
from ..ir.kernel_ir import (BufferParam, Call, Constant, Dim, IndexValue, Kernel, KernelValue, Load,
                            Loop, Reduce, Scratch, Store, Var, collapse_loops, keep_reduced_values, walk_values)
from .dots import dots_as_reductions, is_loop_body
from .lowering import (NotLowerable, Operand, assignment_index, broadcast_index, canonical, check_dtype,
                       contiguous_strides, is_array, is_one, offset, same_shape, typed_formula, view_source_index)

# Ops whose eager result is always a new array (NOTE(epilogue-in-place)).
FRESH_RESULTS = frozenset({"matmul"})
# Ops whose result is always a new array, which item assignment may then write in place
# (NOTE(assignment-in-place) in pyjit/codegen/glue.py, NOTE(assignment-by-kernel)); so is
# the result of a ufunc that is not 0-d (`returns_new_array`).
NEW_ARRAYS = FRESH_RESULTS | {"index_put", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                              "full_like", "copy", "fft", "ifft", "rfft", "irfft"}


def returns_new_array(node: Node) -> bool:
    """Whether eager `node`'s value is always an array no other value refers to: an op of
    NEW_ARRAYS, or a ufunc (the eager pointwise ops on complex numbers, float16) with an
    array result (a 0-d one is a NumPy scalar)."""
    name = getattr(node.target, "name", None)
    if name in NEW_ARRAYS:
        return True
    return (isinstance(getattr(node.target, "numpy_impl", None), np.ufunc) and not node.kwargs
            and is_array(node) and node.meta.shape != ())


class FusionConflict(Exception):
    """A node reads a reduction of the group it would join at another point."""


@dataclasses.dataclass
class Buffer:
    """An array the glue holds: an input, a constant, an eager result or a kernel's output."""

    name: str
    dtype: np.dtype
    shape: tuple
    strides: tuple  # element strides, Index expressions
    origin: str  # "input", "scalar", "constant", "eager" or "kernel"
    node: Node | None = None


@dataclasses.dataclass
class KernelStep:
    kernel: Kernel
    buffers: tuple[str, ...]  # the glue's names for the kernel's buffer parameters, in order


@dataclasses.dataclass
class EagerStep:
    """`node` computed by its op on the glue's values (a view of one, for view nodes)."""

    node: Node


@dataclasses.dataclass
class Schedule:
    graph: object
    buffers: dict[str, Buffer]
    names: dict[Node, str]  # the glue's name for every value it holds
    steps: list
    allocations: tuple[str, ...]  # buffers the glue allocates for kernels to write
    # index_put nodes whose values a kernel wrote into the target (NOTE(assignment-by-kernel))
    assigned: frozenset[Node] = frozenset()

    @property
    def kernels(self) -> list[Kernel]:
        return [step.kernel for step in self.steps if isinstance(step, KernelStep)]


def schedule(graph, layouts: dict[str, str] | None = None, prefix: str = "kernel", device: str = "cpu",
             in_place: bool = True) -> Schedule:
    """Plan `graph`. `layouts` maps placeholder names to "C" (C-contiguous, strides from
    the shape) or "strided" (strides are kernel parameters); C when not given. Kernels
    compute the nodes on `device`; nodes on another run eagerly. `in_place`: kernels may
    write over a matrix product (NOTE(epilogue-in-place)). A loop's body has its vector
    products rewritten as reductions first (NOTE(dots-in-loops))."""
    if is_loop_body(graph):
        dots_as_reductions(graph)
    return _Scheduler(graph, layouts or {}, prefix, device, in_place).run()


def reduction_parameters(node: Node) -> tuple[Node, tuple[int, ...], bool]:
    """(input, reduced axes, keepdims) of a reduction node."""
    x = node.args[0]
    axis = node.args[1] if len(node.args) > 1 else node.kwargs.get("axis")
    keepdims = bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdims", False))
    return x, normalize_axes(axis, x.meta.ndim), keepdims


# NOTE(columnar-reductions): a reduction whose innermost axis is kept (a sum over the
# rows of a matrix: the bias gradient, a batch mean) would read its input with a large
# stride if each result were reduced in turn. Instead its result buffer is the
# accumulator: set to the identity, then for each step of the reduced axes (serially)
# the whole kept slice is combined into it (`acc[k] = add(acc[k], x[r, k])`) by a
# vector loop over the kept axes, which threads split by static scheduling. Every loop
# over the kept axes in the kernel has the same iterations, so each thread keeps the
# same slice from loop to loop: no barrier, and a later member reads this thread's
# finished results. This is also NumPy's own order for such reductions (identity, then
# row after row), so float sums are NumPy's to the bit. Members: reductions of the
# same axes and results of the kept shape; argmax and argmin keep the row form. A CPU
# kernel then runs kept axes in front of the reduced ones outermost
# (NOTE(leading-kept-dims) in kernel_ir.py).
def is_columnar(kind: str, shape: tuple, axes: tuple[int, ...]) -> bool:
    """Whether a reduction takes the columnar form (NOTE(columnar-reductions))."""
    sized = [axis for axis, size in enumerate(shape) if not is_one(size)]
    return (not rule_of(kind).positional and bool(sized) and sized[-1] not in axes
            and any(axis in axes for axis in sized))


def formula_operand(node: Node, operand_of) -> Operand:
    """The typed formula of pointwise `node`, its array (and scalar-input) arguments
    bound by `operand_of(argument node)`."""
    operands: dict[int, Operand] = {}

    def leaf(value, keyword: bool):
        if isinstance(value, Node):
            if not _is_operand(value):
                return value.target if keyword else Const(value.target)
            operands[len(operands)] = operand_of(value)
            return Arg(len(operands) - 1)
        return value if keyword else Const(value)

    args = [leaf(arg, False) for arg in node.args]
    kwargs = {key: leaf(value, True) for key, value in node.kwargs.items()}
    return typed_formula(node.target.formula(*args, **kwargs), operands)


def formula_operands(node: Node) -> list[Node]:
    """The nodes formula_operand binds through `operand_of`, in order."""
    return [value for value in (*node.args, *node.kwargs.values()) if isinstance(value, Node) and _is_operand(value)]


def _is_operand(value: Node) -> bool:
    """Whether a node argument of a formula is an operand (else a literal, passed as it is)."""
    return not (value.kind == "constant" and not is_array(value))


class _Scheduler:
    def __init__(self, graph, layouts: dict[str, str], prefix: str, device: str = "cpu", in_place: bool = True):
        self.device = device
        self.in_place = in_place
        self.graph = graph
        self.layouts = layouts
        self.prefix = prefix
        self.kinds: dict[Node, str] = {}
        self.buffers: dict[str, Buffer] = {}
        self.names: dict[Node, str] = {}
        self.realized: set[Node] = set()
        self.needed: set[Node] = set()  # realized values the glue or a later kernel reads
        self.group_of: dict[Node, _Group] = {}
        self.kept_apart: set[Node] = set()  # values that end their kernel (NOTE(selected-values))
        self.steps: list = []
        self.kernel_buffers = 0  # buffers named so far (an in-place output drops its own)
        self.assignments: dict[Node, Node] = {}  # values -> the index_put a kernel does (NOTE(assignment-by-kernel))
        self.step_of: dict[Node, int] = {}  # a realized or eager node -> the position of its step

    def run(self) -> Schedule:
        for node in self.graph.nodes:
            self.kinds[node] = self._classify(node)
            self._add_buffer(node)
        for node in self.graph.nodes:
            if self.kinds[node] == "reduction":
                self.realized.add(node)
                self._keep_selected_values(node)
            elif self.kinds[node] in ("eager", "output"):
                for used in node.inputs():
                    self._materialize(used)
        self._order_steps()
        return self._finish()

    # NOTE(selected-values): max and min select one of their inputs, and programs compare
    # the result with those inputs (`t == t.max()`). A value of vector math (VECTOR_MATH,
    # NOTE(vector-math-accuracy)) recomputed in two loops can differ in its last bits
    # between them (glibc's vector tanh in a vectorized loop, the scalar one in a loop GCC
    # does not vectorize), and then equals nothing. So such a value that a max or min
    # reads and something else reads too is written to a buffer by a kernel of its own,
    # and every reader loads the same bits. Exactly rounded arithmetic (the scaled scores
    # of attention's softmax) has the same bits in every loop and stays inlined.
    def _keep_selected_values(self, reduction: Node) -> None:
        if not selects(reduction.target.name):
            return
        x, _, _ = reduction_parameters(reduction)
        while self.kinds[x] == "view":
            x = x.args[0]
        if self.kinds[x] == "pointwise" and self._read_elsewhere(x, reduction) and self._uses_vector_math(x):
            self._materialize(x)
            self.kept_apart.add(x)

    def _uses_vector_math(self, value: Node) -> bool:
        """Whether inlining `value` calls a VECTOR_MATH function (views and the pointwise
        values it inlines included)."""
        pending, seen = [value], set()
        while pending:
            node = pending.pop()
            while self.kinds[node] == "view":
                node = node.args[0]
            if node in seen or self.kinds[node] != "pointwise" or (node in self.realized and node is not value):
                continue
            seen.add(node)
            expression = formula_operand(node, self._probe).value
            if any(isinstance(part, Call) and part.op in VECTOR_MATH for part in walk_values(expression)):
                return True
            pending.extend(formula_operands(node))
        return False

    def _read_elsewhere(self, value: Node, reader: Node) -> bool:
        """Whether a node other than `reader` reads `value` (directly or through views)."""
        pending = [user for user in value.users if user is not reader]
        while pending:
            user = pending.pop()
            if self.kinds[user] != "view":
                return True
            pending.extend(later for later in user.users if later is not reader)
        return False

    # -- classification ---------------------------------------------------------------
    def _classify(self, node: Node) -> str:
        if node.kind in ("placeholder", "constant"):
            if is_array(node) and (node.kind == "placeholder" or isinstance(node.target, np.ndarray)):
                return "input" if node.kind == "placeholder" else "constant"
            return "scalar" if node.kind == "placeholder" else "literal"
        if node.kind == "output":
            return "output"
        category = getattr(node.target, "category", None)
        if not is_array(node) or node.meta.device != self.device or any(
                is_array(used) and used.meta.device != self.device for used in node.inputs()):
            return "eager"
        checks = {"pointwise": self._pointwise_ok, "reduction": self._reduction_ok, "view": self._view_ok}
        try:
            return category if category in checks and checks[category](node) else "eager"
        except (NotLowerable, TypeError, ValueError, KeyError, IndexError):
            # NotLowerable, or arguments a formula or an index mapping was not written
            # for (an array where a formula takes a parameter): NumPy computes it.
            return "eager"

    def _pointwise_ok(self, node: Node) -> bool:
        check_dtype(node.meta.dtype)
        return formula_operand(node, self._probe).as_dtype(node.meta.dtype).dtype == node.meta.dtype

    def _probe(self, used: Node) -> Operand:
        """An operand standing for `used` when only a formula's form matters."""
        if self.kinds.get(used) == "scalar":
            return self.scalar_operand(used)
        return Operand.strong(Load("probe", Index.const(0), check_dtype(used.meta.dtype)))

    def _reduction_ok(self, node: Node) -> bool:
        x, _, _ = reduction_parameters(node)
        check_dtype(node.meta.dtype)
        check_dtype(x.meta.dtype)
        return isinstance(x, Node) and is_array(x)

    def _view_ok(self, node: Node) -> bool:
        if getattr(node.target, "index_rule", None) is None or not isinstance(node.args[0], Node):
            return False
        if any(isinstance(item, Node) for item in node.inputs()[1:]):
            return False
        zero = tuple(Index.const(0) for _ in node.meta.shape)
        view_source_index(node, zero)
        return True

    def scalar_operand(self, node: Node) -> Operand:
        python_type = node.meta if node.meta in (bool, int, float) else None
        if python_type is None:
            raise NotLowerable(f"scalar input of type {node.meta}")
        dtype = np.dtype({bool: np.bool_, int: np.int64, float: np.float64}[python_type])
        return Operand.weak(Load(self._array_name(node), Index.const(0), dtype), python_type)

    # -- buffers and realization --------------------------------------------------------
    def _array_name(self, node: Node) -> str:
        return f"v_{node.name}" + ("_array" if self.kinds[node] == "scalar" else "")

    def _add_buffer(self, node: Node) -> None:
        kind = self.kinds[node]
        if kind in ("input", "constant", "eager", "scalar"):
            self.names[node] = f"v_{node.name}"
        if kind == "scalar" and node.meta in (bool, int, float):
            dtype = {bool: np.bool_, int: np.int64, float: np.float64}[node.meta]
            self.buffers[self._array_name(node)] = Buffer(self._array_name(node), np.dtype(dtype), (), (), kind, node)
        elif kind in ("input", "constant", "eager") and is_array(node):
            shape = node.meta.shape
            if kind == "input" and self.layouts.get(node.name, "C") == "strided":
                strides = tuple(Index.const(0) if is_one(size) else Index.name(f"st_{node.name}_{axis}")
                                for axis, size in enumerate(shape))
            else:
                strides = contiguous_strides(shape)
            self.buffers[self.names[node]] = Buffer(self.names[node], node.meta.dtype, shape, strides, kind, node)

    def _materialize(self, node: Node) -> None:
        """The glue needs `node`'s value as an array (or its scalar)."""
        while self.kinds[node] == "view":  # NOTE(flat-walks): a view's source, however many views deep
            node = node.args[0]
        if self.kinds[node] in ("pointwise", "reduction"):
            self.realized.add(node)
            self.needed.add(node)

    def kernel_buffer(self, node: Node) -> str:
        name = self.names.get(node)
        if name is None:
            name = self.names[node] = f"buf{self.kernel_buffers}"
            self.kernel_buffers += 1
            self.buffers[name] = Buffer(name, node.meta.dtype, node.meta.shape, contiguous_strides(node.meta.shape),
                                        "kernel", node)
        return name

    # -- grouping -----------------------------------------------------------------------
    def _order_steps(self) -> None:
        group = None
        for node in self.graph.nodes:
            kind = self.kinds[node]
            if kind == "eager":
                if group is not None and self._reads_group(node, group):
                    group = self._close(group)
                self._emit_views(node)
                self.steps.append(EagerStep(node))
            elif kind == "output":
                group = self._close(group)
                self._emit_views(node)
            elif node in self.realized:
                if group is None or not group.try_add(node):
                    group = self._close(group)
                    group = _Group(self)
                    if not group.try_add(node):
                        raise AssertionError(f"{node.name} does not fit a group of its own")
                self.group_of[node] = group
                if node in self.kept_apart:
                    group = self._close(group)
        self._close(group)

    def _reads_group(self, node: Node, group: _Group) -> bool:
        """Whether eager `node` reads (directly or through views) a value `group` computes;
        if not, it runs before the group's kernel and the group stays open."""
        members = {member for member, _ in group.members}
        pending = list(node.inputs())
        while pending:
            used = pending.pop()
            if used in members:
                return True
            if self.kinds[used] == "view":
                pending.append(used.args[0])
        return False

    def _close(self, group) -> None:
        if group is not None:
            self.steps.append(group)
        return None

    def _emit_views(self, node: Node) -> None:
        """EagerSteps for the views the glue needs before `node` (as NumPy views), each
        after the views it is taken of (NOTE(flat-walks))."""
        pending = [(used, False) for used in reversed(node.inputs())]
        while pending:
            used, sources_done = pending.pop()
            if self.kinds[used] != "view" or used in self.names:
                continue
            if sources_done:
                self.names[used] = f"v_{used.name}"
                self.steps.append(EagerStep(used))
            else:
                pending.append((used, True))
                pending.extend((source, False) for source in reversed(used.inputs()))

    def _finish(self) -> Schedule:
        for position, step in enumerate(self.steps):
            for node in ([member for member, _ in step.members] if isinstance(step, _Group) else [step.node]):
                self.step_of[node] = position
        steps = []
        for step in self.steps:
            if isinstance(step, _Group):
                self._write_in_place(step)
                self._assign_in_place(step)
                step = step.kernel_step(f"{self.prefix}{len(steps)}")
            steps.append(step)
        allocations = tuple(name for name, buffer in self.buffers.items() if buffer.origin == "kernel")
        return Schedule(self.graph, self.buffers, self.names, steps, allocations, frozenset(self.assignments.values()))


    # NOTE(epilogue-in-place): a kernel after a matrix product (its bias, activation,
    # residual: the epilogue) writes its last result into the product's own array
    # instead of a new one, which saves the allocation and the first touch of every page
    # of a fresh buffer (NumPy's large arrays come straight from mmap) and a buffer's
    # worth of peak memory. Safe when
    #   * the product comes from an op whose result is always a new array no one else
    #     refers to (FRESH_RESULTS: matmul; einsum can return a view of an operand);
    #   * nothing but this kernel reads the product: no output, no eager op, no other
    #     kernel, followed through the pointwise and view nodes it is inlined into;
    #   * the result has the product's shape and dtype and is the kernel's last
    #     statement, and every read of the product is at the point being written
    #     (elementwise, or a reduction over a row that is written after it is reduced):
    #     each element is read before it is overwritten, by the thread that writes it;
    #   * on other devices than the CPU, the kernel has no reduction (a GPU reduction
    #     may split a row over blocks that do not wait for each other);
    #   * the kernels are not autotuned: timing runs a kernel several times on the
    #     call's own arrays (NOTE(cpu-autotune), NOTE(cuda-autotune)), and one that
    #     reads what it writes would compute its epilogue again at each run.
    # The kernel then has one parameter for the array, read and written (no two
    # `restrict` pointers to one array).
    def _write_in_place(self, group: _Group) -> None:
        node, role = group.members[-1]
        if (not self.in_place or role != "full" or group.columnar
                or (group.axes is not None and self.device != "cpu")
                or self.buffers[self.names[node]].origin != "kernel" or not node.meta.shape):
            return
        lowering = _Lowering(group)
        statements = [statement for member, member_role in group.members
                      for statement in group._lower(member, member_role, lowering)]
        written = statements[-1].index
        for name, indices in _reads(statements).items():
            source = self.buffers[name].node if name in self.buffers else None
            if (source is not None and indices == {written} and self.kinds[source] == "eager"
                    and getattr(source.target, "name", None) in FRESH_RESULTS and source.meta.dtype == node.meta.dtype
                    and same_shape(source.meta.shape, node.meta.shape) and self._read_only_by(source, group)):
                del self.buffers[self.names[node]]
                self.names[node] = name
                return

    def _read_only_by(self, source: Node, group: _Group) -> bool:
        """Whether every use of `source` is within `group`'s kernel (NOTE(epilogue-in-place))."""
        members = {member for member, _ in group.members}
        pending, seen = list(source.users), set()
        while pending:
            user = pending.pop()
            if user in seen:
                continue
            seen.add(user)
            if user in self.realized:
                if user not in members:
                    return False
            elif self.kinds[user] in ("pointwise", "view"):
                pending.extend(user.users)
            else:
                return False
        return True

    # NOTE(assignment-by-kernel): item assignment `target[key] = values` is index_put,
    # which the glue runs in place where no one sees the old target
    # (NOTE(assignment-in-place) in pyjit/codegen/glue.py). When a kernel computes
    # `values`, that still wrote them to a buffer of their own and then copied the
    # buffer into the target: two passes where one does (a FIR filter's
    # `y[k:] += h[k] * x[:n - k]` per tap: NumPy reads and writes y once per tap). So
    # the kernel stores `values` straight into the target, at the elements `key`
    # selects, and the index_put becomes a new name for the target. Safe when
    #   * the target is an array no one else can see: the result of an op that always
    #     returns a new array (`returns_new_array`) or a carry the loop donated
    #     (NOTE(donated-carries)), read by nothing but this kernel, the assignment and
    #     steps before them (so neither an output nor read by a later step), and no
    #     eager result that may be a view of it is read by this kernel or after it;
    #   * `key` is basic (a slice, an int, None: the elements a getitem view selects),
    #     `values` has the selection's shape and the target's dtype, is read by nothing
    #     but the assignment, and is the kernel's last statement;
    #   * every read of the target in the kernel is at the element being written (`y[k:]`
    #     read to add to it): each is read before it is overwritten, by the thread that
    #     writes it; a shifted read (`y[1:] = y[:-1] + 1`) keeps the copy, as NumPy's
    #     assignment computes every value before it writes one. One element
    #     (`y[t] = a * y[t - 1] + x[t]`) may read any: its kernel computes its one value
    #     before its one store, its last statement;
    #   * as for epilogues: no reduction in the kernel on other devices than the CPU, and
    #     no autotuning (timing runs would apply the assignment again).
    def _assign_in_place(self, group: _Group) -> None:
        node, role = group.members[-1]
        assignment = _assignment_of(node)
        if (assignment is None or not self.in_place or role != "full" or group.columnar
                or (group.axes is not None and self.device != "cpu")
                or self.buffers[self.names[node]].origin != "kernel"):
            return
        target, key = assignment.args[0], assignment.args[1]
        if (not self._fresh(target) or target.meta.dtype != node.meta.dtype
                or not self._read_before(target, group, assignment)):
            return
        own = self.names[node]
        try:
            if not same_shape(views.basic_index_shape(target.meta.shape, key), node.meta.shape):
                return
            self.names[node], self.assignments[node] = self.names[target], assignment
            lowering = _Lowering(group)
            statements = [statement for member, member_role in group.members
                          for statement in group._lower(member, member_role, lowering)]
        except (NotLowerable, NotImplementedError, IndexError, TypeError, ValueError):
            statements = None
        if statements is not None and (node.meta.shape == ()
                                       or _reads(statements).get(self.names[target], set()) <= {statements[-1].index}):
            del self.buffers[own]
            return
        self.names[node] = own
        self.assignments.pop(node, None)

    def _read_before(self, target: Node, group: _Group, assignment: Node) -> bool:
        """Whether every use of `target` but `assignment` is in `group`'s kernel or in a
        step before it, and no value that may be a view of it (an eager result) is read
        by this kernel or after it (NOTE(assignment-by-kernel))."""
        members = {member for member, _ in group.members}
        here = self.step_of[group.members[-1][0]]
        pending, seen = [(user, False) for user in target.users], set()
        while pending:
            user, aliased = pending.pop()
            if (user, aliased) in seen or user is assignment:
                continue
            seen.add((user, aliased))
            if user in members:
                if aliased:
                    return False
            elif self.kinds[user] in ("pointwise", "view") and user not in self.realized:
                pending.extend((later, aliased) for later in user.users)
            elif self.step_of.get(user, here) >= here:  # a later step, or the output
                return False
            elif self.kinds[user] == "eager" and not returns_new_array(user):
                pending.extend((later, True) for later in user.users)
        return True

    def _fresh(self, node: Node) -> bool:
        """Whether `node` is an array only this graph holds (NOTE(assignment-by-kernel))."""
        if node.kind == "placeholder":
            return node.name in self.graph.donated and self.kinds[node] == "input"
        return self.kinds.get(node) == "eager" and returns_new_array(node)


def _assignment_of(values: Node) -> Node | None:
    """The index_put that is the one use of `values`, writing them at a basic index."""
    users = list(values.users)
    if len(users) != 1:
        return None
    user = users[0]
    if (getattr(user.target, "name", None) != "index_put" or len(user.args) != 3 or user.kwargs
            or user.args[2] is not values or user.args[0] is values or not isinstance(user.args[0], Node)):
        return None
    try:
        basic = not any(isinstance(item, Node) for item in views.index_items(user.args[1])) and views.is_basic(
            user.args[1])
    except IndexError:
        basic = False
    return user if basic else None


def _reads(statements) -> dict[str, set]:
    """Buffer name -> the indices `statements` load it at."""
    reads: dict[str, set] = {}
    for statement in statements:
        for value in walk_values(statement.value):
            if isinstance(value, Load):
                reads.setdefault(value.buffer, set()).add(value.index)
    return reads


class _Group:
    """The realized nodes of one kernel, and the iteration space they share (NOTE(fusion))."""

    def __init__(self, scheduler: _Scheduler):
        self.scheduler = scheduler
        self.shape: tuple | None = None
        self.axes: tuple[int, ...] | None = None
        self.columnar = False  # NOTE(columnar-reductions)
        self.members: list[tuple[Node, str]] = []

    # -- membership ---------------------------------------------------------------------
    def try_add(self, node: Node) -> bool:
        fit = self._fit(node)
        if fit is None:
            return False
        previous = self.shape, self.axes, self.columnar
        self.shape, self.axes, role, self.columnar = fit
        try:
            self._lower(node, role, _Lowering(self))
        except FusionConflict:
            self.shape, self.axes, self.columnar = previous
            return False
        self.members.append((node, role))
        return True

    def _fit(self, node: Node):
        """(shape, axes, role, columnar) of the group with `node` in it, or None."""
        if self.scheduler.kinds[node] == "reduction":
            x, axes, _ = reduction_parameters(node)
            columnar = is_columnar(node.target.name, x.meta.shape, axes)
            if self.shape is None or (same_shape(x.meta.shape, self.shape) and columnar == self.columnar
                                      and self.axes in (None, axes)):
                return x.meta.shape, axes, "reduction", columnar
            return None
        shape = node.meta.shape
        if self.shape is None or (same_shape(shape, self.shape) and not self.columnar):
            return (shape if self.shape is None else self.shape), self.axes, "full", False
        kept = [size for axis, size in enumerate(self.shape) if axis not in (self.axes or ()) and not is_one(size)]
        if self.axes is not None and same_shape(tuple(s for s in shape if not is_one(s)), tuple(kept)):
            return self.shape, self.axes, "outer", self.columnar
        return None

    # -- iteration space ----------------------------------------------------------------
    def outer_dims(self) -> list[Dim]:
        return [Dim(f"i{axis}", Index.of(canonical(size))) for axis, size in enumerate(self.shape)
                if axis not in (self.axes or ()) and not is_one(size)]

    def inner_dims(self) -> list[Dim]:
        return [Dim(f"r{axis}", Index.of(canonical(self.shape[axis]))) for axis in (self.axes or ())
                if not is_one(self.shape[axis])]

    def full_index(self) -> tuple:
        reduced = self.axes or ()
        return tuple(Index.const(0) if is_one(size) else Index.name(f"{'r' if axis in reduced else 'i'}{axis}")
                     for axis, size in enumerate(self.shape))

    def outer_index(self, shape: tuple) -> tuple:
        """The index of a value of the kept shape (sizes of 1 anywhere) at the current point."""
        variables = iter(Index.name(dim.var) for dim in self.outer_dims())
        return tuple(Index.const(0) if is_one(size) else next(variables) for size in shape)

    def reduction_index(self, node: Node) -> tuple:
        """Where in a reduction's result the current point of the kept axes is."""
        _, axes, keepdims = reduction_parameters(node)
        full = self.full_index()
        return tuple(Index.const(0) if axis in axes else full[axis]
                     for axis in range(len(full)) if keepdims or axis not in axes)

    # -- lowering -----------------------------------------------------------------------
    def _lower(self, node: Node, role: str, lowering: _Lowering) -> list:
        scheduler = self.scheduler
        if role == "reduction":
            x, _, _ = reduction_parameters(node)
            kind = node.target.name
            value = lowering.value(x, self.full_index())
            if not rule_of(kind).positional:  # values of the result's dtype (a position's are the input's)
                value = Operand.strong(value).as_dtype(node.meta.dtype)
            if self.columnar:
                return self._accumulate(node, kind, value)
            statements = [Reduce(self.var(node), kind, node.meta.dtype, value, tuple(self.inner_dims()))]
            if node in scheduler.needed:
                statements.append(self._store(node, self.reduction_index(node), Var(self.var(node), node.meta.dtype)))
            return statements
        index = self.full_index() if role == "full" else self.outer_index(node.meta.shape)
        value = lowering.inline(node, index)
        if self.columnar:
            return [Loop(tuple(self.outer_dims()), (self._store(node, index, value),), parallel=True)]
        return [self._store(node, index, value)]

    def _accumulate(self, node: Node, kind: str, value: KernelValue) -> list:
        """A columnar reduction: its result buffer set to the identity, then each step of
        the reduced axes combined into it (NOTE(columnar-reductions))."""
        self.scheduler.needed.add(node)
        dtype = node.meta.dtype
        index = self.reduction_index(node)
        rule = rule_of(kind)
        init = self._store(node, index, Constant(rule.identity(dtype), dtype))
        current = Load(init.buffer, init.index, dtype)
        combined = Store(init.buffer, init.index, Call(rule.combine, (current, value), dtype))
        kept = tuple(self.outer_dims())
        return [Loop(kept, (init,), parallel=True),
                Loop(tuple(self.inner_dims()), (Loop(kept, (combined,), parallel=True),))]

    def var(self, node: Node) -> str:
        return f"acc_{node.name}"

    def _store(self, node: Node, index: tuple, value: KernelValue) -> Store:
        assignment = self.scheduler.assignments.get(node)
        if assignment is not None:  # NOTE(assignment-by-kernel): at the elements the index selects
            index = assignment_index(assignment.args[0].meta.shape, assignment.args[1], index)
        name = self.scheduler.kernel_buffer(node)
        return Store(name, offset(self.scheduler.buffers[name].strides, index), value)

    def kernel_step(self, name: str) -> KernelStep:
        lowering = _Lowering(self)
        if self.columnar:  # every loop over the kept axes keeps them as they are: one partition
            body = tuple(statement for node, role in self.members for statement in self._lower(node, role, lowering))
            return make_kernel_step(name, body, self.scheduler.buffers)
        outer, inner, pending = [], self.inner_dims(), []
        for node, role in self.members:
            statements = self._lower(node, role, lowering)
            if role == "full" and inner:
                pending += statements
                continue
            if pending:
                outer.append(Loop(tuple(inner), tuple(pending)))
                pending = []
            outer += statements
        if pending:
            outer.append(Loop(tuple(inner), tuple(pending)))
        body = collapse_loops(tuple(self.outer_dims()), tuple(outer), parallel=True)
        body = tuple(keep_reduced_values(statement) if isinstance(statement, Loop) else statement
                     for statement in body)
        return make_kernel_step(name, body, self.scheduler.buffers)


class _Lowering:
    """Values of graph nodes at an index, for the kernel of one group: buffer loads,
    local reduction results, inlined formulas, views as index arithmetic."""

    def __init__(self, group: _Group):
        self.group = group
        self.scheduler = group.scheduler
        self.memo: dict[tuple, KernelValue] = {}

    def value(self, node: Node, index: tuple) -> KernelValue:
        """`node`'s value at `index`. NOTE(flat-walks): the values it reads are made
        first, those they read before them, off a list, so making each finds its
        operands in the memo."""
        pending = [(node, index)]
        while pending:
            key = pending[-1]
            if key in self.memo:
                pending.pop()
                continue
            missing = [operand for operand in self._operands(*key) if operand not in self.memo]
            if missing:
                pending += missing
                continue
            pending.pop()
            self.memo[key] = self._value(*key)
        return self.memo[(node, index)]

    def _operands(self, node: Node, index: tuple) -> list[tuple]:
        """The (node, index) values that `_value(node, index)` reads through `value`."""
        kind = self.scheduler.kinds[node]
        owner = self.scheduler.group_of.get(node)
        if owner is not None and (owner is not self.group or kind == "reduction"):
            return []
        if kind == "view":
            return [view_source_index(node, index)]
        if kind in ("pointwise", "reduction"):
            return [(used, broadcast_index(index, used.meta.shape)) for used in formula_operands(node)
                    if self.scheduler.kinds[used] != "scalar"]
        return []

    def _value(self, node: Node, index: tuple) -> KernelValue:
        scheduler = self.scheduler
        kind = scheduler.kinds[node]
        owner = scheduler.group_of.get(node)
        if kind == "reduction" and owner is self.group:
            if index != self.group.reduction_index(node):
                raise FusionConflict(node.name)
            if self.group.columnar:  # its value is in its buffer, for this thread's kept points
                return self._load(scheduler.kernel_buffer(node), index)
            return Var(self.group.var(node), node.meta.dtype)
        if owner is not None and owner is not self.group:
            scheduler.needed.add(node)
            return self._load(scheduler.kernel_buffer(node), index)
        if kind == "view":
            source, source_index = view_source_index(node, index)
            return self.value(source, source_index)
        if kind in ("pointwise", "reduction"):
            return self.inline(node, index)
        if kind == "scalar":
            return scheduler.scalar_operand(node).value
        return self._load(scheduler.names[node], index)

    def inline(self, node: Node, index: tuple) -> KernelValue:
        def operand(used: Node) -> Operand:
            if self.scheduler.kinds[used] == "scalar":
                return self.scheduler.scalar_operand(used)
            return Operand.strong(self.value(used, broadcast_index(index, used.meta.shape)))

        return formula_operand(node, operand).as_dtype(node.meta.dtype)

    def _load(self, name: str, index: tuple) -> Load:
        buffer = self.scheduler.buffers[name]
        return Load(name, offset(buffer.strides, index), check_dtype(buffer.dtype))


def make_kernel_step(name: str, body: tuple, buffers: dict[str, Buffer]) -> KernelStep:
    """The Kernel of `body`: buffers read then written, in order of appearance, and the
    size parameters its indices name."""
    loaded: dict[str, None] = {}
    stored: dict[str, None] = {}
    names: set[str] = set()
    variables: set[str] = set()
    scratch: set[str] = set()

    def visit(statements):
        for statement in statements:
            if isinstance(statement, Loop):
                variables.update(dim.var for dim in statement.dims)
                names.update(*(dim.extent.names() for dim in statement.dims))
                visit(statement.body)
                continue
            if isinstance(statement, Scratch):
                scratch.add(statement.name)
                continue
            if isinstance(statement, Reduce):
                variables.update(dim.var for dim in statement.dims)
                names.update(*(dim.extent.names() for dim in statement.dims))
                visit(statement.stores)
            else:
                stored[statement.buffer] = None
                names.update(statement.index.names())
            for value in walk_values(statement.value):
                if isinstance(value, Load):
                    loaded[value.buffer] = None
                if isinstance(value, (Load, IndexValue)):
                    names.update(value.index.names())

    visit(body)
    # A buffer the kernel writes is one parameter even where it is read too (a columnar
    # accumulator): two `restrict` pointers to one array would be undefined behaviour.
    params = [BufferParam(buffer, buffers[buffer].dtype, False) for buffer in loaded
              if buffer not in stored and buffer not in scratch]
    params += [BufferParam(buffer, buffers[buffer].dtype, True) for buffer in stored if buffer not in scratch]
    kernel = Kernel(name, tuple(params), tuple(sorted(names - variables)), body)
    return KernelStep(kernel, tuple(param.name for param in params))
