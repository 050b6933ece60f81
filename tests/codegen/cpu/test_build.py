"""pyjit.codegen.cpu.build: compiling C source, the disk cache and its defences."""

import contextlib
import hashlib
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import pyjit
from pyjit import config
from pyjit.codegen.cpu import build
from pyjit.exc import PyjitError
from pyjit.utils import counters

from compiler_wrappers import meeting_compiler

if shutil.which("cc") is None and shutil.which("gcc") is None:
    pytest.skip("no C compiler", allow_module_level=True)

KERNEL = """\
#include <stdint.h>
void shift(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0];
  double *out = (double *)buffers[1];
  for (int64_t i = 0; i < sizes[0]; ++i) out[i] = x[i] + OFFSET;
}
"""
# Children import the pyjit this test imported: the installed one, or the source tree under PYTHONPATH.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(pyjit.__file__))


def source(offset):
    return KERNEL.replace("OFFSET", f"{offset:.1f}")


def offset_of(library):
    """What the library's `shift` kernel adds (each library adds a different constant)."""
    x, out = np.arange(4.0), np.empty(4)
    library.kernel("shift", 2, 1)(x, out, 4)
    (offset,) = set(out - x)
    return offset


def inductor_counts():
    return {name: counters["inductor"][name] for name in ("compiles", "disk_hits", "compiler_probes")}


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def use_cache(tmp_path):
    """use_cache(directory=tmp_path/'cache') -> its kernels/ directory, for this test;
    nothing loaded earlier in the process is remembered, and the counters start at 0."""
    with contextlib.ExitStack() as patches:

        def use(directory=tmp_path / "cache"):
            build.reset()
            counters.pop("inductor", None)
            patches.enter_context(config.patch(cache_dir=str(directory)))
            return directory / "kernels"

        yield use
    build.reset()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A cache directory holding the kernels of source(1) (good) and source(100) (evil)."""
    directory = tmp_path_factory.mktemp("template") / "cache"
    with config.patch(cache_dir=str(directory)):
        good, evil = build.load(source(1)).path, build.load(source(100)).path
    build.reset()
    return directory, os.path.basename(good), os.path.basename(evil)


def test_compile_load_and_run(use_cache, tmp_path):
    kernels = use_cache(tmp_path / "new" / "parents" / "cache")
    library = build.load(source(1))
    assert offset_of(library) == 1.0
    assert inductor_counts()["compiles"] == 1 and inductor_counts()["disk_hits"] == 0
    so = library.path
    assert os.path.dirname(so) == str(kernels)
    assert Path(so.removesuffix(".so") + ".c").read_text() == source(1)  # kept for debugging
    digest = hashlib.sha256(Path(so).read_bytes()).hexdigest()
    assert Path(so + ".sha256").read_text() == f"{digest}  {os.path.basename(so)}\n"
    assert mode(so) == 0o700 and mode(so + ".sha256") == 0o600
    for directory in (kernels, kernels.parent, kernels.parent.parent, kernels.parent.parent.parent):
        assert mode(directory) == 0o700, directory
    assert sorted(name for name in os.listdir(kernels) if name.startswith(".")) == []  # no temporaries


def test_second_load_in_the_same_process_is_free(use_cache):
    use_cache()
    library = build.load(source(1))
    before = inductor_counts()
    assert build.load(source(1)) is library
    assert inductor_counts() == before
    assert offset_of(build.load(source(2))) == 2.0
    build.reset()
    reloaded = build.load(source(1))
    assert reloaded is not library and offset_of(reloaded) == 1.0
    assert inductor_counts() == {**before, "compiles": 2, "disk_hits": 1}


def test_a_second_process_loads_from_disk_without_the_compiler(use_cache, tmp_path):
    use_cache()
    build.load(source(1))
    child = textwrap.dedent(f"""
        import json, time
        start = time.perf_counter()
        from pyjit.codegen.cpu import build
        from pyjit.utils import counters
        imported = time.perf_counter()
        library = build.load({source(1)!r})
        kernel = library.kernel("shift", 2, 1)
        loaded = time.perf_counter()
        import numpy as np
        x, out = np.arange(3.0), np.empty(3)
        kernel(x, out, 3)
        print(json.dumps({{"counters": dict(counters["inductor"]), "out": out.tolist(),
                          "load_ms": 1e3 * (loaded - imported), "import_ms": 1e3 * (imported - start)}}))
    """)
    environment = {**os.environ, "PYJIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": PACKAGE_PARENT}
    result = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True, text=True, env=environment,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["counters"] == {"disk_hits": 1}  # no compile, no toolchain probe
    assert report["out"] == [1.0, 2.0, 3.0]


def write_sidecar(library_path, content_path=None):
    """A sidecar for `library_path` that matches the bytes of `content_path` (default: its own)."""
    digest = hashlib.sha256(Path(content_path or library_path).read_bytes()).hexdigest()
    with open(library_path + ".sha256", "w") as file:
        file.write(f"{digest}  {os.path.basename(library_path)}\n")


def spoil_with_evil(sidecar=True, chmod=None, owner=None):
    def spoil(good, evil):
        shutil.copyfile(evil, good)
        if sidecar:
            write_sidecar(good)
        if chmod is not None:
            os.chmod(good, chmod)
        if owner is not None:
            os.chown(good, owner, -1)
    return spoil


def spoil_with_garbage(sidecar):
    def spoil(good, evil):
        with open(good, "wb") as file:
            file.write(b"\x7fELF not really" * 100)
        if sidecar:
            write_sidecar(good)
    return spoil


def spoil_with_symlink(good, evil):
    os.unlink(good)
    os.symlink(evil, good)
    write_sidecar(good, evil)


def drop_sidecar(good, evil):
    os.unlink(good + ".sha256")


SPOILERS = {
    "corrupt": spoil_with_garbage(sidecar=False),
    "corrupt_with_matching_sidecar": spoil_with_garbage(sidecar=True),  # dlopen refuses it
    "group_writable": spoil_with_evil(chmod=0o720),
    "other_writable": spoil_with_evil(chmod=0o702),
    "symlink": spoil_with_symlink,
    "sidecar_mismatch": spoil_with_evil(sidecar=False),
    "sidecar_missing": drop_sidecar,
    "foreign_owner": spoil_with_evil(owner=12345),
}


@pytest.mark.parametrize("spoiler", SPOILERS)
def test_an_untrusted_cache_file_is_rebuilt_never_loaded(use_cache, template, tmp_path, spoiler):
    if spoiler == "foreign_owner" and os.geteuid() != 0:
        pytest.skip("only root can give a file away")
    template_directory, good_name, evil_name = template
    shutil.copytree(template_directory, tmp_path / "cache")
    kernels = use_cache()
    good, evil = str(kernels / good_name), str(kernels / evil_name)
    SPOILERS[spoiler](good, evil)
    library = build.load(source(1))
    assert offset_of(library) == 1.0  # the evil kernel would add 100
    assert inductor_counts()["compiles"] == 1 and inductor_counts()["disk_hits"] == 0
    assert stat.S_ISREG(os.lstat(good).st_mode) and mode(good) == 0o700
    assert os.lstat(good).st_uid == os.geteuid()
    assert Path(good + ".sha256").read_text().split()[0] == hashlib.sha256(Path(good).read_bytes()).hexdigest()


def make_insecure(kernels, problem):
    kernels.parent.mkdir()
    if problem == "is not a directory":
        kernels.write_text("")
        return
    kernels.mkdir()
    if problem == "is writable by others":
        kernels.chmod(0o777)
    else:
        os.chown(kernels, 12345, -1)


@pytest.mark.parametrize("problem", ["is writable by others", "belongs to another user", "is not a directory"])
def test_an_insecure_cache_directory_warns_and_uses_a_private_one(use_cache, problem):
    if problem == "belongs to another user" and os.geteuid() != 0:
        pytest.skip("only root can give a directory away")
    kernels = use_cache()
    make_insecure(kernels, problem)
    with pytest.warns(UserWarning, match=f"kernel cache directory {kernels} {problem}"):
        library = build.load(source(1))
    assert offset_of(library) == 1.0
    fallback = os.path.dirname(library.path)
    assert not fallback.startswith(str(kernels.parent)) and mode(fallback) == 0o700
    assert build.load(source(1)) is library  # decided once: no second warning


@contextlib.contextmanager
def mounted_read_only(directory):
    """`directory` seen through a read-only bind mount of itself, as a cache in a
    container image or on a shared read-only volume is."""
    subprocess.run(["mount", "--bind", directory, directory], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", directory], check=True, capture_output=True)
        yield
    finally:
        # Lazily: this process may keep a library of the mount loaded (mapped).
        subprocess.run(["umount", "--lazy", directory], check=True, capture_output=True)


@contextlib.contextmanager
def without_write_permission(directory):
    kernels = directory / "kernels"
    kernels.chmod(0o500)  # passes the owner and mode checks (no one else may write)
    try:
        yield
    finally:
        kernels.chmod(0o700)


def read_only(kind, directory):
    """`directory` (a cache directory) made unwritable the way `kind` says, for a with block."""
    if kind == "read-only mount":
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("a bind mount needs root and mount(8); the 'no write permission' variant runs instead")
        if subprocess.run(["mount", "--bind", directory, directory], capture_output=True).returncode != 0:
            pytest.skip("mount(8) is refused here (no CAP_SYS_ADMIN)")
        subprocess.run(["umount", directory], check=True, capture_output=True)
        return mounted_read_only(directory)
    if os.geteuid() == 0:
        pytest.skip("root writes through permission bits; the 'read-only mount' variant runs instead")
    return without_write_permission(directory)


UNWRITABLE = ["read-only mount", "no write permission"]


@pytest.mark.parametrize("kind", UNWRITABLE)
def test_a_filled_cache_that_cannot_be_written_still_loads_and_new_kernels_go_elsewhere(use_cache, template, tmp_path,
                                                                                       kind):
    directory, good, _ = template
    shutil.copytree(directory, tmp_path / "cache")
    kernels = use_cache(tmp_path / "cache")
    before = sorted(os.listdir(kernels))
    with read_only(kind, tmp_path / "cache"):
        with pytest.warns(UserWarning, match=f"kernel cache directory {kernels} cannot be written .* still load") \
                as warned:
            cached = build.load(source(1))
            fresh = [build.load(source(offset)) for offset in (7, 8)]
        assert len(warned) == 1
        assert cached.path == str(kernels / good) and offset_of(cached) == 1.0
        assert [offset_of(library) for library in fresh] == [7.0, 8.0]
        assert not any(library.path.startswith(str(tmp_path)) for library in fresh)
        assert (counters["inductor"]["disk_hits"], counters["inductor"]["compiles"]) == (1, 2)
        assert sorted(os.listdir(kernels)) == before


READ_ONLY_WORKER = textwrap.dedent("""
    import json, pickle, sys, warnings
    import numpy as np, pyjit
    from pyjit.utils import counters
    import shipped_kernels

    x = np.linspace(-1, 1, 64)
    model = pyjit.nn.Sequential(pyjit.nn.Linear(4, 8, dtype=np.float64), pyjit.nn.Tanh(),
                                pyjit.nn.Linear(8, 3, dtype=np.float64))
    inputs = pyjit.tensor(np.arange(8.0).reshape(2, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cached = pyjit.compile(shipped_kernels.cached)(x)
        travelled = pickle.loads(bytes.fromhex(sys.argv[1]))(x)
        module = pyjit.compile(model)(inputs).numpy()
    print(json.dumps({"warnings": [str(warning.message) for warning in caught],
                      "counters": dict(counters["inductor"]),
                      "cached": np.allclose(cached, np.exp(x) * 2 - 1, rtol=1e-12),
                      "travelled": np.allclose(travelled, np.tanh(x) + x * 3, rtol=1e-12),
                      "module": np.allclose(module, model(inputs).numpy(), rtol=1e-12)}))
""")
SHIPPED_KERNELS = textwrap.dedent("""
    import numpy as np

    def cached(x):
        return np.exp(x) * 2 - 1

    def travelling(x):
        return np.tanh(x) + x * 3
""")


@pytest.mark.parametrize("kind", UNWRITABLE)
def test_a_worker_whose_cache_cannot_be_written_compiles_modules_and_shipped_functions(tmp_path, monkeypatch, kind):
    (tmp_path / "shipped_kernels.py").write_text(SHIPPED_KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import shipped_kernels
    cache = tmp_path / "cache"
    build.reset()
    try:
        with config.patch(cache_dir=str(cache)):
            pyjit.compile(shipped_kernels.cached)(np.linspace(-1, 1, 64))  # the worker finds this kernel
        shipped = pickle.dumps(pyjit.compile(shipped_kernels.travelling)).hex()
    finally:
        build.reset()
        sys.modules.pop("shipped_kernels", None)
    environment = {**os.environ, "PYJIT_CACHE_DIR": str(cache),
                   "PYTHONPATH": os.pathsep.join([PACKAGE_PARENT, str(tmp_path)])}
    with read_only(kind, cache):
        result = subprocess.run([sys.executable, "-P", "-c", READ_ONLY_WORKER, shipped], capture_output=True,
                                text=True, env=environment, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["cached"] and report["travelled"] and report["module"]
    assert report["counters"]["disk_hits"] >= 1 and report["counters"]["compiles"] >= 2
    (warning,) = report["warnings"]
    assert f"{cache / 'kernels'} cannot be written" in warning


def test_no_compiler_raises_compiler_unavailable(use_cache, monkeypatch, tmp_path):
    use_cache()
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(build.CompilerUnavailable, match="no C compiler found: none of .*no-such-cc, cc, gcc"):
        build.load(source(1))
    with pytest.raises(build.CompilerUnavailable):
        build.flags()
    assert issubclass(build.CompilerUnavailable, PyjitError)


def test_a_compiler_that_builds_nothing_is_unavailable(use_cache, monkeypatch):
    use_cache()
    monkeypatch.setenv("CC", "false")
    with pytest.raises(build.CompilerUnavailable, match="builds no loadable shared library"):
        build.load(source(1))


def test_flags_fall_back_when_the_compiler_refuses_some(use_cache, monkeypatch, tmp_path):
    use_cache()
    real = shutil.which("cc") or shutil.which("gcc")
    wrapper = tmp_path / "picky-cc"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        for flag in "$@"; do
          case "$flag" in -march=native|-fopenmp) echo "picky-cc: no $flag" >&2; exit 1;; esac
        done
        exec {real} "$@"
    """))
    wrapper.chmod(0o700)
    monkeypatch.setenv("CC", str(wrapper))
    flags = build.flags()
    assert flags[0] == str(wrapper)
    assert "-fopenmp-simd" in flags and "-march=native" not in flags and "-fopenmp" not in flags
    assert offset_of(build.load(source(1))) == 1.0
    assert inductor_counts()["compiler_probes"] == 1


