"""The scipy.sparse drop-in surface: methods, the LinearOperator protocol and
module functions, each compared with scipy.sparse (sparray semantics) on the
same values; argmax/argmin against NumPy on the dense array."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray

ROOT = Path(__file__).resolve().parents[1]


def messy(m=7, n=5, seed=0, dtype=np.float64):
    """A coo_array with duplicates, an explicit zero, an empty row and negative values."""
    rng = np.random.default_rng(seed)
    k = 14
    rows = rng.integers(0, m - 1, k)  # last row stays empty
    cols = rng.integers(0, n, k)
    vals = rng.integers(-4, 5, k).astype(dtype)
    rows = np.append(rows, [0, 0])
    cols = np.append(cols, [n - 1, n - 1])
    vals = np.append(vals, [0, 0]).astype(dtype)  # explicit zero (summed duplicate of zeros)
    return sp.coo_array((vals, (rows, cols)), shape=(m, n))


@pytest.fixture(scope="module")
def pair():
    S = messy().tocsr()
    S.sum_duplicates()
    return S, xp.asarray(S)


def test_attributes_and_conversions(pair):
    S, A = pair
    assert A.format == "bcoo"
    assert A.nnz == S.nnz  # explicit zero counted, as scipy
    assert A.has_canonical_format and A.has_sorted_indices
    np.testing.assert_array_equal(A.toarray(), S.toarray())
    out = np.empty(S.shape)
    assert A.toarray(out=out) is out
    for meth in ("tocoo", "tocsr", "tocsc", "tobsr", "todok", "tolil"):
        res = getattr(A, meth)()
        assert res.format == meth[2:]
        np.testing.assert_array_equal(res.toarray(), S.toarray())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        np.testing.assert_array_equal(A.todia().toarray(), S.toarray())
    assert A.astype(np.float32).dtype == np.float32
    C = A.copy()
    assert C is not A and np.array_equal(C.toarray(), A.toarray())
    np.testing.assert_array_equal(A.T.toarray(), S.T.toarray())
    np.testing.assert_array_equal(A.transpose().toarray(), S.transpose().toarray())
    np.testing.assert_array_equal(A.reshape((5, 7)).toarray(), S.reshape((5, 7)).toarray())
    np.testing.assert_array_equal(A.reshape(35, 1).toarray(), S.reshape(35, 1).toarray())
    U = xp.asarray(messy(seed=1))
    assert not U.has_canonical_format
    assert U.sum_duplicates().has_canonical_format and U.sorted_indices().has_sorted_indices


def test_products(pair):
    S, A = pair
    v = np.arange(5.0)
    X = np.arange(15.0).reshape(5, 3)
    np.testing.assert_allclose(A.dot(v), S.dot(v), rtol=1e-14)
    assert isinstance(A.dot(v), np.ndarray)
    np.testing.assert_allclose(A.dot(X), S.dot(X), rtol=1e-14)
    np.testing.assert_allclose(A.dot(S.T).toarray(), S.dot(S.T).toarray(), rtol=1e-14)
    np.testing.assert_allclose(A.dot(A.T).toarray(), (S @ S.T).toarray(), rtol=1e-14)
    np.testing.assert_allclose(A.dot(2.0).toarray(), (S * 2.0).toarray())
    np.testing.assert_array_equal((A * A).toarray(), (S * S).toarray())  # sparray: * is elementwise
    np.testing.assert_array_equal(A.multiply(S).toarray(), S.multiply(S).toarray())
    np.testing.assert_array_equal(A.multiply(X[:, :1].T[:, :1]).toarray(), S.multiply(X[:1, :1]).toarray())
    np.testing.assert_array_equal(A.power(3).toarray(), S.power(3).toarray())
    with pytest.raises(NotImplementedError, match="zero power"):
        A.power(0)
    np.testing.assert_array_equal(A.maximum(S.T.T * 0.5).toarray(), S.maximum(S * 0.5).toarray())
    np.testing.assert_array_equal(A.minimum(0).toarray(), S.minimum(0).toarray())
    np.testing.assert_allclose(A.rmatvec(np.arange(7.0)), S.T @ np.arange(7.0), rtol=1e-14)
    np.testing.assert_allclose(A.rmatmat(np.ones((7, 2))), S.T @ np.ones((7, 2)), rtol=1e-14)
    np.testing.assert_allclose(A.matmat(X), S @ X, rtol=1e-14)
    with pytest.raises(ValueError, match="shape"):
        A.matvec(np.ones(7))
    with pytest.raises(ValueError, match="mismatch"):
        A.dot(np.ones(3))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_reductions(pair, axis):
    S, A = pair
    np.testing.assert_allclose(A.sum(axis=axis), S.sum(axis=axis), rtol=1e-14)
    np.testing.assert_allclose(A.mean(axis=axis), S.mean(axis=axis), rtol=1e-14)
    for op in ("max", "min"):
        got, want = getattr(A, op)(axis=axis), getattr(S, op)(axis=axis)
        if axis is None:
            assert got == want
        else:
            np.testing.assert_array_equal(got.toarray(), want.toarray())
        np.testing.assert_array_equal(getattr(A, "arg" + op)(axis=axis), getattr(S, "arg" + op)(axis=axis))
    np.testing.assert_array_equal(A.count_nonzero(axis=axis), S.count_nonzero(axis=axis))
    Si = S.astype(np.int32)
    assert A.astype(np.int32).sum(axis=axis).dtype == np.asarray(Si.sum(axis=axis)).dtype
    np.testing.assert_allclose(A.astype(np.int32).mean(axis=axis), Si.mean(axis=axis), rtol=1e-14)


@st.composite
def small_dense(draw):
    m = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    vals = st.sampled_from([0.0, 0.0, 1.0, -1.0, 2.0, np.nan, -np.inf])
    return np.array(draw(st.lists(vals, min_size=m * n, max_size=m * n))).reshape(m, n)


@settings(max_examples=20, deadline=None)
@given(small_dense(), st.sampled_from([0.0, 1.0, -1.0]), st.sampled_from([None, 0, 1]))
def test_argmax_argmin_match_numpy(dense, fill, axis):
    A = xp.BCOOArray.fromdense(dense, fill_value=fill)
    for op in ("argmax", "argmin"):
        got = getattr(A, op)(axis=axis)
        want = getattr(np, op)(dense, axis=axis)
        np.testing.assert_array_equal(got, want)


def test_argmax_integers_and_complex():
    d = np.array([[0, -3, 5, 5], [0, 0, 0, 0], [-1, 0, -1, 0]], np.int64)
    A = xp.asarray(d)
    for ax in (None, 0, 1):
        np.testing.assert_array_equal(A.argmax(axis=ax), d.argmax(axis=ax))
        np.testing.assert_array_equal(A.argmin(axis=ax), d.argmin(axis=ax))
    u = xp.asarray(d.astype(np.uint8))
    np.testing.assert_array_equal(u.argmax(axis=1), d.astype(np.uint8).argmax(axis=1))
    c = np.array([[0, 1 + 1j, 1 - 2j], [1j, 0, -1j]])
    C = xp.asarray(c)
    np.testing.assert_array_equal(C.argmax(axis=1), c.argmax(axis=1))
    np.testing.assert_array_equal(C.argmin(axis=0), c.argmin(axis=0))


def test_structure_methods(pair):
    S, A = pair
    for k in (-2, 0, 1, 4):
        np.testing.assert_array_equal(A.diagonal(k), S.diagonal(k))
        assert A.trace(k) == S.trace(k)
    r, c = A.nonzero()
    rs, cs = S.nonzero()
    assert sorted(zip(r, c)) == sorted(zip(rs, cs))
    B = xp.asarray(S)
    B.eliminate_zeros()
    S2 = S.copy()
    S2.eliminate_zeros()
    assert B.nnz == S2.nnz < S.nnz
    np.testing.assert_array_equal(B.toarray(), S.toarray())
    for values, k in ((9.0, 0), ([1.0, 2.0], 1), (np.arange(10.0), -3), (0.0, 2)):
        B = xp.asarray(S)
        T = S.tocoo()  # COO (like CSR) stores the new diagonal explicitly, zeros included
        B.setdiag(values, k)
        T.setdiag(values, k)
        np.testing.assert_array_equal(B.toarray(), T.toarray())
        T.sum_duplicates()
        assert B.nnz == T.nnz
    with pytest.raises(ValueError, match="exceeds"):
        B.setdiag(1.0, 9)


def test_ufunc_methods(pair):
    S, A = pair
    P = abs(S) * (0.9 / abs(S).max())  # inside the domain of arcsin / arctanh
    B = xp.asarray(P)
    for name in ("sqrt", "expm1", "log1p", "sin", "sinh", "tan", "tanh", "arcsin", "arcsinh", "arctan",
                 "arctanh", "sign", "floor", "ceil", "trunc", "rint", "deg2rad", "rad2deg"):
        got = getattr(B, name)()
        np.testing.assert_allclose(got.toarray(), getattr(P, name)().toarray(), rtol=1e-14, err_msg=name)
        assert got.fill_value == 0
    C = xp.asarray(S * (1 + 2j))
    np.testing.assert_array_equal(C.conj().toarray(), (S * (1 + 2j)).conj().toarray())
    np.testing.assert_array_equal(C.conjugate().toarray(), (S * (1 - 2j)).toarray())
    np.testing.assert_array_equal(C.real.toarray(), S.toarray())
    np.testing.assert_array_equal(C.imag.toarray(), 2 * S.toarray())


def test_fill_value_surface():
    d = np.array([[1.0, 2.0], [1.0, 1.0]])
    A = xp.BCOOArray.fromdense(d, fill_value=1.0)
    assert A.sum() == d.sum() and A.max() == 2.0 and A.count_nonzero() == 4
    np.testing.assert_array_equal(A.diagonal(), [1.0, 1.0])
    np.testing.assert_array_equal(A.nonzero()[0], np.nonzero(d)[0])
    np.testing.assert_allclose(A.dot(np.ones(2)), d @ np.ones(2))
    with pytest.raises(ValueError, match="fill value"):
        A.tocsr()


@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_any_all_methods_and_writable_toarray(fill):
    # any()/all() as on NumPy and pydata-sparse arrays (scipy's expm calls
    # np.tril(A, -1).any()); toarray() is a fresh writable array, as scipy's.
    d = np.array([[0.0, 2.0, 0.0], [1.0, 1.0, 0.0]])
    A = xp.BCOOArray.fromdense(d, fill_value=fill)
    for op in ("any", "all"):
        got = getattr(A, op)()
        assert isinstance(got, np.bool_) and got == getattr(d, op)()
        for axis in (0, 1, (0, 1)):
            np.testing.assert_array_equal(getattr(A, op)(axis=axis).toarray(), getattr(d, op)(axis=axis))
        np.testing.assert_array_equal(getattr(A, op)(keepdims=True).toarray(), getattr(d, op)(keepdims=True))
    out = A.toarray()
    out[0, 0] = 5.0
    np.testing.assert_array_equal(A.toarray(), d)


def test_linear_operator_protocol_with_scipy_solvers():
    rng = np.random.default_rng(3)
    n = 40
    R = sp.random_array((n, n), density=0.1, rng=rng)
    S = (R @ R.T + sp.eye_array(n) * n).tocsr()  # SPD
    A = xp.asarray(S)
    L = sla.aslinearoperator(A)
    assert L.shape == (n, n) and L.dtype == np.float64
    b = np.arange(1.0, n + 1)
    for solver in (sla.cg, sla.gmres, sla.bicgstab, sla.minres):
        x, info = solver(A, b, rtol=1e-12)
        xs, _ = solver(S, b, rtol=1e-12)
        assert info == 0
        np.testing.assert_allclose(x, xs, rtol=1e-10, err_msg=solver.__name__)
    Rect = sp.random_array((30, 12), density=0.3, rng=rng).tocsr()
    x = sla.lsqr(xp.asarray(Rect), np.ones(30), atol=1e-14, btol=1e-14)[0]
    np.testing.assert_allclose(x, sla.lsqr(Rect, np.ones(30), atol=1e-14, btol=1e-14)[0], rtol=1e-10)
    v0 = np.ones(n)
    w = sla.eigsh(A, k=3, which="LA", v0=v0, return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w), np.sort(sla.eigsh(S, k=3, which="LA", v0=v0,
                                                             return_eigenvectors=False)), rtol=1e-10)
    s = sla.svds(xp.asarray(Rect), k=3, return_singular_vectors=False, rng=0)
    np.testing.assert_allclose(np.sort(s), np.sort(np.linalg.svd(Rect.toarray(), compute_uv=False))[-3:],
                               rtol=1e-10)


def test_construction_functions():
    np.testing.assert_array_equal(xp.eye_array(3, 4, k=1).toarray(), sp.eye_array(3, 4, k=1).toarray())
    np.testing.assert_array_equal(xp.identity(3).toarray(), np.eye(3))
    cases = [([1.0, 2.0, 3.0], 0, None), ([[1.0, 2.0], [3.0, 4.0, 5.0]], [1, 0], None),
             ([[1.0], [2.0, 3.0]], [-2, 1], (4, 3)), ([7.0], 2, (3, 5))]
    for diags, offs, shape in cases:
        np.testing.assert_array_equal(xp.diags_array(diags, offsets=offs, shape=shape).toarray(),
                                      sp.diags_array(diags, offsets=offs, shape=shape).toarray())
    with pytest.raises(ValueError, match="length"):
        xp.diags_array([[1.0, 2.0]], offsets=[0], shape=(3, 3))
    with pytest.raises(ValueError, match="repeat"):
        xp.diags_array([[1.0], [2.0]], offsets=[0, 0], shape=(3, 3))
    R = xp.random_array((6, 5), density=0.3, rng=42)
    np.testing.assert_array_equal(R.toarray(), sp.random_array((6, 5), density=0.3, rng=42).toarray())
    S1, S2 = messy(seed=1).tocsr(), messy(seed=2).tocsr()
    A1, A2 = xp.asarray(S1), xp.asarray(S2)
    np.testing.assert_array_equal(xp.hstack([A1, S2]).toarray(), sp.hstack([S1, S2]).toarray())
    np.testing.assert_array_equal(xp.vstack([A1, A2], dtype=np.float32).toarray(),
                                  sp.vstack([S1, S2]).toarray().astype(np.float32))
    np.testing.assert_array_equal(xp.block_diag([A1, A2.T]).toarray(), sp.block_diag([S1, S2.T]).toarray())
    grid = [[A1, None], [None, A2.T]]
    np.testing.assert_array_equal(xp.block_array(grid).toarray(),
                                  sp.block_array([[S1, None], [None, S2.T]]).toarray())
    with pytest.raises(ValueError, match="at least one block"):
        xp.block_array([[A1, None], [None, None]])
    small = messy(3, 2, seed=4).tocsr()
    np.testing.assert_array_equal(xp.kron(A1, small).toarray(), sp.kron(S1, small).toarray())
    sq = xp.asarray(messy(3, 3, seed=5))
    np.testing.assert_array_equal(xp.kronsum(sq, sq.T).toarray(),
                                  sp.kronsum(messy(3, 3, seed=5), messy(3, 3, seed=5).T).toarray())
    for got, want in zip(xp.find(A1), sp.find(S1)):
        np.testing.assert_array_equal(got, want)
    assert xp.issparse(A1) and xp.issparse(S1) and not xp.issparse(np.eye(2))
    np.testing.assert_array_equal(xp.tril(A1, k=-1).toarray(), sp.tril(S1, k=-1).toarray())
    np.testing.assert_array_equal(xp.triu(A1, k=1).toarray(), sp.triu(S1, k=1).toarray())
    with pytest.raises(ValueError, match="fill value"):
        xp.block_diag([xp.add(A1, 1.0)])
    with pytest.raises(ValueError, match="format"):
        xp.eye_array(3, format="csr")
    with pytest.raises(ValueError, match="agree"):
        xp.hstack([A1, A2.T])


def test_surface_doc_is_current():
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "scipy_surface.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT, env={"JAX_ENABLE_X64": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr + res.stdout


# diags_array against scipy.sparse.diags_array (scipy called with dtype=None: its own default until
# SciPy 1.19 is the deprecated numpy.common_type, with a FutureWarning).

def _dia_positions(S):
    """The positions a scipy dia_array stores (nnz): each offset's diagonal inside the shape."""
    m, n = S.shape
    mask = np.zeros((m, n), bool)
    r = np.arange(m)
    for k in S.offsets:
        keep = (r + k >= 0) & (r + k < n)
        mask[r[keep], r[keep] + k] = True
    return mask


