"""The backward-heavy benchmark (benchmarks/compiled_backward.py) runs end to end at its
--quick size. Its timings are not checked (SPEC section 4); its rows, and that compiled
autograd's gradients (hooks included) are the tape's, are."""

import json


def test_the_quick_run_reports_both_engines_with_the_tapes_gradients(tmp_path, run_quick):
    path = tmp_path / "compiled_backward.json"
    run_quick("compiled_backward.py", "--json", str(path))
    rows = json.loads(path.read_text())["compiled_backward"]["rows"]
    assert [row["engine"] for row in rows] == ["tape", "AOT (compiled forward)", "compiled autograd (tape forward)",
                                               "compiled autograd (compiled forward)"]
    assert all(row["matches_tape"] for row in rows)
    assert all(row["median_ms"] > 0 and row["first_ms"] > 0 for row in rows)
