"""Every op of the registry, compiled by the inductor backend, equals eager.

Generated from the sample rows (tests/op_samples), as tests/ops/test_registry.py is:
each valid row becomes a graph (its `trace`), compiled three ways and compared with the
graph module run eagerly:
  * as sampled (rows cover dtypes, broadcasting, F and strided layouts, size 0);
  * compiled for non-contiguous inputs (every other element of a wider array), whose
    strides are kernel arguments (NOTE(layouts));
  * with symbolic sizes (pointwise ops, reductions and the composites without shape
    arguments): every size of 2 or more a symbol, sizes that are equal one symbol, the
    graph compiled once and run at the sampled sizes and at sizes 3 larger.
A second table runs every pointwise op and reduction on the values where NumPy's
semantics are delicate (NaN, infinities, signed zeros, integer extremes, division by
zero) for every kernel dtype: the results must be NumPy's bit for bit, but for the
ULPs of vector math (tests/codegen/cpu/test_renderer.py).

Graphs are compiled per op, all rows of an op in one translation unit (one compiler
run, then the disk cache: NOTE(kernel-cache)).
"""

import dataclasses
import functools
import warnings

import numpy as np
import pytest
from op_samples import A, all_samples
from ops.test_registry import assert_same_values, strided, trace

from pyjit.backends.inductor import compile_graphs
from pyjit.codegen.cfamily.vector_math import VECTOR_MATH_ULPS
from pyjit.graph import Graph, GraphModule, ShapeEnv, TensorMeta
from pyjit.ops import REGISTRY, Composite

SAMPLES = all_samples()
# Composites whose rows take no shape argument, so that any size can be symbolic.
SHAPE_FREE_COMPOSITES = ("mean", "var", "std", "softmax", "log_softmax", "logsumexp", "gelu", "sigmoid", "relu")
# Ops that return their (uninitialized) memory, so there is nothing to compare.
UNCOMPARABLE = ("empty_like",)


def dynamic_ok(name: str, sample) -> bool:
    entry = REGISTRY[name]
    kind = "composite" if isinstance(entry, Composite) else entry.category
    if kind not in ("pointwise", "reduction") and name not in SHAPE_FREE_COMPOSITES:
        return False
    return all(not isinstance(arg, np.ndarray) for arg in sample.args)  # only A specs can be resized


CASES = [pytest.param(name, index, variant, id=f"{name}-{index}-{variant}")
         for name, rows in SAMPLES.items() if name not in UNCOMPARABLE
         for index, sample in enumerate(rows) if sample.raises is None
         for variant in ("sampled", "strided", "dynamic")
         if variant != "dynamic" or dynamic_ok(name, sample)]


def resized(sample, grow: int):
    """The sample with every A spec's sizes of 2 or more grown by `grow`."""
    def spec(value):
        if isinstance(value, A):
            return dataclasses.replace(value, shape=tuple(size + grow if size >= 2 else size for size in value.shape))
        if type(value) in (list, tuple):
            return type(value)(spec(item) for item in value)
        return value

    return dataclasses.replace(sample, args=spec(sample.args), kwargs={k: spec(v) for k, v in sample.kwargs.items()})


def trace_dynamic(entry, args, kwargs):
    """`trace` with symbolic placeholder sizes (one symbol per distinct size >= 2)."""
    env = ShapeEnv()
    graph = Graph(shape_env=env)
    symbols: dict[int, object] = {}
    inputs = []

    def placeholder(value):
        if isinstance(value, np.ndarray):
            shape = tuple(symbols.setdefault(size, env.create_symbol(size)) if size >= 2 else size
                          for size in value.shape)
            inputs.append(value)
            return graph.placeholder(f"a{len(inputs) - 1}", TensorMeta(shape, value.dtype))
        if type(value) in (list, tuple):
            return type(value)(placeholder(item) for item in value)
        return value

    node_args = placeholder(args)
    node_kwargs = {key: placeholder(value) for key, value in kwargs.items()}
    graph.output(entry(*node_args, **node_kwargs) if isinstance(entry, Composite)
                 else graph.call(entry, *node_args, **node_kwargs))
    return graph, inputs


_compiled: dict[str, dict] = {}