def assert_diags_like_scipy(diagonals, **kw):
    S = sp.diags_array(diagonals, **{"dtype": None, **kw})
    A = xp.diags_array(diagonals, **kw)
    assert A.shape == S.shape and A.dtype == S.dtype, (A.shape, A.dtype, S.shape, S.dtype)
    np.testing.assert_array_equal(A.toarray(), S.toarray())
    assert A.nse == S.nnz  # explicit zeros on a diagonal are stored, as in scipy's dia_array
    stored = np.zeros(A.shape, bool)
    idx = np.asarray(A.indices)
    stored[idx[:, 0], idx[:, 1]] = True
    np.testing.assert_array_equal(stored, _dia_positions(S))
    assert A.indices_sorted and A.unique_indices and A.fill_value == 0


DIAGS_CASES = [
    # (diagonals, offsets, shape, dtype)
    ([1.0, 2.0, 3.0], 0, None, None),
    ([1.0, 2.0, 3.0], 1, None, None),
    ([1.0, 2.0, 3.0], -2, None, None),
    ([[1.0, 2.0], [3.0, 4.0, 5.0]], [1, 0], None, None),
    ([[1.0], [2.0, 3.0]], [-2, 1], (4, 3), None),
    ([7.0], 2, (3, 5), None),
    # longer than the diagonal: truncated (the first values kept)
    ([[1.0, 2.0, 3.0, 4.0]], [1], (3, 3), None),
    ([[1.0, 2.0, 3.0, 4.0, 5.0]], [-1], (4, 2), None),
    ([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]], [0, 3], (3, 5), None),
    ([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]], [0, -3], (5, 3), None),
    ([np.arange(1.0, 10.0), np.arange(-9.0, 0.0), [5.0]], [-1, 2, 0], (4, 6), None),
    # the main diagonal of a long array given in full: the array is square from its length
    ([np.arange(1.0, 6.0), np.arange(10.0, 20.0)], [0, -1], None, None),
    # scalars broadcast along their diagonal
    ([1.0, -2.0, 1.0], [-1, 0, 1], (4, 4), None),
    ([1, -2.5, 1j], [-1, 0, 2], (3, 5), None),
    ([3], [-2], (5, 3), None),
    # offsets just past the shape: empty diagonals, any values ignored
    ([[1.0, 2.0, 3.0, 4.0]], [3], (3, 3), None),
    ([[1.0, 2.0, 3.0, 4.0]], [-3], (3, 3), None),
    ([[], [1.0]], [5, 0], (2, 5), None),
    ([[1.0, 2.0]], [0], (0, 0), None),
    ([[1.0, 2.0]], [1], (0, 3), None),
    ([[1.0, 2.0]], [-2], (2, 0), None),
    ([], 2, None, None),
    # explicit zeros on a diagonal are stored
    ([[0.0, 1.0, 0.0], [0.0]], [0, 1], (3, 3), None),
    # dtypes: kept (integers included), promoted across diagonals, or cast by dtype=
    ([[True, False, True]], [0], None, None),
    ([np.array([1, 2], np.int8), np.array([3], np.uint8)], [0, 1], (2, 2), None),
    ([np.array([1, 2], np.int32), np.array([3.5], np.float32)], [0, -1], (3, 2), None),
    ([[1.5, -2.7, 3.2]], [0], None, np.int64),
    ([[1, 2, 3], [4 + 1j]], [0, 1], None, np.complex128),
    ([[1, 0, 3]], [0], (3, 4), np.bool_),
    ([np.array([1.0, 2.0], np.float64)], [0], None, np.float32),
    # a (1, L) diagonal broadcasts into the diagonal (NumPy assignment, as in scipy)
    ([[[1.0, 2.0, 3.0]]], [0], (2, 2), None),
    # a 1-D array with a scalar offset is one diagonal
    (np.array([4.0, 5.0]), np.int64(-1), None, None),
]


