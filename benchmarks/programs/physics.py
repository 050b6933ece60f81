"""Small physics: gravitational n-body steps, particles bouncing in a box, an ensemble of
Lorenz systems integrated by RK4, the Mandelbrot set by escape counts, and azimuthal
integration of a detector image."""

import numpy as np

from .registry import program, rng

# float64 pairwise sums over the bodies in another order than NumPy's (docs/codegen.md,
# "Summation order": rtol 1e-12) and x**-1.5 (a power: within 4 ulp, docs/codegen.md,
# "Vector math"), carried through a few time steps.
STEPPED = dict(rtol=1e-9, why="float64 sums (rtol 1e-12) and pow (4 ulp) through a few time steps")


def _nbody_inputs(size):
    n, steps = (8, 3) if size == "small" else (600, 4)
    generator = rng()
    return (generator.standard_normal((n, 3)), 0.1 * generator.standard_normal((n, 3)), generator.random(n) + 0.5,
            0.001, steps)


def _jax_nbody(position, velocity, mass, dt, steps):
    from jax import lax

    def step(t, carry):
        position, velocity = carry
        difference = position[None, :, :] - position[:, None, :]
        inverse = ((difference ** 2).sum(axis=2) + 0.01) ** -1.5
        acceleration = (difference * (mass[None, :] * inverse)[:, :, None]).sum(axis=1)
        velocity = velocity + dt * acceleration
        return position + dt * velocity, velocity

    return lax.fori_loop(0, steps, step, (position, velocity))


@program("physics", "gravitational n-body, all pairs, softened, symplectic Euler; in place", _nbody_inputs,
         updates=(0, 1), numba=True, jax=_jax_nbody, jax_static=(4,), **STEPPED)
def nbody(position, velocity, mass, dt, steps):
    for t in range(steps):
        difference = position[None, :, :] - position[:, None, :]
        inverse = ((difference ** 2).sum(axis=2) + 0.01) ** -1.5
        acceleration = (difference * (mass[None, :] * inverse)[:, :, None]).sum(axis=1)
        velocity += dt * acceleration
        position += dt * velocity


def _particle_inputs(size):
    n, steps = (32, 5) if size == "small" else (1_000_000, 10)
    generator = rng()
    return generator.random((n, 2)), generator.standard_normal((n, 2)), 0.01, steps


def _jax_particles(position, velocity, dt, steps):
    import jax.numpy as jnp
    from jax import lax

    def step(t, carry):
        position, velocity = carry
        velocity = velocity.at[:, 1].add(-9.81 * dt)
        position = position + dt * velocity
        outside = (position < 0.0) | (position > 1.0)
        velocity = jnp.where(outside, -0.9 * velocity, velocity)
        return jnp.clip(position, 0.0, 1.0), velocity

    return lax.fori_loop(0, steps, step, (position, velocity))


def particles_loops(position, velocity, dt, steps):
    """The same simulation as Numba users write it: a loop per particle and axis."""
    for t in range(steps):
        for p in range(position.shape[0]):
            velocity[p, 1] -= 9.81 * dt
            for axis in range(2):
                position[p, axis] += dt * velocity[p, axis]
                if position[p, axis] < 0.0 or position[p, axis] > 1.0:
                    velocity[p, axis] *= -0.9
                position[p, axis] = min(max(position[p, axis], 0.0), 1.0)


@program("physics", "particles under gravity bouncing in the unit box; in place", _particle_inputs, updates=(0, 1),
         numba=particles_loops, jax=_jax_particles, jax_static=(3,))
def particles(position, velocity, dt, steps):
    for t in range(steps):
        velocity[:, 1] -= 9.81 * dt
        position += dt * velocity
        outside = (position < 0.0) | (position > 1.0)
        velocity[outside] *= -0.9
        np.clip(position, 0.0, 1.0, out=position)


def _lorenz_inputs(size):
    n, steps = (16, 4) if size == "small" else (200_000, 10)
    return rng().standard_normal((n, 3)) + np.array([0.0, 0.0, 25.0]), 0.01, steps


def _lorenz_jax_rate(state):
    import jax.numpy as jnp

    x, y, z = state[:, 0], state[:, 1], state[:, 2]
    return jnp.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - (8.0 / 3.0) * z], axis=1)


