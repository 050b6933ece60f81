"""pyjit/codegen/glue.py: the generated glue (NOTE(glue)). These tests read the glue's
source; tests/backends/test_inductor.py runs it."""

import numpy as np
import pytest

import pyjit.ops as ops
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.codegen.glue import GlueError, glue_source, layout_of, scalar_values
from pyjit.graph import Graph, ShapeEnv, TensorMeta

F32 = np.float32


def glue(build, *metas, layouts=None, shape_env=None):
    graph = Graph(shape_env=shape_env)
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    return glue_source(schedule(graph, layouts), layouts or {})[0]


def test_static_inputs_are_checked_by_type_dtype_shape_and_strides():
    text = glue(lambda x: ops.sin(x), TensorMeta((3, 4), F32))
    assert "if type(v_x0) is not ndarray or (v_x0.dtype is not dtype_4 and v_x0.dtype != dtype_4):" in text
    assert "if v_x0.shape != (3, 4):" in text
    assert "if not _layouts_checked and v_x0.strides != (16, 4):\n        return variant(v_x0)" in text
    assert "buf0 = empty((3, 4), dtype_4)" in text and "k_kernel0(v_x0, buf0)" in text


def test_symbols_are_bound_from_the_first_axis_that_has_them_and_checked_elsewhere():
    env = ShapeEnv()
    s0 = env.create_symbol(5)
    text = glue(lambda x, y: ops.add(x, y), TensorMeta((s0, 3), F32), TensorMeta((s0, 3), F32), shape_env=env)
    assert "s0 = shape_v_x0[0]" in text
    assert "if shape_v_x1[0] != s0:" in text
    assert "if not _layouts_checked and not v_x0.flags.c_contiguous:" in text  # symbolic: the flag
    assert "k_kernel0(v_x0, v_x1, buf0, s0)" in text


def test_size_guards_and_compound_sizes_are_checked_after_binding():
    env = ShapeEnv()
    s0 = env.create_symbol(4)
    assert s0 > 3
    text = glue(lambda x, y: ops.add(ops.reshape(x, (2 * s0,)), y), TensorMeta((s0, 2), F32),
                TensorMeta((2 * s0,), F32), shape_env=env)
    assert text.index("s0 = shape_v_x0[0]") < text.index("if shape_v_x1[0] != 2*s0:") < text.index("if not (s0 > 3):")


def test_strided_inputs_bind_their_element_strides():
    text = glue(lambda x: ops.exp(x), TensorMeta((3, 4), np.float64), layouts={"x0": "strided"})
    assert "if strides_v_x0[0] % 8 or strides_v_x0[1] % 8:" in text
    assert "st_x0_1 = strides_v_x0[1] // 8" in text
    assert "variant(" not in text


def test_a_symbol_no_input_gives_cannot_have_glue():
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    x = graph.placeholder("x", TensorMeta((4,), F32))
    graph.output(ops.add(x, env.create_symbol(3)))  # a size used as a number: a kernel parameter
    scheduled = schedule(graph)
    assert scheduled.kernels[0].sizes == ("s0",)
    with pytest.raises(GlueError, match="s0"):
        glue_source(scheduled, {})


def test_python_scalar_inputs_are_type_checked_and_made_0d_arrays():
    graph = Graph()
    x, scale = graph.placeholder("x", TensorMeta((3,), F32)), graph.placeholder("a", float)
    graph.output(ops.multiply(x, scale))
    text = glue_source(schedule(graph), {})[0]
    assert "if type(v_a) is not float:" in text
    assert "v_a_array = asarray(v_a, dtype_" in text


def test_scalar_values_follow_what_each_op_returns():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3,), np.float64))
    total = ops.sum(x)  # a NumPy scalar
    as_array = ops.where(ops.greater(total, 0), total, 1.0)  # np.where: a 0-d array
    kept = ops.astype(total, F32)  # astype keeps what it is given: a scalar
    graph.output((total, as_array, kept))
    assert scalar_values(graph) == {total, kept, graph.calls()[1]}  # the comparison is a scalar too


def test_layouts_are_c_or_strided():
    x = np.ones((3, 4))
    assert layout_of(x) == "C" and layout_of(x.T) == "strided" and layout_of(x[:, ::2]) == "strided"


def test_a_symbol_the_guards_pinned_to_a_number_is_written_as_that_number():
    # Found by the differential fuzzer (tests/frontend/test_fuzz.py): an input made dynamic
    # (s0) combined with a static one of 8 learns s0 == 8, and a buffer's size or an op's
    # size argument, s0 once canonical, is the plain int 8.
    env = ShapeEnv()
    s0 = env.create_symbol(8)
    def build(y, x):
        cos = ops.cos(y)
        ops.multiply(cos, ops.tanh(x))  # unused, but its meta rule learns s0 == 8
        return (cos,)

    text = glue(build, TensorMeta((s0,), F32), TensorMeta((8,), F32), shape_env=env)
    assert "empty((8,), dtype_" in text

    def draw(y, x):  # a size as an op's argument (pyjit.randn(n) with n = s0)
        ops.multiply(ops.cos(y), ops.tanh(x))
        return (ops.broadcast_to(ops.cos(x), (s0,)),)

    env = ShapeEnv()
    s0 = env.create_symbol(8)
    assert "(8,)" in glue(draw, TensorMeta((s0,), F32), TensorMeta((8,), F32), shape_env=env)


