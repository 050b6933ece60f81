"""Backends: compiler functions from a GraphModule and example inputs to a callable."""

from . import eager  # noqa: F401  (registers the backend)
from .registry import ENTRY_POINT_GROUP, list_backends, lookup_backend, register_backend

__all__ = ["ENTRY_POINT_GROUP", "list_backends", "lookup_backend", "register_backend"]
