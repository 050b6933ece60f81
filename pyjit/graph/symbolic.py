"""Symbolic sizes: `s0`, `s1`, … and the small arithmetic reshapes and broadcasting need.

NOTE(symbolic-sizes): a symbolic size is a polynomial with rational coefficients over
size symbols (`3/2*s0*s1 + 4`). That is closed under +, -, * and division by a
constant, which covers broadcasting, concatenation, reshape (including `-1`), flattening
and splitting. Every symbol has a hint, the value it had in the example inputs. A
comparison is decided on the hints and recorded as a guard in the ShapeEnv, so the
compiled code is only reused where the decision still holds; an equality between two
symbols also makes one stand for the other from then on. Symbols are created only for
sizes of 2 or more (0 and 1 stay specialised), which lets `could_be_one` answer
broadcasting questions without a guard.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from fractions import Fraction

Monomial = tuple[str, ...]  # sorted symbol names; () is the constant term


def _symbol_index(name: str) -> tuple[int, str]:
    return (int(name[1:]) if name[1:].isdigit() else -1, name)


class ShapeEnv:
    """The symbols of one graph: their hints, where they come from, and the guards taken."""

    def __init__(self):
        self.hints: dict[str, int] = {}
        self.sources: dict[str, str] = {}
        self.replacements: dict[str, SymInt] = {}
        self.guards: list[ShapeGuard] = []
        self.indices: set[str] = set()  # loops' induction variables: any int, 0 and 1 included

    def create_symbol(self, hint: int, source: str = "") -> SymInt:
        """A new size symbol `s<N>` whose example value is `hint` (at least 2)."""
        if hint < 2:
            raise ValueError(f"sizes 0 and 1 stay static; cannot make {hint} symbolic")
        name = f"s{len(self.hints)}"
        self.hints[name] = int(hint)
        self.sources[name] = source
        return SymInt({(name,): Fraction(1)}, self)

    def create_index(self, hint: int, source: str = "") -> SymInt:
        """A new symbol for a loop's induction variable (NOTE(loop-capture) in
        pyjit/frontend/loops.py): any int, so a size it appears in could be 1 (or 0);
        whoever makes one checks each guard that mentions it for every value it takes."""
        name = f"s{len(self.hints)}"
        self.indices.add(name)
        self.hints[name] = int(hint)
        self.sources[name] = source
        return SymInt({(name,): Fraction(1)}, self)

    def evaluate(self, size: int | SymInt, hints: dict[str, int] | None = None) -> int:
        """The value of `size` under `hints` (default: the example values)."""
        if not isinstance(size, SymInt):
            return size
        return size.evaluate(self.hints if hints is None else hints)

    def guard_texts(self) -> list[str]:
        return [str(guard) for guard in self.guards]

    def _record(self, lhs: SymInt, relation: str, rhs: int | SymInt) -> None:
        guard = ShapeGuard(lhs, relation, rhs)
        # Compared as text: comparing the SymInts themselves would record guards.
        if str(guard) not in map(str, self.guards):
            self.guards.append(guard)


@dataclasses.dataclass(frozen=True, eq=False)
class ShapeGuard:
    """`lhs <relation> rhs`, which held for the example inputs; relation is a Python operator."""

    lhs: SymInt
    relation: str
    rhs: int | SymInt

    def holds(self, hints: dict[str, int]) -> bool:
        rhs = self.rhs.evaluate(hints) if isinstance(self.rhs, SymInt) else self.rhs
        return self.compare(self.lhs.evaluate(hints), self.relation, rhs)

    @staticmethod
    def compare(lhs: int, relation: str, rhs: int) -> bool:
        return _RELATIONS[relation](lhs, rhs)

    def __str__(self) -> str:
        return f"{self.lhs} {self.relation} {self.rhs}"


_RELATIONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
              ">": operator.gt, ">=": operator.ge}


class SymInt:
    """A size expression over symbols; behaves like an int in arithmetic and comparisons."""

    __slots__ = ("terms", "env")

    def __init__(self, terms: dict[Monomial, Fraction], env: ShapeEnv):
        self.terms = {monomial: coeff for monomial, coeff in terms.items() if coeff != 0}
        self.env = env

    # -- construction helpers -------------------------------------------------------
    def _make(self, terms: dict[Monomial, Fraction]) -> int | SymInt:
        terms = _substitute(terms, self.env.replacements)
        # Terms that cancelled (`s0 - s0`) must go before the test, or they would leave
        # a SymInt with no terms where the plain int 0 belongs.
        terms = {monomial: coeff for monomial, coeff in terms.items() if coeff != 0}
        if all(monomial == () for monomial in terms):
            constant = terms.get((), Fraction(0))
            if constant.denominator != 1:
                raise ValueError(f"size expression {self} does not divide evenly")
            return int(constant)
        return SymInt(terms, self.env)

    @staticmethod
    def _terms_of(value: int | SymInt) -> dict[Monomial, Fraction]:
        if isinstance(value, SymInt):
            return value.terms
        if isinstance(value, int):
            return {(): Fraction(value)}
        raise TypeError(f"a size must be an int, not {type(value).__name__}")

    # -- arithmetic -----------------------------------------------------------------
    def __add__(self, other):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        terms = dict(self.terms)
        for monomial, coeff in self._terms_of(other).items():
            terms[monomial] = terms.get(monomial, Fraction(0)) + coeff
        return self._make(terms)

    __radd__ = __add__

    def __neg__(self):
        return self._make({monomial: -coeff for monomial, coeff in self.terms.items()})

    def __sub__(self, other):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        terms: dict[Monomial, Fraction] = {}
        for left, left_coeff in self.terms.items():
            for right, right_coeff in self._terms_of(other).items():
                monomial = tuple(sorted(left + right, key=_symbol_index))
                terms[monomial] = terms.get(monomial, Fraction(0)) + left_coeff * right_coeff
        return self._make(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        """Exact division: by a constant, or by a symbolic factor every term contains.

        A division that is not exact for the example sizes raises ValueError; one that is
        exact for them but not in general records a guard that it stays exact.
        """
        if isinstance(other, int):
            if other == 0:
                raise ZeroDivisionError("integer division or modulo by zero")
            if other == 1:
                return self
            quotient = self._make({m: c / other for m, c in self.terms.items()})
            if self.hint % other:
                raise ValueError(f"size {self} (= {self.hint}) is not divisible by {other}")
            if any((c / other).denominator != 1 for c in self.terms.values()):
                self.env._record(_Mod(self, other), "==", 0)
            return quotient
        if isinstance(other, SymInt):
            return _divide_by_symbolic(self, other)
        return NotImplemented

    def __rfloordiv__(self, other):
        if not isinstance(other, int):
            return NotImplemented
        return _divide_by_symbolic(other, self)

    def __mod__(self, other):
        """The remainder: 0 when every term is a multiple of `other`, otherwise the
        example value's remainder, with a guard that it stays so."""
        if not isinstance(other, int) or other <= 0:
            return NotImplemented
        if all((coeff / other).denominator == 1 for coeff in self.terms.values()):
            return 0
        remainder = self.hint % other
        self.env._record(_Mod(self, other), "==", remainder)
        return remainder

    # -- comparisons (decided on hints, recorded as guards) -------------------------
    def _compare(self, other, relation: str):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        difference = self - other
        if not isinstance(difference, SymInt):
            return _RELATIONS[relation](difference, 0)
        outcome = _RELATIONS[relation](difference.hint, 0)
        held = relation if outcome else _NEGATED[relation]
        if held == "==":  # `a == b` that held, or `a != b` that did not
            _learn_equality(_canonical(self), _canonical(other))
        self.env._record(self, held, other)
        return outcome

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __hash__(self):
        return hash(frozenset(self.terms.items()))

    def __bool__(self):
        return self != 0

    def __int__(self):
        """Specialise: the example value, with a guard that the size keeps it."""
        hint = self.hint
        self.env._record(self, "==", hint)
        return hint

    __index__ = __int__

    # -- inspection -----------------------------------------------------------------
    @property
    def hint(self) -> int:
        return self.evaluate(self.env.hints)

    def evaluate(self, hints: dict[str, int]) -> int:
        total = Fraction(0)
        for monomial, coeff in self.terms.items():
            total += coeff * math.prod(hints[name] for name in monomial)
        return int(total)

    def same_as(self, other: int | SymInt) -> bool:
        """Structural equality, with no guard: the same expression, or provably equal."""
        difference = self - other
        return not isinstance(difference, SymInt) and difference == 0

    def could_be_one(self) -> bool:
        """False when the expression is at least 2 for every symbol value of 2 or more."""
        # With no negative coefficient outside the constant term the expression grows
        # with every symbol, so its smallest value is where all symbols are 2.
        if self.symbols() & self.env.indices or any(coeff < 0 for monomial, coeff in self.terms.items() if monomial):
            return True
        smallest = sum(coeff * 2 ** len(monomial) for monomial, coeff in self.terms.items())
        return smallest < 2

    def python(self) -> str:
        """The expression as Python source over the symbol names, in integer arithmetic."""
        denominator = math.lcm(*(coeff.denominator for coeff in self.terms.values()))
        text = _polynomial_text({monomial: int(coeff * denominator) for monomial, coeff in self.terms.items()})
        if denominator != 1:
            return f"({text}) // {denominator}"
        return f"({text})" if len(self.terms) > 1 else text

    def symbols(self) -> set[str]:
        return {name for monomial in self.terms for name in monomial}

    def substitute(self, name: str, value: int | SymInt) -> int | SymInt:
        """The expression with symbol `name` replaced by `value` (no guard taken)."""
        replacement = value if isinstance(value, SymInt) else SymInt({(): Fraction(value)}, self.env)
        return self._make(_substitute_once(self.terms, {name: replacement}))

    def __repr__(self):
        return str(self)

    def __str__(self):
        return _polynomial_text(self.terms)


