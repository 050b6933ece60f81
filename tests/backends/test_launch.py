"""pyjit/backends/launch.py: which compiled graphs the C launcher runs (NOTE(c-launcher)),
with the glue's results, and which keep their glue."""

import sys

import numpy as np
import pytest
from backends.test_inductor import chain, inductor, module

import pyjit
import pyjit.ops as ops
from pyjit import _C
from pyjit.graph import ShapeEnv, TensorMeta

F32 = np.float32


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_a_static_pointwise_graph_runs_from_c_with_the_glues_results(rng):
    x = rng.standard_normal((4, 8)).astype(F32)
    graph_module = module(chain, TensorMeta(x.shape, F32))
    compiled = inductor(graph_module, x)
    assert isinstance(compiled, _C.Launcher) and len(compiled.kernels) == 1
    np.testing.assert_array_equal(compiled(x), compiled.fallback(x))
    np.testing.assert_allclose(compiled(x), graph_module(x), rtol=1e-6, atol=1e-6)
    for other in (x.astype(np.float64), x[:2], x.T, list(x)):  # the glue takes them, eagerly or by variant
        np.testing.assert_allclose(compiled(other), graph_module(other), rtol=1e-6, atol=1e-6)


def test_several_kernels_and_outputs(rng):
    x = rng.standard_normal((8, 16)).astype(F32)
    y = rng.standard_normal(16).astype(F32)

    def build(a, b):
        soft = ops.softmax(ops.add(a, b), axis=1)
        return soft, ops.sum(ops.multiply(soft, a), axis=0), b

    graph_module = module(build, TensorMeta(x.shape, F32), TensorMeta(y.shape, F32))
    compiled = inductor(graph_module, x, y)
    assert isinstance(compiled, _C.Launcher) and len(compiled.kernels) >= 2
    got, want = compiled(x, y), graph_module(x, y)
    assert type(got) is tuple and len(got) == 3 and got[2] is y
    for actual, expected in zip(got, want):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_graphs_only_the_glue_can_run_keep_it(rng):
    x = rng.standard_normal(8).astype(F32)
    scalar = module(lambda a: ops.sum(ops.exp(a)), TensorMeta(x.shape, F32))
    compiled = inductor(scalar, x)
    assert not isinstance(compiled, _C.Launcher)
    assert type(compiled(x)) is type(scalar(x)) is np.float32  # NumPy's scalar, as eager
    strided = rng.standard_normal((8, 8)).astype(F32).T
    assert not isinstance(inductor(module(chain, TensorMeta(strided.shape, F32)), strided), _C.Launcher)
    with_scalar = module(lambda a, b: ops.multiply(a, b), TensorMeta(x.shape, F32), float)
    assert not isinstance(inductor(with_scalar, x, 2.0), _C.Launcher)
    mixed = module(lambda a, b: ops.exp(ops.matmul(a, b)), TensorMeta((4, 4), F32), TensorMeta((4, 4), np.float64))
    assert not isinstance(inductor(mixed, np.ones((4, 4), F32), np.ones((4, 4))), _C.Launcher)


def test_size_symbols_and_their_guards_are_checked_in_c(rng):
    env = ShapeEnv()
    rows, columns = env.create_symbol(4), env.create_symbol(8)
    graph_module = module(lambda a, b: ops.add(chain(a), b), TensorMeta((rows, columns), F32),
                          TensorMeta((columns,), F32), shape_env=env)
    compiled = inductor(graph_module, np.ones((4, 8), F32), np.ones(8, F32))
    assert isinstance(compiled, _C.Launcher)
    for shape in ((4, 8), (3, 5), (64, 33)):
        x, y = rng.standard_normal(shape).astype(F32), rng.standard_normal(shape[1]).astype(F32)
        np.testing.assert_allclose(compiled(x, y), graph_module(x, y), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):  # unequal sizes go to the glue, and so to eager NumPy's error
        compiled(np.ones((4, 8), F32), np.ones(7, F32))


