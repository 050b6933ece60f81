"""Side effects: the mutations of Python state a trace records, and their replay in the
transformed code.

NOTE(side-effects): the interpreter never changes a Python object while tracing. A
store into Python state (`obj.attr = v`, `GLOBAL = v`, `lst[i] = v`, `d[k] = v`,
`del d[k]`) or a mutating list, dict or set method (`append extend insert pop clear`,
`pop update setdefault clear` of dicts, `add discard remove update clear pop` of sets,
NOTE(sets)) changes the symbolic value instead and, when the target exists outside the
frame (it has a source), is recorded here as an effect, in program order. The
transformed code (NOTE(transformed-code), NOTE(resume-functions)) calls the graph, then

1. reads into temporaries everything it uses afterwards (the returned value, the live
   values and the breaking instruction's operands, the effects' targets and values):
   sources are read before anything is stored, so a value read before a store keeps
   what it read (`a = o.x; o.x = 5; return a`);
2. replays the effects in program order on the real objects: `obj.attr = v`,
   `STORE_GLOBAL`, `lst[i] = v`, `del d[k]`, `lst.append(v)`, ... (a list from a source
   is changed by the same operations, not rebuilt), each at its user's position;
3. returns, or runs the breaking instruction, which sees the stores, and calls the
   resume function.

So the effects happen on every call, cache hits included, once, after the graph. A
list or dict built in the frame is not replayed: it is built in its final state, once,
whatever holds it (a set by the calls that made it, NOTE(sets)). An argument that the
code copies (`lst.extend(new)`, `d.update(new)`) is recorded as a snapshot of its items
then, so a later change of `new` does not leak into the replay.

Reads see the stores: one value per Python object (lists and dicts are tracked by
`id` of the object at trace time, so one reached through two sources is one value), and
attribute and global reads look at the pending stores first (`load_attr`,
`load_global`). Reaching a list or dict through two sources, or mutating a list, dict
or object while the trace read another of the same type (or the same object through
another source), depends on which objects are the same: the guards then check it,
recording `id` of each such source (a Python check on it) and comparing them last (a
Python check on no source), so a call with other aliasing recompiles. A dict from a
source is guarded by its keys only once the trace relies on which keys it has
(`DictValue.keys()`: len, in, truth, a missing key, a mutation); each entry read is
guarded through its item source.

Refused, as a graph break: an attribute store on an object whose class is not a Python
class with a plain `__setattr__` and `__getattribute__` and an instance `__dict__`, or
has a data descriptor (property, slot) of that name; stores into modules, classes,
arrays (in-place array writes) and anything else; dict keys that are not constants of
a type hashed and compared in C (`KEY_TYPES` in containers.py); a list or dict built in the frame that
would hold itself; a list or dict holding an object with a `__del__` (a finalizer can
change it at any instruction, behind the guards: it stays an object, guarded by type),
and an attribute or global store replacing one (its finalizer would run amid the replay);
a stored value the transformed code cannot rebuild (a bound ndarray method, a symbolic
size); a global store inside an inlined function with other globals; and, with `pyjit.config.replay_side_effects` False
(read when tracing), every effect on a value from a source (lists and dicts built in
the frame stay modelled). Replaying rather than tracing in a try block is safe: a
store the trace accepted cannot raise.

Inlining (NOTE(inlining)) shares one record between the caller and its inlined
callees; a callee that breaks is rolled back to a `checkpoint()`: every change since is
undone (container contents restored from snapshots, pending stores put back, lists and
dicts first read since forgotten, as the graph inputs they hold are).
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any, Callable

from .. import config
from ..graph import SymInt
from .breaks import Break
from .bytecode import Instr
from .containers import (DICT_METHODS, DICT_VIEWS, LIST_METHODS, SET_METHODS, ContainerMethods, is_element, is_key,
                         is_key_value, same_set)
from .emit import materialise, rebuild, replay_effect
from .sources import Source
from .values import (MEMBER, NULL, UNREAD, ArrayValue, CallableValue, ConstantValue, DictValue, IteratorValue,
                     ModuleValue, ObjectValue, SequenceValue, Value, contents, describe, reaches)

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


@dataclasses.dataclass(eq=False)
class Effect:
    """One recorded mutation. kind: "store_attr", "store_global", "store_item",
    "delete_item" or "call" (`name` is then the method's); `values` are what the replay
    passes (the stored value, the method's arguments)."""

    kind: str
    target: Value | None  # None for a global
    name: Any  # attribute, global or method name, or the item's key
    values: tuple[Value, ...]
    loc: Any
    replayed: bool  # the target comes from a source (a new container is built in its final state)


@dataclasses.dataclass(eq=False)
class _Tracked:
    obj: Any  # held so that its id stays its own during the trace
    value: Value | None  # the list or dict value; None for an object (its attributes are read one by one)
    sources: list[Source]


class SideEffects(ContainerMethods):
    """The pending mutations of one trace, and the objects it met (NOTE(side-effects))."""

    def __init__(self):
        self._effects: list[Effect] = []
        self._undo: list[Callable[[], None]] = []  # undoes each change to the record, newest last
        self._tracked: dict[int, _Tracked] = {}
        self._originals: dict[int, Any] = {}  # id(list or dict value) -> the object it was read from
        self._attributes: dict[tuple[int, str], Value] = {}  # (id(object), name) -> stored value
        self._globals: dict[str, Value] = {}
        self._iterated: dict[int, list[IteratorValue]] = {}  # id(dict value) -> iterators over its views

    # -- inlining -------------------------------------------------------------------------------
    def checkpoint(self) -> tuple[int, int]:
        return len(self._effects), len(self._undo)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Forget what was recorded since `checkpoint()`: effects, and the containers first
        read since, whose items may hold graph inputs the caller's rollback removes."""
        effects, undo = mark
        del self._effects[effects:]
        while len(self._undo) > undo:
            self._undo.pop()()

    # -- what the transformed code needs ---------------------------------------------------------
    @property
    def pending(self) -> bool:
        """Whether the transformed code has effects to replay."""
        return any(effect.replayed for effect in self._effects)

    def values(self) -> list[Value]:
        """The values the replay reads: targets and stored values."""
        return [value for effect in self._effects if effect.replayed
                for value in (effect.target, *effect.values) if value is not None]

    def replay(self, tracer, outputs: list, temps: dict[int, str], kept: list[Value], loc) -> list[Instr]:
        """Instructions, after the graph call (its result in `__pyjit_out`), that read
        `kept` and what the effects use into `temps` (id(value) -> name), then replay the
        effects; also records the aliasing guards. Nothing when no effect is pending."""
        self._guard_aliasing(tracer.guards)
        self._guard_keys(tracer.guards)
        effects = [effect for effect in self._effects if effect.replayed]
        if not effects:
            return []
        body = materialise([*kept, *self.values()], outputs, tracer.code, loc, temps)
        for effect in effects:
            body += replay_effect(effect, lambda value: rebuild(value, outputs, tracer.code, effect.loc, temps))
        return body

    # -- wrapping (NOTE(guard-policy)) -------------------------------------------------------------
    def wrap_container(self, tracer, value: list | dict | set, source: Source) -> Value:
        """The value of a list, dict or set read from `source`: one per object. A list's
        items are wrapped now (type and length guarded), a dict's entries when read (its
        type guarded now, its keys once the trace relies on them), a set's elements are
        guarded once the trace relies on them (NOTE(sets)); a dict with other keys, or a
        set with other elements, is an object, guarded by type."""
        tracked = self._tracked.get(id(value))
        if tracked is not None:
            tracked.sources.append(source)
            if tracked.value is not None:
                return tracked.value
        if tracked is not None or (type(value) is dict and not all(map(is_key, value))) \
                or (type(value) is set and not all(map(is_element, value))) \
                or any(map(_has_finalizer, value.values() if type(value) is dict else value)):
            tracer.guards.type(source, type(value))  # not modelled: an object, as before any read
            return ObjectValue(value, source)
        tracer.guards.type(source, type(value))
        if type(value) is set:
            result = DictValue(dict.fromkeys(value, MEMBER), source, kind=set)
        elif type(value) is dict:
            result = DictValue(dict.fromkeys(value, UNREAD), source)
        else:
            tracer.guards.length(source, len(value))
            result = SequenceValue(list, [], source)
        self._tracked[id(value)] = _Tracked(value, result, [source])
        self._originals[id(result)] = value

        def forget() -> None:
            del self._tracked[id(value)], self._originals[id(result)]

        if type(value) is list:
            try:  # registered first: a list may hold itself
                result.items.extend(tracer.wrap(item, source.item(index)) for index, item in enumerate(value))
            except BaseException:
                forget()
                raise
        self._undo.append(forget)
        return result

    # -- attributes and globals -------------------------------------------------------------------
    def load_attr(self, tracer, obj: Value, name: str) -> Value | None:
        """`obj.name` where this record decides it: a pending store, a list or dict method,
        a global of the frame stored through its module; None otherwise."""
        if isinstance(obj, ObjectValue) and obj.source is not None:
            self._note_object(obj)
            return self._attributes.get((id(obj.value), name))
        if isinstance(obj, ModuleValue) and vars(obj.module) is tracer.capture.frame.f_globals:
            return self._globals.get(name)
        methods = LIST_METHODS if isinstance(obj, SequenceValue) and obj.kind is list \
            else (SET_METHODS if obj.kind is set else DICT_METHODS) if isinstance(obj, DictValue) else {}
        if name in methods:
            if name != "get" and name not in DICT_VIEWS:
                self._require_replay(obj, f"{name}()")
            return CallableValue("container_method", name, self=obj)
        return None

    def store_attr(self, tracer, obj: Value, name: str, value: Value) -> None:
        if not (isinstance(obj, ObjectValue) and obj.source is not None):
            raise Break("unsupported", f"storing attribute {name!r} on {describe(obj)} is not modelled")
        _refuse_custom_store(obj.value, name)
        _refuse_finalizer(inspect.getattr_static(obj.value, name, None), f"{obj.source}.{name}")
        self._require_replay(obj, f"storing attribute {name!r}")
        _require_rebuildable(value)
        self._note_object(obj)
        self._record(tracer, "store_attr", obj, name, (value,), self._set(self._attributes, (id(obj.value), name),
                                                                          value))

    def load_global(self, tracer, name: str) -> Value:
        """LOAD_GLOBAL: a pending store of the frame's globals, else the tracer's read."""
        if name in self._globals and _globals_of(tracer) is tracer.capture.frame.f_globals:
            return self._globals[name]
        return tracer.load_global(name)

    def store_global(self, tracer, name: str, value: Value) -> None:
        if _globals_of(tracer) is not tracer.capture.frame.f_globals:
            raise Break("unsupported", f"storing global {name!r} of another module from an inlined function")
        if not config.replay_side_effects:
            raise Break("unsupported", f"storing global {name!r} with pyjit.config.replay_side_effects False",
                        hint="the store runs in Python at a graph break")
        _refuse_finalizer(tracer.capture.frame.f_globals.get(name), name)
        _require_rebuildable(value)
        self._record(tracer, "store_global", None, name, (value,), self._set(self._globals, name, value))

    # -- items ------------------------------------------------------------------------------------
    def read_item(self, tracer, container: DictValue, key: Value) -> Value:
        """`container[key]` of a dict value."""
        _refuse_set_item(container)
        if not is_key_value(key):
            raise Break("unsupported", f"a dict key that is {describe(key)}, not a constant of a simple type")
        found = container.items.get(key.value, NULL)
        if found is NULL:
            raise Break("user_error", f"KeyError: {key.value!r}")
        if found is UNREAD:
            original = self._originals[id(container)]
            found = container.items[key.value] = tracer.wrap(original[key.value], container.source.item(key.value))
            self._undo.append(lambda: container.items.__setitem__(key.value, UNREAD))
        return found

    def store_item(self, tracer, container: Value, key: Value, value: Value) -> None:
        _refuse_set_item(container)
        if isinstance(container, DictValue) and is_key_value(key):
            self._mutate(tracer, container, "store_item", key.value, (value,),
                         lambda: container.items.__setitem__(key.value, value))
            return
        index = self._list_index(container, key, "assignment")
        self._mutate(tracer, container, "store_item", index, (value,),
                     lambda: container.items.__setitem__(index, value))

    def delete_item(self, tracer, container: Value, key: Value) -> None:
        _refuse_set_item(container)
        if isinstance(container, DictValue) and is_key_value(key):
            if key.value not in container.items:
                raise Break("user_error", f"KeyError: {key.value!r}")
            self._mutate(tracer, container, "delete_item", key.value, (), lambda: container.items.pop(key.value))
            return
        index = self._list_index(container, key, "deletion")
        self._mutate(tracer, container, "delete_item", index, (), lambda: container.items.pop(index))

    def _list_index(self, container: Value, key: Value, what: str) -> int:
        if not (isinstance(container, SequenceValue) and container.kind is list):
            hint = "in-place writes into arrays are not captured" if isinstance(container, ArrayValue) else ""
            raise Break("unsupported", f"item {what} on {describe(container)} is not modelled", hint=hint)
        if not (isinstance(key, ConstantValue) and type(key.value) in (int, bool)):
            raise Break("unsupported", f"list {what} with {describe(key)} as the index")
        if not -len(container.items) <= key.value < len(container.items):
            raise Break("user_error", f"IndexError: list {what} index out of range")
        return key.value


    # -- recording ----------------------------------------------------------------------------------
    def _mutate(self, tracer, target: SequenceValue | DictValue, kind: str, name: Any, values: tuple,
                change: Callable[[], Any]) -> Any:
        """Apply `change` to the value's items and record it, undone by restoring a snapshot."""
        self._require_replay(target, f"{name}()" if kind == "call" else kind.replace("_", " "))
        if isinstance(target, DictValue):
            target.keys()  # the replay relies on the keys it finds (`del d[k]`)
            for iterator in self._iterated.get(id(target), ()):  # NOTE(dict-views)
                if tracer.holds(iterator):  # a loop that has not found it exhausted yet
                    iterator.rebuildable = False
                    raise Break("unsupported", f"a {target.kind.__name__} changed while it is iterated")
        for value in values:
            _require_rebuildable(value)
            if target.source is None and reaches([value], target):
                raise Break("unsupported", "a list or dict built in the frame that holds itself is not modelled")
        saved, history = target.items.copy(), getattr(target, "history", None)  # a set's history is never changed
        result = change()                                                       # in place (NOTE(sets))

        def undo() -> None:
            target.items.clear()
            (target.items.extend if isinstance(target, SequenceValue) else target.items.update)(saved)
            if isinstance(target, DictValue):
                target.history = history

        self._record(tracer, kind, target, name, values, undo)
        return result

    def _record(self, tracer, kind: str, target: Value | None, name: Any, values: tuple, undo) -> None:
        replayed = target is None or target.source is not None
        instr = tracer.root.instr  # inside an inlined call: the frame's CALL (NOTE(inlining))
        loc = instr.loc if instr is not None else None
        self._effects.append(Effect(kind, target, name, values, loc, replayed))
        self._undo.append(undo)

    @staticmethod
    def _set(table: dict, key: Any, value: Value) -> Callable[[], None]:
        """`table[key] = value`, returning its undo."""
        had, old = key in table, table.get(key)
        table[key] = value

        def undo() -> None:
            if had:
                table[key] = old
            else:
                del table[key]

        return undo

    @staticmethod
    def _require_replay(target: Value, what: str) -> None:
        if target.source is not None and not config.replay_side_effects:
            raise Break("unsupported", f"{what} on {target.source} with pyjit.config.replay_side_effects False",
                        hint="the mutation runs in Python at a graph break")

    def _note_object(self, obj: ObjectValue) -> None:
        tracked = self._tracked.setdefault(id(obj.value), _Tracked(obj.value, None, []))
        if obj.source not in tracked.sources:
            tracked.sources.append(obj.source)

    # -- aliasing guards --------------------------------------------------------------------------
    def _guard_aliasing(self, guards) -> None:
        """NOTE(side-effects): the objects reached through several sources, and, for each
        type of object a replayed effect mutates, every object of that type the trace read,
        must be the same or distinct on later calls as they were now."""
        mutated = {type(self._object_of(effect.target)) for effect in self._effects
                   if effect.replayed and effect.target is not None}
        by_type: dict[type, list[_Tracked]] = {}
        for tracked in self._tracked.values():
            tracked.sources = list(dict.fromkeys(tracked.sources))
            by_type.setdefault(type(tracked.obj), []).append(tracked)
        # A list or dict reached twice is one value, its contents guarded through its first
        # source only; an object's attributes are guarded through each source they are read
        # by, which only a store through another source makes stale.
        kinds = [[tracked.sources for tracked in group
                  if (kind in mutated or tracked.value is not None) and len(tracked.sources) > 1
                  or kind in mutated and len(group) > 1] for kind, group in by_type.items()]
        kinds = [groups for groups in kinds if groups]
        if not kinds:
            return
        store, layout, slots, parts = _IdStore(), [], 0, []
        for groups in kinds:
            layout.append([])
            for group in groups:
                layout[-1].append(list(range(slots, slots + len(group))))
                for slot, source in zip(layout[-1][-1], group):
                    guards.python(source, _id_recorder(store, slot), "record_id")
                slots += len(group)
                parts += [" is ".join(map(str, group))] * (len(group) > 1)
            parts += [", ".join(str(group[0]) for group in groups) + " are distinct"] * (len(groups) > 1)
        guards.python(None, _aliasing_check(store, layout), "; ".join(parts))

    def _guard_keys(self, guards) -> None:
        """A dict from a source whose keys the trace relied on is guarded by its keys, as
        they were before the frame ran."""
        for tracked in self._tracked.values():
            if isinstance(tracked.value, DictValue) and tracked.value.keys_read and tracked.value.kind is set:
                elements = tuple(tracked.obj)
                guards.python(tracked.value.source, same_set(elements), f"iterates as {elements!r}")
            elif isinstance(tracked.value, DictValue) and tracked.value.keys_read:
                guards.dict_keys(tracked.value.source, tuple(tracked.obj))

    def _object_of(self, value: Value) -> Any:
        return value.value if isinstance(value, ObjectValue) else self._originals[id(value)]


class _IdStore(threading.local):
    """The ids the aliasing checks of one guard program recorded, per thread (like
    NOTE(shape-relations)'s sizes)."""

    def __init__(self):
        self.ids: dict[int, int] = {}


def _id_recorder(store: _IdStore, slot: int) -> Callable[[Any], bool]:
    def record_id(value) -> bool:
        store.ids[slot] = id(value)
        return True

    return record_id


def _aliasing_check(store: _IdStore, layout: list[list[list[int]]]) -> Callable[[], bool]:
    """Per type, per object, the slots of its sources: each object's are one id, and the
    objects of a type are distinct."""
    def aliasing() -> bool:
        ids = store.ids
        for groups in layout:
            firsts = [ids[group[0]] for group in groups]
            if len(set(firsts)) != len(firsts) or any(ids[slot] != ids[group[0]] for group in groups
                                                      for slot in group):
                return False
        return True

    return aliasing


# -- checks --------------------------------------------------------------------------------------
def _refuse_custom_store(obj: Any, name: str) -> None:
    """NOTE(side-effects): `obj.name = v` runs no code only on an instance of a Python
    class with object's `__setattr__` and `__getattribute__`, an instance `__dict__`, and
    no data descriptor (property, slot, `__dict__`, `__class__`) of that name."""
    kind = type(obj)
    why = None
    if not kind.__flags__ & _HEAP_TYPE:
        why = "is not a class defined in Python"
    elif inspect.getattr_static(kind, "__setattr__") is not object.__setattr__ \
            or inspect.getattr_static(kind, "__getattribute__") is not object.__getattribute__:
        why = "customises attribute access"
    elif not kind.__dictoffset__:
        why = "gives its instances no __dict__"
    else:
        owner = next((base for base in kind.__mro__ if name in base.__dict__), None)
        found = owner.__dict__[name] if owner is not None else None
        if owner is not None and any(inspect.getattr_static(type(found), method, None) is not None
                                     for method in ("__set__", "__delete__")):
            why = f"defines {name!r} as {describe(found)}"
    if why is not None:
        raise Break("unsupported", f"storing attribute {name!r} on a {kind.__qualname__}, whose class {why}: "
                    "the store would run code", hint="the store runs in Python at a graph break")


def _require_rebuildable(value: Value) -> None:
    """A stored value the transformed code must push again after the graph call."""
    if not _rebuildable(value):
        raise Break("unsupported", f"storing {describe(value)}, which the transformed code cannot rebuild")


def _rebuildable(value: Value) -> bool:
    if value.source is not None or isinstance(value, ArrayValue):
        return True
    if isinstance(value, ConstantValue):
        return not _has_symbol(value.value)
    if isinstance(value, (SequenceValue, DictValue)):
        return all(map(_rebuildable, contents(value)))
    return False


def _has_symbol(constant: Any) -> bool:
    if type(constant) in (tuple, list):
        return any(map(_has_symbol, constant))
    return isinstance(constant, SymInt)


def _has_finalizer(item: Any) -> bool:
    """Whether dropping `item` (or an item of a tuple it is) may run a Python `__del__`:
    a container holding one can change at any instruction that drops a reference,
    behind the guards that checked it when the frame started and between replayed
    effects (`while items: items.pop()`, where the first pop's finalizer empties it)."""
    if type(item) is tuple:
        return any(map(_has_finalizer, item))
    return any("__del__" in vars(base) for base in type(item).__mro__)


def _refuse_finalizer(replaced: Any, where: str) -> None:
    """A store that drops an object with a `__del__` would run it amid the replay."""
    if _has_finalizer(replaced):
        raise Break("unsupported", f"storing into {where} drops an object with a __del__, which would run amid "
                    "the replayed effects", hint="the store runs in Python at a graph break")


def _refuse_set_item(container: Value) -> None:
    if isinstance(container, DictValue) and container.kind is set:
        raise Break("user_error", "TypeError: 'set' object is not subscriptable")


def _globals_of(tracer) -> dict:
    """The globals the tracer's STORE_GLOBAL and LOAD_GLOBAL use: an inlined function's own."""
    function = getattr(tracer, "function", None)  # an InlineTracer's callee (NOTE(inlining))
    return function.__globals__ if function is not None else tracer.capture.frame.f_globals
