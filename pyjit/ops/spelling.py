"""How a scalar op is written in a kernel's source: the building blocks of the spellings
that the entries of pyjit/ops/formula.py hold, one per target.

NOTE(spelling): a spelling is `spell(dialect, args, dtypes, out) -> str`: the text of
`op(args)` given the source text of the (already cast) arguments, their dtypes and the
result's dtype. `dialect` is handed in by the renderer and answers the few questions
whose answer differs between C and CUDA:
  * `ctype(dtype)` / `utype(dtype)`: the element type, and the unsigned type integer
    arithmetic of that dtype wraps around in;
  * `suffix(dtype)`: "f" for float32 (`expf`), "" for float64;
  * `builtin(name)`: an instruction-like function that must inline (`__builtin_fabsf`
    in C, where the build passes -fno-builtin; `fabsf` in CUDA);
  * `float_literal(value, dtype)`: NaN and infinities included.
So most rows are written once and serve both targets; a row that must differ on one
target gives that target its own spelling. Both renderers read these entries, which is
what keeps them from drifting apart (a test requires every scalar op to have both).
The integer helpers the spellings call (`pyjit_floordiv_i64`, ...) are HELPERS, one
text for both targets, written with the macros PYJIT_FN (the function qualifiers) and
PYJIT_B(name) (a builtin) that each renderer's prelude defines.
"""

from __future__ import annotations

import numpy as np


def same_on_every_target(spell) -> dict:
    return {"c": spell, "cuda": spell}


def wrapping(symbol: str, bool_symbol: str | None = None):
    """Arithmetic that wraps around for integers (C leaves signed overflow undefined)."""
    def spell(d, args, dtypes, out):
        a, b = args
        if out.kind == "f":
            return f"{a} {symbol} {b}"
        if out.kind == "b":
            return f"({a} {bool_symbol} {b})"
        return f"({d.ctype(out)})(({d.utype(out)}){a} {symbol} ({d.utype(out)}){b})"
    return spell


def by_kind(float_text: str, int_text: str, unsigned_text: str | None = None, bool_text: str | None = None):
    """A row whose text depends on the kind of the first argument's dtype ({0}, {1}:
    arguments, {T}: element type, {U}: wrapping type, {f}: float suffix, {B}: a builtin's
    prefix, as `{B}fabs{f}`)."""
    def spell(d, args, dtypes, out):
        kind = dtypes[0].kind
        text = {"f": float_text, "i": int_text, "u": unsigned_text or int_text,
                "b": bool_text or unsigned_text or int_text}[kind]
        return text.format(*args, T=d.ctype(dtypes[0]), U=d.utype(dtypes[0]), f=d.suffix(dtypes[0]),
                           B=d.builtin(""))
    return spell


def math_call(function: str):
    """A function of the math library, float32 and float64 variants (`expf`, `exp`)."""
    return lambda d, args, dtypes, out: f"{function}{d.suffix(out)}({', '.join(args)})"


def builtin_call(function: str):
    return lambda d, args, dtypes, out: f"{d.builtin(function)}{d.suffix(out)}({', '.join(args)})"


def integer_helper(helper: str, unsigned_text: str):
    """floordiv and mod: NumPy's float rules (npy_divmod) and integer rules (HELPERS)."""
    def spell(d, args, dtypes, out):
        if out.kind == "f":
            return f"pyjit_{helper}_f{out.itemsize * 8}({args[0]}, {args[1]})"
        if out.kind == "u":
            return unsigned_text.format(*args, T=d.ctype(out))
        return f"({d.ctype(out)})pyjit_{helper}_i64((int64_t){args[0]}, (int64_t){args[1]})"
    return spell


def power(d, args, dtypes, out):
    if out.kind == "f":
        return f"pow{d.suffix(out)}({args[0]}, {args[1]})"
    return f"({d.ctype(out)})pyjit_ipow((uint64_t){args[0]}, (uint64_t){args[1]})"


_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def comparison(symbol: str):
    def spell(d, args, dtypes, out):
        a, b = args
        if dtypes[0] == dtypes[1] or {dtypes[0].kind, dtypes[1].kind} != {"i", "u"}:
            return f"({a} {symbol} {b})"
        # int64 against uint64 (NumPy compares exactly): a negative value is below every unsigned one.
        relation = symbol
        if dtypes[0].kind == "u":
            a, b, relation = b, a, _SWAPPED[symbol]
        negative_answer = "1" if relation in ("<", "<=", "!=") else "0"
        return f"({a} < 0 ? {negative_answer} : (uint64_t){a} {relation} {b})"
    return spell


def cast(d, args, dtypes, out):
    (a,), source = args, dtypes[0]
    if out.kind == "b":
        return f"({a} != 0)"
    if source.kind != "f" or out.kind == "f":
        return f"({d.ctype(out)}){a}"
    # Float to integer as NumPy's loops do it on x86: through int32 for the small types
    # and through int64, unsigned types by the offset trick, so out-of-range values and
    # NaN give the same ("integer indefinite") results.
    if out.itemsize < 4:
        return f"({d.ctype(out)})(int32_t){a}"
    if out.kind == "i":
        return f"({d.ctype(out)}){a}"
    bits = out.itemsize * 8
    signed, half = ("int32_t", "2147483648.0") if bits == 32 else ("int64_t", "9223372036854775808.0")
    half += d.suffix(source)
    top = "0x80000000u" if bits == 32 else "0x8000000000000000ull"
    return (f"({a} >= {half} ? ({d.ctype(out)})(({d.ctype(out)})({signed})({a} - {half}) ^ {top}) "
            f": ({d.ctype(out)})({signed}){a})")


