"""Statistics and machine learning: a k-means step as its users write it (a mask per
cluster), log-sum-exp statistics of rows, and Monte Carlo pricing of an Asian option.
Covariance and correlation are in linalg.py."""

import numpy as np

from .registry import program, rng

TRANSCENDENTAL_SUMS = dict(rtol=1e-12, why="float64 exp/log (4 ulp, docs/codegen.md, Vector math) and sums "
                                            "(Summation order: rtol 1e-12)")


def _kmeans_inputs(size):
    n, k = (64, 4) if size == "small" else (50_000, 16)
    generator = rng()
    points = generator.standard_normal((n, 8))
    return points, points[generator.choice(n, k, replace=False)].copy()


def kmeans_step_loops(points, centroids):
    """The same step as Numba users write it: loops over points and clusters."""
    n, d = points.shape
    k = centroids.shape[0]
    totals = np.zeros((k, d))
    counts = np.zeros(k, dtype=np.int64)
    labels = np.empty(n, dtype=np.int64)
    for p in range(n):
        best, best_distance = 0, np.inf
        for c in range(k):
            distance = 0.0
            for j in range(d):
                distance += (points[p, j] - centroids[c, j]) ** 2
            if distance < best_distance:
                best, best_distance = c, distance
        labels[p] = best
        counts[best] += 1
        totals[best] += points[p]
    updated = centroids.copy()
    for c in range(k):
        if counts[c] > 0:
            updated[c] = totals[c] / counts[c]
    return updated, labels


def _jax_kmeans_step(points, centroids):
    import jax.numpy as jnp

    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    labels = distances.argmin(axis=1)
    membership = labels[:, None] == jnp.arange(centroids.shape[0])[None, :]
    counts = membership.sum(axis=0)
    totals = membership.T.astype(points.dtype) @ points
    return jnp.where(counts[:, None] > 0, totals / jnp.maximum(counts, 1)[:, None], centroids), labels


@program("ml", "one k-means step: nearest centroid, then each cluster's mean by a mask", _kmeans_inputs,
         numba=kmeans_step_loops, jax=_jax_kmeans_step, rtol=1e-12,
         why="float64 sums (docs/codegen.md, Summation order: rtol 1e-12); the labels are exact for points "
             "not equidistant from two centroids")
def kmeans_step(points, centroids):
    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    labels = distances.argmin(axis=1)
    updated = centroids.copy()
    for c in range(centroids.shape[0]):
        members = points[labels == c]
        if len(members) > 0:
            updated[c] = members.mean(axis=0)
    return updated, labels


def _logits_inputs(size):
    return (3.0 * rng().standard_normal((16, 10) if size == "small" else (4000, 1000)),)


def logsumexp_stats_loops(logits):
    """The same statistics as Numba users write them: a loop per row."""
    rows = logits.shape[0]
    lse, entropy = np.empty(rows), np.empty(rows)
    best = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        top = logits[r].max()
        lse[r] = top + np.log(np.exp(logits[r] - top).sum())
        log_p = logits[r] - lse[r]
        entropy[r] = -(np.exp(log_p) * log_p).sum()
        best[r] = log_p.argmax()
    return lse, entropy, best


@program("stats", "row log-sum-exp, softmax entropy and argmax of logits", _logits_inputs,
         numba=logsumexp_stats_loops,
         jax=True, **TRANSCENDENTAL_SUMS)
def logsumexp_stats(logits):
    top = logits.max(axis=1, keepdims=True)
    lse = top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    log_p = logits - lse
    entropy = -(np.exp(log_p) * log_p).sum(axis=1)
    return lse[:, 0], entropy, log_p.argmax(axis=1)


def _option_inputs(size):
    steps, paths = (8, 64) if size == "small" else (64, 100_000)
    return rng().standard_normal((steps, paths)), 100.0, 100.0, 0.02, 0.3, 1.0


def asian_option_loops(z, s0, strike, rate, volatility, maturity):
    """The same pricing as Numba users write it: a loop per path, over its steps."""
    steps, paths = z.shape
    dt = maturity / steps
    drift, scale = (rate - 0.5 * volatility ** 2) * dt, volatility * np.sqrt(dt)
    total = 0.0
    for p in range(paths):
        log_price, price_sum = 0.0, 0.0
        for t in range(steps):
            log_price += drift + scale * z[t, p]
            price_sum += s0 * np.exp(log_price)
        total += max(price_sum / steps - strike, 0.0)
    return np.exp(-rate * maturity) * total / paths


@program("finance", "Monte Carlo price of an arithmetic Asian call from given normal draws", _option_inputs,
         numba=asian_option_loops, jax=True, **TRANSCENDENTAL_SUMS)
def asian_option(z, s0, strike, rate, volatility, maturity):
    dt = maturity / z.shape[0]
    log_paths = np.cumsum((rate - 0.5 * volatility ** 2) * dt + volatility * np.sqrt(dt) * z, axis=0)
    prices = s0 * np.exp(log_paths)
    payoff = np.maximum(prices.mean(axis=0) - strike, 0.0)
    return np.exp(-rate * maturity) * payoff.mean()
