"""numpy.linalg: solve, inv, det and cholesky as calls into NumPy's (CuPy's) own LAPACK,
as matmul goes to BLAS, and norm as a decomposition.

NOTE(lapack-ops): each primitive runs `xp.linalg.<name>` unfused (category "other"),
so results, dtypes and the errors LAPACK reports are NumPy's exactly: a singular matrix
in solve or inv, or one that is not positive definite in cholesky, raises
numpy.linalg.LinAlgError when the graph runs, as NumPy does. What the meta rules can
see (too few dimensions, a matrix that is not square, shapes that do not match) they
raise before, with NumPy's exception types. Dtypes come from NumPy itself, asked about
a 1x1 identity of the arguments' dtypes (`probed_dtype`): integers and bools become
float64, float16 is refused (TypeError), as in NumPy.

Derivatives use PyTorch's convention for complex values (NOTE(complex-parts)): the
gradient of a real loss is dL/d(re) + i dL/d(im), so each VJP uses conjugate
transposes. cholesky reads only the lower triangle of its input (the upper one with
upper=True), so its gradient is zero on the other triangle, where finite differences
see no change either.

NOTE(packed-eigh): numpy.linalg.eigh gives two arrays from one LAPACK call, and a graph
call has one result, so the primitive `eigh_packed` returns them in one array, the
eigenvalues as its first row and the eigenvectors below (in the eigenvectors' dtype,
exactly: a real eigenvalue survives the round trip through a complex dtype), and the
composites `eigh` and `eigvalsh` take them apart with views; `qr_packed` likewise puts
Q and R side by side, `svd_packed` stacks U, the singular values and Vh, and
`slogdet_packed` the sign and the logarithm, and `lstsq_packed` the solution, the
residuals, the singular values and the rank (NOTE(lstsq-residuals)). numpy.linalg's eig
(whose dtype, for a real matrix, is real only when the values make every eigenvalue
real) is not in the registry (docs/ops.md).
"""

from __future__ import annotations

import numpy as np

from ..graph import TensorMeta, broadcast_shapes
from .gradients import input_grad, is_differentiable, positions
from .registry import composite, op, primitive
from .shape_rules import device_of, normalize_axis, reduced_shape


def probed_dtype(function, *dtypes, **kwargs) -> np.dtype:
    """The dtype `function` gives for arguments of `dtypes`, asked of NumPy on 1x1
    identities (a 1-D argument where `function` takes a vector: see the callers)."""
    return function(*(np.eye(1, dtype=dtype) for dtype in dtypes), **kwargs).dtype


def check_square(a: TensorMeta) -> None:
    """numpy.linalg's checks of a stack of square matrices, with its messages."""
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def adjoint(x):
    """The conjugate transpose of a stack of matrices (the transpose of a real one)."""
    swapped = op.swapaxes(x, -1, -2)
    return op.conjugate(swapped) if np.dtype(x.dtype).kind == "c" else swapped


def column(x):
    return op.reshape(x, tuple(x.shape) + (1,))


# -- solve -------------------------------------------------------------------------------
def _solve_meta(a: TensorMeta, b: TensorMeta) -> TensorMeta:
    """NumPy 2: b is one vector when 1-D (a's batch dimensions apply), else a stack of
    matrices whose batch dimensions broadcast with a's."""
    check_square(a)
    dtype = np.linalg.solve(np.eye(1, dtype=a.dtype), np.ones(1, dtype=b.dtype)).dtype
    size = a.shape[-1]
    if b.ndim == 1:
        if b.shape[0] != size:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                             f"signature (m,m),(m)->(m) (size {b.shape[0]} is different from {size})")
        return TensorMeta(a.shape[:-1], dtype, device_of(a, b))
    if b.ndim == 0 or b.shape[-2] != size:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature (m,m),(m,n)->(m,n) (size {b.shape[-2] if b.ndim else 0} is different from {size})")
    shape = broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (size, b.shape[-1])
    return TensorMeta(shape, dtype, device_of(a, b))


