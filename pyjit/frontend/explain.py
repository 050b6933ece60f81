"""`explain(fn)(*args, **kwargs)`: run a function under capture and report its graphs,
graph breaks and guards.

NOTE(explain): explain captures a fresh copy of the function's code (same bytecode,
globals, closure and defaults), with a compiler object of its own: the function's own
cache entries neither hide the graphs explain reports (entries live on the code object)
nor are touched, so a compiled function keeps serving from them after `explain`, and
the copy's entries go with the copy. Entries that hold a graph serve only the compiler
that made them (NOTE(compiler-guard)), so frames the call starts are captured again
for explain too. Records are taken as the callback answers each frame, resume
functions and frames the call starts included, so a function with one resumed break
reports two graphs.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Callable

from .. import _C
from .breaks import BreakReason
from .convert import Converter
from .entry import backward_compiler


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
        """As torch._dynamo.explain's text: the counts, each break's reason and user
        line, each graph's ops and compile time."""
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
        for number, reason in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {number}:", f"    Reason: {reason.explanation}"]
            if reason.where is not None:
                lines.append("    User Stack: " + reason.where.describe().replace("\n", "\n  "))
            if reason.hint:
                lines.append(f"    Hint: {reason.hint}")
        lines.append("Ops per Graph:")
        for number, (ops, seconds) in enumerate(zip(self.ops_per_graph, self.compile_times), 1):
            lines.append(f"  Graph {number} ({seconds * 1000:.1f} ms): {', '.join(ops) or 'no ops'}")
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
        copy = _fresh_copy(fn)
        # A compiler of its own (NOTE(explain)): the partial is a new object per call.
        converter = Converter(functools.partial(compiler), top_code=copy.__code__, observer=output,
                              backward_compiler=backward_compiler(compiler, False, None))
        _C.CompiledFunction(copy, converter)(*args, **kwargs)
        return output

    return run


def _fresh_copy(fn: Callable) -> Callable:
    """`fn` with a code object of its own (NOTE(explain)); a bound method stays bound."""
    function = getattr(fn, "__func__", fn)
    copy = types.FunctionType(function.__code__.replace(), function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = function.__kwdefaults__, function.__qualname__
    return types.MethodType(copy, fn.__self__) if function is not fn else copy
