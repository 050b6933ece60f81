"""Sample rows of the pointwise ops (pyjit/ops/pointwise.py)."""

from . import A, S

SAMPLES = {
    "add": [S(A((2, 3)), A((3,))), S(A((2, 3), "float32"), 2.5), S(A((4,), "int32"), A((4,), "int64")),
            S(A((0, 3)), A((1, 3))), S(A((2, 3), layout="F"), A((2, 1), "float32")), S(A((), "float32"), 1),
            S(A((2, 3)), A((4,)), raises=ValueError), S(A((3,), "int8"), 300, raises=OverflowError)],
    "exp": [S(A((2, 3))), S(A((5,), "float32")), S(A((0,))), S(A((3,), "int32", 0, 5))],
    "multiply": [S(A((2, 3)), A((2, 1))), S(A((3,), "float32"), 2), S(A((0, 2)), 3.0),
                 S(A((3,), "bool"), A((3,), "bool"))],
}
