"""The emitter: the instructions of the code pyjit writes (the transformed code, resume
functions' prologues and calls, replayed side effects).

NOTE(emitter): every instruction sequence the frontend generates is made here, on the
version-neutral instruction shapes of pyjit/frontend/bytecode.py (`call_instructions`,
`name_arg`, ...): reading a value from its source (`load_source`), rebuilding a value
from the graph's result, its source or constants (`rebuild`, `_rebuild_iterable`),
keeping values in temporaries (`materialise`, `keep`), calling the graph and keeping its
result (`call_graph`, `store_result`), raising an error (`raise_new`), replaying a side effect
(`replay_effect`, NOTE(side-effects)), writing updated inputs back
(NOTE(functionalisation)), and what only the break path emits (NOTE(resume-functions)):
the breaking instruction redone (`redo`), code run under a `with` handler
(`under_handler`, `handler_code`), the call of a resume function (`resume_call`) and a
resume function's prologue, which rebuilds the stack (`resume_prologue`). output.py (a
capture that returned), resume.py (one that broke), side_effects.py and convert.py (code
that raises) decide what to emit and call these; none of them makes an instruction itself.
"""

from __future__ import annotations

import dis
from typing import Any, Callable

import numpy as np

from ..graph import Node, SymInt
from .breaks import Break
from .bytecode import NULL_BEFORE_CALLABLE, FreeVar, Instr, Label, call_instructions, name_arg, reachable_from
from .carried_numbers import CarriedNumber
from .functionalise import write_back
from .sources import AttrSource, BuiltinSource, ClosureSource, GlobalSource, ItemSource, LocalSource, Source
from .values import (NULL, ArrayValue, CallableValue, ConstantValue, DictValue, IteratorValue, SequenceValue, Value,
                     contents, describe)

RESULT = "__pyjit_out"  # the graph's result tuple in the transformed code
TEMP = "__pyjit_tmp{}"  # temporaries of the transformed code
ITERATOR = "iterator"  # a stack layout slot: an argument the resume function's prologue iterates
_SHARED_BY_VALUE = (int, float, complex, str, bytes, tuple, frozenset)  # NOTE(constant-identity)
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), slice, range, np.dtype, np.generic, type,
              type(Ellipsis), frozenset)


def call_graph(compiled: Callable, sources: list[Source], code, loc) -> list[Instr]:
    """`compiled(<each of sources>)`: the call of the compiled graph on its inputs."""
    return call_constant(compiled, [load_source(source, code, loc) for source in sources], loc)


def store_result(written: list[tuple[Source, int]], code, loc) -> list[Instr]:
    """Instructions keeping the graph's result tuple in `__pyjit_out` and writing the
    updated inputs back from it (`write_back_inputs`)."""
    return [Instr("STORE_FAST", RESULT, loc=loc), *write_back_inputs(written, code, loc)]


def return_value(loc) -> list[Instr]:
    return [Instr("RETURN_VALUE", loc=loc)]


def raise_new(error_type: type, message: str, cause: BaseException | None, loc) -> list[Instr]:
    """`raise error_type(message) [from cause]`, a new exception each time it runs."""
    body = call_constant(error_type, [[Instr("LOAD_CONST", message, loc=loc)]], loc)
    if cause is not None:
        body.append(Instr("LOAD_CONST", cause, loc=loc))
    return body + [Instr("RAISE_VARARGS", 1 + (cause is not None), loc=loc)]


def write_back_inputs(written: list[tuple[Source, int]], code, loc) -> list[Instr]:
    """Instructions writing each updated input's new value into it, in order."""
    body = []
    for source, index in written:
        value = [Instr("LOAD_FAST", RESULT, loc=loc), Instr("LOAD_CONST", index, loc=loc),
                 Instr("BINARY_SUBSCR", loc=loc)]
        body += call_constant(write_back, [load_source(source, code, loc), value], loc) + [Instr("POP_TOP", loc=loc)]
    return body


def computed_node(value: Value) -> Node | None:
    """The graph's node that computes `value`: an array's without a source, or a number a
    while loop carried out of it (NOTE(carried-numbers)); None for other values."""
    if isinstance(value, ArrayValue) and value.source is None:
        return value.node
    number = value.value if isinstance(value, ConstantValue) else None
    return number.node if isinstance(number, CarriedNumber) else None


