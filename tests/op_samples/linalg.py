"""Sample rows of the matrix products (pyjit/ops/linalg.py)."""

import numpy as np

from . import A, S

# 0-d arrays are literal: A(()) makes shape (1,) (NOTE in views.py's samples).
# dot and tensordot are decompositions into matmul: the same sums, possibly added in
# another order than NumPy's own loops, so they are compared with a tolerance.
DOT = dict(reference=np.dot)
TENSORDOT = dict(reference=np.tensordot)
SMALL_INTS = dict(low=-3, high=3)

SAMPLES = {
    "matmul": [
        S(A((2, 3)), A((3, 4))), S(A((3,)), A((3, 4))), S(A((2, 3)), A((3,))), S(A((3,)), A((3,))),
        S(A((2, 1, 2, 3)), A((4, 3, 2))), S(A((3,)), A((2, 3, 2))), S(A((2, 2, 3)), A((3,))),
        S(A((4, 3), "float32"), A((3, 2), "float32")), S(A((3, 2), "float32"), A((2, 2))),
        S(A((2, 3), "int64", **SMALL_INTS), A((3, 2), "int32", **SMALL_INTS)),
        S(A((2, 3), "bool"), A((3, 2), "bool")), S(A((2, 3)), A((3, 2), "int8", **SMALL_INTS)),
        S(A((0, 3)), A((3, 2))), S(A((2, 0)), A((0, 3))), S(A((3, 2), layout="F"), A((2, 4), layout="strided")),
        S(A((2, 3)), A((4, 2)), raises=ValueError), S(A((3,)), A((4,)), raises=ValueError),
        S(np.array(1.5), A((2,)), raises=ValueError), S(2.0, A((2,)), raises=ValueError),
        S(A((2, 2, 3)), A((3, 3, 2)), raises=ValueError),
    ],
    "einsum": [
        S("ij,jk->ik", A((2, 3)), A((3, 4))), S("ij,jk", A((2, 3)), A((3, 4))), S("ij->", A((2, 3))),
        S("ij->ji", A((2, 3), layout="F")), S("bA", A((2, 3))), S("i,j->ij", A((3,)), A((2,))),
        S("bij,bjk->bik", A((2, 2, 3), "float32"), A((2, 3, 2), "float32")),
        S(" i j , i j -> i ", A((1, 3)), A((2, 3))), S("ijk,jl->il", A((2, 3, 2)), A((3, 2))),
        S("ij,jk,kl->il", A((2, 3)), A((3, 2)), A((2, 2), "float32")),
        S("...ij,...jk", A((2, 1, 2, 3)), A((3, 3, 2))), S("i...->...", A((2, 3), layout="strided")),
        S("...,...", A((2, 3)), A((3,))), S("i,->i", A((3,), "float32"), 2.0),
        S("i,i", A((3,), "int64", **SMALL_INTS), A((3,), "int8", **SMALL_INTS)),
        S("ij,jk->ik", A((2, 3), "bool"), A((3, 2), "bool")), S("ij,jk->ik", A((2, 0)), A((0, 3))),
        S("ij,jk->ik", A((2, 3)), A((4, 2)), raises=ValueError), S("ij->ik", A((2, 3)), raises=ValueError),
        S("ij,jk", A((2, 3)), raises=ValueError), S("i", A((2,)), A((2,)), raises=ValueError),
        S("ijk->i", A((2, 3)), raises=ValueError), S("i->i", A((2, 3)), raises=ValueError),
        S("ij->jj", A((2, 2)), raises=ValueError), S("i1->i", A((2, 3)), raises=ValueError),
        S("...i->i", A((2, 3)), raises=ValueError), S("i.j->", A((2, 3)), raises=ValueError),
        S("ij-ij", A((2, 3)), raises=ValueError),
    ],
    "dot": [
        S(A((2, 3)), A((3, 4)), **DOT), S(A((3,)), A((3,)), **DOT), S(A((2, 3)), A((3,)), **DOT),
        S(A((3,)), A((3, 2)), **DOT), S(A((2, 3, 4)), A((5, 4, 2)), **DOT), S(A((2, 2, 3)), A((3, 2)), **DOT),
        S(A((3,)), A((2, 3, 2)), **DOT), S(A((2, 2, 3)), A((3,)), **DOT),
        S(2.0, A((3,), "float32"), **DOT), S(A((2, 3)), 3, **DOT), S(np.array(1.5), A((2, 2)), **DOT),
        S(A((2, 3), "float32"), A((3, 2), "int32", **SMALL_INTS), **DOT), S(A((2, 3), "bool"), A((3, 2), "bool"), **DOT),
        S(A((0, 3)), A((3, 2)), **DOT), S(A((3, 2), layout="F"), A((4, 2, 3), layout="strided"), **DOT),
        S(A((2, 3)), A((4,)), raises=ValueError), S(A((2, 3, 4)), A((5, 3, 2)), raises=ValueError),
    ],
    "tensordot": [
        S(A((2, 3, 4)), A((3, 4, 2)), **TENSORDOT), S(A((2, 3)), A((3, 2)), axes=1, **TENSORDOT),
        S(A((2, 3)), A((2, 3)), axes=0, **TENSORDOT), S(A((3, 4, 2)), A((4, 3)), axes=([0, 1], [1, 0]), **TENSORDOT),
        S(A((2, 3)), A((3, 2)), axes=(1, 0), **TENSORDOT), S(A((2, 3)), A((2, 3)), axes=([-1], [-1]), **TENSORDOT),
        S(A((2, 3)), A((3, 2)), axes=-1, **TENSORDOT),
        S(A((2, 3), "float32"), A((3, 2), "int8", **SMALL_INTS), axes=1, **TENSORDOT),
        S(np.array(1.5), A((2, 3)), axes=0, **TENSORDOT), S(2.0, A((2,), "float32"), axes=0, **TENSORDOT),
        S(A((0, 3)), A((3, 2)), axes=1, **TENSORDOT), S(A((3, 2), layout="strided"), A((3, 2), layout="F"),
                                                       axes=([0], [0]), **TENSORDOT),
        S(A((2, 3)), A((3, 2)), axes=3, raises=IndexError), S(A((2, 3)), A((3, 2)), axes=([1], [1]), raises=ValueError),
        S(A((2, 3)), A((3, 2)), axes=([1, 1], [0, 0]), raises=ValueError),
        S(A((2, 3)), A((3, 2)), axes=((1,),), raises=ValueError),
        S(A((2, 3)), A((3, 2)), axes=([0, 1], [0]), raises=ValueError),
        S(A((2, 3)), A((3, 2)), axes=1.5, raises=TypeError),
    ],
}

