"""Sample rows of the composite ops (pyjit/ops/composites.py). Ops NumPy does not have
get a NumPy reference written here."""

import math

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError


def softmax_reference(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_reference(x, axis=-1):
    return np.log(softmax_reference(x, axis))


def logsumexp_reference(x, axis=None, keepdims=False):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def layer_norm_reference(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.shape[x.ndim - len(normalized_shape):] != normalized_shape:
        raise ValueError("normalized_shape does not match the trailing axes")
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    result = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    result = result if weight is None else result * weight
    return result if bias is None else result + bias


def gelu_reference(x, approximate="none"):
    wide = x.astype(np.float64)
    if approximate == "none":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return (0.5 * wide * (1 + erf(wide / math.sqrt(2)))).astype(x.dtype)
    if approximate == "tanh":
        return (0.5 * wide * (1 + np.tanh(math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)))).astype(x.dtype)
    raise ValueError(f"unknown approximation {approximate!r}")


def sigmoid_reference(x):
    return np.exp(-np.logaddexp(0, -x))


def relu_reference(x):
    return np.maximum(x, 0)


def statistic_samples():
    """mean, var and std: NumPy's own functions; 0-size rows reduce a non-empty axis
    (an empty one warns, as NumPy does, and warnings are errors in the tests)."""
    return [S(A((2, 3))), S(A((2, 3)), axis=1), S(A((2, 3, 4), "float32"), axis=(0, 2), keepdims=True),
            S(A((4,), "int32", -5, 5)), S(A((3,), "bool")), S(A((3, 4), layout="F"), axis=-1),
            S(A((3, 4), layout="strided"), axis=0), S(A((0, 3)), axis=1), S(A((2, 3), "float16"), axis=0),
            S(A((2, 3)), axis=2, raises=AxisError), S(A((2, 3)), axis=(1, 1), raises=ValueError)]


SAMPLES = {
    "mean": statistic_samples(),
    "var": [*statistic_samples(), S(A((2, 3)), axis=1, ddof=1), S(A((4,), "int64", 0, 9), ddof=2),
            S(A((2, 3), "complex128"), axis=1, reference=np.var, rtol=1e-12)],
    "std": [*statistic_samples(), S(A((2, 3)), axis=0, ddof=1, keepdims=True)],
    "softmax": [S(A((2, 5)), reference=softmax_reference), S(A((3, 4), "float32"), axis=0, reference=softmax_reference),
                S(A((0, 5)), reference=softmax_reference)],
    "log_softmax": [S(A((2, 5)), reference=log_softmax_reference),
                    S(A((3, 4), "float32", layout="F"), axis=0, reference=log_softmax_reference, rtol=1e-5),
                    S(A((0, 5)), reference=log_softmax_reference),
                    S(A((2, 5)), axis=2, raises=AxisError, reference=log_softmax_reference)],
    "logsumexp": [S(A((2, 3)), reference=logsumexp_reference), S(A((2, 3)), axis=1, reference=logsumexp_reference),
                  S(A((2, 3, 4), "float32"), axis=(0, -1), keepdims=True, reference=logsumexp_reference, rtol=1e-5),
                  S(A((4,), "int32", -3, 3), reference=logsumexp_reference),
                  S(A((3, 4), layout="strided"), axis=0, reference=logsumexp_reference),
                  S(A((0, 3)), axis=1, reference=logsumexp_reference),
                  S(A((2, 3)), axis=2, raises=AxisError, reference=logsumexp_reference),
                  S(A((2, 3)), axis=(0, 0), raises=ValueError, reference=logsumexp_reference)],
    "layer_norm": [S(A((2, 3, 4)), (4,), reference=layer_norm_reference),
                   S(A((2, 3, 4), "float32"), (3, 4), A((3, 4), "float32"), A((3, 4), "float32"),
                     reference=layer_norm_reference, rtol=1e-5),
                   S(A((2, 5), layout="F"), 5, weight=A((5,)), bias=A((5,)), eps=1e-3, reference=layer_norm_reference),
                   S(A((0, 4)), (4,), reference=layer_norm_reference),
                   S(A((2, 3)), (2,), raises=ValueError, reference=layer_norm_reference),
                   S(A((3,)), (1, 3), raises=ValueError, reference=layer_norm_reference)],
    "gelu": [S(A((2, 3)), reference=gelu_reference), S(A((2, 3), "float32"), reference=gelu_reference, rtol=1e-5),
             S(A((3, 4), layout="F"), approximate="tanh", reference=gelu_reference),
             S(A((4,), "float32", -4, 4), approximate="tanh", reference=gelu_reference, rtol=1e-5),
             S(A((0, 3)), reference=gelu_reference),
             S(A((2,)), approximate="exact", raises=ValueError, reference=gelu_reference)],
    "sigmoid": [S(A((2, 3)), reference=sigmoid_reference), S(A((2, 3), "float32"), reference=sigmoid_reference, rtol=1e-5),
                S(A((6,), "float64", -800, 800), reference=sigmoid_reference),
                S(A((3, 4), layout="strided"), reference=sigmoid_reference), S(A((0, 3)), reference=sigmoid_reference)],
    "relu": [S(A((2, 3)), reference=relu_reference), S(A((2, 3), "float32", layout="F"), reference=relu_reference),
             S(A((4,), "int8", -5, 5), reference=relu_reference), S(A((0, 3)), reference=relu_reference)],
}

SAMPLES["outer"] = [S(A((3,)), A((4,))), S(A((2, 2), "float32"), A((3,), "float32")), S(A((3,), "int32"), A((2,))),
                    S(A((0,)), A((3,))), S(A((2, 3), layout="F"), A((2,), "bool"))]
