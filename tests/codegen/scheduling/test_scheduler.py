"""pyjit/codegen/scheduling/scheduler.py: which kernels a graph becomes, and what they allocate
(NOTE(fusion)). These tests only schedule; tests/backends/test_inductor.py runs kernels."""

import numpy as np

import pyjit.ops as ops
from pyjit.codegen.ir.kernel_ir import Call, Load, Loop, Reduce, Store, walk_values
from pyjit.codegen.scheduling.scheduler import EagerStep, KernelStep, schedule
from pyjit.graph import Graph, ShapeEnv, TensorMeta

F32 = np.float32


def plan(build, *metas, layouts=None, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    return schedule(graph, layouts)


def statements(kernel, kind):
    return [statement for statement in kernel.statements() if isinstance(statement, kind)]


def chain6(x):
    """Six pointwise ops: sin(x) * cos(x) + exp(-(x * x)) ... and a seventh to square it."""
    return ops.add(ops.multiply(ops.sin(x), ops.cos(x)), ops.exp(ops.negative(ops.multiply(x, x))))


def test_softmax_is_one_kernel_with_one_parallel_loop_over_rows_and_no_intermediate():
    scheduled = plan(lambda x: ops.softmax(x), TensorMeta((64, 32), F32))
    (kernel,) = scheduled.kernels
    assert scheduled.allocations == ("buf0",)
    (outer,) = kernel.body
    assert isinstance(outer, Loop) and outer.parallel and [dim.var for dim in outer.dims] == ["i0"]
    assert [type(s).__name__ for s in outer.body] == ["Scratch", "Reduce", "Reduce", "Loop"]
    assert [reduce.kind for reduce in statements(kernel, Reduce)] == ["max", "sum"]
    assert [store.buffer for store in statements(kernel, Store)] == ["buf0"]
    # exp(x - max) is computed once, by the sum, and kept for the division (NOTE(kept-values))
    (kept,) = outer.body[2].stores
    assert kept.value.op == "exp"
    (division,) = outer.body[3].body
    assert division.value.args[0] == Load("kept0", kept.index, kept.value.dtype)


def test_a_value_a_max_selects_from_and_another_reader_compares_is_stored_once():
    """t == t.max(): every reader loads t's bits from one buffer (NOTE(selected-values));
    recomputed, glibc's vector tanh in one loop and its scalar tanh in another differ in
    the last bit and the comparison finds no maximum."""
    scheduled = plan(lambda x: (lambda t: ops.equal(t, ops.max(t)))(ops.tanh(x)), TensorMeta((17,), np.float64))
    first, second = scheduled.kernels
    assert [store.value.op for store in statements(first, Store)] == ["tanh"]
    (reduce,) = statements(second, Reduce)
    stored = statements(first, Store)[0].buffer
    assert reduce.value == Load(stored, reduce.value.index, np.dtype(np.float64))
    assert not [part for statement in [*statements(second, Reduce), *statements(second, Store)]
                for part in walk_values(statement.value) if isinstance(part, Call) and part.op == "tanh"]
    # a value only the max reads stays inlined
    (kernel,) = plan(lambda x: ops.max(ops.tanh(x)), TensorMeta((17,), np.float64)).kernels
    (reduce,) = statements(kernel, Reduce)
    assert reduce.value.op == "tanh"


def test_cheap_values_and_long_rows_are_recomputed_not_kept():
    (kernel,) = plan(lambda x: ops.layer_norm(x, (32,)), TensorMeta((8, 32), F32)).kernels
    assert not [s for s in kernel.body[0].body if type(s).__name__ == "Scratch"]  # x - mean: a subtraction
    (kernel,) = plan(lambda x: ops.softmax(x), TensorMeta((2, 1 << 15), F32)).kernels
    assert not [s for s in kernel.body[0].body if type(s).__name__ == "Scratch"]  # 128 KiB: off the stack


def test_layer_norm_with_weight_and_bias_is_one_kernel():
    scheduled = plan(lambda x, w, b: ops.layer_norm(x, (32,), w, b),
                     TensorMeta((8, 16, 32), F32), TensorMeta((32,), F32), TensorMeta((32,), F32))
    (kernel,) = scheduled.kernels
    assert len(scheduled.allocations) == 1
    assert [reduce.kind for reduce in statements(kernel, Reduce)] == ["sum", "sum"]
    (outer,) = kernel.body
    assert outer.dims[0].extent == 8 * 16  # the two row axes are collapsed into one loop


def test_a_pointwise_chain_is_one_flat_loop_and_one_allocation():
    scheduled = plan(chain6, TensorMeta((4, 5, 6), F32))
    (kernel,) = scheduled.kernels
    assert len(scheduled.allocations) == 1
    (loop,) = kernel.body
    assert [dim.extent for dim in loop.dims] == [120]
    ops_used = {value.op for store in statements(kernel, Store) for value in walk_values(store.value)
                if hasattr(value, "op")}
    assert ops_used == {"sin", "cos", "mul", "add", "exp", "neg"}


def test_matmul_runs_eagerly_and_the_pointwise_work_after_it_is_one_kernel():
    scheduled = plan(lambda a, b: ops.tanh(ops.add(ops.matmul(a, b), 1.0)),
                     TensorMeta((4, 8), F32), TensorMeta((8, 3), F32))
    assert [type(step).__name__ for step in scheduled.steps] == ["EagerStep", "KernelStep"]
    assert scheduled.steps[0].node.target.name == "matmul"
    loads = {value.buffer for store in statements(scheduled.kernels[0], Store) for value in walk_values(store.value)
             if isinstance(value, Load)}
    assert loads == {"v_matmul"}


def test_a_reduction_read_at_another_point_closes_the_group_and_is_stored():
    def build(x):
        row_sums = ops.sum(x, axis=1)  # shape (n,), indexed by row
        return ops.add(x, row_sums)  # broadcast along rows: element (i, j) reads row_sums[j]
    scheduled = plan(build, TensorMeta((6, 6), F32))
    assert len(scheduled.kernels) == 2
    assert len(scheduled.allocations) == 2  # the row sums cross kernels in a buffer


def test_a_reduction_over_leading_axes_accumulates_rows_into_its_result():
    scheduled = plan(lambda x: ops.max(x, axis=0), TensorMeta((6, 5), F32))
    (kernel,) = scheduled.kernels
    init, rows = kernel.body
    assert init.parallel and [dim.var for dim in init.dims] == ["i1"]
    assert not rows.parallel and [dim.var for dim in rows.dims] == ["r0"]
    (accumulate,) = rows.body
    assert accumulate.parallel and accumulate.body[0].value.op == "maximum"
    assert [param.name for param in kernel.buffers] == ["v_x0", "buf0"]  # the result is the accumulator


def test_columnar_reductions_share_a_kernel_with_their_kept_shape_results():
    scheduled = plan(lambda x: ops.var(x, axis=0), TensorMeta((6, 5), F32))
    (kernel,) = scheduled.kernels  # sum, sum of squared deviations, division
    assert [type(statement).__name__ for statement in kernel.body] == ["Loop"] * 5
    centered = plan(lambda x: ops.subtract(x, ops.mean(x, axis=0, keepdims=True)), TensorMeta((6, 5), F32))
    assert len(centered.kernels) == 2  # the full-shape result is a second pass


def test_a_full_reduction_and_its_scalar_arithmetic_share_a_kernel():
    scheduled = plan(lambda x: ops.mean(x), TensorMeta((6, 5), np.float64))
    (kernel,) = scheduled.kernels
    assert [type(s).__name__ for s in kernel.body] == ["Reduce", "Store"]
    assert kernel.body[0].dims[0].extent == 30  # both axes in one reduction loop


def test_an_eager_node_closes_the_group_it_reads():
    def build(x):
        y = ops.sin(x)
        joined = ops.concatenate([y, y])
        return ops.cos(joined), ops.exp(x)
    scheduled = plan(build, TensorMeta((3,), F32))
    kinds = [type(step).__name__ for step in scheduled.steps]
    assert kinds == ["KernelStep", "EagerStep", "KernelStep", "KernelStep"]


def test_an_eager_node_that_reads_nothing_of_the_open_group_runs_before_it():
    def build(x, a, b):
        y = ops.sin(x)  # an output: opens a group
        product = ops.matmul(a, b)
        return y, ops.exp(ops.add(x, ops.getitem(product, 0)))
    scheduled = plan(build, TensorMeta((3,), F32), TensorMeta((3, 3), F32), TensorMeta((3, 3), F32))
    assert [type(step).__name__ for step in scheduled.steps] == ["EagerStep", "KernelStep"]
    assert len(statements(scheduled.kernels[0], Store)) == 2  # sin(x) and exp(x + product[0]) in one loop


def test_outputs_that_are_views_are_numpy_views_of_a_realized_value():
    scheduled = plan(lambda x: ops.transpose(ops.sin(x)), TensorMeta((3, 4), F32))
    assert [type(step).__name__ for step in scheduled.steps] == ["KernelStep", "EagerStep"]
    assert scheduled.steps[1].node.target.name == "transpose"


def test_views_inside_kernels_are_index_arithmetic():
    scheduled = plan(lambda x: ops.add(ops.transpose(x), 1.0), TensorMeta((3, 4), F32))
    (kernel,) = scheduled.kernels
    (store,) = statements(kernel, Store)
    (load,) = [value for value in walk_values(store.value) if isinstance(value, Load)]
    (loop,) = kernel.body
    outer, inner = (dim.var for dim in loop.dims)
    assert load.index.coefficient(outer) == 1 and load.index.coefficient(inner) == 4  # a transposed read


def long_chain(x, length=5000):
    for step in range(length):  # what an unrolled loop gives
        x = ops.multiply(x, 0.5) if step % 2 == 0 else ops.add(x, 1.0)
    return x


def transposed(x, times=3000):
    for _ in range(times):
        x = ops.transpose(x)
    return x


def test_a_chain_of_thousands_of_ops_is_one_expression_at_the_default_recursion_limit():
    """NOTE(flat-walks)."""
    (kernel,) = plan(long_chain, TensorMeta((64,), F32)).kernels
    (store,) = statements(kernel, Store)
    assert sum(isinstance(value, Call) for value in walk_values(store.value)) == 5000


def test_thousands_of_views_in_a_row_are_index_arithmetic_or_numpy_views():
    """NOTE(flat-walks): read by a kernel, a view of a view ... is an index; as an output,
    one NumPy view after another."""
    (kernel,) = plan(lambda x: ops.add(transposed(x), 1.0), TensorMeta((3, 4), F32)).kernels
    (store,) = statements(kernel, Store)
    assert [value.buffer for value in walk_values(store.value) if isinstance(value, Load)] == ["v_x0"]
    scheduled = plan(lambda x: transposed(ops.sin(x)), TensorMeta((3, 4), F32))
    assert [type(step).__name__ for step in scheduled.steps] == ["KernelStep"] + ["EagerStep"] * 3000
    assert [step.node.name for step in scheduled.steps[1:]] == [node.name for node in scheduled.graph.nodes
                                                                 if node.kind == "call" and node.target.name == "transpose"]


def test_broadcast_operands_keep_their_loops_apart():
    scheduled = plan(lambda a, b: ops.add(a, b), TensorMeta((3, 1), F32), TensorMeta((3, 4), F32))
    (loop,) = scheduled.kernels[0].body
    assert len(loop.dims) == 2


def test_symbolic_sizes_are_kernel_parameters():
    env = ShapeEnv()
    s0 = env.create_symbol(5)
    scheduled = plan(lambda x: ops.softmax(x), TensorMeta((s0, 7), F32), shape_env=env)
    assert scheduled.kernels[0].sizes == ("s0",)


def test_strided_inputs_take_their_strides_as_parameters():
    scheduled = plan(chain6, TensorMeta((3, 4), F32), layouts={"x0": "strided"})
    assert scheduled.kernels[0].sizes == ("st_x0_0", "st_x0_1")


def test_dtypes_without_a_kernel_type_run_eagerly():
    scheduled = plan(lambda x: ops.exp(x), TensorMeta((3,), np.complex128))
    assert scheduled.kernels == []
    assert isinstance(scheduled.steps[0], EagerStep)


def test_kernel_steps_name_their_buffers_in_parameter_order():
    scheduled = plan(lambda a, b: ops.multiply(a, b), TensorMeta((3,), F32), TensorMeta((3,), F32))
    (step,) = [step for step in scheduled.steps if isinstance(step, KernelStep)]
    assert step.buffers == ("v_x0", "v_x1", "buf0")
    assert [param.output for param in step.kernel.buffers] == [False, False, True]


# -- NOTE(epilogue-in-place) -------------------------------------------------------------
def writes(kernel):
    return [param.name for param in kernel.buffers if param.output]


def test_a_matmul_epilogue_writes_into_the_products_array():
    def build(x, w, b):
        return ops.maximum(ops.add(ops.matmul(x, w), b), 0.0)
    scheduled = plan(build, TensorMeta((4, 8), F32), TensorMeta((8, 3), F32), TensorMeta((3,), F32))
    (kernel,) = scheduled.kernels
    assert writes(kernel) == ["v_matmul"] and scheduled.allocations == ()
    assert [param.name for param in kernel.buffers] == ["v_x2", "v_matmul"]  # one parameter: read and written


def test_a_softmax_of_a_product_writes_each_row_after_reducing_it_on_the_cpu():
    def build(q, k):
        return ops.softmax(ops.multiply(ops.matmul(q, ops.transpose(k)), 0.5))
    scheduled = plan(build, TensorMeta((6, 4), F32), TensorMeta((5, 4), F32))
    (kernel,) = scheduled.kernels
    assert writes(kernel) == ["v_matmul"] and scheduled.allocations == ()


def test_a_product_read_elsewhere_or_at_another_point_gets_a_new_buffer():
    square, row = TensorMeta((3, 3), F32), TensorMeta((3,), F32)

    def output(a, b):
        product = ops.matmul(a, b)
        return product, ops.exp(product)

    def transposed(a, b):
        product = ops.matmul(a, b)
        return ops.add(product, ops.transpose(product))

    def another_matmul(a, b):
        product = ops.matmul(a, b)
        return ops.matmul(ops.exp(product), product)

    def another_kernel(a, b):
        product = ops.matmul(a, b)
        first = ops.exp(product)
        return ops.concatenate([first, first]), ops.sin(product)  # concatenate closes the first kernel

    cases = {
        "an output": (output, (square, square)),
        "read transposed": (transposed, (square, square)),
        "read by another matmul": (another_matmul, (square, square)),
        "read by another kernel": (another_kernel, (square, square)),
        "another dtype": (lambda a, b: ops.astype(ops.matmul(a, b), np.float64), (square, square)),
        "a larger shape": (lambda a, b, c: ops.add(ops.matmul(a, b), ops.reshape(c, (3, 1, 1))),
                           (square, square, row)),
        "einsum (may be a view)": (lambda a, b: ops.exp(ops.einsum("ij->ji", a)), (square, square)),
    }
    for what, (build, metas) in cases.items():
        scheduled = plan(build, *metas)
        written = {name for kernel in scheduled.kernels for name in writes(kernel)}
        assert written and not any(name.startswith("v_") for name in written), what


def test_on_a_gpu_only_pointwise_epilogues_write_in_place():
    cuda = [TensorMeta((6, 4), F32, device="cuda:0"), TensorMeta((4, 5), F32, device="cuda:0")]
    graph_with = {
        "pointwise": lambda a, b: ops.tanh(ops.matmul(a, b)),
        "softmax": lambda a, b: ops.softmax(ops.matmul(a, b)),
    }
    written = {}
    for what, build in graph_with.items():
        graph = Graph()
        inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(cuda)]
        graph.output(build(*inputs))
        (kernel,) = schedule(graph, device="cuda:0").kernels
        written[what] = writes(kernel)
    assert written == {"pointwise": ["v_matmul"], "softmax": ["buf0"]}


