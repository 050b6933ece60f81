"""pyjit/frontend/bytecode.py: every code object of the standard library and of NumPy
survives decode -> assemble byte for byte, and edited instruction lists run.

The round trip loads each source file's code once (its `.pyc`, or `compile()`), walks
the nested code objects, and compares the assembled code object's fields with the
original's as bytes and tuples, so a batch of a few hundred files takes seconds (the
whole file about 30 s per interpreter). Files are batched by top-level package (the
standard library's `test` package by its subpackages) so that a failure names where it
is; each failure report shows both disassemblies. docs/frontend/bytecode.md has the figures.
"""

import dis
import importlib.util
import io
import marshal
import os
import sysconfig
import traceback
import types
import warnings
from pathlib import Path

import numpy
import pytest

from pyjit.frontend.assemble import assemble
from pyjit.frontend.bytecode import Bytecode, ExceptHandler, FreeVar, Instr, Label, decode

# ---------------------------------------------------------------------------- round trip

STDLIB = Path(sysconfig.get_paths()["stdlib"])
NUMPY = Path(numpy.__file__).parent
# Folders of the stdlib path that hold no standard library source of this interpreter.
NOT_STDLIB = {"site-packages", "__pycache__", "lib-dynload"}

# Fields that must come back equal; co_consts must come back as the same objects.
FIELDS = ("co_code", "co_linetable", "co_exceptiontable", "co_names", "co_varnames",
          "co_cellvars", "co_freevars", "co_nlocals", "co_argcount", "co_posonlyargcount",
          "co_kwonlyargcount", "co_flags", "co_name", "co_qualname", "co_filename",
          "co_firstlineno")
# Fields that hold code offsets.
LAYOUT = {"co_code", "co_linetable", "co_exceptiontable"}
# After these, control does not reach the next instruction (on any of 3.11-3.13).
EXITS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
         "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}


def source_batches(root: Path, name: str):
    """(batch id, files): one batch per top-level package of `root`, one for its
    top-level modules; the standard library's test package is split by subpackage."""
    batches = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in NOT_STDLIB and not d.startswith("config-"))
        parts = Path(folder).relative_to(root).parts
        depth = 2 if parts[:1] == ("test",) and root == STDLIB else 1
        key = "/".join((name, *parts[:depth], *("*",) * (len(parts) < depth)))
        batches.setdefault(key, []).extend(
            Path(folder) / file for file in sorted(files) if file.endswith(".py"))
    return [(key, files) for key, files in batches.items() if files]


BATCHES = source_batches(STDLIB, "stdlib") + source_batches(NUMPY, "numpy")


def compiled(path: Path) -> types.CodeType | None:
    """The module code of `path`, or None where it does not compile (test data with bad
    syntax on purpose).

    An up-to-date `__pycache__` file of this interpreter holds what compile() would
    return and loads ten times faster. Warnings are silenced, as `filterwarnings =
    error` would turn a SyntaxWarning into a failure to compile.
    """
    cached = cached_code(path)
    if cached is not None:
        return cached
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None


