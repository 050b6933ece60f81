"""docs/benchmarks.md's tables, made from a results file (NOTE(results-file) in
benchmarks/results.py) and nothing else, so that every figure on the page is one the
last run of the main job measured.

    python scripts/benchmark_tables.py [RESULTS]   # default build/benchmarks/results.json
    python scripts/benchmark_tables.py --check     # exit 1 when the page is not what docs/benchmarks.json makes

It copies RESULTS to docs/benchmarks.json (the record the page was made from, kept in
git) and rewrites each block of the page between `<!-- table:NAME -->` and
`<!-- /table:NAME -->`, NAME a section of the results file (or `machine`). The output
depends on the file alone: the same file gives the same page, to the byte.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
RECORD = ROOT / "docs" / "benchmarks.json"
RESULTS = ROOT / "build" / "benchmarks" / "results.json"
BLOCK = re.compile(r"(<!-- table:([\w/]+) -->\n)(.*?)(<!-- /table:\2 -->)", re.DOTALL)
MISSING = "-"


def number(value: float | None, digits: int = 3) -> str:
    """`value` with `digits` significant digits, never in exponent form; `-` for none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def ratio(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}x"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; the first column left-aligned, the figures right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def machine_text(machine: dict) -> str:
    return (f"{machine['cpu']}, {machine['cores']} cores, CPython {machine['python']}, NumPy {machine['numpy']}, "
            f"pyjit {machine['pyjit']}")


def stamp(section: dict, page_machine: dict) -> list[str]:
    """The lines above a table measured on another machine than the page's, or at the
    smoke-test sizes: which, and when; none for the others (the machine block has
    their dates)."""
    machine = section["machine"]
    notes = ([machine_text(machine)] if _hardware(machine) != _hardware(page_machine) else []) \
        + (["`--quick` sizes, a smoke test whose figures mean nothing"] if section["quick"] else [])
    return [f"Measured {machine['date']}; {'; '.join(notes)}.", ""] if notes else []


def _hardware(machine: dict) -> tuple:
    return tuple(machine[key] for key in ("cpu", "cores", "python", "numpy", "pyjit"))


# The sections, one function each: the section's figures -> the lines of its block.

def run_table(section: dict) -> list[str]:
    """The harness: one row per workload, each engine's speedup over NumPy, and the
    default backend's first call, warm start and distance from the floor."""
    rows = section["rows"]
    gpu_only = {row["engine"] for row in rows} - {row["engine"] for row in rows if row["status"] != "no GPU"}
    engines = [engine for engine in dict.fromkeys(row["engine"] for row in rows)
               if engine != "numpy" and engine not in gpu_only]
    by_key = {(row["workload"], row["engine"]): row for row in rows}
    header = ["workload", "numpy ms", "floor ms",
              *(("+" + engine.split(":", 1)[1]) if ":" in engine else engine for engine in engines),
              "inductor /floor", "inductor first ms", "inductor warm ms"]
    body, notes = [], []
    for workload in dict.fromkeys(row["workload"] for row in rows):
        numpy_row = by_key.get((workload, "numpy"), {})
        inductor = by_key.get((workload, "pyjit-inductor"), {})
        cells = [f"`{workload}`", number(numpy_row.get("median_ms")), number(numpy_row.get("floor_ms"))]
        for engine in engines:
            row = by_key.get((workload, engine))
            cells.append(_speedup_cell(row))
            if row is not None and row["status"] != "ok":
                notes.append(f"{engine} on `{workload}`: {row['status']}" + (f" ({row['error']})" if "error" in row
                                                                             else ""))
        cells += [number(inductor.get("floor_ratio")), number(inductor.get("first_call_ms")),
                  number(inductor.get("warm_start_ms"))]
        body.append(cells)
    said = [f"Copy bandwidth {number(section['bandwidth_gbs'])} GB/s."]
    if gpu_only:
        said.append(f"{', '.join(sorted(gpu_only))}: no GPU on this machine, no figures.")
    missing = [name for name in ("torch.compile", "numba", "jax.jit") if name not in section["installed_peers"]]
    if missing:
        said.append(f"Not installed, so not measured: {', '.join(missing)}.")
    if notes:
        said.append("Rows that did not run cleanly: " + "; ".join(notes) + ".")
    dispatch = [f"{row['engine']} {row['overhead_ns']:+.0f} ns (first call {number(row['first_call_ms'])} ms)"
                for row in section["dispatch"] if "overhead_ns" in row]
    if dispatch:
        said.append("Dispatch overhead, compiled `x + 1` on 16 float32 against the plain call: "
                    + ", ".join(dispatch) + ".")
    return [*table(header, body), "", " ".join(said)]


