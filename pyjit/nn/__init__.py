"""Neural-network modules written on pyjit.Tensor, with torch.nn's names and semantics
(docs/nn.md)."""

from . import functional
from .attention import MultiheadAttention
from .containers import ModuleList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from .module import CompiledModule, Module, Parameter

__all__ = ["CompiledModule", "Dropout", "Embedding", "GELU", "LayerNorm", "Linear", "Module", "ModuleList",
           "MultiheadAttention", "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "functional"]

# Written on registry ops to be captured: the frontend inlines its functions, though
# pyjit's files are skipped (NOTE(inline-declarations) in pyjit/frontend/policy.py).
__pyjit_inline__ = True
