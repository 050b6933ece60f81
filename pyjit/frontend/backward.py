"""`loss.backward()` inside compiled code, captured by compiled autograd.

NOTE(captured-backward): with compiled autograd on — `pyjit.config.compiled_autograd`,
or inside `pyjit.compiled_autograd.enable(compiler_fn)` — a traced `t.backward(...)`
(or `pyjit.autograd.backward(...)`, `pyjit.autograd.grad(...)`) is not a graph break. The graph recorded so far (the forward, with its AOT backward node on
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

NOTE(hook-inlining): the graph compiled autograd captures calls each tensor hook
through a `call_hook(hooks, index, gradient)` node. When `pyjit.compile` compiles that
graph, the interpreter inlines the hook itself, `hooks[index]`, into it (the hooks tuple
is a graph-module argument, so each hook is guarded by identity like any function it
inlines), on the gradient seen as a Tensor (as the tape hands it to the hook), with the
engine's terms: None means the gradient unchanged, a result is cast to the gradient's
dtype. The graph runs on arrays where the tape hands the hook a Tensor, so a hook the
graph would run otherwise is not inlined: one that changes its gradient in place, or
keeps it (a Tensor the tape would keep, an array in the graph), or returns what the
engine refuses (another shape, not an array). Its trace is rolled back, and the call is
a graph break: it runs in Python, where the engine runs the hook and raises its errors.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from .. import config
from .. import autograd
from ..autograd import compiled_autograd
from ..autograd.compiled_autograd.trace import call_hook
from ..ops import REGISTRY
from .breaks import Break
from .values import ArrayValue, ConstantValue, SequenceValue, Value, contents


def is_on() -> bool:
    """Whether a `backward()` called now runs under compiled autograd."""
    return bool(config.compiled_autograd) or compiled_autograd.active_compiler() is not None


def _is_off() -> bool:
    return not is_on()


def runs_backward(fn) -> bool:
    """Whether calling `fn` runs a backward pass: `pyjit.autograd.backward` or `grad`
    (`t.backward` is a method the interpreter knows by name)."""
    return fn is autograd.backward or fn is autograd.grad


def backward_break(tracer) -> Break | None:
    """The break that captures a traced `t.backward(...)`, `pyjit.autograd.backward(...)`
    or `pyjit.autograd.grad(...)` (NOTE(captured-backward)), or None when compiled
    autograd is off (then it is an ordinary break). Either way the answer is guarded."""
    on = is_on()
    tracer.guards.python(None, is_on if on else _is_off, f"compiled autograd is {'on' if on else 'off'}")
    if not on:
        return None
    stop = Break("unsupported", "a backward pass under compiled autograd cannot be resumed here",
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


def is_call_hook(fn) -> bool:
    """Whether `fn` is compiled autograd's `call_hook` (NOTE(hook-inlining))."""
    return fn is call_hook


def inline_hook(tracer, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`call_hook(hooks, index, gradient)` with the hook inlined (NOTE(hook-inlining))."""
    from .inline import call_user, checkpoint, rollback

    hooks, index, gradient = args if len(args) == 3 and not kwargs else (None, None, None)
    if not (isinstance(hooks, SequenceValue) and isinstance(index, ConstantValue) and isinstance(gradient, ArrayValue)
            and type(index.value) is int and 0 <= index.value < len(hooks.items)):
        raise Break("unsupported", "compiled autograd's call_hook is called on values it does not make")
    mark = checkpoint(tracer)
    view = ArrayValue(gradient.node, tensor=True)  # the Tensor the tape hands the hook
    result = call_user(tracer, hooks.items[index.value], [view], {})
    if result is None:
        raise Break("unsupported", "a hook that is not a Python function is not inlined",
                    hint="it runs in Python at a graph break")
    refused = _refused(tracer, view, gradient, result)
    if refused is not None:
        rollback(tracer, mark)
        raise refused
    if isinstance(result, ConstantValue):
        return gradient
    if result.node.meta.dtype != gradient.node.meta.dtype:
        result = tracer.call_op(REGISTRY["astype"], (result, ConstantValue(gradient.node.meta.dtype)), {})
    return ArrayValue(result.node)


def _refused(tracer, view: ArrayValue, gradient: ArrayValue, result: Value) -> Break | None:
    """Why the inlined hook cannot stand for the engine's call: what the graph, which
    runs on arrays, would do otherwise than the tape does."""
    hint = "it runs in Python at a graph break, as the tape runs it"
    if view.node is not gradient.node:
        return Break("unsupported", "a hook that changes the gradient in place is not inlined", hint=hint)
    if any(_holds_computed_tensor(value) for value in tracer.side_effects.values()):
        return Break("unsupported", "a hook that keeps its gradient (in a list, dict or attribute) is not inlined",
                     hint=hint + " (the graph would keep an array, not the Tensor the hook is given)")
    if isinstance(result, ConstantValue) and result.value is None:
        return None
    meta = result.node.meta if isinstance(result, ArrayValue) else None
    if meta is None or tuple(meta.shape) != tuple(gradient.node.meta.shape):
        return Break("unsupported", "a hook returns what the autograd engine refuses (not an array of the "
                     "gradient's shape)", hint="it runs in Python at a graph break, where the engine raises its error")
    return None


def _holds_computed_tensor(value: Value) -> bool:
    if isinstance(value, ArrayValue):
        return value.tensor and value.source is None
    return any(map(_holds_computed_tensor, contents(value)))
