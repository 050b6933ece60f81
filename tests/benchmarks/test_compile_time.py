"""benchmarks/compile_time.py runs end to end at its --quick sizes: a row per chain length
and backend, each chain's result checked against NumPy's (the script stops otherwise),
the default backend compiling each chain into one kernel. Timing is not asserted."""


def test_each_chain_compiles_under_both_backends(run_quick):
    rows = [line.split() for line in run_quick("compile_time.py").splitlines()[2:-1]]  # the last: "wrote"
    assert [(row[0], row[1]) for row in rows] == [("10", "eager"), ("10", "inductor"), ("40", "eager"),
                                                  ("40", "inductor")]
    assert [row[3] for row in rows] == ["0", "1", "0", "1"] and all(float(row[2]) > 0 for row in rows)
