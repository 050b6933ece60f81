"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from .optimizer import Optimizer, check_non_negative


class SGD(Optimizer):
    """torch.optim.SGD: with g the gradient plus weight_decay * param, the momentum
    buffer b starts as g and then becomes momentum * b + (1 - dampening) * g; the step
    is g + momentum * b with nesterov, b with momentum alone, g without; the parameter
    moves by -lr * step (NOTE(optimizer-step))."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        check_non_negative("learning rate", lr)
        check_non_negative("momentum", momentum)
        check_non_negative("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov})

    def _update(self, param, grad, group, state):
        if group["weight_decay"] != 0:
            grad = grad + param * group["weight_decay"]
        momentum = group["momentum"]
        if momentum != 0:
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = grad.clone()
            else:
                buffer *= momentum
                buffer += grad * (1 - group["dampening"])
            grad = grad + buffer * momentum if group["nesterov"] else buffer
        param -= grad * group["lr"]
