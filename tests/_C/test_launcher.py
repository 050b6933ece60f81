"""The launcher (csrc/launcher.cpp): a graph's kernels run from C, other calls go to
its fallback (NOTE(c-launcher)). The kernels are tiny C files compiled here."""

import numpy as np
import pytest
from _C.test_kernel_loader import compile_library

from pyjit import _C

SOURCE = r"""
#include <stdint.h>

/* out[i] = 2 * x[i], 4 doubles */
void twice(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0];
  double *out = (double *)buffers[1];
  for (int i = 0; i < 4; ++i) out[i] = 2 * x[i];
  (void)sizes;
}

/* out[i] = x[i] + y[i], 4 doubles */
void add(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0], *y = (const double *)buffers[1];
  double *out = (double *)buffers[2];
  for (int i = 0; i < 4; ++i) out[i] = x[i] + y[i];
  (void)sizes;
}

/* out[i] = 2 * x[i] + y[i], sizes[0] doubles */
void twice_plus(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0], *y = (const double *)buffers[1];
  double *out = (double *)buffers[2];
  for (int64_t i = 0; i < sizes[0]; ++i) out[i] = 2 * x[i] + y[i];
}
"""
F64 = np.dtype(np.float64)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return _C.KernelLibrary(compile_library(tmp_path_factory.mktemp("launcher"), SOURCE))


class Fallback:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "fallback"


def twice_plus_input(library, fallback):
    """(2x + x, 2x): slot 0 is x, slot 1 the intermediate 2x, slot 2 the sum."""
    twice, add = library.kernel("twice", 2, 0), library.kernel("add", 3, 0)
    steps = [(twice, (0, 1), (), (1,), ()), (add, (1, 0, 2), (), (2,), ())]
    return _C.Launcher(fallback, [(F64, (4,))], [(F64, (4,)), (F64, (4,))], steps, (2, 1))


def test_runs_the_kernels_into_new_arrays(library):
    fallback = Fallback()
    launcher = twice_plus_input(library, fallback)
    x = np.arange(4.0)
    total, doubled = launcher(x)
    np.testing.assert_array_equal(total, 3 * x)
    np.testing.assert_array_equal(doubled, 2 * x)
    assert total.dtype == F64 and total.flags.c_contiguous and total.flags.owndata
    again, _ = launcher(x)
    assert again is not total and fallback.calls == []


def test_a_single_output_and_an_input_returned_as_is(library):
    twice = library.kernel("twice", 2, 0)
    x = np.arange(4.0)
    single = _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (4,))], [(twice, (0, 1), (), (1,), ())], 1)
    np.testing.assert_array_equal(single(x), 2 * x)
    echo = _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (4,))], [(twice, (0, 1), (), (1,), (1,))], (0,))
    (same,) = echo(x)
    assert same is x


@pytest.mark.parametrize("other", [np.arange(4, dtype=np.float32), np.arange(5.0), np.arange(8.0)[::2],
                                   np.arange(4.0).reshape(2, 2), [0.0, 1.0, 2.0, 3.0],
                                   np.arange(4.0).view(np.matrix)],
                         ids=["dtype", "shape", "strided", "ndim", "list", "subclass"])
def test_other_inputs_go_to_the_fallback_with_their_arguments(library, other):
    fallback = Fallback()
    assert twice_plus_input(library, fallback)(other) == "fallback"
    ((args, kwargs),) = fallback.calls
    assert args[0] is other and kwargs == {}


def test_size_symbols_bind_from_the_inputs_and_their_guards_hold(library):
    """Symbol 0 (-1) sizes x, y and the result; the guard asks for at least 3 elements."""
    fallback = Fallback()
    kernel = library.kernel("twice_plus", 3, 1)
    launcher = _C.Launcher(fallback, [(F64, (-1,)), (F64, ((-1,),))], [(F64, (-1,))],
                           [(kernel, (0, 1, 2), (-1,), (2,), ())], 2, [(-1, ">=", 3)])
    for size in (3, 7, 1000):
        x, y = np.arange(float(size)), np.ones(size)
        np.testing.assert_array_equal(launcher(x, y), 2 * x + y)
    assert fallback.calls == []
    x = np.arange(4.0)
    for args in ((x, np.ones(5)), (x[:2], np.ones(2))):  # unequal sizes; the guard fails
        assert launcher(*args) == "fallback"
    assert len(fallback.calls) == 2


def test_keywords_and_other_argument_counts_go_to_the_fallback(library):
    fallback = Fallback()
    launcher = twice_plus_input(library, fallback)
    x = np.arange(4.0)
    assert launcher(x, _layouts_checked=True) == "fallback" and launcher(x, x) == "fallback"
    assert fallback.calls == [((x,), {"_layouts_checked": True}), ((x, x), {})]


def test_an_equal_dtype_object_is_taken(library):
    fallback = Fallback()
    x = np.frombuffer(np.arange(4.0).tobytes(), dtype=np.dtype("<f8"))
    np.testing.assert_array_equal(twice_plus_input(library, fallback)(x)[0], 3 * x)
    assert fallback.calls == []


