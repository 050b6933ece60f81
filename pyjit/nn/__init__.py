"""Neural-network modules written on pyjit.Tensor, with torch.nn's names and semantics
(docs/nn.md)."""

from pyjit.frontend.policy import inline_package

from . import functional
from .attention import MultiheadAttention
from .containers import ModuleList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from .module import CompiledModule, Module, Parameter

__all__ = ["CompiledModule", "Dropout", "Embedding", "GELU", "LayerNorm", "Linear", "Module", "ModuleList",
           "MultiheadAttention", "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "functional"]

# Written on registry ops to be captured: its functions are inlined (NOTE(skipped-files)).
inline_package(__file__)
