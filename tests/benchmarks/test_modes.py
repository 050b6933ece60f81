"""benchmarks/modes.py runs end to end at its --quick sizes: every workload under each
mode, after its result matched NumPy's (the script stops with an error otherwise). Its
figures are not checked (timing is never asserted)."""


def test_the_modes_benchmark_runs_each_workload_under_each_mode(run_quick):
    stdout = run_quick("modes.py", "--workloads", "softmax,column_stats")
    rows = [line.split() for line in stdout.splitlines()[1:-1]]  # the last: "wrote"
    assert [row[0] for row in rows] == ["x", "x.T", "softmax", "column_stats"]
    # four times in ms (NumPy, default, reduce-overhead, max-autotune), then the two modes' ratios
    assert all(all(float(cell) > 0 for cell in row[-6:-2]) and row[-2].endswith("x") and row[-1].endswith("x")
               for row in rows)