def test_alternating_reshapes_fuse_with_the_flat_index():
    """Reshaping (4, 3) to (3, 4) and back, twelve times: the split and rebuilt flat
    index folds (NOTE(div-mod-fold)), so the kernel reads and writes at one linear
    position, with no division left (it used to double the index at every reshape)."""
    def reshapes(x):
        for step in range(12):
            x = ops.reshape(ops.add(x, 1.0), (3, 4)) if step % 2 == 0 else ops.reshape(ops.multiply(x, 2.0), (4, 3))
        return x

    (kernel,) = plan(reshapes, TensorMeta((4, 3), F32)).kernels
    (store,) = statements(kernel, Store)
    loads = [value for value in walk_values(store.value) if isinstance(value, Load)]
    indexes = [str(store.index)] + [str(load.index) for load in loads]
    assert indexes and not any("//" in text or "%" in text for text in indexes)


# -- NOTE(assignment-by-kernel) ------------------------------------------------------------
F64 = np.float64


def new(x, creation, *args, **kwargs):
    """A creation op's node in `x`'s graph (a new array the graph owns)."""
    return x.graph.call(creation, *args, **kwargs)


def fir(x, h, taps=3):
    """`y = np.zeros(n); y[k:] += h[k] * x[:n - k]` for each tap, unrolled."""
    n = x.meta.shape[0]
    y = new(x, ops.zeros, n)
    for k in range(taps):
        tap = ops.multiply(ops.getitem(h, k), ops.getitem(x, slice(None, n - k)))
        y = ops.index_put(y, slice(k, None), ops.add(ops.getitem(y, slice(k, None)), tap))
    return y