def _solve_vjp(grad, out, a, b):
    """x = a^-1 b: grad_b = a^-H grad, grad_a = -grad_b x^H. A vector b is a column (of
    each of a's matrices, when a is a stack)."""
    if not (is_differentiable(a) or is_differentiable(b)):
        return None, None
    if b.ndim == 1:
        grad, out = column(grad), column(out)
    grad_b = op.solve(adjoint(a), grad)
    grad_a = input_grad(a, op.negative(op.matmul(grad_b, adjoint(out)))) if is_differentiable(a) else None
    if b.ndim == 1:
        grad_b = op.reshape(grad_b, tuple(grad_b.shape[:-1]))
    return grad_a, (input_grad(b, grad_b) if is_differentiable(b) else None)


@primitive("solve", category="other", meta=_solve_meta, vjp=_solve_vjp)
def solve(xp, a, b):
    """numpy.linalg.solve: x with a @ x = b (LAPACK gesv); LinAlgError for a singular a."""
    return xp.linalg.solve(a, b)


# -- inv and det --------------------------------------------------------------------------
def _inv_meta(a: TensorMeta) -> TensorMeta:
    check_square(a)
    return TensorMeta(a.shape, probed_dtype(np.linalg.inv, a.dtype), a.device)


def _inv_vjp(grad, out, a):
    """d(a^-1) = -a^-1 da a^-1, so grad_a = -a^-H grad a^-H."""
    if not is_differentiable(a):
        return (None,)
    inverse_h = adjoint(out)
    return (input_grad(a, op.negative(op.matmul(op.matmul(inverse_h, grad), inverse_h))),)


@primitive("inv", category="other", meta=_inv_meta, vjp=_inv_vjp)
def inv(xp, a):
    """numpy.linalg.inv: the inverse of each matrix; LinAlgError for a singular one."""
    return xp.linalg.inv(a)


def _det_meta(a: TensorMeta) -> TensorMeta:
    check_square(a)
    return TensorMeta(a.shape[:-2], probed_dtype(np.linalg.det, a.dtype), a.device)


def _det_vjp(grad, out, a):
    """d det(a) = det(a) tr(a^-1 da), so grad_a = grad conj(det(a)) a^-H (PyTorch's
    formula away from singular matrices; a singular a raises LinAlgError here, from its
    inverse, where PyTorch falls back to an SVD)."""
    if not is_differentiable(a):
        return (None,)
    scale = op.multiply(grad, op.conjugate(out)) if np.dtype(out.dtype).kind == "c" else op.multiply(grad, out)
    scale = op.reshape(scale, tuple(scale.shape) + (1, 1))
    return (input_grad(a, op.multiply(scale, adjoint(op.inv(a)))),)


@primitive("det", category="other", meta=_det_meta, vjp=_det_vjp)
def det(xp, a):
    """numpy.linalg.det: the determinant of each matrix (LAPACK getrf)."""
    return xp.linalg.det(a)


# -- slogdet (NOTE(packed-eigh): the sign and the logarithm side by side) ------------------
def _slogdet_packed_meta(a: TensorMeta) -> TensorMeta:
    check_square(a)
    return TensorMeta(a.shape[:-2] + (2,), np.linalg.slogdet(np.eye(1, dtype=a.dtype))[0].dtype, a.device)


def _unpacked_slogdet(packed):
    """(sign, log|det|); of one matrix as NumPy scalars (`x[0]`: `x[..., 0]` is a 0-d array)."""
    first, second = ((Ellipsis, 0), (Ellipsis, 1)) if packed.ndim > 1 else (0, 1)
    sign, logarithm = op.getitem(packed, first), op.getitem(packed, second)
    return sign, (op.real(logarithm) if np.dtype(packed.dtype).kind == "c" else logarithm)


def _slogdet_vjp(grad, out, a):
    """PyTorch's: d log|det a| = Re tr(a^-1 da) and, for complex a, d sign = i sign Im
    tr(a^-1 da), so grad_a = g a^-H with g = g_log - i Im(conj(g_sign) sign) (g_log
    alone for a real a, whose sign is piecewise constant). A singular a raises
    LinAlgError here, from its inverse, as det's derivative does."""
    if not is_differentiable(a):
        return (None,)
    sign, _ = _unpacked_slogdet(out)
    grad_sign, grad_log = _unpacked_slogdet(grad)
    scale = grad_log
    if np.dtype(out.dtype).kind == "c":
        turned = op.imag(op.multiply(op.conjugate(grad_sign), sign))
        scale = op.subtract(op.astype(grad_log, out.dtype), op.multiply(turned, 1j))
    scale = op.reshape(scale, tuple(scale.shape) + (1, 1))
    return (input_grad(a, op.multiply(scale, adjoint(op.inv(a)))),)


