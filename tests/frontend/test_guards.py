"""pyjit/frontend/guards.py: every guard kind holds on the frame it was built from, and
fails with one readable reason when the thing it guards changes; recording dedups and
orders; ShapeEnv relations become checks; `changed_dims` finds the sizes that changed.

Guards are built on a real frame (the `frame_of` fixture, NOTE(hooked-tests)) and
compiled with it, so `GuardSet.compile(frame)` also checks each holds where it came from.
"""

import sys
import threading
import types

import numpy as np
import pytest

import pyjit
from pyjit.frontend.guards import DimChange, GuardSet, changed_dims
from pyjit.frontend.sources import BuiltinSource, GlobalSource, LocalSource
from pyjit.graph import ShapeEnv
from pyjit.nn import Parameter

SCALE = 2
X, Y = LocalSource(0, "x"), LocalSource(1, "y")


def one(x):
    return x


def two(x, y):
    return x, y


def reads_globals(x):
    return len(x) * SCALE if x else None  # called with None once SCALE is gone


@pytest.fixture
def build(frame_of):
    """build(record, fn, *args) -> (program, call): `record(guards)` fills a GuardSet for
    the frame of fn(*args); `call(*other_args)` is the frame of another call of fn."""

    def run(record, fn, *args):
        frame = frame_of(fn, *args)
        guards = GuardSet(frame.f_globals)
        record(guards)
        return guards.compile(frame), lambda *other: frame_of(fn, *other)

    return run


def fails(program, frame, *words):
    """`program` rejects `frame`, with a reason that mentions each of `words`."""
    assert program.check(frame) is False
    reason = program.first_failure(frame)
    assert all(word in reason for word in words), reason
    return reason


def holds(program, frame):
    assert program.check(frame), program.first_failure(frame)
    return True


# --- type, identity, constants, length, dict keys -------------------------------------


def test_type(build):
    program, call = build(lambda g: g.type(X, int), one, 3)
    assert str(program) == "type(x) is int"
    holds(program, call(4))
    fails(program, call(True), "x", "int", "bool")


def test_identity(build):
    token = object()
    program, call = build(lambda g: g.identity(X, token), one, token)
    holds(program, call(token))
    fails(program, call(object()), "x")


class Counter:
    def step(self):
        return self


COUNTER, OTHER_COUNTER = Counter(), Counter()

# value guarded, an equal value (another object where that can be), a changed value
CONSTANTS = {
    "int": (3, 3, 4),
    "negative-zero": (0.0, 0.0, -0.0),
    "nested-tuple": ((1, ("a", None)), (1, ("a", None)), (1, ("b", None))),
    "list-item": ([1, 2], [1, 2], [1, 3]),
    "list-length": ([1, 2], [1, 2], [1, 2, 3]),
    "dict-value": ({"a": 1}, {"a": 1}, {"a": 2}),
    "dict-keys": ({"a": 1}, {"a": 1}, {"b": 1}),
    "tuple-of-dtypes": ((np.dtype("f4"), 2), (np.dtype("f4"), 2), (np.dtype("f8"), 2)),
    "slice": (slice(0, 4), slice(0, 4), slice(0, 5)),
    "dtype": (np.dtype("<f4"), np.dtype("float32"), np.dtype(">f4")),
    "numpy-scalar": (np.float32(1.5), np.float32(1.5), np.float32(2.5)),
    "module": (np, np, types),
    "function": (one, one, two),
    "bound-method": (COUNTER.step, COUNTER.step, OTHER_COUNTER.step),
}


@pytest.mark.parametrize(("value", "equal", "changed"), CONSTANTS.values(), ids=CONSTANTS.keys())
def test_constant(build, value, equal, changed):
    program, call = build(lambda g: g.constant(X, value), one, value)
    holds(program, call(equal))
    fails(program, call(changed), "x")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, ["x == 3"]),
        ((1, "a"), ["x == (1, 'a')"]),
        ([1.5], ["type(x) is list", "len(x) == 1", "x[0] == 1.5"]),
        ({"k": None}, ["tuple(x) == ('k',)", "x['k'] == None"]),
        (np.dtype("float32"), ["type(x) is numpy.dtypes.Float32DType", "dtype('float32').__eq__(x)"]),
        (COUNTER.step, ["type(x) is method", "x.__func__ is <function Counter.step", "x.__self__ is <"]),
        (np, ["x is <module 'numpy'"]),
    ],
    ids=["eq", "eq-tuple", "list", "dict", "dtype", "bound-method", "module"],
)
def test_which_check_a_constant_becomes(build, value, text):
    program, _ = build(lambda g: g.constant(X, value), one, value)
    lines = str(program).splitlines()
    assert len(lines) == len(text) and all(line.startswith(start) for line, start in zip(lines, text)), lines


