"""The corpus of real programs (benchmarks/programs/, issue 30): every program compiled
under each backend gives plain NumPy's results and leaves its in-place-updated arguments
as NumPy does, at the small size; its graph breaks are only those listed in
EXPECTED_BREAKS; and the Numba and JAX versions, where those are installed, agree with
NumPy too.

A program's tolerance is its registry entry's `rtol` (0: bit for bit), each citing the
documented bound it comes from (docs/codegen.md: vector math within 4 ulp, float sums in
another order than NumPy's); a difference is measured against the largest magnitude of
that output, since a reordered sum errs relative to the size of its terms, not of its
result."""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pyjit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from programs import BY_NAME, PROGRAMS, break_reason, largest_difference, outcome  # noqa: E402

BACKENDS = [name for name in ("eager", "aot_eager", "inductor") if name in pyjit.list_backends(exclude_tags=None)]
NAMES = [program.name for program in PROGRAMS]

# The graph breaks each program has today, as explanations (normalised: no file paths,
# no pyjit-made names). A program that captures more breaks less and still passes; one
# that breaks for a reason not listed here fails. Shrink this table when capture
# improves: `pytest -rP` prints each program's breaks.
BINCOUNT = ("bincount: the length of its result is max(x) + 1 where that exceeds minlength, which only the values "
            "decide (x of dtype int64 may hold values up to 9223372036854775807, minlength is 16)")
MASK = ("index: boolean index: the result's shape depends on the mask's values, which a graph cannot know; pyjit "
        "leaves such an index to NumPy (a graph break)")
EXPECTED_BREAKS = {
    **{name: set() for name in (
        "jacobi_1d", "jacobi_2d", "heat_3d", "heat_1d", "wave_2d", "forward_substitution", "cholesky", "lu",
        "gram_schmidt", "covariance", "correlation", "floyd_warshall", "nbody", "lorenz_rk4", "recurrence",
        "logsumexp_stats", "asian_option", "sobel", "box_blur", "conv2d", "cnn_forward", "crc32", "splitmix64",
        "game_of_life", "mandelbrot", "moving_average", "fir_filter", "spectral_poisson", "periodogram",
        "histogram_equalisation")},
    # Output shapes that depend on values: a graph cannot express them (histogram_equalisation's
    # bincount of uint8 values is captured: NOTE(bincount-length); azimuthal_integration's
    # int64 bin indices leave its length to the values).
    # velocity[outside] *= -0.9: the masked read, then its write-back in the resumed code.
    "particles": {MASK, "index_put: " + MASK.partition(": ")[2],
                  "velocity shares memory with __pyjit_stack1, which the graph updates in place"},
    "kmeans_step": {MASK},
    "azimuthal_integration": {BINCOUNT},
}


def assert_same(got: list[np.ndarray], expected: list[np.ndarray], rtol: float, dtypes: bool = True) -> None:
    """NumPy's shapes (and dtypes), and its values within `rtol` of each output's largest
    magnitude (0: bit for bit; NaN where NumPy has NaN; integers always exact)."""
    if dtypes:
        assert [value.dtype for value in got] == [value.dtype for value in expected]
    difference = largest_difference(got, expected)
    assert difference <= rtol, f"differs from NumPy's by {difference:.3g} of the largest magnitude (allowed: {rtol})"


def numpy_outcome(program) -> list[np.ndarray]:
    args = program.inputs("small")
    return outcome(program.function(*args), args, program.updates)


def test_the_corpus_covers_the_kinds_and_the_table_every_program():
    kinds = {program.kind for program in PROGRAMS}
    assert len(PROGRAMS) >= 30 and len(set(NAMES)) == len(NAMES)
    assert {"stencil", "linalg", "signal", "spectral", "image", "physics", "stats", "ml", "integer"} <= kinds
    assert set(EXPECTED_BREAKS) == set(NAMES)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_program_gives_numpys_results(name, backend):
    program = BY_NAME[name]
    expected = numpy_outcome(program)
    pyjit.reset()
    args = program.inputs("small")
    got = outcome(pyjit.compile(program.function, backend=backend)(*args), args, program.updates)
    assert_same(got, expected, program.rtol)


