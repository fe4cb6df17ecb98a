"""The performance fast paths (concrete 2-D indices) against dense NumPy and
against the general (traced) path: SpMV/SpMM through cached row plans, sums
over one axis, canonicalisation by counting sort, pattern union, scipy CSR
export, the identity cache, and the benchmark runner itself.
"""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._kernels.cache import IdentityCache
from bcoo_array._kernels.plan import _linear_key, _stable_order, group_numpy


def messy_matrix(rng, m, n, nse, dtype=np.float64, pad=3, dup=True):
    """A 2-D BCOOArray with duplicates, random order and padding, and its dense value."""
    rows = rng.integers(0, m, nse)
    cols = rng.integers(0, n, nse)
    if dup and nse > 2:
        rows[1] = rows[0]
        cols[1] = cols[0]
    if np.dtype(dtype).kind == "c":
        vals = (rng.integers(-4, 5, nse) + 1j * rng.integers(-4, 5, nse)).astype(dtype)
    else:
        vals = rng.integers(-4, 5, nse).astype(dtype)
    dense = np.zeros((m, n), dtype)
    np.add.at(dense, (rows, cols), vals)
    # padding entries: an index equal to the dimension size, holding garbage.
    prow = np.concatenate([rows, np.full(pad, m), rng.integers(0, m, pad)])
    pcol = np.concatenate([cols, rng.integers(0, n, pad), np.full(pad, n)])
    pval = np.concatenate([vals, np.full(2 * pad, 7, dtype)])
    order = rng.permutation(prow.size)
    idx = np.stack([prow[order], pcol[order]], axis=1)
    return BCOOArray((jnp.asarray(pval[order]), jnp.asarray(idx)), shape=(m, n)), dense


@pytest.mark.parametrize("dtype,k", [(np.float64, None), (np.float64, 8), (np.float32, 3), (np.complex128, 8),
                                     (np.complex64, None), (np.int32, 1), (np.int64, 8)])
def test_matmul_fast_path_matches_dense(dtype, k):
    rng = np.random.default_rng(0)
    A, dense = messy_matrix(rng, 13, 11, 40, dtype)
    x = rng.integers(-3, 4, (11,) if k is None else (11, k)).astype(dtype)
    out = A @ jnp.asarray(x)
    assert out.shape == (dense @ x).shape
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(out), dense @ x, rtol=1e-5)
    # the general path (traced indices) gives the same values
    traced = jax.jit(lambda a, v: (a @ v))(A, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(traced), dense @ x, rtol=1e-5)


def test_matmul_fast_path_empty_and_all_padding():
    A = BCOOArray((jnp.zeros(2), jnp.asarray([[4, 0], [0, 5]])), shape=(4, 5))
    np.testing.assert_array_equal(np.asarray((A @ jnp.ones(5))), np.zeros(4))
    np.testing.assert_array_equal(np.asarray((A @ jnp.ones((5, 6)))), np.zeros((4, 6)))
    E = BCOOArray((jnp.zeros(0), jnp.zeros((0, 2), jnp.int32)), shape=(0, 3))
    assert (E @ jnp.ones(3)).shape == (0,)


