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
lines that are not JSON objects are counted and skipped, so a trace cut short by a
crash still makes a report. OUT defaults to DIR/report.html.
"""

from __future__ import annotations

import argparse
import collections
import glob
import html
import json
import os
import sys

__all__ = ["load_events", "main", "render"]

# Events that are failures, and what the summary calls them.
_FAILURES = {"failure": "compile failure", "remote_rejected": "refused remote cache entry",
             "remote_error": "remote cache unreachable"}
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


def load_events(directory: str) -> tuple[list[dict], int]:
    """(the events of every *.jsonl file in `directory`, in time order; lines skipped)."""
    events, skipped = [], 0
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if isinstance(event, dict) and isinstance(event.get("event"), str):
                    events.append(event)
                elif line.strip():
                    skipped += 1
    events.sort(key=lambda event: event.get("time", 0))
    return events, skipped


class _Frame:
    """The events of one compile of one frame (one compile_id of one process)."""

    def __init__(self, pid, compile_id: str):
        self.pid, self.compile_id = pid, compile_id
        self.events: dict[str, list[dict]] = collections.defaultdict(list)

    @property
    def anchor(self) -> str:
        return f"frame-{self.pid}-{self.compile_id.replace('/', '-')}"

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
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
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
        link = f'<a href="#{frame.anchor}">{_text(frame.title)}</a>' if frame else ""
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
        rows.append(f'<tr><td><a href="#{frame.anchor}">{_text(frame.compile_id)}</a></td>'
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
    parts = [f'<section class="frame" id="{frame.anchor}"><h2>{_text(frame.title)}</h2>',
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyjit.report",
                                     description="Render the compile events of PYJIT_TRACE_DIR as static HTML.")
    parser.add_argument("directory", help="the trace directory (PYJIT_TRACE_DIR)")
    parser.add_argument("-o", "--output", help="the HTML file to write (default: DIRECTORY/report.html)")
    arguments = parser.parse_args(argv)
    if not os.path.isdir(arguments.directory):
        parser.error(f"{arguments.directory} is not a directory")
    events, skipped = load_events(arguments.directory)
    if not events:
        parser.error(f"{arguments.directory} holds no pyjit compile events (*.jsonl files written with "
                     f"PYJIT_TRACE_DIR)")
    output = arguments.output or os.path.join(arguments.directory, "report.html")
    with open(output, "w", encoding="utf-8") as file:
        file.write(render(events, skipped))
    print(f"wrote {output}: {sum(event['event'] == 'frame' for event in events)} frame compile(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
