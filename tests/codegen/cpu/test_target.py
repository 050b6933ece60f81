"""pyjit.codegen.cpu.target: the CPU target builds the OpenMP team's library while a
graph's kernels compile (NOTE(parallel-builds))."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import pyjit

from compiler_wrappers import meeting_compiler

if shutil.which("cc") is None and shutil.which("gcc") is None:
    pytest.skip("no C compiler", allow_module_level=True)

CHILD = textwrap.dedent("""
    import json
    import numpy as np
    import pyjit
    from pyjit.utils import counters

    x = np.linspace(-1.0, 1.0, 1000)
    result = pyjit.compile(lambda x: np.abs(x) * 2.0 + 1.0)(x)
    print(json.dumps({"agrees": bool(np.array_equal(result, np.abs(x) * 2.0 + 1.0)),
                      "counters": dict(counters["inductor"])}))
""")


def child_environment(tmp_path, compiler):
    """A child's environment: `compiler` as $CC, an empty cache, this test's pyjit."""
    return {**os.environ, "CC": str(compiler), "PYJIT_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.path.dirname(os.path.dirname(pyjit.__file__))}


def test_a_first_graph_compiles_its_kernels_and_the_teams_library_at_the_same_time(tmp_path):
    compiler, log = meeting_compiler(tmp_path, wanted=2)
    result = subprocess.run([sys.executable, "-P", "-c", CHILD], capture_output=True, text=True,
                            env=child_environment(tmp_path, compiler), timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["agrees"]
    assert report["counters"]["compiles"] == 2 and report["counters"]["graphs"] == 1
    assert log.read_text().split() == ["begin", "begin", "end", "end"]
