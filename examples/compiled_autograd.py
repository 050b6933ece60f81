"""Compiled autograd: capturing a larger backward graph (SPEC section 5, example 1).

The PyTorch tutorial "Compiled Autograd: Capturing a larger backward graph for
torch.compile", step by step, on pyjit (`torch._dynamo.config` is `pyjit.config`,
`torch._dynamo.compiled_autograd` is `pyjit.compiled_autograd`, `TORCH_LOGS` is
`PYJIT_LOGS` or `pyjit.set_logs`):

1. Basic usage: `pyjit.config.compiled_autograd = True`, then a compiled
   `train(model, x)` whose `loss.backward()` is captured whole by compiled autograd and
   compiled by the same `pyjit.compile`.
2. The logs: `compiled_autograd` prints the captured backward graph, whose inlined AOT
   backward nodes are named `aot0_...`.
3. The forward and backward compiled with different flags: `pyjit.compile(lambda:
   loss.backward(), fullgraph=True)()`, and `pyjit.compiled_autograd.enable(...)`.
4. Forward graph breaks do not split the backward: two `pyjit.graph_break()` calls give
   three backward graphs without compiled autograd and one with it.
5. A tensor hook, `x.register_hook(lambda grad: grad + 10)`, is captured.
6. Recompiles: a new autograd node (add, sub, mul, div) and changed shapes (10, 100,
   10), with the `compiled_autograd_verbose` log lines the tutorial shows.

Each step checks its gradients against the values the math gives.

    python -P examples/compiled_autograd.py
"""

import logging

import numpy as np

import pyjit
from pyjit.utils import counters


