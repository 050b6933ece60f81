"""Launch geometry of the CUDA renderer's kernels (pyjit/codegen/cuda/renderer.py): the
`__global__` functions an IR kernel becomes, in order, and how many blocks each asks for
at given sizes. The renderer builds these records; the loader (cuda/build.py) and the
emulation (cuda/emulation.py) read them and never the renderer.

A launch's grid follows from its mode (NOTE(cuda-renderer)), its extents and the block
size alone: `rows` a block per row, `warps` and `column-finish` a warp per row or
column, `elements`, `split` and `column-split` a thread per iteration (per (chunk,
column) pair for a column split), `single` and `finish` one block. Every grid is capped
(grid-stride loops step through the rest) and at least one block: CUDA refuses an empty
grid, and a reduction over nothing still writes its identity.
"""

from __future__ import annotations

import dataclasses

from ..ir.index import Index
from .prelude import column_chunks

# Partials of a split reduction: at most this many blocks take part in the first pass.
SPLIT_BLOCKS = 1024
# Grid-stride loops cap the grid: more blocks than this step through the rest.
MAX_GRID = 65535
# The launch modes whose blocks combine values across their threads (NOTE(block-reduce)).
BLOCK_REDUCING = frozenset({"rows", "warps", "split", "finish", "column-finish"})


@dataclasses.dataclass(frozen=True)
class Launch:
    """One `__global__` function of an IR kernel and how its grid is sized: `mode` (see
    NOTE(cuda-renderer)) and `extent`, the iterations (elements, rows) it covers."""

    function: str
    mode: str
    extent: Index
    rows: Index | None = None  # the reduced extent of a column split (NOTE(column-split))

    def grid(self, sizes: dict[str, int], block: int, max_grid: int = MAX_GRID) -> int:
        """Blocks for this launch given the kernel's size arguments (at least 1: CUDA
        refuses an empty grid, and a reduction over nothing still writes its identity)."""
        values = {name: Index.const(v) for name, v in sizes.items()}
        extent = self.extent.substitute(values).constant_value()
        chunks = column_chunks(extent, self.rows.substitute(values).constant_value()) if self.rows else 1
        if self.mode in ("single", "finish") or (self.mode == "column-finish" and chunks == 1):
            return 1
        if self.mode == "rows":
            count = extent
        elif self.mode in ("warps", "column-finish"):
            count = -(-extent // (block // 32))
        else:
            count = -(-(extent * chunks) // block)
        if self.mode == "split":
            max_grid = min(max_grid, SPLIT_BLOCKS)
        return max(1, min(count, max_grid))


@dataclasses.dataclass(frozen=True)
class CudaKernel:
    """An IR kernel rendered: its launches in order and what they share."""

    name: str
    buffers: tuple                 # (C type, is output) per buffer, in call order
    sizes: tuple[str, ...]
    launches: tuple[Launch, ...]
    workspace_bytes: int
    index_type: str


def launch_plan(kernel: CudaKernel, sizes: dict[str, int], block: int, max_grid: int = MAX_GRID) -> list:
    """[(function, blocks)] for running `kernel` with these size arguments, in order;
    `block` threads a block (a multiple of 32, at most 1024)."""
    if block % 32 or not 32 <= block <= 1024:
        raise ValueError(f"a block has a multiple of 32 threads, at most 1024, not {block}")
    return [(launch.function, launch.grid(sizes, block, max_grid)) for launch in kernel.launches]


@dataclasses.dataclass(frozen=True)
class CudaUnit:
    """One CUDA source (a RawModule) and its kernels by IR name."""

    source: str
    kernels: dict
