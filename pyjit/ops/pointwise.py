"""Pointwise ops: NumPy's ufuncs (and erf), with their derivatives and scalar formulas.

Derivatives follow PyTorch's conventions where the math leaves a choice: maximum and
minimum split the gradient in half between tied inputs, abs uses sign(x) (zero at 0),
clip passes the gradient where a_min <= x <= a_max, and the piecewise-constant ops
(floor, ceil, round, sign, floor_divide) give zero gradients.
"""

from __future__ import annotations

import math
import operator
from typing import Callable

import numpy as np

from .. import _C
from ..graph import TensorMeta, broadcast_shapes
from .formula import Arg, Const, F
from .gradients import input_grad, is_differentiable
from .registry import Op, op, primitive, register
from .shape_rules import check_python_integers, device_of, is_array, operand_dtype, shape_of, ufunc_meta


def ufunc_op(name: str, *, vjp, formula, ufunc: np.ufunc | None = None, meta: Callable | None = None,
             doc: str = "") -> Op:
    """Register the pointwise op `name` computed by the ufunc of that name (or `ufunc`)
    of the argument's array module; its meta rule is `ufunc_meta(ufunc)` unless given."""
    ufunc = ufunc if ufunc is not None else getattr(np, name)
    ufunc_name = ufunc.__name__

    def impl(xp, *args):
        return getattr(xp, ufunc_name)(*args)

    return register(Op(name, category="pointwise", impl=impl, meta=meta or ufunc_meta(ufunc), vjp=vjp,
                       formula=formula, doc=doc or f"numpy.{ufunc_name}, elementwise with broadcasting.",
                       numpy_impl=getattr(np, ufunc_name)))


# -- helpers for VJPs ----------------------------------------------------------------
def grad_of(value, gradient: Callable):
    """input_grad(value, gradient()), building the gradient only when `value` gets one:
    an integer argument costs nothing, and cannot raise warnings (log(0) for a power's
    integer base) in a gradient nobody asked for."""
    return input_grad(value, gradient()) if is_differentiable(value) else None


def zero_grad(grad):
    """The gradient of a piecewise-constant op (grad * 0, as PyTorch's zeros)."""
    return op.multiply(grad, 0.0)


def zero_vjp(grad, out, *args, **kwargs):
    """The VJP of a piecewise-constant op: zeros for every differentiable argument."""
    return tuple(grad_of(arg, lambda: zero_grad(grad)) for arg in args)


def times_derivative(derivative: Callable):
    """The VJP of a unary op whose derivative is `derivative(x, out)`: grad * derivative."""
    return lambda grad, out, x: (grad_of(x, lambda: op.multiply(grad, derivative(x, out))),)


def over_derivative_denominator(denominator: Callable):
    """The VJP of a unary op whose derivative is 1 / `denominator(x, out)`."""
    return lambda grad, out, x: (grad_of(x, lambda: op.divide(grad, denominator(x, out))),)


def parameter(value):
    """A formula's non-array argument as a value: positional ones arrive as Const leaves,
    keyword ones as given (NOTE(formula))."""
    return value.value if isinstance(value, Const) else value


def weak(value):
    """A registry op on Python scalars alone computes a NumPy scalar, which promotes as
    strongly as a float64 array (NEP 50): made a Python scalar again, it keeps a float32
    gradient float32."""
    return value.item() if isinstance(value, np.generic) else value


def negated(vjp: Callable):
    """The VJP of the negation of the op whose VJP is `vjp` (arccos from arcsin)."""
    return lambda grad, out, *args: vjp(op.negative(grad), out, *args)


# -- arithmetic ----------------------------------------------------------------------
ufunc_op("add", formula=F.add,
         vjp=lambda grad, out, a, b: (input_grad(a, grad), input_grad(b, grad)))
ufunc_op("subtract", formula=F.sub,
         vjp=lambda grad, out, a, b: (input_grad(a, grad), grad_of(b, lambda: op.negative(grad))))
ufunc_op("multiply", formula=F.mul,
         vjp=lambda grad, out, a, b: (grad_of(a, lambda: op.multiply(grad, b)),
                                      grad_of(b, lambda: op.multiply(grad, a))))
ufunc_op("divide", formula=F.div,
         vjp=lambda grad, out, a, b: (grad_of(a, lambda: op.divide(grad, b)),
                                      grad_of(b, lambda: op.negative(op.divide(op.multiply(grad, out), b)))))
