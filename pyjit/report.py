"""`python -m pyjit.report DIR [-o OUT]`: the compile events of PYJIT_TRACE_DIR as one
static HTML page.

NOTE(report): the page reads without a server, a network or JavaScript (torch's
tlparse, as one file): a summary of failures at the top (backend errors, fullgraph
errors, recompile limits, refused or unreachable remote cache entries), an index of
the compiled frames, then a section per frame: the user's stack that called it, the
failing guard of a recompile, its graphs (the printed Python), guards, graph breaks
with their reasons and lines, the kernels it loaded (source, and whether compiled, read
from disk or fetched from the remote cache) and the time of each stage. Code sits in
<details> blocks, which the browser opens and closes itself. Every event of every
`*.jsonl` file in DIR is read (one file per process: NOTE(trace) in pyjit/trace.py);
lines that are not events are counted and skipped, so a trace cut short by a crash
still makes a report. OUT defaults to DIR/report.html.

NOTE(hostile-trace): a trace directory is input from anyone who could write to it, so
reading it never hangs, grows without bound, follows a link or raises:
* only regular files are read: each is checked with lstat, then opened with
  O_NOFOLLOW | O_NONBLOCK and checked again with fstat, so a FIFO, a device, a
  directory or a symlink (to /dev/zero, say) named `*.jsonl` is skipped with a warning;
* at most MAX_FILE bytes of a file and MAX_LINE of a line are read;
* each line is parsed by `json` (whose C parser stops at Python's recursion limit, a
  RecursionError taken as a bad line; NaN and Infinity are refused) and checked
  against _FIELDS, the type of every field the page reads; a line that fails is
  skipped, and one warning per file says how many and why the first failed.
Writing: every value is escaped for where it goes: html.escape for text and
attributes, and the ids and links of frames are made of the pid and compile id the
schema allows (an int, and "F/N"), percent-quoted as a URL fragment too. The page has
no script, and its Content-Security-Policy lets none run, nor load anything. OUT is
written to a temporary file beside it and renamed over it (os.replace), so a reader
never sees half a page and a symlink planted at OUT is replaced, not followed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import html
import json
import os
import re
import stat
import sys
import tempfile
import urllib.parse
import warnings

__all__ = ["load_events", "main", "render"]

# Events that are failures, and what the summary calls them.
_FAILURES = {"failure": "compile failure", "remote_rejected": "refused remote cache entry",
             "remote_error": "remote cache unreachable"}
# Nothing runs and nothing loads, whatever the page holds (NOTE(hostile-trace)).
_POLICY = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'style-src \'unsafe-inline\'">')
_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 80em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
.failures pre { white-space: pre-wrap; }
.failures { border: 2px solid #c00; padding: 0.5em 1em; background: #fff4f4; }
.ok { border: 2px solid #080; padding: 0.5em 1em; background: #f4fff4; }
section.frame { border-top: 1px solid #888; margin-top: 2em; }
"""


MAX_FILE = 256 << 20  # bytes read of one trace file (NOTE(hostile-trace))
MAX_LINE = 64 << 20  # bytes of one line (an event with a kernel's C source)
_NUMBER = (int, float)
_TEXT = (str, type(None))
# Every field the page reads and what it may hold (never a bool: JSON's true is no
# number); a record that breaks this is skipped.
_FIELDS = {"event": (str,), "time": _NUMBER, "pid": (int,), "compile_id": (str,), "seconds": _NUMBER,
           "entries": (int,), "line": (int, str, type(None)), "ops": (list,), "stack": (list,),
           **dict.fromkeys(("name", "file", "text", "code", "reason", "kind", "where", "explanation", "hint", "how",
                            "origin", "key", "source", "message", "error", "outcome", "stage", "server",
                            "backend"), _TEXT)}
_COMPILE_ID = re.compile(r"[0-9]{1,9}/[0-9]{1,9}")


def load_events(directory: str) -> tuple[list[dict], int]:
    """(the events of every *.jsonl file in `directory`, in time order; lines skipped).
    Files and lines that are not events warn (NOTE(hostile-trace))."""
    events, skipped = [], 0
    for path in sorted(entry.path for entry in os.scandir(directory) if entry.name.endswith(".jsonl")):
        with _opened(path) as file:
            if file is None:
                continue
            bad, first = 0, None
            for number, line in enumerate(_lines(path, file), 1):
                event, problem = _event(line)
                if event is not None:
                    events.append(event)
                elif problem:
                    bad, first = bad + 1, first or f"line {number}: {problem}"
            if bad:
                warnings.warn(f"skipped {bad} line(s) of {path} that are not pyjit events ({first})", stacklevel=2)
            skipped += bad
    events.sort(key=lambda event: event.get("time", 0))
    return events, skipped


