"""Sorting, searching and set functions on sparse input without densifying,
and the densification guard.

Oracles: NumPy on the dense values of small arrays (any layout from
``_oracle.cases``: batch / dense dimensions, duplicates, padding, unsorted
entries, fill values 0, small values and NaN), with array-api-strict on the
same dense values as a second oracle for the exact array API semantics (NaN
last, descending = reversed ascending, every NaN a distinct unique value).
``sort``, ``argsort``, ``searchsorted`` and ``isin`` run eagerly and under
``jax.jit``; ``unique_*`` (data-dependent shapes) eagerly, and raise under
``jit``. A 120,000 x 90,000 array with two stored entries checks that the
sparse algorithms never call ``todense()`` and that ``argsort`` (inherently
dense) raises the guard's error, naming the bytes, before allocating.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._kernels.dimensions import coo_triplets
from bcoo_array._relayout import dense_layout, is_dense_layout
from _oracle import DTYPES, REAL, assert_matches, cases, same_scalar, to_np

xs = pytest.importorskip("array_api_strict")


@pytest.fixture(autouse=True)
def _reset_limit():
    yield
    xp.set_max_dense_bytes(None)


def _stored_coords(a: BCOOArray) -> np.ndarray:
    """Coordinates ``(n, ndim)`` of the distinct stored positions of a concrete array."""
    _, coords = coo_triplets(a.data, a.indices, a.shape, a.n_batch, a.n_dense, a.indices_sorted and a.unique_indices)
    return np.asarray(coords).T.astype(np.int64)


def _lane_counts(coords: np.ndarray, axis: int) -> dict:
    keys = [tuple(np.delete(c, axis)) for c in coords]
    out: dict = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return out


def _np_sort(d: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """NumPy's stable sort; descending as array-api-strict does it (flip, sort, flip: NaN first)."""
    if not descending:
        return np.sort(d, axis=axis, kind="stable")
    return np.flip(np.sort(np.flip(d, axis), axis=axis, kind="stable"), axis)


def _strict(name, d, **kw):
    with xs.ArrayAPIStrictFlags(api_version="2025.12"):
        out = getattr(xs, name)(xs.asarray(d), **kw)
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


# -- sort -----------------------------------------------------------------------------------------


@settings(max_examples=25)
@given(data=st.data())
def test_sort_matches_numpy_and_stays_sparse(data):
    c = data.draw(cases(dtypes=REAL, min_ndim=1, max_ndim=3), label="x")
    nd = c.dense.ndim
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    desc = data.draw(st.booleans(), label="descending")
    want = _np_sort(c.dense, axis, desc)
    np.testing.assert_array_equal(want, _strict("sort", c.dense, axis=axis, descending=desc))
    got = xp.sort(c.arr, axis=axis, descending=desc, stable=data.draw(st.booleans(), label="stable"))
    assert_matches(got, want)
    assert same_scalar(got.fill_value, c.arr.fill_value)
    if not is_dense_layout(c.arr):
        # Sparse in, sparse out: the same number of stored entries in every lane.
        assert got.n_sparse == got.ndim
        ax = axis % nd
        assert _lane_counts(_stored_coords(got), ax) == _lane_counts(_stored_coords(c.arr), ax)
    jitted = jax.jit(lambda a: xp.sort(a, axis=axis, descending=desc))(c.arr)
    assert_matches(jitted, want)
    assert same_scalar(jitted.fill_value, c.arr.fill_value)


@pytest.mark.parametrize("fill", [0.0, 1.0, -1.0, np.nan])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_places_the_fill_block(fill, descending):
    d = np.full((3, 6), fill)
    d[0, [1, 4]] = [2.0, -3.0]
    d[1, [0, 2, 5]] = [np.nan, 0.5, fill]
    d[2, :] = [5.0, -5.0, np.nan, fill, 1.0, -1.0]
    a = BCOOArray.fromdense(d, fill_value=fill)
    for axis in (0, 1):
        got = xp.sort(a, axis=axis, descending=descending)
        assert_matches(got, _np_sort(d, axis, descending))
        assert got.nse <= a.nse


