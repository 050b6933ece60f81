"""benchmarks/compile_time.py runs end to end at its --quick sizes: a row per chain length
and backend, each chain's result checked against NumPy's (the script stops otherwise),
the default backend compiling each chain into one kernel. Timing is not asserted."""

import os
import pathlib
import subprocess
import sys

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "compile_time.py"


def test_each_chain_compiles_under_both_backends():
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-P", str(SCRIPT), "--quick"], capture_output=True, text=True,
                            env=environment, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [(row[0], row[1]) for row in rows] == [("10", "eager"), ("10", "inductor"), ("40", "eager"),
                                                  ("40", "inductor")]
    assert [row[3] for row in rows] == ["0", "1", "0", "1"] and all(float(row[2]) > 0 for row in rows)
