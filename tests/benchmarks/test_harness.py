"""The benchmark harness (benchmarks/run.py) runs end to end at its --quick sizes, so the
README's main command never rots. Its figures are not checked (SPEC section 4: timing is
never asserted); its shape, and every engine's answers against NumPy's, are."""

import importlib.util
import itertools
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import pyjit

HARNESS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
WORKLOADS = ["chain", "cos_cos", "softmax", "layer_norm", "mlp", "gelu", "transformer", "kmeans", "black_scholes",
             "mlp_train", "column_stats", "clipped_step"]
BACKENDS = [name for name in ("eager", "aot_eager", "inductor") if name in pyjit.list_backends(exclude_tags=None)]
AT_FLOOR = {"chain", "cos_cos", "softmax", "layer_norm", "gelu"}
VECTOR_MATH = {"chain": ["sin", "cos", "exp"], "cos_cos": ["cos", "cos"], "softmax": ["exp"], "gelu": ["tanh"]}
TIMES = ["median_ms", "min_ms", "max_ms", "first_call_ms", "speedup", "peak_rss_mb", "floor_ms"]


def run_harness(*arguments: str) -> subprocess.CompletedProcess:
    # The child imports the pyjit this process imported (installed, or a source tree).
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    return subprocess.run([sys.executable, "-P", str(HARNESS), "--quick", *arguments], capture_output=True,
                          text=True, env=environment, timeout=600)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """(stdout, the JSON document) of one --quick run of every workload and engine."""
    path = tmp_path_factory.mktemp("harness") / "results.json"
    completed = run_harness("--json", str(path))
    assert completed.returncode == 0, completed.stderr
    return completed.stdout, json.loads(path.read_text())["run"]


def test_the_table_lists_every_workload_and_engine(quick_run):
    stdout, _ = quick_run
    lines = stdout.splitlines()
    headers = [line.split(":")[0] for line in lines if not line.startswith(" ") and ":" in line]
    assert [name for name in headers if name in WORKLOADS] == WORKLOADS
    engines = {line.split()[0] for line in lines if line.startswith("  ")}
    assert {"numpy", "pyjit-tape", *(f"pyjit-{name}" for name in BACKENDS)} <= engines


def test_the_table_fits_100_columns_and_names_each_missing_peer(quick_run):
    stdout, _ = quick_run
    lines = stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    installs = {"torch": "torch --index-url https://download.pytorch.org/whl/cpu", "numba": "numba", "jax": "jax[cpu]"}
    for name, module in {"torch.compile": "torch", "numba": "numba", "jax.jit": "jax"}.items():
        said = [" ".join([line, *(more.strip() for more in itertools.takewhile(lambda more: more.startswith("    "),
                                                                               lines[index + 1:]))])
                for index, line in enumerate(lines) if line.startswith(f"{name}: ")]
        if importlib.util.find_spec(module) is None:  # the line wraps at 100 columns; its words are the command
            assert len(said) == 1 and said[0].endswith(f"-m pip install {installs[module]}")
        else:  # installed, and --quick runs peers only with --peers
            assert len(said) == 1 and "left out" in said[0]


def test_the_chart_is_left_out_without_matplotlib_and_pyjit_never_needs_it(tmp_path):
    """scripts/main.sh installs matplotlib in its own environment (pyproject.toml's
    `bench` extra); everywhere else the harness and pyjit run without it."""
    script = f"""
import sys
class NoMatplotlib:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "matplotlib":
            raise ImportError("no matplotlib here")
sys.meta_path.insert(0, NoMatplotlib())
sys.path.insert(0, {str(HARNESS.parent)!r})
import pyjit, run
assert run.save_chart(run.chart, {{"rows": []}}, {str(tmp_path / "chart.png")!r}) is None
"""
    environment = dict(os.environ, PYTHONPATH=str(pathlib.Path(pyjit.__file__).parents[1]))
    completed = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True,
                               env=environment, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert not (tmp_path / "chart.png").exists()


def test_the_charts_legend_covers_no_bar():
    """Twelve workloads and thirteen engines with speedups over the whole log axis: the
    legend stands clear of every bar (the main job's chart was read at 1728x540)."""
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is in the `test` and `bench` extras")
    matplotlib.use("Agg")
    sys.path.insert(0, str(HARNESS.parent))
    try:
        spec = importlib.util.spec_from_file_location("harness_run", HARNESS)
        run = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(run)
    finally:
        sys.path.remove(str(HARNESS.parent))
    engines = ["numpy", "pyjit-tape", "pyjit-eager", "pyjit-aot_eager", "pyjit-inductor", "pyjit-inductor:reduce-overhead",
               "pyjit-inductor:max-autotune", "pyjit-inductor:max-autotune-no-cudagraphs", "cupy",
               "pyjit-inductor@cuda", "torch.compile", "numba", "jax.jit"]
    speedups = np.geomspace(0.1, 40, len(engines))  # each workload spans the axis: no empty corner
    document = {"rows": [{"workload": workload, "engine": engine, "speedup": np.roll(speedups, shift)[index]}
                         for shift, workload in enumerate(WORKLOADS) for index, engine in enumerate(engines)]}
    figure = run.chart(document)
    try:
        renderer = figure.canvas.get_renderer()
        figure.canvas.draw()
        (axes,) = figure.axes
        legend = axes.get_legend().get_window_extent(renderer)
        bars = [patch.get_window_extent(renderer) for patch in axes.patches]
        assert len(bars) == len(document["rows"])
        assert [bar for bar in bars if legend.overlaps(bar)] == []
        assert len(axes.get_legend().get_texts()) == len(engines)
    finally:
        matplotlib.pyplot.close(figure)


