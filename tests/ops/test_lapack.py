"""numpy.linalg's solve, inv, det and cholesky (pyjit/ops/lapack.py): what only the values
decide (a singular matrix, one that is not positive definite) is NumPy's LinAlgError
when the graph runs; and the VJPs for complex matrices, which the generated tests leave
out, against finite differences in the real and imaginary parts."""

import numpy as np
import pytest
from op_samples.finite_differences import complex_numerical_vjp
from op_samples.lapack import conditioned, positive_definite

from pyjit.graph import Graph, GraphModule, TensorMeta
from pyjit.ops import REGISTRY

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def graph_of(name, *args, **kwargs):
    graph = Graph()
    placeholders = [graph.placeholder(f"a{index}", TensorMeta.of(arg)) for index, arg in enumerate(args)]
    graph.output(REGISTRY[name](*placeholders, **kwargs))
    return GraphModule(graph)


@pytest.mark.parametrize(("name", "args"), [("solve", (SINGULAR, np.ones(2))), ("inv", (SINGULAR,)),
                                            ("cholesky", (-np.eye(3),)), ("cholesky", (SINGULAR - 3 * np.eye(2),))])
def test_what_the_values_decide_raises_linalg_error_when_the_graph_runs(name, args):
    module = graph_of(name, *args)  # the meta rule sees shapes only: the graph is made
    with pytest.raises(np.linalg.LinAlgError):
        getattr(np.linalg, name)(*args)
    with pytest.raises(np.linalg.LinAlgError):
        module(*args)


def test_the_determinant_of_a_singular_matrix_is_zero_as_in_numpy():
    assert graph_of("det", SINGULAR)(SINGULAR) == np.linalg.det(SINGULAR) == 0.0


def test_the_slogdet_of_a_singular_matrix_is_numpys_zero_and_minus_infinity():
    packed = graph_of("slogdet_packed", SINGULAR)(SINGULAR)
    assert packed.tolist() == list(np.linalg.slogdet(SINGULAR)) == [0.0, -np.inf]


COMPLEX_CALLS = [("solve", [conditioned(3, dtype="complex128"), conditioned(3, dtype="complex128")[:, :2].copy()]),
                 ("solve", [conditioned(2, (2,), dtype="complex128"), np.array([1.0 - 1j, 0.5j])]),
                 ("inv", [conditioned(3, dtype="complex128")]), ("det", [conditioned(3, (2,), dtype="complex128")]),
                 ("cholesky", [positive_definite(3, dtype="complex128")]),
                 ("qr_packed", [conditioned(3, dtype="complex128")[:, :2].copy()]),
                 ("qr_packed", [conditioned(3, (2,), dtype="complex128")]),
                 ("slogdet_packed", [conditioned(3, (2,), dtype="complex128")])]


@pytest.mark.parametrize(("name", "args"), COMPLEX_CALLS, ids=[name for name, _ in COMPLEX_CALLS])
def test_complex_vjp_matches_finite_differences_in_real_and_imaginary_parts(name, args):
    entry = REGISTRY[name]
    out = entry(*args)
    rng = np.random.default_rng(2)
    cotangent = rng.uniform(-1, 1, np.shape(out)) + 1j * rng.uniform(-1, 1, np.shape(out))
    analytic = entry.vjp(cotangent, out, *args)
    for index in range(len(args)):
        numeric = complex_numerical_vjp(entry, args, index, cotangent)
        np.testing.assert_allclose(analytic[index], numeric, rtol=1e-6, atol=1e-7, err_msg=f"argument {index}")


def test_complex_eigh_vjp_matches_finite_differences_of_a_phase_free_loss():
    """Complex eigenvectors are defined up to a phase each, so the loss reads them through
    |v|^2: L = Re(sum(conj(gw) w)) + sum(gv |V|^2), whose gradient with respect to V is
    2 gv V (PyTorch's convention)."""
    a = positive_definite(3, dtype="complex128")
    rng = np.random.default_rng(4)
    grad_values, grad_squares = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (3, 3))
    packed = REGISTRY["eigh_packed"](a)
    grad_packed = np.concatenate([grad_values[None, :].astype(complex), 2 * grad_squares * packed[1:]])
    (analytic,) = REGISTRY["eigh_packed"].vjp(grad_packed, packed, a)

    def loss_terms(matrix):
        values, vectors = np.linalg.eigh(matrix)
        return np.concatenate([values, (np.abs(vectors) ** 2).reshape(-1)])

    cotangent = np.concatenate([grad_values, grad_squares.reshape(-1)])
    numeric = complex_numerical_vjp(loss_terms, [a], 0, cotangent)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_complex_svd_vjp_matches_finite_differences_of_a_phase_free_loss(shape):
    """Singular vectors are defined up to a phase shared by u_i and v_i, so the loss reads
    them through |.|^2 (gradient 2 g U, as for eigh)."""
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)
    packed = REGISTRY["svd_packed"](a, False)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    grad_s, grad_u2, grad_vh2 = rng.uniform(-1, 1, s.shape), rng.uniform(-1, 1, u.shape), rng.uniform(-1, 1, vh.shape)
    grad_packed = np.zeros_like(packed)
    m, k = u.shape
    grad_packed[:m, :k], grad_packed[m, :k], grad_packed[m + 1:, :vh.shape[1]] = 2 * grad_u2 * u, grad_s, 2 * grad_vh2 * vh
    (analytic,) = REGISTRY["svd_packed"].vjp(grad_packed, packed, a, False)

    def loss_terms(matrix):
        u, s, vh = np.linalg.svd(matrix, full_matrices=False)
        return np.concatenate([s, (np.abs(u) ** 2).reshape(-1), (np.abs(vh) ** 2).reshape(-1)])

    cotangent = np.concatenate([grad_s, grad_u2.reshape(-1), grad_vh2.reshape(-1)])
    numeric = complex_numerical_vjp(loss_terms, [a], 0, cotangent)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)