@contextlib.contextmanager
def _opened(path: str):
    """`path` open for reading if it is a regular file, not a link to one; else None,
    with a warning. Nothing else is opened: a FIFO would block, a device never end."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file (a directory, FIFO, device or symbolic link)")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        warnings.warn(f"skipped {path}: {error.strerror}", stacklevel=4)
        yield None
        return
    with os.fdopen(fd, "rb") as file:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # still: it was not swapped since lstat
            yield file
        else:
            warnings.warn(f"skipped {path}: it is not a regular file", stacklevel=4)
            yield None


def _lines(path: str, file):
    """The lines of `file`, each None if over MAX_LINE bytes, until MAX_FILE bytes."""
    total = 0
    while True:
        line = file.readline(MAX_LINE + 1)
        total += len(line)
        too_long = len(line) > MAX_LINE
        while too_long and line and not line.endswith(b"\n") and total <= MAX_FILE:
            line = file.readline(MAX_LINE)  # the rest of the long line, dropped
            total += len(line)
        if total > MAX_FILE:
            warnings.warn(f"{path} is over {_size(MAX_FILE)}: the rest of it is not read", stacklevel=3)
            return
        if not line and not too_long:
            return
        yield None if too_long else line


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def _refuse(constant: str):
    raise ValueError(f"{constant} is not a number a trace writes")


def _event(line: bytes | None) -> tuple[dict | None, str]:
    """(the event on `line`, "") or (None, why it is not one; "" for a blank line)."""
    if line is None:
        return None, f"over {_size(MAX_LINE)}"
    if not line.strip():
        return None, ""
    try:
        record = json.loads(line.decode("utf-8", errors="replace"), parse_constant=_refuse)
    except RecursionError:
        return None, "nested too deep"
    except ValueError as error:
        return None, f"not JSON ({error})"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    if not isinstance(record.get("event"), str):
        return None, "no 'event' string"
    problem = _field_problem(record) or _stack_problem(record.get("stack") or [])
    return (None, problem) if problem else (record, "")


def _field_problem(record: dict) -> str:
    for field, types in _FIELDS.items():
        value = record.get(field)
        if field in record and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            return f"{field!r} is {_kind(value)}"
    if "compile_id" in record and not _COMPILE_ID.fullmatch(record["compile_id"]):
        return f"'compile_id' {record['compile_id'][:40]!r} is not \"F/N\""
    return ""


def _stack_problem(stack: list) -> str:
    for entry in stack:
        problem = _field_problem(entry) if isinstance(entry, dict) else f"a stack entry is {_kind(entry)}"
        if problem:
            return f"in the stack: {problem}"
    return ""


def _kind(value) -> str:
    """What `value` is, in JSON's words."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
             dict: "an object"}
    return names.get(type(value), "null")


class _Frame:
    """The events of one compile of one frame (one compile_id of one process)."""

    def __init__(self, pid, compile_id: str):
        self.pid, self.compile_id = pid, compile_id
        self.events: dict[str, list[dict]] = collections.defaultdict(list)

    @property
    def anchor(self) -> str:
        """The section's id: [a-z0-9-] only for the pid and compile id the schema allows."""
        return f"frame-{self.pid}-{self.compile_id.replace('/', '-')}"

    @property
    def link(self) -> str:
        """An href="..." to the section, escaped as a URL fragment, then as an attribute."""
        return f'href="#{_attribute(urllib.parse.quote(self.anchor, safe=""))}"'

    def first(self, kind: str) -> dict:
        return self.events[kind][0] if self.events[kind] else {}

    @property
    def title(self) -> str:
        start = self.first("frame")
        return f"[{self.compile_id}] {start.get('name', '?')}"


