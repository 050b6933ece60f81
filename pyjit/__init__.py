"""pyjit: the PyTorch 2 compiler stack rebuilt for NumPy and CuPy."""

from pyjit import _C, autograd, config, nn, optim, utils
from pyjit.autograd import (Tensor, arange, as_tensor, enable_grad, from_numpy, manual_seed, no_grad, ones, rand,
                            randn, tensor, zeros)
from pyjit.backends import list_backends, register_backend
from pyjit.logs import set_logs

__version__ = "0.1.0"

__all__ = ["Tensor", "arange", "as_tensor", "autograd", "cache_entries", "config", "enable_grad", "from_numpy",
           "list_backends", "manual_seed", "nn", "no_grad", "ones", "optim", "rand", "randn", "register_backend",
           "reset", "set_logs", "tensor", "utils", "zeros"]


def reset():
    """Forget every compiled entry and skip mark; guarded objects are released."""
    _C.reset()


def cache_entries(fn):
    """The cache of `fn`'s code, most recently hit first: [(guard text, transformed code)]."""
    code = getattr(fn, "__wrapped__", fn).__code__
    return [(str(guard), transformed) for guard, transformed in _C.cache_entries(code)]
