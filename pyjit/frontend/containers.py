"""What list, dict and set methods do to their symbolic values.

NOTE(containers): a list is a SequenceValue, a dict and a set DictValues (NOTE(sets)).
`ContainerMethods` models their methods (`append extend insert pop clear` of lists,
`get pop setdefault update clear keys values items` of dicts, `add discard remove update
clear pop` of sets) on those values; each change goes through the record's `_mutate`,
which applies it, records it for replay when the container comes from a source and
undoes it on rollback (NOTE(side-effects) in side_effects.py, whose `SideEffects` is
the one class that uses these methods).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from .. import config
from .breaks import Break
from .values import MEMBER, ConstantValue, DictValue, IteratorValue, SequenceValue, Value, describe, python_value

# Dict keys the interpreter models: hashed and compared in C, so no user code runs.
KEY_TYPES = (int, float, complex, str, bytes, bool, type(None))
# Method name -> (fewest, most) positional arguments.
LIST_METHODS = {"append": (1, 1), "extend": (1, 1), "insert": (2, 2), "pop": (0, 1), "clear": (0, 0)}
DICT_METHODS = {"get": (1, 2), "pop": (1, 2), "setdefault": (1, 2), "update": (1, 1), "clear": (0, 0),
                "keys": (0, 0), "values": (0, 0), "items": (0, 0)}
DICT_VIEWS = frozenset({"keys", "values", "items"})  # read only: they change nothing
SET_METHODS = {"add": (1, 1), "discard": (1, 1), "remove": (1, 1), "update": (1, 1), "clear": (0, 0), "pop": (0, 0)}


class ContainerMethods:
    """The list, dict and set methods of `SideEffects` (NOTE(containers))."""

    # -- methods ----------------------------------------------------------------------------------
    def call_method(self, tracer, target: Value, name: str, args: list[Value], kwargs: dict | None = None) -> Value:
        """`target.name(*args)` for a list, dict or set method (`load_attr` made the callable)."""
        table = LIST_METHODS if isinstance(target, SequenceValue) else SET_METHODS if target.kind is set \
            else DICT_METHODS
        fewest, most = table[name]
        if kwargs:
            raise Break("unsupported", f"{name}() with keyword arguments")
        if not fewest <= len(args) <= most:
            raise Break("user_error", f"TypeError: {name}() takes {fewest} to {most} arguments ({len(args)} given)")
        if isinstance(target, SequenceValue):
            return self._list_method(tracer, target, name, args)
        if target.kind is set:
            return self._set_method(tracer, target, name, args)
        return self._dict_method(tracer, target, name, args)

    def _list_method(self, tracer, target: SequenceValue, name: str, args: list[Value]) -> Value:
        items = target.items
        if name in ("insert", "pop") and args and not (isinstance(args[0], ConstantValue)
                                                      and type(args[0].value) in (int, bool)):
            raise Break("unsupported", f"list.{name} with an index that is not a constant")
        if name in ("append", "insert"):
            where = len(items) if name == "append" else args[0].value
            self._mutate(tracer, target, "call", name, tuple(args), lambda: items.insert(where, args[-1]))
        elif name == "extend":
            added = _items_of(args[0])
            self._mutate(tracer, target, "call", name, (SequenceValue(tuple, added),), lambda: items.extend(added))
        elif name == "pop":
            index = args[0].value if args else -1
            if not -len(items) <= index < len(items):
                raise Break("user_error", "IndexError: pop from empty list" if not items else
                            "IndexError: pop index out of range")
            return self._mutate(tracer, target, "call", name, tuple(args), lambda: items.pop(index))
        else:  # clear
            self._mutate(tracer, target, "call", name, (), items.clear)
        return ConstantValue(None)

    def _dict_method(self, tracer, target: DictValue, name: str, args: list[Value]) -> Value:
        items = target.items
        if name in DICT_VIEWS:
            return self.view(tracer, target, name)
        if name == "clear":
            self._mutate(tracer, target, "call", name, (), items.clear)
            return ConstantValue(None)
        if name == "update":
            added = _dict_items_of(self, tracer, args[0])
            self._mutate(tracer, target, "call", name, (DictValue(dict(added)),), lambda: items.update(added))
            return ConstantValue(None)
        if not is_key_value(args[0]):
            raise Break("unsupported", f"dict.{name} with a key that is not a constant of a simple type")
        key, default = args[0].value, args[1] if len(args) > 1 else ConstantValue(None)
        if key not in items:
            target.keys()  # relies on its absence
            if name == "pop" and len(args) == 1:
                raise Break("user_error", f"KeyError: {key!r}")
            if name == "setdefault":
                self._mutate(tracer, target, "call", name, (args[0], default), lambda: items.__setitem__(key, default))
            return default
        found = self.read_item(tracer, target, args[0])
        if name == "pop":
            self._mutate(tracer, target, "call", name, tuple(args), lambda: items.pop(key))
        return found

    def view(self, tracer, target: DictValue, name: str) -> IteratorValue:
        """NOTE(dict-views): `d.keys()`, `d.values()`, `d.items()` as an iterator over the
        entries the dict has now (its keys guarded). It is not the view object Python
        makes, and it is never rebuilt: a graph break inside such a loop, or changing the
        dict while it is iterated (Python raises at the next step), makes the frame run as
        it is."""
        keys = self.set_order(target) if target.kind is set else target.keys()
        if not all(type(key) in KEY_TYPES for key in keys):
            raise Break("unsupported", f"dict.{name}() of a dict with keys of other types")
        values = [self.read_item(tracer, target, ConstantValue(key)) for key in keys] if name != "keys" else []
        entries = [ConstantValue(key) for key in keys] if name == "keys" else values if name == "values" else \
            [SequenceValue(tuple, [ConstantValue(key), value]) for key, value in zip(keys, values)]
        # Not rebuilt at a break inside its loop (the frame runs as it is): the rest of the
        # loop, run in Python, may change the dict or set, and only its own iterator raises.
        iterator = IteratorValue(entries, exact=False, rebuildable=False)
        self._iterated.setdefault(id(target), []).append(iterator)
        return iterator

    # -- sets -----------------------------------------------------------------------------------------
    # NOTE(sets): a set is a DictValue of kind set, its elements constants of `KEY_TYPES`
    # (not NaN, which equals nothing, not even a copy of itself) mapped to MEMBER. `x in s`,
    # `len`, truth and the mutating methods use its elements; its iteration order is
    # CPython's, which depends on the table's history (collisions, dummies of removed
    # elements, its size), not only on which elements it holds. So a set built in the frame
    # keeps that history: the calls (`add`, `discard`, `remove`, `update` with a frozenset
    # constant or a snapshot of another such set, which CPython merges table to table,
    # `pop`, `clear`) that make it from an empty set, an `update` with a sequence being its
    # elements' `add`s, as in CPython.
    # Its order at trace time is that of a real set made by those calls, and the transformed
    # code rebuilds it by making the same calls (BUILD_SET of the leading adds), so the
    # caller's set is the very table Python makes. A set read from a source is guarded,
    # once the trace relies on its elements, by its exact iteration order (`tuple(s)`, each
    # element's type and repr), and iterates in that order until it changes; after a change
    # its order is unknown (a break where the trace needs it) until a `clear`, which leaves
    # a table like a new set's. Its changes are replayed like a dict's; `pop` of one is a
    # break (CPython's choice depends on a cursor the set keeps). A set changed while a loop
    # iterates it makes the frame run as it is (NOTE(dict-views)), so Python raises. Other
    # uses (operators, comparisons, `**`, `s[k]`, sets of other elements) are breaks, or
    # the user's error Python raises.
    def set_order(self, target: DictValue) -> list:
        """NOTE(sets): `target`'s elements in the order CPython's set iterates them."""
        target.keys()
        if target.history is not None:
            return list(_made_by(target.history))
        if any(effect.target is target for effect in self._effects):
            raise Break("unsupported", f"iterating {target.source} after changing it: its order depends on its table")
        return list(target.items)

    def _set_method(self, tracer, target: DictValue, name: str, args: list[Value]) -> Value:
        if name == "update":
            update = _set_update(args[0])
            for element in update if isinstance(update, list) else ():
                self._set_method(tracer, target, "add", [element])
            if not isinstance(update, list):  # merged table to table
                elements = update.value if isinstance(update, ConstantValue) else list(update.items)
                self._mutate(tracer, target, "call", name, (update,),
                             lambda: self._change(target, name, (update,), elements))
        elif name == "clear":
            target.keys()
            self._mutate(tracer, target, "call", name, (), lambda: self._change(target, name, (), ()))
        elif name == "pop":
            if target.source is not None or target.history is None:
                raise Break("unsupported", "set.pop() of a set the function did not make: which element "
                            "CPython pops depends on a cursor the set keeps")
            if not target.keys():
                raise Break("user_error", "KeyError: 'pop from an empty set'")
            element = _made_by(target.history).pop()
            self._mutate(tracer, target, "call", name, (), lambda: self._change(target, name, (), (element,), False))
            return ConstantValue(element)
        else:
            element = _element(args[0])
            target.keys()  # relies on whether it is there
            present = element in target.items
            if name == "remove" and not present:
                raise Break("user_error", f"KeyError: {element!r}")
            if present != (name == "add"):  # what changes nothing is not recorded (NOTE(sets))
                self._mutate(tracer, target, "call", name, (args[0],),
                             lambda: self._change(target, name, (args[0],), (element,), name == "add"))
        return ConstantValue(None)

    @staticmethod
    def _change(target: DictValue, name: str, values: tuple, elements, added: bool = True) -> None:
        """Add (or remove) `elements` to `target`'s and append the call to its history."""
        if name == "clear":
            target.items.clear()
        elif added:
            target.items.update(dict.fromkeys(elements, MEMBER))
        else:
            del target.items[elements[0]]
        if target.history is not None or name == "clear":
            target.history = [*(target.history or ()), (name, values)]


