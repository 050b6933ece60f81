"""Backends: compiler functions from a GraphModule and example inputs to a callable."""

from . import aot_eager, eager, inductor  # noqa: F401  (each registers its backend)
from .registry import DEFAULT_BACKEND, ENTRY_POINT_GROUP, list_backends, lookup_backend, register_backend

__all__ = ["DEFAULT_BACKEND", "ENTRY_POINT_GROUP", "list_backends", "lookup_backend", "register_backend"]
