"""pyjit/codegen/c_renderer.py: the C text of kernels, and what it computes.

The accuracy table here is the one docs/codegen.md publishes: the largest difference,
in units in the last place, between a compiled kernel (glibc's vector math, libmvec)
and NumPy, over the input ranges below.
"""

import shutil
import subprocess

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit import _C
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.c_renderer import PRELUDE, VECTOR_MATH, float_literal, index_text, literal, render_kernel
from pyjit.codegen.kernel_ir import Index
from pyjit.codegen.scheduler import schedule
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.ops.formula import SCALAR_OPS

F32 = np.float32


def kernel_of(build, *metas, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    (kernel,) = schedule(graph).kernels
    return kernel


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


def test_a_symbolic_size_decides_threads_at_run_time():
    env = ShapeEnv()
    s0 = env.create_symbol(10)
    text = render_kernel(kernel_of(lambda x: ops.add(x, 1.0), TensorMeta((s0,), F32), shape_env=env))
    assert "#pragma omp parallel for simd if((s0) >= 524288)" in text


def test_row_kernels_reduce_with_simd_clauses_inside_a_parallel_row_loop():
    text = render_kernel(kernel_of(lambda x: ops.softmax(x), TensorMeta((4096, 1024), F32)))
    assert text.count("#pragma omp parallel for") == 1
    assert "reduction(max:acc_max_acc) reduction(|:acc_max_nan)" in text
    assert "double acc_sum_acc = 0;" in text  # float32 sums accumulate in double
    assert "reduction(+:acc_sum_acc)" in text


def test_argmax_is_a_serial_loop():
    text = render_kernel(kernel_of(lambda x: ops.argmax(x, axis=1), TensorMeta((4, 8), F32)))
    reduction_loop = text[text.index("acc_argmax_pos = 0"):]
    assert "simd" not in reduction_loop.split("for (")[0]


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


# -- accuracy of vector math against NumPy ----------------------------------------------
SIZE = 1 << 16
RANGES = {  # op: (float32 inputs, float64 inputs)
    "exp": ((-87, 88), (-700, 700)), "expm1": ((-87, 88), (-700, 700)), "log": ("log", "log"),
    "log1p": ((-0.999, 1e3), (-0.999, 1e3)), "sin": ((-1e4, 1e4),) * 2, "cos": ((-1e4, 1e4),) * 2,
    "tan": ((-1e3, 1e3),) * 2, "sinh": ((-88, 88),) * 2, "cosh": ((-88, 88),) * 2, "tanh": ((-20, 20),) * 2,
    "arcsin": ((-1, 1),) * 2, "arccos": ((-1, 1),) * 2, "arctan": ((-1e4, 1e4),) * 2, "erf": ((-6, 6),) * 2,
    "sqrt": ("log", "log"), "arctan2": ((-1e3, 1e3),) * 2, "power": ((0, 30),) * 2,
}
# The largest difference measured (docs/codegen.md, "Numerics"), in ULP, float32 and float64.
ULP_BOUNDS = {"exp": (4, 3), "expm1": (2, 2), "log": (5, 1), "log1p": (2, 2), "sin": (2, 3), "cos": (2, 3),
              "tan": (3, 3), "sinh": (2, 2), "cosh": (2, 2), "tanh": (1, 2), "arcsin": (3, 2), "arccos": (2, 2),
              "arctan": (1, 1), "erf": (2, 2), "sqrt": (0, 0), "arctan2": (3, 3), "power": (1, 1)}


def accuracy_inputs(name: str, dtype) -> list:
    rng = np.random.default_rng(3)
    span = RANGES[name][dtype == np.float64]
    first = np.geomspace(1e-30, 1e30, SIZE) if span == "log" else np.linspace(*span, SIZE)
    if name == "arctan2":
        return [first.astype(dtype), rng.uniform(-1e3, 1e3, SIZE).astype(dtype)]
    if name == "power":
        return [first.astype(dtype), rng.uniform(-20, 20, SIZE).astype(dtype)]
    return [first.astype(dtype)]


@pytest.fixture(scope="module")
def accuracy_kernels():
    items = []
    for dtype in (np.float32, np.float64):
        for name in RANGES:
            inputs = accuracy_inputs(name, dtype)
            graph = Graph()
            nodes = [graph.placeholder(f"x{n}", TensorMeta(x.shape, x.dtype)) for n, x in enumerate(inputs)]
            graph.output(getattr(ops, name)(*nodes))
            items.append((GraphModule(graph), inputs))
    compiled = compile_graphs(items)
    return {(name, dtype): (module, function, inputs) for (module, inputs), function, (dtype, name)
            in zip(items, compiled, [(d, n) for d in (np.float32, np.float64) for n in RANGES])}


def ulp_difference(actual: np.ndarray, expected: np.ndarray) -> float:
    assert np.array_equal(np.isnan(actual), np.isnan(expected))
    assert np.array_equal(np.isinf(actual), np.isinf(expected))
    finite = np.isfinite(expected)
    spacing = np.spacing(np.abs(expected[finite])).astype(np.float64)
    return float(np.max(np.abs(actual[finite].astype(np.float64) - expected[finite]) / spacing, initial=0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(RANGES))
def test_vector_math_is_within_its_documented_ulps_of_numpy(accuracy_kernels, name, dtype):
    module, function, inputs = accuracy_kernels[name, dtype]
    assert function is not module  # compiled
    with np.errstate(all="ignore"):
        expected, actual = module(*inputs), function(*inputs)
    assert ulp_difference(actual, expected) <= ULP_BOUNDS[name][dtype == np.float64]


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_transcendentals_call_the_vector_variants(accuracy_kernels):
    _, function, _ = accuracy_kernels["sin", np.float32]
    library = function.__globals__[next(name for name in function.__globals__ if name.startswith("k_"))].library
    disassembly = subprocess.run(["objdump", "-d", library.path], capture_output=True, text=True).stdout
    # AVX2 (d), AVX-512 (e) or SSE (b) variants, by what -march=native found here; a
    # scalar sinf call remains for the loop's remainder elements.
    assert any("call" in line and "v_sinf@plt>" in line for line in disassembly.splitlines())


def test_erf_matches_the_eager_ufunc_which_uses_the_same_c_library():
    x = np.linspace(-4, 4, 1001)
    graph = Graph()
    graph.output(ops.erf(graph.placeholder("x", TensorMeta(x.shape, x.dtype))))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [x])])
    assert ulp_difference(compiled(x), _C.erf(x)) <= ULP_BOUNDS["erf"][1]
