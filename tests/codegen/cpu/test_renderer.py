"""pyjit/codegen/cpu/renderer.py: the C text of kernels, and what it computes.

Vector math is checked against the promise docs/codegen.md publishes (NOTE(vector-math-
accuracy)): within 4 ulp of the exact result, on each x86-64 level this CPU runs.
"""

import shutil
import subprocess

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit import _C, config
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cpu import build
from pyjit.codegen.cfamily.dialect import index_text
from pyjit.codegen.cfamily.literals import float_literal, literal
from pyjit.codegen.cfamily.vector_math import VECTOR_MATH, VECTOR_MATH_ULPS
from pyjit.codegen.cpu.renderer import (APART_CHECKED_BELOW, PARALLEL_MIN_WORK, PRELUDE, TILE, kernel_variants,
                                        render_kernel, render_unit)
from pyjit.codegen.ir.index import Index
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta

F32 = np.float32


def kernel_of(build, *metas, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    (kernel,) = schedule(graph).kernels
    return kernel


def test_a_chain_of_thousands_of_ops_is_one_temporary_each_at_the_default_recursion_limit():
    """NOTE(flat-walks)."""
    def long_chain(x):
        for step in range(5000):
            x = ops.multiply(x, 0.5) if step % 2 == 0 else ops.add(x, 1.0)
        return x

    source = render_kernel(kernel_of(long_chain, TensorMeta((64,), F32)))
    assert source.count("const float t") == 1 + 5000  # the load, then each op
    assert "const float t5000 = t4999 + " in source


def test_vector_math_is_declared_simd_for_both_precisions():
    for function in VECTOR_MATH.values():
        for name in (function, function + "f"):
            declaration = next(line for line in PRELUDE.splitlines() if f" {name}(" in line)
            previous = PRELUDE.splitlines()[PRELUDE.splitlines().index(declaration) - 1]
            assert previous == "#pragma omp declare simd notinbranch"
    assert "math.h" not in PRELUDE  # the builtins and our declarations are all it uses


def test_a_large_elementwise_kernel_is_a_parallel_vector_loop():
    text = render_kernel(kernel_of(lambda x: ops.sin(x), TensorMeta((1 << 20,), F32)))
    assert "#pragma omp parallel for simd\n" in text
    assert "sinf(" in text


def test_a_small_kernel_stays_on_one_thread():
    text = render_kernel(kernel_of(lambda x: ops.add(x, 1.0), TensorMeta((100,), F32)))
    assert "parallel" not in text and "#pragma omp simd" in text


def test_a_middling_loop_goes_on_threads_only_while_the_team_is_apart():
    """NOTE(stacked-team): below APART_CHECKED_BELOW a stacked team runs the serial copy;
    from there on the loop always goes on threads."""
    middling = render_kernel(kernel_of(lambda x: ops.add(x, 1.0), TensorMeta((PARALLEL_MIN_WORK,), F32)))
    _, branches = middling.split("if (pyjit_team_apart_here()) {\n", 1)
    parallel, serial = branches.split("} else {\n", 1)
    assert "#pragma omp parallel" in parallel and "parallel" not in serial and "#pragma omp simd" in serial
    large = render_kernel(kernel_of(lambda x: ops.add(x, 1.0), TensorMeta((APART_CHECKED_BELOW,), F32)))
    assert "pyjit_team_apart_here()" not in large and "#pragma omp parallel" in large


def parallel_and_serial_copies(text: str, work: str) -> tuple[str, str]:
    """The two branches NOTE(serial-copy) renders for a symbolic amount of `work`: on
    threads from PARALLEL_MIN_WORK, when the team is apart below APART_CHECKED_BELOW
    (NOTE(stacked-team))."""
    condition = (f"({work}) >= {PARALLEL_MIN_WORK} && "
                 f"(({work}) >= {APART_CHECKED_BELOW} || pyjit_team_apart_here())")
    _, parallel_and_serial = text.split(f"if ({condition}) {{\n", 1)
    parallel, serial = parallel_and_serial.split("} else {\n", 1)
    return parallel, serial


def symbolic_cases():
    """(name, build, shape, condition, sizes at and around the threshold): an elementwise
    loop, a reduction over every axis, and a columnar reduction (one team region)."""
    env = ShapeEnv()
    s0, s1 = env.create_symbol(10), env.create_symbol(20)
    edge = PARALLEL_MIN_WORK
    return env, [
        ("add", lambda x: ops.add(x, 1.0), (s0,), "s0", [(edge - 1,), (edge,), (edge + 1,), (16,)]),
        ("sum", lambda x: ops.sum(x), (s0,), "s0", [(edge - 1,), (edge,), (edge + 1,)]),
        ("column sum", lambda x: ops.sum(x, axis=0), (s0, s1), "s1 + s0*s1",
         [(1022, 512), (1023, 512), (1024, 512), (3, 7)])]


def test_a_symbolic_size_renders_a_parallel_and_a_serial_copy():
    """NOTE(serial-copy): below the threshold a loop runs with no OpenMP region at all."""
    env, cases = symbolic_cases()
    for name, build_graph, shape, condition, _ in cases:
        text = render_kernel(kernel_of(build_graph, TensorMeta(shape, F32), shape_env=env))
        parallel, serial = parallel_and_serial_copies(text, condition)
        assert "#pragma omp parallel" in parallel, name
        assert "parallel" not in serial and "#pragma omp simd" in serial, name
        assert "if(" not in text, name


def test_the_parallel_and_serial_copies_agree_with_numpy_around_the_threshold():
    env, cases = symbolic_cases()
    rng = np.random.default_rng(19)
    for name, build_graph, shape, _, sizes in cases:
        graph = Graph(shape_env=env)
        graph.output(build_graph(graph.placeholder("x", TensorMeta(shape, F32))))
        module = GraphModule(graph)
        (compiled,) = compile_graphs([(module, [np.zeros(sizes[0], F32)])])
        for size in sizes:
            x = rng.standard_normal(size).astype(F32)
            if name == "sum":  # accumulated in double, rounded to float32 once ("Summation order")
                np.testing.assert_allclose(compiled(x), x.sum(dtype=np.float64), rtol=2**-22, atol=1e-4)
            else:  # elementwise, and a column sum row after row: NumPy's bits on either copy
                np.testing.assert_array_equal(compiled(x), module(x), err_msg=f"{name} at {size}")


def transposed_add(x, y):
    return ops.add(ops.transpose(x), y)


def test_a_nest_reading_across_its_innermost_loop_runs_in_tiles():
    """NOTE(transposed-tiles): x.T read a column at a time is tiled; a row-wise nest is not."""
    text = render_kernel(kernel_of(transposed_add, TensorMeta((4096, 4096), F32), TensorMeta((4096, 4096), F32)))
    assert "#pragma omp parallel for collapse(2)\n" in text and f"i1_tile += {TILE})" in text
    assert "_tile" not in render_kernel(kernel_of(lambda x, y: ops.add(x, y), TensorMeta((4096, 4096), F32),
                                                  TensorMeta((4096, 4096), F32)))
    assert "_tile" not in render_kernel(kernel_of(transposed_add, TensorMeta((4096, 4096), F32),
                                                  TensorMeta((4096, 4096), F32)), tile=0)


@pytest.mark.parametrize("shape", [(4096, 4096), (37, 53), (3, 1000, 17), (1, 16)])
def test_tiled_nests_store_numpys_bits_at_every_edge(shape):
    """Sides that are not multiples of the tile, a batch loop outside the tiles, and
    both the threaded and the serial copy (the smaller shapes are under the threshold)."""
    def build_graph(x, y):
        return ops.multiply(ops.swapaxes(x, -1, -2), y) if len(shape) == 3 else transposed_add(x, y)

    swapped = (*shape[:-2], shape[-1], shape[-2])
    graph = Graph()
    graph.output(build_graph(graph.placeholder("x", TensorMeta(swapped, F32)),
                             graph.placeholder("y", TensorMeta(shape, F32))))
    module = GraphModule(graph)
    rng = np.random.default_rng(23)
    x, y = rng.standard_normal(swapped).astype(F32), rng.standard_normal(shape).astype(F32)
    (compiled,) = compile_graphs([(module, [x, y])])
    assert any("_tile +=" in render_kernel(kernel) for kernel in compiled.kernels) == (shape[-2] > 1)
    np.testing.assert_array_equal(compiled(x, y), module(x, y))


def test_max_autotune_also_times_the_nest_untiled_and_in_larger_tiles():
    transposed = kernel_of(transposed_add, TensorMeta((4096, 4096), F32), TensorMeta((4096, 4096), F32))
    names = kernel_variants(transposed)
    assert {f"{transposed.name}_untiled", f"{transposed.name}_tile32"} <= set(names)
    assert "i1_tile += 32)" in names[f"{transposed.name}_tile32"]
    plain = kernel_of(lambda x, y: ops.add(x, y), TensorMeta((4096, 4096), F32), TensorMeta((4096, 4096), F32))
    assert not any(name.endswith(("_untiled", "_tile32")) for name in kernel_variants(plain))  # the same C


def test_row_kernels_reduce_with_simd_clauses_inside_a_parallel_row_loop():
    text = render_kernel(kernel_of(lambda x: ops.softmax(x), TensorMeta((4096, 1024), F32)))
    assert text.count("#pragma omp parallel for") == 1
    assert "reduction(max:acc_max_acc) reduction(|:acc_max_nan)" in text
    assert "double acc_sum_acc = 0x0.0p+0;" in text  # float32 sums accumulate in double
    assert "reduction(+:acc_sum_acc)" in text


def test_a_middle_axis_reduction_runs_its_batch_outermost_on_threads():
    """NOTE(leading-kept-dims): each thread walks its own rows of the batch, no team."""
    text = render_kernel(kernel_of(lambda x: ops.std(x, axis=1), TensorMeta((64, 2048, 64), F32)))
    assert "omp for" not in text and text.count("#pragma omp parallel for\n") == 1
    outer = text.index("#pragma omp parallel for\n")
    assert text.index("for (int64_t i0 = 0;", outer) < text.index("for (int64_t r1g = 0;", outer)


def test_symbolic_sizes_still_run_the_batch_outermost():
    env = ShapeEnv()
    batch, rows = env.create_symbol(8), env.create_symbol(300)
    text = render_kernel(kernel_of(lambda x: ops.sum(x, axis=1), TensorMeta((batch, rows, 40), F32), shape_env=env))
    parallel, _ = parallel_and_serial_copies(text, "40*s0 + 40*s0*s1")
    assert "omp for" not in text and parallel.lstrip().startswith("#pragma omp parallel for\n")


def test_a_leading_axis_reduction_keeps_the_team_of_column_slices():
    for meta in (TensorMeta((2001, 512), F32), TensorMeta((2001, 8, 64), F32)):
        text = render_kernel(kernel_of(lambda x: ops.sum(x, axis=0), meta))
        assert "#pragma omp parallel\n" in text and "#pragma omp for simd" in text


def test_accumulations_combine_four_rows_per_pass_then_the_rest():
    """NOTE(unrolled-accumulation): the accumulator is read and written once per 4 rows."""
    env = ShapeEnv()
    rows = env.create_symbol(2001)
    for meta in (TensorMeta((2001, 512), F32), TensorMeta((rows, 512), F32)):
        text = render_kernel(kernel_of(lambda x: ops.max(x, axis=0), meta, shape_env=env))
        grouped = text[text.index("r0g = 0"):text.index("r0t = 0")]
        assert grouped.count("b0[") == 4 and grouped.count("b1[") == 2
        assert "r0g < 500;" in text or "r0g < ((s0) / (4));" in text


def test_a_strided_input_keeps_the_team_form():
    """Strides known only at run time cannot say which dim walks memory farther."""
    graph = Graph()
    graph.output(ops.sum(graph.placeholder("x0", TensorMeta((64, 2048, 64), F32)), axis=1))
    (kernel,) = schedule(graph, {"x0": "strided"}).kernels
    assert "#pragma omp parallel\n" in render_kernel(kernel)


def test_argmax_is_two_vector_passes_over_the_row():
    """NOTE(two-pass-positions): the extreme value, then its first position, each an
    `omp simd` reduction (not one branchy serial loop)."""
    text = render_kernel(kernel_of(lambda x: ops.argmax(x, axis=1), TensorMeta((4, 8), F32)))
    assert "#pragma omp simd reduction(max:acc_argmax_best) reduction(|:acc_argmax_nan)" in text
    assert "#pragma omp simd reduction(min:acc_argmax_acc)" in text
    assert "if (" not in text


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_positions_match_numpy_on_ties_nans_signed_zeros_and_infinities(kind, dtype):
    """Rows of a (rows, 37) array and the whole array (positions in C order over two
    dims), each row built to have ties, and for floats NaNs, -0.0 next to 0.0, and rows
    of only one infinity."""
    rng = np.random.default_rng(7)
    values = rng.integers(0, 4, size=(9, 37)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[1, [5, 20]] = np.nan
        values[2] = 0.0
        values[2, 3] = -0.0
        values[3], values[4] = np.inf, -np.inf
        values[5, 36] = np.nan
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(values.shape, values.dtype))
    graph.output((getattr(ops, kind)(x, axis=1), getattr(ops, kind)(x)))
    (compiled,) = compile_graphs([(GraphModule(graph), [values])])
    rows, whole = compiled(values)
    np.testing.assert_array_equal(rows, getattr(np, kind)(values, axis=1))
    assert whole == getattr(np, kind)(values)


def test_positions_over_threads_find_the_first_extreme_of_the_whole_array():
    """Over PARALLEL_MIN_WORK elements both passes run on threads: the smallest position
    still wins, whichever thread found it."""
    values = np.full((PARALLEL_MIN_WORK // 512 + 3, 512), 7.0, F32)
    values[-2, 500] = values[-1, 3] = 9.0
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(values.shape, F32))
    graph.output((ops.argmax(x), ops.argmin(x)))
    (compiled,) = compile_graphs([(GraphModule(graph), [values])])
    text = render_kernel(kernel_of(lambda x: ops.argmax(x), TensorMeta(values.shape, F32)))
    assert "parallel for simd reduction(min:acc_argmax_acc)" in text
    assert compiled(values) == (np.argmax(values), np.argmin(values))
    values[-3, 1] = values[-1, 0] = np.nan
    assert compiled(values) == (np.argmax(values), np.argmin(values))


def test_bool_temporaries_are_int32_so_short_mixed_rows_vectorize():
    """NOTE(bool-temporaries): the one-hot row of k-means, `labels[:, None] == arange(32)`
    cast to float32, holds its comparison in an int32_t, not a one-byte uint8_t; bool
    arrays are still loaded and stored as bytes."""
    def one_hot(labels, classes):
        return ops.astype(ops.equal(ops.reshape(labels, (64, 1)), classes), np.float32)

    text = render_kernel(kernel_of(one_hot, TensorMeta((64,), np.int64), TensorMeta((32,), np.int64)))
    assert "const int32_t t" in text and "const uint8_t t" not in text
    masked = render_kernel(kernel_of(lambda x, m: ops.where(m, x, 0.0), TensorMeta((64,), F32),
                                     TensorMeta((64,), np.bool_)))
    assert "const uint8_t *restrict" in masked and "const int32_t t" in masked


@pytest.mark.parametrize("build", [lambda x: ops.softmax(x), lambda x: ops.min(x, axis=1),
                                   lambda x: ops.argmax(x, axis=1)])
def test_the_nan_flag_of_a_float_extreme_is_an_int32(build):
    """NOTE(bool-temporaries): the flag beside a float max/min (softmax's row max) or
    argmax/argmin is an int32_t, so its pass runs at the floats' vector length."""
    text = render_kernel(kernel_of(build, TensorMeta((4096, 1024), F32)))
    assert "int32_t acc_" in text and "_nan = 0;" in text and "uint8_t" not in text


def test_softmax_rows_with_nan_and_infinities_match_numpy():
    """The row max's NaN flag: a NaN anywhere in a row makes the row NaN, an infinity
    gives NumPy's NaN or one-hot row; the other rows are unaffected."""
    values = np.random.default_rng(3).standard_normal((9, 1000)).astype(F32)
    values[0, 0] = values[1, 517] = values[2, 999] = np.nan
    values[3, 40], values[4, 41] = np.inf, -np.inf
    values[5] = -np.inf
    values[6, [3, 900]] = np.inf
    graph = Graph()
    graph.output(ops.softmax(graph.placeholder("x", TensorMeta(values.shape, F32))))
    (compiled,) = compile_graphs([(GraphModule(graph), [values])])
    with np.errstate(invalid="ignore"):
        shifted = np.exp(values - values.max(axis=-1, keepdims=True))
        expected = shifted / shifted.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(compiled(values), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("value", "dtype", "text"), [
    (0.1, np.float64, "0x1.999999999999ap-4"), (float(np.float32(0.1)), F32, "0x1.99999a0000000p-4f"),
    (-0.0, np.float64, "-0x0.0p+0"), (float("inf"), F32, "__builtin_inff()"),
    (float("-inf"), np.float64, "-__builtin_inf()"), (float("nan"), F32, '__builtin_nanf("")')])
def test_float_literals_are_exact(value, dtype, text):
    assert float_literal(value, np.dtype(dtype)) == text


def test_integer_literals_keep_their_type():
    assert literal(-(1 << 63), np.dtype(np.int64)) == "(-9223372036854775807LL - 1)"
    assert literal(1 << 63, np.dtype(np.uint64)) == "9223372036854775808ULL"
    assert literal(-3, np.dtype(np.int8)) == "((int8_t)-3)"
    assert literal(True, np.dtype(bool)) == "1"


def test_index_text_is_int64_arithmetic():
    i, s = Index.name("i0"), Index.name("s0")
    assert index_text(i * s * 3 - 1) == "3*i0*s0 - 1"
    assert index_text(i * (1 << 40)) == "1099511627776LL*i0"
    assert index_text(i.floordiv(s) + i.mod(4)) == "((i0) / (s0)) + ((i0) % (4))"


# -- accuracy of vector math (NOTE(vector-math-accuracy)) --------------------------------
SIZE = 1 << 16
RANGES = {  # op: (float32 inputs, float64 inputs)
    "exp": ((-87, 88), (-700, 700)), "expm1": ((-87, 88), (-700, 700)), "log": ("log", "log"),
    "log1p": ((-0.999, 1e3), (-0.999, 1e3)), "sin": ((-1e4, 1e4),) * 2, "cos": ((-1e4, 1e4),) * 2,
    "tan": ((-1e3, 1e3),) * 2, "sinh": ((-88, 88),) * 2, "cosh": ((-88, 88),) * 2, "tanh": ((-20, 20),) * 2,
    "arcsin": ((-1, 1),) * 2, "arccos": ((-1, 1),) * 2, "arctan": ((-1e4, 1e4),) * 2, "erf": ((-6, 6),) * 2,
    "sqrt": ("log", "log"), "arctan2": ((-1e3, 1e3),) * 2, "power": ((0, 30),) * 2,
}
# The x86-64 levels kernels are checked on: the SSE, AVX2 and AVX-512 variants of glibc's
# vector math, whose results differ in the last bits, each run where this CPU can. A
# level's /proc/cpuinfo flags: the ones it adds that a CPU of the level below lacks.
LEVELS = {"x86-64-v2": ("sse4_2", "popcnt", "ssse3"), "x86-64-v3": ("avx2", "fma", "bmi2", "movbe"),
          "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")}
MARCHES = ["native", *LEVELS]
# The exact results are computed one precision up: float32 inputs in float64, float64
# inputs in x86's 80-bit long double, each far within a hundredth of an ulp of the target.
# erf has no long double loop: float64 erf is measured against glibc's double erf, whose
# known error glibc's manual lists as 1 ulp, so that one check allows it on top.
REFERENCE_ULPS = {("erf", np.float64): 1}


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as file:
        return {flag for line in file if line.startswith("flags") for flag in line.split(":")[1].split()}


def runs_here(march: str) -> bool:
    return march == "native" or set(LEVELS[march]) <= cpu_flags() and all(
        set(LEVELS[lower]) <= cpu_flags() for lower in list(LEVELS)[:list(LEVELS).index(march)])


def accuracy_inputs(name: str, dtype) -> list:
    rng = np.random.default_rng(3)
    span = RANGES[name][dtype == np.float64]
    first = np.geomspace(1e-30, 1e30, SIZE) if span == "log" else np.linspace(*span, SIZE)
    if name == "arctan2":
        return [first.astype(dtype), rng.uniform(-1e3, 1e3, SIZE).astype(dtype)]
    if name == "power":
        return [first.astype(dtype), rng.uniform(-20, 20, SIZE).astype(dtype)]
    return [first.astype(dtype)]


def accuracy_items() -> list:
    items = []
    for dtype in (np.float32, np.float64):
        for name in RANGES:
            inputs = accuracy_inputs(name, dtype)
            graph = Graph()
            nodes = [graph.placeholder(f"x{n}", TensorMeta(x.shape, x.dtype)) for n, x in enumerate(inputs)]
            graph.output(getattr(ops, name)(*nodes))
            items.append(((name, dtype), GraphModule(graph), inputs))
    return items


@pytest.fixture(scope="module", params=MARCHES)
def accuracy_kernels(request):
    march = request.param
    if not runs_here(march):
        pytest.skip(f"this CPU cannot run {march} code (test_kernels_compile_for_every_x86_64_level builds it)")
    items = accuracy_items()
    with config.patch(kernel_march=march):
        compiled = compile_graphs([(module, inputs) for _, module, inputs in items])
    return {key: (module, function, inputs) for (key, module, inputs), function in zip(items, compiled)}


def exact(name: str, dtype, inputs: list) -> np.ndarray:
    """`name` of `inputs` one precision up (see REFERENCE_ULPS)."""
    wider = [x.astype(np.float64 if dtype == np.float32 else np.longdouble) for x in inputs]
    if name == "erf":
        return _C.erf(*[x.astype(np.float64) for x in inputs])
    return getattr(np, name)(*wider)


def ulp_error(actual: np.ndarray, exact_result: np.ndarray) -> float:
    """The largest error of `actual`, in ulps of its dtype at the exact result (rounded
    to that dtype first, as glibc measures)."""
    with np.errstate(over="ignore"):
        rounded = exact_result.astype(actual.dtype)
    finite = np.isfinite(rounded)  # past the dtype's range the result is an infinity, as in NumPy
    wide = exact_result[finite]
    spacing = np.spacing(np.abs(rounded[finite])).astype(wide.dtype)
    return float(np.max(np.abs(actual[finite].astype(wide.dtype) - wide) / spacing, initial=0.0))


def ulp_difference(actual: np.ndarray, expected: np.ndarray) -> float:
    assert np.array_equal(np.isnan(actual), np.isnan(expected))
    assert np.array_equal(np.isinf(actual), np.isinf(expected))
    return ulp_error(actual, expected.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(RANGES))
def test_vector_math_is_within_its_promised_ulps_of_the_exact_result(accuracy_kernels, name, dtype):
    module, function, inputs = accuracy_kernels[name, dtype]
    assert function is not module  # compiled
    with np.errstate(all="ignore"):
        expected, actual = module(*inputs), function(*inputs)
        exact_result = exact(name, dtype, inputs)
    assert np.array_equal(np.isnan(actual), np.isnan(expected))  # special values are NumPy's
    assert np.array_equal(np.isinf(actual), np.isinf(expected))
    promise = 0.5 if name == "sqrt" else VECTOR_MATH_ULPS
    assert ulp_error(actual, exact_result) <= promise + REFERENCE_ULPS.get((name, dtype), 0)


def test_kernels_compile_for_every_x86_64_level(tmp_path):
    """Every level compiles on any x86-64 machine (running one needs the CPU: the
    accuracy tests above run each level this CPU has)."""
    source = tmp_path / "kernel.c"
    source.write_text(render_unit([kernel_of(lambda x: ops.sin(ops.exp(x)), TensorMeta((1 << 20,), F32))]))
    command, *flags = build.flags()
    for level in LEVELS:
        level_flags = [f"-march={level}" if flag.startswith("-march=") else flag for flag in flags]
        if f"-march={level}" not in level_flags:
            level_flags.insert(0, f"-march={level}")
        result = subprocess.run([command, *level_flags, "-o", str(tmp_path / f"{level}.so"), str(source)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_transcendentals_call_the_vector_variants(accuracy_kernels, request):
    _, function, _ = accuracy_kernels["sin", np.float32]
    function = getattr(function, "fallback", function)  # the glue behind a C launcher
    library = function.__globals__[next(name for name in function.__globals__ if name.startswith("k_"))].library
    disassembly = subprocess.run(["objdump", "-d", library.path], capture_output=True, text=True).stdout
    calls = [line for line in disassembly.splitlines() if "call" in line and "v_sinf@plt>" in line]
    # SSE (b), AVX2 (d) or AVX-512 (e) variants, by the level; a scalar sinf call remains
    # for the loop's remainder elements.
    assert calls
    if request.node.callspec.params["accuracy_kernels"] == "x86-64-v2":
        assert all("_ZGVbN4v_sinf" in line for line in calls)


def test_erf_matches_the_eager_ufunc_which_uses_the_same_c_library():
    x = np.linspace(-4, 4, 1001)
    graph = Graph()
    graph.output(ops.erf(graph.placeholder("x", TensorMeta(x.shape, x.dtype))))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [x])])
    # Both within the promise of the exact result, and glibc's erf within 1 ulp of it.
    assert ulp_difference(compiled(x), _C.erf(x)) <= VECTOR_MATH_ULPS + 1


def test_independent_reductions_of_a_row_share_one_loop():
    """NOTE(reduction-merging): the max and the sum of a row are one pass over it; a sum
    that reads the max (softmax's) is a loop of its own."""
    x = np.random.default_rng(4).standard_normal((5, 37)).astype(F32)
    x[1, 3] = np.nan
    graph = Graph()
    node = graph.placeholder("x", TensorMeta(x.shape, F32))
    peak = ops.max(node, axis=1, keepdims=True)
    graph.output(ops.add(peak, ops.sum(node, axis=1, keepdims=True)))
    (kernel,) = schedule(graph).kernels
    assert render_kernel(kernel).count("for (int64_t r1") == 1
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [x])])
    np.testing.assert_allclose(compiled(x), module(x), rtol=1e-5, atol=1e-5)  # float32 sums: NumPy's error
    assert render_kernel(kernel_of(lambda a: ops.softmax(a), TensorMeta((5, 37), F32))).count("for (int64_t r1") == 3