def is_key(key: Any) -> bool:
    if type(key) is tuple:
        return all(map(is_key, key))
    return type(key) in KEY_TYPES


def is_key_value(value: Value) -> bool:
    return isinstance(value, ConstantValue) and is_key(value.value)


def _items_of(value: Value) -> list[Value]:
    """The items `list.extend` takes from `value`, as they are now."""
    if isinstance(value, SequenceValue):
        return list(value.items)
    if isinstance(value, ConstantValue) and type(value.value) in (tuple, list, str, range):
        return [ConstantValue(item) for item in value.value]
    if isinstance(value, DictValue) and value.kind is dict:
        return [ConstantValue(key) for key in value.items]
    raise Break("unsupported", f"extending a list with {describe(value)}")


def _dict_items_of(record, tracer, value: Value) -> dict[Any, Value]:
    """The entries `dict.update` takes from `value`, every one read, as they are now."""
    if isinstance(value, DictValue) and value.kind is dict:
        return {key: record.read_item(tracer, value, ConstantValue(key)) for key in value.keys()}
    if isinstance(value, ConstantValue) and type(value.value) is dict and all(map(is_key, value.value)):
        return {key: ConstantValue(item) for key, item in value.value.items()}
    raise Break("unsupported", f"updating a dict with {describe(value)}")