ufunc_op("floor_divide", formula=F.floordiv, vjp=zero_vjp)
# mod(a, b) = a - floor(a / b) * b.
ufunc_op("mod", formula=F.mod, ufunc=np.remainder,
         vjp=lambda grad, out, a, b: (input_grad(a, grad),
                                      grad_of(b, lambda: op.negative(op.multiply(grad, op.floor_divide(a, b))))))
ufunc_op("negative", formula=F.neg, vjp=lambda grad, out, x: (grad_of(x, lambda: op.negative(grad)),))
ufunc_op("square", formula=F.square, vjp=times_derivative(lambda x, out: op.multiply(x, 2.0)))
ufunc_op("reciprocal", formula=F.reciprocal,
         vjp=times_derivative(lambda x, out: op.negative(op.square(out))))
ufunc_op("abs", formula=F.abs, ufunc=np.absolute, vjp=times_derivative(lambda x, out: op.sign(x)))
ufunc_op("fabs", formula=lambda x: F.abs(in_float_loop(x)), vjp=times_derivative(lambda x, out: op.sign(x)))
ufunc_op("positive", formula=lambda x: x, vjp=lambda grad, out, x: (input_grad(x, grad),))
ufunc_op("sign", formula=F.sign, vjp=zero_vjp)


def _power_meta(a, b):
    """NumPy refuses a negative integer exponent in an integer power (when there are
    elements to compute). Only a constant exponent can be checked here: an array's
    values are not known to a meta rule."""
    result = ufunc_meta(np.power)(a, b)
    negative_constant = isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b < 0
    has_elements = not any(type(size) is int and size == 0 for size in result.shape)
    if result.dtype.kind in "iu" and negative_constant and has_elements:
        raise ValueError("Integers to negative integer powers are not allowed.")
    return result


def _power_vjp(power: str):
    """The VJP of power or float_power: d/da a**b = b * a**(b-1); d/db a**b = a**b * log(a)
    (real only where a > 0)."""
    def vjp(grad, out, a, b):
        exponent = b - 1 if isinstance(b, (int, float)) else op.subtract(b, 1)
        return (grad_of(a, lambda: op.multiply(grad, op.multiply(b, getattr(op, power)(a, exponent)))),
                grad_of(b, lambda: op.multiply(grad, op.multiply(out, weak(op.log(a))))))
    return vjp


ufunc_op("power", formula=F.pow, meta=_power_meta, vjp=_power_vjp("power"))
# float_power computes in float64 (complex128 for complex inputs, which kernels leave
# to NumPy) whatever the inputs' dtypes.
ufunc_op("float_power", formula=lambda a, b: F.pow(F.cast(a, dtype=np.dtype(np.float64)),
                                                   F.cast(b, dtype=np.dtype(np.float64))),
         vjp=_power_vjp("float_power"))


def _selection_vjp(loses: Callable):
    """The VJP of maximum (`loses` = less) or minimum (`loses` = greater): the gradient
    goes to the selected input, halved between tied inputs (PyTorch); where an input is
    NaN neither loses nor ties, so both get it whole, as in PyTorch."""
    def share(grad, mine, other):
        kept = op.where(op.equal(mine, other), op.multiply(grad, 0.5), grad)
        return op.where(loses(mine, other), 0.0, kept)

    return lambda grad, out, a, b: (grad_of(a, lambda: share(grad, a, b)), grad_of(b, lambda: share(grad, b, a)))


ufunc_op("maximum", formula=F.maximum, vjp=_selection_vjp(lambda mine, other: op.less(mine, other)))
ufunc_op("minimum", formula=F.minimum, vjp=_selection_vjp(lambda mine, other: op.greater(mine, other)))
# fmax and fmin select the other argument over a NaN: a NaN input loses.
ufunc_op("fmax", formula=F.fmax,
         vjp=_selection_vjp(lambda mine, other: op.logical_or(op.less(mine, other), op.isnan(mine))))
ufunc_op("fmin", formula=F.fmin,
         vjp=_selection_vjp(lambda mine, other: op.logical_or(op.greater(mine, other), op.isnan(mine))))


# -- comparisons and logic (boolean results: no derivatives) ---------------------------
def _comparison_meta(ufunc: np.ufunc):
    """ufunc_meta without the Python-integer bounds check: NumPy 2 compares an integer
    array with any Python int exactly (`np.int8(1) < 300` is True) instead of raising
    OverflowError. The int's type stands in for it: a weak int, which is not checked."""
    checked = ufunc_meta(ufunc)
    return lambda *args: checked(*(int if type(arg) is int else arg for arg in args))


