"""pyjit/nn/module.py: registration, walking the structure, modes, gradients, state."""

import copy
import pickle

import numpy as np
import pytest

import pyjit
from pyjit import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(pyjit.tensor(np.array([2.0, 3.0])))
        self.inner = nn.Linear(2, 2, dtype=np.float64)
        self.offset = nn.Parameter(pyjit.tensor(np.array(1.0)))
        self.register_buffer("count", pyjit.tensor(np.array([7])))
        self.register_buffer("scratch", pyjit.tensor(np.zeros(2)), persistent=False)

    def forward(self, x):
        return self.inner(x) * self.scale + self.offset


def test_parameters_and_submodules_register_in_assignment_order():
    block = Block()
    assert [name for name, _ in block.named_parameters()] == ["scale", "offset", "inner.weight", "inner.bias"]
    assert list(block.parameters())[0] is block.scale
    assert [name for name, _ in block.named_children()] == ["inner"]
    assert [name for name, _ in block.named_modules()] == ["", "inner"]
    assert [name for name, _ in block.named_buffers()] == ["count", "scratch"]
    assert "scale" not in vars(block)  # it lives in _parameters, read through __getattr__


def test_a_parameter_is_a_leaf_tensor_that_requires_grad():
    param = nn.Parameter(pyjit.tensor(np.ones(3)))
    assert isinstance(param, pyjit.Tensor) and param.requires_grad and param.grad_fn is None
    assert type(param * 2) is pyjit.Tensor
    assert not nn.Parameter(pyjit.tensor(np.ones(3)), requires_grad=False).requires_grad
    assert repr(param).startswith("Parameter containing:\ntensor(")


def test_shared_parameters_and_modules_are_listed_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(model.parameters())) == 2
    assert len(list(model.named_parameters(remove_duplicate=False))) == 4
    assert [name for name, _ in model.named_modules()] == ["", "0", "1"]
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_assignment_rules():
    block = Block()
    with pytest.raises(TypeError, match="cannot assign 'ndarray' as parameter 'scale'"):
        block.scale = np.ones(2)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'inner'"):
        block.inner = 3
    with pytest.raises(TypeError, match="buffer 'count'"):
        block.count = [1]
    block.scale = None
    assert block.scale is None and [name for name, _ in block.named_parameters()][0] == "offset"
    block.inner = nn.Tanh()  # a new module replaces the old one in place
    assert [name for name, _ in block.named_children()] == ["inner"]
    del block.count
    assert [name for name, _ in block.named_buffers()] == ["scratch"]
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'missing'"):
        block.missing


def test_registering_before_init_or_with_bad_names_fails():
    class Forgetful(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(pyjit.tensor(np.ones(1)))

    with pytest.raises(AttributeError, match="before Forgetful calls Module.__init__"):
        Forgetful()
    module = nn.Module()
    with pytest.raises(KeyError, match="contain no '.'"):
        module.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="already exists"):
        module.register_buffer("train", None)
    module.register_parameter("weight", None)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        module.register_buffer("weight", None)
    with pytest.raises(TypeError, match="not a Module subclass"):
        module.add_module("x", 3)


def test_call_runs_forward_and_a_module_without_forward_says_so():
    block = Block()
    x = pyjit.tensor(np.ones((3, 2)))
    np.testing.assert_allclose(block(x).numpy(), (block.inner(x) * block.scale + 1.0).numpy())
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(x)


def test_train_and_eval_recurse():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    assert model.eval() is model
    assert [module.training for module in model.modules()] == [False] * 4
    model.train()
    assert all(module.training for module in model.modules())
    with pytest.raises(ValueError, match="boolean"):
        model.train("no")


def test_zero_grad_sets_none_or_zeros():
    model = nn.Linear(3, 2, dtype=np.float64)
    model(pyjit.tensor(np.ones((4, 3)))).sum().backward()
    assert model.weight.grad is not None
    model.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(model.weight.grad.numpy(), np.zeros((2, 3)))
    model.zero_grad()
    assert model.weight.grad is None and model.bias.grad is None


