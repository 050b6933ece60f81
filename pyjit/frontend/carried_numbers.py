"""The Python numbers of a captured `while` loop's state, symbolic in its trace
(NOTE(carried-numbers)).

NOTE(carried-numbers): while a `while` loop's condition and body are traced
(NOTE(while-capture) in while_loops.py), each Python int or float the loop carries
(`t` in `t += dt`, `n` in `n += 1`) and each number argument its condition reads (`t_end`)
is a `CarriedNumber`, held by a ConstantValue as a loop index is a SymInt: Python
arithmetic on it (`+ - * / // %`, unary `- +`, `abs`, `**` by a constant int >= 0, and
the comparisons) makes another one, an expression that the loop op evaluates with
Python's own operators on the iteration's numbers, so its values are Python's bit for bit
and its type is always the one Python gives for the operands' types (traced on the
example values: `hint`). Where array code uses one (`u + dt * t`), the body's graph
gets it as a Python-scalar input (weak under NEP 50, as the number is in NumPy: a float32
array stays float32). Anything else that needs its value now (its truth, `int()`,
`float()`, `str()`, a hash, a slice bound, an operand of another type, a builtin other
than `abs`) is a Break, which makes the loop run as before (unrolled or a break).

After the loop, a carried number read later is a `CarriedNumber` bound to the loop
node's result (`node`): the transformed code takes the Python number itself from the
graph's result, as it takes an array; arithmetic on it, or array code that reads it,
is a Break there (a graph's array code reads Python numbers from its inputs only).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ..graph import Node
from .breaks import Break

_NUMBERS = (int, float)
_ARITHMETIC = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod}
_COMPARISONS = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}


def _refused(what: str) -> Callable:
    def refuse(self, *args):
        raise Break("unsupported", f"{what} of a number a while loop carries, which is known only as the loop runs")
    return refuse


class CarriedNumber:
    """An int, float or (a comparison's) bool of a while loop's state: a leaf (`fn` None:
    position `args[0]` of the loop's numbers, or the loop node's result `node`) or
    `fn(*args)`, its args CarriedNumbers and Python numbers; `hint` its traced value."""

    __slots__ = ("fn", "args", "hint", "node")
    __array_ufunc__ = None  # NumPy scalars and arrays defer to the reflected operator, which refuses them

    def __init__(self, fn: Callable | None, args: tuple, hint: Any, node: Node | None = None):
        self.fn, self.args, self.hint, self.node = fn, args, hint, node

    def __repr__(self) -> str:
        return f"<a number a while loop carries, {self.hint!r} when traced>"

    def _combine(self, fn: Callable, *operands) -> CarriedNumber:
        for operand in operands:
            if isinstance(operand, CarriedNumber):
                if operand.node is not None:
                    raise Break("unsupported", "arithmetic on a number a while loop computed, after the loop")
            elif type(operand) not in _NUMBERS:
                raise Break("unsupported", "a number a while loop carries, combined with a value that is not a "
                            "Python int or float")
        hints = [operand.hint if isinstance(operand, CarriedNumber) else operand for operand in operands]
        if fn not in _COMPARISONS and any(type(hint) not in _NUMBERS for hint in hints):
            raise Break("unsupported", "arithmetic on the truth value of a comparison of carried numbers")
        try:
            hint = fn(*hints)
        except Exception as error:
            raise Break("unsupported", f"arithmetic on a while loop's numbers raised {type(error).__name__} at "
                        "the traced values") from None
        return CarriedNumber(fn, operands, hint)

    def _binary(fn: Callable, reflected: bool = False) -> Callable:
        if reflected:
            return lambda self, other: self._combine(fn, other, self)
        return lambda self, other: self._combine(fn, self, other)

    __add__, __radd__ = _binary(operator.add), _binary(operator.add, True)
    __sub__, __rsub__ = _binary(operator.sub), _binary(operator.sub, True)
    __mul__, __rmul__ = _binary(operator.mul), _binary(operator.mul, True)
    __truediv__, __rtruediv__ = _binary(operator.truediv), _binary(operator.truediv, True)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _binary(operator.floordiv, True)
    __mod__, __rmod__ = _binary(operator.mod), _binary(operator.mod, True)
    __lt__, __le__ = _binary(operator.lt), _binary(operator.le)
    __gt__, __ge__ = _binary(operator.gt), _binary(operator.ge)
    __eq__, __ne__ = _binary(operator.eq), _binary(operator.ne)
    del _binary

    def __pow__(self, exponent):
        # int ** int is a float for a negative exponent: the type would depend on the values.
        if not (type(exponent) is int and exponent >= 0):
            raise Break("unsupported", "a power of a number a while loop carries, other than by a constant int >= 0")
        return self._combine(operator.pow, self, exponent)

    def __neg__(self):
        return self._combine(operator.neg, self)

    def __pos__(self):
        return self._combine(operator.pos, self)

    def __abs__(self):
        return self._combine(abs, self)

    __bool__ = _refused("the truth value")
    __hash__ = _refused("a hash")
    __index__ = __int__ = __float__ = __complex__ = __round__ = __trunc__ = _refused("a conversion")
    __floor__ = __ceil__ = _refused("a conversion")
    __str__ = __format__ = _refused("the text")
    __iter__ = __len__ = __array__ = __rpow__ = __divmod__ = __rdivmod__ = _refused("an operation")


def leaf(position: int, hint: Any) -> CarriedNumber:
    """The loop's number at `position` (its carried numbers, then its number inputs)."""
    return CarriedNumber(None, (position,), hint)


def after_loop(node: Node, hint: Any) -> CarriedNumber:
    """A carried number's value after the loop: the loop node's result `node`."""
    return CarriedNumber(None, (), hint, node)


def evaluate(value: Any, numbers: list, memo: dict[int, Any]) -> Any:
    """`value` (a CarriedNumber or a constant) for the loop's `numbers`, with Python's
    operators; `memo` keeps what one iteration computed already (shared subexpressions)."""
    if not isinstance(value, CarriedNumber):
        return value
    found = memo.get(id(value), memo)
    if found is memo:
        if value.fn is None:
            found = numbers[value.args[0]]
        else:
            found = value.fn(*(evaluate(arg, numbers, memo) for arg in value.args))
        memo[id(value)] = found
    return found

