"""`python -m pyjit.report`: the static HTML compile report (NOTE(report))."""

import html.parser
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyjit
from pyjit import config, report


def branchy(x):
    y = np.cos(x) + 1
    if y.sum() > 0:  # LINE_OF_BRANCH
        return y * 3
    return y


def strict_print(x):
    print("no")
    return x - 1


LINE_OF_BRANCH = next(number for number, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                      if line.endswith("# LINE_OF_BRANCH"))


class Page(html.parser.HTMLParser):
    """The text under each element with an id, the tags seen, and the links."""

    def __init__(self, text: str):
        super().__init__()
        self.open_ids: list[tuple[str, str]] = []  # (tag, id) of the elements we are inside
        self.text: dict[str, str] = {}
        self.tags: set[str] = set()
        self.links: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.add(tag)
        if tag == "a" and "href" in attributes:
            self.links.append(attributes["href"])
        if "id" in attributes:
            self.open_ids.append((tag, attributes["id"]))
            self.text.setdefault(attributes["id"], "")
        elif self.open_ids:
            self.open_ids.append((tag, None))

    def handle_endtag(self, tag):
        if self.open_ids and self.open_ids[-1][0] == tag:
            self.open_ids.pop()

    def handle_data(self, data):
        for _, element_id in self.open_ids:
            if element_id is not None:
                self.text[element_id] += data


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    """A trace of a frame with a data-dependent break, a recompile, and a fullgraph failure."""
    directory = tmp_path_factory.mktemp("trace")
    pyjit.reset()
    with config.patch(trace_dir=str(directory)):
        compiled = pyjit.compile(branchy)
        compiled(np.ones(4))
        compiled(np.ones(7))
        with pytest.raises(pyjit.exc.Unsupported):
            pyjit.compile(strict_print, fullgraph=True)(np.ones(2))
    pyjit.reset()
    return directory


@pytest.fixture(scope="module")
def written(trace_dir):
    output = trace_dir / "out" / "report.html"
    output.parent.mkdir()
    result = subprocess.run([sys.executable, "-P", "-m", "pyjit.report", str(trace_dir), "-o", str(output)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {output}")
    return output


def test_the_report_shows_failures_first_then_an_index_and_each_frame(written):
    text = written.read_text()
    page = Page(text)
    assert "script" not in page.tags  # readable with no JavaScript
    assert list(page.text)[:3] == ["summary", "failures", "index"]
    assert "call to the function print" in page.text["failures"] and "fullgraph" in page.text["failures"]
    assert f"{__file__}:{strict_print.__code__.co_firstlineno + 1}" in page.text["failures"]
    assert "2 recompile(s)" in page.text["summary"]  # branchy and its resume function
    frames = [element_id for element_id in page.text if element_id.startswith("frame-")]
    assert all(f"#{element_id}" in page.links for element_id in frames)  # the index links every frame

    anchor = frames[0]  # sections come in the order frames were compiled
    first = page.text[anchor]
    assert "/0] branchy" in first and f"{__file__}:{branchy.__code__.co_firstlineno}" in first
    assert "test_report.py" in first.split("User stack")[1]  # the calling line of the fixture
    assert "ops.cos(x)" in first  # the graph's code
    assert "x is numpy.ndarray(dtype=float64, shape=(4,))" in first  # its guards
    assert "data_dependent" in first and f"{__file__}:{LINE_OF_BRANCH}" in first
    assert "if y.sum() > 0:" in first  # the line of the break
    assert "#include" in first and "Kernel library" in first  # the kernel's C source
    assert "backend" in first and "trace and guards" in first and "total" in first  # timings

    recompiled = page.text[anchor.removesuffix("-0") + "-1"]
    assert "triggered by the guard failure" in recompiled and "expected 4, actual 7" in recompiled


def test_without_failures_the_summary_says_none(tmp_path):
    pyjit.reset()
    with config.patch(trace_dir=str(tmp_path)):
        pyjit.compile(lambda x: x * 2)(np.ones(3))
    pyjit.reset()
    page = Page(report.render(*report.load_events(str(tmp_path))))
    assert page.text["failures"] == "FailuresNone."


def test_lines_that_are_not_events_are_skipped_and_counted(trace_dir, tmp_path):
    copy = tmp_path / "cut"
    shutil.copytree(trace_dir, copy, ignore=shutil.ignore_patterns("out"))
    (log,) = copy.glob("*.jsonl")
    with open(log, "a") as file:
        file.write('{"event": "frame", "compile_id": "9/0", "na')  # a crash mid-line
    with pytest.warns(UserWarning, match=r"skipped 1 line\(s\) of .* that are not pyjit events \(line \d+: not JSON"):
        events, skipped = report.load_events(str(copy))
    assert skipped == 1 and events
    assert "1 line(s) that are not events skipped" in Page(report.render(events, skipped)).text["summary"]


def test_bad_arguments_are_errors(tmp_path):
    for argv in ([str(tmp_path / "missing")], [str(tmp_path)]):
        with pytest.raises(SystemExit) as exit_info:
            report.main(argv)
        assert exit_info.value.code == 2


def test_text_is_escaped():
    event = {"event": "graph_break", "compile_id": "0/0", "pid": 1, "kind": "unsupported",
             "explanation": "<script>alert(1)</script>", "where": "a.py:1", "line": "x < y"}
    text = report.render([{"event": "frame", "compile_id": "0/0", "pid": 1, "name": "f"}, event])
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package chromium; "
                                             "scripts/system_deps.sh installs it)")
def test_chromium_renders_the_report(written, tmp_path):
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600"]
    url = written.as_uri()
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=180, check=False)
    assert dom.returncode == 0, dom.stderr
    page = Page(dom.stdout)  # what the browser built from the file
    assert "call to the function print" in page.text["failures"]
    first_frame = next(element_id for element_id in page.text if element_id.startswith("frame-"))
    assert "ops.cos(x)" in page.text[first_frame]
    screenshot = tmp_path / "report.png"
    shot = subprocess.run([*flags, f"--screenshot={screenshot}", url], capture_output=True, text=True, timeout=180,
                          check=False)
    assert shot.returncode == 0, shot.stderr
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 1600)


