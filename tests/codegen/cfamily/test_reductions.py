"""pyjit/codegen/cfamily/reductions.py: code generation knows reductions only through
the registry's rules (NOTE(registry-reductions)). A reduction registered here, a copy of
an existing one under another name, runs in generated C and CUDA kernels with no edit
of code generation, and no module of code generation names a reduction."""

import ast
import contextlib
import dataclasses
import pathlib

import numpy as np
import pytest
from backends.test_inductor import inductor, module

import pyjit.ops as ops
from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cuda import emulation as cuda_emulation
from pyjit.graph import ShapeEnv, TensorMeta
from pyjit.ops import REGISTRY, Op
from pyjit.ops.registry import register
from pyjit.utils import counters

F32 = np.dtype(np.float32)
CODEGEN = pathlib.Path(__file__).resolve().parents[3] / "pyjit" / "codegen"
# Reductions the registry builds from its primitive ones; code generation names none either.
COMPOSITE_REDUCTIONS = ("mean", "var", "std", "logsumexp", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
                        "median", "ptp", "count_nonzero")


@contextlib.contextmanager
def registered_copy(name: str, **rule_changes):
    """A new registry reduction computing as `name` does, with its rule changed by
    `rule_changes`; removed again afterwards."""
    original = REGISTRY[name]
    copy = register(Op(f"{name}_copy", category="reduction", impl=original.impl, meta=original.meta,
                       vjp=original.vjp, reduction=dataclasses.replace(original.reduction, **rule_changes),
                       numpy_impl=original.numpy_impl))
    try:
        yield copy
    finally:
        del REGISTRY[copy.name]


def squares_reduced(reduction, axis):
    """A reduction between pointwise ops, all of which fuse into one kernel."""
    return lambda a: ops.add(reduction(ops.multiply(a, a), axis=axis), 1)


def sum_inputs():
    rng = np.random.default_rng(0)
    floats = rng.uniform(-2, 2, (37, 50)).astype(F32)
    wrapping = rng.integers(-2**31, 2**31 - 1, (37, 50), dtype=np.int32)  # squares and sums wrap around
    return [floats, wrapping]


def assert_numpys_sum(actual, x, axis):
    """NumPy's result: integers exactly (both wrap around), float32 within the error of
    NumPy's own float32 sum (the kernel accumulates in double and rounds once)."""
    expected = np.sum(x * x, axis=axis) + 1
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if x.dtype.kind == "f":
        terms = x.size if axis is None else x.shape[axis]
        bound = terms * np.finfo(F32).eps * (np.sum(x * x, axis=axis) + 1)
        assert np.all(np.abs(actual - expected) <= bound)
    else:
        np.testing.assert_array_equal(actual, expected)


def test_a_reduction_added_to_the_registry_fuses_into_c_kernels():
    with registered_copy("sum") as added:
        for x in sum_inputs():
            for axis in (1, 0, None):  # a row, the columnar form, a reduction over everything
                fallbacks = counters["inductor"]["eager_fallbacks"]
                compiled = inductor(module(squares_reduced(added, axis), TensorMeta(x.shape, x.dtype)), x)
                summed = inductor(module(squares_reduced(ops.sum, axis), TensorMeta(x.shape, x.dtype)), x)
                assert len(compiled.kernels) == len(summed.kernels) == 1
                assert counters["inductor"]["eager_fallbacks"] == fallbacks
                assert_numpys_sum(compiled(x), x, axis)
                np.testing.assert_array_equal(compiled(x), summed(x))  # the same kernel: the same bits


@pytest.mark.cuda_emulation
@pytest.mark.skipif(cuda_emulation.compiler() is None, reason="no host C++ compiler to emulate CUDA")
def test_a_reduction_added_to_the_registry_fuses_into_emulated_cuda_kernels():
    with registered_copy("sum") as added:
        cases = [(module(squares_reduced(added, axis), TensorMeta(x.shape, x.dtype)), x, axis)
                 for x in sum_inputs() for axis in (1, 0, None)]
        compiled = compile_graphs([(graph_module, [x]) for graph_module, x, _ in cases], target="cuda-emulation")
        for (graph_module, x, axis), function in zip(cases, compiled):
            assert function is not graph_module and len(function.kernels) == 1
            assert_numpys_sum(np.asarray(function(x)), x, axis)


def pragma_of_loop_folding(source: str, accumulator: str) -> str:
    """The `#pragma` line on the loop whose body folds into `accumulator` ("" for none)."""
    lines = [line.strip() for line in source.splitlines()]
    fold = next(n for n, line in enumerate(lines) if line.startswith(f"{accumulator} = "))
    loop = max(n for n in range(fold) if lines[n].startswith("for ("))
    return lines[loop - 1] if lines[loop - 1].startswith("#pragma") else ""


def test_a_reduction_without_an_openmp_operator_runs_on_one_thread_without_a_clause():
    """Its C loop folds with the rule's combine op, on no threads and no vector lanes:
    they would race on an accumulator without a reduction clause."""
    x = np.random.default_rng(1).uniform(0, 1, 1 << 20).astype(F32)  # past the work that goes on threads
    rows = x.reshape(1024, 1024)
    with registered_copy("sum", openmp=None) as added:
        compiled = inductor(module(lambda a: added(a), TensorMeta(x.shape, F32)), x)
        assert len(compiled.kernels) == 1 and "reduction(" not in compiled.source
        assert pragma_of_loop_folding(compiled.source, "acc_sum_copy_acc") == ""
        np.testing.assert_allclose(compiled(x), np.sum(x, dtype=np.float64), rtol=np.finfo(F32).eps)
        # Beside a max of the same rows, which has a clause: a loop of its own, not the max's.
        both = inductor(module(lambda a: ops.add(added(a, axis=1), ops.max(a, axis=1)), TensorMeta(rows.shape, F32)),
                        rows)
        assert len(both.kernels) == 1
        assert pragma_of_loop_folding(both.source, "acc_sum_copy_acc") == ""
        assert "reduction(max:" in pragma_of_loop_folding(both.source, "acc_max_acc")
        expected = np.sum(rows, axis=1, dtype=np.float64) + rows.max(axis=1)
        np.testing.assert_allclose(both(rows), expected, rtol=2 * np.finfo(F32).eps)


def test_a_reduction_the_registry_says_refuses_an_empty_axis_raises_numpys_error():
    env = ShapeEnv()
    size = env.create_symbol(4)
    with registered_copy("max") as added:
        assert not added.reduction.allows_empty
        graph_module = module(lambda a: added(a, axis=1), TensorMeta((3, size), F32), shape_env=env)
        compiled = inductor(graph_module, np.ones((3, 4), F32))
        assert len(compiled.kernels) == 1
        x = np.arange(21, dtype=F32).reshape(3, 7)
        x[1, 2] = np.nan
        np.testing.assert_array_equal(compiled(x), np.max(x, axis=1))
        with pytest.raises(ValueError, match="zero-size array"):
            compiled(np.ones((3, 0), F32))


def reduction_names() -> set[str]:
    primitive = {name for name, entry in REGISTRY.items() if entry.category == "reduction"}
    assert primitive and all(name in REGISTRY for name in COMPOSITE_REDUCTIONS)
    return primitive | set(COMPOSITE_REDUCTIONS)


def test_code_generation_names_no_reduction_outside_the_registry_driven_module():
    names, found = reduction_names(), []
    modules = sorted(CODEGEN.rglob("*.py"))
    assert len(modules) > 10
    for path in modules:
        if path.parts[-2:] == ("cfamily", "reductions.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(CODEGEN)}:{node.lineno}: {node.value!r}")
    assert found == []
