"""benchmarks/row_kernels.py runs end to end against a tree (here its own): each row
kernel of both trees, after its output matched NumPy's (the script stops with an error
otherwise). Its figures are not checked (timing is never asserted)."""

import os
import pathlib
import subprocess
import sys

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "row_kernels.py"


def test_the_row_kernel_benchmark_times_each_kernel_of_both_trees():
    tree = str(pathlib.Path(pyjit.__file__).parents[1])
    environment = dict(os.environ, PYTHONPATH=tree)
    result = subprocess.run([sys.executable, "-P", str(SCRIPT), "--against", tree, "--rounds", "2"],
                            capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["softmax", "layer_norm", "var"]
    assert all(row[-1].endswith("x") and float(row[-1][:-1]) > 0 for row in rows)
