# Sourced by the README's commands: finds the machine's CPythons and builds and installs
# pyjit into one virtual environment per CPython, so a fresh clone needs nothing else.
#
# Which Pythons: $PYJIT_PYTHON (a path) alone when it is set; otherwise python3.11,
# python3.12 and python3.13 from $PATH, then from pyenv's folders ($PYENV_ROOT, else
# ~/.pyenv). The packages each environment gets come from pyproject.toml: the build's
# requirements ([build-system] requires) and one extra of [project.optional-dependencies]
# (`test` for the test suite, `bench` for the main job), so new entries there need no
# change here.
PYJIT_MINORS=(3.11 3.12 3.13)
PYJIT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# _pyjit_minor PYTHON -> "3.X" if PYTHON runs and is a CPython pyjit supports
_pyjit_minor() {
  local minor
  minor=$("$1" -c 'import sys, platform
if platform.python_implementation() == "CPython": print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || return 1
  [[ " ${PYJIT_MINORS[*]} " == *" $minor "* ]] && echo "$minor"
}

# _pyjit_find MINOR -> the path of a working python MINOR: $PATH first, then pyenv's
# folders (the newest patch release there)
_pyjit_find() {
  local minor=$1 candidate
  candidate=$(command -v "python$minor" 2>/dev/null)
  if [ -n "$candidate" ] && [ "$(_pyjit_minor "$candidate")" = "$minor" ]; then
    echo "$candidate"
    return 0
  fi
  local versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
  for candidate in $(ls -d "$versions/$minor".*/ 2>/dev/null | sort -V -r); do
    candidate="${candidate%/}/bin/python$minor"
    if [ "$(_pyjit_minor "$candidate")" = "$minor" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# pyjit_pythons -> the interpreters to use, one a line; says on stderr which are missing,
# and fails when there is none
pyjit_pythons() {
  if [ -n "${PYJIT_PYTHON:-}" ]; then
    if ! _pyjit_minor "$PYJIT_PYTHON" >/dev/null; then
      echo "PYJIT_PYTHON=$PYJIT_PYTHON is not a CPython ${PYJIT_MINORS[*]} that runs" >&2
      return 1
    fi
    echo "$PYJIT_PYTHON"
    return 0
  fi
  local minor found=0 missing=()
  for minor in "${PYJIT_MINORS[@]}"; do
    if _pyjit_find "$minor"; then found=1; else missing+=("$minor"); fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "not found (on PATH or in pyenv's folders), so not used: CPython ${missing[*]}" >&2
  fi
  if [ $found = 0 ]; then
    echo "no CPython ${PYJIT_MINORS[*]} found; install one, or set PYJIT_PYTHON=/path/to/python" >&2
    return 1
  fi
}

# _pyjit_requirements PYTHON SECTION -> one a line: pyproject.toml's build requirements
# and dependencies (SECTION "build"), or one extra's packages
_pyjit_requirements() {
  "$1" - "$PYJIT_ROOT/pyproject.toml" "$2" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as file:
    project = tomllib.load(file)
section = sys.argv[2]
packages = (project["build-system"]["requires"] + project["project"]["dependencies"] if section == "build"
            else project["project"]["optional-dependencies"][section])
print("\n".join(packages))
EOF
}

# pyjit_venv PYTHON|VERSION [EXTRA] -> prints the environment's python after (re)building
# pyjit into it. VERSION (3.11 or 3.11.7) finds that CPython as pyjit_pythons does. EXTRA
# (default test) names the extra installed: `test` goes in .venv-3.X, any other in
# .venv-3.X-EXTRA, so the test environment never holds what only the main job needs.
pyjit_venv() {
  local python=$1 extra=${2:-test} minor
  if [[ "$python" =~ ^3\.[0-9]+(\.[0-9]+)?$ ]]; then
    python=$(_pyjit_find "$(echo "$python" | cut -d. -f1,2)") || {
      echo "CPython $1 not found on PATH or in pyenv's folders" >&2
      return 1
    }
  fi
  minor=$(_pyjit_minor "$python") || { echo "$python is not a CPython ${PYJIT_MINORS[*]}" >&2; return 1; }
  local venv="$PYJIT_ROOT/.venv-$minor"
  [ "$extra" = test ] || venv="$venv-$extra"
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" >&2 || return 1
  fi
  local packages
  mapfile -t packages < <(_pyjit_requirements "$venv/bin/python" build \
                          && _pyjit_requirements "$venv/bin/python" "$extra")
  [ ${#packages[@]} -gt 0 ] || { echo "cannot read $PYJIT_ROOT/pyproject.toml" >&2; return 1; }
  # cmake and ninja: scikit-build-core adds them to isolated builds only.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${packages[@]}" cmake ninja >&2 || return 1
  # The CMake build dir persists under build/, so a rebuild only compiles what changed.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    --no-build-isolation --no-deps "$PYJIT_ROOT" >&2 || return 1
  echo "$venv/bin/python"
}