def test_flags_keep_numpy_semantics(use_cache):
    use_cache()
    flags = build.flags()
    assert os.path.isabs(flags[0])
    for flag in ("-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-fno-builtin", "-fPIC", "-shared",
                 "-lm"):
        assert flag in flags
    assert not any("fast-math" in flag or flag == "-Ofast" for flag in flags)


def test_broken_source_raises_build_error_with_the_compilers_message(use_cache):
    kernels = use_cache()
    broken = "void broken(void) { this is not C; }\n"
    with pytest.raises(build.BuildError, match="error") as info:
        build.load(broken)
    (saved,) = [name for name in os.listdir(kernels) if name.endswith(".c")]
    assert str(kernels / saved) in str(info.value)
    assert (kernels / saved).read_text() == broken
    assert not [name for name in os.listdir(kernels) if name.endswith(".so") or name.startswith(".")]
    assert inductor_counts()["compiles"] == 1


@pytest.mark.parametrize("corrupt", ["{", "[" * 100_000 + "]" * 100_000])
def test_a_corrupt_toolchain_record_costs_a_probe_not_a_wrong_key(use_cache, monkeypatch, tmp_path, corrupt):
    kernels = use_cache()
    build.load(source(1))
    (record,) = kernels.glob("toolchain-*.json")
    expected = json.loads(record.read_text())
    record.write_text(corrupt)
    build.reset()
    counters.pop("inductor")
    # A different $PATH makes this process look for its compiler again.
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}{os.environ['PATH']}")
    assert offset_of(build.load(source(1))) == 1.0
    assert inductor_counts() == {"compiles": 0, "disk_hits": 1, "compiler_probes": 1}
    assert json.loads(record.read_text()) == expected


