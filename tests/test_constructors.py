"""Constructors: ``asarray`` (NumPy/JAX arrays, nested lists, Python scalars,
BCOOArrays; ``dtype=``, ``copy=``), ``BCOOArray.fromdense``, the JAX form
``BCOOArray((data, indices), shape=)``, the scipy form
``BCOOArray((data, (row, col)), shape=)``; eager validation of index values and
shapes; index dtypes; a dimension of 3e9; the shared Matrix Market matrices
round-tripping through scipy -> BCOOArray -> dense.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import assert_matches, cases, to_np

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
MATRIX_FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []


# -- asarray ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, dtype",
    [
        ([[1, 0], [0, 2]], np.int64),
        ([[1.5, 0.0], [0.0, 0.0]], np.float64),
        ([True, False], np.bool_),
        ([[1 + 2j, 0]], np.complex128),
        (3, np.int64),
        (0.0, np.float64),
        (True, np.bool_),
        ([], np.float64),
    ],
)
def test_asarray_python(obj, dtype):
    a = xp.asarray(obj)
    assert_matches(a, np.asarray(obj, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex64, np.bool_])
def test_asarray_numpy_and_jax_keep_dtype(dtype):
    d = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    assert_matches(xp.asarray(d), d)
    assert_matches(xp.asarray(jnp.asarray(d)), d)
    a = xp.asarray(d)
    assert a.nse == int(np.count_nonzero(d))


def test_asarray_dtype_and_copy():
    a = xp.asarray([[1, 2], [0, 3]], dtype=xp.float32)
    assert a.dtype == np.float32
    assert xp.asarray(a) is a
    assert xp.asarray(a, copy=False) is a
    b = xp.asarray(a, copy=True)
    assert b is not a
    assert_matches(b, to_np(a))
    c = xp.asarray(a, dtype=xp.float64)
    assert c.dtype == np.float64
    assert_matches(c, to_np(a).astype(np.float64))
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(a, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(np.ones(2), copy=False)
    with pytest.raises(OverflowError):
        xp.asarray([300], dtype=xp.int8)
    with pytest.raises(TypeError):
        xp.asarray(["a", "b"])


# -- the JAX and scipy forms --------------------------------------------------------------------


def test_jax_form_and_scipy_form_agree():
    data = np.array([1.0, 2.0, 3.0])
    rows = np.array([0, 2, 2])
    cols = np.array([1, 0, 1])
    a = BCOOArray((data, np.stack([rows, cols], axis=1)), shape=(3, 2))
    b = BCOOArray((data, (rows, cols)), shape=(3, 2))
    expected = np.zeros((3, 2))
    expected[rows, cols] = data
    assert_matches(a, expected)
    assert_matches(b, expected)
    # shape inferred from the largest index in the scipy form
    assert BCOOArray((data, (rows, cols))).shape == (3, 2)
    # JAX arrays are taken as they are
    assert_matches(BCOOArray((jnp.asarray(data), jnp.asarray(np.stack([rows, cols], 1))), shape=(3, 2)), expected)


def test_scipy_form_duplicates_sum():
    b = BCOOArray((np.array([1, 2, 3]), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    assert_matches(b, np.array([[0, 3], [3, 0]]))


@pytest.mark.parametrize(
    "indices, shape, axis, index",
    [
        (np.array([[0, 5]]), (3, 4), 1, 5),
        (np.array([[4, 0]]), (3, 4), 0, 4),
        (np.array([[-1, 0]]), (3, 4), 0, -1),
    ],
)
def test_index_validation_names_axis_index_bound(indices, shape, axis, index):
    with pytest.raises(ValueError) as info:
        BCOOArray((np.ones(1), indices), shape=shape)
    msg = str(info.value)
    assert f"axis {axis}" in msg and str(index) in msg and str(shape[axis]) in msg


def test_index_validation_batched_and_scipy_form():
    # n_batch = 1 (from the indices), one sparse dimension (axis 1, size 3), one dense
    with pytest.raises(ValueError, match=r"index 7 on axis 1 .*size 3"):
        BCOOArray((np.ones((2, 1, 4)), np.array([[[0]], [[7]]])), shape=(2, 3, 4))
    with pytest.raises(ValueError, match="axis 1"):
        BCOOArray((np.ones(2), (np.array([0, 1]), np.array([0, 9]))), shape=(2, 3))
    # the padding value (== size) is accepted
    a = BCOOArray((np.ones(2), np.array([[0, 0], [3, 4]])), shape=(3, 4))
    assert_matches(a, np.pad(np.ones((1, 1)), ((0, 2), (0, 3))))


def test_shape_validation():
    with pytest.raises(ValueError, match="shape"):
        BCOOArray((np.ones(1), np.array([[0, 0]])))
    with pytest.raises(ValueError, match="negative"):
        BCOOArray((np.ones(1), np.array([[0, 0]])), shape=(2, -1))
    with pytest.raises(TypeError):
        BCOOArray((np.ones(1), np.array([[0, 0]])), shape=(2, 1.5))
    with pytest.raises(ValueError):  # n_sparse disagrees with the shape
        BCOOArray((np.ones(1), np.array([[0, 0]])), shape=(2, 2, 2))
    with pytest.raises(ValueError):  # data's nse disagrees with indices'
        BCOOArray((np.ones(2), np.array([[0, 0]])), shape=(2, 2))
    with pytest.raises(TypeError, match="integer"):
        BCOOArray((np.ones(1), np.array([[0.0, 0.0]])), shape=(2, 2))
    with pytest.raises(TypeError):
        BCOOArray(np.ones((2, 2)))
    with pytest.raises(ValueError, match="fill_value"):
        BCOOArray((np.ones(1, np.int32), np.array([[0]])), shape=(2,), fill_value=0.5)


def test_index_dtype_int32_by_default():
    a = BCOOArray((np.ones(1), np.array([[0, 0]], np.int64)), shape=(3, 4))
    assert a.indices.dtype == np.int32
    assert BCOOArray.fromdense(np.eye(3)).indices.dtype == np.int32
    assert BCOOArray.fromdense(np.eye(3), index_dtype=np.int64).indices.dtype == np.int64


def test_huge_dimension_no_wraparound():
    """A dimension of 3e9 (> 2**31) takes int64 indices; nothing wraps around."""
    n = 3_000_000_000
    rows = np.array([0, 2_999_999_999, 2_500_000_000, 2_500_000_000])
    cols = np.array([1, 3, 0, 0])
    a = BCOOArray((np.array([1.0, 2.0, 3.0, 4.0]), (rows, cols)), shape=(n, 4))
    assert a.indices.dtype == np.int64
    assert int(np.asarray(a.indices).max()) == 2_999_999_999
    s = xp.sum(a, axis=1)
    assert s.shape == (n,)
    cs = s.sum_duplicates()
    got = dict(zip(np.asarray(cs.indices)[:, 0].tolist(), np.asarray(cs.data).tolist()))
    assert got == {0: 1.0, 2_500_000_000: 7.0, 2_999_999_999: 2.0}
    np.testing.assert_array_equal(to_np(a[2_999_999_998:]), [[0, 0, 0, 0], [0, 0, 0, 2.0]])
    np.testing.assert_array_equal(to_np(a[2_500_000_000]), [7.0, 0, 0, 0])
    m = xp.to_scipy(a)
    assert m.shape == (n, 4)
    assert sorted(m.tocoo().row.tolist()) == sorted(rows.tolist())
    back = xp.from_scipy(m)
    assert back.shape == (n, 4) and back.indices.dtype == np.int64


def test_bool_stays_bool():
    a = BCOOArray((np.array([True, True]), np.array([[0], [0]])), shape=(3,))
    assert a.dtype == np.bool_
    assert_matches(a, np.array([True, False, False]))  # True + True is logical or
    assert xp.asarray([True, False]).dtype == np.bool_
    assert a.sum_duplicates().dtype == np.bool_


@settings(max_examples=20)
@given(cases(max_ndim=3))
def test_asarray_of_bcoo_keeps_values(c):
    assert xp.asarray(c.arr) is c.arr
    assert_matches(xp.asarray(c.arr, copy=True), c.dense)


# -- the shared Matrix Market matrices ---------------------------------------------------------


#: Largest matrix (in elements) compared as a whole dense array; larger ones are
#: compared entry by entry in canonical COO form and densely on row blocks.
DENSE_LIMIT = 5_000_000


def _canonical_coo(rows, cols, vals):
    order = np.lexsort((cols, rows))
    return rows[order], cols[order], vals[order]


@pytest.mark.skipif(not MATRIX_FILES, reason=f"shared matrices not found at {MATRICES}")
@pytest.mark.parametrize("name", MATRIX_FILES or ["none"])
def test_matrix_market_roundtrip(name):
    import scipy.io
    import scipy.sparse as sp

    m = sp.coo_array(scipy.io.mmread(MATRICES / name))
    m.sum_duplicates()
    a = xp.from_scipy(m)
    assert a.shape == m.shape
    assert a.dtype == m.dtype
    if m.shape[0] * m.shape[1] <= DENSE_LIMIT:
        got = to_np(a)
        assert got.dtype == m.dtype
        np.testing.assert_array_equal(got, m.toarray())
    else:
        # every stored entry, exactly
        c = a.sum_duplicates()
        idx = np.asarray(c.indices)
        r, cc, v = _canonical_coo(idx[:, 0].astype(np.int64), idx[:, 1].astype(np.int64), np.asarray(c.data))
        er, ec, ev = _canonical_coo(m.row.astype(np.int64), m.col.astype(np.int64), m.data)
        np.testing.assert_array_equal(r, er)
        np.testing.assert_array_equal(cc, ec)
        np.testing.assert_array_equal(v, ev)
        assert v.dtype == m.dtype
        # and densely on blocks of rows (first, middle, last), unstored zeros included
        csr = m.tocsr()
        for start in (0, m.shape[0] // 2, max(m.shape[0] - 64, 0)):
            block = to_np(a[start:start + 64])
            assert block.dtype == m.dtype
            np.testing.assert_array_equal(block, csr[start:start + 64].toarray())
    back = xp.to_scipy(a).tocsr()
    assert back.dtype == m.dtype and back.shape == m.shape
    assert (back != m.tocsr()).nnz == 0


def test_asarray_of_concrete_input_inside_jit():
    # NumPy, Python and closed-over jax.Array input is concrete while jit traces: asarray
    # stores it by value (it used to stage the comparison and ask for nse=). Found by the
    # differential fuzz (conformance/test_fuzz.py), indexing with xp.asarray(np_index).
    idx = np.array([1, 0, 2, 0])
    closed = jnp.asarray([0.0, 2.5, 0.0])

    @jax.jit
    def f(x):
        return x[xp.asarray(idx)], xp.asarray([[0, 3], [0, 0]]), xp.asarray(closed, dtype=xp.float32)

    got, py, cl = f(xp.asarray(np.array([5, 0, 7])))
    np.testing.assert_array_equal(np.asarray(got.todense()), [0, 5, 7, 5])
    assert py.nse == 1 and cl.nse == 1 and cl.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(py.todense()), [[0, 3], [0, 0]])
    np.testing.assert_array_equal(np.asarray(cl.todense()), [0.0, 2.5, 0.0])


def test_eye_with_a_diagonal_outside_the_matrix():
    # Found by the official suite with a fresh seed (637713012): k = 2**63 overflowed NumPy's int64.
    import bcoo_array as xp

    for n_rows, n_cols, k in ((0, 0, 2**63), (3, 4, 2**63), (3, 4, -(2**70)), (3, 4, 4), (3, 4, -3)):
        out = xp.eye(n_rows, n_cols, k=k)
        assert out.shape == (n_rows, n_cols) and out.nse == 0
        np.testing.assert_array_equal(np.asarray(out.todense()), np.eye(n_rows, n_cols, k=max(min(k, 10), -10)))
    np.testing.assert_array_equal(np.asarray(xp.eye(3, 4, k=-2).todense()), np.eye(3, 4, k=-2))


@pytest.mark.parametrize("view", ["column_of_one", "every_other", "transposed", "sliced"])
def test_from_dlpack_reads_any_strides_and_copies(view):
    """scikit-learn's move_to hands over views with non-compact strides (JAX's importer refuses them)."""
    base = np.arange(24, dtype=np.float64)
    x = {
        "column_of_one": np.lib.stride_tricks.as_strided(base, (4, 1), (16, 16)),
        "every_other": base[::2],
        "transposed": base.reshape(4, 6).T,
        "sliced": base.reshape(4, 6)[:, 2:5],
    }[view]
    want = x.copy()
    A = xp.from_dlpack(x)
    base[:] = -1.0  # the array owns its entries
    np.testing.assert_array_equal(np.asarray(A.todense()), want)
    np.testing.assert_array_equal(np.asarray(xp.from_dlpack(jax.numpy.asarray(want)).todense()), want)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_eager_and_traced_construction_agree_on_in_range_indices(data):
    """Eagerly the constructor checks the indices; under jit it cannot, and in-range indices (duplicates and
    padding included) give the same array. Out of range: eagerly an error, under jit the entry is padding."""
    m, n = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    k = data.draw(st.integers(0, 12))
    rows = np.array(data.draw(st.lists(st.integers(0, m), min_size=k, max_size=k)), np.int32)  # m: padding
    cols = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)), np.int32)
    rows = np.where(rows == m, m, rows)
    cols = np.where(rows == m, n, cols)  # a padding row is padding in every column
    vals = np.arange(1.0, k + 1.0)
    idx = np.stack([rows, cols], 1).reshape(k, 2)
    eager = xp.BCOOArray((vals, idx), shape=(m, n)).todense()
    traced = jax.jit(lambda d, i: xp.BCOOArray((d, i), shape=(m, n)).todense())(vals, idx)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))
    if k:
        bad = idx.copy()
        bad[0] = [0, n + 3]
        with pytest.raises(ValueError, match="out of bounds"):
            xp.BCOOArray((vals, bad), shape=(m, n))
        got = jax.jit(lambda d, i: xp.BCOOArray((d, i), shape=(m, n)).todense())(vals, bad)
        keep = np.ones(k, bool)
        keep[0] = False
        want = xp.BCOOArray((vals[keep], idx[keep]), shape=(m, n)).todense()
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))  # documented: dropped as padding
