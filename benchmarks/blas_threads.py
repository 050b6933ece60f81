"""BLAS threads beside the kernels' OpenMP threads: graphs that alternate a matrix
product (NumPy's OpenBLAS) and a fused epilogue (a pyjit kernel on libgomp's team),
against the sum of their parts timed alone, with OpenBLAS's jobs on libgomp's team (the
default) or on its own pool. Each thread setting runs in
a process of its own (both libraries read their variables once, when they start), the
settings in turns for a few rounds, and each figure is its quietest round's median.
Beside the time per call, the CPU time per call of all the process's threads (from
/proc/self/task: user plus system) and the number of threads that used any: an idle team
that spins while the other works shows as CPU time the parts alone do not use.
docs/benchmarks.md has the figures of one run.

    python -P benchmarks/blas_threads.py [--quick] [--rounds N] [--json PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# `python -P` keeps the script's folder off sys.path (NOTE in measure.py's header).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from results import command_line, write_results  # noqa: E402
from workloads import BY_NAME, gelu, mlp  # noqa: E402

CORES = len(os.sched_getaffinity(0))
# label -> the environment of one process (added to the caller's, whose own thread
# variables are dropped). With N the cores, "BLAS N, OpenMP N" is also what a process
# gets by default: one team, OpenBLAS's jobs on libgomp's threads (NOTE(blas-pool) in
# pyjit/codegen/cpu/threads.py). "OpenBLAS's own pool" is how it was before: two pools, and
# OpenBLAS's idle workers busy-spin about 0.1 s after a call (OPENBLAS_THREAD_TIMEOUT,
# 2^28 cycles), which "BLAS idle sleeps" shortens; "OpenMP idle sleeps" shortens libgomp's
# (about 30 us, NOTE(omp-wait-policy)). Where one beats the default, that spin costs.
OWN_POOL = {"OPENBLAS_NUM_THREADS": str(CORES), "OMP_NUM_THREADS": str(CORES), "PYJIT_BLAS_THREADS": "openblas"}
SETTINGS = {
    "BLAS 1, OpenMP 1": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    f"BLAS {CORES}, OpenMP 1": {"OPENBLAS_NUM_THREADS": str(CORES), "OMP_NUM_THREADS": "1"},
    f"BLAS 1, OpenMP {CORES}": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": str(CORES)},
    f"BLAS {CORES}, OpenMP {CORES}": {"OPENBLAS_NUM_THREADS": str(CORES), "OMP_NUM_THREADS": str(CORES)},
    "OpenBLAS's own pool": OWN_POOL,
    "BLAS idle sleeps": dict(OWN_POOL, OPENBLAS_THREAD_TIMEOUT="4"),
    "OpenMP idle sleeps": {"OPENBLAS_NUM_THREADS": str(CORES), "OMP_NUM_THREADS": str(CORES),
                           "OMP_WAIT_POLICY": "passive"},
}
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY",
                    "GOMP_SPINCOUNT", "OMP_DYNAMIC", "PYJIT_BLAS_THREADS")
LOOP_SECONDS = 0.3  # long enough for the CPU clock's 10 ms ticks


def relu_bias(y, b):
    return np.maximum(y + b, 0)


def gelu_bias(y, b):
    return gelu(y + b)


def add_bias(y, b):
    return y + b


def linear_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


def linear_gelu(x, w, b):
    return gelu(x @ w + b)


# name -> (graph, its layers: (x's shape, W's shape, the epilogue after x @ W)); the
# graph is the layers in order, each layer's output the next one's x.
GRAPHS = {
    "mlp (512,1024)->4096->1024": (mlp, [((512, 1024), (1024, 4096), relu_bias),
                                         ((512, 4096), (4096, 1024), add_bias)]),
    "relu(x@W+b) (256,512)@(512,512)": (linear_relu, [((256, 512), (512, 512), relu_bias)]),
    "gelu(x@W+b) (2048,512)@(512,2048)": (linear_gelu, [((2048, 512), (512, 2048), gelu_bias)]),
}
QUICK_GRAPHS = {
    "mlp (16,64)->256->64": (mlp, [((16, 64), (64, 256), relu_bias), ((16, 256), (256, 64), add_bias)]),
    "gelu(x@W+b) (32,64)@(64,128)": (linear_gelu, [((32, 64), (64, 128), gelu_bias)]),
}
# harness workloads timed whole only (their parts are many): the settings compared
WHOLE_WORKLOADS = ("transformer", "kmeans")


def thread_seconds() -> dict[str, float]:
    """tid -> CPU seconds (user + system) of each thread of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        seconds[tid] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def timed(fn, args: tuple, quick: bool) -> dict:
    """Median seconds per call, and CPU seconds per call with the threads that used any."""
    from pyjit import _C

    started = time.perf_counter()
    fn(*args)
    calls = 3 if quick else max(5, int(LOOP_SECONDS / max(time.perf_counter() - started, 1e-6)))
    before = thread_seconds()
    times = _C.bench(fn, args, calls, 2)
    after = thread_seconds()
    used = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    return {"s": float(np.median(times)), "cpu_s": sum(used.values()) / (calls + 2),
            "threads": sum(seconds > 0 for seconds in used.values())}


