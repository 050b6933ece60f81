"""The frame callback: trace a frame, compile its graph, guard and cache it; the
recompile policy.

NOTE(recompile-policy): the frame hook calls the callback only on a cache miss. A miss
on a code that has entries is a recompile: the `recompiles` log names the first failing
guard of the most recently used entry (`recompiles_verbose`: of every entry). With
`config.automatic_dynamic_shapes` (and `dynamic=None`), each static size of an entry's
arrays that differs in the new frame (`changed_dims`) is marked dynamic for that code,
and the new trace makes it a symbol (sizes 0 and 1 stay static), so a third size reuses
the new entry. A trace that breaks only because a size is symbolic (NOTE(static-retry))
is done again static, and that code stays static. Once a code has `config.recompile_limit` entries, a miss runs the
original code and the first such miss warns, naming the failing guard; existing entries
keep serving.

NOTE(callback-answers): what the callback answers the hook (docs/frame_hook.md):
* a captured graph: `(guard program, transformed code)` (NOTE(transformed-code));
* a frame that records no op: `SKIP` when it read no array (helpers doing Python
  arithmetic: never asked again), else its guards with an unchanged copy of the
  original code, so the next call with such inputs is a C cache hit and not a retrace;
* a break (NOTE(skip-for-now)): `SKIP` for a code with no entry yet, None when it has
  entries (they keep serving); a "user_error" break answers None so the original code
  raises the error from the user's line; with `fullgraph=True` any other break answers
  guards with a code that raises `pyjit.exc.Unsupported` naming the reason and line;
* a frame of pyjit, NumPy or the standard library: `SKIP` (their frames are not the
  user's code, and the graph's own ops call into them).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sysconfig
import threading
import warnings
import weakref
from pathlib import Path
from typing import Callable

import numpy as np

from .. import _C, config
from ..exc import Unsupported
from ..utils import counters
from .breaks import Break, BreakReason
from .bytecode import Instr, assemble, call_instructions
from .guards import changed_dims
from .interpreter import Tracer
from .output import prologue, build, disassembly

_logs = {name: logging.getLogger(f"pyjit.{name}") for name in
         ("graph_code", "graph_breaks", "guards", "recompiles", "recompiles_verbose", "bytecode", "dynamic")}
_SKIPPED_DIRS = tuple(os.path.join(path, "") for path in {
    str(Path(__file__).resolve().parents[1]), os.path.dirname(np.__file__),
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_SKIPPED_PREFIXES = ("<frozen", "<pyjit")
# One compile at a time: two threads missing on one code would otherwise both add entries.
_lock = threading.RLock()


@dataclasses.dataclass
class CodeState:
    """What the recompile policy remembers of one code object."""

    dynamic_dims: set = dataclasses.field(default_factory=set)
    arrays: dict = dataclasses.field(default_factory=dict)  # id(program) -> (program, ArrayGuards)
    warned: bool = False
    static_only: bool = False  # NOTE(static-retry)


_states: dict[int, tuple[weakref.ref, CodeState]] = {}


def _state(code) -> CodeState:
    found = _states.get(id(code))
    if found is None or found[0]() is not code:
        found = _states[id(code)] = (weakref.ref(code, lambda _, key=id(code): _states.pop(key, None)), CodeState())
    return found[1]


def reset() -> None:
    """Forget the recompile policy's memory (dynamic dimensions, warnings); pyjit.reset()
    calls it with `_C.reset()`."""
    _states.clear()


def is_skipped_file(filename: str) -> bool:
    return filename.startswith(_SKIPPED_DIRS) or filename.startswith(_SKIPPED_PREFIXES)


class Converter:
    """The callback (NOTE(callback-answers)): `compiler(graph_module, example_inputs)`
    compiles each graph; `top_code` is the code of the function pyjit.compile wrapped,
    captured even where its file would be skipped."""

    def __init__(self, compiler: Callable, *, fullgraph: bool = False, dynamic: bool | None = None,
                 top_code=None):
        self.compiler, self.fullgraph, self.dynamic, self.top_code = compiler, fullgraph, dynamic, top_code

    def __call__(self, frame):
        code = frame.f_code
        if code is not self.top_code and is_skipped_file(code.co_filename):
            return _C.SKIP
        with _lock:
            return self._convert(frame)

    def _convert(self, frame):
        code = frame.f_code
        entries = _C.cache_entries(code)
        state = _state(code)
        if entries:
            if any(program.check(frame) for program, _ in entries):
                return None  # another thread added a matching entry while this one waited
            if not self._may_recompile(frame, entries, state):
                return None
        dynamic_dims = frozenset(() if state.static_only else state.dynamic_dims)
        tracer = Tracer(frame, dynamic_dims, self.dynamic)
        try:
            tracer.run()
            if not tracer.graph.calls():
                return self._no_capture(frame, tracer)
            output = build(tracer, self.compiler)
        except Break as stop:
            if dynamic_dims and self.dynamic is None:
                # NOTE(static-retry): something the code does needs its sizes as Python
                # ints (a size in the result, a slice bound): trace it static from now on.
                _logs["dynamic"].debug("%s needs static sizes: %s", code.co_qualname, stop.explanation)
                state.static_only = True
                return self._convert(frame)
            return self._on_break(frame, tracer, stop.reason(tracer.loc), entries)
        program = tracer.guards.compile(frame)
        state.arrays[id(program)] = (program, tracer.guards.arrays)
        counters["stats"]["unique_graphs"] += 1
        counters["stats"]["calls_captured"] += len(tracer.graph.calls())
        _log_graph(code, output, program)
        return program, output.code

    def _may_recompile(self, frame, entries, state: CodeState) -> bool:
        code = frame.f_code
        reason = entries[0][0].first_failure(frame)
        if len(entries) >= config.recompile_limit:
            if not state.warned:
                state.warned = True
                warnings.warn(f"pyjit: {code.co_qualname} ({code.co_filename}:{code.co_firstlineno}) reached "
                              f"config.recompile_limit ({config.recompile_limit}); last failing guard: {reason}. "
                              f"Its existing entries keep serving; other inputs run without compiling.",
                              stacklevel=2)
            return False
        _logs["recompiles"].debug("Recompiling function %s in %s:%d\n    triggered by the guard failure: %s",
                                  code.co_qualname, code.co_filename, code.co_firstlineno, reason)
        if _logs["recompiles_verbose"].isEnabledFor(logging.DEBUG):
            for index, (program, _) in enumerate(entries):
                _logs["recompiles_verbose"].debug("entry %d of %s: %s", index, code.co_qualname,
                                                  program.first_failure(frame))
        if config.automatic_dynamic_shapes and self.dynamic is None:
            for program, _ in entries:
                known = state.arrays.get(id(program))
                for change in changed_dims(known[1] if known and known[0] is program else (), frame):
                    if (change.source, change.dim) not in state.dynamic_dims:
                        state.dynamic_dims.add((change.source, change.dim))
                        _logs["dynamic"].debug("marking %s.shape[%d] as dynamic (%d, then %d) in %s",
                                               change.source, change.dim, change.old, change.new, code.co_qualname)
        return True

    def _no_capture(self, frame, tracer: Tracer):
        if not tracer.inputs and frame.f_code is not self.top_code:
            return _C.SKIP
        return tracer.guards.compile(frame), assemble(tracer.bytecode)

    def _on_break(self, frame, tracer: Tracer, reason: BreakReason, entries):
        code = frame.f_code
        counters["graph_break"][reason.explanation] += 1
        _logs["graph_breaks"].debug("Graph break in %s (the frame runs as it is): %s", code.co_qualname, reason)
        if reason.kind == "user_error":
            return None
        if self.fullgraph:
            return tracer.guards.compile(frame), _raising_code(tracer, reason)
        return None if entries else _C.SKIP


def _raising_code(tracer: Tracer, reason: BreakReason):
    """The original's prologue, then `raise Unsupported(<reason>)` at the breaking line."""
    loc = tracer.instr.loc if tracer.instr is not None else None
    body = call_instructions([Instr("LOAD_CONST", Unsupported, loc=loc)], [[Instr("LOAD_CONST", str(reason), loc=loc)]],
                             loc)
    body.append(Instr("RAISE_VARARGS", 1, loc=loc))
    return assemble(dataclasses.replace(tracer.bytecode, instructions=prologue(tracer.bytecode) + body))


def _log_graph(code, output, program) -> None:
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    _logs["graph_code"].debug("TRACED GRAPH %s\n%s", where, output.graph_module.code)
    _logs["guards"].debug("GUARDS %s\n%s", where, program)
    if _logs["bytecode"].isEnabledFor(logging.DEBUG):
        _logs["bytecode"].debug("TRANSFORMED CODE %s\n%s", where, disassembly(output.code))
