"""pyjit/codegen/cuda/graphs.py: what reduce-overhead does around a compiled CUDA graph
(NOTE(cuda-graphs)). No GPU here: a stand-in for CuPy's stream capture replays the
captured call on the static buffers, which is what a CUDA graph does; the real thing
runs in tests/gpu/test_cuda_backend.py."""

import types

import numpy as np
import pytest

from pyjit.codegen.cuda.graphs import CudaGraphed, is_dynamic
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.ops.registry import op


class DeviceArray(np.ndarray):
    device = types.SimpleNamespace(id=0)


def on_device(values) -> DeviceArray:
    return np.asarray(values, dtype=np.float64).view(DeviceArray)


class FakeCupy:
    """CuPy's capture API as CudaGraphed uses it; a graph's launch runs the captured
    call again on the same buffers and writes into the same outputs."""

    ndarray = DeviceArray

    def __init__(self, fail: bool = False):
        self.fail, self.captures, self.launches = fail, 0, 0
        fake = self

        class Stream:
            def __init__(self, non_blocking=False):
                pass

            def __enter__(self):
                fake.capturing = True
                return self

            def __exit__(self, *exc):
                fake.capturing = False

            def begin_capture(self):
                fake.captures += 1

            def end_capture(self):
                return Graph_(fake.last)

        class Graph_:
            def __init__(self, call):
                self.call = call

            def launch(self):
                fake.launches += 1
                run, args, outputs = self.call
                np.copyto(outputs, run(*args))

        self.cuda = types.SimpleNamespace(Stream=Stream, get_current_stream=lambda: types.SimpleNamespace(
            synchronize=lambda: None))
        self.capturing = False


def recording(fake, fn):
    def run(*args):
        if fake.capturing and fake.fail:
            raise RuntimeError("operation not permitted when stream is capturing")
        result = fn(*args).view(DeviceArray)
        if fake.capturing:
            fake.last = (fn, args, result)
        return result
    return run


def test_replays_see_new_inputs_and_earlier_results_stay():
    fake = FakeCupy()
    graphed = CudaGraphed(recording(fake, lambda x: np.sin(x) + 1), fake)
    first = graphed(on_device([0.0, 1.0]))
    second = graphed(on_device([2.0, 3.0]))
    np.testing.assert_allclose(second, np.sin([2.0, 3.0]) + 1)
    np.testing.assert_allclose(first, np.sin([0.0, 1.0]) + 1)  # a copy: the replay did not overwrite it
    assert fake.captures == 1 and fake.launches == 2
    graphed(on_device([[1.0]]))  # another shape: another graph
    assert fake.captures == 2


def test_python_scalars_bypass_the_graph():
    fake = FakeCupy()
    graphed = CudaGraphed(recording(fake, lambda x, y: x * y), fake)
    np.testing.assert_allclose(graphed(on_device([1.0, 2.0]), 3.0), [3.0, 6.0])
    assert fake.captures == 0


def test_a_failed_capture_warns_and_launches_one_by_one():
    fake = FakeCupy(fail=True)
    graphed = CudaGraphed(recording(fake, lambda x: x + 1), fake)
    with pytest.warns(UserWarning, match="could not capture a CUDA graph"):
        np.testing.assert_allclose(graphed(on_device([1.0])), [2.0])
    np.testing.assert_allclose(graphed(on_device([5.0])), [6.0])
    assert fake.launches == 0


def test_graphs_with_symbolic_sizes_are_not_captured():
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    x = graph.placeholder("x", TensorMeta((env.create_symbol(8),), np.dtype(np.float32), "cuda:0"))
    graph.output(op.sin(x))
    assert is_dynamic(GraphModule(graph))
    static = Graph()
    y = static.placeholder("y", TensorMeta((8,), np.dtype(np.float32), "cuda:0"))
    static.output(op.sin(y))
    assert not is_dynamic(GraphModule(static))
