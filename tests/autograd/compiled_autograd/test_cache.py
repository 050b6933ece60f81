"""pyjit/autograd/compiled_autograd/cache.py: graphs cached by autograd structure, then
sizes; what changed is logged, and changed sizes become symbolic once."""

import operator

import numpy as np

import pyjit
from pyjit.graph import SymInt
from pyjit.utils import counters


def identity(gm):
    return gm


def leaves(size, seed=0):
    rng = np.random.default_rng(seed)
    return [pyjit.tensor(rng.standard_normal(size), requires_grad=True) for _ in range(2)]


def test_a_new_node_type_recompiles_and_names_the_node(capsys):
    pyjit.set_logs(compiled_autograd_verbose=True)
    lines = []
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.sub):
        x, y = leaves(10)
        with pyjit.compiled_autograd.enable(identity):
            op(x, y).sum().backward()
        lines.append(capsys.readouterr().err.strip())
    assert lines[0] == "[pyjit.compiled_autograd_verbose] Cache miss due to new autograd node: GraphRoot (NodeCall 0)"
    assert lines[1:4] == [f"[pyjit.compiled_autograd_verbose] Cache miss due to new autograd node: {name}Backward "
                          f"(NodeCall 2)" for name in ("Sub", "Mul", "Div")]
    assert lines[4] == ""  # sub again: a hit
    assert counters["compiled_autograd"]["compiles"] == 4


def test_changed_sizes_become_dynamic_once(capsys):
    recorder = []

    def compiler(gm):
        recorder.append(gm)
        return gm

    pyjit.set_logs(compiled_autograd_verbose=True)
    for size in (10, 100, 10, 37):
        x, y = leaves(size)
        with pyjit.compiled_autograd.enable(compiler):
            (x * y).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y.numpy())
        np.testing.assert_allclose(y.grad.numpy(), x.numpy())
    assert counters["compiled_autograd"]["compiles"] == 2
    log = capsys.readouterr().err
    assert "Cache miss due to changed shapes: marking size idx 0 of MulBackward (NodeCall 2) as dynamic" in log
    assert "marking size idx 0 of AccumulateGrad" not in log  # a leaf without .grad lifts nothing
    symbolic = [node for node in recorder[1].graph.placeholders
                if any(isinstance(size, SymInt) for size in node.meta.shape)]
    assert symbolic and not any(isinstance(size, SymInt) for node in recorder[0].graph.placeholders
                                for size in node.meta.shape)


def test_a_size_of_one_is_not_taken_by_a_dynamic_graph():
    for size in (10, 100, 1):
        x, y = leaves(size)
        with pyjit.compiled_autograd.enable(identity):
            (x * y).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y.numpy())
    assert counters["compiled_autograd"]["compiles"] == 3


def test_the_compiled_autograd_log_prints_each_graph(capsys):
    pyjit.set_logs(compiled_autograd=True)
    x, y = leaves(3)
    with pyjit.compiled_autograd.enable(identity):
        (x * y).sum().backward()
        x.grad = y.grad = None
        (x * y).sum().backward()
    log = capsys.readouterr().err
    assert log.count("[pyjit.compiled_autograd] compiled autograd graph") == 1
    assert "def compiled_autograd(tangents" in log


def test_each_compiler_has_its_own_cache_and_reset_forgets():
    def other(gm):
        return gm

    for compiler in (identity, other, identity):
        x, y = leaves(3)
        with pyjit.compiled_autograd.enable(compiler):
            (x * y).sum().backward()
    assert counters["compiled_autograd"]["compiles"] == 2
    pyjit.reset()
    x, y = leaves(3)
    with pyjit.compiled_autograd.enable(identity):
        (x * y).sum().backward()
    assert counters["compiled_autograd"]["compiles"] == 1  # compiled again, counted from the reset