def _polynomial_text(terms: dict[Monomial, Fraction | int]) -> str:
    pieces = []
    for monomial, coeff in sorted(terms.items(), key=lambda item: (-len(item[0]), item[0])):
        factors = ([str(abs(coeff))] if abs(coeff) != 1 or not monomial else []) + list(monomial)
        pieces.append(("- " if coeff < 0 else "+ ") + "*".join(factors))
    text = " ".join(pieces)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


@dataclasses.dataclass(frozen=True)
class _Mod:
    """`expr % n`, only ever used as the left side of a remainder guard."""

    expr: SymInt
    modulus: int

    def evaluate(self, hints: dict[str, int]) -> int:
        return self.expr.evaluate(hints) % self.modulus

    def __str__(self):
        return f"({self.expr}) % {self.modulus}"


_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _substitute(terms: dict[Monomial, Fraction], replacements: dict[str, SymInt]):
    while replacements and any(name in replacements for monomial in terms for name in monomial):
        terms = _substitute_once(terms, replacements)
    return terms


def _substitute_once(terms: dict[Monomial, Fraction], replacements: dict[str, SymInt]):
    result: dict[Monomial, Fraction] = {}
    for monomial, coeff in terms.items():
        product: dict[Monomial, Fraction] = {(): coeff}
        for name in monomial:
            factor = replacements[name].terms if name in replacements else {(name,): Fraction(1)}
            product = {tuple(sorted(a + b, key=_symbol_index)): ca * cb
                       for a, ca in product.items() for b, cb in factor.items()}
        for key, value in product.items():
            result[key] = result.get(key, Fraction(0)) + value
    return result