def reusing(build, *arrays, shape_env=None, metas=None):
    """The compiled graph's glue with NOTE(buffer-reuse) (the C launcher's fallback where
    the graph runs from one), and its graph module."""
    from pyjit.backends.inductor import compile_graphs
    from pyjit.graph import GraphModule

    graph = Graph(shape_env=shape_env)
    metas = metas or [TensorMeta(array.shape, array.dtype) for array in arrays]
    inputs = [graph.placeholder(f"x{n}", meta) for n, meta in enumerate(metas)]
    graph.output(build(*inputs))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, list(arrays))], reuse_buffers=True)
    return getattr(compiled, "fallback", compiled), module


def mlp_layer(x, w):
    # exp(x): an intermediate buffer; tanh: the output, in a buffer of its own (not the
    # product's, as it reads the product transposed: NOTE(epilogue-in-place))
    return ops.tanh(ops.transpose(ops.matmul(ops.exp(x), w)))


def test_reused_buffers_never_overwrite_a_result_the_caller_holds():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((6, 5)), rng.standard_normal((5, 3))
    compiled, module = reusing(mlp_layer, x, w)
    assert any(name.startswith("pool_") for name in compiled.__globals__)
    first = compiled(x, w)
    second = compiled(2 * x, w)
    assert second is not first
    np.testing.assert_allclose(first, module(x, w), rtol=1e-12)
    np.testing.assert_allclose(second, module(2 * x, w), rtol=1e-12)
    view = second[1:]
    del second
    third = compiled(x, w)  # the second result lives on through its view
    assert not np.shares_memory(third, view)
    np.testing.assert_allclose(view, module(2 * x, w)[1:], rtol=1e-12)


def test_a_dropped_result_and_the_intermediates_are_reused():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 5)), rng.standard_normal((5, 3))
    compiled, module = reusing(mlp_layer, x, w)
    address = compiled(x, w).ctypes.data  # dropped at once
    result = compiled(3 * x, w)
    assert result.ctypes.data == address
    np.testing.assert_allclose(result, module(3 * x, w), rtol=1e-12)
    pools = {name: value for name, value in compiled.__globals__.items() if name.startswith("pool_")}
    assert len(pools) == 2 and all(len(pool) == 1 for pool in pools.values())  # exp(x)'s buffer and the result's
    assert any(pool[0] is result for pool in pools.values())


def test_reuse_with_symbolic_sizes_allocates_when_the_size_changes():
    shape_env = ShapeEnv()
    size = shape_env.create_symbol(4)
    compiled, module = reusing(lambda x: ops.exp(x), np.zeros(4), shape_env=shape_env,
                               metas=[TensorMeta((size,), np.float64)])
    for length in (4, 7, 7, 2):
        x = np.linspace(0, 1, length)
        np.testing.assert_allclose(compiled(x), np.exp(x), rtol=1e-14)


# -- NOTE(flat-matmul) -----------------------------------------------------------------------
def test_a_contiguous_stack_times_a_matrix_is_one_two_dimensional_product():
    from pyjit.codegen.glue import matmul_rows

    calls = []

    def recording(a, b):
        calls.append((a.shape, a.flags.c_contiguous))
        return np.matmul(a, b)

    rng = np.random.default_rng(2)
    stack, matrix = rng.standard_normal((3, 4, 5)).astype(F32), rng.standard_normal((5, 6)).astype(F32)
    product = matmul_rows(recording, stack, matrix)
    assert calls == [((12, 5), True)] and product.shape == (3, 4, 6)
    np.testing.assert_allclose(product, stack @ matrix, rtol=1e-6, atol=1e-6)
    transposed = stack.transpose(1, 0, 2)  # not contiguous: matmul takes it as it is
    np.testing.assert_allclose(matmul_rows(recording, transposed, matrix), transposed @ matrix, rtol=1e-6, atol=1e-6)
    assert calls[1] == ((4, 3, 5), False)
    empty = np.zeros((0, 4, 5), F32)
    assert matmul_rows(recording, empty, matrix).shape == (0, 4, 6)


def test_the_glue_multiplies_float_stacks_by_a_matrix_through_matmul_rows():
    stack, matrix = TensorMeta((3, 4, 5), F32), TensorMeta((5, 6), F32)
    text = glue(lambda a, b: ops.tanh(ops.matmul(a, b)), stack, matrix)
    assert "v_matmul = matmul_rows(op_" in text
    for metas in ((TensorMeta((4, 5), F32), matrix), (stack, TensorMeta((3, 5, 6), F32)),
                  (TensorMeta((3, 4, 5), np.int64), TensorMeta((5, 6), np.int64))):
        assert "matmul_rows" not in glue(lambda a, b: ops.tanh(ops.matmul(a, b)), *metas)


