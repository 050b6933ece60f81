"""Tensor methods, and the names NumPy's protocols reach registry entries by.

NOTE(tensor-methods): a method is a registry entry applied to the tensor
(`t.exp()` is `pyjit.ops.exp(t)`), named as NumPy names the ndarray method, plus the
PyTorch spellings people write (`neg`, `mul`, `unsqueeze`, `clamp`, `permute`, `view`,
`masked_fill`, `float`, …). Every method takes PyTorch's `dim=`/`keepdim=` as NumPy's
`axis=`/`keepdims=` (NumPy's own functions refuse those keywords before a tensor sees
them). Where the two libraries mean different things by one name, NumPy's meaning is
kept — `max(axis)` gives the values only, `repeat` is np.repeat (not PyTorch's tiling),
`var`/`std` default to ddof=0
(`correction=`/`unbiased=` are read too), `size` is the element count (PyTorch's
`numel()`) — with one exception: `transpose(dim0, dim1)` with two axes swaps them, as
in PyTorch, on tensors of other than two dimensions, where NumPy would refuse; on a
matrix `transpose(0, 1)` is ambiguous (NumPy: unchanged, PyTorch: swapped) and raises.
"""

from __future__ import annotations

import numpy as np

from ..ops import REGISTRY

# NumPy functions whose name is not the registry entry's (np.absolute is pyjit.ops.abs).
NUMPY_ALIASES = {"absolute": "abs", "remainder": "mod", "amax": "max", "amin": "min", "around": "round",
                 "concat": "concatenate", "permute_dims": "transpose", "conj": "conjugate", "degrees": "rad2deg",
                 "radians": "deg2rad"}

# method name -> registry entry, called as entry(tensor, *args, **kwargs).
FORWARDED = {name: name for name in (
    "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos",
    "arctan", "arctan2", "erf", "abs", "negative", "square", "reciprocal", "sign", "floor", "ceil", "round",
    "isnan", "isinf", "isfinite", "logical_not", "clip", "astype", "sigmoid", "relu", "gelu",
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "matmul", "dot",
    "sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all", "logsumexp", "softmax", "log_softmax",
    "swapaxes", "moveaxis", "squeeze", "expand_dims", "broadcast_to", "take", "cumsum", "cumprod", "argsort",
    "repeat", "diagonal", "trace", "conjugate")} | {
    "neg": "negative", "sub": "subtract", "mul": "multiply", "div": "divide", "pow": "power",
    "unsqueeze": "expand_dims", "amax": "max", "amin": "min", "absolute": "abs", "conj": "conjugate"}

# NOTE(dtype-reductions): `np.sum(x, dtype=d)` (prod, mean, var, std, cumsum, cumprod
# too) casts the elements to d and accumulates in d, which is the op on astype(x, d);
# the methods of these names take `dtype=` so, on tensors as in compiled functions.
COMPUTED_IN_DTYPE = frozenset({"sum", "prod", "mean", "var", "std", "cumsum", "cumprod"})

# PyTorch's dtype-conversion methods.
CONVERSIONS = {"float": np.float32, "double": np.float64, "half": np.float16, "long": np.int64, "int": np.int32,
               "bool": np.bool_}


def numpy_entry(name: str):
    """The registry entry a NumPy function or ufunc of this name maps to; TypeError
    when there is none, since computing it on the arrays would drop their gradients."""
    entry = REGISTRY.get(NUMPY_ALIASES.get(name, name))
    if entry is None:
        raise TypeError(f"numpy.{name} is not in pyjit's op registry, so it cannot be applied to pyjit tensors "
                        f"(it would not be recorded on the tape); use t.numpy() / t.detach().numpy() to compute "
                        f"outside autograd")
    return entry


def numpy_keywords(kwargs: dict) -> dict:
    """PyTorch's dim=/keepdim= as NumPy's axis=/keepdims=."""
    for torch_name, numpy_name in (("dim", "axis"), ("keepdim", "keepdims")):
        if torch_name in kwargs:
            if numpy_name in kwargs:
                raise TypeError(f"got both {torch_name}= and {numpy_name}=")
            kwargs = dict(kwargs)
            kwargs[numpy_name] = kwargs.pop(torch_name)
    return kwargs


