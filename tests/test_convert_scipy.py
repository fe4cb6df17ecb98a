"""scipy.sparse <-> BCOOArray: every format, array and matrix classes, 1-D
arrays, non-canonical input, every dtype scipy supports, the real matrices.
The oracle is scipy itself (``toarray`` and its canonical COO form)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []
FORMATS = ("coo", "csr", "csc", "bsr", "dia", "dok", "lil")
SCIPY_DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float32, np.float64, np.complex64, np.complex128)


def canonical(m, drop_zeros=False):
    """(row, col, data) of scipy's canonical COO form (duplicates summed, row-major)."""
    c = sp.coo_array(m, copy=True)
    c.sum_duplicates()
    if drop_zeros:
        c.eliminate_zeros()
    order = np.lexsort((c.col, c.row))
    return c.row[order].astype(np.int64), c.col[order].astype(np.int64), c.data[order]


def assert_same_entries(a, b, drop_zeros=False):
    ra, ca, va = canonical(a, drop_zeros)
    rb, cb, vb = canonical(b, drop_zeros)
    assert a.shape == b.shape
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(ra, rb)
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(va, vb)


def _small(A):
    """Whether DIA storage of A stays small (DIA stores n entries per occupied diagonal)."""
    c = sp.coo_array(A)
    return np.unique(c.col - c.row).size * A.shape[1] <= 2_000_000


@pytest.mark.skipif(not FILES, reason="shared/data/matrices is not available")
@pytest.mark.parametrize("name", FILES)
def test_real_matrices_round_trip_every_format(name):
    A = scipy.io.mmread(MATRICES / name, spmatrix=False).tocoo()
    for fmt in FORMATS:
        if fmt == "dia" and not _small(A):
            continue
        with warnings.catch_warnings():
            # scipy warns that DIA with > 100 diagonals is inefficient; that is its business.
            warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
            S = A.asformat(fmt)
            B = xp.from_scipy(S)
            out = B.to_scipy(fmt)
        assert B.shape == A.shape and B.dtype == A.dtype
        # BSR and DIA conversions in scipy itself add or drop explicit zeros; values are exact.
        lossy = fmt in ("bsr", "dia")
        assert_same_entries(B.to_scipy("coo"), A, drop_zeros=lossy)
        assert out.format == fmt
        assert_same_entries(out, A, drop_zeros=lossy)
    # Explicit zeros survive (bayer10 stores 23,332 of them) unless asked to drop.
    B = xp.from_scipy(A)
    assert B.nnz == canonical(A)[0].size
    assert xp.from_scipy(A, drop_zeros=True).nnz == canonical(A, drop_zeros=True)[0].size


@st.composite
def messy_coo(draw):
    """A scipy COO array with duplicates, explicit zeros, empty rows, unsorted int64 indices."""
    m = draw(st.integers(0, 6))
    n = draw(st.integers(0, 6))
    dtype = np.dtype(draw(st.sampled_from(SCIPY_DTYPES)))
    nnz = draw(st.integers(0, 12)) if m and n else 0
    rows = np.asarray(draw(st.lists(st.integers(0, max(m - 1, 0)), min_size=nnz, max_size=nnz)), np.int64)
    cols = np.asarray(draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=nnz, max_size=nnz)), np.int64)
    vals = np.asarray(draw(st.lists(st.integers(-3, 3), min_size=nnz, max_size=nnz)))
    if dtype.kind == "b":
        data = vals > 0
    elif dtype.kind == "u":
        data = np.abs(vals).astype(dtype)
    elif dtype.kind == "c":
        data = (vals + 1j * vals[::-1]).astype(dtype)
    else:
        data = vals.astype(dtype)
    return sp.coo_array((data, (rows, cols)), shape=(m, n))


