import os
import pathlib
import subprocess
import sys

import pytest

import pyjit

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def run_quick():
    """run_quick("script.py", *arguments) -> the stdout of `python -P benchmarks/script.py
    --quick *arguments`, run against this pyjit; fails the test with its stderr when it fails."""

    def run(script: str, *arguments: str) -> str:
        environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
        result = subprocess.run([sys.executable, "-P", str(BENCHMARKS / script), "--quick", *arguments],
                                capture_output=True, text=True, env=environment, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    return run
