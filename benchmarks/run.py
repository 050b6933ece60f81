"""pyjit's benchmark harness: twelve NumPy workloads under NumPy, each pyjit backend and the
installed peers, one process per row; a table on stdout, JSON, and a PNG bar chart when
matplotlib is installed. docs/benchmarks.md explains every workload, engine and column.

    python -P benchmarks/run.py [--quick] [--peers] [--json PATH] [--engines A,B] [--workloads A,B]

--quick: tiny sizes and few timed calls (a smoke test; its figures mean nothing), without
the inductor modes beyond the default and, unless --peers is given, without the peers.
--engines picks any engines (NumPy, the baseline, always runs). Progress goes to stderr,
one line per measurement.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import tempfile
import time

# `python -P` keeps the script's folder off sys.path (NOTE in measure.py's header).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import pyjit  # noqa: E402
from engines import PEER_INSTALL, PEERS, all_engines, gpu_missing, installed_peers  # noqa: E402
from results import child_json, command_line, chosen, fit, save_chart, shown_path, write_results  # noqa: E402
from workloads import BY_NAME, WORKLOADS  # noqa: E402

MEASURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measure.py")
CHILD_TIMEOUT_S = 900


def measure(arguments: list[str], quick: bool) -> dict:
    """Runs measure.py in a fresh process on the pyjit this process imported (installed,
    or a source tree): its JSON, or a failed row carrying the child's last error line."""
    environment = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(pyjit.__file__)))
    command = [sys.executable, "-P", MEASURE, *arguments] + (["--quick"] if quick else [])
    return child_json(command, environment, CHILD_TIMEOUT_S)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_row(engine, workload, cache_root: str, quick: bool) -> dict:
    """One row: the cold run, then a warm start where the engine keeps a disk cache. A
    CUDA row where there is no GPU is a row saying so, never a figure."""
    cache = os.path.join(cache_root, engine.name, workload.name)
    started = time.perf_counter()
    missing = gpu_missing() if engine.kind == "gpu" else None
    if missing is not None:
        progress(f"  {engine.name:24s} {missing}")
        return {"workload": workload.name, "engine": engine.name, "status": "no GPU", "error": missing}
    row = {"workload": workload.name, "engine": engine.name,
           **measure(["run", engine.name, workload.name, "--cache", cache], quick)}
    if engine.disk_cache and row["status"] != "failed":
        warm = measure(["warm", engine.name, workload.name, "--cache", cache], quick)
        row.update(warm if "error" not in warm else {"warm_error": warm["error"]})
    shown = f"{row['median_ms']:10.3f} ms" if "median_ms" in row else ""
    progress(f"  {engine.name:24s} {row['status']:7s}{shown}  ({time.perf_counter() - started:.1f} s)"
             + (f"  {row['error']}" if "error" in row else ""))
    return row


def vector_math_floor(workload, cache_root: str, quick: bool, before: dict | None = None) -> dict:
    """The workload's vector-math floor (NOTE(vector-math-floor) in measure.py), or {}.
    Measured before the workload's rows and again after them (`before`: the first
    figure): a floor timed in a slow spell of the machine would be too high, so the
    lower of the two counts."""
    if workload.vector_math is None:
        return {}
    floor = measure(["floor", workload.name, "--cache", os.path.join(cache_root, "floor")], quick)
    progress(f"  {'vector-math floor':24s} " + (f"{floor['vector_math_ms']:17.3f} ms" if "vector_math_ms" in floor
                                                else floor["error"]))
    if before and "vector_math_ms" in before and before["vector_math_ms"] < floor.get("vector_math_ms", math.inf):
        return before
    return floor


def run_all(engines, workloads, quick: bool) -> tuple[list[dict], list[dict], dict]:
    """Every (engine, workload) row, each compiling engine's dispatch overhead, and the
    workloads' vector-math floors."""
    rows, dispatch, floors = [], [], {}
    # NOTE(workload-major): a workload's rows run back to back, so a slow spell of the
    # shared machine moves its ratios less than if NumPy's row ran minutes before the rest.
    with tempfile.TemporaryDirectory(prefix="pyjit-bench-") as cache_root:
        for number, workload in enumerate(workloads, 1):
            progress(f"[{number}/{len(workloads)}] {workload.name}")
            before = vector_math_floor(workload, cache_root, quick)
            rows += [run_row(engine, workload, cache_root, quick) for engine in engines if engine.applies(workload)]
            floors[workload.name] = before and vector_math_floor(workload, cache_root, quick, before)
        progress("dispatch overhead")
        for engine in (engine for engine in engines if engine.compiles and engine.kind != "gpu"):
            cache = os.path.join(cache_root, engine.name, "dispatch")
            dispatch.append({"engine": engine.name, **measure(["dispatch", engine.name, "--cache", cache], quick)})
            result = dispatch[-1]
            progress(f"  {engine.name:24s} " + (f"{result['overhead_ns']:+.0f} ns" if "overhead_ns" in result
                                               else result["error"]))
    return rows, dispatch, floors


