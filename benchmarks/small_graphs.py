"""Small graphs against NumPy: functions whose graphs are too small for fusion to gain
much (one op; the pieces around a data-dependent `if`), at 16, 16K and 1M float32
elements, compiled with pyjit's default backend and with `eager`. The target is that
pyjit never be more than 5% slower than NumPy at any of these sizes. Every result is
compared with NumPy's first; then NumPy and the compiled functions are timed in turns
(`pyjit._C.bench`, garbage collection off), and each figure is its quietest round's
median. `--sizes static` compiles each size on its own (`dynamic=False`), `--sizes
dynamic` makes every size symbolic from the first call (`dynamic=True`); by default the
sizes are static at first and symbolic once they change (NOTE(symbolic-sizes)). A second
table times linear layers `relu(x @ W + b)` (float32), a small one and larger ones,
whose product and epilogue the C launcher runs (NOTE(c-launcher-matmul)).
docs/benchmarks.md has the figures of one run.

    python -P benchmarks/small_graphs.py [--quick] [--sizes auto|static|dynamic] [--json PATH]
"""

import gc
import os
import sys

import numpy as np

# `python -P` keeps the script's folder off sys.path (NOTE in measure.py's header).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from results import command_line, write_results  # noqa: E402

from workloads import clipped_step  # noqa: E402

SIZES = (16, 16_384, 1_048_576)
QUICK_SIZES = (16, 1024)
ROUNDS = 7
ENGINES = ("inductor", "eager")


def add_one(x, y):
    return x + 1


def affine_tanh(x, y):
    return np.tanh(x) * 2.0 + y


FUNCTIONS = {"x + 1": add_one, "tanh(x)*2 + y": affine_tanh, "clipped_step (if)": clipped_step}


def linear_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


# name -> (x's shape, W's shape) of linear_relu
LAYERS = {"(16,64)@(64,64)": ((16, 64), (64, 64)), "(256,512)@(512,512)": ((256, 512), (512, 512)),
          "(16,128,512)@(512,512)": ((16, 128, 512), (512, 512))}
QUICK_LAYERS = ("(16,64)@(64,64)",)


def calls_for(size: int, quick: bool) -> int:
    """About 20 ms of NumPy work per round at the default sizes."""
    return 20 if quick else max(20, min(20_000, int(4e7 / size)))


# --sizes: the `dynamic` argument of pyjit.compile.
DYNAMIC = {"auto": None, "static": False, "dynamic": True}


def measure(quick: bool, sizes: str = "auto") -> list[dict]:
    import pyjit
    from pyjit import _C

    rows = []
    for name, fn in FUNCTIONS.items():
        for size in QUICK_SIZES if quick else SIZES:
            rng = np.random.default_rng(0)
            args = tuple(rng.standard_normal(size, dtype=np.float32) for _ in range(2))
            contenders = {"numpy": fn}
            for engine in ENGINES:
                compiled = pyjit.compile(fn, backend=engine, dynamic=DYNAMIC[sizes])
                if not np.allclose(compiled(*args), fn(*args), rtol=1e-5, atol=1e-6):
                    raise AssertionError(f"{name} at {size} elements under {engine} differs from NumPy's")
                contenders[engine] = compiled
            best = quietest(contenders, args, calls_for(size, quick))
            rows.append({"function": name, "size": size, **{f"{label}_s": best[label] for label in contenders}})
    return rows


def quietest(contenders: dict, args: tuple, calls: int) -> dict:
    """label -> the quietest round's median seconds per call, the contenders timed in turns."""
    from pyjit import _C

    best = {label: float("inf") for label in contenders}
    gc.disable()
    try:
        for _ in range(ROUNDS):
            for label, callable_ in contenders.items():
                best[label] = min(best[label], float(np.median(_C.bench(callable_, args, calls, 2))))
    finally:
        gc.enable()
    return best


def measure_layers(quick: bool) -> list[dict]:
    import pyjit

    rows = []
    for name in QUICK_LAYERS if quick else LAYERS:
        x_shape, w_shape = LAYERS[name]
        rng = np.random.default_rng(0)
        args = tuple(rng.standard_normal(shape, dtype=np.float32) for shape in (x_shape, w_shape, w_shape[1:]))
        compiled = pyjit.compile(linear_relu)
        # a stack's rows are one GEMM (NOTE(flat-matmul)): NumPy's bits for that product
        rows_by_w = linear_relu(args[0].reshape(-1, x_shape[-1]), *args[1:]).reshape(x_shape[:-1] + w_shape[1:])
        if not np.array_equal(compiled(*args), rows_by_w):
            raise AssertionError(f"linear_relu {name} differs from NumPy's")
        flops = 2 * np.prod(x_shape) * w_shape[1]
        best = quietest({"numpy": linear_relu, "inductor": compiled}, args, 20 if quick else max(20, int(2e9 / flops)))
        rows.append({"layer": name, **{f"{label}_s": seconds for label, seconds in best.items()}})
    return rows


def main() -> None:
    parser = command_line(__doc__, "tiny sizes and few calls (a smoke test)")
    parser.add_argument("--sizes", choices=DYNAMIC, default="auto",
                        help="static, symbolic, or static until they change (the default)")
    options = parser.parse_args()
    rows = measure(options.quick, options.sizes)
    print(f"{'function':20s} {'elements':>9s} {'numpy us':>9s}" + "".join(f" {e + ' us':>12s} {'vs numpy':>8s}"
                                                                         for e in ENGINES))
    for row in rows:
        line = f"{row['function']:20s} {row['size']:9d} {row['numpy_s'] * 1e6:9.2f}"
        for engine in ENGINES:
            line += f" {row[engine + '_s'] * 1e6:12.2f} {row['numpy_s'] / row[engine + '_s']:7.2f}x"
        print(line)
    layers = measure_layers(options.quick)
    print(f"\n{'relu(x @ W + b)':24s} {'numpy us':>9s} {'inductor us':>12s} {'vs numpy':>8s}")
    for row in layers:
        print(f"{row['layer']:24s} {row['numpy_s'] * 1e6:9.2f} {row['inductor_s'] * 1e6:12.2f} "
              f"{row['numpy_s'] / row['inductor_s']:7.2f}x")
    document = {"sizes": options.sizes, "functions": rows, "layers": layers}
    print(f"wrote {write_results(options.json, 'small_graphs', document, options.quick)}")


if __name__ == "__main__":
    main()