for _name, _formula in [("equal", F.eq), ("not_equal", F.ne), ("less", F.lt), ("less_equal", F.le),
                        ("greater", F.gt), ("greater_equal", F.ge)]:
    ufunc_op(_name, formula=_formula, meta=_comparison_meta(getattr(np, _name)), vjp=None)
for _name, _formula in [("logical_and", F.logical_and), ("logical_or", F.logical_or),
                        ("logical_xor", F.logical_xor), ("logical_not", F.logical_not),
                        ("isnan", F.isnan), ("isinf", F.isinf), ("isfinite", F.isfinite)]:
    ufunc_op(_name, formula=_formula, vjp=None)


# -- transcendental functions ----------------------------------------------------------
ufunc_op("exp", formula=F.exp, vjp=times_derivative(lambda x, out: out))
ufunc_op("expm1", formula=F.expm1, vjp=times_derivative(lambda x, out: op.add(out, 1.0)))
ufunc_op("log", formula=F.log, vjp=over_derivative_denominator(lambda x, out: x))
ufunc_op("log1p", formula=F.log1p, vjp=over_derivative_denominator(lambda x, out: op.add(x, 1.0)))
ufunc_op("sqrt", formula=F.sqrt, vjp=over_derivative_denominator(lambda x, out: op.multiply(out, 2.0)))
ufunc_op("sin", formula=F.sin, vjp=times_derivative(lambda x, out: op.cos(x)))
ufunc_op("cos", formula=F.cos, vjp=times_derivative(lambda x, out: op.negative(op.sin(x))))
ufunc_op("tan", formula=F.tan, vjp=times_derivative(lambda x, out: op.add(op.square(out), 1.0)))
ufunc_op("sinh", formula=F.sinh, vjp=times_derivative(lambda x, out: op.cosh(x)))
ufunc_op("cosh", formula=F.cosh, vjp=times_derivative(lambda x, out: op.sinh(x)))
ufunc_op("tanh", formula=F.tanh, vjp=times_derivative(lambda x, out: op.subtract(1.0, op.square(out))))
_arcsin_vjp = over_derivative_denominator(lambda x, out: op.sqrt(op.subtract(1.0, op.square(x))))
ufunc_op("arcsin", formula=F.arcsin, vjp=_arcsin_vjp)
ufunc_op("arccos", formula=F.arccos, vjp=negated(_arcsin_vjp))
ufunc_op("arctan", formula=F.arctan, vjp=over_derivative_denominator(lambda x, out: op.add(op.square(x), 1.0)))


def _arctan2_vjp(grad, out, y, x):
    """d/dy atan2(y, x) = x / (x² + y²); d/dx = -y / (x² + y²)."""
    def scaled(numerator):
        return op.divide(op.multiply(grad, numerator), op.add(weak(op.square(x)), weak(op.square(y))))

    return grad_of(y, lambda: scaled(x)), grad_of(x, lambda: op.negative(scaled(y)))


ufunc_op("arctan2", formula=F.arctan2, vjp=_arctan2_vjp)


@primitive("erf", category="pointwise", meta=ufunc_meta(_C.erf), formula=F.erf,
           vjp=times_derivative(lambda x, out: op.multiply(op.exp(op.negative(op.square(x))),
                                                           2.0 / math.sqrt(math.pi))))
def erf(xp, x):
    """The error function, elementwise: pyjit._C.erf (a ufunc over the C library's erf,
    with NumPy's float loops) on NumPy arrays; on CuPy arrays cupyx.scipy.special.erf,
    its result cast to the dtype _C.erf gives, whose loops CuPy's need not match."""
    if xp is np:
        return _C.erf(x)
    from cupyx.scipy import special

    return special.erf(x).astype(_C.erf.resolve_dtypes((x.dtype, None))[-1], copy=False)


