"""benchmarks/loops.py runs end to end at its --quick sizes: the Jacobi stencil's result
is checked against NumPy's (the script stops otherwise), the nested slice-writing loop
compiles without a failure or a warning, and three loop programs (the recurrence, LU and
the nested loop with a triangular inner range, at their small size) agree with NumPy in
one graph without a break, with another trip count too; Numba's columns are there when
Numba is installed and left out when it is not. Timing is not asserted."""

import importlib.util
import json
import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_stencil_the_nested_loop_and_the_loop_programs_run(run_quick, results_file):
    lines = run_quick("loops.py").splitlines()
    row = lines[2].split()
    assert row[0] == "5" and row[3] == "0"  # T = 5 captured without a break
    assert lines[3].endswith("0 warnings, 0 failed compiles")
    programs = json.loads(results_file.read_text())["loops"]["programs"]
    assert list(programs) == ["small"] and list(programs["small"]) == ["recurrence", "lu", "gram_upper"]
    numba = importlib.util.find_spec("numba") is not None
    for name, rows in programs["small"].items():
        pyjit = rows["pyjit"]
        assert pyjit["agrees"] and pyjit["new_T_agrees"], name
        assert (pyjit["graphs"], pyjit["graph_breaks"]) == (1, 0) and pyjit["loops_captured"] >= 1, name
        assert ("numba" in rows) == numba and rows.get("numba", {}).get("agrees", True), name
        printed = next(line.split() for line in lines if line.startswith(f"{name} "))
        assert printed[7:9] == ["1", "0"]  # graphs, breaks
        assert (printed[3] == "-") == (not numba)


def test_without_numba_the_peer_is_left_out(monkeypatch):
    """A module whose sys.modules entry is None is not importable: Numba uninstalled."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import loops
    finally:
        sys.path.remove(str(BENCHMARKS))
    monkeypatch.setitem(sys.modules, "numba", None)
    assert loops.installed(["pyjit", "numba"]) == ["pyjit"]

