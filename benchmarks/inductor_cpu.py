"""The inductor backend on the CPU against NumPy, timed with the native loop `pyjit._C.bench`.

Workloads (docs/benchmarks.md explains every row and column):
  chain        sin(x) * cos(x) + exp(-x * x), 8M float32
  cos_cos      cos(cos(x)), 8M float32
  softmax      softmax over the rows of a (4096, 1024) float32 array
  layer_norm   layer norm over the rows of (4096, 1024) float32, with weight and bias
  gelu         GELU, tanh form, (4096, 4096) float32
  black_scholes  call prices of 4M options (float32 spot, strike, time; scalar rate, volatility)
  chain_16k, chain_16  the chain at 16384 and 16 elements (call overhead)
  copy         a copy of 8M float32 (the STREAM-like bandwidth floor)
then the cold compile of a small graph (an empty kernel cache) and the warm start from
the disk cache in a new process.

    python -P benchmarks/inductor_cpu.py [--quick] [--json PATH] [--peers]

--peers adds torch.compile (if installed; it compiles each workload for several seconds).
"""

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import pyjit
import pyjit.ops as ops
from pyjit import _C, config
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, TensorMeta

ROUNDS = 7
F32 = np.float32


# -- the workloads, in NumPy and as graphs of registry ops -------------------------------
def chain(x, m=np):
    return m.add(m.multiply(m.sin(x), m.cos(x)), m.exp(m.negative(m.multiply(x, x))))


def cos_cos(x, m=np):
    return m.cos(m.cos(x))


def softmax_numpy(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_numpy(x, w, b):
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + 1e-5) * w + b


def gelu(x, m=np):
    cubic = m.add(x, m.multiply(m.multiply(m.multiply(x, x), x), 0.044715))
    return m.multiply(m.multiply(x, 0.5), m.add(m.tanh(m.multiply(cubic, math.sqrt(2 / math.pi))), 1.0))


def black_scholes(spot, strike, years, m=np, erf=None, rate=0.02, volatility=0.3):
    """The Black-Scholes price of European calls; N(d) = (1 + erf(d / sqrt 2)) / 2."""
    erf = erf or _C.erf
    root = m.sqrt(years)
    d1 = m.divide(m.add(m.log(m.divide(spot, strike)), m.multiply(years, rate + 0.5 * volatility ** 2)),
                  m.multiply(root, volatility))
    d2 = m.subtract(d1, m.multiply(root, volatility))

    def cdf(d):
        return m.multiply(m.add(erf(m.multiply(d, math.sqrt(0.5))), 1.0), 0.5)

    discounted = m.multiply(strike, m.exp(m.multiply(years, -rate)))
    return m.subtract(m.multiply(spot, cdf(d1)), m.multiply(discounted, cdf(d2)))


