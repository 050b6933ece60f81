"""The CUDA renderer's kernels, run on the CPU (pyjit/codegen/cuda/emulation.py), equal eager.

The corpus is tests/codegen/test_compiled_ops.py's: every op's sample rows (as sampled,
with strided inputs, with symbolic sizes at two sizes), the special values of every
pointwise op, cast and reduction in every kernel dtype (NaN, infinities, signed zeros,
integer extremes), and the graphs of the benchmark workloads. All graphs go through the
inductor backend's "cuda-emulation" target (NOTE(targets)): the same schedule and glue
as on a GPU, one CUDA source for the whole corpus, compiled once by the host compiler.
Launches that reduce across a block or a warp use 64 threads a block (32 for the others) and at
most 3 blocks, so grid-stride loops step several times and block reductions cross warps;
the sizes are not multiples of the block.
"""

import dataclasses
import functools
import importlib.util
import pathlib
import sys
import warnings

import numpy as np
import pytest
from codegen.test_compiled_ops import (KERNEL_DTYPES, LIBRARY_MATH_OPS, SAMPLES, UNCOMPARABLE, VECTOR_MATH_OPS,
                                       add_graph_case, assert_same_kind, dynamic_ok, resized, same_bits, special_graphs,
                                       special_value_mismatches, special_values, tolerance, trace_dynamic)
from ops.test_registry import assert_same_values, strided, trace

import pyjit
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cuda import emulation as cuda_emulation, renderer as cuda_renderer, nvrtc
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.ops import REGISTRY

pytestmark = [pytest.mark.cuda_emulation,
              pytest.mark.skipif(cuda_emulation.compiler() is None, reason="no host C++ compiler to emulate CUDA")]

ROOT = pathlib.Path(__file__).resolve().parents[3]


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
                        assert_same_values(one, other, sample_tolerance(other))
                else:
                    assert_same_values(actual, expected, sample_tolerance(expected))
            except AssertionError as error:
                failures.append(f"{key}: {str(error)[:300]}")
    assert failures == []
    assert emulated > 500  # the kernels computed them, not the eager fallback


def sample_tolerance(expected) -> float:
    """The compiled kernels' tolerance; float16 results (the statistics samples, over at
    most 6 rows) within 8 float16 eps: NumPy rounds a float16 sum over leading axes after
    each row, the kernel adds in double and rounds once (NOTE(column-split)), so they
    differ by NumPy's own error, rows * eps * the sum of magnitudes at most."""
    parts = expected if isinstance(expected, (list, tuple)) else [expected]
    if any(np.asarray(part).dtype == HALF for part in parts):
        return 8 * np.finfo(HALF).eps
    return tolerance(expected)


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
    mismatches, emulated = special_value_mismatches(special)
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


def source_of(source: str, function: str) -> str:
    """The text of `__global__` function `function` in a unit's source."""
    return source.split(f" {function}(", 1)[1].split("\n}\n", 1)[0]


@pytest.mark.skipif(nvrtc.available() is None, reason="no NVRTC (pip install nvidia-cuda-nvrtc-cu12) and no nvcc")
@pytest.mark.parametrize(("arch", "symbolic"), [("sm_80", True), ("sm_90", False)])
def test_nvrtc_compiles_every_kernel_without_warnings(corpus, arch, symbolic):
    kernels = checked_kernels(corpus, symbolic)
    assert len(kernels) > 800 and (any(kernel.sizes for kernel in kernels) or not symbolic)
    unit = cuda_renderer.render_unit(kernels)
    modes = {launch.mode for kernel in unit.kernels.values() for launch in kernel.launches}
    assert {"elements", "warps", "split", "finish", "column-split", "column-finish", "single"} <= modes
    assert "rows" in modes or not symbolic  # a row of symbolic length gets a block
    finishes = [source_of(unit.source, launch.function) for kernel in unit.kernels.values()
                for launch in kernel.launches if launch.mode == "column-finish"]
    assert any("pyjit_arg_combine<" in text for text in finishes)  # argmax/argmin split (NOTE(column-positions))
    ptx, log = nvrtc.compile_ptx(unit.source, arch, quick=True)
    assert "warning" not in log.lower(), log[:3000]
    assert ptx.count(".entry") >= len(kernels)