def test_length_and_dict_keys(build):
    program, call = build(lambda g: g.length(X, 2), one, [1, 2])
    holds(program, call((3, 4)))
    fails(program, call([1]), "x", "2")
    program, call = build(lambda g: g.dict_keys(X, ["a", "b"]), one, {"a": 1, "b": 2})
    holds(program, call({"a": 3, "b": 4}))
    fails(program, call({"b": 2, "a": 1}), "x", "keys")


# --- arrays and tensors ---------------------------------------------------------------


def read_only(array):
    array.flags.writeable = False
    return array


# array() arguments, the example, another array that passes, one that fails, reason words
ARRAYS = {
    "dtype": ({}, np.zeros(3, "f4"), np.ones(3, "f4"), np.zeros(3, "f8"), ["x", "dtype", "float32"]),
    "ndim": ({}, np.zeros((3, 4)), np.ones((3, 4)), np.zeros(12), ["x", "ndim"]),
    "static-size": ({}, np.zeros((3, 4)), np.ones((3, 4)), np.zeros((3, 5)), ["x", "size", "4", "5"]),
    "symbolic-size": ({"shape": ("s0", 4)}, np.zeros((3, 4)), np.zeros((9, 4)), np.zeros((1, 4)), ["x", "s0"]),
    "symbol-twice": ({"shape": ("s0", "s0")}, np.zeros((3, 3)), np.zeros((5, 5)), np.zeros((5, 6)), ["x", "s0"]),
    "any-size": ({"shape": (None, 4)}, np.zeros((3, 4)), np.zeros((1, 4)), np.zeros((1, 5)), ["x", "4"]),
    "contiguity": ({"strides": "C"}, np.zeros((3, 4)), np.ones((3, 4)), np.zeros((3, 8))[:, ::2],
                   ["x", "C-contiguous"]),
    "exact-strides": ({"strides": "exact"}, np.zeros((3, 4)), np.ones((3, 4)), np.zeros((4, 3)).T, ["x", "stride"]),
    "writeable": ({"writeable": True}, np.zeros(3), np.ones(3), read_only(np.zeros(3)), ["x", "read-only"]),
    "array-type": ({}, np.zeros(3), np.ones(3), np.ma.zeros(3), ["x", "type"]),
}


@pytest.mark.parametrize(("kwargs", "example", "other", "changed", "words"), ARRAYS.values(), ids=ARRAYS.keys())
def test_array(build, kwargs, example, other, changed, words):
    program, call = build(lambda g: g.array(X, example, **kwargs), one, example)
    holds(program, call(other))
    fails(program, call(changed), *words)


def test_two_arrays_sharing_a_symbol(build):
    program, call = build(lambda g: (g.array(X, np.zeros((3, 4)), ("s0", 4)), g.array(Y, np.zeros(3), ("s0",))),
                          two, np.zeros((3, 4)), np.zeros(3))
    holds(program, call(np.zeros((7, 4)), np.zeros(7)))
    fails(program, call(np.zeros((7, 4)), np.zeros(8)), "y", "s0", "7", "8")


class FakeDevice:
    def __init__(self, id):
        self.id = id


class DeviceArray:
    """Stands in for a cupy.ndarray: an array on a device, read through attributes."""

    def __init__(self, device):
        self.dtype, self.shape, self.strides, self.device = np.dtype("f4"), (2,), (4,), FakeDevice(device)


def test_array_on_a_device(build):
    program, call = build(lambda g: g.array(X, DeviceArray(1)), one, DeviceArray(1))
    assert "device=1" in str(program)
    holds(program, call(DeviceArray(1)))
    fails(program, call(DeviceArray(0)), "x", "device")


def tensor(shape=(3,), dtype="f4", requires_grad=True, cls=pyjit.Tensor):
    return cls(np.zeros(shape, dtype), requires_grad=requires_grad)


