"""What a node's value looks like without computing it: shape, dtype, device.

NOTE(meta-protocol): the graph never imports the op registry. A call node's target
may implement `meta(*args, **kwargs)`; the graph calls it with every argument node
replaced by that node's meta (a TensorMeta, or a Python scalar type for a weak scalar
input) and constants left as they are, and stores what it returns (a TensorMeta, or a
tuple/list of them). Targets without `meta` get None. Rules that compare sizes do so
with plain Python comparisons, which record guards when a size is symbolic
(NOTE(symbolic-sizes)).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .symbolic import SymInt

Size = int | SymInt


@dataclasses.dataclass(frozen=True, eq=False)
class TensorMeta:
    """An array value: shape (ints and SymInts), NumPy dtype, device ("cpu", "cuda:0", …)."""

    shape: tuple[Size, ...]
    dtype: np.dtype
    device: str = "cpu"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @classmethod
    def of(cls, array) -> TensorMeta:
        """The meta of a concrete NumPy or CuPy array."""
        device = getattr(array, "device", "cpu")
        device = "cpu" if isinstance(device, str) else f"cuda:{device.id}"
        return cls(tuple(array.shape), array.dtype, device)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Size:
        return math.prod(self.shape, start=1)

    def with_(self, **changes) -> TensorMeta:
        return dataclasses.replace(self, **changes)

    def same_as(self, other: TensorMeta) -> bool:
        """Equal shape (structurally, no guards), dtype and device."""
        return (self.dtype == other.dtype and self.device == other.device and self.ndim == other.ndim
                and all(same_size(a, b) for a, b in zip(self.shape, other.shape)))

    def __str__(self) -> str:
        sizes = ", ".join(str(size) for size in self.shape)
        device = "" if self.device == "cpu" else f" @{self.device}"
        return f"{dtype_abbreviation(self.dtype)}[{sizes}]{device}"


def same_size(left: Size, right: Size) -> bool:
    if isinstance(left, SymInt):
        return left.same_as(right)
    if isinstance(right, SymInt):
        return right.same_as(left)
    return left == right


def could_be_one(size: Size) -> bool:
    return size.could_be_one() if isinstance(size, SymInt) else size == 1


def dtype_abbreviation(dtype: np.dtype) -> str:
    """f32, f64, i64, u8, b8, c64, …: the short form used in graph tables and logs."""
    if dtype == np.bool_:
        return "b8"
    return f"{dtype.kind}{dtype.itemsize * 8}"


def broadcast_shapes(*shapes: tuple[Size, ...]) -> tuple[Size, ...]:
    """NumPy's broadcasting of `shapes`, with the same ValueError when they do not fit.

    A symbolic size meets another size by equality (recorded as a guard); since a symbol
    is never 1 (NOTE(symbolic-sizes)), meeting a 1 needs no guard. A size meeting the
    constant 1 or the same expression is kept whatever its value, so a loop index's size
    (which may be 0 or 1: `x[:i] * y[:i]`) needs no guard either.
    """
    ndim = max((len(shape) for shape in shapes), default=0)
    padded = [(1,) * (ndim - len(shape)) + tuple(shape) for shape in shapes]
    result = []
    for sizes in zip(*padded):
        chosen: Size = 1
        for size in sizes:
            if same_size(size, 1) or same_size(size, chosen):
                continue
            if same_size(chosen, 1):
                chosen = size
            elif could_be_one(size) and size == 1:
                continue
            elif could_be_one(chosen) and chosen == 1:
                chosen = size
            elif chosen != size:
                described = " ".join(_numpy_shape_text(shape) for shape in shapes)
                raise ValueError(f"operands could not be broadcast together with shapes {described} ")
            elif not isinstance(size, SymInt):
                chosen = size  # a symbol now known to equal a constant: keep the constant
        result.append(chosen)
    return tuple(result)


def _numpy_shape_text(shape: tuple[Size, ...]) -> str:
    return "(" + ",".join(str(size) for size in shape) + ("," if len(shape) == 1 else "") + ")"
