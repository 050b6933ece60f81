"""benchmarks/small_graphs.py runs end to end at its --quick sizes. Its figures are not
checked (timing is never asserted); that every function runs at every size under both
backends, after its results matched NumPy's (the script stops otherwise), is."""


import pytest


@pytest.mark.parametrize("sizes", [(), ("--sizes", "static"), ("--sizes", "dynamic")])
def test_every_function_runs_at_each_size_under_both_backends(run_quick, sizes):
    rows = [line.rsplit(None, 6) for line in run_quick("small_graphs.py", *sizes).splitlines()[1:]]
    assert [(row[0].strip(), int(row[1])) for row in rows] == [
        (name, size) for name in ("x + 1", "tanh(x)*2 + y", "clipped_step (if)") for size in (16, 1024)]
    assert all(row[4].endswith("x") and row[6].endswith("x") and float(row[4][:-1]) > 0 for row in rows)