@primitive("slogdet_packed", category="other", meta=_slogdet_packed_meta, vjp=_slogdet_vjp)
def slogdet_packed(xp, a):
    """numpy.linalg.slogdet's sign and log|det| as the last axis of one array, in the
    sign's dtype (NOTE(packed-eigh)), from one LAPACK call."""
    sign, logarithm = xp.linalg.slogdet(a)
    return xp.stack([sign, logarithm.astype(sign.dtype)], axis=-1)


@composite("slogdet")
def slogdet(a):
    """numpy.linalg.slogdet: (sign, log|det|) of each matrix, as a tuple (NumPy's
    SlogdetResult is a named tuple); a singular matrix gives (0, -inf), as in NumPy."""
    return _unpacked_slogdet(op.slogdet_packed(a))


# -- cholesky -----------------------------------------------------------------------------
def _cholesky_meta(a: TensorMeta, upper=False) -> TensorMeta:
    check_square(a)
    return TensorMeta(a.shape, probed_dtype(np.linalg.cholesky, a.dtype, upper=upper), a.device)


def _folded_onto_lower(x):
    """x below the diagonal, half of it on the diagonal, zero above."""
    rows, columns = positions(x, -2), positions(x, -1)
    halved = op.where(op.equal(rows, columns), op.multiply(x, 0.5), 0)
    return op.where(op.greater(rows, columns), x, halved)


def _lower_cholesky_grad(grad, factor):
    """For a = L L^H read from its lower triangle: with P = Phi(L^H grad) (the lower
    triangle, diagonal halved) and S = L^-H P L^-1, the gradient is S + S^H on the
    strict lower triangle, half of it on the diagonal, zero above."""
    phi = _folded_onto_lower(op.matmul(adjoint(factor), grad))
    inverse = op.inv(factor)
    s = op.matmul(op.matmul(adjoint(inverse), phi), inverse)
    return _folded_onto_lower(op.add(s, adjoint(s)))


def _cholesky_vjp(grad, out, a, upper=False):
    """upper=True factors a^H read from its lower triangle: U = chol(a^H)^H."""
    if not is_differentiable(a):
        return (None,)
    if upper:
        return (input_grad(a, adjoint(_lower_cholesky_grad(adjoint(grad), adjoint(out)))),)
    return (input_grad(a, _lower_cholesky_grad(grad, out)),)


@primitive("cholesky", category="other", meta=_cholesky_meta, vjp=_cholesky_vjp)
def cholesky(xp, a, upper=False):
    """numpy.linalg.cholesky: L with a = L L^H (U with a = U^H U when upper=True);
    LinAlgError when a matrix is not positive definite."""
    return xp.linalg.cholesky(a, upper=True) if upper else xp.linalg.cholesky(a)


