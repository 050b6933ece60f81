"""Calls on arrays: NumPy functions to registry entries, and the methods of ndarrays and
pyjit Tensors.

NOTE(numpy-calls): a call of a NumPy function is bound against NumPy's own signature
first (so `np.mean(x, 0)` means axis=0 as NumPy says), then passed to the registry
entry positionally in the entry's parameter order. An argument NumPy names and the
entry has no parameter for (`dtype=`, `out=`, `where=`) makes the frame unsupported,
never silently dropped (unless it is None where NumPy's default is None). The leading
data parameters may be named differently (`a` in NumPy, `x` in the entry); option
parameters (`axis`, `keepdims`, ...) must match by name. Ufuncs take their `nin`
arrays positionally and keywords as given. An ndarray method `x.name(*args)` is
`np.name(x, *args)`, except `reshape` and `transpose`, which also take their sizes or
axes unpacked, and the methods that mean something else than the function: `x.view()`
(a view), `x.conj()` of a real array (the array itself) and `x.sort()` (in place).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..autograd.methods import COMPUTED_IN_DTYPE, CONVERSIONS, FORWARDED, numpy_keywords
from ..ops import REGISTRY
from .backward import backward_break
from .breaks import Break
from .functionalise import refuse_update, write
from .operators import inplace_binary, into, ufunc_into
from .values import ArrayValue, ConstantValue, SequenceValue, Value, describe, fold, registry_entry

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
# call), `flatten(order)` a copy of `ravel(order)`, and `ravel(order)` is the registry's.
COPYING_METHODS = frozenset({"copy", "flatten", "ravel"})
# ndarray methods that change the array itself, with a captured function of the same name.
_IN_PLACE_ARRAY_METHODS = frozenset({"sort"})
# Methods whose answer is the array's values as Python objects: data-dependent breaks.
_VALUE_METHODS = frozenset({"item", "tolist", "tobytes", "numpy"})
# Tensor methods the interpreter records (NOTE(tensor-capture)).
TENSOR_METHODS = frozenset({*FORWARDED, *CONVERSIONS, *_INPLACE_METHODS, "reshape", "view", "transpose", "permute",
                            "var", "std"})


# NOTE(value-shaped-calls): NumPy functions whose result's shape (or dtype) only the values
# decide: a graph must know them, so a call of one is a graph break with this reason.
_VALUES_DECIDE = "the shape of its result depends on the values, which a graph cannot know"
_EIGENVALUES_DECIDE = ("for a real matrix its dtype depends on the values (real when every eigenvalue is real), "
                       "which a graph cannot know")
VALUE_SHAPED = {
    **dict.fromkeys((np.unique, np.nonzero, np.flatnonzero, np.argwhere, np.extract, np.trim_zeros), _VALUES_DECIDE),
    np.linalg.eig: _EIGENVALUES_DECIDE, np.linalg.eigvals: _EIGENVALUES_DECIDE,
}


def value_shaped_break(function) -> Break | None:
    """The break a call of `function` is when its result's shape depends on the values."""
    reason = VALUE_SHAPED.get(function) if callable(function) else None
    if reason is None:
        return None
    module = "numpy.linalg" if function in (np.linalg.eig, np.linalg.eigvals) else "numpy"
    return Break("data_dependent", f"{module}.{function.__name__}() is a graph break: {reason}",
                 hint="it runs in Python at a graph break; compute it outside the compiled function")


