"""Pointwise formulas (pyjit/ops/formula.py) mean what their ops compute.

A NumPy evaluator of the scalar language stands in for a renderer: every pointwise op's
formula, evaluated on each sample row's arguments, equals the op's result.
"""

import numpy as np
import pytest
from op_samples import all_samples

from pyjit import _C
from pyjit.ops import REGISTRY
from pyjit.ops.formula import SCALAR_OPS, TARGETS, Arg, Const, Expr, F, ScalarOp

EVALUATE = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "neg": np.negative, "abs": np.absolute, "sign": np.sign, "square": np.square, "reciprocal": np.reciprocal,
    "maximum": np.maximum, "minimum": np.minimum,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "logical_not": np.logical_not,
    # Scalars made arrays: a renderer holds a Python int in a type wide enough for it
    # (clip's out-of-range bounds), where NumPy >= 2.5's np.where would refuse it.
    "where": lambda condition, a, b: np.where(condition, np.asarray(a), np.asarray(b)),
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh,
    "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "arctan2": np.arctan2, "erf": _C.erf,
    "floor": np.floor, "ceil": np.ceil, "rint": np.rint,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "cast": lambda x, dtype: np.asarray(x).astype(dtype),
    **{name: getattr(np, name) for name in ("exp2", "log2", "log10", "cbrt", "hypot", "arcsinh", "arccosh", "arctanh",
                                            "copysign", "fmod", "trunc", "fmax", "fmin", "signbit", "heaviside",
                                            "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
                                            "right_shift", "gcd", "lcm", "nextafter")},
}


def evaluate(expression, args):
    if isinstance(expression, Arg):
        return args[expression.index]
    if isinstance(expression, Const):
        return expression.value
    return EVALUATE[expression.op](*(evaluate(arg, args) for arg in expression.args), **dict(expression.params))


def leaves(args):
    return tuple(Arg(index) if isinstance(arg, np.ndarray) else Const(arg) for index, arg in enumerate(args))


POINTWISE_CASES = [pytest.param(name, sample, id=f"{name}-{index}")
                   for name, rows in all_samples().items()
                   if REGISTRY[name].category == "pointwise"
                   for index, sample in enumerate(rows) if sample.raises is None]


def test_the_evaluator_covers_the_scalar_language():
    assert sorted(EVALUATE) == sorted(SCALAR_OPS)


def test_builders_check_arity_and_wrap_scalars():
    expression = F.add(Arg(0), 2.5)
    assert expression == Expr("add", (Arg(0), Const(2.5)))
    assert str(F.where(Arg(0), Arg(1), 0)) == "where(x0, x1, 0)"
    assert str(F.cast(Arg(0), dtype="float32")) == "cast(x0, dtype=float32)"
    with pytest.raises(TypeError, match="takes 2 arguments"):
        F.add(Arg(0))


@pytest.mark.parametrize(("name", "sample"), POINTWISE_CASES)
def test_formula_computes_the_op(name, sample):
    entry = REGISTRY[name]
    args, kwargs = sample.make()
    expression = entry.formula(*leaves(args), **kwargs)
    assert isinstance(expression, (Expr, Arg, Const))
    expected = np.asarray(entry(*args, **kwargs))
    actual = np.asarray(evaluate(expression, args))
    assert actual.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual.astype(expected.dtype), expected, rtol=1e-6, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual.astype(expected.dtype), expected)


# -- code generation knowledge (NOTE(spelling), NOTE(reduction-rule)) -------------------
def scalar_ops_of(expression) -> set[str]:
    if not isinstance(expression, Expr):
        return set()
    return {expression.op}.union(*(scalar_ops_of(arg) for arg in expression.args))


@pytest.mark.parametrize("target", TARGETS)
def test_every_scalar_op_is_spelled_for_every_target(target):
    missing = [name for name, entry in SCALAR_OPS.items() if not callable(entry.spellings.get(target))]
    assert not missing, f"scalar ops without a {target} spelling: {missing}"


