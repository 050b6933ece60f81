"""pyjit/codegen/cpu/launch.py: which compiled graphs the C launcher runs (NOTE(c-launcher)),
with the glue's results, and which keep their glue."""

import sys
import tracemalloc

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


def test_reduce_overhead_runs_from_c_and_reuses_a_dropped_result():  # NOTE(launcher-buffer-reuse)
    def step(x):
        return np.tanh(x) * 2 + 1

    compiled = pyjit.compile(step, mode="reduce-overhead")
    x = np.linspace(-1, 1, 16, dtype=F32)
    address = compiled(x).ctypes.data  # the first call compiles; dropped at once
    kept = compiled(x)
    assert kept.ctypes.data == address
    again = compiled(2 * x)
    assert not np.shares_memory(kept, again)
    np.testing.assert_allclose(kept, step(x), rtol=1e-6)
    np.testing.assert_allclose(again, step(2 * x), rtol=1e-6)
    graphs = [const for _, code in pyjit.cache_entries(compiled) for const in code.co_consts
              if hasattr(const, "kernels")]
    assert any(isinstance(graph, _C.Launcher) for graph in graphs)
    _, entered = python_calls(compiled, x)
    assert entered == ["step"], entered


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


# -- NOTE(c-launcher-views) --------------------------------------------------------------
HEADS = 2


def attention(x, w):
    """Self-attention of a (batch, length, width) stack: projected, split into heads,
    multiplied per head, the heads merged back (a copy: the transposed heads)."""
    batch, length, width = x.meta.shape
    qkv = ops.transpose(ops.reshape(ops.matmul(x, w), (batch, length, 3, HEADS, width // HEADS)), (2, 0, 3, 1, 4))
    q, k, v = (ops.getitem(qkv, part) for part in range(3))
    weights = ops.softmax(ops.multiply(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), 0.25), axis=-1)
    return ops.reshape(ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3)), (batch, length, width))


def test_attention_runs_from_c_with_the_glues_bits(rng):
    x, w = rng.standard_normal((2, 5, 8)).astype(F32), rng.standard_normal((8, 24)).astype(F32)
    graph_module = module(attention, TensorMeta(x.shape, F32), TensorMeta(w.shape, F32))
    compiled = inductor(graph_module, x, w)
    assert isinstance(compiled, _C.Launcher)
    got, entered = python_calls(compiled, x, w)
    assert entered == []  # the views too: no glue, no op's Python implementation
    np.testing.assert_array_equal(got, compiled.fallback(x, w))
    np.testing.assert_allclose(got, graph_module(x, w), rtol=1e-5, atol=1e-6)
    assert got.flags.c_contiguous and got.shape == x.shape


def test_a_view_output_is_the_view_eager_numpy_returns(rng):
    def build(a, w):
        product = ops.matmul(ops.exp(a), w)
        return ops.transpose(product, (1, 0)), ops.getitem(product, (slice(1, None, 2), None, Ellipsis))

    a, w = rng.standard_normal((6, 4)).astype(F32), rng.standard_normal((4, 3)).astype(F32)
    compiled = inductor(module(build, TensorMeta(a.shape, F32), TensorMeta(w.shape, F32)), a, w)
    assert isinstance(compiled, _C.Launcher)
    (transposed, rows), entered = python_calls(compiled, a, w)
    product = np.exp(a) @ w
    assert entered == [] and transposed.base is not None and np.shares_memory(transposed, rows)
    for got, want in ((transposed, product.T), (rows, product[1::2, None, ...])):
        assert got.shape == want.shape and got.strides == want.strides
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_views_of_symbolic_sizes_and_a_transposed_stack_by_a_matrix(rng):
    env = ShapeEnv()
    batch, length = env.create_symbol(2), env.create_symbol(6)

    def build(a, w):  # a (batch, length, 8): its rows by w as a transposed stack (no NOTE(flat-matmul))
        flipped = ops.transpose(a, (1, 0, 2))
        return ops.reshape(ops.tanh(ops.matmul(flipped, w)), (length, batch, 2, 2))

    graph_module = module(build, TensorMeta((batch, length, 8), F32), TensorMeta((8, 4), F32), shape_env=env)
    compiled = inductor(graph_module, np.ones((2, 6, 8), F32), np.ones((8, 4), F32))
    assert isinstance(compiled, _C.Launcher)
    w = rng.standard_normal((8, 4)).astype(F32)
    for shape in ((2, 6, 8), (3, 1, 8), (5, 7, 8)):
        a = rng.standard_normal(shape).astype(F32)
        got, entered = python_calls(compiled, a, w)
        assert entered == [] and got.shape == (shape[1], shape[0], 2, 2)
        product = np.matmul(a.transpose(1, 0, 2), w)  # NumPy's batched product, as eager
        np.testing.assert_allclose(got, np.tanh(product).reshape(got.shape), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got, compiled.fallback(a, w))


