"""matmul against dense NumPy: sparse @ dense, dense @ sparse, sparse @
sparse, 1-D operands, batch dimensions, non-zero fill values, under
``jax.jit``; sparse @ sparse under ``jit`` (static bounds, ``nse=`` of
``linalg.sparse_matmul``, the refusal instead of densifying); and the memory
bound of sparse @ sparse (no nse_A x nse_B intermediate) on two 20000 x 20000
matrices checked against scipy.
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
from _oracle import assert_matches, cases

MM_DTYPES = (np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.complex128))


@st.composite
def matmul_shapes(draw):
    """Shapes (sa, sb) valid for matmul: 1-D or n-D with broadcast batch dims."""
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    nd_a = draw(st.integers(1, 3))
    nd_b = draw(st.integers(1, 3))
    batch = tuple(draw(st.integers(1, 2)) for _ in range(max(nd_a, nd_b) - 2 if max(nd_a, nd_b) > 2 else 0))
    sa = (k,) if nd_a == 1 else tuple(1 if draw(st.booleans()) else b for b in batch[len(batch) - (nd_a - 2):]) + (m, k)
    sb = (k,) if nd_b == 1 else tuple(1 if draw(st.booleans()) else b for b in batch[len(batch) - (nd_b - 2):]) + (k, n)
    return sa, sb


def _expected(a, b):
    return np.matmul(a, b)


def assert_dense(got, expected, kind, *, rtol=None):
    """A dense product of the operand's type (0-d NumPy results are NumPy scalars, as NumPy's own)."""
    if kind is np.ndarray and np.ndim(expected) == 0:
        assert isinstance(got, (np.ndarray, np.generic)), type(got)
    else:
        assert isinstance(got, kind), type(got)
    got = np.asarray(got)
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype, (got.shape, got.dtype)
    if rtol is None:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@settings(max_examples=25)
@given(data=st.data())
def test_matmul_sparse_sparse_and_mixed(data):
    sa, sb = data.draw(matmul_shapes(), label="shapes")
    dt = data.draw(st.sampled_from(MM_DTYPES), label="dtype")
    zero_fill = data.draw(st.booleans(), label="zero_fill")
    kw = dict(fill=0) if zero_fill else dict(nan_fill=False)
    a = data.draw(cases(shape=sa, dtype=dt, nan_values=False, **kw), label="a")
    b = data.draw(cases(shape=sb, dtype=dt, nan_values=False, **kw), label="b")
    expected = _expected(a.dense, b.dense)
    rt = None if dt.kind in "iu" else 1e-12
    assert_matches(xp.matmul(a.arr, b.arr), expected, rtol=rt)
    # The mixed-type rule: a JAX operand gives a jax.Array, a NumPy operand a NumPy array.
    assert_dense(a.arr @ jnp.asarray(b.dense), expected, jax.Array, rtol=rt)
    assert_dense(jnp.asarray(a.dense) @ b.arr, expected, jax.Array, rtol=rt)
    assert_dense(a.arr @ b.dense, expected, np.ndarray, rtol=rt)
    assert_dense(xp.matmul(a.dense, b.arr), expected, np.ndarray, rtol=rt)
    if data.draw(st.booleans(), label="jit"):
        plain = zero_fill and len(sa) <= 2 and len(sb) <= 2  # sparse @ sparse that stays sparse
        try:
            got = jax.jit(xp.matmul)(a.arr, b.arr)
        except ValueError as e:
            # refused only where the static bound of the product exceeds densifying, with the advice
            assert plain and "sparse_matmul" in str(e) and "todense()" in str(e), e
        else:
            assert_matches(got, expected, rtol=rt)
            if plain:
                assert got.n_dense == 0, "sparse @ sparse under jit densified"
        assert_dense(jax.jit(xp.matmul)(a.arr, jnp.asarray(b.dense)), expected, jax.Array, rtol=rt)


def test_sparse_sparse_2d_stays_sparse():
    a = BCOOArray.fromdense(np.array([[1.0, 0, 0], [0, 0, 2.0]]))
    b = BCOOArray.fromdense(np.array([[0, 3.0], [0, 0], [4.0, 0]]))
    out = a @ b
    assert out.n_sparse == 2 and out.nse == 2
    assert_matches(out, np.array([[0, 3.0], [8.0, 0]]))


def test_matmul_errors():
    a = BCOOArray.fromdense(np.eye(3))
    with pytest.raises(ValueError, match="contracted"):
        a @ jnp.ones((2, 2))
    with pytest.raises(ValueError, match="0-d"):
        xp.matmul(a, BCOOArray.fromdense(np.array(1.0)))
    with pytest.raises(TypeError):
        xp.matmul(BCOOArray.fromdense(np.array([[True]])), BCOOArray.fromdense(np.array([[True]])))


def test_spgemm_large_matches_scipy():
    """A @ B of two random 20000 x 20000 matrices with 10**5 entries each. An
    nse_A x nse_B intermediate (10**10 products) would need 80 GB; the ESC
    product needs one slot per meeting pair (about 5 * 10**5). Checked
    against scipy."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    n, nnz = 20000, 100_000
    A = sp.random_array((n, n), density=nnz / n**2, format="csr", rng=rng, dtype=np.float64)
    B = sp.random_array((n, n), density=nnz / n**2, format="csr", rng=rng, dtype=np.float64)
    out = xp.from_scipy(A) @ xp.from_scipy(B)
    assert out.n_sparse == 2
    expected = (A @ B).tocsr()
    got = xp.to_scipy(out).tocsr()
    assert got.nnz == expected.nnz
    assert abs(got - expected).max() <= 1e-12 * max(abs(expected).max(), 1.0)


