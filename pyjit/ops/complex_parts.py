"""The parts of complex numbers: real, imag (views, as `x.real` and `x.imag` are) and
conjugate (np.conj, a ufunc: a new array).

NOTE(complex-parts): of a complex array, `real` and `imag` are views of every other
float of its memory, which no index rule over elements can say, so their index rules
refuse (NotImplementedError) and a kernel takes their values from NumPy; being views,
they make a later in-place write to their source a graph break (NOTE(functionalisation)
in pyjit/frontend/functionalise.py), where NumPy shows the write through them. Of a real
array `real` is the array itself and `imag` zeros of its dtype, as in NumPy.

Derivatives treat a complex number as its two real coordinates, and a gradient `g` of
a real-valued loss as dL/d(re) + i dL/d(im) (PyTorch's convention): `real` passes `g`
back, `imag` gives `i g`, `conjugate` gives conj(g).
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta
from .gradients import input_grad, is_differentiable
from .registry import op, primitive
from .shape_rules import ufunc_meta


def _part_meta(x: TensorMeta) -> TensorMeta:
    dtype = np.dtype(x.dtype)
    if dtype.kind == "c":
        dtype = np.dtype(f"f{dtype.itemsize // 2}")
    return TensorMeta(x.shape, dtype, x.device)


def _part_index(ix, index: tuple, source_shape: tuple, shape: tuple) -> tuple:
    raise NotImplementedError("the real or imaginary part is read by NumPy (NOTE(complex-parts))")


def _imag_vjp(grad, out, x):
    if not is_differentiable(x):
        return (None,)
    return (input_grad(x, op.multiply(grad, 1j) if np.dtype(x.dtype).kind == "c" else op.zeros_like(grad)),)


@primitive("real", category="view", meta=_part_meta, index_rule=_part_index,
           vjp=lambda grad, out, x: (input_grad(x, grad),))
def real(xp, x):
    """numpy.real: the real parts (a view); a real array itself."""
    return xp.real(x)


@primitive("imag", category="view", meta=_part_meta, index_rule=_part_index, vjp=_imag_vjp)
def imag(xp, x):
    """numpy.imag: the imaginary parts (a view); zeros for a real array."""
    return xp.imag(x)


@primitive("conjugate", category="other", meta=ufunc_meta(np.conjugate),
           vjp=lambda grad, out, x: (input_grad(x, op.conjugate(grad)),))
def conjugate(xp, x):
    """numpy.conjugate (np.conj): the complex conjugate, elementwise; a copy of a real array."""
    return xp.conjugate(x)