# -- NOTE(c-launcher-matmul) -------------------------------------------------------------
def test_a_call_step_writes_numpys_product_for_a_kernel_to_overwrite(library):
    fallback = Fallback()
    twice_plus = library.kernel("twice_plus", 3, 1)  # in place: 2p + p over the product p
    steps = [(np.matmul, (0, 1, 2), False, (2,), ()), (twice_plus, (2, 2, 2), (4,), (), ())]
    launcher = _C.Launcher(fallback, [(F64, (2, 3)), (F64, (3, 2))], [(F64, (2, 2))], steps, 2)
    a, b = np.arange(6.0).reshape(2, 3) / 7, np.arange(6.0).reshape(3, 2) / 3
    result = launcher(a, b)
    np.testing.assert_array_equal(result, 2 * (a @ b) + a @ b)
    assert result.flags.c_contiguous and fallback.calls == []


def test_a_call_step_on_rows_multiplies_a_stack_as_one_matrix():  # NOTE(flat-matmul)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    launcher = _C.Launcher(Fallback(), [(F64, (-1, 3, 4)), (F64, (4, 5))], [(F64, (-1, 3, 5))],
                           [(np.matmul, (0, 1, 2), True, (2,), ())], 2)
    for stack in (a, a[:0], rng.standard_normal((9, 3, 4))):
        np.testing.assert_array_equal(launcher(stack, b), np.matmul(stack.reshape(-1, 4), b).reshape(-1, 3, 5))


def test_a_failing_call_step_raises_its_error_and_returns_nothing():
    # a description whose product does not fit its buffer: NumPy's error comes out
    launcher = _C.Launcher(Fallback(), [(F64, (2, 3)), (F64, (3, 2))], [(F64, (2, 3))],
                           [(np.matmul, (0, 1, 2), False, (2,), ())], 2)
    with pytest.raises(ValueError):
        launcher(np.ones((2, 3)), np.ones((3, 2)))


def test_attributes_can_be_set():
    launcher = _C.Launcher(Fallback(), [], [], [], ())
    launcher.kernels = ["k"]
    assert launcher.kernels == ["k"] and launcher() == ()


def test_malformed_descriptions_are_refused(library):
    twice = library.kernel("twice", 2, 0)
    with pytest.raises(ValueError, match="slot 2 is out of range"):
        _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (4,))], [(twice, (0, 2), (), (1,), ())], 1)
    with pytest.raises(ValueError, match="takes 2 arrays and 0 sizes"):
        _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (4,))], [(twice, (0,), (), (1,), ())], 1)
    with pytest.raises(ValueError, match="no input binds"):
        _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (-1,))], [(twice, (0, 1), (), (1,), ())], 1)
    with pytest.raises(ValueError, match="unknown relation"):
        _C.Launcher(Fallback(), [(F64, (-1,))], [], [], (), [(-1, "=", 2)])
    with pytest.raises(TypeError, match="callable"):
        _C.Launcher(None, [], [], [], ())
    with pytest.raises(TypeError, match="Kernel or callable"):
        _C.Launcher(Fallback(), [(F64, (4,))], [(F64, (4,))], [(None, (0, 1), False, (1,), ())], 1)
    with pytest.raises(ValueError, match="operands and an output"):
        _C.Launcher(Fallback(), [(F64, (4,))], [], [(np.matmul, (0,), False, (), ())], 0)
    with pytest.raises(ValueError, match="at most 64 size symbols"):
        _C.Launcher(Fallback(), [(F64, (-65,))], [], [], ())


# -- NOTE(launcher-buffer-reuse) ---------------------------------------------------------------
def reusing_twice_plus(library):
    """2x + y over any number of float64 elements, its buffer kept across calls."""
    kernel = library.kernel("twice_plus", 3, 1)
    return _C.Launcher(Fallback(), [(F64, (-1,)), (F64, (-1,))], [(F64, (-1,))],
                       [(kernel, (0, 1, 2), (-1,), (2,), ())], 2, reuse_buffers=True)


def test_a_dropped_result_is_written_again_at_the_next_call(library):
    launcher = reusing_twice_plus(library)
    x, y = np.arange(5.0), np.ones(5)
    address = launcher(x, y).ctypes.data  # dropped at once
    result = launcher(3 * x, y)
    assert result.ctypes.data == address
    np.testing.assert_array_equal(result, 6 * x + y)


def test_a_held_result_or_a_view_of_it_is_never_overwritten(library):
    launcher = reusing_twice_plus(library)
    x, y = np.arange(5.0), np.ones(5)
    first = launcher(x, y)
    second = launcher(2 * x, y)
    assert not np.shares_memory(first, second)
    view = second[1:]
    del second
    third = launcher(3 * x, y)
    assert not np.shares_memory(third, view)
    np.testing.assert_array_equal(first, 2 * x + y)
    np.testing.assert_array_equal(view, (4 * x + y)[1:])
    np.testing.assert_array_equal(third, 6 * x + y)


def test_a_new_size_gets_a_new_buffer(library):
    launcher = reusing_twice_plus(library)
    for size in (4, 7, 7, 2):
        x = np.arange(float(size))
        np.testing.assert_array_equal(launcher(x, np.ones(size)), 2 * x + 1)

