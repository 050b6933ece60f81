"""pyjit/codegen/cuda/renderer.py: the launches each kind of kernel becomes, index width and
literals. (The grids a launch asks for: tests/codegen/cuda/test_launch.py; what the
kernels compute is checked by running them in emulation: tests/codegen/cuda/test_emulation.py,
with NVRTC compiles.)"""

import numpy as np
import pytest

from pyjit.codegen import BuildError
from pyjit.codegen.cuda.launch import SPLIT_BLOCKS, launch_plan
from pyjit.codegen.cuda.prelude import COLUMN_ITEMS, COLUMN_MAX_CHUNKS, COLUMN_MIN_ROWS, column_chunks
from pyjit.codegen.cuda.renderer import WARP_ROW, CudaDialect, render_unit
from pyjit.codegen.ir.index import Index
from pyjit.codegen.ir.kernel_ir import BufferParam, Call, Dim, Kernel, Load, Loop, Store
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, ShapeEnv, TensorMeta
from pyjit.ops import REGISTRY
from pyjit.ops.registry import op

F32 = np.dtype(np.float32)


def rendered(build, *shapes, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", TensorMeta(shape, F32)) for n, shape in enumerate(shapes)]
    graph.output(build(*inputs))
    (kernel,) = schedule(graph).kernels
    unit = render_unit([kernel])
    return unit.kernels[kernel.name], unit.source


def softmax(x):
    exp = op.exp(op.subtract(x, op.max(x, axis=-1, keepdims=True)))
    return op.divide(exp, op.sum(exp, axis=-1, keepdims=True))


def test_a_row_reduction_is_a_block_per_row_with_warp_shuffles():
    kernel, source = rendered(softmax, (100, 1000))
    assert [launch.mode for launch in kernel.launches] == ["rows"]
    body = source.split(kernel.launches[0].function, 1)[1]
    assert body.count("pyjit_block_reduce<") == 2  # the max, then the sum
    assert "blockIdx.x" in body and "threadIdx.x" in body
    assert "kept" not in body  # kept values are computed again (NOTE(cuda-renderer))


def test_short_rows_get_a_warp_each_reducing_by_shuffles_alone():
    kernel, source = rendered(softmax, (1000, WARP_ROW))
    assert [launch.mode for launch in kernel.launches] == ["warps"]
    body = source.split(kernel.launches[0].function, 1)[1]
    assert body.count("pyjit_warp_reduce<") == 2 and "pyjit_block_reduce<" not in body
    assert "__syncthreads" not in body
    assert launch_plan(kernel, {}, 256)[0][1] == 1000 // 8  # 8 warps, so 8 rows, a block


def test_long_or_symbolic_rows_keep_a_block_each():
    env = ShapeEnv()
    long_rows, _ = rendered(softmax, (10, WARP_ROW + 1))
    symbolic, _ = rendered(softmax, (10, env.create_symbol(20)), shape_env=env)
    assert [launch.mode for launch in long_rows.launches + symbolic.launches] == ["rows", "rows"]


def test_a_full_reduction_is_split_in_two_passes_without_atomics():
    kernel, source = rendered(lambda x: op.divide(op.sum(x), 3.0), (1001,))
    assert [launch.mode for launch in kernel.launches] == ["split", "finish", "single"]
    assert "atomic" not in source
    assert kernel.workspace_bytes >= 16 * SPLIT_BLOCKS


def test_a_reduction_over_leading_axes_is_split_over_its_rows_in_two_passes():
    kernel, source = rendered(lambda x: op.sum(x, axis=0), (5000, 4))
    assert [launch.mode for launch in kernel.launches] == ["column-split", "column-finish"]
    assert "atomic" not in source and "pyjit_warp_reduce<" in source
    chunks = column_chunks(4, 5000)
    assert chunks == -(-5000 // COLUMN_MIN_ROWS)  # 157 chunks of 32 rows, the last shorter
    assert [grid for _, grid in launch_plan(kernel, {}, 256)] == [-(-chunks * 4 // 256), 1]  # a warp a column
    assert kernel.workspace_bytes >= 8 * chunks * 4


def test_argmax_over_leading_axes_is_split_into_value_position_pairs_and_over_the_last_axis_is_not():
    kernel, source = rendered(lambda x: op.add(op.argmax(x, axis=1), 1), (6, 5000, 4))
    assert [launch.mode for launch in kernel.launches] == ["column-split", "column-finish"]
    assert "atomic" not in source and "pyjit_warp_arg_reduce<float, true>" in source
    chunks = column_chunks(24, 5000)
    assert [grid for _, grid in launch_plan(kernel, {}, 256)] == [-(-chunks * 24 // 256), 3]  # a warp a column
    assert kernel.workspace_bytes >= 16 * chunks * 24  # a value and a position each
    finish = source.split(kernel.launches[1].function + "(", 1)[1].split("\n}\n", 1)[0]
    assert "acc_argmax + (uint64_t)1LL" in finish  # the add runs on the thread that stores the column
    rows, _ = rendered(lambda x: op.argmin(x, axis=-1), (4, 5000))
    assert [launch.mode for launch in rows.launches] == ["rows"]


def test_a_column_split_has_one_chunk_when_rows_are_few_or_columns_many():
    assert column_chunks(7, COLUMN_MIN_ROWS) == 1 and column_chunks(7, 0) == 1
    assert column_chunks(COLUMN_ITEMS // 2 + 1, 10**6) == 1
    assert column_chunks(2, 10**9) == COLUMN_MAX_CHUNKS
    kernel, _ = rendered(lambda x: op.sum(x, axis=0), (20, 40))
    assert [grid for _, grid in launch_plan(kernel, {}, 64)] == [1, 1]  # the first pass stores the results


def test_statistics_over_leading_axes_split_each_accumulation():
    kernel, source = rendered(lambda x: REGISTRY["var"](x, axis=0), (300, 6))
    # the identity stores are the passes' starting values; the division by n follows the second result
    assert [launch.mode for launch in kernel.launches] == ["column-split", "column-finish"] * 2
    division = "/ 0x1.2c00000000000p+8f"  # by 300.0, in both passes: one chunk stores in the first
    assert [division in source.split(launch.function + "(", 1)[1].split("\n}\n", 1)[0]
            for launch in kernel.launches] == [False, False, True, True]


def test_a_float_product_over_leading_axes_keeps_numpys_order():
    kernel, source = rendered(lambda x: op.prod(x, axis=0), (5000, 4))
    assert [launch.mode for launch in kernel.launches] == ["elements"]  # a thread per column, rows in order
    assert "pyjit_column_chunks(" not in source.split(kernel.launches[0].function, 1)[1]


def test_symbolic_rows_size_a_column_split_at_launch():
    env = ShapeEnv()
    kernel, source = rendered(lambda x: op.max(x, axis=0), (env.create_symbol(10), 3), shape_env=env)
    (size,) = kernel.sizes
    assert f"pyjit_column_chunks(3, {size})" in source
    assert launch_plan(kernel, {size: 6400}, 128)[0][1] == -(-column_chunks(3, 6400) * 3 // 128)


def test_a_columnar_kernel_of_another_shape_is_refused():
    """Never a wrong answer: the backend runs such a graph eagerly, with a warning."""
    f32 = np.dtype(np.float32)
    rows, columns = Dim("r", Index.const(8)), Dim("k", Index.const(4))
    acc = Load("out", Index.name("k"), f32)
    add = Store("out", Index.name("k"), Call("add", (acc, Load("x", Index.name("k") + Index.name("r") * 4, f32)), f32))
    kernel = Kernel("odd", (BufferParam("x", f32, False), BufferParam("out", f32, True)), (),
                    (Loop((rows,), (Loop((columns,), (add, add), parallel=True),)),))
    with pytest.raises(BuildError, match="columnar"):
        render_unit([kernel])


def test_a_chain_of_thousands_of_ops_is_one_temporary_each_at_the_default_recursion_limit():
    """NOTE(flat-walks)."""
    def long_chain(x):
        for step in range(5000):
            x = op.multiply(x, 0.5) if step % 2 == 0 else op.add(x, 1.0)
        return x

    _, source = rendered(long_chain, (64,))
    assert source.count("const float t") == 1 + 5000  # the load, then each op


def test_pointwise_work_is_a_grid_stride_loop():
    kernel, source = rendered(lambda x, y: op.add(op.sin(x), y), (33, 7), (7,))
    assert [launch.mode for launch in kernel.launches] == ["elements"]
    assert "gridDim.x * blockDim.x" in source
    assert "sinf(" in source and "__sinf" not in source  # the accurate library function, no fast math


def test_indices_are_32_bit_when_every_size_is_known_and_small():
    static, _ = rendered(lambda x: op.exp(x), (1000, 1000))
    assert static.index_type == "int32_t"
    huge, _ = rendered(lambda x: op.exp(x), (1 << 16, 1 << 16))
    assert huge.index_type == "int64_t"
    env = ShapeEnv()
    symbolic, _ = rendered(lambda x: op.exp(x), (env.create_symbol(10), 4), shape_env=env)
    assert symbolic.index_type == "int64_t" and symbolic.sizes


def test_special_float_literals_are_bit_patterns():
    assert CudaDialect.float_literal(float("nan"), F32) == "__int_as_float(0x7fc00000)"
    assert CudaDialect.float_literal(float("-inf"), F32) == "__int_as_float(0xff800000)"
    assert CudaDialect.float_literal(float("inf"), np.dtype(np.float64)) == "__longlong_as_double(9218868437227405312LL)"
    assert CudaDialect.float_literal(0.5, F32) == "0x1.0000000000000p-1f"