@settings(max_examples=30, deadline=None)
@given(messy_coo(), st.sampled_from(FORMATS), st.booleans())
def test_random_noncanonical_input(A, fmt, as_matrix):
    S = A.asformat(fmt)
    if as_matrix:
        S = sp.coo_matrix(S).asformat(fmt)
        with pytest.warns(xp.MatrixSemanticsWarning, match="@"):
            B = xp.from_scipy(S)
    else:
        B = xp.from_scipy(S)
    assert B.shape == A.shape and B.dtype == A.dtype
    np.testing.assert_array_equal(B.toarray(), S.toarray())
    for out_fmt in FORMATS:
        out = B.to_scipy(out_fmt)
        assert out.format == out_fmt and out.dtype == A.dtype
        np.testing.assert_array_equal(out.toarray(), S.toarray())
    if fmt in ("coo", "csr", "csc", "lil", "dok"):
        # Every explicit zero scipy stores is still stored.
        assert_same_entries(B.tocoo(), S)


def test_duplicates_summed_and_explicit_zeros_kept():
    A = sp.coo_array((np.array([1.0, 2.0, 0.0, 5.0, -5.0]), (np.array([2, 0, 1, 0, 2]), np.array([1, 0, 1, 0, 1]))),
                     shape=(3, 2))
    B = xp.asarray(A)
    np.testing.assert_array_equal(B.toarray(), A.toarray())
    r, c, v = canonical(B.to_scipy())
    np.testing.assert_array_equal(r, [0, 1, 2])
    np.testing.assert_array_equal(v, [7.0, 0.0, -4.0])
    assert xp.from_scipy(A, drop_zeros=True).nnz == 4  # entries are dropped before summing, as eliminate_zeros


@pytest.mark.parametrize("fmt", ["coo", "csr", "dok"])
def test_one_dimensional(fmt):
    v = sp.coo_array((np.array([3, 0, 4], np.int32), (np.array([4, 1, 4]),)), shape=(6,)).asformat(fmt)
    B = xp.asarray(v)
    assert B.shape == (6,) and B.dtype == np.int32
    np.testing.assert_array_equal(B.toarray(), v.toarray())
    out = B.to_scipy(fmt)
    assert out.shape == (6,) and out.format == fmt
    np.testing.assert_array_equal(out.toarray(), v.toarray())
    with pytest.raises(ValueError, match="1-D"):
        B.to_scipy("csc")


def test_methods_and_layouts_out():
    A = sp.random_array((5, 4), density=0.5, format="csr", rng=1)
    B = xp.asarray(A)
    assert B.tocsr().format == "csr" and B.tocsc().format == "csc" and B.tocoo().format == "coo"
    np.testing.assert_array_equal(B.tocsc().toarray(), A.toarray())
    # A dense-layout / batched array converts too.
    D = xp.BCOOArray.fromdense(A.toarray(), n_batch=1)
    np.testing.assert_array_equal(D.to_scipy("csr").toarray(), A.toarray())
    D2 = xp.BCOOArray.fromdense(A.toarray(), n_dense=1)
    np.testing.assert_array_equal(xp.to_scipy(D2, "lil").toarray(), A.toarray())


def test_fill_value_errors_and_materialize():
    B = xp.asarray(np.array([[0.0, 1.0], [2.0, 0.0]]))
    C = xp.add(B, 1.0)
    assert C.fill_value == 1.0
    with pytest.raises(ValueError, match="fill value"):
        C.to_scipy("csr")
    with pytest.raises(ValueError, match="fill value"):
        C.tocsr()
    np.testing.assert_array_equal(C.to_scipy("csr", materialize_fill=True).toarray(), [[1.0, 2.0], [3.0, 1.0]])
    # -0.0 as a fill value is zero for scipy.
    np.testing.assert_array_equal(xp.negative(B).tocoo().toarray(), -B.toarray())


def test_errors():
    with pytest.raises(TypeError, match="scipy.sparse"):
        xp.from_scipy(np.eye(2))
    B = xp.asarray(np.eye(2))
    with pytest.raises(ValueError, match="not a scipy.sparse format"):
        B.to_scipy("bcsr")
    with pytest.raises(ValueError, match="float16"):
        B.astype(xp.float16).to_scipy()
    with pytest.raises(ValueError, match="3-D"):
        xp.asarray(np.ones((2, 2, 2))).to_scipy()


