"""MultiheadAttention, as torch.nn.MultiheadAttention computes it."""

from __future__ import annotations

import math

import numpy as np

from pyjit import ops

from . import functional as F
from .layers import Linear, new_parameter, uniform_parameter
from .module import Module


class MultiheadAttention(Module):
    """softmax(q k^T / sqrt(head_dim) + mask) v over num_heads heads, with q, k, v the
    rows of in_proj_weight (3E, E) applied to query, key and value, and out_proj after.

    As in torch: in_proj_weight is xavier-uniform, in_proj_bias and out_proj.bias are
    zeros, out_proj.weight has Linear's initialisation; inputs are (N, L, E) with
    batch_first=True, (L, N, E) with batch_first=False, or (L, E) for one sequence.
    Key and value have the query's embedding size (torch's kdim / vdim, add_bias_kv and
    add_zero_attn are not supported).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = True, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be a positive multiple of num_heads ({num_heads})")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.dropout, self.batch_first = dropout, batch_first
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        xavier_bound = math.sqrt(6 / (embed_dim + 3 * embed_dim))  # fan in E, fan out 3E
        self.in_proj_weight = uniform_parameter(xavier_bound, (3 * embed_dim, embed_dim), dtype, device)
        if bias:
            self.in_proj_bias = new_parameter(np.zeros(3 * embed_dim), dtype, device)
            self.out_proj.bias = new_parameter(np.zeros(embed_dim), dtype, device)
        else:
            self.register_parameter("in_proj_bias", None)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True):
        """(output shaped like query, attention weights or None). The weights are
        (N, L, S) averaged over heads, (N, num_heads, L, S) with
        average_attn_weights=False. attn_mask is (L, S) or (N * num_heads, L, S) and
        key_padding_mask (N, S); a boolean mask is True where attention is not allowed,
        a floating one is added to the scores."""
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"query, key and value must all be 3-D (batched) or 2-D (one sequence), "
                             f"not {query.ndim}-D, {key.ndim}-D and {value.ndim}-D")
        # Written without generator expressions, which pyjit.compile would not inline.
        if not batched:
            query, key, value = ops.expand_dims(query, 0), ops.expand_dims(key, 0), ops.expand_dims(value, 0)
        elif not self.batch_first:
            query, key, value = ops.swapaxes(query, 0, 1), ops.swapaxes(key, 0, 1), ops.swapaxes(value, 0, 1)
        batch, target, source = query.shape[0], query.shape[1], key.shape[1]
        q = self._heads(self._project(query, 0))
        k = self._heads(self._project(key, 1))
        v = self._heads(self._project(value, 2))
        scores = ops.matmul(ops.multiply(q, math.sqrt(1.0 / self.head_dim)), ops.swapaxes(k, -1, -2))
        mask = self._mask(attn_mask, key_padding_mask, batched, (batch, target, source), scores.dtype)
        if mask is not None:
            scores = ops.add(scores, mask)
        weights = F.dropout(ops.softmax(scores, axis=-1), self.dropout, self.training)
        heads = ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3))
        output = self.out_proj(ops.reshape(heads, (batch, target, self.embed_dim)))
        if not batched:
            output = ops.squeeze(output, 0)
        elif not self.batch_first:
            output = ops.swapaxes(output, 0, 1)
        if not need_weights:
            return output, None
        if average_attn_weights:
            weights = ops.mean(weights, axis=1)
        return output, (weights if batched else ops.squeeze(weights, 0))

    def _project(self, x, index: int):
        """x through rows [index E, (index + 1) E) of the input projection (q, k or v)."""
        rows = slice(index * self.embed_dim, (index + 1) * self.embed_dim)
        bias = None if self.in_proj_bias is None else ops.getitem(self.in_proj_bias, rows)
        return F.linear(x, ops.getitem(self.in_proj_weight, rows), bias)

    def _heads(self, x):
        """(N, L, E) -> (N, num_heads, L, head_dim)."""
        batch, length = x.shape[0], x.shape[1]
        return ops.transpose(ops.reshape(x, (batch, length, self.num_heads, self.head_dim)), (0, 2, 1, 3))

    def _mask(self, attn_mask, key_padding_mask, batched: bool, sizes: tuple, dtype):
        """attn_mask and key_padding_mask as one additive mask broadcasting against
        the scores (N, num_heads, L, S), or None when neither is given."""
        batch, target, source = sizes
        mask = None
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                expected = (target, source)
            else:
                expected = (batch * self.num_heads if batched else self.num_heads, target, source)
            if tuple(attn_mask.shape) != expected:
                raise ValueError(f"attn_mask has shape {tuple(attn_mask.shape)}, but should be {expected}")
            mask = _additive(attn_mask, dtype, "attn_mask")
            if attn_mask.ndim == 3:
                mask = ops.reshape(mask, (batch, self.num_heads, target, source))
        if key_padding_mask is not None:
            expected = (batch, source) if batched else (source,)
            if tuple(key_padding_mask.shape) != expected:
                raise ValueError(f"key_padding_mask has shape {tuple(key_padding_mask.shape)}, "
                                 f"but should be {expected}")
            padding = ops.reshape(_additive(key_padding_mask, dtype, "key_padding_mask"), (batch, 1, 1, source))
            mask = padding if mask is None else ops.add(mask, padding)
        return mask


def _additive(mask, dtype, name: str):
    """A mask to add to the scores: -inf where a boolean mask is True, a floating one as
    it is (in the scores' dtype)."""
    kind = np.dtype(mask.dtype).kind
    if kind == "b":
        return ops.astype(ops.where(mask, -np.inf, 0.0), dtype)
    if kind != "f":
        raise TypeError(f"{name} must be boolean or floating, not {np.dtype(mask.dtype)}")
    return ops.astype(mask, dtype)
