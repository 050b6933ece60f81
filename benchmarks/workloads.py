"""The harness's twelve workloads, written in plain NumPy (what pyjit's users write), with
seeded float32 inputs at two sizes: the default (about 5-50 ms per NumPy call on the
2-core machine) and `quick` (tiny: a smoke test of the harness, not a measurement).

A workload builds a `Case`: the function, its arguments, and `observe`, which turns the
function's result into the arrays compared with NumPy's. The MLP training step also has
a `pyjit.Tensor` flavour (`nn.Linear`, `optim.SGD`, `backward()`); the pyjit engines run
that one, NumPy runs a hand-written forward, backward and SGD update of the same model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

F32 = np.float32
HEADS = 8


@dataclass(frozen=True)
class Case:
    """What an engine calls, with what, and `observe`: the arrays of a result (or copies
    of the state a call leaves behind) that are compared with NumPy's. A plain result is
    not copied: a copy would count in the row's peak RSS."""

    fn: Callable
    args: tuple
    observe: Callable[[object], list[np.ndarray]] = lambda result: [np.asarray(result)]


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    numpy: Callable[[bool], Case]  # quick -> the NumPy case
    at_floor: bool = False  # within 1.3x of the row's floor is a target (SPEC section 4)
    # the workload's vector-math calls: (pyjit op, the arguments it is called on, from
    # NumPy), for the floor of the same calls alone (NOTE(vector-math-floor) in measure.py)
    vector_math: Callable[..., list[tuple[str, np.ndarray]]] | None = None
    tensor: Callable[[bool], Case] | None = None  # the pyjit.Tensor flavour, if any
    tolerance: float = 2e-3  # rtol and atol against NumPy's result


def _rng():
    return np.random.default_rng(0)


def _normal(rng, shape, scale=1.0):
    """float32 straight from the generator: no float64 temporary to raise the peak RSS."""
    values = rng.standard_normal(shape, dtype=F32)
    values *= F32(scale)
    return values


def _uniform(rng, low, high, count):
    values = rng.random(count, dtype=F32)
    values *= F32(high - low)
    values += F32(low)
    return values


# -- 1, 2: pointwise chains ---------------------------------------------------------------
def chain(x):
    return np.sin(x) * np.cos(x) + np.exp(-x * x)


def cos_cos(x):
    return np.cos(np.cos(x))


def _chain_math(x):
    return [("sin", x), ("cos", x), ("exp", -x * x)]


def _cos_cos_math(x):
    return [("cos", x), ("cos", np.cos(x))]


def _vector_case(fn):
    return lambda quick: Case(fn, (_normal(_rng(), (1 << 16) if quick else (8 << 20)),))


# -- 3, 4, 6: row-wise and pointwise layers -------------------------------------------------
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, weight, bias):
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + 1e-5) * weight + bias


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


def _softmax_math(x):
    return [("exp", x - x.max(axis=-1, keepdims=True))]


def _gelu_math(x):
    return [("tanh", math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x))]


def _rows(quick):
    return (64, 256) if quick else (4096, 1024)


def _softmax_case(quick):
    return Case(softmax, (_normal(_rng(), _rows(quick)),))


def _layer_norm_case(quick):
    rng = _rng()
    rows = _normal(rng, _rows(quick))
    return Case(layer_norm, (rows, _normal(rng, rows.shape[1]), _normal(rng, rows.shape[1])))


def _gelu_case(quick):
    return Case(gelu, (_normal(_rng(), (128, 256) if quick else (4096, 4096)),))


