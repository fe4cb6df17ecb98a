"""Rows, columns and the transpose of a 2-D matrix: scipy's CSR / CSC slicing.

For a 2-D matrix whose buffers are concrete and live on the CPU, ``A[i]``,
``A[:, j]`` and the canonical transpose are a slice (rows) or a gather
(columns, transpose) of zero-copy NumPy views of the buffers, guided by cached structures: the CSR row pointer of
``.csr.csr_arrays`` and a column plan (the stable order of the valid
entries by column, and the column pointer), computed once per index buffer.
This is the work scipy.sparse does for ``csr[i]`` / ``csc[:, j]``, without
one XLA dispatch per primitive. The callers fall back to the general
(traceable) indexing when ``host_buffers`` says the buffers are not
available on the host.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from .._engine import Operation, host_view
from .._shapes import is_concrete, is_tracer
from .cache import PLANS
from .csr import csr_arrays
from .host import aligned_empty, host_buffers, to_device


class ColumnPlan(NamedTuple):
    """The valid entries of a row-sorted 2-D COO matrix, grouped by column (stable: rows stay sorted)."""

    order: np.ndarray  # (n_valid,) positions of the entries, column by column
    rows: np.ndarray  # (n_valid,) their rows
    colptr: np.ndarray  # (n + 1,) start of each column in ``order``
    canonical: bool  # no duplicate entries
    order_device: jax.Array  # ``order`` on the device (the gather of the transpose)
    transposed: jax.Array  # (n_valid, 2) indices of the transpose on the device, canonical order: (column, row)


def _column_plan_numpy(indices, shape) -> ColumnPlan | None:
    host = _column_plan_host(indices, shape)
    if host is None:
        return None
    order, transposed, canonical = host
    colptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(transposed[:, 0], minlength=shape[1]), out=colptr[1:])
    order_device = to_device(order.astype(np.int32 if order.size < 2**31 else np.int64), owned=True)
    return ColumnPlan(order, transposed[:, 1], colptr, canonical, order_device, to_device(transposed, owned=True))


def column_plan(indices, shape: tuple[int, int]) -> ColumnPlan | None:
    """The (cached) ``ColumnPlan`` of concrete 2-D ``indices``, or None unless rows are sorted."""
    m, n = shape
    return PLANS.get((indices,), ("csc-np", m, n), lambda: _column_plan_numpy(indices, (m, n)))


def _host_csr(data, indices, shape):
    """``(host views of data and indices, cached CSR structure)`` of concrete CPU buffers, or None."""
    host = host_buffers(data, indices)
    if host is None:
        return None
    st = csr_arrays(indices, shape)
    return None if st is None else (host, st)


def row(data, indices, shape: tuple[int, int], i: int):
    """Row ``i`` (``0 <= i < m``) of a zero-filled 2-D COO matrix, or None when the host path does not apply.

    Returns
    -------
    values : numpy.ndarray, shape ``(nnz_i,)``
    columns : numpy.ndarray, shape ``(nnz_i,)``
        Sorted when the matrix is canonical (see ``canonical``).
    canonical : bool
        Whether the row's columns are strictly increasing.
    """
    got = _host_csr(data, indices, shape)
    if got is None:
        return None
    host, st = got
    lo, hi = int(st.indptr[i]), int(st.indptr[i + 1])
    return host[0][lo:hi], st.cols[lo:hi], st.canonical


def row_range(data, indices, shape: tuple[int, int], start: int, stop: int):
    """Rows ``start:stop`` (``0 <= start <= stop <= m``) of a zero-filled 2-D COO matrix, or None.

    None when the host path does not apply (traced or non-CPU buffers, rows
    not sorted). The entries of a row range are contiguous in CSR order.

    Returns
    -------
    values : numpy.ndarray, shape ``(nnz,)``
        A view of ``data``'s host buffer.
    indices : numpy.ndarray, shape ``(nnz, 2)``
        Fresh, 64-byte aligned: rows relative to ``start``, and columns.
    canonical : bool
        Whether the matrix is canonical (then so is the range).
    """
    got = _host_csr(data, indices, shape)
    if got is None:
        return None
    host, st = got
    lo, hi = int(st.indptr[start]), int(st.indptr[stop])
    out = aligned_empty((hi - lo, 2), st.cols.dtype)
    out[:, 0] = np.repeat(np.arange(stop - start, dtype=st.cols.dtype), np.diff(st.indptr[start:stop + 1]))
    out[:, 1] = st.cols[lo:hi]
    return host[0][lo:hi], out, st.canonical


def column(data, indices, shape: tuple[int, int], j: int):
    """Column ``j`` (``0 <= j < n``) of a 2-D COO matrix, or None when the host path does not apply.

    Returns
    -------
    values : numpy.ndarray, shape ``(nnz_j,)``
    rows : numpy.ndarray, shape ``(nnz_j,)``, sorted
    canonical : bool
        Whether the matrix has no duplicate entries (then the rows are unique).
    """
    host = host_buffers(data, indices)
    if host is None:
        return None
    plan = column_plan(indices, shape)
    if plan is None:
        return None
    lo, hi = int(plan.colptr[j]), int(plan.colptr[j + 1])
    return host[0][plan.order[lo:hi]], plan.rows[lo:hi], plan.canonical


def _column_plan_host(indices, shape):
    """``(order, transposed indices, canonical)`` as NumPy arrays (the host engine's ``ColumnPlan``), or None."""
    st = csr_arrays(indices, shape)
    if st is None:
        return None
    m, n = shape
    cols = st.cols
    order = np.argsort(cols, kind="stable")
    transposed = aligned_empty((order.size, 2), cols.dtype)  # (JAX adopts an aligned buffer without a copy)
    transposed[:, 0] = cols[order]
    transposed[:, 1] = np.repeat(np.arange(m, dtype=cols.dtype), np.diff(st.indptr))[order]
    return order, transposed, st.canonical


#: ``transpose(data, indices, shape)``: see ``_transpose_xla``; the host engine gathers with NumPy from a plan
#: cached on the index buffer.
transpose = Operation("transpose", operands=lambda data, indices, shape: (data, indices), large=True)


@transpose.host
def _transpose_host(data, indices, shape: tuple[int, int]):
    buffer = indices  # the plan is cached on the buffer object itself (a view is new at every call)
    data, indices = host_view(data), host_view(indices)
    plan = PLANS.get((buffer,), ("csc-host", *shape), lambda: _column_plan_host(indices, tuple(shape)))
    if plan is None:
        return None
    order, transposed, canonical = plan
    return (lambda: data[order]), transposed, canonical  # values on first use (``BCOOArray``'s ``Deferred``)


@transpose.xla
def _transpose_xla(data, indices, shape: tuple[int, int]):
    """The transpose of a 2-D COO matrix in canonical order, or None when the indices are traced or unsorted.

    Parameters
    ----------
    data : array, shape ``(nse,)``
        Values (may be traced: only the indices must be concrete).
    indices : concrete integer array, shape ``(nse, 2)``
        Rows sorted, valid entries first (canonical form, say).

    Returns
    -------
    values : jax.Array, shape ``(n_valid,)``, or a callable returning it
        ``data`` gathered column by column (scipy's CSR -> CSC), one compiled
        gather; for concrete ``data``, a callable that runs it on first use
        (both engines: the caller defers it).
    indices : jax.Array, shape ``(n_valid, 2)``
        Sorted by (column, row); part of the cached plan.
    canonical : bool
        Whether the matrix has no duplicate entries (then the result is unique too).
    """
    if not is_concrete(indices):
        return None
    plan = column_plan(indices, shape)
    if plan is None:
        return None
    if is_tracer(data):
        return _gather(data, plan.order_device), plan.transposed, plan.canonical
    return (lambda: _gather(data, plan.order_device)), plan.transposed, plan.canonical  # values on first use


@jax.jit
def _gather(data, order):
    return data.at[order].get(mode="promise_in_bounds")
