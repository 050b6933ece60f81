"""numpy.fft: fft, ifft, rfft and irfft as calls into NumPy's (CuPy's) own FFT, and fft2
and ifft2 as their decompositions.

NOTE(fft-ops): each primitive runs `xp.fft.<name>` unfused (category "other"), so the
values, the dtype (float32 and float16 inputs give complex64, as in NumPy 2) and the
errors for a bad `n` or `norm` are NumPy's; the meta rules ask NumPy about a small
array of the input's dtype with the same `n` and `norm` (`_probe`). `out=` is not
modelled.

Derivatives use PyTorch's convention for complex values (NOTE(complex-parts)): the
VJP of a linear map is its adjoint. The adjoint of `fft` with normalisation `norm` is
`ifft` with the dual normalisation ("backward" <-> "forward", "ortho" itself), and the
other way round; `n` pads or truncates the input, whose adjoint truncates or pads the
gradient back to the input's length. `rfft` keeps the first n//2 + 1 outputs of `fft`
of a real input (adjoint: the real part of the dual ifft of the gradient padded with
zeros to n); `irfft` reads each of its interior inputs twice (the input and its
conjugate mirror), so its adjoint is the dual rfft of the gradient with the interior
entries doubled, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..graph import SymInt, TensorMeta
from .creation import array_module, creation_device, normalized_shape
from .gradients import input_grad, is_differentiable, positions
from .registry import composite, op, primitive
from .shape_rules import is_array, normalize_axis

_DUAL_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _probe(function, x: TensorMeta, n, norm) -> np.dtype:
    """NumPy's dtype for `function` on x's dtype, and its errors for `n` and `norm`."""
    return function(np.ones(2, dtype=x.dtype), n=n, norm=norm).dtype


def _transform_meta(function, output_length=lambda points: points, default_points=lambda length: length):
    """The meta rule of a transform of `points` data points (n, or default_points of the
    input's length), giving output_length(points) values along the axis."""
    def meta(x: TensorMeta, n=None, axis=-1, norm=None) -> TensorMeta:
        if not -x.ndim <= axis < x.ndim:  # NumPy reads x.shape[axis]
            raise IndexError("tuple index out of range")
        axis = normalize_axis(axis, x.ndim)
        dtype = _probe(function, x, n, norm)
        points = default_points(x.shape[axis]) if n is None else n
        if isinstance(points, int) and points < 1:
            raise ValueError(f"Invalid number of FFT data points ({points}) specified.")
        return TensorMeta(x.shape[:axis] + (output_length(points),) + x.shape[axis + 1:], dtype, x.device)
    return meta


def _fit(grad, size, axis: int):
    """`grad` along `axis` cut or padded with zeros to `size`: the adjoint of the padding
    or truncation to n that the transform applied to its input."""
    length = grad.shape[axis]
    if length == size:
        return grad
    if length > size:
        index = (slice(None),) * axis + (slice(0, size),)
        return op.getitem(grad, index)
    pad_shape = grad.shape[:axis] + (size - length,) + grad.shape[axis + 1:]
    zeros = op.zeros_like(op.broadcast_to(op.getitem(grad, (slice(None),) * axis + (slice(0, 1),)), pad_shape))
    return op.concatenate([grad, zeros], axis=axis)


def _back_to_input(x, grad, axis: int):
    """The gradient of input x: fitted to x's length, real for a real x."""
    grad = _fit(grad, x.shape[axis], axis)
    if np.dtype(x.dtype).kind != "c":
        grad = op.real(grad)
    return input_grad(x, grad)


def _complex_vjp(adjoint_name: str):
    """fft and ifft: each is the other's adjoint, with the dual normalisation."""
    def vjp(grad, out, x, n=None, axis=-1, norm=None):
        if not is_differentiable(x):
            return (None,)
        axis = normalize_axis(axis, x.ndim)
        transformed = getattr(op, adjoint_name)(grad, axis=axis, norm=_DUAL_NORM[norm])
        return (_back_to_input(x, transformed, axis),)
    return vjp


@primitive("fft", category="other", vjp=_complex_vjp("ifft"),
           meta=_transform_meta(np.fft.fft))
def fft(xp, x, n=None, axis=-1, norm=None):
    """numpy.fft.fft: the discrete Fourier transform along `axis` (input padded or cut to n)."""
    return xp.fft.fft(x, n=n, axis=axis, norm=norm)


@primitive("ifft", category="other", vjp=_complex_vjp("fft"),
           meta=_transform_meta(np.fft.ifft))
def ifft(xp, x, n=None, axis=-1, norm=None):
    """numpy.fft.ifft: the inverse discrete Fourier transform along `axis`."""
    return xp.fft.ifft(x, n=n, axis=axis, norm=norm)


def _rfft_vjp(grad, out, x, n=None, axis=-1, norm=None):
    if not is_differentiable(x):
        return (None,)
    axis = normalize_axis(axis, x.ndim)
    size = x.shape[axis] if n is None else n
    return (_back_to_input(x, op.ifft(grad, n=size, axis=axis, norm=_DUAL_NORM[norm]), axis),)


@primitive("rfft", category="other", vjp=_rfft_vjp,
           meta=_transform_meta(np.fft.rfft, output_length=lambda points: points // 2 + 1))
def rfft(xp, x, n=None, axis=-1, norm=None):
    """numpy.fft.rfft: the first n//2 + 1 terms of the transform of a real input."""
    return xp.fft.rfft(x, n=n, axis=axis, norm=norm)


def _doubled_interior(spectrum, axis: int, size):
    """The rfft terms of a real signal of `size` with the interior ones (all but the
    first and, for an even size, the last) doubled: irfft reads them twice."""
    index = positions(spectrum, axis)
    end = spectrum.shape[axis] - 1 if size % 2 == 0 else spectrum.shape[axis]
    interior = op.logical_and(op.greater(index, 0), op.less(index, end))
    return op.where(interior, op.multiply(spectrum, 2.0), spectrum)


def _irfft_vjp(grad, out, x, n=None, axis=-1, norm=None):
    if not is_differentiable(x):
        return (None,)
    axis = normalize_axis(axis, x.ndim)
    size = out.shape[axis]
    spectrum = op.rfft(grad, axis=axis, norm=_DUAL_NORM[norm])
    return (_back_to_input(x, _doubled_interior(spectrum, axis, size), axis),)


@primitive("irfft", category="other", vjp=_irfft_vjp,
           meta=_transform_meta(np.fft.irfft, default_points=lambda length: 2 * (length - 1)))
def irfft(xp, x, n=None, axis=-1, norm=None):
    """numpy.fft.irfft: the real inverse of rfft, of length n (2 (m - 1) by default)."""
    return xp.fft.irfft(x, n=n, axis=axis, norm=norm)


def _along_axes(transform, x, s, axes, norm):
    """`transform` along each of `axes`, the last first, as NumPy's fftn and ifftn do
    (so the values are NumPy's exactly)."""
    axes = tuple(axes)
    if s is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    sizes = (None,) * len(axes) if s is None else tuple(s)
    for axis, size in reversed(list(zip(axes, sizes))):
        x = transform(x, n=size, axis=axis, norm=norm)
    return x


@composite("fft2")
def fft2(x, s=None, axes=(-2, -1), norm=None):
    """numpy.fft.fft2: fft along each of `axes`."""
    return _along_axes(op.fft, x, s, axes, norm)


@composite("ifft2")
def ifft2(x, s=None, axes=(-2, -1), norm=None):
    """numpy.fft.ifft2: ifft along each of `axes`."""
    return _along_axes(op.ifft, x, s, axes, norm)


# -- sample frequencies ----------------------------------------------------------------------
# NOTE(fft-frequencies): fftfreq and rfftfreq make arrays from a length and a spacing
# alone, as the creation ops do, so they take a `device` and follow the frame's array
# inputs (NOTE(creation-device) in creation.py). NumPy computes integers times
# 1 / (n d), so its dtype is the one of an integer array times that scalar (float64, or
# complex128 for a complex d), and n = 0 or d = 0 divide by zero (ZeroDivisionError,
# raised when the graph runs if n is a symbolic size). A symbolic n stays symbolic in
# fftfreq, and in rfftfreq while it is even (an odd one is specialised).
def _frequencies_meta(length):
    def meta(n, d=1.0, device=None) -> TensorMeta:
        if is_array(d):
            raise NotImplementedError("a spacing held in an array is not captured")
        if not isinstance(n, (SymInt, int, np.integer)):
            raise ValueError("n should be an integer")
        scale = 1.0 / ((n if isinstance(n, (int, np.integer)) else 1) * d)
        dtype = (np.zeros(1, dtype=int) * scale).dtype
        return TensorMeta((length(n),), dtype, creation_device(device))
    return meta


def _fftfreq_length(n):
    if isinstance(n, SymInt):
        return n
    return normalized_shape(int(n))[0]


def _frequencies(name: str, length, doc: str):
    def impl(xp, n, d=1.0, device=None):
        xp, on_device = array_module(xp, device)
        with on_device:
            return getattr(xp.fft, name)(n, d)
    impl.__doc__ = doc
    return primitive(name, category="other", meta=_frequencies_meta(length))(impl)


def _rfftfreq_length(n):
    if isinstance(n, SymInt) and n % 2 == 0:  # an even symbolic size stays symbolic
        return n // 2 + 1
    return max(int(n) // 2 + 1, 0)


fftfreq = _frequencies("fftfreq", _fftfreq_length, "numpy.fft.fftfreq: the frequencies of an fft of n points "
                       "spaced d apart (NOTE(fft-frequencies)).")
rfftfreq = _frequencies("rfftfreq", _rfftfreq_length, "numpy.fft.rfftfreq: the frequencies of an rfft of n points "
                        "spaced d apart (NOTE(fft-frequencies)).")