# -- eigh (NOTE(packed-eigh)) ---------------------------------------------------------------
def _eigh_packed_meta(a: TensorMeta, UPLO="L") -> TensorMeta:
    check_square(a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    dtype = np.linalg.eigh(np.eye(1, dtype=a.dtype))[1].dtype
    return TensorMeta(a.shape[:-2] + (a.shape[-1] + 1, a.shape[-1]), dtype, a.device)


def _unpacked_values(packed):
    values = op.getitem(packed, (Ellipsis, 0, slice(None)))
    return op.real(values) if np.dtype(packed.dtype).kind == "c" else values


def _unpacked_vectors(packed):
    return op.getitem(packed, (Ellipsis, slice(1, None), slice(None)))


def _eigh_vjp(grad, out, a, UPLO="L"):
    """PyTorch's: with E_ij = w_j - w_i, gA = V (diag(gw) + skew(V^H gV) / E) V^H (skew:
    the skew-Hermitian part, off the diagonal), then folded onto the triangle eigh
    reads, as for cholesky."""
    if not is_differentiable(a):
        return (None,)
    values, vectors = _unpacked_values(out), _unpacked_vectors(out)
    grad_values, grad_vectors = _unpacked_values(grad), _unpacked_vectors(grad)
    projected = op.matmul(adjoint(vectors), grad_vectors)
    on_diagonal = op.equal(positions(projected, -2), positions(projected, -1))
    skew = op.multiply(op.subtract(projected, adjoint(projected)), 0.5)
    gaps = op.where(on_diagonal, 1, op.subtract(op.expand_dims(values, -2), op.expand_dims(values, -1)))
    inner = op.where(on_diagonal, op.expand_dims(grad_values, -2), op.divide(skew, gaps))
    symmetric = op.matmul(op.matmul(vectors, inner), adjoint(vectors))
    folded = _folded_onto_lower(op.add(symmetric, adjoint(symmetric)))
    return (input_grad(a, folded if UPLO == "L" else adjoint(folded)),)


@primitive("eigh_packed", category="other", meta=_eigh_packed_meta, vjp=_eigh_vjp)
def eigh_packed(xp, a, UPLO="L"):
    """numpy.linalg.eigh's eigenvalues (first row) and eigenvectors (the rows below) in one
    array (NOTE(packed-eigh))."""
    values, vectors = xp.linalg.eigh(a, UPLO)
    return xp.concatenate([xp.expand_dims(values.astype(vectors.dtype), -2), vectors], axis=-2)


@composite("eigh")
def eigh(a, UPLO="L"):
    """numpy.linalg.eigh: (eigenvalues ascending, eigenvectors as columns) of Hermitian
    matrices read from one triangle, as a tuple (NumPy's EighResult is a named tuple)."""
    packed = op.eigh_packed(a, UPLO)
    return _unpacked_values(packed), _unpacked_vectors(packed)


@composite("eigvalsh")
def eigvalsh(a, UPLO="L"):
    """numpy.linalg.eigvalsh, as the eigenvalues eigh gives (NumPy's eigvalsh runs LAPACK
    without eigenvectors, so the two agree to rounding)."""
    return _unpacked_values(op.eigh_packed(a, UPLO))


# -- qr (NOTE(packed-eigh): Q and R side by side) -----------------------------------------
def _qr_sizes(a: TensorMeta, mode: str) -> tuple:
    """(m, n, p): Q is m x p and R is p x n (p = min(m, n) reduced, m complete)."""
    m, n = a.shape[-2], a.shape[-1]
    if not isinstance(m, int) or not isinstance(n, int):
        raise NotImplementedError("qr needs static matrix sizes")
    return m, n, (m if mode == "complete" else min(m, n))


def _qr_packed_meta(a: TensorMeta, mode="reduced") -> TensorMeta:
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if mode not in ("reduced", "complete"):
        if mode in ("r", "raw"):
            raise NotImplementedError(f"qr mode={mode!r} is not packed")
        raise ValueError(f"Unrecognized mode '{mode}'")
    m, n, p = _qr_sizes(a, mode)
    dtype = np.linalg.qr(np.eye(1, dtype=a.dtype), mode)[0].dtype
    return TensorMeta(a.shape[:-2] + (m, p + n), dtype, a.device)


def _unpacked_qr(packed, a, mode):
    m, n, p = _qr_sizes(a, mode)
    return (op.getitem(packed, (Ellipsis, slice(None), slice(0, p))),
            op.getitem(packed, (Ellipsis, slice(0, p), slice(p, p + n))))


def _copyltu(x):
    """The Hermitian matrix with x's strict lower triangle and the real part of its
    diagonal (LAPACK's R has a real diagonal)."""
    rows, columns = positions(x, -2), positions(x, -1)
    lower = op.where(op.greater(rows, columns), x, 0)
    diagonal = op.where(op.equal(rows, columns), op.real(x) if np.dtype(x.dtype).kind == "c" else x, 0)
    return op.add(op.add(lower, adjoint(lower)), diagonal)


def _qr_vjp(grad, out, a, mode="reduced"):
    """For m >= n (R square and invertible; PyTorch computes no more): with gR read on
    R's upper triangle (its other entries are constant zeros) and
    M = R gR^H - gQ^H Q, gA = (gQ + Q copyltu(M)) R^-H (Walter and Lehmann's formula)."""
    if not is_differentiable(a):
        return (None,)
    m, n, p = _qr_sizes(a, mode)
    if m < n or p != n:
        raise NotImplementedError("the gradient of qr is computed for m >= n in reduced mode (as in PyTorch)")
    q, r = _unpacked_qr(out, a, mode)
    grad_q, grad_r = _unpacked_qr(grad, a, mode)
    grad_r = op.where(op.less_equal(positions(grad_r, -2), positions(grad_r, -1)), grad_r, 0)
    mixed = op.subtract(op.matmul(r, adjoint(grad_r)), op.matmul(adjoint(grad_q), q))
    left = op.add(grad_q, op.matmul(q, _copyltu(mixed)))
    return (input_grad(a, op.matmul(left, adjoint(op.inv(r)))),)


@primitive("qr_packed", category="other", meta=_qr_packed_meta, vjp=_qr_vjp)
def qr_packed(xp, a, mode="reduced"):
    """numpy.linalg.qr's Q and R side by side in one array (R's rows padded with zeros
    to Q's), from one LAPACK call."""
    q, r = xp.linalg.qr(a, mode)
    missing = q.shape[-2] - r.shape[-2]
    if missing:
        r = xp.concatenate([r, xp.zeros(r.shape[:-2] + (missing, r.shape[-1]), dtype=r.dtype)], axis=-2)
    return xp.concatenate([q, r], axis=-1)


@composite("qr")
def qr(a, mode="reduced"):
    """numpy.linalg.qr in modes reduced and complete, as a tuple (Q, R) (NumPy's QRResult
    is a named tuple); mode="r" gives R alone, as NumPy does. mode="raw" is not captured."""
    if mode == "r":
        return _unpacked_qr(op.qr_packed(a, "reduced"), a, "reduced")[1]
    return _unpacked_qr(op.qr_packed(a, mode), a, mode)


# -- svd (NOTE(packed-eigh): U, S and Vh stacked) --------------------------------------------
def _svd_sizes(a, full_matrices) -> tuple:
    """(m, n, k, p, q): U is m x p, S has k, Vh is q x n."""
    m, n = a.shape[-2], a.shape[-1]
    if not isinstance(m, int) or not isinstance(n, int):
        raise NotImplementedError("svd needs static matrix sizes")
    k = min(m, n)
    return (m, n, k, m, n) if full_matrices else (m, n, k, k, k)


def _svd_packed_meta(a: TensorMeta, full_matrices=True) -> TensorMeta:
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    m, n, k, p, q = _svd_sizes(a, full_matrices)
    dtype = np.linalg.svd(np.eye(1, dtype=a.dtype))[0].dtype
    return TensorMeta(a.shape[:-2] + (m + 1 + q, max(p, n)), dtype, a.device)


def _unpacked_svd(packed, a, full_matrices):
    m, n, k, p, q = _svd_sizes(a, full_matrices)
    values = op.getitem(packed, (Ellipsis, m, slice(0, k)))
    return (op.getitem(packed, (Ellipsis, slice(0, m), slice(0, p))),
            op.real(values) if np.dtype(packed.dtype).kind == "c" else values,
            op.getitem(packed, (Ellipsis, slice(m + 1, m + 1 + q), slice(0, n))))


def _svd_vjp(grad, out, a, full_matrices=True):
    """PyTorch's svd_backward (distinct singular values, full rank): with E_ij = s_j^2 -
    s_i^2 (1 on the diagonal), core = (skew(U^H gU) s_j + s_i skew(V^H gV)) / E + diag(gS),
    and for a non-square a the part of gU (gV) outside U's (V's) span."""
    if not is_differentiable(a):
        return (None,)
    m, n, k, p, q = _svd_sizes(a, full_matrices)
    if full_matrices and m != n:
        raise NotImplementedError("the gradient of svd with full_matrices=True needs a square matrix "
                                  "(the extra singular vectors are not unique), as in PyTorch")
    u, s, vh = _unpacked_svd(out, a, full_matrices)
    grad_u, grad_s, grad_vh = _unpacked_svd(grad, a, full_matrices)
    skew_u = op.matmul(adjoint(u), grad_u)
    skew_u = op.subtract(skew_u, adjoint(skew_u))
    skew_v = op.matmul(vh, adjoint(grad_vh))
    skew_v = op.subtract(skew_v, adjoint(skew_v))
    on_diagonal = op.equal(positions(skew_u, -2), positions(skew_u, -1))
    squares = op.multiply(s, s)
    gaps = op.where(on_diagonal, 1, op.subtract(op.expand_dims(squares, -2), op.expand_dims(squares, -1)))
    mixed = op.add(op.multiply(skew_u, op.expand_dims(s, -2)), op.multiply(op.expand_dims(s, -1), skew_v))
    core = op.add(op.divide(mixed, gaps), op.where(on_diagonal, op.expand_dims(grad_s, -2), 0))
    if m > n:
        scaled = op.divide(grad_u, op.expand_dims(s, -2))
        outside = op.subtract(scaled, op.matmul(u, op.matmul(adjoint(u), scaled)))
        return (input_grad(a, op.matmul(op.add(op.matmul(u, core), outside), vh)),)
    if m < n:
        scaled = op.divide(grad_vh, op.expand_dims(s, -1))
        outside = op.subtract(scaled, op.matmul(op.matmul(scaled, adjoint(vh)), vh))
        return (input_grad(a, op.matmul(u, op.add(op.matmul(core, vh), outside))),)
    return (input_grad(a, op.matmul(u, op.matmul(core, vh))),)


@primitive("svd_packed", category="other", meta=_svd_packed_meta, vjp=_svd_vjp)
def svd_packed(xp, a, full_matrices=True):
    """numpy.linalg.svd's U, singular values and Vh stacked in one array (rows of U, one
    row of values, rows of Vh, each padded with zeros to the widest), from one LAPACK call."""
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    width = max(u.shape[-1], vh.shape[-1])

    def widened(x):
        missing = width - x.shape[-1]
        return x if not missing else xp.concatenate([x, xp.zeros(x.shape[:-1] + (missing,), dtype=x.dtype)], -1)

    return xp.concatenate([widened(u), widened(xp.expand_dims(s.astype(u.dtype), -2)), widened(vh)], axis=-2)


@composite("svd")
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd: (U, S, Vh) as a tuple (NumPy's SVDResult is a named tuple), or
    the singular values alone with compute_uv=False. hermitian=True is not captured."""
    if hermitian:
        raise NotImplementedError("svd(hermitian=True) is not captured")
    if not compute_uv:
        return _unpacked_svd(op.svd_packed(a, False), a, False)[1]
    return _unpacked_svd(op.svd_packed(a, full_matrices), a, full_matrices)


@composite("svdvals")
def svdvals(x):
    """numpy.linalg.svdvals: the singular values, descending."""
    return _unpacked_svd(op.svd_packed(x, False), x, False)[1]


# -- lstsq (NOTE(packed-eigh): solution, residuals, singular values and rank stacked) --------
# NOTE(lstsq-residuals): numpy.linalg.lstsq gives the residuals (the squared norm of each
# column of b - a x) only when a has more rows than columns (m > n) and full column rank
# (rank n); otherwise an empty array. For m <= n the shapes decide (always empty) and
# the call is captured whole. For m > n only the rank, a value, decides the residuals'
# length (k or 0), which no graph can know: called on arrays (or CuPy arrays) the
# composite reads the rank and gives NumPy's shape; called on graph nodes or tensors it
# raises NotImplementedError, which the frontend makes a graph break saying so.
def _lstsq_sizes(a, b) -> tuple:
    """(m, n, k, p): a is m x n, b has k columns (1 when a vector), p = min(m, n) singular values."""
    sizes = (a.shape[0], a.shape[1], 1 if b.ndim == 1 else b.shape[1])
    if not all(isinstance(size, int) for size in sizes + (b.shape[0],)):
        raise NotImplementedError("lstsq needs static matrix sizes")
    m, n, k = sizes
    return m, n, k, min(m, n)


def _lstsq_packed_meta(a: TensorMeta, b: TensorMeta, rcond=None) -> TensorMeta:
    """NumPy's checks: a a matrix and b a vector or a matrix (no stacks), as many rows."""
    for matrix in (a, b if b.ndim != 1 else a):
        if matrix.ndim != 2:
            raise np.linalg.LinAlgError(f"{matrix.ndim}-dimensional array given. Array must be two-dimensional")
    if a.shape[0] != b.shape[0]:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    m, n, k, p = _lstsq_sizes(a, b)
    dtype = np.linalg.lstsq(np.eye(1, dtype=a.dtype), np.ones(1, dtype=b.dtype))[0].dtype
    return TensorMeta((n + 3, max(k, p, 1)), dtype, device_of(a, b))


def _real_part(x):
    return op.real(x) if np.dtype(x.dtype).kind == "c" else x


def _lstsq_parts(packed, a, b) -> tuple:
    """(x as columns, the residuals' row, the singular values, the rank) of a packed lstsq."""
    m, n, k, p = _lstsq_sizes(a, b)
    return (op.getitem(packed, (slice(0, n), slice(0, k))), _real_part(op.getitem(packed, (n, slice(0, k)))),
            _real_part(op.getitem(packed, (n + 1, slice(0, p)))), _real_part(op.getitem(packed, (n + 2, 0))))


def _gradient_of(value, grad):
    """input_grad, keeping the real part of a complex gradient of a real input."""
    if is_differentiable(value) and np.dtype(value.dtype).kind != "c":
        grad = _real_part(grad)
    return input_grad(value, grad)


def _lstsq_vjp(grad, out, a, b, rcond=None):
    """Where a has full column rank (m >= n; torch.linalg.lstsq's gradient there): with
    x = (a^H a)^-1 a^H b, r = b - a x and z = (a^H a)^-1 gX, gb = a z and ga = r z^H -
    a z x^H; each residual sum |r_j|^2 adds 2 r_j g_j to gb and -2 r_j g_j x_j^H to ga
    (a x_j is closest to b_j: x's own change adds nothing); the singular values add
    U diag(gS) V^H, as svd's derivative does; the rank is piecewise constant."""
    if not (is_differentiable(a) or is_differentiable(b)):
        return None, None
    m, n, k, p = _lstsq_sizes(a, b)
    if m < n:
        raise NotImplementedError("the gradient of lstsq is computed where a has full column rank (m >= n)")
    x, _, _, _ = _lstsq_parts(out, a, b)
    grad_x, grad_residuals, grad_values, _ = _lstsq_parts(grad, a, b)
    columns = op.reshape(b, (m, 1)) if b.ndim == 1 else b
    residual = op.subtract(columns, op.matmul(a, x))
    z = op.solve(op.matmul(adjoint(a), a), grad_x)
    grad_b, grad_a = op.matmul(a, z), op.subtract(op.matmul(residual, adjoint(z)), op.matmul(op.matmul(a, z), adjoint(x)))
    if m > n:
        weighted = op.multiply(residual, op.multiply(op.expand_dims(grad_residuals, 0), 2.0))
        grad_b = op.add(grad_b, weighted)
        grad_a = op.subtract(grad_a, op.matmul(weighted, adjoint(x)))
    u, _, vh = op.svd(a, full_matrices=False)
    grad_a = op.add(grad_a, op.matmul(op.multiply(u, op.expand_dims(grad_values, 0)), vh))
    if b.ndim == 1:
        grad_b = op.reshape(grad_b, (m,))
    return _gradient_of(a, grad_a), _gradient_of(b, grad_b)


@primitive("lstsq_packed", category="other", meta=_lstsq_packed_meta, vjp=_lstsq_vjp)
def lstsq_packed(xp, a, b, rcond=None):
    """numpy.linalg.lstsq's results from one LAPACK call (gelsd), as rows of one array in
    the solution's dtype: x (n rows of k), the residuals (zeros where NumPy gives none),
    the singular values, the rank; each row padded with zeros."""
    x, residuals, rank, values = xp.linalg.lstsq(a, b, rcond=rcond)
    n, k, p = a.shape[1], 1 if b.ndim == 1 else b.shape[1], min(a.shape)
    packed = xp.zeros((n + 3, max(k, p, 1)), dtype=x.dtype)
    packed[:n, :k] = x.reshape(n, k)
    packed[n, :residuals.shape[0]] = residuals
    packed[n + 1, :p] = values
    packed[n + 2, 0] = rank
    return packed


@composite("lstsq")
def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq: (x, residuals, rank, singular values) as a tuple, the rank an
    int32 scalar; the residuals' length as NumPy gives it (NOTE(lstsq-residuals))."""
    packed = op.lstsq_packed(a, b, rcond)
    m, n, k, p = _lstsq_sizes(a, b)
    x, residuals, values, rank = _lstsq_parts(packed, a, b)
    rank = op.astype(rank, np.int32)
    if b.ndim == 1:
        x = op.reshape(x, (n,))
    if m > n:
        if hasattr(type(rank), "__pyjit_dispatch__"):
            raise NotImplementedError("with more rows than columns, the length of its residuals depends on the "
                                      "rank the values give (NOTE(lstsq-residuals))")
        full_rank = int(rank) == n
    else:
        full_rank = False
    return x, (residuals if full_rank else op.getitem(residuals, slice(0, 0))), rank, values


# -- norm (a decomposition) ---------------------------------------------------------------
def _norm_axes(x, ord, axis) -> tuple[int, ...]:
    """The axes norm reduces, in the order given, with NumPy's checks: one axis is a
    vector norm, two a matrix norm (rows, columns); axis=None with an order is the norm
    of a 1-D or 2-D x."""
    if axis is None:
        if ord is not None and x.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        return tuple(range(x.ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(axes) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    normalized = tuple(normalize_axis(each, x.ndim) for each in axes)
    if len(set(normalized)) != len(normalized):
        raise ValueError("Duplicate axes given.")
    return normalized


def _vector_norm(magnitude, ord, axes, keepdims):
    if ord is None or ord == 2:
        return op.sqrt(op.sum(op.multiply(magnitude, magnitude), axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return op.max(magnitude, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return op.min(magnitude, axis=axes, keepdims=keepdims)
    if ord == 0:
        return op.astype(op.sum(op.not_equal(magnitude, 0), axis=axes, keepdims=keepdims), magnitude.dtype)
    if ord == 1:
        return op.sum(magnitude, axis=axes, keepdims=keepdims)
    powered = op.sum(op.power(magnitude, float(ord)), axis=axes, keepdims=keepdims)
    return op.power(powered, 1.0 / float(ord))


def _matrix_norm(x, magnitude, ord, axes, keepdims):
    """NumPy's matrix norms: Frobenius, the largest (smallest) absolute column sum (ord 1,
    -1) or row sum (inf, -inf), and from the singular values the largest (2), the
    smallest (-2) or their sum (nuclear)."""
    rows, columns = axes
    if ord in (None, "fro"):
        return op.sqrt(op.sum(op.multiply(magnitude, magnitude), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, kept = (rows, columns) if ord in (1, -1) else (columns, rows)
        sums = op.sum(magnitude, axis=summed, keepdims=True)
        extreme = op.max if ord in (1, np.inf) else op.min
        result = extreme(sums, axis=kept, keepdims=True)
        return result if keepdims else op.squeeze(result, axis=axes)
    if ord in (2, -2, "nuc"):
        others = [axis for axis in range(x.ndim) if axis not in axes]
        values = op.svdvals(op.transpose(x, tuple(others) + (rows, columns)))
        result = {2: op.max, -2: op.min, "nuc": op.sum}[ord](values, axis=-1)
        return op.reshape(result, reduced_shape(tuple(x.shape), tuple(sorted(axes)), True)) if keepdims else result
    raise ValueError("Invalid norm order for matrices.")


@composite("norm")
def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: vector norms over one axis (or of a flattened x with axis and
    ord None), matrix norms over two, from the magnitudes |x| (x as float64 when it
    is an integer or bool array, as NumPy converts it). Sums are added in another order
    than NumPy's dot, so results agree to rounding."""
    axes = _norm_axes(x, ord, axis)
    if np.dtype(x.dtype).kind in "biu":
        x = op.astype(x, np.float64)
    magnitude = op.abs(x)
    if len(axes) == 2 and (axis is not None or ord is not None):
        return _matrix_norm(x, magnitude, ord, axes, keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return _vector_norm(magnitude, ord, axes, keepdims)