# --------------------------------------------------------------------------- sparse @ sparse under jit


def _rand(m, n, density, seed, dtype=np.float64, duplicates=False):
    rng = np.random.default_rng(seed)
    dense = (rng.random((m, n)) < density) * rng.integers(-4, 5, (m, n))
    dense = dense.astype(dtype)
    if np.dtype(dtype).kind == "c":
        dense = dense * (1 + 2j)
    arr = BCOOArray.fromdense(dense)
    if duplicates and arr.nse:
        # split every stored value into two duplicate entries (same position, halves that sum exactly)
        half = arr.data / 2 if np.dtype(dtype).kind in "fc" else arr.data - arr.data // 2
        rest = arr.data - half
        arr = BCOOArray((jnp.concatenate([half, rest]), jnp.concatenate([arr.indices, arr.indices])), shape=(m, n))
        assert not arr.unique_indices
    return dense, arr


def _products(x, y):
    """Number of pairs x[i, k] y[k, j] of stored (non-zero) entries."""
    return int(((x != 0).sum(axis=0) * (y != 0).sum(axis=1)).sum())


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128])
@pytest.mark.parametrize("shape", [(7, 5, 6), (1, 4, 1), (6, 1, 5), (5, 6, 1), (0, 3, 4), (4, 0, 3)])
def test_sparse_matmul_nse_under_jit(shape, dtype):
    m, k, n = shape
    x, a = _rand(m, k, 0.4, 1, dtype, duplicates=True)
    y, b = _rand(k, n, 0.5, 2, dtype)
    expected = x @ y
    count = _products(x, y)
    nse = max(count, 1) + 3  # a loose bound: the result has exactly min(nse, m * n) slots
    f = jax.jit(lambda a, b: xp.linalg.sparse_matmul(a, b, nse=nse))
    got = f(a, b)
    assert got.shape == (m, n) and got.n_dense == 0 and got.n_batch == 0 and got.dtype == np.dtype(dtype)
    assert got.nse == min(nse, m * n)
    assert got.unique_indices and got.indices_sorted
    assert_matches(got, expected)
    eager = xp.linalg.sparse_matmul(a, b, nse=nse)  # same slots eagerly
    assert eager.nse == got.nse
    assert_matches(eager, expected)
    assert_matches(xp.matmul(a, b), expected)  # eager matmul: exact entries, as before
    if count:
        with pytest.raises(ValueError, match=f"pass nse >= {count}"):
            xp.linalg.sparse_matmul(a, b, nse=count - 1)