def test_a_kernel_writes_assigned_values_into_the_target_at_the_selected_elements():
    scheduled = plan(fir, TensorMeta((16,), F64), TensorMeta((3,), F64))
    assert scheduled.allocations == () and len(scheduled.assigned) == 3
    for k, kernel in enumerate(scheduled.kernels):
        (store,) = statements(kernel, Store)
        (target,) = writes(kernel)
        assert store.buffer == target and str(store.index) == ("i0" if k == 0 else f"{k} + i0")
        assert {load.index for load in walk_values(store.value) if isinstance(load, Load) and load.buffer == target} \
            == {store.index}  # read where it is written, before it is


def test_a_kernel_writes_rows_and_strided_slices_of_a_new_array():
    def build(x):
        grid = ops.index_put(new(x, ops.zeros, (6, 8)), (slice(1, -1), slice(2, 6)), ops.sin(x))
        grid = ops.index_put(grid, (slice(1, -1), slice(None, None, 2)), ops.cos(x))
        return ops.index_put(grid, 0, ops.tan(ops.getitem(ops.reshape(x, (2, 8)), 0)))
    scheduled = plan(build, TensorMeta((4, 4), F64))
    assert scheduled.allocations == () and len(scheduled.assigned) == 3
    stores = [store.index for kernel in scheduled.kernels for store in statements(kernel, Store)]
    # rows 1-4, columns 2-5; rows 1-4, even columns (one flat loop: 8 + 2k); row 0
    assert [sorted(str(index).split(" + ")) for index in stores] == [["10", "8*i0", "i1"], ["2*i1", "8"], ["i0"]]


