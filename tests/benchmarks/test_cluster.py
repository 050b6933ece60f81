"""benchmarks/cluster.py runs end to end at its --quick size on a real LocalCluster and
redis-server. Its figures are not checked (timing is never asserted); that each setting
is measured, that the compiled sums equal NumPy's and that the cluster with a warm remote
cache compiled nothing (the script stops with an error otherwise), are."""

import json
import shutil

import pytest


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="redis-server is not installed (Debian package redis-server; scripts/system_deps.sh "
                           "installs it)")
def test_the_cluster_benchmark_runs(tmp_path, run_quick):
    stdout = run_quick("cluster.py", "--json", str(tmp_path / "out.json"))
    document = json.loads((tmp_path / "out.json").read_text())["cluster"]
    cold, remote = document["cold"], document["remote"]
    assert all(row[figure] > 0 for row in (cold, remote) for figure in ("first_s", "compiled_s", "numpy_s"))
    assert sum(worker["compiled"] for worker in cold["workers"]) >= 1
    assert all(worker["compiled"] == 0 for worker in remote["workers"])
    assert sum(worker["remote"] for worker in remote["workers"]) >= 1  # the rest from the cluster's disk cache
    assert max(len(line) for line in stdout.splitlines()) <= 100
    assert "The warm remote cache saved the fresh cluster's first run" in stdout