@pytest.mark.parametrize("target", TARGETS)
def test_every_pointwise_op_can_be_written_for_every_target(target):
    for name, rows in all_samples().items():
        entry = REGISTRY[name]
        if entry.category != "pointwise":
            continue
        for sample in rows:
            if sample.raises is not None:
                continue
            args, kwargs = sample.make()
            for op_name in scalar_ops_of(entry.formula(*leaves(args), **kwargs)):
                assert target in SCALAR_OPS[op_name].spellings, f"{name} uses {op_name}, unspelled for {target}"


def test_a_missing_spelling_is_named():
    entry = ScalarOp("made_up", 1, np.negative, {"c": lambda *args: "x"})
    with pytest.raises(LookupError, match="made_up has no cuda spelling"):
        entry.spelling("cuda")


def test_every_reduction_has_a_rule_whose_combine_is_a_scalar_op():
    reductions = [entry for entry in REGISTRY.values() if entry.category == "reduction"]
    assert reductions
    for entry in reductions:
        assert entry.reduction.combine in SCALAR_OPS, entry.name
        for dtype in map(np.dtype, ("bool", "int8", "uint32", "int64", "float32", "float64")):
            start = entry.reduction.identity(dtype)
            # The identity folded with any value gives that value (NaN aside).
            value = np.array([0, 1], dtype=dtype)
            combine = SCALAR_OPS[entry.reduction.combine].ufunc
            np.testing.assert_array_equal(combine(np.array(start, dtype=dtype), value).astype(dtype), value,
                                          err_msg=f"{entry.name} {dtype}")


# What each OpenMP reduction-clause operator computes (OpenMP's max and min compare
# with > and <: NaN aside, as maximum and minimum do).
OPENMP_OPERATORS = {"+": np.add, "*": np.multiply, "max": np.maximum, "min": np.minimum, "|": np.logical_or,
                    "&": np.logical_and}


def test_every_reduction_rule_says_what_kernels_repeat_of_it():
    """NOTE(reduction-rule): the OpenMP operator combines as the combine op does; the
    accumulator holds every value of the dtype it accumulates; an empty axis is refused
    exactly where the op's meta refuses it."""
    from pyjit.graph import TensorMeta

    values = np.array([0, 1, 5, 3], dtype=np.int64)
    for entry in (entry for entry in REGISTRY.values() if entry.category == "reduction"):
        rule = entry.reduction
        if rule.openmp is not None:
            combine = SCALAR_OPS[rule.combine].ufunc
            np.testing.assert_array_equal(OPENMP_OPERATORS[rule.openmp](values[:, None], values),
                                          combine(values[:, None], values), err_msg=entry.name)
        for dtype in map(np.dtype, ("bool", "int8", "uint32", "int64", "float32", "float64")):
            accumulator = np.dtype(rule.accumulator(dtype))
            assert accumulator.kind == dtype.kind or (dtype.kind in "iub" and accumulator == np.uint64), entry.name
            assert accumulator.itemsize >= dtype.itemsize, entry.name
        empty = TensorMeta((3, 0), np.dtype(np.float32))
        if rule.allows_empty:
            entry.meta(empty, axis=1)
        else:
            with pytest.raises(ValueError):
                entry.meta(empty, axis=1)


def test_reductions_without_a_rule_are_refused():
    from pyjit.ops.registry import Op

    with pytest.raises(ValueError, match="reduction rule"):
        Op("made_up_sum", category="reduction", impl=np.sum, meta=lambda x: x)


def test_every_view_has_an_index_rule():
    from pyjit.ops.registry import Op

    views = [entry for entry in REGISTRY.values() if entry.category == "view"]
    assert views and all(callable(entry.index_rule) for entry in views)
    with pytest.raises(ValueError, match="index rule"):
        Op("made_up_view", category="view", impl=np.reshape, meta=lambda x: x)
