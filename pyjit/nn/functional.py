"""torch.nn.functional for pyjit, written with registry ops only.

Each function calls `pyjit.ops` entries, so on Tensors it records on the tape, on graph
nodes it records into the graph, and on plain arrays it computes (NOTE(dispatch-protocol)
in pyjit/ops/registry.py). The modules of pyjit/nn/layers.py call these functions.

NOTE(dim-axis): torch names the axis `dim`, NumPy `axis`; the functions that take one
accept either keyword (the positional argument is torch's `dim`), and refuse both at once.
"""

from __future__ import annotations

import numpy as np

from pyjit import ops
from pyjit.autograd import rand

REDUCTIONS = ("mean", "sum", "none")


def _axis(name: str, dim, axis):
    """The axis given as `dim` or `axis` (NOTE(dim-axis))."""
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both dim and axis; give one")
    chosen = axis if dim is None else dim
    if chosen is None:
        raise TypeError(f"{name}() needs the axis to normalise over (dim= or axis=)")
    return chosen


def _reduce(name: str, losses, reduction: str):
    if reduction == "none":
        return losses
    if reduction == "sum":
        return ops.sum(losses)
    if reduction == "mean":
        return ops.mean(losses)
    raise ValueError(f"{name}: reduction must be one of {REDUCTIONS}, not {reduction!r}")


def linear(input, weight, bias=None):
    """input @ weight.T + bias, with weight of shape (out_features, in_features)."""
    result = ops.matmul(input, ops.transpose(weight))
    return result if bias is None else ops.add(result, bias)


def relu(input):
    return ops.relu(input)


def gelu(input, approximate: str = "none"):
    """x * Phi(x), or its tanh approximation with approximate="tanh"."""
    return ops.gelu(input, approximate=approximate)


def tanh(input):
    return ops.tanh(input)


def sigmoid(input):
    return ops.sigmoid(input)


def softmax(input, dim=None, *, axis=None):
    return ops.softmax(input, axis=_axis("softmax", dim, axis))


def log_softmax(input, dim=None, *, axis=None):
    return ops.log_softmax(input, axis=_axis("log_softmax", dim, axis))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing axes `normalized_shape`, then scale and shift."""
    return ops.layer_norm(input, normalized_shape, weight, bias, eps)


def dropout(input, p: float = 0.5, training: bool = True):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); the
    identity when not training or when p is 0. The mask comes from uniform values drawn
    by `pyjit.rand` (pyjit's seeded generator) in the input's dtype, on its device."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    noise = rand(input.shape, dtype=input.dtype, device=input.device)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return ops.where(ops.less(noise, p), 0, ops.multiply(input, scale))


def mse_loss(input, target, reduction: str = "mean"):
    """The squared difference, averaged (or summed, or not reduced)."""
    difference = ops.subtract(input, target)
    return _reduce("mse_loss", ops.multiply(difference, difference), reduction)


def cross_entropy(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean"):
    """torch.nn.functional.cross_entropy with integer class targets.

    `input` holds unnormalised scores, classes on axis 1 ((N, C) or (N, C, d1, ...)) or
    on axis 0 for one sample ((C,)); `target` holds class indices shaped like `input`
    without its class axis. A target equal to `ignore_index` adds nothing and does not
    count. With `weight` (C,), each loss is scaled by its class's weight and "mean"
    divides by the summed weights of the counted targets, as torch does.
    """
    if np.dtype(target.dtype).kind not in "iu":
        raise TypeError(f"cross_entropy takes integer class indices as target, not {np.dtype(target.dtype)} "
                        f"(class probabilities are not supported)")
    class_axis = 1 if input.ndim >= 2 else 0
    if tuple(target.shape) != tuple(input.shape[:class_axis] + input.shape[class_axis + 1:]):
        raise ValueError(f"cross_entropy: target of shape {tuple(target.shape)} does not match input of "
                         f"shape {tuple(input.shape)} (the input's shape without its class axis {class_axis})")
    log_probs = ops.moveaxis(ops.log_softmax(input, axis=class_axis), class_axis, -1)
    classes = input.shape[class_axis]
    flat_target = ops.reshape(target, (-1,))
    counted = ops.not_equal(flat_target, ignore_index)
    safe_target = ops.where(counted, flat_target, 0)  # ignored rows read class 0, weighted 0
    picked = ops.index(ops.reshape(log_probs, (-1, classes)),
                       (ops.arange(flat_target.shape[0]), safe_target))
    weights = ops.astype(counted, picked.dtype)
    if weight is not None:
        weights = ops.multiply(weights, ops.index(weight, safe_target))
    losses = ops.negative(ops.multiply(picked, weights))
    if reduction == "mean":
        return ops.divide(ops.sum(losses), ops.sum(weights))
    return _reduce("cross_entropy", ops.reshape(losses, target.shape), reduction)