@pytest.mark.parametrize(("user", "seen"), [
    ({}, ["PASSIVE", "1000"]),  # a bounded spin, then sleep
    ({"OMP_WAIT_POLICY": "active"}, ["ACTIVE", None]),
    ({"GOMP_SPINCOUNT": "50"}, ["PASSIVE", "50"])])
def test_openmp_threads_spin_briefly_then_sleep_unless_the_user_says_otherwise(tmp_path, user, seen):
    """NOTE(omp-wait-policy): what libgomp read when the first kernel library loaded it
    (its own report, omp_display_env), while the process's environment stays the user's."""
    child = textwrap.dedent(f"""
        import ctypes, json, os, sys
        before = dict(os.environ)
        from pyjit.codegen.cpu import build
        build.load({source(2)!r})
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        c_environment = [libc.getenv(name.encode()) for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")]
        print(json.dumps([dict(os.environ) == before, [value and value.decode() for value in c_environment]]))
        sys.stdout.flush()
        ctypes.CDLL("libgomp.so.1").omp_display_env(1)
    """)
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environment |= {"PYJIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": PACKAGE_PARENT} | user
    result = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True, text=True, env=environment,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    unchanged, c_environment = json.loads(result.stdout)
    assert unchanged and c_environment == [user.get("OMP_WAIT_POLICY"), user.get("GOMP_SPINCOUNT")]
    report = dict(re.findall(r"^\s*(OMP_WAIT_POLICY|GOMP_SPINCOUNT) = '([^']*)'", result.stderr, re.MULTILINE))
    assert report["OMP_WAIT_POLICY"] == seen[0]
    if seen[1] is not None:
        assert report["GOMP_SPINCOUNT"] == seen[1]


