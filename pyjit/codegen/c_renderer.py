"""The C renderer: kernel IR (pyjit/codegen/kernel_ir.py) as C with OpenMP.

NOTE(c-renderer): every kernel is `void NAME(char *const *buffers, const int64_t *sizes)`
(the ABI of pyjit._C's kernel loader); all kernels of a graph share one translation
unit and its prelude. Loops use int64_t indices; the outermost loop nest of a parallel
Loop is `omp parallel for` (collapsed), when its work is large enough to pay for waking
the threads, and the innermost loop of every nest is `omp simd`. Values are SSA
temporaries computed unconditionally (a `where` selects between computed values), so
no call sits in a branch and every loop vectorizes.
Math: the functions glibc's vector library (libmvec) implements are declared with
`#pragma omp declare simd notinbranch`, so in a vectorized loop GCC calls their vector
variants (`_ZGVdN8v_expf` on AVX2); the build uses -fno-math-errno, never -ffast-math,
so NaN, infinities and signed zeros keep IEEE semantics. Everything else that must
inline is a `__builtin_*` (the build passes -fno-builtin, which keeps GCC from treating
the declared names as its own builtins). Integer arithmetic that C leaves undefined on
overflow is done in unsigned types (NumPy wraps around); division by zero and the
other integer corner cases follow NumPy (docs/codegen.md lists them).
A CUDA renderer overrides the rows of OPS that differ and the loop rendering.
"""

from __future__ import annotations

import numpy as np

from .kernel_ir import Call, Constant, Index, IndexValue, Kernel, Load, Loop, Mod, Reduce, Scratch, Var, walk_values

C_TYPES = {np.dtype(name): ctype for name, ctype in [
    ("bool", "uint8_t"), ("int8", "int8_t"), ("int16", "int16_t"), ("int32", "int32_t"), ("int64", "int64_t"),
    ("uint8", "uint8_t"), ("uint16", "uint16_t"), ("uint32", "uint32_t"), ("uint64", "uint64_t"),
    ("float32", "float"), ("float64", "double")]}

# The libmvec functions (float and double variants) of glibc 2.35+ that the formula
# language uses, by scalar op: declared `omp declare simd` in the prelude.
# NOTE(vector-math-accuracy): a kernel's result of a VECTOR_MATH function is at most
# VECTOR_MATH_ULPS units in the last place from the exact result, in float32 and float64,
# wherever that result is finite (NaN and infinities are NumPy's). That is the accuracy
# glibc gives these functions: the vectorized loop calls its vector variants (libmvec),
# which glibc tests against a 4-ulp maximum error on their domains (its libmvec notes),
# and a loop's remainder elements call the scalar functions, whose known errors glibc's
# manual lists ("Known Maximum Errors in Math Functions") within that. The variant that
# runs (SSE, AVX2 or AVX-512, by config.kernel_march and the CPU) changes the last bits:
# results may differ by a few ulp from one CPU to another, never beyond the promise.
# NumPy has its own errors (its SIMD float32 loops, SVML on AVX-512), so a kernel and
# NumPy may differ by up to the sum of the two. sqrt is correctly rounded (half an ulp).
VECTOR_MATH_ULPS = 4
VECTOR_MATH = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "sin": "sin", "cos": "cos",
               "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsin": "asin", "arccos": "acos",
               "arctan": "atan", "arctan2": "atan2", "erf": "erf", "pow": "pow"}
# Work (elements times a cost) below which a loop nest stays on one thread: about 30 µs
# of serial work here, more than waking a sleeping OpenMP thread costs
# (NOTE(omp-wait-policy) in build.py; the 16k-element sin/cos/exp chain stays serial).
PARALLEL_MIN_WORK = 1 << 19
# How much more than an add one call of vector math costs, for that estimate.
VECTOR_MATH_COST = 8


def ctype(dtype: np.dtype) -> str:
    return C_TYPES[np.dtype(dtype)]