COMPLEX = np.array([[1.0 + 2.0j, -0.5j, 2.0], [0.5 - 1.0j, 1.5 + 0.5j, -1.0j]])
SAMPLES.update({
    "vdot": [S(A((3,)), A((3,)), reference=np.vdot), S(A((2, 3)), A((3, 2)), reference=np.vdot),
             S(COMPLEX, COMPLEX[::-1].copy(), reference=np.vdot), S(COMPLEX, A((2, 3)), reference=np.vdot),
             S(A((3,), "float32"), A((3,), "int32", **SMALL_INTS), reference=np.vdot),
             S(A((4,), "int64", **SMALL_INTS), A((4,), "int64", **SMALL_INTS), reference=np.vdot),
             S(np.array(1.5), A((1,)), reference=np.vdot), S(A((0,)), A((0,)), reference=np.vdot),
             S(A((3,)), A((4,)), reference=np.vdot, raises=ValueError)],
    "inner": [S(A((3,)), A((3,)), reference=np.inner), S(A((2, 3)), A((4, 3)), reference=np.inner),
              S(A((2, 2, 3)), A((3,)), reference=np.inner), S(A((3,), "float32"), A((2, 3), "float32"), reference=np.inner),
              S(2.0, A((2, 3)), reference=np.inner), S(np.array(2.0), A((3,), "float32"), reference=np.inner),
              S(A((2, 3), "int32", **SMALL_INTS), A((3,), "int8", **SMALL_INTS), reference=np.inner),
              S(A((0, 3)), A((2, 3)), reference=np.inner), S(A((2, 3)), A((3, 2)), reference=np.inner, raises=ValueError)],
    "kron": [S(A((2, 3)), A((3, 2))), S(A((3,)), A((2,))), S(A((2, 3)), A((2,))), S(A((2,)), A((2, 2, 3))),
             S(A((2, 2), "float32"), A((2,), "int8", **SMALL_INTS)), S(A((2, 2), "int32", **SMALL_INTS), A((3,), "bool")),
             S(2.0, A((2, 2), "float32")), S(np.array(2.0), A((3,))), S(A((0, 2)), A((2, 3))),
             S(A((2, 3), layout="F"), A((2, 2), layout="strided"))],
    "cross": [S(A((3,)), A((3,))), S(A((4, 3)), A((3,))), S(A((2, 4, 3)), A((4, 3))), S(A((3, 4)), A((4, 3)), axisa=0),
              S(A((3, 4)), A((3, 4)), axis=0), S(A((2, 3)), A((2, 3)), axisc=0),
              S(A((2, 3), "float32"), A((3,), "int32", **SMALL_INTS)),
              S(A((3,), "int64", **SMALL_INTS), A((3,), "int8", **SMALL_INTS)),
              S(A((0, 3)), A((3,))), S(A((4,)), A((3,)), raises=ValueError), S(A((2, 3)), A((3, 3)), raises=ValueError),
              S(A((3,)), A((3,)), axisa=1, raises=np.exceptions.AxisError)],
})