# -- NOTE(assignment-in-place) ---------------------------------------------------------------

def compiled_glue(build, *arrays):
    """The compiled graph (the glue, or the C launcher whose fallback it is), its glue's
    source and its graph module."""
    from pyjit.backends.inductor import compile_graphs
    from pyjit.graph import GraphModule

    graph = Graph()
    inputs = [graph.placeholder(f"x{n}", TensorMeta(array.shape, array.dtype)) for n, array in enumerate(arrays)]
    graph.output(build(*inputs))
    module = GraphModule(graph)
    (compiled,) = compile_graphs([(module, list(arrays))])
    return compiled, getattr(compiled, "fallback", compiled).glue, module


def assert_same_outcome(compiled, module, x):
    original = x.copy()
    for got, expected in zip(compiled(x), module(x)):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(x, original)


def test_an_array_the_glue_made_is_assigned_into_in_place():
    def fill(x):  # a kernel's buffer, then two item assignments, then read by a kernel
        first = ops.index_put(ops.multiply(x, 3.0), 0, 1.0)
        return (ops.multiply(ops.index_put(first, slice(2, None), ops.getitem(x, slice(None, -2))), 2.0),)

    x = np.linspace(0, 1, 7)
    compiled, text, module = compiled_glue(fill, x)
    assert "[0] = 1.0" in text and "[slice(2, None, None)] = " in text
    assert_same_outcome(compiled, module, x)


def test_values_a_kernel_wrote_into_the_target_are_not_assigned_again():
    def taps(x):  # NOTE(assignment-by-kernel): y = zeros; y[k:] += (k + 1) * x[:n - k]; then 2-D slices
        n = x.meta.shape[0]
        y = x.graph.call(ops.zeros, n)
        for k in range(3):
            tap = ops.multiply(float(k + 1), ops.getitem(x, slice(None, n - k)))
            y = ops.index_put(y, slice(k, None), ops.add(ops.getitem(y, slice(k, None)), tap))
        grid = x.graph.call(ops.zeros, (3, n))
        grid = ops.index_put(grid, (slice(1, None), slice(None, None, -1)), ops.add(ops.sqrt(y), ops.reshape(ops.getitem(x, slice(0, 2)), (2, 1))))
        return (ops.index_put(grid, (0, slice(1, None)), ops.multiply(ops.getitem(y, slice(1, None)), 0.5)),)

    x = np.linspace(0, 1, 9)
    compiled, text, module = compiled_glue(taps, x)
    assert "] = " not in text and "v_index_put = v_zeros\n" in text
    assert compiled.allocations == 0
    assert_same_outcome(compiled, module, x)


def test_results_of_ufuncs_and_ffts_run_eagerly_are_assigned_into_in_place():
    def spectral(x):  # complex ufuncs and FFTs run in NumPy; each result is a new array
        divided = ops.divide(ops.negative(ops.fft(x)), 2.0)
        return ops.index_put(ops.ifft(ops.index_put(divided, 0, 0.0)), slice(1, 3), 1.0), ops.multiply(x, 3.0)

    x = np.linspace(0, 1, 8)
    compiled, text, module = compiled_glue(spectral, x)
    assert "v_divide[0] = 0.0" in text and "v_ifft[slice(1, 3, None)] = 1.0" in text
    assert_same_outcome(compiled, module, x)


def test_inputs_and_arrays_still_read_are_copied_before_assignment():
    def keep_old(x):  # x is an input; 3x is read after its assignment, and aliased
        written = ops.index_put(x, 1, 5.0)
        e = ops.multiply(x, 3.0)
        alias = ops.ascontiguousarray(e)
        return (written, ops.index_put(e, 0, 7.0), alias)

    x = np.linspace(0, 1, 4)
    compiled, text, module = compiled_glue(keep_old, x)
    assert "] = " not in text
    assert_same_outcome(compiled, module, x)


def test_an_int_input_that_is_a_symbol_binds_it():
    """A loop body's index (NOTE(loop-capture)) is an int input whose meta is its symbol:
    the kernels read x[i] through it, and the size guards on it are checked."""
    env = ShapeEnv()
    index = env.create_index(2)
    assert index >= 1
    graph = Graph(shape_env=env)
    i = graph.placeholder("index", index)
    x = graph.placeholder("x", TensorMeta((8,), np.float64))
    graph.output(ops.multiply(ops.getitem(x, index - 1), 2.0))
    assert i.meta is index
    text = glue_source(schedule(graph), {})[0]
    assert text.index("if type(v_index) is not int:") < text.index("s0 = v_index") < text.index("if not (s0 >= 1):")
    assert "k_kernel0(v_x, buf0, s0)" in text