# -- hostile trace directories (NOTE(hostile-trace)) -----------------------------------------

FRAME = {"event": "frame", "time": 1.0, "pid": 7, "compile_id": "0/0", "name": "f", "file": "a.py", "line": 1,
         "stack": [{"file": "a.py", "line": 1, "name": "f", "text": "f()"}]}
PAYLOAD = "\"'><script>document.title='pwned'</script><img src=x onerror=alert(1)>"
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "div", "table", "tr", "th", "td",
             "a", "section", "ol", "li", "br", "code", "pre", "details", "summary", "i"}
FRAME_ID = re.compile(r"frame-[0-9]+-[0-9]+-[0-9]+")


def run_report(directory, *arguments):
    """`python -m pyjit.report` in a child: a report that blocks fails on the timeout."""
    return subprocess.run([sys.executable, "-P", "-m", "pyjit.report", str(directory), *arguments],
                          capture_output=True, text=True, timeout=120, check=False)


def assert_inert(text: str):
    """Only the page's own elements, ids and links: nothing a trace wrote is markup."""
    page = Page(text)
    assert page.tags <= PAGE_TAGS, page.tags - PAGE_TAGS
    assert all(element_id in ("summary", "failures", "index") or FRAME_ID.fullmatch(element_id)
               for element_id in page.text)
    assert all(link.startswith("#") and FRAME_ID.fullmatch(link[1:]) for link in page.links)
    assert "pwned" not in text.split("<body>")[0].split("<title>")[1].split("</title>")[0]


HOSTILE_LINES = {
    "string time": {**FRAME, "time": "late"},
    "string seconds": {"event": "frame_end", "compile_id": "0/0", "pid": 7, "seconds": "1"},
    "null seconds": {"event": "frame_end", "compile_id": "0/0", "pid": 7, "seconds": None},
    "list pid": {**FRAME, "pid": [7]},
    "string pid": {**FRAME, "pid": PAYLOAD},
    "boolean entries": {"event": "recompile", "compile_id": "0/0", "pid": 7, "entries": True},
    "string stack entries": {**FRAME, "stack": ["a.py:1"]},
    "a stack entry's line is a list": {**FRAME, "stack": [{"file": "a.py", "line": [1]}]},
    "compile id in an attribute": {**FRAME, "compile_id": PAYLOAD},
    "ops not a list": {"event": "graph", "compile_id": "0/0", "pid": 7, "ops": 3},
    "event not a string": {"event": ["frame"]},
}


