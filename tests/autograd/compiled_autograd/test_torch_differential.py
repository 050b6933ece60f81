"""Compiled autograd against torch's, on the tutorial's loops (SPEC section 5, example 1;
examples/compiled_autograd.py): a loss whose structure changes (add, sub, mul, div of
one tensor), then a loss whose sizes change (10, 100, 10), each backward run by
`pyjit.compile(lambda: loss.backward(), backend=...)()` under eager, aot_eager and
inductor. Compared: the cache misses compiled autograd's verbose log reports at each
step (which new autograd node, at which NodeCall; whether shapes changed) and the
gradients after each step, with compiled autograd and without it. Each torch check
(skipped without torch, which pyjit never depends on) has a framework-free twin: the
misses the tutorial shows and the gradients the math and the tape give."""

import dataclasses
import logging
import re
import warnings

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

BACKENDS = ["eager", "aot_eager", "inductor"]
OPS = ["add", "sub", "mul", "div"]  # NumPy's add, subtract, multiply, divide
SIZES = [10, 100, 10]
X = np.random.default_rng(7).uniform(0.5, 2.0, 10).astype(np.float32)  # away from 0: div's gradient is finite
MATRICES = [np.random.default_rng(size).standard_normal((size, size)).astype(np.float32) for size in SIZES]
# Float32 gradients of a sum and one pointwise op: a few roundings of 2**-24 each.
RTOL = ATOL = 1e-6

NEW_NODE = re.compile(r"Cache miss due to new autograd node: (?:torch::autograd::)?([A-Za-z]+?)\d* \(NodeCall (\d+)\)")
CHANGED_SHAPES = re.compile(r"Cache miss due to (?:changed shapes|\d+ changed tensor shapes)")

# The tutorial's misses, step by step: the first backward is all new (GraphRoot); sub,
# mul and div each replace add's node under the sum (NodeCall 2); the first sized loss
# differs at the sum (it reduces a matrix); 100 changes shapes; 10 again reuses the
# graph with dynamic sizes.
TUTORIAL = [("GraphRoot", 0), ("SubBackward", 2), ("MulBackward", 2), ("DivBackward", 2), ("SumBackward", 1),
            "changed shapes", None]


@dataclasses.dataclass
class Run:
    misses: list  # per step: (node name, NodeCall), "changed shapes" or None
    grads: list  # per step: the leaf's .grad after it


def step_misses(lines: list[str]):
    """What one backward's log lines say missed: a new node, changed shapes, or nothing."""
    nodes = [(match[1], int(match[2])) for match in map(NEW_NODE.match, lines) if match]
    shapes = [line for line in lines if CHANGED_SHAPES.match(line)]
    assert len(nodes) <= 1 and not (nodes and shapes), lines  # one miss per backward, named once
    return nodes[0] if nodes else "changed shapes" if shapes else None


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def take(self):
        taken, self.lines = self.lines, []
        return taken


def tutorial_loops(library, backend: str):
    """The two loops in `library` (Pyjit or Torch): each step's log lines and gradient."""
    lines, grads = [], []
    x = library.tensor(X)
    for op in OPS:
        loss = library.ops[op](x, x).sum()
        library.compile(lambda: loss.backward(), backend=backend)()
        lines.append(library.log.take())
        grads.append(library.numpy(x.grad))
    for matrix in MATRICES:
        x = library.tensor(matrix)
        loss = x.sum()
        library.compile(lambda: loss.backward(), backend=backend)()
        lines.append(library.log.take())
        grads.append(library.numpy(x.grad))
    return Run([step_misses(step) for step in lines], grads)


class Pyjit:
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    compile = staticmethod(pyjit.compile)
    tensor = staticmethod(lambda values: pyjit.tensor(values, requires_grad=True))
    numpy = staticmethod(lambda grad: grad.numpy().copy())
    log = Lines()

    @classmethod
    def run(cls, backend: str, compiled_autograd: bool) -> Run:
        pyjit.reset()
        logger = logging.getLogger("pyjit.compiled_autograd_verbose")
        pyjit.set_logs(compiled_autograd_verbose=True)
        logger.addHandler(cls.log)
        try:
            with pyjit.config.patch(compiled_autograd=compiled_autograd):
                return tutorial_loops(cls, backend)
        finally:
            logger.removeHandler(cls.log)
            pyjit.set_logs()
            cls.log.take()


