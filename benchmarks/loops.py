"""Loops over `range` whose body is array code (issue 31): the first call of a 1-D Jacobi
stencil (`for t in range(1, T)`, 4000 float64) for several trip counts T, each in a fresh
process with an empty compile cache, against the whole run in plain NumPy; the graph
breaks that call met, and whether a second call with T + 1 compiled again. Then the
nested loop of the issue's "failed compile retried on every call" (an outer loop calling
a function whose own loop writes slices), per call against plain NumPy. Then the loop
programs of the corpus (benchmarks/programs/: triangular solve, factorizations,
Floyd-Warshall, the recurrence) at their large size: the first call in a fresh process,
one NumPy run, the graphs, breaks and loop nodes of that call.
docs/benchmarks.md has the figures of one run.

    python -P benchmarks/loops.py [--quick] [--steps 10,20,50,400] [--programs NAMES] [--backend inductor]
                                  [--json PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

from results import command_line, write_results  # noqa: E402

STEPS = (10, 20, 50, 400)
QUICK_STEPS = (5,)
SIZE = 4000
PROGRAMS = ("recurrence", "forward_substitution", "floyd_warshall", "cholesky", "lu", "gram_schmidt")
QUICK_PROGRAMS = ("recurrence", "lu")


def jacobi_1d(A, B, T):
    for t in range(1, T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def shift_five_times(p):
    for _ in range(5):
        p[1:] = p[:-1] + 1.0


def shift_many_times(steps, p):
    for _ in range(steps):
        shift_five_times(p)


def _inputs():
    import numpy as np

    grid = np.linspace(0.0, 1.0, SIZE)
    return np.sin(grid * 7.0), np.cos(grid * 3.0)


def _best_seconds(fn, make_args, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        args = make_args()
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def child(steps: int, backend: str) -> dict:
    """One measurement, in this (fresh) process."""
    import numpy as np

    import pyjit
    from pyjit.utils import counters

    compiled = pyjit.compile(jacobi_1d, backend=backend)
    A, B = _inputs()
    start = time.perf_counter()
    compiled(A, B, steps)
    first = time.perf_counter() - start
    want_A, want_B = _inputs()
    jacobi_1d(want_A, want_B, steps)
    if not (np.allclose(A, want_A) and np.allclose(B, want_B)):
        raise AssertionError(f"the Jacobi stencil with T={steps} under {backend} differs from NumPy's")
    breaks = sum(counters["graph_break"].values())
    graphs = counters["stats"]["unique_graphs"]
    compiled(*_inputs(), steps + 1)
    numpy_s = _best_seconds(jacobi_1d, lambda: (*_inputs(), steps), 5)
    return {"steps": steps, "backend": backend, "first_call_s": first, "numpy_s": numpy_s, "graph_breaks": breaks,
            "graphs": graphs, "recompiled_for_T_plus_1": counters["stats"]["unique_graphs"] > graphs}


def nested(backend: str, repeats: int) -> dict:
    """The nested slice-writing loop: pyjit's warm call against NumPy's, and what went wrong."""
    import numpy as np

    import pyjit
    from pyjit.utils import counters

    compiled = pyjit.compile(shift_many_times, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(100, np.zeros(10))
        pyjit_s = _best_seconds(compiled, lambda: (100, np.zeros(10)), repeats)
    numpy_s = _best_seconds(shift_many_times, lambda: (100, np.zeros(10)), repeats)
    return {"pyjit_s": pyjit_s, "numpy_s": numpy_s, "warnings": len(caught),
            "compile_failures": counters["stats"]["compile_failures"]}


def program_child(name: str, size: str, backend: str) -> dict:
    """The first call of corpus program `name` at `size`, in this (fresh) process."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `python -P` leaves benchmarks/ off
    from programs import BY_NAME, largest_difference, outcome

    import pyjit
    from pyjit.utils import counters

    program = BY_NAME[name]
    args = program.inputs(size)
    start = time.perf_counter()
    got = outcome(pyjit.compile(program.function, backend=backend)(*args), args, program.updates)
    first = time.perf_counter() - start
    plain = program.inputs(size)
    start = time.perf_counter()
    want = outcome(program.function(*plain), plain, program.updates)
    numpy_s = time.perf_counter() - start
    return {"program": name, "size": size, "first_call_s": first, "numpy_s": numpy_s,
            "agrees": bool(largest_difference(got, want) <= max(program.rtol, 1e-12)),
            "graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(counters["graph_break"].values()),
            "loops_captured": counters["stats"]["loops_captured"]}


def measure(*child: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:  # an empty compile cache: the C compiler runs
        environment = dict(os.environ, PYJIT_CACHE_DIR=cache)
        flags = ["-P"] if sys.flags.safe_path else []
        finished = subprocess.run([sys.executable, *flags, __file__, "--child", *child],
                                  capture_output=True, text=True, env=environment, check=True)
    return json.loads(finished.stdout.splitlines()[-1])


def main() -> None:
    parser = command_line(__doc__, "one short trip count (a smoke test)")
    parser.add_argument("--steps", help="trip counts T, comma-separated")
    parser.add_argument("--programs", help="corpus programs, comma-separated")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        arguments = options.child
        print(json.dumps(program_child(*arguments) if len(arguments) == 3 else child(int(arguments[0]), arguments[1])))
        return
    steps = [int(step) for step in options.steps.split(",")] if options.steps else \
        (QUICK_STEPS if options.quick else STEPS)
    print(f"CPython {sys.version.split()[0]}, backend {options.backend}, 1-D Jacobi on {SIZE} float64")
    print(f"{'T':>5s} {'first call s':>13s} {'NumPy ms':>9s} {'breaks':>7s} {'graphs':>7s} {'T+1 recompiles':>15s}")
    rows = []
    for step in steps:
        row = measure(str(step), options.backend)
        rows.append(row)
        print(f"{step:5d} {row['first_call_s']:13.2f} {row['numpy_s'] * 1e3:9.2f} {row['graph_breaks']:7d} "
              f"{row['graphs']:7d} {'yes' if row['recompiled_for_T_plus_1'] else 'no':>15s}")
    loop = nested(options.backend, 3 if options.quick else 20)
    print(f"nested slice loop (100 x 5 steps): pyjit {loop['pyjit_s'] * 1e3:.2f} ms a call, NumPy "
          f"{loop['numpy_s'] * 1e3:.2f} ms; {loop['warnings']} warnings, {loop['compile_failures']} failed compiles")
    names = options.programs.split(",") if options.programs else (QUICK_PROGRAMS if options.quick else PROGRAMS)
    size = "small" if options.quick else "large"
    print(f"corpus loop programs, {size} size: {'program':>20s} {'first call s':>13s} {'NumPy ms':>9s} "
          f"{'graphs':>7s} {'breaks':>7s} {'loop nodes':>11s}")
    programs = []
    for name in names:
        row = measure(name, size, options.backend)
        programs.append(row)
        if not row["agrees"]:
            raise AssertionError(f"{name} under {options.backend} differs from NumPy's")
        print(f"{'':33s}{name:>20s} {row['first_call_s']:13.2f} {row['numpy_s'] * 1e3:9.2f} {row['graphs']:7d} "
              f"{row['graph_breaks']:7d} {row['loops_captured']:11d}")
    document = {"backend": options.backend, "jacobi_1d": rows, "nested": loop, "programs": programs}
    print(f"wrote {write_results(options.json, 'loops', document, options.quick)}")


if __name__ == "__main__":
    main()
