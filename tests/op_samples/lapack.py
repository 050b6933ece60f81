"""Sample rows of numpy.linalg's solve, inv, det, cholesky and norm (pyjit/ops/lapack.py).
The matrices are literal and well conditioned (symmetric positive definite for
cholesky), so that finite differences check the derivatives; a singular matrix is a
LinAlgError only when the graph runs (tests/ops/test_lapack.py)."""

import numpy as np

from . import A, S

LinAlgError = np.linalg.LinAlgError
AxisError = np.exceptions.AxisError


def conditioned(size: int, batch: tuple = (), dtype: str = "float64", seed: int = 0) -> np.ndarray:
    """Random matrices with the identity times `size` added: far from singular."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1, 1, batch + (size, size))
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.uniform(-1, 1, batch + (size, size))
    return (values + size * np.eye(size)).astype(dtype)


def positive_definite(size: int, batch: tuple = (), dtype: str = "float64", seed: int = 0) -> np.ndarray:
    factor = conditioned(size, batch, dtype, seed)
    return (factor @ np.conj(np.swapaxes(factor, -1, -2))).astype(dtype)


def square_errors():
    """What every op on square matrices refuses: too few dimensions, a matrix that is
    not square, float16."""
    return [S(A((3,)), raises=LinAlgError), S(np.array(2.0), raises=LinAlgError),
            S(A((2, 3)), raises=LinAlgError), S(A((2, 2), "float16"), raises=TypeError)]


NORM = dict(reference=np.linalg.norm, rtol=1e-12)

SAMPLES = {
    "solve": [
        S(conditioned(3), A((3,))), S(conditioned(3), A((3, 2))), S(conditioned(2, (2,)), A((2,))),
        S(conditioned(2, (2, 1)), A((3, 2, 4))), S(conditioned(3, dtype="float32"), A((3,), "float32")),
        S(conditioned(3, dtype="float32"), A((3,))), S(conditioned(2), A((2, 2), "int32", -3, 3)),
        S(conditioned(3, dtype="complex128"), A((3, 2))), S(conditioned(3, dtype="complex64"), A((3,), "float32")),
        S(np.eye(3, dtype=np.int64), A((3, 1), "int8", -3, 3)), S(A((0, 0)), A((0,))), S(A((2, 0, 0)), A((0, 3))),
        S(np.asfortranarray(conditioned(3)), A((3, 2), layout="strided")),
        S(A((3,)), A((3,)), raises=LinAlgError), S(A((2, 3)), A((2,)), raises=LinAlgError),
        S(conditioned(3), A((2,)), raises=ValueError), S(conditioned(3), A((2, 3)), raises=ValueError),
        S(conditioned(3), np.array(1.0), raises=ValueError),
        S(A((2, 2), "float16"), A((2,), "float16"), raises=TypeError),
    ],
    "inv": [
        S(conditioned(3)), S(conditioned(2, (3,))), S(conditioned(3, dtype="float32")), S(conditioned(3, dtype="complex128")),
        S(np.eye(3, dtype=np.int32) * 2), S(A((0, 0))), S(A((2, 0, 0))), S(np.asfortranarray(conditioned(4))),
        *square_errors(),
    ],
    "det": [
        S(conditioned(3)), S(conditioned(2, (3,))), S(conditioned(3, dtype="float32")), S(conditioned(3, dtype="complex128")),
        S(A((3, 3), "int64", -3, 3)), S(A((3, 3), "bool")), S(A((0, 0))), S(A((2, 0, 0))), S(A((1, 1))),
        *square_errors(),
    ],
    "cholesky": [
        S(positive_definite(3)), S(positive_definite(2, (2,))), S(positive_definite(3, dtype="float32")),
        S(positive_definite(3, dtype="complex128")), S(positive_definite(3), upper=True),
        S(positive_definite(2, (3,), dtype="complex128"), upper=True), S(np.eye(2, dtype=np.int64)),
        S(A((0, 0))), S(A((2, 0, 0))), *square_errors(),
    ],
    "norm": [
        S(A((5,)), **NORM), S(A((3, 4)), **NORM), S(A((2, 3, 4)), **NORM), S(A((3, 4), "float32"), **NORM),
        S(A((4,), "int32", -5, 5), **NORM), S(A((4,), "bool"), **NORM), S(A((3,), "complex128"), **NORM),
        S(A((5,)), 1, **NORM), S(A((5,)), np.inf, **NORM), S(A((5,)), -np.inf, **NORM), S(A((5,)), 0, **NORM),
        S(A((5,), low=0.5), 3, **NORM), S(A((5,), low=0.5), -1, **NORM), S(A((5,), low=0.5), 0.5, **NORM),
        S(A((3, 4)), "fro", **NORM), S(A((3, 4)), 1, **NORM), S(A((3, 4)), -1, **NORM),
        S(A((3, 4)), np.inf, **NORM), S(A((3, 4)), -np.inf, **NORM), S(A((3, 4)), 2, **NORM),
        S(A((2, 3, 4)), -2, axis=(2, 0), **NORM), S(A((3, 4)), "nuc", keepdims=True, **NORM),
        S(A((3, 3), "complex128"), "nuc", **NORM),
        S(A((2, 3, 4)), axis=1, **NORM), S(A((2, 3, 4)), 1, axis=(2, 0), **NORM),
        S(A((2, 3, 4)), axis=(0, 1), keepdims=True, **NORM), S(A((2, 3)), np.inf, axis=-1, keepdims=True, **NORM),
        S(A((3, 4), layout="strided"), **NORM), S(A((0, 3)), axis=1, **NORM), S(A((0,)), **NORM),
        S(np.array(1.5), **NORM),
        S(A((2, 3, 4)), 2, **NORM, raises=ValueError), S(A((3,)), "fro", **NORM, raises=ValueError),
        S(A((3, 4)), 3, **NORM, raises=ValueError), S(A((3, 4)), axis=(0, 0), **NORM, raises=ValueError),
        S(A((3, 4)), axis=(0, 1, 1), **NORM, raises=ValueError), S(A((3, 4)), axis=2, **NORM, raises=AxisError),
    ],
}


def slogdet_reference(a):
    return tuple(np.linalg.slogdet(a))


def slogdet_packed_reference(a):
    sign, logarithm = np.linalg.slogdet(a)
    return np.stack([sign, logarithm.astype(sign.dtype)], axis=-1)


def slogdet_samples(reference):
    """Positive and negative determinants (rows swapped), stacks, float32 and complex,
    integers and bools (float64), empty matrices (determinant 1); a singular matrix,
    whose gradient does not exist, is tests/ops/test_lapack.py's."""
    return [S(conditioned(3), reference=reference), S(conditioned(3)[::-1].copy(), reference=reference),
            S(conditioned(2, (3,)), reference=reference), S(conditioned(3, dtype="float32"), reference=reference),
            S(conditioned(3, dtype="complex128"), reference=reference),
            S(A((3, 3), "int64", -3, 3), reference=reference),
            S(A((2, 2), "bool"), reference=reference), S(A((0, 0)), reference=reference),
            S(A((2, 0, 0)), reference=reference), S(np.asfortranarray(conditioned(4)), reference=reference),
            *(S(*row.args, raises=row.raises, reference=reference) for row in square_errors())]


