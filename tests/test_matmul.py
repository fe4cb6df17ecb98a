"""matmul against dense NumPy: sparse @ dense, dense @ sparse, sparse @
sparse, 1-D operands, batch dimensions, non-zero fill values, under
``jax.jit``; and the memory bound of sparse @ sparse (no nse_A x nse_B
intermediate) on two 20000 x 20000 matrices checked against scipy.
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
from _oracle import assert_matches, cases, to_np

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
    assert_matches(a.arr @ jnp.asarray(b.dense), expected, rtol=rt)
    assert_matches(jnp.asarray(a.dense) @ b.arr, expected, rtol=rt)
    if data.draw(st.booleans(), label="jit"):
        assert_matches(jax.jit(xp.matmul)(a.arr, b.arr), expected, rtol=rt)
        assert_matches(jax.jit(xp.matmul)(a.arr, jnp.asarray(b.dense)), expected, rtol=rt)


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