def cached_code(path: Path) -> types.CodeType | None:
    """The code in `path`'s `.pyc` file if its header matches this interpreter's magic
    number and the source's modification time and size (the timestamp form)."""
    try:
        data = Path(importlib.util.cache_from_source(str(path))).read_bytes()
    except OSError:
        return None
    stat = path.stat()
    header = (importlib.util.MAGIC_NUMBER + bytes(4) + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
              + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    return marshal.loads(memoryview(data)[16:]) if data[:16] == header else None


def code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def has_dead_code(code: types.CodeType) -> bool:
    """Whether some instruction follows an exit and is no jump or handler target."""
    previous = None
    for instr in dis.get_instructions(code):
        if previous in EXITS and not instr.is_jump_target:
            return True
        previous = instr.opname
    return False


def program(code: types.CodeType):
    """What two layouts of one program share: each instruction's name, argument (a jump's
    as the index of its target), and position, and the exception table's entries as
    instruction indices; EXTENDED_ARG prefixes are dropped."""
    instructions, index_at, prefix_at = [], {}, None
    for instr in dis.get_instructions(code):
        if instr.opname == "EXTENDED_ARG":
            prefix_at = instr.offset if prefix_at is None else prefix_at
            continue
        index_at[instr.offset] = index_at[instr.offset if prefix_at is None else prefix_at] = len(instructions)
        instructions.append(instr)
        prefix_at = None
    index_at[len(code.co_code)] = len(instructions)
    return ([(i.opname, index_at[i.argval] if i.opcode in dis.hasjrel else i.arg, i.positions)
             for i in instructions],
            [(index_at[e.start], index_at[e.end], index_at[e.target], e.depth, e.lasti)
             for e in dis.Bytecode(code).exception_entries])


def round_trip_error(old: types.CodeType) -> str | None:
    """What differs between `old` and `assemble(decode(old))`, or None."""
    try:
        new = assemble(decode(old))
    except Exception:
        return traceback.format_exc(limit=-3)
    wrong = [field for field in FIELDS if getattr(old, field) != getattr(new, field)]
    # A jump whose distance lies at a byte boundary has two stable encodings (255 code
    # units back without EXTENDED_ARG, 256 with one), and which one CPython 3.12 writes
    # depends on its compiler's label numbers, which no code object records. There the
    # instructions, targets, positions and handlers must match, not the offsets.
    if "co_code" in wrong and len(old.co_code) != len(new.co_code) and program(old) == program(new):
        wrong = [field for field in wrong if field not in LAYOUT]
    if len(old.co_consts) != len(new.co_consts) or any(a is not b for a, b in zip(old.co_consts, new.co_consts)):
        wrong.append("co_consts")
    # CPython counts the stack of code it has proved unreachable (the handler of a
    # `try` whose body cannot raise); assemble() walks only reachable code, and no
    # table records the depth dead code would start at, so there it may be smaller.
    if old.co_stacksize != new.co_stacksize and not (
            new.co_stacksize < old.co_stacksize and has_dead_code(old)):
        wrong.append(f"co_stacksize {old.co_stacksize} -> {new.co_stacksize}")
    if not wrong:
        return None
    return f"{', '.join(wrong)} differ\n--- original\n{disassembly(old)}--- assembled\n{disassembly(new)}"


def disassembly(code: types.CodeType) -> str:
    text = io.StringIO()
    dis.dis(code, file=text, depth=0)
    return text.getvalue()


@pytest.mark.parametrize("files", [files for _, files in BATCHES], ids=[key for key, _ in BATCHES])
def test_round_trip_is_byte_identical(files):
    failures, count = [], 0
    for path in files:
        module = compiled(path)
        for code in code_objects(module) if module else ():
            count += 1
            error = round_trip_error(code)
            if error:
                failures.append(f"{path}:{code.co_firstlineno} {code.co_qualname}: {error}")
    assert not failures, f"{len(failures)} of {count} code objects differ:\n\n" + "\n\n".join(failures[:3])


def test_batches_cover_the_standard_library_and_numpy():
    keys = [key for key, _ in BATCHES]
    assert {"stdlib/*", "stdlib/asyncio", "stdlib/test/*", "numpy/*", "numpy/_core"} <= set(keys)
    assert sum(len(files) for _, files in BATCHES) > 1500


# ------------------------------------------------------------------------ edited code

CO_OPTIMIZED_NEWLOCALS = 0x3
BINARY_ADD = dis._nb_ops.index(("NB_ADD", "+"))


def function(bytecode: Bytecode, globals_=None) -> types.FunctionType:
    return types.FunctionType(assemble(bytecode), globals_ if globals_ is not None else {})


def index_of(instructions, name: str, arg=None) -> int:
    """The position of the first instruction named `name` (with argument `arg` if given)."""
    return next(i for i, instr in enumerate(instructions)
                if isinstance(instr, Instr) and instr.name == name and (arg is None or instr.arg == arg))


def opnames(code: types.CodeType) -> list[str]:
    return [instr.opname for instr in dis.get_instructions(code)]


def test_decode_resolves_arguments_positions_and_handlers():
    def sample(items, scale):
        total = 0
        for item in items:
            try:
                total += len(item) * scale
            except TypeError:
                pass
        return total

    bytecode = decode(sample.__code__)
    instructions = [i for i in bytecode.instructions if isinstance(i, Instr)]
    by_name = {}
    for instr in instructions:
        by_name.setdefault(instr.name, instr)
    assert by_name["LOAD_GLOBAL"].arg == ("len", 1)  # the NULL of the call is pushed first
    assert {i.arg for i in instructions if i.name == "STORE_FAST"} == {"total", "item"}
    assert any(i.name == "LOAD_CONST" and i.arg == 0 for i in instructions)
    assert by_name["FOR_ITER"].arg in bytecode.instructions
    lines = {i.loc.lineno - sample.__code__.co_firstlineno for i in instructions if i.loc}
    assert lines == {0, 1, 2, 3, 4, 5, 6, 7}
    call = next(i for i in instructions if i.name == "LOAD_GLOBAL")
    assert isinstance(call.handler, ExceptHandler) and call.handler.target in bytecode.instructions
    assert call.handler.depth == 1  # the iterator stays on the stack
    assert bytecode.varnames == ["items", "scale", "total", "item"] and bytecode.argcount == 2
    assert function(bytecode, sample.__globals__)([[1, 2], None, "abc"], 10) == 50


def test_inserted_instructions_run_and_keep_line_numbers():
    def double(x):
        y = 2 / x
        return y * x

    bytecode = decode(double.__code__)
    ret = index_of(bytecode.instructions, "RETURN_VALUE")
    loc = bytecode.instructions[ret].loc
    bytecode.instructions[ret:ret] = [Instr("LOAD_CONST", 100, loc), Instr("BINARY_OP", BINARY_ADD, loc)]
    added = function(bytecode)
    assert added(4) == 102.0
    assert assemble(bytecode).co_consts[-1] == 100
    with pytest.raises(ZeroDivisionError) as info:
        added(0)
    assert info.traceback[-1].lineno + 1 == double.__code__.co_firstlineno + 1


def test_new_local_is_appended_to_varnames():
    def double(x):
        return x * 2

    bytecode = decode(double.__code__)
    ret = index_of(bytecode.instructions, "RETURN_VALUE")
    bytecode.instructions[ret:ret] = [Instr("STORE_FAST", "tmp"), Instr("LOAD_FAST", "tmp"),
                                      Instr("LOAD_FAST", "tmp"), Instr("BINARY_OP", BINARY_ADD)]
    code = assemble(bytecode)
    assert code.co_varnames == ("x", "tmp") and code.co_nlocals == 2
    assert types.FunctionType(code, {})(5) == 20


def test_new_conditional_jump_to_a_new_label():
    def increment(x):
        return x + 1

    bytecode = decode(increment.__code__)
    body = Label()
    start = index_of(bytecode.instructions, "RESUME") + 1
    bytecode.instructions[start:start] = [
        Instr("LOAD_FAST", "x"), Instr("POP_JUMP_IF_NOT_NONE", body),
        Instr("LOAD_CONST", "none"), Instr("RETURN_VALUE"), body]
    guarded = function(bytecode)
    assert guarded(None) == "none" and guarded(1) == 2


def test_jumps_take_the_direction_their_target_needs():
    top, done = Label(), Label()
    bytecode = Bytecode(
        [Instr("RESUME", 0), Instr("LOAD_CONST", 0), Instr("STORE_FAST", "total"),
         top, Instr("LOAD_FAST", "node"), Instr("POP_JUMP_IF_NONE", done),
         Instr("LOAD_FAST", "total"), Instr("LOAD_FAST", "node"), Instr("LOAD_CONST", 0),
         Instr("BINARY_SUBSCR"), Instr("BINARY_OP", BINARY_ADD), Instr("STORE_FAST", "total"),
         Instr("LOAD_FAST", "node"), Instr("LOAD_CONST", 1), Instr("BINARY_SUBSCR"),
         Instr("STORE_FAST", "node"), Instr("JUMP", top),
         done, Instr("LOAD_FAST", "total"), Instr("RETURN_VALUE")],
        name="total", argcount=1, flags=CO_OPTIMIZED_NEWLOCALS, varnames=["node"])
    code = assemble(bytecode)
    assert types.FunctionType(code, {})((1, (2, (3, None)))) == 6
    assert code.co_varnames == ("node", "total") and code.co_stacksize == 3
    assert "JUMP_BACKWARD" in opnames(code)


def test_long_jumps_get_extended_args():
    def count(n):
        total = 0
        while n:
            total += n
            n -= 1
        return total

    bytecode = decode(count.__code__)
    body = next(i for i, instr in enumerate(bytecode.instructions)
                if isinstance(instr, Instr) and isinstance(instr.arg, Label)) + 1
    bytecode.instructions[body:body] = [Instr("NOP") for _ in range(300)]  # between test and jump back
    code = assemble(bytecode)
    assert "EXTENDED_ARG" in opnames(code)
    assert types.FunctionType(code, {})(10) == 55
    again = assemble(decode(code))
    assert (again.co_code, again.co_linetable) == (code.co_code, code.co_linetable)


def test_resume_function_jumps_into_a_loop_with_stack_values_as_arguments():
    def accumulate(n):
        total = 0
        for i in range(n):
            total += i
        return total

    bytecode = decode(accumulate.__code__)
    instructions = bytecode.instructions
    body = index_of(instructions, "FOR_ITER") + 1  # where the loop has pushed `i`
    resume_at = Label()
    instructions.insert(body, resume_at)
    start = index_of(instructions, "RESUME") + 1
    instructions[start:start] = [Instr("LOAD_FAST", "stack0"), Instr("LOAD_FAST", "stack1"),
                                 Instr("JUMP", resume_at)]
    bytecode.varnames = ["stack0", "stack1", "total", "n", "i"]
    bytecode.argcount = 3
    resume = function(bytecode, accumulate.__globals__)
    iterator = iter(range(10))
    consumed = [next(iterator) for _ in range(3)]
    assert resume(iterator, consumed[-1], sum(consumed[:-1])) == accumulate(10)


def test_inserted_try_region_catches():
    handler = Label()
    catch = ExceptHandler(handler, depth=0, lasti=False)
    bytecode = Bytecode(
        [Instr("RESUME", 0),
         Instr("LOAD_CONST", 1, handler=catch), Instr("LOAD_FAST", "x", handler=catch),
         Instr("BINARY_OP", dis._nb_ops.index(("NB_TRUE_DIVIDE", "/")), handler=catch),
         Instr("RETURN_VALUE"),
         handler, Instr("PUSH_EXC_INFO"), Instr("POP_TOP"), Instr("POP_EXCEPT"),
         Instr("LOAD_CONST", "fallback"), Instr("RETURN_VALUE")],
        name="reciprocal", argcount=1, flags=CO_OPTIMIZED_NEWLOCALS, varnames=["x"])
    code = assemble(bytecode)
    reciprocal = types.FunctionType(code, {})
    assert reciprocal(4) == 0.25 and reciprocal(0) == "fallback"
    (entry,) = dis.Bytecode(code).exception_entries
    assert (entry.depth, entry.lasti) == (0, False)
    assert code.co_stacksize == 2


def test_locals_past_slot_15_split_paired_instructions():
    def product(a):
        x = a + 1
        y = a + 2
        return x * y

    bytecode = decode(product.__code__)
    bytecode.varnames = ["a", *(f"unused{i}" for i in range(20)), "x", "y"]
    code = assemble(bytecode)
    assert types.FunctionType(code, {})(1) == 6
    pairs = [i for i in dis.get_instructions(code) if i.opname.endswith("_FAST_LOAD_FAST")]
    assert all(i.arg >> 4 < 16 for i in pairs) and code.co_varnames.index("y") == 22


def test_closure_cells_and_free_variables():
    def outer(a):
        b = a * 2

        def inner():
            return a + b

        return inner

    bytecode = decode(outer.__code__)
    assert bytecode.cellvars == ["a", "b"] and "a" in bytecode.varnames
    assert function(bytecode)(3)() == 9
    inner = decode(outer(1).__code__)
    loads = [i.arg for i in inner.instructions if isinstance(i, Instr) and i.name == "LOAD_DEREF"]
    assert loads == ["a", "b"] and all(type(name) is FreeVar for name in loads)


def test_a_free_variable_sharing_a_cell_name_keeps_its_slot():
    namespace = {}
    exec("class Outer:\n"
         "    def method(self):\n"
         "        class X:\n"
         "            x = __class__  # Outer, a free variable of X's body\n"
         "            def f(self):\n"
         "                return __class__  # X, a cell of X's body\n"
         "        return X\n", namespace)
    body = next(c for c in code_objects(namespace["Outer"].method.__code__) if c.co_name == "X")
    assert body.co_cellvars == body.co_freevars == ("__class__",)
    assert assemble(decode(body)).co_code == body.co_code
    X = namespace["Outer"]().method()
    assert X.x is namespace["Outer"] and X().f() is X


@pytest.mark.parametrize("make, message", [
    (lambda: Instr("NO_SUCH_OP"), "not an opcode"),
    (lambda: assemble(Bytecode([Instr("JUMP", Label()), Instr("RETURN_VALUE")])), "must be a Label placed"),
    (lambda: assemble(Bytecode([Instr("LOAD_DEREF", "x"), Instr("RETURN_VALUE")], varnames=["x"])),
     "not a cell or free variable"),
    (lambda: assemble(Bytecode([Instr("POP_TOP"), Instr("RETURN_VALUE")])), "pops an empty stack"),
    (lambda: assemble(Bytecode([Instr("LOAD_CONST", 1), Instr("POP_TOP")])), "runs past this last"),
    (lambda: assemble(Bytecode([Instr("LOAD_GLOBAL", "len"), Instr("RETURN_VALUE")])), "(name, flags"),
    (lambda: assemble(Bytecode([Instr("NOP", 3), Instr("RETURN_VALUE")])), "takes no argument"),
    (lambda: assemble(Bytecode([])), "at least one instruction"),
    (lambda: assemble(Bytecode([Instr("JUMP_BACKWARD_NO_INTERRUPT", label := Label()), label,
                                Instr("RETURN_VALUE")])), "no such jump forward"),
    (lambda: assemble(Bytecode([label := Label(), label, Instr("RETURN_VALUE")])), "placed twice"),
])
def test_bad_instruction_lists_are_refused(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()
