"""Gradients through a loop node (NOTE(loop-gradient)) against the unrolled tape: an RNN's
time loop (`h = tanh(W @ h + U @ x[t])` over t, loss `(h * h).sum()`, float64) run
plainly on the tape (each iteration's ops recorded) and compiled, where the loop is one
node whose backward reruns the loop and steps the body's joint graph back. Per engine:
the first call (compile included), the forward and the backward of a warm step (best of
the repeats), the memory the forward leaves held until backward and the peak of a step
(tracemalloc, which sees NumPy's allocations), and the largest gradient difference from
the tape. docs/autograd.md ("Loops") has the figures of one run.

    python -P benchmarks/loop_gradient.py [--steps 50,200] [--hidden 64] [--repeats 10]
"""

import argparse
import time
import tracemalloc

import numpy as np

import pyjit
from pyjit.utils import counters

ENGINES = ("tape", "eager", "aot_eager", "inductor")


def rnn_loss(W, U, h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return (h * h).sum()


def _leaves(steps: int, hidden: int):
    rng = np.random.default_rng(0)
    shapes = ((hidden, hidden), (hidden, 16), (hidden,), (steps, 16))
    return [pyjit.tensor(rng.normal(size=shape) / np.sqrt(shape[-1]), requires_grad=True) for shape in shapes]


def _step(fn, leaves) -> tuple[float, float, int, int]:
    """Forward and backward seconds, bytes held between them, peak bytes of the step."""
    for leaf in leaves:
        leaf.grad = None
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    loss = fn(*leaves)
    middle = time.perf_counter()
    held = tracemalloc.get_traced_memory()[0] - before
    loss.backward()
    end = time.perf_counter()
    return middle - start, end - middle, held, tracemalloc.get_traced_memory()[1] - before


def measure(engine: str, steps: int, hidden: int, repeats: int) -> dict:
    pyjit.reset()
    counters.clear()
    fn = rnn_loss if engine == "tape" else pyjit.compile(rnn_loss, backend=engine)
    leaves = _leaves(steps, hidden)
    start = time.perf_counter()
    fn(*leaves).backward()
    first = time.perf_counter() - start
    tracemalloc.start()
    runs = [_step(fn, leaves) for _ in range(repeats)]
    tracemalloc.stop()
    return {"engine": engine, "first_s": first, "forward_s": min(run[0] for run in runs),
            "backward_s": min(run[1] for run in runs), "held_bytes": min(run[2] for run in runs),
            "peak_bytes": min(run[3] for run in runs), "grads": [leaf.grad.numpy().copy() for leaf in leaves],
            "loops_captured": counters["stats"]["loops_captured"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="50,200", help="trip counts, comma-separated")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    options = parser.parse_args()
    print(f"RNN time loop, hidden {options.hidden}, inputs 16, float64; best of {options.repeats}")
    print(f"{'T':>4s} {'engine':>10s} {'loop node':>9s} {'first s':>8s} {'fwd ms':>7s} {'bwd ms':>7s} "
          f"{'held KiB':>9s} {'peak KiB':>9s} {'max |grad - tape|':>18s}")
    for steps in (int(step) for step in options.steps.split(",")):
        tape = None
        for engine in ENGINES:
            row = measure(engine, steps, options.hidden, options.repeats)
            tape = tape or row
            difference = max(float(np.max(np.abs(g - w))) for g, w in zip(row["grads"], tape["grads"]))
            print(f"{steps:4d} {engine:>10s} {'yes' if row['loops_captured'] else 'no':>9s} {row['first_s']:8.2f} "
                  f"{row['forward_s'] * 1e3:7.2f} {row['backward_s'] * 1e3:7.2f} {row['held_bytes'] / 1024:9.0f} "
                  f"{row['peak_bytes'] / 1024:9.0f} {difference:18.1e}")


if __name__ == "__main__":
    main()
