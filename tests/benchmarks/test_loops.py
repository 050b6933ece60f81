"""benchmarks/loops.py runs end to end at its --quick trip count: the Jacobi stencil's
result is checked against NumPy's (the script stops otherwise), and the nested
slice-writing loop compiles without a failure or a warning. Timing is not asserted."""


def test_the_stencil_and_the_nested_loop_run(run_quick):
    lines = run_quick("loops.py").splitlines()
    row = lines[2].split()
    assert row[0] == "5" and row[3] == "0"  # T = 5 captured without a break
    assert lines[3].endswith("0 warnings, 0 failed compiles")