def _canonical(value: int | SymInt) -> int | SymInt:
    """`value` with the replacements learnt so far applied (SymInts made before keep the
    symbols they were made with)."""
    return value._make(value.terms) if isinstance(value, SymInt) else value


def _lone_symbol(value: int | SymInt) -> str | None:
    if isinstance(value, SymInt) and len(value.terms) == 1:
        ((monomial, coeff),) = value.terms.items()
        if len(monomial) == 1 and coeff == 1:
            return monomial[0]
    return None


def _learn_equality(left: int | SymInt, right: int | SymInt) -> None:
    """After `left == right` held: a lone symbol on either side is replaced by the other
    side from then on (between two lone symbols, the newer one goes)."""
    candidates = [(name, other) for name, other in ((_lone_symbol(left), right), (_lone_symbol(right), left))
                  if name is not None and not (isinstance(other, SymInt) and name in other.symbols())]
    if candidates:
        name, other = max(candidates, key=lambda candidate: _symbol_index(candidate[0]))
        env = next(side.env for side in (left, right) if isinstance(side, SymInt))
        env.replacements[name] = other if isinstance(other, SymInt) else SymInt({(): Fraction(other)}, env)


def _divide_by_symbolic(numerator: int | SymInt, denominator: SymInt) -> int | SymInt:
    """`numerator // denominator` when `denominator` is a monomial every term contains;
    otherwise both sides are specialised to their example values (with guards)."""
    if isinstance(numerator, SymInt) and len(denominator.terms) == 1:
        ((factor, coeff),) = denominator.terms.items()
        if all(_contains(monomial, factor) for monomial in numerator.terms):
            return numerator._make({_remove(monomial, factor): c / coeff for monomial, c in numerator.terms.items()})
    return int(numerator) // int(denominator)


def _contains(monomial: Monomial, factor: Monomial) -> bool:
    remaining = list(monomial)
    for name in factor:
        if name not in remaining:
            return False
        remaining.remove(name)
    return True


def _remove(monomial: Monomial, factor: Monomial) -> Monomial:
    remaining = list(monomial)
    for name in factor:
        remaining.remove(name)
    return tuple(remaining)
