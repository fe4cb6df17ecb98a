"""jax.experimental.sparse (BCOO, BCSR) <-> BCOOArray: buffers are shared
where the layouts agree, every layout converts, conversions trace under jit,
and the real matrices round-trip. Oracle: dense NumPy / JAX's own todense."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.io
from _oracle import NUMERIC, assert_matches, cases
from hypothesis import given, settings
from jax.experimental import sparse as jsparse

import bcoo_array as xp

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []


def test_bcoo_shares_buffers_both_ways():
    dense = jnp.array([[[0.0, 1.0], [2.0, 0.0]], [[0.0, 0.0], [3.0, 4.0]]])
    M = jsparse.BCOO.fromdense(dense, n_batch=1, n_dense=0)
    A = xp.from_jax_sparse(M)
    assert A.data is M.data and A.indices is M.indices
    assert (A.n_batch, A.n_dense, A.shape) == (1, 0, (2, 2, 2))
    assert A.indices_sorted == M.indices_sorted and A.unique_indices == M.unique_indices
    np.testing.assert_array_equal(A.toarray(), dense)
    N = A.to_jax_sparse()
    assert N.data is A.data and N.indices is A.indices and N.n_batch == 1
    np.testing.assert_array_equal(N.todense(), dense)
    assert xp.asarray(M).data is M.data


def test_dense_dimensions_and_bcsr():
    dense = np.arange(24.0).reshape(4, 3, 2) * (np.arange(4) % 2)[:, None, None]
    M = jsparse.BCOO.fromdense(jnp.asarray(dense), n_dense=1)
    assert_matches(xp.asarray(M), dense)
    R = jsparse.BCSR.fromdense(jnp.asarray(dense[:, :, 0]))
    A = xp.from_jax_sparse(R)
    assert A.data is R.data  # BCSR -> BCOO computes row indices but shares the data buffer
    assert_matches(A, dense[:, :, 0])
    out = A.to_jax_sparse("bcsr")
    assert isinstance(out, jsparse.BCSR)
    np.testing.assert_array_equal(out.todense(), dense[:, :, 0])


@settings(max_examples=10, deadline=None)
@given(cases(min_ndim=1, max_ndim=3, fill=0, dtypes=NUMERIC))
def test_round_trip_any_layout(case):
    # (bool is left out: JAX's own BCOO.todense cannot scatter-add bool.)
    M = case.arr.to_jax_sparse()
    assert (M.n_batch, M.n_dense) == (case.arr.n_batch, case.arr.n_dense)
    np.testing.assert_array_equal(np.asarray(M.todense()), case.dense)
    assert_matches(xp.from_jax_sparse(M), case.dense)


def test_under_jit():
    @jax.jit
    def f(data, indices):
        M = jsparse.BCOO((data, indices), shape=(3, 3))
        A = xp.from_jax_sparse(M)
        return xp.multiply(A, 2.0).to_jax_sparse().todense()

    out = f(jnp.array([1.0, 2.0]), jnp.array([[0, 1], [2, 2]]))
    np.testing.assert_array_equal(out, [[0, 2, 0], [0, 0, 0], [0, 0, 4]])


def test_errors():
    A = xp.add(xp.asarray(np.eye(2)), 1.0)
    with pytest.raises(ValueError, match="fill value"):
        A.to_jax_sparse()
    with pytest.raises(ValueError, match="jax.experimental.sparse format"):
        xp.asarray(np.eye(2)).to_jax_sparse("csr")
    with pytest.raises(ValueError, match="2 sparse dimensions"):
        xp.asarray(np.ones((2, 2, 2))).to_jax_sparse("bcsr")
    with pytest.raises(TypeError, match="BCOO or BCSR"):
        xp.from_jax_sparse(np.eye(2))


@pytest.mark.skipif(not FILES, reason="shared/data/matrices is not available")
@pytest.mark.parametrize("name", FILES)
def test_real_matrices_round_trip(name):
    A = scipy.io.mmread(MATRICES / name, spmatrix=False).tocoo()
    A.sum_duplicates()
    B = xp.from_scipy(A)
    M = B.to_jax_sparse()
    assert M.nse == A.nnz
    back = xp.from_jax_sparse(M).to_scipy("coo")
    np.testing.assert_array_equal(back.row, A.row)
    np.testing.assert_array_equal(back.col, A.col)
    np.testing.assert_array_equal(back.data, A.data)
