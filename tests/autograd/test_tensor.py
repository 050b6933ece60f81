"""pyjit/autograd/tensor.py: the Tensor, its dispatch, operators, protocols, in-place ops."""

import copy

import numpy as np
import pytest

import pyjit
from pyjit.autograd import Tensor


def leaf(values, dtype=np.float64):
    return pyjit.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# -- what a tensor is ------------------------------------------------------------------
def test_a_tensor_wraps_its_array_and_describes_it():
    array = np.arange(6.0).reshape(2, 3)
    t = pyjit.from_numpy(array)
    assert t.array is array and t.numpy() is array
    assert (t.shape, t.dtype, t.device, t.ndim, t.size, t.numel(), t.dim()) == ((2, 3), np.float64, "cpu", 2, 6, 6, 2)
    assert (t.itemsize, t.nbytes, t.strides) == (8, 48, array.strides)
    assert len(t) == 2 and [row.shape for row in t] == [(3,), (3,)]
    assert t.is_leaf and not t.requires_grad and t.grad is None and t.grad_fn is None


def test_tensors_hash_by_identity_and_compare_elementwise():
    a, b = pyjit.tensor([1.0, 2.0]), pyjit.tensor([1.0, 3.0])
    assert len({a, b, a}) == 2
    np.testing.assert_array_equal((a == b).numpy(), [True, False])


