import os
import pathlib
import subprocess
import sys

import pytest

import pyjit

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def results_file(tmp_path):
    """The results file run_quick's scripts write their sections into."""
    return tmp_path / "results.json"


@pytest.fixture
def run_quick(results_file):
    """run_quick("script.py", *arguments) -> the stdout of `python -P benchmarks/script.py
    --quick *arguments`, run against this pyjit; fails the test with its stderr when it fails.
    A script's section goes to `results_file` unless the arguments name a --json: never
    to the build folder's file, which the main job fills (measure.py, the harness's
    child, writes none)."""

    def run(script: str, *arguments: str) -> str:
        environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
        if script != "measure.py" and "--json" not in arguments:
            arguments = (*arguments, "--json", str(results_file))
        result = subprocess.run([sys.executable, "-P", str(BENCHMARKS / script), "--quick", *arguments],
                                capture_output=True, text=True, env=environment, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    return run
