"""`Optimizer`: parameter groups, per-parameter state, zero_grad, and the step contract.

NOTE(optimizer-step): as in torch, `step()` reads each parameter's `.grad` and updates
the parameter in place under `no_grad`, so models and optimizers keep sharing the same
tensor objects; parameters whose grad is None are skipped. The state an update keeps
(momentum buffers, Adam's moments) are tensors on the parameter's device in its dtype,
updated in place too, and the step counters are Python ints. Every update is written
with tensor arithmetic, the formulas of torch's single-tensor ("for-loop")
implementations, in the same order, so float64 runs agree with torch to rounding.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

from pyjit.autograd import Tensor, enable_grad, no_grad
from pyjit.nn.module import zero_grads


class Optimizer:
    """The base of optimizers: `param_groups` is a list of dicts, each holding "params"
    (a list of tensors) and every hyperparameter of `defaults`, which a group given as
    a dict may override; `state[param]` is the state kept for one parameter."""

    def __init__(self, params: Iterable, defaults: dict):
        self.defaults = dict(defaults)
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (the defaults fill in
        the ones it leaves out)."""
        if not isinstance(group, dict):
            raise TypeError(f"a parameter group must be a dict, not {type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(param).__name__}")
            if param.grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(param) for existing in self.param_groups for param in existing["params"]}
        if len({id(param) for param in params}) != len(params) or seen & {id(param) for param in params}:
            raise ValueError("some parameters appear more than once in the parameter groups")
        self.param_groups.append({**self.defaults, **group, "params": params})

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (None, as torch 2 does), or zero it in place."""
        zero_grads((param for group in self.param_groups for param in group["params"]), set_to_none)

    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient (NOTE(optimizer-step)).
        `closure`, if given, recomputes the loss (with grad enabled) first and is
        returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    if param.grad is not None:
                        self._update(param, param.grad, group, self.state[param])
        return loss

    def _update(self, param: Tensor, grad: Tensor, group: dict, state: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not define its update")

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines.extend(f"    {key}: {value}" for key, value in sorted(group.items()) if key != "params")
        return "\n".join(lines + [")"])


def check_non_negative(name: str, value: float) -> None:
    if not value >= 0.0:
        raise ValueError(f"Invalid {name} value: {value}")
