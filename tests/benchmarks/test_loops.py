"""benchmarks/loops.py runs end to end at its --quick trip count: the Jacobi stencil's
result is checked against NumPy's (the script stops otherwise), the nested
slice-writing loop compiles without a failure or a warning, and two corpus programs
(the recurrence and LU, at their small size) agree with NumPy in one graph without a
break. Timing is not asserted."""


def test_the_stencil_and_the_nested_loop_run(run_quick):
    lines = run_quick("loops.py").splitlines()
    row = lines[2].split()
    assert row[0] == "5" and row[3] == "0"  # T = 5 captured without a break
    assert lines[3].endswith("0 warnings, 0 failed compiles")
    programs = [line.split() for line in lines[5:] if not line.startswith("wrote ")]
    assert [row[0] for row in programs] == ["recurrence", "lu"]
    assert all(row[3:5] == ["1", "0"] for row in programs)  # one graph, no break
