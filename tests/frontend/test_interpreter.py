"""pyjit/frontend/interpreter.py (with the handlers of opcodes.py and what they call): compiled
straight-line NumPy functions give exactly the plain results (same types, dtypes,
shapes, values) and capture one graph; what cannot be captured runs as it is."""

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

SCALE = 3.0
OFFSETS = (1.0, 2.0)


def arithmetic(x, y):
    return (x * 2 - y) / 3 + x ** 2 - (-x) // 2 % 5


def ufuncs(x, y):
    return np.exp(np.sin(x)) + np.maximum(x, y) + np.absolute(y) + np.tanh(x) + abs(x)


def reductions(x, y):
    return x.sum(axis=1, keepdims=True) + np.mean(x, 0) + x.max() + np.var(x, axis=1, keepdims=True)


def methods(x, y):
    return x.reshape(3, 2).T.astype(np.float32), x.transpose(), x.reshape(-1).clip(0.2, 0.8), x.reshape((6,))


def indexing(x, y):
    return x[0], x[:, 1:], x[..., None], x[[1, 0]], x[1, ::2], x[np.newaxis, -1]


def tuple_and_constants(x, y):
    return x + 1, 2, "s", (y, None), [x.ndim, x.dtype]


def reads_globals(x, y):
    return x * SCALE + OFFSETS[1]


def make_adder(offset):
    def add(x, y):
        return x + offset

    return add


def with_default(x, y, k=4):
    return x * k


def keyword_calls(x, y):
    return np.sum(x, axis=0, keepdims=True) + np.concatenate([x, x], axis=0).sum(0)


def comparisons(x, y):
    return (x > 0.5) & (y < 0.2), x == y, ~(x >= y), np.where(x > y, x, y)


def unpacking(x, y):
    a, b = x
    n, m = x.shape
    return a * n + b * m + len(x)


def products(x, y):
    return x @ x.T, np.dot(y, y), np.matmul(x, y)


def passthrough(x, y):
    return x, [y, 1]


def python_arithmetic(x, y):
    n = x.shape[0] * 2 + 1
    return x * n, n, x.size // 2


def branches(x, y, axis=None, scale=0.0):
    total = x.sum() if axis is None else x.sum(axis)
    factor = scale or 2.0
    if x.ndim == 2 and y is not None:
        total = total + y
    else:
        total = total - 1
    return total * factor


CASES = [branches, arithmetic, ufuncs, reductions, methods, indexing, tuple_and_constants, reads_globals,
         make_adder(2.5), with_default, keyword_calls, comparisons, unpacking, products, passthrough, python_arithmetic]


