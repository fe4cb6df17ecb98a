"""Basic indexing (integers, negative integers, slices with any step, ``...``,
``None``) and integer-array lookups against NumPy, for every layout and fill
value, eagerly and under ``jax.jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import assert_matches, cases, same_scalar, to_np


@st.composite
def basic_keys(draw, shape):
    """A basic index for ``shape``: ints (maybe negative), slices (any step), at most one ``...``, Nones."""
    parts = []
    ndim = len(shape)
    n_index = draw(st.integers(0, ndim))
    for ax in range(n_index):
        n = shape[ax]
        kind = draw(st.sampled_from(["int", "slice", "slice", "none"] if n else ["slice", "none"]))
        if kind == "int":
            i = draw(st.integers(-n, n - 1))
            parts.append(i)
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
            parts.append(slice(start, stop, step))
        else:
            parts.append(None)
            parts.append(slice(None))
    if draw(st.booleans()):
        # The parts were drawn for the leading axes: an ellipsis may only go
        # before them when it stands for no axis at all.
        where = draw(st.integers(0, len(parts))) if n_index == ndim else len(parts)
        parts.insert(where, Ellipsis)
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return tuple(parts) if draw(st.booleans()) or len(parts) != 1 else parts[0]


@settings(max_examples=40)
@given(data=st.data())
def test_basic_indexing(data):
    c = data.draw(cases(max_ndim=3), label="x")
    key = data.draw(basic_keys(c.dense.shape), label="key")
    expected = c.dense[key]
    out = c.arr[key]
    assert_matches(out, expected)
    if out.ndim and out.n_sparse:
        assert same_scalar(out.fill_value, c.fill)
    if data.draw(st.booleans(), label="jit"):
        assert_matches(jax.jit(lambda a: a[key])(c.arr), expected)


def test_int_out_of_bounds():
    a = BCOOArray.fromdense(np.eye(3))
    with pytest.raises(IndexError, match="out of bounds"):
        a[3]
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, -4]
    with pytest.raises(IndexError, match="too many"):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[..., ...]
    with pytest.raises(TypeError):
        a[1.5]


@settings(max_examples=10)
@given(data=st.data())
def test_integer_array_pointwise(data):
    c = data.draw(cases(min_ndim=1, max_ndim=3, max_side=3).filter(lambda c: c.dense.size > 0), label="x")
    n = data.draw(st.integers(0, 4), label="n")
    idx = tuple(np.array(data.draw(st.lists(st.integers(-s, s - 1), min_size=n, max_size=n)), dtype=np.int64)
                for s in c.dense.shape)
    expected = c.dense[idx]
    assert_matches(c.arr[idx], expected)
    jidx = tuple(jnp.asarray(i) for i in idx)
    assert_matches(jax.jit(lambda a, k: a[k])(c.arr, jidx), expected)


@settings(max_examples=10)
@given(data=st.data())
def test_take_one_axis(data):
    c = data.draw(cases(min_ndim=1, max_ndim=3).filter(lambda c: c.dense.size > 0), label="x")
    ax = data.draw(st.integers(0, c.dense.ndim - 1), label="axis")
    s = c.dense.shape[ax]
    idx = np.array(data.draw(st.lists(st.integers(0, s - 1), max_size=4)), dtype=np.int64)
    expected = np.take(c.dense, idx, axis=ax)
    assert_matches(xp.take(c.arr, jnp.asarray(idx), axis=ax), expected)


def test_bool_mask_eager_and_jit_error():
    d = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    a = BCOOArray.fromdense(d, fill_value=0.0)
    m = d > 0.5
    assert_matches(a[m], d[m])
    with pytest.raises(ValueError, match="jit"):
        jax.jit(lambda x, mm: x[mm])(a, jnp.asarray(m))


def test_setitem_rebinds_buffers():
    d = np.zeros((3, 3))
    a = BCOOArray.fromdense(d)
    old = a.data
    a[1, 2] = 5.0
    a[0, :] = 1.0
    d[1, 2] = 5.0
    d[0, :] = 1.0
    np.testing.assert_array_equal(to_np(a), d)
    assert old.shape == (0,)  # the old buffer is untouched


def test_boolean_mask_over_leading_dimensions_and_zero_size_mask():
    import bcoo_array as xp

    X = np.arange(24.0).reshape(2, 3, 4)
    X[0, 2] = 0.0
    A = xp.asarray(X)
    m = np.array([[True, False, True], [False, True, True]])
    np.testing.assert_array_equal(np.asarray(A[xp.asarray(m)].todense()), X[m])
    np.testing.assert_array_equal(np.asarray(A[m].todense()), X[m])
    assert A[xp.asarray(np.zeros((0, 3), bool))].shape == (0, 4)
    with pytest.raises(IndexError, match="does not match"):
        A[np.ones((3, 3), bool)]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint32, np.float32, np.complex64])
def test_scalar_result_under_jit_keeps_dtype(dtype):
    # x[0] of a 1-d array under jit (the traced scalar path) summed the matching entry
    # with jnp.sum, which widens small integers to int64/uint64. Found by the
    # differential fuzz (conformance/test_fuzz.py, unstack under jit).
    a = BCOOArray((np.array([[5]], dtype), np.zeros((1, 1, 0), np.int32)), shape=(1,), fill_value=1)
    for nb in (a, BCOOArray.fromdense(np.array([0, 5, 0], dtype))):
        got = jax.jit(lambda v: v[1 if v.shape[0] > 1 else 0])(nb)
        assert got.dtype == np.dtype(dtype) and got.data.dtype == np.dtype(dtype)
        assert to_np(got) == 5
        assert jax.jit(lambda v: xp.unstack(v)[0])(nb).dtype == np.dtype(dtype)


@st.composite
def _mixed_keys(draw, shape):
    """A key of integer arrays (or lists, or a boolean mask) mixed with slices, ints and ``...``."""
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "array", "list", "int"] if n else ["slice"]))
        if kind == "slice":
            key.append(slice(draw(st.integers(-n - 1, n)), draw(st.integers(-n - 1, n)),
                             draw(st.sampled_from([None, 1, 2, -1]))))
        elif kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        else:
            idx = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
            key.append(idx if kind == "list" else np.array(idx))
    if draw(st.booleans()) and len(key) > 1:
        key[-1] = Ellipsis
    return tuple(key)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_setitem_integer_arrays_mixed_with_slices(data):
    """``A[idx, :] = v``, ``A[:, idx] = v``, ... follow NumPy (advanced indexing), every layout."""
    c = data.draw(cases(min_ndim=2, max_ndim=3, dtypes=(np.dtype(np.float64), np.dtype(np.int32)), nan_fill=False),
                  label="case")
    key = data.draw(_mixed_keys(c.dense.shape), label="key")
    want = c.dense.copy()
    try:
        target = want[key]
    except IndexError:
        with pytest.raises(IndexError):
            c.arr[key] = 1
        return
    value = np.arange(1, target.size + 1, dtype=want.dtype).reshape(target.shape)
    if data.draw(st.booleans(), label="scalar") or target.size == 0:
        value = want.dtype.type(7)
    want[key] = value
    a = c.arr
    a[key] = value
    np.testing.assert_array_equal(to_np(a), want)


def test_setitem_mask_with_slice_and_bounds():
    """A 1-D boolean mask with a slice (scikit-learn's Ridge(solver="svd") does ``d[idx] = ...``)."""
    d = np.arange(12.0).reshape(3, 4)
    a = xp.asarray(d)
    m = np.array([True, False, True])
    a[m, 1:3] = np.array([[10.0, 11.0], [12.0, 13.0]])
    d[m, 1:3] = np.array([[10.0, 11.0], [12.0, 13.0]])
    np.testing.assert_array_equal(to_np(a), d)
    with pytest.raises(IndexError, match="out of bounds"):
        a[np.array([0, 3]), :] = 1.0


@pytest.mark.parametrize("key_dtype", [np.uint8, np.int8, np.int16])
def test_small_integer_keys_on_a_long_axis(key_dtype):
    """Integer-array keys of a narrow dtype index an axis longer than the dtype's range (negative ones
    wrap around it) without overflow, pointwise and mixed with slices, as in NumPy."""
    d = np.arange(300 * 4, dtype=np.float32).reshape(300, 4) * (np.arange(4) % 2)
    A = xp.asarray(d)
    rows = np.array([1, 3, 100] if key_dtype == np.uint8 else [1, -1, -100], key_dtype)
    cols = np.array([1, 3, 3], key_dtype)
    np.testing.assert_array_equal(np.asarray(A[rows, cols].todense()), d[rows, cols])
    np.testing.assert_array_equal(np.asarray(A[rows, :].todense()), d[rows, :])
    B = xp.asarray(d)
    B[rows, 1:3] = 7.0
    want = d.copy()
    want[rows, 1:3] = 7.0
    np.testing.assert_array_equal(np.asarray(B.todense()), want)


def _poisson_like(n=30, density=0.15, seed=0, fill=0.0):
    import scipy.sparse as sp

    S = sp.random_array((n, n + 7), density=density, format="csr", random_state=seed) + sp.eye_array(n, n + 7)
    S.sum_duplicates()
    return S, xp.asarray(S) if fill == 0.0 else xp.BCOOArray.fromdense(S.toarray(), fill_value=fill)


@pytest.mark.parametrize("engine", ["host", "xla"])
@pytest.mark.parametrize("dup", [False, True])
def test_outer_key_gives_a_sparse_result_of_the_selected_entries(engine, dup, monkeypatch):
    """``A[np.ix_(r, c)]`` is a take per axis: sparse, the same values and stored entries as scipy."""
    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    S, A = _poisson_like()
    rng = np.random.default_rng(1)
    r = rng.choice(30, 12, replace=dup)
    c = rng.choice(37, 9, replace=dup)
    if not dup:
        r.sort()
    B = A[np.ix_(r, c)]
    want = S[np.ix_(r, c)]
    assert isinstance(B, BCOOArray) and B.n_dense == 0 and B.shape == want.shape
    np.testing.assert_array_equal(np.asarray(B.todense()), want.toarray())
    assert B.nnz == want.nnz
    # a 3-D outer key, and an outer key mixed with negative indices
    D = rng.random((5, 6, 7)) * (rng.random((5, 6, 7)) < 0.3)
    key = np.ix_([4, 0, -1], [1, 1, 5], [6, 0])
    np.testing.assert_array_equal(np.asarray(xp.asarray(D)[key].todense()), D[key])
    # pointwise keys (not outer) still pair up
    np.testing.assert_array_equal(np.asarray(A[r[:5], c[:5]].todense()), S.toarray()[r[:5], c[:5]])


@pytest.mark.parametrize("engine", ["host", "xla"])
@pytest.mark.parametrize("fill", [0.0, 2.5])
def test_assigning_the_fill_value_removes_entries(engine, fill, monkeypatch):
    """Zeroing rows and columns (a boundary condition) stores no zero: the stored entries are those of
    scipy lil after the same assignments, the values NumPy's."""
    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    S, A = _poisson_like(fill=fill)
    D = S.toarray()
    rows = np.array([3, 7, 7, 20])
    cols = np.array([0, 5, 36])
    mask = np.zeros(30, bool)
    mask[[1, 2, 29]] = True
    for key in [(rows, slice(None)), (slice(None), cols), (mask, slice(2, 30)), (4, slice(None, None, 3)),
                (slice(10, 12), 5), (..., -1)]:
        A[key] = fill
        D[key] = fill
    np.testing.assert_array_equal(np.asarray(A.todense()), D)
    if fill == 0.0:
        L = S.tolil()
        for key in [(rows, slice(None)), (slice(None), cols), (mask, slice(2, 30)), (4, slice(None, None, 3)),
                    (slice(10, 12), 5), (slice(None), -1)]:
            L[key] = 0
        assert A.nnz == L.nnz
    assert A.nse == int(np.count_nonzero(D != fill))  # no stored fill value
    # a pointwise write of the fill value and an array of values holding it: no stored fill value either
    A[np.array([0, 1]), np.array([0, 1])] = fill
    D[[0, 1], [0, 1]] = fill
    A[2, :4] = np.array([fill, 1.0, fill, 3.0])
    D[2, :4] = [fill, 1.0, fill, 3.0]
    np.testing.assert_array_equal(np.asarray(A.todense()), D)
    if engine == "host":
        assert A.nse == int(np.count_nonzero(D != fill))


def test_assigning_the_fill_value_under_jit_pads_the_removed_entries():
    S, A = _poisson_like()
    rows = np.array([3, 7])

    def zero_rows(a):
        a = a._replace()
        a[rows, :] = 0.0
        a[:, 5] = 0.0
        return a

    got = jax.jit(zero_rows)(A)
    assert got.nse == A.nse  # a static nse: removed entries become padding
    D = S.toarray()
    D[rows, :] = 0
    D[:, 5] = 0
    np.testing.assert_array_equal(np.asarray(got.todense()), D)
    np.testing.assert_array_equal(np.asarray(got.sum_duplicates().todense()), D)
    assert got.nnz == int(np.count_nonzero(D))


@pytest.mark.parametrize("mask", [np.array(True), np.array(False), np.array([[True, False, True], [False] * 3])])
def test_assigning_the_fill_value_through_a_0d_or_nd_mask(mask):
    """The fill-value removal takes 1-D selections only; 0-d and n-D masks keep the general path (found by the
    official suite, seed 2996684505: ``x[mask] = False`` on a 0-d bool array)."""
    shape = () if mask.ndim == 0 else mask.shape
    D = np.ones(shape, bool)
    A = xp.asarray(D)
    A[xp.asarray(mask)] = False
    D[mask] = False
    np.testing.assert_array_equal(np.asarray(A.todense()), D)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_a_0d_true_mask_selects_with_a_leading_axis_of_one(shape):
    """NumPy's x[True] has shape (1, *x.shape): the value broadcasts against it (array-api-extra's
    at(x)[mask].add(y) and isclose on 0-d arrays; its suite's classes A and B)."""
    D = np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape)
    A = xp.asarray(D)
    value = np.full((1,) + shape, 60.0)
    A[xp.asarray(np.array(True))] = value
    D[np.array(True)] = value
    np.testing.assert_array_equal(np.asarray(A.todense()), D)
    A[xp.asarray(np.array(True))] = 0.0  # the fill value
    D[np.array(True)] = 0.0
    np.testing.assert_array_equal(np.asarray(A.todense()), D)
    assert A.nse == 0