def _jax_lorenz_rk4(state, dt, steps):
    from jax import lax

    def step(t, state):
        k1 = _lorenz_jax_rate(state)
        k2 = _lorenz_jax_rate(state + 0.5 * dt * k1)
        k3 = _lorenz_jax_rate(state + 0.5 * dt * k2)
        k4 = _lorenz_jax_rate(state + dt * k3)
        return state + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    return (lax.fori_loop(0, steps, step, state),)


def lorenz_rate(state):
    x, y, z = state[:, 0], state[:, 1], state[:, 2]
    return np.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - (8.0 / 3.0) * z], axis=1)


@program("physics", "an ensemble of Lorenz systems, classical RK4", _lorenz_inputs, jax=_jax_lorenz_rk4,
         jax_static=(2,))
def lorenz_rk4(state, dt, steps):
    for t in range(steps):
        k1 = lorenz_rate(state)
        k2 = lorenz_rate(state + 0.5 * dt * k1)
        k3 = lorenz_rate(state + 0.5 * dt * k2)
        k4 = lorenz_rate(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return state


def _mandelbrot_inputs(size):
    width, iterations = (24, 8) if size == "small" else (600, 40)
    re = np.linspace(-2.0, 0.6, width)
    im = np.linspace(-1.2, 1.2, width)
    return re[None, :] + 0.0 * im[:, None], im[:, None] + 0.0 * re[None, :], iterations


def _jax_mandelbrot(c_re, c_im, iterations):
    import jax.numpy as jnp
    from jax import lax

    def step(t, carry):
        z_re, z_im, count = carry
        re2, im2 = z_re * z_re, z_im * z_im
        inside = re2 + im2 <= 4.0
        count = count + inside
        z_im_next = 2.0 * z_re * z_im + c_im
        return jnp.where(inside, re2 - im2 + c_re, z_re), jnp.where(inside, z_im_next, z_im), count

    zero = jnp.zeros_like(c_re)
    return (lax.fori_loop(0, iterations, step, (zero, zero, jnp.zeros(c_re.shape, jnp.int64)))[2],)


@program("physics", "Mandelbrot escape counts on real and imaginary planes", _mandelbrot_inputs, numba=True,
         jax=_jax_mandelbrot, jax_static=(2,))
def mandelbrot(c_re, c_im, iterations):
    z_re = np.zeros_like(c_re)
    z_im = np.zeros_like(c_im)
    count = np.zeros(c_re.shape, dtype=np.int64)
    for t in range(iterations):
        re2 = z_re * z_re
        im2 = z_im * z_im
        inside = re2 + im2 <= 4.0
        count += inside
        z_im_next = 2.0 * z_re * z_im + c_im
        z_re = np.where(inside, re2 - im2 + c_re, z_re)
        z_im = np.where(inside, z_im_next, z_im)
    return count


def _detector_inputs(size):
    side = 32 if size == "small" else 2048
    y, x = np.indices((side, side))
    r = np.hypot(x - side * 0.45, y - side * 0.55)
    image = np.exp(-r / (side * 0.2)) * (1.0 + 0.5 * np.cos(r / 3.0)) + 0.05 * rng().random((side, side))
    return image, side * 0.45, side * 0.55, 16 if size == "small" else 500


def _jax_azimuthal_integration(image, cx, cy, bins):
    import jax.numpy as jnp

    y, x = jnp.indices(image.shape)
    r = jnp.hypot(x - cx, y - cy)
    index = jnp.minimum((r / r.max() * bins).astype(jnp.int64), bins - 1)
    totals = jnp.bincount(index.ravel(), weights=image.ravel(), length=bins)
    counts = jnp.bincount(index.ravel(), length=bins)
    return (totals / jnp.maximum(counts, 1),)


@program("physics", "azimuthal integration: mean intensity per radial bin of a detector image", _detector_inputs,
         jax=_jax_azimuthal_integration, jax_static=(3,), rtol=1e-12,
         why="float64 sums per bin (docs/codegen.md, Summation order: rtol 1e-12); hypot correctly rounded in "
             "glibc but not promised: a pixel on a bin edge would move (none here at these centres)")
def azimuthal_integration(image, cx, cy, bins):
    y, x = np.indices(image.shape)
    r = np.hypot(x - cx, y - cy)
    index = np.minimum((r / r.max() * bins).astype(np.int64), bins - 1)
    totals = np.bincount(index.ravel(), weights=image.ravel(), minlength=bins)
    counts = np.bincount(index.ravel(), minlength=bins)
    return totals / np.maximum(counts, 1)
