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

# What `list_backends()` leaves out unless told otherwise, as torch._dynamo.list_backends:
# backends for debugging the compiler ("debug", e.g. `eager`) and unfinished ones.
DEFAULT_EXCLUDED_TAGS = ("debug", "experimental")

_BACKENDS: dict[str, Callable] = {}
_TAGS: dict[str, tuple[str, ...]] = {}


def register_backend(name: str | Callable | None = None, compiler_fn: Callable | None = None,
                     tags: tuple[str, ...] = ()):
    """Register a backend. `@register_backend` names it after the function,
    `@register_backend("name")` chooses the name, `register_backend("name", fn)` registers
    directly. A name can be registered once. `tags` (strings, e.g. "debug") are what
    `list_backends(exclude_tags=...)` filters on."""
    if callable(name):
        return _add(name.__name__, name, tags)
    if compiler_fn is not None:
        return _add(name, compiler_fn, tags)
    return lambda fn: _add(name or fn.__name__, fn, tags)


def _add(name: str, compiler_fn: Callable, tags: tuple[str, ...] = ()) -> Callable:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a backend name must be a non-empty string, not {name!r}")
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
        raise TypeError(f"backend tags must be a tuple of strings, not {tags!r}")
    if name in _BACKENDS:
        raise ValueError(f"a backend named {name!r} is already registered")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {entry.name: entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def list_backends(exclude_tags: tuple[str, ...] | None = DEFAULT_EXCLUDED_TAGS) -> list[str]:
    """The backend names, registered or installed, sorted, but those with a tag in
    `exclude_tags` (by default the debugging backends, `eager` among them);
    `exclude_tags=None` lists every backend."""
    excluded = set(exclude_tags or ())
    return sorted(name for name in set(_BACKENDS) | set(_entry_points())
                  if not excluded.intersection(_TAGS.get(name, ())))


def lookup_backend(backend: str | Callable) -> Callable:
    """The compiler function for a backend name (or the callable itself)."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        entry = _entry_points().get(backend)
        if entry is None:
            raise InvalidBackend(f"unknown backend {backend!r}; available: {', '.join(list_backends(None))}")
        _add(backend, entry.load())
    return _BACKENDS[backend]