@pytest.mark.parametrize("name", NAMES)
def test_program_breaks_only_where_expected(name):
    program = BY_NAME[name]
    pyjit.reset()
    explained = pyjit.explain(program.function)(*program.inputs("small"))
    reasons = {break_reason(reason.explanation) for reason in explained.break_reasons}
    print(f"{name}: {explained.graph_count} graphs, {explained.graph_break_count} breaks")
    for reason in sorted(reasons):
        print(f"  {reason}")
    assert reasons <= EXPECTED_BREAKS[name], f"breaks not in EXPECTED_BREAKS: {reasons - EXPECTED_BREAKS[name]}"
    assert explained.graph_count >= 1


# Programs whose loops are loop nodes at the large size (NOTE(loop-capture)), each one
# graph without a break: slices that move with the index and are empty at one end of the
# range (`L[i, :i]`, `A[k + 1:, k]`), guards checked at the range's ends. Their small
# sizes unroll (NOTE(short-loops)), so the large inputs are traced here.
LOOP_NODES = ("forward_substitution", "cholesky", "lu", "gram_schmidt", "floyd_warshall", "recurrence",
              "fir_filter", "conv2d")


@pytest.mark.parametrize("name", LOOP_NODES)
def test_loop_programs_are_one_graph_with_their_loop_as_one_node_at_the_large_size(name):
    from pyjit.utils import counters

    program = BY_NAME[name]
    pyjit.reset()
    explained = pyjit.explain(program.function)(*program.inputs("large"))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    assert counters["stats"]["loops_captured"] >= 1 and not counters["loops_unrolled"]
    assert "loop" in explained.ops_per_graph[0]


# Numba and JAX may contract multiply-adds and order sums their own way; their results are
# held to 1e-12 of each output's largest magnitude (float64), the program's own bound
# where that is looser, and integers exactly. Their dtypes may differ (JAX's defaults).
PEER_RTOL = 1e-12


@pytest.mark.parametrize("name", [program.name for program in PROGRAMS if program.numba is not None])
def test_numba_version_gives_numpys_results(name):
    numba = pytest.importorskip("numba")
    program = BY_NAME[name]
    args = program.inputs("small")
    with warnings.catch_warnings():  # its advice on contiguous operands of `@` is not a result
        warnings.simplefilter("ignore", numba.core.errors.NumbaPerformanceWarning)
        got = outcome(program.numba_compiled()(*args), args, program.updates)
    assert_same(got, numpy_outcome(program), max(program.rtol, PEER_RTOL), dtypes=False)


@pytest.mark.parametrize("name", [program.name for program in PROGRAMS if program.jax is not None])
def test_jax_version_gives_numpys_results(name):
    pytest.importorskip("jax")
    program = BY_NAME[name]
    assert_same(program.jax_compiled()(*program.inputs("small")), numpy_outcome(program),
                max(program.rtol, PEER_RTOL), dtypes=False)


def test_the_harness_section_measures_each_program_against_numpy(run_quick, tmp_path):
    """benchmarks/programs/run.py at the small sizes (figures not checked: timing is never
    asserted): a row per program with pyjit's speedup, first call, graphs and breaks, the
    first call's results checked against NumPy's, and the summary lines. The peers are
    left out (their compiles take seconds each; their versions are checked above)."""
    path = tmp_path / "programs.json"
    stdout = run_quick("programs/run.py", "--programs", "jacobi_1d,lu", "--engines", "pyjit", "--json", str(path))
    document = json.loads(path.read_text())["programs"]
    assert list(document["programs"]) == ["jacobi_1d", "lu"]
    for name, rows in document["programs"].items():
        assert set(rows) == {"numpy", "pyjit"} and rows["numpy"]["median_ms"] > 0 and rows["pyjit"]["median_ms"] > 0
        assert rows["pyjit"]["agrees"] and rows["pyjit"]["graphs"] >= 1
        assert set(rows["pyjit"]["break_reasons"]) <= EXPECTED_BREAKS[name]
        assert [line.split()[0] for line in stdout.splitlines() if line.startswith(f"  {name} ")] == [name]
    assert document["programs"]["jacobi_1d"]["pyjit"]["graph_breaks"] == 0
    assert "one graph, no break (2): jacobi_1d, lu" in stdout
    assert max(len(line) for line in stdout.splitlines()) <= 100
