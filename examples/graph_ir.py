"""The IR by hand: build a graph with a symbolic batch size, print it, run it eagerly.

The frontend builds graphs like this one from bytecode; here the calls are written out.
"""

import sys

import numpy as np

import pyjit
from pyjit import ops
from pyjit.backends import lookup_backend
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.source import SourceLoc

env = ShapeEnv()
graph = Graph("layer", shape_env=env)
batch = env.create_symbol(32, "x.shape[0]")
x = graph.placeholder("x", TensorMeta((batch, 8), np.float32))
weight = graph.placeholder("weight", TensorMeta((8, 4), np.float32))
# Nodes remember the user's line: here, the line of the with statement.
with graph.at(SourceLoc(__file__, sys._getframe().f_lineno)):
    hidden = ops.gelu(ops.matmul(x, weight), approximate="tanh")
    graph.output(ops.softmax(hidden, axis=-1))
graph.eliminate_common_subexpressions()
graph.eliminate_dead_code()
print(graph)

module = GraphModule(graph)
print(module.code)

compiled = lookup_backend("eager")(module, [])
rng = np.random.default_rng(0)
w = rng.standard_normal((8, 4), dtype=np.float32)
for rows in (32, 5, 100):  # one graph serves every batch size: the size is s0
    inputs = rng.standard_normal((rows, 8), dtype=np.float32)
    result = compiled(inputs, w)
    assert result.shape == (rows, 4) and result.dtype == np.float32
    np.testing.assert_allclose(result.sum(axis=-1), 1.0, rtol=1e-5)
print("backends:", pyjit.list_backends())
