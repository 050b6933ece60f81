"""The C dialect the scalar ops' spellings are written for (NOTE(spelling) in
pyjit/ops/spelling.py), and index expressions as C arithmetic."""

from __future__ import annotations

from ..ir.index import Index, Mod
from .literals import float_literal
from .types import ctype, suffix, utype


class CDialect:
    """What the shared spellings of the scalar ops need to know about C (NOTE(spelling)
    in pyjit/ops/spelling.py)."""

    ctype = staticmethod(ctype)
    utype = staticmethod(utype)
    suffix = staticmethod(suffix)
    float_literal = staticmethod(float_literal)

    @staticmethod
    def builtin(name: str) -> str:
        return f"__builtin_{name}"


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