def test_import_without_pydata_sparse():
    """``import bcoo_array`` never imports pydata-sparse; dense and scipy input still work (x64 off)."""
    code = textwrap.dedent("""
        import sys
        attempts = []
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "sparse" or name.startswith("sparse."):
                    attempts.append(name)
                    raise ImportError("pydata-sparse is blocked in this test")
                return None
        sys.meta_path.insert(0, Block())
        import numpy as np, scipy.sparse as sp
        import bcoo_array as xp
        a = xp.asarray(np.array([[0, 1], [2, 0]], dtype=np.int32))
        assert int(xp.sum(a)) == 3
        b = xp.asarray(sp.eye_array(3, dtype=np.float32))
        assert b.nnz == 3
        assert "sparse" not in sys.modules and not attempts, attempts
        # x64 is off here: float64 input is refused with a clear error, never downcast.
        try:
            xp.from_scipy(sp.eye_array(3))
        except ValueError as exc:
            assert "64-bit" in str(exc)
        else:
            raise AssertionError("float64 was accepted with x64 off")
        assert b.matvec(np.ones(3, np.float32)).dtype == np.float32
        print("ok")
    """)
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_index_range_beyond_int32():
    big = 3_000_000_000
    S = sp.coo_array((np.array([1.5, 2.5]), (np.array([big - 1, 7]), np.array([1, 0]))), shape=(big, 2))
    B = xp.asarray(S)
    assert B.indices.dtype == np.int64 and B.shape == (big, 2)
    back = B.to_scipy("coo")
    r, c, v = canonical(back)
    np.testing.assert_array_equal(r, [7, big - 1])
    np.testing.assert_array_equal(c, [0, 1])
    np.testing.assert_array_equal(v, [2.5, 1.5])
    P = B.to_pydata_sparse()
    assert P.shape == (big, 2) and int(P.coords[0].max()) == big - 1


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("layout", [(0, 0), (1, 0), (0, 1)])
def test_to_csr_buffers_match_scipy(fmt, layout):
    """``A.to_csr_buffers()``: scipy's canonical indptr / indices / data, read-only, any layout."""
    S = sp.random_array((30, 20), density=0.15, random_state=3, format="coo")
    S = sp.coo_array((np.concatenate([S.data, [2.5, 0.0]]),
                      (np.concatenate([S.row, [S.row[0], 29]]), np.concatenate([S.col, [S.col[0], 19]]))),
                     shape=S.shape)  # a duplicate and an explicit zero
    A = xp.BCOOArray.fromdense(S.toarray(), n_batch=layout[0], n_dense=layout[1]) if layout != (0, 0) else \
        xp.from_scipy(S)
    b = A.to_csr_buffers(fmt)
    assert b.format == fmt and b.shape == (30, 20)
    got = (sp.csr_array if fmt == "csr" else sp.csc_array)((b.data, b.indices, b.indptr), shape=b.shape)
    assert got.has_canonical_format  # sorted within each row / column, no duplicates
    np.testing.assert_allclose(got.toarray(), S.toarray())
    if layout == (0, 0):  # the stored entries are scipy's, explicit zero included
        want = S.asformat(fmt)
        want.sum_duplicates()
        np.testing.assert_array_equal(b.indptr, want.indptr)
        np.testing.assert_array_equal(b.indices, want.indices)
        np.testing.assert_allclose(b.data, want.data)
    for arr in (b.data, b.indices, b.indptr):
        with pytest.raises(ValueError, match="read-only"):
            arr[...] = 0
    with pytest.raises(ValueError, match="2-D"):
        xp.reshape(A, (600,)).to_csr_buffers()
    with pytest.raises(ValueError, match="format"):
        A.to_csr_buffers("coo")
    with pytest.raises(ValueError, match="fill value"):
        (A + 1.0).to_csr_buffers()
    # CSR-minded code that reads A.indptr is told where the buffers are; hasattr stays False
    with pytest.raises(AttributeError, match="to_csr_buffers"):
        A.indptr
    assert not hasattr(A, "indptr")


