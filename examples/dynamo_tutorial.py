"""The torch.compile tutorial, on NumPy arrays and pyjit tensors (SPEC section 5, example 3).

The three ways to call `compile`, the four modes, listing backends, `explain` on a
function with a `print` and on one with a data-dependent `if`, `fullgraph=True`
refusing the `print`, `config.patch`, and a transformer block (MultiheadAttention,
LayerNorm, GELU feed-forward) timed eagerly and compiled in each mode, with what the
time goes to: the matrix products (NumPy's BLAS, compiled or not) and the rest (fused
into a few C kernels), so it shows what compiling gains on the CPU and why not more.

    python -P examples/dynamo_tutorial.py [--quick]

--quick uses a batch of 2 instead of 16 (the tests run it so).
"""

import statistics
import sys
import time

import numpy as np

import pyjit
from pyjit import nn

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def foo(x, y):
    a = np.sin(x)
    b = np.cos(y)
    return a + b


class TinyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(100, 10)

    def forward(self, x):
        return nn.functional.relu(self.linear(x))


def with_print(a, b):
    x = a / (np.abs(a) + 1)
    print("woo")
    return x * b


def with_branch(a, b):
    x = a / (np.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def three_ways_to_compile():
    print("=== three ways to call compile")
    x, y = np.random.default_rng(0).standard_normal((2, 10, 10))
    opt_foo1 = pyjit.compile(foo)

    @pyjit.compile
    def opt_foo2(x, y):
        return foo(x, y)

    module = TinyModule()
    opt_module = pyjit.compile(module)
    np.testing.assert_allclose(opt_foo1(x, y), foo(x, y), rtol=1e-6)
    np.testing.assert_allclose(opt_foo2(x, y), foo(x, y), rtol=1e-6)
    t = pyjit.randn(10, 100)
    np.testing.assert_allclose(opt_module(t).numpy(), module(t).numpy(), rtol=1e-6)
    print("pyjit.compile(foo), @pyjit.compile, pyjit.compile(module): all agree with eager")


def modes_and_backends():
    print("\n=== modes and backends")
    for mode in MODES:
        print(f"{mode}: {pyjit.list_mode_options(mode)}")
    print("backends:", pyjit.list_backends())
    print("with the debugging ones:", pyjit.list_backends(exclude_tags=None))


def explain_breaks():
    print("\n=== explain")
    a, b = np.ones(10), np.ones(10)
    printed = pyjit.explain(with_print)(a, b)
    print(printed)
    assert (printed.graph_count, printed.graph_break_count) == (2, 1)
    branched = pyjit.explain(with_branch)(a, -b)
    print(branched)
    assert (branched.graph_count, branched.graph_break_count) == (2, 1)


def fullgraph_refuses_a_print():
    print("\n=== fullgraph=True")
    try:
        pyjit.compile(with_print, fullgraph=True)(np.ones(3), np.ones(3))
    except pyjit.exc.Unsupported as error:
        print(f"Unsupported: {str(error).splitlines()[0]}")
    else:
        raise AssertionError("fullgraph=True captured a print")


def config_patch():
    print("\n=== config.patch")
    with pyjit.config.patch(recompile_limit=1):
        assert pyjit.config.recompile_limit == 1
    assert pyjit.config.recompile_limit == 8
    print("recompile_limit is 1 inside the block, 8 after it")


class TransformerBlock(nn.Module):
    def __init__(self, width=512, heads=8, hidden=2048):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.feed_forward = nn.Sequential(nn.Linear(width, hidden), nn.GELU(approximate="tanh"),
                                          nn.Linear(hidden, width))

    def forward(self, x):
        normed = self.norm1(x)
        attended, _ = self.attention(normed, normed, normed, need_weights=False)
        x = x + attended
        return x + self.feed_forward(self.norm2(x))


def median_ms(fn, x, repeats=9):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def matrix_products_ms(batch, seq=128, width=512, heads=8, hidden=2048):
    """The block's eight matrix products alone, with NumPy: what BLAS spends on them
    whether the block is compiled or not (pyjit hands matmuls to NumPy's BLAS)."""
    rng = np.random.default_rng(0)
    tokens = rng.standard_normal((batch * seq, width), dtype=np.float32)
    square, up, down = (rng.standard_normal(shape, dtype=np.float32)
                        for shape in ((width, width), (width, hidden), (hidden, width)))
    per_head = rng.standard_normal((batch, heads, seq, width // heads), dtype=np.float32)

    def products(_):
        for _ in range(4):  # query, key, value and output projections
            tokens @ square
        (per_head @ per_head.transpose(0, 1, 3, 2)) @ per_head  # scores, then weights @ values
        (tokens @ up) @ down  # the feed-forward
    return median_ms(products, None)


def transformer_block(batch):
    print(f"\n=== transformer block, batch {batch} x 128 x 512, forward without grad")
    pyjit.manual_seed(0)
    block = TransformerBlock()
    x = pyjit.randn(batch, 128, 512)
    with pyjit.no_grad():
        want = block(x).numpy()
        eager = median_ms(block, x)
        blas = matrix_products_ms(batch)
        report = pyjit.explain(block.forward)(x)
        matmuls = sum(ops.count("matmul") for ops in report.ops_per_graph)
        print(f"eager: {eager:.1f} ms, of which the {matmuls} matrix products take about {blas:.1f} ms in "
              f"NumPy's BLAS")
        print(f"captured: {report.graph_count} graph, {report.graph_break_count} graph breaks, "
              f"{report.op_count} ops")
        for mode in MODES:
            pyjit.utils.counters.clear()
            compiled = pyjit.compile(block, mode=mode)
            started = time.perf_counter()
            got = compiled(x).numpy()
            first = (time.perf_counter() - started) * 1e3
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            kernels = pyjit.utils.counters["inductor"]["kernels"]
            took = median_ms(compiled, x)
            print(f"{mode}: {took:.1f} ms, {eager / took:.1f}x eager (first call {first:.0f} ms); the "
                  f"{report.op_count - matmuls} other ops ran as {kernels} fused kernels: about "
                  f"{max(eager - blas, 0):.1f} ms -> {max(took - blas, 0):.1f} ms")
    print("What compiling gains here: the layer norms, the softmax, GELU and the residual adds\n"
          "become a few fused C loops (one pass over memory each, on every core, with vector math)\n"
          "instead of one NumPy pass per operation. The matrix products stay with BLAS, compiled or\n"
          "not, so on the CPU the gain is bounded by their share of the time: the larger the model's\n"
          "matrices, the more of the time is BLAS and the smaller the speedup.")


def main():
    three_ways_to_compile()
    modes_and_backends()
    explain_breaks()
    fullgraph_refuses_a_print()
    config_patch()
    transformer_block(batch=2 if "--quick" in sys.argv else 16)


if __name__ == "__main__":
    main()