_LN2, _LN10, _LOG2E = math.log(2.0), math.log(10.0), 1.0 / math.log(2.0)
ufunc_op("exp2", formula=F.exp2, vjp=times_derivative(lambda x, out: op.multiply(out, _LN2)))
ufunc_op("log2", formula=F.log2, vjp=over_derivative_denominator(lambda x, out: op.multiply(x, _LN2)))
ufunc_op("log10", formula=F.log10, vjp=over_derivative_denominator(lambda x, out: op.multiply(x, _LN10)))
ufunc_op("cbrt", formula=F.cbrt, vjp=over_derivative_denominator(lambda x, out: op.multiply(op.square(out), 3.0)))
ufunc_op("arcsinh", formula=F.arcsinh,
         vjp=over_derivative_denominator(lambda x, out: op.sqrt(op.add(op.square(x), 1.0))))
ufunc_op("arccosh", formula=F.arccosh,
         vjp=over_derivative_denominator(lambda x, out: op.sqrt(op.subtract(op.square(x), 1.0))))
ufunc_op("arctanh", formula=F.arctanh,
         vjp=over_derivative_denominator(lambda x, out: op.subtract(1.0, op.square(x))))
ufunc_op("deg2rad", formula=lambda x: F.mul(in_float_loop(x), math.pi / 180.0),
         vjp=lambda grad, out, x: (grad_of(x, lambda: op.multiply(grad, math.pi / 180.0)),))
ufunc_op("rad2deg", formula=lambda x: F.mul(in_float_loop(x), 180.0 / math.pi),
         vjp=lambda grad, out, x: (grad_of(x, lambda: op.multiply(grad, 180.0 / math.pi)),))
ufunc_op("hypot", formula=F.hypot,
         vjp=lambda grad, out, a, b: (grad_of(a, lambda: op.multiply(grad, op.divide(a, out))),
                                      grad_of(b, lambda: op.multiply(grad, op.divide(b, out)))))


def in_float_loop(x):
    """A formula's array leaf in the float dtype NumPy's float-only ufuncs convert it to
    (int16 -> float32, int32 -> float64), so that the scalar ops after it compute in that
    dtype as the ufunc does (NOTE(formula-typing)): copysign(x, x) has only float loops
    and is x itself for floats. Python scalars stay weak."""
    return F.copysign(x, x) if isinstance(x, Arg) else x


def _logaddexp_formula(base_log: Callable, base_one: float, scale: float | None):
    """NumPy's npy_logaddexp(2): equal arguments give x + log(2) (infinities included),
    else the larger plus log1p(base ** -|x - y|), NaN from either."""
    def formula(a, b):
        a, b = in_float_loop(a), in_float_loop(b)
        tail = F.log1p(base_log(F.neg(F.abs(F.sub(a, b)))))
        tail = tail if scale is None else F.mul(tail, scale)
        return F.where(F.eq(a, b), F.add(a, base_one), F.add(F.maximum(a, b), tail))
    return formula


def _logaddexp_vjp(exp: Callable):
    """d/da log(e^a + e^b) = e^(a - out), in the op's base."""
    return lambda grad, out, a, b: (grad_of(a, lambda: op.multiply(grad, exp(op.subtract(a, out)))),
                                    grad_of(b, lambda: op.multiply(grad, exp(op.subtract(b, out)))))


ufunc_op("logaddexp", formula=_logaddexp_formula(F.exp, _LN2, None), vjp=_logaddexp_vjp(lambda x: op.exp(x)))
ufunc_op("logaddexp2", formula=_logaddexp_formula(F.exp2, 1.0, _LOG2E), vjp=_logaddexp_vjp(lambda x: op.exp2(x)))


# -- rounding ------------------------------------------------------------------------
ufunc_op("floor", formula=F.floor, vjp=zero_vjp)
ufunc_op("ceil", formula=F.ceil, vjp=zero_vjp)
ufunc_op("rint", formula=F.rint, vjp=zero_vjp)
ufunc_op("trunc", formula=F.trunc, vjp=zero_vjp)
# fmod(a, b) = a - trunc(a / b) * b.
ufunc_op("fmod", formula=F.fmod,
         vjp=lambda grad, out, a, b: (input_grad(a, grad),
                                      grad_of(b, lambda: op.negative(op.multiply(grad, op.trunc(op.divide(a, b)))))))


# -- signs ---------------------------------------------------------------------------
ufunc_op("copysign", formula=F.copysign,
         vjp=lambda grad, out, a, b: (grad_of(a, lambda: op.multiply(grad, op.multiply(op.sign(a), op.sign(out)))),
                                      grad_of(b, lambda: zero_grad(grad))))
ufunc_op("signbit", formula=F.signbit, vjp=None)
ufunc_op("heaviside", formula=F.heaviside,
         vjp=lambda grad, out, x, h: (grad_of(x, lambda: zero_grad(grad)),
                                      grad_of(h, lambda: op.where(op.equal(x, 0), grad, 0.0))))


