"""The frontend's entry points: compile a function, capture every frame of a block,
leave a function alone, break the graph on purpose.

The public `pyjit.compile` and `pyjit.optimize` look the backend up (the frontend never
imports pyjit.backends) and hand its compiler function here.

NOTE(entry-functions): `compile` takes Python functions and methods; the public
`pyjit.compile` turns a pyjit.nn.Module into its compiled `forward` (pyjit/__init__.py).
"""

from __future__ import annotations

import functools
import threading
from typing import Callable

from .. import _C
from .convert import Converter


def compile(fn: Callable | None = None, *, compiler: Callable, fullgraph: bool = False, dynamic: bool | None = None,
            disable: bool = False):
    """`fn` wrapped so that each call captures (or reuses) its graphs; used bare or with
    arguments, as a decorator or a call. `compiler(graph_module, example_inputs)` compiles
    each graph. `fullgraph=True` raises pyjit.exc.Unsupported where the function cannot
    be captured whole. `dynamic`: None (sizes static first, symbolic once they change),
    True (every size of 2 or more symbolic from the start), False (always static)."""
    if fn is None:
        return functools.partial(compile, compiler=compiler, fullgraph=fullgraph, dynamic=dynamic, disable=disable)
    if disable:
        return fn
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"pyjit.compile takes a Python function, not {type(fn).__name__} (NOTE(entry-functions))")
    converter = Converter(compiler, fullgraph=fullgraph, dynamic=dynamic, top_code=code)
    return functools.update_wrapper(_C.CompiledFunction(fn, converter), fn)


class optimize:  # noqa: N801  (used as a function, like torch._dynamo.optimize)
    """Capture every frame started inside `with optimize(compiler):`, or inside each call
    of a function it decorates. `nopython=True` is fullgraph. Blocks nest, per thread."""

    def __init__(self, compiler: Callable, *, nopython: bool = False, dynamic: bool | None = None):
        self.callback = Converter(compiler, fullgraph=nopython, dynamic=dynamic)
        self._saved = threading.local()

    def __enter__(self):
        self._saved.__dict__.setdefault("stack", []).append(_C.set_eval_frame(self.callback))
        return self

    def __exit__(self, *exc_info):
        _C.set_eval_frame(self._saved.stack.pop())

    def __call__(self, fn: Callable) -> Callable:
        return functools.update_wrapper(_C.CompiledFunction(fn, self.callback), fn)


def disable(fn: Callable | None = None):
    """`fn` run without capture, itself and every frame it starts."""
    if fn is None:
        return disable
    return functools.update_wrapper(_C.CompiledFunction(fn, None), fn)


def graph_break() -> None:
    """Break the graph here (NOTE(break-reasons)); outside captured code it does nothing."""