def test_sort_integer_and_dense_layout():
    d = np.array([[0, 3, 0, -2], [7, 0, 0, 0]], np.int32)
    a = BCOOArray.fromdense(d, fill_value=0)
    assert_matches(xp.sort(a, axis=1), np.sort(d, axis=1))
    assert_matches(xp.sort(a, axis=0, descending=True), -np.sort(-d, axis=0))
    dl = dense_layout(np.arange(6.0)[::-1].reshape(2, 3))
    assert_matches(xp.sort(dl, axis=1), np.sort(to_np(dl), axis=1))


def test_sort_gradient_flows_through_data():
    a = BCOOArray.fromdense(np.array([0.0, 3.0, 0.0, -2.0, 1.0]))
    g = jax.grad(lambda v: xp.sort(a.with_data(v)).data @ np.arange(a.nse, dtype=float))(a.data)
    # sort (-2, 0, 0, 1, 3): -2 is stored first, then 1 and 3 after the zeros (stored order 1, 3).
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 1.0])


# -- argsort --------------------------------------------------------------------------------------


@settings(max_examples=15)
@given(data=st.data())
def test_argsort_matches_strict(data):
    c = data.draw(cases(dtypes=REAL, min_ndim=1, max_ndim=3), label="x")
    nd = c.dense.ndim
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    desc = data.draw(st.booleans(), label="descending")
    want = _strict("argsort", c.dense, axis=axis, descending=desc)
    if not desc:
        np.testing.assert_array_equal(want, np.argsort(c.dense, axis=axis, kind="stable"))
    assert_matches(xp.argsort(c.arr, axis=axis, descending=desc), want, dtype=np.int64)
    assert_matches(jax.jit(lambda a: xp.argsort(a, axis=axis, descending=desc))(c.arr), want, dtype=np.int64)


# -- unique_* -------------------------------------------------------------------------------------


def _np_unique(d):
    return np.unique(d.reshape(-1), return_index=True, return_inverse=True, return_counts=True, equal_nan=False)


@settings(max_examples=60)
@given(data=st.data())
def test_unique_matches_numpy_and_strict(data):
    c = data.draw(cases(dtypes=DTYPES, max_ndim=3), label="x")
    d = c.dense
    values, index, inverse, counts = _np_unique(d)
    inverse = inverse.reshape(d.shape)
    sv, sc = _strict("unique_counts", d)
    np.testing.assert_array_equal(sv, values)
    np.testing.assert_array_equal(sc, counts)

    assert_matches(xp.unique_values(c.arr), values)
    r = xp.unique_counts(c.arr)
    assert_matches(r.values, values)
    assert_matches(r.counts, counts, dtype=np.int64)
    r = xp.unique_inverse(c.arr)
    assert_matches(r.values, values)
    assert_matches(r.inverse_indices, inverse, dtype=np.int64)
    r = xp.unique_all(c.arr)
    assert_matches(r.values, values)
    assert_matches(r.indices, index, dtype=np.int64)
    assert_matches(r.inverse_indices, inverse, dtype=np.int64)
    assert_matches(r.counts, counts, dtype=np.int64)
    sa = _strict("unique_all", d)
    np.testing.assert_array_equal(to_np(r.indices), sa[1])

    fill_nan = d.dtype.kind in "fc" and bool(np.isnan(c.fill))
    stored = _stored_coords(c.arr) if d.ndim and not is_dense_layout(c.arr) else None
    if stored is not None and not fill_nan:
        # The inverse is sparse on x's stored positions; its fill value is the fill value's index.
        inv = r.inverse_indices
        assert inv.nse == stored.shape[0]
        np.testing.assert_array_equal(_stored_coords(inv), stored)
        if stored.shape[0] < d.size:
            hits = np.flatnonzero(values == c.fill)
            assert int(inv.fill_value) == int(hits[0])


@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_raises_under_jit(name):
    a = BCOOArray.fromdense(np.array([0.0, 2.0, 0.0]))
    with pytest.raises(jax.errors.ConcretizationTypeError, match=name):
        jax.jit(getattr(xp, name))(a)


