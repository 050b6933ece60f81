#!/usr/bin/env bash
# System programs some tests use: redis-server (the shared kernel cache's tests) and
# chromium (the compile report's browser test). As root with apt-get, missing ones are
# installed; otherwise this prints what is missing and how to add it, and the tests that
# need it are skipped with that reason. Nothing to do when both are present.
set -uo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "=== installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >&2 \
    || echo "system_deps.sh: could not install ${missing[*]}; their tests will be skipped" >&2
else
  echo "system_deps.sh: ${missing[*]} not found; their tests will be skipped." \
       "To run them: sudo apt-get install ${missing[*]} (Debian/Ubuntu package names)" >&2
fi
exit 0