TENSORS = {
    "requires-grad": (tensor(requires_grad=False), ["x._requires_grad", "True", "False"]),
    "dtype": (tensor(dtype="f8"), ["x._array", "dtype"]),
    "size": (tensor(shape=(4,)), ["x._array", "size", "3", "4"]),
    "type": (tensor(cls=Parameter), ["x", "Tensor", "Parameter"]),
}


@pytest.mark.parametrize(("changed", "words"), TENSORS.values(), ids=TENSORS.keys())
def test_tensor(build, changed, words):
    program, call = build(lambda g: g.tensor(X, tensor()), one, tensor())
    assert str(program).splitlines() == [
        "type(x) is pyjit.autograd.tensor.Tensor",
        "x._array is numpy.ndarray(dtype=float32, shape=(3,))",
        "x._requires_grad == True",
    ]
    holds(program, call(tensor()))
    fails(program, call(changed), *words)


def test_tensor_with_a_symbolic_size_and_contiguity(build):
    program, call = build(lambda g: g.tensor(X, tensor((3, 4)), ("s0", 4), strides="C"), one, tensor((3, 4)))
    holds(program, call(tensor((8, 4))))
    fails(program, call(tensor((1, 4))), "x._array", "s0")
    fails(program, call(pyjit.Tensor(np.zeros((3, 8), "f4")[:, ::2], requires_grad=True)), "C-contiguous")


def test_array_refuses_a_tensor():
    with pytest.raises(TypeError, match="tensor"):
        GuardSet().array(X, tensor())


@pytest.mark.parametrize(
    ("example", "kwargs", "message"),
    [
        (np.zeros((1, 4)), {"shape": ("s0", 4)}, "never symbolic"),
        (np.zeros((3, 4)), {"shape": (3, 5)}, "not 5"),
        (np.zeros((3, 4)), {"shape": (3,)}, "dimensions"),
        (np.zeros((3, 4)), {"shape": ("s0", 4), "strides": "exact"}, "symbolic"),
    ],
    ids=["symbol-for-size-1", "wrong-static-size", "wrong-ndim", "exact-strides-of-symbolic-sizes"],
)
def test_array_arguments_that_cannot_describe_the_example(example, kwargs, message):
    with pytest.raises(ValueError, match=message):
        GuardSet().array(X, example, **kwargs)


def test_compile_refuses_guards_its_own_frame_fails(frame_of):
    frame = frame_of(one, np.zeros((3, 8))[:, ::2])
    guards = GuardSet()
    guards.array(X, frame.args[0], strides="C")
    with pytest.raises(RuntimeError, match="C-contiguous"):
        guards.compile(frame)
    assert guards.compile()  # without the frame, nothing is checked


# --- grad mode, globals, builtins -----------------------------------------------------


def test_grad_mode(build):
    program, call = build(lambda g: g.grad_mode(), one, 1)
    holds(program, call(1))
    with pyjit.no_grad():
        fails(program, call(1), "is_grad_enabled")
        program, call = build(lambda g: g.grad_mode(), one, 1)
        holds(program, call(1))
    fails(program, call(1), "not is_grad_enabled")


def test_a_rebound_or_deleted_global_fails(build, monkeypatch):
    program, call = build(lambda g: g.constant(GlobalSource("SCALE"), SCALE), reads_globals, [1])
    holds(program, call([1]))
    monkeypatch.setitem(globals(), "SCALE", 3)
    fails(program, call([1]), "SCALE", "2", "3")
    monkeypatch.delitem(globals(), "SCALE")
    fails(program, call(None), "SCALE")


def test_a_builtin_shadowed_by_a_global_fails(build, monkeypatch):
    program, call = build(lambda g: g.identity(BuiltinSource("len"), len), reads_globals, [1])
    assert "'len' not in globals" in str(program)
    holds(program, call([1]))
    monkeypatch.setitem(globals(), "len", lambda value: 1)
    fails(program, call([1]), "'len' not in globals")


def test_a_builtin_guard_needs_the_globals():
    guards = GuardSet()
    guards.identity(BuiltinSource("len"), len)
    with pytest.raises(ValueError, match="globals"):
        guards.compile()


