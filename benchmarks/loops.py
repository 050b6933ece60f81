"""Loops over `range` whose body is array code, in three parts.

1. The first call of a 1-D Jacobi stencil (the corpus's `jacobi_1d`, 4000 float64) per
   trip count T, each in a fresh process with an empty compile cache, against the whole
   run in plain NumPy; the graph breaks that call met, and whether a second call with
   T + 1 compiled again.
2. The nested loop of the issue's "failed compile retried on every call" (an outer loop
   calling a function whose own loop writes slices), per warm call against plain NumPy.
3. The loop programs (the corpus's Jacobi stencils in 1, 2 and 3 dimensions, the
   factorizations, the triangular solve, Floyd-Warshall and the recurrence, and here a
   nested loop with a triangular inner range) at their small and large sizes, each size
   in a fresh process with an empty cache: NumPy, pyjit and Numba's `@njit` (where
   installed: the `bench` extra) as benchmarks/programs/run.py measures them (the first
   call, the outcome against NumPy's, the quietest median of `_C.bench`), pyjit's
   speedups over NumPy and over Numba, its graphs, breaks and loop nodes, and the graphs
   a call with another trip count compiled.
docs/benchmarks.md has the figures of one run.

    python -P benchmarks/loops.py [--quick] [--steps 10,20,50,400] [--programs NAMES] [--sizes small,large]
                                  [--engines pyjit,numba] [--backend inductor] [--json PATH]
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

import numpy as np  # noqa: E402

from programs import BY_NAME, Program, largest_difference, outcome  # noqa: E402
from programs.registry import rng  # noqa: E402
from programs.run import measure_engine  # noqa: E402
from results import chosen, command_line, fit, fresh_child, write_results  # noqa: E402

STEPS = (10, 20, 50, 400)
QUICK_STEPS = (5,)
SIZE = 4000
SIZES = ("small", "large")
ENGINES = ("pyjit", "numba")  # NumPy always runs: the others are measured against it
CHILD_TIMEOUT_S = 600


def gram_upper(c):
    """A nested loop whose inner range starts at the outer index: the Gram matrix of c's
    columns, one pair of columns per inner iteration, each product written twice."""
    d = c.shape[1]
    r = np.zeros((d, d))
    for a in range(d):
        for b in range(a, d):
            r[a, b] = r[b, a] = c[:, a] @ c[:, b]
    return r


GRAM_UPPER = Program("gram_upper", "linalg", "Gram matrix by column pairs, a triangular inner range", gram_upper,
                     lambda size: (rng().random((12, 6) if size == "small" else (2000, 200)),), numba=gram_upper,
                     rtol=1e-12, why="float64 sums (docs/codegen.md, Summation order: rtol 1e-12)")
LOOP_PROGRAMS = {program.name: program for program in (
    *(BY_NAME[name] for name in ("jacobi_1d", "jacobi_2d", "heat_3d", "lu", "cholesky", "forward_substitution",
                                 "gram_schmidt", "floyd_warshall", "recurrence")), GRAM_UPPER)}
QUICK_PROGRAMS = ("recurrence", "lu", "gram_upper")


def _one_step_more(A, B, steps):
    return A, B, steps + 1


def _one_row_less(*arrays):
    return tuple(np.ascontiguousarray(array[(slice(0, -1),) * array.ndim]) for array in arrays)


# Each program's arguments with another trip count: one step more where the count is an
# argument, one row (and column) less where it is a size.
ANOTHER_T = {"jacobi_1d": _one_step_more, "jacobi_2d": _one_step_more, "heat_3d": _one_step_more,
             "lu": _one_row_less, "cholesky": _one_row_less, "forward_substitution": _one_row_less,
             "floyd_warshall": _one_row_less, "recurrence": lambda x, a: (*_one_row_less(x), a),
             "gram_schmidt": lambda A: (np.ascontiguousarray(A[:, :-1]),),
             "gram_upper": lambda c: (np.ascontiguousarray(c[:, :-1]),)}


def shift_five_times(p):
    for _ in range(5):
        p[1:] = p[:-1] + 1.0


def shift_many_times(steps, p):
    for _ in range(steps):
        shift_five_times(p)


def _stencil_inputs():
    generator = rng()
    return generator.random(SIZE), generator.random(SIZE)


def _best_seconds(fn, make_args, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        args = make_args()
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def stencil_child(steps: int, backend: str) -> dict:
    """The Jacobi stencil's first call with trip count `steps`, in this (fresh) process."""
    import pyjit
    from pyjit.utils import counters

    jacobi_1d = LOOP_PROGRAMS["jacobi_1d"].function
    compiled = pyjit.compile(jacobi_1d, backend=backend)
    A, B = _stencil_inputs()
    start = time.perf_counter()
    compiled(A, B, steps)
    first = time.perf_counter() - start
    want_A, want_B = _stencil_inputs()
    jacobi_1d(want_A, want_B, steps)
    if not (np.allclose(A, want_A) and np.allclose(B, want_B)):
        raise AssertionError(f"the Jacobi stencil with T={steps} under {backend} differs from NumPy's")
    breaks = sum(counters["graph_break"].values())
    graphs = counters["stats"]["unique_graphs"]
    compiled(*_stencil_inputs(), steps + 1)
    numpy_s = _best_seconds(jacobi_1d, lambda: (*_stencil_inputs(), steps), 5)
    return {"steps": steps, "backend": backend, "first_call_s": first, "numpy_s": numpy_s, "graph_breaks": breaks,
            "graphs": graphs, "recompiled_for_T_plus_1": counters["stats"]["unique_graphs"] > graphs}


