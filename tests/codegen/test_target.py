"""pyjit/codegen/target.py: which target compiles a graph, and what a CUDA graph does
on a machine without CuPy (the real GPU path: tests/gpu/)."""

import importlib.util

import numpy as np
import pytest

import pyjit
from pyjit.backends import inductor as inductor_module
from pyjit.backends.inductor import compile_graphs, mode_options
from pyjit.codegen import CpuTarget, CudaEmulationTarget, CudaTarget, graph_device, target_for
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.ops.registry import op


def sine_graph(device="cpu"):
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((5,), np.dtype(np.float32), device))
    graph.output(op.sin(x))
    return GraphModule(graph)


def test_a_graph_of_gpu_arrays_goes_to_the_cuda_target():
    assert graph_device(sine_graph("cuda:0").graph) == "cuda:0"
    assert target_for(sine_graph("cuda:0").graph) is CudaTarget
    assert target_for(sine_graph().graph) is CpuTarget
    assert CudaTarget.accepts("cuda:1") and not CudaTarget.accepts("cpu")
    assert CudaEmulationTarget.accepts("cpu")  # it runs CUDA kernels on NumPy arrays


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_without_cupy_a_cuda_graph_runs_eagerly_with_a_warning(monkeypatch):
    monkeypatch.setattr(inductor_module, "_warned_no_compiler", False)
    module = sine_graph("cuda:0")
    with pytest.warns(UserWarning, match="need CuPy"):
        (compiled,) = compile_graphs([(module, [])])
    assert compiled is module


def test_the_emulation_target_computes_like_the_cpu_one():
    module = sine_graph()
    (emulated,) = compile_graphs([(module, [np.zeros(5, np.float32)])], target="cuda-emulation")
    assert emulated is not module
    assert "__global__" in emulated.source
    x = np.linspace(-3, 3, 5, dtype=np.float32)
    np.testing.assert_allclose(emulated(x), np.sin(x), rtol=1e-6)


@pytest.mark.parametrize(("mode", "cpu", "cuda"), [
    ("default", {}, {}),
    ("reduce-overhead", {"cuda_graphs": False, "reuse_buffers": True}, {"cuda_graphs": True, "reuse_buffers": False}),
    ("max-autotune", {"autotune": True, "cuda_graphs": False, "reuse_buffers": True},
     {"autotune": True, "cuda_graphs": True, "reuse_buffers": False}),
    ("max-autotune-no-cudagraphs", {"autotune": True, "cuda_graphs": False, "reuse_buffers": False},
     {"autotune": True, "cuda_graphs": False, "reuse_buffers": False}),
])
def test_modes_say_what_they_do_per_device(mode, cpu, cuda):
    assert pyjit.list_mode_options(mode, device="cpu") == cpu
    assert pyjit.list_mode_options(mode, device="cuda") == cuda == mode_options(mode, "cuda:0")
    assert set(pyjit.list_mode_options(mode)) == set(cuda)


def test_an_unknown_device_is_refused():
    with pytest.raises(RuntimeError, match="Unrecognized device='tpu'"):
        pyjit.list_mode_options("default", device="tpu")
