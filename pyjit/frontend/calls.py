"""A call of a symbolic value: dispatched by what is called, to NumPy functions and array
methods (array_calls.py), the builtins the interpreter knows (builtin_calls.py), the
containers' methods, graph ops, hooks and `backward()`, or a Python function inlined.
"""

from __future__ import annotations

import types

import numpy as np

from .allowed import graph_op, makes_tensors
from .array_calls import (call_method, call_numpy, call_scalar_type, call_tensor_method, call_ufunc_method,
                          value_shaped_break)
from .attributes import load_attr
from .backward import backward_break, inline_hook, is_hook_call, runs_backward
from .breaks import Break
from .builtin_calls import call_builtin
from .inline import call_user
from .policy import protocol_of
from .values import ArrayValue, CallableValue, ConstantValue, ObjectValue, Value, describe, registry_entry


def call(tracer, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if isinstance(fn, CallableValue):
        if fn.kind == "numpy":
            return call_numpy(tracer, registry_entry(fn.target), fn.target, args, kwargs)
        if fn.kind == "method":
            if fn.self.tensor:
                return call_tensor_method(tracer, fn.self, fn.target, args, kwargs)
            return call_method(tracer, fn.self, fn.target, args, kwargs)
        if fn.kind == "builtin":
            return call_builtin(tracer, fn.target, args, kwargs)
        if fn.kind == "ufunc_method":
            return call_ufunc_method(tracer, fn.self.target, fn.target, args, kwargs)
        if fn.kind == "container_method":
            return tracer.side_effects.call_method(tracer, fn.self, fn.target, args, kwargs)
        if fn.kind == "op":
            return tracer.call_op(fn.target, tuple(args), kwargs)
        if fn.kind == "graph_break":
            raise Break("graph_break", "pyjit.graph_break() was called",
                        hint="remove it to capture the function whole")
    if isinstance(fn, ConstantValue) and isinstance(fn.value, type) and issubclass(fn.value, (np.number, np.bool_)):
        return call_scalar_type(tracer, fn.value, args, kwargs)
    if isinstance(fn, ObjectValue) and is_hook_call(fn.value):
        return inline_hook(tracer, fn.value, args, kwargs)
    captured = backward_break(tracer) if isinstance(fn, ObjectValue) and runs_backward(fn.value) else None
    if captured is not None:
        raise captured
    allowed = graph_op(fn.value) if isinstance(fn, ObjectValue) else None
    if allowed is not None:  # NOTE(allow-in-graph)
        if any(isinstance(value, ArrayValue) and value.tensor for value in (*args, *kwargs.values())):
            raise Break("unsupported", f"{allowed.name} (allowed in the graph) is called on a pyjit.Tensor, whose "
                        "gradient the graph would not record", hint="it runs in Python at a graph break")
        result = tracer.call_op(allowed, tuple(args), kwargs)
        result.tensor = result.tensor or makes_tensors(allowed)
        return result
    declared = _declared_call(fn)
    if declared is not None:  # NOTE(inlining): the method a class declares its calls run
        return call(tracer, load_attr(tracer, fn, declared), args, kwargs)
    shaped_by_values = value_shaped_break(fn.value) if isinstance(fn, ObjectValue) else None
    if shaped_by_values is not None:  # NOTE(value-shaped-calls)
        raise shaped_by_values
    inlined = call_user(tracer, fn, args, kwargs)
    if inlined is not None:
        return inlined
    raise Break("unsupported", f"a call to {describe(fn)} is not captured",
                hint="captured calls are NumPy functions in pyjit's op registry (docs/ops.md), ndarray methods, "
                     "a few builtins, and Python functions with source (inlined); this call runs in Python")


def _declared_call(fn: Value) -> str | None:
    """The method a call of `fn`, an instance, runs as its class declares
    (NOTE(inline-declarations))."""
    if not isinstance(fn, ObjectValue) or fn.source is None:
        return None
    kind = type(fn.value)
    if kind is types.FunctionType or issubclass(kind, type):
        return None
    protocol = protocol_of(kind, "__call__")
    return protocol.call if protocol is not None else None
