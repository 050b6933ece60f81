"""The handlers of the opcodes that work on values (NOTE(opcode-table) in
opcode_table.py): locals and the stack, names and attributes, calls, operators,
subscripts, containers and stores, f-strings.
"""

from __future__ import annotations

import dis

from ..ops import REGISTRY
from .attributes import load_attr
from .breaks import Break
from .bytecode import NULL_BEFORE_CALLABLE, Instr, attribute_load, call_start, compare_op, is_method_load, replay_call
from .calls import call
from .containers import build_dict, build_set
from .iteration import consume, iterate
from .opcode_table import OnBreak, handler, redone
from .operators import binary, constant_op, inplace_binary, is_scalar, store_array_item, subscript, truth
from .strings import formatted
from .values import NULL, ArrayValue, ConstantValue, DictValue, SequenceValue, describe, is_constant, python_value

_UNARY_BREAK, _BINARY_BREAK = redone(1), redone(2)


# -- locals, constants, the stack ----------------------------------------------------------------
@handler("RESUME", "NOP", "COPY_FREE_VARS", "MAKE_CELL")
@handler("PRECALL", until=(3, 11))
def _nothing(tracer, instr):
    """The prologue (cells and free variables are read through sources) and no-ops."""


@handler("LOAD_FAST")
@handler("LOAD_FAST_CHECK", since=(3, 12))
def _load_fast(tracer, instr):
    tracer.push(tracer.load_local(instr.arg))


@handler("LOAD_FAST_LOAD_FAST", since=(3, 13))
def _load_fast_pair(tracer, instr):
    for name in instr.arg:
        tracer.push(tracer.load_local(name))


@handler("STORE_FAST")
def _store_fast(tracer, instr):
    tracer.locals[instr.arg] = tracer.pop()


@handler("DELETE_FAST")
def _delete_fast(tracer, instr):
    """`del x` unbinds the local (a printed GraphModule frees its values this way)."""
    name = instr.arg
    if tracer.locals.get(name) is NULL or (name not in tracer.locals and name not in tracer.arguments):
        raise Break("user_error", f"local variable {name!r} is read before it is assigned")  # Python's error
    tracer.locals[name] = NULL


@handler("STORE_FAST_STORE_FAST", since=(3, 13))
def _store_fast_pair(tracer, instr):
    for name in instr.arg:
        tracer.locals[name] = tracer.pop()


@handler("STORE_FAST_LOAD_FAST", since=(3, 13))
def _store_load_fast(tracer, instr):
    store, load = instr.arg
    tracer.locals[store] = tracer.pop()
    tracer.push(tracer.load_local(load))


# The exception handler of an inlined comprehension: restore the variable, re-raise.
COMPREHENSION_CLEANUP = ("SWAP", "POP_TOP", "SWAP", "STORE_FAST", "RERAISE")


@handler("LOAD_FAST_AND_CLEAR", since=(3, 12))
def _load_fast_and_clear(tracer, instr):
    """NOTE(comprehensions): an inlined comprehension (3.12+) saves the outer binding of
    its variable on the stack (NULL when it has none) and unbinds it; a STORE_FAST at its
    end puts it back, NULL meaning unbound again (a local whose value is NULL is unbound,
    and is not passed to resume functions). Its exception handler only restores that
    binding and re-raises (`COMPREHENSION_CLEANUP`), so ops inside it are captured
    (`Tracer.in_try_block`)."""
    name = instr.arg
    bound = tracer.locals.get(name, NULL if name not in tracer.arguments else None) is not NULL
    tracer.push(tracer.load_local(name) if bound else NULL)
    tracer.locals[name] = NULL


@handler("LOAD_DEREF")
def _load_deref(tracer, instr):
    tracer.push(tracer.load_closure(instr.arg))


@handler("LOAD_CONST")
def _load_const(tracer, instr):
    tracer.push(ConstantValue(instr.arg))


@handler("RETURN_VALUE")
def _return_value(tracer, instr):
    tracer.returned = tracer.pop()


@handler("RETURN_CONST", since=(3, 12))
def _return_const(tracer, instr):
    tracer.returned = ConstantValue(instr.arg)


