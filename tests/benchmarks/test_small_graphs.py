"""benchmarks/small_graphs.py runs end to end at its --quick sizes. Its figures are not
checked (timing is never asserted); that every function runs at every size under both
backends, after its results matched NumPy's (the script stops otherwise), is."""

import os
import pathlib
import subprocess
import sys

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "small_graphs.py"


def test_every_function_runs_at_each_size_under_both_backends():
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-P", str(SCRIPT), "--quick"], capture_output=True, text=True,
                            env=environment, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.rsplit(None, 6) for line in result.stdout.splitlines()[1:]]
    assert [(row[0].strip(), int(row[1])) for row in rows] == [
        (name, size) for name in ("x + 1", "tanh(x)*2 + y", "clipped_step (if)") for size in (16, 1024)]
    assert all(row[4].endswith("x") and row[6].endswith("x") and float(row[4][:-1]) > 0 for row in rows)
