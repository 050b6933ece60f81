"""The CUDA renderer's kernels, run on the CPU (pyjit/codegen/cuda_emulation.py), equal eager.

The corpus is tests/codegen/test_compiled_ops.py's: every op's sample rows (as sampled,
with strided inputs, with symbolic sizes at two sizes), the special values of every
pointwise op, cast and reduction in every kernel dtype (NaN, infinities, signed zeros,
integer extremes), and the graphs of the benchmark workloads. All graphs go through the
inductor backend's "cuda-emulation" target (NOTE(targets)): the same schedule and glue
as on a GPU, one CUDA source for the whole corpus, compiled once by the host compiler.
Launches that reduce across a block use 64 threads a block (32 for the others) and at
most 3 blocks, so grid-stride loops step several times and block reductions cross warps;
the sizes are not multiples of the block.
"""

import dataclasses
import importlib.util
import pathlib
import sys

import numpy as np
import pytest
from codegen.test_compiled_ops import (SAMPLES, UNCOMPARABLE, VECTOR_MATH_OPS, assert_same_kind, dynamic_ok,
                                       resized, same_bits, special_graphs, tolerance, trace_dynamic)
from ops.test_registry import assert_same_values, strided, trace

import pyjit
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen import cuda_emulation, cuda_renderer, nvrtc
from pyjit.graph import GraphModule
from pyjit.ops import REGISTRY

pytestmark = [pytest.mark.cuda_emulation,
              pytest.mark.skipif(cuda_emulation.compiler() is None, reason="no host C++ compiler to emulate CUDA")]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sample_items():
    """(key, graph module, example inputs, input lists to run) for every sample row."""
    items = []
    for name, rows in SAMPLES.items():
        if name in UNCOMPARABLE:
            continue
        for index, sample in enumerate(rows):
            if sample.raises is not None:
                continue
            args, kwargs = sample.make()
            graph, inputs = trace(REGISTRY[name], args, kwargs)
            module = GraphModule(graph)
            items.append(((name, index, "sampled"), module, inputs, [inputs]))
            wide = [strided(x) for x in inputs]
            items.append(((name, index, "strided"), module, wide, [wide]))
            if dynamic_ok(name, sample):
                graph, inputs = trace_dynamic(REGISTRY[name], args, kwargs)
                bigger = trace(REGISTRY[name], *resized(sample, 3).make(seed=1))[1]
                items.append(((name, index, "dynamic"), GraphModule(graph), inputs, [inputs, bigger]))
    return items


def workload_items():
    """The graphs pyjit captures from the benchmark workloads (quick sizes)."""
    spec = importlib.util.spec_from_file_location("pyjit_bench_workloads", ROOT / "benchmarks" / "workloads.py")
    workloads = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = workloads
    spec.loader.exec_module(workloads)
    items = []
    for workload in workloads.WORKLOADS:
        case = workload.numpy(True)
        captured = []

        def record(graph_module, example_inputs, captured=captured):
            captured.append((graph_module, list(example_inputs)))
            return graph_module

        pyjit.reset()
        pyjit.compile(case.fn, backend=record)(*case.args)
        for position, (module, inputs) in enumerate(captured):
            if all(isinstance(x, (np.ndarray, int, float)) for x in inputs):
                items.append(((workload.name, position, "workload"), module, inputs, [inputs]))
    pyjit.reset()
    return items


@pytest.fixture(scope="module")
def corpus():
    """{key: (graph module, compiled, runs)} and the special-value cases, all compiled
    in one CUDA source."""
    items = sample_items() + workload_items()
    specials = special_graphs()
    compiled = compile_graphs([(module, inputs) for _, module, inputs, _ in items]
                              + [(module, inputs) for _, module, inputs in specials], target="cuda-emulation")
    cases = {key: (module, function, runs) for (key, module, _, runs), function in zip(items, compiled)}
    special = [(label, module, function, inputs) for (label, module, inputs), function
               in zip(specials, compiled[len(items):])]
    return cases, special


