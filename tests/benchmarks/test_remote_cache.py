"""benchmarks/remote_cache.py runs end to end at its --quick size against a real
redis-server. Its figures are not checked (timing is never asserted); that every setting
is measured, and that the runs with a warm remote cache compiled nothing (the script
stops with an error otherwise), are."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import pyjit

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "remote_cache.py"


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="redis-server is not installed (Debian package redis-server; scripts/system_deps.sh "
                           "installs it)")
def test_the_remote_cache_benchmark_runs(tmp_path):
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    result = subprocess.run([sys.executable, "-P", str(SCRIPT), "--quick", "--json", str(tmp_path / "out.json")],
                            capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    settings = ["cold", "remote", "cold, known toolchain", "remote, known toolchain"]
    assert list(document["results"]) == ["chain"]
    for figure in ("warm_start_ms", "kernels_ms"):
        assert list(document["results"]["chain"][figure]) == settings
        assert all(value > 0 for value in document["results"]["chain"][figure].values())
    assert "cold/remote" in result.stdout