def test_sparse_matmul_exact_bound_and_errors():
    x, a = _rand(9, 8, 0.3, 3)
    y, b = _rand(8, 7, 0.3, 4)
    count = _products(x, y)
    assert count > 0
    got = jax.jit(lambda a, b: xp.linalg.sparse_matmul(a, b, nse=count))(a, b)
    assert_matches(got, x @ y)
    with pytest.raises(ValueError, match=f"nse={count - 1} is smaller than the {count} products"):
        xp.linalg.sparse_matmul(a, b, nse=count - 1)
    with pytest.raises(TypeError, match="dense"):
        xp.linalg.sparse_matmul(a, jnp.asarray(y))
    with pytest.raises(ValueError, match="fill value"):
        xp.linalg.sparse_matmul(a, b + 1.0)
    with pytest.raises(ValueError, match="2-D"):
        xp.linalg.sparse_matmul(xp.reshape(a, (1, 9, 8)), b)
    with pytest.raises(ValueError, match="contracted"):
        xp.linalg.sparse_matmul(a, a)
    # mixed dtypes promote by the standard's rules
    ai = a.astype(xp.int32)
    assert_matches(jax.jit(lambda p, q: xp.linalg.sparse_matmul(p, q, nse=count))(ai, b), x.astype(np.int32) @ y)


def test_matmul_under_jit_static_bounds_stay_sparse():
    x, a = _rand(40, 30, 0.05, 5)
    y, b = _rand(30, 35, 0.05, 6)
    expected = x @ y
    # each row of b a batch element: its nse bounds the entries of a row, so nse_a * nse_row is static
    b_rows = BCOOArray.fromdense(y, n_batch=1)
    got = jax.jit(xp.matmul)(a, b_rows)
    assert got.n_dense == 0 and got.nse == min(a.nse * b_rows.nse, 40 * 35)
    assert_matches(got, expected)
    # b closed over (concrete indices): its exact row counts bound the products
    got = jax.jit(lambda a: a @ b)(a)
    assert got.n_dense == 0
    assert got.nse == min(a.nse * int((y != 0).sum(axis=1).max()), 40 * 35)
    assert_matches(got, expected)
    # a closed over: its column counts bound them
    got = jax.jit(lambda b: a @ b)(b)
    assert got.n_dense == 0
    assert_matches(got, expected)
    # both traced, general layout: min(nse_a * min(nse_b, n), nse_b * min(nse_a, m)) exceeds the dense
    # route (m * n + k * n) -> a clear error, no densifying
    x2, a2 = _rand(40, 30, 0.3, 11)
    y2, b2 = _rand(30, 35, 0.3, 12)
    assert min(a2.nse * 35, b2.nse * 40) > 40 * 35 + 30 * 35
    with pytest.raises(ValueError, match=r"sparse_matmul\(x1, x2, nse=N\).*n_batch=1.*outside jit.*todense\(\)"):
        jax.jit(xp.matmul)(a2, b2)
    # ... and with the advice followed
    got = jax.jit(lambda a, b: xp.linalg.sparse_matmul(a, b, nse=_products(x2, y2)))(a2, b2)
    assert got.n_dense == 0
    assert_matches(got, x2 @ y2, rtol=1e-12)
    # the both-traced bound when it is small enough
    got = jax.jit(xp.matmul)(a, b)
    assert got.n_dense == 0 and got.nse == min(a.nse * min(b.nse, 35), b.nse * min(a.nse, 40), 40 * 35)
    assert_matches(got, expected)
    # small operands whose static bound is below the dense route run the bounded kernel directly
    xs, s = _rand(6, 5, 0.2, 7)
    ys, t = _rand(5, 6, 0.1, 8)
    assert s.nse * min(t.nse, 6) <= 6 * 6 + 5 * 6
    got = jax.jit(xp.matmul)(s, t)
    assert got.n_dense == 0
    assert_matches(got, xs @ ys)


