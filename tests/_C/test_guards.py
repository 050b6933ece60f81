"""Guard programs (csrc/guards.cpp): each check kind, each source kind, the failure
texts and the printed form. Guards run on a FrameInfo captured from a real call, the
same object the hook evaluates them on."""

import collections
import re
import types

import numpy as np
import pytest

from pyjit import _C

SCALE = 2  # a global the source tests read


def takes_x(x):
    return x


def takes_xy(x, y):
    return x, y


@pytest.fixture
def check_x(frame_of):
    """check_x(checks, x) -> (holds, reason) for `checks` on source 0 = argument `x`."""

    def run(checks, x):
        guard = _C.GuardProgram([("local", 0, "x")], checks)
        frame = frame_of(takes_x, x)
        holds, reason = guard.check(frame), guard.first_failure(frame)
        assert type(holds) is bool
        assert (reason is None) == holds, reason
        return holds, reason

    return run


def mentions(reason, *words):
    """Whether `reason` has each of `words` as a whole word (so "x" is not found in "max")."""
    return all(re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", reason) for word in words)


# --- type, id, eq, len, dict_keys, python -----------------------------------------


class Point:
    pass


class SubPoint(Point):
    pass


@pytest.mark.parametrize(
    ("expected", "value", "holds"),
    [(int, 3, True), (int, True, False), (int, 3.0, False), (Point, Point(), True), (Point, SubPoint(), False)],
    ids=["int", "bool-is-not-int", "float-is-not-int", "class", "subclass"],
)
def test_type_check_is_exact(check_x, expected, value, holds):
    assert check_x([("type", 0, expected)], value)[0] is holds


def test_type_failure_names_source_and_types(check_x):
    _, reason = check_x([("type", 0, int)], "text")
    assert mentions(reason, "x", "int", "str"), reason


def test_id_check_wants_the_same_object(check_x):
    obj = [1, 2]
    assert check_x([("id", 0, obj)], obj) == (True, None)
    holds, reason = check_x([("id", 0, obj)], [1, 2])
    assert not holds and mentions(reason, "x"), reason


NESTED = (1, 2.5, 3j, "s", b"b", False, None, (4, ("deep",)))
EQ_CASES = {  # const, an equal value, an unequal value of the same type
    "int": (7, 7, 8), "bigint": (2**80, 2**80, 2**80 + 1), "float": (1.5, 1.5, 2.5),
    "complex": (1 + 2j, 1 + 2j, 1 - 2j), "str": ("abc", "abc", "abd"), "bytes": (b"ab", b"ab", b"ac"),
    "bool": (True, True, False), "none": (None, None, 0), "empty-tuple": ((), (), (1,)),
    "nested-tuple": (NESTED, tuple(NESTED), NESTED[:-1] + ((4, ("deeper",)),)),
}


@pytest.mark.parametrize(("const", "equal", "unequal"), EQ_CASES.values(), ids=EQ_CASES.keys())
def test_eq_check_for_each_constant_type(check_x, const, equal, unequal):
    assert check_x([("eq", 0, const)], equal) == (True, None)
    assert check_x([("eq", 0, const)], unequal)[0] is False


def test_eq_failure_mentions_expected_and_actual(check_x):
    _, reason = check_x([("eq", 0, 7)], 8)
    assert mentions(reason, "x", "7", "8"), reason


@pytest.mark.parametrize(
    ("const", "value"),
    [(1, 1.0), (1, True), (1.0, 1), (True, 1), (1 + 0j, 1.0), (0, None), ("a", b"a"), ((1, 2), [1, 2])],
    ids=["int-float", "int-bool", "float-int", "bool-int", "complex-float", "int-none", "str-bytes", "tuple-list"],
)
def test_eq_check_wants_the_same_type(check_x, const, value):
    # The first five compare equal with ==, so only the type test can reject them.
    assert check_x([("eq", 0, const)], value)[0] is False


@pytest.mark.parametrize(
    ("value", "holds"),
    [([1, 2, 3], True), ((1, 2, 3), True), ({"a": 1, "b": 2, "c": 3}, True), ([1, 2], False), (5, False)],
    ids=["list", "tuple", "dict", "shorter", "unsized"],
)
def test_len_check(check_x, value, holds):
    assert check_x([("len", 0, 3)], value)[0] is holds


def test_len_failure_mentions_expected_length(check_x):
    _, reason = check_x([("len", 0, 3)], [1, 2])
    assert mentions(reason, "x", "3"), reason


@pytest.mark.parametrize(
    ("value", "holds"),
    [({"a": 1, "b": 2}, True), ({"b": 2, "a": 1}, False), ({"a": 1}, False), ({"a": 1, "b": 2, "c": 3}, False),
     (collections.OrderedDict(a=1, b=2), False), ([("a", 1), ("b", 2)], False)],
    ids=["same-order", "other-order", "missing", "extra", "dict-subclass", "not-a-dict"],
)
def test_dict_keys_check(check_x, value, holds):
    assert check_x([("dict_keys", 0, ("a", "b"))], value)[0] is holds


def test_python_check_on_a_source(check_x):
    checks = [("python", 0, lambda value: value > 0, "x > 0 (custom)")]
    assert check_x(checks, 5) == (True, None)
    holds, reason = check_x(checks, -5)
    assert not holds and "x > 0 (custom)" in reason


def test_python_check_without_a_source(check_x):
    switch = {"on": True}
    checks = [("python", None, lambda: switch["on"], "switch is on")]
    assert check_x(checks, 1)[0] is True
    switch["on"] = False
    holds, reason = check_x(checks, 1)
    assert not holds and "switch is on" in reason


class CompilingCallback:
    def __init__(self, compiler):
        self.compiler = compiler

    def __call__(self, frame):
        return _C.SKIP


def test_compiler_check_reads_the_calling_threads_callback(frame_of):
    """NOTE(compiler-guard): ("compiler", None, obj, text) holds while the thread's
    callback has a `compiler` attribute that is obj."""
    compiler = object()
    guard = _C.GuardProgram([("local", 0, "x")], [("compiler", None, compiler, "the backend is mine")])
    frame = frame_of(takes_x, 1)
    assert guard.check(frame) is False  # no callback installed
    for callback, holds in ((CompilingCallback(compiler), True), (CompilingCallback(object()), False),
                            (lambda frame: _C.SKIP, False)):
        previous = _C.set_eval_frame(callback)
        try:
            result, reason = guard.check(frame), guard.first_failure(frame)
        finally:
            _C.set_eval_frame(previous)
        assert result is holds and (reason is None) == holds
    assert "the backend is mine" in reason and "the backend is mine" in str(guard)
    with pytest.raises(TypeError, match="reads no source"):
        _C.GuardProgram([("local", 0, "x")], [("compiler", 0, compiler, "the backend is mine")])


def test_all_checks_must_hold(check_x):
    checks = [("type", 0, list), ("len", 0, 3)]
    assert check_x(checks, [1, 2, 3])[0] is True
    assert check_x(checks, [1, 2])[0] is False
    assert check_x(checks, (1, 2, 3))[0] is False


# --- sources -----------------------------------------------------------------------


def make_closure(offset):
    factor = 3

    def uses_everything(x, y=5, *rest, k=7, **kw):
        return x + y + offset + factor + len(rest) + k + len(kw) + SCALE

    return uses_everything


def make_unbound_cell():
    def reads_later(x):
        return later if x else None

    later = None
    del later
    return reads_later


def holds_on(frame, sources, checks):
    return _C.GuardProgram(sources, checks).check(frame)


def test_local_sources_follow_slot_order(frame_of):
    fn = make_closure(10)
    frame = frame_of(fn, 1, 2, 3, k=4, z=5)
    sources = [("local", slot, name) for slot, name in enumerate(fn.__code__.co_varnames[:5])]
    checks = [("eq", 0, 1), ("eq", 1, 2), ("eq", 2, 4), ("eq", 3, (3,)), ("dict_keys", 4, ("z",))]
    assert holds_on(frame, sources, checks)
    assert not holds_on(frame, sources[:1], [("eq", 0, 2)])


def test_local_slot_past_the_arguments_fails(frame_of):
    assert not holds_on(frame_of(takes_x, 1), [("local", 5, "ghost")], [("eq", 0, 1)])


def test_global_source(frame_of, monkeypatch):
    frame = frame_of(takes_x, 1)
    assert holds_on(frame, [("global", "SCALE")], [("eq", 0, 2)])
    assert not holds_on(frame, [("global", "NOT_A_GLOBAL_ANYWHERE")], [("eq", 0, 2)])
    monkeypatch.setitem(takes_x.__globals__, "SCALE", 3)
    assert not holds_on(frame_of(takes_x, 1), [("global", "SCALE")], [("eq", 0, 2)])


def test_builtin_source(frame_of):
    frame = frame_of(takes_x, 1)
    assert holds_on(frame, [("builtin", "len")], [("id", 0, len)])
    assert not holds_on(frame, [("builtin", "len")], [("id", 0, abs)])
    assert not holds_on(frame, [("builtin", "no_such_builtin")], [("eq", 0, None)])


def test_closure_source(frame_of):
    fn = make_closure(10)
    index = fn.__code__.co_freevars.index("offset")
    frame = frame_of(fn, 1, k=0)
    assert holds_on(frame, [("closure", index, "offset")], [("eq", 0, 10)])
    assert not holds_on(frame_of(make_closure(11), 1, k=0), [("closure", index, "offset")], [("eq", 0, 10)])


def test_empty_closure_cell_fails(frame_of):
    frame = frame_of(make_unbound_cell(), 0)
    assert not holds_on(frame, [("closure", 0, "later")], [("eq", 0, None)])


def test_attr_and_item_chains(frame_of):
    value = types.SimpleNamespace(layer={"weights": [types.SimpleNamespace(shape=(3, 4))]})
    frame = frame_of(takes_x, value)
    # x.layer["weights"][0].shape[1]
    sources = [("local", 0, "x"), ("attr", 0, "layer"), ("item", 1, "weights"), ("item", 2, 0), ("attr", 3, "shape"),
               ("item", 4, 1)]
    assert holds_on(frame, sources, [("eq", 5, 4), ("type", 1, dict), ("len", 2, 1)])
    assert not holds_on(frame, sources, [("eq", 5, 3)])


@pytest.mark.parametrize(
    "chain",
    [[("attr", 0, "missing")], [("attr", 0, "items"), ("item", 1, "missing")],
     [("attr", 0, "items"), ("item", 1, 7)], [("attr", 0, "count"), ("item", 1, 0)]],
    ids=["attribute", "key", "index", "not-subscriptable"],
)
def test_unreadable_source_fails_the_guard(frame_of, chain):
    frame = frame_of(takes_x, types.SimpleNamespace(items={"present": 1}, count=3))
    guard = _C.GuardProgram([("local", 0, "x"), *chain], [("eq", len(chain), 1)])
    assert guard.check(frame) is False
    assert isinstance(guard.first_failure(frame), str)


# --- arrays ------------------------------------------------------------------------


def array_spec(dtype="float64", shape=(4,), **extra):
    return {"type": np.ndarray, "dtype": dtype, "shape": shape, **extra}


# Each dtype with one it must not match: same kind and other size, other kind, other unit.
DTYPE_NEIGHBOURS = [
    ("bool", "uint8"), ("int8", "uint8"), ("int16", "int32"), ("int32", "int64"), ("int64", "uint64"),
    ("uint8", "int8"), ("uint16", "int16"), ("uint32", "uint64"), ("uint64", "int64"),
    ("float16", "float32"), ("float32", "float64"), ("float64", "longdouble"), ("longdouble", "float64"),
    ("complex64", "complex128"), ("complex128", "clongdouble"),
    ("datetime64[ns]", "datetime64[us]"), ("datetime64[D]", "timedelta64[D]"), ("timedelta64[s]", "timedelta64[ms]"),
    ("U5", "U6"), ("S3", "S4"), ("object", "int64"), ("V8", "V4"), (">i4", "<i4"),
    ([("a", "<i4"), ("b", "<f8")], [("a", "<i4"), ("c", "<f8")]),
]


@pytest.mark.parametrize(("dtype", "neighbour"), DTYPE_NEIGHBOURS, ids=lambda d: str(np.dtype(d)))
def test_array_dtype_for_every_kind(check_x, dtype, neighbour):
    if np.dtype(dtype) == np.dtype(neighbour):
        pytest.skip(f"{dtype} and {neighbour} are one dtype on this platform")
    checks = [("array", 0, array_spec(dtype))]
    assert check_x(checks, np.zeros(4, dtype=dtype)) == (True, None)
    assert check_x(checks, np.zeros(4, dtype=neighbour))[0] is False


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype("f4")], ids=["str", "scalar-type", "dtype"])
def test_array_dtype_accepts_what_numpy_dtype_accepts(check_x, dtype):
    assert check_x([("array", 0, array_spec(dtype))], np.zeros(4, np.float32))[0] is True