@handler("POP_TOP")
def _pop_top(tracer, instr):
    tracer.pop()


@handler("PUSH_NULL")
def _push_null(tracer, instr):
    tracer.push(NULL)


@handler("COPY")
def _copy(tracer, instr):
    tracer.push(tracer.stack[-instr.arg])


@handler("SWAP")
def _swap(tracer, instr):
    stack = tracer.stack
    stack[-1], stack[-instr.arg] = stack[-instr.arg], stack[-1]


# -- names and attributes ---------------------------------------------------------------------
def _push_callable(tracer, value) -> None:
    """A value about to be called, with the NULL the call protocol puts beside it
    (NOTE(bytecode-versions): below it before 3.13, above it from 3.13)."""
    if NULL_BEFORE_CALLABLE:
        tracer.push(NULL)
        tracer.push(value)
    else:
        tracer.push(value)
        tracer.push(NULL)


@handler("LOAD_GLOBAL")
def _load_global(tracer, instr):
    name, flags = instr.arg
    value = tracer.side_effects.load_global(tracer, name)  # a pending store first (NOTE(side-effects))
    if flags & 1:
        _push_callable(tracer, value)
    else:
        tracer.push(value)


def _attribute_effect(instructions: list, index: int):
    """A method load leaves `NULL, bound method` (or the reverse on 3.13), which a CALL
    takes like `method, self`: the attribute is read plainly."""
    instr = instructions[index]
    produced = ((False, True) if NULL_BEFORE_CALLABLE else (True, False)) if is_method_load(instr) else (True,)
    return 1, produced, [attribute_load(instr)], [index + 1]


_ATTRIBUTE_BREAK = OnBreak(_attribute_effect)


@handler("LOAD_ATTR", on_break=_ATTRIBUTE_BREAK)
def _load_attr(tracer, instr):
    name, flags = instr.arg if isinstance(instr.arg, tuple) else (instr.arg, 0)
    value = load_attr(tracer, tracer.pop(), name)
    if flags & 1:  # a method load: pushed as the attribute with its NULL (bound already)
        _push_callable(tracer, value)
    else:
        tracer.push(value)


@handler("LOAD_METHOD", until=(3, 11), on_break=_ATTRIBUTE_BREAK)
def _load_method(tracer, instr):
    _push_callable(tracer, load_attr(tracer, tracer.pop(), instr.arg))


# -- calls ------------------------------------------------------------------------------------
@handler("KW_NAMES", until=(3, 12))
def _kw_names(tracer, instr):
    tracer.kw_names = instr.arg


def _call_effect(instructions: list, index: int):
    """The callable, its NULL or self, (3.13's names tuple,) and the arguments."""
    instr = instructions[index]
    consumed = instr.arg + 2 + (instr.name == "CALL_KW")
    replay = replay_call(instructions, index)
    following = instructions[index + 1]
    if isinstance(following, Instr) and following.name == "POP_TOP":
        # A call made for its effect (`d.popitem()` in a loop): its result is dropped at
        # once, as Python drops it, and the resume function's POP_TOP drops a None; kept
        # alive as its argument, a `__del__` would run late (after the loop's next test).
        replay += [Instr("POP_TOP", loc=instr.loc), Instr("LOAD_CONST", None, loc=instr.loc)]
    return consumed, (True,), replay, [index + 1]


_CALL_BREAK = OnBreak(_call_effect, start=call_start)


@handler("CALL", on_break=_CALL_BREAK)
def _call(tracer, instr):
    names, tracer.kw_names = tracer.kw_names, ()
    _call_with(tracer, instr.arg, names)


@handler("CALL_KW", since=(3, 13), on_break=_CALL_BREAK)
def _call_kw(tracer, instr):
    _call_with(tracer, instr.arg, python_value(tracer.pop()))


