"""pyjit/codegen/scheduling/moments.py: a row's variance in the pass that computes its mean
(NOTE(one-pass-moments)) and a repeated reduction computed once
(NOTE(duplicate-reductions)), checked against NumPy and against the exact result."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cpu.renderer import render_kernel
from pyjit.codegen.ir.kernel_ir import Reduce
from pyjit.codegen.scheduling.moments import fewer_passes
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta


def graph_of(build, *metas, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    return graph


def row_reductions(build, *metas, shape_env=None):
    """The reductions of the kernel's row loop after the rewrite: (name, dtype, over a row?)."""
    (kernel,) = schedule(graph_of(build, *metas, shape_env=shape_env)).kernels
    (loop,) = fewer_passes(kernel.body)
    return [(s.name, s.dtype.name, bool(s.dims)) for s in loop.body if isinstance(s, Reduce)], kernel


def variance(x):
    centered = ops.subtract(x, ops.mean(x, axis=-1, keepdims=True))
    return ops.mean(ops.multiply(centered, centered), axis=-1)


def test_layer_norm_reads_each_row_once_for_mean_and_variance():
    reductions, kernel = row_reductions(lambda x: ops.layer_norm(x, (48,)), TensorMeta((8, 48), np.float32))
    # x0 (the shift), the shifted sums in one loop, then the row's sum and the variance's
    # sum formed from them
    assert [over_row for _, _, over_row in reductions] == [False, True, True, False, False]
    assert [dtype for _, dtype, _ in reductions] == ["float64", "float64", "float64", "float32", "float32"]
    source = render_kernel(kernel)
    assert source.count("#pragma omp simd reduction") == 1  # NOTE(reduction-merging): one loop for both sums
    assert source.count("for (int64_t r1") == 2  # that loop and the normalized row


@pytest.mark.parametrize("dtype, metas", [
    (np.float64, None), (np.float32, "symbolic")])
def test_float64_and_symbolic_rows_keep_two_passes(dtype, metas):
    shape_env = ShapeEnv() if metas else None
    shape = (4, shape_env.create_symbol(9)) if metas else (4, 9)
    reductions, _ = row_reductions(variance, TensorMeta(shape, dtype), shape_env=shape_env)
    assert [over_row for _, _, over_row in reductions] == [True, True]


def test_a_repeated_reduction_is_computed_once():
    def build(x):
        mean = ops.mean(x, axis=-1, keepdims=True)
        return ops.add(ops.std(x, axis=-1), ops.sum(ops.power(ops.subtract(x, mean), 2.0), axis=-1))

    reductions, _ = row_reductions(build, TensorMeta((4, 30), np.float32))
    # one row sum (not two), which the shifted sum serves, and one squared deviation as
    # its shifted pair: the power of 2 is the product std's variance takes
    # (NOTE(scalar-exponent-power)), so the two sums of squares are one
    assert [over_row for _, _, over_row in reductions].count(True) == 2


def compiled_pair(build, x):
    graph = graph_of(build, TensorMeta(x.shape, x.dtype))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [x])])
    return compiled, module


def exact_variance(x):
    """The variance from the float32 mean the graph computes, in float64 from there on."""
    mean = (x.astype(np.float64).sum(axis=-1, keepdims=True).astype(np.float32) / np.float32(x.shape[-1]))
    return ((x.astype(np.float64) - mean.astype(np.float64)) ** 2).mean(axis=-1)


def rows(dtype, shape, rng, offset=0.0):
    return (rng.standard_normal(shape) + offset).astype(dtype)


@pytest.mark.parametrize("shape", [(3, 1), (5, 7), (2, 1000), (1, 4099)])
@pytest.mark.parametrize("offset", [0.0, 1e4, -3e6])
def test_variance_is_within_an_ulp_of_the_exact_one_and_near_numpy(shape, offset):
    rng = np.random.default_rng(sum(shape))
    x = rows(np.float32, shape, rng, offset)
    compiled, module = compiled_pair(variance, x)
    result = compiled(x)
    exact = exact_variance(x)
    assert result.dtype == np.float32
    # rounded once to float32 from double, then divided by n in float32: within an ulp
    np.testing.assert_allclose(result, exact, rtol=2.5e-7, atol=1e-30)
    # NumPy's float32 pairwise sums err more; the two agree to NumPy's error (its mean is
    # off by an ulp of the offset or so, which shifts the variance by that squared)
    mean_error = float(np.spacing(np.float32(abs(offset)))) * 2
    np.testing.assert_allclose(result, module(x), rtol=1e-5, atol=mean_error ** 2)


def test_an_outlier_first_element_does_not_cost_accuracy():
    x = np.random.default_rng(1).standard_normal((4, 2048)).astype(np.float32)
    x[:, 0] = [1e6, -1e6, 3e4, 1e-3]
    compiled, _ = compiled_pair(variance, x)
    np.testing.assert_allclose(compiled(x), exact_variance(x), rtol=2.5e-7)


def test_nan_and_infinite_rows_give_numpys_results():
    x = np.random.default_rng(2).standard_normal((6, 33)).astype(np.float32)
    x[0, 5], x[1, 0], x[2, 7], x[3, 3], x[3, 9] = np.nan, np.inf, -np.inf, np.inf, -np.inf
    x[4] = 3e19  # squares overflow float32
    compiled, module = compiled_pair(variance, x)
    with np.errstate(all="ignore"):
        result, expected = compiled(x), module(x)
    np.testing.assert_array_equal(np.isnan(result), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(result), np.isinf(expected))
    np.testing.assert_allclose(result[5], expected[5], rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 1), (9, 13), (64, 256)])
def test_layer_norm_matches_numpy(dtype, shape):
    rng = np.random.default_rng(3)
    x = rows(dtype, shape, rng, offset=5.0)
    w, b = rng.standard_normal(shape[-1]).astype(dtype), rng.standard_normal(shape[-1]).astype(dtype)
    graph = graph_of(lambda a, c, d: ops.layer_norm(a, (shape[-1],), c, d),
                     *(TensorMeta(array.shape, dtype) for array in (x, w, b)))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, [x, w, b])])
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(compiled(x, w, b), module(x, w, b), rtol=tolerance, atol=tolerance)


def test_a_row_of_kept_values_keeps_two_passes_and_numpys_results():
    """The spread of softmax's exponentials: u is read from the scratch row the sum
    writes (NOTE(kept-values)), so x0 could not be read before that loop."""
    def build(x):
        e = ops.exp(ops.subtract(x, ops.max(x, axis=1, keepdims=True)))
        return ops.divide(e, ops.reshape(variance(e), (-1, 1)))

    reductions, _ = row_reductions(build, TensorMeta((5, 300), np.float32))
    assert not any(name.endswith("_x0") for name, _, _ in reductions)
    x = np.random.default_rng(7).standard_normal((5, 300)).astype(np.float32)
    compiled, module = compiled_pair(build, x)
    np.testing.assert_allclose(compiled(x), module(x), rtol=1e-5)