# -- float16 (NOTE(cuda-half)) ------------------------------------------------------------------
HALF = np.dtype(np.float16)
HALF_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0,
                        65504.0, -65504.0, 300.5, -300.5, 2.0**-24, 6.1e-5, 1e-3, 0.1, 11.3, -0.7], HALF)
HALF_REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")


def half_graphs():
    """(label, graph module, inputs): every pointwise op on float16 (binary ones over
    broadcast operands), float16 with weak scalars and other dtypes, casts to and from
    every kernel dtype, and every reduction over rows, columns, everything and a
    strided view, at sizes that are not multiples of a warp; a fused softmax."""
    cases = []
    add = functools.partial(add_graph_case, cases)

    rows, columns = HALF_VALUES[:, None], HALF_VALUES[None, :]  # broadcast, not copied
    for name, entry in REGISTRY.items():
        # float16 nextafter (and spacing) step through half's own values: eager (lowering.py).
        if entry.category == "pointwise" and name not in ("clip", "where", "astype", "round", "nextafter", "spacing"):
            add(name, entry, HALF_VALUES) or add(name, entry, rows, columns)
    add("add-weak-scalar", lambda x: REGISTRY["multiply"](REGISTRY["add"](x, 0.1), 3), HALF_VALUES)
    add("multiply-int8", REGISTRY["multiply"], HALF_VALUES, np.arange(-12, 13, dtype=np.int8))
    add("add-float32", REGISTRY["add"], HALF_VALUES, np.linspace(-2, 2, HALF_VALUES.size, dtype=np.float32))
    for dtype in KERNEL_DTYPES:
        add(f"astype-float16-{dtype}", lambda x, dtype=dtype: REGISTRY["astype"](x, dtype), HALF_VALUES)
        add(f"astype-{dtype}-float16", lambda x: REGISTRY["astype"](x, HALF), special_values(dtype))
    random = np.random.default_rng(0).normal(0, 3, (37, 45)).astype(HALF)
    for name in HALF_REDUCTIONS:
        add(f"{name}-all", REGISTRY[name], random)
        add(f"{name}-rows", lambda x, name=name: REGISTRY[name](x, axis=-1), random)
        add(f"{name}-columns", lambda x, name=name: REGISTRY[name](x, axis=0), random)
        add(f"{name}-strided", lambda x, name=name: REGISTRY[name](x, axis=-1), random[::2, 1::3])
        add(f"{name}-special", REGISTRY[name], HALF_VALUES)

    def softmax(x):
        shifted = REGISTRY["exp"](REGISTRY["subtract"](x, REGISTRY["max"](x, axis=-1, keepdims=True)))
        return REGISTRY["divide"](shifted, REGISTRY["sum"](shifted, axis=-1, keepdims=True))
    add("softmax", softmax, random)
    return cases


@pytest.fixture(scope="module")
def half_corpus():
    cases = half_graphs()
    compiled = compile_graphs([(module, inputs) for _, module, inputs in cases], target="cuda-emulation")
    return [(label, module, function, inputs) for (label, module, inputs), function in zip(cases, compiled)]


