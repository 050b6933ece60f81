"""The op registry (NOTE(op-entry) in registry.py): `pyjit.ops.<name>` is the entry named
`name`, the name NumPy gives the function where NumPy has one."""

from . import (  # noqa: F401  (each registers its ops)
    complex_parts, composites, creation, cumulative, diagonals, fourier, indexing, lapack, linalg, manipulation,
    pointwise, reductions, signal, sorting, statistics, two_results, views, windows)
from .registry import CATEGORIES, REGISTRY, Composite, Op


def __getattr__(name: str):
    try:
        return REGISTRY[name]
    except KeyError:
        raise AttributeError(f"module 'pyjit.ops' has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(REGISTRY))


__all__ = ["CATEGORIES", "REGISTRY", "Composite", "Op"]
