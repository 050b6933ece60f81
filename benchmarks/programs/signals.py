"""Signal processing: a first-order recurrence (an IIR filter), moving averages, an FIR
filter by shifted slices, and FFT spectra."""

import numpy as np

from .registry import program, rng


def _signal(size, small=64, large=2_000_000):
    return rng().standard_normal(small if size == "small" else large)


def _recurrence_inputs(size):
    return rng().standard_normal(16 if size == "small" else 100_000), 0.9


def _jax_recurrence(x, a):
    from jax import lax

    def step(previous, value):
        current = a * previous + value
        return current, current

    _, y = lax.scan(step, 0.0, x)
    return (y,)


@program("signal", "first-order recurrence y[t] = a*y[t-1] + x[t]", _recurrence_inputs, numba=True,
         jax=_jax_recurrence)
def recurrence(x, a):
    y = np.empty_like(x)
    y[0] = x[0]
    for t in range(1, x.shape[0]):
        y[t] = a * y[t - 1] + x[t]
    return y


def _moving_average_inputs(size):
    return _signal(size), 25


def _jax_moving_average(x, window):
    import jax.numpy as jnp

    totals = jnp.cumsum(x)
    return ((totals[window - 1:] - jnp.concatenate([jnp.zeros(1), totals[:-window]])) / window,)


@program("signal", "moving average through a running sum", _moving_average_inputs, numba=True,
         jax=_jax_moving_average, jax_static=(1,), rtol=1e-12,
         why="a float64 running sum (docs/codegen.md, Summation order: rtol 1e-12)")
def moving_average(x, window):
    totals = np.cumsum(x)
    result = np.empty(x.shape[0] - window + 1)
    result[0] = totals[window - 1]
    result[1:] = totals[window:] - totals[:-window]
    return result / window


def _fir_inputs(size):
    taps = 8 if size == "small" else 32
    return _signal(size, large=1_000_000), np.hanning(taps) / np.hanning(taps).sum()


def _jax_fir_filter(x, h):
    import jax.numpy as jnp

    return (jnp.convolve(x, h)[:x.shape[0]],)


@program("signal", "causal FIR filter, one shifted slice per tap", _fir_inputs, numba=True, jax=_jax_fir_filter,
         rtol=1e-12, why="float64 sums in another order (docs/codegen.md, Summation order: rtol 1e-12)")
def fir_filter(x, h):
    n = x.shape[0]
    y = np.zeros(n)
    for k in range(h.shape[0]):
        y[k:] += h[k] * x[:n - k]
    return y


def _poisson_inputs(size):
    n = 16 if size == "small" else 1024
    x = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    f = np.sin(3.0 * x)[:, None] * np.cos(2.0 * x)[None, :] + 0.01 * rng().standard_normal((n, n))
    return (f - f.mean(),)


def _jax_spectral_poisson(f):
    import jax.numpy as jnp

    n = f.shape[0]
    k = jnp.fft.fftfreq(n, 1.0 / n)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    k2 = k2.at[0, 0].set(1.0)
    u_hat = -jnp.fft.fft2(f) / k2
    u_hat = u_hat.at[0, 0].set(0.0)
    return (jnp.real(jnp.fft.ifft2(u_hat)),)


@program("spectral", "periodic 2-D Poisson solve by FFT", _poisson_inputs, jax=_jax_spectral_poisson, rtol=1e-12,
         why="NumPy's own FFT on both sides; float64 arithmetic around it")
def spectral_poisson(f):
    n = f.shape[0]
    k = np.fft.fftfreq(n, 1.0 / n)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    k2[0, 0] = 1.0
    u_hat = -np.fft.fft2(f) / k2
    u_hat[0, 0] = 0.0
    return np.real(np.fft.ifft2(u_hat))


def _periodogram_inputs(size):
    return _signal(size, small=256, large=4_194_304), 64 if size == "small" else 1024


@program("spectral", "averaged periodogram (Welch without overlap): windowed segments, rfft", _periodogram_inputs,
         jax=True, jax_static=(1,), rtol=1e-12,
         why="NumPy's own FFT on both sides; float64 sums (docs/codegen.md, Summation order: rtol 1e-12)")
def periodogram(x, segment):
    segments = x[:x.shape[0] // segment * segment].reshape(-1, segment)
    window = np.hanning(segment)
    segments = (segments - segments.mean(axis=1, keepdims=True)) * window
    power = np.abs(np.fft.rfft(segments, axis=1)) ** 2
    return power.mean(axis=0) / (window ** 2).sum()
