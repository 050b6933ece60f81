"""What meta rules share: NumPy's dtype resolution, broadcasting, axis handling, devices.

Every rule raises what NumPy raises for the same arguments (AxisError for an axis out
of range, ValueError for shapes that do not broadcast, OverflowError for a Python
integer the result dtype cannot hold).
"""

from __future__ import annotations

import numpy as np

from ..graph import SymInt, TensorMeta, broadcast_shapes

WEAK_SCALAR_TYPES = (int, float, complex)


def is_array(value) -> bool:
    return isinstance(value, TensorMeta)


def operand_dtype(value):
    """What NumPy's type resolution sees for an argument: an array's dtype, a Python
    scalar's type (weak under NEP 50), or a NumPy scalar's dtype (strong)."""
    if isinstance(value, TensorMeta):
        return value.dtype
    if isinstance(value, np.generic):  # before float/complex: np.float64 subclasses float
        return value.dtype
    if isinstance(value, type):
        return np.dtype(bool) if value is bool else value
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, SymInt):
        return int  # a size: a Python int once the graph runs
    if isinstance(value, WEAK_SCALAR_TYPES):
        return type(value)
    raise TypeError(f"unsupported operand type {type(value).__name__}")


def device_of(*values) -> str:
    """The device shared by the array arguments ("cpu" when there are none)."""
    devices = {value.device for value in values if isinstance(value, TensorMeta)}
    if len(devices) > 1:
        raise ValueError(f"arguments are on different devices: {', '.join(sorted(devices))}")
    return devices.pop() if devices else "cpu"


def shape_of(value) -> tuple:
    return value.shape if isinstance(value, TensorMeta) else ()


def check_python_integers(values, dtype: np.dtype) -> None:
    """NumPy 2 refuses a Python int that the integer dtype it meets cannot hold."""
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for value in values:
        if type(value) is int and not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")


def ufunc_meta(ufunc: np.ufunc):
    """The meta rule of an op computed by `ufunc`: broadcast shape, NumPy's loop dtype."""
    def meta(*args):
        if len(args) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__}() takes {ufunc.nin} arguments, not {len(args)}")
        dtypes = ufunc.resolve_dtypes(tuple(operand_dtype(arg) for arg in args) + (None,) * ufunc.nout)
        check_python_integers(args, dtypes[0])
        shape = broadcast_shapes(*(shape_of(arg) for arg in args))
        return TensorMeta(shape, dtypes[-1], device_of(*args))
    return meta


def normalize_axis(axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(int(axis), ndim)
    return int(axis) % ndim


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """axis=None / int / tuple as a sorted tuple of non-negative axes, checked like NumPy."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    normalized = tuple(normalize_axis(each, ndim) for each in axes)
    if len(set(normalized)) != len(normalized):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(normalized))


def reduced_shape(shape: tuple, axes: tuple[int, ...], keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if index in axes else size for index, size in enumerate(shape))
    return tuple(size for index, size in enumerate(shape) if index not in axes)
