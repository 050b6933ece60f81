"""Reductions along each axis, compiled by pyjit's default backend against NumPy, with one
thread and with two: `mean` of float32 arrays over the leading axis, a middle axis, the
last axis and every axis, at a few sizes. Each thread count runs in a process of its own
(OpenMP reads OMP_NUM_THREADS once, when it starts), timed with the native loop
`pyjit._C.bench`; every result is compared with NumPy's first. docs/benchmarks.md has
the figures of one run.

    python -P benchmarks/reductions.py [--quick] [--threads 1,2] [--json PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from results import command_line, write_results  # noqa: E402

# (shape, axis): columns (the columnar form), middle axes (batch outermost), rows, all.
CASES = [((2000, 512), 0), ((4096, 4096), 0), ((256, 64, 512), 1), ((64, 2048, 64), 1), ((8, 8, 65536), 1),
         ((4096, 1024), 1), ((4096, 1024), None), ((16, 4), 0)]
QUICK_CASES = [((200, 64), 0), ((16, 32, 64), 1), ((64, 32), 1), ((4, 4), None)]
ROUNDS = 5


def measure(quick: bool) -> list[dict]:
    """This process's rows: (shape, axis, NumPy's and pyjit's seconds per call)."""
    import pyjit
    from pyjit import _C

    rows = []
    for shape, axis in QUICK_CASES if quick else CASES:
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

        def reduce(array, axis=axis):
            return array.mean(axis=axis)

        compiled = pyjit.compile(reduce)
        if not np.allclose(compiled(x), reduce(x), rtol=1e-5, atol=1e-6):
            raise AssertionError(f"mean over axis {axis} of {shape} differs from NumPy's")
        calls = 3 if quick else max(5, min(300, int(2e7 / x.size)))
        # The lowest of the rounds' medians: a slow spell of the shared machine moves one round.
        numpy_s, pyjit_s = (min(float(np.median(_C.bench(fn, (x,), calls, 2))) for _ in range(ROUNDS))
                            for fn in (reduce, compiled))
        rows.append({"shape": list(shape), "axis": axis, "numpy_s": numpy_s, "pyjit_s": pyjit_s})
    return rows


def main() -> None:
    parser = command_line(__doc__, "tiny sizes (a smoke test; figures mean nothing)")
    parser.add_argument("--threads", default="1,2", help="thread counts, one process each")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(measure(options.quick)))
        return
    print(f"{'shape':16s} {'axis':>5s} {'threads':>7s} {'numpy ms':>9s} {'pyjit ms':>9s} {'vs numpy':>8s}")
    rows = []
    for threads in options.threads.split(","):
        with tempfile.TemporaryDirectory() as cache:  # a fresh compile cache: no stale kernels
            environment = dict(os.environ, OMP_NUM_THREADS=threads, PYJIT_CACHE_DIR=cache)
            child = subprocess.run([sys.executable, *(["-P"] if sys.flags.safe_path else []), __file__, "--child",
                                    *(["--quick"] if options.quick else [])],
                                   capture_output=True, text=True, env=environment, check=True)
        for row in json.loads(child.stdout.splitlines()[-1]):
            rows.append({**row, "threads": int(threads)})
            print(f"{str(tuple(row['shape'])):16s} {str(row['axis']):>5s} {threads:>7s} {row['numpy_s'] * 1e3:9.3f} "
                  f"{row['pyjit_s'] * 1e3:9.3f} {row['numpy_s'] / row['pyjit_s']:7.2f}x")
    print(f"wrote {write_results(options.json, 'reductions', {'rows': rows}, options.quick)}")


if __name__ == "__main__":
    main()