@pytest.mark.parametrize("diagonals, offsets, shape, dtype", DIAGS_CASES)
def test_diags_array_matches_scipy(diagonals, offsets, shape, dtype):
    kw = {"offsets": offsets, "shape": shape}
    if dtype is not None:
        kw["dtype"] = dtype
    assert_diags_like_scipy(diagonals, **kw)


DIAGS_ERRORS = [
    # (diagonals, kwargs, exception type, bcoo_array's message)
    ([[1.0, 2.0]], dict(offsets=[0], shape=(3, 3)), ValueError, "length 2"),  # too short
    ([[]], dict(offsets=[2], shape=(3, 3)), ValueError, "length 0"),
    ([[1.0, 2.0, 3.0], [1.0]], dict(offsets=[0, -1], shape=(4, 4)), ValueError, "diagonal 0"),
    ([[1.0]], dict(offsets=[4], shape=(3, 3)), ValueError, "outside the shape"),
    ([[1.0]], dict(offsets=[-4], shape=(3, 5)), ValueError, "outside the shape"),
    ([[1.0]], dict(offsets=[-1], shape=(0, 3)), ValueError, "outside the shape"),
    ([[1.0], [2.0]], dict(offsets=[1, 1], shape=(3, 3)), ValueError, "repeat"),
    ([[1.0], [2.0]], dict(offsets=[0], shape=(3, 3)), ValueError, "2 diagonals but 1 offsets"),
    ([[1.0, 2.0]], dict(offsets=0), ValueError, "one offset per diagonal"),
    ([[[1.0], [2.0]]], dict(offsets=[0], shape=(2, 2)), ValueError, "broadcast"),
    ([], dict(offsets=[], shape=(2, 2)), ValueError, "at least one diagonal"),
    (5.0, dict(offsets=0), TypeError, "sequence"),
    ([[1.0]], dict(offsets=[0.5], shape=(2, 2)), TypeError, "offsets"),
    ([[1.0]], dict(offsets=[[0]], shape=(2, 2)), TypeError, "offsets"),
    ([[1.0]], dict(offsets=[0], shape=2), TypeError, "shape"),
    ([[1.0]], dict(offsets=[0], shape=(2, 2, 2)), ValueError, "2-D"),
]