def test_a_donated_carry_is_written_by_the_kernel_and_an_input_is_not():
    def build(x):
        return ops.index_put(x, slice(1, None), ops.multiply(ops.getitem(x, slice(1, None)), 0.5))
    for donated in (frozenset(), frozenset({"x0"})):
        graph = Graph()
        graph.donated = donated
        graph.output(build(graph.placeholder("x0", TensorMeta((8,), F64))))
        (kernel,) = schedule(graph).kernels
        assert writes(kernel) == (["v_x0"] if donated else ["buf0"])


def test_a_target_earlier_kernels_read_is_written_by_a_later_one():
    def jacobi(a, b):  # b[1:-1] = f(a); a[1:-1] = f(b): the second kernel writes a, which the first read
        def smooth(x):
            return ops.add(ops.getitem(x, slice(None, -2)), ops.getitem(x, slice(2, None)))
        b = ops.index_put(b, slice(1, -1), smooth(a))
        return ops.index_put(a, slice(1, -1), smooth(b)), b

    graph = Graph()
    graph.donated = frozenset({"x0", "x1"})
    graph.output(jacobi(*(graph.placeholder(f"x{n}", TensorMeta((8,), F64)) for n in range(2))))
    scheduled = schedule(graph)
    assert [writes(kernel) for kernel in scheduled.kernels] == [["v_x1"], ["v_x0"]] and scheduled.allocations == ()