def is_element(element: Any) -> bool:
    """NOTE(sets): a set element the interpreter models."""
    return type(element) in KEY_TYPES and element == element


def _element(value: Value) -> Any:
    if not (isinstance(value, ConstantValue) and is_element(value.value)):
        raise Break("unsupported", f"a set element that is {describe(value)}, not a constant of a simple type")
    return value.value


def _set_update(value: Value) -> ConstantValue | DictValue | list[Value]:
    """NOTE(sets): what `set.update(value)` adds: a frozenset constant, or a snapshot of a
    set whose history is known, merged as a table, or the elements of a sequence of
    constants, each added in turn."""
    if isinstance(value, DictValue) and value.kind is set and value.history is not None:
        return DictValue(dict(value.items), kind=set, history=value.history)  # histories are never changed in place
    if isinstance(value, ConstantValue) and type(value.value) is frozenset:
        for element in value.value:
            _element(ConstantValue(element))
        return value
    if isinstance(value, SequenceValue):
        elements = list(value.items)
    elif isinstance(value, ConstantValue) and type(value.value) in (tuple, list, str, bytes, range) \
            and len(value.value) <= config.unroll_limit:
        elements = [ConstantValue(element) for element in value.value]
    else:
        raise Break("unsupported", f"updating a set with {describe(value)}")
    for element in elements:  # all checked before the first is added
        _element(element)
    return elements


def _made_by(history: list[tuple[str, tuple[Value, ...]]]) -> set:
    """The set that the calls of `history` make from an empty one (NOTE(sets))."""
    made = set()
    for name, values in history:
        getattr(made, name)(*(_made_by(value.history) if isinstance(value, DictValue) else python_value(value)
                              for value in values))
    return made


def same_set(elements: tuple) -> Callable[[Any], bool]:
    """A guard that a set iterates as `elements` (NOTE(sets)): the same types, then the
    same reprs, which for these types tell values apart exactly (-0.0 from 0.0)."""
    types, text = tuple(map(type, elements)), repr(elements)

    def iterates_so(value) -> bool:
        return len(value) == len(types) and all(map(operator.is_, map(type, value), types)) \
            and repr(tuple(value)) == text

    return iterates_so


def build_set(elements: list[Value]) -> DictValue:
    """The set value BUILD_SET and `set()` make: each element added in turn."""
    made = DictValue({}, kind=set, history=[])
    for element in elements:
        if _element(element) not in made.items:
            ContainerMethods._change(made, "add", (element,), (element.value,))
    return made


def build_dict(pairs: list[tuple[Value, Value]]) -> DictValue:
    """The dict value BUILD_MAP and BUILD_CONST_KEY_MAP make."""
    items: dict[Any, Value] = {}
    for key, value in pairs:
        if not is_key_value(key):
            raise Break("unsupported", f"a dict key that is {describe(key)}, not a constant of a simple type")
        items[key.value] = value
    return DictValue(items)
