"""What every benchmark script shares: its command line (`--quick`, `--json PATH`), the
processes it measures in, the one results file they all write, its chart, and the lines
of its printed table.

NOTE(results-file): each script writes its figures as one section of
build/benchmarks/results.json (`--json` names another file), keyed by the script's name
and stamped with the machine that measured them, leaving the other scripts' sections as
they were. The main job runs every script in turn, so after it the file holds one run of
each; scripts/benchmark_tables.py turns the file into docs/benchmarks.md's tables.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap

DEFAULT_JSON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "benchmarks",
                            "results.json")
TABLE_WIDTH = 100  # columns every printed line fits in


def command_line(doc: str, quick: str) -> argparse.ArgumentParser:
    """The script's parser: its docstring's first line, `--quick` (`quick` says what it
    shrinks) and `--json`; the script adds its own options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", metavar="PATH", default=DEFAULT_JSON,
                        help=f"the results file this script's section goes into (default {shown_path(DEFAULT_JSON)})")
    return parser


def cpu_model() -> str:
    """The CPU's name as the kernel gives it (`model name` in /proc/cpuinfo, else
    platform's) and its widest vector unit the kernels use (AVX-512 or AVX2)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    flags = fields.get("flags", "").split()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
    return f"{name} ({vector})" if vector else name


def machine() -> dict:
    """What produced a section's figures: the CPU, the cores this process may use, the
    versions measured, and when."""
    import numpy

    import pyjit

    return {"cpu": cpu_model(), "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "numpy": numpy.__version__, "pyjit": pyjit.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def write_results(path: str, section: str, figures: dict, quick: bool) -> str:
    """Writes `figures` as `section` of the results file at `path` (NOTE(results-file)),
    keeping the file's other sections; a file that is not a results file is replaced.
    Scripts run side by side may write at once: each holds a lock on the file's folder
    from reading to replacing, so none loses another's section. Returns the path as the
    script prints it."""
    stamped = {"machine": machine(), "quick": quick, **figures}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    lock = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as file:
                document = json.load(file)
        except (OSError, ValueError):
            document = {}
        if not isinstance(document, dict):
            document = {}
        document[section] = stamped
        partial = f"{path}.{os.getpid()}.part"  # a reader never sees half a file
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(document, file, indent=1)
        os.replace(partial, path)
    finally:
        os.close(lock)  # releases the lock
    return shown_path(path)


def save_chart(draw, document: dict, path: str) -> str | None:
    """Saves `draw(document)`'s matplotlib figure as the PNG `path` when matplotlib is
    installed (the `bench` extra; pyjit never needs it): the path as printed, or None.
    `draw` may return None for a document with nothing to draw."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = draw(document)
    if figure is None:
        return None
    figure.savefig(path, dpi=120, bbox_inches="tight")  # the tight box takes a legend above the axes in
    plt.close(figure)
    return shown_path(path)


def child_json(command: list[str], environment: dict | None = None, timeout: float | None = None) -> dict:
    """Runs a measuring child process: the JSON of its last line of stdout, or a failed
    row ({"status": "failed", "error": ...}) carrying its last line of stderr."""
    try:
        child = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"no result in {timeout:.0f} s"}
    if child.returncode == 0:
        return json.loads(child.stdout.splitlines()[-1])
    lines = child.stderr.strip().splitlines() or [f"exit status {child.returncode}"]
    return {"status": "failed", "error": lines[-1]}


def fresh_child(script: str, arguments: list[str], *, check: bool = True, timeout: float | None = None,
                **environment: str) -> dict:
    """Runs `python -P script --child *arguments` against this pyjit, in a process of its
    own with an empty compile cache (pyjit's and Numba's: the compilers run) and
    `environment` added to this one's: the JSON of its last line of stdout. A failed or
    hung child stops the script with its last line of stderr, or with check=False is a
    failed row (child_json)."""
    import pyjit

    with tempfile.TemporaryDirectory(prefix="pyjit-bench-") as cache:
        added = dict(PYJIT_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache,
                     PYTHONPATH=os.path.dirname(os.path.dirname(pyjit.__file__)), **environment)
        row = child_json([sys.executable, "-P", os.path.abspath(script), "--child", *arguments],
                         dict(os.environ, **added), timeout)
    if check and row.get("status") == "failed":
        raise SystemExit(f"{shown_path(script)} --child {' '.join(arguments)}: {row['error']}")
    return row


def fit(text: str, indent: str = "") -> str:
    """`text` wrapped to the table's width, continuation lines indented by `indent`."""
    return textwrap.fill(text, TABLE_WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def chosen(text: str | None, known, what: str) -> list[str] | None:
    """The names of a comma-separated option (None when it was not given); an unknown one
    stops the script with the list of known ones."""
    if text is None:
        return None
    names = text.split(",")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def shown_path(path: str) -> str:
    """`path` relative to the working directory when it lies below it (shorter lines)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative

