"""The host-side paths of eager calls (row and column slices, the canonical
transpose, cached pattern unions, scipy-style products on the native host
kernel, sparse argmax/argmin) against dense NumPy, and against the general
(traceable) path of the same function under ``jax.jit``.

Every case also runs on layouts and states where the host path must step
aside (unsorted indices, padding, batch or dense dimensions, traced
buffers), so the fallbacks are tested too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array._kernels.host import aligned_empty, to_device, unique_counts, unique_ints, unique_inverse
from _oracle import cases


def _matrices():
    """(name, BCOOArray, dense) over canonical, unsorted, padded, duplicated and non-COO layouts."""
    S = sp.random_array((40, 30), density=0.1, format="csr", dtype=np.float64, rng=3)
    D = S.toarray()
    out = [("canonical", xp.from_scipy(S).sum_duplicates(), D)]
    coo = S.tocoo()
    perm = np.random.default_rng(0).permutation(coo.nnz)
    unsorted = xp.BCOOArray((coo.data[perm], np.stack([coo.row[perm], coo.col[perm]], 1)), shape=S.shape)
    out.append(("unsorted", unsorted, D))
    padded = unsorted.sum_duplicates(nse=unsorted.nse + 3)
    out.append(("padded", padded, D))
    dup_idx = np.concatenate([np.stack([coo.row, coo.col], 1)] * 2)
    dup = xp.BCOOArray((np.concatenate([coo.data, coo.data]), dup_idx), shape=S.shape)
    out.append(("duplicates", dup, 2 * D))
    out.append(("dense dim", xp.BCOOArray.fromdense(D, n_dense=1), D))
    out.append(("batch dim", xp.BCOOArray.fromdense(D, n_batch=1), D))
    filled = xp.BCOOArray.fromdense(np.where(D == 0, 7.0, D), fill_value=7.0)
    out.append(("fill 7", filled, np.where(D == 0, 7.0, D)))
    return out


MATRICES = _matrices()
IDS = [m[0] for m in MATRICES]


@pytest.mark.parametrize("name, A, D", MATRICES, ids=IDS)
def test_rows_and_columns(name, A, D):
    for i in (0, 7, -1, D.shape[0] - 1, np.int64(3)):
        np.testing.assert_array_equal(np.asarray(A[i].todense()), D[i])
        np.testing.assert_array_equal(np.asarray(A[i, :].todense()), D[i])
    for j in (0, 5, -2):
        np.testing.assert_array_equal(np.asarray(A[:, j].todense()), D[:, j])
    got = jax.jit(lambda a: (a[3], a[:, 4]))(A)
    np.testing.assert_array_equal(np.asarray(got[0].todense()), D[3])
    np.testing.assert_array_equal(np.asarray(got[1].todense()), D[:, 4])
    with pytest.raises(IndexError):
        A[D.shape[0]]
    with pytest.raises(IndexError):
        A[:, -D.shape[1] - 1]


@pytest.mark.parametrize("name, A, D", MATRICES, ids=IDS)
def test_transpose(name, A, D):
    T = A.T
    np.testing.assert_array_equal(np.asarray(T.todense()), D.T)
    c = T.sum_duplicates()
    np.testing.assert_array_equal(np.asarray(c.todense()), D.T)
    assert T.fill_value == A.fill_value
    if name == "canonical":
        # scipy's CSR -> CSC: already canonical, with the indices of the transpose's own canonical form.
        assert T.indices_sorted and T.unique_indices
        want = xp.from_scipy(sp.csr_array(D.T)).sum_duplicates()
        np.testing.assert_array_equal(np.asarray(T.indices), np.asarray(want.indices))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a.T.todense())(A)), D.T)


def test_cached_union_plan_gives_the_same_values():
    S1 = sp.random_array((50, 40), density=0.1, format="csr", rng=1)
    S2 = sp.random_array((50, 40), density=0.1, format="csr", rng=2)
    A, B = xp.from_scipy(S1).sum_duplicates(), xp.from_scipy(S2).sum_duplicates()
    first = np.asarray((A + B).todense())
    second = np.asarray((A + B).todense())  # the plan of this pair of patterns is cached now
    np.testing.assert_array_equal(first, (S1 + S2).toarray())
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(np.asarray((A * B).todense()), S1.multiply(S2).toarray())
    # new values on the same pattern reuse the plan and still give the right answer
    A2 = A.with_data(A.data * 3)
    np.testing.assert_array_equal(np.asarray((A2 + B).todense()), (3 * S1 + S2).toarray())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_scipy_products_host_path_match_scipy(dtype):
    rng = np.random.default_rng(0)
    S = sp.random_array((30, 20), density=0.2, format="csr", rng=4).astype(dtype)
    if np.dtype(dtype).kind == "c":
        S = S + 1j * sp.random_array((30, 20), density=0.2, format="csr", rng=5).astype(dtype)
    A = xp.from_scipy(S).sum_duplicates()
    x, y = rng.random(20).astype(dtype), rng.random(30).astype(dtype)
    X, Y = rng.random((20, 3)).astype(dtype), rng.random((30, 2)).astype(dtype)
    tol = 1e-5 if np.dtype(dtype).itemsize <= 8 and np.dtype(dtype).kind != "c" or dtype == np.complex64 else 1e-12
    for got, want in ((A.matvec(x), S @ x), (A.rmatvec(y), S.conj().T @ y), (A.matmat(X), S @ X),
                      (A.rmatmat(Y), S.conj().T @ Y), (A.dot(x), S @ x), (A.dot(jnp.asarray(x)), S @ x)):
        assert isinstance(got, np.ndarray) and got.flags.writeable
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    # traced operands take the compiled path and give the same values
    traced = jax.jit(lambda v: A.matvec(v))(x)
    np.testing.assert_allclose(np.asarray(traced), S @ x, rtol=tol, atol=tol)


@pytest.mark.parametrize("name, A, D", MATRICES, ids=IDS)
def test_matvec_every_layout(name, A, D):
    x = np.linspace(-1, 1, D.shape[1])
    np.testing.assert_allclose(A.matvec(x), D @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.rmatvec(np.ones(D.shape[0])), D.T @ np.ones(D.shape[0]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0, -1.0])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extreme_is_sparse_and_matches_numpy(fill, op):
    rng = np.random.default_rng(7)
    d = rng.integers(-2, 3, size=(6, 5, 4)).astype(np.float64)
    d[rng.random(d.shape) < 0.1] = np.nan
    d[rng.random(d.shape) < 0.1] = -0.0
    d = np.where(rng.random(d.shape) < 0.5, d, fill)
    A = xp.BCOOArray.fromdense(d, fill_value=fill)
    for axis in (None, 0, 1, 2, -1):
        for keepdims in (False, True):
            got = getattr(xp, op)(A, axis=axis, keepdims=keepdims)
            want = getattr(np, op)(d, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(got.todense()), want)
    jitted = jax.jit(lambda a: getattr(xp, op)(a, axis=1))(A)
    np.testing.assert_array_equal(np.asarray(jitted.todense()), getattr(np, op)(d, axis=1))


def test_argmax_of_a_huge_array_does_not_densify():
    # 1.08e10 positions, 2 stored: the dense array would need 86 GB.
    A = xp.BCOOArray((np.array([5.0, -1.0]), np.array([[7, 3], [119_999, 89_999]])), shape=(120_000, 90_000))
    assert int(xp.argmax(A)) == 7 * 90_000 + 3
    assert int(xp.argmin(A)) == 119_999 * 90_000 + 89_999
    col = xp.argmax(A, axis=0)
    assert col.shape == (90_000,) and int(col[3]) == 7 and int(col[4]) == 0


def _aligned_copy(a):
    b = aligned_empty(a.shape, a.dtype)
    b[...] = a
    return b


@given(st.lists(st.integers(-2**40, 2**40), max_size=60), st.booleans())
def test_unique_ints_counts_and_inverse_equal_numpy(values, presort):
    a = np.sort(np.asarray(values, np.int64)) if presort else np.asarray(values, np.int64)
    ref, ref_counts = np.unique(a, return_counts=True)
    np.testing.assert_array_equal(unique_ints(a), ref)
    got, counts = unique_counts(a)
    assert got.dtype == a.dtype and counts.dtype == np.int64
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(counts, ref_counts)
    got, inverse = unique_inverse(a)
    assert got.dtype == a.dtype and inverse.dtype == np.int64
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got[inverse], a)


def test_to_device_never_aliases_a_buffer_it_does_not_own():
    # jax.device_put may keep an aligned NumPy buffer without copying it (jax 0.10.2 did for about half of 100k-element
    # arrays); to_device must copy a buffer it does not own, or a later write to the user's array reaches the JAX array.
    for _ in range(20):
        x = _aligned_copy(np.arange(100_000, dtype=np.float64))
        y = to_device(x)
        x *= -1
        assert float(y[5]) == 5.0


def test_from_scipy_copies_the_values():
    # The hand-off to JAX goes through aligned host buffers; a later write to the scipy matrix must not reach the array.
    # The scipy buffers are made 64-byte aligned: the case in which JAX would otherwise keep them without a copy.
    S = sp.random_array((30, 20), density=0.2, format="csr", rng=9)
    S.data, S.indices = _aligned_copy(S.data), _aligned_copy(S.indices)
    A = xp.from_scipy(S)
    before = np.asarray(A.todense()).copy()
    S.data *= 2
    S.indices[:] = 0
    np.testing.assert_array_equal(np.asarray(A.todense()), before)
    row = A[3]
    col = A[:, 2]
    S.data[:] = -1
    np.testing.assert_array_equal(np.asarray(row.todense()), before[3])
    np.testing.assert_array_equal(np.asarray(col.todense()), before[:, 2])


def test_item_of_one_element():
    A = xp.asarray(np.array([[0.0, 2.5], [0.0, 0.0]]))
    assert A[0, 1].item() == 2.5 and isinstance(A[0, 1].item(), float)
    assert A[1, 0].item() == 0.0
    assert xp.asarray(np.array([7], np.int64)).item() == 7
    with pytest.raises(ValueError, match="one element"):
        A.item()


@given(cases(max_ndim=3), st.integers(0, 2))
def test_fromdense_on_the_host_equals_the_traced_kernel(c, extra):
    # Eager fromdense / asarray of NumPy or concrete CPU input runs in NumPy; the buffers must be the traced kernel's.
    from bcoo_array._kernels.fromdense import fromdense as traced_fromdense

    nb, nd = c.n_batch, c.n_dense
    a = xp.BCOOArray.fromdense(c.dense, n_batch=nb, n_dense=nd, fill_value=c.fill)
    nse = a.nse + extra
    jitted = jax.jit(lambda d: traced_fromdense(d, c.dense.shape, nb, nd, a.fill_value, nse, a.indices.dtype))
    want_data, want_idx = jitted(jnp.asarray(c.dense))
    got = xp.BCOOArray.fromdense(jnp.asarray(c.dense), n_batch=nb, n_dense=nd, fill_value=c.fill, nse=nse)
    gi, wi = np.asarray(got.indices), np.asarray(want_idx)
    sizes = np.asarray(c.dense.shape[nb:c.dense.ndim - nd], dtype=np.int64)
    g_pad, w_pad = np.any(gi >= sizes, axis=-1), np.any(wi >= sizes, axis=-1)  # padding: any index out of range
    np.testing.assert_array_equal(g_pad, w_pad)
    np.testing.assert_array_equal(np.where(g_pad[..., None], 0, gi), np.where(w_pad[..., None], 0, wi))
    np.testing.assert_array_equal(np.asarray(got.data), np.asarray(want_data))
    assert got.indices_sorted and got.unique_indices
    np.testing.assert_array_equal(np.asarray(a.todense()), c.dense)


def test_fromdense_on_the_host_checks_nse():
    d = np.array([[1.0, 0.0], [2.0, 3.0]])
    with pytest.raises(ValueError, match="nse=2 is smaller than the 3 entries"):
        xp.BCOOArray.fromdense(d, nse=2)
    with pytest.raises(ValueError, match="nse=1 is smaller than the 2 entries"):
        xp.BCOOArray.fromdense(d, n_batch=1, nse=1)
    padded = xp.BCOOArray.fromdense(d, nse=5)
    assert padded.nse == 5 and np.asarray(padded.indices)[3:].tolist() == [[2, 2], [2, 2]]
    np.testing.assert_array_equal(np.asarray(padded.todense()), d)


@pytest.mark.parametrize("key", [slice(3, 20), slice(None, 7), slice(45, 100), slice(10, 5), slice(-5, None),
                                 (slice(2, 9), slice(None)), slice(0, 50, 2), slice(None, None, -1)])
@pytest.mark.parametrize("fill", [0.0, 1.0, np.nan])
def test_row_ranges_match_numpy(key, fill):
    S = sp.random_array((50, 40), density=0.2, format="csr", rng=1)
    D = S.toarray()
    D = np.where(D == 0, fill, D)
    A = xp.BCOOArray.fromdense(D, fill_value=fill)
    got = A[key]
    np.testing.assert_array_equal(np.asarray(got.todense()), D[key])
    assert np.asarray(got.fill_value).tobytes() == np.asarray(A.fill_value).tobytes()
    jitted = jax.jit(lambda a: a[key])(A)
    np.testing.assert_array_equal(np.asarray(jitted.todense()), D[key])


def test_row_range_of_a_non_canonical_matrix():
    # Duplicates (summed) and unsorted rows: the range still holds the right values.
    rows = np.array([4, 1, 4, 0, 2, 4])
    cols = np.array([1, 0, 1, 3, 2, 0])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    A = xp.BCOOArray((vals, (rows, cols)), shape=(6, 4))
    D = np.zeros((6, 4))
    np.add.at(D, (rows, cols), vals)
    for key in (slice(1, 5), slice(4, 6), slice(0, 6)):
        np.testing.assert_array_equal(np.asarray(A[key].todense()), D[key])


def _basic_keys(shape):
    parts = []
    for n in shape:
        parts.append(st.one_of(
            st.integers(-n, n - 1) if n else st.just(slice(None)),
            st.builds(slice, st.none() | st.integers(-n - 1, n + 1), st.none() | st.integers(-n - 1, n + 1),
                      st.none() | st.sampled_from([1, 2, -1, -2])),
        ))
    return st.tuples(*parts).flatmap(
        lambda t: st.integers(0, len(t)).map(lambda i: t[:i] + (None,) + t[i:]) | st.just(t))


@given(cases(max_ndim=3), st.data())
def test_basic_indexing_on_the_host_equals_numpy_and_jit(c, data):
    key = data.draw(_basic_keys(c.dense.shape))
    want = c.dense[key]
    got = c.arr[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got.todense()), want)
    jitted = jax.jit(lambda a: a[key])(c.arr)
    np.testing.assert_array_equal(np.asarray(jitted.todense()), want)


@pytest.mark.parametrize("shared", [False, True], ids=["own indices", "shared indices"])
@pytest.mark.parametrize("reduce", ["sum", "max", "min", "prod"])
def test_batched_sum_duplicates_on_the_host_equals_xla(shared, reduce):
    # The host engine's batched canonical form (each batch element merged and padded to the fullest one, an index
    # buffer shared by every element planned once) gives the XLA engine's buffers: same indices, same values.
    from bcoo_array._kernels.coalesce import _sum_duplicates_host, _sum_duplicates_xla

    rng = np.random.default_rng(7 + shared)
    for _ in range(60):
        nb, k, nd = int(rng.integers(1, 3)), int(rng.integers(0, 3)), int(rng.integers(0, 2))
        batch = tuple(int(s) for s in rng.integers(0, 4, nb))
        sizes = tuple(int(s) for s in rng.integers(1, 4, k))
        dense = tuple(int(s) for s in rng.integers(1, 3, nd))
        nse = int(rng.integers(0, 6))
        lead = (1,) * nb if shared else batch
        # coordinates up to the size itself: padding entries among the others
        idx = (np.stack([rng.integers(0, s + 1, lead + (nse,)) for s in sizes], -1) if k
               else np.zeros(lead + (nse, 0))).astype(np.int32)
        data = rng.standard_normal(batch + (nse,) + dense)
        shape = batch + sizes + dense
        host = _sum_duplicates_host(data, idx, shape, nb, nd, reduce)
        ref = _sum_duplicates_xla(jnp.asarray(data), jnp.asarray(np.broadcast_to(idx, batch + (nse, k))), shape, nb,
                                  nd, reduce)
        assert host[0].shape == ref[0].shape and host[1].shape == ref[1].shape
        np.testing.assert_array_equal(host[1], np.asarray(ref[1]))

        def dense_of(d, i):
            return np.asarray(xp.BCOOArray._from_buffers(
                np.asarray(d), np.asarray(i), shape, n_batch=nb, n_dense=nd, fill_value=0.0, indices_sorted=True,
                unique_indices=True).todense())

        np.testing.assert_allclose(dense_of(*host), dense_of(*ref))


@pytest.mark.parametrize("shape, n_dense", [((4, 5), 2), ((4, 5), 1), ((3, 4, 5), 2), ((3, 4, 5), 1)])
@pytest.mark.parametrize("pad", [0, 2])
def test_dense_dimensions_made_sparse_stay_canonical(shape, n_dense, pad):
    # Moving dense dimensions to sparse expands each entry's block in row-major order in its place: the result
    # is flagged canonical (no later sort), and it is (sorted, unique, padding last), in both engines.
    D = np.random.default_rng(1).standard_normal(shape) * (np.random.default_rng(2).random(shape) < 0.5)
    A = xp.BCOOArray.fromdense(D, n_dense=n_dense)
    if pad and A.n_sparse:
        A = A.sum_duplicates(nse=A.nse + pad, remove_padding=False)
    for f in (lambda a: xp.update_layout(a, 0, 0), jax.jit(lambda a: xp.update_layout(a, 0, n_dense - 1))):
        B = f(A)
        assert B.indices_sorted and B.unique_indices
        idx = np.asarray(B.indices)
        sizes = B.shape[:idx.shape[1]]
        valid = np.all(idx < np.asarray(sizes), axis=1)
        assert valid[:int(valid.sum())].all()  # padding last
        keys = np.ravel_multi_index(tuple(idx[valid].T), sizes)
        assert np.all(np.diff(keys) > 0)
        np.testing.assert_array_equal(np.asarray(B.todense()), D)


def test_broadcast_to_new_batch_dimensions_stays_canonical():
    v = xp.asarray(np.array([0.0, 2.0, 0.0, -1.0]))
    b = xp.broadcast_to(v, (3, 4))
    assert b.indices_sorted and b.unique_indices
    np.testing.assert_array_equal(np.asarray(b.sum_duplicates().todense()), np.broadcast_to([0, 2, 0, -1.0], (3, 4)))
    col = xp.broadcast_to(xp.asarray(np.array([[1.0], [0.0], [3.0]])), (3, 4))  # a grown sparse dimension
    assert not col.indices_sorted
    np.testing.assert_array_equal(np.asarray(col.todense()), np.broadcast_to([[1.0], [0.0], [3.0]], (3, 4)))


@pytest.mark.parametrize("op", ["subtract", "add", "divide", "multiply"])
def test_sparse_and_a_fully_stored_vector_is_the_dense_operand(op):
    # xp.asarray of a row of means stores every position: A - m is A - m.todense(), dense layout and exact values,
    # as with a NumPy operand (not a union with a full pattern); a vector that stores few positions keeps the
    # union's sparse result.
    rng = np.random.default_rng(3)
    D = rng.standard_normal((30, 8)) * (rng.random((30, 8)) < 0.2)
    m = rng.standard_normal(8) + 5.0
    A = xp.asarray(D)
    got = getattr(xp, op)(A, xp.asarray(m))
    ref = getattr(np, op)(D, m)
    np.testing.assert_allclose(np.asarray(got.todense()), ref)
    np.testing.assert_allclose(np.asarray(getattr(xp, op)(A, m).todense()), ref)
    if op in ("subtract", "add"):
        assert got.n_sparse == 0  # dense layout
        few = np.where(np.arange(8) < 2, m, 0.0)
        sparse_got = getattr(xp, op)(A, xp.asarray(few))
        assert sparse_got.n_sparse == 2
        np.testing.assert_allclose(np.asarray(sparse_got.todense()), getattr(np, op)(D, few))


@pytest.mark.parametrize("n_dense", [0, 1])
@pytest.mark.parametrize("cond_fill", [False, True])
@pytest.mark.parametrize("scalar_first", [False, True])
def test_where_with_a_scalar_operand_keeps_the_condition_pattern(n_dense, cond_fill, scalar_first, monkeypatch):
    """where(C, A, s) / where(C, s, A) with the scalar on the side the condition's fill selects: the result's
    pattern is the condition's (no union), values and fill equal NumPy's, on the host and the XLA engine;
    conditions that store False entries, dense dimensions and a value array with its own fill included."""
    rng = np.random.default_rng(5)
    D = rng.standard_normal((9, 6)) * (rng.random((9, 6)) < 0.5)
    A = xp.asarray(D) + 1.5  # fill 1.5
    mask = rng.random((9, 6)) < 0.4
    C = xp.BCOOArray.fromdense(mask, fill_value=cond_fill)  # stores the positions that differ from the fill
    if n_dense:
        A, C = xp.update_layout(A, n_dense=1), xp.update_layout(C, n_dense=1)
    call = (lambda c, a: xp.where(c, -2.0, a)) if scalar_first else (lambda c, a: xp.where(c, a, -2.0))
    want = np.where(mask, -2.0, D + 1.5) if scalar_first else np.where(mask, D + 1.5, -2.0)
    host = call(C, A)
    monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    traced_engine = call(C, A)
    monkeypatch.delenv("BCOO_ARRAY_HOST")
    for got in (host, traced_engine):
        np.testing.assert_array_equal(np.asarray(got.todense()), want)
    assert host.fill_value == traced_engine.fill_value
    if bool(cond_fill) == scalar_first and not n_dense:  # the fill selects the scalar: the condition's pattern
        assert host.nse == C.nse


def test_toarray_is_fresh_and_writable_on_every_layout():
    """toarray() on the host engine returns a fresh writable NumPy array: writing to it never reaches the
    array (fully stored sorted vectors, dense layout, padded, batched and transposed layouts)."""
    rng = np.random.default_rng(9)
    D = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    full = xp.asarray(np.arange(1.0, 7.0))
    arrays = [full, xp.asarray(D), xp.asarray(D) + np.arange(4.0), xp.asarray(D).T,
              xp.BCOOArray.fromdense(D, nse=20), xp.BCOOArray.fromdense(D, n_batch=1),
              xp.BCOOArray.fromdense(D, n_dense=1), xp.asarray(D) + 2.0]
    for A in arrays:
        want = np.asarray(A.todense()).copy()
        got = A.toarray()
        assert isinstance(got, np.ndarray) and got.flags.writeable and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        got[...] = 12345.0
        np.testing.assert_array_equal(A.toarray(), want)
        np.testing.assert_array_equal(np.asarray(A.todense()), want)
    assert A.toarray(order="F").flags.f_contiguous