def test_sparse_matmul_grad_under_jit():
    x, a = _rand(6, 5, 0.4, 9)
    y, b = _rand(5, 4, 0.4, 10)
    nse = _products(x, y)
    w = np.arange(24, dtype=np.float64).reshape(6, 4)

    def loss(da, db):
        out = xp.linalg.sparse_matmul(a.with_data(da), b.with_data(db), nse=nse)
        return jnp.sum(out.todense() * w)

    ga, gb = jax.jit(jax.grad(loss, argnums=(0, 1)))(a.data, b.data)
    # d/dA sum(w * (A @ B)) = w @ B^T at A's stored positions, and A^T @ w at B's
    want_a = (w @ y.T)[tuple(np.asarray(a.indices).T)]
    want_b = (x.T @ w)[tuple(np.asarray(b.indices).T)]
    np.testing.assert_allclose(np.asarray(ga), want_a, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gb), want_b, rtol=1e-12)


@pytest.mark.parametrize("engine", ["host", "xla"])
@pytest.mark.parametrize("large", [False, True])
def test_transpose_products_read_the_matrix_without_a_transposed_copy(engine, large, monkeypatch):
    """A.T @ x and x @ A (NumPy x) equal scipy's; A.T's values are gathered only when something reads them."""
    import scipy.sparse as sp

    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    if large:  # past the host engine's size rule: the transpose's plan and gather are XLA's
        monkeypatch.setenv("BCOO_ARRAY_HOST_MAX", "10")
    S = sp.random_array((60, 45), density=0.1, format="csr", rng=4)
    S.sum_duplicates()
    A = xp.asarray(S)
    x = np.random.default_rng(0).standard_normal(60)
    T = A.T
    np.testing.assert_allclose(T @ x, S.T @ x, rtol=1e-12)
    np.testing.assert_allclose(x @ A, x @ S, rtol=1e-12)
    if engine == "host":
        assert type(T._hdata).__name__ == "Deferred"  # the product did not need the transposed values
    np.testing.assert_array_equal(np.asarray(T.todense()), S.T.toarray())  # now they are computed
    np.testing.assert_array_equal(np.asarray(T.data), S.T.tocsr().data)
    T2 = A.T
    np.testing.assert_array_equal(np.asarray((T2 * 2.0).todense()), 2 * S.T.toarray())
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda t: t.todense())(A.T)), S.T.toarray())
    # a non-zero fill value and complex values keep their semantics
    F = xp.BCOOArray.fromdense(S.toarray() + 1.0, fill_value=1.0)
    np.testing.assert_allclose(np.asarray(x @ F), x @ (S.toarray() + 1.0), rtol=1e-12)
    C = xp.asarray(S * (1 + 2j))
    np.testing.assert_allclose(C.T @ x.astype(complex), (S * (1 + 2j)).T @ x, rtol=1e-12)


def test_transpose_products_with_a_jax_vector_read_the_matrix_on_the_host():
    """A.T @ x and x @ A with a concrete JAX vector: scipy's values, a jax.Array result, computed on the host
    from A's own buffers (the transpose's values are never gathered)."""
    import scipy.sparse as sp

    S = sp.random_array((50, 35), density=0.15, format="csr", rng=7)
    S.sum_duplicates()
    A = xp.asarray(S)
    x = jnp.asarray(np.random.default_rng(1).standard_normal(50))
    T = A.T
    got = T @ x
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), S.T @ np.asarray(x), rtol=1e-12)
    assert type(T._hdata).__name__ == "Deferred"
    got = x @ A
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) @ S, rtol=1e-12)
    # under jit the same expressions trace (XLA kernels) and agree
    np.testing.assert_allclose(np.asarray(jax.jit(lambda a, v: a.T @ v)(A, x)), S.T @ np.asarray(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda a, v: v @ a)(A, x)), np.asarray(x) @ S, rtol=1e-12)
