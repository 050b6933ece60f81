"""From a finished symbolic run to the transformed code: the graph's output, the compiled
graph, and the bytecode that calls it.

NOTE(transformed-code): the transformed code keeps the original's signature, free
variables, file name and line table, and its prologue (MAKE_CELL, COPY_FREE_VARS,
RESUME). Then it loads the compiled graph (a constant), loads each graph input from its
source (an argument, a global, a closure cell, an attribute or item chain on those),
calls it, and rebuilds the returned value:

    compiled(x, y, np_pi)            # one call; a single array result is returned as is
    STORE_FAST __pyjit_out           # otherwise the graph returns a tuple
    (__pyjit_out[0], x, 2.5)         # arrays from the tuple, sourced values re-read
    RETURN_VALUE                     # from their source, constants baked in

A value that came from a source is re-read from it (the caller gets the very object
the original returns), an array computed by the graph comes from the graph's result,
a constant is baked in (a list is rebuilt on each call, never shared). The new
instructions carry the position of the instruction that recorded the first op, so a
traceback through the compiled call points at the user's line.
"""

from __future__ import annotations

import dataclasses
import dis
from typing import Any, Callable

import numpy as np

from ..graph import GraphModule, SymInt
from .breaks import Break
from .bytecode import FreeVar, Instr, assemble, call_instructions, name_arg
from .sources import AttrSource, BuiltinSource, ClosureSource, GlobalSource, ItemSource, LocalSource, Source
from .values import ArrayValue, ConstantValue, SequenceValue, Value

_RESULT = "__pyjit_out"
_SHARED_BY_VALUE = (int, float, complex, str, bytes, tuple, frozenset)  # NOTE(constant-identity)
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), slice, range, np.dtype, np.generic, type,
              type(Ellipsis))


@dataclasses.dataclass
class Output:
    code: Any  # types.CodeType
    graph_module: GraphModule | None  # None: the code records no op (a break first thing)


def build(tracer, compiler: Callable) -> Output:
    """Compile the graph `tracer` recorded and emit the transformed code."""
    value = tracer.returned
    outputs: list = []
    _collect(value, outputs)
    single = len(outputs) == 1 and isinstance(value, ArrayValue) and value.source is None
    tracer.graph.output(outputs[0] if single else tuple(outputs))
    loc = _op_loc(tracer)
    # Built before compiling: a result the code cannot rebuild is a Break, and then the
    # backend's work would be wasted.
    tail = [] if single else [Instr("STORE_FAST", _RESULT, loc=loc)] + rebuild(value, outputs, tracer.code, loc)
    call, graph_module = _compile(tracer, compiler, loc)
    body = call + tail + [Instr("RETURN_VALUE", loc=loc)]
    code = assemble(dataclasses.replace(tracer.bytecode, instructions=prologue(tracer.bytecode) + body))
    return Output(code, graph_module)


def graph_call(tracer, compiler: Callable, live: list[Value]) -> tuple[list[Instr], list, GraphModule | None]:
    """The graph compiled with the computed arrays that `live` holds as its outputs, the
    instructions that call it and keep its result tuple in `__pyjit_out`, and the output
    nodes for `rebuild`; no instructions and no graph module when it records no op."""
    outputs: list = []
    for value in live:
        _collect(value, outputs)
    if not tracer.graph.calls():
        return [], outputs, None
    tracer.graph.output(tuple(outputs))
    loc = _op_loc(tracer)
    call, graph_module = _compile(tracer, compiler, loc)
    return call + [Instr("STORE_FAST", _RESULT, loc=loc)], outputs, graph_module


def _op_loc(tracer):
    """The position the graph call carries: the instruction that recorded the first op."""
    return tracer.first_op_instr.loc if tracer.first_op_instr is not None else None


def _compile(tracer, compiler: Callable, loc) -> tuple[list[Instr], GraphModule]:
    loads = [_load(source, tracer.code, loc) for source, _, _ in tracer.inputs]
    graph_module = GraphModule(tracer.graph)
    compiled = compiler(graph_module, [example for _, example, _ in tracer.inputs])
    return call_instructions([Instr("LOAD_CONST", compiled, loc=loc)], loads, loc), graph_module


def _collect(value: Value, outputs: list) -> None:
    """The computed arrays `value` holds, in order, each once."""
    if isinstance(value, ArrayValue) and value.source is None:
        if not any(node is value.node for node in outputs):
            outputs.append(value.node)
    elif isinstance(value, SequenceValue) and value.source is None:
        for item in value.items:
            _collect(item, outputs)


