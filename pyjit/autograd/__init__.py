"""Autograd: `Tensor`, the reverse-mode tape, `Function`, grad modes (docs/autograd.md)."""

from . import random
from .engine import backward, grad, graph_nodes
from .factories import arange, as_tensor, from_numpy, ones, rand, randn, tensor, zeros
from .finite_differences import GradcheckError, gradcheck
from .function import Function, FunctionCtx
from .fx import make_fx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .nodes import AccumulateGrad, BackwardNode, OpNode
from .random import manual_seed
from .tensor import Tensor, allclose

__all__ = ["AccumulateGrad", "BackwardNode", "Function", "FunctionCtx", "GradcheckError", "OpNode", "Tensor",
           "allclose", "arange", "as_tensor", "backward", "enable_grad", "from_numpy", "grad", "gradcheck",
           "graph_nodes", "is_grad_enabled", "make_fx", "manual_seed", "no_grad", "ones", "rand", "randn", "random",
           "set_grad_enabled", "tensor", "zeros"]