# --- deduplication, conflicts, order --------------------------------------------------


def test_recording_a_guard_twice_keeps_one(build):
    inputs = types.SimpleNamespace(a=np.zeros(3), t=tensor())

    def record(g):
        for _ in range(2):
            g.type(Y, int)
            g.constant(Y, 3)
            g.array(X.attr("a"), inputs.a)
            g.tensor(X.attr("t"), inputs.t)
            g.grad_mode()
            g.python(X.attr("a"), len, "len")

    program, _ = build(record, two, inputs, 3)
    lines = str(program).splitlines()
    assert len(lines) == len(set(lines)) == 8, lines


@pytest.mark.parametrize(
    "record",
    [
        lambda g: (g.type(X, int), g.type(X, float)),
        lambda g: (g.constant(X, 1), g.constant(X, True)),
        lambda g: (g.constant(X, 0.0), g.constant(X, -0.0)),
        lambda g: (g.length(X, 1), g.length(X, 2)),
        lambda g: (g.array(X, np.zeros(3)), g.array(X, np.zeros(4))),
        lambda g: (g.grad_mode(True), g.grad_mode(False)),
    ],
    ids=["type", "int-and-bool", "zero-signs", "length", "array", "grad-mode"],
)
def test_conflicting_guards_are_refused(record):
    with pytest.raises(ValueError, match="conflicting"):
        record(GuardSet())


def test_parents_come_first_and_arguments_by_slot(build):
    weights = types.SimpleNamespace(weight=np.zeros(2))

    def record(g):
        g.grad_mode()
        g.identity(Y.attr("weight"), weights.weight)
        g.constant(GlobalSource("SCALE"), SCALE)
        g.type(X, int)
        g.type(Y, types.SimpleNamespace)

    program, _ = build(record, two, 1, weights)
    lines = str(program).splitlines()
    assert [line.split(" ")[0] for line in lines] == ["type(x)", "type(y)", "y.weight", "SCALE", "is_grad_enabled()"]


# --- shape relations from the ShapeEnv ------------------------------------------------


@pytest.fixture
def sized(build):
    """sized(relate, x_shape, y_shape) -> (program, call, guards): guards on two arrays x and
    y, each dimension of size >= 2 symbolic; `relate(sx, sy)` gets their SymInts and
    compares them, which records the ShapeEnv's guards."""

    def run(relate, x_shape, y_shape):
        env = ShapeEnv()
        x, y = np.zeros(x_shape), np.zeros(y_shape)
        sx = [env.create_symbol(size, f"x.shape[{dim}]") for dim, size in enumerate(x_shape)]
        sy = [env.create_symbol(size, f"y.shape[{dim}]") for dim, size in enumerate(y_shape)]
        relate(sx, sy)
        guard_sets = []

        def record(g):
            g.array(X, x, sx)
            g.array(Y, y, sy)
            guard_sets.append(g)

        program, call = build(record, two, x, y)
        return program, lambda x_shape, y_shape: call(np.zeros(x_shape), np.zeros(y_shape)), guard_sets[0]

    return run


def test_learnt_equality_becomes_a_shared_symbol(sized):
    program, call, guards = sized(lambda sx, sy: sx[0] == sy[0], (3,), (3,))
    assert [array.shape for array in guards.arrays] == [("s0",), ("s0",)]
    assert str(program).splitlines() == ["x is numpy.ndarray(dtype=float64, shape=(s0,))",
                                         "y is numpy.ndarray(dtype=float64, shape=(s0,))"]
    holds(program, call((5,), (5,)))
    fails(program, call((5,), (6,)), "y", "s0")


@pytest.mark.parametrize("relate", [lambda sx, sy: int(sx[0]), lambda sx, sy: sx[0] == 3],
                         ids=["specialised", "compared"])
def test_learnt_constant_becomes_a_static_size(sized, relate):
    program, call, guards = sized(relate, (3,), (4,))
    assert str(program).splitlines()[0] == "x is numpy.ndarray(dtype=float64, shape=(3,))"
    assert [array.shape for array in guards.arrays] == [(3,), ("s1",)]
    holds(program, call((3,), (9,)))
    fails(program, call((4,), (4,)), "x", "3", "4")