@pytest.fixture(scope="module")
def torch_runs(one_torch_thread):
    """torch's runs of the loops, by (backend, compiled_autograd), each made once."""
    torch = pytest.importorskip("torch")

    class Torch:
        ops = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
        compile = staticmethod(torch.compile)
        tensor = staticmethod(lambda values: torch.tensor(values, requires_grad=True))
        numpy = staticmethod(lambda grad: grad.detach().numpy().copy())
        log = Lines()

    runs = {}

    def run(backend: str, compiled_autograd: bool) -> Run:
        if (backend, compiled_autograd) not in runs:
            torch._dynamo.reset()
            torch._dynamo.compiled_autograd.reset()
            logger = logging.getLogger("torch._dynamo.compiled_autograd.__compiled_autograd_verbose")
            torch._logging.set_logs(compiled_autograd_verbose=True)
            logger.addHandler(Torch.log)
            try:
                with torch._dynamo.config.patch(compiled_autograd=compiled_autograd), warnings.catch_warnings():
                    # torch's own code warns: Dynamo reads `.grad` of the loss, a non-leaf, while
                    # tracing, and inductor imports deprecated torch.jit names.
                    warnings.filterwarnings("ignore", "The .grad attribute of a Tensor that is not a leaf")
                    warnings.filterwarnings("ignore", category=DeprecationWarning)
                    runs[backend, compiled_autograd] = tutorial_loops(Torch, backend)
            finally:
                logger.removeHandler(Torch.log)
                torch._logging.set_logs()
                torch._dynamo.reset()
        return runs[backend, compiled_autograd]

    return run


@pytest.mark.parametrize("backend", BACKENDS)
def test_cache_misses_are_the_tutorials(backend):
    run = Pyjit.run(backend, compiled_autograd=True)
    assert run.misses == TUTORIAL
    assert counters["compiled_autograd"]["compiles"] == 6  # four structures, the first sizes, then dynamic ones


@pytest.mark.parametrize("backend", BACKENDS)
def test_cache_misses_are_torchs(backend, torch_runs):
    assert Pyjit.run(backend, compiled_autograd=True).misses == torch_runs(backend, True).misses


def closed_forms() -> list[np.ndarray]:
    """.grad after each step: d/dx of sum(x + x) = 2, of sum(x - x) = 0, of sum(x * x) = 2x
    and of sum(x / x) = 0, accumulated on one leaf; then a fresh leaf's d sum(x) / dx = 1."""
    steps = np.cumsum([np.full_like(X, 2.0), np.zeros_like(X), 2 * X, np.zeros_like(X)], axis=0)
    return [*steps, *(np.ones_like(matrix) for matrix in MATRICES)]


@pytest.mark.parametrize("compiled_autograd", [True, False], ids=["compiled_autograd", "tape"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_are_the_closed_forms_and_the_tapes(backend, compiled_autograd):
    run = Pyjit.run(backend, compiled_autograd)
    for got, want in zip(run.grads, closed_forms(), strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    if compiled_autograd:
        assert counters["compiled_autograd"]["compiles"] == 6
        tape = Pyjit.run(backend, compiled_autograd=False)
        for got, want in zip(run.grads, tape.grads, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        assert run.misses == [None] * len(TUTORIAL) and not counters["compiled_autograd"]


@pytest.mark.parametrize("compiled_autograd", [True, False], ids=["compiled_autograd", "tape"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_are_torchs(backend, compiled_autograd, torch_runs):
    ours, theirs = Pyjit.run(backend, compiled_autograd), torch_runs(backend, compiled_autograd)
    for got, want in zip(ours.grads, theirs.grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    assert ours.misses == theirs.misses  # without compiled autograd, neither logs a miss
