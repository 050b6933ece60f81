"""A chunked GELU on a Dask LocalCluster of two worker processes: compiled against NumPy
on the workers, and what the remote kernel cache saves a fresh cluster (docs/distributed.md).

    python -P benchmarks/cluster.py [--quick] [--repeats N] [--json PATH]

Starts a redis-server of its own on a loopback port (Debian's redis-server package), then
two clusters in turn, each of two fresh worker processes (one thread each: Dask sets
OMP_NUM_THREADS=1 for them) with an empty disk cache and their traces in a folder. Each
generates the array on the workers and keeps it there (each worker holds about half),
then runs `map_blocks(gelu)` and a sum: once compiled (the first run: capture and
kernels), --repeats times compiled (warm), and --repeats times under NumPy.

* empty: the remote cache holds nothing, so the first run compiles the kernels (one
  worker builds each, the other waits for it: NOTE(build-lease));
* warm: the second cluster, whose remote cache holds the kernels: its workers fetch them.

Printed per cluster: the first run, the medians compiled and under NumPy and their ratio,
and per worker the kernels it compiled / fetched / found on disk, the seconds they took
to arrive (its trace's `kernel` events) of its whole compile (capture and kernels:
`frame_end` events); then what the warm remote cache saved the fresh cluster. A warm cluster that compiled a kernel, or a sum that differs from NumPy's,
is an error.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from dask.distributed import Client, LocalCluster, wait  # noqa: E402
from remote_cache import SECRET, start_redis  # noqa: E402
from results import command_line, write_results  # noqa: E402

import pyjit  # noqa: E402
from pyjit import report  # noqa: E402


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


gelu_compiled = pyjit.compile(gelu)  # sent by value: the workers cannot import this script


def timed(array) -> tuple[float, float]:
    """(the sum `array` computes, the seconds it took)."""
    started = time.perf_counter()
    total = float(array.compute())
    return total, time.perf_counter() - started


def start_cluster(root: str, name: str, url: str) -> tuple[LocalCluster, Client, str]:
    """Two fresh worker processes, with an empty disk cache for the cluster, tracing to
    <root>/<name>-trace. The settings go in this process's environment, which the
    spawned workers inherit: pyjit reads them when it is imported there."""
    trace = os.path.join(root, f"{name}-trace")
    os.environ.update(PYJIT_REMOTE_CACHE=url, PYJIT_REMOTE_CACHE_KEY=SECRET, PYJIT_TRACE_DIR=trace,
                      PYJIT_CACHE_DIR=os.path.join(root, f"{name}-cache"))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    return cluster, Client(cluster), trace


def kernels_per_worker(trace: str) -> list[dict]:
    """Per worker process, how many kernels it compiled and fetched, the seconds they took
    to arrive (its trace's `kernel` events), and the seconds of its whole compile (capture
    and kernels: `frame_end` events)."""
    events, _ = report.load_events(trace)
    kernels = [event for event in events if event["event"] == "kernel"]
    return [{"compiled": 0, "remote": 0, "disk": 0,
             **Counter(event["origin"] for event in kernels if event["pid"] == pid),
             "kernel_s": sum(event["seconds"] for event in kernels if event["pid"] == pid),
             "compile_s": sum(event["seconds"] for event in events if event["event"] == "frame_end"
                              and event["pid"] == pid)}
            for pid in sorted({event["pid"] for event in kernels})]


def run_cluster(root: str, name: str, url: str, shape: tuple[int, int], chunk_rows: int, repeats: int) -> dict:
    """One fresh cluster: the first compiled run, --repeats warm ones, then --repeats under
    NumPy (the sums checked against NumPy's)."""
    cluster, client, trace = start_cluster(root, name, url)
    try:
        x = da.random.default_rng(0).standard_normal(shape, chunks=(chunk_rows, shape[1]))
        x = client.persist(x)
        wait(x)
        first, first_s = timed(x.map_blocks(gelu_compiled, dtype=x.dtype).sum())
        compiled = [timed(x.map_blocks(gelu_compiled, dtype=x.dtype).sum()) for _ in range(repeats)]
        plain = [timed(x.map_blocks(gelu, dtype=x.dtype).sum()) for _ in range(repeats)]
        if not all(np.isclose(total, plain[0][0], rtol=1e-9) for total in [first, *(t for t, _ in compiled)]):
            sys.exit(f"{name}: compiled sums {first} differ from NumPy's {plain[0][0]}")
        return {"first_s": first_s, "compiled_s": statistics.median(seconds for _, seconds in compiled),
                "numpy_s": statistics.median(seconds for _, seconds in plain), "workers": kernels_per_worker(trace)}
    finally:
        client.close()
        cluster.close()


def main() -> None:
    parser = command_line(__doc__, "a small array, one repeat (a smoke test)")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    shape, chunk_rows = ((8_000, 128), 1_000) if options.quick else ((800_000, 128), 50_000)
    repeats = 1 if options.quick else options.repeats
    with tempfile.TemporaryDirectory(prefix="pyjit-cluster-bench-") as root:
        server, url = start_redis(root)
        try:
            cold = run_cluster(root, "cold", url, shape, chunk_rows, repeats)
            remote = run_cluster(root, "remote", url, shape, chunk_rows, repeats)
        finally:
            server.kill()
            server.wait()
    if any(worker["compiled"] for worker in remote["workers"]):
        sys.exit(f"a worker of the cluster with a warm remote cache compiled: {remote['workers']}")
    megabytes = shape[0] * shape[1] * 8 / 1e6
    print(f"gelu and a sum over a {shape[0]}x{shape[1]} float64 array ({megabytes:.0f} MB in "
          f"{shape[0] // chunk_rows} chunks) on 2 worker processes{', quick sizes' if options.quick else ''}")
    print(f"  {'remote cache':12s} {'first run':>10s} {'compiled':>10s} {'numpy':>10s} {'vs numpy':>8s}")
    for name, row in (("empty", cold), ("warm", remote)):
        print(f"  {name:12s} {row['first_s'] * 1e3:7.0f} ms {row['compiled_s'] * 1e3:7.0f} ms "
              f"{row['numpy_s'] * 1e3:7.0f} ms {row['numpy_s'] / row['compiled_s']:7.2f}x")
        for number, worker in enumerate(row["workers"], 1):
            print(f"    worker {number}: kernels {worker['compiled']} compiled, {worker['remote']} fetched, "
                  f"{worker['disk']} from disk, in {worker['kernel_s']:.2f} s of a {worker['compile_s']:.2f} s compile")
    saved = sum(w["kernel_s"] for w in cold["workers"]) - sum(w["kernel_s"] for w in remote["workers"])
    print(f"compiled, numpy: medians of {repeats} runs; a worker's compile: capture and kernels (its trace)")
    print(f"The warm remote cache saved the fresh cluster's first run {(cold['first_s'] - remote['first_s']) * 1e3:.0f}"
          f" ms,\nits workers {saved:.2f} s of getting kernels")
    document = {"repeats": repeats, "shape": shape, "chunk_rows": chunk_rows, "cold": cold, "remote": remote}
    print(f"wrote {write_results(options.json, 'cluster', document, options.quick)}")


if __name__ == "__main__":
    main()