def test_matmul_fast_path_grad_and_vmap():
    rng = np.random.default_rng(1)
    A, dense = messy_matrix(rng, 9, 7, 25)
    x = jnp.asarray(rng.standard_normal(7))
    X = jnp.asarray(rng.standard_normal((7, 5)))
    # gradient with respect to the dense operand, A closed over (fast path under grad)
    g = jax.grad(lambda v: jnp.sum((A @ v) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * dense.T @ (dense @ np.asarray(x)), rtol=1e-10)
    gX = jax.grad(lambda v: jnp.sum((A @ v) ** 2))(X)
    np.testing.assert_allclose(np.asarray(gX), 2 * dense.T @ (dense @ np.asarray(X)), rtol=1e-10)
    # gradient with respect to the stored values, indices concrete
    idx = A.indices

    def f(d):
        return jnp.sum((BCOOArray((d, idx), shape=A.shape) @ X))

    gd = jax.grad(f)(A.data)
    ind = np.asarray(idx)
    valid = (ind[:, 0] < 9) & (ind[:, 1] < 7)
    expect = np.where(valid, np.asarray(X).sum(axis=1)[np.minimum(ind[:, 1], 6)], 0.0)
    np.testing.assert_allclose(np.asarray(gd), expect, rtol=1e-10)
    # vmap over right-hand sides
    V = jnp.asarray(rng.standard_normal((4, 7)))
    out = jax.vmap(lambda v: (A @ v))(V)
    np.testing.assert_allclose(np.asarray(out), np.asarray(V) @ dense.T, rtol=1e-10)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_sum_axis_fast_path(axis, dtype):
    rng = np.random.default_rng(2)
    A, dense = messy_matrix(rng, 12, 9, 30, dtype)
    out = xp.sum(A, axis=axis)
    np.testing.assert_array_equal(np.asarray(out.todense()), dense.sum(axis=axis))
    # the stored pattern is the set of kept indices holding an entry, sorted
    c = A.sum_duplicates()
    ind = np.asarray(c.indices)
    keep = ind[(ind[:, 0] < 12) & (ind[:, 1] < 9), 1 - axis]
    got = np.asarray(out.indices)[:, 0]
    np.testing.assert_array_equal(got[got < dense.shape[1 - axis]], np.unique(keep))
    traced = jax.jit(lambda a: xp.sum(a, axis=axis).todense())(A)
    np.testing.assert_array_equal(np.asarray(traced), dense.sum(axis=axis))


def test_sum_duplicates_and_transpose_canonical():
    rng = np.random.default_rng(3)
    for m, n, nse in [(40, 30, 2000), (5, 4, 10)]:
        A, dense = messy_matrix(rng, m, n, nse)
        c = A.sum_duplicates()
        ind = np.asarray(c.indices)
        assert c.indices_sorted and c.unique_indices
        key = ind[:, 0].astype(np.int64) * n + ind[:, 1]
        assert np.all(np.diff(key) > 0)
        np.testing.assert_array_equal(np.asarray(c.todense()), dense)
        t = c.T.sum_duplicates()
        tind = np.asarray(t.indices)
        tkey = tind[:, 0].astype(np.int64) * m + tind[:, 1]
        assert np.all(np.diff(tkey) > 0)
        np.testing.assert_array_equal(np.asarray(t.todense()), dense.T)


@pytest.mark.parametrize("runs", [1, 2, 10, 500])
def test_stable_order_matches_argsort(runs):
    rng = np.random.default_rng(runs)
    n, sizes = 5000, (700, 900)
    idx = np.stack([rng.integers(0, sizes[0], n), rng.integers(0, sizes[1], n)], axis=1)
    # ``runs`` sorted runs
    parts = np.array_split(idx, runs)
    idx = np.concatenate([p[np.argsort(_linear_key(p, sizes), kind="stable")] for p in parts])
    key = _linear_key(idx, sizes)
    np.testing.assert_array_equal(_stable_order(idx, sizes, key), np.argsort(key, kind="stable"))
    # a transposed canonical matrix (sorted by column): the one-pass case
    t = idx[np.lexsort((idx[:, 0], idx[:, 1]))]
    tk = _linear_key(t, sizes)
    np.testing.assert_array_equal(_stable_order(t, sizes, tk), np.argsort(tk, kind="stable"))


def test_group_numpy_with_padding():
    idx = np.array([[2, 1], [0, 0], [3, 0], [2, 1], [0, 5]])
    p = group_numpy(idx, (3, 5))
    assert p.count == 2
    np.testing.assert_array_equal(p.out_indices, [[0, 0], [2, 1]])
    assert np.all(p.segment[-2:] == 2)  # the two padding entries, sorted last


@pytest.mark.parametrize("op", ["add", "multiply", "subtract"])
def test_union_fast_path(op):
    rng = np.random.default_rng(4)
    A, da = messy_matrix(rng, 20, 15, 60)
    B, db = messy_matrix(rng, 20, 15, 50)
    out = getattr(xp, op)(A, B)
    np.testing.assert_array_equal(np.asarray(out.todense()), getattr(np, op)(da, db))
    traced = jax.jit(lambda a, b: getattr(xp, op)(a, b).todense())(A, B)
    np.testing.assert_array_equal(np.asarray(traced), getattr(np, op)(da, db))


def test_to_scipy_csr_fast_path():
    import scipy.sparse as sp

    from bcoo_array._convert.scipy import to_scipy

    rng = np.random.default_rng(5)
    A, dense = messy_matrix(rng, 10, 8, 30)
    c = A.sum_duplicates()
    s = to_scipy(c, "csr")
    assert isinstance(s, sp.csr_array) and s.has_canonical_format
    np.testing.assert_array_equal(s.toarray(), dense)
    s.data[:] = 0  # the export is a copy: the BCOOArray keeps its values
    np.testing.assert_array_equal(np.asarray(c.todense()), dense)
    np.testing.assert_array_equal(to_scipy(A, "csr").toarray(), dense)
    # rows sorted, but a duplicate and unsorted columns: a valid, non-canonical scipy CSR
    D = BCOOArray((jnp.asarray([1.0, 2.0, 3.0, 4.0]), jnp.asarray([[0, 2], [0, 1], [0, 2], [1, 0]])), shape=(2, 3))
    sd = to_scipy(D, "csr")
    assert not sd.has_canonical_format
    np.testing.assert_array_equal(sd.toarray(), [[0.0, 2.0, 4.0], [4.0, 0.0, 0.0]])


def test_identity_cache_is_weak_and_exact():
    cache = IdentityCache(maxsize=2)
    a = jnp.arange(3)
    calls = []
    assert cache.get((a,), "k", lambda: calls.append(1) or "plan") == "plan"
    assert cache.get((a,), "k", lambda: calls.append(1) or "other") == "plan"
    assert len(calls) == 1
    assert cache.get((a,), "k2", lambda: "p2") == "p2"  # the static key is part of the key
    del a
    gc.collect()
    assert len(cache) == 0  # dropped with its buffer
    for i in range(4):
        cache.get((jnp.arange(i + 1),), "k", lambda: i)
    assert len(cache) <= 2


def test_bench_runner_smoke(tmp_path):
    from bcoo_array.cli import bench as _bench

    case = _bench.load_case("random:60:300")
    assert case.A.nnz == 300 and case.B.nnz == 300 and case.shape == (60, 60)
    ops = ("SpMV A @ x", "sum(axis=0)", "A + B (canonical)", "to scipy CSR")
    res = _bench.run_case(case, repeat=2, libraries=("bcoo_array", "scipy"), operations=ops)
    assert [r.operation for r in res] == list(ops)
    assert all(r.ratio("bcoo_array") > 0 for r in res), [r.errors for r in res]
    md = _bench.markdown_table(res, {case.name: case}, bw=1e10, libraries=("bcoo_array", "scipy"))
    assert md.count("\n") == len(ops) + 1
    png = _bench.plot(res, tmp_path / "b.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="random:N:NNZ"):
        _bench.load_case("random:x")
    with pytest.raises(FileNotFoundError):
        _bench.load_case("no-such-matrix")


@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int32])
def test_sparse_sparse_matmul_eager_and_traced(dtype):
    rng = np.random.default_rng(6)
    A, da = messy_matrix(rng, 9, 8, 25, dtype)
    B, db = messy_matrix(rng, 8, 7, 20, dtype)
    out = A @ B
    assert isinstance(out, BCOOArray) and out.n_sparse == 2 and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(out.todense()), da @ db, rtol=1e-6)
    # built inside jit the arrays have traced indices (the constructor's jnp.asarray is staged), so
    # the product's size needs a static bound: the traced expand-sort-compress kernel with nse=
    # (the products of distinct stored positions), and matmul without one refuses instead of densifying
    ia, ib = A.indices, B.indices
    pa = {tuple(r) for r in np.asarray(ia) if r[0] < 9 and r[1] < 8}
    pb = {tuple(r) for r in np.asarray(ib) if r[0] < 8 and r[1] < 7}
    products = sum(1 for (_, k) in pa for (k2, _) in pb if k2 == k)

    def f(x, y):
        a, b = BCOOArray((x, ia), shape=A.shape), BCOOArray((y, ib), shape=B.shape)
        return xp.linalg.sparse_matmul(a, b, nse=products).todense()

    np.testing.assert_allclose(np.asarray(jax.jit(f)(A.data, B.data)), da @ db, rtol=1e-6)

    def g(x, y):
        return (BCOOArray((x, ia), shape=A.shape) @ BCOOArray((y, ib), shape=B.shape)).todense()

    with pytest.raises(ValueError, match="sparse_matmul"):
        jax.jit(g)(A.data, B.data)