def call_numpy(tracer, entry, function, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if isinstance(function, np.ufunc):
        if len(args) > function.nin or not _is_none(kwargs.get("out")):
            return ufunc_into(tracer, entry, function, args, kwargs)
        kwargs.pop("out", None)
        return tracer.call_op(entry, tuple(args), kwargs)
    out = kwargs.pop("out", None)
    if not _is_none(out):  # np.clip(x, 0, 1, out=x): the function's result, written into out
        return into(tracer, out, [*args, *kwargs.values()], lambda: call_numpy(tracer, entry, function, args, kwargs),
                    entry.name)
    args, kwargs = _bind(entry, function, *_computed_in_dtype(tracer, entry, function, args, kwargs))
    kwargs = _with_input_device(tracer, entry, args, kwargs)
    if entry.name == "linspace" and len(args) > 4 and isinstance(args[4], ConstantValue) and args[4].value:
        return _linspace_with_step(tracer, args, kwargs)
    return tracer.call_op(entry, args, kwargs)


def _linspace_with_step(tracer, args: tuple, kwargs: dict) -> Value:
    """np.linspace(..., retstep=True): (samples, step) from `linspace` and `linspace_step`
    (NOTE(linspace-retstep) in pyjit/ops/creation.py)."""
    samples = tracer.call_op(REGISTRY["linspace"], (*args[:4], ConstantValue(False), *args[5:]), kwargs)
    step = tracer.call_op(REGISTRY["linspace_step"], args[:4], kwargs)
    return SequenceValue(tuple, [samples, step])


def _computed_in_dtype(tracer, entry, function, args: list, kwargs: dict) -> tuple[list, dict]:
    """The call with its dtype= argument made an astype of the data (NOTE(dtype-reductions))."""
    parameters = _parameters(function) if entry.name in COMPUTED_IN_DTYPE else None
    if parameters is None or "dtype" not in parameters.parameters:
        return args, kwargs
    try:
        bound = parameters.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs  # _bind says what is wrong
    dtype = bound.arguments.pop("dtype", None)
    if _is_none(dtype):
        return args, kwargs
    data = next(iter(parameters.parameters))
    bound.arguments[data] = tracer.call_op(REGISTRY["astype"], (bound.arguments[data], dtype), {})
    return list(bound.args), dict(bound.kwargs)


def _with_input_device(tracer, entry, args: tuple, kwargs: dict) -> dict:
    """NOTE(devices-follow-inputs): a creation op given no device (np.zeros(n), np.arange(k)
    in a function of CuPy arrays) makes its array on the device of the frame's array
    inputs, when they are all on one GPU, as CuPy code would with `xp.zeros`; with NumPy
    inputs, or none, it stays NumPy's. Guards on the inputs' types keep the choice valid.
    Inputs are met as the code reads them, so where the frame has a CuPy argument not
    read yet (`grid = np.arange(n)` before `x` is read), its array arguments are read
    first: the choice must not depend on the order of the statements."""
    parameters = _parameters(entry)
    names = [name for name in parameters.parameters if name != "xp"] if parameters is not None else []
    if "device" not in names or names.index("device") < len(args) or "device" in kwargs:
        return kwargs
    _read_array_arguments(tracer.root)
    devices = {node.meta.device for _, _, node in tracer.capture.inputs}
    if len(devices) != 1 or devices == {"cpu"}:
        return kwargs
    return {**kwargs, "device": ConstantValue(devices.pop())}


def _read_array_arguments(root) -> None:
    """The frame's array arguments made graph inputs (guarded), where one is a CuPy array
    that the code has not read yet (NOTE(devices-follow-inputs))."""
    unread = {name: root.capture.frame.args[slot] for name, slot in root.arguments.items() if name not in root.locals}
    if any(type(value).__name__ == "ndarray" and type(value).__module__.startswith("cupy") for value in unread.values()):
        for name, value in unread.items():
            if type(value).__name__ == "ndarray":
                root.load_local(name)


# NOTE(ufunc-methods): `np.add.outer`, `np.multiply.reduce`, `np.add.accumulate` are the
# ufunc's op on arrays given new trailing axes (outer, for any binary ufunc of the
# registry), and the reductions and scans the registry has for the ufunc (reduce's and
# accumulate's axis defaults to 0, not None as np.sum's): accumulate of add and multiply
# is cumsum and cumprod, of maximum, minimum and the logical ufuncs the registry's
# `<name>_accumulate` (NOTE(ufunc-accumulate) in pyjit/ops/cumulative.py). `np.add.at(a,
# index, b)`, which adds in place with repeated indices accumulating, is index_add
# written into `a` (NOTE(functionalisation)); subtract, multiply, maximum and minimum.at
# are ufunc_at (NOTE(ufunc-at) in pyjit/ops/indexing.py). Others (`reduceat`, `at` of
# other ufuncs, accumulate of other ufuncs) run in Python at a graph break.
UFUNC_METHODS = frozenset({"outer", "reduce", "accumulate", "at"})
_REDUCTIONS = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min, "logical_and": np.all,
               "logical_or": np.any}
_SCANS = {"add": np.cumsum, "multiply": np.cumprod}
_ACCUMULATED = frozenset({"maximum", "minimum", "logical_and", "logical_or", "logical_xor"})
_AT = {"add": "index_add", **dict.fromkeys(("subtract", "multiply", "maximum", "minimum"), "ufunc_at")}
_METHOD_PARAMETERS = {"reduce": ("axis", "dtype", "out", "keepdims", "initial", "where"),
                      "accumulate": ("axis", "dtype", "out")}