def test_every_engine_matches_numpy_on_every_workload(quick_run):
    _, document = quick_run
    rows = {(row["workload"], row["engine"]): row for row in document["rows"]}
    for workload in WORKLOADS:
        for engine in ["numpy", *(f"pyjit-{name}" for name in BACKENDS)]:
            assert rows[workload, engine]["status"] == "ok", rows[workload, engine]
    assert rows["mlp_train", "pyjit-tape"]["status"] == "ok"
    assert not [key for key in rows if key[0] != "mlp_train" and key[1] == "pyjit-tape"]


def test_the_branch_row_runs_graphs_around_a_break(quick_run):
    """clipped_step's `if` reads a computed value: the row measures the pieces between."""
    _, document = quick_run
    (row,) = [row for row in document["rows"]
              if row["workload"] == "clipped_step" and row["engine"] == "pyjit-inductor"]
    assert row["graph_breaks"] >= 1 and row["graphs"] >= 2


def test_rows_carry_the_documented_figures(quick_run):
    _, document = quick_run
    assert document["bandwidth_gbs"] > 0 and document["quick"] is True
    for row in (row for row in document["rows"] if row["status"] != "no GPU"):
        for key in TIMES:
            assert isinstance(row[key], float) and math.isfinite(row[key]) and row[key] > 0, (key, row)
        assert row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert (row["floor_ratio"] is not None) == (row["workload"] in AT_FLOOR)
        if row["engine"].startswith("pyjit-") and row["engine"] != "pyjit-tape":
            assert row["graphs"] >= 0 and row["graph_breaks"] >= 0 and isinstance(row["break_reasons"], list)
        if row["engine"] == "pyjit-inductor":
            assert row["warm_start_ms"] > 0


def test_each_floor_is_the_larger_of_bandwidth_and_vector_math(quick_run):
    """NOTE(vector-math-floor): the workloads that call vector math have a floor of those
    calls alone; the row's floor is the larger of it and the bandwidth floor, and the
    workload's title line says which it is."""
    stdout, document = quick_run
    assert {name: floor["vector_math"] for name, floor in document["floors"].items() if floor} == VECTOR_MATH
    for row in (row for row in document["rows"] if row["status"] != "no GPU"):
        math = row["vector_math_floor_ms"]
        assert (math is not None) == (row["workload"] in VECTOR_MATH), row
        assert row["floor_ms"] == max(row["bandwidth_floor_ms"], math or 0)
    text = " ".join(stdout.split())  # the title lines, unwrapped
    for row in (row for row in document["rows"] if row["engine"] == "numpy"):
        floor, which = re.search(rf"\b{row['workload']}: [^;]*; floor (\S+) ms \(([^)]*)\)", text).groups()
        assert float(floor) == pytest.approx(row["floor_ms"], abs=1e-3)
        calls = VECTOR_MATH.get(row["workload"])
        assert (f"vector math: {'+'.join(calls)}" in which) if calls else which == "bandwidth"
        assert which.startswith("vector math" if calls and row["floor_ms"] > row["bandwidth_floor_ms"] else "bandwidth")


def test_the_floor_task_times_each_workloads_vector_math(run_quick, tmp_path):
    """`measure.py floor WORKLOAD`, the process run.py starts for a vector-math floor."""
    for name, calls in VECTOR_MATH.items():
        floor = json.loads(run_quick("measure.py", "floor", name, "--cache", str(tmp_path)).splitlines()[-1])
        assert floor["vector_math"] == calls and floor["vector_math_ms"] > 0


def no_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return True
    import cupy

    try:
        return cupy.cuda.runtime.getDeviceCount() == 0
    except Exception:  # no driver
        return True


def test_cuda_rows_run_only_on_a_gpu(quick_run):
    stdout, document = quick_run
    rows = [row for row in document["rows"] if row["engine"] in ("cupy", "pyjit-inductor@cuda")]
    assert {row["workload"] for row in rows} == set(WORKLOADS)
    if no_gpu():  # never a made-up figure
        assert all(row["status"] == "no GPU" and "median_ms" not in row for row in rows)
        assert "no GPU" in stdout
    else:
        assert all(row["status"] == "ok" for row in rows), rows


def test_dispatch_overhead_is_measured_for_each_compiling_engine(quick_run):
    _, document = quick_run
    assert [row["engine"] for row in document["dispatch"]] == [f"pyjit-{name}" for name in BACKENDS]
    for row in document["dispatch"]:
        assert row["plain_ns"] > 0 and row["compiled_ns"] > 0 and row["first_call_ms"] > 0
        assert row["overhead_ns"] == pytest.approx(row["compiled_ns"] - row["plain_ns"])


def test_the_inductor_modes_run_when_named(tmp_path):
    modes = [f"pyjit-inductor:{mode}" for mode in ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")]
    completed = run_harness("--workloads", "softmax", "--engines", ",".join(modes), "--json", str(tmp_path / "r.json"))
    assert completed.returncode == 0, completed.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["run"]["rows"]
    assert [(row["engine"], row["status"]) for row in rows] == [("numpy", "ok")] + [(mode, "ok") for mode in modes]


def test_an_unknown_workload_is_refused():
    completed = run_harness("--workloads", "nope")
    assert completed.returncode != 0 and "unknown workloads: nope" in completed.stderr