def test_array_dtype_failure_names_both_dtypes(check_x):
    _, reason = check_x([("array", 0, array_spec("float32"))], np.zeros(4))
    assert mentions(reason, "x", "float32", "float64"), reason


class MyArray(np.ndarray):
    pass


def test_array_type_is_exact(check_x):
    checks = [("array", 0, array_spec())]
    assert check_x(checks, np.zeros(4).view(MyArray))[0] is False
    assert check_x(checks, [0.0, 0.0, 0.0, 0.0])[0] is False
    assert check_x([("array", 0, {**array_spec(), "type": MyArray})], np.zeros(4).view(MyArray))[0] is True


def test_array_ndim(check_x):
    checks = [("array", 0, array_spec(shape=(None,)))]
    assert check_x(checks, np.zeros(7))[0] is True
    holds, reason = check_x(checks, np.zeros((7, 1)))
    assert not holds and mentions(reason, "x"), reason
    assert check_x(checks, np.zeros(()))[0] is False


def test_array_static_size_and_its_failure_text(check_x):
    checks = [("array", 0, array_spec(shape=(4,)))]
    assert check_x(checks, np.zeros(4))[0] is True
    _, reason = check_x(checks, np.zeros(5))
    # Documented form: "array 'x' size mismatch at index 0: expected 4, actual 5".
    for part in ("'x'", "size mismatch", "index 0", "expected 4", "actual 5"):
        assert part in reason, reason