def eigh_reference(a, UPLO="L"):
    return tuple(np.linalg.eigh(a, UPLO))


def eigh_packed_reference(a, UPLO="L"):
    values, vectors = np.linalg.eigh(a, UPLO)
    return np.concatenate([values.astype(vectors.dtype)[..., None, :], vectors], axis=-2)


def eigh_samples(reference):
    """Symmetric (Hermitian) matrices with distinct eigenvalues, so that the eigenvectors
    and their derivative are defined."""
    return [S(positive_definite(3), reference=reference), S(positive_definite(3), "U", reference=reference),
            S(positive_definite(2, (3,)), reference=reference),
            S(positive_definite(3, dtype="float32"), reference=reference, rtol=1e-5),
            S(positive_definite(3, dtype="complex128"), reference=reference),
            S(positive_definite(3, dtype="complex128"), UPLO="U", reference=reference),
            S(np.diag([1, 2, 3]).astype(np.int64), reference=reference), S(A((0, 0)), reference=reference),
            S(A((3, 3)), "X", raises=ValueError, reference=reference),
            *(S(*row.args, raises=row.raises, reference=reference) for row in square_errors())]


SAMPLES.update({"slogdet_packed": slogdet_samples(slogdet_packed_reference),
                "slogdet": slogdet_samples(slogdet_reference)})
