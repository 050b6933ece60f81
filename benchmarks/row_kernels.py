"""The C kernels of row reductions alone (softmax, layer norm, `var` over the rows of a
(4096, 1024) float32 array), as the pyjit it runs with renders them (with `-P`, the
installed one) against another tree's (a checkout of an earlier commit, or a copy of
one), loaded into one process and timed in interleaved rounds by the native loop `pyjit._C.bench` into outputs already touched:
what a change to the code generator gains, with neither the glue nor first-touch page
faults in the figure. Each kernel's output is checked against NumPy's first.
docs/benchmarks.md has the figures of one run.

    python -P benchmarks/row_kernels.py --against DIR [--rounds 100]

DIR is a source tree of pyjit with its native core in place (`pyjit/_C*.so`); OpenMP
threads as OMP_NUM_THREADS says.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROWS, WIDTH = 4096, 1024
RENDER = f"""
import json, numpy as np
import pyjit.ops as ops
from pyjit.codegen.cpu.renderer import render_unit
from pyjit.codegen.scheduling.scheduler import schedule
from pyjit.graph import Graph, TensorMeta

def kernel(build, *shapes):
    graph = Graph()
    inputs = [graph.placeholder(f"x{{n}}", TensorMeta(shape, np.float32)) for n, shape in enumerate(shapes)]
    graph.output(build(*inputs))
    (k,) = schedule(graph, prefix="row").kernels
    return [render_unit([k]), k.name, len(k.buffers), len(k.sizes)]

print(json.dumps({{
    "softmax": kernel(lambda x: ops.softmax(x), ({ROWS}, {WIDTH})),
    "layer_norm": kernel(lambda x, w, b: ops.layer_norm(x, ({WIDTH},), w, b),
                         ({ROWS}, {WIDTH}), ({WIDTH},), ({WIDTH},)),
    "var": kernel(lambda x: ops.var(x, axis=-1), ({ROWS}, {WIDTH})),
}}))
"""


def rendered(tree: str) -> dict:
    environment = dict(os.environ, PYTHONPATH=tree)
    child = subprocess.run([sys.executable, "-P", "-c", RENDER], capture_output=True, text=True, env=environment,
                           check=True)
    return json.loads(child.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other pyjit source tree")
    parser.add_argument("--rounds", type=int, default=100)
    options = parser.parse_args()
    import pyjit

    with tempfile.TemporaryDirectory() as cache:  # a fresh compile cache: the user's is left alone
        pyjit.config.cache_dir = cache
        compare(rendered(os.path.abspath(options.against)), options.rounds)


def compare(before: dict, rounds: int) -> None:
    """Times each kernel of `before` against the imported pyjit's, after checking both."""
    import pyjit
    from pyjit import _C
    from pyjit.codegen.cpu import build

    here = os.path.dirname(os.path.dirname(os.path.abspath(pyjit.__file__)))  # installed, or a built tree
    sources = {"before": before, "after": rendered(here)}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, WIDTH), dtype=np.float32)
    w, b = rng.standard_normal(WIDTH, dtype=np.float32), rng.standard_normal(WIDTH, dtype=np.float32)
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    exponentials = np.exp(x - x.max(axis=-1, keepdims=True))
    expected = {"softmax": exponentials / exponentials.sum(axis=-1, keepdims=True),
                "layer_norm": centered / np.sqrt(variance + 1e-5) * w + b, "var": variance[:, 0]}
    inputs = {"softmax": (x,), "layer_norm": (x, w, b), "var": (x,)}
    print(f"{'kernel':12s} {'before ms':>10s} {'after ms':>10s} {'gain':>6s}")
    for name, want in expected.items():
        kernels, times = {}, {"before": [], "after": []}
        out = np.empty_like(want)
        for label, unit in sources.items():
            source, function, buffers, sizes = unit[name]
            kernels[label] = build.load(source).kernel(function, buffers, sizes)
            out.fill(np.nan)
            kernels[label](*inputs[name], out)
            np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} {label}")
        for _ in range(rounds):  # interleaved: a slow spell of the machine hits both
            for label, kernel in kernels.items():
                times[label].append(min(_C.bench(kernel, (*inputs[name], out), 3, 1)))
        before, after = min(times["before"]), min(times["after"])
        print(f"{name:12s} {before * 1e3:10.3f} {after * 1e3:10.3f} {before / after:5.2f}x")


if __name__ == "__main__":
    main()