def call_ufunc_method(tracer, ufunc: np.ufunc, method: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`ufunc.method(*args, **kwargs)` (NOTE(ufunc-methods))."""
    entry = registry_entry(ufunc)
    if method == "outer" and ufunc.nin == 2 and len(args) == 2 and not kwargs:
        a, b = args
        trailing = b.node.meta.ndim if isinstance(b, ArrayValue) else 0
        if isinstance(a, ArrayValue) and trailing:
            a = tracer.call_op(REGISTRY["expand_dims"], (a, ConstantValue(tuple(range(-trailing, 0)))), {})
        return call_numpy(tracer, entry, ufunc, [a, b], {})
    if method == "accumulate" and ufunc.__name__ in _ACCUMULATED:
        return _accumulated(tracer, ufunc, args, kwargs)
    if method == "at" and getattr(np, ufunc.__name__, None) is ufunc and ufunc.__name__ in _AT and len(args) == 3 and not kwargs and isinstance(args[0], ArrayValue):
        target, index, values = args
        refuse_update(tracer, target, values, f"numpy.{ufunc.__name__}.at")
        named = {} if ufunc is np.add else {"ufunc": ConstantValue(ufunc.__name__)}
        write(tracer, target, tracer.call_op(REGISTRY[_AT[ufunc.__name__]], (target, index, values), named))
        return ConstantValue(None)
    function = (_REDUCTIONS if method == "reduce" else _SCANS if method == "accumulate" else {}).get(ufunc.__name__)
    if function is None or not args or len(args) > 1 + len(_METHOD_PARAMETERS[method]):
        raise Break("unsupported", f"numpy.{ufunc.__name__}.{method} is not captured",
                    hint="it runs in Python at a graph break; the captured ufunc methods are outer for binary "
                         "ufuncs, reduce of add, multiply, maximum, minimum, logical_and and logical_or, and "
                         "accumulate of add, multiply, maximum, minimum and the logical ufuncs, and add.at, subtract.at, "
                         "multiply.at, maximum.at and minimum.at")
    named = {"axis": ConstantValue(0), **dict(zip(_METHOD_PARAMETERS[method], args[1:])), **kwargs}
    return call_numpy(tracer, registry_entry(function), function, args[:1], named)


def _accumulated(tracer, ufunc: np.ufunc, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`np.maximum.accumulate(x, axis=0, dtype=None, out=None)` as the registry's scan."""
    try:
        bound = inspect.signature(lambda array, axis=0, dtype=None, out=None: None).bind(*args, **kwargs).arguments
    except TypeError as error:
        raise Break("user_error", f"numpy.{ufunc.__name__}.accumulate: {error}") from None
    if not _is_none(bound.get("dtype")) or not _is_none(bound.get("out")):
        raise Break("unsupported", f"numpy.{ufunc.__name__}.accumulate's dtype= and out= are not captured",
                    hint="it runs in Python at a graph break")
    axis = bound.get("axis", ConstantValue(0))
    return tracer.call_op(REGISTRY[f"{ufunc.__name__}_accumulate"], (bound["array"], axis), {})


def call_scalar_type(tracer, kind: type, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`np.float32(0.5)`: a NumPy scalar, folded; `np.float64(a[i])` of an array: astype
    (a 0-d array is the NumPy scalar it makes: NOTE(scalar-values) in operators.py; an
    n-d array gives a converted array, as NumPy's scalar types do)."""
    if len(args) == 1 and not kwargs and isinstance(args[0], ArrayValue):
        return tracer.call_op(REGISTRY["astype"], (args[0], ConstantValue(np.dtype(kind))), {})
    if not all(isinstance(value, ConstantValue) for value in (*args, *kwargs.values())):
        raise Break("unsupported", f"numpy.{kind.__name__}() of {', '.join(map(describe, args))} is not captured",
                    hint="it runs in Python at a graph break")
    return ConstantValue(fold(kind, *(arg.value for arg in args), **{k: v.value for k, v in kwargs.items()}))


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


def call_tensor_method(tracer, tensor: ArrayValue, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
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
        raise captured or method_break("Tensor", name)
    if name in CONVERSIONS:
        if args or kwargs:
            raise Break("user_error", f"Tensor.{name}() takes no arguments")
        dtype = np.dtype(CONVERSIONS[name])
        if tensor.node.meta.dtype == dtype:
            return tensor
        return tracer.call_op(REGISTRY["astype"], (tensor, ConstantValue(dtype)), {})
    if name in ("view", "permute"):
        return call_method(tracer, tensor, "reshape" if name == "view" else "transpose", args, kwargs)
    if name == "transpose" and len(args) == 2 and not kwargs and all(
            isinstance(arg, ConstantValue) and type(arg.value) is int for arg in args):
        first, second = (arg.value for arg in args)
        if tensor.node.meta.ndim != 2:
            return tracer.call_op(REGISTRY["swapaxes"], (tensor, *args), {})
        if first % 2 == 0 and second % 2 == 1:
            raise Break("user_error", f"transpose({first}, {second}) of a matrix is ambiguous")
    if name in ("reshape", "transpose"):
        return call_method(tracer, tensor, name, args, kwargs)
    keywords = fold(numpy_keywords, kwargs)
    if name in ("var", "std"):  # np.var's arguments, and PyTorch's correction= or unbiased= as ddof
        correction, unbiased = keywords.pop("correction", None), keywords.pop("unbiased", None)
        if not isinstance(unbiased, (ConstantValue, type(None))):
            raise Break("unsupported", f"Tensor.{name}(unbiased=) of a value the graph computes is not captured")
        if not _is_none(correction) or not _is_none(unbiased):
            keywords["ddof"] = correction if not _is_none(correction) else ConstantValue(int(unbiased.value))
        return call_method(tracer, tensor, name, args, keywords)
    dtype = keywords.pop("dtype", None) if FORWARDED[name] in COMPUTED_IN_DTYPE else None
    if not _is_none(dtype):  # NOTE(dtype-reductions)
        tensor = tracer.call_op(REGISTRY["astype"], (tensor, dtype), {})
    return tracer.call_op(REGISTRY[FORWARDED[name]], (tensor, *args), keywords)


def call_method(tracer, array: ArrayValue, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if name in COPYING_METHODS and (not args and not kwargs or name != "copy" and _order_only(args, kwargs)):
        if name != "copy":
            array = tracer.call_op(REGISTRY["ravel"], (array, *args, *kwargs.values()), {})
        if name == "ravel":
            return array
        return tracer.call_op(REGISTRY["astype"], (array, ConstantValue(array.node.meta.dtype)), {})
    if name == "view":
        return _new_view(tracer, array, args, kwargs)
    if name in ("conj", "conjugate") and not args and not kwargs and array.node.meta.dtype.kind != "c":
        return array  # NumPy's method gives a real array itself (np.conj, a ufunc, makes a copy)
    if name not in ARRAY_METHODS:
        raise method_break("ndarray", name)
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
    return call_numpy(tracer, entry, getattr(np, name, None), [array, *args], kwargs)


def _order_only(args: list[Value], kwargs: dict[str, Value]) -> bool:
    """`x.ravel("F")`, `x.flatten(order="F")`: the one argument is the order."""
    return len(args) + len(kwargs) == 1 and set(kwargs) <= {"order"}


def _new_view(tracer, array: ArrayValue, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """`x.view()`: a new array object on the same memory, which the identity transpose is;
    a dtype or type argument reinterprets the memory, which no op models."""
    if args or kwargs:
        raise Break("unsupported", "ndarray.view(dtype or type) reinterprets the array's memory, which is not "
                    "modelled", hint="it runs in Python at a graph break; x.view() with no argument is captured")
    return tracer.call_op(REGISTRY["transpose"], (array, ConstantValue(tuple(range(array.node.meta.ndim)))), {})


def method_break(kind: str, name: str) -> Break:
    """NOTE(method-breaks): an array's method that is not captured (`y.item`,
    `loss.backward`) loads as a method value and the break is its call, where the
    transformed code runs the load and the call together in Python: one user call is
    one break (explain's count), not a break at the load and another at the call."""
    if kind == "ndarray" and name in _IN_PLACE_ARRAY_METHODS:
        return Break("unsupported", f"ndarray.{name}() changes the array in place, which is not captured",
                     hint=f"it runs in Python at a graph break; np.{name}(x) returns a new array and is captured")
    if name in _VALUE_METHODS:
        return Break("data_dependent", f"{kind}.{name}() needs the array's values, which exist only when the "
                     "graph runs", hint="it runs in Python at a graph break")
    return Break("unsupported", f"{kind}.{name}() is not captured", hint="it runs in Python at a graph break")