def half_mismatches(label: str, actual: np.ndarray, expected: np.ndarray, inputs: list) -> np.ndarray:
    """Where `actual` is outside what NOTE(cuda-half) promises against NumPy: the same
    bits for every op, cast, max/min/arg and logical reduction; within one float16 ulp
    where the math library is involved (glibc's or CUDA's float32 result and NumPy's
    differ by a few float32 ulps, which can round to neighbouring halves); sums and
    products within one float16 ulp plus the error of NumPy's float32 accumulation
    (n * float32 eps * the sum of magnitudes); sums over leading axes within one ulp plus
    rows * float16 eps * the sum of magnitudes, NumPy's own error there (it rounds to
    float16 after each row; the kernel adds in double: NOTE(column-split))."""
    same = same_bits(actual, expected, False)
    if expected.dtype != HALF:
        return ~same
    name = label.split("-")[0]
    ulp = np.spacing(np.abs(expected)).astype(np.float64)
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    if name in VECTOR_MATH_OPS + LIBRARY_MATH_OPS or name == "softmax":
        same |= error <= ulp * (2 if name == "softmax" else 1)
    if name in ("logaddexp", "logaddexp2"):
        # Composed of five ops, each rounded to float16 (NOTE(cuda-half)), where NumPy's
        # loop rounds once: within two float16 ulps of the larger input or of 1 (the
        # sum cancels where the result is small), as docs/ops.md says.
        larger = np.maximum(np.maximum(*np.broadcast_arrays(*(np.abs(x.astype(np.float64)) for x in inputs))), 1.0)
        same |= error <= 2 * np.spacing(larger.astype(HALF)).astype(np.float64)
    if name in ("sum", "prod"):
        x = np.abs(inputs[0].astype(np.float64))
        magnitude = x.sum(axis=-1 if "rows" in label or "strided" in label else 0 if "columns" in label else None)
        if name == "prod":
            magnitude = np.abs(expected.astype(np.float64))
        same |= error <= ulp + x.size * np.finfo(np.float32).eps * magnitude
        if "columns" in label:  # NumPy rounds to float16 after each row (NOTE(column-split))
            same |= error <= ulp + x.shape[0] * np.finfo(HALF).eps * magnitude
    return ~same


def test_float16_kernels_give_numpys_results(half_corpus):
    failures, compiled = [], 0
    for label, module, function, inputs in half_corpus:
        if function is module:
            failures.append(f"{label}: not compiled")
            continue
        compiled += 1
        with np.errstate(all="ignore"):
            expected, actual = np.asarray(module(*inputs)), np.asarray(function(*inputs))
            assert actual.dtype == expected.dtype and actual.shape == expected.shape, label
            wrong = half_mismatches(label, actual, expected, inputs)
        if wrong.any():
            where = tuple(np.argwhere(wrong)[0]) if expected.ndim else ()
            failures.append(f"{label} at {where}: NumPy {expected[where]!r}, kernel {actual[where]!r}")
    assert failures == []
    assert compiled > 80


def test_float16_nextafter_and_spacing_run_eagerly_with_numpys_steps():
    cases = []
    add_graph_case(cases, "nextafter", REGISTRY["nextafter"], HALF_VALUES, HALF_VALUES[::-1].copy())
    add_graph_case(cases, "spacing", REGISTRY["spacing"], HALF_VALUES)
    compiled = compile_graphs([(module, inputs) for _, module, inputs in cases], target="cuda-emulation")
    for (_, module, inputs), function in zip(cases, compiled, strict=True):
        assert function is module  # NumPy's float16 loops, not a float computation rounded
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(function(*inputs), np.nextafter(*inputs) if len(inputs) == 2
                                          else np.spacing(*inputs))


def test_float16_runs_eagerly_on_the_cpu_target():
    """NOTE(half-lowering): the C renderer does not round each value to float16."""
    label, module, inputs = half_graphs()[0]
    assert compile_graphs([(module, inputs)], target="cpu")[0] is module


@pytest.mark.skipif(nvrtc.available() is None, reason="no NVRTC (pip install nvidia-cuda-nvrtc-cu12) and no nvcc")
def test_nvrtc_compiles_the_float16_kernels_without_warnings(half_corpus):
    kernels = [kernel for _, module, function, _ in half_corpus for kernel in getattr(function, "kernels", ())]
    source = cuda_renderer.render_unit(kernels).source
    assert "pyjit_half *__restrict__" in source
    for arch in ("sm_80", "sm_90"):
        ptx, log = nvrtc.compile_ptx(source, arch, quick=True)
        assert "warning" not in log.lower(), log[:3000]
        assert ptx.count(".entry") >= len(kernels) and "cvt.rn.f16.f32" in ptx


# -- split column reductions (NOTE(column-split)) ----------------------------------------------
COLUMN_REDUCTIONS = sorted(name for name, entry in REGISTRY.items() if entry.category == "reduction") + ["mean", "var"]
# (shape, axis): no rows, one row, fewer rows than a chunk, chunks that do not divide the
# rows (nor the block), a middle axis, two leading axes, and too many columns to split.
COLUMN_SHAPES = [((0, 5), 0), ((1, 5), 0), ((20, 7), 0), ((33, 7), 0), ((1000, 3), 0), ((4, 300, 5), 1),
                 ((30, 40, 6), (0, 1))]
