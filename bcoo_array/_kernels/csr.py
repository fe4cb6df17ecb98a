"""Fast paths for 2-D matrices with concrete indices: row-compressed plans.

A 2-D array with ``n_batch = n_dense = 0`` whose ``indices`` buffer is
concrete (not a tracer) gets a *row plan*, computed once with NumPy and
cached on the identity of the buffer (``.cache``): the stable order that
sorts the entries by row (None when they already are), the sorted row and
column indices, and the CSR row pointer. Padding entries (any index equal to
its dimension) sort last and lie outside the row pointer.

With the plan:

* ``A @ x`` is a gather of ``x`` and a sorted segment sum, one compiled
  call (no sort, no scatter conflicts): ``matmat_segments``;
* ``A @ X`` with several columns of a floating dtype can go through
  ``jax.experimental.sparse.bcsr_dot_general``, which lowers on CPU to
  XLA's native CSR kernel (``cpu_csr_sparse_dense_ffi``): no ``nse x k``
  temporary, unlike the gather/scatter lowering of BCOO (``matmat_bcsr``);
* ``sum(A, axis)`` is one segment sum over a cached projection plan.

Only the index *structure* is precomputed; values flow through JAX, so
``jit``, ``grad`` (with respect to the values or the dense operand) and
``vmap`` (over the dense operand) keep working. When the indices are traced
the callers use the general kernels instead. Which kernel runs is chosen in
``.matmul``, not here.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .cache import PLANS
from .host import adopt
from .native import host_coo_to_csr
from .plan import accurate_segment_sum

#: Fewest right-hand columns for which the native CSR kernel beats the segment sum
#: (measured on CPU: the kernel's per-row setup dominates at one column).
CSR_KERNEL_MIN_COLS = 4


class RowPlan(NamedTuple):
    """Row-sorted structure of a 2-D COO matrix (see the module docstring)."""

    perm: jax.Array | None  # (n_valid,) entries in row order; None when the first n_valid already are
    rows: jax.Array  # (n_valid,) sorted rows of the valid (non-padding) entries
    cols: jax.Array  # (n_valid,) their columns
    indptr: jax.Array  # (m + 1,) CSR row pointer
    n_valid: int


def _index_dtype(*sizes: int):
    return np.int32 if max(sizes, default=0) < 2**31 - 1 else np.int64


def _row_plan_numpy(idx: np.ndarray, m: int, n: int) -> RowPlan:
    r = idx[:, 0]
    c = idx[:, 1]
    valid = (r < m) & (c < n) & (r >= 0) & (c >= 0)
    key = np.where(valid, r, m) if not valid.all() else r
    if key.size > 1 and not bool(np.all(key[1:] >= key[:-1])):
        perm = np.argsort(key, kind="stable")
        key = key[perm]
        c = c[perm]
        valid = valid[perm]
    else:
        perm = None
    idt = _index_dtype(key.size, m + 1, n)
    counts = np.bincount(key, minlength=m + 1)[:m]
    indptr = np.zeros(m + 1, dtype=idt)
    np.cumsum(counts, out=indptr[1:])
    nv = int(indptr[-1])  # padding (key m) sorts after every valid entry
    return RowPlan(
        None if perm is None else adopt(perm[:nv].astype(idt)),
        adopt(key[:nv].astype(idt)),
        adopt(c[:nv].astype(idt)),
        adopt(indptr),
        nv,
    )


def row_plan(indices, shape: tuple[int, int]) -> RowPlan:
    """The (cached) ``RowPlan`` of concrete 2-D ``indices`` of shape ``(nse, 2)``."""
    m, n = shape
    return PLANS.get((indices,), ("rows", m, n), lambda: _row_plan_numpy(np.asarray(indices), m, n))


_IN_BOUNDS = jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS


def _valid_data(data, perm, n_valid: int):
    """The values of the valid entries in row order (static slice or one gather)."""
    return data[:n_valid] if perm is None else data.at[perm].get(mode=_IN_BOUNDS)


class CSRArrays(NamedTuple):
    """NumPy CSR structure of a 2-D COO matrix whose valid entries come first, row-sorted."""

    indptr: np.ndarray  # (m + 1,) int32 or int64
    cols: np.ndarray  # (n_valid,) same dtype
    n_valid: int
    canonical: bool  # columns strictly increasing within each row (sorted, no duplicates)


def _csr_arrays_numpy(idx: np.ndarray, m: int, n: int) -> CSRArrays | None:
    if m > 4 * idx.shape[0] + 2**22:
        return None  # row pointers would outweigh the entries (a huge, nearly empty matrix): the COO paths serve it
    idt = _index_dtype(idx.shape[0], m + 1, n)
    if idt == _index_dtype(m + 1, n):  # (the dtype does not depend on how many entries are valid)
        got = host_coo_to_csr(idx, m, n, idt)  # one native pass: checks, row pointer, columns
        if got is not None:
            indptr, cols, nv, canonical = got
            return CSRArrays(indptr, cols, nv, canonical)
    r = idx[:, 0]
    c = idx[:, 1]
    valid = (r < m) & (c < n) & (r >= 0) & (c >= 0)
    nv = int(np.count_nonzero(valid))
    if not valid[:nv].all():
        return None
    r, c = r[:nv], c[:nv]
    if nv > 1 and not bool(np.all(r[1:] >= r[:-1])):
        return None
    idt = _index_dtype(nv, m + 1, n)
    indptr = np.zeros(m + 1, dtype=idt)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    canonical = nv < 2 or bool(np.all((r[1:] != r[:-1]) | (c[1:] > c[:-1])))
    return CSRArrays(indptr, np.ascontiguousarray(c, dtype=idt), nv, canonical)


def csr_arrays(indices, shape: tuple[int, int]) -> CSRArrays | None:
    """The (cached) NumPy CSR structure of concrete 2-D ``indices``, or None.

    None unless the valid entries come first with non-decreasing rows (as in
    canonical form); ``canonical`` then tells whether the columns are also
    strictly increasing within rows. The arrays are shared by every caller:
    copy them before handing them out.
    """
    m, n = shape
    return PLANS.get((indices,), ("csr-np", m, n), lambda: _csr_arrays_numpy(np.asarray(indices), m, n))


@partial(jax.jit, static_argnames=("m", "n_valid"))
def matmat_segments(data, perm, rows, cols, x, m: int, n_valid: int):
    """``(A @ x)[None]`` with a row plan: a gather of ``x`` and a sorted segment sum, one compiled call."""
    d = _valid_data(data, perm, n_valid)
    # Every plan index is in bounds (padding was cut off), so no clamping code is needed.
    xv = x.at[cols].get(mode=_IN_BOUNDS)
    prod = d.reshape(d.shape + (1,) * (x.ndim - 1)) * xv
    return jax.ops.segment_sum(prod, rows, num_segments=m, indices_are_sorted=True, mode=_IN_BOUNDS)[None]


@partial(jax.jit, static_argnames=("shape", "n_valid"))
def matmat_bcsr(data, perm, cols, indptr, x, shape, n_valid: int):
    """``(A @ X)[None]`` through ``jax.experimental.sparse.bcsr_dot_general`` (XLA's native CSR kernel on CPU)."""
    from jax.experimental import sparse as jsparse

    d = _valid_data(data, perm, n_valid)
    mat = jsparse.BCSR((d, cols, indptr), shape=shape, indices_sorted=False, unique_indices=False)
    return jsparse.bcsr_dot_general(mat, x, dimension_numbers=(([1], [0]), ([], [])))[None]


class AxisPlan(NamedTuple):
    """Where each stored entry of a 2-D matrix goes in ``sum(axis)``: its output segment."""

    segment: jax.Array  # (nse,) output position of each entry; n_out for padding
    out_indices: jax.Array  # (n_out, 1) the distinct kept indices, sorted
    n_out: int
    is_sorted: bool


def _axis_plan_numpy(idx: np.ndarray, shape: tuple[int, int], axis: int) -> AxisPlan:
    seg, out_idx, n_out, is_sorted = _axis_plan_host(idx, shape, axis)
    return AxisPlan(adopt(seg), adopt(out_idx), n_out, is_sorted)


def axis_plan_host(indices: np.ndarray, shape: tuple[int, int], axis: int) -> tuple:
    """The host engine's ``axis_plan``: ``(segment, out_indices, n_out, is_sorted)`` as NumPy (cached)."""
    return PLANS.get((indices,), ("axis-host", tuple(shape), axis),
                     lambda: _axis_plan_host(np.asarray(indices), tuple(shape), axis))


def _axis_plan_host(idx: np.ndarray, shape: tuple[int, int], axis: int) -> tuple:
    m, n = shape
    keep = 1 - axis
    size = shape[keep]
    valid = (idx[:, 0] < m) & (idx[:, 1] < n) & (idx[:, 0] >= 0) & (idx[:, 1] >= 0)
    key = idx[:, keep]
    if not valid.all():
        key = np.where(valid, key, size)
    if size > 4 * key.size + 1024:
        # A long kept dimension (e.g. 3e9 rows): sort the keys instead of a
        # presence array of the dimension's size, so memory stays O(nse).
        uniq, inv = np.unique(key, return_inverse=True)
        n_out = int(uniq.size - (uniq.size and uniq[-1] == size))
        seg = inv.reshape(-1).astype(_index_dtype(size + 1, key.size))
        out_idx = uniq[:n_out].astype(idx.dtype)[:, None]
        is_sorted = bool(seg.size < 2 or np.all(seg[1:] >= seg[:-1]))
        return seg, out_idx, n_out, is_sorted
    present = np.zeros(size + 1, dtype=bool)
    present[key] = True
    present[size] = False
    rank = np.cumsum(present) - 1
    n_out = int(rank[-1] + 1) if size else 0
    rank[size] = n_out
    idt = _index_dtype(size + 1, key.size)
    seg = rank[key].astype(idt)
    out_idx = np.nonzero(present[:size])[0].astype(idx.dtype)[:, None]
    is_sorted = bool(seg.size < 2 or np.all(seg[1:] >= seg[:-1]))
    return seg, out_idx, n_out, is_sorted


def axis_plan(indices, shape: tuple[int, int], axis: int) -> AxisPlan:
    """The (cached) ``AxisPlan`` of concrete ``indices`` for a reduction over ``axis``."""
    return PLANS.get((indices,), ("axis", tuple(shape), axis),
                     lambda: _axis_plan_numpy(np.asarray(indices), tuple(shape), axis))


@partial(jax.jit, static_argnames=("n_out", "is_sorted"))
def _segment_sum(data, segment, n_out: int, is_sorted: bool):
    if jnp.issubdtype(data.dtype, jnp.inexact):  # (a scatter-add's rounding error grows with the slice)
        out = accurate_segment_sum(data, segment, n_out)
    else:
        out = jax.ops.segment_sum(data, segment, num_segments=n_out, indices_are_sorted=is_sorted)
    # The general path adds ``fill * missing`` (= +0 here); so does this one, so -0.0 sums match.
    return out + jnp.zeros((), out.dtype)


def sum_axis(data, indices, shape: tuple[int, int], axis: int):
    """``sum(A, axis)`` of a zero-filled 2-D matrix with concrete indices: ``(values, out_indices)``.

    The values are those of the kept indices that hold a stored entry (the
    others are the fill value, 0), in sorted order.
    """
    plan = axis_plan(indices, shape, axis)
    return _segment_sum(data, plan.segment, plan.n_out, plan.is_sorted), plan.out_indices
