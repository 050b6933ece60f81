"""Fixtures for the symbolic interpreter's tests."""

import pytest


@pytest.fixture
def jit():
    """jit(fn, **options) -> pyjit.compile(fn, backend="eager", **options), with every
    cache, the recompile policy's memory and the counters cleared before and after the
    test."""
    import pyjit
    from pyjit.utils import counters

    pyjit.reset()
    counters.clear()

    def compile_eager(fn, **options):
        return pyjit.compile(fn, backend=options.pop("backend", "eager"), **options)

    try:
        yield compile_eager
    finally:
        pyjit.reset()
        counters.clear()
