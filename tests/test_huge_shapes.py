"""Arrays with more than 2**63 positions (each dimension below 2**63): reductions, reshapes, element-wise
functions, transposes and slices work on the stored entries, with position arithmetic in exact integers; what
cannot be represented (a dimension of 2**63 or more) raises naming the limit."""

from __future__ import annotations

import numpy as np
import pytest

import bcoo_array as xp

N = 2**40
ROWS = np.array([0, 2**39, N - 1])
COLS = np.array([5, 7, N - 1])
VALS = np.array([1.0, 2.0, 3.0])


def _huge(fill=0.0, dtype=np.float64):
    return xp.BCOOArray((VALS.astype(dtype), np.stack([ROWS, COLS], 1)), shape=(N, N), fill_value=fill)


def test_reductions_count_the_unstored_positions_exactly():
    A = _huge()
    assert float(xp.sum(A)) == 6.0
    assert float(xp.max(A)) == 3.0 and float(xp.min(A)) == 0.0  # unstored zeros are in the minimum
    assert int(xp.count_nonzero(A)) == 3
    assert float(xp.mean(A)) == pytest.approx(6.0 / N**2)
    assert float(xp.prod(A)) == 0.0
    assert float(xp.sum(_huge(fill=1.0))) == pytest.approx(N**2, rel=1e-12)  # rounded, not an OverflowError
    # integers wrap modulo 2**64, exactly as NumPy's sum of that many values would
    ints = _huge(fill=3, dtype=np.int64)
    want = (3 * (N * N - 3) + 1 + 2 + 3) % 2**64
    assert int(np.asarray(xp.sum(ints).todense()).astype(np.uint64)) == want
    assert float(xp.max(_huge(fill=-1.0))) == 3.0 and float(xp.min(_huge(fill=-1.0))) == -1.0
    np.testing.assert_array_equal(np.asarray(xp.sum(A, axis=0)[np.array([5, 7])].todense()), [1.0, 2.0])


def test_reshape_transpose_slice_and_elementwise():
    A = _huge()
    B = xp.reshape(A, (2**20, 2**60))
    flat = ROWS.astype(object) * N + COLS.astype(object)
    np.testing.assert_array_equal(np.asarray(B.indices), np.stack([flat // 2**60, flat % 2**60], 1).astype(np.int64))
    C = xp.reshape(B, (N, N))
    np.testing.assert_array_equal(np.asarray(C.indices), np.stack([ROWS, COLS], 1))
    with pytest.raises(ValueError, match="2\\*\\*63"):
        xp.reshape(A, (-1,))
    T = A.T
    np.testing.assert_array_equal(np.asarray(T.indices), np.stack([COLS, ROWS], 1)[np.argsort(COLS)])
    S = A[2**39:2**39 + 5]
    assert S.shape == (5, N) and S.nse == 1
    D = A * 2.0
    np.testing.assert_array_equal(np.asarray(D.data), 2 * VALS)
