"""Modules that hold other modules: `Sequential` runs them in order, `ModuleList`
only registers them. Children are named "0", "1", ... unless given names."""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Iterator

from .module import Module


class _IndexedModules(Module):
    """Children registered under their positions, reachable by index and slice."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        children = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(children[index])
        return children[index]


class Sequential(_IndexedModules):
    """Sequential(m0, m1, ...) or Sequential(OrderedDict(name=module)): calls each
    child on the previous one's result."""

    def __init__(self, *modules):
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            super().__init__()
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            super().__init__(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return super().__getitem__(index)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_IndexedModules):
    """A list of modules whose parameters belong to the owner; it has no forward."""

    def extend(self, modules: Iterable[Module]):
        for module in modules:
            self.append(module)
        return self