# -- 5: MLP forward -------------------------------------------------------------------------
def mlp(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def _mlp_case(quick):
    rng = _rng()
    batch, width, hidden = (16, 64, 256) if quick else (512, 1024, 4096)
    return Case(mlp, (_normal(rng, (batch, width)), _normal(rng, (width, hidden), width ** -0.5),
                      _normal(rng, hidden, 0.1), _normal(rng, (hidden, width), hidden ** -0.5),
                      _normal(rng, width, 0.1)))


# -- 7: the transformer block of SPEC section 5, example 3 ----------------------------------
def attention(x, w_qkv, b_qkv, w_out, b_out):
    """Multi-head self-attention, batch first, as torch.nn.MultiheadAttention computes it
    (with the projections stored input-major, so they multiply from the right)."""
    batch, length, width = x.shape
    qkv = (x @ w_qkv + b_qkv).reshape(batch, length, 3, HEADS, width // HEADS).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    weights = softmax(q @ k.transpose(0, 1, 3, 2) * (1 / math.sqrt(width // HEADS)))
    heads = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
    return heads @ w_out + b_out


def transformer_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_out, b_out, ln2_w, ln2_b, w_ff1, b_ff1, w_ff2, b_ff2):
    x = x + attention(layer_norm(x, ln1_w, ln1_b), w_qkv, b_qkv, w_out, b_out)
    return x + gelu(layer_norm(x, ln2_w, ln2_b) @ w_ff1 + b_ff1) @ w_ff2 + b_ff2


def _transformer_case(quick):
    rng = _rng()
    batch, length, width, ffn = (2, 16, 64, 256) if quick else (16, 128, 512, 2048)

    def linear(fan_in, fan_out):
        return _normal(rng, (fan_in, fan_out), fan_in ** -0.5), _normal(rng, fan_out, 0.02)

    def norm():
        return 1 + _normal(rng, width, 0.1), _normal(rng, width, 0.1)

    x = _normal(rng, (batch, length, width))
    return Case(transformer_block, (x, *norm(), *linear(width, 3 * width), *linear(width, width), *norm(),
                                    *linear(width, ffn), *linear(ffn, width)))


# -- 8: one k-means step ----------------------------------------------------------------------
def kmeans_step(points, centroids):
    """Assigns each point to its nearest centroid and returns the clusters' means (a
    centroid with no points stays where it is)."""
    distances = ((points * points).sum(axis=1, keepdims=True) - 2 * (points @ centroids.T)
                 + (centroids * centroids).sum(axis=1))
    labels = distances.argmin(axis=1)
    members = (labels[:, None] == np.arange(centroids.shape[0])).astype(F32)
    counts = members.sum(axis=0)[:, None]
    return np.where(counts > 0, (members.T @ points) / np.maximum(counts, 1), centroids)


def _kmeans_case(quick):
    rng = _rng()
    points = _normal(rng, (2000 if quick else 200_000, 16))
    return Case(kmeans_step, (points, points[rng.choice(len(points), 32, replace=False)].copy()))


# -- 9: Black-Scholes -------------------------------------------------------------------------
def normal_cdf(d):
    """The standard normal CDF by Abramowitz and Stegun 26.2.17 (error < 7.5e-8): NumPy
    has no erf, and this is the form the classic Black-Scholes benchmarks use."""
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    tail = 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
    return np.where(d > 0, 1.0 - tail, tail)


def black_scholes(spot, strike, years, rate=0.02, volatility=0.3):
    """Call prices of European options."""
    root = np.sqrt(years)
    d1 = (np.log(spot / strike) + (rate + 0.5 * volatility * volatility) * years) / (volatility * root)
    d2 = d1 - volatility * root
    return spot * normal_cdf(d1) - strike * np.exp(-rate * years) * normal_cdf(d2)


def _black_scholes_case(quick):
    rng = _rng()
    count = (1 << 15) if quick else (4 << 20)
    return Case(black_scholes, (_uniform(rng, 10, 100, count), _uniform(rng, 10, 100, count),
                                _uniform(rng, 0.1, 3, count)))


# -- 11: column statistics --------------------------------------------------------------------
def column_stats(x):
    """Per-column mean and standard deviation of the positive parts (reductions along
    the leading axis: the columnar form, NOTE(columnar-reductions))."""
    positive = np.where(x > 0, x, 0)
    return positive.mean(axis=0), positive.std(axis=0)


def _column_stats_case(quick):
    return Case(column_stats, (_normal(_rng(), (200, 64) if quick else (2000, 512)),),
                lambda result: [np.asarray(part) for part in result])


# -- 12: a data-dependent branch --------------------------------------------------------------
def clipped_step(x, y):
    """One step toward y, its length clipped to 1: the `if` reads a value the graph
    computes, so the function runs as small graphs around a graph break, the pieces
    between branches the issue calls too small to gain."""
    step = y - x
    length = np.sqrt((step * step).sum())
    if length > 1.0:
        step = step / length
    return x + 0.5 * step


def _clipped_step_case(quick):
    rng = _rng()
    count = 256 if quick else 16384
    return Case(clipped_step, (_normal(rng, count), _normal(rng, count)))


# -- 10: an MLP training step -------------------------------------------------------------------
LEARNING_RATE = 0.01


def _training_data(quick):
    """x, y and the weights (w1, b1, w2, b2), Linear's layout: weight (out, in)."""
    rng = _rng()
    batch, width, hidden = (16, 32, 64) if quick else (512, 512, 1024)
    x, y = _normal(rng, (batch, width)), _normal(rng, (batch, width))
    return x, y, [_normal(rng, (hidden, width), width ** -0.5), _normal(rng, hidden, 0.1),
                  _normal(rng, (width, hidden), hidden ** -0.5), _normal(rng, width, 0.1)]


def train_step_numpy(x, y, w1, b1, w2, b2):
    """One step of SGD on the mean squared error of relu(x w1^T + b1) w2^T + b2, the
    gradients written out by hand; updates the weights in place, returns the loss."""
    hidden = x @ w1.T + b1
    active = np.maximum(hidden, 0)
    difference = active @ w2.T + b2 - y
    loss = (difference * difference).mean()
    grad_out = difference * (2 / difference.size)
    grad_hidden = (grad_out @ w2) * (hidden > 0)
    for weight, grad in ((w2, grad_out.T @ active), (b2, grad_out.sum(axis=0)),
                         (w1, grad_hidden.T @ x), (b1, grad_hidden.sum(axis=0))):
        weight -= LEARNING_RATE * grad
    return loss


def train_step(model, optimizer, x, y):
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def _train_numpy_case(quick):
    x, y, weights = _training_data(quick)
    before = [w.copy() for w in weights]
    # Each weight's step is compared too (the backward's result, scaled back to the
    # gradient): a step left undone, or not written into the weights, is then wrong.
    return Case(train_step_numpy, (x, y, *weights),
                lambda loss: [np.array(loss), *((w0 - w) / LEARNING_RATE for w, w0 in zip(weights, before))])


def _train_tensor_case(quick):
    import pyjit

    x, y, weights = _training_data(quick)
    model = pyjit.nn.Sequential(pyjit.nn.Linear(weights[0].shape[1], weights[0].shape[0]), pyjit.nn.ReLU(),
                                pyjit.nn.Linear(weights[2].shape[1], weights[2].shape[0]))
    model.load_state_dict(dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"),
                                   (pyjit.tensor(w) for w in weights))))
    optimizer = pyjit.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    before = [w.copy() for w in weights]

    def observe(loss):
        return [np.array(loss.item(), F32),
                *((w0 - p.numpy()) / LEARNING_RATE for p, w0 in zip(model.parameters(), before))]

    return Case(train_step, (model, optimizer, pyjit.tensor(x), pyjit.tensor(y)), observe)


