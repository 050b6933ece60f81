"""Training-step benchmark: forward + backward + SGD on an MLP and a transformer block.

    python benchmarks/training.py [--quick] [--json OUT]

Engines: pyjit's eager tape, pyjit.compile with `inductor` and with `aot_eager` (each
with the default and the min-cut partitioner), and torch eager / torch.compile when
torch is installed. Each step is `loss = loss_fn(model(x), y); loss.backward();
optimizer.step(); optimizer.zero_grad()`, with the model's forward and the loss compiled
(the backward runs the compiled backward graph through the tape, NOTE(aot-runtime)).
Reported per engine: the median step time (and min/max) over timed rounds after
warm-up, the first step (compilation included), the bytes the compiled graphs save for
backward per step, and the peak traced memory of one step (tracemalloc sees NumPy's
allocations). Ratios are against pyjit's tape, measured in the same run.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
import tracemalloc

from pathlib import Path

import numpy as np

import pyjit
from pyjit import nn
from pyjit.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from dynamo_tutorial import TransformerBlock  # noqa: E402  (the tutorial's block, at the issue's sizes)
from results import command_line, write_results  # noqa: E402


class MLP(nn.Module):
    def __init__(self, sizes=(512, 1024, 1024, 10)):
        super().__init__()
        layers = []
        for index, (width, out) in enumerate(zip(sizes, sizes[1:])):
            layers.append(nn.Linear(width, out))
            if index < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def mlp_workload(quick: bool):
    batch = 64 if quick else 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 512)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    return "MLP 512-1024-1024-10, batch %d" % batch, MLP, x, y, "cross_entropy"


def block_workload(quick: bool):
    batch = 2 if quick else 8
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 128, 256)).astype(np.float32)
    target = rng.standard_normal((batch, 128, 256)).astype(np.float32)
    block = functools.partial(TransformerBlock, width=256, heads=4, hidden=1024)
    return "TransformerBlock d=256, 4 heads, %dx128" % batch, block, x, target, "mse_loss"


def pyjit_step(model_class, x, y, loss_name, backend, partitioner):
    pyjit.manual_seed(0)
    model = model_class()
    optimizer = pyjit.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = getattr(F, loss_name)
    inputs, target = pyjit.tensor(x), pyjit.tensor(y) if y.dtype.kind == "f" else y

    def forward(inputs, target):
        return loss_fn(model(inputs), target)

    if backend is not None:
        forward = pyjit.compile(forward, backend=backend)

    def step(backward=True):
        loss = forward(inputs, target)
        if backward:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return loss

    return step


def torch_step(model_class, x, y, loss_name, compiled):
    import torch

    torch.manual_seed(0)
    width = x.shape[-1]
    if model_class is MLP:
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                    torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    else:
        model = _torch_block(torch, width)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = getattr(torch.nn.functional, loss_name)
    inputs, target = torch.from_numpy(x), torch.from_numpy(y)

    def forward(inputs, target):
        return loss_fn(model(inputs), target)

    if compiled:
        forward = torch.compile(forward)

    def step():
        loss = forward(inputs, target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step


def _torch_block(torch, width):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
            self.attention = torch.nn.MultiheadAttention(width, 4, batch_first=True)
            self.feed_forward = torch.nn.Sequential(torch.nn.Linear(width, 4 * width),
                                                    torch.nn.GELU(approximate="tanh"),
                                                    torch.nn.Linear(4 * width, width))

        def forward(self, x):
            normed = self.norm1(x)
            attended, _ = self.attention(normed, normed, normed, need_weights=False)
            x = x + attended
            return x + self.feed_forward(self.norm2(x))

    return Block()


def measure(step, rounds: int) -> dict:
    started = time.perf_counter()
    step()
    first = time.perf_counter() - started
    for _ in range(2):
        step()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "max_ms": max(times) * 1e3,
            "first_ms": first * 1e3, "peak_mb": peak / 2**20}


ENGINES = [("pyjit tape", None, None), ("pyjit inductor (min-cut)", "inductor", "min_cut"),
           ("pyjit inductor (default)", "inductor", "default"), ("pyjit aot_eager (default)", "aot_eager", "default"),
           ("pyjit aot_eager (min-cut)", "aot_eager", "min_cut")]


def main() -> None:
    parser = command_line(__doc__, "small sizes, few rounds (a smoke test)")
    arguments = parser.parse_args()
    rounds = 3 if arguments.quick else 15
    rows = []
    for make in (mlp_workload, block_workload):
        name, model_class, x, y, loss_name = make(arguments.quick)
        baseline = None
        for engine, backend, partitioner in ENGINES:
            pyjit.reset()
            pyjit.config.aot_partitioner = partitioner  # read when the graphs compile, at the first step
            step = pyjit_step(model_class, x, y, loss_name, backend, partitioner)
            row = {"workload": name, "engine": engine, **measure(step, rounds)}
            row["saved_bytes"] = _saved_bytes(step)
            baseline = baseline or row["median_ms"]
            row["speedup"] = baseline / row["median_ms"]
            rows.append(row)
            _print(row)
        rows += _torch_rows(name, model_class, x, y, loss_name, rounds, baseline)
    print(f"wrote {write_results(arguments.json, 'training', {'rows': rows}, arguments.quick)}")


def _saved_bytes(step) -> int | None:
    """What the compiled graphs of one step save for backward: the saved values of the
    CompiledFunctionBackward nodes behind the loss, before backward frees them."""
    loss = step(backward=False)
    nodes = [node for node in pyjit.autograd.graph_nodes(loss) if node.kind == "aot"]
    total = sum(value.nbytes for node in nodes for _, value in node.saved_values()) if nodes else None
    loss.backward()
    return total


def _torch_rows(name, model_class, x, y, loss_name, rounds, baseline) -> list[dict]:
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"{name}: torch is not installed; no torch rows", file=sys.stderr)
        return []
    rows = []
    for engine, compiled in (("torch eager", False), ("torch.compile", True)):
        row = {"workload": name, "engine": engine,
               **measure(torch_step(model_class, x, y.astype(np.int64) if y.dtype.kind != "f" else y, loss_name,
                                    compiled), rounds)}
        row["speedup"] = baseline / row["median_ms"]
        rows.append(row)
        _print(row)
    return rows


def _print(row: dict) -> None:
    saved = row.get("saved_bytes")
    saved_text = f"{saved / 2**20:8.2f} MB saved" if saved is not None else " " * 17
    print(f"{row['workload']:42} {row['engine']:28} {row['median_ms']:8.2f} ms "
          f"[{row['min_ms']:.2f}-{row['max_ms']:.2f}] {row['speedup']:5.2f}x  first {row['first_ms']:7.0f} ms  "
          f"{saved_text}  peak {row['peak_mb']:7.1f} MB", flush=True)


if __name__ == "__main__":
    main()
