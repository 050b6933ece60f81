"""Sample rows of numpy.fft's fft, ifft, rfft, irfft, fft2 and ifft2 (pyjit/ops/fourier.py). The
derivatives of rows with complex results are checked by tests/ops/test_fourier.py (finite
differences in the real and imaginary parts)."""

import numpy as np

from . import A, S

SPECTRUM = (np.random.default_rng(3).uniform(-1, 1, (3, 5)) + 1j * np.random.default_rng(4).uniform(-1, 1, (3, 5)))


def transform_samples(real_only=False):
    """What the four transforms share: lengths, padding and cutting, axes, norms,
    dtypes, layouts, empty arrays and NumPy's errors."""
    rows = [S(A((8,))), S(A((3, 5))), S(A((3, 5)), axis=0), S(A((3, 5)), n=8), S(A((3, 5)), n=3, axis=-1),
            S(A((2, 3, 4)), 6, 1), S(A((7,)), norm="ortho"), S(A((6,)), norm="forward"), S(A((6,)), norm="backward"),
            S(A((4, 6), "float32")), S(A((5,), "int32", -4, 4)), S(A((4, 6), layout="F"), axis=0),
            S(A((3, 8), layout="strided")), S(A((0, 4))), S(A((2,)), n=1),
            S(A((4, 0)), raises=ValueError), S(A((4,)), n=0, raises=ValueError), S(np.array(1.0), raises=IndexError),
            S(A((4,)), norm="bogus", raises=ValueError), S(A((3, 4)), axis=2, raises=IndexError),
            S(A((3, 4)), axis=-3, raises=IndexError)]
    if not real_only:
        rows += [S(SPECTRUM), S(SPECTRUM.astype(np.complex64), axis=0), S(SPECTRUM, n=7, norm="ortho")]
    return rows


SAMPLES = {
    "fft": transform_samples(),
    "ifft": transform_samples(),
    "rfft": [*transform_samples(real_only=True), S(SPECTRUM, raises=TypeError)],
    "irfft": [*transform_samples(), S(A((1,)), raises=ValueError)],
    "fft2": [S(A((4, 6)), reference=np.fft.fft2), S(A((2, 3, 4), "float32"), reference=np.fft.fft2),
             S(A((4, 6)), s=(3, 8), reference=np.fft.fft2), S(A((3, 4, 5)), axes=(0, 2), norm="ortho", reference=np.fft.fft2),
             S(SPECTRUM, reference=np.fft.fft2), S(A((0, 4)), axes=(1,), reference=np.fft.fft2),
             S(A((4, 6)), s=(3,), reference=np.fft.fft2, raises=ValueError)],
    "ifft2": [S(A((4, 6)), reference=np.fft.ifft2), S(A((2, 3, 4), "float32"), reference=np.fft.ifft2),
              S(A((4, 6)), s=(3, 8), reference=np.fft.ifft2), S(A((3, 4, 5)), axes=(0, 2), norm="ortho", reference=np.fft.ifft2),
              S(SPECTRUM, reference=np.fft.ifft2), S(A((0, 4)), axes=(1,), reference=np.fft.ifft2),
              S(A((4, 6)), s=(3,), reference=np.fft.ifft2, raises=ValueError)],
}


def frequency_rows():
    """fftfreq and rfftfreq: lengths odd and even, spacings, the dtypes of a float32 and
    a complex spacing, the one-point case, and NumPy's errors (no points, no spacing, a
    float length, a negative length)."""
    return [S(8), S(7, 0.1), S(5, d=2), S(1), S(6, np.float32(0.5)), S(4, 1j),
            S(0, raises=ZeroDivisionError), S(4, 0.0, raises=ZeroDivisionError), S(4.0, raises=ValueError)]


SAMPLES.update({
    "fftfreq": [*frequency_rows(), S(-1, raises=ValueError)],
    "rfftfreq": [*frequency_rows(), S(-3)],
})
