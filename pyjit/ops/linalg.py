"""Matrix products: matmul and einsum (primitives); dot, tensordot, vdot, inner, kron and
cross (decompositions).

NOTE(einsum-subset): einsum takes the subscripts-string form only (not the interleaved
`einsum(op0, sublist0, ...)` form) and no keyword options. Within that form everything
NumPy accepts is supported, `...` included, except a label repeated within one operand
(`'ii->i'`, a diagonal): its gradient would have to write into a diagonal, which no
registry op does, so the meta rule and the VJP raise NotImplementedError for it (and
the frontend leaves such a call out of the graph). A label of size 1 broadcasts against
the same label of another operand, as in NumPy.

Python scalars given to dot, tensordot, einsum, vdot, inner and kron promote like arrays (strongly),
because NumPy converts them with `asarray` first: `np.dot(2.0, float32_array)` is
float64, unlike `2.0 * float32_array`.
"""

from __future__ import annotations

import dataclasses
import math
import string

import numpy as np

from ..graph import TensorMeta, broadcast_shapes
from ..graph.meta import could_be_one, same_size
from .gradients import input_grad, is_differentiable
from .registry import composite, op, primitive
from .shape_rules import WEAK_SCALAR_TYPES, device_of, operand_dtype, shape_of

_MATMUL_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"


# -- matmul ------------------------------------------------------------------------------
def _as_matrix_shape(shape: tuple, operand: int) -> tuple:
    """The shape matmul computes with: a 1-D first operand is a row, a 1-D second one a column."""
    if not shape:
        raise ValueError(f"matmul: Input operand {operand} does not have enough dimensions "
                         f"(has 0, gufunc core with signature {_MATMUL_SIGNATURE} requires 1)")
    if len(shape) > 1:
        return shape
    return (1,) + shape if operand == 0 else shape + (1,)


def _matmul_meta(a, b) -> TensorMeta:
    a_shape, b_shape = _as_matrix_shape(shape_of(a), 0), _as_matrix_shape(shape_of(b), 1)
    dtype = np.matmul.resolve_dtypes((operand_dtype(a), operand_dtype(b), None))[-1]
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature {_MATMUL_SIGNATURE} (size {b_shape[-2]} is different from {a_shape[-1]})")
    shape = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    shape += a_shape[-2:-1] if a.ndim > 1 else ()
    shape += b_shape[-1:] if b.ndim > 1 else ()
    return TensorMeta(shape, dtype, device_of(a, b))


def _matmul_vjp(grad, out, a, b):
    """grad_a = grad @ b^T and grad_b = a^T @ grad on the operands as matmul sees them
    (1-D ones promoted, grad given back the dimension matmul removed); input_grad then
    sums broadcast batch dimensions and, for a promoted first operand, the added row."""
    a_matrix = a if a.ndim > 1 else op.reshape(a, (1,) + tuple(a.shape))
    b_matrix = b if b.ndim > 1 else op.reshape(b, tuple(b.shape) + (1,))
    if b.ndim == 1:
        grad = op.reshape(grad, tuple(grad.shape) + (1,))
    if a.ndim == 1:
        grad = op.reshape(grad, tuple(grad.shape[:-1]) + (1, grad.shape[-1]))
    grad_a = grad_b = None
    if is_differentiable(a):
        grad_a = input_grad(a, op.matmul(grad, op.swapaxes(b_matrix, -1, -2)))
    if is_differentiable(b):
        grad_b = op.matmul(op.swapaxes(a_matrix, -1, -2), grad)
        if b.ndim == 1:  # drop the column dimension before summing the batch away
            grad_b = op.reshape(grad_b, tuple(grad_b.shape[:-1]))
        grad_b = input_grad(b, grad_b)
    return grad_a, grad_b


@primitive("matmul", category="matmul", meta=_matmul_meta, vjp=_matmul_vjp)
def matmul(xp, a, b):
    """numpy.matmul: matrix product with broadcast batch dimensions; a 1-D operand is a
    row (first) or column (second) vector whose added dimension is removed again."""
    return xp.matmul(a, b)


# -- einsum (NOTE(einsum-subset)) --------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class EinsumSpec:
    """Subscripts with every `...` spelled out as letters unused elsewhere, one label
    string per operand, and the output's labels (explicit, or NumPy's implicit ones)."""

    inputs: tuple[str, ...]
    output: str


