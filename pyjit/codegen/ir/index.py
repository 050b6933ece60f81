"""Integer index expressions of the kernel IR (kernel_ir.py): polynomials with integer
coefficients over loop variables, size parameters and floor-division / remainder atoms.
A symbolic size is just another name, and a view of an array is an index over it."""

from __future__ import annotations

import dataclasses
import functools
from typing import Union

import numpy as np

Atom = Union[str, "FloorDiv", "Mod"]


def _atom_key(atom) -> tuple:
    return (0, atom) if isinstance(atom, str) else (1, atom.text)


def _fold_div_mod(terms: dict[tuple, int]) -> dict[tuple, int]:
    """NOTE(div-mod-fold): `s*d*(x // d) + s*(x % d)` is `s*x`, folded as terms are
    added. Reshaping a contiguous array splits its flat index into a quotient and a
    remainder, and the next reshape rebuilds the flat index from them: folded, a chain of
    reshapes keeps the index linear. Unfolded, each split doubles the expression (8
    alternating (4,3)/(3,4) reshapes took seconds to schedule and rendered exponentially
    long C)."""
    folded = True
    while folded:
        folded = False
        for monomial, coeff in terms.items():
            remainder = next((atom for atom in monomial if isinstance(atom, Mod)), None)
            if remainder is None or not coeff:
                continue
            rest = list(monomial)
            rest.remove(remainder)
            scale = Index({tuple(rest): coeff})
            whole = remainder.numerator.floordiv(remainder.divisor) * remainder.divisor * scale
            if all(terms.get(term) == value for term, value in whole.terms.items()):
                for term in whole.terms:
                    del terms[term]
                del terms[monomial]
                for term, value in (remainder.numerator * scale).terms.items():
                    terms[term] = terms.get(term, 0) + value
                folded = True
                break
    return terms