# --- Row-split ELL SpMV (bcoo_array/_kernels/ell.py) -------------------------------------
# The ELL plan is used for matrices with at least ``ell.MIN_NSE`` entries; the tests lower
# that threshold so small matrices take it, and check that they did.


def test_chunk_width_minimises_padded_slots_plus_chunks():
    from bcoo_array._kernels.ell import chunk_width

    # rows of 3 and 5 entries: width 4 -> 3 chunks (15 = 3 * 5), width 8 -> 2 chunks (18)
    assert chunk_width(np.array([3, 5, 0])) == (4, 3)
    # 60 entries per row: width 16 -> 4 chunks a row (68), 32 -> 2 (66), 64 -> 1 (65)
    assert chunk_width(np.array([60, 60])) == (64, 2)
    assert chunk_width(np.array([0, 0])) == (4, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32])
@pytest.mark.parametrize("canonical", [False, True])
def test_ell_spmv_matches_dense(monkeypatch, dtype, canonical):
    from bcoo_array._kernels import ell

    monkeypatch.setattr(ell, "MIN_NSE", 0)
    rng = np.random.default_rng(7)
    A, dense = messy_matrix(rng, 23, 17, 150, dtype)
    # one long row, so some rows span several chunks, and an empty row
    extra = BCOOArray((jnp.asarray(np.arange(1, 18).astype(dtype)),
                       jnp.asarray(np.stack([np.full(17, 5), np.arange(17)], 1))), shape=(23, 17))
    A = BCOOArray((jnp.concatenate([A.data, extra.data]), jnp.concatenate([A.indices, extra.indices])),
                  shape=(23, 17))  # unsorted, duplicates, padding
    dense = dense + np.asarray(extra.todense())
    if canonical:
        A = A.sum_duplicates()
    plan = ell.ell_plan(A.indices, A.shape)
    assert plan is not None and (plan.perm is None) == canonical
    assert int(np.asarray(plan.length).max()) <= plan.width < 17  # row 5 was split
    x = rng.integers(-3, 4, 17).astype(dtype)
    out = A @ jnp.asarray(x)
    assert out.shape == (23,) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(out), dense @ x, rtol=1e-5)
    traced = jax.jit(lambda a, v: (a @ v))(A, jnp.asarray(x))  # general path
    np.testing.assert_allclose(np.asarray(traced), dense @ x, rtol=1e-5)