def _call_with(tracer, count: int, names: tuple[str, ...]) -> None:
    """The stack holds `callable, NULL` or `NULL, callable` (by version) or `method, self`,
    then `count` arguments, the last `len(names)` of them keywords."""
    args = tracer.popn(count)
    first, second = tracer.popn(2)
    if first is NULL:
        fn = second
    elif second is NULL:
        fn = first
    else:
        fn, args = first, [second, *args]
    split = len(args) - len(names)
    tracer.push(call(tracer, fn, args[:split], dict(zip(names, args[split:]))))


# -- operators --------------------------------------------------------------------------------
_NB_OPS = [symbol for _, symbol in dis._nb_ops]  # BINARY_OP's oparg indexes this table


@handler("BINARY_OP", on_break=_BINARY_BREAK)
def _binary_op(tracer, instr):
    symbol = _NB_OPS[instr.arg]
    right = tracer.pop()
    left = tracer.pop()
    if symbol.endswith("=") and isinstance(left, ArrayValue) and not is_scalar(left):
        tracer.push(inplace_binary(tracer, symbol[:-1], left, right, stored_back=True))  # NOTE(functionalisation)
        return
    if symbol.endswith("="):
        if not (is_scalar(left) or all(is_constant(value) and not isinstance(value, SequenceValue)
                                       for value in (left, right))):
            raise Break("unsupported", f"in-place operator {symbol} on {describe(left)}",
                        hint="Python runs it at a graph break; write x = x + y to keep it in the graph")
        symbol = symbol[:-1]
    tracer.push(binary(tracer, symbol, left, right))


@handler("COMPARE_OP", on_break=_BINARY_BREAK)
def _compare_op(tracer, instr):
    right = tracer.pop()
    tracer.push(binary(tracer, compare_op(instr.arg), tracer.pop(), right))


@handler("UNARY_NEGATIVE", on_break=_UNARY_BREAK)
def _unary_negative(tracer, instr):
    value = tracer.pop()
    if isinstance(value, ArrayValue):
        tracer.push(tracer.call_op(REGISTRY["negative"], (value,), {}))
    else:
        tracer.push(constant_op(lambda v: -v, value, "-"))


@handler("UNARY_INVERT", on_break=_UNARY_BREAK)
def _unary_invert(tracer, instr):
    value = tracer.pop()
    if isinstance(value, ArrayValue):
        name = "logical_not" if value.node.meta.dtype == bool else "invert"
        tracer.push(tracer.call_op(REGISTRY[name], (value,), {}))
    else:
        tracer.push(constant_op(lambda v: ~v, value, "~"))


@handler("UNARY_NOT", on_break=_UNARY_BREAK)
def _unary_not(tracer, instr):
    tracer.push(ConstantValue(not truth(tracer.pop())))


@handler("TO_BOOL", since=(3, 13), on_break=_UNARY_BREAK)
def _to_bool(tracer, instr):
    tracer.push(ConstantValue(truth(tracer.pop())))


@handler("UNARY_POSITIVE", until=(3, 11), on_break=_UNARY_BREAK)
def _unary_positive(tracer, instr):
    tracer.push(constant_op(lambda v: +v, tracer.pop(), "unary +"))


@handler("CALL_INTRINSIC_1", since=(3, 12))
def _call_intrinsic_1(tracer, instr):
    kind = dis._intrinsic_1_descs[instr.arg]
    value = tracer.pop()
    if kind == "INTRINSIC_LIST_TO_TUPLE" and isinstance(value, SequenceValue):
        tracer.push(SequenceValue(tuple, list(value.items)))
    elif kind == "INTRINSIC_UNARY_POSITIVE":
        tracer.push(constant_op(lambda v: +v, value, "unary +"))
    else:
        raise Break("unsupported", f"the operation {kind} is not modelled")


@handler("IS_OP", on_break=_BINARY_BREAK)
def _is_op(tracer, instr):
    right, left = tracer.pop(), tracer.pop()
    nones = [isinstance(v, ConstantValue) and v.value is None for v in (left, right)]
    if not any(nones):
        raise Break("unsupported", "`is` between values that are not None")
    tracer.push(ConstantValue(all(nones) != bool(instr.arg)))