def workloads(scale: int):
    """(name, NumPy function, graph builder, inputs, bytes read once + written once)."""
    rng = np.random.default_rng(0)
    big = (8 << 20) // scale
    x = rng.standard_normal(big).astype(F32)
    rows = rng.standard_normal((4096 // scale, 1024)).astype(F32)
    w, b = rng.standard_normal(1024).astype(F32), rng.standard_normal(1024).astype(F32)
    square = rng.standard_normal((4096 // scale, 4096)).astype(F32)
    options = (4 << 20) // scale
    spot = rng.uniform(10, 100, options).astype(F32)
    strike = rng.uniform(10, 100, options).astype(F32)
    years = rng.uniform(0.1, 3, options).astype(F32)
    small, tiny = x[:16384].copy(), x[:16].copy()
    return [
        ("chain", chain, lambda v: chain(v, ops), [x], 2 * x.nbytes),
        ("cos_cos", cos_cos, lambda v: cos_cos(v, ops), [x], 2 * x.nbytes),
        ("softmax", softmax_numpy, lambda v: ops.softmax(v), [rows], 2 * rows.nbytes),
        ("layer_norm", layer_norm_numpy, lambda v, p, q: ops.layer_norm(v, (1024,), p, q), [rows, w, b],
         2 * rows.nbytes),
        ("gelu", gelu, lambda v: gelu(v, ops), [square], 2 * square.nbytes),
        ("black_scholes", black_scholes, lambda s, k, t: black_scholes(s, k, t, ops, ops.erf), [spot, strike, years],
         4 * spot.nbytes),
        ("chain_16k", chain, lambda v: chain(v, ops), [small], 2 * small.nbytes),
        ("chain_16", chain, lambda v: chain(v, ops), [tiny], 2 * tiny.nbytes),
        ("copy", lambda v: v.copy(), lambda v: ops.astype(v, F32), [x], 2 * x.nbytes),
    ]


def graph_module(build, inputs) -> GraphModule:
    graph = Graph()
    nodes = [graph.placeholder(f"x{n}", TensorMeta(value.shape, value.dtype)) for n, value in enumerate(inputs)]
    graph.output(build(*nodes))
    return GraphModule(graph)


# -- timing --------------------------------------------------------------------------------
def timed(contenders, seconds: float) -> list[float]:
    """Seconds per call of each (fn, args): ROUNDS rounds taking turns, each round about
    `seconds` / ROUNDS per contender; a contender's time is its quietest round's median."""
    calls = []
    for fn, args in contenders:
        start = time.perf_counter()
        fn(*args)
        once = max(time.perf_counter() - start, 1e-7)
        calls.append(max(3, min(20000, int(seconds / ROUNDS / once))))
    medians = [[] for _ in contenders]
    gc.disable()
    try:
        for _ in range(ROUNDS):
            for (fn, args), n, samples in zip(contenders, calls, medians):
                samples.append(statistics.median(_C.bench(fn, tuple(args), n, max(1, n // 10))))
    finally:
        gc.enable()
    return [min(samples) for samples in medians]


def torch_contender(numpy_fn, name, inputs):
    """torch.compile of the NumPy function (torch traces NumPy code), or None."""
    try:
        import torch
    except ImportError:
        return None
    compiled = torch.compile(numpy_fn if name != "black_scholes" else
                             (lambda s, k, t: black_scholes(s, k, t, erf=_torch_erf)))
    compiled(*inputs)  # compile now, not while timing
    return compiled


def _torch_erf(x):
    import torch

    return torch.special.erf(torch.from_numpy(x)).numpy() if isinstance(x, np.ndarray) else torch.special.erf(x)


def run_workloads(scale: int, seconds: float, peers: bool) -> list[dict]:
    results = []
    bandwidth = None
    for name, numpy_fn, build, inputs, traffic in workloads(scale):
        module = graph_module(build, inputs)
        compiled = lookup_backend("inductor")(module, inputs)
        if compiled is module:
            raise RuntimeError(f"{name}: the inductor backend did not compile the graph")
        np.testing.assert_allclose(compiled(*inputs), numpy_fn(*inputs), rtol=2e-3, atol=2e-3)
        contenders = [(numpy_fn, inputs), (compiled, inputs)]
        peer = torch_contender(numpy_fn, name, inputs) if peers else None
        if peer is not None:
            contenders.append((peer, inputs))
        if name == "copy":  # also into an array allocated once: no page faults of fresh memory
            contenders.append((np.copyto, [np.empty_like(inputs[0]), inputs[0]]))
        times = timed(contenders, seconds)
        row = {"name": name, "numpy_ms": times[0] * 1e3, "inductor_ms": times[1] * 1e3,
               "speedup": times[0] / times[1], "kernels": len(compiled.kernels), "bytes": traffic,
               "torch_compile_ms": times[2] * 1e3 if peer is not None else None}
        if name == "copy":
            row["copyto_ms"] = times[-1] * 1e3
            bandwidth = traffic / min(times)
        results.append(row)
    for row in results:
        row["floor_ms"] = row["bytes"] / bandwidth * 1e3
        row["floor_ratio"] = row["inductor_ms"] / row["floor_ms"]
    return results


# -- compile times ---------------------------------------------------------------------------
WARM_START = """
import time
start = time.perf_counter()
import numpy as np
import pyjit
import pyjit.ops as ops
from pyjit import config
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, TensorMeta
config.cache_dir = {cache!r}
imported = time.perf_counter()
graph = Graph()
x = graph.placeholder("x", TensorMeta((16,), np.float32))
graph.output(ops.add(ops.multiply(ops.sin(x), ops.cos(x)), ops.exp(ops.negative(ops.multiply(x, x)))))
compiled = lookup_backend("inductor")(GraphModule(graph), [np.ones(16, np.float32)])
compiled(np.ones(16, np.float32))
print(imported - start, time.perf_counter() - imported)
"""


def compile_times() -> dict:
    """Cold: the chain graph compiled with an empty kernel cache (C compiler included)
    and called once; warm: the same in a new process that finds it in the disk cache."""
    with tempfile.TemporaryDirectory() as cache:
        previous, config.cache_dir = config.cache_dir, cache
        try:
            x = np.ones(16, F32)
            start = time.perf_counter()
            compiled = lookup_backend("inductor")(graph_module(lambda v: chain(v, ops), [x]), [x])
            compiled(x)
            cold = time.perf_counter() - start
        finally:
            config.cache_dir = previous
        # The child imports the pyjit this process imported (installed, or a source tree).
        package_parent = os.path.dirname(os.path.dirname(pyjit.__file__))
        environment = dict(os.environ, PYTHONPATH=package_parent)
        started = time.perf_counter()
        output = subprocess.run([sys.executable, "-P", "-c", WARM_START.format(cache=cache)], capture_output=True,
                                text=True, check=True, env=environment).stdout.split()
        process = time.perf_counter() - started
    return {"cold_compile_s": cold, "warm_import_s": float(output[0]), "warm_compile_s": float(output[1]),
            "warm_process_s": process}


def print_table(results: list[dict], times: dict) -> None:
    peers = any(row["torch_compile_ms"] is not None for row in results)
    head = f"{'workload':15s} {'numpy ms':>10s} {'inductor ms':>12s} {'speedup':>8s}"
    head += f" {'torch.compile ms':>17s}" if peers else ""
    print(head + f" {'floor ms':>9s} {'/floor':>7s} {'kernels':>8s}")
    for row in results:
        line = f"{row['name']:15s} {row['numpy_ms']:10.4f} {row['inductor_ms']:12.4f} {row['speedup']:7.2f}x"
        if peers:
            line += f" {row['torch_compile_ms']:17.4f}" if row["torch_compile_ms"] is not None else " " * 18
        print(line + f" {row['floor_ms']:9.4f} {row['floor_ratio']:6.2f}x {row['kernels']:8d}")
    copy = next(row for row in results if row["name"] == "copy")
    print(f"copy into a preallocated array (np.copyto): {copy['copyto_ms']:.4f} ms; the floor is the fastest copy")
    print(f"cold compile of a small graph (C compiler included): {times['cold_compile_s'] * 1e3:.0f} ms (goal < 1000)")
    print(f"warm start from the disk cache in a new process: {times['warm_compile_s'] * 1e3:.1f} ms to compile "
          f"and run (goal < 50), after {times['warm_import_s'] * 1e3:.0f} ms of imports; "
          f"{times['warm_process_s'] * 1e3:.0f} ms for the whole process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16x smaller arrays and shorter timing (a smoke test)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument("--peers", action="store_true", help="time torch.compile too, when installed")
    options = parser.parse_args()
    scale, seconds = (16, 0.2) if options.quick else (1, 2.0)
    results = run_workloads(scale, seconds, options.peers and not options.quick)
    times = compile_times()
    print(f"threads: {os.environ.get('OMP_NUM_THREADS', os.cpu_count())}, arrays scaled 1/{scale}")
    print_table(results, times)
    if options.json:
        with open(options.json, "w") as file:
            json.dump({"scale": scale, "workloads": results, **times}, file, indent=1)


if __name__ == "__main__":
    main()
