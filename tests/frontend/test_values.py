"""pyjit/frontend/values.py: NumPy functions map to registry entries by identity (with
NumPy's aliases), constant values give their Python value, and values are described in
plain words for break reasons."""

import collections

import numpy as np
import pytest
from frontend.test_interpreter import _Disguised

from pyjit.frontend.values import (NULL, ArrayValue, CallableValue, ConstantValue, DictValue, IteratorValue,
                                   ModuleValue, ObjectValue, SequenceValue, describe, is_constant, python_value,
                                   registry_entry)
from pyjit.graph import Graph, TensorMeta
from pyjit.ops import REGISTRY


def test_numpy_functions_map_to_entries():
    assert registry_entry(np.sin) is REGISTRY["sin"]
    assert registry_entry(np.absolute) is REGISTRY["abs"]
    assert registry_entry(np.mean) is REGISTRY["mean"]
    assert registry_entry(np.fft.fft) is REGISTRY["fft"]  # NOTE(numpy-names)
    assert registry_entry(np.linalg.diagonal) is None  # not numpy.diagonal, whose axes differ
    assert registry_entry(np.unwrap) is None
    assert registry_entry(lambda x: x) is None


def test_python_values_of_constants():
    pair = SequenceValue(tuple, [ConstantValue(1), SequenceValue(list, [ConstantValue("a")])])
    assert python_value(pair) == (1, ["a"])
    node = Graph().placeholder("x", TensorMeta((2,), np.float32))
    for value in (ArrayValue(node), SequenceValue(tuple, [ArrayValue(node)]), NULL, ModuleValue(np),
                  ObjectValue(object())):
        assert not is_constant(value)
        with pytest.raises(LookupError):
            python_value(value)


def test_an_iterator_over_a_list_reads_the_list_as_it_is_now():
    items = SequenceValue(list, [ConstantValue(1)])
    iterator = IteratorValue(items.items, of_list=items)
    assert python_value(iterator.next_item()) == 1 and iterator.next_item() is None
    items.items.append(ConstantValue(2))  # Python's list iterator sees what is appended
    assert [python_value(item) for item in iterator.remaining()] == [2]
    assert python_value(iterator.next_item()) == 2 and iterator.remaining() == []
    assert not is_constant(iterator)


def test_values_are_described_in_plain_words_for_break_reasons():
    node = Graph().placeholder("x", TensorMeta((2,), np.float32))
    cases = [(ArrayValue(node), "an array"), (ArrayValue(node, tensor=True), "a pyjit.Tensor"),
             (SequenceValue(list, []), "a list"), (DictValue({}, kind=set), "a set"),
             (IteratorValue([]), "an iterator"), (ModuleValue(np), "the module numpy"),
             (ConstantValue(3), "the int 3"), (ConstantValue(None), "None"),
             (ConstantValue(np.dtype), "the class numpy.dtype"),
             (CallableValue("builtin", print), "the function print"),
             (CallableValue("numpy", np.exp), "the function numpy.exp"),
             (ObjectValue(np.sort), "the function numpy.sort"),
             (ObjectValue(np.linalg.solve), "the function numpy.linalg.solve"),
             (ObjectValue(np.fft.fft), "the function numpy.fft.fft"),
             (CallableValue("method", "sum", ArrayValue(node)), "the method sum"),
             (ObjectValue(collections.OrderedDict()), "a collections.OrderedDict object"),
             (ObjectValue(np.ones(2)), "an array")]
    for value, words in cases:
        assert describe(value) == words
        assert "Value" not in describe(value)


def test_describing_an_object_runs_none_of_its_code():
    _Disguised.reads = 0  # counts each read of its __class__ or of a missing attribute
    assert describe(ObjectValue(_Disguised())).endswith("_Disguised object")
    assert _Disguised.reads == 0
