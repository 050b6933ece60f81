"""`python -m pyjit.report`: the static HTML compile report (NOTE(report))."""

import html.parser
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
