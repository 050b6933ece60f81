"""Inlining: a call of a user function is traced into the caller's graph.

NOTE(inlining): calling a Python function (`helper(x)`, `obj.method(x)`, `module(x)`
on an object whose class defines `__call__` in Python) runs the callee's bytecode on an
`InlineTracer`, a Tracer that shares the caller's graph, guards, graph inputs and side
effects but has its own code, stack and locals. Its arguments are the caller's values,
bound as Python binds them (defaults and keyword-only defaults read through the
function's `__defaults__` / `__kwdefaults__`, `*args` as a tuple); its globals and
closure cells are read through the function's source (`helper.__globals__['np']`,
`helper.__closure__[0].cell_contents`), or as the frame's own globals when the callee
shares them, so what it reads is guarded like anything the frame reads. The function is
guarded by identity; a method by its `__func__` read through the bound method, which
also fails when an instance attribute shadows it.

A callee that meets a break is not resumed inside the caller's trace: everything it
recorded is rolled back and the CALL itself is the caller's break, so the caller's
graph so far runs, the call runs in Python, where the frame hook captures the callee as
a frame of its own (its own graph, its own break and resume function) — each function
is traced once per break, never re-traced from the caller's top. Callees in library
files (the standard library, NumPy, pyjit itself, NOTE(skipped-files)) are not inlined,
except pyjit.nn's, which are written on registry ops to be captured; generators,
coroutines, recursion and `**kwargs` callees are not inlined either.

A class may declare how calling its instances and reading missing attributes work,
with `inline_protocol(call=..., attribute_dicts=...)`: pyjit.nn.Module's `__call__`
is `forward`, and attributes missing from an instance are read from its `_parameters`,
`_buffers` and `_modules` (read through item sources, so no `__getattr__` runs on a
guard check).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import types
from typing import Any

from .breaks import Break
from .bytecode import decoded
from .interpreter import Tracer
from .sources import BuiltinSource, Source
from .values import NULL, CallableValue, ObjectValue, SequenceValue, Value

MAX_DEPTH = 24  # nested inlined calls; deeper ones run in Python
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator
_VARKEYWORDS = 0x08
_INLINED_LIBRARY_DIRS = (os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nn", ""),)


@dataclasses.dataclass(frozen=True)
class Protocol:
    call: str | None  # the method a call of an instance runs, bypassing `__call__`
    attribute_dicts: tuple[str, ...]  # where `__getattr__` finds attributes the instance lacks
    owner: type


_PROTOCOLS: dict[type, Protocol] = {}


def inline_protocol(*, call: str | None = None, attribute_dicts: tuple[str, ...] = ()):
    """Class decorator (NOTE(inlining)): instances are called as `instance.<call>(...)`,
    and an attribute missing from an instance is `instance.<dict>[name]` for the first
    of `attribute_dicts` holding it. Subclasses keep the protocol unless they redefine
    `__call__` or `__getattr__`."""
    def register(cls: type) -> type:
        _PROTOCOLS[cls] = Protocol(call, tuple(attribute_dicts), cls)
        return cls
    return register


def protocol_of(kind: type, special: str) -> Protocol | None:
    """The protocol `kind` inherits for `special` ("__call__" or "__getattr__"), if the
    class that declared it still provides that method."""
    for base in kind.__mro__:
        protocol = _PROTOCOLS.get(base)
        if protocol is not None:
            found = inspect.getattr_static(kind, special, None)
            return protocol if found is base.__dict__.get(special) else None
    return None


def call_user(tracer: Tracer, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
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
    protocol = protocol_of(kind, "__call__")
    if protocol is not None and protocol.call is not None:
        from .calls import load_attr

        return tracer_call(tracer, load_attr(tracer, fn, protocol.call), args, kwargs)
    return call_special(tracer, fn, "__call__", args, kwargs)


def call_special(tracer: Tracer, obj: ObjectValue, name: str, args: list[Value] = (),
                 kwargs: dict[str, Value] | None = None) -> Value | None:
    """`type(obj).<name>(obj, *args)` inlined, for a special method (`__call__`,
    `__iter__`) that the object's class defines in Python; None when it does not."""
    method = inspect.getattr_static(type(obj.value), name, None)
    if type(method) is not types.FunctionType or obj.source is None:
        return None
    method_source = obj.source.attr("__class__").attr(name)
    tracer.guards.identity(method_source, method)
    return inline(tracer, method, method_source, [obj, *args], kwargs or {})