@handler("CONTAINS_OP", on_break=_BINARY_BREAK)
def _contains_op(tracer, instr):
    right, left = tracer.pop(), tracer.pop()
    if isinstance(right, DictValue) and isinstance(left, ConstantValue):  # hashed as Python does: TypeError
        tracer.push(constant_op(lambda key: (key in dict.fromkeys(right.keys())) != bool(instr.arg), left, "in"))
        return
    if not (isinstance(left, ConstantValue) and isinstance(right, ConstantValue)):
        raise Break("unsupported", "`in` on values that are not constants")
    tracer.push(constant_op(lambda v: (left.value in v) != bool(instr.arg), right, "in"))


# -- subscripts and containers ------------------------------------------------------------------
@handler("BINARY_SUBSCR", on_break=_BINARY_BREAK)
def _binary_subscr(tracer, instr):
    index = tracer.pop()
    tracer.push(subscript(tracer, tracer.pop(), index))


@handler("BINARY_SLICE", since=(3, 12), on_break=redone(3))
def _binary_slice(tracer, instr):
    stop, start = tracer.pop(), tracer.pop()
    container = tracer.pop()
    tracer.push(subscript(tracer, container, _slice([start, stop])))


@handler("STORE_SLICE", since=(3, 12))
def _store_slice(tracer, instr):
    stop, start = tracer.pop(), tracer.pop()
    container, value = tracer.pop(), tracer.pop()
    if not isinstance(container, ArrayValue):
        raise Break("unsupported", "a store into a slice of a value that is not an array is not captured")
    store_array_item(tracer, container, _slice([start, stop]), value)  # NOTE(functionalisation)


@handler("BUILD_SLICE")
def _build_slice(tracer, instr):
    tracer.push(_slice(tracer.popn(instr.arg)))


def _slice(parts) -> ConstantValue:
    if not all(isinstance(part, ConstantValue) for part in parts):
        raise Break("unsupported", "a slice bound that is not a constant")
    return ConstantValue(slice(*(part.value for part in parts)))


@handler("BUILD_TUPLE")
def _build_tuple(tracer, instr):
    tracer.push(SequenceValue(tuple, tracer.popn(instr.arg)))


@handler("BUILD_LIST")
def _build_list(tracer, instr):
    tracer.push(SequenceValue(list, tracer.popn(instr.arg)))


# -- stores and dicts (NOTE(side-effects)) ---------------------------------------------------------
@handler("STORE_ATTR")
def _store_attr(tracer, instr):
    obj = tracer.pop()
    tracer.side_effects.store_attr(tracer, obj, instr.arg, tracer.pop())


@handler("STORE_GLOBAL")
def _store_global(tracer, instr):
    tracer.side_effects.store_global(tracer, instr.arg, tracer.pop())


@handler("STORE_SUBSCR")
def _store_subscr(tracer, instr):
    key, container = tracer.pop(), tracer.pop()
    if isinstance(container, ArrayValue):
        store_array_item(tracer, container, key, tracer.pop())  # NOTE(functionalisation)
        return
    tracer.side_effects.store_item(tracer, container, key, tracer.pop())


@handler("DELETE_SUBSCR")
def _delete_subscr(tracer, instr):
    key = tracer.pop()
    tracer.side_effects.delete_item(tracer, tracer.pop(), key)


@handler("LIST_APPEND")
def _list_append(tracer, instr):
    """The list built so far sits `arg` items down once the value is popped (comprehensions)."""
    value = tracer.pop()
    tracer.side_effects.call_method(tracer, tracer.stack[-instr.arg], "append", [value])


@handler("LIST_EXTEND")
def _list_extend(tracer, instr):
    """`[*a, *b]` and list displays of constants (`BUILD_LIST 0; LOAD_CONST (1, 2, 3)`)."""
    value = tracer.pop()
    tracer.side_effects.call_method(tracer, tracer.stack[-instr.arg], "extend", [value])


@handler("LIST_TO_TUPLE", until=(3, 11))
def _list_to_tuple(tracer, instr):
    built = tracer.pop()  # the list BUILD_LIST made for `(*a, *b)`
    tracer.push(SequenceValue(tuple, list(built.items)))


