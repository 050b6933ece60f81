"""NumPy's window functions (hanning, hamming, blackman, bartlett, kaiser): arrays made
from a length alone, as the creation ops are, so they take a `device` too and follow
the frame's array inputs (NOTE(creation-device) in creation.py).

NOTE(window-ops): each primitive runs NumPy's (CuPy's) own function, unfused (category
"other"), so the values are NumPy's exactly. The length M may be symbolic (a piece of
`x.shape`): the result has M values for M >= 0 and none for a negative M. A float M,
which NumPy counts like arange (np.hanning(2.5) has two values), is not captured.
Windows have no derivative: nothing in them is an array argument.
"""

from __future__ import annotations

import operator

import numpy as np

from ..graph import SymInt, TensorMeta
from .creation import array_module, creation_device
from .registry import primitive
from .shape_rules import is_array


def window_length(M):
    """The number of values of a window of M points (NOTE(window-ops))."""
    if isinstance(M, SymInt):
        return M
    if isinstance(M, (float, np.floating)):
        raise NotImplementedError("a window of a float length is not captured")
    if isinstance(M, (str, bytes)):
        raise TypeError(f"'<' not supported between instances of '{type(M).__name__}' and 'int'")
    return max(operator.index(M), 0)


def _window_meta(M, device=None) -> TensorMeta:
    return TensorMeta((window_length(M),), np.dtype(np.float64), creation_device(device))


def _kaiser_meta(M, beta, device=None) -> TensorMeta:
    if is_array(beta) or not isinstance(beta, (int, float, np.integer, np.floating)):
        raise NotImplementedError("kaiser with a beta that is not a real number is not captured")
    return _window_meta(M, device)


def _window(name: str, doc: str):
    def impl(xp, M, device=None):
        xp, on_device = array_module(xp, device)
        with on_device:
            return getattr(xp, name)(M)
    impl.__doc__ = doc
    return primitive(name, category="other", meta=_window_meta)(impl)


hanning = _window("hanning", "numpy.hanning: the Hann window of M points (NOTE(window-ops)).")
hamming = _window("hamming", "numpy.hamming: the Hamming window of M points (NOTE(window-ops)).")
blackman = _window("blackman", "numpy.blackman: the Blackman window of M points (NOTE(window-ops)).")
bartlett = _window("bartlett", "numpy.bartlett: the triangular window of M points (NOTE(window-ops)).")


@primitive("kaiser", category="other", meta=_kaiser_meta)
def kaiser(xp, M, beta, device=None):
    """numpy.kaiser: the Kaiser window of M points and shape `beta` (NOTE(window-ops))."""
    xp, on_device = array_module(xp, device)
    with on_device:
        return xp.kaiser(M, beta)
