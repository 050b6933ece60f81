"""pyjit/nn/containers.py: Sequential and ModuleList."""

from collections import OrderedDict

import numpy as np
import pytest

import pyjit
from pyjit import nn


def test_sequential_calls_its_children_in_order():
    first, second = nn.Linear(3, 4, dtype=np.float64), nn.Linear(4, 2, dtype=np.float64)
    model = nn.Sequential(first, nn.Tanh(), second)
    x = np.random.default_rng(0).standard_normal((5, 3))
    hidden = np.tanh(x @ first.weight.numpy().T + first.bias.numpy())
    np.testing.assert_allclose(model(pyjit.tensor(x)).numpy(), hidden @ second.weight.numpy().T + second.bias.numpy(),
                               rtol=1e-12)
    assert len(model) == 3 and model[0] is first and model[-1] is second
    assert list(model) == [first, model[1], second]
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_sequential_slices_names_and_append():
    model = nn.Sequential(OrderedDict(encode=nn.Linear(2, 2), act=nn.ReLU()))
    assert [name for name, _ in model.named_children()] == ["encode", "act"]
    assert model.encode is model[0]
    head = model[1:]
    assert isinstance(head, nn.Sequential) and [name for name, _ in head.named_children()] == ["act"]
    model.append(nn.Sigmoid())
    assert [name for name, _ in model.named_children()] == ["encode", "act", "2"]
    with pytest.raises(IndexError):
        model[3]


def test_module_list_registers_its_modules():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(2))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    stack = Stack()
    stack.layers.extend([nn.ReLU()]).append(nn.Linear(2, 1))
    assert len(stack.layers) == 4 and isinstance(stack.layers[1:], nn.ModuleList)
    assert [name for name, _ in stack.named_parameters()][-2:] == ["layers.3.weight", "layers.3.bias"]
    assert stack(pyjit.tensor(np.ones((3, 2), dtype=np.float32))).shape == (3, 1)
    with pytest.raises(NotImplementedError):
        stack.layers(pyjit.tensor(np.ones(2)))