def test_unique_first_unstored_index():
    d = np.zeros((3, 4))
    d.reshape(-1)[[0, 1, 2, 5]] = [1.0, 0.0, 2.0, 7.0]  # an explicit 0.0 at flat 1; first unstored at 3
    a = BCOOArray.fromdense(d, fill_value=9.0)
    a = BCOOArray((a.data, a.indices), shape=a.shape, fill_value=0.0)
    r = xp.unique_all(a)
    np.testing.assert_array_equal(to_np(r.values), [0.0, 1.0, 2.0, 7.0])
    np.testing.assert_array_equal(to_np(r.indices), [1, 0, 2, 5])
    np.testing.assert_array_equal(to_np(r.counts), [9, 1, 1, 1])


# -- searchsorted ---------------------------------------------------------------------------------


@settings(max_examples=15)
@given(data=st.data())
def test_searchsorted_sparse_x1_and_x2(data):
    c = data.draw(cases(dtypes=REAL, shape=(data.draw(st.integers(0, 6), label="n"),)), label="x1")
    v = data.draw(cases(dtype=c.dense.dtype, max_ndim=3), label="x2")
    side = data.draw(st.sampled_from(["left", "right"]), label="side")
    srt = xp.sort(c.arr)
    x1 = np.sort(c.dense)
    want = np.searchsorted(x1, v.dense, side=side)
    with xs.ArrayAPIStrictFlags(api_version="2025.12"):
        np.testing.assert_array_equal(want, np.asarray(xs.searchsorted(xs.asarray(x1), xs.asarray(v.dense),
                                                                       side=side)))
    got = xp.searchsorted(srt, v.arr, side=side)
    assert_matches(got, want, dtype=np.int64)
    if v.dense.ndim and not is_dense_layout(v.arr):
        # Sparse x2, sparse result: fill value = the insertion point of x2's fill value.
        assert got.n_sparse == v.arr.n_sparse
        assert int(got.fill_value) == int(np.searchsorted(x1, v.fill, side=side))
    assert_matches(jax.jit(lambda a, b: xp.searchsorted(a, b, side=side))(srt, v.arr), want, dtype=np.int64)
    # x1 closed over (concrete under jit): the result stays sparse there too.
    closed = jax.jit(lambda b: xp.searchsorted(srt, b, side=side))(v.arr)
    assert_matches(closed, want, dtype=np.int64)
    if v.dense.ndim and not is_dense_layout(v.arr):
        assert not is_dense_layout(closed)
    order = np.argsort(c.dense, kind="stable")
    got = xp.searchsorted(c.arr, v.arr, side=side, sorter=xp.asarray(order))
    assert_matches(got, np.searchsorted(c.dense, v.dense, side=side, sorter=order), dtype=np.int64)


def test_searchsorted_scalar_and_dense_x2():
    a = xp.sort(BCOOArray.fromdense(np.array([0.0, 4.0, 0.0, -1.0, 0.0, np.nan])))
    dense = np.sort(to_np(a))
    for v in (-2.0, -1.0, 0.0, 0.5, 4.0, np.nan):
        for side in ("left", "right"):
            assert int(xp.searchsorted(a, v, side=side)) == int(np.searchsorted(dense, v, side=side))
    q = jax.numpy.asarray([-1.0, 0.0, 3.0, np.inf, np.nan])
    assert_matches(xp.searchsorted(a, q), np.searchsorted(dense, np.asarray(q)), dtype=np.int64)


# -- isin -----------------------------------------------------------------------------------------