def rebuild(value: Value, outputs: list, code, loc) -> list[Instr]:
    """Instructions pushing `value`: re-read from its source, taken from the graph's
    result (`outputs`: its nodes in order), or built from constants."""
    if value.source is not None:
        return _load(value.source, code, loc)
    if isinstance(value, ArrayValue):
        index = next(i for i, node in enumerate(outputs) if node is value.node)
        return [Instr("LOAD_FAST", _RESULT, loc=loc), Instr("LOAD_CONST", index, loc=loc),
                Instr("BINARY_SUBSCR", loc=loc)]
    if isinstance(value, SequenceValue):
        items = [instr for item in value.items for instr in rebuild(item, outputs, code, loc)]
        build_op = "BUILD_TUPLE" if value.kind is tuple else "BUILD_LIST"
        return items + [Instr(build_op, len(value.items), loc=loc)]
    if isinstance(value, ConstantValue):
        return _constant(value.value, _literal_ids(code), loc)
    raise Break("unsupported", f"returning a {type(value).__name__} is not modelled")


def _literal_ids(code) -> set[int]:
    """The ids of `code`'s constants, those inside its constant tuples included."""
    found, todo = set(), list(code.co_consts)
    while todo:
        value = todo.pop()
        found.add(id(value))
        if type(value) in (tuple, frozenset):
            todo.extend(value)
    return found


def _constant(value: Any, literals: set[int], loc) -> list[Instr]:
    if isinstance(value, SymInt):
        raise Break("unsupported", "a symbolic size in the result", hint="sizes used as results are static "
                    "with dynamic=False")
    if type(value) in (tuple, list):
        items = [instr for item in value for instr in _constant(item, literals, loc)]
        if type(value) is tuple and all(isinstance(item, _IMMUTABLE) for item in value):
            return _load_constant(value, literals, loc)
        return items + [Instr("BUILD_TUPLE" if type(value) is tuple else "BUILD_LIST", len(value), loc=loc)]
    if not isinstance(value, _IMMUTABLE):
        raise Break("unsupported", f"returning a {type(value).__name__} made at trace time")
    return _load_constant(value, literals, loc)


def _load_constant(value: Any, literals: set[int], loc) -> list[Instr]:
    """NOTE(constant-identity): the assembler shares equal constants of these types, as
    the compiler does, and building a code object interns name-like strings; a value
    computed at trace time (`a[:3] + b[3:]`) is a new object, so a plain LOAD_CONST would
    make it the very literal it equals (`a is c` true). One that is not among the
    original's constants (nor a small int, which CPython shares anyway) is held in a
    one-item list of its own: `LOAD_CONST [value]; LOAD_CONST 0; BINARY_SUBSCR`."""
    if type(value) not in _SHARED_BY_VALUE or id(value) in literals \
            or (type(value) is int and -5 <= value <= 256):
        return [Instr("LOAD_CONST", value, loc=loc)]
    return [Instr("LOAD_CONST", [value], loc=loc), Instr("LOAD_CONST", 0, loc=loc), Instr("BINARY_SUBSCR", loc=loc)]


def _load(source: Source, code, loc) -> list[Instr]:
    """Instructions pushing the value `source` names, inside a frame of `code`."""
    if isinstance(source, LocalSource):
        cell = source.name in code.co_cellvars
        return [Instr("LOAD_DEREF" if cell else "LOAD_FAST", source.name, loc=loc)]
    if isinstance(source, (GlobalSource, BuiltinSource)):
        return [Instr("LOAD_GLOBAL", name_arg(source.name, "LOAD_GLOBAL"), loc=loc)]
    if isinstance(source, ClosureSource):
        return [Instr("LOAD_DEREF", FreeVar(source.name), loc=loc)]
    if isinstance(source, AttrSource):
        return _load(source.base, code, loc) + [Instr("LOAD_ATTR", name_arg(source.name, "LOAD_ATTR"), loc=loc)]
    if isinstance(source, ItemSource):
        return _load(source.base, code, loc) + [Instr("LOAD_CONST", source.key, loc=loc),
                                                Instr("BINARY_SUBSCR", loc=loc)]
    raise Break("unsupported", f"the transformed code cannot read {source}")


def prologue(bytecode) -> list:
    """The instructions up to and including RESUME (cells, free variables, RESUME)."""
    instructions = bytecode.instructions
    for index, instr in enumerate(instructions):
        if isinstance(instr, Instr) and instr.name == "RESUME":
            return list(instructions[:index + 1])
    raise ValueError(f"{bytecode.name} has no RESUME")


def disassembly(code) -> str:
    """dis of the transformed code, for the `bytecode` log."""
    import io

    out = io.StringIO()
    dis.dis(code, file=out)
    return out.getvalue()
