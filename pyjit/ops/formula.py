"""The scalar expression language of pointwise formulas, which the C and CUDA renderers translate.

NOTE(formula): a pointwise op's formula is a small expression tree over the scalar ops
of SCALAR_OPS, built by calling the op's `formula` with one leaf per argument (`Arg(i)`
for an array argument, `Const(value)` for a Python or NumPy scalar) and the op's keyword
arguments as they are. Each scalar op means what the NumPy ufunc of the same name means
for one element: renderers cast the leaves to the loop dtypes NumPy resolves for the op
(`ufunc.resolve_dtypes`) and evaluate in those, so `div` is true division, `floordiv`
and `mod` round toward minus infinity like Python, `maximum` propagates NaN, and
comparisons give bool.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import _C
from . import spelling as S


@dataclasses.dataclass(frozen=True)
class ScalarOp:
    """A scalar op of the formula language: its arity, the NumPy ufunc whose one-element
    meaning it has (and whose loop dtypes type it: NOTE(formula-typing) in
    pyjit/codegen/scheduling/lowering.py), and its spelling per target (NOTE(spelling))."""

    name: str
    arity: int
    ufunc: Any
    spellings: dict
    costly: bool = False  # a library call or a division loop: worth keeping rather than recomputing

    def spelling(self, target: str):
        try:
            return self.spellings[target]
        except KeyError:
            raise LookupError(f"scalar op {self.name} has no {target} spelling") from None


def _entry(name: str, arity: int, ufunc, spell=None, costly: bool = False, **per_target) -> ScalarOp:
    spellings = S.same_on_every_target(spell) if spell is not None else {}
    spellings.update(per_target)
    return ScalarOp(name, arity, ufunc, spellings, costly)


def _logical(symbol: str):
    return S.template(f"(({{0}} != 0) {symbol} ({{1}} != 0))")


# Every scalar op, with the NumPy ufunc it follows and how C and CUDA write it.
SCALAR_OPS = {entry.name: entry for entry in [
    _entry("add", 2, np.add, S.wrapping("+", "|")),
    _entry("sub", 2, np.subtract, S.wrapping("-")),
    _entry("mul", 2, np.multiply, S.wrapping("*", "&")),
    _entry("div", 2, np.true_divide, S.template("{0} / {1}")),
    _entry("floordiv", 2, np.floor_divide, S.integer_helper("floordiv", "({1} == 0 ? 0 : ({T})({0} / {1}))"),
           costly=True),
    _entry("mod", 2, np.remainder, S.integer_helper("mod", "({1} == 0 ? 0 : ({T})({0} % {1}))"), costly=True),
    _entry("pow", 2, np.power, S.power, costly=True),
    _entry("neg", 1, np.negative, S.by_kind("-{0}", "({T})(0 - ({U}){0})")),
    _entry("abs", 1, np.absolute, S.by_kind("{B}fabs{f}({0})", "({T})({0} < 0 ? 0 - ({U}){0} : ({U}){0})", "{0}")),
    _entry("sign", 1, np.sign, S.by_kind("({0} > 0 ? ({T})1 : ({0} < 0 ? ({T})-1 : ({0} == 0 ? ({T})0 : {0})))",
                                         "({T})(({0} > 0) - ({0} < 0))", "({T})({0} > 0)")),
    _entry("square", 1, np.square, S.square),
    _entry("reciprocal", 1, np.reciprocal, S.template("({T})1 / {0}")),
    # NaN-propagating; the second argument on ties (NumPy's signed-zero results).
    _entry("maximum", 2, np.maximum, S.by_kind("(({0} > {1} || {0} != {0}) ? {0} : {1})", "({0} > {1} ? {0} : {1})",
                                               bool_text="({0} | {1})")),
    _entry("minimum", 2, np.minimum, S.by_kind("(({0} < {1} || {0} != {0}) ? {0} : {1})", "({0} < {1} ? {0} : {1})",
                                               bool_text="({0} & {1})")),
    _entry("eq", 2, np.equal, S.comparison("==")), _entry("ne", 2, np.not_equal, S.comparison("!=")),
    _entry("lt", 2, np.less, S.comparison("<")), _entry("le", 2, np.less_equal, S.comparison("<=")),
    _entry("gt", 2, np.greater, S.comparison(">")), _entry("ge", 2, np.greater_equal, S.comparison(">=")),
    _entry("logical_and", 2, np.logical_and, _logical("&")),
    _entry("logical_or", 2, np.logical_or, _logical("|")),
    _entry("logical_xor", 2, np.logical_xor, _logical("^")),
    _entry("logical_not", 1, np.logical_not, S.template("({0} == 0)")),
    _entry("where", 3, None, S.template("({0} ? {1} : {2})")),      # where(condition, a, b)
    _entry("exp", 1, np.exp, S.math_call("exp"), costly=True),
    _entry("log", 1, np.log, S.math_call("log"), costly=True),
    _entry("log1p", 1, np.log1p, S.math_call("log1p"), costly=True),
    _entry("expm1", 1, np.expm1, S.math_call("expm1"), costly=True),
    _entry("sqrt", 1, np.sqrt, S.builtin_call("sqrt")),
    _entry("sin", 1, np.sin, S.math_call("sin"), costly=True),
    _entry("cos", 1, np.cos, S.math_call("cos"), costly=True),
    _entry("tan", 1, np.tan, S.math_call("tan"), costly=True),
    _entry("tanh", 1, np.tanh, S.math_call("tanh"), costly=True),
    _entry("sinh", 1, np.sinh, S.math_call("sinh"), costly=True),
    _entry("cosh", 1, np.cosh, S.math_call("cosh"), costly=True),
    _entry("arcsin", 1, np.arcsin, S.math_call("asin"), costly=True),
    _entry("arccos", 1, np.arccos, S.math_call("acos"), costly=True),
    _entry("arctan", 1, np.arctan, S.math_call("atan"), costly=True),
    _entry("arctan2", 2, np.arctan2, S.math_call("atan2"), costly=True),
    _entry("erf", 1, _C.erf, S.math_call("erf"), costly=True),
    _entry("floor", 1, np.floor, S.by_kind("{B}floor{f}({0})", "{0}")),
    _entry("ceil", 1, np.ceil, S.by_kind("{B}ceil{f}({0})", "{0}")),
    _entry("rint", 1, np.rint, S.by_kind("{B}rint{f}({0})", "{0}")),  # half to even
    _entry("isnan", 1, np.isnan, S.by_kind("({0} != {0})", "0")),
    _entry("isinf", 1, np.isinf, S.isinf), _entry("isfinite", 1, np.isfinite, S.isfinite),
    _entry("cast", 1, None, S.cast),                                 # cast(x, dtype=...) converts like astype
    # The C library's functions (scalar calls, no vector variants: NOTE(vector-math-accuracy)
    # in pyjit/codegen/cpu/renderer.py lists the ones that have them).
    _entry("exp2", 1, np.exp2, S.builtin_call("exp2"), costly=True),
    _entry("log2", 1, np.log2, S.builtin_call("log2"), costly=True),
    _entry("log10", 1, np.log10, S.builtin_call("log10"), costly=True),
    _entry("cbrt", 1, np.cbrt, S.builtin_call("cbrt"), costly=True),
    _entry("hypot", 2, np.hypot, S.builtin_call("hypot"), costly=True),
    _entry("arcsinh", 1, np.arcsinh, S.builtin_call("asinh"), costly=True),
    _entry("arccosh", 1, np.arccosh, S.builtin_call("acosh"), costly=True),
    _entry("arctanh", 1, np.arctanh, S.builtin_call("atanh"), costly=True),
    _entry("copysign", 2, np.copysign, S.builtin_call("copysign")),
    # C's remainder of truncated division; NumPy gives 0 for a zero divisor (and INT_MIN % -1).
    _entry("fmod", 2, np.fmod, S.by_kind("{B}fmod{f}({0}, {1})",
                                         "(({1} == 0 || {1} == -1) ? ({T})0 : ({T})({0} % {1}))",
                                         "({1} == 0 ? ({T})0 : ({T})({0} % {1}))"), costly=True),
    _entry("trunc", 1, np.trunc, S.by_kind("{B}trunc{f}({0})", "{0}")),
    # NaN-ignoring (a NaN loses to a number); the second argument on ties, as NumPy's loops.
    _entry("fmax", 2, np.fmax, S.by_kind("(({0} > {1} || {1} != {1}) ? {0} : {1})", "({0} > {1} ? {0} : {1})",
                                         bool_text="({0} | {1})")),
    _entry("fmin", 2, np.fmin, S.by_kind("(({0} < {1} || {1} != {1}) ? {0} : {1})", "({0} < {1} ? {0} : {1})",
                                         bool_text="({0} & {1})")),
    _entry("signbit", 1, np.signbit, S.signbit),
    _entry("heaviside", 2, np.heaviside,
           S.template("({0} < 0 ? ({T})0 : ({0} > 0 ? ({T})1 : ({0} == 0 ? {1} : {0})))")),
    _entry("bitwise_and", 2, np.bitwise_and, S.template("({T})({0} & {1})")),
    _entry("bitwise_or", 2, np.bitwise_or, S.template("({T})({0} | {1})")),
    _entry("bitwise_xor", 2, np.bitwise_xor, S.template("({T})({0} ^ {1})")),
    _entry("invert", 1, np.invert, S.by_kind("", "({T})~{0}", bool_text="({0} == 0)")),
    _entry("gcd", 2, np.gcd, S.greatest_common("gcd"), costly=True),
    _entry("lcm", 2, np.lcm, S.greatest_common("lcm"), costly=True),
    _entry("nextafter", 2, np.nextafter, S.builtin_call("nextafter")),
    _entry("left_shift", 2, np.left_shift, S.shift("<<")),
    _entry("right_shift", 2, np.right_shift, S.shift(">>")),
]}
TARGETS = ("c", "cuda")


@dataclasses.dataclass(frozen=True)
class Arg:
    """The op's array argument number `index`, one element of it."""

    index: int

    def __str__(self) -> str:
        return f"x{self.index}"


@dataclasses.dataclass(frozen=True)
class Const:
    """A scalar argument, as given (Python scalars stay weak in NumPy's promotion)."""

    value: Any

    def __str__(self) -> str:
        return repr(self.value)


@dataclasses.dataclass(frozen=True)
class Expr:
    """`op(*args)` for a scalar op of SCALAR_OPS; `params` carries cast's dtype."""

    op: str
    args: tuple
    params: tuple = ()

    def __str__(self) -> str:
        inner = [str(arg) for arg in self.args] + [f"{key}={value}" for key, value in self.params]
        return f"{self.op}({', '.join(inner)})"


def _builder(name: str, arity: int):
    def build(*args, **params):
        if len(args) != arity:
            raise TypeError(f"scalar op {name} takes {arity} arguments, not {len(args)}")
        return Expr(name, tuple(arg if isinstance(arg, (Arg, Const, Expr)) else Const(arg) for arg in args),
                    tuple(sorted(params.items())))
    build.__name__ = name
    return build


class _Builders:
    """`F.sin(x)`, `F.where(c, a, b)`: Expr constructors for every scalar op."""

    def __init__(self):
        for name, entry in SCALAR_OPS.items():
            setattr(self, name, _builder(name, entry.arity))


F = _Builders()
