"""The statistics (pyjit/ops/statistics.py) where the generated tests cannot look: NaNs in
order statistics (finite differences cannot take them), value-dependent errors and the
derivatives the registry refuses."""

import numpy as np
import pytest

from pyjit.graph import Graph, GraphModule, TensorMeta
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


def test_bincount_has_a_length_only_where_the_dtype_of_x_bounds_its_values():
    """NOTE(bincount-length): minlength 256 covers every uint8 value; an int64 x or a
    smaller minlength leaves the length to the values, which the meta rule refuses."""
    assert REGISTRY["bincount"].meta(TensorMeta((5,), np.uint8), None, 256).shape == (256,)
    assert REGISTRY["bincount"].meta(TensorMeta((5,), np.bool_), None, 2).shape == (2,)
    for dtype, minlength in ((np.int64, 256), (np.uint8, 255), (np.bool_, 1)):
        with pytest.raises(NotImplementedError, match="only the values decide"):
            REGISTRY["bincount"].meta(TensorMeta((5,), dtype), None, minlength)


def test_a_negative_value_raises_numpys_value_error_when_the_graph_runs():
    graph = Graph()
    graph.output(REGISTRY["bincount"](graph.placeholder("x", TensorMeta((3,), np.int8)), None, 128))
    values = np.array([1, -1, 2], dtype=np.int8)
    with pytest.raises(ValueError):
        np.bincount(values, minlength=128)
    with pytest.raises(ValueError):
        GraphModule(graph)(values)
