"""Running a backward pass through compiled autograd (NOTE(compiled-autograd))."""

from __future__ import annotations

import weakref

from .. import engine

_executors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_strong_executors: dict = {}  # compilers that cannot be weakly referenced


class CompiledAutograd:
    """The reverse-pass executor of one compiler_fn, with its cache of compiled graphs."""

    def __init__(self, compiler_fn):
        self.compiler_fn = compiler_fn

    @classmethod
    def for_compiler(cls, compiler_fn) -> CompiledAutograd:
        """The executor of `compiler_fn`: one per compiler, so its cache outlives an enable block."""
        try:
            executor = _executors.get(compiler_fn)
            if executor is None:
                executor = _executors[compiler_fn] = cls(compiler_fn)
        except TypeError:
            executor = _strong_executors.setdefault(id(compiler_fn), cls(compiler_fn))
        return executor

    def __call__(self, roots: list, grads: list, *, retain_graph: bool = False, inputs: list | None = None):
        return engine.run(roots, grads, retain_graph=retain_graph, inputs=inputs)


def reset() -> None:
    """Forget every compiled backward graph."""
    _executors.clear()
    _strong_executors.clear()
