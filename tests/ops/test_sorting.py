"""pyjit/ops/sorting.py: what only the values decide, nanargmax's and nanargmin's error for
a slice of NaNs alone, is NumPy's ValueError when the graph runs (NOTE(nan-arg-reductions))."""

import numpy as np
import pytest

from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.ops import REGISTRY


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
@pytest.mark.parametrize("axis", [None, 1])
def test_a_slice_of_nans_alone_raises_value_error_when_the_graph_runs(name, axis):
    graph = Graph()
    graph.output(REGISTRY[name](graph.placeholder("x", TensorMeta((2, 3), np.float64)), axis=axis))
    module = GraphModule(graph)  # the meta rule sees the shape only: the graph is made
    fine = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 0.5]])
    np.testing.assert_array_equal(module(fine), getattr(np, name)(fine, axis=axis))
    all_nan = np.array([[1.0, 2.0, 3.0], [np.nan] * 3]) if axis == 1 else np.full((2, 3), np.nan)
    with pytest.raises(ValueError, match="All-NaN slice"):
        getattr(np, name)(all_nan, axis=axis)
    with pytest.raises(ValueError, match="All-NaN slice"):
        module(all_nan)
