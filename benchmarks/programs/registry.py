"""The registry of the corpus: `Program` records, added by the kind modules with the
`program` decorator, and `outcome`, the arrays a call leaves behind that are compared
between engines."""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Program:
    """One program of the corpus.

    `function` is the plain NumPy program; `inputs(size)` builds fresh arguments from seed
    0 for `size` "small" (the tests: quick on every backend) or "large" (the harness).
    `updates` are the positions of the arguments the program writes in place: they are
    part of its outcome. `numba` is the Python function `numba.njit` compiles (the NumPy
    function itself where Numba runs it, else the loops a Numba user writes), called
    like `function`; `jax` is a function of `jax.numpy` arrays returning the outcome (the
    result's arrays, then the updated arguments), jitted with the `jax_static` positions
    static: the NumPy function itself, with its `np` bound to `jax.numpy`, where it
    updates nothing in place. `rtol` is the relative tolerance of the comparison
    with NumPy (0: bit for bit) and `why` the documented bound it comes from.
    """

    name: str
    kind: str
    what: str
    function: Callable
    inputs: Callable[[str], tuple]
    updates: tuple[int, ...] = ()
    numba: Callable | None = None
    jax: Callable | None = None
    jax_static: tuple[int, ...] = ()
    rtol: float = 0.0
    why: str = "bit for bit"

    def numba_compiled(self) -> Callable:
        import numba

        return numba.njit(cache=False)(self.numba)

    def jax_compiled(self) -> Callable:
        import jax

        jax.config.update("jax_enable_x64", True)  # the programs are float64, as NumPy's are
        version = self.jax
        if version is self.function:
            namespace = dict(version.__globals__, np=jax.numpy)
            version = types.FunctionType(version.__code__, namespace, version.__name__, version.__defaults__,
                                         version.__closure__)
        jitted = jax.jit(version, static_argnums=self.jax_static)

        def call(*args):
            return outcome(jax.block_until_ready(jitted(*args)), (), ())

        return call


PROGRAMS: list[Program] = []


def program(kind: str, what: str, inputs: Callable[[str], tuple], *, updates: tuple[int, ...] = (),
            numba: Callable | bool | None = None, jax: Callable | bool | None = None,
            jax_static: tuple[int, ...] = (), rtol: float = 0.0, why: str = "bit for bit"):
    """Registers the decorated NumPy function as a program; `numba=True` compiles the
    function itself with Numba, `jax=True` traces it with JAX."""

    def register(function):
        PROGRAMS.append(Program(function.__name__, kind, what, function, inputs, updates,
                                function if numba is True else numba, function if jax is True else jax, jax_static,
                                rtol, why))
        return function

    return register


def outcome(result, args: tuple, updates: tuple[int, ...]) -> list[np.ndarray]:
    """The arrays a call leaves behind: the result's (a tuple's items in order; None has
    none), then the arguments it updated in place, as copies."""
    items = [] if result is None else list(result) if isinstance(result, tuple) else [result]
    return [np.array(item) for item in items] + [np.array(args[position]) for position in updates]


def largest_difference(got: list[np.ndarray], expected: list[np.ndarray]) -> float:
    """The largest difference between two outcomes, each output's relative to its largest
    finite magnitude (a reordered sum errs relative to the size of its terms, not of its
    result): 0 where they are equal (NaN where NumPy has NaN included), inf where a shape
    differs, a NaN is misplaced, or integers differ at all."""
    if len(got) != len(expected):
        return np.inf
    worst = 0.0
    for value, reference in zip(got, expected):
        if value.shape != reference.shape:
            return np.inf
        if np.array_equal(value, reference, equal_nan=reference.dtype.kind in "fc"):
            continue
        if reference.dtype.kind not in "fc" or not np.array_equal(np.isnan(value), np.isnan(reference)):
            return np.inf
        scale = np.max(np.abs(reference), initial=0.0, where=np.isfinite(reference)) or 1.0
        worst = max(worst, float(np.nanmax(np.abs(value.astype(reference.dtype) - reference))) / scale)
    return worst


def break_reason(explanation: str) -> str:
    """A graph break's explanation without what changes from machine to machine or run to
    run: a library file's path, the name pyjit gave an input."""
    return re.sub(r" \((/|[A-Za-z]:\\)[^()]*\)| \(__pyjit_\w+\)", "", explanation.splitlines()[0])


def rng():
    return np.random.default_rng(0)