def _speedup_cell(row: dict | None) -> str:
    if row is None:
        return MISSING
    if row["status"] == "failed":
        return "failed"
    return ratio(row.get("speedup")) + (" wrong" if row["status"] == "wrong" else "")


def programs_table(section: dict) -> list[str]:
    """The corpus: one row per program, the peers' speedups beside pyjit's."""
    body = []
    for name, rows in section["programs"].items():
        if "error" in rows:
            body.append([f"`{name}`", "failed", *[MISSING] * 7])
            continue
        numpy_ms = rows["numpy"]["median_ms"]
        cells = [f"`{name}`", number(numpy_ms)]
        for engine in ("pyjit", "numba", "jax"):
            row = rows.get(engine)
            cells.append(MISSING if row is None else ratio(numpy_ms / row["median_ms"])
                         + ("" if row.get("agrees", True) else " differs"))
        cells += [number(rows[engine]["first_call_s"]) if engine in rows else MISSING for engine in ("pyjit", "numba")]
        pyjit_row = rows.get("pyjit", {})
        cells += [str(pyjit_row.get("graphs", MISSING)), str(pyjit_row.get("graph_breaks", MISSING))]
        body.append(cells)
    header = ["program", "numpy ms", "pyjit", "numba", "jax", "pyjit first s", "numba first s", "graphs", "breaks"]
    return [*table(header, body), "", ". ".join(_geometric_means(section)) + "."]