def rebuild(value: Value, outputs: list, code, loc, temps: dict[int, str] | None = None) -> list[Instr]:
    """Instructions pushing `value`: re-read from its source, taken from the graph's
    result (`outputs`: its nodes in order), or built from constants; a value (or an
    item) already in a temporary (`temps`: id(value) -> name) is loaded from it."""
    if temps and id(value) in temps:
        return [Instr("LOAD_FAST", temps[id(value)], loc=loc)]
    if value.source is not None:
        return load_source(value.source, code, loc)
    node = computed_node(value)
    if node is not None:
        index = next(i for i, output in enumerate(outputs) if output is node)
        return [Instr("LOAD_FAST", RESULT, loc=loc), Instr("LOAD_CONST", index, loc=loc),
                Instr("BINARY_SUBSCR", loc=loc)]
    if isinstance(value, SequenceValue):
        items = [instr for item in value.items for instr in rebuild(item, outputs, code, loc, temps)]
        build_op = "BUILD_TUPLE" if value.kind is tuple else "BUILD_LIST"
        return items + [Instr(build_op, len(value.items), loc=loc)]
    if isinstance(value, DictValue) and value.kind is set:
        return _made_set(value, outputs, code, loc, temps)
    if isinstance(value, DictValue):
        literals = _literal_ids(code)
        pairs = [instr for key, item in value.items.items()
                 for instr in [*_constant(key, literals, loc), *rebuild(item, outputs, code, loc, temps)]]
        return pairs + [Instr("BUILD_MAP", len(value.items), loc=loc)]
    if isinstance(value, ConstantValue):
        return _constant(value.value, _literal_ids(code), loc)
    if isinstance(value, IteratorValue):
        return _held_iterator(value, outputs, code, loc, temps)
    raise Break("unsupported", f"returning {describe(value)} is not modelled")


def _made_set(value: DictValue, outputs: list, code, loc, temps) -> list[Instr]:
    """NOTE(sets) in containers.py: a set built in the frame, made by the calls that made
    it (the leading adds as one BUILD_SET, which adds in turn), so that its table is the
    one Python makes."""
    adds = next((index for index, (name, _) in enumerate(value.history) if name != "add"), len(value.history))
    body = [instr for _, (element,) in value.history[:adds] for instr in rebuild(element, outputs, code, loc, temps)]
    body.append(Instr("BUILD_SET", adds, loc=loc))
    for name, values in value.history[adds:]:
        method = [Instr("COPY", 2 if NULL_BEFORE_CALLABLE else 1, loc=loc),  # the set, below a NULL before 3.13
                  Instr("LOAD_ATTR", name_arg(name, "LOAD_ATTR"), loc=loc)]
        arguments = [rebuild(item, outputs, code, loc, temps) for item in values]
        body += call_instructions(method, arguments, loc) + [Instr("POP_TOP", loc=loc)]
    return body


def _rebuild_iterable(iterator: IteratorValue, outputs: list, code, loc, temps: dict[int, str] | None = None) -> list:
    """Instructions pushing what iterating gives `iterator`'s remaining items: a tuple of
    them, or where the items come from a list, which the code after a break may change,
    a live iterator over that very list (NOTE(loop-unrolling))."""
    if not all(part.rebuildable for part in _parts(iterator)):
        raise Break("unsupported", "an iterator over a constant list is not rebuilt after a graph break")
    if iterates_a_list(iterator):
        return _live(iterator, iterator.position, outputs, code, loc, temps)
    return _rest(iterator, iterator.position, outputs, code, loc, temps)


def _held_iterator(iterator: IteratorValue, outputs: list, code, loc, temps) -> list:
    """An iterator the code holds (a local, an operand, the result) rebuilt as an object
    of the very type Python made (`enumerate`, `zip`, `reversed`, a tuple, list, range or
    str iterator), at the item the trace reached: code may look at its type or identity."""
    if not all(part.rebuildable and part.exact for part in _parts(iterator)):
        raise Break("unsupported", "an iterator the code holds over an array or a constant list is not rebuilt")
    return _live(iterator, iterator.position, outputs, code, loc, temps)


def _rest(iterator: IteratorValue, position: int, outputs: list, code, loc, temps) -> list:
    """Instructions pushing `iterator`'s items from `position` on: the rest of the
    constant it iterates (a range stays a range: one guard), else a tuple of them."""
    if iterator.made_by is not None and iterator.made_by[0] is iter:
        return rebuild(ConstantValue(iterator.made_by[2][position:]), outputs, code, loc, temps)
    return rebuild(SequenceValue(tuple, iterator.items[position:]), outputs, code, loc, temps)


def iterates_a_list(iterator: IteratorValue) -> bool:
    """Whether `iterator`'s items come from a list (directly or through enumerate, zip or
    reversed): after a break, Python code may change the list."""
    return any(part.of_list is not None for part in _parts(iterator))