def test_sample_graphs_equal_eager(corpus):
    cases, _ = corpus
    failures, emulated = [], 0
    for key, (module, function, runs) in cases.items():
        if function is module:
            continue
        emulated += 1
        for inputs in runs:
            expected = module(*inputs)
            try:
                actual = function(*inputs)
                assert_same_kind(actual, expected)
                if isinstance(expected, list) and len({np.shape(part) for part in expected}) > 1:
                    for one, other in zip(actual, expected):
                        assert_same_values(one, other, tolerance(other))
                else:
                    assert_same_values(actual, expected, tolerance(expected))
            except AssertionError as error:
                failures.append(f"{key}: {str(error)[:300]}")
    assert failures == []
    assert emulated > 500  # the kernels computed them, not the eager fallback


def test_every_pointwise_op_and_reduction_is_emulated(corpus):
    cases, _ = corpus
    names = {name for name, rows in SAMPLES.items() if REGISTRY[name].category in ("pointwise", "reduction")}
    emulated = {key[0] for key, (module, function, _) in cases.items() if function is not module}
    assert sorted(names - emulated - set(UNCOMPARABLE)) == []


def test_workload_graphs_are_emulated(corpus):
    cases, _ = corpus
    workloads = {key[0] for key, (module, function, _) in cases.items()
                 if key[2] == "workload" and function is not module}
    assert {"chain", "softmax", "layer_norm", "gelu", "black_scholes"} <= workloads


def test_special_values_give_numpys_results(corpus):
    _, special = corpus
    mismatches, emulated = [], 0
    for label, module, function, inputs in special:
        if function is module:
            continue
        emulated += 1
        with np.errstate(all="ignore"):
            expected, actual = np.asarray(module(*inputs)), np.asarray(function(*inputs))
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, label
        same = same_bits(actual, expected, label.split("-")[0] in VECTOR_MATH_OPS)
        if not same.all():
            where = tuple(np.argwhere(~same)[0]) if expected.ndim else ()
            mismatches.append(f"{label} at {where}: inputs {[x[where] for x in inputs]}, "
                              f"NumPy {expected[where]!r}, kernel {actual[where]!r}")
    assert mismatches == []
    assert emulated > 700


# -- the same kernels through NVRTC (NOTE(nvrtc-check)) ---------------------------------------
def checked_kernels(corpus, symbolic: bool) -> list:
    """The kernels NVRTC compiles: those of the special values (every pointwise op, cast
    and reduction in every dtype), of the workloads, of each sample row as sampled, and
    with `symbolic`, of each row with symbolic sizes (64-bit indices over size
    parameters; the strided variants differ from them only by stride parameters).
    NVRTC on everything for every architecture would take minutes."""
    cases, special = corpus
    variants = ("sampled", "workload", "dynamic") if symbolic else ("sampled", "workload")
    functions = [function for key, (module, function, _) in cases.items() if key[2] in variants]
    functions += [function for _, module, function, _ in special]
    distinct = {}
    for kernel in (kernel for function in functions for kernel in getattr(function, "kernels", ())):
        distinct.setdefault(dataclasses.replace(kernel, name="k"), kernel)  # the same code under another name
    return list(distinct.values())


@pytest.mark.skipif(nvrtc.available() is None, reason="no NVRTC (pip install nvidia-cuda-nvrtc-cu12) and no nvcc")
@pytest.mark.parametrize(("arch", "symbolic"), [("sm_80", True), ("sm_90", False)])
def test_nvrtc_compiles_every_kernel_without_warnings(corpus, arch, symbolic):
    kernels = checked_kernels(corpus, symbolic)
    assert len(kernels) > 800 and (any(kernel.sizes for kernel in kernels) or not symbolic)
    ptx, log = nvrtc.compile_ptx(cuda_renderer.render_unit(kernels).source, arch, quick=True)
    assert "warning" not in log.lower(), log[:3000]
    assert ptx.count(".entry") >= len(kernels)