WIDE = ((40, 33000), 0)


def column_inputs(shape, dtype) -> list:
    """(label, array): values in every layout a column reduction reads: C order, F order,
    a strided view, a row broadcast over the rows (stride 0), and NaN/infinities in
    three columns, and where there are five, NaN in the first and last rows of one and
    in the last row alone of another, behind -inf (floats); C order alone for the shapes
    of no or one row."""
    random = np.random.default_rng(len(shape) + shape[0])
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        base = random.random(shape) < 0.7
    elif dtype.kind == "i":
        base = random.integers(-3, 4, shape).astype(dtype)
    else:  # near 1 in magnitude, so products stay finite
        base = (random.choice([-1.0, 1.0], shape) * random.uniform(0.5, 1.5, shape)).astype(dtype)
    wide = np.empty(tuple(2 * n + 1 for n in shape), dtype)
    wide[tuple(slice(1, None, 2) for _ in shape)] = base
    if shape[0] < 2:
        return [("C", base)]
    cases = [("C", base), ("F", np.asfortranarray(base)), ("strided", wide[tuple(slice(1, None, 2) for _ in shape)]),
             ("broadcast", np.broadcast_to(base[:1], shape))]
    if dtype.kind == "f" and shape[0] > 2 and shape[-1] >= 3:
        special = base.copy()
        special[shape[0] // 2, ..., 0] = np.nan
        special[1, ..., 1] = np.inf
        special[0, ..., 2], special[-1, ..., 2] = np.inf, -np.inf
        if shape[-1] >= 5:  # the first NaN wins argmax and argmin, wherever the chunks cut
            special[0, ..., 3], special[-1, ..., 3] = np.nan, np.nan
            special[shape[0] // 3, ..., 4], special[-1, ..., 4] = -np.inf, np.nan
        cases.append(("special", special))
    return cases


def column_graphs():
    """(label, graph module, inputs, axis) for every reduction over leading axes."""
    cases = []
    for name in COLUMN_REDUCTIONS:
        dtypes = ("bool", "int32", "float32") if name in ("any", "all") else ("int32", "float32", "float64", "float16")
        for (shape, axis), dtype in [(shape, dtype) for shape in COLUMN_SHAPES for dtype in dtypes]:
            if name.startswith("arg") and isinstance(axis, tuple):
                continue
            for layout, x in column_inputs(shape, dtype):
                graph = Graph()
                node = graph.placeholder("x", TensorMeta(x.shape, x.dtype))
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        graph.output(REGISTRY[name](node, axis=axis))
                except ValueError:  # max, min, argmax, argmin of no rows raise, as in NumPy
                    continue
                cases.append((f"{name}-{dtype}-{shape}-{layout}", GraphModule(graph), [x], axis))
    graph = Graph()
    graph.output(REGISTRY["sum"](graph.placeholder("x", TensorMeta(WIDE[0], np.dtype(np.float32))), axis=0))
    wide = np.random.default_rng(3).normal(size=WIDE[0]).astype(np.float32)
    cases.append((f"sum-float32-{WIDE[0]}-C", GraphModule(graph), [wide], WIDE[1]))
    return cases


@pytest.fixture(scope="module")
def column_corpus():
    cases = column_graphs()
    compiled = compile_graphs([(module, inputs) for _, module, inputs, _ in cases], target="cuda-emulation")
    return [(*case, function) for case, function in zip(cases, compiled)]


def column_mismatches(name: str, actual: np.ndarray, expected: np.ndarray, x: np.ndarray, axis) -> np.ndarray:
    """Where `actual` is outside what NOTE(column-split) promises: NumPy's bits for every
    integer result, max, min, argmax, argmin, any and all; a float sum, mean, var or prod
    (rows folded in chunks, then the chunks) within rows * eps * the sum of magnitudes
    (NumPy's own error bound for adding row after row, twice), relative for products."""
    same = same_bits(actual, expected, False)
    if expected.dtype.kind != "f" or name not in ("sum", "mean", "var", "prod"):
        return ~same
    eps, rows = np.finfo(expected.dtype).eps, int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    magnitude = np.abs(expected.astype(np.float64))
    if name in ("sum", "mean"):
        magnitude = np.abs(x.astype(np.float64)).sum(axis=axis) / (rows if name == "mean" else 1)
    elif name == "var":
        magnitude = magnitude + np.abs(x[np.isfinite(x)].astype(np.float64)).max(initial=0.0) ** 2
    return ~(same | (error <= 2 * rows * eps * magnitude + np.spacing(np.abs(expected))))


def test_leading_axis_reductions_are_split_and_give_numpys_results(column_corpus):
    failures, split = [], set()
    for label, module, inputs, axis, function in column_corpus:
        if function is module:
            failures.append(f"{label}: not compiled")
            continue
        launches = [launch.mode for kernel in cuda_renderer.render_unit(function.kernels).kernels.values()
                    for launch in kernel.launches]
        if "column-split" in launches:
            split.add(label.split("-")[0])
        with np.errstate(all="ignore"):
            expected, actual, again = np.asarray(module(*inputs)), np.asarray(function(*inputs)), function(*inputs)
            assert actual.dtype == expected.dtype and actual.shape == expected.shape, label
            assert actual.tobytes() == np.asarray(again).tobytes(), f"{label}: another run gave other bits"
            wrong = column_mismatches(label.split("-")[0], actual, expected, inputs[0], axis)
        if wrong.any():
            where = tuple(np.argwhere(wrong)[0]) if expected.ndim else ()
            failures.append(f"{label} at {where}: NumPy {expected[where]!r}, kernel {actual[where]!r}")
    assert failures == []
    assert split == set(COLUMN_REDUCTIONS)  # argmax and argmin too (NOTE(column-positions))


def test_a_column_split_gives_the_same_bits_for_any_block_and_grid():
    """The chunks come from the sizes alone and each column's partials are folded by one
    warp in lane order, so neither the block size nor the grid changes a bit."""
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((1000, 3), np.dtype(np.float32)))
    graph.output(REGISTRY["sum"](x, axis=0))
    (kernel,) = schedule(graph).kernels
    unit = cuda_renderer.render_unit([kernel])
    assert [launch.mode for launch in unit.kernels[kernel.name].launches] == ["column-split", "column-finish"]
    assert "atomic" not in unit.source
    emulated = cuda_emulation.Emulated(unit)
    values = np.random.default_rng(5).normal(size=(1000, 3)).astype(np.float32) * 1e4
    results = set()
    for block, max_grid in ((32, 1), (64, 3), (128, 2), (96, 40)):
        out = np.zeros(3, np.float32)
        emulated.run(kernel.name, [values, out], block=block, max_grid=max_grid)
        results.add(out.tobytes())
        bound = 2 * 1000 * np.finfo(np.float32).eps * np.abs(values).sum(axis=0)
        assert (np.abs(out - values.sum(axis=0)) <= bound).all()
    assert len(results) == 1


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_a_split_position_is_numpys_first_extreme_for_any_block_and_grid(name):
    """NOTE(column-positions): ties and NaN in several chunks of a column; the first
    extreme (the first NaN) is NumPy's answer whatever the grouping."""
    values = np.random.default_rng(6).integers(-2, 3, (1000, 6)).astype(np.float32)
    values[:, 1] = 2.0  # one value everywhere: row 0
    values[[40, 700], 2], values[[999], 3] = np.nan, np.nan  # in a middle chunk, in the last
    values[[3, 500], 4], values[[10, 900], 5] = np.inf, -np.inf
    graph = Graph()
    graph.output(REGISTRY[name](graph.placeholder("x", TensorMeta(values.shape, values.dtype)), axis=0))
    (kernel,) = schedule(graph).kernels
    unit = cuda_renderer.render_unit([kernel])
    assert [launch.mode for launch in unit.kernels[kernel.name].launches] == ["column-split", "column-finish"]
    assert "atomic" not in unit.source
    emulated = cuda_emulation.Emulated(unit)
    expected = getattr(np, name)(values, axis=0)
    for block, max_grid in ((32, 1), (64, 3), (128, 2), (96, 40)):
        out = np.full(6, -7, np.int64)
        emulated.run(kernel.name, [values, out], block=block, max_grid=max_grid)
        assert out.tolist() == expected.tolist(), (block, max_grid)
