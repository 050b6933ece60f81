"""The compiled functions tests/test_distributed.py sends to Dask workers. They live in a
module of their own because a worker imports a decorated function by its module's name
(docs/distributed.md); tests/ is on the workers' sys.path as on the test's (a LocalCluster
passes its sys.path on; a `dask worker` gets it as PYTHONPATH). Each test uses functions
of its own, so which shapes a worker has seen (docs/frontend/guards.md, automatic dynamic shapes) does not depend
on which tests ran before."""

import time

import numpy as np

import pyjit


@pyjit.compile
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def softsign(x):
    return x / (1.0 + np.abs(x))


softsign_compiled = pyjit.compile(softsign)  # kept under another name: pickled as `softsign`


@pyjit.compile
def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


@pyjit.compile
def mix(x, y):
    return x * 2.0 + np.sin(y) * x


@pyjit.compile
def squares(x, axis, keepdims):
    """da.reduction's chunk function: each block's sum of squares."""
    return np.sum(x * x, axis=axis, keepdims=keepdims)


@pyjit.compile
def total(x, axis, keepdims):
    """da.reduction's aggregate function: the sum of the blocks' sums."""
    return np.sum(x, axis=axis, keepdims=keepdims)


@pyjit.compile
def standardize(x):
    centered = x - x.mean(axis=1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + 1e-6)


@pyjit.compile
def swish(x):
    return x / (1.0 + np.exp(-x))


@pyjit.compile
def root_mix(x):
    return np.sqrt(np.abs(x)) * 0.5 + x * 0.25


def slowly(block):
    """root_mix(block) after a pause, so tasks are still running when a worker dies."""
    time.sleep(0.4)
    return root_mix(block)


def infer(model, block):
    """A compiled pyjit.nn.Module's inference on one block."""
    with pyjit.no_grad():
        return model(pyjit.tensor(block)).numpy()