@settings(max_examples=15)
@given(data=st.data())
def test_isin_sparse_x2(data):
    a = data.draw(cases(dtypes=REAL, max_ndim=3), label="x1")
    b = data.draw(cases(dtype=a.dense.dtype, max_ndim=3), label="x2")
    inv = data.draw(st.booleans(), label="invert")
    want = np.isin(a.dense, b.dense, invert=inv)
    assert_matches(xp.isin(a.arr, b.arr, invert=inv), want)
    assert_matches(jax.jit(lambda x, y: xp.isin(x, y, invert=inv))(a.arr, b.arr), want)
    closed = jax.jit(lambda x: xp.isin(x, b.arr, invert=inv))(a.arr)  # x2 concrete: x1's sparsity kept
    assert_matches(closed, want)
    if a.dense.ndim and not is_dense_layout(a.arr):
        assert not is_dense_layout(closed)


# -- the guard ------------------------------------------------------------------------------------

HUGE = (120_000, 90_000)


def _huge(fill=0.0):
    return BCOOArray((np.array([3.0, -2.0]), np.array([[5, 7], [119_999, 89_999]])), shape=HUGE, fill_value=fill)


@pytest.fixture
def no_todense(monkeypatch):
    def refuse(self):
        raise AssertionError(f"todense() of shape {self.shape} called")
    monkeypatch.setattr(BCOOArray, "todense", refuse)


def test_huge_sort_and_unique_never_densify(no_todense):
    a = _huge()
    s = xp.sort(a, axis=1)
    assert s.nse == 2
    np.testing.assert_array_equal(np.asarray(s.indices), [[5, 89_999], [119_999, 0]])
    np.testing.assert_array_equal(np.asarray(s.data), [3.0, -2.0])
    s = xp.sort(a, axis=0, descending=True)
    np.testing.assert_array_equal(np.asarray(s.indices), [[0, 7], [119_999, 89_999]])
    s = jax.jit(lambda x: xp.sort(x, axis=0))(a)
    np.testing.assert_array_equal(np.asarray(s.indices), [[119_999, 7], [0, 89_999]])
    n = HUGE[0] * HUGE[1]
    np.testing.assert_array_equal(np.asarray(xp.unique_values(a).data[0]), [-2.0, 0.0, 3.0])
    r = xp.unique_counts(a)
    np.testing.assert_array_equal(np.asarray(r.counts.data[0]), [1, n - 2, 1])
    r = xp.unique_all(a)
    np.testing.assert_array_equal(np.asarray(r.indices.data[0]), [n - 1, 0, 5 * 90_000 + 7])
    assert r.inverse_indices.nse == 2 and int(r.inverse_indices.fill_value) == 1
    np.testing.assert_array_equal(np.asarray(r.inverse_indices.data), [2, 0])
    inv = xp.unique_inverse(_huge(fill=-2.0)).inverse_indices
    assert inv.nse == 2 and int(inv.fill_value) == 0
    flat = xp.sort(BCOOArray((np.array([3.0, -2.0]), np.array([[5], [n - 1]])), shape=(n,)))
    q = BCOOArray.fromdense(np.array([0.0, -3.0, 1.0, 5.0, 0.0]))
    got = xp.searchsorted(flat, q)
    assert int(got.fill_value) == 1
    np.testing.assert_array_equal(np.asarray(got.data), [0, n - 1, n])


def test_huge_argsort_raises_naming_the_bytes(no_todense):
    a = _huge()
    nbytes = HUGE[0] * HUGE[1] * (8 + 8)
    for fn in (xp.argsort, jax.jit(xp.argsort)):
        with pytest.raises(MemoryError) as info:
            fn(a)
        msg = str(info.value)
        for part in ("argsort()", "(120000, 90000)", f"{nbytes:,} bytes", "2,147,483,648 bytes",
                     "set_max_dense_bytes", "BCOO_ARRAY_MAX_DENSE_BYTES", "todense()"):
            assert part in msg, (part, msg)


def test_huge_inherently_dense_cases_raise(no_todense):
    with pytest.raises(MemoryError, match="unique_values"):
        xp.unique_values(_huge(fill=np.nan))
    with pytest.raises(MemoryError, match="unique_all"):
        xp.unique_all(_huge(fill=np.nan))
    with pytest.raises(MemoryError, match="nonzero"):
        xp.nonzero(_huge(fill=1.0))
    with pytest.raises(MemoryError, match="where"):
        xp.where(_huge() > 0, jax.numpy.ones(HUGE[1]), 0.0)
    with pytest.raises(MemoryError, match="searchsorted"):
        jax.jit(xp.searchsorted)(xp.asarray(np.arange(3.0)), _huge())
    with pytest.raises(MemoryError, match="isin"):
        jax.jit(xp.isin)(_huge(), xp.asarray(np.arange(3.0)))


