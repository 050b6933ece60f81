"""`config.verify_correctness`: every compiled graph also runs eagerly, and a difference
raises.

NOTE(verify-correctness): with the setting on when a graph is compiled, the callable
the backend returned is wrapped: each call runs it and the graph module itself (the
`eager` backend: the registry's NumPy implementations, op by op) on the same inputs and
compares the results, as torch's `verify_correctness` compares a backend with eager.
Results must have the same structure, types, dtypes and shapes, and values within the
tolerance of the dtype (relative 1e-2 for float16, 1e-4 for float32, 1e-7 for wider
floats, 0 for integers and bools, NaN equal to NaN): the fused kernels reorder
reductions and use vector math, a few ULPs from NumPy (docs/codegen.md, "Numerics").
A difference raises `pyjit.exc.AccuracyError` from the call, at the user's line. Graphs
with an impure op (a random draw: NOTE(random-factories)) are not checked: the eager run
would draw other numbers.
Running the graph twice costs twice the time: a setting for debugging.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd import Tensor
from ..exc import AccuracyError

_RTOL = {2: 1e-2, 4: 1e-4}  # float itemsize -> relative tolerance; wider: 1e-7


def verified(compiled: Callable, graph_module) -> Callable:
    """`compiled`, checked against `graph_module` on every call (NOTE(verify-correctness))."""
    if compiled is graph_module or any(not getattr(node.target, "pure", True) for node in graph_module.graph.calls()):
        return compiled  # a graph that draws random numbers would draw others eagerly

    def run(*args):
        result = compiled(*args)
        expected = graph_module(*args)
        problem = _difference(result, expected, "the result")
        if problem is not None:
            raise AccuracyError(f"config.verify_correctness: the compiled graph {graph_module.graph.name} "
                                f"differs from running it eagerly: {problem}")
        return result

    run.graph_module = graph_module
    return run


def _difference(got: Any, want: Any, where: str) -> str | None:
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{where} is {type(got).__name__} of {len(got)}, eagerly {type(want).__name__} of {len(want)}"
        return next(filter(None, (_difference(g, w, f"{where}[{i}]") for i, (g, w) in enumerate(zip(got, want)))),
                    None)
    if type(got) is not type(want):
        return f"{where} is a {type(got).__name__}, eagerly a {type(want).__name__}"
    got_array, want_array = (value._array if isinstance(value, Tensor) else value for value in (got, want))
    got_array, want_array = np.asarray(got_array), np.asarray(want_array)
    if got_array.dtype != want_array.dtype or got_array.shape != want_array.shape:
        return (f"{where} is {got_array.dtype}{list(got_array.shape)}, "
                f"eagerly {want_array.dtype}{list(want_array.shape)}")
    if want_array.dtype.kind in "fc":
        rtol = _RTOL.get(want_array.dtype.itemsize // (2 if want_array.dtype.kind == "c" else 1), 1e-7)
        scale = float(np.max(np.abs(want_array), initial=0.0, where=np.isfinite(want_array)))
        close = np.isclose(got_array, want_array, rtol=rtol, atol=rtol * max(scale, 1.0), equal_nan=True)
    else:
        close = got_array == want_array
    if not np.all(close):
        worst = np.argwhere(~np.asarray(close))[0]
        index = tuple(int(i) for i in worst)
        return f"{where}{list(index) if index else ''} is {got_array[index]!r}, eagerly {want_array[index]!r}"
    return None
