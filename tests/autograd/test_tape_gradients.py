"""Every registry op with a derivative, on every differentiable sample row of
tests/op_samples: the tape's gradient passes `pyjit.autograd.gradcheck` (float64 central
differences, the whole Jacobian), and the same call compiled by every registered backend
(`pyjit.list_backends(exclude_tags=None)`) gives the tape's gradients (one row per op: compiling costs
more than differentiating); aot_eager and inductor also with the partitioner that is not
their default (`pyjit.config.aot_partitioner`), which saves other values for backward."""

import numpy as np
import pytest
from op_samples import all_samples
from op_samples.finite_differences import as_float64, is_differentiable_sample

import pyjit
from pyjit.ops import REGISTRY

CASES = [pytest.param(name, sample, id=f"{name}-{index}")
         for name, rows in all_samples().items() for index, sample in enumerate(rows)
         if is_differentiable_sample(name, sample)]
FIRST_CASE_OF_EACH_OP = list({case.values[0]: case for case in reversed(CASES)}.values())


def to_tensors(structure, leaves: list):
    """`structure` with every array made a tensor (requiring grad when floating),
    collected in `leaves` in order; one level into lists and tuples, as dispatch looks."""
    if isinstance(structure, np.ndarray):
        tensor = pyjit.tensor(structure, requires_grad=structure.dtype.kind == "f")
        leaves.append(tensor)
        return tensor
    if type(structure) in (list, tuple):
        return type(structure)(to_tensors(item, leaves) for item in structure)
    if isinstance(structure, dict):
        return {key: to_tensors(value, leaves) for key, value in structure.items()}
    return structure


def op_on_leaves(name, sample):
    """(a function of the leaves calling the op on the sample's arguments, the leaves).
    The function is written out as source, `op(x0, [x1, x2], axis=c0)`, so that a
    compiler captures the call itself: other values are literals or globals."""
    leaves: list = []
    args = to_tensors(as_float64(sample.make()[0]), leaves)
    kwargs = to_tensors(as_float64(sample.make()[1]), leaves)
    namespace = {"op": REGISTRY[name]}
    names = iter(f"x{index}" for index in range(len(leaves)))
    pieces = [source_of(arg, names, namespace) for arg in args]
    pieces += [f"{key}={source_of(value, names, namespace)}" for key, value in kwargs.items()]
    parameters = ", ".join(f"x{index}" for index in range(len(leaves)))
    exec(f"def function({parameters}):\n    return op({', '.join(pieces)})\n", namespace)
    return namespace["function"], leaves


def source_of(value, names, namespace: dict) -> str:
    """Python source for an argument: tensors by the next parameter name, lists and
    tuples item by item, Python literals as themselves, anything else as a global."""
    if isinstance(value, pyjit.Tensor):
        return next(names)
    if type(value) in (list, tuple):
        items = [source_of(item, names, namespace) for item in value]
        return f"[{', '.join(items)}]" if type(value) is list else f"({''.join(item + ', ' for item in items)})"
    if value is None or type(value) in (bool, int, str) or (type(value) is float and np.isfinite(value)):
        return repr(value)
    key = f"c{len(namespace)}"
    namespace[key] = value
    return key


def test_there_are_cases_for_most_ops():
    assert len(FIRST_CASE_OF_EACH_OP) > 60


@pytest.mark.parametrize(("name", "sample"), CASES)
def test_tape_gradient_passes_gradcheck(name, sample):
    function, leaves = op_on_leaves(name, sample)  # differentiable rows have a floating input
    assert pyjit.autograd.gradcheck(function, leaves, atol=1e-6, rtol=1e-5)


def as_outputs(result) -> list:
    return list(result) if type(result) in (list, tuple) else [result]


def tape_gradients(function, leaves: list, cotangent: list) -> list:
    """The `.grad` of every floating leaf after backward of function(*leaves) with `cotangent`."""
    for leaf in leaves:
        leaf.grad = None
    outputs = as_outputs(function(*leaves))
    recorded = [(output, part) for output, part in zip(outputs, cotangent) if output.requires_grad]
    if recorded:
        pyjit.autograd.backward([output for output, _ in recorded], [part for _, part in recorded])
    return [outputs, [leaf.grad for leaf in leaves]]


# Each backend with its default partitioner, and the AOT backends with the other one.
BACKENDS = [pytest.param(backend, None, id=backend) for backend in pyjit.list_backends(exclude_tags=None)] + [
    pytest.param("aot_eager", "min_cut", id="aot_eager-min_cut"),
    pytest.param("inductor", "default", id="inductor-default")]


@pytest.mark.parametrize(("backend", "partitioner"), BACKENDS)
@pytest.mark.parametrize(("name", "sample"), FIRST_CASE_OF_EACH_OP)
def test_compiled_gradients_match_the_tape(name, sample, backend, partitioner):
    function, leaves = op_on_leaves(name, sample)
    rng = np.random.default_rng(7)
    cotangent = [rng.uniform(-1, 1, output.shape) for output in as_outputs(function(*leaves))]
    pyjit.reset()
    compiled = pyjit.compile(function, backend=backend)
    try:
        with pyjit.config.patch(aot_partitioner=partitioner):
            expected_outputs, expected = tape_gradients(function, leaves, cotangent)
            pyjit.utils.counters.clear()
            for _ in range(2):  # the first call compiles, the second reuses the entry
                outputs, got = tape_gradients(compiled, leaves, cotangent)
                assert pyjit.utils.counters["stats"]["unique_graphs"] == 1  # the op was captured
                for value, reference in zip(outputs, expected_outputs):
                    np.testing.assert_allclose(value.numpy(), reference.numpy(), rtol=1e-12, atol=1e-12)
                for index, (value, reference) in enumerate(zip(got, expected)):
                    if reference is None:
                        assert value is None, f"input {index}"
                        continue
                    assert value.dtype == reference.dtype
                    np.testing.assert_allclose(value.numpy(), reference.numpy(), rtol=1e-10, atol=1e-12,
                                               err_msg=f"input {index}")
    finally:
        pyjit.reset()
