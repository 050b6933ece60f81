"""pyjit/autograd/nodes.py: node names, edges, saved values and what happens to them."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd.nodes import AccumulateGrad, Saved, UnusableValue, VersionCounter, backward_name
from pyjit.ops import REGISTRY


def leaf(values):
    return pyjit.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize(("op", "name"), [
    ("multiply", "MulBackward"), ("add", "AddBackward"), ("subtract", "SubBackward"), ("divide", "DivBackward"),
    ("power", "PowBackward"), ("negative", "NegBackward"), ("abs", "AbsBackward"), ("sum", "SumBackward"),
    ("matmul", "MatmulBackward"), ("floor_divide", "FloorDivideBackward"), ("index_add", "IndexAddBackward"),
    ("concatenate", "CatBackward"), ("astype", "ToCopyBackward"), ("arcsin", "AsinBackward"),
])
def test_nodes_are_named_as_pytorch_names_them(op, name):
    assert backward_name(op) == name


def test_every_differentiable_primitive_has_a_name():
    names = {backward_name(name) for name, entry in REGISTRY.items() if getattr(entry, "vjp", None) is not None}
    assert all(name.endswith("Backward") and name[0].isupper() and "_" not in name for name in names)


def test_next_functions_have_one_edge_per_tensor_input():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    constant = pyjit.tensor([1.0, 1.0], dtype=np.float64)
    y = x * w
    z = np.concatenate([y, constant, x]) * 2.0
    cat = z.grad_fn.next_functions[0][0]
    assert len(z.grad_fn.next_functions) == 1 and cat.name() == "CatBackward"
    assert [(node.name() if node else None, nr) for node, nr in cat.next_functions] == [
        ("MulBackward", 0), (None, 0), ("AccumulateGrad", 0)]
    accumulator = cat.next_functions[2][0]
    assert isinstance(accumulator, AccumulateGrad) and accumulator.variable is x and accumulator.kind == "accumulate_grad"
    assert y.grad_fn.next_functions[0][0] is accumulator  # one accumulator per leaf


def test_saved_values_are_labelled_arrays_and_saved_tensors_wrap_them():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    labels = [label for label, _ in y.grad_fn.saved_values()]
    assert labels == ["input 0", "output 0"]
    saved = y.grad_fn.saved_tensors
    assert [t.tolist() for t in saved] == [[1.0, 2.0], [3.0, 6.0]] and not saved[0].requires_grad
    assert repr(y.grad_fn) == "<MulBackward (op), saved: input 0 [2], output 0 [2]>"


def test_a_saved_slot_knows_when_it_was_released_or_modified():
    counter = VersionCounter()
    array = np.ones(3)
    slot = Saved(array, counter)
    assert slot.unpack("Node", "input 0") is array
    counter.value += 1
    stale = slot.unpack("Node", "input 0")
    assert isinstance(stale, UnusableValue) and "is at version 1; expected version 0" in stale.message
    slot.rebind(array, counter)
    assert slot.unpack("Node", "input 0") is array
    slot.release()
    freed = slot.unpack("Node", "input 0")
    assert isinstance(freed, UnusableValue) and freed.shape == (3,) and freed.dtype == np.float64


def test_an_unusable_value_answers_shape_questions_and_refuses_the_rest():
    value = UnusableValue((2, 3), np.float32, np, "no values here")
    assert (value.shape, value.ndim, value.size) == ((2, 3), 2, 6)
    assert REGISTRY["zeros_like"](value).shape == (2, 3)
    assert REGISTRY["full_like"](value, 2.0).dtype == np.float32
    assert REGISTRY["sum_to_shape"](np.ones((4, 2, 3)), value.shape).shape == (2, 3)
    with pytest.raises(RuntimeError, match="no values here"):
        REGISTRY["multiply"](np.ones(3), value)
    with pytest.raises(RuntimeError, match="no values here"):
        np.asarray(value)


def test_a_node_prehook_sees_the_gradient_of_its_output():
    x = leaf([1.0, 2.0])
    y = x * 2
    handle = y.grad_fn.register_prehook(lambda grad: grad * 3)
    assert list(y.grad_fn.pre_hooks.values())[0][0] == 0
    y.sum().backward(retain_graph=True)
    handle.remove()
    y.sum().backward()
    assert x.grad.tolist() == [8.0, 8.0] and y.grad_fn.pre_hooks == {}