def test_ell_spmv_padding_never_reads_nonfinite(monkeypatch):
    from bcoo_array._kernels import ell

    monkeypatch.setattr(ell, "MIN_NSE", 0)
    monkeypatch.setattr(ell, "MAX_PADDING_RATIO", 4.0)
    rows = np.array([0, 0, 0, 2, 2, 3, 3, 3, 3, 3])
    cols = np.array([0, 1, 2, 0, 1, 0, 1, 2, 0, 1])
    vals = np.arange(1.0, 11.0)
    # row 2's padding slots (width 4, 2 entries) point at row 3's first entries: one is inf
    vals[5] = np.inf
    # padding entry holding inf (row index == 4 marks padding)
    A = BCOOArray((jnp.asarray(np.append(vals, np.inf)), jnp.asarray(np.stack([np.append(rows, 4),
                                                                            np.append(cols, 0)], 1))),
                  shape=(4, 4))
    plan = ell.ell_plan(A.indices, A.shape)
    assert plan is not None and plan.width == 4
    x = np.array([1.0, 2.0, 3.0, np.inf])  # column 3 holds no entry
    dense = np.zeros((4, 4))
    np.add.at(dense, (rows, cols), vals)
    expect = dense[:, :3] @ x[:3]
    np.testing.assert_array_equal(np.asarray((A @ jnp.asarray(x))), expect)