def test_requires_grad_is_for_floating_leaves():
    with pytest.raises(RuntimeError, match="floating point"):
        pyjit.tensor([1, 2], requires_grad=True)
    x = leaf([1.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    assert y.requires_grad_() is y
    assert pyjit.tensor([1.0]).requires_grad_().requires_grad


def test_len_of_a_scalar_tensor_is_an_error():
    with pytest.raises(TypeError):
        len(pyjit.tensor(1.0))


def test_scalars_convert_like_numpy():
    t = pyjit.tensor(2.5)
    assert float(t) == 2.5 and int(t) == 2 and bool(t) and t.item() == 2.5 and t.tolist() == 2.5
    assert [10, 20, 30][pyjit.tensor(1)] == 20
    with pytest.raises(ValueError):
        bool(pyjit.tensor([1.0, 2.0]))


# -- dispatch: what records and what does not ------------------------------------------------
def test_an_op_on_a_tensor_that_requires_grad_records_a_node():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward"
    assert isinstance(y, Tensor) and type(y.array) is np.ndarray


def test_results_without_a_derivative_or_a_floating_dtype_do_not_require_grad():
    x = leaf([1.0, -2.0])
    assert not (x > 0).requires_grad
    assert not np.argmax(x).requires_grad
    assert not np.zeros_like(x).requires_grad
    assert not x.astype(np.int64).requires_grad


def test_zero_dimensional_results_are_tensors_of_zero_dimensional_arrays():
    total = leaf([1.0, 2.0]).sum()
    assert isinstance(total.array, np.ndarray) and total.shape == () and total.item() == 3.0


def test_ops_mixing_tensors_arrays_and_scalars_follow_numpy_promotion():
    x = pyjit.tensor(np.ones(3, np.float32))
    assert (x * 2.0).dtype == np.float32  # a Python scalar is weak (NEP 50)
    assert (x + np.ones(3)).dtype == np.float64
    assert (np.ones(3) + x).dtype == np.float64 and isinstance(np.ones(3) + x, Tensor)


def test_a_plain_array_changed_in_place_after_the_op_leaves_the_gradient_alone():
    x, weights = leaf([1.0, 2.0]), np.array([3.0, 4.0])
    (x * weights).sum().backward()
    expected = x.grad.numpy().copy()
    x.grad = None
    y = x * weights
    weights[:] = 100.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_a_keyword_argument_that_requires_grad_is_refused_rather_than_dropped():
    x, bound = leaf([1.0, 2.0]), leaf([1.5])
    with pytest.raises(RuntimeError, match="positional"):
        np.clip(x, a_min=bound)
    assert np.clip(x, bound, None).requires_grad


def test_tensors_on_different_devices_cannot_meet(monkeypatch):
    gpu_like = pyjit.tensor([1.0])
    monkeypatch.setattr(type(gpu_like), "device", property(lambda self: "cuda:0" if self is gpu_like else "cpu"))
    monkeypatch.setattr(gpu_like, "_array", _NotNumpy(np.ones(1)))
    with pytest.raises(RuntimeError, match="same device"):
        gpu_like + pyjit.tensor([1.0])


class _NotNumpy(np.ndarray):
    """An array whose type is not numpy.ndarray, as CuPy's is not."""

    def __new__(cls, values):
        return np.asarray(values).view(cls)


# -- operators ------------------------------------------------------------------------------
@pytest.mark.parametrize(("expression", "expected"), [
    (lambda a, b: a + b, [4.0, 7.0]), (lambda a, b: a - b, [-2.0, -3.0]), (lambda a, b: a * b, [3.0, 10.0]),
    (lambda a, b: b / a, [3.0, 2.5]), (lambda a, b: b // a, [3.0, 2.0]), (lambda a, b: b % a, [0.0, 1.0]),
    (lambda a, b: a ** 2, [1.0, 4.0]), (lambda a, b: 2 ** a, [2.0, 4.0]), (lambda a, b: 1 + a, [2.0, 3.0]),
    (lambda a, b: 1 - a, [0.0, -1.0]), (lambda a, b: 2 * a, [2.0, 4.0]), (lambda a, b: 2 / a, [2.0, 1.0]),
    (lambda a, b: 5 // a, [5.0, 2.0]), (lambda a, b: 5 % b, [2.0, 0.0]), (lambda a, b: -a, [-1.0, -2.0]),
    (lambda a, b: abs(-a), [1.0, 2.0]), (lambda a, b: +a, [1.0, 2.0]), (lambda a, b: a @ b, 13.0),
    (lambda a, b: np.ones(2) @ a, 3.0),
])
def test_arithmetic_operators(expression, expected):
    a, b = pyjit.tensor([1.0, 2.0]), pyjit.tensor([3.0, 5.0])
    np.testing.assert_allclose(expression(a, b).numpy(), expected)


def test_comparison_operators_give_boolean_tensors():
    a, b = pyjit.tensor([1.0, 2.0]), pyjit.tensor([2.0, 2.0])
    results = [a < b, a <= b, a > b, a >= b, a == b, a != b]
    assert [r.numpy().tolist() for r in results] == [[True, False], [True, True], [False, False], [False, True],
                                                     [False, True], [True, False]]


def test_logical_operators_take_booleans():
    p, q = pyjit.tensor([True, False]), pyjit.tensor([True, True])
    assert [(p & q).tolist(), (p | q).tolist(), (p ^ q).tolist(), (~p).tolist()] == [
        [True, False], [True, True], [False, True], [False, True]]
    with pytest.raises(TypeError, match="logical"):
        pyjit.tensor([1, 2]) & 1


# -- indexing -----------------------------------------------------------------------------
def test_basic_indexing_is_a_view_sharing_the_version_counter():
    x = pyjit.tensor(np.arange(6.0).reshape(2, 3))
    row = x[1, ::2]
    assert row.tolist() == [3.0, 5.0] and np.shares_memory(row.array, x.array)
    assert row._base is x and row._version_counter is x._version_counter


def test_integer_array_and_mask_indexing_copy_and_record():
    x = leaf(np.arange(4.0))
    picked = x[[0, 0, 3]]
    masked = x[pyjit.tensor([True, False, True, False])]
    by_tensor = x[pyjit.tensor([1, 2])]
    assert picked.grad_fn.name() == "IndexBackward" and picked.tolist() == [0.0, 0.0, 3.0]
    (picked.sum() + masked.sum() + by_tensor.sum()).backward()
    assert x.grad.tolist() == [3.0, 1.0, 2.0, 1.0]


# -- NumPy's protocols --------------------------------------------------------------------
def test_numpy_functions_return_tensors_and_record():
    x = leaf([0.5, -1.0])
    w = leaf([[1.0], [2.0]])
    for result in (np.sin(x), np.matmul(x, w), np.where(x > 0, x, 0), np.sum(x, axis=0), np.abs(x),
                   np.remainder(x, 2.0), np.amax(x), np.concatenate([x, x]), np.mean(x, keepdims=True)):
        assert isinstance(result, Tensor) and result.requires_grad
    np.where(x > 0, x, 0).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0]


def test_numpy_reads_the_array_of_a_tensor():
    x = pyjit.tensor(np.array([1.0, 2.0]))
    assert np.asarray(x) is x.array
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    assert np.array(x) is not x.array
    assert np.shape(x) == (2,) and np.ndim(x) == 1 and np.size(x) == 2
    assert np.result_type(x, np.float32) == np.float64


def test_a_numpy_function_outside_the_registry_raises_a_type_error_naming_it():
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="numpy.unique"):
        np.unique(x)  # its shape depends on the values: never in the registry
    with pytest.raises(TypeError, match="numpy.add.reduce"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match="out"):
        np.add(x, 1.0, out=np.empty(2))


def test_methods_read_dim_and_keepdim_as_axis_and_keepdims():
    x = pyjit.tensor(np.arange(6.0).reshape(2, 3))
    assert x.sum(dim=1, keepdim=True).shape == (2, 1)
    with pytest.raises(TypeError, match="both"):
        x.sum(dim=0, axis=0)


# -- in place (NOTE(inplace)) -------------------------------------------------------------------
def test_inplace_arithmetic_updates_the_array_and_bumps_the_version():
    x = pyjit.tensor([1.0, 2.0])
    array = x.array
    x += 1
    x *= pyjit.tensor([2.0, 3.0])
    x -= 1
    x /= 2
    x.add_(1, alpha=2).sub_(pyjit.tensor([1.0, 1.0])).mul_(2).div_(2)
    assert x.array is array and x.tolist() == [2.5, 5.0] and x._version == 8


def test_inplace_casting_follows_numpy():
    x = pyjit.tensor([1, 2])
    with pytest.raises(TypeError):
        x += 0.5
    y = pyjit.tensor(np.ones(2, np.float32))
    y += np.ones(2)  # same_kind: float64 into float32 is allowed
    assert y.dtype == np.float32
    with pytest.raises(ValueError):
        y += np.ones((2, 2))


def test_inplace_on_a_leaf_that_requires_grad_is_refused_while_recording():
    w = leaf([1.0, 2.0])
    for update in (lambda: w.__iadd__(1), lambda: w.zero_(), lambda: w.copy_(np.ones(2)), lambda: w.fill_(3.0)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            update()
    view = w[:1]
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        view += 1
    with pyjit.no_grad():
        w -= 0.5
        w[0] = 7.0
    assert w.tolist() == [7.0, 1.5] and w._version == 2 and w.requires_grad


def test_inplace_on_a_non_leaf_takes_over_the_history():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    y = x * 2
    y *= w  # needs the old y for w's gradient: it was copied before the update
    assert y.grad_fn.name() == "MulBackward" and y.tolist() == [6.0, 16.0]
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 8.0] and w.grad.tolist() == [2.0, 4.0]


def test_inplace_on_a_constant_with_a_recorded_operand_records():
    buffer = pyjit.zeros(2, dtype=np.float64)
    w = leaf([1.0, 2.0])
    buffer += w
    buffer.copy_(w * 3)  # the old value (w) is overwritten: no gradient flows through it
    assert buffer.requires_grad and buffer.tolist() == [3.0, 6.0]
    buffer.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_copy_and_fill_without_recording():
    x = pyjit.zeros(2, 2)
    x.copy_(np.array([1.0, 2.0]))
    assert x.tolist() == [[1.0, 2.0], [1.0, 2.0]] and x.dtype == np.float32
    x.fill_(3).zero_()
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]] and x._version == 3