@pytest.mark.parametrize("native_env", ["1", "0"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_from_scipy_csr_native_and_numpy_expansion(monkeypatch, native_env, index_dtype):
    """CSR -> COO indices: the one-pass native loop and the NumPy expansion give the same buffers."""
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", native_env)
    rng = np.random.default_rng(5)
    for shape, k in (((7, 9), 20), ((0, 4), 0), ((5, 0), 0), ((6, 6), 0), ((300, 40), 2000)):
        if k:
            S = sp.coo_array((rng.standard_normal(k), (rng.integers(0, shape[0], k), rng.integers(0, shape[1], k))),
                             shape=shape).tocsr()
        else:
            S = sp.csr_array(shape)
        S.indptr = S.indptr.astype(index_dtype)
        S.indices = S.indices.astype(index_dtype)
        A = xp.from_scipy(S)
        want = S.tocoo()
        idx = np.asarray(A.indices)
        np.testing.assert_array_equal(idx[:, 0], want.row)
        np.testing.assert_array_equal(idx[:, 1], want.col)
        np.testing.assert_array_equal(np.asarray(A.data), S.data)
        np.testing.assert_array_equal(A.toarray(), S.toarray())
        assert A.indices_sorted == bool(S.has_canonical_format)
    # an unsorted CSR (columns out of order within a row) keeps its order and its flags
    U = sp.csr_array((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 3))
    A = xp.from_scipy(U)
    assert not A.indices_sorted
    np.testing.assert_array_equal(np.asarray(A.indices), [[0, 2], [0, 0], [1, 1]])
    np.testing.assert_array_equal(A.toarray(), U.toarray())


def test_host_csr_to_coo_rejects_bad_row_pointers():
    """The native loop reads unchecked, so a row pointer that does not fit is refused (False), not run."""
    from bcoo_array._kernels import native

    out = np.zeros((3, 2), np.int32)
    ind = np.array([0, 1, 2], np.int32)
    for ptr in (np.array([1, 3], np.int32), np.array([0, 4], np.int32), np.array([0, 2, 1, 3], np.int32),
                np.array([0, 3], np.int64)):
        assert not native.host_csr_to_coo(ptr, ind, out)
    assert not out.any()
    if native.available():
        assert native.host_csr_to_coo(np.array([0, 2, 3], np.int32), ind, out)
        np.testing.assert_array_equal(out, [[0, 0], [0, 1], [1, 2]])


@pytest.mark.parametrize("convert", [xp.asarray, xp.from_scipy])
def test_spmatrix_conversion_warns_about_array_semantics(convert):
    """A csr_matrix (what CountVectorizer returns) becomes an array: ``*`` and ``sum(axis=1)`` change meaning."""
    M = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 4.0]]))
    with pytest.warns(xp.MatrixSemanticsWarning, match="migration") as rec:
        A = convert(M)
    assert rec[0].filename == __file__  # attributed to the user's line, not the library's
    v = np.array([1.0, 10.0])
    np.testing.assert_array_equal((A * v).todense(), M.toarray() * v)  # element-wise, unlike M * v
    assert A.sum(axis=1).shape == (2,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xp.asarray(sp.csr_array(M))  # an sparray has array semantics: no warning
        warnings.filterwarnings("ignore", category=xp.MatrixSemanticsWarning)
        xp.asarray(M)  # silenceable


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_to_scipy_never_shares_a_buffer(fmt):
    """Issue 29: the scipy array owns writable copies; writing to it leaves the BCOOArray alone."""
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    A = xp.from_scipy(sp.csr_array(dense))
    A = A * 1.0  # host buffers of the engine's own
    S = A.to_scipy(format=fmt)
    S.data[:] = -9.0
    if fmt == "coo":
        S.coords[0][:] = 0
    np.testing.assert_array_equal(A.toarray(), dense)


@pytest.mark.parametrize("fmt", ["csc", "csr", "bsr", "coo"])
def test_from_scipy_narrow_index_dtypes_upcast(fmt):
    """Issue 29: int16 indices (scipy's own tocoo() refuses them for CSC) are upcast; scipy is the oracle."""
    M = sp.csr_array(sp.random(20, 20, density=0.2, format="csr", random_state=0))
    C = M.asformat(fmt, copy=True)
    if fmt == "coo":
        C.coords = tuple(c.astype(np.int16) for c in C.coords)
    else:
        C.indices = C.indices.astype(np.int16)
        C.indptr = C.indptr.astype(np.int16)
    np.testing.assert_array_equal(xp.from_scipy(C).toarray(), M.toarray())
