"""The frame callback: trace a frame, compile its graph, guard and cache it; the
recompile policy.

NOTE(recompile-policy): the frame hook calls the callback only on a cache miss. A miss
on a code that has entries is a recompile: the `recompiles` log names the first failing
guard of the most recently used entry (`recompiles_verbose`: of every entry). With
`config.automatic_dynamic_shapes` (and `dynamic=None`), each static size of an entry's
arrays that differs in the new frame (`changed_dims`) is marked dynamic for that code,
and the new trace makes it a symbol (sizes 0 and 1 stay static), so a third size reuses
the new entry. A trace with symbolic sizes that breaks is done again static
(NOTE(static-retry)); when the static trace does not stop at the same instruction for
the same reason (or resumes where the symbolic one could not), the break came from a
symbolic size and that code stays static; otherwise the symbolic trace is kept. Once a
code has `config.recompile_limit` entries, a miss runs the original code and the first
such miss warns, naming the failing guard; existing entries keep serving.

NOTE(callback-answers): what the callback answers the hook (docs/frame_hook.md):
* a captured graph: `(guard program, transformed code)` (NOTE(transformed-code));
* a frame that records no op: `SKIP` when it read no array (helpers doing Python
  arithmetic: never asked again), else its guards with an unchanged copy of the
  original code, so the next call with such inputs is a C cache hit and not a retrace;
* a break that can be resumed: `(guard program, transformed code)` that calls the graph
  so far, runs the breaking instruction and calls a resume function
  (NOTE(resume-functions)), which the hook captures in turn;
* any other break (NOTE(skip-for-now)): `SKIP` for a code with no entry yet, None when
  it has entries (they keep serving); a "user_error" break answers None so the original
  code raises the error from the user's line; with `fullgraph=True` every break answers
  guards with a code that raises `pyjit.exc.Unsupported` naming the reason and line;
* a frame of pyjit, NumPy or the standard library (a namedtuple's methods included,
  NOTE(skipped-files)): `SKIP` (their frames are not the user's code, and the graph's
  own ops call into them).
* a frame whose trace hits the recursion limit (it started near it): None, quietly.
* a compile that fails inside pyjit (NOTE(internal-failures)): the guards the trace had
  built with an unchanged copy of the original code.

NOTE(internal-failures): an exception pyjit raises while it traces, builds or guards a
frame (a bug: a LintError, an AttributeError; never the user's error, which is a
"user_error" break, nor the backend's, NOTE(backend-errors)) must not cost a trace on
every call. The code's first such failure warns once, with the error's first line
(`config.verbose` adds the internal traceback), and the callback answers the guards the
trace had built so far with an unchanged copy of the original code: the guards cover
what the failing trace read, so inputs that pass them would fail the same way, and they
now run the original code at the speed of a cache hit; other inputs are traced again.
A failure before any guard exists marks the code SKIP (or, when it has entries, keeps
the code from being traced again: its entries keep serving, misses run the original).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import traceback
import warnings
from typing import Callable

from .. import _C, config, trace
from ..exc import BackendCompilerFailed, Unsupported
from ..utils import counters
from .backward import run_under
from .breaks import Break, BreakReason
from .assemble import assemble
from .bytecode import Instr
from .guards import changed_dims
from .interpreter import Tracer
from .emit import disassembly, prologue, raise_new
from .output import Output, build
from .policy import PYJIT_DIR, is_skipped_code
from .codemap import CodeMap
from .resume import build_break, repeats_a_break
from .verify import verified

_logs = {name: logging.getLogger(f"pyjit.{name}") for name in
         ("graph_code", "graph_breaks", "guards", "recompiles", "recompiles_verbose", "bytecode", "dynamic")}
# One compile at a time: two threads missing on one code would otherwise both add entries.
_lock = threading.RLock()


@dataclasses.dataclass
class CodeState:
    """What the recompile policy remembers of one code object."""

    dynamic_dims: set = dataclasses.field(default_factory=set)
    arrays: dict = dataclasses.field(default_factory=dict)  # id(program) -> (program, ArrayGuards)
    warned: bool = False
    static_only: bool = False  # NOTE(static-retry)
    failed: bool = False  # a trace failed inside pyjit: warned once (NOTE(internal-failures))
    untraceable: bool = False  # ... before any guard existed: never traced again


_states = CodeMap()


def _state(code) -> CodeState:
    return _states.get(code, CodeState)


def reset() -> None:
    """Forget the recompile policy's memory (dynamic dimensions, warnings); pyjit.reset()
    calls it with `_C.reset()`."""
    _states.clear()


class Converter:
    """The callback (NOTE(callback-answers)): `compiler(graph_module, example_inputs)`
    compiles each graph; `top_code` is the code of the function pyjit.compile wrapped,
    captured even where its file would be skipped."""

    def __init__(self, compiler: Callable, *, fullgraph: bool = False, dynamic: bool | None = None,
                 top_code=None, observer=None, backward_compiler: Callable | None = None):
        self.compiler, self.fullgraph, self.dynamic, self.top_code = compiler, fullgraph, dynamic, top_code
        # What compiles a backward captured under config.compiled_autograd (NOTE(captured-backward)).
        self.backward_compiler = backward_compiler
        self.observer = observer  # explain()'s recorder: on_graph(...), on_break(reason)

    def __call__(self, frame):
        code = frame.f_code
        try:
            if code is not self.top_code and is_skipped_code(code, frame.f_globals):
                return _C.SKIP
            with _lock, trace.frame(code):
                if not trace.enabled():
                    return self._convert(frame)
                started = time.perf_counter()
                _trace_frame(code)
                answer = self._convert(frame)
                trace.emit("frame_end", outcome=_outcome(answer),
                           seconds=time.perf_counter() - started)
                return answer
        except RecursionError:
            # A frame that starts near the recursion limit leaves the trace no room (nor
            # a log call): it runs as it is, unmarked, so a call at a normal depth still
            # compiles.
            return None

    def _convert(self, frame):
        tracers: list[Tracer] = []  # those `_capture` started, for NOTE(internal-failures)
        try:
            return self._convert_traced(frame, tracers)
        except RecursionError:
            raise
        except Exception as error:  # pyjit's own bug: NOTE(internal-failures)
            return _internal_failure(frame, tracers[-1] if tracers else None, error)

    def _convert_traced(self, frame, tracers: list[Tracer]):
        code = frame.f_code
        entries = _C.cache_entries(code)
        state = _state(code)
        if state.untraceable:
            return None  # NOTE(internal-failures)
        if entries:
            if any(program.check(frame) for program, _ in entries):
                return None  # another thread added a matching entry while this one waited
            if not self._may_recompile(frame, entries, state):
                return None
        started = time.perf_counter()
        dynamic_dims = frozenset(() if state.static_only else state.dynamic_dims)
        # config.assume_static_by_default False: every size symbolic from the first trace,
        # as dynamic=True, but with the static retry below.
        all_dynamic = self.dynamic is None and not config.assume_static_by_default and not state.static_only
        tracer, output, stop = self._capture(frame, dynamic_dims, True if all_dynamic else self.dynamic, tracers)
        if stop is not None and (dynamic_dims or all_dynamic) and self.dynamic is None:
            static = self._capture(frame, frozenset(), None, tracers)
            if static[2] is None or (output is None and static[1] is not None) \
                    or (static[0].index, static[2].explanation) != (tracer.index, stop.explanation):
                # NOTE(static-retry): something the code does needs its sizes as Python
                # ints (a size in the result, a slice bound): trace it static from now on.
                # A break the static trace meets too (a print) is the code's own, and the
                # symbolic trace, resumed there, is kept.
                _logs["dynamic"].debug("%s needs static sizes: %s", code.co_qualname, stop.explanation)
                state.static_only = True
                tracer, output, stop = static
        if stop is not None:
            reason = stop.reason(tracer.loc)
            if not (output is None and repeats_a_break(tracer)):  # logged and counted once
                self._log_break(code, reason, tracer)
            if output is None:
                return self._on_break(frame, tracer, reason, entries, stop.internal)
        elif output is None:
            return self._no_capture(frame, tracer)
        if output.graph_module is not None:
            self._guard_compiler(tracer)
        program = tracer.guards.compile(frame)
        state.arrays[id(program)] = (program, tracer.guards.arrays)
        if output.graph_module is not None:
            counters["stats"]["unique_graphs"] += 1
            counters["stats"]["calls_captured"] += len(tracer.graph.calls())
            _log_graph(code, output, program)
            trace.emit("graph", name=output.graph_module.graph.name, code=output.graph_module.code,
                       ops=[node.target.name for node in tracer.graph.calls()])
            trace.emit("guards", text=str(program))
            if self.observer is not None:
                self.observer.on_graph(output.graph_module, program, time.perf_counter() - started)
        return program, output.code

    def _capture(self, frame, dynamic_dims, dynamic, tracers: list[Tracer]):
        """Trace the frame: (tracer, Output or None, the Break it stopped at or None). A
        break that cannot be resumed gives no output and `tracer.capture.unresumable` says why."""
        tracer = Tracer(frame, dynamic_dims, dynamic)
        tracer.capture.compile_body = self._compile_graph
        tracers.append(tracer)
        try:
            tracer.run()
        except Break as stop:
            if config.verbose:  # where in the interpreter it stopped, for fullgraph errors
                stop.internal = "".join(traceback.format_tb(stop.__traceback__))
            # A Break is kept as a record; its traceback would hold this frame, and so the
            # FrameInfo and the user's arguments, in a cycle until the next collection.
            stop = stop.with_traceback(None)
            if stop.captured and self.backward_compiler is not None:
                try:
                    return tracer, build_break(tracer, self._compile_graph, run_under(self.backward_compiler)), None
                except Break as why:  # an ordinary break then (NOTE(captured-backward))
                    tracer.capture.unresumable = why.explanation
                    return tracer, None, stop
                except _CompilerFailed as failure:
                    return tracer, self._failing(tracer, failure.__cause__), None
            if stop.kind == "user_error" or self.fullgraph:
                tracer.capture.unresumable = \
                    "the original code raises it" if stop.kind == "user_error" else "fullgraph=True"
                return tracer, None, stop
            try:
                return tracer, build_break(tracer, self._compile_graph), stop
            except Break as why:
                tracer.capture.unresumable = why.explanation
                return tracer, None, stop
            except _CompilerFailed as failure:
                return tracer, self._failing(tracer, failure.__cause__), None
        if not tracer.graph.calls():
            return tracer, None, None
        try:
            return tracer, build(tracer, self._compile_graph), None
        except Break as stop:
            tracer.capture.unresumable = "the transformed code cannot rebuild its result"
            return tracer, None, stop.with_traceback(None)
        except _CompilerFailed as failure:
            return tracer, self._failing(tracer, failure.__cause__), None

    def _compile_graph(self, graph_module, example_inputs):
        try:
            with trace.stage("backend", backend=_compiler_name(self.compiler)):
                compiled = self.compiler(graph_module, example_inputs)
        except Exception as error:
            raise _CompilerFailed from error
        return verified(compiled, graph_module) if config.verify_correctness else compiled

    def _failing(self, tracer: Tracer, error: Exception) -> Output:
        """NOTE(backend-errors): a backend that raises is the user's to see, as with
        torch.compile: the entry's code raises BackendCompilerFailed (its cause the
        backend's exception) at the line of the graph's first op, for every call its guards
        accept, rather than the error being printed and the code run eagerly."""
        name = _compiler_name(self.compiler)
        instr = tracer.capture.first_op_instr or tracer.instr
        where = f"{tracer.code.co_filename}:{instr.loc.lineno}" if instr is not None and instr.loc else "?"
        message = f"backend {name!r} raised {type(error).__name__}: {error}\n  while compiling the graph at {where}"
        message += _internal(traceback.format_exception(error))
        trace.emit("failure", kind="backend_error", where=where, message=message)
        return Output(_raising_code(tracer, BackendCompilerFailed, message, instr, cause=error.with_traceback(None)),
                      None)

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
                trace.emit("failure", kind="recompile_limit", where=f"{code.co_filename}:{code.co_firstlineno}",
                           message=f"config.recompile_limit ({config.recompile_limit}) reached; last failing "
                                   f"guard: {reason}")
            return False
        trace.emit("recompile", reason=str(reason), entries=len(entries))
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

    def _guard_compiler(self, tracer: Tracer) -> None:
        """NOTE(compiler-guard): entries live on the code object, so two wrappers of one
        function with different backends or modes would serve each other's graphs; an
        entry holding a graph is guarded to be used only under a callback with the same
        compiler (the backend's function, or its partial with the mode): a check of the
        C guard program (a C function called through Python cost about 100 ns per hit,
        the same check written in Python 275 ns)."""
        tracer.guards.compiler(self.compiler, f"the backend is {_compiler_name(self.compiler)}")

    def _no_capture(self, frame, tracer: Tracer):
        if not tracer.capture.inputs and frame.f_code is not self.top_code:
            return _C.SKIP
        return tracer.guards.compile(frame), assemble(tracer.bytecode)

    def _log_break(self, code, reason: BreakReason, tracer: Tracer) -> None:
        counters["graph_break"][reason.explanation] += 1
        if self.observer is not None:
            self.observer.on_break(reason)
        how = tracer.capture.break_outcome()
        _logs["graph_breaks"].debug("Graph break (%s) in %s (%s): %s", reason.kind, code.co_qualname, how, reason)
        trace.emit("graph_break", kind=reason.kind, explanation=reason.explanation, hint=reason.hint, how=how,
                   where=str(reason.where) if reason.where else None,
                   line=reason.where.line() if reason.where else "")

    def _on_break(self, frame, tracer: Tracer, reason: BreakReason, entries, internal: str):
        if reason.kind == "user_error":
            return None
        if self.fullgraph:
            message = str(reason) + _internal(internal)
            trace.emit("failure", kind="fullgraph", where=str(reason.where) if reason.where else None, message=message)
            return tracer.guards.compile(frame), _raising_code(tracer, Unsupported, message, tracer.instr)
        return None if entries else _C.SKIP


def _internal_failure(frame, tracer: Tracer | None, error: Exception):
    """The answer for a frame whose compile failed inside pyjit (NOTE(internal-failures))."""
    code = frame.f_code
    state = _state(code)
    where = f"{code.co_filename}:{code.co_firstlineno}"
    first_line = (str(error).splitlines() or [""])[0]
    message = f"compiling {code.co_qualname} ({where}) failed inside pyjit: {type(error).__name__}: {first_line}"
    counters["stats"]["compile_failures"] += 1
    trace.emit("failure", kind="internal_error", where=where, message=message)
    if not state.failed:
        state.failed = True
        warnings.warn(f"pyjit: {message}. It runs its original code for these inputs, without tracing it again; "
                      f"please report this as a pyjit bug.{_internal(traceback.format_exception(error))}",
                      stacklevel=2)
    try:
        if tracer is not None:
            return tracer.guards.compile(frame), assemble(tracer.bytecode)
    except Exception:  # the guards themselves failed: no entry can say when the failure repeats
        pass
    state.untraceable = True
    return None if _C.cache_entries(code) else _C.SKIP


def _compiler_name(compiler) -> str:
    return getattr(compiler, "__name__", None) or getattr(getattr(compiler, "func", None), "__name__", "backend")


def _outcome(answer) -> str:
    """What the callback answered, as the trace's `frame_end` outcome (NOTE(callback-answers))."""
    if answer is None:
        return "runs its original code"
    return "skipped" if answer is _C.SKIP else "compiled"


def _trace_frame(code) -> None:
    """The `frame` event: the code about to be compiled and the user's stack that called it."""
    stack = [{"file": entry.filename, "line": entry.lineno, "name": entry.name, "text": entry.line or ""}
             for entry in traceback.extract_stack() if not entry.filename.startswith(PYJIT_DIR)]
    stack.append({"file": code.co_filename, "line": code.co_firstlineno, "name": code.co_qualname, "text": ""})
    trace.emit("frame", name=code.co_qualname, file=code.co_filename, line=code.co_firstlineno, stack=stack)


def _internal(frames) -> str:
    """NOTE(verbose): pyjit's own traceback for an error it raises (where the interpreter
    stopped, what the backend raised) with `config.verbose`; without it, how to get it."""
    if not config.verbose:
        return "\n  (set pyjit.config.verbose = True for pyjit's internal traceback)"
    return "\n\npyjit's internal traceback (pyjit.config.verbose):\n" + "".join(frames)


class _CompilerFailed(Exception):
    """The backend raised (its exception is the cause); NOTE(backend-errors)."""


def _raising_code(tracer: Tracer, error_type: type, message: str, instr: Instr | None,
                  cause: Exception | None = None):
    """The original's prologue, then `raise error_type(message) [from cause]` at `instr`'s
    line (a new exception each time: a raised one collects the frames it passes)."""
    body = raise_new(error_type, message, cause, instr.loc if instr is not None else None)
    return assemble(dataclasses.replace(tracer.bytecode, instructions=prologue(tracer.bytecode) + body))


def _log_graph(code, output, program) -> None:
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    _logs["graph_code"].debug("TRACED GRAPH %s\n%s", where, output.graph_module.code)
    _logs["guards"].debug("GUARDS %s\n%s", where, program)
    if _logs["bytecode"].isEnabledFor(logging.DEBUG):
        _logs["bytecode"].debug("TRANSFORMED CODE %s\n%s", where, disassembly(output.code))