def test_fill_of_a_non_leaf_cuts_the_gradient():
    x = leaf([1.0, 2.0])
    y = x * 1
    y.fill_(5.0)
    y.sum().backward()
    assert y.grad_fn.name() == "FullLikeBackward" and x.grad is None


def test_inplace_that_pyjit_cannot_record_is_refused():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    view = y[:2]
    with pytest.raises(RuntimeError, match="view"):
        view += 1
    with pytest.raises(RuntimeError, match="recorded view"):
        y += 1
    with pytest.raises(RuntimeError, match="item assignment"):
        y[0] = 1.0


def test_item_assignment_writes_and_bumps_the_version():
    x = pyjit.zeros(3)
    x[pyjit.tensor([0, 2])] = pyjit.tensor(1.0)
    x[1] = 5
    assert x.tolist() == [1.0, 5.0, 1.0] and x._version == 2


# -- conversion ---------------------------------------------------------------------------------
def test_detach_shares_memory_and_version_and_leaves_the_tape():
    x = leaf([1.0])
    d = x.detach()
    assert not d.requires_grad and d.array is x.array and d._version_counter is x._version_counter


def test_data_is_a_detached_alias_with_its_own_version_counter():
    w = leaf([1.0, 2.0])
    d = w.data
    d -= 1  # not recorded: d does not require grad
    assert w.tolist() == [0.0, 1.0] and w._version == 0
    w.data = np.array([5.0])
    assert w.tolist() == [5.0]