class Index:
    """An integer expression: a polynomial with integer coefficients over atoms, which
    are names (loop variables, size and stride parameters) or FloorDiv / Mod atoms."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict[tuple, int]):
        self.terms = {monomial: coeff for monomial, coeff in terms.items() if coeff}
        self._hash = None

    @classmethod
    def const(cls, value: int) -> Index:
        return cls({(): int(value)})

    @classmethod
    def name(cls, name: str) -> Index:
        return cls({(name,): 1})

    @classmethod
    def of(cls, value) -> Index:
        """An int, an Index, or a graph size (SymInt: its symbols become parameters of
        the same name; rational coefficients become an exact division)."""
        if isinstance(value, Index):
            return value
        if isinstance(value, (int, np.integer)):
            return cls.const(int(value))
        terms = getattr(value, "terms", None)
        if terms is None:
            raise TypeError(f"not an index: {value!r}")
        denominator = 1
        for coeff in terms.values():
            denominator = denominator * coeff.denominator // np.gcd(denominator, coeff.denominator)
        scaled = cls({tuple(monomial): int(coeff * denominator) for monomial, coeff in terms.items()})
        return scaled.floordiv(denominator)

    # -- arithmetic ------------------------------------------------------------------
    def __add__(self, other) -> Index:
        other = Index.of(other)
        terms = dict(self.terms)
        for monomial, coeff in other.terms.items():
            terms[monomial] = terms.get(monomial, 0) + coeff
        return Index(_fold_div_mod(terms))

    __radd__ = __add__

    def __neg__(self) -> Index:
        return Index({monomial: -coeff for monomial, coeff in self.terms.items()})

    def __sub__(self, other) -> Index:
        return self + (-Index.of(other))

    def __rsub__(self, other) -> Index:
        return Index.of(other) - self

    def __mul__(self, other) -> Index:
        other = Index.of(other)
        terms: dict[tuple, int] = {}
        for left, left_coeff in self.terms.items():
            for right, right_coeff in other.terms.items():
                monomial = tuple(sorted(left + right, key=_atom_key))
                terms[monomial] = terms.get(monomial, 0) + left_coeff * right_coeff
        return Index(terms)

    __rmul__ = __mul__

    def floordiv(self, divisor) -> Index:
        """self // divisor for a non-negative self and a positive divisor."""
        divisor = Index.of(divisor)
        value, by = self.constant_value(), divisor.constant_value()
        if by == 1:
            return self
        if value is not None and by is not None:
            return Index.const(value // by)
        if by is not None and all(coeff % by == 0 for coeff in self.terms.values()):
            return Index({monomial: coeff // by for monomial, coeff in self.terms.items()})
        return Index({(FloorDiv(self, divisor),): 1})

    def mod(self, divisor) -> Index:
        """self % divisor for a non-negative self and a positive divisor."""
        divisor = Index.of(divisor)
        value, by = self.constant_value(), divisor.constant_value()
        if by == 1:
            return Index.const(0)
        if value is not None and by is not None:
            return Index.const(value % by)
        if by is not None and all(coeff % by == 0 for coeff in self.terms.values()):
            return Index.const(0)
        return Index({(Mod(self, divisor),): 1})

    # -- inspection ------------------------------------------------------------------
    def constant_value(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def coefficient(self, var: str) -> Index | None:
        """The c of `c*var + rest` when `var` appears only linearly and outside every
        FloorDiv/Mod atom; None otherwise."""
        coefficient: dict[tuple, int] = {}
        for monomial, coeff in self.terms.items():
            count = monomial.count(var)
            if count > 1 or any(not isinstance(atom, str) and var in atom.names() for atom in monomial):
                return None
            if count == 1:
                rest = list(monomial)
                rest.remove(var)
                coefficient[tuple(rest)] = coeff
        return Index(coefficient)

    def substitute(self, mapping: dict[str, Index]) -> Index:
        result = Index({})
        for monomial, coeff in self.terms.items():
            product = Index.const(coeff)
            for atom in monomial:
                if isinstance(atom, str):
                    product = product * mapping.get(atom, Index.name(atom))
                else:
                    product = product * atom.substitute(mapping)
            result = result + product
        return result

    def names(self) -> set[str]:
        """Every name the expression reads, inside FloorDiv/Mod atoms too."""
        found: set[str] = set()
        for monomial in self.terms:
            for atom in monomial:
                found |= {atom} if isinstance(atom, str) else atom.names()
        return found

    def __eq__(self, other) -> bool:
        if isinstance(other, (int, np.integer)):
            other = Index.const(int(other))
        return isinstance(other, Index) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        pieces = []
        for monomial, coeff in sorted(self.terms.items(), key=lambda item: [_atom_key(a) for a in item[0]]):
            factors = [str(atom) for atom in monomial]
            if abs(coeff) != 1 or not factors:
                factors.insert(0, str(abs(coeff)))
            pieces.append(("- " if coeff < 0 else "+ ") + "*".join(factors))
        text = " ".join(pieces)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    __repr__ = __str__


@dataclasses.dataclass(frozen=True)
class _Division:
    """`numerator <symbol> divisor` as an atom of an Index (both non-negative)."""

    numerator: Index
    divisor: Index

    def names(self) -> set[str]:
        return self.numerator.names() | self.divisor.names()

    def substitute(self, mapping) -> Index:
        return self.apply(self.numerator.substitute(mapping), self.divisor.substitute(mapping))

    @functools.cached_property
    def text(self) -> str:
        """The C text, built once: sorting monomials reads it often."""
        return f"({self.numerator} {self.symbol} {self.divisor})"

    def __str__(self) -> str:
        return self.text


class FloorDiv(_Division):
    """`numerator // divisor` as an atom of an Index (both non-negative)."""

    symbol = "//"

    @staticmethod
    def apply(numerator: Index, divisor: Index) -> Index:
        return numerator.floordiv(divisor)


class Mod(_Division):
    """`numerator % divisor` as an atom of an Index (both non-negative)."""

    symbol = "%"

    @staticmethod
    def apply(numerator: Index, divisor: Index) -> Index:
        return numerator.mod(divisor)
