"""Sample rows of the view ops and of joining and splitting (pyjit/ops/views.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError

# NOTE: the 0-d concatenate row passes literal arrays because A(()) currently makes an
# array of shape (1,) (np.ascontiguousarray in with_layout never returns 0-d arrays).


def getitem_reference(x, index):
    return x[index]


def getitem_samples():
    def row(*args, **kwargs):
        return S(*args, reference=getitem_reference, **kwargs)

    return [row(A((4, 5)), 1), row(A((4, 5)), (slice(1, 3), slice(None, None, 2))),
            row(A((4, 5)), (slice(None, None, -1), -2)), row(A((4, 5)), (None, Ellipsis, slice(3, 0, -2))),
            row(A((4, 5)), (Ellipsis, None)), row(A((2, 3, 4), "float32"), (0, Ellipsis, 1)),
            row(A((4,)), (2,)), row(A(()), ()), row(A(()), None), row(A((4, 5)), slice(10, 20)),
            row(A((5,)), slice(-100, 100, 3)), row(A((5,)), slice(4, -100, -2)), row(A((0, 3)), (slice(None), 1)),
            row(A((4, 5), "int32", -5, 5), (slice(None), np.int64(-1))), row(A((3, 2), "bool"), slice(1, None)),
            row(A((4, 5), layout="F"), (slice(None, None, 3), slice(1, 4))),
            row(A((4, 6), layout="strided"), (Ellipsis, slice(5, None, -2))),
            row(A((4, 5)), 4, raises=IndexError), row(A((4, 5)), (0, -6), raises=IndexError),
            row(A((4, 5)), (0, 0, 0), raises=IndexError), row(A((4, 5)), (Ellipsis, 0, Ellipsis), raises=IndexError),
            row(A((4, 5)), slice(None, None, 0), raises=ValueError), row(A((4, 5)), 1.0, raises=IndexError),
            row(A((4, 5)), slice(1.0, 2), raises=TypeError)]


def split_samples():
    return [S(A((6,)), 3), S(A((4, 6), "float32"), 2, axis=1), S(A((6,)), [2, 4]),
            S(A((6, 3)), [1, 10], axis=0), S(A((6,)), [-2]), S(A((6,)), [4, 2]), S(A((6, 2), "int32", -5, 5), 2),
            S(A((2, 4), layout="F"), [1], axis=-1), S(A((0, 3)), 2), S(A((4,), "bool"), 4),
            S(A((6,)), 4, raises=ValueError), S(A((6,)), 0, raises=ZeroDivisionError),
            S(A((6,)), 2, axis=1, raises=IndexError), S(A((6,)), [2], axis=-2, raises=IndexError)]


SAMPLES = {
    "reshape": [S(A((2, 3)), (3, 2)), S(A((2, 3)), (-1,)), S(A((2, 3, 4), "float32"), (4, -1)),
                S(A((0, 3)), (3, 0)), S(A((2, 3), layout="F"), (6,)), S(A((2, 3)), (4, -1), raises=ValueError),
                S(A((2, 3)), (5,), raises=ValueError)],
    "broadcast_to": [S(A((3,)), (2, 3)), S(A((2, 1), "float32"), (2, 4)), S(A(()), (0, 2)),
                     S(A((2, 3)), (3, 3), raises=ValueError)],
    "transpose": [S(A((2, 3))), S(A((2, 3, 4), "float32"), (1, 0, 2)), S(A((2, 3, 4)), axes=[-1, 0, 1]),
                  S(A((0, 3))), S(A((2, 3), "int32", -5, 5)), S(A((2, 3), "bool")), S(A(())),
                  S(A((2, 3, 4), layout="F"), (2, 0, 1)), S(A((3, 4), layout="strided")),
                  S(A((2, 3)), (0,), raises=ValueError), S(A((2, 3)), (0, 0), raises=ValueError),
                  S(A((2, 3)), (0, 2), raises=AxisError)],
    "swapaxes": [S(A((2, 3, 4)), 0, 2), S(A((2, 3), "float32"), -1, 0), S(A((2, 3), "int64", -5, 5), 1, 1),
                 S(A((0, 2)), 0, 1), S(A((2, 3), layout="F"), 0, 1), S(A((2, 3)), 0, 2, raises=AxisError)],
    "moveaxis": [S(A((2, 3, 4)), 0, -1), S(A((2, 3, 4), "float32"), (0, 1), (2, 0)),
                 S(A((2, 3), "int32", -5, 5), 1, 0), S(A((0, 2, 3)), -1, 0), S(A((2, 3, 4), layout="strided"), 2, 1),
                 S(A((2, 3)), 0, 5, raises=AxisError), S(A((2, 3)), (0, 0), (1, 0), raises=ValueError),
                 S(A((2, 3)), (0, 1), (1,), raises=ValueError)],
    "expand_dims": [S(A((2, 3)), 0), S(A((2, 3), "float32"), (0, 3)), S(A((2, 3)), -1), S(A(()), 0),
                    S(A((0, 3)), 1), S(A((2,), "int64", -5, 5), (0, -1)), S(A((2, 3), "bool"), 2),
                    S(A((2, 3), layout="F"), 1), S(A((2, 3)), 3, raises=AxisError),
                    S(A((2, 3)), (0, 0), raises=ValueError)],
    "squeeze": [S(A((1, 3, 1))), S(A((1, 3, 1)), axis=0), S(A((1, 3, 1), "float32"), axis=(0, 2)),
                S(A((1, 3, 1)), axis=-1), S(A((1,))), S(A((0, 1)), 1), S(A((1, 2), "int32", -5, 5)),
                S(A((3, 1), "bool"), axis=1), S(A((2, 1, 3), layout="F")),
                S(A((1, 3, 1)), axis=1, raises=ValueError), S(A((1, 3)), axis=2, raises=AxisError)],
    "getitem": getitem_samples(),
    "concatenate": [S([A((2, 3)), A((1, 3))]), S([A((2, 3)), A((2, 2), "float32"), A((2, 1))], axis=1),
                    S((A((2, 3), "float32"), A((2, 3), "float32")), axis=-1),
                    S([A((2, 3), "int32", -5, 5), A((1, 3), "bool")]), S([A((2, 3)), A((0, 3))]),
                    S([A((2, 3)), A((3,), "float32")], axis=None), S([A((3,))]),
                    S([A((2, 3), layout="F"), A((2, 2), layout="strided")], axis=1),
                    S([A((2, 3)), A((2, 2))], raises=ValueError), S([A((2, 3)), A((3,))], raises=ValueError),
                    S([A((2, 3)), A((2, 3))], axis=2, raises=AxisError),
                    S([np.zeros(()), np.zeros(())], raises=ValueError),
                    S([], raises=ValueError)],
    "stack": [S([A((2, 3)), A((2, 3))]), S([A((2, 3)), A((2, 3), "float32")], axis=1),
              S((A((2, 3), "float32"), A((2, 3), "float32"), A((2, 3), "float32")), axis=-1),
              S([A(()), A(())]), S([A((0, 2)), A((0, 2))], axis=2), S([A((3,), "int32", -5, 5), A((3,), "bool")]),
              S([A((2, 3), layout="F"), A((2, 3))], axis=0),
              S([A((2, 3)), A((3, 2))], raises=ValueError), S([A((2,)), A((2, 1))], axis=2, raises=ValueError),
              S([A((2, 3)), A((2, 3))], axis=3, raises=AxisError), S([], raises=ValueError)],
    "split": split_samples(),
}