def test_array_static_size_checks_every_dimension(check_x):
    checks = [("array", 0, array_spec(shape=(2, 3, None)))]
    assert check_x(checks, np.zeros((2, 3, 9)))[0] is True
    _, reason = check_x(checks, np.zeros((2, 4, 9)))
    assert "index 1" in reason and "expected 3" in reason and "actual 4" in reason, reason


@pytest.mark.parametrize(("size", "holds"), [(0, False), (1, False), (2, True), (1000, True)])
def test_array_symbolic_size_is_at_least_two(check_x, size, holds):
    assert check_x([("array", 0, array_spec(shape=("s0",)))], np.zeros(size))[0] is holds


@pytest.mark.parametrize("size", [0, 1, 2, 5])
def test_array_none_size_is_any_size(check_x, size):
    assert check_x([("array", 0, array_spec(shape=(None,)))], np.zeros(size))[0] is True


def test_same_symbol_means_equal_sizes_across_arrays(frame_of):
    guard = _C.GuardProgram(
        [("local", 0, "x"), ("local", 1, "y")],
        [("array", 0, array_spec(shape=("s0", "s1"))), ("array", 1, array_spec(shape=("s1",)))],
    )
    assert guard.check(frame_of(takes_xy, np.zeros((3, 5)), np.zeros(5)))
    assert guard.check(frame_of(takes_xy, np.zeros((5, 5)), np.zeros(5)))
    frame = frame_of(takes_xy, np.zeros((3, 5)), np.zeros(6))
    assert not guard.check(frame)
    assert mentions(guard.first_failure(frame), "y") or "s1" in guard.first_failure(frame)


