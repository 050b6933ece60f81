"""Sample rows of the pointwise ops (pyjit/ops/pointwise.py)."""

import math

import numpy as np

from . import A, S, numpy_raises


def fixed(*values) -> np.ndarray:
    """A read-only float64 array of exactly these values, for what random samples never
    hit: ties (maximum's split gradient), NaN and infinities. Read-only because the same
    array is handed to every test."""
    array = np.array(values, dtype=np.float64)
    array.flags.writeable = False
    return array


SPECIAL = fixed(np.nan, np.inf, -np.inf, 0.0, -1.5, 2.0)


def erf_row(spec, dtype):
    """A row of erf against math.erf, rounded to `dtype` (what _C.erf's loops give for
    the spec's dtype); the C library's erff and a rounded double may differ in the last
    place, a float16 loop (computed in float32) by double rounding."""
    rtol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}[dtype]
    return S(spec, reference=np.vectorize(math.erf, otypes=[np.dtype(dtype)]), rtol=rtol)


def astype_reference(x, dtype):
    return x.astype(dtype)


def binary_rows(low=-2.0, high=2.0, b_low=-2.0, b_high=2.0, int_low=-5, int_high=5, b_int_low=-5, b_int_high=5,
                integer_loop=True):
    """Broadcasting, a weak Python scalar on either side, mixed int dtypes, size 0, an F
    layout, a shape error and (for ufuncs with integer loops, where a Python int must
    fit the array's dtype) an out-of-range Python int."""
    return [S(A((2, 3), low=low, high=high), A((3,), low=b_low, high=b_high)),
            S(A((3,), "float32", low, high), 1.5), S(1.5, A((2, 2), "float32", b_low, b_high)),
            S(A((4,), "int32", int_low, int_high), A((4,), "int64", b_int_low, b_int_high)),
            S(A((0, 3), low=low, high=high), A((1, 3), low=b_low, high=b_high)),
            S(A((2, 3), low=low, high=high, layout="F"), A((2, 1), "float32", b_low, b_high)),
            S(A((2, 3)), A((4,)), raises=ValueError)] + (
        [S(A((3,), "int8", 1, 3), 300, raises=OverflowError)] if integer_loop else [S(A((3,), "int8", 1, 3), 300)])


def unary_rows(low=-2.0, high=2.0, int_low=-5, int_high=5, bool_ok=True):
    """float64, float32, int32, bool (where the domain allows), size 0, F and strided layouts."""
    rows = [S(A((2, 3), low=low, high=high)), S(A((5,), "float32", low, high)),
            S(A((4,), "int32", int_low, int_high)), S(A((0,), low=low, high=high)),
            S(A((2, 3), low=low, high=high, layout="F")), S(A((2, 3), "float32", low, high, "strided"))]
    return rows + [S(A((3,), "bool"))] if bool_ok else rows


def comparison_rows():
    """Like binary_rows, plus ties, NaN and infinities, bools, and Python ints beyond
    the array's dtype (NumPy 2 compares those exactly)."""
    return [S(A((2, 3)), A((3,))), S(A((3,), "float32"), 0.5), S(-0.5, A((2, 2), "float32")),
            S(A((4,), "int32", 0, 3), A((4,), "int64", 0, 3)), S(SPECIAL, fixed(np.nan, np.inf, 1.0, 0.0, -1.5, 3.0)),
            S(A((4,), "int8", -3, 3), 300), S(A((4,), "uint8", 0, 3), -1), S(A((3,), "bool"), True),
            S(A((0, 3)), A((1, 3))), S(A((2, 3), layout="strided"), 0),
            S(A((2, 3)), A((4,)), raises=ValueError)]


