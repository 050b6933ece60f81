"""What each `pyjit.compile` mode gains on the CPU (NOTE(modes) in pyjit/backends/inductor.py):
harness workloads (benchmarks/workloads.py), `x + 1` on 16 float32 elements and `x.T + y`
on (4096, 4096) float32 (NOTE(transposed-tiles)), run by NumPy and compiled with the
default mode, `reduce-overhead` and `max-autotune`, in one process
with a fresh kernel cache, timed in interleaved rounds by the native loop
`pyjit._C.bench` (the lowest of the rounds' medians), after checking every result against
NumPy's. Ratios are the default mode's time over the mode's. docs/benchmarks.md has the
figures of one run.

    python -P benchmarks/modes.py [--quick] [--workloads softmax,layer_norm,...] [--json PATH]
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from results import command_line, write_results  # noqa: E402
from workloads import BY_NAME  # noqa: E402

MODES = ("default", "reduce-overhead", "max-autotune")
DEFAULT_WORKLOADS = "softmax,layer_norm,gelu,mlp,transformer,column_stats,clipped_step"
ROUNDS = 7


def add_one(x):
    return x + 1


def transposed_add(x, y):
    return x.T + y


def cases(names: list[str], quick: bool):
    """(label, function, arguments, the arrays of a result to compare, tolerance)."""
    yield "x + 1, 16 float32", add_one, (np.ones(16, np.float32),), lambda result: [result], 1e-6
    side = 64 if quick else 4096  # NOTE(transposed-tiles): the default mode's tiles, max-autotune's choice
    square = np.random.default_rng(0).standard_normal((2, side, side), dtype=np.float32)
    yield f"x.T + y, {side}x{side}", transposed_add, tuple(square), lambda result: [result], 1e-6
    for name in names:
        workload = BY_NAME[name]
        case = workload.numpy(quick)
        yield name, case.fn, case.args, case.observe, workload.tolerance


def timed(fn, args, calls: int) -> float:
    from pyjit import _C

    return float(np.median(_C.bench(fn, args, calls, 1)))


def main() -> None:
    parser = command_line(__doc__, "tiny sizes (a smoke test; figures mean nothing)")
    parser.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    options = parser.parse_args()
    import pyjit

    with tempfile.TemporaryDirectory() as cache:
        pyjit.config.cache_dir = cache
        print(f"{'workload':20s} {'numpy ms':>12s}" + "".join(f" {mode + ' ms':>20s}" for mode in MODES)
              + "".join(f" {mode:>16s}" for mode in MODES[1:]))
        rows = []
        for label, fn, args, observe, tolerance in cases(options.workloads.split(","), options.quick):
            expected = [np.array(part) for part in observe(fn(*args))]
            compiled = {mode: pyjit.compile(fn, mode=mode) for mode in MODES}
            for mode, function in compiled.items():
                got = observe(function(*args))  # compiles (and, under max-autotune, times the variants)
                for part, want in zip(got, expected, strict=True):
                    np.testing.assert_allclose(part, want, rtol=tolerance, atol=tolerance, err_msg=f"{label} {mode}")
            seconds = timed(fn, args, 3)
            calls = 3 if options.quick else max(3, min(20000, int(0.05 / seconds)))
            rounds = {mode: [] for mode in ("numpy", *MODES)}
            for _ in range(ROUNDS):  # interleaved: a slow spell of the machine hits every mode
                rounds["numpy"].append(timed(fn, args, calls))
                for mode in MODES:
                    rounds[mode].append(timed(compiled[mode], args, calls))
            best = {mode: min(times) for mode, times in rounds.items()}
            rows.append({"workload": label, **{f"{mode}_s": seconds for mode, seconds in best.items()}})
            print(f"{label:20s} {best['numpy'] * 1e3:12.4f}" + "".join(f" {best[mode] * 1e3:20.4f}" for mode in MODES)
                  + "".join(f" {best['default'] / best[mode]:15.2f}x" for mode in MODES[1:]), flush=True)
    print(f"wrote {write_results(options.json, 'modes', {'modes': list(MODES), 'rows': rows}, options.quick)}")


if __name__ == "__main__":
    main()
