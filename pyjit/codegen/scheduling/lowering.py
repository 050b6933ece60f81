"""From graph nodes to kernel IR values: formulas typed as NumPy types them, broadcasting
and views as index arithmetic, buffer layouts as strides.

NOTE(formula-typing): a pointwise op's formula (NOTE(formula)) is evaluated bottom-up
the way NumPy would evaluate it as a chain of ufunc calls: each scalar op takes the loop
dtypes its ufunc resolves for its operands (`ufunc.resolve_dtypes`, with Python scalars
weak under NEP 50), its arguments are cast to them, and its result is an array (strong)
for the next op. A weak Python scalar is converted to the loop dtype as NumPy converts
it (a float rounded to float32, an int wrapped where np.where wraps it). Where no C
expression can give NumPy's exact result for every input, the node is NotLowerable and
runs eagerly instead (integer reciprocal, an integer power whose exponent may be
negative, complex loops, mixed-signedness loops other than comparisons, and float16
loops outside NOTE(half-lowering)).
A comparison of an integer array with a Python int its dtype cannot hold has one answer
for every element (NumPy 2 compares exactly), so it folds to that constant.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from ...graph import SymInt, TensorMeta
from ...ops.formula import SCALAR_OPS, Arg, Const, Expr
from ...ops.shape_rules import operand_dtype
from ...ops import views
from ..ir.index import Index
from ..ir.kernel_ir import Call, Constant, IndexValue, KernelValue

SUPPORTED_DTYPES = frozenset(np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"))
INDEX_DTYPE = np.dtype(np.int64)
HALF = np.dtype(np.float16)
# NOTE(half-lowering): NumPy's float16 loops compute in float32 and round each result to
# float16, which a kernel can do exactly when its renderer rounds every float16 value it
# computes (the CUDA renderer does: NOTE(cuda-half)); the C renderer does not, so float16
# is lowered only inside `lowering_half()`, which the CUDA targets' scheduling enters.
_HALF_LOWERED = contextvars.ContextVar("pyjit_half_lowered", default=False)

COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # op -> op with sides swapped


class NotLowerable(Exception):
    """A node the kernels cannot compute exactly as NumPy does; it runs eagerly."""


def check_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES and not (dtype == HALF and _HALF_LOWERED.get()):
        raise NotLowerable(f"dtype {dtype} has no kernel type")
    return dtype


@contextlib.contextmanager
def lowering_half(enabled: bool = True):
    """float16 values are lowered inside this block (NOTE(half-lowering))."""
    token = _HALF_LOWERED.set(enabled)
    try:
        yield
    finally:
        _HALF_LOWERED.reset(token)


# -- operands of the formula language -------------------------------------------------
class Operand:
    """A formula operand: a typed value, or a weak Python scalar not yet converted
    (`scalar`); `promotion` is what NumPy's type resolution sees for it."""

    __slots__ = ("value", "scalar", "promotion")

    def __init__(self, value: KernelValue | None, promotion, scalar=None):
        self.value, self.promotion, self.scalar = value, promotion, scalar

    @classmethod
    def strong(cls, value: KernelValue) -> Operand:
        return cls(value, value.dtype)

    @classmethod
    def weak(cls, value: KernelValue, python_type: type) -> Operand:
        """A value that stands for a Python scalar (a scalar input, a size)."""
        return cls(value, python_type)

    @classmethod
    def constant(cls, value) -> Operand:
        if isinstance(value, SymInt):
            return cls.weak(IndexValue(Index.of(canonical(value)), INDEX_DTYPE), int)
        if isinstance(value, (complex, np.complexfloating)):
            raise NotLowerable("complex scalars have no kernel type")
        promotion = operand_dtype(value)
        if isinstance(value, np.generic):
            dtype = check_dtype(value.dtype)
            return cls(Constant(value.item(), dtype), dtype)
        return cls(None, promotion, scalar=value)

    def as_dtype(self, dtype: np.dtype) -> KernelValue:
        if self.value is None:
            return Constant(convert_scalar(self.scalar, dtype), dtype)
        if self.value.dtype == dtype:
            return self.value
        if isinstance(self.value, Constant):
            return Constant(convert_scalar(self.value.value, dtype), dtype)
        if self.promotion is int and dtype.kind in "iu" and dtype != self.value.dtype:
            # A Python int known only at run time, in a narrower integer loop: NumPy
            # raises OverflowError for a value the dtype cannot hold, which C cannot.
            raise NotLowerable(f"a run-time Python int in a {dtype} loop")
        return Call("cast", (self.value,), dtype)


