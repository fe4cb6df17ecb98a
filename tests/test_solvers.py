"""bcoo_array.linalg solvers against dense NumPy: cg, gmres, bicgstab,
lobpcg (largest and smallest), spsolve; preconditioners, jit, errors.
eigsh against scipy's eigsh on the CSR copy (shift-invert on 494_bus and on
synthetic ill-conditioned matrices, the generalized problem, its modes)."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import bcoo_array as xp
from bcoo_array import linalg as xla


def spd(n=30):
    """1-D Laplacian plus the identity (SPD, well conditioned), with an unsorted, duplicated pattern."""
    L = sp.diags_array([-np.ones(n - 1), 3 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1]).tocoo()
    rows = np.concatenate([L.row, [0, 0]])
    cols = np.concatenate([L.col, [0, 0]])
    vals = np.concatenate([L.data, [0.5, -0.5]])
    perm = np.random.default_rng(0).permutation(rows.size)
    return sp.coo_array((vals[perm], (rows[perm], cols[perm])), shape=(n, n))


def test_krylov_solvers_match_dense():
    S = spd()
    A = xp.asarray(S)
    b = np.sin(np.arange(30.0))
    want = np.linalg.solve(S.toarray(), b)
    for solver in (xla.cg, xla.bicgstab, xla.gmres):
        x, info = solver(A, b, tol=1e-13)
        assert info is None or int(info) == 0
        np.testing.assert_allclose(np.asarray(x), want, rtol=1e-9, atol=1e-12, err_msg=solver.__name__)
    # A non-symmetric system for the general solvers.
    N = S + sp.diags_array([0.3 * np.ones(29)], offsets=[1])
    want = np.linalg.solve(N.toarray(), b)
    for solver in (xla.bicgstab, xla.gmres):
        x, _ = solver(xp.asarray(N), b, tol=1e-13)
        np.testing.assert_allclose(np.asarray(x), want, rtol=1e-9, atol=1e-12)


def test_preconditioner_and_jit():
    S = spd()
    A = xp.asarray(S)
    M = xp.diags_array(1.0 / S.diagonal())
    b = np.ones(30)
    want = np.linalg.solve(S.toarray(), b)
    x, _ = xla.cg(A, b, tol=1e-13, M=M)
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-9)
    x = jax.jit(lambda A, b: xla.cg(A, b, tol=1e-13)[0])(A, jnp.asarray(b))
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-9)


def test_lobpcg_extreme_eigenpairs():
    S = spd(60)
    A = xp.asarray(S)
    w = np.linalg.eigvalsh(S.toarray())
    X = np.random.default_rng(1).standard_normal((60, 3))
    theta, U, it = xla.lobpcg(A, X, maxiter=300, tol=1e-10)
    np.testing.assert_allclose(np.asarray(theta), w[::-1][:3], rtol=1e-7)
    res = S @ np.asarray(U) - np.asarray(U) * np.asarray(theta)
    assert np.linalg.norm(res) < 1e-5
    theta, U, _ = xla.lobpcg(A, X, maxiter=300, tol=1e-10, largest=False)
    np.testing.assert_allclose(np.asarray(theta), w[:3], rtol=1e-7)


def test_spsolve():
    S = spd() + sp.diags_array([0.2 * np.ones(29)], offsets=[-1])
    b = np.arange(30.0)
    x = xla.spsolve(xp.asarray(S), b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(S.toarray(), b), rtol=1e-10)


def test_errors():
    A = xp.asarray(spd())
    with pytest.raises(ValueError, match="square"):
        xla.cg(xp.asarray(np.ones((2, 3))), np.ones(2))
    with pytest.raises(TypeError, match="floating"):
        xla.cg(xp.asarray(np.eye(2, dtype=np.int32)), np.ones(2))
    with pytest.raises(TypeError, match="BCOOArray"):
        xla.gmres(np.eye(2), np.ones(2))
    with pytest.raises(ValueError, match="b has shape"):
        xla.bicgstab(A, np.ones(3))
    with pytest.raises(ValueError, match="5 \\* k"):
        xla.lobpcg(A, np.ones((30, 7)))
    with pytest.raises(ValueError, match="fill value"):
        xla.spsolve(xp.add(A, 1.0), np.ones(30))
    with pytest.raises(ValueError, match="preconditioner"):
        xla.cg(A, np.ones(30), M=xp.asarray(np.eye(2)))


# -- eigsh: ARPACK through scipy, shift-invert by a sparse LU ---------------------------------

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"


def _same_eigenpairs(got, want, rtol=1e-10):
    """Eigenvalues to ``rtol``; eigenvectors up to sign (normalised columns)."""
    (w, V), (w0, V0) = got, want
    assert isinstance(w, np.ndarray) and isinstance(V, np.ndarray)
    np.testing.assert_allclose(w, w0, rtol=rtol, atol=rtol * np.abs(w0).max())
    sign = np.sign(np.sum(np.conj(V0) * V, axis=0).real)
    np.testing.assert_allclose(V * sign, V0, atol=1e-7)


def _laplacian(n):
    return sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1]).tocsr()


def _graded(n=60):
    """Symmetric positive definite, condition number about 5e6: a Laplacian coupling of a graded diagonal."""
    return (1e-3 * _laplacian(n) + sp.diags_array(np.logspace(-7, 2, n))).tocsr()


@pytest.mark.skipif(not (MATRICES / "494_bus.mtx").exists(), reason="shared matrices not available")
def test_eigsh_shift_invert_494_bus():
    # scipy's eigsh(A, sigma=0) on the BCOOArray inverts A by GMRES, which does not converge on
    # this ill-conditioned matrix (cond ~ 2e6); xla.eigsh factorizes it as scipy does for a CSR.
    import scipy.io
    import scipy.sparse.linalg as sla

    S = sp.csr_array(scipy.io.mmread(MATRICES / "494_bus.mtx"))
    A = xp.asarray(S)
    v0 = np.ones(S.shape[0])
    want = sla.eigsh(S, k=3, sigma=0, v0=v0)
    _same_eigenpairs(xla.eigsh(A, k=3, sigma=0, v0=v0), want, rtol=1e-12)
    np.testing.assert_allclose(want[0], np.linalg.eigvalsh(S.toarray())[:3], rtol=1e-9)
    w = xla.eigsh(A, k=3, sigma=0.1, which="LM", v0=v0, return_eigenvectors=False)
    np.testing.assert_allclose(w, sla.eigsh(S, k=3, sigma=0.1, v0=v0, return_eigenvectors=False), rtol=1e-12)


def test_eigsh_shift_invert_ill_conditioned():
    import scipy.sparse.linalg as sla

    S = _graded()
    A = xp.asarray(S)
    v0 = np.linspace(1.0, 2.0, S.shape[0])
    assert np.linalg.cond(S.toarray()) > 1e6
    with pytest.raises(ValueError, match="did not converge"):
        sla.eigsh(A, k=3, sigma=0, v0=v0)  # scipy's GMRES inverse: the failure eigsh avoids
    want = sla.eigsh(S, k=3, sigma=0, v0=v0)
    _same_eigenpairs(xla.eigsh(A, k=3, sigma=0, v0=v0), want)
    np.testing.assert_allclose(want[0], np.linalg.eigvalsh(S.toarray())[:3], rtol=1e-8)
    # an indefinite shift of the 1-D Laplacian (GMRES stalls there too), and the other modes
    L = _laplacian(60)
    v0 = np.linspace(1.0, 2.0, 60)
    for kw in ({"sigma": 0.5}, {"sigma": 0.5, "which": "LA"}, {"sigma": 0.5, "mode": "cayley"},
               {"sigma": -0.5, "mode": "buckling", "which": "LA"}):
        _same_eigenpairs(xla.eigsh(xp.asarray(L), k=3, v0=v0, **kw), sla.eigsh(L, k=3, v0=v0, **kw))


def test_eigsh_generalized_and_plain():
    import scipy.sparse.linalg as sla

    L = _laplacian(80)
    Mass = sp.diags_array(np.linspace(1.0, 3.0, 80)).tocsr()
    v0 = np.linspace(1.0, 2.0, 80)
    for kw in ({}, {"which": "SA"}, {"M": Mass}, {"M": Mass, "sigma": 0.3}, {"M": Mass, "sigma": 0}):
        want = sla.eigsh(L, k=4, v0=v0, **kw)
        for m in ((xp.asarray(Mass), Mass, Mass.toarray()) if "M" in kw else (None,)):
            got_kw = dict(kw, M=m) if m is not None else kw
            _same_eigenpairs(xla.eigsh(xp.asarray(L), k=4, v0=v0, **got_kw), want, rtol=1e-9)
    # OPinv given: passed to scipy as is
    lu = sla.splu(L.tocsc())
    op = sla.LinearOperator(L.shape, matvec=lu.solve, dtype=L.dtype)
    _same_eigenpairs(xla.eigsh(xp.asarray(L), k=2, sigma=0, OPinv=op, v0=v0), sla.eigsh(L, k=2, sigma=0, v0=v0))


def test_eigsh_complex_hermitian_and_float32():
    import scipy.sparse.linalg as sla

    n = 40
    L = _laplacian(n).astype(np.complex128)
    H = (L + sp.diags_array([0.3j * np.ones(n - 1), -0.3j * np.ones(n - 1)], offsets=[1, -1])).tocsr()
    v0 = np.linspace(1.0, 2.0, n).astype(np.complex128)
    w, V = xla.eigsh(xp.asarray(H), k=3, sigma=0.1, v0=v0)
    w0, V0 = sla.eigsh(H, k=3, sigma=0.1, v0=v0)
    np.testing.assert_allclose(np.sort(w), np.sort(w0), rtol=1e-10)
    dense = np.linalg.eigvalsh(H.toarray())
    np.testing.assert_allclose(np.sort(w), np.sort(dense[np.argsort(np.abs(dense - 0.1))[:3]]), rtol=1e-10)
    np.testing.assert_allclose(H @ V, V * w, atol=1e-9)
    L32 = _laplacian(n).astype(np.float32)
    w32 = xla.eigsh(xp.asarray(L32), k=2, sigma=0, v0=np.ones(n, np.float32), return_eigenvectors=False)
    np.testing.assert_allclose(w32, sla.eigsh(L32, k=2, sigma=0, v0=np.ones(n, np.float32),
                                              return_eigenvectors=False), rtol=1e-5)


def test_eigsh_errors():
    A = xp.asarray(_laplacian(10))
    with pytest.raises(TypeError, match="BCOOArray"):
        xla.eigsh(_laplacian(10), k=2)
    with pytest.raises(ValueError, match="square"):
        xla.eigsh(xp.asarray(np.ones((3, 4))), k=1)
    with pytest.raises(TypeError, match="floating"):
        xla.eigsh(xp.asarray(np.eye(5, dtype=np.int64)), k=1)
    with pytest.raises(TypeError, match="eigvalsh"):
        xla.eigsh(A, k=10)
    with pytest.raises(ValueError, match="fill value"):
        xla.eigsh(xp.add(A, 1.0), k=2, sigma=0)
    with pytest.raises(RuntimeError, match="singular"):
        xla.eigsh(xp.asarray(sp.diags_array(np.arange(10.0)).tocsr()), k=2, sigma=0)


@pytest.mark.parametrize("solver", ["cg", "bicgstab"])
def test_krylov_info_as_scipy(solver):
    """Issue 29: info is 0 when converged, else the iterations run (scipy's convention; scipy is the oracle)."""
    import scipy.sparse.linalg as sla

    S = spd(40).tocsr()
    A = xp.from_scipy(S)
    b = np.ones(40)
    for maxiter in (2, None):
        x, info = getattr(xla, solver)(A, b, maxiter=maxiter)
        _, want = getattr(sla, solver)(S, b, maxiter=maxiter)
        assert int(info) == int(want), (maxiter, int(info), want)
    assert int(jax.jit(lambda A, b: getattr(xla, solver)(A, b, maxiter=3)[1])(A, b)) == 3


def test_krylov_refuses_mixed_precision():
    A = xp.from_scipy(spd(10))
    with pytest.raises(TypeError, match=r"b has dtype float32 .*b\.astype\(float64\)"):
        xla.cg(A, np.ones(10, np.float32))
    with pytest.raises(TypeError, match=r"x0 has dtype float32 .*x0\.astype\(float64\)"):
        xla.cg(A, np.ones(10), x0=np.zeros(10, np.float32))
    x, info = xla.cg(A, np.ones(10, np.int64))  # integers take A's dtype
    assert x.dtype == np.float64 and int(info) == 0