def _geometric_means(section: dict) -> list[str]:
    """programs/run.py's own summary lines of the geometric-mean speedups (the lines
    after them, one per break reason, are the table's breaks column in words)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from programs.run import summary_lines
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return [line.strip().capitalize() for line in summary_lines(section) if "geometric mean" in line
            or line.lstrip().startswith("where ")]


def hook_overhead_table(section: dict) -> list[str]:
    """One row per contender, beside the plain row it is compared with (the last plain
    row above it in its part)."""
    body = []
    for title, rows in section["sections"].items():
        plain = None
        for row in rows:
            if row["overhead_ns"] is None:
                plain = row
                continue
            body.append([f"{title.split(')')[0]}) {row['label']}", number(plain["median_ns"]), number(row["median_ns"]),
                         f"{row['overhead_ns']:+.0f}", ratio(row["ratio"])])
    summary = section["summary"]
    return [*table(["row", "plain ns", "median ns", "overhead ns", "vs plain"], body), "",
            f"Cache-hit overhead {summary['hit_overhead_ns']:.0f} ns; each extra guarded array argument "
            f"{summary['per_argument_slope_ns']:.1f} ns (least squares over 1, 2, 4 and 8 arguments)."]


def reductions_table(section: dict) -> list[str]:
    threads = sorted({row["threads"] for row in section["rows"]})
    cases = list(dict.fromkeys((tuple(row["shape"]), row["axis"]) for row in section["rows"]))
    by_key = {(tuple(row["shape"]), row["axis"], row["threads"]): row for row in section["rows"]}
    header = ["shape", "axis", *(f"{title}, {count} thread{'s' * (count > 1)}" for count in threads
                                 for title in ("numpy ms", "pyjit ms", "vs numpy"))]
    body = []
    for shape, axis in cases:
        cells = [f"{shape}", str(axis)]
        for count in threads:
            row = by_key[shape, axis, count]
            cells += [number(row["numpy_s"] * 1e3), number(row["pyjit_s"] * 1e3), ratio(row["numpy_s"] / row["pyjit_s"])]
        body.append(cells)
    return table(header, body)


def small_graphs_table(section: dict) -> list[str]:
    body = [[row["function"], str(row["size"]), number(row["numpy_s"] * 1e6),
             number(row["inductor_s"] * 1e6), ratio(row["numpy_s"] / row["inductor_s"]),
             number(row["eager_s"] * 1e6), ratio(row["numpy_s"] / row["eager_s"])] for row in section["functions"]]
    body += [[f"relu(x @ W + b), {row['layer']}", MISSING, number(row["numpy_s"] * 1e6),
              number(row["inductor_s"] * 1e6), ratio(row["numpy_s"] / row["inductor_s"]), MISSING, MISSING]
             for row in section["layers"]]
    return table(["function", f"elements (`--sizes {section['sizes']}`)", "numpy µs", "inductor µs", "vs numpy",
                  "eager µs", "vs numpy"], body)


def modes_table(section: dict) -> list[str]:
    modes = section["modes"]
    body = [[row["workload"], number(row["numpy_s"] * 1e3), *(number(row[f"{mode}_s"] * 1e3) for mode in modes),
             *(ratio(row["default_s"] / row[f"{mode}_s"]) for mode in modes[1:])] for row in section["rows"]]
    return table(["workload", "numpy ms", *(f"{mode} ms" for mode in modes), *(f"{mode} gain" for mode in modes[1:])],
                 body)


def training_table(section: dict) -> list[str]:
    body = [[row["workload"], row["engine"], number(row["median_ms"]), ratio(row["speedup"]), number(row["first_ms"]),
             MISSING if row.get("saved_bytes") is None else number(row["saved_bytes"] / 2**20),
             number(row["peak_mb"])] for row in section["rows"]]
    return table(["workload", "engine", "median ms", "vs tape", "first ms", "saved MB", "peak MB"], body)


def compiled_backward_table(section: dict) -> list[str]:
    rows = section["rows"]
    body = [[row["engine"], number(row["median_ms"]), ratio(row["speedup"]), number(row["first_ms"]),
             "yes" if row["matches_tape"] else "no"] for row in rows]
    return table([f"engine ({rows[0]['workload']})", "median ms", "vs tape", "first ms", "gradients match the tape"],
                 body)


def loops_table(section: dict) -> list[str]:
    """The stencil's first calls per trip count, the nested slice loop, then the loop
    programs at the large size (the small where only it was measured): medians, pyjit's
    speedups over NumPy and Numba, its first call, graphs, breaks, loop nodes and the
    graphs another trip count compiled."""
    body = [[str(row["steps"]), number(row["first_call_s"]), number(row["numpy_s"] * 1e3), str(row["graph_breaks"]),
             str(row["graphs"]), "yes" if row["recompiled_for_T_plus_1"] else "no"] for row in section["jacobi_1d"]]
    nested = section["nested"]
    lines = [*table(["T", f"first call s (`{section['backend']}`)", "numpy ms", "breaks", "graphs", "T+1 recompiles"],
                    body), "",
             f"Nested slice-writing loop: pyjit {number(nested['pyjit_s'] * 1e3)} ms a call, NumPy "
             f"{number(nested['numpy_s'] * 1e3)} ms; {nested['warnings']} warnings, "
             f"{nested['compile_failures']} failed compiles."]
    for size, programs in section["programs"].items():
        if size != "large" and "large" in section["programs"]:
            continue
        header = [f"program ({size})", "numpy ms", "pyjit ms", "numba ms", "pyjit vs numpy", "pyjit vs numba",
                  "pyjit first s", "graphs", "breaks", "loop nodes", "new T graphs (call s)"]
        lines += ["", *table(header, [_loop_program_cells(name, rows) for name, rows in programs.items()])]
    return lines


def _loop_program_cells(name: str, rows: dict) -> list[str]:
    if "error" in rows:
        return [f"`{name}`", "failed", *[MISSING] * 9]
    pyjit_row = rows.get("pyjit")
    if pyjit_row is None:
        return [f"`{name}`", number(rows["numpy"]["median_ms"]), *[MISSING] * 9]
    differs = "" if pyjit_row["agrees"] and pyjit_row["new_T_agrees"] else " differs"
    speedups = [MISSING if engine not in rows else ratio(rows[engine]["median_ms"] / pyjit_row["median_ms"]) + differs
                for engine in ("numpy", "numba")]
    graphs = pyjit_row["new_T_graphs"]
    again = f"{graphs} ({number(pyjit_row['new_T_s'])} s)" if graphs else "0"
    return [f"`{name}`", *(number(rows[engine]["median_ms"]) if engine in rows else MISSING
                           for engine in ("numpy", "pyjit", "numba")), *speedups, number(pyjit_row["first_call_s"]),
            *(str(pyjit_row[key]) for key in ("graphs", "graph_breaks", "loops_captured")), again]


def compile_time_table(section: dict) -> list[str]:
    body = [[str(row["ops"]), row["backend"], number(row["first_call_s"] * 1e3), str(row["kernels"]),
             "yes" if row["eager_fallbacks"] else "no", number(row["build_s"] * 1e3),
             number((row["first_call_s"] - row["build_s"]) * 1e3 / row["ops"])] for row in section["rows"]]
    return table(["ops", "backend", "first call ms", "kernels", "eager fallback", "C build ms", "rest ms per op"],
                 body)


def blas_threads_table(section: dict) -> list[str]:
    settings = section["settings"]
    graphs = list(next(iter(settings.values())))
    body = []
    for label, figures in settings.items():
        cells = [label]
        for graph in graphs:
            whole, parts = figures[graph]["whole"], figures[graph]["parts"]
            cells.append(number(whole["s"] * 1e3) + (f" ({whole['s'] / parts['s']:.2f})" if parts else ""))
        body.append(cells)
    return [*table(["setting", *(f"{graph} ms" for graph in graphs)], body), "",
            "In brackets: the whole graph's time over the sum of its parts timed alone."]


def cluster_table(section: dict) -> list[str]:
    rows, workers = [], []
    for name, row in (("empty", section["cold"]), ("warm", section["remote"])):
        rows.append([name, number(row["first_s"] * 1e3), number(row["compiled_s"] * 1e3), number(row["numpy_s"] * 1e3),
                     ratio(row["numpy_s"] / row["compiled_s"])])
        workers.append(f"{name} cache, " + ", ".join(
            f"worker {index}: {worker['compiled']} compiled, {worker['remote']} fetched, {worker['disk']} from disk"
            for index, worker in enumerate(row["workers"], 1)))
    shape = section["shape"]
    return [*table(["remote cache", "first run ms", "compiled ms", "numpy ms", "vs numpy"], rows), "",
            f"GELU and a sum over a {shape[0]}x{shape[1]} float64 array in {shape[0] // section['chunk_rows']} "
            f"chunks; compiled and numpy: medians of {section['repeats']}. Kernels: " + "; ".join(workers) + "."]


def remote_cache_table(section: dict) -> list[str]:
    results = section["results"]
    settings = list(next(iter(results.values()))["warm_start_ms"])
    body = [[f"`{workload}`", *(number(figures["warm_start_ms"][setting]) for setting in settings),
             ratio(figures["warm_start_ms"]["cold"] / figures["warm_start_ms"]["remote"]),
             *(number(figures["kernels_ms"][setting]) for setting in ("cold", "remote"))]
            for workload, figures in results.items()]
    return table([f"workload (medians of {section['repeats']})", *(f"{setting} ms" for setting in settings),
                  "cold/remote", "kernels cold ms", "kernels remote ms"], body)


TABLES = {"run": run_table, "programs": programs_table, "hook_overhead": hook_overhead_table,
          "reductions": reductions_table, "small_graphs": small_graphs_table, "modes": modes_table,
          "training": training_table, "compiled_backward": compiled_backward_table, "loops": loops_table,
          "compile_time": compile_time_table, "blas_threads": blas_threads_table, "cluster": cluster_table,
          "remote_cache": remote_cache_table}
SCRIPTS = {"run": "run.py", "programs": "programs/run.py"}  # the others: NAME.py


def blocks(document: dict) -> dict[str, str]:
    """Each block's text, by name: `machine` (the page's machine: the harness's, else the
    first section's), then one per section of TABLES."""
    present = [name for name in TABLES if name in document]
    page_machine = document[present[0] if "run" not in document else "run"]["machine"] if present else None
    dates = sorted(document[name]["machine"]["date"] for name in present)
    texts = {"machine": f"{machine_text(page_machine)}; measured from {dates[0]} to {dates[-1]}." if present
             else "No results yet: run the main job."}
    for name, make in TABLES.items():
        if name not in document:
            script = SCRIPTS.get(name, f"{name}.py")
            texts[name] = f"Not in the last run: `python -P benchmarks/{script}` writes this table's figures."
            continue
        texts[name] = "\n".join([*stamp(document[name], page_machine), *make(document[name])])
    return texts


def render(page: str, document: dict) -> str:
    """`page` with every marked block replaced by what `document` makes of it."""
    texts = blocks(document)
    return BLOCK.sub(lambda match: f"{match[1]}{texts[match[2]]}\n{match[4]}", page)


def main(arguments: list[str]) -> int:
    if arguments == ["--check"]:
        document = json.loads(RECORD.read_text(encoding="utf-8"))
        page = PAGE.read_text(encoding="utf-8")
        if render(page, document) != page:
            print(f"{PAGE.relative_to(ROOT)} is not what {RECORD.relative_to(ROOT)} makes: run "
                  "python scripts/benchmark_tables.py", file=sys.stderr)
            return 1
        return 0
    source = Path(arguments[0]) if arguments else RESULTS
    document = json.loads(source.read_text(encoding="utf-8"))
    if source.resolve() != RECORD.resolve():
        shutil.copyfile(source, RECORD)
    PAGE.write_text(render(PAGE.read_text(encoding="utf-8"), document), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} and {RECORD.relative_to(ROOT)} from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
