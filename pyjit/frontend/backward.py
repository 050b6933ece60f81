"""`loss.backward()` inside compiled code, captured by compiled autograd.

NOTE(captured-backward): with compiled autograd on — `pyjit.config.compiled_autograd`,
or inside `pyjit.compiled_autograd.enable(compiler_fn)` — a traced `t.backward(...)` is
not a graph break. The graph recorded so far (the forward, with its AOT backward node on
the tape) is compiled and run as at a break, the pending side effects are replayed, and
the call itself runs in the transformed code under compiled autograd, which captures the
whole backward (every AOT node, tape node and hook it reaches, across the forward's
breaks) into one graph and hands it to the compiler: the user's `compiler_fn` inside
`enable(...)`, otherwise the enclosing `pyjit.compile` with its backend, `fullgraph` and
`dynamic` (`Converter.backward_compiler`), as torch.compile does with Dynamo's
`compiled_autograd` flag. A resume function then continues, captured in turn. So:

* the split is not a break: it is not logged on `graph_breaks`, not counted in
  `counters["graph_break"]` nor in `explain`, and `fullgraph=True` accepts it;
* `.grad`, hooks and `retain_graph` are the engine's own: the call is the user's call
  on the very tensor, with the very arguments; only the engine that runs it differs;
* side effects before the call happen before it, as at a break, so a hook sees them;
* whether compiled autograd is on is guarded (a Python check on the frames that call
  `backward`), so an entry traced with it off, whose code breaks (or raises under
  `fullgraph=True`), is not reused once it is on, nor the reverse.

A `backward` call that cannot be resumed this way (inside a `try` body, say) is an
ordinary break, and the frame runs as it is: the tape computes the same gradients.
"""

from __future__ import annotations

import functools
from typing import Callable

from .. import config
from ..autograd import compiled_autograd
from .breaks import Break


def is_on() -> bool:
    """Whether a `backward()` called now runs under compiled autograd."""
    return bool(config.compiled_autograd) or compiled_autograd.active_compiler() is not None


def _is_off() -> bool:
    return not is_on()


def backward_break(tracer) -> Break | None:
    """The break that captures a traced `t.backward(...)` (NOTE(captured-backward)), or
    None when compiled autograd is off (then it is an ordinary break). Either way the
    answer is guarded."""
    on = is_on()
    tracer.guards.python(None, is_on if on else _is_off, f"compiled autograd is {'on' if on else 'off'}")
    if not on:
        return None
    stop = Break("unsupported", "Tensor.backward() under compiled autograd cannot be resumed here",
                 hint="it runs on the tape, in Python; move it out of the try or with block to capture it")
    stop.captured = True
    return stop


def run_under(compiler_fn: Callable) -> Callable:
    """What the transformed code wraps the `backward` method in before calling it: the
    method run under `compiled_autograd.enable(compiler_fn)`, unless a user's `enable`
    is active already (it chooses the compiler) or neither is on any more."""
    return functools.partial(functools.partial, _run, compiler_fn)


def _run(compiler_fn: Callable, method: Callable, *args, **kwargs):
    if compiled_autograd.active_compiler() is not None or not config.compiled_autograd:
        return method(*args, **kwargs)
    with compiled_autograd.enable(compiler_fn):
        return method(*args, **kwargs)
