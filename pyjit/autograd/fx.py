"""`make_fx`: a function on tensors traced into a flat graph of registry ops, its
backward included (NOTE(make-fx) in tracing.py)."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..graph import GraphModule
from .tensor import Tensor
from .tracing import Tracer, TracedArray


def make_fx(fn, tracing_mode: str = "real"):
    """`make_fx(fn, tracing_mode)(*tensors)` -> GraphModule: `fn` traced at the level
    the tape executes, into one flat graph of registry primitives taking the tensors'
    arrays in order. A `backward()` or `autograd.grad` inside `fn` records the backward
    too, so returning the gradients gives the joint graph.

    tracing_mode: "real" computes as it traces (a Python decision on a value takes the
    branch these inputs take); "fake" keeps only shapes, dtypes and devices (no data,
    no compute); "symbolic" is fake with every size of 2 or more a symbol (`s0`, …) of
    pyjit/graph/symbolic.py. Without data, a Python decision on a value raises
    pyjit.exc.DataDependentError naming the line.
    """
    Tracer(tracing_mode)  # an unknown mode fails here, not at the first call

    @functools.wraps(fn)
    def trace(*args) -> GraphModule:
        tracer = Tracer(tracing_mode)
        inputs = [_traced_input(tracer, name, arg) for name, arg in zip(_input_names(fn, len(args)), args)]
        result = fn(*inputs)
        _check_inputs_unmodified(tracer, inputs)
        tracer.graph.output(_output(tracer, result))
        tracer.graph.eliminate_dead_code()  # what only a Python decision read (a comparison for an `if`)
        return GraphModule(tracer.graph, check_sizes=True)

    return trace


def _input_names(fn, count: int) -> list[str]:
    try:
        parameters = [parameter for parameter in inspect.signature(fn).parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    names = [parameter.name for parameter in parameters[:count]]
    return names + [f"arg{index}" for index in range(len(names), count)]


def _traced_input(tracer: Tracer, name: str, arg) -> Tensor:
    if not isinstance(arg, Tensor):
        raise TypeError(f"make_fx traces functions of pyjit Tensors; argument {name!r} is a {type(arg).__name__} "
                        f"(bind other arguments with functools.partial, or pass pyjit.tensor(...))")
    tensor = Tensor(tracer.placeholder(name, arg.array))
    tensor.requires_grad = arg.requires_grad
    return tensor


def _check_inputs_unmodified(tracer: Tracer, inputs: list[Tensor]) -> None:
    """The graph is functional: an input `fn` updated in place would not be updated by it."""
    for tensor, placeholder, node in zip(inputs, tracer.placeholders, tracer.graph.placeholders):
        if placeholder.node is not node or tensor.array is not placeholder:
            raise NotImplementedError(f"make_fx: the function modified its input {node.name!r} in place "
                                      f"(its graph is functional and would not): return the new value instead")


def _output(tracer: Tracer, value):
    """What the graph returns: traced tensors as their nodes, other arrays as constants."""
    if isinstance(value, Tensor):
        value = value.array
    if isinstance(value, TracedArray):
        return value.node
    if isinstance(value, np.ndarray):
        return tracer.graph.constant(value, name="constant")
    if type(value) in (tuple, list):
        return type(value)(_output(tracer, item) for item in value)
    if value is None or type(value) in (bool, int, float, complex):
        return value
    raise TypeError(f"make_fx: the function returned a {type(value).__name__}; a graph returns tensors, arrays, "
                    f"Python numbers and tuples or lists of them")