@handler("BUILD_MAP")
def _build_map(tracer, instr):
    flat = tracer.popn(2 * instr.arg)
    tracer.push(build_dict(list(zip(flat[::2], flat[1::2]))))


@handler("BUILD_CONST_KEY_MAP")
def _build_const_key_map(tracer, instr):
    keys = python_value(tracer.pop())
    tracer.push(build_dict([(ConstantValue(key), value) for key, value in zip(keys, tracer.popn(instr.arg))]))


@handler("MAP_ADD")
def _map_add(tracer, instr):
    value = tracer.pop()
    key = tracer.pop()
    tracer.side_effects.store_item(tracer, tracer.stack[-instr.arg], key, value)


@handler("DICT_UPDATE", "DICT_MERGE")
def _dict_update(tracer, instr):
    """`{**a, **b}`; DICT_MERGE (`f(**a, **b)`) refuses a key given twice."""
    update = tracer.pop()
    target = tracer.stack[-instr.arg]
    if instr.name == "DICT_MERGE" and not isinstance(update, DictValue):
        raise Break("unsupported", f"** unpacking of {describe(update)}")
    if instr.name == "DICT_MERGE" and set(update.keys()) & set(target.keys()):
        raise Break("user_error", "TypeError: got multiple values for a keyword argument")
    tracer.side_effects.call_method(tracer, target, "update", [update])


@handler("BUILD_SET")
def _build_set(tracer, instr):
    tracer.push(build_set(tracer.popn(instr.arg)))


@handler("SET_ADD")
def _set_add(tracer, instr):
    """Set comprehensions: the set sits `arg` items down once the element is popped."""
    element = tracer.pop()
    tracer.side_effects.call_method(tracer, tracer.stack[-instr.arg], "add", [element])


@handler("SET_UPDATE")
def _set_update(tracer, instr):
    """`{*a, *b}`, and set displays of three constants or more (`BUILD_SET 0; LOAD_CONST
    frozenset(...); SET_UPDATE 1`)."""
    update = tracer.pop()
    tracer.side_effects.call_method(tracer, tracer.stack[-instr.arg], "update", [update])


@handler("UNPACK_SEQUENCE")
def _unpack_sequence(tracer, instr):
    items = consume(iterate(tracer, tracer.pop()))
    if len(items) != instr.arg:
        raise Break("user_error", f"cannot unpack {len(items)} values into {instr.arg}")
    tracer.stack.extend(reversed(items))


@handler("UNPACK_EX")
def _unpack_ex(tracer, instr):
    """`first, *middle, last = value`: the oparg counts the names before (low byte) and
    after (high byte) the starred one, which gets a list."""
    before, after = instr.arg & 0xFF, instr.arg >> 8
    items = consume(iterate(tracer, tracer.pop()))
    if len(items) < before + after:
        raise Break("user_error", f"not enough values to unpack (expected at least {before + after}, got "
                    f"{len(items)})")
    middle = SequenceValue(list, items[before:len(items) - after])
    tracer.stack.extend(reversed([*items[:before], middle, *items[len(items) - after:]]))


# -- f-strings (NOTE(string-formatting) in strings.py) ------------------------------------------
@handler("FORMAT_VALUE", until=(3, 12))
def _format_value(tracer, instr):
    spec = tracer.pop() if instr.arg & 0x04 else None
    tracer.push(formatted(tracer.pop(), spec, instr.arg & 0x03))


@handler("CONVERT_VALUE", since=(3, 13))
def _convert_value(tracer, instr):
    tracer.push(formatted(tracer.pop(), None, instr.arg))


@handler("FORMAT_SIMPLE", since=(3, 13))
def _format_simple(tracer, instr):
    tracer.push(formatted(tracer.pop()))


@handler("FORMAT_WITH_SPEC", since=(3, 13))
def _format_with_spec(tracer, instr):
    spec = tracer.pop()
    tracer.push(formatted(tracer.pop(), spec))


@handler("BUILD_STRING")
def _build_string(tracer, instr):
    tracer.push(ConstantValue("".join(python_value(part) for part in tracer.popn(instr.arg))))
