#!/usr/bin/env bash
# The main job: builds pyjit for the first CPython found (3.11, else 3.12, else 3.13; or
# $PYJIT_PYTHON) in its benchmark environment (.venv-3.X-bench: pyproject.toml's `bench`
# extra: matplotlib for the chart, Numba and JAX for the table's peers, Dask for the
# cluster example) and runs the examples, then every benchmark of benchmarks/: the
# frame-hook benchmark, the harness, its programs section and the focused benchmarks
# (docs/benchmarks.md), whose tables it prints. Each writes its section of
# build/benchmarks/results.json (NOTE(results-file) in benchmarks/results.py), which
# starts empty. Arguments go to the harness (benchmarks/run.py: --quick, --peers,
# --json PATH, --engines, --workloads); --quick also shortens the rest.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$PYJIT_ROOT"
mapfile -t pythons < <(pyjit_pythons)
[ ${#pythons[@]} -gt 0 ] || exit 1
python=$(pyjit_venv "${pythons[0]}" bench)
quick=()
for argument in "$@"; do
  if [ "$argument" = --quick ]; then quick=(--quick); fi
done
for example in examples/*.py; do
  echo "=== $example"
  "$python" -P "$example" "${quick[@]}"
done
rm -f build/benchmarks/results.json
echo "=== benchmarks/hook_overhead.py"
"$python" -P benchmarks/hook_overhead.py "${quick[@]}"
echo "=== benchmarks/run.py"
"$python" -P benchmarks/run.py "$@"
# row_kernels.py is left out: it compares two source trees (--against).
for benchmark in programs/run reductions small_graphs modes training compiled_backward loops compile_time \
    blas_threads cluster remote_cache; do
  echo "=== benchmarks/$benchmark.py"
  "$python" -P "benchmarks/$benchmark.py" "${quick[@]}"
done