def nested(backend: str, repeats: int) -> dict:
    """The nested slice-writing loop: pyjit's warm call against NumPy's, and what went wrong."""
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


def another_trip_count(program: Program, size: str, backend: str) -> dict:
    """The graphs a call with another trip count compiles after the measured ones, the
    call's seconds (compiling included), and whether its outcome is NumPy's."""
    import pyjit
    from pyjit.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    args, plain = (ANOTHER_T[program.name](*program.inputs(size)) for _ in range(2))
    start = time.perf_counter()
    got = outcome(pyjit.compile(program.function, backend=backend)(*args), args, program.updates)
    seconds = time.perf_counter() - start
    want = outcome(program.function(*plain), plain, program.updates)
    return {"new_T_graphs": counters["stats"]["unique_graphs"] - graphs, "new_T_s": seconds,
            "new_T_agrees": bool(largest_difference(got, want) <= program.rtol)}


def program_child(name: str, size: str, engines: list[str], backend: str, quick: bool) -> dict:
    """Program `name` at `size` under NumPy and `engines`, in this (fresh) process."""
    import pyjit  # noqa: F401  (imported before timing: its import is not a first call)
    from pyjit.utils import counters

    program = LOOP_PROGRAMS[name]
    args = program.inputs(size)
    expected = outcome(program.function(*args), args, program.updates)
    rows = {}
    with warnings.catch_warnings():  # Numba's performance advice is not a result
        warnings.simplefilter("ignore")
        for engine in ("numpy", *engines):
            rows[engine] = measure_engine(program, engine, size, expected, quick, backend)
            if engine == "pyjit":
                rows[engine]["loops_captured"] = counters["stats"]["loops_captured"]
                rows[engine].update(another_trip_count(program, size, backend))
    return {engine: row for engine, row in rows.items() if row is not None}


def installed(engines: list[str]) -> list[str]:
    """`engines` less the peers that are not installed (Numba is optional: the bench extra)."""
    return [engine for engine in engines if engine == "pyjit" or importlib.util.find_spec(engine) is not None]


def speedup(rows: dict, over: str) -> float | None:
    """pyjit's speedup over engine `over` (its median over pyjit's), None where either is missing."""
    if "pyjit" not in rows or over not in rows:
        return None
    return rows[over]["median_ms"] / rows["pyjit"]["median_ms"]


def _cell(value: float | None, width: int, suffix: str = "", digits: int = 2) -> str:
    return ("-" if value is None else f"{value:.{digits}f}{suffix}").rjust(width)


def _ms(value: float | None) -> str:
    """Milliseconds in 8 columns, three significant digits down to a microsecond."""
    return _cell(value, 8, digits=0 if value is None else min(3, max(0, 2 - math.floor(math.log10(max(value, 1e-3))))))


def print_stencil(rows: list[dict], backend: str) -> None:
    print(f"CPython {sys.version.split()[0]}, backend {backend}, 1-D Jacobi on {SIZE} float64, T steps")
    print(f"{'T':>5s} {'first call s':>13s} {'NumPy ms':>9s} {'breaks':>7s} {'graphs':>7s} {'T+1 recompiles':>15s}")
    for row in rows:
        print(f"{row['steps']:5d} {row['first_call_s']:13.2f} {row['numpy_s'] * 1e3:9.2f} {row['graph_breaks']:7d} "
              f"{row['graphs']:7d} {'yes' if row['recompiled_for_T_plus_1'] else 'no':>15s}")


def print_programs(programs: dict, size: str) -> None:
    print(fit(f"loop programs at the {size} size: medians (ms), pyjit's speedup over NumPy and over Numba "
              "(! marks an outcome that differs from NumPy's), its first call (s), graphs, breaks, loop nodes, and "
              "the graphs another trip count compiled"))
    print(f"{'program':20s} {'numpy':>8s} {'pyjit':>8s} {'numba':>8s} {'vs numpy':>8s} {'vs numba':>8s} "
          f"{'first s':>7s} {'graphs':>6s} {'breaks':>6s} {'loops':>5s} {'new T':>5s}")
    for name, rows in programs.items():
        if "error" in rows:
            print(fit(f"{name:20s} FAILED: {rows['error']}", "    "))
            continue
        pyjit_row = rows.get("pyjit", {})
        mark = "" if pyjit_row.get("agrees", True) and pyjit_row.get("new_T_agrees", True) else "!"
        print(f"{name:20s} "
              + " ".join(_ms(rows[engine]["median_ms"] if engine in rows else None)
                         for engine in ("numpy", "pyjit", "numba"))
              + f" {_cell(speedup(rows, 'numpy'), 8, 'x' + mark)} {_cell(speedup(rows, 'numba'), 8, 'x' + mark)} "
              f"{_cell(pyjit_row.get('first_call_s'), 7)} "
              + " ".join(str(pyjit_row.get(key, "-")).rjust(width) for key, width in (
                  ("graphs", 6), ("graph_breaks", 6), ("loops_captured", 5), ("new_T_graphs", 5))))
    for line in summary_lines(programs):
        print(fit(line, "    "))