def compiled_cases(name: str) -> dict:
    """{(row, variant): (graph module, compiled, input lists to run)} for op `name`,
    every graph of the op compiled together."""
    if name not in _compiled:
        keys, items, runs = [], [], []
        for index, sample in enumerate(SAMPLES[name]):
            if sample.raises is not None:
                continue
            args, kwargs = sample.make()
            graph, inputs = trace(REGISTRY[name], args, kwargs)
            module = GraphModule(graph)
            keys += [(index, "sampled"), (index, "strided")]
            items += [(module, inputs), (module, [strided(x) for x in inputs])]
            runs += [[inputs], [[strided(x) for x in inputs]]]
            if dynamic_ok(name, sample):
                graph, inputs = trace_dynamic(REGISTRY[name], args, kwargs)
                bigger = trace(REGISTRY[name], *resized(sample, 3).make(seed=1))[1]
                keys.append((index, "dynamic"))
                items.append((GraphModule(graph), inputs))
                runs.append([inputs, bigger])
        compiled = compile_graphs(items)
        _compiled[name] = {key: (module, function, run) for key, (module, _), function, run
                           in zip(keys, items, compiled, runs)}
    return _compiled[name]


def tolerance(expected) -> float:
    dtypes = [np.asarray(part).dtype for part in (expected if isinstance(expected, (list, tuple)) else [expected])]
    return max((1e-5 if dtype == np.float32 else 1e-12) if dtype.kind in "fc" else 0.0 for dtype in dtypes)


def assert_same_kind(actual, expected):
    """The same structure, and a NumPy scalar where eager gives one."""
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for one, other in zip(actual, expected):
            assert_same_kind(one, other)
    else:
        assert type(actual) is type(expected)


@pytest.mark.parametrize(("name", "index", "variant"), CASES)
def test_compiled_graph_equals_eager(name, index, variant):
    module, function, runs = compiled_cases(name)[index, variant]
    for inputs in runs:
        expected = module(*inputs)
        actual = function(*inputs)
        assert_same_kind(actual, expected)
        if isinstance(expected, list) and len({np.shape(part) for part in expected}) > 1:
            for one, other in zip(actual, expected):  # split: pieces of different shapes
                assert_same_values(one, other, tolerance(other))
        else:
            assert_same_values(actual, expected, tolerance(expected))


def test_the_kernels_compute_most_graphs():
    """The eager fallback is for what kernels cannot do exactly, not a way out: graphs of
    pointwise ops and reductions are compiled."""
    eager = [name for name, rows in SAMPLES.items()
             if REGISTRY[name].category in ("pointwise", "reduction") and name not in UNCOMPARABLE
             and all(function is module for module, function, _ in compiled_cases(name).values())]
    assert eager == []


# -- special values ------------------------------------------------------------------------
KERNEL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                 "float64")
# Vector math may differ from NumPy by the kernel's promise plus NumPy's own error, which
# its SIMD float32 loops and SVML keep within the same 4 ulp (NOTE(vector-math-accuracy)).
VECTOR_MATH_OPS = ("exp", "expm1", "log", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin",
                   "arccos", "arctan", "arctan2", "erf", "power", "float_power")
# The C library's functions without vector variants (NOTE(vector-math-accuracy): within
# the same promise, glibc's scalar errors) and the ops built on them; deg2rad and rad2deg
# multiply by the correctly rounded constant, where NumPy's float32 loop rounds pi first.
LIBRARY_MATH_OPS = ("exp2", "log2", "log10", "cbrt", "hypot", "arcsinh", "arccosh", "arctanh", "logaddexp",
                    "logaddexp2", "deg2rad", "rad2deg")


def special_values(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0,
                         1e30, -1e30, 300.5, -300.5, 2.0**31, 2.0**63, 1e-40], dtype)
    if dtype.kind == "b":
        return np.array([True, False])
    info = np.iinfo(dtype)
    return np.array([v for v in (0, 1, -1, 2, -2, 3, 7, -7, info.min, info.max, info.min + 1, 100)
                     if info.min <= v <= info.max], dtype)


