"""A JIT by hand, then the same steps done by pyjit (SPEC section 5, example 2).

1. `f(x, mod)` called with two module classes: two cache entries, each a guard and a
   transformed code object, readable through `pyjit.cache_entries`.
2. `cos(cos(x))` then `if x.mean() > 0.5`: a data-dependent branch breaks the graph;
   the graph before it runs, the branch is decided in Python, and a resume function
   (itself captured) continues on the taken side.
3. Shape [10], then [8]: the second call recompiles with the size symbolic (`s0`), and
   [5] reuses that entry.
4. A custom `autograd.Function` that saves only `x` and recomputes `cos` in backward
   gives the built-in gradient.
5. `make_fx` prints the joint graph of `cos(cos(x))`: its forward and, recorded from
   the tape's VJPs, its backward, as one flat graph of registry ops.
6. Every backend gives the same answer, and the same gradient: compiled for a tensor
   that requires grad, `cos(cos(x))`'s backward node saves only `x` under the min-cut
   partitioner of `aot_eager` and `inductor` (two values, `x` and `cos(x)`, under
   `aot_eager_default_partitioner`).

    python -P examples/jit_by_hand.py
"""

import numpy as np

import pyjit
from pyjit.utils import counters


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


class Shift:
    def __init__(self, offset):
        self.offset = offset

    def __call__(self, x):
        return x + self.offset


def f(x, mod):
    return np.sin(mod(x))


def branchy(x):
    y = np.cos(np.cos(x))
    if y.mean() > 0.5:
        return y * 2
    return y - 1


def exp_twice(x):
    return np.exp(x) * 2


class CosCos(pyjit.autograd.Function):
    """cos(cos(x)), saving only x: backward recomputes cos(x) instead of keeping it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.cos().cos()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.cos().sin() * x.sin())


def section(title):
    print(f"\n=== {title}")


def two_module_classes():
    section("f(x, mod) with two module classes")
    compiled = pyjit.compile(f, backend="eager")
    x = np.linspace(0.0, 1.0, 10)
    for mod in (Scale(2.0), Shift(0.5)):
        assert np.array_equal(compiled(x, mod), f(x, mod))
    entries = pyjit.cache_entries(compiled)
    assert len(entries) == 2
    for guard, code in entries:
        print(guard)
        print("transformed code constants:", [const for const in code.co_consts if const is not None][:3], "\n")
    assert "type(mod) is __main__.Shift" in entries[0][0] and "type(mod) is __main__.Scale" in entries[1][0]


def graph_break_and_resume():
    section("a data-dependent branch breaks the graph and resumes")
    explanation = pyjit.explain(branchy)(np.linspace(0.0, 1.0, 10))
    print(explanation)
    assert explanation.graph_break_count == 1 and explanation.graph_count == 2
    compiled = pyjit.compile(branchy, backend="eager")
    for x in (np.zeros(10), np.full(10, 3.0)):  # one input per side of the branch
        assert np.array_equal(compiled(x), branchy(x))


def dynamic_shapes():
    section("shape [10], then [8]: the size becomes symbolic")
    compiled = pyjit.compile(exp_twice, backend="eager")
    for size in (10, 8, 5):
        x = np.linspace(0.0, 1.0, size)
        assert np.array_equal(compiled(x), exp_twice(x))
    entries = pyjit.cache_entries(compiled)
    for guard, _ in entries:
        print(guard, "\n")
    assert len(entries) == 2 and "s0" in entries[0][0] and "(10,)" in entries[1][0]


def custom_function():
    section("a custom autograd.Function that recomputes cos in backward")
    values = np.linspace(-2.0, 2.0, 7)
    custom, builtin = pyjit.tensor(values, requires_grad=True), pyjit.tensor(values, requires_grad=True)
    CosCos.apply(custom).sum().backward()
    builtin.cos().cos().sum().backward()
    print("custom grad: ", np.round(custom.grad.numpy(), 6))
    print("builtin grad:", np.round(builtin.grad.numpy(), 6))
    np.testing.assert_allclose(custom.grad.numpy(), builtin.grad.numpy(), rtol=1e-12)


def cos_cos_and_its_gradient(x):
    y = x.cos().cos()
    (grad,) = pyjit.autograd.grad(y.sum(), x)
    return y, grad


def joint_graph():
    section("make_fx: the joint forward and backward graph of cos(cos(x))")
    module = pyjit.make_fx(cos_cos_and_its_gradient)(pyjit.randn(4, requires_grad=True))
    print(module.code)
    ops = [node.target.name for node in module.graph.calls()]
    assert ops[:2] == ["cos", "cos"] and ops.count("sin") == 2  # the forward, then d cos = -sin twice
    values = np.linspace(-2.0, 2.0, 4).astype(np.float32)
    y, grad = module(values)
    custom = pyjit.tensor(values, requires_grad=True)
    CosCos.apply(custom).sum().backward()
    np.testing.assert_allclose(grad, custom.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(y, np.cos(np.cos(values)), rtol=1e-6)


def backends_agree():
    section("every backend gives the same answer")
    x = np.linspace(-3.0, 3.0, 1000).astype(np.float32)
    want = np.cos(np.cos(x))
    for backend in pyjit.list_backends(exclude_tags=None):
        got = pyjit.compile(lambda x: np.cos(np.cos(x)), backend=backend)(x)
        np.testing.assert_allclose(got, want, rtol=1e-6)  # inductor's vector cos is within a few ULP
        print(f"{backend}: max difference {np.abs(got - want).max():.2e}")
    values = np.linspace(-2.0, 2.0, 7)
    builtin = pyjit.tensor(values, requires_grad=True)
    builtin.cos().cos().sum().backward()
    for backend in ("eager", "aot_eager", "aot_eager_default_partitioner", "inductor"):
        pyjit.reset()
        tensor = pyjit.tensor(values, requires_grad=True)
        out = pyjit.compile(lambda x: x.cos().cos(), backend=backend)(tensor)
        saved = [list(value.shape) for value in out.grad_fn.saved_tensors]
        assert backend == "eager" or len(saved) == (2 if backend == "aot_eager_default_partitioner" else 1)
        out.sum().backward()
        np.testing.assert_allclose(tensor.grad.numpy(), builtin.grad.numpy(), rtol=1e-12)
        print(f"{backend}: grad_fn {out.grad_fn.name()}, saved {saved}, gradient as the tape's")


def main():
    two_module_classes()
    graph_break_and_resume()
    dynamic_shapes()
    custom_function()
    joint_graph()
    backends_agree()
    print("\ncounters:", dict(counters["stats"]))


if __name__ == "__main__":
    main()