@pytest.mark.parametrize("case", ["1-D", "rows", "columns", "repeated and negative", "n_dense=1", "empty keys",
                                  "ix_"])
def test_take_under_jit_with_concrete_keys_stays_sparse(case):
    """The array traced, the keys concrete: a sparse result (nse * the largest key multiplicity entries), equal
    to the eager one and to NumPy; the source is never densified."""
    import jax

    rng = np.random.default_rng(7)
    D = rng.random((6, 5)) * (rng.random((6, 5)) < 0.4)
    x = xp.asarray(D)
    if case == "1-D":
        D, x = D[:, 1], xp.asarray(D[:, 1])
        f, want = (lambda a: xp.take(a, np.array([4, 0, 2]))), D[[4, 0, 2]]
    elif case == "rows":
        f, want = (lambda a: a[np.array([5, 1, 3])]), D[[5, 1, 3]]
    elif case == "columns":
        f, want = (lambda a: xp.take(a, np.array([4, 0]), axis=1)), D[:, [4, 0]]
    elif case == "repeated and negative":
        f, want = (lambda a: xp.take(a, np.array([1, -1, 1, 1, 0]), axis=1)), D[:, [1, -1, 1, 1, 0]]
    elif case == "n_dense=1":
        x = xp.update_layout(x, n_dense=1)
        f, want = (lambda a: xp.take(a, np.array([2, 2, 0]), axis=0)), D[[2, 2, 0]]
    elif case == "empty keys":
        f, want = (lambda a: xp.take(a, np.array([], np.int64), axis=0)), D[[]]
    else:
        r, c = np.array([0, 3, 5]), np.array([4, 1])
        f, want = (lambda a: a[np.ix_(r, c)]), D[np.ix_(r, c)]
    traced = jax.jit(f)(x)
    assert traced.n_dense == x.n_dense or case == "n_dense=1"
    np.testing.assert_array_equal(np.asarray(traced.todense()), want)
    np.testing.assert_array_equal(np.asarray(f(x).todense()), want)


