"""Sample rows of the manipulation composites (pyjit/ops/manipulation.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError
INTS = dict(low=-5, high=5)

SAMPLES = {
    "copy": [S(A((2, 3))), S(A((3,), "int32", **INTS)), S(A((0, 2))), S(np.array(1.5)), S(A((2, 2), layout="F"))],
    "ascontiguousarray": [S(A((2, 3), layout="F")), S(A((3,), "int32", **INTS)), S(np.array(2.5)),
                          S(A((2, 2), "float32"), dtype=np.float64), S(A((0, 3))),
                          S(A((2,)), dtype="foo", raises=TypeError)],
    "ravel": [S(A((2, 3))), S(A((2, 3), layout="F")), S(A((3,), "bool")), S(A((0, 2))), S(np.array(1.0)),
              S(A((2, 3, 4)), "F"), S(A((2, 3), "int32", layout="F"), order="F"), S(A((3, 2), layout="strided"), "f"),
              S(A((0, 2)), "F"), S(np.array(1.0), "F"), S(A((2, 3)), None), S(A((2, 3)), "X", raises=ValueError)],
    "flip": [S(A((2, 3))), S(A((2, 3)), 0), S(A((2, 3, 2), "int32", **INTS), (0, 2)), S(A((4,), layout="strided")),
             S(A((0, 2)), -1), S(np.array(1.0)), S(A((2, 3)), 2, raises=AxisError)],
    "fliplr": [S(A((2, 3))), S(A((2, 3, 2), "float32")), S(A((0, 2))), S(A((3,)), raises=ValueError)],
    "flipud": [S(A((2, 3))), S(A((3,), "int8", **INTS)), S(A((0,))), S(np.array(1.0), raises=ValueError)],
    "roll": [S(A((5,)), 2), S(A((2, 3)), 1), S(A((2, 3)), -1, 1), S(A((3, 4), "int32", **INTS), (1, 2), (0, 1)),
             S(A((2, 3)), 7, axis=0), S(A((0, 3)), 1, 0), S(A((2, 3), layout="F"), 3, 1), S(A((4,)), 0),
             S(A((2, 3)), 1, 2, raises=AxisError)],
    "rot90": [S(A((2, 3))), S(A((2, 3)), 2), S(A((2, 3)), 3), S(A((2, 3)), 4), S(A((2, 3)), -1),
              S(A((2, 3, 4), "float32"), 1, (2, 0)), S(A((0, 2))), S(A((2, 3)), 1, (0, 0), raises=ValueError),
              S(A((2, 3)), 1, (0, 1, 2), raises=ValueError), S(A((2, 3)), 1, (0, 2), raises=ValueError)],
    "tile": [S(A((3,)), 2), S(A((2, 3)), (2, 1)), S(A((2,)), (3, 2)), S(A((2, 3), "int32", **INTS), 1),
             S(A((2, 1, 2)), (2, 1)), S(A((0, 2)), 2), S(np.array(1.5), 3), S(A((2, 2), layout="F"), (1, 3)),
             S(A((3,)), 0), S(A((3,)), -1, raises=ValueError)],
    "pad": [S(A((3,)), 2), S(A((2, 3)), ((1, 0), (2, 1))),
            S(A((2, 3), "int32", **INTS), 1, "constant", constant_values=7), S(A((2, 3)), (1, 2), "edge"),
            S(A((4, 3)), 2, "reflect"), S(A((4, 3), "float32"), ((3, 1), (0, 2)), "symmetric"),
            S(A((4, 3)), ((2, 4), (1, 3)), "wrap"), S(A((2, 0)), ((1, 1), (0, 0))), S(A((2, 3), layout="F"), 1, "edge"),
            S(A((3,)), -1, raises=ValueError), S(A((3,)), 1.5, raises=TypeError)],
    "atleast_1d": [S(np.array(1.0)), S(A((3,))), S(A((2, 3), "int32", **INTS)), S(A((2,)), np.array(2.0))],
    "atleast_2d": [S(np.array(1.0)), S(A((3,))), S(A((2, 3, 1))), S(A((0,)), A((2, 2)))],
    "atleast_3d": [S(np.array(1.0)), S(A((3,))), S(A((2, 3))), S(A((2, 3, 2), "float32"), A((3,)))],
    "hstack": [S([A((3,)), A((2,))]), S((A((2, 3)), A((2, 1), "float32"))), S([np.array(1.0), A((2,))]),
               S([A((0, 2)), A((0, 1))]), S([A((2, 3)), A((3, 3))], raises=ValueError)],
    "vstack": [S([A((3,)), A((3,))]), S((A((2, 3)), A((1, 3), "int32", **INTS))), S([A((0, 2)), A((1, 2))]),
               S([A((2, 3)), A((2, 2))], raises=ValueError)],
    "column_stack": [S([A((3,)), A((3,))]), S((A((3, 2)), A((3,), "float32"))), S([A((0,)), A((0, 2))]),
                     S([A((3,)), A((2,))], raises=ValueError)],
    "meshgrid": [S(A((3,)), A((2,))), S(A((3,)), A((2,)), indexing="ij"), S(A((2,)), A((3,)), A((4,), "int32", **INTS)),
                 S(A((3,)), A((2,)), sparse=True), S(A((3,)), A((0,)), copy=False), S(A((3,))),
                 S(A((3,)), A((2,)), indexing="yx", raises=ValueError)],
}
