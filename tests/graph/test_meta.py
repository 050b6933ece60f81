"""pyjit/graph/meta.py: TensorMeta and broadcasting, concrete and symbolic."""

import itertools

import numpy as np
import pytest

from pyjit.graph import ShapeEnv, TensorMeta, broadcast_shapes
from pyjit.graph.meta import could_be_one, dtype_abbreviation


def test_of_describes_an_array():
    array = np.zeros((2, 3), dtype=np.float32)
    meta = TensorMeta.of(array)
    assert meta.shape == (2, 3) and meta.dtype == np.float32 and meta.device == "cpu"
    assert (meta.ndim, meta.numel) == (2, 6)
    assert TensorMeta.of(np.float64(1.0)).shape == ()
    assert TensorMeta.of(np.ones((0, 5), dtype=bool)).numel == 0


def test_fields_are_normalised():
    meta = TensorMeta([2, 3], "float64")
    assert meta.shape == (2, 3) and type(meta.shape) is tuple
    assert meta.dtype == np.dtype(np.float64) and isinstance(meta.dtype, np.dtype)
    assert meta.with_(dtype=np.int8).dtype == np.int8
    assert meta.with_(dtype=np.int8).shape == (2, 3)


@pytest.mark.parametrize("dtype, text", [
    (np.float32, "f32"), (np.float64, "f64"), (np.int64, "i64"), (np.uint8, "u8"),
    (np.bool_, "b8"), (np.complex64, "c64"), (np.float16, "f16"),
])
def test_dtype_abbreviation(dtype, text):
    assert dtype_abbreviation(np.dtype(dtype)) == text


def test_str_form_shows_dtype_sizes_and_a_non_default_device():
    s0 = ShapeEnv().create_symbol(5)
    assert str(TensorMeta((s0, 4), np.float32)) == "f32[s0, 4]"
    assert str(TensorMeta((), np.int64)) == "i64[]"
    assert str(TensorMeta((2 * s0,), np.bool_, "cuda:0")) == "b8[2*s0] @cuda:0"


def test_same_as_compares_structurally_without_guards():
    env = ShapeEnv()
    s0, s1 = env.create_symbol(3), env.create_symbol(3)
    meta = TensorMeta((s0, 2), np.float32)
    assert meta.same_as(TensorMeta((s0, 2), np.float32))
    assert not meta.same_as(TensorMeta((s1, 2), np.float32))
    assert not meta.same_as(TensorMeta((3, 2), np.float32))
    assert not meta.same_as(TensorMeta((s0, 2), np.float64))
    assert not meta.same_as(TensorMeta((s0,), np.float32))
    assert env.guards == []


CONCRETE_SHAPES = [(), (1,), (0,), (3,), (4,), (1, 3), (2, 1), (2, 3), (0, 3), (3, 0), (1, 0),
                   (2, 1, 1), (5, 1, 3), (4, 2, 3), (1, 1, 1, 1)]


@pytest.mark.parametrize("shapes", [pair for pair in itertools.product(CONCRETE_SHAPES, repeat=2)]
                         + [((2, 1), (1, 3), (4, 1, 1)), ((3,), (2, 3), (0, 1, 1)), ((2, 3), (3,), (3, 2)), ()])
def test_concrete_broadcasting_matches_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="could not be broadcast"):
            broadcast_shapes(*shapes)
    else:
        assert broadcast_shapes(*shapes) == expected


def test_symbol_meets_one_without_a_guard():
    env = ShapeEnv()
    s0 = env.create_symbol(4)
    assert broadcast_shapes((s0, 1), (1, 3)) == (s0, 3)
    assert broadcast_shapes((1,), (2, s0)) == (2, s0)
    assert env.guards == []


def test_symbol_meets_itself_without_a_guard():
    env = ShapeEnv()
    s0 = env.create_symbol(4)
    assert broadcast_shapes((s0, 2), (s0, 2)) == (s0, 2)
    assert env.guards == []


def test_two_symbols_meet_by_a_recorded_equality():
    env = ShapeEnv()
    s0, s1 = env.create_symbol(4), env.create_symbol(4)
    (size,) = broadcast_shapes((s0,), (s1,))
    assert str(size) == "s0"
    assert env.guard_texts() == ["s0 == s1"]
    assert str(s1 + 1) == "s0 + 1"  # and s1 stands for s0 from then on


def test_two_symbols_with_different_hints_do_not_broadcast():
    env = ShapeEnv()
    s0, s1 = env.create_symbol(4), env.create_symbol(5)
    with pytest.raises(ValueError, match=r"\(s0,\) \(s1,\)"):
        broadcast_shapes((s0,), (s1,))
    assert env.guard_texts() == ["s0 != s1"]


def test_symbol_meets_a_constant_by_a_recorded_equality():
    env = ShapeEnv()
    s0 = env.create_symbol(3)
    for shapes in [((s0, 2), (3, 2)), ((3, 1), (s0, 2))]:
        size, two = broadcast_shapes(*shapes)
        assert type(size) is int and (size, two) == (3, 2)  # the constant, whatever the order
    assert env.guard_texts() == ["s0 == 3"]
    assert s0 + 1 == 4 and type(s0 + 1) is int


@pytest.mark.parametrize("constant", [0, 2, 4])
def test_symbol_meets_a_different_constant_with_numpys_error(constant):
    env = ShapeEnv()
    s0 = env.create_symbol(3)
    with pytest.raises(ValueError, match="could not be broadcast"):
        broadcast_shapes((s0,), (constant,))


def test_size_zero_broadcasts_with_one_and_only_with_one():
    env = ShapeEnv()
    s0 = env.create_symbol(3)
    assert broadcast_shapes((0, 1), (1, s0)) == (0, s0)
    with pytest.raises(ValueError):
        broadcast_shapes((0,), (s0,))


def test_could_be_one():
    env = ShapeEnv()
    s0 = env.create_symbol(3)
    assert could_be_one(1) and not could_be_one(0) and not could_be_one(2)
    assert not could_be_one(s0)
    assert could_be_one(s0 - 2)
    assert env.guards == []
