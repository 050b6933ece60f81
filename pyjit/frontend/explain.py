"""`explain(fn)(*args, **kwargs)`: run a function under capture and report its graphs,
graph breaks and guards.

NOTE(explain): explain forgets every compiled entry before and after its run (as
torch._dynamo.explain does): an entry cached earlier would hide the graphs it stands
for, and the entries explain makes with its own compiler must not serve later calls.
Records are taken as the callback answers each frame, resume functions and frames the
call starts included, so a function with one resumed break reports two graphs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .. import _C
from .breaks import BreakReason
from .convert import Converter, reset


@dataclasses.dataclass
class ExplainOutput:
    """What capturing one call gave: `graphs` (GraphModules, in capture order), their
    `graph_count`, `graph_break_count` and `break_reasons` (BreakReason records, resumed
    breaks and frame skips alike), `op_count` (call nodes over all graphs),
    `ops_per_graph` (each graph's op names), `out_guards` (the guard text of each
    graph's cache entry) and `compile_times` (seconds to capture and compile each
    graph's frame)."""

    graphs: list = dataclasses.field(default_factory=list)
    break_reasons: list[BreakReason] = dataclasses.field(default_factory=list)
    ops_per_graph: list[list[str]] = dataclasses.field(default_factory=list)
    out_guards: list[str] = dataclasses.field(default_factory=list)
    compile_times: list[float] = dataclasses.field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def op_count(self) -> int:
        return sum(map(len, self.ops_per_graph))

    def __str__(self) -> str:
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines += [f"  {number}. " + str(reason).replace("\n", "\n     ")
                      for number, reason in enumerate(self.break_reasons, 1)]
        for number, (ops, seconds) in enumerate(zip(self.ops_per_graph, self.compile_times), 1):
            lines.append(f"Graph {number} ({seconds * 1000:.1f} ms): {', '.join(ops) or 'no ops'}")
        return "\n".join(lines)

    # -- the callback's observer (Converter(observer=...)) --------------------------------------
    def on_graph(self, graph_module, program, seconds: float) -> None:
        self.graphs.append(graph_module)
        self.ops_per_graph.append([node.target.name for node in graph_module.graph.calls()])
        self.out_guards.append(str(program))
        self.compile_times.append(seconds)

    def on_break(self, reason: BreakReason) -> None:
        self.break_reasons.append(reason)


def explain(fn: Callable, *, compiler: Callable) -> Callable[..., ExplainOutput]:
    """`explain(fn, compiler=...)(*args, **kwargs)` calls `fn` once under capture with
    `compiler` and returns the ExplainOutput (NOTE(explain)); a function pyjit.compile
    wrapped is explained as the function it wraps."""
    if isinstance(fn, _C.CompiledFunction):
        fn = fn.__wrapped__
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"pyjit.explain takes a Python function, not {type(fn).__name__}")

    def run(*args, **kwargs) -> ExplainOutput:
        output = ExplainOutput()
        converter = Converter(compiler, top_code=code, observer=output)
        _C.reset()
        reset()
        try:
            _C.CompiledFunction(fn, converter)(*args, **kwargs)
        finally:
            _C.reset()
            reset()
        return output

    return run
