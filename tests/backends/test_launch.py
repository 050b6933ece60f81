"""pyjit/backends/launch.py: which compiled graphs the C launcher runs (NOTE(c-launcher)),
with the glue's results, and which keep their glue."""

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
    with_matmul = module(lambda a: ops.exp(ops.matmul(a, a)), TensorMeta((4, 4), F32))
    assert not isinstance(inductor(with_matmul, np.ones((4, 4), F32)), _C.Launcher)


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
