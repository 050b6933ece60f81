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


def _use_cache(cache: str) -> None:
    """Both pyjit's and torch's compile caches go under `cache` (torch reads its
    variable when it is imported, later)."""
    import pyjit

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "torch")
    pyjit.config.cache_dir = cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("run", "warm", "dispatch", "stream"))
    parser.add_argument("names", nargs="*", help="ENGINE [WORKLOAD]")
    parser.add_argument("--cache", help="the compile caches' folder")
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if options.task == "stream":
        result = stream(options.quick)
    else:
        _use_cache(options.cache)
        engine = all_engines()[options.names[0]]
        if options.task == "dispatch":
            result = dispatch(engine, options.quick)
        else:
            result = (run if options.task == "run" else warm)(engine, BY_NAME[options.names[1]], options.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