def test_relation_across_arrays_becomes_a_python_check(sized):
    program, call, _ = sized(lambda sx, sy: sx[0] > sy[0], (5,), (3,))
    assert str(program).splitlines()[-1] == "x.shape[0] > y.shape[0]"
    holds(program, call((9,), (8,)))
    fails(program, call((8,), (9,)), "x.shape[0] > y.shape[0]")


def test_remainder_relation(sized):
    program, call, _ = sized(lambda sx, sy: sx[0] * sy[1] // 2, (3,), (2, 4))
    assert "(x.shape[0]*y.shape[1]) % 2 == 0" in str(program)
    holds(program, call((5,), (3, 6)))
    fails(program, call((5,), (3, 7)), "% 2 == 0")


def test_equality_with_an_expression_keeps_the_symbol_and_adds_the_relation(sized):
    program, call, guards = sized(lambda sx, sy: sy[0] == sx[0] + 1, (3,), (4,))
    assert [array.shape for array in guards.arrays] == [("s0",), ("s1",)]
    assert "y.shape[0] == x.shape[0] + 1" in str(program)
    holds(program, call((6,), (7,)))
    fails(program, call((6,), (6,)), "y.shape[0] == x.shape[0] + 1")


def test_relations_the_symbol_bounds_imply_are_dropped(sized):
    def relate(sx, sy):
        assert sx[0] > 1 and sx[0] >= 2 and sx[0] != 0 and 1 < sx[0] and sx[0] * sy[0] + sy[0] >= 6

    program, _, _ = sized(relate, (3,), (4,))
    assert len(str(program).splitlines()) == 2, str(program)


def test_relation_checks_agree_with_the_shape_env(sized):
    envs = []

    def relate(sx, sy):
        envs.append(sx[0].env)
        assert (3 * sx[0]) // 2 > sy[0]  # records (3*s0) % 2 == 0 and 3/2*s0 > s1
        assert sx[0] * sy[0] % 3 == 2

    program, call, _ = sized(relate, (4,), (5,))
    assert len(envs[0].guards) == 3
    for x_size in range(2, 10):
        for y_size in range(2, 10):
            expected = all(guard.holds({"s0": x_size, "s1": y_size}) for guard in envs[0].guards)
            assert program.check(call((x_size,), (y_size,))) is expected, (x_size, y_size)


def test_threads_checking_one_relation_keep_their_own_sizes(sized):
    program, call, _ = sized(lambda sx, sy: sx[0] > sy[0], (5,), (3,))
    cases = [(call((9,), (8,)), True), (call((8,), (9,)), False)]
    results = [[] for _ in cases]

    def hammer(results, frame):
        results += [program.check(frame) for _ in range(3000)]

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython will
    try:
        threads = [threading.Thread(target=hammer, args=(out, frame)) for out, (frame, _) in zip(results, cases)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert [set(out) for out in results] == [{expected} for _, expected in cases]


def test_a_relation_on_a_symbol_no_array_binds_is_refused(frame_of):
    env = ShapeEnv()
    s0, s1 = env.create_symbol(3, "x.shape[0]"), env.create_symbol(4, "z.shape[0]")
    assert s0 < s1
    guards = GuardSet()
    guards.array(X, np.zeros(3), (s0,))
    with pytest.raises(ValueError, match=r"s1 \(z.shape\[0\]\)"):
        guards.compile()


# --- automatic dynamic shapes ---------------------------------------------------------


def test_changed_dims_names_the_static_sizes_that_changed(frame_of):
    guards = GuardSet()
    guards.array(X, np.zeros((3, 4, 5)), (3, "s0", 5))
    guards.tensor(Y, tensor((2, 6)))
    frame = frame_of(two, np.zeros((3, 8, 1)), tensor((2, 7)))
    assert changed_dims(guards.arrays, frame) == [DimChange(X, 2, 5, 1), DimChange(Y, 1, 6, 7)]
    assert changed_dims(guards.arrays, frame_of(two, np.zeros((3, 4, 5)), tensor((2, 6)))) == []


def test_changed_dims_skips_inputs_that_are_no_longer_such_arrays(frame_of):
    guards = GuardSet()
    guards.array(X, np.zeros((3, 4)))
    guards.array(Y.attr("weight"), np.zeros(2))
    assert changed_dims(guards.arrays, frame_of(two, np.zeros(12), object())) == []