def _parts(iterator: IteratorValue) -> list[IteratorValue]:
    """`iterator` and the iterators it was made of, at any depth."""
    parts = iterator.made_by[1] if iterator.made_by is not None else ()
    return [iterator, *(inner for part, _ in parts for inner in _parts(part))]


def _live(iterator: IteratorValue, position: int, outputs: list, code, loc, temps) -> list:
    """Instructions pushing a Python iterator giving `iterator`'s items from `position`
    on, reading the lists they come from as they are then."""
    if iterator.of_list is None and (iterator.made_by is None or iterator.made_by[0] is iter):
        return _rest(iterator, position, outputs, code, loc, temps) + [Instr("GET_ITER", loc=loc)]
    if iterator.of_list is not None:
        return call_constant(_iterator_at, [rebuild(iterator.of_list, outputs, code, loc, temps),
                                    [Instr("LOAD_CONST", position, loc=loc)]], loc)
    made_by, parts, extra = iterator.made_by
    if made_by is reversed:  # `extra`: the length; a reversed list iterator counts down its index
        (part, _), = parts
        if part.made_by is not None and type(part.made_by[2]) is range:  # a range's own iterator, counting down
            rest = ConstantValue(part.made_by[2][::-1][position:])
            return rebuild(rest, outputs, code, loc, temps) + [Instr("GET_ITER", loc=loc)]
        if part.of_list is None:  # a `reversed` object over what is left, in forward order
            rest = SequenceValue(tuple, iterator.items[position:][::-1])
            return call_constant(reversed, [rebuild(rest, outputs, code, loc, temps)], loc)
        return call_constant(_reversed_at, [rebuild(part.of_list, outputs, code, loc, temps),
                                    [Instr("LOAD_CONST", extra - 1 - position, loc=loc)]], loc)
    live_parts = [_live(part, start + position, outputs, code, loc, temps) for part, start in parts]
    if made_by is enumerate:  # `extra`: the start
        return call_constant(enumerate, [*live_parts, [Instr("LOAD_CONST", extra + position, loc=loc)]], loc)
    return call_constant(zip, live_parts, loc)


def call_constant(fn, arguments: list[list], loc) -> list:
    return call_instructions([Instr("LOAD_CONST", fn, loc=loc)], arguments, loc)


def _iterator_at(items: list, position: int):
    """`iter(items)` with `position` items already taken."""
    iterator = iter(items)
    iterator.__setstate__(position)
    return iterator


def _reversed_at(items: list, index: int):
    """`reversed(items)` about to give `items[index]`."""
    iterator = reversed(items)
    iterator.__setstate__(index)
    return iterator


def _literal_ids(code) -> set[int]:
    """The ids of `code`'s constants, those inside its constant tuples included."""
    found, todo = set(), list(code.co_consts)
    while todo:
        value = todo.pop()
        found.add(id(value))
        if type(value) in (tuple, frozenset):
            todo.extend(value)
    return found


def _constant(value: Any, literals: set[int], loc) -> list[Instr]:
    if isinstance(value, SymInt):
        raise Break("unsupported", "a symbolic size in the result", hint="sizes used as results are static "
                    "with dynamic=False")
    if type(value) in (tuple, list):
        items = [instr for item in value for instr in _constant(item, literals, loc)]
        if type(value) is tuple and all(isinstance(item, _IMMUTABLE) for item in value):
            return _load_constant(value, literals, loc)
        return items + [Instr("BUILD_TUPLE" if type(value) is tuple else "BUILD_LIST", len(value), loc=loc)]
    if not isinstance(value, _IMMUTABLE):
        raise Break("unsupported", f"returning {describe(value)} made at trace time")
    return _load_constant(value, literals, loc)


def _load_constant(value: Any, literals: set[int], loc) -> list[Instr]:
    """NOTE(constant-identity): the assembler shares equal constants of these types, as
    the compiler does, and building a code object interns name-like strings; a value
    computed at trace time (`a[:3] + b[3:]`) is a new object, so a plain LOAD_CONST would
    make it the very literal it equals (`a is c` true). One that is not among the
    original's constants (nor a small int, which CPython shares anyway) is held in a
    one-item list of its own: `LOAD_CONST [value]; LOAD_CONST 0; BINARY_SUBSCR`."""
    if type(value) not in _SHARED_BY_VALUE or id(value) in literals \
            or (type(value) is int and -5 <= value <= 256):
        return [Instr("LOAD_CONST", value, loc=loc)]
    return [Instr("LOAD_CONST", [value], loc=loc), Instr("LOAD_CONST", 0, loc=loc), Instr("BINARY_SUBSCR", loc=loc)]