def convert_scalar(value, dtype: np.dtype):
    """`value` converted to `dtype` as NumPy converts it, as a Python scalar."""
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind in "iu":
        if isinstance(value, float):
            raise NotLowerable("a float constant in an integer loop")
        bits = dtype.itemsize * 8
        wrapped = int(value) % (1 << bits)  # np.where wraps out-of-range Python ints (NumPy < 2.5)
        return wrapped - (1 << bits) if dtype.kind == "i" and wrapped >= 1 << (bits - 1) else wrapped
    with np.errstate(all="ignore"):
        return float(dtype.type(value))


def canonical(size):
    """A size with the ShapeEnv's learnt equalities applied (`s1` becomes `s0` once
    `s0 == s1` was guarded), so that equal sizes compare equal structurally."""
    return size + 0 if isinstance(size, SymInt) else size


def same_size(left, right) -> bool:
    return Index.of(canonical(left)) == Index.of(canonical(right))


def is_one(size) -> bool:
    """A size of 1 (a symbolic one that is 1 in the example: the meta rule that relied
    on it guarded it), decided without recording a guard."""
    if isinstance(size, SymInt):
        return size.could_be_one() and size.hint == 1
    return size == 1


def same_shape(left: tuple, right: tuple) -> bool:
    return len(left) == len(right) and all(same_size(a, b) for a, b in zip(left, right))


# -- formulas ------------------------------------------------------------------------
def typed_formula(expression, operands: dict[int, Operand]) -> Operand:
    """The formula `expression` over Arg leaves bound to `operands`, typed
    (NOTE(formula-typing))."""
    if isinstance(expression, Arg):
        return operands[expression.index]
    if isinstance(expression, Const):
        return Operand.constant(expression.value)
    if not isinstance(expression, Expr):
        return Operand.constant(expression)
    args = [typed_formula(arg, operands) for arg in expression.args]
    if expression.op == "cast":
        dtype = check_dtype(dict(expression.params)["dtype"])
        return Operand.strong(args[0].as_dtype(dtype))
    if expression.op == "where":
        return _typed_where(*args)
    return _typed_ufunc(expression.op, args)


def _typed_where(condition: Operand, left: Operand, right: Operand) -> Operand:
    dtype = check_dtype(np.result_type(_stand_in(left.promotion), _stand_in(right.promotion)))
    args = (condition.as_dtype(np.dtype(bool)), left.as_dtype(dtype), right.as_dtype(dtype))
    return Operand.strong(Call("where", args, dtype))


def _stand_in(promotion):
    """What np.result_type promotes weakly for a Python scalar type."""
    return promotion() if isinstance(promotion, type) else promotion


def _typed_ufunc(op: str, args: list[Operand]) -> Operand:
    ufunc = SCALAR_OPS[op].ufunc
    try:
        loop = ufunc.resolve_dtypes(tuple(arg.promotion for arg in args) + (None,))
    except (TypeError, ValueError) as error:
        raise NotLowerable(f"{op}: {error}") from None
    inputs, result = loop[:-1], check_dtype(loop[-1])
    for dtype in inputs:
        check_dtype(dtype)
    if op in COMPARISONS:
        folded = _fold_out_of_range_comparison(op, args, inputs)
        if folded is not None:
            return Operand.strong(folded)
    elif len(set(inputs)) > 1:
        raise NotLowerable(f"{op} with mixed loop dtypes {inputs}")
    if op == "nextafter" and result == HALF:
        raise NotLowerable("float16 nextafter steps through half's own values, which a float computation does not")
    if op == "reciprocal" and result.kind in "iu":
        raise NotLowerable("integer reciprocal (NumPy's result at 0 depends on the dtype)")
    values = tuple(arg.as_dtype(dtype) for arg, dtype in zip(args, inputs))
    if op == "pow" and result.kind == "i" and not _never_negative(values[1]):
        raise NotLowerable("an integer power whose exponent may be negative (NumPy raises ValueError)")
    if op == "pow" and result.kind == "f" and isinstance(values[1], Constant) and values[1].value in (1, 2, 0.5):
        return Operand.strong(_scalar_exponent_power(values[0], values[1].value, result))
    return Operand.strong(Call(op, values, result))


