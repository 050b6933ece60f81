"""pyjit's settings, as module attributes: read them where they matter, set them or
`patch` them for a block or a function.

    pyjit.config.recompile_limit = 4
    with pyjit.config.patch(verbose=True): ...
    @pyjit.config.patch(automatic_dynamic_shapes=False)
    def test(): ...

Settings are process-wide (not per thread); code reads them when it needs them, so a
change applies to what is compiled or run after it.

NOTE(config-checks): a value is checked when it is set (assignment or `patch`), so a
wrong one fails at the line that set it, with the setting's name, not later inside a
compile: each setting takes the type of its default (a bool, an int, a number, a
string, a path for the directories) and `remote_cache` a redis://HOST:PORT/DB address.
A wrong value from an environment variable warns once at import and is not used.
"""

import contextlib
import os
import re
import sys
import types
import urllib.parse
import warnings

# Names in the module so far (dunders and imports); every later public name but the
# functions is a setting, so the list of settings is never typed twice.
_NOT_SETTINGS = frozenset(globals())

recompile_limit = 8
"""Cache entries one code object may hold. Beyond it, existing entries keep serving and
new variants run eagerly, with a warning saying why."""

verbose = False
"""Put pyjit's own traceback in the errors it raises for the user: where the interpreter
stopped (`fullgraph=True`'s Unsupported) and what the backend raised
(BackendCompilerFailed). NOTE(verbose) in pyjit/frontend/convert.py."""

verify_correctness = False
"""Run every graph compiled while it is on eagerly too, on each call, and raise
pyjit.exc.AccuracyError where the results differ (slow; for debugging).
NOTE(verify-correctness) in pyjit/frontend/verify.py."""

assume_static_by_default = True
"""Compile for the sizes first seen; a size becomes symbolic only after it changes. False:
every size of 2 or more is symbolic from the first compile (as `dynamic=True`), except
where the code needs its sizes as numbers (NOTE(static-retry))."""

automatic_dynamic_shapes = True
"""When a size guard fails, recompile with that size symbolic (`s0`) rather than for the
new static size."""

replay_side_effects = True
"""Replay the captured code's side effects on Python state (attribute, list and dict
mutations) after a compiled graph runs; False leaves them undone."""

compiled_autograd = False
"""Capture each `backward()` run inside compiled code whole, as one graph."""

unroll_limit = 5000
"""Instructions one trace may interpret while unrolling loops (inlined calls included).
A loop that goes past it is a graph break: the graph so far runs and the rest of the
loop runs in Python."""

capture_loops = True
"""Capture a `for` loop over a range whose body is array code as one loop node, traced
once (NOTE(loop-capture) in pyjit/frontend/loops.py); False unrolls every loop."""

aot_partitioner = None
"""How compiled graphs with inputs that require grad are cut into a forward and a
backward graph: "default" (save what the backward reads) or "min_cut" (save the
cheapest set, recompute pointwise chains in the backward: docs/autograd.md). None lets
the backend choose: `aot_eager` uses "default", `inductor` "min_cut", as torch.compile's do."""

aot_memory_budget = 1.0
"""For the "min_cut" partitioner: the most it may save, as a fraction of what "default"
saves; below 1, reductions and then matrix products are recomputed in the backward too
when that is what it takes (docs/autograd.md, the cost model)."""

kernel_march = "native"
"""The `-march=` target compiled kernels are built for. "native" is this CPU (its full
vector width); a named level such as "x86-64-v2" gives kernels that any CPU of that
level runs. It must be a target this CPU can run: the compiler probe runs a kernel."""


def _default_cache_dir() -> str:
    if os.environ.get("PYJIT_CACHE_DIR"):
        return os.environ["PYJIT_CACHE_DIR"]
    # The XDG spec says a relative XDG_CACHE_HOME is to be ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pyjit")


cache_dir = _default_cache_dir()
"""Where compiled artifacts persist between processes (compiled kernels go in its
`kernels/` subdirectory, which only the user may write). Default: $PYJIT_CACHE_DIR,
else $XDG_CACHE_HOME/pyjit, else ~/.cache/pyjit, read when pyjit is imported."""

trace_dir = os.environ.get("PYJIT_TRACE_DIR") or None
"""A directory where compiled frames, graphs, guards, breaks, recompiles, kernels and
compile times are written as JSON lines (NOTE(trace) in pyjit/trace.py), for
`python -m pyjit.report DIR`. None: nothing is written. Default: $PYJIT_TRACE_DIR."""

