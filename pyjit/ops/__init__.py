"""The op registry (NOTE(op-entry) in registry.py): `pyjit.ops.<name>` is the entry named
`name`, the name NumPy gives the function where NumPy has one."""

from . import composites, creation, indexing, linalg, pointwise, reductions, views  # noqa: F401  (each registers its ops)
from .registry import CATEGORIES, REGISTRY, Composite, Op


def __getattr__(name: str):
    try:
        return REGISTRY[name]
    except KeyError:
        raise AttributeError(f"module 'pyjit.ops' has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(REGISTRY))


__all__ = ["CATEGORIES", "REGISTRY", "Composite", "Op"]