def _sizes(args: tuple) -> tuple:
    """reshape(2, 3) and reshape((2, 3)) alike."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


class TensorMethods:
    """The methods of `Tensor` that are registry entries (NOTE(tensor-methods))."""

    __slots__ = ()

    def reshape(self, *shape):
        return REGISTRY["reshape"](self, _sizes(shape))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        start, end = start_dim % max(self.ndim, 1), end_dim % max(self.ndim, 1)
        shape = self.shape[:start] + (-1,) + self.shape[end + 1:]
        return REGISTRY["reshape"](self, shape if self.ndim else (1,))

    def transpose(self, *axes, dim0=None, dim1=None):
        """NumPy's transpose(), transpose(axes) and transpose(*axes); two axes on a
        tensor of other than two dimensions are PyTorch's swap (NOTE(tensor-methods))."""
        if dim0 is not None or dim1 is not None:
            axes = (dim0, dim1)
        if len(axes) == 2 and all(isinstance(axis, (int, np.integer)) for axis in axes):
            if self.ndim != 2:
                return REGISTRY["swapaxes"](self, *axes)
            if axes[0] % 2 == 0 and axes[1] % 2 == 1:
                raise ValueError(f"transpose{tuple(axes)} of a matrix is ambiguous: NumPy leaves it unchanged, "
                                 f"PyTorch swaps the axes; write .T, .swapaxes(0, 1) or .transpose((0, 1))")
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return REGISTRY["transpose"](self, axes or None)

    def permute(self, *dims):
        return REGISTRY["transpose"](self, _sizes(dims))

    def expand(self, *sizes):
        """PyTorch's expand: broadcast_to, where -1 keeps a size."""
        sizes = _sizes(sizes)
        lead = len(sizes) - self.ndim
        shape = tuple(self.shape[index - lead] if size == -1 else size for index, size in enumerate(sizes))
        return REGISTRY["broadcast_to"](self, shape)

    @property
    def T(self):  # noqa: N802  (NumPy's name)
        return REGISTRY["transpose"](self)

    @property
    def mT(self):  # noqa: N802
        return REGISTRY["swapaxes"](self, -1, -2)

    def clamp(self, min=None, max=None):  # noqa: A002  (PyTorch's keywords)
        return REGISTRY["clip"](self, min, max)

    def var(self, axis=None, ddof=0, keepdims=False, *, correction=None, unbiased=None, dtype=None, **kwargs):
        return REGISTRY["var"](in_dtype(self, dtype),
                               **_deviation_arguments(axis, ddof, keepdims, correction, unbiased, kwargs))

    def std(self, axis=None, ddof=0, keepdims=False, *, correction=None, unbiased=None, dtype=None, **kwargs):
        return REGISTRY["std"](in_dtype(self, dtype),
                               **_deviation_arguments(axis, ddof, keepdims, correction, unbiased, kwargs))

    def masked_fill(self, mask, value):
        return REGISTRY["where"](mask, value, self)


def _deviation_arguments(axis, ddof, keepdims, correction, unbiased, kwargs) -> dict:
    kwargs = numpy_keywords(kwargs)
    if correction is not None:
        ddof = correction
    elif unbiased is not None:
        ddof = int(unbiased)
    return {"axis": kwargs.pop("axis", axis), "ddof": ddof, "keepdims": kwargs.pop("keepdims", keepdims), **kwargs}


def in_dtype(tensor, dtype):
    """The tensor a reduction with `dtype=` computes on (NOTE(dtype-reductions))."""
    return tensor if dtype is None else REGISTRY["astype"](tensor, np.dtype(dtype))


def _forwarding_method(method: str, entry_name: str):
    entry = REGISTRY[entry_name]

    def method_function(self, *args, **kwargs):
        kwargs = numpy_keywords(kwargs)
        if entry_name in COMPUTED_IN_DTYPE and "dtype" in kwargs:
            self = in_dtype(self, kwargs.pop("dtype"))
        return entry(self, *args, **kwargs)

    method_function.__name__ = method_function.__qualname__ = method
    method_function.__doc__ = f"pyjit.ops.{entry_name} of this tensor."
    return method_function


def _conversion_method(method: str, dtype):
    def method_function(self):
        return self if self.dtype == dtype else REGISTRY["astype"](self, np.dtype(dtype))

    method_function.__name__ = method_function.__qualname__ = method
    method_function.__doc__ = f"This tensor as {np.dtype(dtype)} (recorded: astype)."
    return method_function


# The generated methods join the class here, from the tables above.
for _method, _entry in FORWARDED.items():
    setattr(TensorMethods, _method, _forwarding_method(_method, _entry))
for _method, _dtype in CONVERSIONS.items():
    setattr(TensorMethods, _method, _conversion_method(_method, _dtype))