class Model(pyjit.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = pyjit.nn.Linear(10, 10)

    def forward(self, x):
        return self.linear(x)


class LogLines(logging.Handler):
    """The messages of some pyjit logs, collected while they also print to stderr."""

    def __init__(self, *names):
        super().__init__()
        self.names, self.lines = names, []

    def __enter__(self):
        pyjit.set_logs(**dict.fromkeys(self.names, True))
        for name in self.names:
            logging.getLogger(f"pyjit.{name}").addHandler(self)
        return self.lines

    def __exit__(self, *exc_info):
        for name in self.names:
            logging.getLogger(f"pyjit.{name}").removeHandler(self)
        pyjit.set_logs()

    def emit(self, record):
        self.lines.append(record.getMessage())


def check_linear_grads(model, x):
    """d sum(W x + b) / dW = x in every row, and / db = 1."""
    assert np.allclose(model.linear.weight.grad.numpy(), np.broadcast_to(x.numpy(), (10, 10)), rtol=1e-5)
    assert np.allclose(model.linear.bias.grad.numpy(), 1.0, rtol=1e-6)


def basic_usage():
    print("1. Basic usage")
    model = Model()
    x = pyjit.randn(10)

    pyjit.config.compiled_autograd = True

    @pyjit.compile
    def train(model, x):
        loss = model(x).sum()
        loss.backward()

    counters.clear()
    train(model, x)
    check_linear_grads(model, x)
    assert not counters["graph_break"], counters["graph_break"]  # backward() is captured, not a break
    print(f"   train(model, x): no graph break; {counters['stats']['unique_graphs']} graphs "
          "(the forward, and the backward compiled autograd captured)")
    return model, x, train


def inspect_logs(model, x, train):
    print("2. Inspecting the compiled autograd logs (PYJIT_LOGS=compiled_autograd)")
    pyjit.reset()
    model.zero_grad()
    with LogLines("compiled_autograd") as lines:
        train(model, x)
    check_linear_grads(model, x)
    text = "\n".join(lines)
    assert "aot0_" in text, text  # the forward's AOT backward graph 0, inlined
    print("   the captured graph (above, on stderr) names the inlined AOT backward's nodes aot0_*")


def different_flags():
    print("3. The forward and backward compiled with different flags")

    def train(model, x):
        model = pyjit.compile(model)
        loss = model(x).sum()
        pyjit.config.compiled_autograd = True
        pyjit.compile(lambda: loss.backward(), fullgraph=True)()

    model, x = Model(), pyjit.randn(10)
    train(model, x)
    check_linear_grads(model, x)

    def train(model, x):
        model = pyjit.compile(model)
        loss = model(x).sum()
        with pyjit.compiled_autograd.enable(pyjit.compile(fullgraph=True)):
            loss.backward()

    model = Model()
    train(model, x)
    check_linear_grads(model, x)
    print("   pyjit.compile(lambda: loss.backward(), fullgraph=True)() and compiled_autograd.enable(...): "
          "same gradients")


def graph_breaks():
    print("4. Graph breaks in the forward no longer split the backward")
    pyjit.config.compiled_autograd = False

    @pyjit.compile(backend="aot_eager")
    def fn(x):
        # 1st graph
        temp = x + 10
        pyjit.graph_break()
        # 2nd graph
        temp = temp + 10
        pyjit.graph_break()
        # 3rd graph
        return temp.sum()

    x = pyjit.randn(10, 10, requires_grad=True)
    counters.clear()
    loss = fn(x)

    # 1. base pyjit.compile: one AOT backward graph per forward graph
    loss.backward(retain_graph=True)
    assert counters["stats"]["unique_graphs"] == 3
    assert counters["aot"]["graphs"] == 3
    print(f"   without compiled autograd: {counters['stats']['unique_graphs']} graphs, each with its own "
          f"AOT backward graph")
    counters.clear()

    # 2. pyjit.compile with compiled autograd
    with LogLines("compiled_autograd") as lines, \
            pyjit.compiled_autograd.enable(pyjit.compile(backend="aot_eager")):
        loss.backward()

    # single graph for the backward
    assert counters["stats"]["unique_graphs"] == 1
    assert counters["compiled_autograd"]["captures"] == 1
    assert "aot0_" in "\n".join(lines)  # the sum's AOT backward; the two `+ 10`s pass the gradient on
    assert np.allclose(x.grad.numpy(), 2.0)  # two backward passes of d sum(x + 20) / dx
    print("   with compiled autograd: 1 graph for the whole backward")


def hooks():
    print("5. Backward hooks are captured")

    @pyjit.compile(backend="aot_eager")
    def fn(x):
        return x.sum()

    x = pyjit.randn(10, 10, requires_grad=True)
    x.register_hook(lambda grad: grad + 10)
    loss = fn(x)

    counters.clear()
    with LogLines("compiled_autograd") as lines, \
            pyjit.compiled_autograd.enable(pyjit.compile(backend="aot_eager")):
        loss.backward()

    assert "call_hook" in "\n".join(lines)
    # pyjit.compile inlines the hook into the backward graph: one graph, no break
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert np.allclose(x.grad.numpy(), 11.0)  # 1 from sum, + 10 from the hook
    print("   the graph calls the hook through a call_hook node, which pyjit.compile inlines; "
          "x.grad is 1 + 10 everywhere")


def recompiles():
    print("6. Common recompilation reasons")
    pyjit.reset()
    counters.clear()
    with LogLines("compiled_autograd_verbose") as lines:
        # 1. Due to changes in the autograd structure of the loss value
        pyjit.config.compiled_autograd = True
        x = pyjit.randn(10, requires_grad=True)
        for op in [np.add, np.subtract, np.multiply, np.divide]:
            loss = op(x, x).sum()
            pyjit.compile(lambda: loss.backward(), backend="eager")()
    new_nodes = [line for line in lines if line.startswith("Cache miss due to new autograd node")]
    for name in ("SubBackward", "MulBackward", "DivBackward"):  # each a node the graphs before lack
        assert any(name in line for line in new_nodes), lines
    assert counters["compiled_autograd"]["compiles"] == 4  # one backward graph per op
    print("   " + "\n   ".join(new_nodes))
    counters.clear()

    with LogLines("compiled_autograd_verbose") as lines:
        # 2. Due to tensors changing shapes
        pyjit.config.compiled_autograd = True
        for i in [10, 100, 10]:
            x = pyjit.randn(i, i, requires_grad=True)
            loss = x.sum()
            pyjit.compile(lambda: loss.backward(), backend="eager")()
            assert np.allclose(x.grad.numpy(), 1.0)
    changed = [line for line in lines if line.startswith("Cache miss due to changed shapes")]
    assert changed and all("as dynamic" in line for line in changed), lines
    assert counters["compiled_autograd"]["compiles"] == 2  # 10, then 100 with symbolic sizes, reused for 10
    print("   " + "\n   ".join(changed))
    pyjit.config.compiled_autograd = False


def main():
    model, x, train = basic_usage()
    inspect_logs(model, x, train)
    different_flags()
    graph_breaks()
    hooks()
    recompiles()


if __name__ == "__main__":
    main()