@pytest.mark.parametrize("diagonals, kw, exc, match", DIAGS_ERRORS)
def test_diags_array_errors_match_scipy(diagonals, kw, exc, match):
    with pytest.raises(exc):
        sp.diags_array(diagonals, dtype=None, **kw)
    with pytest.raises(exc, match=match):
        xp.diags_array(diagonals, **kw)


@st.composite
def _diags_args(draw):
    m, n = draw(st.integers(0, 6)), draw(st.integers(0, 6))
    # every offset scipy accepts: -m .. n (the two ends are empty diagonals)
    offsets = draw(st.lists(st.integers(-m, n), min_size=1, max_size=4, unique=True))
    kinds = [np.int8, np.int64, np.uint16, np.float32, np.float64, np.complex64, np.complex128, np.bool_]
    diagonals = []
    for k in offsets:
        length = min(m + min(k, 0), n - max(k, 0))
        size = draw(st.sampled_from(sorted({1, length, length + draw(st.integers(1, 4))})))
        dt = draw(st.sampled_from(kinds))
        values = np.asarray(draw(st.lists(st.integers(-3, 3), min_size=size, max_size=size))).astype(dt)
        diagonals.append(values.item() if size == 1 and draw(st.booleans()) else values)
    dtype = draw(st.sampled_from([None, np.float64, np.complex128]))
    if dtype is np.float64 and any(np.asarray(d).dtype.kind == "c" for d in diagonals):
        dtype = None  # a complex -> real cast warns (ComplexWarning), in scipy as here
    # shape=None: scipy's default, square of len(diagonals[0]) + abs(offsets[0])
    shape = (m, n) if draw(st.booleans()) else None
    return diagonals, offsets, shape, dtype