def test_same_symbol_twice_in_one_shape(check_x):
    checks = [("array", 0, array_spec(shape=("s0", "s0")))]
    assert check_x(checks, np.zeros((3, 3)))[0] is True
    assert check_x(checks, np.zeros((3, 4)))[0] is False


def test_array_exact_strides(check_x):
    base = np.zeros((3, 4))  # strides (32, 8)
    assert check_x([("array", 0, array_spec(shape=(3, 4), strides=(32, 8)))], base)[0] is True
    assert check_x([("array", 0, array_spec(shape=(3, 4), strides=(32, None)))], base)[0] is True
    assert check_x([("array", 0, array_spec(shape=(3, 4), strides=(None, 8)))], base)[0] is True
    holds, reason = check_x([("array", 0, array_spec(shape=(4, 3), strides=(24, 8)))], base.T)
    assert not holds and mentions(reason, "x"), reason
    assert check_x([("array", 0, array_spec(shape=(3, 2), strides=(32, 8)))], base[:, ::2])[0] is False


@pytest.mark.parametrize(
    ("make", "layout", "holds"),
    [
        (lambda: np.zeros((3, 4)), "C", True),
        (lambda: np.zeros((3, 4)), "F", False),
        (lambda: np.zeros((3, 4), order="F"), "F", True),
        (lambda: np.zeros((3, 4), order="F"), "C", False),
        (lambda: np.zeros((3, 8))[:, ::2], "C", False),
        (lambda: np.zeros((3, 8))[:, ::2], "F", False),
        (lambda: np.zeros(6), "F", True),
    ],
    ids=["C-as-C", "C-as-F", "F-as-F", "F-as-C", "strided-as-C", "strided-as-F", "1d-as-F"],
)
def test_array_contiguity(check_x, make, layout, holds):
    value = make()
    assert check_x([("array", 0, array_spec(shape=(None,) * value.ndim, strides=layout))], value)[0] is holds


