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
through a `call_hook(hooks, index, gradient)` node, and each node post hook through
`call_post_hook(hooks, index, count, *gradients)`. When `pyjit.compile` compiles that
graph, the interpreter inlines the hook itself, `hooks[index]`, into it (the hooks tuple
is a graph-module argument, so each hook is guarded by its code, and the graph by what
the hook reads, NOTE(function-arguments): a hook made anew each step reuses the graph),
on the gradients seen as Tensors (as the tape hands them to the hook), with
the engine's terms: None means the gradients unchanged, a result is cast to its
gradient's dtype. The graph runs on arrays where the tape hands the hook Tensors, so a
hook the graph would run otherwise is not inlined: one that changes a gradient in place,
or keeps one (a Tensor the tape would keep, an array in the graph), or returns what the
engine refuses (another shape, another number of gradients; or a gradient where there
was none, which the traced graph cannot follow). Its trace is rolled back, and the call
is a graph break: it runs in Python, where the engine runs the hook and raises its
errors.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from .. import config
from .. import autograd
from ..autograd import compiled_autograd
from ..autograd.compiled_autograd.trace import call_hook, call_post_hook
from ..ops import REGISTRY
from .breaks import Break
from .inline import call_user
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


def is_hook_call(fn) -> bool:
    """Whether `fn` is how compiled autograd's graph calls a hook (NOTE(hook-inlining))."""
    return fn is call_hook or fn is call_post_hook


def inline_hook(tracer, fn, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`call_hook(hooks, index, gradient)` or `call_post_hook(hooks, index, count,
    *gradients)` with the hook inlined (NOTE(hook-inlining))."""
    hooks, index, third = args[:3] if len(args) >= 3 and not kwargs else (None, None, None)
    count = 1 if fn is call_hook else third.value if isinstance(third, ConstantValue) else None
    gradients = args[2:3] if fn is call_hook else args[3:]
    if not (isinstance(hooks, SequenceValue) and isinstance(index, ConstantValue) and type(index.value) is int
            and 0 <= index.value < len(hooks.items) and type(count) is int and count <= len(gradients)
            and all(isinstance(value, ArrayValue) or _is_none(value) for value in gradients)):
        raise Break("unsupported", "compiled autograd's call_hook is called on values it does not make")
    mark = tracer.capture.checkpoint()
    # The Tensors the tape hands the hook.
    views = [ArrayValue(value.node, tensor=True) if isinstance(value, ArrayValue) else value for value in gradients]
    hook_args = views if fn is call_hook else [SequenceValue(tuple, views[:count]), SequenceValue(tuple, views[count:])]
    result = call_user(tracer, hooks.items[index.value], hook_args, {})
    if result is None:
        raise Break("unsupported", "a hook that is not a Python function is not inlined",
                    hint="it runs in Python at a graph break")
    replaced = _replaced(tracer, views, gradients, result, count, single=fn is call_hook)
    if isinstance(replaced, Break):
        tracer.capture.rollback(mark)
        raise replaced
    return replaced[0] if fn is call_hook else SequenceValue(tuple, replaced)


def _replaced(tracer, views: list[Value], gradients: list[Value], result: Value, count: int,
              single: bool) -> list[Value] | Break:
    """The gradients after the inlined hook, on the engine's terms (engine.call_hook,
    call_post_hook), or the Break saying why the graph would do otherwise than the tape."""
    hint = "it runs in Python at a graph break, as the tape runs it"
    if any(view.node is not value.node for view, value in zip(views, gradients) if isinstance(value, ArrayValue)):
        return Break("unsupported", "a hook that changes the gradient in place is not inlined", hint=hint)
    if any(_holds_computed_tensor(value) for value in tracer.side_effects.values()):
        return Break("unsupported", "a hook that keeps its gradient (in a list, dict or attribute) is not inlined",
                     hint=hint + " (the graph would keep an array, not the Tensor the hook is given)")
    if _is_none(result):
        return list(gradients[:count])
    results = [result] if single or isinstance(result, ArrayValue) else \
        list(result.items) if isinstance(result, SequenceValue) else None
    if results is None or len(results) != count or not all(map(_fits, results, gradients)):
        return Break("unsupported", "a hook returns what the autograd engine refuses (not the gradients' shapes, or "
                     "another number of them)", hint="it runs in Python at a graph break, where the engine raises "
                     "its error")
    return [new if _is_none(new) or new.node.meta.dtype == old.node.meta.dtype
            else tracer.call_op(REGISTRY["astype"], (new, ConstantValue(old.node.meta.dtype)), {})
            for new, old in zip(results, gradients)]


def _fits(new: Value, old: Value) -> bool:
    """Whether the engine keeps `new` in place of `old`, and the graph can: an array of
    its shape, or None where there was none (a hook making or removing a gradient changes
    what the traced graph computes)."""
    if _is_none(new) or _is_none(old):
        return _is_none(new) and _is_none(old)
    return isinstance(new, ArrayValue) and tuple(new.node.meta.shape) == tuple(old.node.meta.shape)


def _is_none(value: Value) -> bool:
    return isinstance(value, ConstantValue) and value.value is None


def _holds_computed_tensor(value: Value) -> bool:
    if isinstance(value, ArrayValue):
        return value.tensor and value.source is None
    return any(map(_holds_computed_tensor, contents(value)))
