"""NOTE(dots-in-loops): in a loop's body, a matrix-vector or vector-vector product of one
float dtype (`L[i, :i] @ x[:i]`, `Q[:, :k].T @ v`) is rewritten as the reduction it is,
`sum(a * b, axis=-1)`, before scheduling, so that it fuses into the body's kernels and
the body can run as one C loop (NOTE(c-loops) in pyjit/codegen/cpu/loops.py) instead of
calling BLAS from Python once per index. Where the product's length moves with the
index it is short at one end of the range and empty at the other, where a BLAS call
costs more than its work; an empty product is the sum's identity, 0, as matmul's. The
sum adds in its own order (float32 in double), so results agree with NumPy's to rounding,
as any BLAS's do. Outside loop bodies matmul stays BLAS (blocked, threaded, and the
reference rounding). Products of matrices, of integers or of mixed dtypes stay too.
"""

from __future__ import annotations

import numpy as np

from ...graph import SymInt, TensorMeta
from ...graph.node import Node
from ...ops.linalg import matmul_as_sum

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def is_loop_body(graph) -> bool:
    """Whether `graph` is a loop's body: its first input is the index, a symbol."""
    placeholders = graph.placeholders
    return bool(placeholders) and isinstance(placeholders[0].meta, SymInt)


def dots_as_reductions(graph) -> int:
    """Rewrite `graph`'s vector products in place (NOTE(dots-in-loops)); how many."""
    rewritten = 0
    for node in list(graph.calls()):
        if getattr(node.target, "name", None) != "matmul" or node.kwargs or not _vector_product(*node.args):
            continue
        position, appended = graph.nodes.index(node), len(graph.nodes)
        with graph.at(node.loc):
            total = matmul_as_sum(*node.args)
        made = graph.nodes[appended:]
        del graph.nodes[appended:]
        graph.nodes[position:position] = made
        node.replace_all_uses_with(total)
        graph.erase(node)
        rewritten += 1
    return rewritten


def _vector_product(a, b) -> bool:
    if not all(isinstance(x, Node) and isinstance(x.meta, TensorMeta) for x in (a, b)):
        return False
    dtype = np.dtype(a.meta.dtype)
    return b.meta.ndim == 1 and a.meta.ndim in (1, 2) and dtype == np.dtype(b.meta.dtype) and dtype in _FLOATS
