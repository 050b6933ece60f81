"""Compiled NumPy on a Dask cluster, each kernel compiled once for the whole fleet.

Starts a LocalCluster of two worker processes (what `dask scheduler` and two `dask
worker`s do on separate machines) and, when `redis-server` is on PATH, a Redis on
loopback as the shared kernel cache, whose address and signing key go in the workers'
environment (docs/distributed.md). A GELU over a chunked array runs through
`map_blocks`, then through `client.map`; each result is checked against NumPy's, and
the workers' traces say where each of their kernels came from.

    python -P examples/dask_cluster.py [--quick]
"""

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections import Counter

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

import pyjit
from pyjit import report


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


# Compiled under another name, so that cloudpickle sends `gelu` itself, by value, from
# this script to the workers (a decorated function of __main__ would go by name, which
# the workers cannot import).
gelu_compiled = pyjit.compile(gelu)


def start_redis(directory: str) -> tuple[subprocess.Popen | None, str | None]:
    """A redis-server of this example's own on a free loopback port, and its address;
    (None, None) when it is not installed."""
    if shutil.which("redis-server") is None:
        return None, None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", directory], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    server.kill()
    return None, None


def where_kernels_came_from(trace_dir: str, shared: bool) -> None:
    """Per worker process, its kernels' origins; then the compiles against the kernels:
    with a remote cache, one compile per kernel across the cluster (NOTE(build-lease))."""
    events, _ = report.load_events(trace_dir)
    kernels = [event for event in events if event["event"] == "kernel"]
    for pid in sorted({event["pid"] for event in events}):
        origins = Counter(event["origin"] for event in events if event["event"] == "kernel" and event["pid"] == pid)
        waits = sum(event["event"] == "remote_lease_wait" and event["pid"] == pid for event in events)
        print(f"  worker process {pid}: " + ", ".join(f"{count} {origin}" for origin, count in sorted(origins.items()))
              + (f"; waited {waits} time(s) for another worker building a kernel" if waits else ""))
    compiles = sum(event["origin"] == "compiled" for event in kernels)
    print(f"{len({event['key'] for event in kernels})} distinct kernels, {compiles} compiles in all")
    assert not shared or compiles == len({event["key"] for event in kernels})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller array")
    rows = 4_000 if parser.parse_args().quick else 200_000
    with tempfile.TemporaryDirectory(prefix="pyjit-dask-") as root:
        server, url = start_redis(root)
        # What each worker machine's environment holds (`dask worker` started with it). pyjit
        # reads it when imported, so it must be there when the worker process starts: the
        # LocalCluster's workers inherit this process's environment.
        os.environ.update(PYJIT_CACHE_DIR=os.path.join(root, "cache"), PYJIT_TRACE_DIR=os.path.join(root, "trace"))
        if url is not None:
            os.environ.update(PYJIT_REMOTE_CACHE=url, PYJIT_REMOTE_CACHE_KEY=secrets.token_hex(16))
            print(f"remote kernel cache: {url}")
        else:
            print("redis-server is not installed: each worker compiles its own kernels")
        try:
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                values = np.random.default_rng(0).standard_normal((rows, 64))
                x = da.from_array(values, chunks=(rows // 8, 64))
                result = x.map_blocks(gelu_compiled, dtype=values.dtype).compute()
                print(f"map_blocks: {x.numblocks[0]} blocks of {rows // 8}x64 on 2 workers; largest difference "
                      f"from NumPy {np.max(np.abs(result - gelu(values))):.2g}")
                assert np.allclose(result, gelu(values), rtol=1e-12, atol=1e-14)
                blocks = np.array_split(values, 5)  # another shape: a recompile on the workers
                results = client.gather(client.map(gelu_compiled, blocks))
                assert all(np.allclose(out, gelu(block), rtol=1e-12, atol=1e-14) for out, block in zip(results, blocks))
                print(f"client.map: {len(blocks)} blocks, results equal NumPy's")
            print("kernels each worker loaded (compiled here, or from the remote cache):")
            where_kernels_came_from(os.environ["PYJIT_TRACE_DIR"], shared=url is not None)
        finally:
            if server is not None:
                server.kill()
                server.wait()


if __name__ == "__main__":
    main()