def add_ratios(rows: list[dict], bandwidth: float, floors: dict) -> None:
    """Each row's speedup over NumPy's row of its workload (same run), and the workload's
    floor: the larger of the bandwidth floor (NumPy's bytes read once plus written once,
    at the copy's bandwidth) and its vector-math floor, where it has one."""
    numpy_rows = {row["workload"]: row for row in rows if row["engine"] == "numpy" and "median_ms" in row}
    for row in rows:
        baseline = numpy_rows.get(row["workload"])
        if baseline is None or row["status"] == "no GPU":
            continue
        row["bandwidth_floor_ms"] = baseline["traffic_bytes"] / bandwidth * 1e3
        row["vector_math_floor_ms"] = floors.get(row["workload"], {}).get("vector_math_ms")
        row["floor_ms"] = max(row["bandwidth_floor_ms"], row["vector_math_floor_ms"] or 0)
        if "median_ms" in row:
            row["speedup"] = baseline["median_ms"] / row["median_ms"]
            row["floor_ratio"] = row["median_ms"] / row["floor_ms"] if BY_NAME[row["workload"]].at_floor else None


def floor_text(row: dict, floor: dict) -> str:
    """The workload's floor as its title line gives it: which floor, and the other one."""
    bandwidth, vector = row["bandwidth_floor_ms"], row["vector_math_floor_ms"]
    if vector is None:
        return f"; floor {bandwidth:.3f} ms (bandwidth)" + (f", vector math {floor['error']}" if "error" in floor
                                                               else "")
    calls = "vector math: " + "+".join(floor["vector_math"])
    if vector >= bandwidth:
        return f"; floor {vector:.3f} ms ({calls}; bandwidth {bandwidth:.3f})"
    return f"; floor {bandwidth:.3f} ms (bandwidth; {calls} {vector:.3f})"


COLUMNS = (("median ms", "median_ms", ".3f", 9), ("spread", "spread", ".0%", 6), ("vs numpy", "speedup", ".2f", 8),
           ("first ms", "first_call_ms", ".1f", 8), ("warm ms", "warm_start_ms", ".1f", 7),
           ("RSS MB", "peak_rss_mb", ".0f", 6), ("/floor", "floor_ratio", ".2f", 6), ("graphs", "graphs", "d", 6),
           ("breaks", "graph_breaks", "d", 6))


def _cell(row: dict, key: str, pattern: str, width: int) -> str:
    value = row.get(key)
    if key == "spread" and "median_ms" in row:
        value = (row["max_ms"] - row["min_ms"]) / row["median_ms"]
    return format(value, pattern).rjust(width) if value is not None else "-".rjust(width)


def _label(engine: str) -> str:
    """The row's name in the table: the inductor modes as +MODE (the legend says so)."""
    return "+" + engine.split(":", 1)[1] if engine.startswith("pyjit-inductor:") else engine


def _status(row: dict) -> str | None:
    """None for a row that ran and agrees with NumPy; otherwise what went wrong."""
    if row["status"] == "ok":
        return None
    if row["status"] == "no GPU":
        return row["error"]
    if "error" in row:
        return f"{row['status'].upper()}: {row['error']}"
    return f"{row['status'].upper()}: largest difference from NumPy {row['max_abs_error']:.3g}"


def peer_lines(document: dict) -> list[str]:
    """One line per peer that did not run: not installed (and how to add it), or left
    out of a --quick run."""
    python = shown_path(sys.executable)
    lines = []
    for name in PEERS:
        if name not in document["installed_peers"]:
            lines.append(f"{name}: not installed; to compare with it: {python} -m pip install {PEER_INSTALL[name]}")
        elif not any(row["engine"] == name for row in document["rows"]):
            lines.append(f"{name}: installed, left out of this run (--quick runs peers with --peers)")
    return lines


