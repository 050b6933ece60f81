"""benchmarks/modes.py runs end to end at its --quick sizes: every workload under each
mode, after its result matched NumPy's (the script stops with an error otherwise). Its
figures are not checked (timing is never asserted)."""

import os
import pathlib
import subprocess
import sys

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "modes.py"


def test_the_modes_benchmark_runs_each_workload_under_each_mode():
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-P", str(SCRIPT), "--quick", "--workloads", "softmax,column_stats"],
                            capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["x", "softmax", "column_stats"]
    # three times in ms (default, reduce-overhead, max-autotune), then the two modes' ratios
    assert all(all(float(cell) > 0 for cell in row[-5:-2]) and row[-2].endswith("x") and row[-1].endswith("x")
               for row in rows)
