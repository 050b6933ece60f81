"""reduce-overhead on the GPU: a compiled graph's launches replayed as one CUDA graph.

NOTE(cuda-graphs): for a graph compiled for CuPy arrays with static sizes, the first
call for a given set of input shapes, dtypes and strides copies the inputs into static
buffers, runs the compiled function once (compiling variants, autotuning, and leaving
CuPy's memory pool holding blocks of the sizes it needs), then captures a second run on
a side stream into a CUDA graph. Later calls copy their inputs into the static buffers
and launch the graph on the current stream: one launch instead of one per kernel. The
outputs are the graph's static buffers, so each call returns copies of them (a result
kept from an earlier call is never overwritten). Calls with non-CuPy arguments (a
Python scalar is read as a buffer the capture would freeze), graphs with symbolic sizes,
and a capture that fails (a warning says why) run the compiled function as it is.
Never run on a GPU here (docs/codegen.md, "CUDA").
"""

from __future__ import annotations

import warnings

from ...graph import SymInt, TensorMeta


def is_dynamic(graph_module) -> bool:
    return any(isinstance(size, SymInt) for node in graph_module.graph.placeholders
               if isinstance(node.meta, TensorMeta) for size in node.meta.shape)


class CudaGraphed:
    """`run` (a compiled graph for CuPy arrays) replayed through CUDA graphs."""

    def __init__(self, run, cupy):
        self.run, self.cupy = run, cupy
        self.entries: dict[tuple, tuple] = {}
        self.failed = False
        for name in ("kernels", "allocations", "source", "glue", "graph_module"):
            setattr(self, name, getattr(run, name, None))

    def __call__(self, *args):
        if self.failed or not args or not all(isinstance(arg, self.cupy.ndarray) for arg in args):
            return self.run(*args)
        key = tuple((arg.shape, arg.dtype.str, arg.strides, arg.device.id) for arg in args)
        entry = self.entries.get(key) or self._capture(key, args)
        if entry is None:
            return self.run(*args)
        static, outputs, graph = entry
        for buffer, arg in zip(static, args):
            buffer[...] = arg
        graph.launch()
        return _copied(outputs)

    def _capture(self, key: tuple, args) -> tuple | None:
        cupy = self.cupy
        static = [arg.copy() for arg in args]
        self.run(*static)
        cupy.cuda.get_current_stream().synchronize()
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                try:
                    outputs = self.run(*static)
                finally:
                    graph = stream.end_capture()
        except Exception as error:  # what CUDA or CuPy refuse to capture runs launch by launch
            self.failed = True
            warnings.warn(f"pyjit: reduce-overhead could not capture a CUDA graph ({type(error).__name__}: "
                          f"{error}); the graph's kernels are launched one by one", stacklevel=3)
            return None
        self.entries[key] = (static, outputs, graph)
        return self.entries[key]


def _copied(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_copied(item) for item in value)
    return value.copy() if hasattr(value, "copy") and hasattr(value, "device") else value
