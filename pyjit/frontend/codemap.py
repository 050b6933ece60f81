"""Values kept per code object, for as long as the code lives.

Keyed by identity, not equality: equal code objects may come from different files (or
be a resume function and its copy), and what is kept for one must not serve the other.
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Callable


class CodeMap:
    """code -> a value made once for it, dropped when the code is collected."""

    def __init__(self):
        self._entries: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, code: types.CodeType, make: Callable):
        found = self._entries.get(id(code))
        if found is None or found[0]() is not code:
            # The callback binds the dict: at interpreter exit the module's globals are gone.
            forget = functools.partial(_forget, self._entries, id(code))
            found = self._entries[id(code)] = (weakref.ref(code, forget), make())
        return found[1]

    def __contains__(self, code: types.CodeType) -> bool:
        found = self._entries.get(id(code))
        return found is not None and found[0]() is code

    def clear(self) -> None:
        self._entries.clear()


def _forget(entries: dict, key: int, _) -> None:
    entries.pop(key, None)
