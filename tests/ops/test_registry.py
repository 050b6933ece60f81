"""Tests generated from the registry's sample rows (tests/op_samples): for every op and
sample, the meta rule matches what NumPy returns, the result matches NumPy (or the row's
reference), the printed graph re-executes to the same result, and the derivative matches
central finite differences in float64."""

import inspect

import numpy as np
import pytest
from op_samples import A, all_samples
from op_samples.finite_differences import array_leaves, as_float64, as_list, is_differentiable_sample

from pyjit.autograd.finite_differences import numerical_vjp
from pyjit.graph import Graph, GraphModule, TensorMeta, map_nodes
from pyjit.ops import REGISTRY, Composite, Op
from pyjit.ops.registry import numpy_function

SAMPLES = all_samples()
CASES = [pytest.param(name, sample, id=f"{name}-{index}")
         for name, rows in SAMPLES.items() for index, sample in enumerate(rows)]
VALID_CASES = [case for case in CASES if case.values[1].raises is None]
ERROR_CASES = [case for case in CASES if case.values[1].raises is not None]


def test_every_op_has_sample_rows():
    assert sorted(name for name in REGISTRY if not SAMPLES.get(name)) == []


def test_every_sample_table_names_a_registered_op():
    assert sorted(set(SAMPLES) - set(REGISTRY)) == []


@pytest.mark.parametrize("category", ["pointwise", "reduction"])
def test_pointwise_ops_and_reductions_are_sampled_at_size_zero(category):
    def has_empty_array(sample):
        return any(isinstance(arg, A) and 0 in arg.shape for arg in sample.args)

    missing = [name for name, entry in REGISTRY.items()
               if entry.category == category and not any(map(has_empty_array, SAMPLES.get(name, [])))]
    assert missing == []


def arrays_to_placeholders(graph: Graph, structure, inputs: list, device: str):
    """`structure` with every ndarray (also inside lists and tuples) replaced by a new
    placeholder on `device`; the arrays are appended to `inputs` in placeholder order."""
    if isinstance(structure, np.ndarray):
        inputs.append(structure)
        return graph.placeholder(f"a{len(inputs) - 1}", TensorMeta.of(structure).with_(device=device))
    if type(structure) in (list, tuple):
        return type(structure)(arrays_to_placeholders(graph, item, inputs, device) for item in structure)
    if isinstance(structure, dict):
        return {key: arrays_to_placeholders(graph, item, inputs, device) for key, item in structure.items()}
    return structure


def trace(entry, args, kwargs, device="cpu"):
    """A graph of `entry` applied to placeholders for the array arguments, and those arrays."""
    graph = Graph()
    inputs: list = []
    node_args = arrays_to_placeholders(graph, args, inputs, device)
    node_kwargs = arrays_to_placeholders(graph, kwargs, inputs, device)
    if isinstance(entry, Composite):
        graph.output(entry(*node_args, **node_kwargs))
    else:  # recorded even when no argument is a node (arange)
        graph.output(graph.call(entry, *node_args, **node_kwargs))
    return graph, inputs


def assert_same_values(actual, expected, rtol=0.0):
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for one, other in zip(actual, expected):
            assert_same_values(one, other, rtol)
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    if rtol and expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_meta_describes(meta, value):
    if isinstance(value, (list, tuple)):
        assert len(meta) == len(value)
        for one, other in zip(meta, value):
            assert_meta_describes(one, other)
        return
    value = np.asarray(value)
    assert isinstance(meta, TensorMeta), meta
    assert meta.shape == value.shape
    assert meta.dtype == value.dtype
    assert meta.device == "cpu"


@pytest.mark.parametrize(("name", "sample"), VALID_CASES)
def test_meta_matches_numpy(name, sample):
    args, kwargs = sample.make()
    expected = REGISTRY[name](*args, **kwargs)
    graph, _ = trace(REGISTRY[name], *sample.make())
    output = graph.output_node.args[0]
    assert_meta_describes(map_nodes(output, lambda node: node.meta), expected)


