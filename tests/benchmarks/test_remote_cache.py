"""benchmarks/remote_cache.py runs end to end at its --quick size against a real
redis-server. Its figures are not checked (timing is never asserted); that every setting
is measured, and that the runs with a warm remote cache compiled nothing (the script
stops with an error otherwise), are."""

import json
import shutil

import pytest


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="redis-server is not installed (Debian package redis-server; scripts/system_deps.sh "
                           "installs it)")
def test_the_remote_cache_benchmark_runs(tmp_path, run_quick):
    stdout = run_quick("remote_cache.py", "--json", str(tmp_path / "out.json"))
    document = json.loads((tmp_path / "out.json").read_text())["remote_cache"]
    settings = ["cold", "remote", "cold, known toolchain", "remote, known toolchain"]
    assert list(document["results"]) == ["chain"]
    for figure in ("warm_start_ms", "kernels_ms"):
        assert list(document["results"]["chain"][figure]) == settings
        assert all(value > 0 for value in document["results"]["chain"][figure].values())
    assert "cold/remote" in stdout
