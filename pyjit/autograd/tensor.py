"""`Tensor`: a NumPy or CuPy array that records the registry ops applied to it.

NOTE(tensor-dispatch): a Tensor takes part in a registry primitive through the dispatch
protocol (NOTE(dispatch-protocol) in pyjit/ops/registry.py). `_dispatch` unwraps the
tensors among the arguments to their arrays, computes with `op.impl`, and wraps the
result. It records an OpNode (NOTE(tape-nodes)) when grad mode is on, the op has a
VJP, some input tensor requires grad and the result is of a floating or complex dtype
(pyjit/ops/gradients.py is_differentiable): so creation ops, argmax and comparisons
give tensors that do not require grad, and composites (softmax, mean, …) record their
primitives. Operators, methods and NumPy's protocols all end up here: no op has a
derivative outside the registry.

NOTE(inplace): `+=`, `-=`, `*=`, `/=`, add_/sub_/mul_/div_, copy_, zero_, fill_ and
item assignment modify the array itself and add one to the tensor's version counter,
which views (results of view ops that share the memory) share with their base. With
nothing to record (grad mode off, or no tensor involved requires grad) they are
NumPy's own in-place operations. Otherwise, as in PyTorch, a leaf that requires grad,
or a view of one, refuses; for a non-leaf the result is computed out of place from a
copy of the old values (the VJP may need them), written into the array, and the tensor
takes the result's grad_fn. pyjit does not rebase views on in-place changes as PyTorch
does (CopySlices): an in-place op that would need it — on a view, or on memory that a
recorded view shares — raises instead of giving wrong gradients, and so does item
assignment that would have to be recorded.
"""

from __future__ import annotations

import copy as copy_module
import sys
import weakref

import numpy as np

from .. import _C
from ..ops import REGISTRY
from ..ops.views import is_basic
from ..utils import counters
from .device import array_module, cupy_module, device_of, is_traced, normalize_device, to_device
from .grad_mode import is_grad_enabled
from . import engine
from .methods import TensorMethods, numpy_entry
from .nodes import AccumulateGrad, OpNode, Saved, VersionCounter, add_hook, register_tensor_type

DEFAULT_FLOAT = np.dtype(np.float32)  # what Python floats become, as in PyTorch
DEFAULT_COMPLEX = np.dtype(np.complex64)
_PYTHON_SCALARS = (bool, int, float, complex)
_METADATA_FUNCTIONS = {"shape": np.shape, "ndim": np.ndim, "size": np.size, "result_type": np.result_type}
# NumPy functions that compare values and answer a Python bool: computed on the arrays,
# as there is no result to record on the tape (np.allclose(t, expected) in tests).
_COMPARISON_FUNCTIONS = frozenset({"allclose", "array_equal", "array_equiv"})


# NOTE(gradient-stealing): as PyTorch's AccumulateGrad, a leaf's first gradient becomes its
# `.grad` without a copy when nothing but the engine can reach it: a writeable, C-contiguous
# NumPy array of the leaf's dtype that owns its memory and whose only references are the
# engine's buffer slot and the calls that hand it to `_accumulate_grad` (CPython 3.11-3.13
# count 4 there, sys.getrefcount's own argument included). A gradient a hook kept, one the
# engine also sends to another leaf, or one a saved value holds has more references and
# is copied, so `.grad` never shares memory with anything the program can see. Fresh
# gradients are what compiled backward graphs return: the copy cost about a tenth of a
# compiled training step. While pyjit's frame hook is installed (a backward run inside a
# compiled function), CPython makes no inlined Python-to-Python calls, and the call that
# hands the gradient over keeps one more reference on its caller's stack: 5 then.
_UNSHARED_GRADIENT_REFERENCES = 4


def as_array(data, dtype=None, device=None, copy: bool = False):
    """`data` as an array for a tensor: arrays keep their dtype, Python floats become
    float32 (complex: complex64), ints int64; on `device` when given (its own otherwise)."""
    if isinstance(data, Tensor):
        data = data._array
    if isinstance(data, np.ndarray) or type(data).__module__.startswith("cupy") or is_traced(data):
        array = data
    else:
        array = np.asarray(data)
        if dtype is None and _is_python_data(data):
            array = array.astype(_default_dtype(array.dtype), copy=False)
    if device is not None:
        moved = to_device(array, normalize_device(device))
        copy = copy and moved is array
        array = moved
    if dtype is not None and array.dtype != np.dtype(dtype):
        array, copy = array.astype(dtype), False
    return array.copy() if copy else array