def parse_einsum(subscripts, ndims: list[int]) -> EinsumSpec:
    """The subscripts for operands of `ndims` dimensions, checked as NumPy checks them."""
    if not isinstance(subscripts, str):
        raise NotImplementedError("einsum takes the subscripts-string form only (NOTE(einsum-subset))")
    text = subscripts.replace(" ", "")
    lhs, arrow, output = text.partition("->")
    if "-" in lhs or ">" in lhs or (arrow and ("-" in output or ">" in output)):
        raise ValueError("einstein sum subscript string does not contain proper '->' output specified")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        which = "more" if len(ndims) > len(terms) else "fewer"
        raise ValueError(f"{which} operands provided to einstein sum function than specified in the subscripts string")
    spare = [letter for letter in string.ascii_letters if letter not in text]
    ellipsis_dims = [_ellipsis_dims(term, ndim, index) for index, (term, ndim) in enumerate(zip(terms, ndims))]
    broadcast_ndim = max((dims for dims in ellipsis_dims if dims is not None), default=0)
    if broadcast_ndim > len(spare):
        raise NotImplementedError("einsum: too many dimensions under '...' to name them")
    ellipsis = "".join(spare[:broadcast_ndim])
    inputs = tuple(term if dims is None else term.replace("...", ellipsis[broadcast_ndim - dims:])
                   for term, dims in zip(terms, ellipsis_dims))
    for index, labels in enumerate(inputs):
        if len(set(labels)) != len(labels):
            raise NotImplementedError(f"einsum: a label repeated within operand {index} (a diagonal) "
                                      f"is not supported (NOTE(einsum-subset))")
    if arrow:
        return EinsumSpec(inputs, _explicit_output(output, inputs, ellipsis))
    once = sorted(label for label in set("".join(terms)) - {"."} if "".join(terms).count(label) == 1)
    return EinsumSpec(inputs, ellipsis + "".join(once))


def _ellipsis_dims(term: str, ndim: int, index: int) -> int | None:
    """How many dimensions `...` stands for in one operand's term (None: no ellipsis)."""
    for label in term.replace("...", ""):
        if label not in string.ascii_letters:
            if label == ".":
                raise ValueError(f"einstein sum subscripts string contains a '.' that is not part of "
                                 f"an ellipsis ('...') in operand {index}")
            raise ValueError(f"invalid subscript '{label}' in einstein sum subscripts string, "
                             f"subscripts must be letters")
    labels = len(term.replace("...", ""))
    if labels > ndim:
        raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {index}")
    if "..." in term:
        return ndim - labels
    if labels < ndim:
        raise ValueError("operand has more dimensions than subscripts given in einstein sum, but no '...' "
                         "ellipsis provided to broadcast the extra dimensions.")
    return None


def _explicit_output(output: str, inputs: tuple[str, ...], ellipsis: str) -> str:
    if output.count("...") > 1 or "." in output.replace("...", "", 1):
        raise ValueError("einstein sum subscripts string contains a '.' that is not part of an ellipsis "
                         "('...') in the output")
    if ellipsis and "..." not in output:
        raise ValueError("output has more dimensions than subscripts given in einstein sum, but no '...' "
                         "ellipsis provided to broadcast the extra dimensions.")
    output = output.replace("...", ellipsis)
    for label in output:
        if label not in string.ascii_letters:
            raise ValueError(f"invalid subscript '{label}' in einstein sum subscripts string, "
                             f"subscripts must be letters")
        if output.count(label) > 1:
            raise ValueError(f"einstein sum subscripts string includes output subscript '{label}' multiple times")
        if not any(label in labels for labels in inputs):
            raise ValueError(f"einstein sum subscripts string included output subscript '{label}' "
                             f"which never appeared in an input")
    return output


def label_sizes(spec: EinsumSpec, shapes: list[tuple]) -> dict:
    """The size of every label, broadcast over the operands that have it (1 stretches)."""
    sizes: dict = {}
    for index, (labels, shape) in enumerate(zip(spec.inputs, shapes)):
        for label, size in zip(labels, shape):
            known = sizes.get(label)
            if known is None or (could_be_one(known) and known == 1):
                sizes[label] = size
            elif not (could_be_one(size) and size == 1) and size != known:
                raise ValueError(f"size of label '{label}' for operand {index} ({size}) does not match "
                                 f"previous terms ({known}).")
    return sizes