def same(got, want) -> bool:
    """Same structure, types, dtypes, shapes and values (NaN equal to NaN)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, (tuple, list)):
        return len(got) == len(want) and all(map(same, got, want))
    if isinstance(want, (np.ndarray, np.generic)):
        return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
    return got == want


@pytest.fixture
def inputs():
    rng = np.random.default_rng(0)
    return rng.random((2, 3)), rng.random(3)


@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__)
def test_compiled_equals_plain(jit, inputs, fn):
    compiled = jit(fn)
    want = fn(*inputs)
    assert same(compiled(*inputs), want)
    assert same(compiled(*inputs), want)  # from the cache
    assert len(pyjit.cache_entries(compiled)) == 1
    assert counters["stats"]["unique_graphs"] == (fn is not passthrough)  # no op: the original code, guarded
    assert not counters["graph_break"]


def test_results_keep_identity_and_lists_are_fresh(jit, inputs):
    compiled = jit(passthrough)
    first, second = compiled(*inputs), compiled(*inputs)
    assert first[0] is inputs[0] and first[1][0] is inputs[1]
    assert first[1] is not second[1]


def test_counts_captured_calls(jit, inputs):
    jit(lambda x, y: np.cos(np.sin(x) + y))(*inputs)
    assert counters["stats"]["calls_captured"] == 3


def test_closure_cell_is_guarded(jit, inputs):
    add = make_adder(1.0)
    compiled = jit(add)
    assert same(compiled(*inputs), inputs[0] + 1.0)
    assert "offset == 1.0" in pyjit.cache_entries(compiled)[0][0]


def skipped_on_print(x):
    y = x + 1
    print("side effect")
    return y


def data_dependent(x):
    if x.sum() > 0:
        return x
    return -x


def item_call(x):
    return x * x.max().item()


def unknown_call(x):
    return np.unwrap(x)


def in_place(x):
    head = x[:2]  # the update must show through this view
    x += 1
    return head


def breaks_on_purpose(x):
    y = x * 2
    pyjit.graph_break()
    return y + 1


@pytest.mark.parametrize("fn, reason", [
    (skipped_on_print, "call to the function print"),
    (data_dependent, "truth value of an array"),
    (item_call, "ndarray.item() needs the array's values"),
    (unknown_call, "call to "),
    (breaks_on_purpose, "pyjit.graph_break() was called"),
    (in_place, "in-place update (+=) of a view, or an array a view was taken of"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_breaks_resume_with_the_same_results(jit, capsys, fn, reason):
    compiled = jit(fn)
    plain_input, compiled_input = np.arange(3.0), np.arange(3.0)
    want = fn(plain_input)
    assert same(compiled(compiled_input), want)
    assert same(compiled_input, plain_input)  # the same side effects, once
    assert capsys.readouterr().out.count("side effect") == 2 * (fn is skipped_on_print)
    assert any(reason in key for key in counters["graph_break"]), dict(counters["graph_break"])
    assert pyjit.cache_entries(compiled) and not pyjit._C.is_skipped(fn.__code__)


def test_user_errors_surface_from_the_users_line(jit):
    def broadcast_error(x, y):
        z = x + 1
        return z + y  # the failing line

    with pytest.raises(ValueError, match="broadcast") as info:
        jit(broadcast_error)(np.ones(2), np.ones(3))
    last = info.traceback[-1]
    assert last.frame.code.raw is broadcast_error.__code__
    assert "the failing line" in str(last.statement)


def test_errors_inside_the_graph_name_the_users_line(jit):
    def gather(x, i):
        return np.sin(x)[i]

    compiled = jit(gather)
    compiled(np.ones(3), np.array([1]))
    with pytest.raises(IndexError) as info:
        compiled(np.ones(3), np.array([5]))
    entries = [entry for entry in info.traceback if entry.frame.code.raw.co_filename == __file__]
    assert entries and "np.sin(x)[i]" in str(entries[-1].statement)
    assert any("test_interpreter.py" in note for note in info.value.__notes__)


def test_frames_without_ops_run_their_original_code(jit):
    def shape_only(x):
        return x.shape[0] + 1

    compiled = jit(shape_only)
    assert compiled(np.ones(4)) == 5
    assert compiled(np.ones(4)) == 5
    ((guard, code),) = pyjit.cache_entries(compiled)
    assert code.co_code == shape_only.__code__.co_code
    assert counters["stats"]["unique_graphs"] == 0


def test_array_likes_other_than_ndarray_and_tensor_are_not_captured(jit):
    masked = np.ma.array([1.0, 2.0], mask=[False, True])
    result = jit(lambda m: m * 2)(masked)
    assert type(result) is np.ma.MaskedArray and result.mask.tolist() == [False, True]
    assert any("MaskedArray" in key for key in counters["graph_break"])


class _Disguised:
    """Claims to be an int through `__class__` and fails every other attribute read."""

    @property
    def __class__(self):
        _Disguised.reads += 1
        return int

    def __getattr__(self, name):
        _Disguised.reads += 1
        raise RuntimeError(name)


def test_tracing_runs_no_user_code_of_an_input(jit):
    # NOTE(no-user-code-at-trace): only the user's own isinstance reads __class__.
    def check(o, x):
        return x + 1 if isinstance(o, int) else x - 1

    _Disguised.reads = 0
    assert same(jit(check)(_Disguised(), np.ones(2)), np.full(2, 2.0))
    assert _Disguised.reads == 1


def test_branches_on_constants_are_guarded(jit, inputs):
    compiled = jit(branches)
    x, y = inputs
    for axis in (None, 0, None, 0):
        assert same(compiled(x, y, axis), branches(x, y, axis))
    assert len(pyjit.cache_entries(compiled)) == 2


def test_loops_are_unrolled_into_one_graph(jit):
    def loop(x):
        for _ in range(2):
            x = x + 1
        return x

    assert same(jit(loop)(np.ones(2)), np.full(2, 3.0))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_boolean_masks_are_left_to_numpy(jit):
    def masked(x):
        return x[x > 1] * 2

    compiled = jit(masked)
    assert same(compiled(np.arange(4.0)), masked(np.arange(4.0)))
    assert any("boolean index" in key for key in counters["graph_break"])
    assert counters["stats"]["unique_graphs"] == 2  # x > 1, then * 2 after the index ran in NumPy


def test_arrays_made_from_constants_are_made_anew_by_each_call(jit):
    def one_hot(labels, classes):
        return labels[:, None] == np.arange(classes), np.arange(3.0) * 2

    compiled, labels = jit(one_hot), np.array([0, 2, 1])
    first, second = compiled(labels, 4), compiled(labels, 4)
    assert same(first, one_hot(labels, 4)) and same(second, one_hot(labels, 4))
    assert not np.shares_memory(first[1], second[1])  # a caller may write into it
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
