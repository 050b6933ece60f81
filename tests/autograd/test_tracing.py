"""pyjit/autograd/tracing.py: traced arrays record registry calls; the tracer stands in
for the array module in the tape's own array calls."""

import numpy as np
import pytest

import pyjit
from pyjit.autograd.device import array_module, device_of
from pyjit.autograd.tracing import TapeTracer, TracedArray
from pyjit.exc import DataDependentError


def traced(mode="real", values=(1.0, 2.0, 3.0)):
    tracer = TapeTracer(mode)
    return tracer, tracer.placeholder("x", np.asarray(values))


def test_a_registry_op_on_a_traced_array_records_a_call_and_computes_in_real_mode():
    tracer, x = traced()
    y = pyjit.ops.exp(x)
    assert isinstance(y, TracedArray) and y.node.target is pyjit.ops.exp
    np.testing.assert_allclose(y.value, np.exp([1.0, 2.0, 3.0]))
    _, fake = traced("fake")
    assert pyjit.ops.exp(fake).value is None and pyjit.ops.exp(fake).shape == (3,)


def test_the_tracer_is_the_array_module_of_its_arrays():
    tracer, x = traced()
    assert array_module(x) is tracer and device_of(x) == "cpu"
    y = tracer.array(x, dtype=np.float32)
    tracer.add(y, x, out=y, casting="unsafe")  # .grad accumulation, made functional
    assert y.dtype == np.float32 and y.node.target.name == "astype"
    np.testing.assert_allclose(y.value, [2.0, 4.0, 6.0])
    tracer.copyto(y, 7.0)
    assert y.value.tolist() == [7.0, 7.0, 7.0] and y.node.target.name == "broadcast_to"


def test_ops_that_read_only_the_shape_of_a_released_value_still_trace():
    tracer, _ = traced("fake")
    stand_in = tracer.empty((4, 5), np.float32)
    zeros = pyjit.ops.zeros_like(stand_in)
    assert zeros.shape == (4, 5) and zeros.dtype == np.float32


def test_decisions_on_values_need_data():
    _, real = traced()
    assert float(pyjit.ops.sum(real)) == 6.0 and real.tolist() == [1.0, 2.0, 3.0]
    _, fake = traced("fake")
    with pytest.raises(DataDependentError, match="cannot trace int"):
        int(pyjit.ops.sum(fake))
    with pytest.raises(DataDependentError, match="converting it to a NumPy array"):
        np.asarray(fake)


def test_a_traced_tensor_prints_its_node():
    _, x = traced("fake")
    assert repr(pyjit.Tensor(x)) == "tensor(TracedArray(%x: f64[3]), dtype=float64)"


def test_values_of_another_trace_are_refused():
    _, first = traced()
    _, second = traced()
    with pytest.raises(RuntimeError, match="another make_fx call"):
        pyjit.ops.add(first, second)
