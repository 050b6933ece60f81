"""Sample rows of the indexing ops (pyjit/ops/indexing.py). Index arrays written as
A(...) specs become graph inputs whose values a meta rule cannot see, so the rows that
expect an IndexError for an index out of range use constant lists; an out-of-range
index array is tested on its own (tests/ops/test_indexing.py)."""

import numpy as np

from . import A, S

AxisError = np.exceptions.AxisError


def index_reference(x, index):
    return x[index]


def index_add_reference(x, index, values):
    result = x.copy()
    np.add.at(result, index, values)
    return result


def index_put_reference(x, index, values):
    result = x.copy()
    result[index] = values
    return result


def index_put_samples():
    def row(*args, **kwargs):
        return S(*args, reference=index_put_reference, **kwargs)

    return [row(A((5,)), 2, 1.5), row(A((4, 3)), (slice(1, 3), slice(None)), A((3,))),
            row(A((4, 3)), A((2,), "int64", -4, 4), A((2, 3))), row(A((5,)), [0, 3], A((2,))),
            row(A((4, 3)), (Ellipsis, [0, 2]), A((4, 1))), row(A((4, 3)), A((4, 3), "bool"), A(())),
            row(A((4, 3), "float32"), A((4,), "bool"), -1.0), row(A((4, 3), "int32", -5, 5), 0, A((3,))),
            row(A((4, 3), layout="F"), (slice(None, None, -2), 1), A((2,), "float32")),
            row(A(()), (), 2.0), row(A((0, 3)), slice(None), 1.0),
            row(A((4, 3)), [0, 1], A((2,)), raises=ValueError), row(A((5,)), [0, 7], 1.0, raises=IndexError),
            row(A((4, 3)), A((3,), "bool"), 1.0, raises=IndexError)]


def index_samples():
    def row(*args, **kwargs):
        return S(*args, reference=index_reference, **kwargs)

    def positions(shape, size, dtype="int64"):
        return A(shape, dtype, -size, size)

    return [row(A((5,)), positions((3,), 5)), row(A((4, 5)), (positions((2, 2), 4), slice(1, None))),
            row(A((4, 5, 3), "float32"), (slice(None), positions((2,), 5), A((2,), "int32", 0, 3))),
            row(A((4, 5, 3)), (positions((2,), 4), slice(None), A((3, 1), "int64", 0, 3))),
            row(A((4, 5, 3)), (1, slice(None), [0, 2])), row(A((4, 5)), [0, 3, 3]), row(A((4, 5)), [[0], [-1]]),
            row(A((4, 5)), (None, positions((2,), 4), Ellipsis)),
            row(A((4, 5)), (positions((2,), 4), None, positions((2,), 5))),
            row(A((4, 5), "float32", layout="F"), (Ellipsis, A((3,), "uint8", 0, 5))),
            row(A((4, 5), "int32", -5, 5), [1, 2]), row(A((4,), "bool"), positions((2, 2), 4)),
            row(A((0, 3)), (slice(None), [0, 2])), row(A((4, 5)), []), row(A((3,)), A((0,), "int64")),
            row(A((4, 6), layout="strided"), (positions((2,), 4), [1, 2])),
            row(A((4, 5)), [0, 4], raises=IndexError), row(A((4, 5)), (slice(None), [-6]), raises=IndexError),
            row(A((4, 5)), (positions((2,), 4), positions((3,), 5)), raises=IndexError),
            row(A((4, 5)), A((2,)), raises=IndexError), row(A((4, 5)), (0, 0, [0]), raises=IndexError),
            row(A((4, 5)), (positions((2,), 4), 7), raises=IndexError)]


def index_add_samples():
    def row(*args, **kwargs):
        return S(*args, reference=index_add_reference, **kwargs)

    return [row(A((5,)), [0, 2, 2], A((3,))), row(A((5,)), A((4,), "int64", -5, 5), A((4,))),
            row(A((4, 3)), (A((2,), "int64", 0, 4), slice(None)), A((3,))),
            row(A((4, 3)), (slice(1, None), None), A((1, 3))), row(A((4, 3)), 1, 2.0),
            row(A((4, 3), "float32"), [1, 1], 0.5), row(A((4, 3), "float32"), [[1], [1]], A((2, 1, 3))),
            row(A((4, 3), "int32", -5, 5), [0, 0], A((3,), "int32", -5, 5)),
            row(A((4,), "int64", -5, 5), slice(None), -1.5),
            row(A((3,), "bool"), [0], A((1,), "bool")), row(A((0, 3)), slice(None), 1.0),
            row(A((4, 3), layout="F"), (Ellipsis, [0, 2]), A((4, 2), layout="strided")),
            row(A(()), (), 1.5), row(A((4, 3)), (slice(None, None, -2), 0), A((2,), "float32")),
            row(A((4, 3)), [0, 1], A((2,)), raises=ValueError), row(A((5,)), [0, 7], 1.0, raises=IndexError),
            row(A((5,)), slice(None, None, 0), 1.0, raises=ValueError)]