@pytest.mark.parametrize(("name", "sample"), VALID_CASES)
def test_meta_keeps_the_device_of_the_inputs(name, sample):
    graph, inputs = trace(REGISTRY[name], *sample.make(), device="cuda:0")
    if not inputs:
        return  # no array argument (arange): nothing decides a device
    metas = map_nodes(graph.output_node.args[0], lambda node: node.meta)
    for meta in metas if isinstance(metas, (list, tuple)) else [metas]:
        assert meta.device == "cuda:0"


def test_every_op_that_makes_an_array_from_constants_takes_a_device():
    """NOTE(creation-device): an op with a valid row that has no array argument makes its
    array from constants, and only its `device` can put it on the inputs' GPU."""
    from_constants = {name for name, sample in (case.values for case in VALID_CASES)
                      if not list(array_leaves(sample.make()))}
    assert from_constants and all(isinstance(REGISTRY[name], Op) for name in from_constants)
    assert sorted(name for name in from_constants
                  if "device" not in inspect.signature(REGISTRY[name].impl).parameters) == []


def test_meta_refuses_inputs_on_different_devices():
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3,), np.float32, "cpu"))
    y = graph.placeholder("y", TensorMeta((3,), np.float32, "cuda:0"))
    calls = {"add": (x, y), "matmul": (x, y), "concatenate": ([x, y],), "where": (x, x, y)}
    for name, args in calls.items():
        with pytest.raises(ValueError, match="different devices"):
            REGISTRY[name](*args)


@pytest.mark.parametrize(("name", "sample"), ERROR_CASES)
def test_meta_raises_what_numpy_raises(name, sample):
    args, kwargs = sample.make()
    reference = sample.reference or numpy_function(name)
    with pytest.raises(sample.raises):
        reference(*args, **kwargs)
    with pytest.raises(sample.raises):
        REGISTRY[name](*args, **kwargs)
    with pytest.raises(sample.raises):
        trace(REGISTRY[name], *sample.make())


@pytest.mark.parametrize(("name", "sample"), VALID_CASES)
def test_result_matches_numpy(name, sample):
    reference = sample.reference or numpy_function(name)
    assert reference is not None, f"{name} is not a NumPy function: its sample rows need a reference"
    args, kwargs = sample.make()
    expected = reference(*args, **kwargs)
    actual = REGISTRY[name](*sample.make()[0], **sample.make()[1])
    assert_same_values(actual, expected, rtol=sample.rtol if sample.reference else 0.0)


@pytest.mark.parametrize(("name", "sample"), VALID_CASES)
def test_printed_code_reruns_to_the_same_result(name, sample):
    graph, inputs = trace(REGISTRY[name], *sample.make())
    module = GraphModule(graph)
    namespace = {"constants": module.constants}
    exec(module.code, namespace)
    expected = REGISTRY[name](*sample.make()[0], **sample.make()[1])
    assert_same_values(namespace[graph.name](*inputs), expected)
    assert_same_values(module(*inputs), expected)


