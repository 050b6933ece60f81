"""Sample rows of the view ops (pyjit/ops/views.py)."""

from . import A, S

SAMPLES = {
    "reshape": [S(A((2, 3)), (3, 2)), S(A((2, 3)), (-1,)), S(A((2, 3, 4), "float32"), (4, -1)),
                S(A((0, 3)), (3, 0)), S(A((2, 3), layout="F"), (6,)), S(A((2, 3)), (4, -1), raises=ValueError),
                S(A((2, 3)), (5,), raises=ValueError)],
    "broadcast_to": [S(A((3,)), (2, 3)), S(A((2, 1), "float32"), (2, 4)), S(A(()), (0, 2)),
                     S(A((2, 3)), (3, 3), raises=ValueError)],
}
