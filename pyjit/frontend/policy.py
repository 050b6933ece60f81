"""What the frontend captures, inlines and skips, declared in one place.

NOTE(skipped-files): frames of pyjit itself, NumPy, CuPy (SKIPPED_PACKAGES) and the
standard library are not the user's code (and the graph's own ops call into them): the
frame callback skips them and the interpreter does not inline their functions
(NOTE(inlining) in inline.py). Code generated at run time (a dataclass's `__init__`,
whose file name is `<string>`) belongs to the module whose globals it runs with
(`is_skipped_code`), so a library's is the library's; other code is judged by its file
(a test suite run from a copy of the standard library's source is the user's), and
the packages of SKIPPED_PACKAGES by their module's name. A package written on
registry ops to be captured says so itself, and a class says how calling its instances
and reading attributes they lack work (NOTE(inline-declarations)). A Tensor is a graph
input when its class is pyjit's own (`is_pyjit_class`: Tensor,
pyjit.nn.Parameter); a user's subclass is an object like any other. The methods
collections.namedtuple writes (compiled from source, so their file is "<string>", as
is code a user runs with exec) are the standard library's: their globals name them
`namedtuple_<typename>` (numpy.linalg.eigh's EighResult is made in a graph's op).

NOTE(inline-declarations): what the frontend inlines of pyjit's later layers is declared
by those layers with attributes this module reads, so they never import the frontend
(pyjit.nn knows only the ops and the tape; tests/test_layers.py checks it):
  * a package sets `__pyjit_inline__ = True` in its `__init__.py` (pyjit.nn does): the
    functions of its modules, found by their module's name, are inlined like the user's
    though their files are skipped;
  * a class sets `__pyjit_inline_protocol__ = {"call": ..., "attribute_dicts": (...)}`
    (pyjit.nn.Module does): a call of an instance runs `instance.<call>(...)`, bypassing
    `__call__`, and an attribute missing from an instance is `instance.<dict>[name]` for
    the first of `attribute_dicts` holding it. Subclasses keep the protocol unless they
    redefine `__call__` or `__getattr__`.
Both are read from the module's and the classes' own `__dict__`, so no user code runs
(NOTE(no-user-code-at-trace)).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import sysconfig
import types
from pathlib import Path

import numpy as np

PYJIT_DIR = os.path.join(str(Path(__file__).resolve().parents[1]), "")
_SKIPPED_DIRS = tuple(os.path.join(path, "") for path in {
    PYJIT_DIR, os.path.dirname(np.__file__),
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_SKIPPED_PREFIXES = ("<frozen", "<pyjit")
# CuPy and the packages it runs (the CUDA bindings and their header lookup): on the GPU,
# what NumPy is on the CPU, wherever they are installed.
SKIPPED_PACKAGES = frozenset({"cupy", "cupyx", "cupy_backends", "cuda", "fastrlock"})


def is_skipped_file(filename: str) -> bool:
    """Whether frames of `filename` are left alone (NOTE(skipped-files))."""
    return filename.startswith(_SKIPPED_DIRS) or filename.startswith(_SKIPPED_PREFIXES)


def _module_of(globals_) -> types.ModuleType | None:
    """The module whose namespace `globals_` is, if any. Reads only dicts and the
    module's own slot (NOTE(no-user-code-at-trace))."""
    name = globals_.get("__name__") if type(globals_) is dict else None
    module = sys.modules.get(name) if type(name) is str else None
    if isinstance(module, types.ModuleType) and object.__getattribute__(module, "__dict__") is globals_:
        return module
    return None


def code_file(code: types.CodeType, globals_) -> str:
    """The file that says whose `code` is (NOTE(skipped-files)): its own file, or for
    code generated at run time (a file name like `<string>`) the file of the module
    whose namespace `globals_` is."""
    if not code.co_filename.startswith("<"):
        return code.co_filename
    filename = globals_.get("__file__") if _module_of(globals_) is not None else None
    return filename if type(filename) is str else code.co_filename


def is_skipped_code(code: types.CodeType, globals_) -> bool:
    """Whether frames of `code` run with `globals_` are left alone (NOTE(skipped-files))."""
    if is_namedtuple_method(globals_):
        return True
    module = _module_of(globals_)
    if module is not None and globals_["__name__"].partition(".")[0] in SKIPPED_PACKAGES:
        return True
    return is_skipped_file(code_file(code, globals_))


def is_library_code(code: types.CodeType, globals_) -> bool:
    """Whether a function of `code` and `globals_` runs in Python rather than being inlined."""
    return is_skipped_code(code, globals_) and not _in_inlined_package(globals_)


def _in_inlined_package(globals_) -> bool:
    """Whether `globals_` is the namespace of a module in a package that declares itself
    inlined (NOTE(inline-declarations))."""
    if _module_of(globals_) is None:
        return False
    parts = globals_["__name__"].split(".")
    for depth in range(1, len(parts) + 1):
        package = sys.modules.get(".".join(parts[:depth]))
        if isinstance(package, types.ModuleType) \
                and object.__getattribute__(package, "__dict__").get("__pyjit_inline__") is True:
            return True
    return False


def is_namedtuple_method(globals_: dict) -> bool:
    """Whether code with these globals is a method collections.namedtuple wrote
    (NOTE(skipped-files)); read with dict's own get (NOTE(no-user-code-at-trace))."""
    name = dict.get(globals_, "__name__")
    return type(name) is str and name.startswith("namedtuple_")


def is_pyjit_class(kind: type) -> bool:
    """Whether `kind` is one of pyjit's own classes (pyjit.nn.Parameter), not a user's
    subclass of one, whose overrides a graph input would not see. Read through type's
    own slot, past any metaclass (NOTE(no-user-code-at-trace))."""
    return type.__getattribute__(kind, "__module__").split(".")[0] == "pyjit"


@dataclasses.dataclass(frozen=True)
class InlineProtocol:
    call: str | None  # the method a call of an instance runs, bypassing `__call__`
    attribute_dicts: tuple[str, ...]  # where `__getattr__` finds attributes the instance lacks


def protocol_of(kind: type, special: str) -> InlineProtocol | None:
    """The protocol (NOTE(inline-declarations)) `kind` inherits for `special`
    ("__call__" or "__getattr__"), if the class that declared it still provides that
    method."""
    for base in kind.__mro__:
        declared = base.__dict__.get("__pyjit_inline_protocol__")
        if type(declared) is dict:
            found = inspect.getattr_static(kind, special, None)
            if found is not base.__dict__.get(special):
                return None
            return InlineProtocol(declared.get("call"), tuple(declared.get("attribute_dicts", ())))
    return None
