"""pyjit/frontend/verify.py: config.verify_correctness runs each compiled graph eagerly
too and raises where the results differ."""

import numpy as np
import pytest

import pyjit
from pyjit.exc import AccuracyError
from pyjit.frontend.verify import verified


def doubled_wrongly(graph_module, example_inputs):
    """A backend with a bug: every float result is off by one part in a thousand."""
    def run(*args):
        result = graph_module(*args)
        return tuple(value * 1.001 for value in result) if isinstance(result, tuple) else result * 1.001

    return run


def chain(x):
    return np.sin(x) * 2 + 1


def test_a_wrong_backend_goes_unseen_without_the_setting(jit):
    x = np.linspace(0, 1, 8)
    assert not np.allclose(jit(chain, backend=doubled_wrongly)(x), chain(x), rtol=1e-6)


def test_a_wrong_backend_raises_with_the_setting(jit):
    x = np.linspace(0, 1, 8)
    with pyjit.config.patch(verify_correctness=True):
        compiled = jit(chain, backend=doubled_wrongly)
        with pytest.raises(AccuracyError, match=r"differs from running it eagerly: the result.* eagerly"):
            compiled(x)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_the_real_backends_pass(jit, backend):
    x = np.linspace(0, 3, 1000).astype(np.float32)
    with pyjit.config.patch(verify_correctness=True):
        np.testing.assert_allclose(jit(chain, backend=backend)(x), chain(x), rtol=1e-5)


def test_what_counts_as_a_difference():
    class Graph:
        name = "g"

        def calls(self):
            return []

    def module(*args):
        return args[0]

    module.graph = Graph()
    check = verified(lambda value: value, module)  # compiled returns what eager returns
    check(np.float32([1, 2]))
    for got, want in [(np.float64([1.0]), np.float32([1.0])),  # dtype
                      (np.ones(2), np.ones(3)),  # shape
                      (np.int64([1]), np.int64([2])),  # integers are exact
                      ((np.ones(1),), np.ones(1))]:  # structure
        with pytest.raises(AccuracyError):
            verified(lambda value, got=got: got, module)(want)
    verified(lambda value: np.float32([1 + 1e-6, np.nan]), module)(np.float32([1, np.nan]))  # float32 tolerance