def print_table(document: dict) -> None:
    print(fit(f"pyjit {document['pyjit']}, NumPy {document['numpy']}, CPython {document['python']}, "
               f"{document['cpus']} CPUs{', quick sizes (a smoke test)' if document['quick'] else ''}"))
    print(fit(f"copy bandwidth {document['bandwidth_gbs']:.1f} GB/s; a workload's floor is the larger of bytes read "
               "once plus written once at that bandwidth and its vector-math calls alone"))
    for line in peer_lines(document):
        print(fit(line, "    "))
    name_width = max(len(_label(row["engine"])) for row in [*document["rows"], *document["dispatch"],
                                                           {"engine": "engine"}])
    print(f"  {'engine':{name_width}s}" + "".join(f" {title:>{width}s}" for title, _, _, width in COLUMNS))
    for workload in WORKLOADS:
        rows = [row for row in document["rows"] if row["workload"] == workload.name]
        if rows:
            floor = floor_text(rows[0], document["floors"].get(workload.name, {})) if "floor_ms" in rows[0] else ""
            print(fit(f"{workload.name}: {workload.what}{floor}", "  "))
        for row in rows:
            print(f"  {_label(row['engine']):{name_width}s}"
                  + "".join(f" {_cell(row, key, pattern, width)}" for _, key, pattern, width in COLUMNS))
            if _status(row):
                print(fit(f"    {_status(row)}", "    "))
    if any(row["engine"].startswith("pyjit-inductor:") for row in document["rows"]):
        print("+MODE: pyjit-inductor compiled with mode=MODE")
    if document["dispatch"]:
        print("dispatch: compiled `x + 1` on 16 float32 elements against the plain call")
    for row in document["dispatch"]:
        if "overhead_ns" not in row:
            print(fit(f"  {_label(row['engine']):{name_width}s} {_status(row)}", "    "))
            continue
        print(f"  {_label(row['engine']):{name_width}s} {row['plain_ns']:6.0f} ns plain, {row['compiled_ns']:6.0f} ns "
              f"compiled, {row['overhead_ns']:+6.0f} ns; first call {row['first_call_ms']:.0f} ms")


def chart(document: dict):
    """A bar chart of every engine's speedup over NumPy, per workload (matplotlib is
    installed: save_chart calls it). The legend stands in rows above the axes,
    never over the bars: twelve workloads of a dozen engines leave no empty corner."""
    import matplotlib.pyplot as plt

    engines = list(dict.fromkeys(row["engine"] for row in document["rows"]))
    names = [w.name for w in WORKLOADS if any(row["workload"] == w.name for row in document["rows"])]
    width = 0.8 / len(engines)
    inches = max(8, 1.2 * len(names))
    columns = max(1, min(len(engines), int(inches // 2.2)))
    figure, axes = plt.subplots(figsize=(inches, 4.5 + 0.25 * math.ceil(len(engines) / columns)))
    colours = plt.get_cmap("tab20")
    for index, engine in enumerate(engines):
        speedups = {row["workload"]: row.get("speedup") or 0 for row in document["rows"] if row["engine"] == engine}
        axes.bar(np.arange(len(names)) + index * width, [speedups.get(name, 0) for name in names], width,
                 label=engine, color=colours(index % colours.N))  # the default cycle repeats after ten
    axes.set_yscale("log")  # speedups span 0.1x to 40x
    axes.axhline(1, color="black", linewidth=0.8)
    axes.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=30, ha="right")
    axes.set_ylabel("speedup over NumPy")
    axes.legend(fontsize="small", ncol=columns, loc="lower left", bbox_to_anchor=(0, 1.02, 1, 0), mode="expand",
                borderaxespad=0, frameon=False)
    figure.tight_layout()
    return figure


def default_engines(engines: dict, quick: bool, peers: bool) -> list[str]:
    """Every engine; --quick leaves out the inductor modes beyond the default (their gains
    need the full sizes: NOTE(modes) in pyjit/backends/inductor.py) and, unless --peers,
    the peers (each compiles for seconds per workload)."""
    left_out = ({"mode"} if peers else {"mode", "peer"}) if quick else set()
    return [name for name, engine in engines.items() if engine.kind not in left_out]


def main() -> None:
    parser = command_line(__doc__, "tiny sizes, few timed calls: a smoke test")
    parser.add_argument("--peers", action="store_true", help="with --quick, time the installed peers too")
    parser.add_argument("--engines", metavar="A,B", help="only these engines (numpy is always run)")
    parser.add_argument("--workloads", metavar="A,B", help="only these workloads")
    options = parser.parse_args()
    started = time.perf_counter()
    engines = all_engines()
    picked = chosen(options.engines, engines, "engines") or default_engines(engines, options.quick, options.peers)
    engines = [engine for name, engine in engines.items() if name in picked or name == "numpy"]
    picked = chosen(options.workloads, BY_NAME, "workloads")
    workloads = [workload for workload in WORKLOADS if picked is None or workload.name in picked]
    document = {"quick": options.quick, "pyjit": pyjit.__version__, "numpy": np.__version__,
                "python": platform.python_version(), "cpus": os.cpu_count(), "installed_peers": installed_peers(),
                **measure(["stream"], options.quick)}
    document["rows"], document["dispatch"], document["floors"] = run_all(engines, workloads, options.quick)
    add_ratios(document["rows"], document["bandwidth_gbs"] * 1e9, document["floors"])
    document["total_s"] = time.perf_counter() - started
    print_table(document)
    written = [write_results(options.json, "run", document, options.quick),
               save_chart(chart, document, os.path.splitext(options.json)[0] + ".png")]
    print(fit(f"{document['total_s']:.0f} s in all; wrote {' and '.join(filter(None, written))}", "  "))


if __name__ == "__main__":
    main()
