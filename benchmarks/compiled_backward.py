"""Backward-heavy benchmark: a deep, narrow MLP whose every parameter has a
gradient-clipping hook, its backward on the tape against compiled autograd + inductor.

    python -P benchmarks/compiled_backward.py [--quick] [--json OUT]

The model: 20 Linear layers of width 64 with ReLU between them, a batch of 64 rows, the
loss `model(x).sum()`, and on every weight and bias `p.register_hook(lambda g:
np.clip(g, -1, 1))`. What is timed is `loss.backward()` (the forward runs first, not
timed), by engine:

* `tape`: the forward on the tape; the engine runs the backward node by node, each
  hook a Python call;
* `AOT (compiled forward)`: the forward compiled by `pyjit.compile` (inductor), whose
  backward is one AOT node; the hooks and `.grad` accumulation run on the tape;
* `compiled autograd (tape forward)`: the tape's forward, and the backward inside
  `pyjit.compiled_autograd.enable(pyjit.compile(backend="inductor"))`: every tape node,
  hook and accumulation captured into one graph that inductor compiles;
* `compiled autograd (compiled forward)`: both, as in the tutorial: the AOT node's
  backward graph inlined with the hooks and accumulations into one graph.

Per row: the median backward time over timed rounds after warm-up (min-max; the
engines take turns, one backward each per round, so the machine's load falls on all
alike), the ratio to the tape's median in the same run and the ratio of the minimums
(on a loaded machine a longer backward is preempted more often, so the medians favour
the shorter ones), and the first backward (for compiled autograd: capturing the
backward and compiling it; for AOT, the forward's compile is not in it).
Each row checks its gradients against the tape's.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # NOTE in measure.py's header

import numpy as np  # noqa: E402

import pyjit  # noqa: E402
from pyjit import nn  # noqa: E402
from results import command_line, write_results  # noqa: E402

DEPTH, WIDTH = 20, 64


class DeepMLP(nn.Module):
    def __init__(self, depth: int = DEPTH, width: int = WIDTH):
        super().__init__()
        layers = []
        for index in range(depth):
            layers.append(nn.Linear(width, width))
            if index < depth - 1:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def clip_gradient(grad):
    return np.clip(grad, -1.0, 1.0)


def make_model(seed: int = 0) -> DeepMLP:
    pyjit.manual_seed(seed)
    model = DeepMLP()
    for parameter in model.parameters():
        parameter.register_hook(clip_gradient)
    return model


def backward_step(model, x, forward_compiled: bool, compiled_autograd: bool):
    """One timed backward: the forward first (not timed), then backward."""
    forward = pyjit.compile(model, backend="inductor") if forward_compiled else model
    compiler = pyjit.compile(backend="inductor") if compiled_autograd else None

    def step() -> float:
        model.zero_grad()
        loss = forward(x).sum()
        started = time.perf_counter()
        if compiler is None:
            loss.backward()
        else:
            with pyjit.compiled_autograd.enable(compiler):
                loss.backward()
        return time.perf_counter() - started

    return step


def gradients(model) -> list[np.ndarray]:
    return [parameter.grad.numpy().copy() for parameter in model.parameters()]


def measure(steps: list, rounds: int) -> list[dict]:
    """Each step's first call, then rounds of one call of every step in turn, so that
    the load of the machine's other jobs falls on every engine alike."""
    firsts = [step() for step in steps]
    for _ in range(3):
        for step in steps:
            step()
    times = [[] for _ in steps]
    for _ in range(rounds):
        for step, taken in zip(steps, times):
            taken.append(step())
    return [{"median_ms": statistics.median(taken) * 1e3, "min_ms": min(taken) * 1e3, "max_ms": max(taken) * 1e3,
             "first_ms": first * 1e3} for first, taken in zip(firsts, times)]


# name, forward compiled, backward under compiled autograd
ENGINES = (("tape", False, False), ("AOT (compiled forward)", True, False),
           ("compiled autograd (tape forward)", False, True), ("compiled autograd (compiled forward)", True, True))


def main() -> None:
    parser = command_line(__doc__, "few rounds (a smoke test)")
    arguments = parser.parse_args()
    rounds = 5 if arguments.quick else 50
    x = pyjit.tensor(np.random.default_rng(0).standard_normal((64, WIDTH)).astype(np.float32))
    name = f"MLP {DEPTH}x{WIDTH}, clipping hooks, batch 64"
    pyjit.reset()
    models = [make_model() for _ in ENGINES]
    steps = [backward_step(model, x, forward_compiled, compiled_autograd)
             for model, (_, forward_compiled, compiled_autograd) in zip(models, ENGINES)]
    rows = [{"workload": name, "engine": engine, **timing}
            for (engine, _, _), timing in zip(ENGINES, measure(steps, rounds))]
    reference = gradients(models[0])
    for row, model in zip(rows, models):
        row["matches_tape"] = all(np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(gradients(model), reference))
        row["speedup"] = rows[0]["median_ms"] / row["median_ms"]
        row["speedup_min"] = rows[0]["min_ms"] / row["min_ms"]
        print(f"{name:40} {row['engine']:36} {row['median_ms']:8.3f} ms [{row['min_ms']:.3f}-{row['max_ms']:.3f}] "
              f"{row['speedup']:5.2f}x (min {row['speedup_min']:5.2f}x)  first {row['first_ms']:7.1f} ms  "
              f"gradients match the tape: {row['matches_tape']}", flush=True)
    print(f"wrote {write_results(arguments.json, 'compiled_backward', {'rows': rows}, arguments.quick)}")


if __name__ == "__main__":
    main()
