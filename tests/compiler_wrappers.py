"""C compilers for the build tests: the system one, wrapped to show how its runs overlap
(tests/codegen/cpu/test_build.py, test_target.py)."""

import shutil
import textwrap


def meeting_compiler(tmp_path, wanted: int):
    """A C compiler (the real one, wrapped) whose kernel compiles each wait, up to 20 s,
    until `wanted` of them have begun, and log `begin` and `end`: (its path, the log).
    Compiles that run one after another log begin, end, begin, end."""
    real = shutil.which("cc") or shutil.which("gcc")
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "meeting-cc"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in *probe.c*|*--version*|*-fsyntax-only*) exec {real} "$@";; esac
        echo begin >> {log}
        tries=0
        while [ "$(grep -c begin {log})" -lt {wanted} ] && [ $tries -lt 200 ]; do sleep 0.1; tries=$((tries + 1)); done
        {real} "$@"
        status=$?
        echo end >> {log}
        exit $status
    """))
    wrapper.chmod(0o700)
    return wrapper, log