def test_ell_spmv_grad_vmap_and_jit(monkeypatch):
    from bcoo_array._kernels import ell

    monkeypatch.setattr(ell, "MIN_NSE", 0)
    rng = np.random.default_rng(8)
    A, dense = messy_matrix(rng, 11, 9, 40)
    assert ell.ell_plan(A.indices, A.shape) is not None
    x = jnp.asarray(rng.standard_normal(9))
    # A closed over: the plan is used inside jit and grad (the kernel is inlined there)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda v: (A @ v))(x)), dense @ np.asarray(x),
                               rtol=1e-12)
    g = jax.grad(lambda v: jnp.sum((A @ v) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * dense.T @ (dense @ np.asarray(x)), rtol=1e-10)
    idx = A.indices
    gd = jax.grad(lambda d: jnp.sum((BCOOArray((d, idx), shape=A.shape) @ x)))(A.data)
    ind = np.asarray(idx)
    valid = (ind[:, 0] < 11) & (ind[:, 1] < 9)
    np.testing.assert_allclose(np.asarray(gd), np.where(valid, np.asarray(x)[np.minimum(ind[:, 1], 8)], 0.0),
                               rtol=1e-12)
    V = jnp.asarray(rng.standard_normal((3, 9)))
    out = jax.vmap(lambda v: (A @ v))(V)
    np.testing.assert_allclose(np.asarray(out), np.asarray(V) @ dense.T, rtol=1e-10)


def test_ell_plan_thresholds(monkeypatch):
    from bcoo_array._kernels import ell

    rng = np.random.default_rng(9)
    A, _ = messy_matrix(rng, 8, 8, 30)
    assert ell.ell_plan(A.indices, A.shape) is None  # below MIN_NSE: the segment-sum kernel
    monkeypatch.setattr(ell, "MIN_NSE", 0)
    monkeypatch.setattr(ell, "MAX_PADDING_RATIO", 0.5)  # padding can never be that small
    B, _ = messy_matrix(rng, 8, 8, 30)
    assert ell.ell_plan(B.indices, B.shape) is None


def test_identity_cache_buffer_dying_while_lock_held_does_not_deadlock():
    # Garbage collection can run a weakref callback inside get() while it holds
    # the lock; the callback must not try to take the lock again.
    import threading

    cache = IdentityCache(maxsize=4)

    def scenario():
        a = jnp.arange(3)
        cache.get((a,), "k", lambda: "plan")
        with cache._lock:
            del a
            gc.collect()

    t = threading.Thread(target=scenario, daemon=True)
    t.start()
    t.join(timeout=600)  # a deadlock guard, not a timing: the scenario takes milliseconds
    assert not t.is_alive(), "weakref callback blocked on the cache lock"
    assert len(cache) == 0


class _CompileCounter:
    """Count XLA compilations (JAX logs each one when ``jax_log_compiles`` is on)."""

    def __init__(self):
        import logging

        self.count = 0
        self._handler = logging.Handler()
        self._handler.emit = self._emit
        self._logger = logging.getLogger("jax")

    def _emit(self, record):
        if record.getMessage().startswith("Compiling "):
            self.count += 1

    def __enter__(self):
        import logging

        self._old_level = self._logger.level
        self._logger.addHandler(self._handler)
        self._logger.setLevel(logging.WARNING)
        self._old_flag = jax.config.jax_log_compiles
        jax.config.update("jax_log_compiles", True)
        return self

    def __exit__(self, *exc):
        jax.config.update("jax_log_compiles", self._old_flag)
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._old_level)


def test_eager_elementwise_compiles_one_program_per_call():
    """An eager element-wise call on a new shape compiles one XLA program (values and fill value together),
    not one per primitive; so does a scalar operation, and a 0-d result is read without one."""
    rng = np.random.default_rng(7)
    d = (rng.random((37, 29)) < 0.2) * rng.standard_normal((37, 29))
    A = xp.asarray(d.astype(np.float32))
    A = A._canonical()
    with _CompileCounter() as c:
        S = xp.sign(A)  # a composite function of several primitives
    assert c.count <= 1, c.count
    np.testing.assert_array_equal(np.asarray(S.todense()), np.sign(d.astype(np.float32)))
    with _CompileCounter() as c:
        B = A * np.float32(3)
    assert c.count <= 1, c.count
    np.testing.assert_array_equal(np.asarray(B.todense()), d.astype(np.float32) * 3)
    s = xp.sum(A)
    with _CompileCounter() as c:
        v = float(s)
    assert c.count == 0, c.count
    assert np.isclose(v, d.astype(np.float32).sum(), rtol=1e-5)
    with _CompileCounter() as c:
        z = xp.zeros((41, 43))
    assert c.count == 0, c.count
    assert z.nse == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64])
