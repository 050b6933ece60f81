#!/usr/bin/env bash
# The main job: builds pyjit for CPython 3.11 and runs the examples, the frame-hook benchmark
# and the inductor-against-NumPy benchmark.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$PYJIT_ROOT"
python=$(pyjit_venv "${PYJIT_PYTHONS[0]}")
for example in examples/*.py; do
  echo "=== $example"
  "$python" -P "$example"
done
echo "=== benchmarks/hook_overhead.py"
"$python" -P benchmarks/hook_overhead.py "$@"
echo "=== benchmarks/inductor_cpu.py"
"$python" -P benchmarks/inductor_cpu.py "$@"
