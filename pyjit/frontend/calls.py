"""Attribute reads and calls on symbolic values: NumPy functions and ndarray methods to
registry entries, the builtins the interpreter knows, constants folded in Python.

NOTE(numpy-calls): a call of a NumPy function is bound against NumPy's own signature
first (so `np.mean(x, 0)` means axis=0 as NumPy says), then passed to the registry
entry positionally in the entry's parameter order. An argument NumPy names and the
entry has no parameter for (`dtype=`, `out=`, `where=`) makes the frame unsupported,
never silently dropped (unless it is None where NumPy's default is None). The leading
data parameters may be named differently (`a` in NumPy, `x` in the entry); option
parameters (`axis`, `keepdims`, ...) must match by name. Ufuncs take their `nin`
arrays positionally and keywords as given. An ndarray method `x.name(*args)` is
`np.name(x, *args)`, except `reshape` and `transpose`, which also take their sizes or
axes unpacked.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import operator
import types
from typing import Any

import numpy as np

from ..autograd import Tensor
from ..autograd.methods import CONVERSIONS, FORWARDED, numpy_keywords
from ..graph import Node, SymInt
from ..ops import REGISTRY
from ..ops.registry import Op
from . import functionalise
from .allowed import graph_op, makes_tensors
from .backward import backward_break, inline_hook, is_hook_call, runs_backward
from .breaks import Break
from .containers import build_set
from .inline import call_special, call_user
from .policy import protocol_of
from .values import (NULL, ArrayValue, CallableValue, ConstantValue, DictValue, IteratorValue, ModuleValue,
                     ObjectValue, SequenceValue, Value, describe, is_constant, python_value, registry_entry)

# Parameters that choose how an op works, as opposed to the data it works on.
_OPTIONS = frozenset({"axis", "axes", "keepdims", "dtype", "out", "ddof", "where", "initial", "order", "casting",
                      "decimals", "mode", "copy", "device", "kind", "correction", "mean", "subok", "shape",
                      "indices", "axis1", "axis2", "a_min", "a_max", "min", "max"})
# ndarray methods that are registry entries: NumPy's names only (autograd also has PyTorch's).
ARRAY_METHODS = frozenset(name for name in (*FORWARDED, "var", "std", "reshape", "transpose")
                          if hasattr(np.ndarray, name) and FORWARDED.get(name, name) in REGISTRY)
# Tensor methods that update in place, as their operators (NOTE(functionalisation) in functionalise.py).
_INPLACE_METHODS = {"add_": "+", "sub_": "-", "mul_": "*", "div_": "/"}
# ndarray methods that copy: `x.copy()` is `astype` to its own dtype (a new array on every
# call), `flatten()` a copy of `reshape(-1)`, and `ravel()` is `reshape(-1)`.
_COPYING_METHODS = frozenset({"copy", "flatten", "ravel"})
# Methods whose answer is the array's values as Python objects: data-dependent breaks.
_VALUE_METHODS = frozenset({"item", "tolist", "tobytes", "numpy"})
# Tensor methods the interpreter records (NOTE(tensor-capture)).
TENSOR_METHODS = frozenset({*FORWARDED, *CONVERSIONS, *_INPLACE_METHODS, "reshape", "view", "transpose", "permute"})
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
    if isinstance(obj, ConstantValue) and isinstance(obj.value, type):
        if source is None:
            raise Break("unsupported", f"attribute {name!r} of a class that has no source to guard it by")
        return tracer.wrap(_class_attribute(obj.value, name), source)
    if isinstance(obj, ConstantValue) and type(obj.value) is str and name in _STR_METHODS:
        return CallableValue("builtin", getattr(obj.value, name))  # folded when called (NOTE(string-formatting))
    if isinstance(obj, ConstantValue) and not callable(getattr(type(obj.value), name, None)):
        found = _fold(getattr, obj.value, name)
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
    if name in ARRAY_METHODS or name in _COPYING_METHODS or (not name.startswith("_")
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


def _method_break(kind: str, name: str) -> Break:
    """NOTE(method-breaks): an array's method that is not captured (`y.item`,
    `loss.backward`) loads as a method value and the break is its call, where the
    transformed code runs the load and the call together in Python: one user call is
    one break (explain's count), not a break at the load and another at the call."""
    if name in _VALUE_METHODS:
        return Break("data_dependent", f"{kind}.{name}() needs the array's values, which exist only when the "
                     "graph runs", hint="it runs in Python at a graph break")
    return Break("unsupported", f"{kind}.{name}() is not captured", hint="it runs in Python at a graph break")


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


# -- calls ------------------------------------------------------------------------------------
def call(tracer, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if isinstance(fn, CallableValue):
        if fn.kind == "numpy":
            return _call_numpy(tracer, registry_entry(fn.target), fn.target, args, kwargs)
        if fn.kind == "method":
            if fn.self.tensor:
                return _call_tensor_method(tracer, fn.self, fn.target, args, kwargs)
            return _call_method(tracer, fn.self, fn.target, args, kwargs)
        if fn.kind == "builtin":
            return _call_builtin(tracer, fn.target, args, kwargs)
        if fn.kind == "container_method":
            return tracer.side_effects.call_method(tracer, fn.self, fn.target, args, kwargs)
        if fn.kind == "op":
            return tracer.call_op(fn.target, tuple(args), kwargs)
        if fn.kind == "graph_break":
            raise Break("graph_break", "pyjit.graph_break() was called",
                        hint="remove it to capture the function whole")
    if isinstance(fn, ObjectValue) and is_hook_call(fn.value):
        return inline_hook(tracer, fn.value, args, kwargs)
    captured = backward_break(tracer) if isinstance(fn, ObjectValue) and runs_backward(fn.value) else None
    if captured is not None:
        raise captured
    allowed = graph_op(fn.value) if isinstance(fn, ObjectValue) else None
    if allowed is not None:  # NOTE(allow-in-graph)
        if any(isinstance(value, ArrayValue) and value.tensor for value in (*args, *kwargs.values())):
            raise Break("unsupported", f"{allowed.name} (allowed in the graph) is called on a pyjit.Tensor, whose "
                        "gradient the graph would not record", hint="it runs in Python at a graph break")
        result = tracer.call_op(allowed, tuple(args), kwargs)
        result.tensor = result.tensor or makes_tensors(allowed)
        return result
    declared = _declared_call(fn)
    if declared is not None:  # NOTE(inlining): the method a class declares its calls run
        return call(tracer, load_attr(tracer, fn, declared), args, kwargs)
    inlined = call_user(tracer, fn, args, kwargs)
    if inlined is not None:
        return inlined
    raise Break("unsupported", f"a call to {describe(fn)} is not captured",
                hint="captured calls are NumPy functions in pyjit's op registry (docs/ops.md), ndarray methods, "
                     "a few builtins, and Python functions with source (inlined); this call runs in Python")


def _declared_call(fn: Value) -> str | None:
    """The method `inline_protocol` says a call of `fn`, an instance, runs."""
    if not isinstance(fn, ObjectValue) or fn.source is None:
        return None
    kind = type(fn.value)
    if kind is types.FunctionType or issubclass(kind, type):
        return None
    protocol = protocol_of(kind, "__call__")
    return protocol.call if protocol is not None else None


def _call_numpy(tracer, entry, function, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if isinstance(function, np.ufunc):
        if len(args) > function.nin or not _is_none(kwargs.get("out")):
            return _ufunc_into(tracer, entry, function, args, kwargs)
        kwargs.pop("out", None)
        return tracer.call_op(entry, tuple(args), kwargs)
    return tracer.call_op(entry, *_bind(entry, function, args, kwargs))


def _is_none(value: Value | None) -> bool:
    return value is None or (isinstance(value, ConstantValue) and value.value is None)


def _bind(entry, function, args: list, kwargs: dict) -> tuple[tuple, dict]:
    """NOTE(numpy-calls): the call as the registry entry's positional arguments."""
    numpy_params, entry_params = _parameters(function), _parameters(entry)
    if numpy_params is None or entry_params is None:
        return tuple(args), kwargs
    try:
        bound = numpy_params.bind(*args, **kwargs).arguments
    except TypeError as error:
        raise Break("user_error", f"{entry.name}: {error}") from None
    names = list(numpy_params.parameters)
    entry_names = [name for name in entry_params.parameters if name != "xp"]
    values = {}
    for position, name in enumerate(names):
        if name not in bound or _is_default(bound[name], numpy_params.parameters[name]):
            continue
        target = name if name in entry_names else None
        if target is None and position < len(entry_names) and name not in _OPTIONS \
                and entry_names[position] not in _OPTIONS:
            target = entry_names[position]
        if target is None:
            raise Break("unsupported", f"numpy.{entry.name}'s argument {name}= is not captured",
                        hint="the op registry does not model it (docs/ops.md, 'Out of scope')")
        values[target] = bound[name]
    positional = []
    for name in entry_names:
        if name in values:
            positional.append(values.pop(name))
        elif not values:
            break
        else:
            default = entry_params.parameters[name].default
            if default is inspect.Parameter.empty:
                raise Break("user_error", f"{entry.name}: missing argument {name!r}")
            positional.append(ConstantValue(default))
    return tuple(positional), {}


def _is_default(value: Value, parameter: inspect.Parameter) -> bool:
    """An argument given as None where None is NumPy's default (`out=None`) asks for nothing."""
    return isinstance(value, ConstantValue) and value.value is None and parameter.default is None


@functools.cache
def _parameters(fn) -> inspect.Signature | None:
    """The signature of a NumPy function or a registry entry's implementation; None when
    it has none or takes *args/**kwargs (then the call passes through as written)."""
    target = getattr(fn, "impl", None) or getattr(fn, "decomposition", None) or fn
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    kinds = {parameter.kind for parameter in signature.parameters.values()}
    if inspect.Parameter.VAR_POSITIONAL in kinds or inspect.Parameter.VAR_KEYWORD in kinds:
        return None
    return signature


def _call_tensor_method(tracer, tensor: ArrayValue, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`tensor.name(*args, **kwargs)` as pyjit/autograd/methods.py defines it."""
    if name in _INPLACE_METHODS:
        alpha = kwargs.pop("alpha", None) if name in ("add_", "sub_") else None
        if name in ("add_", "sub_") and len(args) == 2 and alpha is None:
            args, alpha = args[:1], args[1]
        if len(args) != 1 or kwargs:
            raise Break("unsupported", f"Tensor.{name} with arguments other than one operand is not captured")
        other = args[0] if _is_none(alpha) or (isinstance(alpha, ConstantValue) and alpha.value == 1) \
            else tracer.call_op(REGISTRY["multiply"], (args[0], alpha), {})
        return inplace_binary(tracer, _INPLACE_METHODS[name], tensor, other)
    if name not in TENSOR_METHODS:
        captured = backward_break(tracer) if name == "backward" else None  # NOTE(captured-backward)
        raise captured or _method_break("Tensor", name)
    if name in CONVERSIONS:
        if args or kwargs:
            raise Break("user_error", f"Tensor.{name}() takes no arguments")
        dtype = np.dtype(CONVERSIONS[name])
        if tensor.node.meta.dtype == dtype:
            return tensor
        return tracer.call_op(REGISTRY["astype"], (tensor, ConstantValue(dtype)), {})
    if name in ("view", "permute"):
        return _call_method(tracer, tensor, "reshape" if name == "view" else "transpose", args, kwargs)
    if name == "transpose" and len(args) == 2 and not kwargs and all(
            isinstance(arg, ConstantValue) and type(arg.value) is int for arg in args):
        first, second = (arg.value for arg in args)
        if tensor.node.meta.ndim != 2:
            return tracer.call_op(REGISTRY["swapaxes"], (tensor, *args), {})
        if first % 2 == 0 and second % 2 == 1:
            raise Break("user_error", f"transpose({first}, {second}) of a matrix is ambiguous")
    if name in ("reshape", "transpose"):
        return _call_method(tracer, tensor, name, args, kwargs)
    keywords = _fold(numpy_keywords, kwargs)
    return tracer.call_op(REGISTRY[FORWARDED[name]], (tensor, *args), keywords)


def _call_method(tracer, array: ArrayValue, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if name in _COPYING_METHODS and not args and not kwargs:
        if name != "copy":
            array = tracer.call_op(REGISTRY["reshape"], (array, ConstantValue(-1)), {})
        if name == "ravel":
            return array
        return tracer.call_op(REGISTRY["astype"], (array, ConstantValue(array.node.meta.dtype)), {})
    if name not in ARRAY_METHODS:
        raise _method_break("ndarray", name)
    entry = REGISTRY[FORWARDED.get(name, name)]
    if name in ("reshape", "transpose"):
        if kwargs:
            raise Break("unsupported", f"ndarray.{name} with keyword arguments")
        if len(args) == 1 and not (isinstance(args[0], ConstantValue) and isinstance(args[0].value, int)
                                   and name == "transpose"):
            packed = args[0]
        else:
            packed = SequenceValue(tuple, list(args)) if args else ConstantValue(None)
        return tracer.call_op(entry, (array, packed), {})
    return _call_numpy(tracer, entry, getattr(np, name, None), [array, *args], kwargs)


# -- builtins ---------------------------------------------------------------------------------
def _call_builtin(tracer, fn, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if fn is builtins.len and len(args) == 1 and not kwargs:
        return ConstantValue(_length(args[0]))
    if fn is operator.getitem and len(args) == 2 and not kwargs:
        return subscript(tracer, *args)
    if fn is builtins.abs and len(args) == 1 and isinstance(args[0], ArrayValue):
        return tracer.call_op(REGISTRY["abs"], tuple(args), kwargs)
    if fn is builtins.isinstance and len(args) == 2 and _classes(args[1]) is not None:
        return ConstantValue(_isinstance(tracer, args[0], _classes(args[1])))
    if fn is builtins.getattr and len(args) == 2 and not kwargs and isinstance(args[1], ConstantValue) \
            and type(args[1].value) is str:
        return load_attr(tracer, args[0], args[1].value)
    if fn in (builtins.tuple, builtins.list) and len(args) == 1 and not kwargs \
            and isinstance(args[0], (SequenceValue, IteratorValue, ArrayValue, DictValue)):
        return SequenceValue(fn, consume(iterate(tracer, args[0])))
    if fn is builtins.set:  # never folded: a set is mutable (NOTE(sets) in containers.py)
        if kwargs or len(args) > 1:
            raise Break("unsupported", "set() with these arguments")
        made = build_set([])
        for update in args:
            tracer.side_effects.call_method(tracer, made, "update", [update])
        return made
    if fn in _ITERATOR_BUILTINS:
        return _iterator_builtin(tracer, fn, args, kwargs)
    if fn in _FORMATTING or type(getattr(fn, "__self__", None)) is str:
        return _format_call(fn, args, kwargs)
    if fn is builtins.sum and len(args) == 1 and set(kwargs) <= {"start"} \
            and isinstance(args[0], (SequenceValue, IteratorValue, ArrayValue)):
        return _sum(tracer, consume(iterate(tracer, args[0])), kwargs.get("start", ConstantValue(0)))
    if fn is builtins.next and 1 <= len(args) <= 2 and not kwargs and isinstance(args[0], IteratorValue):
        item = args[0].next_item()
        if item is None and len(args) == 1:
            raise Break("user_error", "StopIteration")
        return args[1] if item is None else item
    if any(isinstance(arg, ArrayValue) for arg in (*args, *kwargs.values())):
        raise Break("data_dependent", f"{fn.__name__}() of an array needs its values",
                    hint="keep the computation in NumPy functions")
    if not all(map(is_constant, (*args, *kwargs.values()))):
        raise Break("unsupported", f"{fn.__name__}() of a value that is not a constant")
    return ConstantValue(_fold(fn, *map(python_value, args), **{k: python_value(v) for k, v in kwargs.items()}))


# -- strings ------------------------------------------------------------------------------------
# NOTE(string-formatting): f-strings (FORMAT_VALUE, 3.13's CONVERT_VALUE and FORMAT_*,
# BUILD_STRING), str(), repr(), format() and the methods of a constant string
# (`"n={}".format(n)`) are folded at trace time when what they format is constant (a
# value guarded by value, a size, a string): the result is a constant of the graph's
# code. A symbolic size is specialised first (`int()`, which guards that size), since its
# text is its value. Formatting an array needs its values (a data-dependent break); any
# other object would run its own `__format__`, so that is a break too.
_FORMATTING = frozenset({builtins.str, builtins.repr, builtins.ascii, builtins.format})
_STR_METHODS = frozenset({"format", "join", "upper", "lower", "strip", "lstrip", "rstrip", "replace", "split",
                          "startswith", "endswith", "zfill", "ljust", "rjust", "center"})
_FIELD_CONVERSIONS = {0: None, 1: builtins.str, 2: builtins.repr, 3: builtins.ascii}  # FORMAT_VALUE's flag bits
# What formats without running user code: builtin scalars, NumPy's, and tuples/lists of them.
_FORMATS_SAFELY = (int, float, complex, str, bytes, bool, type(None), slice, range, np.dtype, np.generic)


def formatted(value: Value, spec: Value | None = None, conversion: int = 0) -> ConstantValue:
    """`format(conversion(value), spec)`, as an f-string's replacement field computes it
    (NOTE(string-formatting))."""
    folded = _formattable(value, "formatting")
    if _FIELD_CONVERSIONS[conversion] is not None:
        folded = _fold(_FIELD_CONVERSIONS[conversion], folded)
    return ConstantValue(_fold(format, folded, "" if spec is None else _formattable(spec, "formatting")))


def _format_call(fn, args: list[Value], kwargs: dict[str, Value]) -> ConstantValue:
    what = f"{getattr(fn, '__name__', 'str')}()"
    return ConstantValue(_fold(fn, *(_formattable(arg, what) for arg in args),
                               **{key: _formattable(value, what) for key, value in kwargs.items()}))


def _formattable(value: Value, what: str) -> Any:
    """The Python value to format, its symbolic sizes specialised (NOTE(string-formatting))."""
    if any(isinstance(item, ArrayValue) for item in (value, *getattr(value, "items", ()))):
        raise Break("data_dependent", f"{what} of an array needs its values, which exist only when the graph runs",
                    hint="it runs in Python at a graph break")
    try:
        return _specialised(python_value(value))
    except LookupError:
        raise Break("unsupported", f"{what} of {describe(value)} would run its own code",
                    hint="it runs in Python at a graph break") from None


def _specialised(value: Any) -> Any:
    if type(value) in (tuple, list):
        return type(value)(map(_specialised, value))
    if isinstance(value, SymInt):
        return int(value)
    if not isinstance(value, _FORMATS_SAFELY):
        raise LookupError(type(value).__name__)
    return value


# -- iteration (NOTE(loop-unrolling) in opcodes.py) --------------------------------------------
_ITERATOR_BUILTINS = (builtins.iter, builtins.enumerate, builtins.zip, builtins.reversed)
_ITERABLE_CONSTANTS = (tuple, list, str, bytes, range)


def iterate(tracer, value: Value) -> IteratorValue:
    """`iter(value)`, with the items it yields materialised; an iterator is its own."""
    if isinstance(value, IteratorValue):
        return value
    if isinstance(value, SequenceValue):
        return IteratorValue(value.items, of_list=value if value.kind is list else None)
    if isinstance(value, DictValue):  # its keys (NOTE(dict-views))
        return tracer.side_effects.view(tracer, value, "keys")
    if isinstance(value, ConstantValue) and type(value.value) in _ITERABLE_CONSTANTS:
        try:
            _check_unroll_length(len(value.value))
        except OverflowError:  # a range longer than an index can say
            _check_unroll_length(float("inf"))
        items = [ConstantValue(item) for item in value.value]
        if type(value.value) is list:
            return IteratorValue(items, rebuildable=False)
        return IteratorValue(items, made_by=(builtins.iter, [], value.value))
    if isinstance(value, ArrayValue):
        return IteratorValue(_rows(tracer, value), exact=False)
    if isinstance(value, ObjectValue):
        iterator = call_special(tracer, value, "__iter__")  # a class's own, traced like any call
        if iterator is not None:
            return iterate(tracer, iterator)
    raise Break("unsupported", f"a loop over {describe(value)} is not unrolled",
                hint="loops over tuples, lists, ranges, strings, arrays and enumerate/zip/reversed of them are "
                     "unrolled; this one runs in Python")


def consume(iterator: IteratorValue) -> list[Value]:
    """The items `iterator` has left, which it then no longer has."""
    items = iterator.remaining()
    iterator.position += len(items)
    return items


def _check_unroll_length(length: float) -> None:
    from .. import config

    if length > config.unroll_limit:
        raise Break("unsupported", f"a loop over {length} items would unroll beyond config.unroll_limit "
                    f"({config.unroll_limit} instructions)", hint="the loop runs in Python")


def _rows(tracer, array: ArrayValue) -> list[Value]:
    """`x[0], x[1], ...`: what iterating an array gives, each a getitem op."""
    meta = array.node.meta
    if meta.ndim == 0:
        raise Break("user_error", "TypeError: iteration over a 0-d array")
    if type(meta.shape[0]) is not int:
        raise Break("unsupported", "iterating an array of symbolic length", hint="mark the size static with "
                    "dynamic=False")
    _check_unroll_length(meta.shape[0])
    return [subscript(tracer, array, ConstantValue(i)) for i in range(meta.shape[0])]


def _iterator_builtin(tracer, fn, args: list[Value], kwargs: dict[str, Value]) -> IteratorValue:
    """`iter(x)`, `enumerate(x, start)`, `zip(*xs)` and `reversed(x)`, materialised at once:
    their arguments are sequences (which nothing changes during the trace but the trace
    itself) or iterators nothing else holds, so taking every item now is not observable.
    `made_by` keeps what they were made of, for a graph break to rebuild them."""
    if fn is builtins.iter and len(args) == 1 and not kwargs:
        return iterate(tracer, args[0])
    if fn is builtins.enumerate and args and len(args) + len(kwargs) <= 2 and set(kwargs) <= {"start"}:
        start = args[1] if len(args) == 2 else kwargs.get("start", ConstantValue(0))
        if not (isinstance(start, ConstantValue) and type(start.value) is int):
            raise Break("unsupported", "enumerate() with a start that is not an int constant")
        part = _taken(tracer, args[0])
        items = consume(part[0])
        return IteratorValue([SequenceValue(tuple, [ConstantValue(start.value + i), item])
                              for i, item in enumerate(items)], made_by=(fn, [part], start.value))
    if fn is builtins.zip and not kwargs:
        parts = [_taken(tracer, arg) for arg in args]
        rows = zip(*(consume(iterator) for iterator, _ in parts))
        return IteratorValue([SequenceValue(tuple, list(row)) for row in rows], made_by=(fn, parts, None))
    if fn is builtins.reversed and len(args) == 1 and not kwargs:
        if isinstance(args[0], IteratorValue):
            raise Break("user_error", "TypeError: the iterator is not reversible")
        part = _taken(tracer, args[0])
        items = consume(part[0])
        return IteratorValue(items[::-1], made_by=(fn, [part], len(items)))
    raise Break("unsupported", f"{fn.__name__}() with these arguments is not unrolled")


def _sum(tracer, items: list[Value], start: Value) -> Value:
    """`sum(items, start=start)`: Python's own on constants (it adds floats with
    compensation), else `start + items[0] + ...` when every item is an array."""
    if all(map(is_constant, (*items, start))):
        return ConstantValue(_fold(sum, [python_value(item) for item in items], python_value(start)))
    if not all(isinstance(item, ArrayValue) for item in items):
        raise Break("unsupported", "sum() of arrays mixed with other values")
    total = start
    for item in items:
        total = binary(tracer, "+", total, item)
    return total


def _taken(tracer, value: Value) -> tuple[IteratorValue, int]:
    """An iterator over `value` for enumerate, zip or reversed to take its items from, and
    its position then (a graph break rebuilds theirs from it: NOTE(loop-unrolling))."""
    iterator = iterate(tracer, value)
    if iterator is value and tracer.holds(value):
        raise Break("unsupported", "an iterator that the code also holds elsewhere is consumed lazily by Python",
                    hint="iterate over the sequence itself")
    return iterator, iterator.position


def _length(value: Value) -> Any:
    if isinstance(value, ArrayValue):
        if value.node.meta.ndim == 0:
            raise Break("user_error", "len() of unsized object")
        return value.node.meta.shape[0]
    if isinstance(value, DictValue):
        return len(value.keys())
    if isinstance(value, SequenceValue):
        return len(value.items)
    if is_constant(value):
        return _fold(len, python_value(value))
    raise Break("unsupported", f"len() of {describe(value)} is not modelled")


def _isinstance(tracer, value: Value, classes) -> bool:
    """NOTE(isinstance-folding): `isinstance` is folded only where it runs no Python code,
    which would otherwise run at trace time only and its answer be baked in unguarded: the
    classes' metaclasses keep `type.__instancecheck__` (an ABC's answer changes with
    `register`), and an object whose exact type is not a subclass is asked for its
    `__class__` only where reading that runs no code."""
    for cls in _flatten(classes):
        if not isinstance(cls, type):  # a union, or the user's TypeError: Python says which
            raise Break("unsupported", f"isinstance() with {describe(cls)} as its class argument")
        if inspect.getattr_static(type(cls), "__instancecheck__") is not _TYPE_INSTANCECHECK:
            raise Break("unsupported", f"isinstance() with {cls.__qualname__}, whose metaclass "
                        f"{type(cls).__qualname__} decides instances in Python")
    if isinstance(value, ArrayValue):
        return _fold(issubclass, _array_type(tracer, value), classes)  # the input guards check the exact type
    if isinstance(value, (SequenceValue, DictValue)):
        return _fold(issubclass, getattr(value, "kind", dict), classes)
    if isinstance(value, (ObjectValue, ModuleValue)):  # the exact type is guarded
        obj = getattr(value, "value", getattr(value, "module", None))
        if issubclass(type(obj), classes) or _plain_class_attribute(type(obj)):
            return _fold(isinstance, obj, classes)
        raise Break("unsupported", f"isinstance() of {describe(obj)}, whose __class__ is read in Python")
    if value is NULL or not is_constant(value):
        raise Break("unsupported", f"isinstance() of {describe(value)}")
    return _fold(isinstance, python_value(value), classes)


def _classes(value: Value) -> Any:
    """isinstance's second argument at trace time: a constant, where builtin classes the
    interpreter calls (`int`, `tuple`, `set`) are callables; None when it is not known."""
    if isinstance(value, CallableValue) and value.kind == "builtin" and isinstance(value.target, type):
        return value.target
    if isinstance(value, SequenceValue) and value.kind is tuple:
        items = [_classes(item) for item in value.items]
        return None if any(item is None for item in items) else tuple(items)
    return python_value(value) if is_constant(value) else None


def _array_type(tracer, value: ArrayValue) -> type:
    """The exact type of what an array value holds: an input's own (guarded), otherwise
    what the ops give (a Tensor when a Tensor went in, NOTE(tensor-capture))."""
    if value.source is not None:
        return type(next(example for source, example, _ in tracer.capture.inputs if source == value.source))
    return Tensor if value.tensor else np.ndarray


_TYPE_INSTANCECHECK = type.__dict__["__instancecheck__"]
_PLAIN_GETATTRIBUTE = (object.__getattribute__, types.ModuleType.__getattribute__)


def _flatten(classes) -> list:
    """The classes of isinstance's second argument: a class or nested tuples of them."""
    return [cls for item in classes for cls in _flatten(item)] if type(classes) is tuple else [classes]


def _plain_class_attribute(kind: type) -> bool:
    """Whether `obj.__class__` runs no Python code for objects of type `kind`."""
    return kind.__getattribute__ in _PLAIN_GETATTRIBUTE \
        and inspect.getattr_static(kind, "__class__") is object.__dict__["__class__"]


def _fold(fn, *args, **kwargs) -> Any:
    """`fn(*args)` on constants at trace time; an error the code would raise is the user's."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:
        raise Break("user_error", f"{type(error).__name__}: {error}") from error


# -- operators --------------------------------------------------------------------------------
# Python operator -> registry entry for arrays (NumPy's meaning of the operator).
ARRAY_OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "mod",
                   "**": "power", "@": "matmul", "<": "less", "<=": "less_equal", "==": "equal",
                   "!=": "not_equal", ">": "greater", ">=": "greater_equal"}
# On bool arrays the bitwise operators are the logical ones.
_BOOL_OPERATORS = {"&": "logical_and", "|": "logical_or", "^": "logical_xor"}
PYTHON_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
                    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
                    ">>": operator.rshift, "<": operator.lt, "<=": operator.le, "==": operator.eq,
                    "!=": operator.ne, ">": operator.gt, ">=": operator.ge}


def binary(tracer, symbol: str, left: Value, right: Value) -> Value:
    """`left <symbol> right` for a binary or comparison operator (not in place)."""
    if isinstance(left, ArrayValue) or isinstance(right, ArrayValue):
        name = ARRAY_OPERATORS.get(symbol)
        if name is None and symbol in _BOOL_OPERATORS and _all_bool(left, right):
            name = _BOOL_OPERATORS[symbol]
        if name is None:
            raise Break("unsupported", f"operator {symbol} on arrays of these dtypes is not in the op registry")
        return tracer.call_op(REGISTRY[name], (left, right), {})
    if isinstance(left, SequenceValue) and isinstance(right, SequenceValue) and symbol == "+" \
            and left.kind is right.kind:
        return SequenceValue(left.kind, left.items + right.items)
    if is_constant(left) and is_constant(right):
        return ConstantValue(_fold(PYTHON_OPERATORS[symbol], python_value(left), python_value(right)))
    raise Break("unsupported", f"operator {symbol} on {describe(left)} and {describe(right)}")


def inplace_binary(tracer, symbol: str, target: ArrayValue, other: Value, stored_back: bool = False) -> Value:
    """`target <symbol>= other` on an array (NOTE(functionalisation) in functionalise.py);
    `stored_back`: an augmented operator, whose result Python stores where `target` came from."""
    what = f"{symbol}="
    name = ARRAY_OPERATORS.get(symbol) or (_BOOL_OPERATORS.get(symbol) if _all_bool(target, other) else None)
    entry = REGISTRY.get(name) if name is not None else None
    if entry is None:
        raise Break("unsupported", f"in-place update ({what}) with an operator the op registry does not have "
                    "for these dtypes", hint=functionalise.HINT)
    functionalise.refuse_update(tracer, target, other, what, stored_back=stored_back)
    metas = [arg.meta if isinstance(arg, Node) else arg for arg in (target.node, tracer.as_arg(other))]
    functionalise.check_fits(entry.meta(*metas) if isinstance(entry, Op) else None, target, what)
    return functionalise.write(tracer, target, tracer.call_op(entry, (target, other), {}))


def store_array_item(tracer, target: ArrayValue, index: Value, value: Value) -> None:
    """`target[index] = value`, as index_put (NOTE(functionalisation) in functionalise.py)."""
    _refuse_symbolic_slices(tracer.as_arg(index))
    functionalise.refuse_update(tracer, target, value, "item assignment", assignment=True)
    functionalise.write(tracer, target, tracer.call_op(REGISTRY["index_put"], (target, index, value), {}))


def _ufunc_into(tracer, entry, function: np.ufunc, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`function(*args, out=target)`: the result, written into `target` (NOTE(functionalisation))."""
    out = args[function.nin] if len(args) > function.nin else kwargs.pop("out")
    if isinstance(out, SequenceValue) and len(out.items) == 1:
        out = out.items[0]
    if not isinstance(out, ArrayValue) or len(args) > function.nin + 1 or function.nout != 1 or out.tensor:
        raise Break("unsupported", f"numpy.{function.__name__} with this out argument")
    what = f"numpy.{function.__name__} out="
    functionalise.refuse_update(tracer, out, SequenceValue(tuple, args[:function.nin]), what)
    result = tracer.call_op(entry, tuple(args[:function.nin]), kwargs)
    functionalise.check_fits(result.node.meta if isinstance(result, ArrayValue) else None, out, what)
    return functionalise.write(tracer, out, result)


def _all_bool(*values: Value) -> bool:
    for value in values:
        if isinstance(value, ArrayValue):
            if value.node.meta.dtype != np.bool_:
                return False
        elif not (isinstance(value, ConstantValue) and type(value.value) is bool):
            return False
    return True


def subscript(tracer, container: Value, index: Value) -> Value:
    """`container[index]`."""
    if isinstance(container, ArrayValue):
        from ..ops.views import is_basic

        arg = tracer.as_arg(index)
        _refuse_symbolic_slices(arg)
        entry = REGISTRY["getitem" if is_basic(arg) else "index"]
        return tracer.call_op(entry, (container, index), {})
    if isinstance(container, DictValue):
        return tracer.side_effects.read_item(tracer, container, index)
    if isinstance(container, SequenceValue) and isinstance(index, ConstantValue):
        if isinstance(index.value, slice):
            return SequenceValue(container.kind, _fold(operator.getitem, container.items, index.value))
        if isinstance(index.value, int):
            return _fold(operator.getitem, container.items, index.value)
    if isinstance(container, ConstantValue) and isinstance(index, ConstantValue):
        return ConstantValue(_fold(operator.getitem, container.value, index.value))
    raise Break("unsupported", f"indexing {describe(container)} with {describe(index)}")


def _refuse_symbolic_slices(index: Any) -> None:
    items = index if type(index) is tuple else (index,)
    for item in items:
        if type(item) is slice and any(not isinstance(part, (int, type(None))) for part in
                                       (item.start, item.stop, item.step)):
            raise Break("unsupported", "a slice bound that is a symbolic size",
                        hint="mark the size static with dynamic=False")