def load_source(source: Source, code, loc) -> list[Instr]:
    """Instructions pushing the value `source` names, inside a frame of `code`."""
    if isinstance(source, LocalSource):
        cell = source.name in code.co_cellvars
        return [Instr("LOAD_DEREF" if cell else "LOAD_FAST", source.name, loc=loc)]
    if isinstance(source, (GlobalSource, BuiltinSource)):
        return [Instr("LOAD_GLOBAL", name_arg(source.name, "LOAD_GLOBAL"), loc=loc)]
    if isinstance(source, ClosureSource):
        return [Instr("LOAD_DEREF", FreeVar(source.name), loc=loc)]
    if isinstance(source, AttrSource):
        return load_source(source.base, code, loc) + [Instr("LOAD_ATTR", name_arg(source.name, "LOAD_ATTR"), loc=loc)]
    if isinstance(source, ItemSource):
        return load_source(source.base, code, loc) + [Instr("LOAD_CONST", source.key, loc=loc),
                                                Instr("BINARY_SUBSCR", loc=loc)]
    raise Break("unsupported", f"the transformed code cannot read {source}")


def prologue(bytecode) -> list:
    """The instructions up to and including RESUME (cells, free variables, RESUME)."""
    instructions = bytecode.instructions
    for index, instr in enumerate(instructions):
        if isinstance(instr, Instr) and instr.name == "RESUME":
            return list(instructions[:index + 1])
    raise ValueError(f"{bytecode.name} has no RESUME")


def disassembly(code) -> str:
    """dis of the transformed code, for the `bytecode` log."""
    import io

    out = io.StringIO()
    dis.dis(code, file=out)
    return out.getvalue()


def materialise(values: list[Value], outputs: list, code, loc, temps: dict[int, str]) -> list[Instr]:
    """Instructions storing each of `values`, and the lists, dicts and sourced values
    inside them, in a temporary (recorded in `temps`: id(value) -> name) once; arrays the
    graph computed stay in its result."""
    body: list[Instr] = []
    for value in values:
        if value is NULL or id(value) in temps:
            continue
        body += materialise(contents(value), outputs, code, loc, temps)
        if value.source is None and (isinstance(value, ArrayValue) or _shared_by_value(value)):
            continue  # rebuilt where used: its items, if any, are in temporaries
        body += rebuild(value, outputs, code, loc, temps)
        temps[id(value)] = TEMP.format(len(temps))
        body.append(Instr("STORE_FAST", temps[id(value)], loc=loc))
    return body


def _shared_by_value(value: Value) -> bool:
    """A tuple or an immutable constant: no one can tell two copies apart by changing one."""
    if isinstance(value, SequenceValue):
        return value.kind is tuple
    return isinstance(value, ConstantValue) and type(value.value) not in (list, dict, set, bytearray)


def replay_effect(effect, push: Callable[[Value], list[Instr]]) -> list[Instr]:
    loc = effect.loc
    values = [push(value) for value in effect.values]
    if effect.kind == "store_attr":
        return values[0] + push(effect.target) + [Instr("STORE_ATTR", effect.name, loc=loc)]
    if effect.kind == "store_global":
        return values[0] + [Instr("STORE_GLOBAL", effect.name, loc=loc)]
    key = [Instr("LOAD_CONST", effect.name, loc=loc)]
    if effect.kind == "store_item":
        return values[0] + push(effect.target) + key + [Instr("STORE_SUBSCR", loc=loc)]
    if effect.kind == "delete_item":
        return push(effect.target) + key + [Instr("DELETE_SUBSCR", loc=loc)]
    method = push(effect.target) + [Instr("LOAD_ATTR", name_arg(effect.name, "LOAD_ATTR"), loc=loc)]
    return call_instructions(method, values, loc) + [Instr("POP_TOP", loc=loc)]


# -- the break path (NOTE(resume-functions)) -------------------------------------------------------
def keep(values: list[Value], iterated: set[int], outputs: list, code, loc, temps: dict[int, str]) -> list[Instr]:
    """Instructions storing each of `values` in a temporary once (recorded in `temps`:
    id(value) -> name); an iterator whose id is in `iterated` as what iterating it gives
    (`_rebuild_iterable`), a method about to be called as bound to what the code holds."""
    body: list[Instr] = []
    for value in values:
        if id(value) not in temps:
            push = (_rebuild_iterable(value, outputs, code, loc, temps) if id(value) in iterated
                    else _push_operand(value, outputs, code, loc, temps))
            temps[id(value)] = TEMP.format(len(temps))
            body += push + [Instr("STORE_FAST", temps[id(value)], loc=loc)]
    return body


