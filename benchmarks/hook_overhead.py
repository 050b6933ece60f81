"""What pyjit's frame hook costs per call, timed with the native loop `pyjit._C.bench`.

  a) a cache hit of a hand-compiled identity function on a tiny array, against the plain call;
  b) the cost of each extra guarded array argument (1, 2, 4, 8 arguments);
  c) plain Python calls while a hook is installed but every frame is marked SKIP, for
     calls made from Python and calls made from C;
  d) a hit with 8 cache entries (8 dtypes): the last- and first-added entry, and all 8 in turn.

The "compiled" functions are built by hand, so that only the frame hook is measured
(benchmarks/run.py times the whole pyjit.compile path): a CompiledFunction whose callback
guards every argument with an "array" check and runs a copy of the function's code.
docs/benchmarks.md explains every row and column.

    python -P benchmarks/hook_overhead.py [--quick] [--json PATH]
"""

import gc
import os
import statistics
import sys
from dataclasses import dataclass

# `python -P` keeps the script's folder off sys.path (NOTE in measure.py's header).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from pyjit import _C  # noqa: E402
from results import command_line, write_results  # noqa: E402

GOAL_HIT_NS = 1000  # SPEC section 4: under 1 us above the plain call (torch.compile: ~15 us)
GOAL_PER_ARG_NS = 50
ARG_COUNTS = (1, 2, 4, 8)
WIDE_CACHE_DTYPES = ("float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8")
ROUNDS = 20
WORKLOAD_ITERATIONS = 50
WORKLOAD_FRAMES = 1 + 3 * WORKLOAD_ITERATIONS


@dataclass
class Row:
    """One contender's seconds per timed call, and the plain row it is compared with.
    `per` is how many calls (or frames) one timed call stands for; overhead is per one."""

    label: str
    median: float  # the lowest of the rounds' medians: see `timed`
    min: float
    max: float
    baseline: "Row | None" = None
    per: int = 1

    @property
    def overhead_ns(self) -> float | None:
        if self.baseline is None:
            return None
        return (self.median - self.baseline.median) / self.per * 1e9

    def to_json(self) -> dict:
        return {"label": self.label, "median_ns": self.median * 1e9,
                "min_ns": self.min * 1e9, "max_ns": self.max * 1e9,
                "overhead_ns": self.overhead_ns,
                "ratio": self.median / self.baseline.median if self.baseline else None}


