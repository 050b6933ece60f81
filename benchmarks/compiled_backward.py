"""Backward-heavy benchmark (issue 16): a deep, narrow MLP whose every parameter has a
gradient-clipping hook, its backward on the tape against compiled autograd + inductor.

    python -P benchmarks/compiled_backward.py [--quick] [--json OUT]

The model: 20 Linear layers of width 64 with ReLU between them, a batch of 64 rows, the
loss `model(x).sum()`, and on every weight and bias `p.register_hook(lambda g:
np.clip(g, -1, 1))`. The forward runs on the tape; what is timed is `loss.backward()`:

* `tape`: the engine runs node by node, each hook a Python call;
* `compiled autograd + inductor`: inside `pyjit.compiled_autograd.enable(
  pyjit.compile(backend="inductor"))`, the whole backward (the tape's nodes, the hooks,
  the `.grad` accumulation) is one graph compiled by inductor; the first backward
  captures and compiles it (its time is the row's `first` column), later ones look the
  graph up in the cache and run it.

Per row: the median backward time over timed rounds after warm-up (min-max), the ratio
to the tape's median in the same run, and the first backward. Every round checks the
gradients against the tape's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import pyjit
from pyjit import nn

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


def backward_step(model, x, engine: str):
    """One timed backward: the forward on the tape first (not timed), then backward."""
    compiler = pyjit.compile(backend="inductor") if engine != "tape" else None

    def step() -> float:
        model.zero_grad()
        loss = model(x).sum()
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


def measure(step, rounds: int) -> dict:
    first = step()
    for _ in range(2):
        step()
    times = [step() for _ in range(rounds)]
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "max_ms": max(times) * 1e3,
            "first_ms": first * 1e3}


ENGINES = ("tape", "compiled autograd + inductor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds (a smoke test)")
    parser.add_argument("--json", help="write the rows as JSON here")
    arguments = parser.parse_args()
    rounds = 5 if arguments.quick else 50
    x = pyjit.tensor(np.random.default_rng(0).standard_normal((64, WIDTH)).astype(np.float32))
    name = f"MLP {DEPTH}x{WIDTH}, clipping hooks, batch 64"
    rows, reference, baseline = [], None, None
    for engine in ENGINES:
        pyjit.reset()
        model = make_model()
        row = {"workload": name, "engine": engine, **measure(backward_step(model, x, engine), rounds)}
        grads = gradients(model)
        reference = reference or grads
        row["matches_tape"] = all(np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(grads, reference))
        baseline = baseline or row["median_ms"]
        row["speedup"] = baseline / row["median_ms"]
        rows.append(row)
        print(f"{name:40} {engine:30} {row['median_ms']:8.3f} ms [{row['min_ms']:.3f}-{row['max_ms']:.3f}] "
              f"{row['speedup']:5.2f}x  first {row['first_ms']:7.1f} ms  gradients match the tape: "
              f"{row['matches_tape']}", flush=True)
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
