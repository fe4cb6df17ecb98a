"""pydata-sparse (COO, GCXS, DOK) <-> BCOOArray: n-dimensional arrays, fill
values (NaN included), every layout of the source BCOOArray (batch, dense,
duplicates, padding), and the real matrices. Oracles: the dense NumPy array
of the Hypothesis case, and pydata-sparse's own ``todense``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import sparse
from _oracle import assert_matches, cases, same_scalar
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []


@settings(max_examples=12, deadline=None)
@given(cases(min_ndim=1, max_ndim=3), st.sampled_from(["coo", "gcxs", "dok"]))
def test_round_trip_any_layout(case, fmt):
    P = case.arr.to_pydata_sparse(format=fmt)
    assert P.format == fmt
    assert P.shape == case.dense.shape and P.dtype == case.dense.dtype
    assert same_scalar(P.fill_value, case.fill)
    np.testing.assert_array_equal(P.todense(), case.dense)
    back = xp.from_pydata_sparse(P)
    assert same_scalar(back.fill_value, case.fill)
    assert_matches(back, case.dense)
    assert_matches(xp.asarray(P), case.dense)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.complex64,
                                   np.complex128])
def test_dtypes_and_fill_kept(dtype):
    rng = np.random.default_rng(0)
    dense = (rng.integers(0, 3, size=(3, 4, 2)) * (rng.random((3, 4, 2)) < 0.5)).astype(dtype)
    fill = dense.flat[0]
    P = sparse.COO.from_numpy(dense, fill_value=fill)
    B = xp.asarray(P)
    assert B.dtype == dtype and B.fill_value == fill and B.nse == P.nnz
    np.testing.assert_array_equal(B.toarray(), dense)
    for fmt in ("coo", "gcxs", "dok"):
        if fmt == "gcxs" and dtype == np.float16:
            with pytest.raises(TypeError, match="float16"):
                xp.to_pydata_sparse(B, fmt)
            continue
        Q = xp.to_pydata_sparse(B, fmt)
        assert Q.dtype == dtype
        np.testing.assert_array_equal(Q.todense(), dense)
        np.testing.assert_array_equal(xp.asarray(Q).toarray(), dense)


def test_duplicates_and_drop_fill():
    coords = np.array([[0, 0, 1, 2], [1, 1, 0, 2]])
    P = sparse.COO(coords, np.array([1.0, 2.0, 7.0, 0.0]), shape=(3, 3), has_duplicates=True, sorted=False)
    B = xp.from_pydata_sparse(P)
    np.testing.assert_array_equal(B.toarray(), P.todense())
    assert xp.from_pydata_sparse(P, drop_fill=True).toarray()[2, 2] == 0
    assert xp.from_pydata_sparse(P, drop_fill=True).nnz == 2


def test_errors():
    with pytest.raises(TypeError, match="sparse.COO"):
        xp.from_pydata_sparse(np.eye(2))
    with pytest.raises(ValueError, match="pydata-sparse format"):
        xp.asarray(np.eye(2)).to_pydata_sparse("csr")


@pytest.mark.skipif(not FILES, reason="shared/data/matrices is not available")
@pytest.mark.parametrize("name", FILES)
def test_real_matrices_round_trip(name):
    A = scipy.io.mmread(MATRICES / name, spmatrix=False).tocoo()
    A.sum_duplicates()
    B = xp.from_scipy(A)
    for fmt in ("coo", "gcxs"):
        P = B.to_pydata_sparse(fmt)
        assert P.nnz == A.nnz  # explicit zeros kept
        C = P if fmt == "coo" else P.asformat("coo")
        np.testing.assert_array_equal(C.coords, np.stack([A.row, A.col]))
        np.testing.assert_array_equal(C.data, A.data)
        back = xp.asarray(P).to_scipy("coo")
        np.testing.assert_array_equal(back.row, A.row)
        np.testing.assert_array_equal(back.col, A.col)
        np.testing.assert_array_equal(back.data, A.data)


def test_drop_fill_nan():
    P = sparse.COO(np.array([[0, 1, 2]]), np.array([np.nan, 1.0, np.nan]), shape=(4,), fill_value=np.nan)
    B = xp.from_pydata_sparse(P, drop_fill=True)
    assert B.nse == 1 and np.isnan(B.fill_value)
    assert B.nnz == 4  # a non-zero fill: the non-zero elements (NaN among them), as a scipy array would store
    np.testing.assert_array_equal(B.toarray(), P.todense())