def test_clone_is_a_recorded_copy():
    x = leaf([1.0, 2.0])
    c = x.clone()
    assert c.array is not x.array and c.grad_fn.name() == "ToCopyBackward"


def test_to_converts_dtypes_on_the_tape_and_moves_devices_off_it():
    x = leaf([1.0, 2.0])
    assert x.to("cpu") is x and x.cpu() is x and x.contiguous() is x
    y = x.to(np.float32)
    assert y.dtype == np.float32 and y.grad_fn.name() == "ToCopyBackward"
    assert x.to(dtype="float64", copy=True) is not x
    assert x.to(pyjit.tensor([1], dtype=np.int32)).dtype == np.int32
    assert [x.float().dtype, x.double().dtype, x.half().dtype, x.long().dtype, x.int().dtype, x.bool().dtype] == [
        np.float32, np.float64, np.float16, np.int64, np.int32, np.bool_]


def test_numpy_of_a_cuda_tensor_is_an_error_naming_the_device(monkeypatch):
    t = pyjit.tensor([1.0])
    monkeypatch.setattr(t, "_array", _NotNumpy(np.ones(1)))
    monkeypatch.setattr(type(t), "device", property(lambda self: "cuda:0"))
    with pytest.raises(TypeError, match="cuda:0"):
        t.numpy()


def test_repr_reads_like_pytorchs():
    assert repr(pyjit.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(pyjit.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(pyjit.tensor(np.array([0.5])) * 2) == "tensor([1.], dtype=float64)"
    assert repr(leaf([1.0]) * 2) == "tensor([2.], dtype=float64, grad_fn=<MulBackward>)"


def test_deepcopy_copies_leaves_with_their_grad_and_attributes():
    class Parameter(Tensor):
        def __init__(self, data):
            super().__init__(data, requires_grad=True)
            self.name = "weight"

    p = Parameter(np.ones(2))
    (p * 2).sum().backward()
    clone = copy.deepcopy(p)
    assert type(clone) is Parameter and clone.name == "weight" and clone.requires_grad
    assert clone.array is not p.array and clone.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(p * 2)


def test_a_subclass_shares_memory_with_the_tensor_it_wraps_and_results_are_plain_tensors():
    class Parameter(Tensor):
        pass

    base = pyjit.tensor([1.0])
    p = Parameter(base, requires_grad=True)
    assert p.array is base.array and p._version_counter is base._version_counter
    assert type(p * 2) is Tensor


def test_format_pickle_and_comparison_with_none():
    import pickle

    loss = pyjit.tensor(np.float64(0.123456), requires_grad=True)
    assert f"{loss:.3f}" == "0.123" and f"{pyjit.tensor([1.0])}" == "tensor([1.])"
    restored = pickle.loads(pickle.dumps(loss * 2))  # the values, not the history
    assert restored.is_leaf and restored.requires_grad and restored.item() == loss.item() * 2
    assert not pickle.loads(pickle.dumps(pyjit.tensor([1.0]))).requires_grad
    assert (loss == None) is False and (loss != None) is True  # noqa: E711
    with pytest.raises(TypeError):
        loss + None


def test_allclose_and_assert_allclose_take_tensors():
    t = pyjit.tensor(np.array([1.0, 2.0, np.nan]), requires_grad=True)
    near, far = np.array([1.0, 2.0 + 1e-9, np.nan]), np.array([1.0, 2.5, np.nan])
    assert np.allclose(t, near, equal_nan=True) is True and np.allclose(t, far, equal_nan=True) is False
    assert np.allclose(t, pyjit.tensor(near), equal_nan=True) and not np.allclose(t, near)  # NaN != NaN by default
    assert np.array_equal(t, t, equal_nan=True) and not np.array_equal(t, far)
    assert pyjit.allclose(t, near, equal_nan=True) is True and pyjit.allclose(t, far, equal_nan=True) is False
    assert pyjit.allclose(pyjit.tensor([1.0]), pyjit.tensor([1.1]), rtol=0.2)
    np.testing.assert_allclose(t, near, equal_nan=True)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(t, far)
    assert t.grad_fn is None and t.grad is None  # nothing was recorded