def utype(dtype: np.dtype) -> str:
    """The unsigned type integer arithmetic of `dtype` wraps around in (C promotes
    narrower types to int, whose overflow would be undefined)."""
    return "uint64_t" if np.dtype(dtype).itemsize == 8 else "uint32_t"


def suffix(dtype: np.dtype) -> str:
    return "f" if np.dtype(dtype) == np.float32 else ""


def float_literal(value: float, dtype: np.dtype) -> str:
    tail = suffix(dtype)
    if value != value:
        return f'__builtin_nan{tail}("")'
    if value in (float("inf"), float("-inf")):
        return f"{'-' if value < 0 else ''}__builtin_inf{tail}()"
    return float(value).hex() + tail


def literal(value, dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float_literal(value, dtype)
    value = int(value)
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype == np.int64 and value == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    if dtype.itemsize == 8:
        return f"{value}{'ULL' if dtype.kind == 'u' else 'LL'}"
    return f"(({ctype(dtype)}){value})"


# -- the op table ------------------------------------------------------------------------
# Each row renders `op(args)` given the C text of the arguments, their dtypes and the
# result's dtype.
def _wrapping(symbol: str, bool_symbol: str | None = None):
    def render(args, dtypes, out):
        a, b = args
        if out.kind == "f":
            return f"{a} {symbol} {b}"
        if out.kind == "b":
            return f"({a} {bool_symbol} {b})"
        return f"({ctype(out)})(({utype(out)}){a} {symbol} ({utype(out)}){b})"
    return render


def _by_kind(float_text: str, int_text: str, unsigned_text: str | None = None, bool_text: str | None = None):
    """A row whose text depends on the kind of the result's dtype ({0}, {1}: arguments,
    {T}: C type, {U}: wrapping type, {f}: float suffix)."""
    def render(args, dtypes, out):
        kind = dtypes[0].kind
        text = {"f": float_text, "i": int_text, "u": unsigned_text or int_text, "b": bool_text or unsigned_text
                or int_text}[kind]
        return text.format(*args, T=ctype(dtypes[0]), U=utype(dtypes[0]), f=suffix(dtypes[0]))
    return render


def _float_call(function: str):
    return lambda args, dtypes, out: f"{function}{suffix(out)}({', '.join(args)})"


def _integer_helper(helper: str, unsigned_text: str):
    def render(args, dtypes, out):
        if out.kind == "f":
            return f"pyjit_{helper}_f{out.itemsize * 8}({args[0]}, {args[1]})"
        if out.kind == "u":
            return unsigned_text.format(*args, T=ctype(out))
        return f"({ctype(out)})pyjit_{helper}_i64((int64_t){args[0]}, (int64_t){args[1]})"
    return render


def _power(args, dtypes, out):
    if out.kind == "f":
        return f"pow{suffix(out)}({args[0]}, {args[1]})"
    return f"({ctype(out)})pyjit_ipow((uint64_t){args[0]}, (uint64_t){args[1]})"


_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _comparison(symbol: str):
    def render(args, dtypes, out):
        a, b = args
        if dtypes[0] == dtypes[1] or {dtypes[0].kind, dtypes[1].kind} != {"i", "u"}:
            return f"({a} {symbol} {b})"
        # int64 against uint64 (NumPy compares exactly): a negative value is below every unsigned one.
        relation = symbol
        if dtypes[0].kind == "u":
            a, b, relation = b, a, _SWAPPED[symbol]
        negative_answer = "1" if relation in ("<", "<=", "!=") else "0"
        return f"({a} < 0 ? {negative_answer} : (uint64_t){a} {relation} {b})"
    return render


def _cast(args, dtypes, out):
    (a,), source = args, dtypes[0]
    if out.kind == "b":
        return f"({a} != 0)"
    if source.kind != "f" or out.kind == "f":
        return f"({ctype(out)}){a}"
    # Float to integer as NumPy's loops do it here: through int32 for the small types
    # and through int64, unsigned types by the offset trick, so out-of-range values and
    # NaN give the same (x86 "integer indefinite") results.
    if out.itemsize < 4:
        return f"({ctype(out)})(int32_t){a}"
    if out.kind == "i":
        return f"({ctype(out)}){a}"
    bits = out.itemsize * 8
    signed, half = ("int32_t", "2147483648.0") if bits == 32 else ("int64_t", "9223372036854775808.0")
    half += suffix(source)
    top = "0x80000000u" if bits == 32 else "0x8000000000000000ull"
    return (f"({a} >= {half} ? ({ctype(out)})(({ctype(out)})({signed})({a} - {half}) ^ {top}) "
            f": ({ctype(out)})({signed}){a})")


OPS = {
    "add": _wrapping("+", "|"), "sub": _wrapping("-"), "mul": _wrapping("*", "&"),
    "div": lambda args, dtypes, out: f"{args[0]} / {args[1]}",
    "floordiv": _integer_helper("floordiv", "({1} == 0 ? 0 : ({T})({0} / {1}))"),
    "mod": _integer_helper("mod", "({1} == 0 ? 0 : ({T})({0} % {1}))"),
    "pow": _power,
    "neg": _by_kind("-{0}", "({T})(0 - ({U}){0})"),
    "abs": _by_kind("__builtin_fabs{f}({0})", "({T})({0} < 0 ? 0 - ({U}){0} : ({U}){0})", "{0}"),
    "sign": _by_kind("({0} > 0 ? ({T})1 : ({0} < 0 ? ({T})-1 : ({0} == 0 ? ({T})0 : {0})))",
                     "({T})(({0} > 0) - ({0} < 0))", "({T})({0} > 0)"),
    "square": lambda args, dtypes, out: OPS["mul"]([args[0], args[0]], dtypes * 2, out),
    "reciprocal": lambda args, dtypes, out: f"({ctype(out)})1 / {args[0]}",
    "maximum": _by_kind("(({0} > {1} || {0} != {0}) ? {0} : {1})", "({0} > {1} ? {0} : {1})",
                        bool_text="({0} | {1})"),
    "minimum": _by_kind("(({0} < {1} || {0} != {0}) ? {0} : {1})", "({0} < {1} ? {0} : {1})",
                        bool_text="({0} & {1})"),
    "eq": _comparison("=="), "ne": _comparison("!="), "lt": _comparison("<"), "le": _comparison("<="),
    "gt": _comparison(">"), "ge": _comparison(">="),
    "logical_and": lambda args, dtypes, out: f"(({args[0]} != 0) & ({args[1]} != 0))",
    "logical_or": lambda args, dtypes, out: f"(({args[0]} != 0) | ({args[1]} != 0))",
    "logical_xor": lambda args, dtypes, out: f"(({args[0]} != 0) ^ ({args[1]} != 0))",
    "logical_not": lambda args, dtypes, out: f"({args[0]} == 0)",
    "where": lambda args, dtypes, out: f"({args[0]} ? {args[1]} : {args[2]})",
    **{op: _float_call(function) for op, function in VECTOR_MATH.items() if op != "pow"},
    "sqrt": _float_call("__builtin_sqrt"),
    "floor": _by_kind("__builtin_floor{f}({0})", "{0}"),
    "ceil": _by_kind("__builtin_ceil{f}({0})", "{0}"),
    "rint": _by_kind("__builtin_rint{f}({0})", "{0}"),
    "isnan": _by_kind("({0} != {0})", "0"),
    "isinf": lambda args, dtypes, out: (f"(__builtin_fabs{suffix(dtypes[0])}({args[0]}) == "
                                        f"__builtin_inf{suffix(dtypes[0])}())" if dtypes[0].kind == "f" else "0"),
    "isfinite": lambda args, dtypes, out: (f"(__builtin_fabs{suffix(dtypes[0])}({args[0]}) <= "
                                           f"{float_literal(float(np.finfo(dtypes[0]).max), dtypes[0])})"
                                           if dtypes[0].kind == "f" else "1"),
    "cast": _cast,
}


def _declarations() -> str:
    lines = []
    for function in VECTOR_MATH.values():
        arity = 2 if function in ("atan2", "pow") else 1
        for type_name, tail in (("float", "f"), ("double", "")):
            params = ", ".join([type_name] * arity)
            lines.append("#pragma omp declare simd notinbranch")
            lines.append(f"extern {type_name} {function}{tail}({params}) __attribute__((const, nothrow));")
    return "\n".join(lines)


_HELPERS = r"""
/* NumPy's npy_divmod: Python's floor division and remainder for floats. */
#define PYJIT_DIVMOD(T, F)                                                              \
static inline T pyjit_divmod_##T(T a, T b, T *modulus) {                                \
    T mod = __builtin_fmod##F(a, b);                                                    \
    T div = (a - mod) / b;                                                              \
    if (mod) {                                                                          \
        if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }                            \
    } else {                                                                            \
        mod = __builtin_copysign##F((T)0, b);                                           \
    }                                                                                   \
    T floordiv;                                                                         \
    if (div) {                                                                          \
        floordiv = __builtin_floor##F(div);                                             \
        if (div - floordiv > (T)0.5) floordiv += (T)1;                                  \
    } else {                                                                            \
        floordiv = __builtin_copysign##F((T)0, a / b);                                  \
    }                                                                                   \
    *modulus = mod;                                                                     \
    return floordiv;                                                                    \
}
PYJIT_DIVMOD(float, f)
PYJIT_DIVMOD(double, )
/* A zero divisor: a / b for floor division, fmod for the remainder (as NumPy). */
#define PYJIT_FLOOR_MOD(T, F, BITS)                                                     \
static inline T pyjit_floordiv_f##BITS(T a, T b) {                                      \
    T m;                                                                                \
    return b ? pyjit_divmod_##T(a, b, &m) : a / b;                                      \
}                                                                                       \
static inline T pyjit_mod_f##BITS(T a, T b) {                                           \
    T m = __builtin_fmod##F(a, b);                                                      \
    if (b) pyjit_divmod_##T(a, b, &m);                                                  \
    return m;                                                                           \
}
PYJIT_FLOOR_MOD(float, f, 32)
PYJIT_FLOOR_MOD(double, , 64)

/* Integer floor division and remainder as NumPy: 0 for a zero divisor, wrap-around for
   the most negative value divided by -1. */
static inline int64_t pyjit_floordiv_i64(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
static inline int64_t pyjit_mod_i64(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* An integer power by squaring, wrapping around like NumPy's (the exponent is >= 0). */
static inline uint64_t pyjit_ipow(uint64_t base, uint64_t exponent) {
    uint64_t result = 1;
    while (exponent) {
        if (exponent & 1) result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}
"""

PRELUDE = "/* generated by pyjit's C renderer */\n#include <stdint.h>\n\n" + _declarations() + "\n" + _HELPERS


def render_unit(kernels: list[Kernel]) -> str:
    """One translation unit holding `kernels`."""
    return PRELUDE + "\n" + "\n\n".join(render_kernel(kernel) for kernel in kernels) + "\n"


def render_kernel(kernel: Kernel) -> str:
    return _KernelWriter(kernel).write()


def index_text(index: Index) -> str:
    """An Index as C int64_t arithmetic (FloorDiv and Mod only ever see non-negative
    operands, so C's truncating / and % are floor division and remainder)."""
    if not index.terms:
        return "0"
    pieces = []
    for monomial, coeff in index.terms.items():
        factors = [_atom_text(atom) for atom in monomial]
        constant = f"{abs(coeff)}LL" if abs(coeff) > 2**31 - 1 else str(abs(coeff))
        if abs(coeff) != 1 or not factors:
            factors.insert(0, constant)
        pieces.append(("-" if coeff < 0 else "+", "*".join(factors)))
    text = " ".join(f"{sign} {piece}" for sign, piece in pieces)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def _atom_text(atom) -> str:
    if isinstance(atom, str):
        return atom
    symbol = "%" if isinstance(atom, Mod) else "/"
    return f"(({index_text(atom.numerator)}) {symbol} ({index_text(atom.divisor)}))"


class _KernelWriter:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.lines: list[str] = []
        self.params = {buffer.name: f"b{position}" for position, buffer in enumerate(kernel.buffers)}
        self.temps = 0
        self.team: bool | None = None  # see _team_region

    def write(self) -> str:
        kernel = self.kernel
        head = [f"void {kernel.name}(char *const *buffers, const int64_t *sizes) {{"]
        for position, buffer in enumerate(kernel.buffers):
            qualifier = "" if buffer.output else "const "
            head.append(f"    {qualifier}{ctype(buffer.dtype)} *restrict b{position} = "
                        f"({qualifier}{ctype(buffer.dtype)} *)buffers[{position}];")
        for position, name in enumerate(kernel.sizes):
            head.append(f"    const int64_t {name} = sizes[{position}];")
        if _nests_parallel_in_serial(kernel.body):
            self._team_region(kernel.body)
        else:
            self._block(kernel.body, 1, {}, top=True)
        return "\n".join(head + self.lines + ["}"])

    def _team_region(self, body) -> None:
        """A kernel with parallel loops inside serial ones (columnar reductions: NOTE(
        columnar-reductions)) runs as one parallel region, each parallel loop a
        worksharing loop with the same static partition and no barrier; with too little
        work, every loop runs on this thread."""
        threads = self._parallel_clause(self._work(body))
        self.team = threads is not None
        if not self.team:
            self._block(body, 1, {})
            return
        self._emit(1, f"#pragma omp parallel{threads}")
        self._emit(1, "{")
        self._block(body, 2, {})
        self._emit(1, "}")

    # -- statements -------------------------------------------------------------------
    def _block(self, body, depth: int, scope: dict, top: bool = False) -> None:
        for statement in body:
            if isinstance(statement, Loop):
                self._loop(statement, depth, scope)
            elif isinstance(statement, Reduce):
                self._reduce(statement, depth, scope, parallel=top)
            elif isinstance(statement, Scratch):  # private to the thread running this body
                self.params[statement.name] = statement.name
                self._emit(depth, f"{ctype(statement.dtype)} {statement.name}[{statement.size}];")
            else:
                target = f"{self.params[statement.buffer]}[{index_text(statement.index)}]"
                self._emit(depth, f"{target} = {self._value(statement.value, depth, scope)};")

    def _loop(self, loop: Loop, depth: int, scope: dict) -> None:
        innermost = not any(isinstance(statement, (Loop, Reduce)) for statement in loop.body)
        count = len(loop.dims)
        pragmas: dict[int, str] = {}
        if self.team is not None:  # inside _team_region
            if loop.parallel and self.team:
                simd = " simd" if innermost else ""
                pragmas[0] = f"for{simd}{_collapse(count)} schedule(static) nowait"
            elif innermost:
                pragmas[count - 1] = "simd"
            self._nest(loop.dims, depth, pragmas)
            self._block(loop.body, depth + count, dict(scope))
            self._close(count, depth)
            return
        threads = self._parallel_clause(self._work([loop])) if loop.parallel else None
        if threads is not None and innermost:
            pragmas[0] = f"parallel for simd{threads}" if count == 1 else f"parallel for{_collapse(count - 1)}{threads}"
        elif threads is not None:
            pragmas[0] = f"parallel for{_collapse(count)}{threads}"
        if innermost and count - 1 not in pragmas:
            pragmas[count - 1] = "simd"
        self._nest(loop.dims, depth, pragmas)
        self._block(loop.body, depth + count, dict(scope))
        self._close(count, depth)

    def _nest(self, dims, depth: int, pragmas: dict[int, str]) -> None:
        for position, dim in enumerate(dims):
            if position in pragmas:
                self._emit(depth + position, f"#pragma omp {pragmas[position]}")
            self._emit(depth + position,
                       f"for (int64_t {dim.var} = 0; {dim.var} < {index_text(dim.extent)}; {dim.var}++) {{")

    def _close(self, count: int, depth: int) -> None:
        for position in reversed(range(count)):
            self._emit(depth + position, "}")

    @staticmethod
    def _work(statements) -> Index:
        """What a list of statements costs: each element an add, a call of vector math
        VECTOR_MATH_COST more, times the iterations of the loops around it."""
        total = Index.const(0)
        for statement in statements:
            if isinstance(statement, Scratch):
                continue
            if isinstance(statement, Loop):
                part = _KernelWriter._work(statement.body)
            else:
                calls = sum(node.op in VECTOR_MATH for node in _calls(statement.value))
                part = Index.const(1 + VECTOR_MATH_COST * calls)
            for dim in getattr(statement, "dims", ()):
                part = part * dim.extent
            total = total + part
        return total

    @staticmethod
    def _parallel_clause(work: Index) -> str | None:
        """The `if` clause of a parallel loop, None when it never runs in parallel."""
        known = work.constant_value()
        if known is not None:
            return "" if known >= PARALLEL_MIN_WORK else None
        return f" if(({index_text(work)}) >= {PARALLEL_MIN_WORK})"

    def _reduce(self, reduce: Reduce, depth: int, scope: dict, parallel: bool) -> None:
        """A Reduce: serial for argmax/argmin, else `omp simd` with reduction clauses on
        the innermost loop, and on threads too where it is a kernel's top level."""
        plan = _reduction_plan(reduce)
        for declaration in plan["declare"]:
            self._emit(depth, declaration)
        count = len(reduce.dims)
        clause = "".join(f" reduction({op}:{name})" for op, name in plan["clauses"])
        pragmas: dict[int, str] = {}
        if plan["clauses"] and count:
            threads = self._parallel_clause(self._work([reduce])) if parallel else None
            if threads is not None:
                pragmas[0] = f"parallel for simd{_collapse(count)}{clause}{threads}"
            else:
                pragmas[count - 1] = f"simd{clause}"
        self._nest(reduce.dims, depth, pragmas)
        inner = depth + count
        if not count:
            self._emit(depth, "{")
            inner = depth + 1
        inner_scope = dict(scope)
        value = self._value(reduce.value, inner, inner_scope)
        for line in plan["combine"]:
            self._emit(inner, line.format(v=value))
        for store in reduce.stores:
            target = f"{self.params[store.buffer]}[{index_text(store.index)}]"
            self._emit(inner, f"{target} = {self._value(store.value, inner, inner_scope)};")
        self._close(max(count, 1), depth)
        self._emit(depth, plan["result"])

    # -- values ---------------------------------------------------------------------
    def _value(self, value, depth: int, scope: dict) -> str:
        if isinstance(value, Constant):
            return literal(value.value, value.dtype)
        if isinstance(value, IndexValue):
            return f"((int64_t)({index_text(value.index)}))"
        if isinstance(value, Var):
            return value.name
        key = value
        if key in scope:
            return scope[key]
        if isinstance(value, Load):
            text = f"{self.params[value.buffer]}[{index_text(value.index)}]"
        else:
            args = [self._value(arg, depth, scope) for arg in value.args]
            text = OPS[value.op](args, [arg.dtype for arg in value.args], value.dtype)
        name = f"t{self.temps}"
        self.temps += 1
        self._emit(depth, f"const {ctype(value.dtype)} {name} = {text};")
        scope[key] = name
        return name

    def _emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


def _nests_parallel_in_serial(body) -> bool:
    def parallel_inside(statements) -> bool:
        return any(isinstance(s, Loop) and (s.parallel or parallel_inside(s.body)) for s in statements)

    return any(isinstance(s, Loop) and not s.parallel and parallel_inside(s.body) for s in body)


def _collapse(count: int) -> str:
    return f" collapse({count})" if count > 1 else ""


def _calls(value):
    return [node for node in walk_values(value) if isinstance(node, Call)]


def _reduction_plan(reduce: Reduce) -> dict:
    """Declarations, OpenMP reduction clauses, the combining lines (`{v}`: the value) and
    the line defining the result for a Reduce (NOTE(reduction-kinds)); float32 sums
    accumulate in double (docs/codegen.md, "Numerics")."""
    name, dtype, kind = reduce.name, reduce.dtype, reduce.kind
    result_type = ctype(dtype)
    acc = f"{name}_acc"
    if kind == "sum" or kind == "prod":
        symbol = "+" if kind == "sum" else "*"
        acc_type = "double" if dtype.kind == "f" and kind == "sum" else (result_type if dtype.kind == "f"
                                                                          else "uint64_t")
        init = "0" if kind == "sum" else "1"
        return {"declare": [f"{acc_type} {acc} = {init};"], "clauses": [(symbol, acc)],
                "combine": [f"{acc} {symbol}= ({acc_type}){{v}};"],
                "result": f"const {result_type} {name} = ({result_type}){acc};"}
    if kind in ("max", "min"):
        relation = ">" if kind == "max" else "<"
        if dtype.kind == "f":
            start = float("-inf") if kind == "max" else float("inf")
            nan = f"{name}_nan"
            return {"declare": [f"{result_type} {acc} = {float_literal(start, dtype)};", f"uint8_t {nan} = 0;"],
                    "clauses": [(kind, acc), ("|", nan)],
                    "combine": [f"{acc} = {{v}} {relation} {acc} ? {{v}} : {acc};", f"{nan} |= {{v}} != {{v}};"],
                    "result": f"const {result_type} {name} = {nan} ? {float_literal(float('nan'), dtype)} : {acc};"}
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        start = (0 if kind == "max" else 1) if info is None else (info.min if kind == "max" else info.max)
        return {"declare": [f"{result_type} {acc} = {literal(start, dtype)};"], "clauses": [(kind, acc)],
                "combine": [f"{acc} = {{v}} {relation} {acc} ? {{v}} : {acc};"],
                "result": f"const {result_type} {name} = {acc};"}
    if kind in ("any", "all"):
        symbol = "|" if kind == "any" else "&"
        return {"declare": [f"uint8_t {acc} = {'0' if kind == 'any' else '1'};"], "clauses": [(symbol, acc)],
                "combine": [f"{acc} {symbol}= {{v}};"], "result": f"const uint8_t {name} = {acc};"}
    # argmax / argmin: the first extreme element; a NaN is extreme and stops the search.
    value_type = ctype(reduce.value.dtype)
    best, position = f"{name}_best", f"{name}_pos"
    keep = "<=" if kind == "argmax" else ">="
    better = (f"!({{v}} {keep} {best}) && {best} == {best}" if reduce.value.dtype.kind == "f"
              else f"{{v}} {'>' if kind == 'argmax' else '<'} {best}")
    return {"declare": [f"{value_type} {best} = 0;", f"int64_t {acc} = 0, {position} = 0;"], "clauses": [],
            "combine": [f"if ({position} == 0 || ({better})) {{{{ {best} = {{v}}; {acc} = {position}; }}}}",
                        f"{position}++;"],
            "result": f"const {result_type} {name} = ({result_type}){acc};"}
