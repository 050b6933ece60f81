"""pyjit/autograd/random.py: one generator, reseeded by manual_seed."""

import numpy as np

import pyjit
from pyjit.autograd import random


def test_manual_seed_makes_random_tensors_repeat():
    pyjit.manual_seed(3)
    first = (pyjit.randn(4).numpy(), pyjit.rand(2, 2).numpy(), random.generator().integers(100))
    generator = pyjit.manual_seed(3)
    assert generator is random.generator() and isinstance(generator, np.random.Generator)
    second = (pyjit.randn(4).numpy(), pyjit.rand(2, 2).numpy(), random.generator().integers(100))
    for one, other in zip(first, second):
        np.testing.assert_array_equal(one, other)
