"""The layers: Linear, the activations, LayerNorm, Dropout, Embedding.

NOTE(parameter-init): parameters start as torch starts them, drawn from
`pyjit.autograd.random.generator()` (so `pyjit.manual_seed` fixes them) in float64 and
then cast to the layer's dtype, float32 unless `dtype=` says otherwise. The values are
not torch's (another generator), only their distributions are; tests that compare with
torch copy the weights across.
"""

from __future__ import annotations

import math

import numpy as np

from pyjit import ops
from pyjit.autograd import random, tensor

from . import functional as F
from .module import Module, Parameter


def new_parameter(values: np.ndarray, dtype, device) -> Parameter:
    """A parameter holding `values` in `dtype` (float32 by default) on `device`."""
    return Parameter(tensor(values, dtype=np.float32 if dtype is None else dtype, device=device))


def uniform_parameter(bound: float, shape: tuple, dtype, device) -> Parameter:
    """A parameter drawn uniformly from [-bound, bound)."""
    return new_parameter(random.generator().uniform(-bound, bound, shape), dtype, device)


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features) and bias
    (out_features,) both uniform in +-1/sqrt(in_features) (NOTE(parameter-init))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = uniform_parameter(bound, (out_features, in_features), dtype, device)
        if bias:
            self.bias = uniform_parameter(bound, (out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    def forward(self, input):
        return F.relu(input)


class GELU(Module):
    """x * Phi(x); approximate="tanh" uses the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', not {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class LayerNorm(Module):
    """Normalise over the trailing axes `normalized_shape`; with elementwise_affine,
    scale by `weight` (ones) and shift by `bias` (zeros, unless bias=False)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(size) for size in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = new_parameter(np.ones(self.normalized_shape), dtype, device)
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = new_parameter(np.zeros(self.normalized_shape), dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    """In training, zero each element with probability p and scale the others by
    1 / (1 - p); in eval mode, the identity."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Embedding(Module):
    """A table of num_embeddings vectors of size embedding_dim, drawn from N(0, 1);
    calling it with integer indices gives their rows. The lookup is the registry's
    `index` op, so the gradient reaches the table through `index_add`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = new_parameter(random.generator().standard_normal((num_embeddings, embedding_dim)), dtype, device)

    def forward(self, input):
        return ops.index(self.weight, input)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
