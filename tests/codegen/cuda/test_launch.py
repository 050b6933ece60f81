"""pyjit/codegen/cuda/launch.py: the blocks each kind of launch asks for at given sizes and
block sizes. (Which launches a kernel becomes: tests/codegen/cuda/test_renderer.py.)"""

import pytest

from pyjit.codegen.cuda.launch import MAX_GRID, SPLIT_BLOCKS, CudaKernel, Launch, launch_plan
from pyjit.codegen.cuda.prelude import column_chunks
from pyjit.codegen.ir.index import Index


def kernel_of(*launches, sizes=()):
    return CudaKernel("k", (("float", False), ("float", True)), tuple(sizes), tuple(launches), 0, "int64_t")


def test_grids_cover_the_work_and_never_are_empty():
    whole = Index.const(100_000)
    full = kernel_of(Launch("k_0", "split", whole), Launch("k_1", "finish", Index.const(1)),
                     Launch("k_2", "single", Index.const(1)))
    assert launch_plan(full, {}, 256) == [("k_0", min(SPLIT_BLOCKS, -(-100_000 // 256))), ("k_1", 1), ("k_2", 1)]
    assert launch_plan(kernel_of(Launch("k_0", "rows", Index.const(7))), {}, 64) == [("k_0", 7)]
    assert launch_plan(kernel_of(Launch("k_0", "warps", Index.const(7))), {}, 64) == [("k_0", 4)]  # 2 rows a block
    assert launch_plan(kernel_of(Launch("k_0", "elements", Index.const(0))), {}, 128) == [("k_0", 1)]
    assert launch_plan(kernel_of(Launch("k_0", "elements", Index.const(1 << 28))), {}, 32) == [("k_0", MAX_GRID)]


def test_a_column_split_is_a_thread_per_chunk_and_column_then_a_warp_per_column():
    columns, rows = Index.const(24), Index.const(5000)
    split = kernel_of(Launch("k_0", "column-split", columns, rows), Launch("k_1", "column-finish", columns, rows))
    chunks = column_chunks(24, 5000)
    assert chunks > 1
    assert launch_plan(split, {}, 256) == [("k_0", -(-chunks * 24 // 256)), ("k_1", 3)]
    few = kernel_of(Launch("k_0", "column-split", columns, Index.const(20)),
                    Launch("k_1", "column-finish", columns, Index.const(20)))
    assert launch_plan(few, {}, 64) == [("k_0", 1), ("k_1", 1)]  # one chunk: the first pass stores the results


def test_symbolic_sizes_size_the_grid_at_launch():
    kernel = kernel_of(Launch("k_0", "warps", Index.name("s0")), sizes=("s0",))
    assert launch_plan(kernel, {"s0": 300}, 128) == [("k_0", 75)]  # a warp a row, 4 a block
    split = kernel_of(Launch("k_0", "column-split", Index.const(3), Index.name("s0")), sizes=("s0",))
    assert launch_plan(split, {"s0": 6400}, 128) == [("k_0", -(-column_chunks(3, 6400) * 3 // 128))]


@pytest.mark.parametrize("block", [0, 48, 2048])
def test_a_block_is_whole_warps(block):
    with pytest.raises(ValueError, match="multiple of 32"):
        launch_plan(kernel_of(Launch("k_0", "elements", Index.const(10))), {}, block)
