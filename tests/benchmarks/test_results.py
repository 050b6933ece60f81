"""benchmarks/results.py: every benchmark script writes its figures as one section of one
results file (NOTE(results-file)), stamped with the machine, and leaves the other
scripts' sections as they were."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import pyjit

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def results():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import results as module
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_a_section_is_written_beside_the_others_with_its_machine(results, tmp_path):
    path = tmp_path / "build" / "results.json"  # its folder is made
    results.write_results(str(path), "first", {"rows": [1, 2]}, quick=False)
    results.write_results(str(path), "second", {"rows": [3]}, quick=True)
    results.write_results(str(path), "first", {"rows": [4]}, quick=False)  # a new run replaces its own section
    document = json.loads(path.read_text())
    assert list(document) == ["first", "second"]
    assert document["first"]["rows"] == [4] and document["second"]["rows"] == [3]
    assert document["first"]["quick"] is False and document["second"]["quick"] is True
    machine = document["first"]["machine"]
    assert machine["cores"] == len(os.sched_getaffinity(0)) and machine["cpu"]
    assert set(machine) == {"cpu", "cores", "python", "numpy", "pyjit", "date"}
    assert [name for name in os.listdir(path.parent)] == ["results.json"]  # no partial file left behind


@pytest.mark.parametrize("text", ["not json", "[1, 2]"])
def test_a_file_that_is_no_results_file_is_replaced(results, tmp_path, text):
    path = tmp_path / "results.json"
    path.write_text(text)
    results.write_results(str(path), "only", {}, quick=False)
    assert list(json.loads(path.read_text())) == ["only"]


def test_every_script_the_main_job_runs_writes_a_section():
    """scripts/main.sh runs each benchmark with its default --json: a script that wrote
    elsewhere (or nothing) would leave docs/benchmarks.md's table without figures."""
    main = (BENCHMARKS.parent / "scripts" / "main.sh").read_text()
    scripts = [path for path in BENCHMARKS.rglob("*.py") if "write_results(" in path.read_text()]
    names = {str(path.relative_to(BENCHMARKS))[:-3] for path in scripts}
    assert names - {"results"} == {"hook_overhead", "run", "programs/run", "reductions", "small_graphs", "modes",
                                   "training", "compiled_backward", "loops", "compile_time", "blas_threads", "cluster",
                                   "remote_cache"}
    words = set(re.findall(r"[\w/]+", main))
    assert [name for name in names - {"results"} if name not in words and f"benchmarks/{name}" not in words] == []


def test_scripts_writing_at_once_lose_no_section(results, tmp_path):
    """Twelve processes write their sections into one file at the same moment."""
    path = tmp_path / "results.json"
    code = (f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import results; "
            f"results.write_results({str(path)!r}, sys.argv[1], {{'rows': [sys.argv[1]]}}, quick=True)")
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    writers = [subprocess.Popen([sys.executable, "-P", "-c", code, f"s{number}"], env=environment)
               for number in range(12)]
    assert [writer.wait(timeout=120) for writer in writers] == [0] * 12
    document = json.loads(path.read_text())
    assert sorted(document) == sorted(f"s{number}" for number in range(12))
    assert all(document[name]["rows"] == [name] for name in document)
