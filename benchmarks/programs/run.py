"""The harness's programs section: every program of the corpus at its large size under
NumPy, pyjit's default backend (inductor), and Numba and JAX where installed; one
process per program. Prints a table (speedups over NumPy, first calls, graphs and
breaks), the breaks grouped by reason, and writes its section of the results file and a
PNG chart (when matplotlib is installed). docs/benchmarks.md ("Programs") explains it.

    python -P benchmarks/programs/run.py [--quick] [--programs A,B] [--engines A,B] [--json PATH]

--quick: the small sizes and few timed calls (a smoke test; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings

# `python -P` keeps the script's folder off sys.path; the corpus and the harness's timing
# are found from benchmarks/ explicitly.
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCHMARKS)

import numpy as np  # noqa: E402

from programs import BY_NAME, break_reason, largest_difference, outcome  # noqa: E402
from results import chosen, command_line, fit, fresh_child, save_chart, write_results  # noqa: E402

ENGINES = ("numpy", "pyjit", "numba", "jax")
PEER_RTOL = 1e-12  # as tests/benchmarks/test_programs.py holds Numba and JAX (their FMA and sum orders)
# rounds, seconds of timed calls per engine, for the large and the quick sizes
TIMING = {False: (3, 0.6), True: (2, 0.01)}
CHILD_TIMEOUT_S = 300


def engine_function(program, engine: str, backend: str):
    """What `engine` calls for `program` (pyjit compiling with `backend`), or None where it
    has no version; compiling happens at the first call (timed), importing does not."""
    if engine == "numpy":
        return program.function
    if engine == "pyjit":
        import pyjit

        return pyjit.compile(program.function, backend=backend)
    version = program.numba if engine == "numba" else program.jax
    if version is None:
        return None
    try:
        __import__(engine)
    except ImportError:
        return None
    return program.numba_compiled() if engine == "numba" else program.jax_compiled()


def quietest_median(fn, args, rounds: int, seconds: float, once: float) -> float:
    """The median seconds per call of the quietest of `rounds` rounds (pyjit._C.bench,
    garbage collection off), about `seconds` of calls in all."""
    import gc

    from pyjit import _C

    calls = max(1, min(10_000, int(seconds / rounds / max(once, 1e-7))))
    gc.disable()
    try:
        return min(float(np.median(_C.bench(fn, args, calls, 0))) for _ in range(rounds))
    finally:
        gc.enable()


def measure_engine(program, engine: str, size: str, expected: list, quick: bool,
                   backend: str = "inductor") -> dict | None:
    fn = engine_function(program, engine, backend)
    if fn is None:
        return None
    args = program.inputs(size)
    start = time.perf_counter()
    result = fn(*args)
    row = {"first_call_s": time.perf_counter() - start}
    got = result if engine == "jax" else outcome(result, args, program.updates)
    if engine == "pyjit":
        from pyjit.utils import counters

        row.update(graphs=counters["stats"]["unique_graphs"], graph_breaks=sum(counters["graph_break"].values()),
                   break_reasons=sorted({break_reason(reason) for reason in counters["graph_break"]}))
    if engine != "numpy":
        row["difference"] = float(largest_difference(got, expected))
        row["agrees"] = bool(row["difference"] <= max(program.rtol, PEER_RTOL if engine in ("numba", "jax") else 0))
    start = time.perf_counter()
    fn(*args)  # the warm-up call, which also sizes the rounds
    row["median_ms"] = quietest_median(fn, args, *TIMING[quick], time.perf_counter() - start) * 1e3
    return row


def child(name: str, engines: list[str], quick: bool) -> dict:
    """One program's rows in this process: each engine's first call (compiling into the
    empty cache the parent chose), its agreement with NumPy, its steady state."""
    import pyjit  # noqa: F401  (imported before timing: its import is not a first call)

    program = BY_NAME[name]
    size = "small" if quick else "large"
    args = program.inputs(size)
    expected = outcome(program.function(*args), args, program.updates)
    rows = {}
    with warnings.catch_warnings():  # Numba's performance advice is not a result
        warnings.simplefilter("ignore")
        for engine in engines:
            rows[engine] = measure_engine(program, engine, size, expected, quick)
    return {name: value for name, value in rows.items() if value is not None}


def run_program(name: str, engines: list[str], quick: bool) -> dict:
    """One program's rows, measured in a fresh process with an empty compile cache; a
    failed or hung child is a row saying so."""
    rows = fresh_child(__file__, [name, "--engines", ",".join(engines[1:]), *(["--quick"] if quick else [])],
                       check=False, timeout=CHILD_TIMEOUT_S)
    return {"error": rows["error"]} if rows.get("status") == "failed" else rows


def speedup(rows: dict, engine: str) -> float | None:
    if engine not in rows or "numpy" not in rows:
        return None
    return rows["numpy"]["median_ms"] / rows[engine]["median_ms"]


def geometric_mean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _ratio(value: float | None, agrees: bool = True) -> str:
    return ("-" if value is None else f"{value:.2f}" + ("" if agrees else "!")).rjust(7)


def _seconds(row: dict | None) -> str:
    return ("-" if row is None else f"{row['first_call_s']:.2f}").rjust(7)


def print_table(document: dict) -> None:
    print(fit(f"programs at the {'small' if document['quick'] else 'large'} size: speedup over NumPy (x), first "
               "call (s, compiling included), pyjit's graphs and breaks; ! marks a result that differs from NumPy's"))
    print(f"  {'program':22s} {'numpy ms':>9s} {'pyjit x':>7s} {'numba x':>7s} {'jax x':>7s} "
          f"{'pyjit s':>7s} {'numba s':>7s} {'jax s':>7s} {'graphs':>6s} {'breaks':>6s}")
    for name, rows in document["programs"].items():
        if "error" in rows:
            print(fit(f"  {name:22s} FAILED: {rows['error']}", "    "))
            continue
        pyjit_row = rows.get("pyjit", {})
        print(f"  {name:22s} {rows['numpy']['median_ms']:9.2f}"
              + "".join(f" {_ratio(speedup(rows, engine), rows.get(engine, {}).get('agrees', True))}"
                        for engine in ("pyjit", "numba", "jax"))
              + "".join(f" {_seconds(rows.get(engine))}" for engine in ("pyjit", "numba", "jax"))
              + f" {pyjit_row.get('graphs', '-'):>6} {pyjit_row.get('graph_breaks', '-'):>6}")
    for line in summary_lines(document):
        print(fit(line, "    "))


def summary_lines(document: dict) -> list[str]:
    """Geometric means of the speedups, over every program and over those each peer runs
    (the same programs for pyjit), and the break reasons with the programs they stop."""
    measured = {name: rows for name, rows in document["programs"].items() if "error" not in rows}
    lines = []
    everywhere = [speedup(rows, "pyjit") for rows in measured.values() if "pyjit" in rows]
    if everywhere:
        lines.append(f"geometric mean speedup: pyjit {geometric_mean(everywhere):.2f}x over {len(everywhere)} programs")
    for peer in ("numba", "jax"):
        both = [rows for rows in measured.values() if peer in rows and "pyjit" in rows]
        if both:
            lines.append(f"  where {peer} runs ({len(both)} programs): {peer} "
                         f"{geometric_mean([speedup(rows, peer) for rows in both]):.2f}x, pyjit "
                         f"{geometric_mean([speedup(rows, 'pyjit') for rows in both]):.2f}x")
    whole = sorted(name for name, rows in measured.items() if rows.get("pyjit", {}).get("graph_breaks") == 0)
    lines.append(f"one graph, no break ({len(whole)}): {', '.join(whole)}")
    reasons: dict[str, list[str]] = {}
    for name, rows in measured.items():
        for reason in rows.get("pyjit", {}).get("break_reasons", []):
            reasons.setdefault(reason.splitlines()[0], []).append(name)
    if reasons:
        lines.append("breaks, by reason:")
    for reason, names in sorted(reasons.items(), key=lambda item: -len(item[1])):
        lines.append(f"  {reason} ({len(names)}): {', '.join(names)}")
    return lines


def chart(document: dict):
    """Each program's speedup over NumPy per engine (matplotlib is installed: save_chart
    calls it), or None when no row ran."""
    import matplotlib.pyplot as plt

    names = [name for name, rows in document["programs"].items() if "error" not in rows]
    engines = [engine for engine in ENGINES[1:] if any(engine in document["programs"][name] for name in names)]
    if not engines:
        return None
    width = 0.8 / max(1, len(engines))
    figure, axes = plt.subplots(figsize=(max(10, 0.45 * len(names)), 4.5))
    for index, engine in enumerate(engines):
        axes.bar(np.arange(len(names)) + index * width,
                 [speedup(document["programs"][name], engine) or 0 for name in names], width, label=engine)
    axes.set_yscale("log")  # speedups span 0.01x to 100x
    axes.axhline(1, color="black", linewidth=0.8)
    axes.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=60, ha="right", fontsize="small")
    axes.set_ylabel("speedup over NumPy")
    axes.legend(fontsize="small")
    figure.tight_layout()
    return figure


def main() -> None:
    parser = command_line(__doc__, "the small sizes, few calls: a smoke test")
    parser.add_argument("--programs", metavar="A,B", help="only these programs")
    parser.add_argument("--engines", metavar="A,B", help=f"only these of {', '.join(ENGINES[1:])} (numpy always runs)")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    options = parser.parse_args()
    engines = ["numpy", *chosen(options.engines, ENGINES[1:], "engines")] if options.engines else list(ENGINES)
    if options.child:
        print(json.dumps(child(options.child, engines, options.quick)))
        return
    names = chosen(options.programs, BY_NAME, "programs") or list(BY_NAME)
    started = time.perf_counter()
    document = {"quick": options.quick, "programs": {}}
    for number, name in enumerate(names, 1):
        print(f"[{number}/{len(names)}] {name}", file=sys.stderr, flush=True)
        document["programs"][name] = run_program(name, engines, options.quick)
    document["total_s"] = time.perf_counter() - started
    print_table(document)
    written = [write_results(options.json, "programs", document, options.quick),
               save_chart(chart, document, os.path.join(os.path.dirname(options.json), "programs.png"))]
    print(fit(f"{document['total_s']:.0f} s in all; wrote {' and '.join(filter(None, written))}", "  "))


if __name__ == "__main__":
    main()