def _is_python_data(data) -> bool:
    """Python scalars, or lists and tuples of them: the data PyTorch's default dtypes apply to."""
    if type(data) in (list, tuple):
        return all(_is_python_data(item) for item in data)
    return type(data) in _PYTHON_SCALARS


def _default_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.float64:
        return DEFAULT_FLOAT
    if dtype == np.complex128:
        return DEFAULT_COMPLEX
    return dtype


def _operator(name: str, reflected: bool = False):
    """The dunder method of a binary operator: the primitive `name` on (self, other),
    or on (other, self) for the reflected form."""
    op = REGISTRY[name]
    if reflected:
        def method(self, other):
            return NotImplemented if other is None else _dispatch(op, (other, self), {})
    else:
        def method(self, other):  # `t == None` falls back to identity: False, as in PyTorch
            return NotImplemented if other is None else _dispatch(op, (self, other), {})
    return method


class Tensor(TensorMethods):
    """An array with autograd: `grad`, `grad_fn`, `backward()`, hooks."""

    __slots__ = ("_array", "_requires_grad", "_grad", "grad_fn", "_output_nr", "_version_counter", "_base",
                 "_hooks", "_accumulator", "__weakref__")

    def __init__(self, data, requires_grad: bool = False):
        _initialize(self, as_array(data))
        if isinstance(data, Tensor):
            self._version_counter = data._version_counter  # the same memory
        if requires_grad:
            self.requires_grad = True

    __hash__ = object.__hash__  # by identity, as PyTorch's: == is elementwise

    # -- what the tensor is ---------------------------------------------------------------
    @property
    def array(self):
        """The NumPy or CuPy array this tensor wraps."""
        return self._array

    @property
    def shape(self) -> tuple:
        return self._array.shape

    @property
    def dtype(self) -> np.dtype:
        return self._array.dtype

    @property
    def device(self) -> str:
        return device_of(self._array)

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        """The number of elements (NumPy's `size`; PyTorch's is `numel()`)."""
        return self._array.size

    @property
    def itemsize(self) -> int:
        return self._array.itemsize

    @property
    def nbytes(self) -> int:
        return self._array.nbytes

    @property
    def strides(self) -> tuple:
        return self._array.strides

    def numel(self) -> int:
        return self._array.size

    def dim(self) -> int:
        return self._array.ndim

    def __len__(self) -> int:
        if not self._array.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    # -- autograd state -------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if value:
                return  # a non-leaf with a history requires grad already
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if value and self._array.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient of a leaf (or of a tensor that retains it)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
        self._grad = value

    @property
    def _version(self) -> int:
        """How often this tensor's memory was modified in place (NOTE(inplace))."""
        return self._version_counter.value

    def _gradient_edge(self) -> tuple:
        """Where a gradient for this tensor goes: (grad_fn, output_nr), the leaf's
        AccumulateGrad, or (None, 0) when it does not require grad."""
        if self.grad_fn is not None:
            return self.grad_fn, self._output_nr
        if not self._requires_grad:
            return None, 0
        accumulator = self._accumulator() if self._accumulator is not None else None
        if accumulator is None:  # kept alive by the graphs that use it, as in PyTorch
            accumulator = AccumulateGrad(self)
            self._accumulator = weakref.ref(accumulator)
        return accumulator, 0

    def _leaf_hooks(self) -> dict:
        if self._hooks is None:
            self._hooks = {}
        return self._hooks

    def _accumulate_grad(self, grad) -> None:
        """Add `grad` (an array) to `.grad`: the first time a copy of it, in this leaf's dtype."""
        module = array_module(grad if is_traced(grad) else self._array)  # a traced gradient records (NOTE(make-fx))
        if self._grad is None:
            if (type(grad) is np.ndarray and grad.dtype == self.dtype and grad.base is None and grad.flags.c_contiguous
                    and grad.flags.writeable
                    and sys.getrefcount(grad) <= _UNSHARED_GRADIENT_REFERENCES + _C.hook_installed()):
                self._grad = wrap_array(grad)  # NOTE(gradient-stealing)
                counters["autograd"]["gradients_taken_without_copy"] += 1
            else:
                self._grad = wrap_array(module.array(grad, dtype=self.dtype, copy=True, order="C"))
        else:
            target = self._grad._array
            module.add(target, grad, out=target, casting="unsafe")
            self._grad._version_counter.value += 1

    def register_hook(self, hook):
        """`hook(grad)` runs when the gradient with respect to this tensor is computed; a
        tensor it returns replaces the gradient. For a leaf it runs before `.grad` is
        accumulated. Returns a handle whose `remove()` takes it out again."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return add_hook(self.grad_fn._pre_hooks, self._output_nr, hook)
        return add_hook(self._leaf_hooks(), 0, hook)

    def retain_grad(self) -> None:
        """Keep (accumulate) `.grad` for this non-leaf tensor too."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if not self.retains_grad:
            add_hook(self.grad_fn._pre_hooks, self._output_nr, RetainGrad(self))

    @property
    def retains_grad(self) -> bool:
        if self.grad_fn is None:
            return False
        return any(isinstance(hook, RetainGrad) and hook.tensor() is self
                   for _, hook in self.grad_fn._pre_hooks.values())

    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor into the leaves' `.grad`
        (`gradient`: d(something)/d(self), needed unless this is a single element)."""
        engine.backward([self], None if gradient is None else [gradient], retain_graph, create_graph)

    # -- conversion -------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The NumPy array itself (no copy). Unlike PyTorch, also for a tensor that
        requires grad: what is computed from it is simply not recorded."""
        if is_traced(self._array):
            return np.asarray(self._array)  # the value in real mode (NOTE(make-fx) in tracing.py)
        if type(self._array) is not np.ndarray:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            f"the tensor to host memory first.")
        return self._array

    def item(self):
        return self._array.item()

    def tolist(self):
        return self._array.tolist()

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if copy:
            return np.array(array, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return array.astype(dtype)
        return array

    def __bool__(self) -> bool:
        return bool(self._array)

    def __float__(self) -> float:
        return float(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __index__(self) -> int:
        return self._array.__index__()

    def __format__(self, spec: str) -> str:
        """f"{loss:.4f}" formats a 0-d tensor's value, as PyTorch does."""
        return format(self.item(), spec) if self.ndim == 0 else super().__format__(spec)

    def detach(self) -> Tensor:
        """The same memory (and version counter), outside the tape."""
        detached = wrap_array(self._array)
        detached._version_counter = self._version_counter
        return detached

    @property
    def data(self) -> Tensor:
        """As in PyTorch: the same memory outside the tape, with its own version counter
        (in-place changes through it are not seen by the graph)."""
        return wrap_array(self._array)

    @data.setter
    def data(self, value) -> None:
        self._array = value._array if isinstance(value, Tensor) else as_array(value)

    def clone(self) -> Tensor:
        """A copy, recorded (its gradient flows back to this tensor)."""
        return REGISTRY["astype"](self, self.dtype)

    def contiguous(self) -> Tensor:
        """This tensor: NumPy reshapes non-contiguous arrays by copying, so no op needs this."""
        return self

    def to(self, *args, **kwargs) -> Tensor:
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, or by keyword. A dtype change is
        recorded (astype); a device change is not an op and is refused while recording."""
        device, dtype, copy = _to_arguments(*args, **kwargs)
        result = self
        if dtype is not None and np.dtype(dtype) != self.dtype:
            result = REGISTRY["astype"](result, np.dtype(dtype))
        if device is not None and normalize_device(device) != self.device:
            if result._requires_grad and is_grad_enabled():
                raise RuntimeError("moving a tensor that requires grad to another device is not recorded by pyjit; "
                                   "move it under pyjit.no_grad(), or detach() it first")
            result = wrap_array(to_device(result._array, normalize_device(device)))
        return result.clone() if copy and result is self else result

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        if isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device or "cuda")

    # -- NumPy's protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            arguments = ", ".join(sorted(kwargs))
            raise TypeError(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method} with "
                            f"{arguments or 'this method'} is not supported on pyjit tensors: it would not be "
                            f"recorded on the tape")
        return numpy_entry(ufunc.__name__)(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name in _METADATA_FUNCTIONS:
            return _METADATA_FUNCTIONS[name](*_unwrapped(args), **kwargs)
        if name in _COMPARISON_FUNCTIONS:
            return bool(func(*_unwrapped(args), **kwargs))
        return numpy_entry(name)(*args, **kwargs)

    def __pyjit_dispatch__(self, op, args, kwargs):
        return _dispatch(op, args, kwargs)

    # -- operators (primitives: dispatched directly, without the registry's argument scan) --
    __add__, __radd__ = _operator("add"), _operator("add", reflected=True)
    __sub__, __rsub__ = _operator("subtract"), _operator("subtract", reflected=True)
    __mul__, __rmul__ = _operator("multiply"), _operator("multiply", reflected=True)
    __truediv__, __rtruediv__ = _operator("divide"), _operator("divide", reflected=True)
    __floordiv__, __rfloordiv__ = _operator("floor_divide"), _operator("floor_divide", reflected=True)
    __mod__, __rmod__ = _operator("mod"), _operator("mod", reflected=True)
    __pow__, __rpow__ = _operator("power"), _operator("power", reflected=True)
    __matmul__, __rmatmul__ = _operator("matmul"), _operator("matmul", reflected=True)
    __eq__, __ne__ = _operator("equal"), _operator("not_equal")
    __lt__, __le__ = _operator("less"), _operator("less_equal")
    __gt__, __ge__ = _operator("greater"), _operator("greater_equal")

    def __neg__(self):
        return REGISTRY["negative"](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return REGISTRY["abs"](self)

    def __invert__(self):
        return REGISTRY["logical_not"](_boolean_operand(self, "~"))

    def __and__(self, other):
        return REGISTRY["logical_and"](_boolean_operand(self, "&"), _boolean_operand(other, "&"))

    __rand__ = __and__

    def __or__(self, other):
        return REGISTRY["logical_or"](_boolean_operand(self, "|"), _boolean_operand(other, "|"))

    __ror__ = __or__

    def __xor__(self, other):
        return REGISTRY["logical_xor"](_boolean_operand(self, "^"), _boolean_operand(other, "^"))

    __rxor__ = __xor__

    def __getitem__(self, index):
        """Basic indexing (a view: getitem) or integer-array and mask indexing (a copy: index)."""
        return REGISTRY["getitem" if is_basic(index) else "index"](self, index)

    # -- in place (NOTE(inplace)) -----------------------------------------------------------
    def __iadd__(self, other):
        return self._update("add", other)

    def __isub__(self, other):
        return self._update("subtract", other)

    def __imul__(self, other):
        return self._update("multiply", other)

    def __itruediv__(self, other):
        return self._update("divide", other)

    def add_(self, other, alpha=1):
        return self._update("add", other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return self._update("subtract", other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return self._update("multiply", other)

    def div_(self, other):
        return self._update("divide", other)

    def copy_(self, src) -> Tensor:
        """Write `src` (broadcast, cast to this dtype) into this tensor."""
        if not self._recording(src):
            source = src._array if isinstance(src, Tensor) else src
            array_module(self._array).copyto(self._array, to_device(as_array(source), self.device), casting="unsafe")
            return self._bump()
        if not isinstance(src, Tensor):
            src = Tensor(src)
        cast = src if src.dtype == self.dtype else REGISTRY["astype"](src, self.dtype)
        return self._take_result(REGISTRY["broadcast_to"](cast, self.shape))

    def fill_(self, value) -> Tensor:
        if not self._recording(value):
            self._array.fill(value)
            return self._bump()
        return self._take_result(REGISTRY["full_like"](self, value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def __setitem__(self, index, value) -> None:
        if self._recording(value):
            raise RuntimeError("pyjit does not record item assignment into a tensor that requires grad (or of a "
                               "value that does); build the result out of place (np.where, index_add), or assign "
                               "under pyjit.no_grad()")
        raw_index = tuple(_unwrapped(index)) if type(index) is tuple else _unwrapped([index])[0]
        self._array[raw_index] = value._array if isinstance(value, Tensor) else value
        self._bump()

    def _recording(self, other) -> bool:
        involved = self._requires_grad or (isinstance(other, Tensor) and other._requires_grad)
        return involved and is_grad_enabled()

    def _bump(self) -> Tensor:
        self._version_counter.value += 1
        return self

    def _update(self, name: str, other) -> Tensor:
        """self = self <op> other, in place (NOTE(inplace))."""
        if not self._recording(other):
            raw = other._array if isinstance(other, Tensor) else other
            getattr(array_module(self._array), name)(self._array, raw, out=self._array)
            return self._bump()
        old = wrap_array(self._array.copy(), requires_grad=self._requires_grad)
        old.grad_fn, old._output_nr = self.grad_fn, self._output_nr
        result = REGISTRY[name](old, other)
        if result.shape != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the "
                             f"broadcast shape {result.shape}")
        if result.dtype != self.dtype:
            if not np.can_cast(result.dtype, self.dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc '{name}' output from {result.dtype!r} to {self.dtype!r} with "
                                f"casting rule 'same_kind'")
            result = REGISTRY["astype"](result, self.dtype)
        return self._take_result(result)

    def _check_recordable_inplace(self) -> None:
        if self.grad_fn is None and self._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if self._base is not None and self._base.grad_fn is None and self._base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if self._base is not None or self._version_counter.recorded_views:
            raise RuntimeError("pyjit does not record in-place operations on a view, or on a tensor that a recorded "
                               "view shares memory with (PyTorch rebases the views' history; pyjit does not): "
                               "compute out of place instead")

    def _take_result(self, result: Tensor) -> Tensor:
        """Write a recorded result into this tensor, which takes over its history."""
        self._check_recordable_inplace()
        array_module(self._array).copyto(self._array, result._array, casting="unsafe")
        self._bump()
        self.grad_fn, self._output_nr, self._requires_grad = result.grad_fn, result._output_nr, result._requires_grad
        if isinstance(self.grad_fn, OpNode):
            self.grad_fn.out.rebind(self._array, self._version_counter)
        return self

    # -- copying, pickling and printing --------------------------------------------------
    def __reduce_ex__(self, protocol):
        """Pickled as its values (on the CPU), requires_grad and device; the history is not kept."""
        state = getattr(self, "__dict__", None) or None  # a subclass's attributes
        return _unpickle, (type(self), to_device(self._array, "cpu"), self._requires_grad, self.device), state

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        result = type(self).__new__(type(self))
        _initialize(result, self._array.copy(), self._requires_grad)
        memo[id(self)] = result
        if self._grad is not None:
            result._grad = copy_module.deepcopy(self._grad, memo)
        for key, value in getattr(self, "__dict__", {}).items():  # a subclass's attributes (Parameter)
            setattr(result, key, copy_module.deepcopy(value, memo))
        return result

    def __repr__(self) -> str:
        if is_traced(self._array):
            body = repr(self._array)
        else:
            body = np.array2string(np.asarray(to_device(self._array, "cpu")), separator=", ", prefix="tensor(")
        extras = []
        if self.dtype not in (DEFAULT_FLOAT, np.dtype(np.int64), np.dtype(bool)):
            extras.append(f"dtype={self.dtype}")
        if self.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({', '.join([body, *extras])})"


register_tensor_type(Tensor, as_array)  # NOTE(tensor-class)


def _initialize(tensor: Tensor, array, requires_grad: bool = False) -> None:
    tensor._array = array
    tensor._requires_grad = requires_grad
    tensor._grad = None
    tensor.grad_fn = None
    tensor._output_nr = 0
    tensor._version_counter = VersionCounter()
    tensor._base = None
    tensor._hooks = None
    tensor._accumulator = None


def _unpickle(cls: type, array: np.ndarray, requires_grad: bool, device: str) -> Tensor:
    tensor = cls.__new__(cls)
    _initialize(tensor, to_device(array, device), requires_grad)
    return tensor


def wrap_array(array, requires_grad: bool = False) -> Tensor:
    """A plain Tensor around `array` (no copy, no checks): how results are made."""
    tensor = Tensor.__new__(Tensor)
    _initialize(tensor, array, requires_grad)
    return tensor


class RetainGrad:
    """The hook retain_grad() registers: accumulates the gradient into the tensor's `.grad`."""

    def __init__(self, tensor: Tensor):
        self.tensor = weakref.ref(tensor)

    def __call__(self, grad: Tensor) -> None:
        tensor = self.tensor()
        if tensor is not None:
            tensor._grad = grad.clone() if tensor._grad is None else tensor._grad + grad


def _boolean_operand(value, symbol: str):
    dtype = getattr(value, "dtype", None)
    if not (isinstance(value, bool) or (dtype is not None and np.dtype(dtype) == np.bool_)):
        raise TypeError(f"'{symbol}' on pyjit tensors is logical and takes booleans (bitwise operations on integers "
                        f"are not in the op registry)")
    return value


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether `input` and `other` (tensors or arrays) are equal within `atol + rtol * |other|`
    elementwise, as torch.allclose and np.allclose; no gradient is recorded."""
    return bool(np.allclose(*_unwrapped((input, other)), rtol=rtol, atol=atol, equal_nan=equal_nan))


def _unwrapped(values) -> list:
    return [value._array if isinstance(value, Tensor) else value for value in values]


def _to_arguments(*args, device=None, dtype=None, copy=False, non_blocking=False):
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, str) and arg.partition(":")[0] in ("cpu", "cuda"):
            device = arg
        else:
            dtype = arg
    return device, dtype, copy


# -- the dispatch protocol (NOTE(tensor-dispatch)) ---------------------------------------
def _dispatch(op, args: tuple, kwargs: dict) -> Tensor:
    inputs: list[Tensor] = []
    paths: list = []
    raw_args = []
    for position, arg in enumerate(args):
        if isinstance(arg, Tensor):
            inputs.append(arg)
            paths.append((position, None))
            arg = arg._array
        elif type(arg) in (list, tuple):
            arg = _unwrap_items(arg, position, inputs, paths)
        raw_args.append(arg)
    raw_kwargs = {key: _unwrap_keyword(value, inputs, paths) for key, value in kwargs.items()}
    module = _module_of(inputs)
    if module is None:  # traced arrays record the call (NOTE(make-fx) in tracing.py)
        result = op(*raw_args, **raw_kwargs)
    else:
        result = op.impl(module, *raw_args, **raw_kwargs)
        if type(result) is not module.ndarray:
            result = module.asarray(result)  # NumPy gives scalars for 0-d results
    record = op.vjp is not None and result.dtype.kind in "fc" and is_grad_enabled() and _any_requires_grad(inputs)
    out = wrap_array(result, record)
    if op.category == "view" and paths and paths[0] == (0, None) and (
            module is None or module.may_share_memory(result, raw_args[0])):
        base = inputs[0]
        out._version_counter, out._base = base._version_counter, base._base if base._base is not None else base
        out._version_counter.recorded_views |= record
    if record:
        _record(op, args, kwargs, out, inputs, paths)
    return out


def _unwrap_items(items, position, inputs: list, paths: list):
    """`items` (a list or tuple argument) with its tensors replaced by their arrays,
    each tensor and where it sat appended to `inputs` and `paths`."""
    if not any(isinstance(item, Tensor) for item in items):
        return items
    unwrapped = []
    for index, item in enumerate(items):
        if isinstance(item, Tensor):
            inputs.append(item)
            paths.append((position, index))
            item = item._array
        unwrapped.append(item)
    return type(items)(unwrapped)


def _unwrap_keyword(value, inputs: list, paths: list):
    """A keyword argument unwrapped like a positional one; gradients never flow to it (path None)."""
    if isinstance(value, Tensor):
        inputs.append(value)
        paths.append((None, None))
        return value._array
    return _unwrap_items(value, None, inputs, paths) if type(value) in (list, tuple) else value


def _any_requires_grad(inputs: list[Tensor]) -> bool:
    for tensor in inputs:
        if tensor._requires_grad:
            return True
    return False


def _module_of(inputs: list[Tensor]):
    """numpy when every tensor is on the CPU; cupy when they all are on one GPU; None
    when one is traced (NOTE(make-fx) in tracing.py)."""
    for tensor in inputs:
        if type(tensor._array) is not np.ndarray:
            break
    else:
        return np
    if any(is_traced(tensor._array) for tensor in inputs):
        return None
    devices = sorted({tensor.device for tensor in inputs})
    if len(devices) > 1:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{devices[0]} and {devices[1]}!")
    return cupy_module()


def _record(op, args: tuple, kwargs: dict, out: Tensor, inputs: list[Tensor], paths: list) -> None:
    if kwargs:
        for tensor, (position, _) in zip(inputs, paths):
            if position is None and tensor._requires_grad:
                raise RuntimeError(f"{op.name}: gradients flow to positional arguments only (NOTE(op-entry)); "
                                   f"pass the keyword argument that requires grad by position")
    saved_args = tuple([_saved(arg) for arg in args])
    saved_kwargs = {key: _saved(value) for key, value in kwargs.items()} if kwargs else kwargs
    edges = tuple([tensor._gradient_edge() for tensor in inputs])
    out.grad_fn = OpNode(op, saved_args, saved_kwargs, Saved(out._array, out._version_counter), paths, edges)


def _saved(value):
    if isinstance(value, Tensor):
        return Saved(value._array, value._version_counter)
    if type(value) in (list, tuple):
        return type(value)(_saved(item) for item in value)
    if type(value) is np.ndarray or type(value).__module__.startswith("cupy"):
        # A plain array has no version counter to catch an in-place change before
        # backward(), which would silently change the gradient: the node keeps a copy,
        # as PyTorch does when it turns an array argument into a tensor.
        return Saved(value.copy(), None)
    return value