def logical_rows():
    return [S(A((2, 3), "bool"), A((3,), "bool")), S(A((3,)), 0.0), S(A((4,), "int32", 0, 3), True),
            S(A((4,), "int8", 0, 2), 300), S(A((0,), "bool"), A((0,), "bool")),
            S(A((2, 2), "bool", layout="F"), A((2, 2), "bool")), S(A((2, 3), "bool"), A((4,), "bool"), raises=ValueError)]


def classification_rows():
    return [S(SPECIAL), S(A((2, 3), "float32")), S(A((4,), "int32")), S(A((3,), "bool")), S(A((0,))),
            S(A((2, 2), layout="F"))]


TIES = fixed(1.0, 2.0, -1.0, 0.5)  # ties with OTHER in elements 0 and 2
OTHER = fixed(1.0, 0.5, -1.0, 3.0)


def selection_rows():
    return [S(A((2, 3)), A((3,))), S(A((3,), "float32"), 0.0), S(1.0, A((2, 2), "float32")), S(TIES, OTHER),
            S(A((4,), "int32"), A((4,), "int64")), S(A((3,), "bool"), A((3,), "bool")),
            S(A((0, 3)), A((1, 3))), S(A((2, 3), layout="F"), A((2, 1), "float32")),
            S(A((2, 3)), A((4,)), raises=ValueError), S(A((3,), "int8"), 300, raises=OverflowError)]