def ufunc_at_reference(x, index, values, ufunc):
    result = x.copy()
    getattr(np, ufunc).at(result, index, values)
    return result


def ufunc_at_samples():
    """Each ufunc with repeated indices (ties of maximum and minimum too: rounded values),
    index arrays, slices, scalars, integers and float32; NumPy's errors (a boolean
    subtract, values of the wrong shape, an index out of range). multiply's values are
    integers: their derivative is not computed (NOTE(ufunc-at))."""
    def row(*args, **kwargs):
        return S(*args, reference=ufunc_at_reference, **kwargs)

    rows = []
    for ufunc in ("subtract", "maximum", "minimum"):
        rows += [row(A((5,)), [0, 2, 2], A((3,)), ufunc), row(A((4, 3)), (A((2,), "int64", 0, 4), slice(None)),
                                                                A((3,)), ufunc),
                 row(np.array([1.0, 2.0, 2.0]), [1, 1, 2], np.array([2.0, 0.5, 2.0]), ufunc),
                 row(A((4, 3), "float32"), [1, 1], 0.5, ufunc), row(A((4,), "int64", -5, 5), slice(None), 3, ufunc),
                 row(A((0, 3)), slice(None), 1.0, ufunc), row(A((4, 3)), [0, 1], A((2,)), ufunc, raises=ValueError),
                 row(A((5,)), [0, 7], 1.0, ufunc, raises=IndexError)]
    return rows + [row(A((5,)), [0, 2, 2], A((3,), "int64", -3, 3), "multiply"),
                   row(A((4, 3)), (slice(1, None), 0), 2, "multiply"),
                   row(A((4,), "int32", -5, 5), [3, 3], A((2,), "int32", -3, 3), "multiply"),
                   row(A((3,), "bool"), [0], A((1,), "bool"), "maximum"),
                   row(A((3,), "bool"), [0], A((1,), "bool"), "subtract", raises=TypeError)]


def repeat_samples():
    """One count (broadcast) or a count per element, flattened or along an axis; NumPy's
    errors for negative counts, counts of the wrong length, an axis out of range."""
    return [S(A((2, 3)), 2), S(A((2, 3)), 3, axis=1), S(A((2, 3), "float32"), [1, 0, 2], axis=-1),
            S(A((3, 2)), [2], axis=0), S(A((2, 3)), [1, 2, 0, 1, 1, 3]), S(A((2, 3)), 0, axis=0),
            S(A((3, 4), layout="F"), 2, axis=0), S(A((4, 3), layout="strided"), [0, 1, 2], axis=1),
            S(A((4,), "int32", -5, 5), 2), S(A((3,), "bool"), [1, 2, 3]), S(A((0, 3)), 2, axis=1),
            S(A((2, 3)), -1, raises=ValueError), S(A((2, 3)), [1, 2], axis=1, raises=ValueError),
            S(A((2, 3)), [1, -1], axis=0, raises=ValueError), S(A((2, 3)), 2, axis=2, raises=AxisError)]


SAMPLES = {
    "repeat": repeat_samples(),
    "index": index_samples(),
    "index_add": index_add_samples(),
    "ufunc_at": ufunc_at_samples(),
    "index_put": index_put_samples(),
    "take": [S(A((4, 5)), A((3,), "int64", -20, 20)), S(A((4, 5)), [0, 3, 3], axis=0),
             S(A((4, 5)), A((2, 2), "int32", -5, 5), axis=1), S(A((4, 5)), 2, axis=-1), S(A((4, 5)), 7),
             S(A((4, 5), "float32", layout="F"), [1.7, 0.2], axis=0), S(A((4, 5)), A((3,), "bool"), axis=0),
             S(A((3,), "int64", -5, 5), [0]), S(A((2, 2), "bool"), [3, 0]), S(A((0, 3)), [], axis=1),
             S(A((4, 5)), [0, 20], raises=IndexError), S(A((4, 5)), [4], axis=0, raises=IndexError),
             S(A((4, 5)), [0], axis=2, raises=AxisError), S(A((4, 5)), A((2,)), raises=TypeError)],
}
