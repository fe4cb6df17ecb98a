"""bcoo_array.linalg solvers against dense NumPy: cg, gmres, bicgstab,
lobpcg (largest and smallest), spsolve; preconditioners, jit, errors."""

from __future__ import annotations

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