# The next float after x towards y; spacing is the distance to the next float away from
# zero (NumPy's npy_spacing: NaN for infinities, the smallest positive float for either
# zero). Steps of one ulp: derivatives 1 and 0.
ufunc_op("nextafter", formula=F.nextafter,
         vjp=lambda grad, out, x, y: (input_grad(x, grad), grad_of(y, lambda: zero_grad(grad))))


def _spacing_formula(x):
    x = in_float_loop(x)
    away = F.copysign(float("inf"), F.add(x, 0.0))  # -0.0 + 0.0 is +0.0
    return F.where(F.isinf(x), float("nan"), F.sub(F.nextafter(x, away), x))


ufunc_op("spacing", formula=_spacing_formula, vjp=zero_vjp)


# -- integers (no derivatives) -------------------------------------------------------
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "gcd", "lcm"):
    ufunc_op(_name, formula=getattr(F, _name), vjp=None)


def _round_meta(x, decimals=0):
    """numpy.round: integers keep their dtype (a copy for decimals >= 0); decimals=0 is
    rint (bool gives float16); other decimals compute in the array's own dtype, which
    refuses bool."""
    decimals = operator.index(decimals)
    dtype = np.dtype(operand_dtype(x))
    if dtype.kind not in "iu":
        if decimals == 0:
            dtype = np.rint.resolve_dtypes((dtype, None))[-1]
        elif dtype.kind == "b":
            raise TypeError("Cannot cast ufunc 'multiply' output from dtype('float64') to dtype('bool')")
    return TensorMeta(shape_of(x), dtype, device_of(x))


def _round_formula(x, decimals=0):
    """NumPy's algorithm: rint(x * 10**d) / 10**d, or rint(x / 10**-d) * 10**-d for
    negative d, the scale a weak Python float so that float32 stays float32."""
    decimals = parameter(decimals)
    if decimals == 0:
        return F.rint(x)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return F.div(F.rint(F.mul(x, scale)), scale)
    return F.mul(F.rint(F.div(x, scale)), scale)


@primitive("round", category="pointwise", meta=_round_meta, formula=_round_formula, vjp=zero_vjp)
def round_(xp, x, decimals=0):
    """numpy.round: round half to even, at `decimals` decimal places."""
    return xp.round(x, decimals)


# -- selection -----------------------------------------------------------------------
def _clip_bounds(x, a_min, a_max):
    """NumPy drops a Python-int bound an integer array never crosses (clip(int8, -300, 5)
    is minimum(int8, 5)), before any type resolution."""
    dtype = x.dtype
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if type(a_min) is int and a_min <= info.min:
            a_min = None
        if type(a_max) is int and a_max >= info.max:
            a_max = None
    return a_min, a_max


def _clip_meta(x, a_min=None, a_max=None):
    """numpy.clip: positive(x), minimum(x, a_max), maximum(x, a_min) or NumPy's clip
    ufunc (private: numpy._core.umath.clip) by which bounds are given."""
    x = x if is_array(x) else TensorMeta((), np.dtype(operand_dtype(x)))  # clip makes an array of it
    a_min, a_max = _clip_bounds(x, a_min, a_max)
    if a_min is None and a_max is None:
        return ufunc_meta(np.positive)(x)
    if a_min is None:
        return ufunc_meta(np.minimum)(x, a_max)
    if a_max is None:
        return ufunc_meta(np.maximum)(x, a_min)
    return ufunc_meta(np._core.umath.clip)(x, a_min, a_max)


def _clip_formula(x, a_min=None, a_max=None):
    # NumPy's clip ufunc is min(max(x, a_min), a_max), NaN-propagating.
    return _bounded(_bounded(x, a_min, F.lt, F.maximum), a_max, F.gt, F.minimum)


def _bounded(x, bound, crosses, limit):
    """x limited by one bound, a leaf, a keyword's value or None."""
    if parameter(bound) is None:
        return x
    if type(parameter(bound)) is int:
        # A comparison, not maximum/minimum: NumPy drops a Python int beyond an integer
        # array's range (_clip_bounds) where maximum would raise OverflowError, and it
        # compares integers with any Python int exactly. Ints are never NaN, so nothing
        # is lost of maximum's NaN propagation.
        return F.where(crosses(x, bound), bound, x)
    return limit(x, bound)


