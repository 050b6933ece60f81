"""One measurement in a fresh process, started by benchmarks/run.py: prints one JSON line.

    python -P benchmarks/measure.py run ENGINE WORKLOAD --cache DIR [--quick]
        first call (capture and compile, into the empty cache DIR), steady-state times
        from `pyjit._C.bench`, peak RSS, pyjit's graph counters, and the first call's
        result checked against NumPy's
    python -P benchmarks/measure.py warm ENGINE WORKLOAD --cache DIR [--quick]
        the first call again, in a new process that finds DIR populated
    python -P benchmarks/measure.py dispatch ENGINE --cache DIR [--quick]
        the compiled `x + 1` on 16 float32 elements against the plain call
    python -P benchmarks/measure.py stream [--quick]
        the copy bandwidth (the floor of the memory-bound workloads)
    python -P benchmarks/measure.py floor WORKLOAD [--quick]
        the vector-math floor: the workload's vector-math calls alone (NOTE(vector-math-floor))

NOTE(one-process-per-row): every (engine, workload) pair runs in a process of its own,
so its peak RSS is its own (the high-water mark cannot be reset in a process), its first
call really is the first (nothing compiled or imported by another engine), and one
engine's crash costs one row.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time

# `python -P` keeps the script's folder off sys.path (so a source tree's pyjit cannot
# shadow the installed one); the harness's own modules are found here explicitly.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from engines import Engine, all_engines  # noqa: E402
from workloads import BY_NAME, F32, Workload, traffic_bytes  # noqa: E402

# rounds, seconds of timed calls per row, the fewest timed calls per round
DEFAULT_TIMING = (5, 1.0, 2)
QUICK_TIMING = (2, 0.01, 1)
DISPATCH_CALLS = {False: 20_000, True: 500}
DISPATCH_ROUNDS = 10
STREAM_ELEMENTS = {False: 8 << 20, True: 1 << 16}


def bench_rounds(fn, args, calls: int, rounds: int) -> list[list[float]]:
    """`rounds` runs of `calls` timed calls each, by the native loop, garbage collection off."""
    from pyjit import _C

    gc.disable()
    try:
        return [_C.bench(fn, args, calls, 0) for _ in range(rounds)]
    finally:
        gc.enable()


def steady_state(fn, args, quick: bool) -> dict:
    """Times after warm-up: the median of the quietest round (a slow spell of the shared
    machine moves one round, not the figure), and the fastest and slowest call of all."""
    rounds, seconds, fewest = QUICK_TIMING if quick else DEFAULT_TIMING
    start = time.perf_counter()
    fn(*args)  # the warm-up call, which also sizes the rounds
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(fewest, min(10_000, int(seconds / rounds / once)))
    samples = bench_rounds(fn, args, calls, rounds)
    every = [call for round_samples in samples for call in round_samples]
    return {"median_ms": min(map(statistics.median, samples)) * 1e3, "min_ms": min(every) * 1e3,
            "max_ms": max(every) * 1e3, "timed_calls": len(every)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def pyjit_counters() -> dict:
    from pyjit.utils import counters

    breaks = counters["graph_break"]
    return {"graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(breaks.values()),
            "break_reasons": sorted(breaks)}


def compare(observed: list[np.ndarray], workload: Workload, quick: bool) -> dict:
    """The first call's result against NumPy's on fresh inputs (the same seeds)."""
    reference_case = workload.numpy(quick)
    reference = reference_case.observe(reference_case.fn(*reference_case.args))
    if [a.shape for a in observed] != [b.shape for b in reference]:
        return {"status": "wrong", "error": f"shapes {[a.shape for a in observed]}, "
                                            f"NumPy's {[b.shape for b in reference]}"}
    error = max(float(np.max(np.abs(a.astype(np.float64) - b), initial=0)) for a, b in zip(observed, reference))
    close = all(np.allclose(a, b, rtol=workload.tolerance, atol=workload.tolerance)
                for a, b in zip(observed, reference))
    return {"status": "ok" if close else "wrong", "max_abs_error": error}


def first_call(engine: Engine, workload: Workload, quick: bool):
    """(the engine's function, the case, seconds from compiling to the end of the first
    call, the first call's observed result). Building the inputs is not timed."""
    case = engine.case(workload, quick)
    start = time.perf_counter()
    fn = engine.compile(case.fn)
    result = fn(*case.args)
    seconds = time.perf_counter() - start
    return fn, case, seconds, case.observe(result)


def run(engine: Engine, workload: Workload, quick: bool) -> dict:
    fn, case, seconds, observed = first_call(engine, workload, quick)
    row = {"first_call_ms": seconds * 1e3, "traffic_bytes": traffic_bytes(case, observed)}
    if engine.pyjit:
        row.update(pyjit_counters())
    row.update(steady_state(fn, case.args, quick))
    row["peak_rss_mb"] = peak_rss_mb()  # before NumPy's reference adds its own arrays
    row.update(compare(observed, workload, quick) if engine.name != "numpy" else {"status": "ok"})
    return row


def warm(engine: Engine, workload: Workload, quick: bool) -> dict:
    row = {"warm_start_ms": first_call(engine, workload, quick)[2] * 1e3}
    if engine.pyjit:  # where its kernels came from (benchmarks/remote_cache.py reads them)
        from pyjit.utils import counters

        row["kernel_counters"] = dict(counters["inductor"])
    return row


def add_one(x):
    return x + 1


def dispatch(engine: Engine, quick: bool) -> dict:
    """Plain and compiled `x + 1` take turns in rounds; each one's median is its quietest
    round's. The compiled function's first call (an empty cache) is timed too."""
    x = np.zeros(16, F32)
    start = time.perf_counter()
    compiled = engine.compile(add_one)
    compiled(x)
    first = time.perf_counter() - start
    calls = DISPATCH_CALLS[quick]
    bench_rounds(add_one, (x,), 5 * calls, 1)  # untimed: a CPU fresh from idle runs slow at first
    plain, fast = [], []
    for _ in range(DISPATCH_ROUNDS):
        plain += bench_rounds(add_one, (x,), calls, 1)
        fast += bench_rounds(compiled, (x,), calls, 1)
    plain_ns, compiled_ns = (min(map(statistics.median, samples)) * 1e9 for samples in (plain, fast))
    return {"plain_ns": plain_ns, "compiled_ns": compiled_ns, "overhead_ns": compiled_ns - plain_ns,
            "first_call_ms": first * 1e3}


def stream(quick: bool) -> dict:
    """The copy into an array allocated once (no page faults of fresh memory): bytes read
    once plus written once, per second."""
    source = np.random.default_rng(0).standard_normal(STREAM_ELEMENTS[quick], dtype=F32)
    target = np.empty_like(source)
    rounds, seconds, fewest = QUICK_TIMING if quick else DEFAULT_TIMING
    samples = bench_rounds(np.copyto, (target, source), max(fewest, 20), rounds)
    copy_seconds = min(map(statistics.median, samples))
    return {"copy_bytes": 2 * source.nbytes, "copy_ms": copy_seconds * 1e3,
            "bandwidth_gbs": 2 * source.nbytes / copy_seconds / 1e9}


# NOTE(vector-math-floor): a workload bound by its transcendental functions cannot run
# faster than those calls alone. The floor is one C loop, compiled by pyjit's own build
# (its compiler and flags) with the C renderer's declarations (NOTE(vector-math-accuracy)),
# so each call is the libmvec variant the kernels call, on OpenMP's threads like theirs.
# It makes the workload's calls, as many as the workload makes (each over the whole
# array), on the arguments the workload passes them (computed by NumPy). The arguments
# are a block of FLOOR_BLOCK elements read again and again, and the sums of the calls'
# results go to a block on each thread's stack: both stay in L1, so no memory traffic
# is in the figure (the bandwidth floor covers that). An empty `asm` that may read the
# block after each pass keeps the calls from being optimized away. (Summing the results
# into one reduction instead ran ~15% slower than the kernels themselves.)
FLOOR_BLOCK = 2048
FLOOR_SOURCE = """
void vector_math_floor(char *const *buffers, const int64_t *sizes) {{
{arguments}
  const int64_t count = sizes[0];
#pragma omp parallel
  {{
    {ctype} sums[{block}];
#pragma omp for schedule(static)
    for (int64_t start = 0; start < count; start += {block}) {{
      const int64_t stop = count - start < {block} ? count - start : {block};
#pragma omp simd
      for (int64_t i = 0; i < stop; ++i) sums[i] = {calls};
      __asm__ volatile("" : : "r"(sums) : "memory");
    }}
  }}
}}
"""


def vector_math_floor(workload: Workload, quick: bool) -> dict:
    """The time of `workload`'s vector-math calls alone, timed like a row's steady state."""
    from pyjit.codegen.cfamily.types import ctype as c_type, suffix
    from pyjit.codegen.cfamily.vector_math import VECTOR_MATH
    from pyjit.codegen.cpu import build, renderer as c_renderer

    case = workload.numpy(quick)
    calls = workload.vector_math(*case.args)
    (count,) = {argument.size for _, argument in calls}
    dtype = calls[0][1].dtype
    ctype = c_type(dtype)
    arrays = list({id(argument): argument for _, argument in calls}.values())  # sin(x) and cos(x): one block
    number = {id(array): n for n, array in enumerate(arrays)}
    blocks = [np.ascontiguousarray(array.reshape(-1)[:FLOOR_BLOCK]) for array in arrays]
    source = c_renderer.PRELUDE + FLOOR_SOURCE.format(
        arguments="\n".join(f"  const {ctype} *restrict a{n} = (const {ctype} *)buffers[{n}];"
                            for n in range(len(blocks))),
        ctype=ctype, block=FLOOR_BLOCK,
        calls=" + ".join(f"{VECTOR_MATH[op]}{suffix(dtype)}(a{number[id(argument)]}[i])"
                         for op, argument in calls))
    kernel = build.load(source).kernel("vector_math_floor", len(blocks), 1)
    args = (*blocks, count)
    return {"vector_math_ms": steady_state(kernel, args, quick)["median_ms"],
            "vector_math": [op for op, _ in calls]}


def _use_cache(cache: str) -> None:
    """Both pyjit's and torch's compile caches go under `cache` (torch reads its
    variable when it is imported, later)."""
    import pyjit

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "torch")
    pyjit.config.cache_dir = cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("run", "warm", "dispatch", "stream", "floor"))
    parser.add_argument("names", nargs="*", help="ENGINE [WORKLOAD]")
    parser.add_argument("--cache", help="the compile caches' folder")
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if options.cache:
        _use_cache(options.cache)
    if options.task == "stream":
        result = stream(options.quick)
    elif options.task == "floor":
        result = vector_math_floor(BY_NAME[options.names[0]], options.quick)
    else:
        engine = all_engines()[options.names[0]]
        if options.task == "dispatch":
            result = dispatch(engine, options.quick)
        else:
            result = (run if options.task == "run" else warm)(engine, BY_NAME[options.names[1]], options.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
