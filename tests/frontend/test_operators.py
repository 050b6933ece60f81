"""pyjit/frontend/operators.py: operators on arrays are NumPy's, and in-place updates
become functional ops in the graph (NOTE(functionalisation))."""

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.utils import counters
from frontend.test_array_calls import graph_calls


def integer_bits(a, b):
    mixed = (a & b) | (a ^ 5) ^ ~b
    shifted = (a << 3) >> (b & 7)
    mixed &= 0x7F
    shifted <<= 1
    return mixed, shifted, a >> 70, -a << 62, ~(a > 0), (a > 0) & (b > 0) | (a < -3)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16])
def test_bit_operators_on_integers_are_numpys_bitwise_ops_in_one_graph(jit, backend, dtype):
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-9 if dtype != np.uint16 else 0, 90, (3, 4)).astype(dtype) for _ in range(2))
    got, want = jit(integer_bits, backend=backend, fullgraph=True)(a, b), integer_bits(a, b)
    for got_item, want_item in zip(got, want, strict=True):
        assert got_item.dtype == want_item.dtype
        np.testing.assert_array_equal(got_item, want_item)


def test_bool_operators_stay_logical_ops(jit):
    compiled = jit(lambda a, b: (a & b, ~a), fullgraph=True)
    flags = np.array([True, False, True])
    got = compiled(flags, flags[::-1].copy())
    np.testing.assert_array_equal(got[0], flags & flags[::-1])
    assert [name for name, _ in graph_calls(compiled)] == ["logical_and", "logical_not"]


# -- in-place operators on arrays the graph computed (NOTE(functionalisation)) ----------------
def test_in_place_operators_on_computed_arrays_are_functional_ops_in_the_graph(jit):
    def f(a):
        x = a * 2
        alias = x
        x += 1
        alias *= 3.0  # the same array: both names see both changes
        x //= 2
        return x, alias

    a = np.arange(5.0)
    compiled = jit(f)
    got, want = compiled(a), f(a)
    assert same(got, want) and got[0] is got[1]
    assert not counters["graph_break"]
    assert [name for name, _ in graph_calls(compiled)] == ["multiply", "add", "multiply", "floor_divide"]


def test_in_place_results_are_cast_back_as_numpys_in_place_ufuncs_cast(jit):
    def f(a, b):
        x = a * 2
        x += b  # a float64 result, written into float32
        return x

    a, b = np.arange(4, dtype=np.float32), np.full(4, 0.1)
    compiled = jit(f)
    got = compiled(a, b)
    assert same(got, f(a, b)) and got.dtype == np.float32
    assert [name for name, _ in graph_calls(compiled)][-1] == "astype"


def into_a_viewed_array(a):
    x = a * 2
    head = x[:2]
    x += 1
    return head


def into_a_view(a):
    x = (a * 2)[:2]
    x += 1
    return x


def int_plus_float(a):
    x = a.astype(np.int64)
    x += 1.5
    return x


def into_a_broadcast(a):
    x = a.sum(keepdims=True)
    x += a
    return x


@pytest.mark.parametrize(("fn", "reason"), [
    (into_a_viewed_array, "a view, or an array a view was taken of"),
    (into_a_view, "a view, or an array a view was taken of"),
    (int_plus_float, "NumPy does not cast to int64 in place"),
    (into_a_broadcast, "a result whose shape is not the array's"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_in_place_operators_that_the_graph_cannot_model_break_with_numpys_behaviour(jit, fn, reason):
    plain, compiled_input = np.arange(3.0), np.arange(3.0)
    try:
        want = fn(plain)
    except Exception as error:  # NumPy refuses: the compiled code raises the same
        with pytest.raises(type(error)):
            jit(fn)(compiled_input)
    else:
        assert same(jit(fn)(compiled_input), want) and same(compiled_input, plain)
    assert any(reason in key for key in counters["graph_break"]), dict(counters["graph_break"])


def test_in_place_on_a_tensor_gives_the_tapes_gradient():
    def f(w):
        x = w * 2
        x += 1
        return (x * x).sum()

    pyjit.reset()
    w, tape_w = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.arange(3.0), requires_grad=True)
    pyjit.compile(f, backend="aot_eager")(w).backward()
    f(tape_w).backward()
    np.testing.assert_array_equal(w.grad.numpy(), tape_w.grad.numpy())


def test_in_place_on_a_tensor_an_op_already_read_breaks():
    def f(w):
        x = w * 2
        y = x * x  # the tape saves x here; changing it in place fails at backward
        x += 1
        return y.sum()

    pyjit.reset()
    counters.clear()
    out = pyjit.compile(f, backend="aot_eager")(pyjit.tensor(np.arange(3.0), requires_grad=True))
    assert any("a pyjit.Tensor an op has already read" in key for key in counters["graph_break"])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_tensor_in_place_methods_are_functional_ops_too():
    def f(w):
        x = w * 2
        x.add_(1).mul_(w)
        x.sub_(0.5)
        x.div_(2.0)
        return x.sum()

    pyjit.reset()
    counters.clear()
    w, tape_w = pyjit.tensor(np.arange(3.0), requires_grad=True), pyjit.tensor(np.arange(3.0), requires_grad=True)
    out = pyjit.compile(f, backend="aot_eager")(w)
    assert not counters["graph_break"] and out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    want = f(tape_w)
    want.backward()
    assert out.item() == want.item()
    np.testing.assert_array_equal(w.grad.numpy(), tape_w.grad.numpy())


def test_an_in_place_method_on_a_leaf_that_requires_grad_gives_the_tapes_error():
    def f(w):
        w.add_(1)
        return w

    pyjit.reset()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        pyjit.compile(f, backend="aot_eager")(pyjit.tensor(np.arange(3.0), requires_grad=True))
