"""The backend registry: names to compiler functions `fn(graph_module, example_inputs) -> callable`.

Third-party packages add backends through the entry-point group `pyjit_backends`
(`name = "package.module:function"`); they are loaded the first time they are looked up
or listed.
"""

from __future__ import annotations

from importlib import metadata
from typing import Callable

from ..exc import InvalidBackend

ENTRY_POINT_GROUP = "pyjit_backends"
DEFAULT_BACKEND = "inductor"  # what pyjit.compile and pyjit.optimize use unless told otherwise

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str | Callable | None = None, compiler_fn: Callable | None = None):
    """Register a backend. `@register_backend` names it after the function,
    `@register_backend("name")` chooses the name, `register_backend("name", fn)` registers
    directly. A name can be registered once."""
    if callable(name):
        return _add(name.__name__, name)
    if compiler_fn is not None:
        return _add(name, compiler_fn)
    return lambda fn: _add(name or fn.__name__, fn)


def _add(name: str, compiler_fn: Callable) -> Callable:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a backend name must be a non-empty string, not {name!r}")
    if name in _BACKENDS:
        raise ValueError(f"a backend named {name!r} is already registered")
    _BACKENDS[name] = compiler_fn
    return compiler_fn


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {entry.name: entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def list_backends() -> list[str]:
    """Every backend name, registered or installed, sorted."""
    return sorted(set(_BACKENDS) | set(_entry_points()))


def lookup_backend(backend: str | Callable) -> Callable:
    """The compiler function for a backend name (or the callable itself)."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        entry = _entry_points().get(backend)
        if entry is None:
            raise InvalidBackend(f"unknown backend {backend!r}; available: {', '.join(list_backends())}")
        _add(backend, entry.load())
    return _BACKENDS[backend]