def test_bound_matvec_follows_the_arrays_buffers(monkeypatch, dtype):
    """``A @ x`` with a NumPy vector runs the host loop bound to ``A`` once; the binding follows
    in-place operations, item assignment and reassigned buffers, and yields to BCOO_ARRAY_NATIVE=0."""
    from bcoo_array._kernels import native

    rng = np.random.default_rng(3)
    S = rng.integers(-4, 5, (9, 7)).astype(dtype) * (rng.random((9, 7)) < 0.4)
    A = xp.asarray(S)  # canonical: the CSR binding applies where the native kernel is built
    x = rng.integers(-3, 4, 7).astype(dtype)
    for _ in range(2):  # the first call binds, the second reuses
        out = A @ x
        assert type(out) is np.ndarray and out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, S @ x)
        np.testing.assert_array_equal(A.dot(x), S @ x)
    bound = A._bound_matvec()
    assert (bound is not None) == native.available()
    np.testing.assert_array_equal(np.asarray(A @ jnp.asarray(x)), S @ x)  # a JAX vector: the bound FFI kernel
    A += A  # new buffers: the old binding must not be used
    S = S + S
    np.testing.assert_array_equal(A @ x, S @ x)
    np.testing.assert_array_equal(np.asarray(A @ jnp.asarray(x)), S @ x)
    A[2, 3] = 5
    S[2, 3] = 5
    np.testing.assert_array_equal(A @ x, S @ x)
    np.testing.assert_array_equal(A.dot(x), S @ x)
    np.testing.assert_array_equal(np.asarray(A @ jnp.asarray(x)), S @ x)
    A.data = A.data * 2  # a buffer replaced by hand
    np.testing.assert_array_equal(A @ x, (2 * S) @ x)
    np.testing.assert_array_equal(np.asarray(A @ jnp.asarray(x)), (2 * S) @ x)
    # under jit the vector is traced: the general path, same values
    np.testing.assert_allclose(np.asarray(jax.jit(lambda a, v: a @ v)(A, jnp.asarray(x))), (2 * S) @ x, rtol=1e-6)
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")  # read at each call: the XLA kernels run
    np.testing.assert_allclose(A @ x, (2 * S) @ x, rtol=1e-6)
    # other vectors go the general way: another dtype, a 2-D operand, a strided view
    monkeypatch.delenv("BCOO_ARRAY_NATIVE")
    xs = np.arange(14, dtype=dtype)[::2]
    np.testing.assert_array_equal(A @ xs, (2 * S) @ xs)
    np.testing.assert_allclose(A @ x[:, None], (2 * S) @ x[:, None], rtol=1e-6)
    with pytest.raises(ValueError):
        A @ np.ones(6, dtype)


def test_bound_matvec_applies_to_plain_matrices_only():
    """Non-zero fill values, batch or dense dimensions and unsorted indices get no binding and stay exact."""
    rng = np.random.default_rng(4)
    S = np.where(rng.random((6, 5)) < 0.5, rng.integers(1, 5, (6, 5)), 2.0)
    x = rng.random(5)
    F = BCOOArray.fromdense(S, fill_value=2.0)
    assert F._bound_matvec() is None
    np.testing.assert_allclose(F @ x, S @ x)
    M, dense = messy_matrix(rng, 8, 5, 20)  # duplicates, random order, padding
    assert M._bound_matvec() is None
    np.testing.assert_allclose(M @ x, dense @ x)
    D = BCOOArray.fromdense(dense, n_dense=1)
    assert D._bound_matvec() is None
    np.testing.assert_allclose(D @ x, dense @ x)


def test_operator_shortcut_leaves_routing_to_subclasses():
    """``A @ x`` (NumPy vector) goes straight to the bound kernel for a BCOOArray, but a subclass that
    implements the namespace through ``__bcoo_function__`` still receives the call."""

    class Routed(BCOOArray):
        __slots__ = ()

        def __bcoo_function__(self, func, args, kwargs):
            return ("routed", func.__name__)

    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    A = xp.asarray(dense)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(A @ x, dense @ x)
    R = Routed((A.data, A.indices), shape=A.shape, indices_sorted=True, unique_indices=True)
    assert (R @ x) == ("routed", "matmul")