def test_take_under_jit_of_a_huge_vector_reads_only_its_entries():
    import jax

    n = 2**40
    v = xp.BCOOArray((np.array([1.0, 2.0]), np.array([[5], [n - 1]])), shape=(n,))
    got = jax.jit(lambda a: a[np.array([5, 7, n - 1])])(v)
    np.testing.assert_array_equal(np.asarray(got.todense()), [1.0, 0.0, 2.0])


def test_take_with_traced_keys_densifies_within_the_limit():
    import jax

    D = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    x = xp.asarray(D)
    got = jax.jit(lambda a, k: xp.take(a, k, axis=0))(x, jnp.array([2, 0]))
    np.testing.assert_array_equal(np.asarray(got.todense()), D[[2, 0]])
    big = xp.BCOOArray((np.array([1.0]), np.array([[3]])), shape=(2**40,))
    with pytest.raises(MemoryError, match="take"):
        jax.jit(lambda a, k: xp.take(a, k))(big, jnp.array([3]))


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("keys", ["sorted", "unsorted with repeats", "negative", "empty rows", "int32 keys"])
def test_outer_selection_and_diagonal_native_and_numpy(native, keys, monkeypatch):
    """A[np.ix_(r, c)] (the native fused CSR selection, or NumPy takes with BCOO_ARRAY_NATIVE=0) and
    A.diagonal(k) (a native per-row search, or NumPy's) against scipy, values and stored entries."""
    import scipy.sparse as sp

    monkeypatch.setenv("BCOO_ARRAY_NATIVE", native)
    rng = np.random.default_rng(11)
    S = sp.random_array((40, 30), density=0.2, random_state=rng, format="csr")
    S.sum_duplicates()
    A = xp.from_scipy(S)
    r = {"sorted": np.array([0, 3, 7, 39]), "unsorted with repeats": np.array([5, 1, 5, 38, 0]),
         "negative": np.array([-1, 2, -40]), "empty rows": np.array([], np.int64),
         "int32 keys": np.array([4, 9, 2], np.int32)}[keys]
    c = {"sorted": np.array([1, 2, 29]), "unsorted with repeats": np.array([7, 7, 0, 29, 3, 7]),
         "negative": np.array([-30, -1, 5]), "empty rows": np.array([0, 4]),
         "int32 keys": np.array([3, 0, 3], np.int32)}[keys]
    got = A[np.ix_(r, c)]
    want = S[np.ix_(r, c)]
    np.testing.assert_array_equal(np.asarray(got.todense()), want.toarray())
    assert got.nse == want.nnz  # every selected stored entry, once per selection, nothing else
    if got.indices_sorted:
        order = np.lexsort(np.asarray(got.indices).T[::-1])
        np.testing.assert_array_equal(order, np.arange(got.nse))
    for k in (0, 1, -2, 29, -39, 30):
        np.testing.assert_array_equal(A.diagonal(k), S.diagonal(k))