def measure(quick: bool) -> dict:
    """graph name -> its whole figures and its parts' summed figures, in this process."""
    import pyjit

    results = {}
    for name, (graph, layers) in (QUICK_GRAPHS if quick else GRAPHS).items():
        rng = np.random.default_rng(0)
        x = rng.standard_normal(layers[0][0], dtype=np.float32)
        args, parts = [x], []
        for _, w_shape, epilogue in layers:
            w = rng.standard_normal(w_shape, dtype=np.float32) * np.float32(w_shape[0] ** -0.5)
            b = rng.standard_normal(w_shape[1], dtype=np.float32)
            product = x @ w
            parts += [(np.matmul, (x, w)), (pyjit.compile(epilogue), (product, b))]
            args += [w, b]
            x = epilogue(product, b)
        compiled = pyjit.compile(graph)
        if not np.allclose(compiled(*args), x, rtol=1e-4, atol=1e-4):
            raise AssertionError(f"{name} differs from NumPy's")
        whole = timed(compiled, tuple(args), quick)
        alone = [timed(fn, part_args, quick) for fn, part_args in parts]
        results[name] = {"whole": whole, "parts": {key: sum(part[key] for part in alone) for key in ("s", "cpu_s")}}
    for name in WHOLE_WORKLOADS:
        case = BY_NAME[name].numpy(quick)
        compiled = pyjit.compile(case.fn)
        if not np.allclose(compiled(*case.args), case.fn(*case.args), rtol=BY_NAME[name].tolerance,
                           atol=BY_NAME[name].tolerance):
            raise AssertionError(f"{name} differs from NumPy's")
        results[name] = {"whole": timed(compiled, case.args, quick), "parts": None}
    return results


def run(quick: bool, rounds: int) -> dict:
    """setting -> graph -> the quietest round's figures (each setting in its own process)."""
    best: dict = {}
    base = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES}
    with tempfile.TemporaryDirectory() as cache:  # one compile cache shared by the processes
        for _ in range(rounds):
            for label, setting in SETTINGS.items():
                child = subprocess.run([sys.executable, *(["-P"] if sys.flags.safe_path else []), __file__, "--child",
                                        *(["--quick"] if quick else [])], capture_output=True, text=True,
                                       env=dict(base, **setting, PYJIT_CACHE_DIR=cache), check=True)
                for graph, figures in json.loads(child.stdout.splitlines()[-1]).items():
                    kept = best.setdefault(label, {}).setdefault(graph, {"whole": None, "parts": None})
                    for kind in ("whole", "parts"):
                        if figures[kind] and (kept[kind] is None or figures[kind]["s"] < kept[kind]["s"]):
                            kept[kind] = figures[kind]
    return best


def main() -> None:
    parser = command_line(__doc__, "tiny sizes (a smoke test; figures mean nothing)")
    parser.add_argument("--rounds", type=int, default=3, help="processes per setting, taken in turns")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(measure(options.quick)))
        return
    best = run(options.quick, 1 if options.quick else options.rounds)
    print(f"{'graph':36s} {'setting':20s} {'whole ms':>9s} {'parts ms':>9s} {'ratio':>6s} "
          f"{'cpu ms':>7s} {'parts cpu':>9s} {'threads':>7s}")
    for graph in next(iter(best.values())):
        for label in SETTINGS:
            whole, parts = best[label][graph]["whole"], best[label][graph]["parts"]
            summed = (f"{parts['s'] * 1e3:9.3f} {whole['s'] / parts['s']:6.2f}" if parts else f"{'-':>9s} {'-':>6s}")
            print(f"{graph:36s} {label:20s} {whole['s'] * 1e3:9.3f} {summed} {whole['cpu_s'] * 1e3:7.2f} "
                  f"{parts['cpu_s'] * 1e3 if parts else float('nan'):9.2f} {whole['threads']:7d}")
    print(f"wrote {write_results(options.json, 'blas_threads', {'settings': best}, options.quick)}")


if __name__ == "__main__":
    main()
