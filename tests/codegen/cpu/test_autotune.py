"""pyjit/codegen/cpu/autotune.py: the C kernels' variants timed on the CPU (NOTE(cpu-autotune))."""

import os

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit import _C, config
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cpu import autotune, build
from pyjit.codegen.cpu.autotune import TunedKernel
from pyjit.codegen.cpu.renderer import kernel_variants, render_unit
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.utils import counters

F32 = np.float32


def kernels_of(build_graph, *metas, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build_graph(*inputs))
    return graph, schedule(graph).kernels


CASES = {
    "softmax rows": (lambda x: ops.softmax(x), (37, 1000)),
    "layer norm rows": (lambda x: ops.layer_norm(x, (1000,)), (37, 1000)),
    "column sums": (lambda x: ops.sum(x, axis=0), (999, 300)),
    "sum of everything": (lambda x: ops.sum(ops.exp(x)), (333, 700)),
    "pointwise": (lambda x: ops.add(ops.multiply(ops.sin(x), ops.cos(x)), ops.exp(ops.negative(x))), (1023, 513)),
}


@pytest.mark.parametrize("case", CASES)
def test_every_variant_computes_what_numpy_does(case):
    build_graph, shape = CASES[case]
    graph, (kernel,) = kernels_of(build_graph, TensorMeta(shape, F32))
    variants = kernel_variants(kernel)
    assert len(variants) >= 3 and next(iter(variants)) == kernel.name  # the default first
    library = build.load(render_unit([kernel], variants=True))
    x = np.random.default_rng(5).standard_normal(shape).astype(F32)
    expected = GraphModule(graph)(x)
    for name in variants:
        out = np.full(expected.shape, np.nan, F32)
        library.kernel(name, len(kernel.buffers), len(kernel.sizes))(x, out)
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-5, err_msg=name)


def test_the_variants_differ_in_threads_and_vector_width():
    _, (kernel,) = kernels_of(lambda x: ops.softmax(x), TensorMeta((64, 512), F32))  # under the work threshold
    variants = kernel_variants(kernel)
    assert "#pragma omp parallel" not in variants[kernel.name]
    assert kernel.name + "_t1" not in variants  # the same as the default: not timed twice
    assert "#pragma omp parallel for\n" in variants[kernel.name + "_tall"]
    assert variants[kernel.name + "_w256"].startswith('__attribute__((target("prefer-vector-width=256")))')


def test_max_autotune_chooses_a_static_kernel_at_compile_time_and_launches_it_from_c(tmp_path, monkeypatch):
    # NOTE(tune-at-compile): the choice is made on the example inputs while compiling, so the C launcher (not the glue) runs every call, the choice directly.
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    graph, _ = kernels_of(lambda x: ops.softmax(x), TensorMeta((16, 300), F32))
    module = GraphModule(graph)
    x = np.random.default_rng(6).standard_normal((16, 300)).astype(F32)
    before = counters["inductor"]["autotuned"]
    (compiled,) = compile_graphs([(module, [x])], autotune=True)
    assert counters["inductor"]["autotuned"] == before + 1
    assert isinstance(compiled, _C.Launcher)
    (name,) = [key for key in compiled.fallback.__globals__ if key.startswith("k_")]
    assert isinstance(compiled.fallback.__globals__[name], _C.Kernel)
    assert len(os.listdir(tmp_path / "kernels" / "autotune")) == 1
    np.testing.assert_allclose(compiled(x), module(x), rtol=1e-6, atol=1e-7)
    (again,) = compile_graphs([(module, [x])], autotune=True)
    np.testing.assert_allclose(again(x), module(x), rtol=1e-6, atol=1e-7)
    assert counters["inductor"]["autotuned"] == before + 1  # the choice came from disk


def test_a_symbolic_kernel_chooses_per_size():
    shape_env = ShapeEnv()
    rows = shape_env.create_symbol(8)
    graph, _ = kernels_of(lambda x: ops.softmax(x), TensorMeta((rows, 200), F32), shape_env=shape_env)
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [np.zeros((8, 200), F32)])], autotune=True)
    (name,) = [key for key in compiled.__globals__ if key.startswith("k_")]
    for count in (8, 3, 8):
        x = np.random.default_rng(count).standard_normal((count, 200)).astype(F32)
        np.testing.assert_allclose(compiled(x), module(x), rtol=1e-6, atol=1e-7)
    tuned = compiled.__globals__[name]
    assert isinstance(tuned, TunedKernel) and len(tuned.chosen) == 2


def test_variants_are_timed_in_turns_and_keep_their_best_round(tmp_path, monkeypatch):
    # A slow spell of the machine must slow every variant, not the one timed during it:
    # the default variant's first round is slow here, and it still wins on its best.
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    graph, (kernel,) = kernels_of(lambda x: ops.softmax(x), TensorMeta((16, 300), F32))
    variants = tuple(f"g0_{name}" for name in kernel_variants(kernel))  # compile_graphs' prefix
    timed = []
    slow_first_round = iter([1.0] + [0.1] * 100)

    def bench(function, args, calls, warmup):
        timed.append(function.name)
        return [next(slow_first_round) if function.name == variants[0] else 0.5] * calls

    monkeypatch.setattr(_C, "bench", bench)
    x = np.random.default_rng(6).standard_normal((16, 300)).astype(F32)
    (compiled,) = compile_graphs([(GraphModule(graph), [x])], autotune=True)
    assert timed == list(variants) * autotune.CPU_ROUNDS
    (name,) = [key for key in compiled.fallback.__globals__ if key.startswith("k_")]
    assert compiled.fallback.__globals__[name].name == variants[0]