def render(events: list[dict], skipped: int = 0) -> str:
    """The report page for `events` (NOTE(report))."""
    frames: dict[tuple, _Frame] = {}
    loose = []  # events outside any frame compile
    for event in events:
        if "compile_id" in event:
            index = (event.get("pid"), str(event["compile_id"]))
            frames.setdefault(index, _Frame(*index)).events[event["event"]].append(event)
        else:
            loose.append(event)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', _POLICY,
             "<title>pyjit compile report</title>", f"<style>{_STYLE}</style></head><body>",
             "<h1>pyjit compile report</h1>", _summary(events, frames, skipped),
             _failures(events, frames), _index(frames)]
    parts += [_frame_section(frame) for frame in frames.values()]
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary(events, frames, skipped) -> str:
    count = collections.Counter(event["event"] for event in events)
    origins = collections.Counter(event.get("origin") for event in events if event["event"] == "kernel")
    seconds = sum(event.get("seconds", 0) for event in events if event["event"] == "frame_end")
    items = [f"{len({event.get('pid') for event in events})} process(es)", f"{len(frames)} frame compile(s)",
             f"{count['graph']} graph(s)", f"{count['graph_break']} graph break(s)",
             f"{count['recompile']} recompile(s)",
             f"{sum(origins.values())} kernel(s): {origins['compiled']} compiled, {origins['disk']} from disk, "
             f"{origins['remote']} from the remote cache", f"{seconds:.3f} s compiling"]
    if skipped:
        items.append(f"{skipped} line(s) that are not events skipped")
    return '<p id="summary">' + " · ".join(map(html.escape, items)) + "</p>"


def _failures(events, frames) -> str:
    rows = []
    for event in events:
        if event["event"] not in _FAILURES:
            continue
        frame = frames.get((event.get("pid"), str(event.get("compile_id"))))
        link = f"<a {frame.link}>{_text(frame.title)}</a>" if frame else ""
        detail = event.get("message") or event.get("error") or event.get("key") or ""
        kind = _FAILURES[event["event"]] + (f" ({event['kind']})" if event.get("kind") else "")
        rows.append(f"<tr><td>{_text(kind)}</td><td>{link}</td><td>{_text(event.get('where') or '')}</td>"
                    f"<td><pre>{_text(detail)}</pre></td></tr>")
    if not rows:
        return '<div id="failures" class="ok"><h2>Failures</h2><p>None.</p></div>'
    return ('<div id="failures" class="failures"><h2>Failures</h2><table><tr><th>what</th><th>frame</th>'
            "<th>where</th><th>details</th></tr>" + "".join(rows) + "</table></div>")


def _index(frames) -> str:
    rows = []
    for frame in frames.values():
        start, end = frame.first("frame"), frame.first("frame_end")
        rows.append(f"<tr><td><a {frame.link}>{_text(frame.compile_id)}</a></td>"
                    f"<td>{_text(start.get('name', '?'))}</td>"
                    f"<td>{_text(_where(start))}</td><td>{_text(end.get('outcome', 'unfinished'))}</td>"
                    f"<td>{len(frame.events['graph'])}</td><td>{len(frame.events['graph_break'])}</td>"
                    f"<td>{'yes' if frame.events['recompile'] else ''}</td><td>{len(frame.events['kernel'])}</td>"
                    f"<td>{end.get('seconds', 0):.4f}</td></tr>")
    return ('<h2 id="index">Frames</h2><table><tr><th>compile id</th><th>function</th><th>file:line</th>'
            "<th>outcome</th><th>graphs</th><th>breaks</th><th>recompile</th><th>kernels</th><th>seconds</th></tr>"
            + "".join(rows) + "</table>")


