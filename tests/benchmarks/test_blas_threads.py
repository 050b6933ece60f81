"""benchmarks/blas_threads.py runs end to end at its --quick sizes. Its figures are not
checked (timing is never asserted); that every graph runs under every thread setting,
each in a process of its own, after its result matched NumPy's (the script stops with
an error otherwise), is."""

import os

LAYERED = ["mlp (16,64)->256->64", "gelu(x@W+b) (32,64)@(64,128)"]  # timed whole and as their parts
WHOLE = ["transformer", "kmeans"]  # the harness's workloads, timed whole


def test_every_graph_runs_under_every_thread_setting(run_quick):
    cores = len(os.sched_getaffinity(0))
    settings = ["BLAS 1, OpenMP 1", f"BLAS {cores}, OpenMP 1", f"BLAS 1, OpenMP {cores}",
                f"BLAS {cores}, OpenMP {cores}", "OpenBLAS's own pool", "BLAS idle sleeps", "OpenMP idle sleeps"]
    lines = run_quick("blas_threads.py").splitlines()[1:-1]  # the table, between its header and "wrote"
    rows = [(line[:36].strip(), line[37:57].strip(), line[57:].split()) for line in lines]
    assert [row[:2] for row in rows] == [(graph, setting) for graph in LAYERED + WHOLE for setting in settings]
    for graph, _, figures in rows:
        assert float(figures[0]) > 0
        if graph in LAYERED:
            assert float(figures[1]) > 0 and float(figures[2]) > 0
        else:
            assert figures[1:3] == ["-", "-"]
