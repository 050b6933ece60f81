"""The tape's gradient of every registry op against central finite differences,
generated from the registry's sample rows (tests/op_samples), as the graph VJPs are in
tests/ops/test_registry.py: the op is applied to tensors, backward runs with a random
cotangent, and every floating input's `.grad` must match."""

import numpy as np
import pytest
from op_samples import all_samples
from op_samples.finite_differences import as_float64, as_list, finite_difference, is_differentiable_sample

import pyjit
from pyjit.ops import REGISTRY

CASES = [pytest.param(name, sample, id=f"{name}-{index}")
         for name, rows in all_samples().items() for index, sample in enumerate(rows)
         if is_differentiable_sample(name, sample)]


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


def from_tensors(structure, arrays):
    """`structure` (as given to to_tensors) with its arrays taken from `arrays` in order."""
    if isinstance(structure, np.ndarray):
        return next(arrays)
    if type(structure) in (list, tuple):
        return type(structure)(from_tensors(item, arrays) for item in structure)
    if isinstance(structure, dict):
        return {key: from_tensors(value, arrays) for key, value in structure.items()}
    return structure


def test_there_are_cases_for_most_ops():
    covered = {case.values[0] for case in CASES}
    assert len(covered) > 60


@pytest.mark.parametrize(("name", "sample"), CASES)
def test_tape_gradient_matches_finite_differences(name, sample):
    args, kwargs = as_float64(sample.make()[0]), as_float64(sample.make()[1])
    leaves: list = []
    outputs = as_list(REGISTRY[name](*to_tensors(args, leaves), **to_tensors(kwargs, leaves)))
    rng = np.random.default_rng(7)
    cotangent = [rng.uniform(-1, 1, output.shape) for output in outputs]
    recorded = [(output, part) for output, part in zip(outputs, cotangent) if output.requires_grad]
    if recorded:
        pyjit.autograd.backward([output for output, _ in recorded], [part for _, part in recorded])

    def function(*arrays):  # the op on arrays, with `arrays` in place of the leaves
        values = iter(arrays)
        return REGISTRY[name](*from_tensors(args, values), **from_tensors(kwargs, values))

    points = [leaf.numpy().copy() for leaf in leaves]
    for index, leaf in enumerate(leaves):
        if leaf.dtype.kind != "f":
            assert leaf.grad is None
            continue
        numeric = finite_difference(function, points, index, cotangent)
        analytic = np.zeros_like(numeric) if leaf.grad is None else leaf.grad.numpy()
        assert analytic.dtype == leaf.dtype
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6, err_msg=f"input {index}")