SAMPLES.update({"eigh_packed": eigh_samples(eigh_packed_reference), "eigh": eigh_samples(eigh_reference),
                "eigvalsh": [S(positive_definite(3), reference=np.linalg.eigvalsh, rtol=1e-12),
                             S(positive_definite(2, (2,), dtype="complex128"), "U", reference=np.linalg.eigvalsh,
                               rtol=1e-12),
                             S(A((2, 3)), raises=LinAlgError)]})


def qr_reference(a, mode="reduced"):
    result = np.linalg.qr(a, mode)
    return result if mode == "r" else tuple(result)


def qr_packed_reference(a, mode="reduced"):
    q, r = np.linalg.qr(a, mode)
    r = np.concatenate([r, np.zeros(r.shape[:-2] + (q.shape[-2] - r.shape[-2], r.shape[-1]), r.dtype)], axis=-2)
    return np.concatenate([q, r], axis=-1)


def qr_samples(reference):
    """Full-rank matrices, tall and square (the derivative is PyTorch's, for m >= n), and
    wide ones and complete mode forward only."""
    rows = [S(A((4, 3)), reference=reference), S(A((3, 3)), reference=reference),
            S(A((2, 4, 2)), reference=reference), S(A((4, 3), "float32"), reference=reference, rtol=1e-5),
            S(A((3, 2), "int32", -3, 3), reference=reference), S(A((0, 3)), reference=reference),
            S(A((3,)), raises=LinAlgError, reference=reference), S(A((3, 3)), "bogus", raises=ValueError,
                                                                   reference=reference),
            S(A((2, 2), "float16"), raises=TypeError, reference=reference)]
    return rows


SAMPLES.update({"qr_packed": qr_samples(qr_packed_reference), "qr": [*qr_samples(qr_reference),
                                                                     S(A((4, 3)), "r", reference=qr_reference)]})


SVDVALS = dict(reference=np.linalg.svdvals, rtol=1e-12)  # LAPACK without singular vectors: equal to rounding


def svd_reference(a, full_matrices=True, compute_uv=True, hermitian=False):
    result = np.linalg.svd(a, full_matrices, compute_uv, hermitian)
    return tuple(result) if compute_uv else result


def svd_packed_reference(a, full_matrices=True):
    u, s, vh = np.linalg.svd(a, full_matrices)
    width = max(u.shape[-1], vh.shape[-1])
    parts = [u, s.astype(u.dtype)[..., None, :], vh]
    return np.concatenate([np.concatenate([part, np.zeros(part.shape[:-1] + (width - part.shape[-1],), part.dtype)],
                                          -1) for part in parts], axis=-2)


def svd_samples(reference):
    """Random matrices (distinct singular values, full rank); the derivative of a
    non-square matrix's full U or Vh is not defined, so those rows are integer."""
    return [S(A((4, 3)), False, reference=reference), S(A((3, 4)), False, reference=reference),
            S(A((3, 3)), reference=reference), S(A((2, 3, 2)), False, reference=reference),
            S(A((4, 3), "float32"), False, reference=reference, rtol=1e-4),
            S(A((4, 3), "int32", -3, 3), reference=reference), S(A((2, 4), "int64", -3, 3), True, reference=reference),
            S(A((3, 2), "complex128"), False, reference=reference), S(A((0, 3)), False, reference=reference),
            S(A((3,)), raises=LinAlgError, reference=reference),
            S(A((2, 2), "float16"), raises=TypeError, reference=reference)]


SAMPLES.update({"svd_packed": svd_samples(svd_packed_reference),
                "svd": [*svd_samples(svd_reference), S(A((4, 3)), compute_uv=False, reference=svd_reference)],
                "svdvals": [S(A((4, 3)), **SVDVALS), S(A((2, 3, 5), "float32"), reference=np.linalg.svdvals, rtol=1e-5),
                            S(A((3, 3), "complex128"), **SVDVALS), S(A((3,)), raises=LinAlgError)]})


