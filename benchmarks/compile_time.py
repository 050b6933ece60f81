"""Compile time against graph size: the first call of a function whose body is a chain of
N pointwise ops (N = 10, 100, 1000, 2000, 5000), compiled with the `eager` backend (capture
only) and with the default backend (capture, scheduling, C compiler, loading), each in a
fresh process with an empty compile cache. The target is that it grow linearly with N:
the last column is the first-call time per op, the C compiler's run left out (its time
is the "C build" column, from the trace's `kernel` events: docs/report.md), which stays
flat when it does.
docs/benchmarks.md has the figures of one run on each CPython.

    python -P benchmarks/compile_time.py [--quick] [--sizes 10,100,1000,2000,5000] [--json PATH]
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

from results import command_line, fresh_child, write_results  # noqa: E402

SIZES = (10, 100, 1000, 2000, 5000)
QUICK_SIZES = (10, 40)
BACKENDS = ("eager", "inductor")


def chain_source(ops: int) -> str:
    """`def chain(x)`: `ops` ops in a row, alternating a multiply and an add (values stay
    bounded: each pair is x * 0.5 + 1)."""
    lines = ["def chain(x):"]
    lines += ["    x = x * 0.5" if step % 2 == 0 else "    x = x + 1.0" for step in range(ops)]
    return "\n".join(lines + ["    return x", ""])


def child(ops: int, backend: str) -> dict:
    """One measurement, in this (fresh) process: the first call's seconds and pyjit's counters."""
    import numpy as np

    import pyjit
    from pyjit.utils import counters

    namespace = {}
    exec(compile(chain_source(ops), f"<chain of {ops}>", "exec"), namespace)
    chain = namespace["chain"]
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    compiled = pyjit.compile(chain, backend=backend)
    start = time.perf_counter()
    result = compiled(x)
    seconds = time.perf_counter() - start
    if not np.allclose(result, chain(x), rtol=1e-5, atol=1e-5):
        raise AssertionError(f"the {ops}-op chain under {backend} differs from NumPy's")
    inductor = counters["inductor"]
    return {"ops": ops, "backend": backend, "first_call_s": seconds, "graphs": counters["stats"]["unique_graphs"],
            "kernels": inductor.get("kernels", 0),
            "eager_fallbacks": inductor.get("eager_fallbacks", 0)}


def measure(ops: int, backend: str) -> dict:
    with tempfile.TemporaryDirectory() as trace:
        row = fresh_child(__file__, [str(ops), backend], PYJIT_TRACE_DIR=trace)
        row["build_s"] = sum(event["seconds"] for event in _events(trace) if event["event"] == "kernel")
    return row


def _events(directory: str):
    for name in os.listdir(directory) if os.path.isdir(directory) else ():
        with open(os.path.join(directory, name)) as file:
            yield from (json.loads(line) for line in file if line.strip())


def main() -> None:
    parser = command_line(__doc__, "two short chains (a smoke test)")
    parser.add_argument("--sizes", help="chain lengths, comma-separated")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(int(options.child[0]), options.child[1])))
        return
    sizes = [int(size) for size in options.sizes.split(",")] if options.sizes else \
        (QUICK_SIZES if options.quick else SIZES)
    print(f"CPython {sys.version.split()[0]}")
    print(f"{'ops':>6s} {'backend':>9s} {'first call ms':>14s} {'kernels':>8s} {'eager':>6s} {'C build ms':>11s} "
          f"{'rest ms per op':>15s}")
    rows = []
    for ops in sizes:
        for backend in BACKENDS:
            row = measure(ops, backend)
            rows.append(row)
            eager = "yes" if row["eager_fallbacks"] else "no"
            rest = (row["first_call_s"] - row["build_s"]) * 1e3 / ops
            print(f"{ops:6d} {backend:>9s} {row['first_call_s'] * 1e3:14.1f} {row['kernels']:8d} {eager:>6s} "
                  f"{row['build_s'] * 1e3:11.1f} {rest:15.3f}")
    print(f"wrote {write_results(options.json, 'compile_time', {'rows': rows}, options.quick)}")


if __name__ == "__main__":
    main()
