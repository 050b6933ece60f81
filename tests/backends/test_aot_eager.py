"""pyjit/backends/aot_eager.py: AOTAutograd's forward and backward graphs, run eagerly;
a compiled training step agrees with the tape on every backend."""

import numpy as np
import pytest

import pyjit
from pyjit import nn
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.utils import counters
import pyjit.ops as ops


@pytest.fixture(autouse=True)
def fresh():
    pyjit.reset()
    yield
    pyjit.reset()


@pytest.mark.parametrize("name", ["aot_eager", "aot_eager_default_partitioner"])
def test_aot_eager_is_registered_and_listed(name):
    assert name in pyjit.list_backends(exclude_tags=None) and name not in pyjit.list_backends()
    assert lookup_backend(name).__module__ == "pyjit.backends.aot_eager"


def test_graphs_of_arrays_run_as_they_are():
    graph = Graph()
    graph.output(ops.sin(graph.placeholder("x", TensorMeta((3,), np.float64))))
    module = GraphModule(graph)
    assert lookup_backend("aot_eager")(module, [np.ones(3)]) is module


@pytest.mark.parametrize("backend, chosen", [("aot_eager", 1), ("aot_eager_default_partitioner", 2)])
def test_the_partitioner_is_the_backends_unless_config_chooses(backend, chosen):
    """torch's `aot_eager` cuts with min-cut (cos(cos(x)) saves x alone), its
    `aot_eager_default_partitioner` saves what the backward reads (x and cos(x))."""
    graph = Graph()
    graph.output(ops.cos(ops.cos(graph.placeholder("x", TensorMeta((3,), np.float64)))))
    x = pyjit.tensor(np.ones(3), requires_grad=True)
    for partitioner, saved in (("default", 2), ("min_cut", 1), (None, chosen)):
        with pyjit.config.patch(aot_partitioner=partitioner):
            compiled = lookup_backend(backend)(GraphModule(graph), [x])
        out = compiled(x)
        assert len(out.grad_fn.saved_tensors) == saved
        if saved == 1:
            assert np.shares_memory(out.grad_fn.saved_tensors[0].numpy(), x.numpy())  # x itself


def train(backend, partitioner, steps=3):
    pyjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    optimizer = pyjit.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    x = pyjit.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    y = pyjit.tensor(rng.standard_normal((5, 3)).astype(np.float32))

    def loss_of(x, y):
        return nn.functional.mse_loss(model(x), y)

    if backend is not None:
        loss_of = pyjit.compile(loss_of, backend=backend)
    losses, nodes = [], set()
    for _ in range(steps):
        with pyjit.config.patch(aot_partitioner=partitioner):  # read when the graph is compiled
            loss = loss_of(x, y)
        nodes.add(loss.grad_fn.name())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, [parameter.numpy().copy() for parameter in model.parameters()], nodes


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_a_compiled_training_step_follows_the_tape(backend, partitioner):
    tape_losses, tape_parameters, _ = train(None, None)
    before = counters["aot"]["graphs"]
    losses, parameters, nodes = train(backend, partitioner)
    assert nodes == {"CompiledFunctionBackward"}
    assert counters["aot"]["graphs"] == before + 1  # one graph, compiled once
    # float32 throughout: the kernels may sum in another order than NumPy does.
    np.testing.assert_allclose(losses, tape_losses, rtol=1e-5)
    for got, want in zip(parameters, tape_parameters):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
