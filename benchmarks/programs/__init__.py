"""The corpus of real programs: stencils, linear algebra, signal and image
processing, small physics, statistics and integer code, each a plain NumPy function as
its users write it (Python loops where they write loops), with seeded inputs at a small
size (the tests run every program on every backend) and a large one (the harness; at most
about a second of NumPy time), and where natural the same program for Numba (`@njit`) and
for JAX (`jax.jit`), both imported only when asked for. docs/benchmarks.md ("Programs")
lists them.

`PROGRAMS` is the registry the tests (tests/benchmarks/test_programs.py) and the harness
section (`bench.py` here) iterate: each a `Program`.
"""

from __future__ import annotations

from .registry import Program, break_reason, largest_difference, outcome
from . import image, integer, linalg, physics, signals, stats, stencils  # noqa: F401  (each adds its programs)
from .registry import PROGRAMS

BY_NAME = {program.name: program for program in PROGRAMS}

__all__ = ["BY_NAME", "PROGRAMS", "Program", "break_reason", "largest_difference", "outcome"]
