"""benchmarks/hook_overhead.py runs end to end with --quick's fewer calls: every part of
its table, each contender beside the plain row it is compared with, and its section of
the results file. Its figures are not checked (timing is never asserted)."""

import json


def test_every_part_is_measured_and_written(run_quick, results_file):
    stdout = run_quick("hook_overhead.py")
    section = json.loads(results_file.read_text())["hook_overhead"]
    assert [title.split(")")[0] for title in section["sections"]] == ["a", "b", "c", "d"]
    for rows in section["sections"].values():
        assert rows[0]["overhead_ns"] is None  # each part opens with its plain row
        assert all(row["median_ns"] > 0 for row in rows)
        assert any(row["overhead_ns"] is not None and row["ratio"] > 0 for row in rows)
    assert set(section["summary"]) == {"hit_overhead_ns", "per_argument_slope_ns"}
    assert section["quick"] is True and section["calls_per_row"] == 20_000
    assert "cache-hit overhead" in stdout and stdout.rstrip().endswith(str(results_file))
