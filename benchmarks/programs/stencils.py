"""Stencil time-stepping: Jacobi sweeps in one, two and three dimensions, the explicit
heat equation and the wave equation. Each time step is a Python loop iteration, as its
users write it."""

import numpy as np

from .registry import program, rng


def _jacobi_inputs(shape_small, shape_large, steps):
    def inputs(size):
        shape = shape_small if size == "small" else shape_large
        generator = rng()
        return generator.random(shape), generator.random(shape), steps[size]

    return inputs


def _jax_jacobi(step):
    def run(A, B, steps):
        from jax import lax

        A, B = lax.fori_loop(0, steps, lambda t, carry: step(*carry), (A, B))
        return A, B

    return run


def _jacobi_1d_step(A, B):
    B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
    return A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:])), B


@program("stencil", "1-D Jacobi: two three-point sweeps per step", _jacobi_inputs(
    (64,), (400_000,), {"small": 4, "large": 40}), updates=(0, 1), numba=True, jax=_jax_jacobi(_jacobi_1d_step),
    jax_static=(2,))
def jacobi_1d(A, B, steps):
    for t in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def _jacobi_2d_step(A, B):
    B = B.at[1:-1, 1:-1].set(0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]))
    return A.at[1:-1, 1:-1].set(0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])), B


@program("stencil", "2-D Jacobi: two five-point sweeps per step", _jacobi_inputs(
    (24, 24), (800, 800), {"small": 3, "large": 30}), updates=(0, 1), numba=True, jax=_jax_jacobi(_jacobi_2d_step),
    jax_static=(2,))
def jacobi_2d(A, B, steps):
    for t in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def _heat_3d_sweep(A):
    return (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])


def _heat_3d_step(A, B):
    B = B.at[1:-1, 1:-1, 1:-1].set(_heat_3d_sweep(A))
    return A.at[1:-1, 1:-1, 1:-1].set(_heat_3d_sweep(B)), B


@program("stencil", "3-D heat (Jacobi): two seven-point sweeps per step", _jacobi_inputs(
    (10, 10, 10), (100, 100, 100), {"small": 2, "large": 6}), updates=(0, 1), numba=True,
    jax=_jax_jacobi(_heat_3d_step), jax_static=(2,))
def heat_3d(A, B, steps):
    for t in range(steps):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                               + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                               + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                               + B[1:-1, 1:-1, 1:-1])


def _heat_inputs(size):
    n, steps = {"small": (50, 5), "large": (1_000_000, 30)}[size]
    x = np.linspace(0.0, 1.0, n)
    return np.sin(np.pi * x) + 0.1 * rng().random(n), 0.4, steps


def _jax_heat_1d(u, alpha, steps):
    from jax import lax

    def step(t, u):
        return u.at[1:-1].set(u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]))

    u = lax.fori_loop(0, steps, step, u)
    return (u * u).sum(), u


@program("stencil", "1-D heat equation, explicit Euler, fixed ends; returns the final energy", _heat_inputs,
         updates=(0,), numba=True, jax=_jax_heat_1d, jax_static=(2,), rtol=1e-12,
         why="a float64 sum (docs/codegen.md, Summation order: rtol 1e-12)")
def heat_1d(u, alpha, steps):
    for t in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return (u * u).sum()


def _wave_inputs(size):
    n, steps = {"small": (16, 4), "large": (1000, 10)}[size]
    x = np.linspace(-1.0, 1.0, n)
    u = np.exp(-20.0 * (x[:, None] ** 2 + x[None, :] ** 2))
    return u, u.copy(), 0.2, steps


def _jax_wave_2d(u, u_prev, c2, steps):
    import jax.numpy as jnp
    from jax import lax

    def step(t, carry):
        u, u_prev = carry
        laplacian = jnp.zeros_like(u).at[1:-1, 1:-1].set(
            u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1])
        return 2.0 * u - u_prev + c2 * laplacian, u

    return lax.fori_loop(0, steps, step, (u, u_prev))


@program("stencil", "2-D wave equation, leapfrog, new arrays each step", _wave_inputs, numba=True,
         jax=_jax_wave_2d, jax_static=(3,))
def wave_2d(u, u_prev, c2, steps):
    for t in range(steps):
        laplacian = np.zeros_like(u)
        laplacian[1:-1, 1:-1] = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u, u_prev = 2.0 * u - u_prev + c2 * laplacian, u
    return u, u_prev
