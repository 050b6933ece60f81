"""Dense linear algebra written as its users write it: row and column loops around slices
and products (triangular solve, Cholesky, LU, Gram-Schmidt), covariance and correlation,
and Floyd-Warshall's k loop."""

import numpy as np

from .registry import program, rng

# Products of float64 rows summed in another order than NumPy's (docs/codegen.md,
# "Summation order": float64 sums within rtol 1e-12), carried through factorizations of
# matrices whose condition number is under about 10 (diagonally dominant by construction).
FACTORED = dict(rtol=1e-10, why="float64 sums in another order (rtol 1e-12 each), condition number < 10")


def _sizes(size, small, large):
    return small if size == "small" else large


def _triangular_inputs(size):
    n = _sizes(size, 8, 2000)
    generator = rng()
    L = np.tril(generator.random((n, n))) / n + np.eye(n)
    return L, generator.random(n)


def _jax_forward_substitution(L, b):
    import jax.numpy as jnp
    from jax import lax

    def row(i, x):  # x is zero from row i on, so the full row's product is the prefix's
        return x.at[i].set((b[i] - L[i] @ x) / L[i, i])

    return (lax.fori_loop(0, b.shape[0], row, jnp.zeros_like(b)),)


@program("linalg", "forward substitution L x = b, one row per iteration", _triangular_inputs, numba=True,
         jax=_jax_forward_substitution, **FACTORED)
def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def _spd_inputs(size):
    n = _sizes(size, 8, 500)
    M = rng().random((n, n))
    return (M @ M.T / n + np.eye(n),)


def _jax_cholesky(A):
    import jax.numpy as jnp

    return (jnp.linalg.cholesky(A),)


@program("linalg", "Cholesky factorization, column by column", _spd_inputs, numba=True, jax=_jax_cholesky,
         **FACTORED)
def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def _dominant_inputs(size):
    n = _sizes(size, 8, 400)
    return (rng().random((n, n)) + n * np.eye(n),)


def _jax_lu(A):
    import jax.numpy as jnp
    from jax import lax

    n = A.shape[0]
    index = jnp.arange(n)

    def step(k, LU):  # rows and columns past k only, by masks instead of slices
        below = index > k
        column = jnp.where(below, LU[:, k] / LU[k, k], LU[:, k])
        LU = LU.at[:, k].set(column)
        update = jnp.outer(jnp.where(below, column, 0.0), jnp.where(below, LU[k], 0.0))
        return LU - update

    return (lax.fori_loop(0, n, step, A),)


@program("linalg", "LU factorization without pivoting (Doolittle), outer-product updates", _dominant_inputs,
         numba=True, jax=_jax_lu, **FACTORED)
def lu(A):
    LU = A.copy()
    n = LU.shape[0]
    for k in range(n):
        LU[k + 1:, k] /= LU[k, k]
        LU[k + 1:, k + 1:] -= np.outer(LU[k + 1:, k], LU[k, k + 1:])
    return LU


def _tall_inputs(size):
    m, n = _sizes(size, (12, 6), (2000, 200))
    return (rng().random((m, n)) + np.eye(m, n),)


def _jax_gram_schmidt(A):
    import jax.numpy as jnp
    from jax import lax

    n = A.shape[1]

    def column(k, carry):
        Q, R, V = carry
        norm = jnp.linalg.norm(V[:, k])
        q = V[:, k] / norm
        projections = jnp.where(jnp.arange(n) > k, q @ V, 0.0)
        return Q.at[:, k].set(q), R.at[k].set(projections.at[k].set(norm)), V - jnp.outer(q, projections)

    Q, R, _ = lax.fori_loop(0, n, column, (jnp.zeros_like(A), jnp.zeros((n, n)), A))
    return Q, R


@program("linalg", "modified Gram-Schmidt QR, column by column", _tall_inputs, numba=True, jax=_jax_gram_schmidt,
         **FACTORED)
def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros_like(A)
    R = np.zeros((n, n))
    V = A.copy()
    for k in range(n):
        R[k, k] = np.linalg.norm(V[:, k])
        Q[:, k] = V[:, k] / R[k, k]
        R[k, k + 1:] = Q[:, k] @ V[:, k + 1:]
        V[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
    return Q, R


def _data_inputs(size):
    return (rng().random(_sizes(size, (20, 6), (4000, 400))),)


def covariance_loops(data):
    """The same covariance as Numba users write it: column means, then a loop per pair."""
    n, d = data.shape
    mean = np.zeros(d)
    for i in range(n):
        mean += data[i]
    mean /= n
    centered = data - mean
    result = np.empty((d, d))
    for a in range(d):
        for b in range(a, d):
            total = 0.0
            for i in range(n):
                total += centered[i, a] * centered[i, b]
            result[a, b] = result[b, a] = total / (n - 1)
    return result


@program("stats", "covariance matrix of the columns", _data_inputs, numba=covariance_loops, jax=True,
         rtol=1e-12, why="float64 sums (docs/codegen.md, Summation order: rtol 1e-12)")
def covariance(data):
    mean = data.mean(axis=0)
    centered = data - mean
    return centered.T @ centered / (data.shape[0] - 1)


@program("stats", "correlation matrix of the columns (population std, small stds clamped)", _data_inputs,
         jax=True, rtol=1e-12,
         why="float64 sums (docs/codegen.md, Summation order: rtol 1e-12); sqrt is correctly rounded")
def correlation(data):
    n = data.shape[0]
    mean = data.mean(axis=0)
    std = np.sqrt(((data - mean) ** 2).mean(axis=0))
    std = np.where(std <= 0.1, 1.0, std)
    normalized = (data - mean) / (np.sqrt(float(n)) * std)
    return normalized.T @ normalized


def _graph_inputs(size):
    n = _sizes(size, 10, 400)
    generator = rng()
    distances = generator.random((n, n)) * 100.0
    distances[generator.random((n, n)) < 0.5] = np.inf
    np.fill_diagonal(distances, 0.0)
    return (distances,)


def _jax_floyd_warshall(dist):
    import jax.numpy as jnp
    from jax import lax

    dist = lax.fori_loop(0, dist.shape[0], lambda k, d: jnp.minimum(d, d[:, k][:, None] + d[k][None, :]), dist)
    return (dist,)


@program("graph", "Floyd-Warshall shortest paths, in place, one k per iteration", _graph_inputs, updates=(0,),
         numba=True, jax=_jax_floyd_warshall)
def floyd_warshall(dist):
    n = dist.shape[0]
    for k in range(n):
        dist[:, :] = np.minimum(dist, dist[:, k:k + 1] + dist[k:k + 1, :])
