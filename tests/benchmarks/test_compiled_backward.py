"""The backward-heavy benchmark (benchmarks/compiled_backward.py) runs end to end at its
--quick size. Its timings are not checked (SPEC section 4); its rows, and that compiled
autograd's gradients (hooks included) are the tape's, are."""

import json
import os
import pathlib
import subprocess
import sys

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "compiled_backward.py"


def test_the_quick_run_reports_both_engines_with_the_tapes_gradients(tmp_path):
    path = tmp_path / "compiled_backward.json"
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    completed = subprocess.run([sys.executable, "-P", str(SCRIPT), "--quick", "--json", str(path)],
                               capture_output=True, text=True, env=environment, timeout=600)
    assert completed.returncode == 0, completed.stderr
    rows = json.loads(path.read_text())
    assert [row["engine"] for row in rows] == ["tape", "AOT (compiled forward)", "compiled autograd (tape forward)",
                                               "compiled autograd (compiled forward)"]
    assert all(row["matches_tape"] for row in rows)
    assert all(row["median_ms"] > 0 and row["first_ms"] > 0 for row in rows)
