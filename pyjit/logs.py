"""pyjit's logs: named `logging` loggers, off until PYJIT_LOGS or `set_logs` turns them on.

NOTE(logs): each name of LOG_NAMES is the logger `pyjit.<name>` (`get_logger(name)`).
They are off by default. The environment variable PYJIT_LOGS, a comma-separated list of
names read when pyjit is imported (`PYJIT_LOGS=output_code,graph_breaks`), or
`pyjit.set_logs(output_code=True, ...)` turns some on: an enabled log writes its DEBUG
records and up, as `[pyjit.<name>] message`, to whatever `sys.stderr` is at the time;
a disabled one writes nothing. `set_logs` sets every log at once, as
`torch._logging.set_logs` does: the names given True are on, every other one is off, so
`set_logs()` turns them all off. An unknown name is a ValueError that lists the valid
ones (from PYJIT_LOGS, a warning: importing pyjit does not fail over a typo).
Code that logs something costly to build checks `enabled(name)` first.
"""

import logging
import os
import sys
import warnings

LOG_NAMES = ("graph_code", "graph_breaks", "guards", "recompiles", "recompiles_verbose", "bytecode",
             "output_code", "aot_graphs", "compiled_autograd", "compiled_autograd_verbose", "dynamic")
_OFF = logging.CRITICAL + 1


class _StderrHandler(logging.StreamHandler):
    """A StreamHandler writing to the current sys.stderr (so pytest's capture sees it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


_root = logging.getLogger("pyjit")
_root.propagate = False
if not any(isinstance(handler, _StderrHandler) for handler in _root.handlers):
    _handler = _StderrHandler()
    _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    _root.addHandler(_handler)


def _check(names) -> None:
    unknown = sorted(set(names) - set(LOG_NAMES))
    if unknown:
        raise ValueError(f"unknown log name(s) {', '.join(map(repr, unknown))}; "
                         f"the logs are {', '.join(LOG_NAMES)}")


def get_logger(name: str) -> logging.Logger:
    """The logger of the log `name`."""
    _check([name])
    return logging.getLogger(f"pyjit.{name}")


def enabled(name: str) -> bool:
    return get_logger(name).isEnabledFor(logging.DEBUG)


def set_logs(**logs: bool) -> None:
    """Turn on the logs given True and turn off all others: `set_logs(output_code=True)`."""
    _check(logs)
    for name in LOG_NAMES:
        get_logger(name).setLevel(logging.DEBUG if logs.get(name) else _OFF)


def _from_environment() -> None:
    names = [name.strip() for name in os.environ.get("PYJIT_LOGS", "").split(",") if name.strip()]
    try:
        set_logs(**dict.fromkeys(names, True))
    except ValueError as error:
        warnings.warn(f"PYJIT_LOGS: {error}", stacklevel=2)
        set_logs(**{name: True for name in names if name in LOG_NAMES})


_from_environment()