def test_one_element_computed_from_others_of_the_target_is_written_by_the_kernel():
    """`y[2] = 0.5 * y[1] + y[3]`: one value, computed before its one store."""
    def recurrence_step(y):
        value = ops.add(ops.multiply(ops.getitem(y, 1), 0.5), ops.getitem(y, 3))
        return ops.index_put(y, 2, value)

    graph = Graph()
    graph.donated = frozenset({"x0"})
    graph.output(recurrence_step(graph.placeholder("x0", TensorMeta((8,), F64))))
    scheduled = schedule(graph)
    (kernel,) = scheduled.kernels
    (store,) = statements(kernel, Store)
    assert writes(kernel) == ["v_x0"] and str(store.index) == "2" and scheduled.allocations == ()


def test_assignments_a_kernel_cannot_write_in_place_keep_their_buffer():
    def shifted(x):  # NumPy computes every value before it writes one
        y = ops.index_put(new(x, ops.zeros, 8), slice(None), x)
        return ops.index_put(y, slice(1, None), ops.add(ops.getitem(y, slice(None, -1)), 1.0))

    def read_afterwards(x):
        y = new(x, ops.ones, 8)
        return ops.index_put(y, slice(None), ops.sin(x)), ops.exp(y)

    def output(x):
        y = new(x, ops.ones, 8)
        return ops.index_put(y, 2, ops.sin(ops.getitem(x, 2))), y

    def values_read_elsewhere(x):
        values = ops.sin(x)
        return ops.index_put(new(x, ops.zeros, 8), slice(None), values), values

    def alias_read_afterwards(x):  # einsum may return a view of its operand
        y = new(x, ops.zeros, 8)
        alias = ops.einsum("i->i", y)
        return ops.index_put(y, slice(None), ops.sin(x)), ops.exp(alias)

    def alias_read_by_the_kernel(x):
        y = new(x, ops.zeros, 8)
        alias = ops.einsum("i->i", y)
        return ops.index_put(y, slice(1, None), ops.add(ops.getitem(alias, slice(1, None)), 1.0))

    cases = {
        "a shifted read of the target": shifted,
        "a possible view of the target read afterwards": alias_read_afterwards,
        "a possible view of the target read by the kernel": alias_read_by_the_kernel,
        "the target read afterwards": read_afterwards,
        "the target an output": output,
        "the values read elsewhere": values_read_elsewhere,
        "another dtype": lambda x: ops.index_put(new(x, ops.zeros, 8, dtype=F32), slice(None), ops.sin(x)),
        "broadcast values": lambda x: ops.index_put(new(x, ops.zeros, (3, 8)), slice(None), ops.sin(x)),
        "an advanced index": lambda x: ops.index_put(new(x, ops.zeros, 8), [1, 2],
                                                     ops.sin(ops.getitem(x, slice(0, 2)))),
        "an input target": lambda x: ops.index_put(x, slice(None), ops.sin(x)),
    }
    for what, build in cases.items():
        scheduled = plan(build, TensorMeta((8,), F64))
        assert not scheduled.assigned, what
        written = {name for kernel in scheduled.kernels for name in writes(kernel)}
        assert written and all(name.startswith("buf") for name in written), what
