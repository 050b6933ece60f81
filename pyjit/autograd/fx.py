"""`make_fx`: a function on tensors traced into a flat graph of registry ops, its
backward included (NOTE(make-fx) in tracing.py)."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..graph import GraphModule
from .tensor import Tensor
from .tracing import TapeTracer, TracedArray


def make_fx(fn, tracing_mode: str = "real"):
    """`make_fx(fn, tracing_mode)(*args)` -> GraphModule: `fn` traced at the level the
    tape executes, into one flat graph of registry primitives taking the arrays of the
    tensors in `args` in order. Arguments and results are pytrees, as torch's
    (NOTE(make-fx-pytrees)). A `backward()` or `autograd.grad` inside `fn` records the
    backward too, so returning the gradients gives the joint graph.

    tracing_mode: "real" computes as it traces (a Python decision on a value takes the
    branch these inputs take); "fake" keeps only shapes, dtypes and devices (no data,
    no compute); "symbolic" is fake with every size of 2 or more a symbol (`s0`, …) of
    pyjit/graph/symbolic.py. Without data, a Python decision on a value raises
    pyjit.exc.DataDependentError naming the line.
    """
    TapeTracer(tracing_mode)  # an unknown mode fails here, not at the first call

    @functools.wraps(fn)
    def trace(*args) -> GraphModule:
        tracer = TapeTracer(tracing_mode)
        leaves, spec = _flatten(args)
        names = _leaf_names(spec, _input_names(fn, len(args)))
        traced = [_traced_input(tracer, name, leaf) if isinstance(leaf, Tensor) else _passed_through(name, leaf)
                  for name, leaf in zip(names, leaves)]
        inputs = [value for value in traced if isinstance(value, Tensor)]
        result = fn(*_unflatten(spec, iter(traced)))
        _check_inputs_unmodified(tracer, inputs)
        tracer.graph.output(_output(tracer, result))
        tracer.graph.eliminate_dead_code()  # what only a Python decision read (a comparison for an `if`)
        return TracedModule(tracer.graph, spec, leaves)

    return trace


# NOTE(make-fx-pytrees): as torch's make_fx, the arguments are pytrees — tuples, lists
# and dicts, nested — whose tensor leaves become the graph's inputs, in the order
# they are flattened (dicts in their keys' order), named after the parameter and the
# path (`inputs_0`, `batch_x`). Other leaves (numbers, strings, None, objects) reach
# `fn` as they are and the graph is specialised to them; a NumPy array leaf is refused
# with a hint, as it would be baked into the graph silently. The module the trace
# returns takes the same structure: it flattens its arguments, checks that the
# structure and the other leaves are those it was traced with (ValueError otherwise)
# and runs the graph on the tensor leaves (tensors or their arrays). Results are
# pytrees too: the graph returns the structure `fn` returned, tensors as arrays.
class TracedModule(GraphModule):
    """What make_fx returns: a GraphModule called with `fn`'s argument structure (NOTE(make-fx-pytrees))."""

    def __init__(self, graph, spec, leaves: list):
        super().__init__(graph, check_sizes=True)
        self.spec = spec
        self.constant_leaves = {index: leaf for index, leaf in enumerate(leaves) if not isinstance(leaf, Tensor)}

    def __call__(self, *args):
        leaves, spec = _flatten(args)
        if spec != self.spec:
            raise ValueError(f"graph {self.graph.name} was traced for arguments shaped {_describe(self.spec)}, "
                             f"not {_describe(spec)}: trace it again")
        for index, traced in self.constant_leaves.items():
            if type(leaves[index]) is not type(traced) or not _same(leaves[index], traced):
                raise ValueError(f"graph {self.graph.name} was traced for the argument {traced!r}, not "
                                 f"{leaves[index]!r}: trace it again")
        arrays = [leaf.array if isinstance(leaf, Tensor) else leaf
                  for index, leaf in enumerate(leaves) if index not in self.constant_leaves]
        return super().__call__(*arrays)