def test_limit_setting_and_environment(monkeypatch):
    a = BCOOArray.fromdense(np.array([[0.0, 1.0], [2.0, 0.0]]))  # argsort: 4 * (8 + 8) = 64 bytes
    monkeypatch.delenv("BCOO_ARRAY_MAX_DENSE_BYTES", raising=False)
    assert xp.get_max_dense_bytes() == 2 * 1024**3
    assert xp.set_max_dense_bytes(64) == 2 * 1024**3
    xp.argsort(a)  # exactly at the limit
    xp.set_max_dense_bytes(63)
    with pytest.raises(MemoryError, match="64 bytes"):
        xp.argsort(a)
    with pytest.raises(MemoryError):
        jax.jit(xp.argsort)(a)
    assert a.todense().shape == (2, 2)  # explicit densification is never limited
    xp.argsort(dense_layout(np.ones((2, 2))))  # already dense: not checked
    assert xp.set_max_dense_bytes(float("inf")) == 63
    assert xp.get_max_dense_bytes() == float("inf")
    xp.set_max_dense_bytes(None)
    monkeypatch.setenv("BCOO_ARRAY_MAX_DENSE_BYTES", "10")
    assert xp.get_max_dense_bytes() == 10
    with pytest.raises(MemoryError, match="BCOO_ARRAY_MAX_DENSE_BYTES"):
        xp.argsort(a)
    monkeypatch.setenv("BCOO_ARRAY_MAX_DENSE_BYTES", "inf")
    xp.argsort(a)
    monkeypatch.setenv("BCOO_ARRAY_MAX_DENSE_BYTES", "lots")
    with pytest.raises(ValueError, match="BCOO_ARRAY_MAX_DENSE_BYTES"):
        xp.get_max_dense_bytes()
    monkeypatch.delenv("BCOO_ARRAY_MAX_DENSE_BYTES")
    with pytest.raises(ValueError, match="non-negative"):
        xp.set_max_dense_bytes(-1)
    with pytest.raises(TypeError, match="limit"):
        xp.set_max_dense_bytes(1.5)
    assert xp.get_max_dense_bytes() == 2 * 1024**3


@pytest.mark.parametrize("engine", ["host", "xla"])
def test_every_implicit_densification_is_guarded_before_allocating(engine, monkeypatch):
    """Element-wise results in dense layout, broadcasts that store every copy, outer broadcasts and slice
    assignment raise the guard's MemoryError (naming the bytes and the setting) instead of allocating."""
    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    n = 100_000
    E = xp.eye(n)
    v = np.arange(1.0, n + 1)
    V = xp.asarray(v)
    calls = {
        "add": lambda: E + v,  # fill + v takes many values: dense layout
        "add ": lambda: E + v[:, None],
        "update_layout": lambda: E + V,  # V broadcast to (n, n) stores every row
        "multiply": lambda: xp.reshape(V, (n, 1)) * xp.reshape(V, (1, n)),  # outer broadcast of full vectors
        "__setitem__": lambda: E.__setitem__((slice(None), slice(None)), 5.0),
        "broadcast_to": lambda: xp.broadcast_to(xp.reshape(V, (1, n)), (n, n)) + E,
    }
    for name, call in calls.items():
        with pytest.raises(MemoryError) as info:
            call()
        msg = str(info.value)
        for part in ("bytes", "set_max_dense_bytes", "BCOO_ARRAY_MAX_DENSE_BYTES"):
            assert part in msg, (name, msg)
    # the same operations on small arrays, or storing little, still run
    assert (E * v).nse == n  # fill * v is one value: stays sparse
    E[:3, :] = 2.0
    assert E.nse == n + 3 * n - 3
