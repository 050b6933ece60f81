"""What the derivative tests share (tests/ops/test_registry.py through graphs,
tests/autograd/test_tape_gradients.py through the tape): which sample rows can be
checked against finite differences (the differences themselves are
pyjit/autograd/finite_differences.py's, which gradcheck uses)."""

import numpy as np

from pyjit.ops import REGISTRY, Composite


def as_float64(structure):
    if isinstance(structure, np.ndarray) and structure.dtype.kind == "f":
        return structure.astype(np.float64)
    if type(structure) in (list, tuple):
        return type(structure)(as_float64(item) for item in structure)
    return structure


def as_list(output) -> list:
    return list(output) if type(output) in (list, tuple) else [output]


def is_differentiable_sample(name, sample) -> bool:
    """A row whose derivative finite differences can check: a valid call of an op with
    a derivative, some non-empty floating input, and float64 results once the floating
    inputs are float64."""
    entry = REGISTRY[name]
    args, kwargs = sample.make()
    if sample.raises is not None or (not isinstance(entry, Composite) and entry.vjp is None):
        return False
    if not any(leaf.dtype.kind == "f" and leaf.size for leaf in array_leaves((args, kwargs))):
        return False
    # NaN and infinities (rows of special values) have no neighbourhood to difference in.
    if not all(np.isfinite(leaf).all() for leaf in array_leaves((args, kwargs)) if leaf.dtype.kind in "fc"):
        return False
    # Finite differences need float64 results: a cast to float32 or to an integer is
    # differentiated through the rows that keep float64.
    outputs = as_list(entry(*as_float64(args), **as_float64(kwargs)))
    return all(np.asarray(output).dtype == np.float64 for output in outputs)


def array_leaves(structure):
    """The arrays in a structure of lists, tuples and dicts, in order."""
    if isinstance(structure, np.ndarray):
        yield structure
    elif type(structure) in (list, tuple):
        for item in structure:
            yield from array_leaves(item)
    elif isinstance(structure, dict):
        for item in structure.values():
            yield from array_leaves(item)


def complex_numerical_vjp(function, args: list, index: int, cotangent, step: float = 1e-6):
    """Central differences of L = Re(sum(conj(cotangent) * function(*args))) in the real
    and, for a complex input, imaginary part of each element of args[index]: the
    gradient dL/d(re) + i dL/d(im) that VJPs give under PyTorch's convention for
    complex values (NOTE(complex-parts) in pyjit/ops/complex_parts.py)."""
    point = np.asarray(args[index])
    directions = (1.0, 1j) if point.dtype.kind == "c" else (1.0,)
    result = np.zeros(point.shape, dtype=point.dtype)

    def loss(value):
        changed = list(args)
        changed[index] = value
        return float(np.sum(np.conj(cotangent) * np.asarray(function(*changed))).real)

    for position in np.ndindex(point.shape):
        for direction in directions:
            plus, minus = point.copy(), point.copy()
            plus[position] += step * direction
            minus[position] -= step * direction
            result[position] += (loss(plus) - loss(minus)) / (2 * step) * direction
    return result
