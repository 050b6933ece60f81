# Sourced by the README's commands: builds and installs pyjit into one virtual
# environment per CPython version, so a fresh clone needs nothing but the machine's Pythons.
PYJIT_PYTHONS=(3.11.7 3.12.1 3.13.0)
PYJIT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# pyjit_venv VERSION -> prints the venv's python after (re)building pyjit into it
pyjit_venv() {
  local version=$1 minor=${1%.*}
  local base="${PYJIT_PYTHON_ROOT:-/root/.pyenv/versions}/$version/bin/python$minor"
  local venv="$PYJIT_ROOT/.venv-$minor"
  if [ ! -x "$venv/bin/python" ]; then
    "$base" -m venv "$venv" >&2 || return 1
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "scikit-build-core>=0.10" "pybind11>=2.13" "numpy>=2.0" "pytest>=8" cmake ninja >&2 || return 1
  # The CMake build dir persists under build/, so a rebuild only compiles what changed.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    --no-build-isolation --no-deps "$PYJIT_ROOT" >&2 || return 1
  echo "$venv/bin/python"
}