def strided(array):
    if not isinstance(array, np.ndarray) or array.ndim == 0:
        return array
    wide = np.empty(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


@pytest.mark.parametrize(("name", "sample"), VALID_CASES)
def test_graph_gives_the_same_result_on_non_contiguous_inputs(name, sample):
    graph, inputs = trace(REGISTRY[name], *sample.make())
    expected = GraphModule(graph)(*inputs)
    assert_same_values(GraphModule(graph)(*map(strided, inputs)), expected, rtol=1e-12)


# -- derivatives ---------------------------------------------------------------------
DIFFERENTIABLE_CASES = [case for case in VALID_CASES if is_differentiable_sample(*case.values)]


def graph_vjp(graph: Graph, inputs: list, cotangent: list):
    """Reverse-mode through `graph` with each op's registry VJP: the gradient of
    sum(cotangent[i] * output[i]) with respect to each input (None where none flows)."""
    values = {}
    for node, value in zip(graph.placeholders, inputs):
        values[node] = value
    for node in graph.calls():
        values[node] = node.target(*map_nodes(node.args, values.get), **map_nodes(node.kwargs, values.get))
    grads = {}
    for node, part in zip(as_list(graph.output_node.args[0]), cotangent):
        _accumulate(grads, values, node, part)
    for node in reversed(graph.calls()):
        if grads.get(node) is None:
            continue
        if node.target.vjp is None:
            raise AssertionError(f"gradient reaches {node.target.name}, which has no derivative")
        arg_values = map_nodes(node.args, values.get)
        kwarg_values = map_nodes(node.kwargs, values.get)
        arg_grads = node.target.vjp(grads[node], values[node], *arg_values, **kwarg_values)
        assert len(arg_grads) <= len(node.args), f"{node.target.name}'s vjp gives more gradients than arguments"
        for arg, grad in zip(node.args, arg_grads):
            _accumulate(grads, values, arg, grad)
    return [grads.get(node) for node in graph.placeholders]


def _accumulate(grads, values, arg, grad):
    if grad is None:
        return
    if type(arg) in (list, tuple):
        for item, item_grad in zip(arg, grad):
            _accumulate(grads, values, item, item_grad)
        return
    if hasattr(arg, "graph"):
        grad = np.asarray(grad)
        assert grad.shape == np.shape(values[arg]), f"gradient of {arg.name} has shape {grad.shape}"
        assert grad.dtype == values[arg].dtype, f"gradient of {arg.name} has dtype {grad.dtype}"
        grads[arg] = grad if grads.get(arg) is None else grads[arg] + grad


@pytest.mark.parametrize(("name", "sample"), DIFFERENTIABLE_CASES)
def test_derivative_matches_finite_differences(name, sample):
    args, kwargs = sample.make()
    graph, inputs = trace(REGISTRY[name], as_float64(args), as_float64(kwargs))
    module = GraphModule(graph)
    rng = np.random.default_rng(7)
    cotangent = [rng.uniform(-1, 1, np.shape(out)) for out in as_list(module(*inputs))]
    analytic = graph_vjp(graph, inputs, cotangent)
    for index, point in enumerate(inputs):
        if point.dtype.kind != "f":
            assert analytic[index] is None
            continue
        numeric = numerical_vjp(module, inputs, index, cotangent)
        got = np.zeros_like(point) if analytic[index] is None else analytic[index]
        np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6, err_msg=f"input {index}")


# -- the registry itself ---------------------------------------------------------------
class Recorder:
    """A stand-in for an autograd tensor: takes over every registry call it is part of."""

    def __init__(self):
        self.calls = []

    def __pyjit_dispatch__(self, op, args, kwargs):
        self.calls.append((op.name, args, kwargs))
        return "recorded"


def test_an_argument_with_the_dispatch_protocol_takes_over_the_call():
    recorder = Recorder()
    x = np.ones(3)
    assert REGISTRY["add"](x, recorder) == "recorded"
    assert REGISTRY["concatenate"]([x, recorder], axis=0) == "recorded"  # found inside a sequence
    assert [(name, kwargs) for name, _, kwargs in recorder.calls] == [("add", {}), ("concatenate", {"axis": 0})]
    assert recorder.calls[0][1][0] is x


def test_the_first_dispatching_argument_wins():
    first, second = Recorder(), Recorder()
    REGISTRY["multiply"](first, second)
    assert len(first.calls) == 1 and second.calls == []


def test_entries_are_reachable_as_pyjit_ops_attributes():
    import pyjit.ops

    assert all(getattr(pyjit.ops, name) is entry for name, entry in REGISTRY.items())
    with pytest.raises(AttributeError, match="no_such_op"):
        pyjit.ops.no_such_op  # noqa: B018


def test_registration_refuses_duplicates_and_inconsistent_entries():
    from pyjit.ops.registry import Op, register

    def meta(x):
        return x

    with pytest.raises(ValueError, match="registered twice"):
        register(Op("add", category="other", impl=np.add, meta=meta))
    with pytest.raises(ValueError, match="category"):
        Op("fancy", category="magic", impl=np.add, meta=meta)
    with pytest.raises(ValueError, match="formula"):
        Op("fancy", category="pointwise", impl=np.add, meta=meta)
    with pytest.raises(ValueError, match="formula"):
        Op("fancy", category="view", impl=np.add, meta=meta, formula=lambda x: x)
