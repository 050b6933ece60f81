"""Inlining: a call of a user function is traced into the caller's graph.

NOTE(inlining): calling a Python function (`helper(x)`, `obj.method(x)`, `module(x)`
on an object whose class defines `__call__` in Python) runs the callee's bytecode on an
`InlineTracer` (interpreter.py, made by `Tracer.inlined`), a Tracer that shares the
caller's Capture (NOTE(capture)) but has its own code, stack and locals. Its arguments are the caller's values,
bound as Python binds them (defaults and keyword-only defaults read through the
function's `__defaults__` / `__kwdefaults__`, `*args` as a tuple); its globals and
closure cells are read through the function's source (`helper.__globals__['np']`,
`helper.__closure__[0].cell_contents`), or as the frame's own globals when the callee
shares them, so what it reads is guarded like anything the frame reads. The function is
guarded by identity (by its code when it is read from an argument,
NOTE(function-arguments)); a method by its `__func__` read through the bound method,
which also fails when an instance attribute shadows it.

A callee that meets a break is not resumed inside the caller's trace: everything it
recorded is rolled back and the CALL itself is the caller's break, so the caller's
graph so far runs, the call runs in Python, where the frame hook captures the callee as
a frame of its own (its own graph, its own break and resume function) — each function
is traced once per break, never re-traced from the caller's top. Callees in library
files (the standard library, NumPy, pyjit itself, NOTE(skipped-files) in policy.py) are
not inlined, except pyjit.nn's, which are written on registry ops to be captured; generators,
coroutines, recursion and `**kwargs` callees are not inlined either.

A class may declare how calling its instances and reading missing attributes work
(NOTE(inline-declarations) in policy.py): pyjit.nn.Module's `__call__` is `forward`,
and attributes missing from an instance are read from its `_parameters`, `_buffers` and
`_modules` (read through item sources, so no `__getattr__` runs on a guard check).
"""

from __future__ import annotations

import inspect
import types

from .breaks import Break
from .policy import code_file, is_library_code
from .sources import Source
from .values import NULL, CallableValue, ObjectValue, SequenceValue, Value

MAX_DEPTH = 24  # nested inlined calls; deeper ones run in Python
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator
_VARKEYWORDS = 0x08


def call_user(tracer, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """The value of calling `fn` when it is a user function, method or callable object
    (inlined); None when `fn` is none of these."""
    if isinstance(fn, CallableValue) and fn.kind == "user":
        function_source = fn.source.attr("__func__") if fn.source is not None else None
        return inline(tracer, fn.target, function_source, [fn.self, *args], kwargs)
    if not isinstance(fn, ObjectValue):
        return None
    if type(fn.value) is types.FunctionType:
        return inline(tracer, fn.value, fn.source, args, kwargs)
    kind = type(fn.value)
    if issubclass(kind, type) or fn.source is None:
        return None
    return call_special(tracer, fn, "__call__", args, kwargs)


def call_special(tracer, obj: ObjectValue, name: str, args: list[Value] = (),
                 kwargs: dict[str, Value] | None = None) -> Value | None:
    """`type(obj).<name>(obj, *args)` inlined, for a special method (`__call__`,
    `__iter__`) that the object's class defines in Python; None when it does not."""
    method = inspect.getattr_static(type(obj.value), name, None)
    if type(method) is not types.FunctionType or obj.source is None:
        return None
    method_source = obj.source.attr("__class__").attr(name)
    tracer.guards.identity(method_source, method)
    return inline(tracer, method, method_source, [obj, *args], kwargs or {})


def inline(tracer, function: types.FunctionType, source: Source | None, args: list[Value],
           kwargs: dict[str, Value]) -> Value:
    """Trace `function(*args, **kwargs)` into the caller's graph (NOTE(inlining))."""
    _refuse(tracer, function, source)
    arguments = _bind(tracer, function, source, args, kwargs)
    mark = tracer.capture.checkpoint()
    child = tracer.inlined(function, source, arguments)
    try:
        return child.run()
    except Break as stop:
        tracer.capture.rollback(mark)
        where = stop.where or child.loc
        raised = Break(stop.kind, f"inlining {function.__qualname__}: {stop.explanation}", stop.hint, where=where)
        raised.captured = stop.captured  # the callee's frame captures its own backward (NOTE(captured-backward))
        raise raised from None


def _refuse(tracer, function: types.FunctionType, source: Source | None) -> None:
    code = function.__code__
    why = None
    if source is None:
        why = "it was not read from a variable, a global or an attribute, so no guard can check it is the " \
              "same function on the next call"
    elif code.co_flags & _GENERATOR_FLAGS:
        why = "it is a generator or coroutine function"
    elif code.co_flags & _VARKEYWORDS:
        why = "it takes **kwargs"
    elif is_library_code(code, function.__globals__):
        why = f"it is library code ({code_file(code, function.__globals__)})"
    elif tracer.depth >= MAX_DEPTH or any(code is outer.code for outer in (tracer, *tracer.callers())):
        why = "it is recursive or nested too deeply"
    elif "__signature__" in function.__dict__:
        why = "its __signature__ says other than its code"
    if why is not None:
        raise Break("unsupported", f"call to {function.__qualname__} is not inlined: {why}",
                    hint="the call runs in Python, where the callee is captured as a frame of its own")


def _bind(tracer, function: types.FunctionType, source: Source, args: list[Value],
          kwargs: dict[str, Value]) -> dict[str, Value]:
    """The callee's arguments as values, bound as Python binds them."""
    if any(arg is NULL for arg in args):
        # Python's compiler never passes the call protocol's empty slot as an argument and
        # CPython would crash on such a call: only hand-made bytecode gets here.
        raise Break("unsupported", "a call passes an empty stack slot as an argument, which Python's compiler "
                    "never does: this code object was built or edited by hand")
    signature = inspect.Signature.from_callable(function, follow_wrapped=False)
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError as error:
        raise Break("user_error", f"{function.__qualname__}(): {error}") from None
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    defaults = function.__defaults__ or ()
    first_default = len(positional) - len(defaults)
    values = {}
    for name, parameter in signature.parameters.items():
        if name in bound:
            given = bound[name]
            values[name] = SequenceValue(tuple, list(given)) \
                if parameter.kind is inspect.Parameter.VAR_POSITIONAL else given
        elif parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            values[name] = SequenceValue(tuple, [])
        elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            values[name] = tracer.wrap(function.__kwdefaults__[name], source.attr("__kwdefaults__").item(name))
        else:
            index = positional.index(name) - first_default
            values[name] = tracer.wrap(defaults[index], source.attr("__defaults__").item(index))
    return values
