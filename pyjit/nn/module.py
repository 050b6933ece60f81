"""`Module`, the base of every layer, and `Parameter`, the tensors a module trains.

NOTE(module-registration): as in torch, assigning a `Parameter` or a `Module` to an
attribute registers it, in assignment order, in `_parameters` or `_modules`; tensors
registered with `register_buffer` live in `_buffers`. Those dicts are the module's
structure: `named_parameters`, `children`, `state_dict`, `train` and `repr` walk them,
in order. Reading such an attribute falls through `__getattr__` to the dicts.

NOTE(state-dict): `state_dict()` maps each dotted name (`"0.weight"`) to a NumPy array
holding a copy of the value (`keep_vars=True` gives the tensors themselves), parameters
before persistent buffers, module by module; a module or parameter shared by two owners
appears under both names, as in torch. `load_state_dict` takes anything NumPy can turn
into an array (arrays, pyjit or torch tensors), checks every name and shape first and
copies nothing when something is wrong, then copies each value into the existing tensor
in place, in that tensor's dtype and on its device, so optimizers holding the
parameters see the new values.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Callable, Iterable, Iterator

import numpy as np

from pyjit.autograd import Tensor, no_grad

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A tensor a `Module` registers as its own when assigned to an attribute; a leaf
    that requires grad unless told otherwise. Ops on it give plain Tensors."""

    def __init__(self, data=None, requires_grad: bool = True):
        # Like torch.nn.Parameter, it shares `data`'s memory; no data is an empty float32 tensor.
        super().__init__(np.empty(0, np.float32) if data is None else data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """The base class of layers (NOTE(module-registration)); subclasses define `forward`
    and call `super().__init__()` before assigning parameters or submodules."""

    training: bool
    # For the frontend (NOTE(inline-declarations) in pyjit/frontend/policy.py): a call of
    # a module runs its `forward`, and attributes it lacks are read from these dicts.
    __pyjit_inline_protocol__ = {"call": "forward", "attribute_dicts": ("_parameters", "_buffers", "_modules")}

    def __init__(self):
        for name, value in (("training", True), ("_parameters", {}), ("_buffers", {}),
                            ("_non_persistent", set()), ("_modules", {})):
            object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- registration (NOTE(module-registration)) ----------------------------------
    def _registry(self, kind: str) -> dict:
        registry = self.__dict__.get(kind)
        if registry is None:
            raise AttributeError(f"cannot register a {kind[1:-1]} before {type(self).__name__} "
                                 f"calls Module.__init__()")
        return registry

    def _forget(self, name: str) -> None:
        for registry in (self.__dict__, self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent.discard(name)

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, Parameter):
            self._registry("_parameters")
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._registry("_modules")
            self._forget(name)
            self._modules[name] = value
        elif name in self.__dict__.get("_parameters", ()):
            self._check_cleared(name, value, "parameter", "pyjit.nn.Parameter")
            self._parameters[name] = None
        elif name in self.__dict__.get("_modules", ()):
            self._check_cleared(name, value, "child module", "pyjit.nn.Module")
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(pyjit.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _check_cleared(name: str, value, what: str, expected: str) -> None:
        if value is not None:
            raise TypeError(f"cannot assign '{type(value).__name__}' as {what} '{name}' ({expected} or None expected)")

    def __getattr__(self, name: str):
        # Only reached when ordinary lookup fails; __dict__ is read directly so that an
        # instance without its registries (copying, unpickling) does not recurse.
        for kind in ("_parameters", "_buffers", "_modules"):
            registry = self.__dict__.get(kind)
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for kind in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(kind, ()):
                del self.__dict__[kind][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (None registers the name with no parameter, as Linear's
        missing bias is)."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' as parameter '{name}' "
                            f"(pyjit.nn.Parameter or None expected)")
        self._check_name(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, value: Tensor | None, persistent: bool = True) -> None:
        """Register a tensor that is state but not trained; a non-persistent buffer is
        left out of `state_dict`."""
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                            f"(pyjit.Tensor or None expected)")
        self._check_name(name, "_buffers")
        self._buffers[name] = value
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "_modules")
        self._modules[name] = module

    def _check_name(self, name: str, kind: str) -> None:
        self._registry(kind)
        if not isinstance(name, str):
            raise TypeError(f"the name of a {kind[1:-1]} must be a string, not {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"a {kind[1:-1]} name must be non-empty and contain no '.', not {name!r}")
        if name not in self.__dict__[kind] and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    # -- walking the structure -------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for this module and every module below it, depth first
        (`memo`: ids of modules already listed)."""
        if remove_duplicate:
            memo = set() if memo is None else memo
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named_members(self, kind: str, prefix: str, recurse: bool, remove_duplicate: bool):
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, kind).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter), each parameter once unless remove_duplicate=False."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call `fn` on every submodule, children first, then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ---------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, MultiheadAttention's dropout applies) on
        this module and every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the parameters' gradients (set them to None, as torch 2 does), or
        zero them in place with set_to_none=False."""
        zero_grads(self.parameters(), set_to_none)

    def to(self, *args, device=None, dtype=None) -> Module:
        """Move every parameter and buffer (and gradient) to a device and/or convert
        the floating ones to a floating dtype: `to("cuda")`, `to(np.float64)`,
        `to(device, dtype)`. As in torch the tensors stay the same objects (they take
        new arrays), so an optimizer made before keeps working."""
        for arg in args:
            if isinstance(arg, str):
                device = arg
            else:
                dtype = arg
        if dtype is not None and np.dtype(dtype).kind not in "fc":
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got {np.dtype(dtype)}")
        with no_grad():
            for value in [*self.parameters(), *self.buffers()]:
                target = {"device": device, "dtype": dtype if value.dtype.kind in "fc" else None}
                value.data = value.to(**target)
                if value.grad is not None:
                    value.grad = value.grad.to(**target)
        return self

    # -- state (NOTE(state-dict)) ----------------------------------------------------
    def _state_items(self) -> Iterator[tuple[str, Tensor]]:
        for prefix, module in self.named_modules(remove_duplicate=False):
            dotted = prefix + "." if prefix else ""
            for name, param in module._parameters.items():
                if param is not None:
                    yield dotted + name, param
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent:
                    yield dotted + name, buffer

    def state_dict(self, *, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """name -> copy of the value as a NumPy array (NOTE(state-dict))."""
        return OrderedDict((prefix + name, value if keep_vars else np.array(value.detach().cpu().numpy(), copy=True))
                           for name, value in self._state_items())

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy the values of `state_dict` into this module's parameters and buffers
        (NOTE(state-dict)); with strict=True a missing or unexpected name is an error.
        Returns (missing_keys, unexpected_keys)."""
        targets = dict(self._state_items())
        missing = [name for name in targets if name not in state_dict]
        unexpected = [name for name in state_dict if name not in targets]
        errors, values = [], {}
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{name}"' for name in unexpected) + ". ")
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{name}"' for name in missing) + ". ")
        for name, target in targets.items():
            if name not in state_dict:
                continue
            value = state_dict[name]
            values[name] = np.asarray(value.detach().cpu().numpy() if isinstance(value, Tensor) else value)
            if tuple(values[name].shape) != tuple(target.shape):
                errors.append(f"size mismatch for {name}: copying a param with shape {tuple(values[name].shape)} "
                              f"from checkpoint, the shape in current model is {tuple(target.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for name, value in values.items():
                targets[name].copy_(value)
        return IncompatibleKeys(missing, unexpected)

    # -- printing ----------------------------------------------------------------------
    def extra_repr(self) -> str:
        """What the module prints between its parentheses besides its children."""
        return ""

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not self._modules:
            return f"{type(self).__name__}({', '.join(lines)})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


def zero_grads(params: Iterable[Tensor], set_to_none: bool = True) -> None:
    """Forget each parameter's gradient (None, as torch 2 does), or zero it in place;
    what Module.zero_grad and Optimizer.zero_grad both do."""
    for param in params:
        if param.grad is None:
            continue
        if set_to_none:
            param.grad = None
        else:
            param.grad.zero_()


class CompiledModule:
    """What `pyjit.compile(module)` returns: a call runs the module's `forward` compiled
    (the module has no hooks, so `module(x)` is `module.forward(x)`); every attribute
    is the module's own, `_orig_mod` the module itself (torch's OptimizedModule). It
    pickles as `rebuild` and the module: unpickling compiles the module again
    (NOTE(pickling) in pyjit/frontend/entry.py)."""

    def __init__(self, module: Module, forward: Callable, rebuild: Callable):
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_forward", forward)
        object.__setattr__(self, "_rebuild", rebuild)

    def __reduce__(self):
        return self._rebuild, (self._orig_mod,)

    def __call__(self, *args, **kwargs):
        return self._forward(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._orig_mod, name, value)

    def __repr__(self) -> str:
        return f"CompiledModule({self._orig_mod!r})"