@given(_diags_args())
@settings(max_examples=60)
def test_diags_array_hypothesis_matches_scipy(args):
    diagonals, offsets, shape, dtype = args
    kw = {"offsets": offsets, "shape": shape}
    if dtype is not None:
        kw["dtype"] = dtype
    try:
        S = sp.diags_array(diagonals, **{"dtype": None, **kw})
    except ValueError:  # shape=None: a default size that another offset or diagonal does not fit
        assert shape is None
        with pytest.raises(ValueError):
            xp.diags_array(diagonals, **kw)
        return
    if shape is None:
        size = len(np.atleast_1d(diagonals[0])) + abs(offsets[0])
        assert S.shape == (size, size)
    assert_diags_like_scipy(diagonals, **kw)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_scipy_constructors_stay_in_the_type(fmt):
    """xp.coo_array / csr_array / csc_array take scipy's forms and give BCOOArrays with scipy's values and
    stored entries (coo keeps duplicates, csr/csc sum them)."""
    rng = np.random.default_rng(7)
    r = rng.integers(0, 6, 30)
    c = rng.integers(0, 5, 30)
    v = rng.standard_normal(30)
    ours = getattr(xp, f"{fmt}_array")((v, (r, c)), shape=(6, 5))
    theirs = getattr(sp, f"{fmt}_array")((v, (r, c)), shape=(6, 5))
    assert isinstance(ours, BCOOArray)
    np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=1e-13)
    assert ours.nse == theirs.nnz
    if fmt != "coo":
        assert ours.indices_sorted and ours.unique_indices
        comp = theirs.copy()
        comp.sum_duplicates()
        again = getattr(xp, f"{fmt}_array")((comp.data, comp.indices, comp.indptr), shape=(6, 5))
        np.testing.assert_array_equal(again.toarray(), comp.toarray())
        with pytest.raises(ValueError):
            getattr(xp, f"{fmt}_array")((comp.data, comp.indices, comp.indptr[:-2]), shape=(6, 5))
    assert getattr(xp, f"{fmt}_array")((3, 4)).shape == (3, 4)
    np.testing.assert_array_equal(getattr(xp, f"{fmt}_array")(np.eye(3)).toarray(), np.eye(3))
    with pytest.raises(ValueError, match="shape"):
        getattr(xp, f"{fmt}_array")(np.eye(3), shape=(2, 2))