@pytest.mark.parametrize("case", HOSTILE_LINES)
def test_a_record_that_breaks_the_schema_is_skipped_with_one_warning(tmp_path, case):
    lines = [json.dumps(FRAME), json.dumps(HOSTILE_LINES[case]), json.dumps(HOSTILE_LINES[case])]
    (tmp_path / "pyjit-7.jsonl").write_text("\n".join(lines) + "\n")
    result = run_report(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [result.stderr.strip()]  # one plain line, no traceback
    assert result.stderr.startswith("pyjit.report: skipped 2 line(s) of ") and "line 2:" in result.stderr
    text = (tmp_path / "report.html").read_text()
    assert_inert(text)
    assert "2 line(s) that are not events skipped" in Page(text).text["summary"]


@pytest.mark.parametrize(("line", "why"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deep"),
    ('{"event": "frame", "seconds": NaN}', r"not JSON \(NaN is not a number"),
    ('{"event": "frame", "pid": 1' + "0" * 5000 + "}", "not JSON"),
    ('"just a string"', "not a JSON object"),
])
def test_lines_json_cannot_safely_hold_are_skipped(tmp_path, line, why):
    (tmp_path / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n" + line + "\n")
    with pytest.warns(UserWarning, match=f"skipped 1 line.*line 2: {why}"):
        events, skipped = report.load_events(str(tmp_path))
    assert skipped == 1 and events == [FRAME]


def make_special_files(directory: Path, target: Path):
    """A FIFO, a link to /dev/zero, a directory and a link to a real trace, all named *.jsonl."""
    os.mkfifo(directory / "pyjit-9.jsonl")
    os.symlink("/dev/zero", directory / "pyjit-10.jsonl")
    (directory / "x.jsonl").mkdir()
    os.symlink(target, directory / "pyjit-11.jsonl")


def test_special_files_are_skipped_never_opened_or_followed(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({**FRAME, "pid": 99}) + "\n")
    directory = tmp_path / "trace"
    directory.mkdir()
    (directory / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n")
    make_special_files(directory, outside)
    result = run_report(directory)  # a FIFO read would block: the timeout fails the test
    assert result.returncode == 0, result.stderr
    skipped = sorted(line.split(": ")[1].split(" ")[1] for line in result.stderr.splitlines())
    assert skipped == sorted(str(directory / name) for name in
                             ("pyjit-9.jsonl", "pyjit-10.jsonl", "x.jsonl", "pyjit-11.jsonl"))
    assert all("not a regular file" in line for line in result.stderr.splitlines())
    page = Page((directory / "report.html").read_text())
    assert "1 process(es)" in page.text["summary"]  # pid 99 of the linked file was not read


def test_files_and_lines_are_read_up_to_their_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "MAX_FILE", 4096)
    monkeypatch.setattr(report, "MAX_LINE", 512)
    long_line = json.dumps({**FRAME, "compile_id": "0/1", "name": "x" * 1000})
    (tmp_path / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n" + long_line + "\n" + json.dumps(FRAME) + "\n")
    (tmp_path / "pyjit-8.jsonl").write_bytes(b"\0" * 100_000)  # no newline at all
    with pytest.warns(UserWarning) as warned:
        events, skipped = report.load_events(str(tmp_path))
    assert sorted(str(warning.message) for warning in warned) == [
        f"{tmp_path / 'pyjit-8.jsonl'} is over 4096 bytes: the rest of it is not read",
        f"skipped 1 line(s) of {tmp_path / 'pyjit-7.jsonl'} that are not pyjit events (line 2: over 512 bytes)"]
    assert events == [FRAME, FRAME] and skipped == 1


def test_a_link_planted_at_the_output_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    directory = tmp_path / "trace"
    directory.mkdir()
    (directory / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n")
    os.symlink(victim, directory / "report.html")
    result = run_report(directory)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious"
    written = directory / "report.html"
    assert not written.is_symlink() and "pyjit compile report" in written.read_text()
    assert sorted(os.listdir(directory)) == ["pyjit-7.jsonl", "report.html"]  # no temporary file left


def test_warnings_show_a_file_name_with_its_control_characters_escaped(tmp_path):
    (tmp_path / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n")
    os.mkfifo(tmp_path / "\x1b]0;owned\x07.jsonl")  # would retitle the terminal
    result = run_report(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\\x1b]0;owned\\x07.jsonl" in result.stderr


def test_an_output_that_cannot_be_written_is_an_error(tmp_path):
    (tmp_path / "pyjit-7.jsonl").write_text(json.dumps(FRAME) + "\n")
    (tmp_path / "out").mkdir()
    result = run_report(tmp_path, "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and f"cannot write {tmp_path / 'out'}" in result.stderr
    assert "Traceback" not in result.stderr


def test_render_escapes_ids_and_links_it_is_given_unchecked():
    events = [{**FRAME, "pid": PAYLOAD, "compile_id": PAYLOAD},
              {"event": "failure", "pid": PAYLOAD, "compile_id": PAYLOAD, "kind": "fullgraph", "message": PAYLOAD}]
    page = Page(report.render(events))
    assert page.tags <= PAGE_TAGS
    (anchor,) = (element_id for element_id in page.text if element_id.startswith("frame-"))
    assert PAYLOAD in anchor  # the attribute holds the text, unbroken
    assert all(link.startswith("#frame-") and "<" not in link and '"' not in link for link in page.links)


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False, 0, -1, 2**63, 1e308, -0.0, 3.5])
    if kind in (1, 2):
        return rng.choice([PAYLOAD, "</style><script>alert(1)</script>", "javascript:alert(1)", "\ud800", "\0",
                           "0/0", "1/2", "a\nb", "&amp;", "frame", "kernel", "graph_break", "failure"])
    if kind == 3:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(12)))
    if kind in (4, 5):
        return rng.uniform(-1e9, 1e9) if kind == 4 else rng.randrange(-5, 10**6)
    if kind in (6, 7):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(list(report._FIELDS)): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def random_event(rng: random.Random) -> dict:
    event = {"event": rng.choice(["frame", "frame_end", "graph", "guards", "graph_break", "recompile", "kernel",
                                  "stage", "failure", "remote_rejected", "remote_error"]),
             "time": rng.uniform(0, 10), "pid": rng.randrange(3),
             "compile_id": f"{rng.randrange(3)}/{rng.randrange(2)}"}
    for field in rng.sample(list(report._FIELDS), rng.randrange(6)):
        event[field] = random_value(rng)
    return event


@pytest.mark.parametrize("seed", range(12))
def test_fuzzed_trace_directories_give_an_inert_page_and_nothing_else(tmp_path, seed):
    rng = random.Random(seed)
    directory = tmp_path / "trace"
    directory.mkdir()
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps(FRAME) + "\n")
    for number in range(rng.randrange(1, 4)):
        lines = [json.dumps(random_event(rng)) if rng.random() < 0.7 else
                 rng.choice(["{", "[" * rng.randrange(10**5), json.dumps(random_value(rng)), "\x00" * 10, ""])
                 for _ in range(rng.randrange(1, 40))]
        (directory / f"pyjit-{number}.jsonl").write_text("\n".join(lines) + "\n", errors="surrogatepass")
    (directory / "pyjit-5.jsonl").write_text(json.dumps({**FRAME, "name": PAYLOAD}) + "\n")  # one sure event
    make_special_files(directory, outside)
    os.symlink(tmp_path / "victim.html", directory / "report.html")
    before = {path: path.stat().st_size for path in tmp_path.rglob("*") if path.is_file() and not path.is_symlink()}
    result = run_report(directory)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert all(line.startswith("pyjit.report: ") for line in result.stderr.splitlines())
    assert_inert((directory / "report.html").read_text(errors="replace"))
    after = {path: path.stat().st_size for path in tmp_path.rglob("*") if path.is_file() and not path.is_symlink()}
    assert after == {**before, directory / "report.html": after[directory / "report.html"]}
    assert not (tmp_path / "victim.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package chromium; "
                                             "scripts/system_deps.sh installs it)")
def test_chromium_runs_nothing_a_hostile_trace_injects(tmp_path):
    marker = "document.body.insertAdjacentHTML('beforeend', '<p id=pwned></p>')"
    payloads = [f"\"'><script>{marker}</script>", f"\"><img src=x onerror=\"{marker}\">",
                f"</code></pre></details><svg onload=\"{marker}\">", "javascript:" + marker]
    events = [{**FRAME, "pid": payload, "compile_id": payload, "name": payload, "file": payload,
               "stack": [{"file": payload, "line": payload, "name": payload, "text": payload}]}
              for payload in payloads]
    events += [{**dict.fromkeys(report._FIELDS, payload), "event": kind, "seconds": 1.0, "entries": 1,
                "ops": [payload], "stack": []}
               for kind in ("failure", "graph", "graph_break", "kernel", "recompile", "guards", "frame_end")
               for payload in payloads]
    page_file = tmp_path / "report.html"
    page_file.write_text(report.render(events))  # unchecked: worse than any trace file can give
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000"]
    dom = subprocess.run([*flags, "--dump-dom", page_file.as_uri()], capture_output=True, text=True, timeout=180,
                         check=False)
    assert dom.returncode == 0, dom.stderr
    page = Page(dom.stdout)  # what the browser built, after any script ran
    assert "pwned" not in page.text and page.tags <= PAGE_TAGS | {"tbody"}, page.tags - PAGE_TAGS
    assert page.text["failures"].count("javascript:") >= 1  # the payloads are there, as text
