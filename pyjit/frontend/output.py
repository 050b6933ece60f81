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
a constant is baked in (a list is rebuilt on each call, never shared). Pending side
effects are replayed between the call and the return (NOTE(side-effects)). The new
instructions carry the position of the instruction that recorded the first op, so a
traceback through the compiled call points at the user's line.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..graph import GraphModule
from .breaks import Break
from .assemble import assemble
from .bytecode import Instr
from .emit import call_graph, computed_node, prologue, rebuild, return_value, store_result
from .sources import Source
from .values import ArrayValue, Value, contents



@dataclasses.dataclass
class Output:
    code: Any  # types.CodeType
    graph_module: GraphModule | None  # None: the code records no op (a break first thing)


def build(tracer, compiler: Callable) -> Output:
    """Compile the graph `tracer` recorded and emit the transformed code."""
    value, effects = tracer.returned, tracer.side_effects
    outputs: list = []
    for kept in (value, *effects.values()):
        _collect(kept, outputs)
    single = len(outputs) == 1 and isinstance(value, ArrayValue) and value.source is None and not effects.pending \
        and not tracer.capture.written
    written = _collect_written(tracer, outputs)
    tracer.graph.output(outputs[0] if single else tuple(outputs))
    loc = _op_loc(tracer)
    # Built before compiling: a result the code cannot rebuild is a Break, and then the
    # backend's work would be wasted. NOTE(side-effects): pending stores are replayed
    # after the graph call, the result read before them.
    temps: dict[int, str] = {}
    replay = effects.replay(tracer, outputs, temps, [value], loc)
    tail = [] if single else [*store_result(written, tracer.code, loc), *replay,
                              *rebuild(value, outputs, tracer.code, loc, temps)]
    call, graph_module = _compile(tracer, compiler, loc)
    body = call + tail + return_value(loc)
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
    written = _collect_written(tracer, outputs)
    tracer.graph.output(tuple(outputs))
    loc = _op_loc(tracer)
    call, graph_module = _compile(tracer, compiler, loc)
    return call + store_result(written, tracer.code, loc), outputs, graph_module


def _op_loc(tracer):
    """The position the graph call carries: the instruction that recorded the first op."""
    return tracer.capture.first_op_instr.loc if tracer.capture.first_op_instr is not None else None


def _compile(tracer, compiler: Callable, loc) -> tuple[list[Instr], GraphModule]:
    graph_module = GraphModule(tracer.graph)
    compiled = compiler(graph_module, [example for _, example, _ in tracer.capture.inputs])
    return call_graph(compiled, [source for source, _, _ in tracer.capture.inputs], tracer.code, loc), graph_module


def _collect(value: Value, outputs: list) -> None:
    """The computed arrays `value` holds, in order, each once."""
    node = computed_node(value)
    if node is not None:
        if not any(output is node for output in outputs):
            outputs.append(node)
    else:
        for item in contents(value):
            _collect(item, outputs)


def _collect_written(tracer, outputs: list) -> list[tuple[Source, int]]:
    """The inputs the graph updated (NOTE(functionalisation) in functionalise.py), each with
    the position among `outputs` of its new value, which is added where missing."""
    written_nodes = {value.node: source for source, value in tracer.capture.written.items()}
    for node in outputs:
        base = node
        while getattr(base.target, "category", None) == "view":
            base = base.args[0]
        if base is not node and base in written_nodes:
            raise Break("unsupported", f"a view of {written_nodes[base]}, which the graph updates in place, is "
                        "live after the graph: it would not share the input's memory")
    written = []
    for source, value in tracer.capture.written.items():
        _collect(ArrayValue(value.node), outputs)
        written.append((source, next(i for i, node in enumerate(outputs) if node is value.node)))
    return written