def lstsq_reference(a, b, rcond=None):
    return tuple(np.linalg.lstsq(a, b, rcond=rcond))


def lstsq_packed_reference(a, b, rcond=None):
    x, residuals, rank, values = np.linalg.lstsq(a, b, rcond=rcond)
    n, k = a.shape[1], 1 if b.ndim == 1 else b.shape[1]
    packed = np.zeros((n + 3, max(k, min(a.shape), 1)), x.dtype)
    packed[:n, :k], packed[n, :len(residuals)], packed[n + 1, :len(values)] = x.reshape(n, k), residuals, values
    packed[n + 2, 0] = rank
    return packed


def rank_deficient(rows: int, columns: int, dtype: str = "int64") -> np.ndarray:
    """A matrix whose last two columns are equal (integers: no derivative to check)."""
    matrix = np.arange(rows * columns).reshape(rows, columns) % 5 + np.eye(rows, columns, dtype=np.int64)
    matrix[:, -1] = matrix[:, -2]
    return matrix.astype(dtype)


def lstsq_errors(reference):
    """NumPy's: a must be one matrix (no stacks), b a vector or a matrix of as many rows;
    float16 is refused."""
    return [S(A((2, 3, 2)), A((3,)), raises=LinAlgError, reference=reference),
            S(A((3,)), A((3,)), raises=LinAlgError, reference=reference),
            S(A((3, 2)), A((2,)), raises=LinAlgError, reference=reference),
            S(A((3, 2)), A((3, 2, 1)), raises=LinAlgError, reference=reference),
            S(A((3, 2)), np.array(1.0), raises=LinAlgError, reference=reference),
            S(A((2, 2), "float16"), A((2,), "float16"), raises=TypeError, reference=reference)]


def lstsq_samples(reference):
    """Square and wide matrices, whose residuals are always empty (NOTE(lstsq-residuals)):
    vectors and matrices of right-hand sides, float32, integers, complex, a rank-deficient
    matrix and rcond cutting a small singular value, empty matrices and right-hand sides,
    a Fortran-ordered matrix."""
    return [S(conditioned(3), A((3,)), reference=reference), S(conditioned(3), A((3, 2)), reference=reference),
            S(A((2, 4), "int64", -3, 3), A((2,), "int8", -3, 3), reference=reference),
            S(A((2, 4), "float32"), A((2, 3), "float32"), reference=reference, rtol=1e-5),
            S(A((2, 3), "complex128"), A((2,), "float32"), reference=reference),
            S(rank_deficient(3, 3), A((3,), "int32", -3, 3), reference=reference),
            S(np.diag([4.0, 1.0, 2.0]), A((3,)), 0.3, reference=reference),
            S(conditioned(3), A((3,)), -1, reference=reference),
            S(A((0, 3)), A((0, 2)), reference=reference), S(A((2, 3)), A((2, 0)), reference=reference),
            S(A((0, 0)), A((0,)), reference=reference),
            S(np.asfortranarray(conditioned(3)), A((3, 2), layout="strided"), reference=reference),
            *lstsq_errors(reference)]


SAMPLES.update({
    "lstsq": lstsq_samples(lstsq_reference),
    # Tall matrices too: the packed rows hold the residuals, and where a has full column
    # rank their derivative and the solution's are checked (a wide float matrix has none).
    "lstsq_packed": [
        S(A((5, 3)), A((5,)), reference=lstsq_packed_reference),
        S(A((4, 2)), A((4, 3)), reference=lstsq_packed_reference),
        S(conditioned(3), A((3, 2)), reference=lstsq_packed_reference),
        S(A((5, 2), "float32"), A((5,), "float32"), reference=lstsq_packed_reference, rtol=1e-5),
        S(A((4, 2), "complex128"), A((4, 2), "complex128"), reference=lstsq_packed_reference),
        S(rank_deficient(5, 3), A((5,), "int32", -3, 3), reference=lstsq_packed_reference),
        S(A((2, 4), "int64", -3, 3), A((2,), "int64", -3, 3), reference=lstsq_packed_reference),
        S(A((3, 0)), A((3, 2)), reference=lstsq_packed_reference),
        S(A((0, 3)), A((0,)), reference=lstsq_packed_reference),
        *lstsq_errors(lstsq_packed_reference)],
})