def test_non_contiguous_and_read_only_arrays_pass_an_unconstrained_guard(check_x):
    strided = np.zeros((4, 8))[:, ::2]
    broadcast = np.broadcast_to(np.zeros(4), (3, 4))  # read-only, zero strides
    assert check_x([("array", 0, array_spec(shape=(4, 4)))], strided)[0] is True
    assert check_x([("array", 0, array_spec(shape=(3, 4)))], broadcast)[0] is True
    assert check_x([("array", 0, array_spec(shape=(3, 4), strides=(0, 8)))], broadcast)[0] is True
    assert check_x([("array", 0, array_spec(shape=(3, 4), strides="C"))], broadcast)[0] is False


def test_array_writeable(check_x):
    writable = np.zeros(4)
    read_only = np.zeros(4)
    read_only.flags.writeable = False
    assert check_x([("array", 0, array_spec(writeable=True))], writable)[0] is True
    assert check_x([("array", 0, array_spec(writeable=False))], read_only)[0] is True
    assert check_x([("array", 0, array_spec(writeable=None))], read_only)[0] is True
    holds, reason = check_x([("array", 0, array_spec(writeable=True))], read_only)
    assert not holds and mentions(reason, "x"), reason
    assert check_x([("array", 0, array_spec(writeable=False))], writable)[0] is False


class FakeDevice:
    def __init__(self, id):
        self.id = id


class FakeDeviceArray:
    """Stands in for cupy.ndarray: an array type numpy does not know, on a device."""

    def __init__(self, shape, dtype="float32", device=0, strides=None):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape))
        self.itemsize = self.dtype.itemsize
        layout = np.empty(self.shape, self.dtype)  # only to get C strides and flags
        self.strides = tuple(strides) if strides is not None else layout.strides
        contiguous = self.strides == layout.strides
        self.flags = types.SimpleNamespace(c_contiguous=contiguous, f_contiguous=contiguous and self.ndim <= 1)
        self.device = FakeDevice(device)


def device_spec(**extra):
    return {"type": FakeDeviceArray, "dtype": "float32", "shape": (None, None), **extra}


def test_device_array_type_dtype_and_shape(check_x):
    assert check_x([("array", 0, device_spec(shape=(2, 3)))], FakeDeviceArray((2, 3)))[0] is True
    assert check_x([("array", 0, device_spec(shape=(2, 3)))], FakeDeviceArray((2, 4)))[0] is False
    assert check_x([("array", 0, device_spec())], FakeDeviceArray((2, 3), dtype="float64"))[0] is False
    assert check_x([("array", 0, device_spec())], np.zeros((2, 3), np.float32))[0] is False


def test_device_array_device_id(check_x):
    checks = [("array", 0, device_spec(device=1))]
    assert check_x(checks, FakeDeviceArray((2, 3), device=1))[0] is True
    holds, reason = check_x(checks, FakeDeviceArray((2, 3), device=0))
    assert not holds and mentions(reason, "x", "1", "0"), reason
    assert check_x([("array", 0, device_spec())], FakeDeviceArray((2, 3), device=5))[0] is True


def test_device_array_strides(check_x):
    strided = FakeDeviceArray((2, 3), strides=(24, 8))
    assert check_x([("array", 0, device_spec(strides=(12, 4)))], FakeDeviceArray((2, 3)))[0] is True
    assert check_x([("array", 0, device_spec(strides=(24, 8)))], strided)[0] is True
    assert check_x([("array", 0, device_spec(strides="C"))], FakeDeviceArray((2, 3)))[0] is True
    assert check_x([("array", 0, device_spec(strides="C"))], strided)[0] is False


# --- printing and failure texts ----------------------------------------------------