def _einsum_meta(subscripts, *operands) -> TensorMeta:
    shapes = [shape_of(operand) for operand in operands]
    spec = parse_einsum(subscripts, [len(shape) for shape in shapes])
    sizes = label_sizes(spec, shapes)
    dtype = np.result_type(*(np.dtype(operand_dtype(operand)) for operand in operands))  # strong scalars
    if dtype.kind not in "biufc":
        raise TypeError(f"einsum does not support operands of dtype {dtype}")
    return TensorMeta(tuple(sizes[label] for label in spec.output), dtype, device_of(*operands))


def _einsum_vjp(grad, out, subscripts, *operands):
    """Each operand's gradient is the einsum of grad with the other operands into that
    operand's labels; labels no other term has (summed away) are put back by
    broadcasting, as are labels where this operand is larger than the others."""
    shapes = [tuple(getattr(operand, "shape", ())) for operand in operands]
    spec = parse_einsum(subscripts, [len(shape) for shape in shapes])
    sizes = label_sizes(spec, shapes)
    grads = [None]  # the subscripts string
    for index, operand in enumerate(operands):
        if not is_differentiable(operand):
            grads.append(None)
            continue
        others = operands[:index] + operands[index + 1:]
        other_terms = spec.inputs[:index] + spec.inputs[index + 1:]
        labels = spec.inputs[index]
        reached = "".join(label for label in labels if any(label in term for term in (spec.output,) + other_terms))
        part = op.einsum(",".join((spec.output,) + other_terms) + "->" + reached, grad, *others)
        if reached != labels:
            part = op.reshape(part, tuple(part.shape[reached.index(label)] if label in reached else 1
                                          for label in labels))
        full = tuple(sizes[label] for label in labels)
        if not all(map(same_size, part.shape, full)):
            part = op.broadcast_to(part, full)
        grads.append(input_grad(operand, part))
    return tuple(grads)


@primitive("einsum", category="matmul", meta=_einsum_meta, vjp=_einsum_vjp)
def einsum(xp, subscripts, *operands):
    """numpy.einsum in its subscripts-string form (NOTE(einsum-subset))."""
    return xp.einsum(subscripts, *operands)


# -- dot and tensordot ------------------------------------------------------------------
def _ndim(value) -> int:
    return getattr(value, "ndim", 0)  # a scalar, or a graph node holding one


def _scalar_product(a, b):
    """dot or tensordot with a scalar operand: a product. NumPy converts a Python scalar
    with asarray first, so it promotes strongly: the array is cast to the promoted dtype
    (before multiplying, so the product is computed in that dtype)."""
    for scalar, array in ((a, b), (b, a)):
        if isinstance(scalar, WEAK_SCALAR_TYPES) and hasattr(array, "dtype"):
            dtype = np.result_type(np.asarray(scalar).dtype, array.dtype)
            if dtype != np.dtype(array.dtype):
                array = op.astype(array, dtype)
            return op.multiply(scalar, array) if scalar is a else op.multiply(array, scalar)
    return op.multiply(a, b)


@composite("dot")
def dot(a, b):
    """numpy.dot: a product with a scalar, matmul where dot and matmul agree (either
    operand 1-D, or the second 2-D), and otherwise a tensordot of a's last axis with
    b's second-to-last (matmul would broadcast batch dimensions instead)."""
    if _ndim(a) == 0 or _ndim(b) == 0:
        return _scalar_product(a, b)
    if a.ndim == 1 or b.ndim <= 2:
        return op.matmul(a, b)
    return op.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


@composite("tensordot")
def tensordot(a, b, axes=2):
    """numpy.tensordot: the summed axes moved to the end of a and the front of b, both
    flattened to matrices, one matmul, and the free axes restored."""
    axes_a, axes_b = _tensordot_axes(axes, tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ())))
    if _ndim(a) == 0 or _ndim(b) == 0:  # then no axes are summed: a scaled copy of the other
        return _scalar_product(a, b)
    free_a = [axis for axis in range(a.ndim) if axis not in axes_a]
    free_b = [axis for axis in range(b.ndim) if axis not in axes_b]
    a_matrix = _reshaped(_transposed(a, free_a + axes_a), (_size(a.shape, free_a), _size(a.shape, axes_a)))
    b_matrix = _reshaped(_transposed(b, axes_b + free_b), (_size(b.shape, axes_b), _size(b.shape, free_b)))
    result_shape = tuple(a.shape[axis] for axis in free_a) + tuple(b.shape[axis] for axis in free_b)
    return _reshaped(op.matmul(a_matrix, b_matrix), result_shape)


