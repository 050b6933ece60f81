"""benchmarks/reductions.py runs end to end at its --quick sizes. Its figures are not
checked (timing is never asserted); that every case runs at each thread count asked
for, after its result matched NumPy's (the script stops with an error otherwise), is."""


def test_the_reduction_benchmark_runs_every_axis_at_each_thread_count(run_quick):
    stdout = run_quick("reductions.py", "--threads", "1,2")
    rows = [line.split() for line in stdout.splitlines()[1:-1]]  # the last: "wrote"
    axes = [row[-5] for row in rows]
    assert axes == ["0", "1", "1", "None"] * 2  # columns, a middle axis, rows, everything
    assert [row[-4] for row in rows] == ["1"] * 4 + ["2"] * 4
    assert all(row[-1].endswith("x") and float(row[-1][:-1]) > 0 for row in rows)
