"""Sample rows of the window functions (pyjit/ops/windows.py)."""

import numpy as np

from . import S


def window_rows():
    """Rows every window shares: lengths, the one-point and empty windows, a NumPy
    integer length, and what NumPy refuses."""
    return [S(5), S(8), S(1), S(0), S(-3), S(np.int8(4)), S("a", raises=TypeError)]


SAMPLES = {
    "hanning": window_rows(),
    "hamming": window_rows(),
    "blackman": window_rows(),
    "bartlett": window_rows(),
    "kaiser": [S(5, 2.0), S(8, 0), S(1, 14.0), S(0, 3.0), S(-2, 1.0), S(6, np.float32(5.0))],
}