def test_compiled_functions_run_from_c_and_recompile_for_other_inputs():
    def step(x):
        return np.tanh(x) * 2 + 1

    compiled = pyjit.compile(step)
    for x in (np.linspace(-1, 1, 16, dtype=F32), np.linspace(-1, 1, 16, dtype=F32), np.ones((3, 5)),
              np.linspace(-1, 1, 32, dtype=F32)[::2]):
        got, want = compiled(x), step(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    graphs = [const for _, code in pyjit.cache_entries(compiled) for const in code.co_consts
              if hasattr(const, "kernels")]
    assert any(isinstance(graph, _C.Launcher) for graph in graphs)


# -- NOTE(c-launcher-matmul) -------------------------------------------------------------
def python_calls(function, *args) -> list[str]:
    """The Python functions a call of `function` enters."""
    entered = []
    sys.setprofile(lambda frame, event, _: entered.append(frame.f_code.co_name) if event == "call" else None)
    try:
        result = function(*args)
    finally:
        sys.setprofile(None)
    return result, entered


def linear_relu(x, w, b):
    return ops.maximum(ops.add(ops.matmul(x, w), b), 0.0)


@pytest.mark.parametrize("shape", [(16, 64), (2, 6, 64)], ids=["matrix", "stack"])  # stack: NOTE(flat-matmul)
def test_a_linear_layer_runs_from_c_with_numpys_bits(rng, shape):
    x, w, b = (rng.standard_normal(each).astype(F32) for each in (shape, (64, 48), (48,)))
    compiled = inductor(module(linear_relu, *(TensorMeta(array.shape, F32) for array in (x, w, b))), x, w, b)
    assert isinstance(compiled, _C.Launcher) and compiled.allocations == 0  # the epilogue writes over the product
    got, entered = python_calls(compiled, x, w, b)
    assert entered == []  # neither the glue nor eager NumPy: the GEMM and the kernel from C
    flat = np.matmul(x.reshape(-1, 64), w).reshape(shape[:-1] + (48,))
    np.testing.assert_array_equal(got, np.maximum(flat + b, np.float32(0)))
    np.testing.assert_array_equal(got, compiled.fallback(x, w, b))


def test_a_product_kept_by_the_caller_is_not_written_over(rng):
    def build(a, w, b):
        product = ops.matmul(a, w)
        return product, ops.tanh(ops.add(product, b))
    a, w, b = (rng.standard_normal(shape).astype(F32) for shape in ((8, 5), (5, 6), (6,)))
    compiled = inductor(module(build, *(TensorMeta(array.shape, F32) for array in (a, w, b))), a, w, b)
    assert isinstance(compiled, _C.Launcher)
    (product, activated), entered = python_calls(compiled, a, w, b)
    assert entered == [] and not np.shares_memory(product, activated)
    np.testing.assert_array_equal(product, a @ w)
    np.testing.assert_allclose(activated, np.tanh(a @ w + b), rtol=1e-6, atol=1e-6)


def test_mismatched_operands_raise_numpys_error_and_write_nothing(rng):
    env = ShapeEnv()
    rows, inner, columns = (env.create_symbol(size) for size in (4, 8, 3))
    graph_module = module(linear_relu, TensorMeta((rows, inner), F32), TensorMeta((inner, columns), F32),
                          TensorMeta((columns,), F32), shape_env=env)
    compiled = inductor(graph_module, np.ones((4, 8), F32), np.ones((8, 3), F32), np.ones(3, F32))
    assert isinstance(compiled, _C.Launcher)
    x, w, b = (rng.standard_normal(shape).astype(F32) for shape in ((5, 7), (7, 2), (2,)))
    np.testing.assert_array_equal(compiled(x, w, b), np.maximum(x @ w + b, np.float32(0)))
    bad = rng.standard_normal((6, 2)).astype(F32)
    copies = [array.copy() for array in (x, bad, b)]
    with pytest.raises(ValueError) as raised:
        compiled(x, bad, b)
    with pytest.raises(type(raised.value)):
        np.matmul(x, bad)
    for array, copy in zip((x, bad, b), copies):
        np.testing.assert_array_equal(array, copy)
