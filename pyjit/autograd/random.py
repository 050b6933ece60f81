"""The random numbers behind randn, rand, weight initialisation and dropout.

One NumPy Generator per process, seeded from the operating system until
`pyjit.manual_seed(seed)` replaces it with a seeded one. Values are drawn on the CPU
and moved to the tensor's device afterwards, so one seed gives the same values on
every device.
"""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng()


def generator() -> np.random.Generator:
    """The generator every random tensor is drawn from."""
    return _generator


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed: the same seed gives the same sequence of random tensors."""
    global _generator
    _generator = np.random.default_rng(seed)
    return _generator
