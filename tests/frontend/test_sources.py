"""pyjit/frontend/sources.py: each source kind reads its value from a real frame, in
Python (`resolve`) and in a compiled guard program (`guard_entry`), prints as the guard
program prints it, and a source that cannot be read fails the guard without raising."""

import dataclasses

import numpy as np
import pytest

from pyjit import _C
from pyjit.frontend.sources import AttrSource, BuiltinSource, ClosureSource, GlobalSource, ItemSource, LocalSource

SCALE = 2.5


class Layer:
    def __init__(self):
        self.weight = np.ones(3)


class Model:
    def __init__(self):
        self.layers = [Layer(), Layer()]
        self.config = {"act": "relu"}


def make_function():
    offset = [7]

    def function(x, y=10, *args, scale=0.5, **kwargs):
        return x, y, args, scale, kwargs, offset, SCALE, len

    return function


FUNCTION = make_function()
MODEL = Model()
X = LocalSource(0, "x")
ARGS = LocalSource(3, "args")

# source, the value it names in FUNCTION(MODEL, 1, 2, 3, flag=True), its text
CASES = {
    "local": (X, MODEL, "x"),
    "local-keyword-only": (LocalSource(2, "scale"), 0.5, "scale"),
    "local-varargs": (ARGS, (2, 3), "args"),
    "local-varkw-item": (LocalSource(4, "kwargs").item("flag"), True, "kwargs['flag']"),
    "global": (GlobalSource("SCALE"), SCALE, "SCALE"),
    "builtin": (BuiltinSource("len"), len, "len"),
    "closure": (ClosureSource(0, "offset"), FUNCTION.__closure__[0].cell_contents, "offset"),
    "attr-item-attr": (X.attr("layers").item(1).attr("weight"), MODEL.layers[1].weight, "x.layers[1].weight"),
    "attr-item-str": (X.attr("config").item("act"), "relu", "x.config['act']"),
    "item-of-varargs": (ARGS.item(1), 3, "args[1]"),
}


@pytest.fixture
def frame(frame_of):
    return frame_of(FUNCTION, MODEL, 1, 2, 3, flag=True)


def program(source, checks_on_it):
    """A guard program reading `source` (its parents first) with `checks_on_it`, each
    a (kind, operand) applied to it."""
    chain = [source]
    while chain[0].parent is not None:
        chain.insert(0, chain[0].parent)
    entries = [link.guard_entry(None if index == 0 else index - 1) for index, link in enumerate(chain)]
    return _C.GuardProgram(entries, [(kind, len(chain) - 1, operand) for kind, operand in checks_on_it])


@pytest.mark.parametrize(("source", "value", "text"), CASES.values(), ids=CASES.keys())
def test_each_kind_resolves_in_python_and_in_a_guard_program(frame, source, value, text):
    assert source.resolve(frame) is value or (type(value) is tuple and source.resolve(frame) == value)
    guard = program(source, [("type", type(value)), ("id", source.resolve(frame))])
    assert guard.check(frame), guard.first_failure(frame)


@pytest.mark.parametrize(("source", "value", "text"), CASES.values(), ids=CASES.keys())
def test_text_is_the_expression_the_guard_program_prints(source, value, text):
    assert str(source) == text
    assert str(program(source, [("type", type(value))])).startswith(f"type({text}) is ")


def test_guard_on_a_changed_value_fails_naming_the_source(frame_of):
    source = X.attr("layers").item(0).attr("weight")
    guard = program(source, [("id", MODEL.layers[0].weight)])
    other = Model()
    frame = frame_of(FUNCTION, other)
    assert not guard.check(frame)
    assert "x.layers[0].weight" in guard.first_failure(frame)


def make_function_with_empty_cell():
    def function(x):
        return x if x is not None else later

    return function
    later = 1  # noqa: F841  (never runs: the cell stays empty)


UNREADABLE = {
    "missing-attribute": (FUNCTION, X.attr("missing_attribute"), AttributeError),
    "missing-key": (FUNCTION, X.attr("config").item("missing_key"), KeyError),
    "index-out-of-range": (FUNCTION, X.attr("layers").item(5), IndexError),
    "missing-global": (FUNCTION, GlobalSource("MISSING_GLOBAL"), KeyError),
    "missing-builtin": (FUNCTION, BuiltinSource("missing_builtin"), KeyError),
    "empty-cell": (make_function_with_empty_cell(), ClosureSource(0, "later"), ValueError),
}


@pytest.mark.parametrize(("function", "source", "error"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_unreadable_source_raises_in_python_and_fails_the_guard(frame_of, function, source, error):
    frame = frame_of(function, MODEL)
    with pytest.raises(error):
        source.resolve(frame)
    guard = program(source, [("type", int)])
    assert guard.check(frame) is False
    assert guard.first_failure(frame)


def test_sources_are_immutable_hashable_values():
    weight = X.attr("layers").item(0).attr("weight")
    assert weight == LocalSource(0, "x").attr("layers").item(0).attr("weight")
    assert len({weight, X.attr("layers").item(0).attr("weight"), X}) == 2
    assert LocalSource(0, "x") != GlobalSource("x")
    assert ItemSource(X, 1) == ItemSource(X, True)  # as dict keys: the same item
    with pytest.raises(dataclasses.FrozenInstanceError):
        weight.name = "bias"


def test_root_and_parent():
    weight = X.attr("layers").item(0).attr("weight")
    assert weight.root is X and X.root is X
    assert weight.parent == X.attr("layers").item(0)
    assert X.parent is None and GlobalSource("np").parent is None


def test_bad_attribute_names_and_keys_are_type_errors():
    with pytest.raises(TypeError):
        AttrSource(X, 0)
    with pytest.raises(TypeError):
        ItemSource(X, [0])
