#!/usr/bin/env bash
# The whole test suite on each CPython 3.11, 3.12, 3.13 found (scripts/env.sh says where it
# looks; PYJIT_PYTHON=/path/to/python runs one); extra arguments go to pytest.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$PYJIT_ROOT"
bash scripts/system_deps.sh
mapfile -t pythons < <(pyjit_pythons)
[ ${#pythons[@]} -gt 0 ] || exit 1
failed=()
for base in "${pythons[@]}"; do
  echo "=== $base"
  python=$(pyjit_venv "$base" test) || { failed+=("$base (build)"); continue; }
  # -P keeps the source tree's pyjit/ (which has no built _C) off sys.path.
  "$python" -P -m pytest -q -p no:cacheprovider "$@" || failed+=("$base")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED on: ${failed[*]}"
  exit 1
fi
