"""save_npz / load_npz in scipy's npz format and Matrix Market I/O: files
written by scipy load here and the reverse, entries (explicit zeros included),
dtype and shape exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import bcoo_array as xp

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
SMALL = ["west0067.mtx", "karate.mtx", "young1c.mtx", "lpi_galenet.mtx", "bayer10.mtx.gz"]


def canonical(m):
    c = sp.coo_array(m, copy=True)
    c.sum_duplicates()
    return c.row, c.col, c.data


def assert_same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    for x, y in zip(canonical(a), canonical(b)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc", "bsr", "dia"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.uint32, np.float32, np.complex128])
def test_npz_both_directions(tmp_path, fmt, dtype):
    S = sp.coo_array((np.array([1, 0, 2, 3]).astype(dtype), (np.array([0, 1, 3, 3]), np.array([2, 2, 0, 1]))),
                     shape=(4, 3))
    sp.save_npz(tmp_path / "from_scipy.npz", S.asformat(fmt))
    A = xp.load_npz(tmp_path / "from_scipy.npz")
    assert A.dtype == dtype and A.shape == (4, 3)
    np.testing.assert_array_equal(A.toarray(), S.toarray())
    if fmt in ("coo", "csr", "csc"):
        assert A.nnz == S.nnz  # the explicit zero is kept
    xp.save_npz(tmp_path / "from_bcoo.npz", A, format=fmt)
    back = sp.load_npz(tmp_path / "from_bcoo.npz")
    assert back.format == fmt and back.dtype == dtype
    np.testing.assert_array_equal(back.toarray(), S.toarray())
    assert xp.load_npz(tmp_path / "from_scipy.npz", drop_zeros=True).nnz == 3


def test_npz_matrix_class_and_errors(tmp_path):
    sp.save_npz(tmp_path / "m.npz", sp.csr_matrix(np.eye(3)), compressed=False)
    np.testing.assert_array_equal(xp.load_npz(tmp_path / "m.npz").toarray(), np.eye(3))
    with pytest.raises(ValueError, match="fill value"):
        xp.save_npz(tmp_path / "f.npz", xp.add(xp.asarray(np.eye(2)), 1.0))
    with pytest.raises(TypeError, match="BCOOArray"):
        xp.save_npz(tmp_path / "f.npz", sp.eye_array(2))
    with pytest.raises(ValueError, match="format"):
        xp.save_npz(tmp_path / "f.npz", xp.asarray(np.eye(2)), format="lil")


@pytest.mark.skipif(not MATRICES.is_dir(), reason="shared/data/matrices is not available")
@pytest.mark.parametrize("name", SMALL)
def test_mmread_matches_scipy_and_mmwrite_round_trips(tmp_path, name):
    S = scipy.io.mmread(MATRICES / name, spmatrix=False)
    A = xp.mmread(MATRICES / name)
    assert_same(A.to_scipy(), S)
    xp.mmwrite(tmp_path / "out.mtx", A, comment="written by bcoo_array")
    assert_same(scipy.io.mmread(tmp_path / "out.mtx", spmatrix=False), S)
    assert_same(xp.mmread(tmp_path / "out.mtx").to_scipy(), S)


def test_mm_dense_file_dtype_and_errors(tmp_path):
    d = np.array([[0.0, 1.5], [2.0, 0.0]])
    scipy.io.mmwrite(tmp_path / "dense.mtx", d)
    np.testing.assert_array_equal(xp.mmread(tmp_path / "dense.mtx").toarray(), d)
    scipy.io.mmwrite(tmp_path / "s.mtx", sp.coo_array(d))
    A32 = xp.mmread(tmp_path / "s.mtx", dtype=xp.float32)
    assert A32.dtype == np.float32
    with pytest.raises(ValueError, match="2-D"):
        xp.mmwrite(tmp_path / "x.mtx", xp.asarray(np.ones(3)))
    xp.mmwrite(tmp_path / "sym.mtx", xp.asarray(d + d.T), symmetry="symmetric")
    assert "symmetric" in (tmp_path / "sym.mtx").read_text().splitlines()[0]
    np.testing.assert_array_equal(xp.mmread(tmp_path / "sym.mtx").toarray(), d + d.T)
