#!/usr/bin/env bash
# The whole test suite on CPython 3.11, 3.12 and 3.13; extra arguments go to pytest.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$PYJIT_ROOT"
bash scripts/system_deps.sh
failed=()
for version in "${PYJIT_PYTHONS[@]}"; do
  echo "=== CPython $version"
  python=$(pyjit_venv "$version") || { failed+=("$version (build)"); continue; }
  # -P keeps the source tree's pyjit/ (which has no built _C) off sys.path.
  "$python" -P -m pytest -q -p no:cacheprovider "$@" || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED on: ${failed[*]}"
  exit 1
fi
