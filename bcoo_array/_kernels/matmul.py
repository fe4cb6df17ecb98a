"""Sparse matrix products.

* ``coo_matmat``: sparse (m, k) @ dense (k,) or (k, n) by a gather of the
  dense rows and a segment sum over the output rows (no nse x nse temporaries).
* ``spgemm_plan``: the expand-sort-compress plan of sparse @ sparse
  (Gustavson's row-by-row product, vectorised as in cuSPARSE's ESC scheme):
  one product per pair (A[i, k], B[k, j]) that meets, so memory is the number
  of multiplications, never nse_A x nse_B.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def coo_matmat(data, rows, cols, x, m: int, rows_sorted: bool = False):
    """``A @ x`` for a 2-D COO matrix ``A`` given by ``(data, rows, cols)`` with ``m`` rows.

    Padding entries (row index ``m`` or column index ``x.shape[0]``) add
    nothing, whatever garbage (even NaN) they hold.
    """
    xv = jnp.take(x, cols, axis=0, mode="clip") if x.shape[0] else jnp.zeros((cols.shape[0],) + x.shape[1:], x.dtype)
    prod = (data.reshape(data.shape + (1,) * (x.ndim - 1)) * xv)
    col_ok = (cols < x.shape[0]).reshape(cols.shape + (1,) * (x.ndim - 1))
    prod = jnp.where(col_ok, prod, jnp.zeros((), prod.dtype))
    return jax.ops.segment_sum(prod, rows, num_segments=m, indices_are_sorted=rows_sorted)


def spgemm_plan(a_rows, a_cols, b_rows, b_cols, shape_b_rows: int, n_cols: int):
    """Plan the product of two canonical 2-D COO matrices (concrete NumPy indices).

    Parameters
    ----------
    a_rows, a_cols : int arrays of the valid entries of A (any order, unique).
    b_rows, b_cols : int arrays of the valid entries of B.
    shape_b_rows : int
        Number of rows of B (= columns of A).
    n_cols : int
        Number of columns of B.

    Returns
    -------
    a_pos, b_pos : int64 arrays, one per elementary product
        Positions in A's and B's entry lists.
    segment : int64 array
        Output entry of each product (sorted output order).
    out_rows, out_cols : int64 arrays
        The output pattern, sorted row-major.
    """
    b_order = np.argsort(b_rows, kind="stable")
    counts = np.bincount(b_rows, minlength=shape_b_rows)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    per_a = counts[a_cols]
    total = int(per_a.sum())
    a_pos = np.repeat(np.arange(a_rows.size), per_a)
    starts = np.repeat(ptr[a_cols] - np.concatenate([[0], np.cumsum(per_a)[:-1]]), per_a)
    b_sorted_pos = np.arange(total) + starts
    b_pos = b_order[b_sorted_pos]
    keys = a_rows[a_pos].astype(np.int64) * max(n_cols, 1) + b_cols[b_pos].astype(np.int64)
    uniq, segment = np.unique(keys, return_inverse=True)
    return a_pos, b_pos, segment, uniq // max(n_cols, 1), uniq % max(n_cols, 1)