WORKLOADS = [
    Workload("chain", "sin(x)*cos(x) + exp(-x*x), 8M float32", _vector_case(chain), at_floor=True,
             vector_math=_chain_math),
    Workload("cos_cos", "cos(cos(x)), 8M float32", _vector_case(cos_cos), at_floor=True, vector_math=_cos_cos_math),
    Workload("softmax", "softmax over the rows of (4096, 1024)", _softmax_case, at_floor=True,
             vector_math=_softmax_math),
    Workload("layer_norm", "layer norm over the rows of (4096, 1024), weight and bias", _layer_norm_case,
             at_floor=True),
    Workload("mlp", "relu(x@W1+b1)@W2+b2, x (512, 1024), hidden 4096", _mlp_case),
    Workload("gelu", "GELU (tanh form) on (4096, 4096)", _gelu_case, at_floor=True, vector_math=_gelu_math),
    Workload("transformer", "transformer block, 16x128x512, 8 heads, FFN 2048", _transformer_case,
             tolerance=1e-2),
    Workload("kmeans", "k-means assignment + update, 200k points in 16-D, 32 centroids", _kmeans_case),
    Workload("black_scholes", "Black-Scholes call prices of 4M options", _black_scholes_case),
    Workload("mlp_train", "MLP training step (forward, backward, SGD), x (512, 512), hidden 1024",
             _train_numpy_case, tensor=_train_tensor_case),
    Workload("column_stats", "where, then mean and std along axis 0 of (2000, 512)", _column_stats_case),
    Workload("clipped_step", "a step clipped to length 1 (a data-dependent if), 16K float32", _clipped_step_case),
]
BY_NAME = {workload.name: workload for workload in WORKLOADS}


def traffic_bytes(case: Case, observed: list[np.ndarray]) -> int:
    """Bytes the workload must move at least: its array inputs read once, its results
    written once."""
    return sum(arg.nbytes for arg in case.args if isinstance(arg, np.ndarray)) + sum(a.nbytes for a in observed)