def redo(operands: list[Value], replay: list, results: list[str], temps: dict[int, str], outputs: list, code, loc,
         wrap: Callable | None = None) -> list:
    """Instructions pushing the breaking instruction's `operands` (a NULL of the call
    protocol as PUSH_NULL; with `wrap`, the callable as `wrap(callable)`,
    NOTE(captured-backward)), running it (`replay`) and storing what it leaves in the
    temporaries `results`."""
    called = _called(operands)
    body = []
    for value in operands:
        if value is NULL:
            body.append(Instr("PUSH_NULL", loc=loc))
            continue
        load = _load_operand(value, temps, outputs, code, loc)
        body += load if wrap is None or value is not called else call_constant(wrap, [load], loc)
    return body + replay + [Instr("STORE_FAST", name, loc=loc) for name in reversed(results)]


def _called(operands: list[Value]) -> Value | None:
    """The callable among a call's operands: whichever of its two slots is not NULL (the
    first when both hold a value: `method, self`)."""
    return operands[1] if len(operands) > 1 and operands[0] is NULL else operands[0] if operands else None


def under_handler(handler, prefix: list[Value], instructions: list, code, loc) -> list:
    """`instructions` run under `handler` (NOTE(grad-mode-with)): `prefix`, the stack the
    handler starts from (the `with`'s `__exit__` on top), is pushed first and popped after."""
    if handler is None or not instructions:
        return instructions
    if any(value is NULL or value.source is None for value in prefix):
        raise Break("unsupported", "the stack below a with block's body holds values computed in the trace")
    loads = [instr for value in prefix for instr in _load_operand(value, {}, [], code, loc)]
    guarded = [Instr(instr.name, instr.arg, loc=instr.loc, handler=handler) if isinstance(instr, Instr) else instr
               for instr in instructions]
    return loads + guarded + [Instr("POP_TOP", loc=loc) for _ in prefix]


def handler_code(instructions: list, handler) -> list:
    """The `with`'s cleanup and what it reaches, copied into the transformed code after
    its last return (NOTE(grad-mode-with))."""
    start = next(index for index, item in enumerate(instructions) if item is handler.target)
    reached = reachable_from(instructions, start)
    return [item for index, item in enumerate(instructions) if index in reached]


def resume_call(through: Callable, function: list, names: list[str], loc) -> list:
    """`return through(<function>, *names)`: the call of a resume function, made by
    `function`, on the locals `names` (NOTE(resume-trampoline))."""
    arguments = [[Instr("LOAD_FAST", name, loc=loc)] for name in names]
    return call_constant(through, [function, *arguments], loc) + [Instr("RETURN_VALUE", loc=loc)]


def resume_prologue(head: list, freevars: list[str], layout: tuple, names: list[str], start: Label, loc) -> list:
    """A resume function's prologue: the original's (`head`, up to RESUME), its free and
    cell variables copied from the closure (`freevars`), then the stack rebuilt as
    `layout` says (True: the next of the arguments `names`, False: a NULL, ITERATOR: an
    iterator over the next argument), then a jump to `start`."""
    arguments = iter(names)
    loads = [instr for slot in layout for instr in (
        [Instr("PUSH_NULL", loc=loc)] if not slot else [Instr("LOAD_FAST", next(arguments), loc=loc)]
        + ([Instr("GET_ITER", loc=loc)] if slot == ITERATOR else []))]
    body = [Instr("COPY_FREE_VARS", len(freevars), loc=head[-1].loc)] if freevars else []
    body += [instr for instr in head if isinstance(instr, Label) or instr.name not in ("COPY_FREE_VARS", "MAKE_CELL")]
    return body + loads + [Instr("JUMP", start, loc=loc)]


def _push_operand(value: Value, outputs: list, code, loc, temps: dict | None = None) -> list:
    """`rebuild`, and a method bound to an array, list or dict (`x.sum`, `lst.append`
    about to be called)."""
    if isinstance(value, CallableValue) and value.kind in ("method", "container_method") and value.source is None:
        bound = _load_operand(value.self, temps or {}, outputs, code, loc)
        return bound + [Instr("LOAD_ATTR", name_arg(value.target, "LOAD_ATTR"), loc=loc)]
    return rebuild(value, outputs, code, loc)


def _load_operand(value: Value, temps: dict, outputs: list, code, loc) -> list:
    """`_push_operand`, or the temporary `value` is kept in."""
    if id(value) in temps:
        return [Instr("LOAD_FAST", temps[id(value)], loc=loc)]
    return _push_operand(value, outputs, code, loc, temps)
