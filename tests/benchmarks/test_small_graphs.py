"""benchmarks/small_graphs.py runs end to end at its --quick sizes. Its figures are not
checked (timing is never asserted); that every function runs at every size under both
backends, and the linear layer, after its results matched NumPy's (the script stops
otherwise), is."""


import pytest


@pytest.mark.parametrize("sizes", [(), ("--sizes", "static"), ("--sizes", "dynamic")])
def test_every_function_runs_at_each_size_under_both_backends(run_quick, sizes):
    functions, layers = run_quick("small_graphs.py", *sizes).strip().split("\n\n")
    rows = [line.rsplit(None, 6) for line in functions.splitlines()[1:]]
    assert [(row[0].strip(), int(row[1])) for row in rows] == [
        (name, size) for name in ("x + 1", "tanh(x)*2 + y", "clipped_step (if)") for size in (16, 1024)]
    assert all(row[4].endswith("x") and row[6].endswith("x") and float(row[4][:-1]) > 0 for row in rows)
    (layer,) = [line.split() for line in layers.splitlines()[1:-1]]  # a linear layer, its bits NumPy's
    assert layer[0] == "(16,64)@(64,64)" and layer[3].endswith("x") and float(layer[3][:-1]) > 0