def tracer_call(tracer: Tracer, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
    from .calls import call

    return call(tracer, fn, args, kwargs)


def inline(tracer: Tracer, function: types.FunctionType, source: Source | None, args: list[Value],
           kwargs: dict[str, Value]) -> Value:
    """Trace `function(*args, **kwargs)` into the caller's graph (NOTE(inlining))."""
    _refuse(tracer, function, source)
    arguments = _bind(tracer, function, source, args, kwargs)
    mark = checkpoint(tracer)
    child = InlineTracer(tracer, function, source, arguments)
    try:
        return child.run()
    except Break as stop:
        rollback(tracer, mark)
        where = stop.where or child.loc
        raised = Break(stop.kind, f"inlining {function.__qualname__}: {stop.explanation}", stop.hint, where=where)
        raised.captured = stop.captured  # the callee's frame captures its own backward (NOTE(captured-backward))
        raise raised from None


def _refuse(tracer: Tracer, function: types.FunctionType, source: Source | None) -> None:
    code = function.__code__
    why = None
    if source is None:
        why = "it has no source to guard it by"
    elif code.co_flags & _GENERATOR_FLAGS:
        why = "it is a generator or coroutine function"
    elif code.co_flags & _VARKEYWORDS:
        why = "it takes **kwargs"
    elif _is_library(code.co_filename):
        why = f"it is library code ({code.co_filename})"
    elif tracer.depth >= MAX_DEPTH or any(code is outer.code for outer in (tracer, *tracer.callers())):
        why = "it is recursive or nested too deeply"
    elif "__signature__" in function.__dict__:
        why = "its __signature__ says other than its code"
    if why is not None:
        raise Break("unsupported", f"call to {function.__qualname__} is not inlined: {why}",
                    hint="the call runs in Python, where the callee is captured as a frame of its own")


def _is_library(filename: str) -> bool:
    from .convert import is_skipped_file

    return is_skipped_file(filename) and not filename.startswith(_INLINED_LIBRARY_DIRS)


def _bind(tracer: Tracer, function: types.FunctionType, source: Source, args: list[Value],
          kwargs: dict[str, Value]) -> dict[str, Value]:
    """The callee's arguments as values, bound as Python binds them."""
    if any(arg is NULL for arg in args):
        raise Break("unsupported", "a call with a NULL argument")
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


@dataclasses.dataclass
class _Mark:
    nodes: int
    inputs: int
    written: int
    first_op_instr: Any
    side_effects: Any


def checkpoint(tracer: Tracer) -> _Mark:
    """What `rollback` returns the trace to."""
    root = tracer.root
    effects = getattr(root, "side_effects", None)
    return _Mark(len(root.graph.nodes), len(root.inputs), len(root.written), root.first_op_instr,
                 effects.checkpoint() if effects is not None else None)


def rollback(tracer: Tracer, mark: _Mark) -> None:
    """Forget what a callee that broke recorded: its ops, its graph inputs, its side
    effects. Its guards stay: they only make the entry more specific."""
    root = tracer.root
    # A new input's placeholder goes in before the ops (Tracer.wrap), so the ops recorded
    # since the mark start that many places later.
    added = {id(node) for node in root.graph.nodes[mark.nodes + len(root.inputs) - mark.inputs:]}
    for source, _, node in root.inputs[mark.inputs:]:
        added.add(id(node))
        del root._input_of[source]
    del root.inputs[mark.inputs:]
    for source in list(root.written)[mark.written:]:
        del root.written[source]
    for node in reversed(list(root.graph.nodes)):
        if id(node) in added:
            root.graph.erase(node)
    root.first_op_instr = mark.first_op_instr
    if mark.side_effects is not None:
        root.side_effects.rollback(mark.side_effects)


class InlineTracer(Tracer):
    """The trace of one inlined call (NOTE(inlining)): the caller's graph, guards, inputs
    and side effects; its own code, stack and locals."""

    def __init__(self, parent: Tracer, function: types.FunctionType, source: Source, arguments: dict[str, Value]):
        self.__dict__.update(parent.__dict__)  # the shared state: graph, guards, inputs, side effects
        self.parent, self.function, self.function_source = parent, function, source
        self.depth = parent.depth + 1
        self.code = function.__code__
        self.bytecode = decoded(self.code)
        self.stack, self.locals, self.kw_names = [], dict(arguments), ()
        self.instr, self.index, self.stack_before = None, 0, []
        self.returned = self.jump_to = None
        self.arguments = {}

    @property
    def root(self) -> Tracer:
        return self.parent.root

    def callers(self):
        tracer = self
        while tracer is not tracer.root:
            tracer = tracer.parent
            yield tracer

    def in_try_block(self) -> bool:
        # A handler of the callee's code has no place in the transformed code of the frame.
        return (self.instr is not None and self.instr.handler is not None) or self.parent.in_try_block()

    def load_global(self, name: str) -> Value:
        namespace = self.function.__globals__
        if namespace is self.root.frame.f_globals:
            return super().load_global(name)
        globals_source = self.function_source.attr("__globals__")
        if name in namespace:
            return self.wrap(namespace[name], globals_source.item(name))
        if self.function.__builtins__ is not self.root.frame.f_builtins or name not in self.function.__builtins__:
            raise Break("user_error", f"name {name!r} is not defined")
        self.guards.python(globals_source, lambda namespace, name=name: name not in namespace,
                           f"{name!r} not in {globals_source}")
        return self.wrap(self.function.__builtins__[name], BuiltinSource(name))

    def load_closure(self, name: str) -> Value:
        if name not in self.code.co_freevars:
            return self._local(name)
        index = self.code.co_freevars.index(name)
        try:
            contents = self.function.__closure__[index].cell_contents
        except ValueError:
            raise Break("user_error", f"free variable {name!r} is read before it is assigned") from None
        return self.wrap(contents, self.function_source.attr("__closure__").item(index).attr("cell_contents"))

    def _local(self, name: str) -> Value:
        value = self.locals.get(name)
        if value is None:
            raise Break("user_error", f"local variable {name!r} is read before it is assigned")
        return value

    def note_first_op(self) -> None:
        if self.root.first_op_instr is None:
            tracer = self
            while tracer is not self.root:
                tracer = tracer.parent
            self.root.first_op_instr = tracer.instr