@pytest.mark.parametrize("other", [
    "inv_row_sums", "inf_scalar", "nan_row", "inf_column_1d_rows", "finite",
])
def test_multiply_method_structural_zeros_as_scipy(other):
    """Issue 29: scipy's ``multiply`` with a dense or scalar operand: an unstored entry is a structural
    zero (0 even times ``inf`` / ``nan``), stored entries are IEEE. The oracle is scipy; the array API
    ``multiply`` keeps NumPy's ``0 * inf = nan``."""
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [4.0, 0.0, -1.0]])
    S = sp.csr_array(dense)
    A = xp.from_scipy(S)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = {
            "inv_row_sums": 1.0 / np.asarray(S.sum(axis=1)).ravel()[:, None],
            "inf_scalar": np.inf,
            "nan_row": np.array([[np.nan, 1.0, np.inf]]),
            "inf_column_1d_rows": np.array([np.inf, -np.inf, 2.0]),
            "finite": np.arange(12.0).reshape(4, 3) - 5,
        }[other]
    want = S.multiply(o)
    want = want.toarray() if hasattr(want, "toarray") else np.asarray(want)
    got = A.multiply(o)
    assert isinstance(got, xp.BCOOArray)
    np.testing.assert_array_equal(got.toarray(), want)
    assert got.fill_value == 0 and got.nse <= A.nse  # stays on A's pattern
    if other != "finite":  # the array API product multiplies every position, as NumPy
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(xp.multiply(A, o).toarray(), dense * o)