def square(d, args, dtypes, out):
    return wrapping("*", "&")(d, [args[0], args[0]], dtypes * 2, out)


def isinf(d, args, dtypes, out):
    if dtypes[0].kind != "f":
        return "0"
    return f"({d.builtin('fabs')}{d.suffix(dtypes[0])}({args[0]}) == {d.float_literal(float('inf'), dtypes[0])})"


def isfinite(d, args, dtypes, out):
    if dtypes[0].kind != "f":
        return "1"
    largest = d.float_literal(float(np.finfo(dtypes[0]).max), dtypes[0])
    return f"({d.builtin('fabs')}{d.suffix(dtypes[0])}({args[0]}) <= {largest})"


def signbit(d, args, dtypes, out):
    return f"({d.builtin('signbit')}({args[0]}) != 0)"


def shift(symbol: str):
    """NumPy's shifts: a shift by the width or more (or by a negative amount) gives 0, or
    -1 for a negative value shifted right; a left shift wraps around."""
    def spell(d, args, dtypes, out):
        a, b = args
        T = d.ctype(out)
        inside = f"(uint64_t){b} < {out.itemsize * 8}"
        if symbol == "<<":
            return f"({inside} ? ({T})((uint64_t){a} << {b}) : ({T})0)"
        beyond = f"({a} < 0 ? ({T})-1 : ({T})0)" if out.kind == "i" else f"({T})0"
        return f"({inside} ? ({T})({a} >> {b}) : {beyond})"
    return spell


def greatest_common(helper: str):
    """gcd and lcm as NumPy computes them: of the magnitudes, in the unsigned type of the
    dtype's width (so gcd(int8 -128, -128) wraps to -128), by Euclid's algorithm (HELPERS)."""
    def spell(d, args, dtypes, out):
        T, U = d.ctype(out), d.utype(out)

        def magnitude(x):
            return f"(uint64_t)({U})({x} < 0 ? 0 - ({U}){x} : ({U}){x})" if out.kind == "i" else f"(uint64_t){x}"
        return f"({T})({U})pyjit_{helper}({magnitude(args[0])}, {magnitude(args[1])})"
    return spell


def template(text: str):
    """A row that is one text for every dtype ({0}, {1}, {2}: arguments, {T}: the result's type)."""
    return lambda d, args, dtypes, out: text.format(*args, T=d.ctype(out))


HELPERS = r"""
/* NumPy's npy_divmod: Python's floor division and remainder for floats. */
#define PYJIT_DIVMOD(T, F)                                                              \
PYJIT_FN T pyjit_divmod_##T(T a, T b, T *modulus) {                                     \
    T mod = PYJIT_B(fmod##F)(a, b);                                                     \
    T div = (a - mod) / b;                                                              \
    if (mod) {                                                                          \
        if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }                            \
    } else {                                                                            \
        mod = PYJIT_B(copysign##F)((T)0, b);                                            \
    }                                                                                   \
    T floordiv;                                                                         \
    if (div) {                                                                          \
        floordiv = PYJIT_B(floor##F)(div);                                              \
        if (div - floordiv > (T)0.5) floordiv += (T)1;                                  \
    } else {                                                                            \
        floordiv = PYJIT_B(copysign##F)((T)0, a / b);                                   \
    }                                                                                   \
    *modulus = mod;                                                                     \
    return floordiv;                                                                    \
}
PYJIT_DIVMOD(float, f)
PYJIT_DIVMOD(double, )
/* A zero divisor: a / b for floor division, fmod for the remainder (as NumPy). */
#define PYJIT_FLOOR_MOD(T, F, BITS)                                                     \
PYJIT_FN T pyjit_floordiv_f##BITS(T a, T b) {                                           \
    T m;                                                                                \
    return b ? pyjit_divmod_##T(a, b, &m) : a / b;                                      \
}                                                                                       \
PYJIT_FN T pyjit_mod_f##BITS(T a, T b) {                                                \
    T m = PYJIT_B(fmod##F)(a, b);                                                       \
    if (b) pyjit_divmod_##T(a, b, &m);                                                  \
    return m;                                                                           \
}
PYJIT_FLOOR_MOD(float, f, 32)
PYJIT_FLOOR_MOD(double, , 64)

/* Integer floor division and remainder as NumPy: 0 for a zero divisor, wrap-around for
   the most negative value divided by -1. */
PYJIT_FN int64_t pyjit_floordiv_i64(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
PYJIT_FN int64_t pyjit_mod_i64(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* Euclid's algorithm on magnitudes; the least common multiple wraps around as NumPy's. */
PYJIT_FN uint64_t pyjit_gcd(uint64_t a, uint64_t b) {
    while (a != 0) {
        uint64_t c = a;
        a = b % a;
        b = c;
    }
    return b;
}
PYJIT_FN uint64_t pyjit_lcm(uint64_t a, uint64_t b) {
    uint64_t g = pyjit_gcd(a, b);
    return g == 0 ? 0 : a / g * b;
}
/* An integer power by squaring, wrapping around like NumPy's (the exponent is >= 0). */
PYJIT_FN uint64_t pyjit_ipow(uint64_t base, uint64_t exponent) {
    uint64_t result = 1;
    while (exponent) {
        if (exponent & 1) result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}
"""
