"""Sample rows for every op of the registry; the op tests are generated from them.

Each group module (pointwise.py, reductions.py, …) defines SAMPLES: {op name: [Sample]}.
Array arguments are written as `A(shape, dtype, ...)` specs and made fresh, from a fixed
seed, for every test, so a test may modify what it gets.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class A:
    """An array argument: seeded values in [low, high) (integers: [low, high) too; bool:
    random), C-contiguous unless layout is "F" (Fortran order) or "strided" (every other
    element of a wider array)."""

    shape: tuple
    dtype: str = "float64"
    low: float = -2.0
    high: float = 2.0
    layout: str = "C"

    def make(self, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        dtype = np.dtype(self.dtype)
        if dtype.kind == "b":
            values = rng.random(self.shape) < 0.5
        elif dtype.kind in "iu":
            values = rng.integers(int(self.low), int(self.high), self.shape)
        else:
            values = rng.uniform(self.low, self.high, self.shape)
        values = np.asarray(values).astype(dtype)
        return with_layout(values, self.layout)

    def __repr__(self) -> str:
        layout = "" if self.layout == "C" else f",{self.layout}"
        return f"{self.dtype}{list(self.shape)}{layout}"


def with_layout(array: np.ndarray, layout: str) -> np.ndarray:
    """The same values in another memory layout."""
    if array.ndim == 0:
        return array.copy()  # np.ascontiguousarray would make it 1-D
    if layout == "C":
        return np.ascontiguousarray(array)
    if layout == "F":
        return np.asfortranarray(array)
    if layout == "strided":
        wide = np.empty(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        view = wide[..., ::2]
        view[...] = array
        return view
    raise ValueError(f"unknown layout {layout!r}")


@dataclasses.dataclass(frozen=True)
class Sample:
    """One call of an op. `raises`: the exception type NumPy raises for it (the meta rule
    must raise it too). `reference`: what the result must equal, when the op is not
    NumPy's function of the same name. `rtol`: tolerance against the reference."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    raises: type[BaseException] | None = None
    reference: Callable | None = None
    rtol: float = 1e-6

    def make(self, seed: int = 0) -> tuple[tuple, dict]:
        """Concrete arguments: each A spec becomes an array (also inside lists/tuples)."""
        counter = iter(range(1000))

        def build(value: Any) -> Any:
            if isinstance(value, A):
                return value.make(seed * 1000 + next(counter))
            if type(value) in (list, tuple):
                return type(value)(build(item) for item in value)
            return value

        return build(self.args), {key: build(value) for key, value in self.kwargs.items()}

    def __repr__(self) -> str:
        pieces = [repr(arg) for arg in self.args] + [f"{key}={value!r}" for key, value in self.kwargs.items()]
        return "(" + ", ".join(pieces) + ")" + (f"->{self.raises.__name__}" if self.raises else "")


def numpy_raises(function, *args) -> type[BaseException] | None:
    """The exception type the installed NumPy raises for `function(*args)`, or None: for
    rows whose outcome changed between NumPy releases."""
    try:
        function(*args)
    except Exception as error:
        return type(error)
    return None


def S(*args, raises=None, reference=None, rtol=1e-6, **kwargs) -> Sample:
    return Sample(args, kwargs, raises, reference, rtol)


def all_samples() -> dict[str, list[Sample]]:
    from . import (complex_parts, composites, creation, cumulative, diagonals, fourier, indexing, lapack, linalg,
                   manipulation, pointwise, reductions, signal, sorting, statistics, two_results, views, windows)

    tables: dict[str, list[Sample]] = {}
    for group in (pointwise, reductions, views, indexing, linalg, creation, composites, cumulative, sorting, diagonals,
                  complex_parts, manipulation, lapack, fourier, statistics, signal, two_results, windows):
        for name, samples in group.SAMPLES.items():
            if name in tables:
                raise AssertionError(f"op {name} has sample rows in two modules")
            tables[name] = samples
    return tables