def add_graph_case(cases: list, label: str, build, *inputs) -> bool:
    """Append (label, graph module, inputs) for `build` on placeholders like `inputs`, or
    return False where it cannot be built (a wrong argument count, dtypes NumPy refuses)."""
    graph = Graph()
    nodes = [graph.placeholder(f"x{n}", TensorMeta(x.shape, x.dtype)) for n, x in enumerate(inputs)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph.output(build(*nodes))
    except (TypeError, ValueError, OverflowError):  # OverflowError: a negative exponent of an unsigned array
        return False
    cases.append((label, GraphModule(graph), list(inputs)))
    return True


def special_graphs():
    """(label, graph module, inputs) for every pointwise op (all pairs of values for
    binary ones), cast and reduction, in every kernel dtype NumPy accepts for it."""
    cases = []
    add = functools.partial(add_graph_case, cases)

    for name, entry in REGISTRY.items():
        if entry.category != "pointwise" or name in ("clip", "where", "astype", "round"):
            continue
        for dtype in KERNEL_DTYPES:
            values = special_values(dtype)
            rows, columns = np.broadcast_arrays(values[:, None], values[None, :])
            add(f"{name}-{dtype}", entry, values) or add(f"{name}-{dtype}", entry, rows.copy(), columns.copy())
    for dtype in KERNEL_DTYPES:
        # A scalar exponent: NumPy squares for 2 and takes the square root for 0.5, bit
        # for bit ("exact-": no vector-math allowance); other exponents call pow.
        for exponent in (2, 2.0, 0.5, 1, 3, -1, -0.5):
            label = "exact-power" if exponent in (2, 0.5, 1) else "power"
            add(f"{label}-{dtype}-scalar-{exponent}", lambda x, e=exponent: REGISTRY["power"](x, e),
                special_values(dtype))
    for dtype in KERNEL_DTYPES:
        values = special_values(dtype)
        for target in KERNEL_DTYPES:
            add(f"astype-{dtype}-{target}", lambda x, target=target: REGISTRY["astype"](x, target), values)
        columns = np.stack([values, values[::-1], np.roll(values, 3)], axis=1)
        for name in ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all"):
            add(f"{name}-{dtype}", REGISTRY[name], values)
            add(f"{name}-{dtype}-reversed", REGISTRY[name], values[::-1].copy())
            # over the leading axis: the columnar form (NOTE(columnar-reductions))
            add(f"{name}-{dtype}-columns", lambda x, name=name: REGISTRY[name](x, axis=0), columns)
            add(f"{name}-{dtype}-rows", lambda x, name=name: REGISTRY[name](x, axis=1), columns.T.copy())
    return cases


_special: list = []


def special_cases():
    if not _special:
        cases = special_graphs()
        compiled = compile_graphs([(module, inputs) for _, module, inputs in cases])
        _special.extend((label, module, function, inputs) for (label, module, inputs), function
                        in zip(cases, compiled))
    return _special


def same_bits(actual: np.ndarray, expected: np.ndarray, ulps: bool) -> np.ndarray:
    if expected.dtype.kind != "f":
        return actual == expected
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    same |= np.isnan(actual) & np.isnan(expected)
    if ulps:
        tight = 2 * VECTOR_MATH_ULPS * np.finfo(expected.dtype).eps
        same |= np.isclose(actual, expected, rtol=tight, atol=0)
    return same


def special_value_mismatches(cases) -> tuple[list[str], int]:
    """For (label, module, function, inputs) cases: where a compiled function's bits differ
    from the graph run eagerly (vector math within its promise), and how many compiled."""
    mismatches, compiled = [], 0
    for label, module, function, inputs in cases:
        if function is module:
            continue
        compiled += 1
        with np.errstate(all="ignore"):
            expected, actual = np.asarray(module(*inputs)), np.asarray(function(*inputs))
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, label
        same = same_bits(actual, expected, label.split("-")[0] in VECTOR_MATH_OPS + LIBRARY_MATH_OPS)
        if not same.all():
            where = tuple(np.argwhere(~same)[0]) if expected.ndim else ()
            mismatches.append(f"{label} at {where}: inputs {[x[where] for x in inputs]}, "
                              f"NumPy {expected[where]!r}, kernel {actual[where]!r}")
    return mismatches, compiled


def test_special_values_give_numpys_results():
    mismatches, compiled = special_value_mismatches(special_cases())
    assert mismatches == []
    assert compiled > 700
