"""Attribute reads on symbolic values: an array's meta and methods, a module's names, an
object's attributes and a class's, read through their sources and guarded, never run.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from ..autograd import Tensor
from ..ops import REGISTRY
from .array_calls import ARRAY_METHODS, COPYING_METHODS, TENSOR_METHODS, UFUNC_METHODS
from .breaks import Break
from .policy import protocol_of
from .strings import STR_METHODS
from .values import ArrayValue, CallableValue, ConstantValue, ModuleValue, ObjectValue, Value, describe, fold

# ndarray attributes read from the meta, which the array guard covers.
_META_ATTRIBUTES = {
    "shape": lambda meta: tuple(meta.shape), "ndim": lambda meta: meta.ndim, "dtype": lambda meta: meta.dtype,
    "size": lambda meta: meta.numel, "itemsize": lambda meta: meta.dtype.itemsize,
    "nbytes": lambda meta: meta.numel * meta.dtype.itemsize,
}


def load_attr(tracer, obj: Value, name: str) -> Value:
    """`obj.name`."""
    source = obj.source.attr(name) if obj.source is not None else None
    found = tracer.side_effects.load_attr(tracer, obj, name)  # a pending store, a list method (NOTE(side-effects))
    if found is not None:
        return found
    if isinstance(obj, ArrayValue):
        return _array_attr(tracer, obj, name)
    if isinstance(obj, ModuleValue):
        if not hasattr(obj.module, name):
            raise Break("user_error", f"module {obj.module.__name__!r} has no attribute {name!r}")
        return tracer.wrap(getattr(obj.module, name), source)
    if isinstance(obj, ObjectValue) and source is not None:
        return _object_attr(tracer, obj, name, source)
    if isinstance(obj, CallableValue) and obj.kind == "numpy" and isinstance(obj.target, np.ufunc) \
            and name in UFUNC_METHODS:
        return CallableValue("ufunc_method", name, self=obj, source=source)  # NOTE(ufunc-methods)
    if isinstance(obj, ConstantValue) and isinstance(obj.value, type):
        if source is None:
            raise Break("unsupported", f"attribute {name!r} of a class not read from a variable, a global or an "
                        "attribute: pyjit cannot check it is the same class on the next call")
        return tracer.wrap(_class_attribute(obj.value, name), source)
    if isinstance(obj, ConstantValue) and type(obj.value) is str and name in STR_METHODS:
        return CallableValue("builtin", getattr(obj.value, name))  # folded when called (NOTE(string-formatting))
    if isinstance(obj, ConstantValue) and not callable(getattr(type(obj.value), name, None)):
        found = fold(getattr, obj.value, name)
        if source is not None:  # re-read when used: `s.start` of a slice may be a list
            return tracer.wrap(found, source)
        if _immutable(found):
            return ConstantValue(found)
    raise Break("unsupported", f"reading attribute {name!r} of {describe(obj)} is not modelled")


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(map(_immutable, value))
    return isinstance(value, (int, float, complex, str, bytes, type(None), np.dtype, np.generic))


def _array_attr(tracer, obj: ArrayValue, name: str) -> Value:
    meta = obj.node.meta
    if name in _META_ATTRIBUTES:
        return ConstantValue(_META_ATTRIBUTES[name](meta))
    if name == "T":
        return tracer.call_op(REGISTRY["transpose"], (obj,), {})
    if obj.tensor:
        return _tensor_attr(tracer, obj, name)
    if name in ("real", "imag"):
        return tracer.call_op(REGISTRY[name], (obj,), {})
    if name in ARRAY_METHODS or name in COPYING_METHODS or (not name.startswith("_")
                                                              and callable(getattr(np.ndarray, name, None))):
        return CallableValue("method", name, self=obj)  # NOTE(method-breaks)
    raise Break("unsupported", f"ndarray attribute {name!r} is not modelled")


def _tensor_attr(tracer, tensor: ArrayValue, name: str) -> Value:
    """NOTE(tensor-capture): a Tensor's methods that are registry entries are recorded like
    ndarray methods, with PyTorch's keywords; what reads or changes autograd state
    (`backward`, `grad`, `item`, `numpy`, `detach`, hooks) runs in Python at a break."""
    if name == "device":
        return ConstantValue("cpu")  # the input guards check that every array is NumPy's
    if name == "requires_grad" and tensor.source is not None:
        example = next(example for source, example, _ in tracer.capture.inputs if source == tensor.source)
        return ConstantValue(example.requires_grad)  # the tensor guard checks it
    if name in TENSOR_METHODS or (not name.startswith("_") and callable(getattr(Tensor, name, None))):
        return CallableValue("method", name, self=tensor)  # NOTE(method-breaks)
    raise Break("unsupported", f"Tensor.{name} is not captured", hint="it runs in Python at a graph break")


def _object_attr(tracer, obj: ObjectValue, name: str, source) -> Value:
    """`obj.name` when reading it runs no user code: an instance attribute, a class
    attribute that is no descriptor, a method (inlined when called, NOTE(inlining)), or
    what the class's declared `__getattr__` protocol finds. Properties and other
    descriptors would run code."""
    value, kind = obj.value, type(obj.value)
    protocol = protocol_of(kind, "__getattr__")
    if kind.__getattribute__ is not object.__getattribute__ \
            or (inspect.getattr_static(kind, "__getattr__", None) is not None and protocol is None):
        raise Break("unsupported", f"{kind.__name__} customises attribute access: reading {name!r} runs code")
    try:
        found = inspect.getattr_static(value, name)
    except AttributeError:
        return _protocol_attr(tracer, value, name, obj.source, protocol)
    instance_dict = getattr(value, "__dict__", {})
    if name in instance_dict and instance_dict[name] is found:
        return tracer.wrap(found, source)
    if type(found) is types.FunctionType:
        # The bound method's __func__ is read through the instance, so an instance
        # attribute shadowing the method fails the guard too.
        tracer.guards.identity(source.attr("__func__"), found)
        return CallableValue("user", found, self=obj, source=source)
    if inspect.getattr_static(type(found), "__get__", None) is not None:
        raise Break("unsupported", f"{kind.__name__}.{name} is {describe(found)}: reading it runs code")
    return tracer.wrap(found, source)


def _protocol_attr(tracer, value: Any, name: str, value_source, protocol) -> Value:
    """An attribute the instance lacks, where the class's `__getattr__` reads it from
    dictionaries of the instance (NOTE(inlining))."""
    for dict_name in protocol.attribute_dicts if protocol is not None else ():
        registry = value.__dict__.get(dict_name)
        if type(registry) is dict and name in registry:
            return tracer.wrap(registry[name], value_source.attr(dict_name).item(name))
    raise Break("user_error", f"{type(value).__name__!r} object has no attribute {name!r}")


# Descriptors whose binding on a class runs no Python code.
_C_BINDING = (types.FunctionType, classmethod, staticmethod, property, types.BuiltinFunctionType,
              types.MethodDescriptorType, types.ClassMethodDescriptorType, types.WrapperDescriptorType)


def _class_attribute(cls: type, name: str) -> Any:
    """`cls.name` when it is found in the class's own dictionaries and reading it runs no
    user code. Class attributes can be rebound, so the caller reads them through their
    source (guarded), never as constants of the class."""
    meta = type(cls)
    if meta.__getattribute__ is not type.__getattribute__ or hasattr(meta, "__getattr__") \
            or any(name in kind.__dict__ for kind in meta.__mro__ if kind not in (type, object)):
        raise Break("unsupported", f"the metaclass of {cls.__name__} customises attribute access: reading "
                    f"{name!r} runs code")
    owner = next((kind for kind in cls.__mro__ if name in kind.__dict__), None)
    if owner is None:
        raise Break("unsupported", f"{cls.__name__}.{name} is not a class attribute (it comes from the metaclass)")
    found = owner.__dict__[name]
    if hasattr(type(found), "__get__") and not isinstance(found, _C_BINDING):
        raise Break("unsupported", f"{cls.__name__}.{name} is {describe(found)}: reading it runs code")
    return getattr(cls, name)