def test_a_malformed_view_step_is_refused():
    inputs, buffers = [(F32, (4,))], [(F32, (2, 2))]
    for step in (("flip", [0, 1], [2, 2], [], []), ("reshape", [0], [2, 2], [], []),
                 ("transpose", [0, 1], [-1], [], [])):
        with pytest.raises(ValueError):
            _C.Launcher(lambda x: x, inputs, buffers, [step], 1)
    launcher = _C.Launcher(lambda x: x, inputs, buffers, [("reshape", [0, 1], [2, 2], [], [])], 1)
    x = np.arange(4, dtype=F32)
    np.testing.assert_array_equal(launcher(x), x.reshape(2, 2))
    with pytest.raises(ValueError):  # NumPy's own error for a shape that does not fit
        _C.Launcher(lambda x: x, inputs, [(F32, (3,))], [("reshape", [0, 1], [3], [], [])], 1)(x)


def test_heads_merged_from_a_product_written_in_their_layout_cost_no_copy(rng):  # NOTE(product-layout)
    def merge(a, b):
        heads = ops.matmul(ops.exp(a), b)  # (batch, heads, length, width)
        return ops.reshape(ops.transpose(heads, (0, 2, 1, 3)), (2, 64, 4 * 64))

    a, b = rng.standard_normal((2, 4, 64, 2)).astype(F32), rng.standard_normal((2, 4, 2, 64)).astype(F32)
    compiled = inductor(module(merge, TensorMeta(a.shape, F32), TensorMeta(b.shape, F32)), a, b)
    assert isinstance(compiled, _C.Launcher)
    product_bytes = 2 * 4 * 64 * 64 * 4
    tracemalloc.start()
    try:
        got = compiled(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * product_bytes  # the product alone, not it and its merged copy
    np.testing.assert_array_equal(got, compiled.fallback(a, b))
    want = np.matmul(np.exp(a), b).transpose(0, 2, 1, 3).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_returned_transpose_of_a_product_has_eager_strides(rng):
    def heads(a, b):
        return ops.transpose(ops.matmul(ops.exp(a), b), (0, 2, 1, 3))

    a, b = rng.standard_normal((2, 4, 8, 2)).astype(F32), rng.standard_normal((2, 4, 2, 8)).astype(F32)
    compiled = inductor(module(heads, TensorMeta(a.shape, F32), TensorMeta(b.shape, F32)), a, b)
    assert isinstance(compiled, _C.Launcher)
    got, want = compiled(a, b), compiled.fallback(a, b)
    assert got.strides == want.strides == np.matmul(a, b).transpose(0, 2, 1, 3).strides
    np.testing.assert_array_equal(got, want)


def test_an_index_by_a_size_symbol_keeps_the_glue(rng):
    env = ShapeEnv()
    rows = env.create_symbol(6)

    def build(a, w, stop):
        columns = ops.getitem(ops.matmul(ops.exp(a), w), (slice(0, stop), slice(1, 3)))
        return ops.matmul(columns, ops.getitem(w, (slice(1, 3), Ellipsis)))

    a, w = rng.standard_normal((6, 4)).astype(F32), rng.standard_normal((4, 4)).astype(F32)
    for stop, launched in ((rows, False), (None, True)):
        graph_module = module(lambda a, w: build(a, w, stop), TensorMeta((rows, 4), F32), TensorMeta((4, 4), F32),
                              shape_env=env)
        compiled = inductor(graph_module, a, w)
        assert isinstance(compiled, _C.Launcher) is launched
        np.testing.assert_allclose(compiled(a, w), graph_module(a, w), rtol=1e-5, atol=1e-6)
