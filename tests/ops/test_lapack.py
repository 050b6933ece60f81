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
                 ("slogdet_packed", [conditioned(3, (2,), dtype="complex128")]),
                 ("lstsq_packed", [conditioned(4, dtype="complex128")[:, :2].copy(), np.array([1.0 - 1j, 0.5j, 2.0, 1j])])]


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


# -- lstsq (NOTE(lstsq-residuals)) ------------------------------------------------------------
TALL = np.array([[2.0, 1.0, 0.5], [0.25, 3.0, 1.0], [1.0, 0.5, 4.0], [1.5, -1.0, 0.5], [0.5, 2.0, -1.0]])


def rank_deficient_tall():
    a = TALL.copy()
    a[:, 2] = a[:, 1]
    return a


@pytest.mark.parametrize("a", [TALL, rank_deficient_tall()], ids=["full rank", "rank deficient"])
@pytest.mark.parametrize("b", [np.arange(5.0), np.arange(10.0).reshape(5, 2)], ids=["vector", "matrix"])
def test_lstsq_of_a_tall_matrix_on_arrays_gives_numpys_residuals_as_the_rank_decides(a, b):
    got, want = REGISTRY["lstsq"](a, b), np.linalg.lstsq(a, b)
    assert [type(value) for value in got] == [type(value) for value in want]
    assert [np.shape(value) for value in got] == [np.shape(value) for value in want]
    for one, other in zip(got, want):
        np.testing.assert_array_equal(one, other)


def test_lstsq_of_a_tall_matrix_in_a_graph_is_not_modelled():
    """The residuals' length would be a value of the graph (NotImplementedError: a break for the frontend)."""
    with pytest.raises(NotImplementedError, match="residuals depends on the rank"):
        graph_of("lstsq", TALL, np.ones(5))


def test_lstsq_solution_gradient_matches_torch():
    """torch.linalg.lstsq's gradient of the solution for a full-column-rank matrix (its
    default CPU driver computes no residuals), through the solution's rows of the pack."""
    torch = pytest.importorskip("torch")
    b = np.arange(10.0).reshape(5, 2) / 3
    grad_x = np.array([[1.0, -0.5], [0.25, 2.0], [-1.0, 0.75]])
    packed = REGISTRY["lstsq_packed"](TALL, b)
    grad_packed = np.zeros_like(packed)
    grad_packed[:3, :2] = grad_x
    grad_a, grad_b = REGISTRY["lstsq_packed"].vjp(grad_packed, packed, TALL, b)
    a_t, b_t = torch.tensor(TALL, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.linalg.lstsq(a_t, b_t).solution.backward(torch.tensor(grad_x))
    np.testing.assert_allclose(grad_a, a_t.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad_b, b_t.grad.numpy(), rtol=1e-10, atol=1e-12)
