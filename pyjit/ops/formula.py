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

# name -> arity; the NumPy ufunc each one follows is named beside it where it differs.
SCALAR_OPS = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "floordiv": 2, "mod": 2, "pow": 2,
    "neg": 1, "abs": 1, "sign": 1, "square": 1, "reciprocal": 1,
    "maximum": 2, "minimum": 2,                       # NaN-propagating
    "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
    "logical_and": 2, "logical_or": 2, "logical_xor": 2, "logical_not": 1,
    "where": 3,                                       # where(condition, a, b)
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1,
    "sin": 1, "cos": 1, "tan": 1, "tanh": 1, "sinh": 1, "cosh": 1,
    "arcsin": 1, "arccos": 1, "arctan": 1, "arctan2": 2, "erf": 1,
    "floor": 1, "ceil": 1, "rint": 1,                 # rint rounds half to even
    "isnan": 1, "isinf": 1, "isfinite": 1,
    "cast": 1,                                        # cast(x, dtype=...) converts like astype
}


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
        for name, arity in SCALAR_OPS.items():
            setattr(self, name, _builder(name, arity))


F = _Builders()