def _clip_vjp(grad, out, *args, **kwargs):
    """PyTorch's clamp: x gets the gradient where a_min <= x <= a_max, a_min where it
    was selected (x < a_min < a_max), a_max where it was (x > a_max, or a_max < a_min).
    Bounds given by keyword get none (NOTE(op-entry): gradients are positional)."""
    x, a_min, a_max = _clip_arguments(*args, **kwargs)

    def where_selected(mask):
        return op.where(mask, grad, 0.0)

    def x_grad():
        inside = True
        if a_min is not None:
            inside = op.greater_equal(x, a_min)
        if a_max is not None:
            inside = op.logical_and(inside, op.less_equal(x, a_max))
        return where_selected(inside)

    def min_grad():
        below = op.less(x, a_min)
        return where_selected(below if a_max is None else op.logical_and(below, op.less(a_min, a_max)))

    def max_grad():
        above = op.greater(x, a_max)
        return where_selected(above if a_min is None else op.logical_or(above, op.less(a_max, a_min)))

    return (grad_of(x, x_grad), grad_of(a_min, min_grad), grad_of(a_max, max_grad))[:len(args)]


def _clip_arguments(x, a_min=None, a_max=None):
    return x, a_min, a_max


@primitive("clip", category="pointwise", meta=_clip_meta, formula=_clip_formula, vjp=_clip_vjp)
def clip(xp, x, a_min=None, a_max=None):
    """numpy.clip: x limited to [a_min, a_max]; either bound may be None."""
    return xp.clip(x, a_min, a_max)


def _promotion_operand(value):
    """What np.result_type needs to promote like NEP 50: a dtype for arrays and NumPy
    scalars, a Python scalar itself (weak), a stand-in value for a weak scalar input."""
    if isinstance(value, type) and value in (int, float, complex):
        return value()
    return value if isinstance(value, (bool, int, float, complex)) else operand_dtype(value)


def _where_refuses_large_python_ints() -> bool:
    """NumPy 2.5 raises OverflowError for a Python int the result dtype of np.where cannot
    hold; NumPy 2.4 wraps it. The meta rule does what the NumPy it runs with does."""
    try:
        np.where(True, np.zeros(1, np.int8), 300)
    except OverflowError:
        return True
    return False


WHERE_REFUSES_LARGE_PYTHON_INTS = _where_refuses_large_python_ints()


def _where_meta(condition, *values):
    """numpy.where(condition, x, y): x and y promoted like NEP 50 (np.where(c, float32
    array, 0) is float32), Python ints bounds-checked where NumPy checks them."""
    if not values:
        raise NotImplementedError("where(condition) with one argument is nonzero(condition): the shape of its "
                                  "result depends on the values, which a graph cannot know")
    if len(values) != 2:
        raise ValueError("either both or neither of x and y should be given")
    x, y = values
    dtype = np.result_type(_promotion_operand(x), _promotion_operand(y))
    if WHERE_REFUSES_LARGE_PYTHON_INTS:
        check_python_integers((x, y), dtype)
    shape = broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y))
    return TensorMeta(shape, dtype, device_of(condition, x, y))


@primitive("where", category="pointwise", meta=_where_meta, formula=F.where,
           vjp=lambda grad, out, condition, x, y: (None, grad_of(x, lambda: op.where(condition, grad, 0.0)),
                                                   grad_of(y, lambda: op.where(condition, 0.0, grad))))
def where(xp, condition, x, y, /):
    """numpy.where with three arguments (the one-argument form is nonzero, whose shape
    depends on the values)."""
    return xp.where(condition, x, y)


# -- conversion ----------------------------------------------------------------------
def _astype_meta(x, dtype):
    if not is_array(x):
        raise TypeError(f"astype needs an array, not {type(x).__name__}")
    return TensorMeta(x.shape, np.dtype(dtype), x.device)


@primitive("astype", category="pointwise", meta=_astype_meta,
           formula=lambda x, dtype: F.cast(x, dtype=np.dtype(parameter(dtype))),
           vjp=lambda grad, out, x, dtype: (grad_of(x, lambda: grad) if is_differentiable(out) else None,))
def astype(xp, x, dtype):
    """ndarray.astype(dtype): a converted copy (unsafe casting, as NumPy's default).
    A floating x gets the gradient back in its own dtype; through an integer or boolean
    result no gradient flows."""
    return x.astype(dtype)