def bench_round(fn, args, n, hook) -> list[float]:
    """fn(*args) timed n times by the native loop after n // 10 untimed warm-up calls,
    with `hook` installed by set_eval_frame if it is not None."""
    gc.disable()
    previous = _C.set_eval_frame(hook) if hook is not None else None
    try:
        return _C.bench(fn, args, n, max(n // 10, 1))
    finally:
        if hook is not None:
            _C.set_eval_frame(previous)
        gc.enable()


def timed(n, plain, *others, per=1) -> list[Row]:
    """Times each contender, (label, fn, args) or (label, fn, args, hook), n calls in all,
    in ROUNDS rounds that take turns, so that a slow spell of the shared machine hits all
    of them alike. A row's median is its quietest round's median. The others are compared
    with `plain`, each timed call standing for `per` calls or frames."""
    contenders = [plain, *others]
    rounds = [[] for _ in contenders]
    for _ in range(ROUNDS):
        for samples, (label, fn, args, *hook) in zip(rounds, contenders):
            samples.append(bench_round(fn, args, max(n // ROUNDS, 10), hook[0] if hook else None))
    rows = []
    for (label, *_), samples in zip(contenders, rounds):
        every = [seconds for round_samples in samples for seconds in round_samples]
        rows.append(Row(label, min(map(statistics.median, samples)), min(every), max(every)))
    for row in rows[1:]:
        row.baseline, row.per = rows[0], per
    return rows


def identity1(a):
    return a


def identity2(a, b):
    return a


def identity4(a, b, c, d):
    return a


def identity8(a, b, c, d, e, f, g, h):
    return a


class HandCompiled:
    """`fn` in a CompiledFunction whose callback guards every argument as a C-contiguous
    array of its type, dtype and shape, and runs a copy of fn's code (same bytecode plus
    one unused constant: a distinct code object with the same signature)."""

    def __init__(self, fn, arg_lists):
        _C.reset()  # every measurement starts from empty caches
        self.fn = fn
        self.misses = 0
        code = fn.__code__
        self.transformed = code.replace(co_consts=code.co_consts + ("pyjit: transformed",))
        self.compiled = _C.CompiledFunction(fn, self.on_miss)
        for args in arg_lists:  # each call must miss and add one cache entry
            self.compiled(*args)
        entries = len(_C.cache_entries(code))
        if self.misses != len(arg_lists) or entries != len(arg_lists):
            raise RuntimeError(f"{fn.__name__}: expected {len(arg_lists)} misses and entries, "
                               f"got {self.misses} misses and {entries} entries")
        self.expected_misses = self.misses

    def on_miss(self, frame):
        if frame.f_code is not self.fn.__code__:
            return _C.SKIP
        self.misses += 1
        names = frame.f_code.co_varnames
        sources = [("local", slot, names[slot]) for slot in range(len(frame.args))]
        checks = [("array", slot, {"type": type(value), "dtype": value.dtype,
                                   "shape": value.shape, "strides": "C"})
                  for slot, value in enumerate(frame.args)]
        return _C.GuardProgram(sources, checks), self.transformed

    def check_all_hit(self) -> None:
        """Raises if any call since the cache was populated missed it."""
        if self.misses != self.expected_misses:
            missed = self.misses - self.expected_misses
            raise RuntimeError(f"{self.fn.__name__}: {missed} cache misses while timing hits")


def measure_cache_hit(n) -> list[Row]:
    """a) compiled identity on one tiny array vs the plain call."""
    args = (np.zeros(16, np.float32),)
    hand = HandCompiled(identity1, [args])
    rows = timed(n, ("plain call", identity1, args), ("compiled, cache hit", hand.compiled, args))
    hand.check_all_hit()
    return rows


def measure_per_argument(n) -> list[Row]:
    """b) overhead with 1, 2, 4 and 8 guarded array arguments."""
    rows = []
    for count, fn in zip(ARG_COUNTS, (identity1, identity2, identity4, identity8)):
        args = tuple(np.zeros(16, np.float32) for _ in range(count))
        hand = HandCompiled(fn, [args])
        rows += timed(n, (f"{count} arg(s), plain", fn, args),
                      (f"{count} arg(s), compiled", hand.compiled, args))
        hand.check_all_hit()
    return rows


def _leaf(i):
    return i + 1


def _middle(i):
    return _leaf(i) * 2


def python_workload(iterations=WORKLOAD_ITERATIONS):
    """Python-to-Python calls: 1 + 3 * iterations function frames."""
    total = 0
    for i in range(iterations):
        total += _middle(i) - _leaf(i)
    return total


def map_workload(values=range(WORKLOAD_FRAMES - 1)):
    """The same number of frames, each called from C (map), where CPython never inlines."""
    return list(map(_leaf, values))


def skip_everything(frame):
    return _C.SKIP


def measure_skipped_hook(n) -> list[Row]:
    """c) the workloads with no hook vs with a hook whose callback marks every code SKIP
    (the first hooked call, untimed, marks them)."""
    rows = []
    for kind, workload in (("py->py", python_workload), ("C->py", map_workload)):
        rows += timed(n, (f"{kind} calls, no hook", workload, ()),
                      (f"{kind} calls, hook (per frame)", workload, (), skip_everything),
                      per=WORKLOAD_FRAMES)
    codes = [fn.__code__ for fn in (python_workload, map_workload, _middle, _leaf)]
    if not all(_C.is_skipped(code) for code in codes):
        raise RuntimeError("the workloads' codes were not marked SKIP by the callback")
    return rows


def call_each(fn, arrays):
    for array in arrays:
        fn(array)


def measure_wide_cache(n) -> list[Row]:
    """d) 8 entries, one per dtype: hits on the last- and first-added entry, and round robin."""
    arrays = [np.zeros(16, dtype) for dtype in WIDE_CACHE_DTYPES]
    hand = HandCompiled(identity1, [(array,) for array in arrays])
    rows = timed(n, ("plain call", identity1, (arrays[0],)),
                 ("hit, last-added entry", hand.compiled, (arrays[-1],)),
                 ("hit, first-added entry", hand.compiled, (arrays[0],)))
    rows += timed(n // len(arrays), ("plain, 8 dtypes in turn", call_each, (identity1, arrays)),
                  ("hits, 8 dtypes in turn (per call)", call_each, (hand.compiled, arrays)),
                  per=len(arrays))
    hand.check_all_hit()
    return rows


def format_ns(ns) -> str:
    return f"{ns:8.0f} ns" if abs(ns) < 10_000 else f"{ns / 1000:8.1f} us"


def print_table(sections, summary) -> None:
    print(f"{'':37}{'median':>11}{'min':>11}{'max':>11}{'overhead':>12}{'ratio':>8}")
    for title, rows in sections.items():
        print(title)
        for row in rows:
            numbers = row.to_json()
            line = f"  {row.label:<35}" + "".join(
                format_ns(numbers[key]) for key in ("median_ns", "min_ns", "max_ns"))
            if row.baseline is not None:
                line += f" {format_ns(numbers['overhead_ns'])} {numbers['ratio']:7.2f}x"
            print(line)
    hit, slope = summary["hit_overhead_ns"], summary["per_argument_slope_ns"]
    print(f"cache-hit overhead {hit:.0f} ns (goal < {GOAL_HIT_NS} ns: "
          f"{'ok' if hit < GOAL_HIT_NS else 'MISSED'}); per extra array argument {slope:.1f} ns "
          f"(goal < {GOAL_PER_ARG_NS} ns: {'ok' if slope < GOAL_PER_ARG_NS else 'MISSED'})")


def main() -> None:
    options = command_line(__doc__, "10x fewer timed calls").parse_args()
    n = 20_000 if options.quick else 200_000
    workload_calls = max(n // 50, 1000)
    _C.bench(identity1, (None,), 10 * n)  # untimed: a CPU fresh from idle runs slow at first
    cache_hit, per_argument = measure_cache_hit(n), measure_per_argument(n)
    sections = {
        "a) cache hit, identity(float32[16])": cache_hit,
        "b) guarded array arguments": per_argument,
        f"c) {WORKLOAD_FRAMES}-frame workloads, all SKIP": measure_skipped_hook(workload_calls),
        "d) 8 cache entries, one per dtype": measure_wide_cache(n),
    }
    _C.reset()
    overheads = [row.overhead_ns for row in per_argument[1::2]]  # the compiled rows
    slope, _ = statistics.linear_regression(ARG_COUNTS, overheads)  # least squares
    summary = {"hit_overhead_ns": cache_hit[1].overhead_ns, "per_argument_slope_ns": slope}
    print(f"pyjit frame-hook overhead: {n} timed calls per row ({workload_calls} in c), "
          f"in {ROUNDS} interleaved rounds; median: the quietest round's")
    if options.quick:
        print("--quick: short rows, so one slow spell of the machine moves them; a smoke test")
    print_table(sections, summary)
    document = {"calls_per_row": n, "rounds": ROUNDS, "summary": summary,
                "sections": {title: [row.to_json() for row in rows] for title, rows in sections.items()}}
    print(f"wrote {write_results(options.json, 'hook_overhead', document, options.quick)}")


if __name__ == "__main__":
    main()