def test_a_toolchain_record_probed_for_other_flags_is_probed_again(use_cache, monkeypatch, tmp_path):
    use_cache()
    build.load(source(1))
    build.reset()
    counters.pop("inductor")
    monkeypatch.setattr(build, "PREFERRED_FLAGS", (*build.PREFERRED_FLAGS, "-fno-common"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}{os.environ['PATH']}")  # look again
    assert "-fno-common" in build.flags()  # not the record of the flags asked for before
    assert inductor_counts()["compiler_probes"] == 1


def long_source(statements):
    """A kernel adding 1 `statements` times in one straight-line loop body (NOTE(long-kernels))."""
    body = "".join(f"    v = v + 1.0;\n" for _ in range(statements))
    return KERNEL.replace("out[i] = x[i] + OFFSET;", f"{{\n    double v = x[i];\n{body}    out[i] = v;\n  }}")


def require_long_kernel_flags():
    """The tests of which kernels get the flags need a compiler that takes them (GCC)."""
    if "-fno-tree-pta" not in build.flags(long_source(build.LONG_BODY_STATEMENTS)):
        pytest.skip("this C compiler does not take -fno-tree-pta (Clang refuses it)")


def logging_compiler(tmp_path, refused=None, warned=None):
    """$CC for a wrapper of the real compiler that logs each command line it gets, fails
    on `refused` and warns about (then drops) `warned`, as Clang does with GCC flags."""
    real = shutil.which("cc") or shutil.which("gcc")
    wrapper, log = tmp_path / "logging-cc", tmp_path / "cc.log"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$*" >> {log}
        for flag in "$@"; do shift; case "$flag" in
          {refused or "-refused-"}) echo "logging-cc: unknown argument $flag" >&2; exit 1;;
          {warned or "-warned-"}) echo "logging-cc: warning: $flag is ignored" >&2;;
          *) set -- "$@" "$flag";;
        esac; done
        exec {real} "$@"
    """))
    wrapper.chmod(0o700)
    return str(wrapper), log


def compiled_with(log, source_path):
    """The flags of the compile of `source_path` in the log."""
    (line,) = [line for line in log.read_text().splitlines() if line.endswith(f"{source_path} -lm")]
    return line.split()


def test_only_a_long_kernel_skips_points_to_analysis(use_cache, monkeypatch, tmp_path):
    kernels = use_cache()
    require_long_kernel_flags()
    compiler, log = logging_compiler(tmp_path)
    monkeypatch.setenv("CC", compiler)
    long, short = build.load(long_source(build.LONG_BODY_STATEMENTS)), build.load(long_source(10))
    x, out = np.arange(4.0), np.empty(4)
    long.kernel("shift", 2, 1)(x, out, 4)
    np.testing.assert_array_equal(out, x + build.LONG_BODY_STATEMENTS)
    assert "-fno-tree-pta" in compiled_with(log, Path(long.path).with_suffix(".c"))
    assert "-fno-tree-pta" not in compiled_with(log, Path(short.path).with_suffix(".c"))
    assert "-fno-tree-pta" in build.flags(long_source(build.LONG_BODY_STATEMENTS))
    assert "-fno-tree-pta" not in build.flags()
    assert sorted(kernels.glob("*.so")) == sorted({Path(long.path), Path(short.path)})


def test_the_same_source_with_other_flags_is_another_kernel(use_cache, monkeypatch):
    """The long-kernel flags are part of the key: a cache filled under one threshold
    never hands its library to a process that compiles the source without them."""
    use_cache()
    require_long_kernel_flags()
    text = long_source(30)
    monkeypatch.setattr(build, "LONG_BODY_STATEMENTS", 20)
    with_flags = build.load(text).path
    build.reset()
    monkeypatch.setattr(build, "LONG_BODY_STATEMENTS", 1000)
    without = build.load(text).path
    assert with_flags != without
    assert inductor_counts()["compiles"] == 2
    build.reset()
    assert build.load(text).path == without
    assert (inductor_counts()["compiles"], inductor_counts()["disk_hits"]) == (2, 1)


@pytest.mark.parametrize("answer", ["refused", "warned"])
def test_a_compiler_that_does_not_take_the_long_kernel_flags_is_not_given_them(use_cache, monkeypatch, tmp_path,
                                                                               answer):
    use_cache()
    compiler, log = logging_compiler(tmp_path, **{answer: "-fno-tree-pta"})
    monkeypatch.setenv("CC", compiler)
    library = build.load(long_source(build.LONG_BODY_STATEMENTS))
    x, out = np.arange(4.0), np.empty(4)
    library.kernel("shift", 2, 1)(x, out, 4)
    np.testing.assert_array_equal(out, x + build.LONG_BODY_STATEMENTS)
    assert "-fno-tree-pta" not in compiled_with(log, Path(library.path).with_suffix(".c"))
    assert "-fno-tree-pta" not in build.flags(long_source(build.LONG_BODY_STATEMENTS))


def test_a_long_chain_compiles_into_one_kernel_that_matches_numpy(use_cache):
    use_cache()
    ops = build.LONG_BODY_STATEMENTS + 100
    lines = ["def chain(x):"] + ["    x = x * 0.5" if step % 2 == 0 else "    x = x + 1.0" for step in range(ops)]
    namespace = {}
    exec(compile("\n".join([*lines, "    return x", ""]), "<chain>", "exec"), namespace)
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    result = pyjit.compile(namespace["chain"])(x)
    np.testing.assert_allclose(result, namespace["chain"](x), rtol=1e-6, atol=1e-6)
    assert counters["inductor"]["kernels"] == 1
    (source_path,) = Path(config.cache_dir, "kernels").glob("*.c")
    require_long_kernel_flags()
    assert "-fno-tree-pta" in build.flags(source_path.read_text())


def test_started_sources_compile_at_the_same_time(use_cache, monkeypatch, tmp_path):
    use_cache()
    compiler, log = meeting_compiler(tmp_path, wanted=2)
    monkeypatch.setenv("CC", str(compiler))
    build.start(source(1))
    build.start(source(2))
    assert offset_of(build.load(source(2))) == 2.0 and offset_of(build.load(source(1))) == 1.0
    assert log.read_text().split() == ["begin", "begin", "end", "end"]
    assert inductor_counts()["compiles"] == 2 and inductor_counts()["disk_hits"] == 0


def loads_on_threads(sources):
    """build.load of each source on a thread of its own: what each returned or raised."""
    results = [None] * len(sources)

    def load(index):
        try:
            results[index] = build.load(sources[index])
        except Exception as error:
            results[index] = error

    workers = [threading.Thread(target=load, args=(index,)) for index in range(len(sources))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    return results


def test_threads_loading_different_sources_compile_them_at_the_same_time(use_cache, monkeypatch, tmp_path):
    use_cache()
    compiler, log = meeting_compiler(tmp_path, wanted=2)
    monkeypatch.setenv("CC", str(compiler))
    build.flags()  # the toolchain probe, before the threads
    first, second = loads_on_threads([source(1), source(2)])
    assert offset_of(first) == 1.0 and offset_of(second) == 2.0
    assert log.read_text().split() == ["begin", "begin", "end", "end"]


def test_threads_loading_one_source_share_one_compile(use_cache):
    use_cache()
    libraries = loads_on_threads([source(1)] * 4)
    assert all(library is libraries[0] for library in libraries) and offset_of(libraries[0]) == 1.0
    assert inductor_counts()["compiles"] == 1


def test_a_failed_background_compile_raises_at_its_load_and_spares_the_others(use_cache):
    kernels = use_cache()
    broken = "void broken(void) { this is not C; }\n"
    build.start(broken)
    build.start(source(1))
    with pytest.raises(build.BuildError, match=r"(?s)the C compiler failed on generated source .*error") as info:
        build.load(broken)
    assert str(kernels) in str(info.value)
    assert offset_of(build.load(source(1))) == 1.0
    with pytest.raises(build.BuildError):  # compiled again: a failure is not kept
        build.load(broken)
    assert inductor_counts()["compiles"] == 3
    assert not [name for name in os.listdir(kernels) if name.startswith(".")]  # no temporaries


def test_a_started_source_found_on_disk_is_a_disk_hit(use_cache):
    use_cache()
    build.load(source(1))
    build.reset()
    build.start(source(1))
    assert offset_of(build.load(source(1))) == 1.0
    assert inductor_counts()["compiles"] == 1 and inductor_counts()["disk_hits"] == 1