def _tensordot_axes(axes, a_shape: tuple, b_shape: tuple) -> tuple[list[int], list[int]]:
    """NumPy's reading of `axes` (an int n: a's last n with b's first n; or a pair of
    axis sequences), with its checks in its order, as non-negative axes."""
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(axes))
    else:
        axes_a, axes_b = axes
    axes_a, axes_b = _axis_list(axes_a), _axis_list(axes_b)
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    for axis_a, axis_b in zip(axes_a, axes_b):
        if a_shape[axis_a] != b_shape[axis_b]:  # an axis out of range: IndexError, as in NumPy
            raise ValueError("shape-mismatch for sum")
    return ([axis % len(a_shape) for axis in axes_a], [axis % len(b_shape) for axis in axes_b])


def _axis_list(axes) -> list:
    """A sequence of axes as a list, a single axis as a list of one (NumPy's test: len())."""
    try:
        len(axes)
    except TypeError:
        return [axes]
    return list(axes)


def _transposed(x, axes: list[int]):
    return x if axes == list(range(x.ndim)) else op.transpose(x, tuple(axes))


def _reshaped(x, shape: tuple):
    same = len(shape) == x.ndim and all(map(same_size, x.shape, shape))
    return x if same else op.reshape(x, shape)


def _size(shape: tuple, axes: list[int]):
    return math.prod((shape[axis] for axis in axes), start=1)


def matmul_as_sum(a, b):
    """`a @ b` for a matrix or a vector `a` and a vector `b`, as the reduction it is: the
    sum over the last axis of `a * b` (in the sum's order of addition, not a BLAS's)."""
    product = op.multiply(a, b)
    return op.sum(product, axis=-1) if a.ndim == 2 else op.sum(product)


# -- vdot, inner, kron, cross --------------------------------------------------------------
@composite("vdot")
def vdot(a, b):
    """numpy.vdot: the dot product of the flattened arrays, the first conjugated."""
    if isinstance(a, WEAK_SCALAR_TYPES) or isinstance(b, WEAK_SCALAR_TYPES):
        raise NotImplementedError("vdot of a Python scalar is left to NumPy")
    flat_a, flat_b = op.reshape(a, (-1,)), op.reshape(b, (-1,))
    if np.dtype(flat_a.dtype).kind == "c":
        flat_a = op.conjugate(flat_a)
    return op.matmul(flat_a, flat_b)


@composite("inner")
def inner(a, b):
    """numpy.inner: sums over the last axes of both (a product with a scalar)."""
    if _ndim(a) == 0 or _ndim(b) == 0:
        return _scalar_product(a, b)
    return op.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


@composite("kron")
def kron(a, b):
    """numpy.kron: every element of a times all of b, as NumPy builds it: both expanded
    to interleaved axes, multiplied, and reshaped to the products of the sizes."""
    if _ndim(a) == 0 or _ndim(b) == 0:
        return _scalar_product(a, b)
    ndim = max(a.ndim, b.ndim)
    a_shape = (1,) * (ndim - a.ndim) + tuple(a.shape)
    b_shape = (1,) * (ndim - b.ndim) + tuple(b.shape)
    spread_a = op.reshape(a, tuple(size for pair in zip(a_shape, (1,) * ndim) for size in pair))
    spread_b = op.reshape(b, tuple(size for pair in zip((1,) * ndim, b_shape) for size in pair))
    return op.reshape(op.multiply(spread_a, spread_b), tuple(x * y for x, y in zip(a_shape, b_shape)))


def _component(x, index: int):
    return op.getitem(x, (Ellipsis, index))


@composite("cross")
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross of 3-vectors along axisa of a and axisb of b (both `axis` when given),
    the result's vectors along axisc, with NumPy's products in NumPy's order. Arrays
    of 2-vectors, which NumPy 2 deprecates, are left to NumPy."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = op.moveaxis(a, axisa, -1)
    b = op.moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise NotImplementedError("the cross product of 2-vectors (deprecated by NumPy 2) is left to NumPy")
    a0, a1, a2 = (_component(a, index) for index in range(3))
    b0, b1, b2 = (_component(b, index) for index in range(3))
    parts = [op.subtract(op.multiply(a1, b2), op.multiply(a2, b1)),
             op.subtract(op.multiply(a2, b0), op.multiply(a0, b2)),
             op.subtract(op.multiply(a0, b1), op.multiply(a1, b0))]
    result = op.stack(parts, axis=-1)
    return op.moveaxis(result, -1, axisc) if result.ndim > 1 else result
