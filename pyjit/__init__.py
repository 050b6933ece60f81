"""pyjit: the PyTorch 2 compiler stack rebuilt for NumPy and CuPy."""

from pyjit import _C
from pyjit.backends import list_backends, register_backend

__version__ = "0.1.0"

__all__ = ["cache_entries", "list_backends", "register_backend", "reset"]


def reset():
    """Forget every compiled entry and skip mark; guarded objects are released."""
    _C.reset()


def cache_entries(fn):
    """The cache of `fn`'s code, most recently hit first: [(guard text, transformed code)]."""
    code = getattr(fn, "__wrapped__", fn).__code__
    return [(str(guard), transformed) for guard, transformed in _C.cache_entries(code)]