remote_cache = os.environ.get("PYJIT_REMOTE_CACHE") or None
"""A Redis server, `redis://HOST:PORT/DB`, that compiled kernels are shared through
after the disk cache (NOTE(remote-cache) in pyjit/codegen/remote.py); entries are signed
with the key in $PYJIT_REMOTE_CACHE_KEY, and without one the remote cache is off, with a
warning. None: no remote cache. Default: $PYJIT_REMOTE_CACHE."""

blas_threads = os.environ.get("PYJIT_BLAS_THREADS") or "openmp"
"""Where NumPy's OpenBLAS runs its jobs once the CPU target has loaded kernels:
"openmp", on the kernels' OpenMP team, so one set of threads serves both (NOTE(blas-pool)
in pyjit/codegen/cpu/threads.py); "openblas", on OpenBLAS's own pool, as without pyjit.
Read each time kernels are loaded. Default: $PYJIT_BLAS_THREADS, else "openmp"."""

_SETTINGS = tuple(sorted(name for name in set(globals()) - _NOT_SETTINGS
                         if not name.startswith("_")))


def patch(changes=None, /, **settings):
    """Set some settings for a `with` block or for each call of a decorated function,
    putting the previous values back afterwards, also when it raises.

    Takes keyword arguments, or a dict as torch's `config.patch` does. Unknown names
    raise AttributeError at once.
    """
    settings = {**(changes or {}), **settings}
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise AttributeError(f"pyjit.config has no setting {', '.join(map(repr, unknown))}; "
                             f"the settings are {', '.join(_SETTINGS)}")
    for name, value in settings.items():
        _check(name, value)
    return _patched(settings)


@contextlib.contextmanager
def _patched(settings):
    # A generator context manager, so each decorated call saves and restores on its own
    # (recursion included) rather than sharing one saved state.
    saved = {name: globals()[name] for name in settings}
    globals().update(settings)
    try:
        yield
    finally:
        globals().update(saved)


# ---- checking values (NOTE(config-checks)) ------------------------------------------

_PATHS = ("cache_dir", "trace_dir")
_OPTIONAL = {"trace_dir", "remote_cache", "aot_partitioner"}  # None: off, or the backend's choice


def _check(name: str, value) -> None:
    """Raise TypeError or ValueError, naming the setting, if `value` cannot be `name`."""
    if value is None and name in _OPTIONAL:
        return
    default = _DEFAULTS[name]
    if name in _PATHS:
        expected, wanted = (str, os.PathLike), "a path (str)"
    elif isinstance(default, bool):
        expected, wanted = bool, "True or False"
    elif isinstance(default, int):
        expected, wanted = int, "an int"
    elif isinstance(default, float):
        expected, wanted = (int, float), "a number"
    else:
        expected, wanted = str, "a string"
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        raise TypeError(f"pyjit.config.{name} must be {wanted}{' or None' if name in _OPTIONAL else ''}, "
                        f"not {type(value).__name__} {value!r}")
    if name == "remote_cache":
        redis_address(value)


def redis_address(url: str) -> tuple[str, int, int, str | None]:
    """(host, port, database, password) of a redis://[:PASSWORD@]HOST[:PORT][/DB]
    address; ValueError naming config.remote_cache if it is not one."""
    problem = None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when not a number in 0..65535
    except ValueError as error:
        parts, port, problem = None, None, str(error)
    if problem is None and (parts.scheme != "redis" or not parts.hostname):
        problem = "it is not a redis://HOST:PORT/DB address"
    elif problem is None and port == 0:
        problem = "port 0 is no server's port"
    database = parts.path.strip("/") if parts else ""
    if problem is None and database and not (database.isascii() and database.isdigit()):
        problem = f"the database {database!r} is not a number"
    if problem is not None:
        shown = re.sub(r"(//[^/@]*:)[^/@]*@", r"\1***@", url)  # no password in messages
        raise ValueError(f"pyjit.config.remote_cache (PYJIT_REMOTE_CACHE) {shown!r}: {problem}")
    return parts.hostname, port or 6379, int(database or 0), parts.password


class _CheckedSettings(types.ModuleType):
    """This module's type: setting a setting checks the value first."""

    def __setattr__(self, name, value):
        if name in _SETTINGS:
            _check(name, value)
        super().__setattr__(name, value)


_DEFAULTS = {name: globals()[name] for name in _SETTINGS}
_DEFAULTS.update(trace_dir="", remote_cache="")
if remote_cache is not None:
    try:
        _check("remote_cache", remote_cache)
    except ValueError as error:
        warnings.warn(f"pyjit: {error}; the remote kernel cache is off", stacklevel=2)
        remote_cache = None
if vars(sys.modules.get(__name__, sys)) is globals():  # not when a test runs a fresh copy
    sys.modules[__name__].__class__ = _CheckedSettings
