"""The exceptions pyjit raises of its own (user errors keep NumPy's exception types)."""


class PyjitError(Exception):
    """Base of pyjit's own errors."""


class LintError(PyjitError):
    """A graph breaks an invariant of the IR; the message says which and prints the graph."""


class InvalidBackend(PyjitError):
    """No backend is registered (or installed through an entry point) under that name."""


class Unsupported(PyjitError):
    """`fullgraph=True` (or `optimize(nopython=True)`) met code it cannot capture whole;
    the message gives the break reason, the user's file:line and a hint."""


class BackendCompilerFailed(PyjitError):
    """The backend raised while compiling a captured graph; the message names the backend
    and the user's file:line, and `__cause__` is the backend's own exception."""


class DataDependentError(PyjitError):
    """make_fx without data (tracing_mode "fake" or "symbolic") met a Python decision on
    a traced value (`bool()`, `.item()`, ...); the message names the user's file:line."""


class AccuracyError(PyjitError):
    """`config.verify_correctness` found a compiled graph whose results differ from
    running the same graph eagerly; the message names the graph and the first difference."""
