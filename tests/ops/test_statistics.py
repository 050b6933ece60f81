"""The statistics (pyjit/ops/statistics.py) where the generated tests cannot look: NaNs in
order statistics (finite differences cannot take them), value-dependent errors and the
derivatives the registry refuses."""

import numpy as np
import pytest

from pyjit.ops import REGISTRY

NAN = float("nan")
WITH_NAN = np.array([[1.0, NAN, 3.0, 0.5], [2.0, 1.0, 4.0, 3.0], [NAN, NAN, 0.0, 1.0]])


@pytest.mark.parametrize(("name", "args", "kwargs"), [
    ("median", (), {"axis": 1}), ("median", (), {}), ("quantile", (0.3,), {"axis": 1}),
    ("quantile", ([0.0, 1.0],), {"axis": 0, "method": "nearest"}), ("percentile", (75,), {"axis": 1, "keepdims": True}),
])
def test_a_slice_holding_a_nan_gives_nan_as_in_numpy(name, args, kwargs):
    np.testing.assert_array_equal(REGISTRY[name](WITH_NAN, *args, **kwargs), getattr(np, name)(WITH_NAN, *args, **kwargs))


def test_quantiles_held_in_an_array_of_the_graph_are_not_captured():
    from pyjit.graph import Graph, TensorMeta

    graph = Graph()
    x, q = graph.placeholder("x", TensorMeta((5,), np.float64)), graph.placeholder("q", TensorMeta((), np.float64))
    with pytest.raises(NotImplementedError, match="quantiles held in an array"):
        REGISTRY["quantile"](x, q)


def test_an_all_nan_slice_gives_nan_as_in_numpy():
    x = np.array([[NAN, NAN], [1.0, NAN]])
    np.testing.assert_array_equal(REGISTRY["nanmax"](x, axis=1), [NAN, 1.0])
    with pytest.warns(RuntimeWarning):  # NumPy warns too (its message differs: "Mean of empty slice")
        np.testing.assert_array_equal(REGISTRY["nanmean"](x, axis=1), [NAN, 1.0])
    with pytest.warns(RuntimeWarning):
        np.testing.assert_array_equal(REGISTRY["nanvar"](x, axis=1, ddof=1), [NAN, NAN])


def test_weights_summing_to_zero_raise_numpys_zero_division_error():
    with pytest.raises(ZeroDivisionError):
        REGISTRY["average"](np.ones(3), None, np.array([1.0, -1.0, 0.0]))


def test_the_weight_gradient_of_a_density_histogram_is_refused_not_wrong():
    x, weights = np.linspace(-1, 1, 8), np.ones(8)
    out = REGISTRY["histogram_counts"](x, 4, (-1, 1), True, weights)
    with pytest.raises(NotImplementedError, match="density"):
        REGISTRY["histogram_counts"].vjp(np.ones(4), out, x, 4, (-1, 1), True, weights)


def test_bincount_is_not_in_the_registry_its_length_depends_on_the_values():
    assert "bincount" not in REGISTRY