@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 5)])
@pytest.mark.parametrize("key", [
    (0, None, [0, 2]),
    (Ellipsis, 0, None, [1, 2]),
    ([0, 1], None, 0),
    (None, 0, [1, 2]),
    (0, [1, 2]),
    (slice(None), 0, [0, 1]),
    (0, slice(None), [0, 1]),
    (1, slice(1, 3), [[0], [1]]),
    (slice(None), [0, 1], 0),
])
def test_separated_advanced_indices_go_first_as_numpy(shape, key):
    """Issue 29: integers next to one integer array are advanced indices; separated by a slice or None,
    their result dimensions come first (NumPy's rule). The oracle is NumPy."""
    rng = np.random.default_rng(4)
    d = rng.random(shape) * (rng.random(shape) > 0.5)
    try:
        want = d[key]
    except IndexError:
        pytest.skip("NumPy refuses this key for this shape")
    got = xp.asarray(d)[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.toarray(), want)
    got_jit = jax.jit(lambda a: a[key].todense())(xp.asarray(d))
    np.testing.assert_array_equal(np.asarray(got_jit), want)


def test_item_assignment_with_a_traced_key_names_the_fix():
    """Issue 29: a traced key raises a TypeError naming the key and the ways out, not a tracer error."""
    A = xp.asarray(np.eye(4))

    def f(A, i):
        B = A.copy()
        B[i, 0] = 5.0
        return B.todense()

    with pytest.raises(TypeError, match=r"traced key .*static_argnums"):
        jax.jit(f)(A, 1)
    with pytest.raises(TypeError, match=r"traced key"):
        jax.jit(lambda A, i: f(A, slice(i, None)))(A, 1)
    np.testing.assert_array_equal(np.asarray(jax.jit(f, static_argnums=1)(A, 1)),
                                  np.eye(4) + 5.0 * (np.arange(4)[:, None] == 1) * (np.arange(4) == 0))


@pytest.mark.parametrize("key", ["mask_mask", "mask_list", "list_mask"])
@pytest.mark.parametrize("value", [0.0, 7.0])
def test_several_masks_and_arrays_as_numpy(key, value):
    """Issue 29: ``B[mask0, mask1] = v`` (and reading it): each mask is its nonzero() arrays, as NumPy."""
    d = np.arange(20.0).reshape(4, 5) % 3
    m0, m1 = np.array([1, 0, 1, 1], bool), np.array([0, 1, 1, 0, 1], bool)
    k = {"mask_mask": (m0, m1), "mask_list": (m0, [0, 1, 2]), "list_mask": ([1, 2, 3], m1)}[key]
    A = xp.asarray(d)
    np.testing.assert_array_equal(A[k].toarray(), d[k])
    want = d.copy()
    want[k] = value
    A[k] = value
    np.testing.assert_array_equal(A.toarray(), want)
