"""scripts/ops_coverage.py: the coverage table in docs/ops.md is the one the registry
gives now (regenerate it with `python -P scripts/ops_coverage.py`), and it reads the
frontend's mapping, so a routine is listed as captured exactly when a compiled call of
it becomes a registry entry."""

import importlib.util
from pathlib import Path

import numpy as np

import pyjit

ROOT = Path(__file__).resolve().parents[1]


def coverage_module():
    spec = importlib.util.spec_from_file_location("ops_coverage", ROOT / "scripts" / "ops_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_table_is_the_generated_one():
    coverage = coverage_module()
    text = coverage.DOC.read_text(encoding="utf-8")
    assert coverage.with_table(text) == text, "docs/ops.md is stale: run python -P scripts/ops_coverage.py"


def test_a_routine_is_listed_as_captured_when_a_compiled_call_of_it_is_one_graph():
    coverage = coverage_module()
    for name in ("linalg.solve", "fft.rfft", "cov", "bincount", "linalg.slogdet", "linalg.eig"):
        function = coverage._function(name)

        def calls(x, function=function):
            if name == "bincount":  # NOTE(bincount-length): uint8 values, 256 bins
                return function(x, minlength=256)
            return function(x, x) if name == "linalg.solve" else function(x)

        x = np.eye(3) + 1.0 if name != "bincount" else np.array([0, 2, 1], dtype=np.uint8)
        explanation = pyjit.explain(calls)(x)
        captured = explanation.graph_break_count == 0
        assert (coverage.status(name)[0] != "no") == captured, name
