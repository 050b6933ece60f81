"""Sample rows of the composite ops (pyjit/ops/composites.py)."""

import numpy as np

from . import A, S


def softmax_reference(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


SAMPLES = {
    "softmax": [S(A((2, 5)), reference=softmax_reference), S(A((3, 4), "float32"), axis=0, reference=softmax_reference),
                S(A((2, 0)), reference=softmax_reference)],
}
