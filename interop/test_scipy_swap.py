"""Real scipy.sparse code run twice: once on scipy.sparse arrays, once with
the BCOOArray swapped in (the only change is the array type and the module
that provides ``diags_array``). Results must equal scipy's within 1e-10
relative (float64), on the SuiteSparse matrices in shared/data/matrices.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import bcoo_array as xp

RTOL = 1e-10


def both(S):
    """The scipy original and the swapped-in BCOOArray, with their modules."""
    return [(S, sp), (xp.asarray(S), xp)]


# -- the scipy code under test (written once, run on both types) ------------------------


def pagerank(A, sparse, alpha=0.85, tol=1e-15, maxiter=500):
    """PageRank by power iteration on the graph with adjacency ``A`` (dangling nodes spread uniformly)."""
    n = A.shape[0]
    W = abs(A)
    out = np.asarray(W.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    P = sparse.diags_array(inv) @ W  # row-stochastic on non-dangling rows
    PT = P.T
    x = np.full(n, 1.0 / n)
    for _ in range(maxiter):
        x_new = alpha * PT.dot(x) + (alpha * x[dangling].sum() + 1.0 - alpha) / n
        if np.abs(x_new - x).sum() < tol:
            return x_new
        x = x_new
    return x


def laplacian_smallest(A, sparse, k=4):
    """Smallest eigenpairs of the graph Laplacian ``D - A`` of the symmetrised pattern (ARPACK via eigsh)."""
    G = abs(A) + abs(A).T
    deg = np.asarray(G.sum(axis=1)).ravel()
    L = sparse.diags_array(deg) - G
    v0 = np.linspace(1.0, 2.0, A.shape[0])
    return sla.eigsh(L, k=k, which="SA", v0=v0, tol=1e-14)


def solve_cg(A, sparse, b):
    """Jacobi-preconditioned conjugate gradients."""
    M = sparse.diags_array(1.0 / A.diagonal())
    x, info = sla.cg(A, b, rtol=1e-14, atol=0.0, M=M, maxiter=20 * A.shape[0])
    return x, info


def least_squares(A, b):
    """Least-squares solution by LSQR."""
    return sla.lsqr(A, b, atol=1e-15, btol=1e-15, iter_lim=20 * max(A.shape))[0]


def tfidf_normalize(C, sparse):
    """TF-IDF weighting of a document-term count matrix, then rows scaled to unit length."""
    n_docs = C.shape[0]
    df = np.asarray((C != 0).sum(axis=0)).ravel()
    idf = np.log((1.0 + n_docs) / (1.0 + df)) + 1.0
    X = C @ sparse.diags_array(idf)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags_array(1.0 / norms) @ X


# -- the comparisons --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["karate.mtx", "west0067.mtx", "cage11.mtx.gz"])
def test_pagerank(load_matrix, name):
    (S, sps), (A, xps) = both(load_matrix(name))
    want = pagerank(S, sps)
    got = pagerank(A, xps)
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert abs(got.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("name", ["karate.mtx", "west0067.mtx"])
def test_laplacian_eigenpairs(load_matrix, name):
    (S, sps), (A, xps) = both(load_matrix(name))
    w_s, V_s = laplacian_smallest(S, sps)
    w_x, V_x = laplacian_smallest(A, xps)
    scale = np.abs(w_s).max()
    np.testing.assert_allclose(w_x, w_s, rtol=RTOL, atol=RTOL * scale)
    # Eigenvectors agree up to sign (the eigenvalues found are simple).
    assert np.all(np.diff(w_s) > 1e-6 * scale)
    overlap = np.abs(np.sum(V_x * V_s, axis=0))
    np.testing.assert_allclose(overlap, 1.0, rtol=RTOL)


@pytest.mark.parametrize("name", ["494_bus.mtx", "bcsstk13.mtx.gz"])
def test_cg_on_spd(load_matrix, name):
    S = load_matrix(name)
    b = np.cos(np.arange(S.shape[0], dtype=np.float64))
    (S, sps), (A, xps) = both(S)
    x_s, info_s = solve_cg(S, sps, b)
    x_x, info_x = solve_cg(A, xps, b)
    assert info_x == info_s
    np.testing.assert_allclose(x_x, x_s, rtol=RTOL, atol=RTOL * np.abs(x_s).max())


@pytest.mark.parametrize("name", ["lp_afiro.mtx", "ash219.mtx", "lpi_galenet.mtx"])
def test_lsqr_on_rectangular(load_matrix, name):
    S = load_matrix(name).astype(np.float64)
    b = np.sin(np.arange(S.shape[0], dtype=np.float64)) + 1.0
    want = least_squares(S, b)
    got = least_squares(xp.asarray(S), b)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * np.abs(want).max())


@pytest.mark.parametrize("name", ["ash219.mtx", "lp_afiro.mtx", "nh2010.mtx.gz"])
def test_tfidf_row_normalisation(load_matrix, name):
    C = abs(load_matrix(name)).astype(np.float64)  # non-negative "counts"
    (S, sps), (A, xps) = both(C)
    want = tfidf_normalize(S, sps)
    got = tfidf_normalize(A, xps)
    assert got.shape == want.shape
    w = want.tocsr()
    g = got.tocsr()
    w.sum_duplicates()
    g.sum_duplicates()
    np.testing.assert_array_equal(g.indptr, w.indptr)
    np.testing.assert_array_equal(g.indices, w.indices)
    np.testing.assert_allclose(g.data, w.data, rtol=RTOL)


@pytest.mark.parametrize("name", ["west0067.mtx", "young1c.mtx", "lpi_galenet.mtx", "bayer10.mtx.gz"])
def test_npz_round_trip_between_libraries(load_matrix, tmp_path, name):
    S = load_matrix(name)
    sp.save_npz(tmp_path / "scipy.npz", S)
    A = xp.load_npz(tmp_path / "scipy.npz")
    assert A.nnz == S.nnz and A.dtype == S.dtype  # bayer10's explicit zeros survive
    xp.save_npz(tmp_path / "bcoo.npz", A, format="csr")
    back = sp.load_npz(tmp_path / "bcoo.npz")
    assert back.format == "csr" and back.dtype == S.dtype and back.nnz == S.nnz
    np.testing.assert_array_equal(back.indptr, S.indptr)
    np.testing.assert_array_equal(back.indices, S.indices)
    np.testing.assert_array_equal(back.data, S.data)
