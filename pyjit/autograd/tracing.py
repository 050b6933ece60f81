"""Traced arrays: the values `make_fx` hands to the tape, which record what is done to them.

NOTE(make-fx): make_fx traces at the level the tape executes. The tensors it gives the
function wrap a `TracedArray` instead of a NumPy array: a graph node plus, in "real"
mode, the concrete array (in "fake" and "symbolic" modes only the node's meta: shape,
dtype, device, no data). A registry op called on a TracedArray records a call node
through the dispatch protocol (NOTE(dispatch-protocol) in pyjit/ops/registry.py) and,
in real mode, computes the value too. Because the tape's nodes compute their VJPs on
their saved arrays with registry ops (NOTE(tape-nodes)), a `backward()` or
`autograd.grad` inside the function records the backward as well: the graph is the
joint forward-and-backward graph, flat, of registry primitives.

The few array-module calls the tape makes on arrays itself (`.grad` accumulation,
in-place updates, `copyto`) go to the `TapeTracer`, which `array_module` returns for a
traced array: each records the functional op and rebinds the TracedArray to its result,
so the graph stays functional while the Python object keeps its identity. A view would
not see such an update, where NumPy's would: an in-place update of a traced array that
is a view, or has views alive, raises NotImplementedError instead.

A Python decision on a value (`bool()`, `.item()`, `float()`, `np.asarray`) takes the
concrete value in real mode, so the graph holds the branch this input took, as in
torch's make_fx; without data (fake, symbolic) it raises DataDependentError naming the
user's line.
"""

from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from ..exc import DataDependentError
from ..graph import Graph, Node, TensorMeta
from ..ops import REGISTRY
from ..source import SourceLoc

