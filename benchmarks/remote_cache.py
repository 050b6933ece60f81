"""The first call of a new process (a fresh worker: empty disk cache) with the kernels
in a warm remote cache, against compiling them (docs/benchmarks.md, "remote_cache.py").

    python -P benchmarks/remote_cache.py [--quick] [--workloads A,B] [--repeats N] [--json PATH]

Starts a redis-server of its own on a loopback port (it must be on PATH: Debian's
redis-server package), then for each workload runs benchmarks/measure.py's `warm` task
(a new process: capture, compile or fetch, and the first call, timed) with the
`inductor` engine in four settings, each with an empty disk cache of its own:

* cold: no remote cache; the toolchain probe and every kernel compile are paid;
* remote: PYJIT_REMOTE_CACHE pointing at a server that holds the kernels;
* cold, known toolchain / remote, known toolchain: the same, with the disk cache
  holding only the toolchain record (a worker that has compiled something before,
  or a machine image prepared with one), so the difference is kernels alone.

Each figure is the median of --repeats processes; the ratio is cold over remote in the
same run. The first call also holds the call itself (for the larger workloads, seconds of
arithmetic and page faults that no cache removes), so each process also traces its
compile (PYJIT_TRACE_DIR) and the second table is the time its kernel libraries took to
arrive: compiled, or fetched, verified and written to disk. Each run also checks where
the kernels came from: a remote run that compiled a kernel is an error.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

import pyjit  # noqa: E402
from pyjit import report  # noqa: E402
from pyjit.codegen import remote  # noqa: E402
from results import command_line, write_results  # noqa: E402

MEASURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measure.py")
DEFAULT_WORKLOADS = ("chain", "softmax", "layer_norm", "gelu", "transformer")
SETTINGS = ("cold", "remote", "cold, known toolchain", "remote, known toolchain")
SECRET = "benchmark-signing-key"
FIGURES = {"warm_start_ms": "first call of a new process", "kernels_ms": "of which getting the kernel libraries"}


def start_redis(directory: str) -> tuple[subprocess.Popen, str]:
    server = shutil.which("redis-server")
    if server is None:
        sys.exit("redis-server is not on PATH (Debian package redis-server; scripts/system_deps.sh installs it)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--dir", directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            remote._Connection("127.0.0.1", port, 1.0).call(b"PING")
            return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                sys.exit("redis-server did not start")
            time.sleep(0.05)


def first_call(workload: str, cache: str, url: str | None, quick: bool) -> dict:
    """measure.py's `warm` task in a new process on the pyjit this one imported, with
    `kernels_ms`: the seconds its kernel libraries took to load, from its trace."""
    trace_dir = os.path.join(cache, "trace")
    environment = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(pyjit.__file__)),
                       PYJIT_REMOTE_CACHE_KEY=SECRET, PYJIT_TRACE_DIR=trace_dir)
    environment.pop("PYJIT_REMOTE_CACHE", None)
    if url is not None:
        environment["PYJIT_REMOTE_CACHE"] = url
    command = [sys.executable, "-P", MEASURE, "warm", "pyjit-inductor", workload, "--cache", cache]
    child = subprocess.run(command + (["--quick"] if quick else []), capture_output=True, text=True,
                           env=environment, timeout=900, check=False)
    if child.returncode != 0:
        sys.exit(f"{workload}: measure.py failed:\n{child.stderr}")
    row = json.loads(child.stdout.splitlines()[-1])
    events, _ = report.load_events(trace_dir)
    row["kernels_ms"] = 1e3 * sum(event["seconds"] for event in events if event["event"] == "kernel")
    return row


def fresh_cache(root: str, toolchain_from: str | None) -> str:
    """An empty cache folder; with `toolchain_from`, holding that cache's toolchain record."""
    cache = tempfile.mkdtemp(dir=root)
    if toolchain_from is not None:
        os.makedirs(os.path.join(cache, "kernels"), mode=0o700)
        for record in glob.glob(os.path.join(toolchain_from, "kernels", "toolchain-*.json")):
            shutil.copy(record, os.path.join(cache, "kernels"))
    return cache


def measure_workload(workload: str, root: str, url: str, repeats: int, quick: bool) -> dict:
    seeded = fresh_cache(root, None)
    first_call(workload, seeded, url, quick)  # fills the server (and gives a toolchain record to copy)
    times = {(setting, figure): [] for setting in SETTINGS for figure in FIGURES}
    for _ in range(repeats):
        for setting in SETTINGS:
            cache = fresh_cache(root, seeded if "known toolchain" in setting else None)
            row = first_call(workload, cache, url if setting.startswith("remote") else None, quick)
            kernels = row["kernel_counters"]
            if setting.startswith("remote") and kernels.get("compiles", 0):
                sys.exit(f"{workload}: a run with a warm remote cache compiled {kernels['compiles']} kernel(s)")
            for figure in FIGURES:
                times[setting, figure].append(row[figure])
    return {figure: {setting: statistics.median(times[setting, figure]) for setting in SETTINGS}
            for figure in FIGURES}


def main() -> None:
    parser = command_line(__doc__, "tiny sizes, one repeat, one workload (a smoke test)")
    parser.add_argument("--workloads", help=f"comma-separated (default: {','.join(DEFAULT_WORKLOADS)})")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    workloads = (options.workloads.split(",") if options.workloads
                 else DEFAULT_WORKLOADS[:1] if options.quick else DEFAULT_WORKLOADS)
    repeats = 1 if options.quick else options.repeats
    with tempfile.TemporaryDirectory(prefix="pyjit-remote-bench-") as root:
        server, url = start_redis(root)
        try:
            results = {}
            for workload in workloads:
                print(f"{workload} ...", file=sys.stderr, flush=True)
                results[workload] = measure_workload(workload, root, url, repeats, options.quick)
        finally:
            server.kill()
            server.wait()
    for figure, title in FIGURES.items():
        print(f"{title}, ms (median of {repeats}){', quick sizes' if options.quick else ''}")
        print(f"  {'workload':12s}" + "".join(f" {setting:>24s}" for setting in SETTINGS)
              + "   cold/remote  (known tc)")
        for workload, rows in results.items():
            row = rows[figure]
            print(f"  {workload:12s}" + "".join(f" {row[setting]:24.1f}" for setting in SETTINGS)
                  + f"   {row['cold'] / row['remote']:10.2f}x"
                  + f"  {row['cold, known toolchain'] / row['remote, known toolchain']:8.2f}x")
    document = {"repeats": repeats, "results": results}
    print(f"wrote {write_results(options.json, 'remote_cache', document, options.quick)}")


if __name__ == "__main__":
    main()