def test_str_has_one_line_per_check_mentioning_it():
    token = object()
    checks = [
        ("type", 0, int),
        ("id", 0, token),
        ("eq", 0, 12345),
        ("len", 0, 678),
        ("dict_keys", 0, ("alpha", "beta")),
        ("array", 0, array_spec("float32", shape=(4, "s0", None))),
        ("python", 0, bool, "custom check text"),
        ("eq", 1, 0.5),
        ("eq", 2, "ok"),
        ("eq", 3, 1),
    ]
    sources = [("local", 0, "x"), ("attr", 0, "weight"), ("item", 0, "key"), ("global", "SCALE")]
    lines = str(_C.GuardProgram(sources, checks)).splitlines()
    assert len(lines) == len(checks), lines
    for line in lines[:7]:
        assert mentions(line, "x"), line
    expected_words = [
        ["int"], [], ["12345"], ["678"], ["alpha", "beta"], ["float32", "4", "s0"],
        [], ["weight"], ["key"], ["SCALE"],
    ]
    for line, words in zip(lines, expected_words):
        assert mentions(line, *words), (line, words)
    assert "custom check text" in lines[6]


def test_first_failure_reports_the_failing_check(check_x):
    checks = [("type", 0, list), ("len", 0, 3), ("python", 0, lambda v: v[0] == 1, "x[0] == 1")]
    assert check_x(checks, [1, 2, 3]) == (True, None)
    _, reason = check_x(checks, [2, 2, 3])
    assert "x[0] == 1" in reason, reason
    _, reason = check_x(checks, [1, 2])
    assert mentions(reason, "3") and "x[0] == 1" not in reason, reason


def test_unreadable_source_failure_names_it(frame_of):
    guard = _C.GuardProgram([("local", 0, "x"), ("attr", 0, "missing_attribute")], [("eq", 1, 1)])
    reason = guard.first_failure(frame_of(takes_x, types.SimpleNamespace()))
    assert "missing_attribute" in reason, reason


# --- malformed programs ------------------------------------------------------------

X = [("local", 0, "x")]

MALFORMED = {
    "sources-not-a-sequence": (5, []),
    "checks-not-a-sequence": (X, 5),
    "source-not-a-tuple": (["local"], []),
    "unknown-source-kind": ([("register", 0)], []),
    "local-slot-not-int": ([("local", "0", "x")], []),
    "local-missing-name": ([("local", 0)], []),
    "global-name-not-str": ([("global", 5)], []),
    "attr-parent-is-itself": ([("attr", 0, "a")], []),
    "attr-parent-later": (X + [("attr", 2, "a"), ("local", 0, "y")], []),
    "item-parent-out-of-range": (X + [("item", 7, "k")], []),
    "check-not-a-tuple": (X, ["type"]),
    "unknown-check-kind": (X, [("isinstance", 0, int)]),
    "check-too-short": (X, [("type", 0)]),
    "check-source-out-of-range": (X, [("type", 1, int)]),
    "check-source-negative": (X, [("type", -1, int)]),
    "type-not-a-type": (X, [("type", 0, 5)]),
    "eq-list": (X, [("eq", 0, [1, 2])]),
    "eq-tuple-holding-list": (X, [("eq", 0, (1, [2]))]),
    "eq-arbitrary-object": (X, [("eq", 0, object())]),
    "len-not-int": (X, [("len", 0, "3")]),
    "dict-keys-not-a-tuple": (X, [("dict_keys", 0, 5)]),
    "array-spec-not-a-dict": (X, [("array", 0, [np.ndarray, "float32", (4,)])]),
    "array-missing-type": (X, [("array", 0, {"dtype": "float32", "shape": (4,)})]),
    "array-missing-dtype": (X, [("array", 0, {"type": np.ndarray, "shape": (4,)})]),
    "array-missing-shape": (X, [("array", 0, {"type": np.ndarray, "dtype": "float32"})]),
    "array-bad-dtype": (X, [("array", 0, array_spec("not-a-dtype"))]),
    "array-shape-not-a-tuple": (X, [("array", 0, array_spec(shape=4))]),
    "array-shape-float": (X, [("array", 0, array_spec(shape=(1.5,)))]),
    "array-strides-layout": (X, [("array", 0, array_spec(strides="K"))]),
    "array-strides-item": (X, [("array", 0, array_spec(strides=("8",)))]),
    "python-not-callable": (X, [("python", 0, 5, "text")]),
}


@pytest.mark.parametrize(("sources", "checks"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_program_is_rejected(sources, checks):
    with pytest.raises((TypeError, ValueError)):
        _C.GuardProgram(sources, checks)
