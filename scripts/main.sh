#!/usr/bin/env bash
# The main job: builds pyjit for CPython 3.11 and runs the examples, the frame-hook benchmark
# and the benchmark harness (docs/benchmarks.md), whose table it prints. Arguments go to the
# harness (benchmarks/run.py: --quick, --peers, --json PATH, --engines, --workloads);
# --quick also shortens the frame-hook benchmark.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$PYJIT_ROOT"
python=$(pyjit_venv "${PYJIT_PYTHONS[0]}")
for example in examples/*.py; do
  echo "=== $example"
  "$python" -P "$example"
done
quick=()
for argument in "$@"; do
  if [ "$argument" = --quick ]; then quick=(--quick); fi
done
echo "=== benchmarks/hook_overhead.py"
"$python" -P benchmarks/hook_overhead.py "${quick[@]}"
echo "=== benchmarks/run.py"
"$python" -P benchmarks/run.py "$@"