def _scalar_exponent_power(base: KernelValue, exponent: float, dtype: np.dtype) -> KernelValue:
    """NOTE(scalar-exponent-power): NumPy's float power loop, given one exponent for every
    element (a scalar), squares for 2 and takes the square root for 0.5. The square is
    what pow gives, from one multiply instead of a call of the vector math (`(x ** 2).sum()`
    on 512x512 float32: 0.96 ms with powf, 0.012 ms squared); the square root is not:
    (-0.0) ** 0.5 is -0.0 and (-inf) ** 0.5 NaN in NumPy, where pow gives 0.0 and inf.
    A power of 1 (the derivative of a square has one) is the base itself, as pow gives it."""
    if exponent == 1:
        return base
    if exponent == 2:
        return Call("mul", (base, base), dtype)
    return Call("sqrt", (base,), dtype)


def _fold_out_of_range_comparison(op: str, args: list[Operand], inputs) -> KernelValue | None:
    for position, (arg, dtype) in enumerate(zip(args, inputs)):
        scalar = arg.scalar
        if arg.value is not None or type(scalar) is not int or dtype.kind not in "iu":
            continue
        info = np.iinfo(dtype)
        if info.min <= scalar <= info.max:
            return None
        relation = op if position == 1 else COMPARISONS[op]  # as `array <relation> scalar`
        above = scalar > info.max
        answer = {"eq": False, "ne": True, "lt": above, "le": above, "gt": not above, "ge": not above}[relation]
        return Constant(answer, np.dtype(bool))
    return None


def _never_negative(value: KernelValue) -> bool:
    if isinstance(value, Constant):
        return value.value >= 0
    if isinstance(value, Call) and value.op == "cast":
        return value.args[0].dtype.kind in "bu"
    return value.dtype.kind in "bu"


# -- broadcasting and views ------------------------------------------------------------
class _Indexing:
    """What the views' index rules compute with (NOTE(view-index-rule)): Index
    expressions over loop variables and size parameters."""

    @staticmethod
    def zero() -> Index:
        return Index.const(0)

    @staticmethod
    def size(size) -> Index:
        return Index.of(canonical(size))

    is_one = staticmethod(is_one)
    canonical = staticmethod(canonical)

    @staticmethod
    def hint(size: Index, shape: tuple) -> int:
        """The example value of a product of sizes (symbols at their hints)."""
        env = next((s.env for s in shape if isinstance(s, SymInt)), None)
        hints = env.hints if env is not None else {}
        mapping = {name: Index.const(hints.get(name, 2)) for name in size.names()}
        return size.substitute(mapping).constant_value()


def broadcast_index(index: tuple, shape: tuple) -> tuple:
    """The index into an operand of `shape` that broadcasts to the result `index` is in."""
    return views.broadcast_index(_Indexing, index, shape)


def view_source_index(node, index: tuple) -> tuple:
    """(source node, index into it) for the view `node` read at `index`, by its entry's
    index rule."""
    rule = getattr(node.target, "index_rule", None)
    if rule is None:
        raise NotLowerable(f"view {node.target.name}")
    source = node.args[0]
    try:
        return source, rule(_Indexing, index, source.meta.shape, node.meta.shape, *node.args[1:], **node.kwargs)
    except NotImplementedError as error:
        raise NotLowerable(str(error)) from None


def assignment_index(target_shape: tuple, key, index: tuple) -> tuple:
    """The index into an array of `target_shape` that item assignment `x[key] = ...` (a
    basic `key`) writes at `index` of the view `x[key]`."""
    try:
        shape = views.basic_index_shape(target_shape, key)
        return views.getitem.index_rule(_Indexing, index, target_shape, shape, key)
    except (NotImplementedError, TypeError) as error:
        raise NotLowerable(str(error)) from None


# -- layouts -------------------------------------------------------------------------
def contiguous_strides(shape: tuple) -> tuple:
    """Element strides of a C-contiguous array of `shape`."""
    strides, step = [], Index.const(1)
    for size in reversed(shape):
        strides.append(step)
        step = step * Index.of(canonical(size))
    return tuple(reversed(strides))


def offset(strides: tuple, index: tuple) -> Index:
    """The element offset of `index` in an array of element `strides`."""
    total = Index.const(0)
    for stride, position in zip(strides, index):
        total = total + stride * position
    return total


def is_array(node) -> bool:
    return isinstance(getattr(node, "meta", None), TensorMeta)
