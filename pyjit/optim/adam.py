"""Adam, with optional L2 weight decay and AMSGrad."""

from __future__ import annotations

import math

from pyjit import ops

from .optimizer import Optimizer, check_non_negative


class Adam(Optimizer):
    """torch.optim.Adam: with g the gradient plus weight_decay * param, the moments
    m += (1 - beta1) (g - m) and v = beta2 v + (1 - beta2) g^2 (with amsgrad, the
    running maximum of v is used instead of v), and the parameter moves by
    -lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps) (NOTE(optimizer-step))."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False):
        check_non_negative("learning rate", lr)
        check_non_negative("epsilon", eps)
        check_non_negative("weight_decay", weight_decay)
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": amsgrad})

    def _update(self, param, grad, group, state):
        if not state:
            state["step"] = 0
            state["exp_avg"] = ops.zeros_like(param)
            state["exp_avg_sq"] = ops.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = ops.zeros_like(param)
        state["step"] += 1
        beta1, beta2 = group["betas"]
        if group["weight_decay"] != 0:
            grad = grad + param * group["weight_decay"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg += (grad - exp_avg) * (1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += grad * grad * (1 - beta2)
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]
            second_moment.copy_(ops.maximum(second_moment, exp_avg_sq))
        step_size = group["lr"] / (1 - beta1 ** state["step"])
        denominator = ops.sqrt(second_moment) / math.sqrt(1 - beta2 ** state["step"]) + group["eps"]
        param -= exp_avg / denominator * step_size
