"""Sources: where a value the frontend meets comes from, relative to a frame.

NOTE(sources): every value the symbolic interpreter reads from outside the frame's own
computation knows its source: an argument slot, a global, a builtin, a closure cell,
or an attribute or item of one of those (an inlined callee's defaults are attribute
and item sources: `helper.__defaults__[1]`). Guards are checks on sources
(pyjit/frontend/guards.py), and the kinds here are exactly the source kinds of
`_C.GuardProgram`, so each becomes one entry of a guard program (`guard_entry`). Sources are immutable and hashable (equal sources are the same
value of the frame, which is what guard deduplication relies on) and know nothing of
bytecode: the interpreter maps load instructions to sources itself.

A source prints as the Python expression that reads it inside the function body, the
same text `_C.GuardProgram` uses in its checks and failure reasons: `x`, `np` (a global
or builtin prints as its bare name: in one code object a name is either local, free or
global, so the bare name is unambiguous), `mod.layers[0].weight`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable


class Source:
    """Base of the source kinds below; a closed set, each a frozen dataclass."""

    __slots__ = ()

    @property
    def root(self) -> Source:
        """The source this one hangs from (itself, for the kinds that read the frame)."""
        return self

    @property
    def parent(self) -> Source | None:
        """The source an attribute or item is read from; None for roots."""
        return None

    def attr(self, name: str) -> AttrSource:
        return AttrSource(self, name)

    def item(self, key: Hashable) -> ItemSource:
        return ItemSource(self, key)

    def resolve(self, frame):
        """The value this source names in `frame` (a `_C.FrameInfo`), read in Python.

        For tests and the verbose recompile path; the hook reads sources in C. A value
        that cannot be read raises what the read raises (AttributeError, KeyError,
        IndexError, ValueError for an empty cell, or whatever a property raises), where
        a guard on it simply fails."""
        raise NotImplementedError

    def guard_entry(self, parent_index: int | None) -> tuple:
        """This source as an item of `_C.GuardProgram`'s source list; `parent_index` is
        the position of `self.parent` in that list (None for roots)."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, slots=True)
class LocalSource(Source):
    """The argument in slot `slot` (positional, keyword-only, `*args`, `**kwargs` order)."""

    slot: int
    name: str

    def resolve(self, frame):
        return frame.args[self.slot]

    def guard_entry(self, parent_index):
        return ("local", self.slot, self.name)

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True, slots=True)
class GlobalSource(Source):
    name: str

    def resolve(self, frame):
        return frame.f_globals[self.name]

    def guard_entry(self, parent_index):
        return ("global", self.name)

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True, slots=True)
class BuiltinSource(Source):
    """A name found in the frame's builtins (guards also need it absent from the
    globals, which GuardSet adds: NOTE(builtin-shadowing) in guards.py)."""

    name: str

    def resolve(self, frame):
        return frame.f_builtins[self.name]

    def guard_entry(self, parent_index):
        return ("builtin", self.name)

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True, slots=True)
class ClosureSource(Source):
    """The contents of the function's closure cell `index` (the free variable
    `co_freevars[index]`, called `name`)."""

    index: int
    name: str

    def resolve(self, frame):
        return frame.f_func.__closure__[self.index].cell_contents

    def guard_entry(self, parent_index):
        return ("closure", self.index, self.name)

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True, slots=True)
class AttrSource(Source):
    """`getattr(base, name)`."""

    base: Source
    name: str

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"an attribute name must be a str, not {type(self.name).__name__}")

    @property
    def root(self):
        return self.base.root

    @property
    def parent(self):
        return self.base

    def resolve(self, frame):
        return getattr(self.base.resolve(frame), self.name)

    def guard_entry(self, parent_index):
        return ("attr", parent_index, self.name)

    def __str__(self):
        return f"{self.base}.{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class ItemSource(Source):
    """`base[key]` for a constant key: an int, a str, or another hashable constant.

    Keys compare as dict keys do (`x[1]` and `x[True]` are the same source)."""

    base: Source
    key: Hashable

    def __post_init__(self):
        hash(self.key)  # an unhashable key is a TypeError here, not in the guard program

    @property
    def root(self):
        return self.base.root

    @property
    def parent(self):
        return self.base

    def resolve(self, frame):
        return self.base.resolve(frame)[self.key]

    def guard_entry(self, parent_index):
        return ("item", parent_index, self.key)

    def __str__(self):
        return f"{self.base}[{self.key!r}]"