def _same(given, traced) -> bool:
    try:
        return bool(given is traced or given == traced)
    except Exception:  # an object whose == raises or is not a truth value
        return False


def _flatten(value) -> tuple[list, object]:
    """The leaves of a pytree (tuples, lists, dicts), and its structure: None for a leaf,
    else (type, keys, child structures)."""
    if type(value) in (tuple, list):
        pairs = [_flatten(item) for item in value]
        return [leaf for leaves, _ in pairs for leaf in leaves], (type(value), None, tuple(s for _, s in pairs))
    if type(value) is dict:
        pairs = [_flatten(item) for item in value.values()]
        return ([leaf for leaves, _ in pairs for leaf in leaves],
                (dict, tuple(value), tuple(s for _, s in pairs)))
    return [value], None


def _unflatten(spec, leaves):
    """The pytree of structure `spec` with the next items of the iterator `leaves`."""
    if spec is None:
        return next(leaves)
    kind, keys, children = spec
    items = [_unflatten(child, leaves) for child in children]
    return dict(zip(keys, items)) if kind is dict else kind(items)


def _leaf_names(spec, names: list[str]) -> list[str]:
    """A name per leaf: the parameter's, then the path within it."""
    found: list[str] = []

    def walk(structure, name):
        if structure is None:
            found.append(name)
            return
        kind, keys, children = structure
        for key, child in zip(keys if keys is not None else range(len(children)), children):
            walk(child, f"{name}_{key}")

    for name, child in zip(names, spec[2]):
        walk(child, name)
    return found


def _describe(spec) -> str:
    if spec is None:
        return "*"
    kind, keys, children = spec
    inner = [_describe(child) for child in children]
    if kind is dict:
        return "{" + ", ".join(f"{key!r}: {item}" for key, item in zip(keys, inner)) + "}"
    return ("[{}]" if kind is list else "({})").format(", ".join(inner))


def _input_names(fn, count: int) -> list[str]:
    try:
        parameters = [parameter for parameter in inspect.signature(fn).parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    names = [parameter.name for parameter in parameters[:count]]
    return names + [f"arg{index}" for index in range(len(names), count)]


def _traced_input(tracer: TapeTracer, name: str, arg: Tensor) -> Tensor:
    tensor = Tensor(tracer.placeholder(name, arg.array))
    tensor.requires_grad = arg.requires_grad
    return tensor


def _passed_through(name: str, leaf):
    if isinstance(leaf, np.ndarray) or hasattr(type(leaf), "__cuda_array_interface__"):
        raise TypeError(f"make_fx traces functions of pyjit Tensors; argument {name!r} is a {type(leaf).__name__}, "
                        f"which the graph would hold as a constant (pass pyjit.tensor(...), or bind it with "
                        f"functools.partial)")
    return leaf


def _check_inputs_unmodified(tracer: TapeTracer, inputs: list[Tensor]) -> None:
    """The graph is functional: an input `fn` updated in place would not be updated by it."""
    for tensor, placeholder, node in zip(inputs, tracer.placeholders, tracer.graph.placeholders):
        if placeholder.node is not node or tensor.array is not placeholder:
            raise NotImplementedError(f"make_fx: the function modified its input {node.name!r} in place "
                                      f"(its graph is functional and would not): return the new value instead")


def _output(tracer: TapeTracer, value):
    """What the graph returns: the pytree `fn` returned, traced tensors as their nodes,
    other arrays as constants, other leaves as they are (NOTE(make-fx-pytrees))."""
    if isinstance(value, Tensor):
        value = value.array
    if isinstance(value, TracedArray):
        return value.node
    if isinstance(value, np.ndarray):
        return tracer.graph.constant(value, name="constant")
    if type(value) in (tuple, list):
        return type(value)(_output(tracer, item) for item in value)
    if type(value) is dict:
        return {key: _output(tracer, item) for key, item in value.items()}
    return value
