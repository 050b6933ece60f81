"""Compiled autograd: the whole backward pass traced into one graph at backward() time.

NOTE(compiled-autograd): while `enable(compiler_fn)` is active, `Tensor.backward`,
`autograd.backward` and `autograd.grad` do not run the tape node by node. They walk the
autograd graph from the roots (capture.py), look its structure and input sizes up in a
cache (cache.py), and on a miss trace every node's backward into one GraphModule —
gradients, saved values and current `.grad`s its inputs, hooks `call_hook` nodes,
`.grad` accumulation `accumulate_grad` nodes — that `compiler_fn(gm)` compiles. The
compiled callable then runs instead of the tape; `.grad` is written, and the graph
released, only once it returned (docs/autograd.md, "Compiled autograd").
"""

from __future__ import annotations

import contextlib

from .. import engine
from .runtime import CompiledAutograd, reset

__all__ = ["active_compiler", "enable", "reset"]

_active: list = []  # (compiler_fn, its executor) per enable block, innermost last


@contextlib.contextmanager
def enable(compiler_fn):
    """Inside the block, backward() and autograd.grad() run through compiled autograd,
    each captured graph compiled by `compiler_fn(gm)` (a callable taking a GraphModule
    and returning a callable). Nestable; `enable(None)` turns it off inside."""
    if compiler_fn is not None and not callable(compiler_fn):
        raise TypeError(f"compiled_autograd.enable: compiler_fn must be a callable taking a GraphModule (or None), "
                        f"not {type(compiler_fn).__name__}")
    executor = None if compiler_fn is None else CompiledAutograd.for_compiler(compiler_fn)
    _active.append((compiler_fn, executor))  # the block keeps the compiler alive (the executor holds it weakly)
    previous = engine.set_executor(executor)
    try:
        yield
    finally:
        engine.set_executor(previous)
        _active.pop()


def active_compiler():
    """The compiler_fn of the innermost `enable` block, or None outside (or under enable(None))."""
    return _active[-1][0] if _active else None