def test_state_dict_holds_array_copies_in_order():
    block = Block()
    state = block.state_dict()
    assert list(state) == ["scale", "offset", "count", "inner.weight", "inner.bias"]
    assert all(type(value) is np.ndarray for value in state.values())
    state["scale"][0] = 100.0
    assert block.scale.numpy()[0] == 2.0
    kept = block.state_dict(keep_vars=True)
    assert kept["scale"] is block.scale and kept["count"] is block.count
    assert list(block.state_dict(prefix="block."))[0] == "block.scale"


def test_load_state_dict_copies_in_place_with_the_target_dtype():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    weight = target.weight
    result = target.load_state_dict({name: value.astype(np.float64) for name, value in source.state_dict().items()})
    assert result == ([], [])
    assert target.weight is weight and weight.dtype == np.float32
    np.testing.assert_array_equal(target.weight.numpy(), source.weight.numpy())
    target.load_state_dict({"weight": pyjit.tensor(np.zeros((2, 3))), "bias": [1.0, 2.0]})
    np.testing.assert_array_equal(target.bias.numpy(), [1.0, 2.0])


def test_load_state_dict_strictness_and_shape_checks():
    model = nn.Linear(3, 2)
    before = model.state_dict()
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "extra"') as info:
        model.load_state_dict({"weight": np.zeros((2, 3)), "extra": np.zeros(1)})
    assert 'Missing key(s) in state_dict: "bias"' in str(info.value)
    np.testing.assert_array_equal(model.weight.numpy(), before["weight"])  # nothing was copied
    missing, unexpected = model.load_state_dict({"weight": np.zeros((2, 3)), "extra": np.zeros(1)}, strict=False)
    assert (missing, unexpected) == (["bias"], ["extra"])
    np.testing.assert_array_equal(model.weight.numpy(), np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="size mismatch for bias: copying a param with shape \\(3,\\)"):
        model.load_state_dict({"weight": np.zeros((2, 3)), "bias": np.zeros(3)}, strict=False)


def test_apply_visits_children_first_and_deepcopy_gives_a_separate_module():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    visited = []
    model.apply(lambda module: visited.append(type(module).__name__))
    assert visited == ["Linear", "ReLU", "Sequential"]
    clone = copy.deepcopy(model)
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight is not model[0].weight
    np.testing.assert_array_equal(clone[0].weight.numpy(), model[0].weight.numpy())


def test_repr_lists_children_and_settings():
    model = nn.Sequential(nn.Linear(2, 3), nn.GELU(approximate="tanh"), nn.Sequential(nn.Dropout(0.1)))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): GELU(approximate='tanh')\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.1)\n"
        "  )\n"
        ")")


def test_to_converts_parameters_and_gradients_in_place():
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    weight = model[0].weight
    optimizer_view = list(model.parameters())
    model(pyjit.tensor(np.ones((1, 3), dtype=np.float32))).sum().backward()
    assert model.to(np.float64) is model
    assert model[0].weight is weight and list(model.parameters()) == optimizer_view
    assert all(param.dtype == np.float64 and param.grad.dtype == np.float64 for param in model.parameters())
    assert model(pyjit.tensor(np.ones((1, 3)))).dtype == np.float64
    model.to("cpu")
    assert weight.device == "cpu"
    block = Block().to(dtype=np.float32)
    assert block.scale.dtype == np.float32 and block.count.dtype == np.int64  # integers stay
    with pytest.raises(TypeError, match="floating point or complex"):
        block.to(np.int32)


def test_a_compiled_module_pickles_as_its_module_and_compile_arguments():
    block = Block()
    compiled = pyjit.compile(block, backend="eager", dynamic=False)
    travelled = pickle.loads(pickle.dumps(compiled))
    assert isinstance(travelled, nn.CompiledModule) and travelled._orig_mod is not block
    assert travelled._rebuild.keywords["backend"] == "eager" and travelled._rebuild.keywords["dynamic"] is False
    x = pyjit.tensor(np.array([[1.0, -2.0]]))
    np.testing.assert_array_equal(travelled(x).numpy(), block(x).numpy())