def test_normalize_rows_with_an_empty_row_as_scipy():
    """The guide's ``normalize_rows`` (docs/guides/scipy.md) on a matrix with an empty row."""
    def normalize_rows(M):
        with np.errstate(divide="ignore"):
            sums = np.asarray(M.sum(axis=1)).ravel()
            return M.multiply(1.0 / sums[:, None])

    S = sp.csr_array(np.array([[1.0, 0.0, 3.0], [0.0, 0.0, 0.0], [0.0, 2.0, 0.0]]))
    A = xp.from_scipy(S)
    np.testing.assert_allclose(normalize_rows(A).toarray(), normalize_rows(S).toarray())


@pytest.mark.parametrize("shapes", [((3,), (2,)), ((2, 1, 2), (1, 2, 2)), ((3, 4), (2,)), ((2,), (3, 2)),
                                    ((2, 3, 2), (2, 2)), ((), (3,)), ((3, 2), (2, 3))])
def test_kron_of_any_dimensions_as_numpy(shapes):
    """Issue 29: ``kron`` of n-D operands follows ``numpy.kron`` (the oracle); 2-D stays scipy's."""
    rng = np.random.default_rng(5)
    a, b = (rng.random(s) * (rng.random(s) > 0.5) for s in shapes)
    got = xp.kron(xp.asarray(a), xp.asarray(b))
    want = np.kron(a, b)
    assert got.shape == want.shape and got.fill_value == 0
    np.testing.assert_array_equal(got.toarray(), want)
    if len(shapes[0]) == len(shapes[1]) == 2:
        np.testing.assert_array_equal(got.toarray(), sp.kron(sp.csr_array(a), sp.csr_array(b)).toarray())


def test_kron_non_zero_fill_names_the_fix():
    with pytest.raises(ValueError, match=r"A has fill value .*numpy\.kron\(A\.toarray\(\), B\.toarray\(\)\)"):
        xp.kron(xp.asarray(np.eye(2)) + 1.0, xp.asarray(np.eye(2)))
