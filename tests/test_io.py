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


# n-D .npz: scipy (>= 1.15) saves and loads n-D coo_arrays (a "coords" array of shape (ndim, nnz));
# bcoo_array writes the same files and reads scipy's. Stored entries (explicit zeros and duplicates
# included), their order, dtype and shape survive both directions.

ND_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
             np.float32, np.float64, np.complex64, np.complex128]
ND_SHAPES = [(6,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (1, 2, 1, 2, 3), (2, 2, 2, 2, 2, 2),
             (3, 1, 2, 1, 2, 1, 2, 2), (0, 3, 2), (2, 0, 4), (1, 1, 1)]


def _nd_coo(shape, dtype, seed=0):
    """A scipy coo_array of `shape` with random entries, a duplicate and an explicit zero (when there is room)."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    k = min(size, 7)
    flat = rng.choice(size, k, replace=False) if size else np.zeros(0, int)
    if k >= 2:
        flat = np.append(flat, flat[0])  # a duplicate: stored twice, its values sum (or, for bool)
    vals = rng.integers(1, 4, flat.size) * (1 if np.dtype(dtype).kind == "u" else rng.choice([-1, 1], flat.size))
    vals = vals.astype(dtype)
    if np.dtype(dtype).kind == "c":
        vals = vals + (1j * rng.integers(-2, 3, flat.size)).astype(dtype)
    if flat.size >= 3:
        vals[1] = 0  # an explicit zero (False)
    return sp.coo_array((vals, np.unravel_index(flat, shape)), shape=shape)


def assert_same_entries(A, S):
    """A BCOOArray (all sparse) and a scipy coo_array store the same entries in the same order."""
    assert A.shape == S.shape and A.dtype == S.dtype and A.nse == S.nnz
    assert A.n_batch == 0 and A.n_dense == 0
    np.testing.assert_array_equal(np.asarray(A.indices), np.stack(S.coords, axis=1).reshape(S.nnz, S.ndim))
    np.testing.assert_array_equal(np.asarray(A.data), S.data)


@pytest.mark.parametrize("dtype", ND_DTYPES)
@pytest.mark.parametrize("shape", ND_SHAPES)
def test_npz_nd_both_directions(tmp_path, shape, dtype):
    S = _nd_coo(shape, dtype, seed=len(shape))
    sp.save_npz(tmp_path / "from_scipy.npz", S)
    A = xp.load_npz(tmp_path / "from_scipy.npz")  # written by scipy, read here
    assert_same_entries(A, S)
    np.testing.assert_array_equal(A.toarray(), S.toarray())
    xp.save_npz(tmp_path / "from_bcoo.npz", A, compressed=len(shape) % 2 == 0)
    back = sp.load_npz(tmp_path / "from_bcoo.npz")  # written here, read by scipy
    assert isinstance(back, sp.coo_array) and back.format == "coo"
    assert back.shape == S.shape and back.dtype == S.dtype and back.nnz == S.nnz
    for got, want in zip(back.coords, S.coords):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(back.data, S.data)
    assert_same_entries(xp.load_npz(tmp_path / "from_bcoo.npz"), S)
    if S.nnz >= 3:
        assert xp.load_npz(tmp_path / "from_bcoo.npz", drop_zeros=True).nse == S.nnz - 1


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 4)])
@pytest.mark.parametrize("n_batch, n_dense", [(1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (1, 2), (3, 0), (0, 3)])
def test_npz_nd_any_layout(tmp_path, shape, n_batch, n_dense):
    rng = np.random.default_rng(n_batch * 10 + n_dense)
    D = rng.integers(-3, 4, shape) * (rng.random(shape) < 0.3)
    A = xp.update_layout(xp.asarray(D.astype(np.float32)), n_batch, n_dense)
    assert (A.n_batch, A.n_dense) == (n_batch, n_dense)
    xp.save_npz(tmp_path / "a.npz", A)
    S = sp.load_npz(tmp_path / "a.npz")
    assert S.format == "coo" and S.shape == shape and S.dtype == np.float32
    np.testing.assert_array_equal(S.toarray(), D)
    # the entries of the all-sparse layout, as stored (a dense block's zeros included)
    flat = np.asarray(xp.update_layout(A, 0, 0).indices)
    # (batch elements hold padding up to the fullest one's count: it is not written)
    assert S.nnz == int(np.all(flat < np.asarray(shape), axis=1).sum())
    R = xp.load_npz(tmp_path / "a.npz")
    assert (R.n_batch, R.n_dense, R.dtype) == (0, 0, np.float32)
    np.testing.assert_array_equal(R.toarray(), D)


def test_npz_nd_padding_and_large_dimension(tmp_path):
    # a padding entry (index == the dimension's size) is not written
    idx = np.array([[0, 1, 2], [1, 0, 0], [2, 3, 4]])
    A = xp.BCOOArray((np.array([1.5, -2.0, 9.0]), idx), shape=(2, 3, 4))
    xp.save_npz(tmp_path / "p.npz", A)
    S = sp.load_npz(tmp_path / "p.npz")
    assert S.nnz == 2 and S.shape == (2, 3, 4)
    np.testing.assert_array_equal(S.toarray(), A.toarray())
    # a dimension past int32: int64 indices both ways
    big = (2, 1, 3_000_000_001)
    S = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 1]), np.array([0, 0]), np.array([5, 3_000_000_000]))),
                     shape=big)
    sp.save_npz(tmp_path / "big.npz", S)
    A = xp.load_npz(tmp_path / "big.npz")
    assert A.shape == big and A.indices.dtype == np.int64
    assert_same_entries(A, S)
    xp.save_npz(tmp_path / "big2.npz", A)
    back = sp.load_npz(tmp_path / "big2.npz")
    assert back.shape == big and back.coords[2].tolist() == [5, 3_000_000_000] and back.data.tolist() == [1.0, 2.0]


def test_npz_nd_errors(tmp_path):
    import jax

    A = xp.asarray(np.arange(24.0).reshape(2, 3, 4))
    for fmt in ("csr", "csc", "bsr", "dia"):
        with pytest.raises(ValueError, match="only as coo"):
            xp.save_npz(tmp_path / "e.npz", A, format=fmt)
        with pytest.raises(ValueError):  # scipy has no n-D format but coo either
            sp.coo_array(np.arange(24.0).reshape(2, 3, 4)).asformat(fmt)
    with pytest.raises(ValueError, match="0-D"):
        xp.save_npz(tmp_path / "e.npz", xp.asarray(np.float64(3.0)))
    with pytest.raises((TypeError, ValueError)):  # scipy has no 0-D sparse array to save
        sp.coo_array(np.float64(3.0))
    with pytest.raises(ValueError, match="fill value"):
        xp.save_npz(tmp_path / "e.npz", xp.add(A, 1.0))
    with pytest.raises(ValueError, match="float16"):
        xp.save_npz(tmp_path / "e.npz", A.astype(xp.float16))
    with pytest.raises(ValueError, match="concrete"):
        jax.jit(lambda a: xp.save_npz(tmp_path / "e.npz", a) or a.data.sum())(A)
    assert not (tmp_path / "e.npz").exists()


def test_mmwrite_compresses_to_the_name_given(tmp_path):
    # scipy.io.mmwrite("m.mtx.gz") writes an uncompressed "m.mtx.gz.mtx"; mmwrite compresses into exactly
    # the name given (gzip for .gz, bzip2 for .bz2), and mmread / scipy.io.mmread read the file back.
    import bz2
    import gzip

    S = sp.coo_array((np.array([1.5, -2.0, 0.0, 4.25]), (np.array([0, 1, 2, 4]), np.array([3, 0, 2, 1]))),
                     shape=(5, 4))
    A = xp.from_scipy(S)
    for suffix, opener in ((".mtx.gz", gzip.open), (".mtx.bz2", bz2.open), (".gz", gzip.open)):
        path = tmp_path / f"m{suffix}"
        xp.mmwrite(path, A, comment="compressed")
        assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no "m.mtx.gz.mtx" beside it
        with opener(path, "rt") as fh:
            assert fh.readline().startswith("%%MatrixMarket matrix coordinate real")
        assert_same(xp.mmread(path).to_scipy(), S)  # the explicit zero is kept
        assert_same(scipy.io.mmread(path, spmatrix=False), S)
        path.unlink()
    xp.mmwrite(str(tmp_path / "s.mtx.gz"), A)  # a str name too
    assert_same(xp.mmread(str(tmp_path / "s.mtx.gz")).to_scipy(), S)
    xp.mmwrite(tmp_path / "plain", A)  # other names are scipy's: ".mtx" appended, not compressed
    assert (tmp_path / "plain.mtx").read_text().startswith("%%MatrixMarket")


@pytest.mark.parametrize("fill", [0.0, 2.5])
@pytest.mark.parametrize("layout", ["coo", "gcxs-0", "gcxs-0-2", "gcxs-1"])
def test_load_npz_reads_pydata_sparse_files_with_their_fill_value(tmp_path, layout, fill):
    # issue 29, item 10: scipy's load_npz refuses pydata's n-D files and would drop their fill value.
    sparse = pytest.importorskip("sparse")
    s = sparse.random((3, 4, 5), density=0.3, random_state=0, fill_value=fill).astype(np.float32)
    if layout != "coo":
        s = sparse.GCXS(s, compressed_axes=[int(a) for a in layout.split("-")[1:]])
    path = tmp_path / "a.npz"
    sparse.save_npz(path, s)
    A = xp.load_npz(path)
    assert A.shape == (3, 4, 5) and A.dtype == np.float32 and A.fill_value == np.float32(fill)
    np.testing.assert_array_equal(np.asarray(A.todense()), s.todense())
    B = xp.load_npz(path, drop_zeros=True)  # drops entries equal to the fill value only: lossless
    np.testing.assert_array_equal(np.asarray(B.todense()), s.todense())


def test_load_npz_drop_zeros_keeps_a_pydata_files_meaningful_zeros(tmp_path):
    # With fill value 2.5, a stored 0 is a value, not an absent entry: drop_zeros drops entries equal
    # to the fill value instead (lossless either way).
    sparse = pytest.importorskip("sparse")
    s = sparse.COO(np.array([[0, 1, 2], [1, 0, 2]]), np.array([0.0, 1.0, 2.5], np.float32), shape=(3, 3),
                   fill_value=np.float32(2.5))
    sparse.save_npz(tmp_path / "z.npz", s)
    A = xp.load_npz(tmp_path / "z.npz", drop_zeros=True)
    np.testing.assert_array_equal(np.asarray(A.todense()), s.todense())
    assert A.nse == 2


def test_load_npz_reads_a_zero_dimensional_pydata_file(tmp_path):
    # A 0-d pydata COO file's coords are (0, nnz): reshaping them with -1 failed on a size-0 array.
    sparse = pytest.importorskip("sparse")
    path = tmp_path / "scalar.npz"
    for s in (sparse.COO.from_numpy(np.array(3.0, np.float32)),
              sparse.COO(np.zeros((0, 1), np.int64), np.array([5.0], np.float32), shape=())):
        sparse.save_npz(path, s)
        A = xp.load_npz(path)
        assert A.shape == () and A.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(A.todense()), s.todense())
