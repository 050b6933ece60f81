"""pyjit.trace: compile events as JSON lines under config.trace_dir (NOTE(trace))."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyjit
from pyjit import config, trace


def read_events(directory):
    files = sorted(directory.glob("*.jsonl"))
    return [json.loads(line) for path in files for line in path.read_text().splitlines()]


def breaks_and_recompiles(x):
    y = np.sin(x) * 2
    print("half way")  # LINE_OF_PRINT
    return y + 1


LINE_OF_PRINT = next(number for number, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                     if line.endswith("# LINE_OF_PRINT"))


@pytest.fixture
def traced(tmp_path):
    pyjit.reset()
    with config.patch(trace_dir=str(tmp_path / "trace")):
        yield tmp_path / "trace"
    pyjit.reset()


def test_a_compile_writes_frames_graphs_guards_breaks_recompiles_kernels_and_times(traced, capsys):
    compiled = pyjit.compile(breaks_and_recompiles)
    calling_line = sys._getframe().f_lineno + 1
    compiled(np.ones(4))
    compiled(np.ones(5))  # a size guard fails: a recompile
    events = read_events(traced)
    assert [path.name for path in traced.iterdir()] == [f"pyjit-{os.getpid()}.jsonl"]
    assert all(event["pid"] == os.getpid() and isinstance(event["time"], float) for event in events)
    by_kind = {}
    for event in events:
        by_kind.setdefault(event["event"], []).append(event)

    first = by_kind["frame"][0]
    number = first["compile_id"].split("/")[0]  # compile ids count on over the process
    assert first["name"] == "breaks_and_recompiles" and first["compile_id"] == f"{number}/0"
    assert first["file"] == __file__
    assert {"file": __file__, "line": calling_line, "name": "test_a_compile_writes_frames_graphs_guards_breaks"
            "_recompiles_kernels_and_times", "text": "compiled(np.ones(4))"} in first["stack"]
    assert not any("pyjit" + os.sep in entry["file"] and "tests" not in entry["file"] for entry in first["stack"])

    (recompile,) = [event for event in by_kind["recompile"] if event["compile_id"] == f"{number}/1"]
    assert "size mismatch at index 0: expected 4, actual 5" in recompile["reason"]

    graph = by_kind["graph"][0]
    assert graph["compile_id"] == f"{number}/0" and graph["ops"] == ["sin", "multiply"]
    assert "ops.sin(x)" in graph["code"] and f"{__file__}:" in graph["code"]
    assert "x is numpy.ndarray(dtype=float64, shape=(4,))" in by_kind["guards"][0]["text"]

    breaks = [event for event in by_kind["graph_break"] if event["compile_id"] == f"{number}/0"]
    assert [(event["kind"], event["explanation"], event["where"], event["line"]) for event in breaks] == [
        ("unsupported", "a call to the function print is not captured", f"{__file__}:{LINE_OF_PRINT}", 'print("half way")  # LINE_OF_PRINT')]

    kernels = [event for event in by_kind["kernel"] if event["compile_id"] == f"{number}/0"]
    assert kernels and kernels[0]["origin"] in ("compiled", "disk") and "#include" in kernels[0]["source"]
    stages = {event["stage"] for event in by_kind["stage"] if event["compile_id"] == f"{number}/0"}
    assert {"backend", "schedule", "kernels"} <= stages
    ends = {event["compile_id"]: event for event in by_kind["frame_end"]}
    assert ends[f"{number}/0"]["outcome"] == "compiled" and ends[f"{number}/0"]["seconds"] > 0
    # every event of a compile sits between its frame and frame_end events
    assert all(re.fullmatch(r"\d+/\d+", event["compile_id"]) for event in events)


def test_failures_are_events(traced):
    @pyjit.compile(fullgraph=True)
    def strict(x):
        print(x)
        return x + 1

    with pytest.raises(pyjit.exc.Unsupported):
        strict(np.ones(3))
    (failure,) = [event for event in read_events(traced) if event["event"] == "failure"]
    assert failure["kind"] == "fullgraph" and "call to the function print" in failure["message"]
    assert failure["where"] == f"{__file__}:{strict.__wrapped__.__code__.co_firstlineno + 2}"


def test_nothing_is_written_without_a_trace_dir(tmp_path):
    pyjit.reset()
    assert config.trace_dir is None  # the tests run without PYJIT_TRACE_DIR
    pyjit.compile(breaks_and_recompiles)(np.ones(3))
    trace.emit("frame", name="ignored")
    assert list(tmp_path.iterdir()) == []
    pyjit.reset()


def test_an_unwritable_trace_dir_warns_once_and_compiles(tmp_path):
    pyjit.reset()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with config.patch(trace_dir=str(blocker / "trace")):
        with pytest.warns(UserWarning, match="cannot write compile events") as warned:
            assert np.array_equal(pyjit.compile(breaks_and_recompiles)(np.ones(3)), np.sin(np.ones(3)) * 2 + 1)
            pyjit.compile(breaks_and_recompiles)(np.ones((2, 2)))
    assert len(warned) == 1
    pyjit.reset()


PLANTED = textwrap.dedent("""
    import os, sys, warnings, numpy as np, pyjit
    trace = sys.argv[1]
    os.makedirs(trace)
    pyjit.config.trace_dir = trace
    mine = os.path.join(trace, f"pyjit-{os.getpid()}.jsonl")
    os.mkfifo(mine) if sys.argv[2] == "fifo" else os.symlink(sys.argv[2], mine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        print(pyjit.compile(lambda x: np.cos(x) + 1)(np.zeros(3)))
        print(pyjit.compile(lambda x: np.sin(x) + 1)(np.zeros(3)))
    print(*(warning.message for warning in caught), sep="\\n")
""")


@pytest.mark.parametrize(("planted", "reason"), [("fifo", "it is not a regular file"),
                                                 ("link", "it is a symbolic link")])
def test_a_fifo_or_link_at_the_trace_file_is_refused_not_waited_on_or_followed(tmp_path, planted, reason):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    target = "fifo" if planted == "fifo" else str(victim)
    environment = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(pyjit.__file__))}
    result = subprocess.run([sys.executable, "-P", "-c", PLANTED, str(tmp_path / "trace"), target],
                            capture_output=True, text=True, env=environment, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["[2. 2. 2.]", "[1. 1. 1.]"]
    (warning,) = lines[2:]  # once
    assert warning.startswith("pyjit: cannot write compile events to") and f"({reason})" in warning
    assert victim.read_text() == "precious"


def test_trace_dir_comes_from_the_environment(tmp_path):
    child = textwrap.dedent("""
        import numpy as np, pyjit
        pyjit.compile(lambda x: np.cos(x) + 1)(np.ones(3))
        print(pyjit.config.trace_dir)
    """)
    environment = {**os.environ, "PYJIT_TRACE_DIR": str(tmp_path / "t")}
    result = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True, text=True, env=environment,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "t")
    assert [event["name"] for event in read_events(tmp_path / "t") if event["event"] == "frame"] == ["<lambda>"]
