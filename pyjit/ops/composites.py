"""Ops defined by decomposition into primitives; they carry no rules of their own."""

from __future__ import annotations

from .registry import composite, op


@composite("softmax")
def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    shifted = op.subtract(x, op.max(x, axis=axis, keepdims=True))
    exponentials = op.exp(shifted)
    return op.divide(exponentials, op.sum(exponentials, axis=axis, keepdims=True))