SAMPLES = {
    "add": binary_rows() + [S(A((3,), "bool"), A((3,), "bool"))],
    "subtract": binary_rows() + [S(A((3,), "bool"), A((3,), "bool"), raises=TypeError)],
    "multiply": binary_rows() + [S(A((3,), "bool"), A((3,), "bool"))],
    "divide": binary_rows(b_low=0.5, b_high=2.0, b_int_low=1, b_int_high=4, integer_loop=False)
    + [S(A((3,), "float32"), -2), S(A((2,), "int8", -5, 5), A((2,), "uint8", 1, 4))],
    "floor_divide": binary_rows(b_low=0.5, b_high=2.0, b_int_low=1, b_int_high=4)
    + [S(A((3,)), A((3,), low=-2.0, high=-0.5)), S(7, A((3,), "int64", -4, -1))],
    "mod": binary_rows(b_low=0.5, b_high=2.0, b_int_low=1, b_int_high=4)
    + [S(A((3,)), A((3,), low=-2.0, high=-0.5)), S(7, A((3,), "int64", -4, -1))],
    "power": [S(A((2, 3), low=0.5, high=2.0), A((3,), low=-1.0, high=2.0)), S(A((3,), "float32", 0.5, 2.0), 2),
              S(A((3,), "float32", 0.5, 2.0), 0.5), S(A((3,)), 3), S(2.0, A((2, 2), "float32")),
              S(A((4,), "int32", -3, 4), A((4,), "int64", 0, 3)), S(A((2, 2), "int64", -3, 3), 2),
              S(A((3,), "bool"), A((3,), "bool")), S(A((0, 2), low=0.5), A((1, 2))), S(A((0,), "int64"), -1),
              S(A((2, 2), low=0.5, high=2.0, layout="F"), A((2, 1), "float32")),
              S(A((2, 3), low=0.5), A((4,)), raises=ValueError), S(A((3,), "int8", 1, 3), 300, raises=OverflowError),
              S(A((3,), "int32", 1, 3), -1, raises=ValueError), S(A((3,), "bool"), -2, raises=ValueError)],
    "negative": unary_rows(bool_ok=False) + [S(A((4,), "int8", -5, 5)), S(A((3,), "bool"), raises=TypeError)],
    "square": unary_rows(),
    "reciprocal": [S(A((2, 3), low=0.5, high=2.0)), S(A((3,), "float32", -2.0, -0.5)), S(A((4,), "int32", 1, 5)),
                   S(A((0,))), S(A((2, 2), low=0.5, high=2.0, layout="F"))],
    "abs": unary_rows() + [S(A((4,), "int8", -5, 5))],
    "sign": unary_rows(bool_ok=False) + [S(A((3,), "bool"), raises=TypeError)],
    "maximum": selection_rows(),
    "minimum": selection_rows(),
    **{name: comparison_rows() for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
    **{name: logical_rows() for name in ("logical_and", "logical_or", "logical_xor")},
    "logical_not": [S(A((2, 3), "bool")), S(A((3,))), S(A((4,), "int8", 0, 2)), S(A((0,), "bool")),
                    S(A((2, 2), "bool", layout="F"))],
    **{name: classification_rows() for name in ("isnan", "isinf", "isfinite")},
    "exp": unary_rows(),
    "expm1": unary_rows(),
    "log": unary_rows(0.1, 3.0, 1, 5, bool_ok=False),
    "log1p": unary_rows(-0.5, 3.0, 0, 5),
    "sqrt": unary_rows(0.1, 3.0, 0, 5),
    "sin": unary_rows(),
    "cos": unary_rows(),
    "tan": unary_rows(-1.2, 1.2, -1, 2),
    "sinh": unary_rows(),
    "cosh": unary_rows(),
    "tanh": unary_rows(),
    "arcsin": unary_rows(-0.9, 0.9, -1, 2),
    "arccos": unary_rows(-0.9, 0.9, -1, 2),
    "arctan": unary_rows(),
    "arctan2": binary_rows(b_low=0.5, b_high=2.0, integer_loop=False) + [S(A((3,)), A((3,), low=-2.0, high=-0.5))],
    "erf": [erf_row(A((2, 3)), "float64"), erf_row(A((5,), "float32"), "float32"),
            erf_row(A((4,), "int32", -3, 3), "float64"), erf_row(A((3,), "bool"), "float16"),
            erf_row(A((0,)), "float64"), erf_row(A((2, 3), layout="F"), "float64"),
            erf_row(A((2, 3), "float32", layout="strided"), "float32")],
    "floor": unary_rows(),
    "ceil": unary_rows(),
    "round": [S(A((2, 3), low=-5.0, high=5.0)), S(A((3,), "float32"), decimals=1), S(A((3,), "float32", -500, 500), -2),
              S(A((4,), "int32", -50, 50), decimals=-1), S(A((4,), "int64"), 2),
              S(A((3,), "bool")), S(A((0,))), S(A((2, 2), layout="F"), 1),
              S(A((3,)), 1.5, raises=TypeError), S(A((3,), "bool"), decimals=1, raises=TypeError)],
    "clip": [S(A((2, 3)), -1.0, 1.0), S(A((2, 3)), A((3,), low=-2.0, high=0.0), A((2, 1), low=0.0, high=2.0)),
             S(A((3,), "float32"), None, 0.5), S(A((3,), "float32"), -0.5, None), S(A((3,)), None, None),
             S(A((3,)), A((3,), low=0.5, high=1.0), A((3,), low=-1.0, high=0.0)),  # a_min > a_max: a_max wins
             S(A((4,), "int8", -5, 5), -300, 3), S(A((4,), "int32", -5, 5), 0.5, 1.5), S(A((3,), "bool"), 0, 1),
             S(A((3,)), a_min=-1.0, a_max=1.0), S(A((0, 2)), 0.0, 1.0),
             S(A((2, 2), layout="F"), A((2, 1), "float32", -2.0, 0.0), 1.0),
             S(A((3,), "bool"), None, None, raises=TypeError), S(A((3,), "int8"), 130, 5, raises=OverflowError),
             S(A((2, 3)), A((4,)), 1.0, raises=ValueError)],
    "where": [S(A((2, 3), "bool"), A((2, 3)), A((3,))), S(A((3,), "bool"), A((3,), "float32"), 0),
              S(A((3,), "bool"), 1.0, A((3,), "float32")), S(A((4,), "int32", 0, 2), A((4,), "int8"), A((4,), "int64")),
              S(A((3,)), A((3,)), A((3,))), S(True, A((3,)), A((2, 3))), S(A((3,), "bool"), 1, 2.0),
              S(A((3,), "bool"), A((3,), "int8"), 300, raises=numpy_raises(np.where, True, np.int8(0), 300)),
              S(A((0, 2), "bool"), A((0, 2)), 1.0),
              S(A((2, 2), "bool", layout="F"), A((2, 2), layout="F"), A((2, 1), "float32")),
              S(A((2, 3), "bool"), A((4,)), 1.0, raises=ValueError)],
    # Casts of a float array to float32 or to an integer are sampled at size 0 only, which
    # the derivative test skips: it widens float arguments to float64 but not the dtype
    # argument (finite differences of a float32 result are too coarse for its tolerance),
    # and it hands an integer result a float cotangent.
    "astype": [S(A((2, 3), "float32"), "float64", reference=astype_reference),
               S(A((3,), "float32"), dtype=np.float64, reference=astype_reference),
               S(A((4,), "int32"), "bool", reference=astype_reference), S(A((0, 3)), "int32", reference=astype_reference),
               S(A((3,), "int8"), dtype="float64", reference=astype_reference),
               S(A((0, 2)), "float32", reference=astype_reference),
               S(A((2, 2), "float32", layout="F"), "float64", reference=astype_reference),
               S(A((3,)), "notatype", raises=TypeError, reference=astype_reference)],
}


def bitwise_rows(bool_ok=True):
    """Integer and bool dtypes, mixed widths, a Python int either side, size 0, a layout,
    the TypeError of a float array and the OverflowError of a Python int too large."""
    bools = [S(A((3,), "bool"), A((3,), "bool"))] if bool_ok else []
    return bools + [
        S(A((2, 3), "int32", -50, 50), A((3,), "int32", -50, 50)), S(A((4,), "uint8", 0, 200), 7),
        S(12, A((2, 2), "int64", -9, 9)), S(A((4,), "int8", -9, 9), A((4,), "int64", -9, 9)),
        S(A((0, 3), "int16"), A((1, 3), "int16")), S(A((2, 3), "uint32", 0, 99, layout="F"), A((2, 1), "uint16", 0, 99)),
        S(A((3,)), A((3,), "int32"), raises=TypeError), S(A((3,), "int8"), 300, raises=OverflowError),
        S(A((2, 3), "int32"), A((4,), "int32"), raises=ValueError)]


def shift_rows():
    """Shifts by 0 to past the width, negative values, and what NumPy refuses."""
    return [S(A((2, 3), "int32", -50, 50), A((3,), "int32", 0, 40)), S(A((4,), "uint8", 0, 200), 3),
            S(A((4,), "int8", -9, 9), A((4,), "int8", 0, 10)), S(5, A((2, 2), "int64", 0, 70)),
            S(A((3,), "uint64", 0, 99), A((3,), "uint64", 60, 70)), S(A((0,), "int16"), 1),
            S(A((2, 2), "int64", layout="F"), A((2, 1), "int64", 0, 3)), S(A((3,), "bool"), A((3,), "bool")),
            S(A((3,)), 1, raises=TypeError), S(A((3,), "int8"), 300, raises=OverflowError)]


SAMPLES.update({
    "exp2": unary_rows(),
    "log2": unary_rows(0.1, 3.0, 1, 5, bool_ok=False),
    "log10": unary_rows(0.1, 3.0, 1, 5, bool_ok=False),
    "cbrt": unary_rows(0.2, 3.0, 1, 5) + [S(A((3,), low=-3.0, high=-0.2))],
    "arcsinh": unary_rows(),
    "arccosh": unary_rows(1.1, 3.0, 2, 5, bool_ok=False),
    "arctanh": unary_rows(-0.9, 0.9, 0, 1, bool_ok=False),
    "deg2rad": unary_rows(-200.0, 200.0),
    "rad2deg": unary_rows(),
    "hypot": binary_rows(integer_loop=False),
    # NaN, infinities and Python ints beyond the dtype: tests/codegen/test_compiled_ops.py's special values.
    "logaddexp": binary_rows(integer_loop=False)[:-1] + [S(TIES, OTHER)],
    "logaddexp2": binary_rows(integer_loop=False)[:-1] + [S(TIES, OTHER)],
    "rint": unary_rows(-5.0, 5.0) + [S(fixed(0.4, 1.6, 2.2, -0.6, -2.4, 3.3))],
    "trunc": unary_rows(-5.0, 5.0) + [S(fixed(0.5, -1.5, 2.2, -0.1, 7.9, -7.9))],
    "fmod": binary_rows(b_low=0.5, b_high=2.0, b_int_low=1, b_int_high=4)
    + [S(A((3,)), A((3,), low=-2.0, high=-0.5)), S(7, A((3,), "int64", -4, -1)), S(A((3,), "uint8", 0, 9), 4)],
    "fmax": selection_rows(),
    "fmin": selection_rows(),
    "copysign": binary_rows(integer_loop=False),
    "signbit": classification_rows() + [S(fixed(-0.0, 0.0, -np.nan))],
    "heaviside": [S(A((2, 3), "float32"), A((3,), "float32")), S(fixed(-1.0, 0.5, 2.0, 3.0, -0.5, 1.0), 0.5),
                  S(A((6,), "int32", -1, 2), A((6,))),
                  S(A((4,), "int32", -2, 2), A((4,), "float32")), S(A((0, 2)), 1.0),
                  S(A((2, 2), layout="F"), A((2, 1))), S(A((2, 3)), A((4,)), raises=ValueError)],
    "bitwise_and": bitwise_rows(),
    "bitwise_or": bitwise_rows(),
    "bitwise_xor": bitwise_rows(),
    "invert": [S(A((2, 3), "int32", -50, 50)), S(A((4,), "uint8", 0, 200)), S(A((3,), "bool")),
               S(A((0,), "int64")), S(A((2, 2), "int16", layout="F")), S(A((3,)), raises=TypeError)],
    "gcd": bitwise_rows(bool_ok=False) + [S(A((4,), "int8", -128, 127), np.int8(-128)), S(A((3,), "uint8", 0, 255), 0)],
    "lcm": bitwise_rows(bool_ok=False) + [S(A((4,), "int16", -99, 99), A((4,), "int16", 0, 3)), S(A((3,), "uint8", 0, 30), 7)],
    "nextafter": [S(A((2, 3)), A((3,))), S(A((3,), "float32"), 1.5), S(0.0, A((2, 2))), S(A((4,), "int32"), 0.5),
                  S(A((0, 3)), A((1, 3))), S(A((2, 2), layout="F"), A((2, 1))), S(A((2, 3)), A((4,)), raises=ValueError)],
    "spacing": unary_rows() + [S(fixed(0.0, -0.0, 1e300, -2.5, 3.0, 1e-310))],
    "float_power": [S(A((2, 3), low=0.5, high=2.0), A((3,), low=-1.0, high=2.0)), S(A((3,), "float32", 0.5, 2.0), 2),
                    S(A((4,), "int32", 1, 4), A((4,), "int64", -2, 3)), S(2, A((2, 2), "float32")),
                    S(A((3,), "bool"), A((3,), "bool")), S(A((0, 2), low=0.5), A((1, 2))),
                    S(A((2, 2), low=0.5, high=2.0, layout="F"), A((2, 1), "float32")),
                    S(A((2, 3), low=0.5), A((4,)), raises=ValueError)],
    "fabs": unary_rows(),
    "positive": unary_rows(bool_ok=False) + [S(A((4,), "uint8", 0, 9)), S(A((3,), "bool"), raises=TypeError)],
    "left_shift": shift_rows(),
    "right_shift": shift_rows(),
})