MODES = ("real", "fake", "symbolic")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_location() -> SourceLoc | None:
    """The innermost frame outside pyjit's own package: the user's line."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return None if frame is None else SourceLoc(frame.f_code.co_filename, frame.f_lineno)


class TracedArray:
    """An array value under make_fx (NOTE(make-fx)): a graph node, and in real mode its value."""

    __slots__ = ("tracer", "node", "value", "base", "views", "__weakref__")

    def __init__(self, tracer: TapeTracer, node: Node, value=None):
        self.tracer, self.node, self.value = tracer, node, value
        self.base: TracedArray | None = None  # the array a view op took this from
        self.views: list[weakref.ref] = []

    # -- what the tape reads of an array ------------------------------------------------
    @property
    def meta(self) -> TensorMeta:
        return self.node.meta

    @property
    def shape(self) -> tuple:
        return self.node.meta.shape

    @property
    def dtype(self) -> np.dtype:
        return self.node.meta.dtype

    @property
    def device(self) -> str:
        return self.node.meta.device

    @property
    def ndim(self) -> int:
        return self.node.meta.ndim

    @property
    def size(self):
        return self.node.meta.numel

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        return self.tracer.concrete(self, "strides").strides

    def __pyjit_dispatch__(self, op, args: tuple, kwargs: dict):
        return self.tracer.record(op, args, kwargs)

    # The engine adds gradients that meet at a node with `+`; nodes.py's VJPs use registry ops.
    def __add__(self, other):
        return REGISTRY["add"](self, other)

    def __radd__(self, other):
        return REGISTRY["add"](other, self)

    def astype(self, dtype, copy: bool = True):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return REGISTRY["astype"](self, np.dtype(dtype))

    def copy(self) -> TracedArray:
        """Values in a functional graph never change: a copy is a new traced array on the same node."""
        return TracedArray(self.tracer, self.node, self.value)

    def __setitem__(self, index, value) -> None:
        raise NotImplementedError("make_fx does not trace item assignment (the op registry has no functional form "
                                  "of it): build the value out of place (np.where, index_add)")

    def fill(self, value) -> None:
        self.tracer.assign(self, REGISTRY["full_like"](self, value))

    # -- Python decisions on the data ------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self.tracer.concrete(self, "bool()"))

    def __float__(self) -> float:
        return float(self.tracer.concrete(self, "float()"))

    def __int__(self) -> int:
        return int(self.tracer.concrete(self, "int()"))

    def __complex__(self) -> complex:
        return complex(self.tracer.concrete(self, "complex()"))

    def __index__(self) -> int:
        return self.tracer.concrete(self, "using it as an index").__index__()

    def item(self):
        return self.tracer.concrete(self, ".item()").item()

    def tolist(self):
        return self.tracer.concrete(self, ".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        value = self.tracer.concrete(self, "converting it to a NumPy array")
        return np.asarray(value, dtype=dtype) if copy is None else np.array(value, dtype=dtype, copy=copy)

    def __repr__(self) -> str:
        return f"TracedArray(%{self.node.name}: {self.node.meta})"


class TapeTracer:
    """One trace of what the tape runs (make_fx's; compiled autograd's, in fake mode):
    its graph and mode; also the array module of its traced arrays (the calls
    NOTE(make-fx) lists), each recorded with registry ops."""

    def __init__(self, mode: str):
        if mode not in MODES:
            raise ValueError(f"tracing_mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
        self.mode = mode
        self.graph = Graph("forward")
        self.placeholders: list[TracedArray] = []

    # -- inputs and recording ----------------------------------------------------------
    def placeholder(self, name: str, array) -> TracedArray:
        """An input of the graph with `array`'s meta (symbolic sizes in symbolic mode)."""
        meta = TensorMeta.of(array)
        if self.mode == "symbolic":
            sizes = [size if size < 2 else self.graph.shape_env.create_symbol(size, f"{name}.shape[{axis}]")
                     for axis, size in enumerate(meta.shape)]
            meta = meta.with_(shape=tuple(sizes))
        traced = TracedArray(self, self.graph.placeholder(name, meta), array if self.mode == "real" else None)
        self.placeholders.append(traced)
        return traced

    def record(self, op, args: tuple, kwargs: dict):
        """`op(*args, **kwargs)` as a call node (and its value in real mode)."""
        for value in (*args, *kwargs.values()):
            for item in value if type(value) in (list, tuple) else (value,):
                if hasattr(type(item), "__pyjit_dispatch__") and not isinstance(item, TracedArray):
                    return type(item).__pyjit_dispatch__(item, op, args, kwargs)  # a released saved value
        with self.graph.at(user_location()):
            node = self.graph.call(op, *self._nodes(args), **self._nodes(kwargs))
        value = None
        if self.mode == "real":
            value = op(*_values(args), **_values(kwargs))
            if not isinstance(value, np.ndarray) and not type(value).__module__.startswith("cupy"):
                value = np.asarray(value)  # NumPy gives scalars for 0-d results
        result = TracedArray(self, node, value)
        if op.category == "view" and args and isinstance(args[0], TracedArray):
            result.base = args[0] if args[0].base is None else args[0].base
            result.base.views.append(weakref.ref(result))
        return result

    def _nodes(self, structure):
        """Arguments for a call node: traced arrays as their nodes, arrays as constants."""
        if isinstance(structure, TracedArray):
            if structure.tracer is not self:
                raise RuntimeError("a value traced by another make_fx call was used in this one")
            return structure.node
        if isinstance(structure, np.ndarray) or type(structure).__module__.startswith("cupy"):
            return self.graph.constant(structure, name="constant")
        if type(structure) in (list, tuple):
            return type(structure)(self._nodes(item) for item in structure)
        if isinstance(structure, dict):
            return {key: self._nodes(value) for key, value in structure.items()}
        return structure

    def concrete(self, traced: TracedArray, action: str):
        """The value behind `traced` for a Python decision (NOTE(make-fx))."""
        if traced.value is not None:
            return traced.value
        where = user_location()
        raise DataDependentError(
            f"make_fx(tracing_mode={self.mode!r}) cannot trace {action} on a traced value: the result depends on "
            f"the data, which this mode does not have"
            f"{', at ' + where.describe() if where is not None else ''}\n"
            f"hint: use tracing_mode=\"real\" (the graph then holds the branch these inputs take), or compute "
            f"without Python control flow on values (np.where)")

    def assign(self, target, result: TracedArray) -> None:
        """`target` now holds `result` (an in-place update, made functional)."""
        if not isinstance(target, TracedArray):
            raise NotImplementedError(f"make_fx cannot record an in-place update of an array it does not trace (a "
                                      f"tensor the function closes over, such as a parameter's .grad), at "
                                      f"{user_location()}: pass that tensor to the function as an argument")
        if target.base is not None or any(view() is not None for view in target.views):
            raise NotImplementedError(f"make_fx does not trace an in-place update of an array that shares memory "
                                      f"with a view (the view would not see it), at {user_location()}: compute "
                                      f"out of place")
        target.node, target.value = result.node, result.value

    # -- the array-module calls the tape makes (NOTE(make-fx)) ---------------------------
    ndarray = TracedArray

    def empty(self, shape: tuple, dtype) -> TracedArray:
        """A stand-in of this shape and dtype for ops that read only those: a broadcast
        zero, which allocates nothing in fake mode."""
        return REGISTRY["broadcast_to"](self._traced_constant(np.zeros((), dtype)), tuple(shape))

    def array(self, value, dtype=None, copy: bool = True, order: str = "K") -> TracedArray:
        """A copy: in a functional graph, a new traced array on the same node (cast if asked)."""
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return REGISTRY["astype"](value, np.dtype(dtype))
        return value.copy()

    def copyto(self, target: TracedArray, source, casting: str = "same_kind") -> None:
        if not isinstance(source, TracedArray):
            source = self._traced_constant(np.asarray(source, target.dtype))
        if source.dtype != target.dtype:
            source = REGISTRY["astype"](source, target.dtype)
        if not source.meta.same_as(target.meta):
            source = REGISTRY["broadcast_to"](source, target.shape)
        self.assign(target, source)

    def add(self, target, other, out=None, casting: str = "same_kind"):
        return self._update("add", target, other, out)

    def subtract(self, target, other, out=None, casting: str = "same_kind"):
        return self._update("subtract", target, other, out)

    def multiply(self, target, other, out=None, casting: str = "same_kind"):
        return self._update("multiply", target, other, out)

    def divide(self, target, other, out=None, casting: str = "same_kind"):
        return self._update("divide", target, other, out)

    def may_share_memory(self, first, second) -> bool:
        return True  # views of traced values are taken to share memory: the safe answer

    def _update(self, name: str, target, other, out):
        result = REGISTRY[name](target, other)
        if out is None:
            return result
        if result.dtype != out.dtype:
            result = REGISTRY["astype"](result, out.dtype)
        self.assign(out, result)
        return out

    def _traced_constant(self, array: np.ndarray) -> TracedArray:
        return TracedArray(self, self.graph.constant(array, name="constant"), array if self.mode == "real" else None)


def _values(structure):
    """Arguments for computing in real mode: traced arrays as their values."""
    if isinstance(structure, TracedArray):
        return structure.value
    if type(structure) in (list, tuple):
        return type(structure)(_values(item) for item in structure)
    if isinstance(structure, dict):
        return {key: _values(value) for key, value in structure.items()}
    return structure
