"""Graph-break reasons: why the interpreter stopped, as records.

NOTE(break-reasons): a reason is a record (kind, where, explanation, hint), shared by
the `graph_breaks` log, `counters["graph_break"]`, `fullgraph=True` errors
(`pyjit.exc.Unsupported`) and `explain()`. Kinds:

* "unsupported": the code does something the interpreter cannot model (an opcode, a
  call, a value); the same code would stop there again, whatever the inputs;
* "data_dependent": a Python decision needs an array's values (`bool(x)`, `x.item()`);
* "graph_break": the user called `pyjit.graph_break()`;
* "user_error": tracing the user's code raised (a shape mismatch, a bad axis): the
  original code runs and raises the error itself, from the user's own line.

An explanation speaks to the user in plain words: values are named by
`values.describe` ("an array", "the class numpy.dtype"), never by pyjit's own classes.
docs/troubleshooting.md lists every explanation with why and what to do, and
tests/test_docs.py fails when a `Break(...)` here gives one the page lacks.

NOTE(skip-for-now): a break is resumed where it can be (NOTE(resume-functions) in
pyjit/frontend/resume.py): the graph so far runs, the instruction runs in Python, a
resume function continues. What cannot be resumed soundly (a "user_error", nothing
captured before an instruction that cannot be redone in Python, a value the transformed
code cannot rebuild) makes the whole frame run its original code (a frame skip), with
the reason logged, so a break never changes what the program computes.
"""

from __future__ import annotations

import dataclasses

from ..source import SourceLoc

KINDS = ("unsupported", "data_dependent", "graph_break", "user_error")


@dataclasses.dataclass(frozen=True)
class BreakReason:
    kind: str
    where: SourceLoc | None
    explanation: str
    hint: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"break kind {self.kind!r} is not one of {KINDS}")

    def __str__(self) -> str:
        where = f"\n  at {self.where.describe()}" if self.where is not None else ""
        hint = f"\n  hint: {self.hint}" if self.hint else ""
        return f"{self.explanation}{where}{hint}"


class Break(Exception):
    """Raised inside the interpreter to stop at a break; carries the record. Never
    leaves the frontend: the callback turns it into a skip or an Unsupported error."""

    internal = ""  # pyjit's own traceback where it was raised, kept with config.verbose (NOTE(verbose))
    captured = False  # a call run under compiled autograd: a split, not a break (NOTE(captured-backward))

    def __init__(self, kind: str, explanation: str, hint: str = "", where: SourceLoc | None = None):
        super().__init__(explanation)
        self.kind, self.explanation, self.hint, self.where = kind, explanation, hint, where

    def reason(self, where: SourceLoc | None) -> BreakReason:
        return BreakReason(self.kind, self.where or where, self.explanation, self.hint)


def graph_break() -> None:
    """Break the graph here (NOTE(break-reasons)); outside captured code it does nothing."""
