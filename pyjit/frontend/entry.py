"""The frontend's entry points: compile a function, capture every frame of a block,
leave a function alone (`graph_break`, which breaks the graph on purpose, is in breaks.py).

The public `pyjit.compile` and `pyjit.optimize` look the backend up (the frontend never
imports pyjit.backends) and hand its compiler function here.

NOTE(entry-functions): `compile` takes Python functions and methods, and a GraphModule
(its printed `forward`: compiled autograd hands its compiler one); the public
`pyjit.compile` turns a pyjit.nn.Module into its compiled `forward` (pyjit/__init__.py).

NOTE(pickling): a compiled function travels to another process (multiprocessing,
concurrent.futures process pools, Dask workers) as a reference to the function it wraps
and the way it was compiled, never as compiled code: the receiving process compiles on
its first call (or loads the kernels from its disk or remote cache). `compile` is handed
`rebuild`, a picklable callable that `pyjit.compile` makes from its own arguments
(`functools.partial(pyjit.compile, backend=..., ...)`); unpickling calls
`rebuild(fn)`. When the compiled function is itself what its module's name refers to
(the `@pyjit.compile` decorator replaced the function), it is pickled as that name,
as pickle does for plain functions, and the receiving process imports the module and
finds it compiled there; `fn` itself could not be pickled, its name being taken.
Otherwise `fn` is pickled as pickle (or cloudpickle, for Dask) pickles functions. A
function `optimize` made pickles only by its module's name: there is no `rebuild` for
it (its callback belongs to the `optimize` object, which may be a block's too).
"""

from __future__ import annotations

import copyreg
import functools
import pickle
import sys
import threading
from typing import Callable

from .. import _C
from ..graph import GraphModule
from .convert import Converter


def compile(fn: Callable | None = None, *, compiler: Callable, fullgraph: bool = False, dynamic: bool | None = None,
            disable: bool = False, rebuild: Callable | None = None):
    """`fn` wrapped so that each call captures (or reuses) its graphs; used bare or with
    arguments, as a decorator or a call. `compiler(graph_module, example_inputs)` compiles
    each graph. `fullgraph=True` raises pyjit.exc.Unsupported where the function cannot
    be captured whole. `dynamic`: None (sizes static first, symbolic once they change),
    True (every size of 2 or more symbolic from the start), False (always static).
    `rebuild(fn)` makes the same compiled function in another process (NOTE(pickling))."""
    if fn is None:
        return functools.partial(compile, compiler=compiler, fullgraph=fullgraph, dynamic=dynamic, disable=disable,
                                 rebuild=rebuild)
    if disable:
        return fn
    if isinstance(fn, GraphModule):  # what compiled autograd hands its compiler (NOTE(entry-functions))
        fn = fn.forward
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"pyjit.compile takes a Python function, not {type(fn).__name__} (NOTE(entry-functions))")
    converter = Converter(compiler, fullgraph=fullgraph, dynamic=dynamic, top_code=code,
                          backward_compiler=backward_compiler(compiler, fullgraph, dynamic))
    compiled = functools.update_wrapper(_C.CompiledFunction(fn, converter), fn)
    compiled._pyjit_rebuild = rebuild
    return compiled


class optimize:  # noqa: N801  (used as a function, like torch._dynamo.optimize)
    """Capture every frame started inside `with optimize(compiler):`, or inside each call
    of a function it decorates. `nopython=True` is fullgraph. Blocks nest, per thread."""

    def __init__(self, compiler: Callable, *, nopython: bool = False, dynamic: bool | None = None):
        self.callback = Converter(compiler, fullgraph=nopython, dynamic=dynamic,
                                  backward_compiler=backward_compiler(compiler, nopython, dynamic))
        self._saved = threading.local()

    def __enter__(self):
        self._saved.__dict__.setdefault("stack", []).append(_C.set_eval_frame(self.callback))
        return self

    def __exit__(self, *exc_info):
        _C.set_eval_frame(self._saved.stack.pop())

    def __call__(self, fn: Callable) -> Callable:
        return functools.update_wrapper(_C.CompiledFunction(fn, self.callback), fn)


def backward_compiler(compiler: Callable, fullgraph: bool, dynamic: bool | None) -> Callable:
    """The compiler function of a backward captured under config.compiled_autograd
    inside code compiled with these settings: the same backend and settings
    (NOTE(captured-backward) in backward.py)."""
    return functools.partial(compile, compiler=compiler, fullgraph=fullgraph, dynamic=dynamic)


def disable(fn: Callable | None = None):
    """`fn` run without capture, itself and every frame it starts."""
    if fn is None:
        return disable
    wrapper = functools.update_wrapper(_C.CompiledFunction(fn, None), fn)
    wrapper._pyjit_rebuild = disable
    return wrapper


def _reduce(compiled):
    """How pickle writes a `_C.CompiledFunction` (NOTE(pickling))."""
    if _named_by_its_module(compiled):
        return compiled.__qualname__
    rebuild = compiled.__dict__.get("_pyjit_rebuild")
    if rebuild is None:
        raise pickle.PicklingError(f"{compiled!r} cannot be pickled: it was not made by pyjit.compile (nor is it "
                                   f"its module's {compiled.__qualname__}); compile the function with pyjit.compile "
                                   f"to send it to another process")
    return rebuild, (compiled.__wrapped__,)


def _named_by_its_module(compiled) -> bool:
    target = sys.modules.get(getattr(compiled, "__module__", None) or "")
    for name in getattr(compiled, "__qualname__", "<locals>").split("."):
        if name == "<locals>" or target is None:
            return False
        target = getattr(target, name, None)
    return target is compiled


copyreg.pickle(_C.CompiledFunction, _reduce)