def _frame_section(frame: _Frame) -> str:
    start = frame.first("frame")
    parts = [f'<section class="frame" id="{_attribute(frame.anchor)}"><h2>{_text(frame.title)}</h2>',
             f"<p>{_text(_where(start))} · process {_text(frame.pid)}</p>"]
    stack = start.get("stack") or []
    if stack:
        parts.append("<h3>User stack</h3><ol>" + "".join(
            f"<li>{_text(_where(entry))} in {_text(entry.get('name', '?'))}"
            + (f"<br><code>{_text(entry['text'])}</code>" if entry.get("text") else "") + "</li>"
            for entry in stack) + "</ol>")
    for event in frame.events["recompile"]:
        parts.append(f"<h3>Recompile</h3><p>triggered by the guard failure: <code>{_text(event.get('reason'))}"
                     f"</code> ({_text(event.get('entries'))} entries before)</p>")
    for number, event in enumerate(frame.events["graph"], 1):
        parts.append(f"<h3>Graph {number} ({len(event.get('ops', []))} ops)</h3>"
                     f"<details open><summary>code</summary><pre><code>{_text(event.get('code'))}</code></pre>"
                     "</details>")
    for event in frame.events["guards"]:
        parts.append(f"<h3>Guards</h3><pre>{_text(event.get('text'))}</pre>")
    if frame.events["graph_break"]:
        parts.append("<h3>Graph breaks</h3><table><tr><th>kind</th><th>where</th><th>reason</th><th>then</th></tr>"
                     + "".join(_break_row(event) for event in frame.events["graph_break"]) + "</table>")
    for event in frame.events["kernel"]:
        parts.append(f"<h3>Kernel library ({_text(event.get('origin'))}, {event.get('seconds', 0):.4f} s)</h3>"
                     f"<details><summary>{_text(event.get('key'))}</summary><pre><code>{_text(event.get('source'))}"
                     "</code></pre></details>")
    parts.append(_timings(frame))
    parts.append("</section>")
    return "\n".join(parts)


def _break_row(event: dict) -> str:
    reason = _text(event.get("explanation"))
    if event.get("hint"):
        reason += f"<br><i>hint: {_text(event['hint'])}</i>"
    where = _text(event.get("where") or "?")
    if event.get("line"):
        where += f"<br><code>{_text(event['line'])}</code>"
    return (f"<tr><td>{_text(event.get('kind'))}</td><td>{where}</td><td>{reason}</td>"
            f"<td>{_text(event.get('how'))}</td></tr>")


def _timings(frame: _Frame) -> str:
    seconds = collections.Counter()
    for event in frame.events["stage"]:
        seconds[event.get("stage", "?")] += event.get("seconds", 0)
    total = frame.first("frame_end").get("seconds")
    rows = [(stage, value) for stage, value in seconds.items()]
    if total is not None:
        # Backend time includes scheduling, rendering and kernels; the rest is the trace.
        rows += [("trace and guards", max(total - seconds["backend"], 0.0)), ("total", total)]
    return ("<h3>Compile times</h3><table><tr><th>stage</th><th>seconds</th></tr>"
            + "".join(f"<tr><td>{_text(stage)}</td><td>{value:.4f}</td></tr>" for stage, value in rows)
            + "</table>")


def _where(record: dict) -> str:
    return f"{record.get('file', '?')}:{record.get('line', '?')}"


def _text(value) -> str:
    return html.escape("" if value is None else str(value))


def _attribute(value: str) -> str:
    """`value` inside a double-quoted attribute (html.escape quotes both quote marks)."""
    return html.escape(value, quote=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyjit.report",
                                     description="Render the compile events of PYJIT_TRACE_DIR as static HTML.")
    parser.add_argument("directory", help="the trace directory (PYJIT_TRACE_DIR)")
    parser.add_argument("-o", "--output", help="the HTML file to write (default: DIRECTORY/report.html)")
    arguments = parser.parse_args(argv)
    if not os.path.isdir(arguments.directory):
        parser.error(f"{arguments.directory} is not a directory")
    with warnings.catch_warnings(record=True) as problems:
        warnings.simplefilter("always")
        try:
            events, skipped = load_events(arguments.directory)
        except OSError as error:
            parser.error(f"cannot read {arguments.directory}: {error.strerror}")
    for problem in problems:  # plainly: no source line of pyjit's, no terminal control codes of a file name
        message = "".join(char if char.isprintable() else ascii(char)[1:-1] for char in str(problem.message))
        print(f"pyjit.report: {message}", file=sys.stderr)
    if not events:
        parser.error(f"{arguments.directory} holds no pyjit compile events (*.jsonl files written with "
                     f"PYJIT_TRACE_DIR)")
    output = arguments.output or os.path.join(arguments.directory, "report.html")
    try:
        _write_atomic(output, render(events, skipped).encode("utf-8", errors="replace"))
    except OSError as error:
        parser.error(f"cannot write {output}: {error.strerror}")
    print(f"wrote {output}: {sum(event['event'] == 'frame' for event in events)} frame compile(s)")
    return 0


def _write_atomic(path: str, data: bytes) -> None:
    """Write `path` whole or not at all, replacing (never following) a link there."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(file.fileno(), 0o666 & ~umask)  # as open() would have made it
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


if __name__ == "__main__":
    sys.exit(main())
