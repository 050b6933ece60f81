"""The training benchmark (benchmarks/training.py) runs end to end at its --quick sizes.
Its timings are not checked (SPEC section 4); its rows, and the bytes each partitioner
saves per step, are."""

import json


def test_the_quick_run_reports_every_engine_and_min_cut_saves_less(tmp_path, run_quick):
    path = tmp_path / "training.json"
    run_quick("training.py", "--json", str(path))
    rows = json.loads(path.read_text())["training"]["rows"]
    for workload in ("MLP", "TransformerBlock"):
        # Torch's rows (when torch is installed) measure no saved bytes: pyjit's rows only.
        saved = {row["engine"]: row["saved_bytes"] for row in rows
                 if row["workload"].startswith(workload) and row["engine"].startswith("pyjit")}
        assert saved["pyjit tape"] is None  # the tape has no compiled graph
        assert saved["pyjit inductor (min-cut)"] <= saved["pyjit inductor (default)"]
        assert saved["pyjit aot_eager (min-cut)"] <= saved["pyjit aot_eager (default)"]
        assert saved["pyjit inductor (default)"] == saved["pyjit aot_eager (default)"]  # one partition, two backends
    assert all(row["median_ms"] > 0 and row["peak_mb"] > 0 for row in rows)