def summary_lines(programs: dict) -> list[str]:
    """The programs pyjit runs slower than NumPy, and than Numba; those another trip count
    compiled again, with that call's seconds; those where pyjit differs from NumPy."""
    measured = {name: rows["pyjit"] for name, rows in programs.items() if "error" not in rows and "pyjit" in rows}
    lines = []
    for over, label in (("numpy", "NumPy"), ("numba", "Numba")):
        slower = [name for name in measured if (speedup(programs[name], over) or 1.0) < 1.0]
        if any(over in programs[name] for name in measured):
            lines.append(f"pyjit slower than {label}: {', '.join(slower) or 'none'}")
    again = [f"{name} ({row['new_T_graphs']} graph{'s' * (row['new_T_graphs'] > 1)}, {row['new_T_s']:.2f} s)"
             for name, row in measured.items() if row["new_T_graphs"]]
    lines.append(f"graphs another trip count compiled: {', '.join(again) or 'none'}")
    wrong = [name for name, row in measured.items() if not (row["agrees"] and row["new_T_agrees"])]
    return lines + ([f"pyjit differs from NumPy: {', '.join(wrong)}"] if wrong else [])


def run_programs(names: list[str], sizes: list[str], engines: list[str], backend: str, quick: bool) -> dict:
    """size -> program -> its rows (benchmarks/programs/run.py's, pyjit's with its loop
    nodes and another trip count), each measured in a fresh process; a failed or hung
    child is a row saying so."""
    document = {}
    for size in sizes:
        programs = document[size] = {}
        for name in names:
            print(f"[{size}] {name}", file=sys.stderr, flush=True)
            rows = fresh_child(__file__, ["program", name, size, "--engines", ",".join(engines), "--backend", backend,
                                          *(["--quick"] if quick else [])], check=False, timeout=CHILD_TIMEOUT_S)
            programs[name] = {"error": rows["error"]} if rows.get("status") == "failed" else rows
        print_programs(programs, size)
    return document


def main() -> None:
    parser = command_line(__doc__, "one short trip count, three programs at the small size (a smoke test)")
    parser.add_argument("--steps", help="the stencil's trip counts T, comma-separated")
    parser.add_argument("--programs", metavar="A,B", help="only these loop programs")
    parser.add_argument("--sizes", metavar="A,B", help="the programs' sizes: small, large or both")
    parser.add_argument("--engines", metavar="A,B", help=f"only these of {', '.join(ENGINES)} (numpy always runs)")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    engines = chosen(options.engines, ENGINES, "engines") or list(ENGINES)
    if options.child:
        kind, *arguments = options.child
        print(json.dumps(stencil_child(int(arguments[0]), options.backend) if kind == "stencil" else
                         program_child(*arguments, engines, options.backend, options.quick)))
        return
    steps = [int(step) for step in options.steps.split(",")] if options.steps else \
        (QUICK_STEPS if options.quick else STEPS)
    stencil = [fresh_child(__file__, ["stencil", str(step), "--backend", options.backend]) for step in steps]
    print_stencil(stencil, options.backend)
    loop = nested(options.backend, 3 if options.quick else 20)
    print(f"nested slice loop (100 x 5 steps): pyjit {loop['pyjit_s'] * 1e3:.2f} ms a call, NumPy "
          f"{loop['numpy_s'] * 1e3:.2f} ms; {loop['warnings']} warnings, {loop['compile_failures']} failed compiles")
    for engine in set(engines) - set(installed(engines)):
        print(f"{engine} is not installed (pip install {engine}, in the bench extra): no {engine} columns")
    engines = installed(engines)
    names = chosen(options.programs, LOOP_PROGRAMS, "programs") or \
        list(QUICK_PROGRAMS if options.quick else LOOP_PROGRAMS)
    sizes = chosen(options.sizes, SIZES, "sizes") or (["small"] if options.quick else list(SIZES))
    programs = run_programs(names, sizes, engines, options.backend, options.quick)
    document = {"backend": options.backend, "jacobi_1d": stencil, "nested": loop, "programs": programs}
    print(f"wrote {write_results(options.json, 'loops', document, options.quick)}")


if __name__ == "__main__":
    main()
