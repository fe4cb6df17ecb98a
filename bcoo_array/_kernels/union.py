"""Pattern union of two canonical operands: where each output index finds its
entry in either input. Memory is O(nse_a + nse_b): no nse_a x nse_b products.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._layout import is_concrete
from .plan import group_batched, group_numpy


def union(ia, ib, sizes: tuple[int, ...]):
    """Merge the indices of two duplicate-free operands.

    Parameters
    ----------
    ia, ib : arrays of shape ``(B, nse_a, k)`` and ``(B, nse_b, k)``
        Canonical (unique) indices of each operand, per batch element.
    sizes : tuple of int
        Sizes of the k sparse dimensions (indices equal to them are padding).

    Returns
    -------
    out_indices : ``(B, n_out, k)``
        The union, sorted, padded.
    pos_a, pos_b : ``(B, n_out)`` int32
        Position of each output index in ``ia`` / ``ib``, or -1 where the
        operand does not store it.
    """
    B, na, k = ia.shape
    nb = ib.shape[1]
    if B == 1 and is_concrete(ia, ib):
        return _union_numpy(np.asarray(ia)[0], np.asarray(ib)[0].astype(ia.dtype), sizes)
    both = jnp.concatenate([ia, ib.astype(ia.dtype)], axis=1)
    plan = group_batched(both, sizes)
    n_out = plan.n_out
    side = jnp.concatenate([jnp.zeros(na, bool), jnp.ones(nb, bool)])
    src = jnp.concatenate([jnp.arange(na, dtype=jnp.int32), jnp.arange(nb, dtype=jnp.int32)])

    def one(order, seg):
        s = side[order]
        p = src[order]
        drop = jnp.int32(n_out)
        pos_a = jnp.full(n_out, -1, jnp.int32).at[jnp.where(s, drop, seg)].set(p, mode="drop")
        pos_b = jnp.full(n_out, -1, jnp.int32).at[jnp.where(s, seg, drop)].set(p, mode="drop")
        return pos_a, pos_b

    pos_a, pos_b = jax.vmap(one)(plan.order, plan.segment)
    return plan.out_indices, pos_a, pos_b


def _union_numpy(a: np.ndarray, b: np.ndarray, sizes: tuple[int, ...]):
    """:func:`union` of one batch element with concrete indices, planned by NumPy.

    The inputs are sorted, so the stable sort of their concatenation is one
    merge (NumPy's timsort finds the two runs; 2-D uses a counting sort).
    """
    if len(sizes) == 2:
        out = _union_csr(a, b, sizes)
        if out is not None:
            return out
    na = a.shape[0]
    p = group_numpy(np.concatenate([a, b]), sizes)
    n_out = p.n_out
    # Output position of every input entry (n_out for padding), then scatter the
    # entry numbers there; slot n_out absorbs padding. No boolean masks: linear.
    where = np.empty(p.order.size, dtype=np.int64)
    where[p.order] = p.segment
    pos_a = np.full((1, n_out + 1), -1, np.int32)
    pos_b = np.full((1, n_out + 1), -1, np.int32)
    pos_a[0, where[:na]] = np.arange(na, dtype=np.int32)
    pos_b[0, where[na:]] = np.arange(where.size - na, dtype=np.int32)
    return jnp.asarray(p.out_indices[None]), jnp.asarray(pos_a[:, :n_out]), jnp.asarray(pos_b[:, :n_out])


def union_apply_2d(fn, dx, ix, dy, iy, shape, fill_x, fill_y):
    """``fn`` over the union of two canonical 2-D patterns with concrete indices, or None.

    Parameters
    ----------
    fn : callable
        Elementwise binary function of two arrays (a stable object: it is a
        static argument of the compiled kernel).
    dx, dy : (nse_x,), (nse_y,) arrays
        Values (may be traced).
    ix, iy : (nse_x, 2), (nse_y, 2) concrete integer arrays
        Canonical (sorted, unique, padding last) indices.
    shape : (m, n)
    fill_x, fill_y : scalars
        The operands' fill values (used where one side does not store an entry).

    Returns
    -------
    (data, indices) or None
        The values on the sorted union and its indices; None when the inputs
        are not canonical (the caller then takes the general path).
    """
    out = _union_csr(np.asarray(ix), np.asarray(iy).astype(np.asarray(ix).dtype, copy=False), shape, batch=False)
    if out is None:
        return None
    idx, pos_x, pos_y = out
    data = _apply_union(fn, dx, dy, jnp.asarray(pos_x), jnp.asarray(pos_y),
                        np.asarray(fill_x, dx.dtype), np.asarray(fill_y, dy.dtype))
    return data, jnp.asarray(idx)


@partial(jax.jit, static_argnames=("fn",))
def _apply_union(fn, dx, dy, pos_x, pos_y, fill_x, fill_y):
    def take(d, pos, fill):
        if d.shape[0] == 0:
            return jnp.broadcast_to(fill, pos.shape)
        return jnp.where(pos >= 0, d.at[jnp.maximum(pos, 0)].get(mode="promise_in_bounds"), fill)

    return fn(take(dx, pos_x, fill_x), take(dy, pos_y, fill_y))


def _canonical_prefix(idx: np.ndarray, sizes) -> int | None:
    """Number of valid entries if they come first with non-decreasing rows (else None)."""
    m, n = sizes
    valid = (idx[:, 0] < m) & (idx[:, 1] < n) & (idx[:, 0] >= 0) & (idx[:, 1] >= 0)
    nv = int(np.count_nonzero(valid))
    if not valid[:nv].all():
        return None
    rows = idx[:nv, 0]
    return nv if bool(np.all(rows[1:] >= rows[:-1])) else None


def _union_csr(a: np.ndarray, b: np.ndarray, sizes, batch: bool = True):
    """2-D pattern union by scipy's linear CSR merge (``csr_plus_csr``), or None if not canonical.

    Each operand's entries are numbered ``1..na`` and ``(1..nb) * (na + 1)``
    as int64 CSR values; their sum at an output entry decodes to the entry
    numbers of both sides (0 = absent), so one scipy addition gives the
    sorted union and both position maps.
    """
    import scipy.sparse as sp

    m, n = (int(s) for s in sizes)
    na, nb = _canonical_prefix(a, sizes), _canonical_prefix(b, sizes)
    if na is None or nb is None or (na + 1) * (nb + 1) >= 2**62 or max(m, n, na, nb) >= 2**31 - 1:
        return None

    def csr(idx, nv, vals):
        indptr = np.zeros(m + 1, np.int32)
        np.cumsum(np.bincount(idx[:nv, 0], minlength=m), out=indptr[1:])
        out = sp.csr_array((vals, idx[:nv, 1].astype(np.int32), indptr), shape=(m, n), copy=False)
        out.has_canonical_format = True  # rows sorted and (canonical operands) columns sorted, unique
        return out

    if not _columns_sorted(a, na) or not _columns_sorted(b, nb):
        return None
    A = csr(a, na, np.arange(1, na + 1, dtype=np.int64))
    B = csr(b, nb, np.arange(1, nb + 1, dtype=np.int64) * (na + 1))
    C = A + B
    if not C.has_sorted_indices:
        C.sort_indices()
    code = C.data
    pos_b, pos_a = np.divmod(code, na + 1)
    rows = np.repeat(np.arange(m, dtype=a.dtype), np.diff(C.indptr))
    out_idx = np.stack([rows, C.indices.astype(a.dtype, copy=False)], axis=1)
    pos_a = (pos_a - 1).astype(np.int32)
    pos_b = (pos_b - 1).astype(np.int32)
    if not batch:
        return out_idx, pos_a, pos_b
    return jnp.asarray(out_idx[None]), jnp.asarray(pos_a[None]), jnp.asarray(pos_b[None])


def _columns_sorted(idx: np.ndarray, nv: int) -> bool:
    """Whether the first ``nv`` entries (rows non-decreasing) have strictly increasing columns in each row."""
    if nv < 2:
        return True
    r, c = idx[:nv, 0], idx[:nv, 1]
    same_row = r[1:] == r[:-1]
    return bool(np.all(~same_row | (c[1:] > c[:-1])))


def take_or_fill(data, pos, fill):
    """``data[pos]`` along the nse axis (axis 1 of ``(B, nse, *dense)``), ``fill`` where ``pos < 0``."""
    return _take_or_fill(data, pos, np.asarray(fill, data.dtype))


@jax.jit
def _take_or_fill(data, pos, fill):
    safe = jnp.clip(pos, 0, max(data.shape[1] - 1, 0))
    if data.shape[1] == 0:
        vals = jnp.zeros(pos.shape + data.shape[2:], data.dtype)
    else:
        vals = jnp.take_along_axis(data, safe.reshape(safe.shape + (1,) * (data.ndim - 2)), axis=1)
        vals = jnp.broadcast_to(vals, pos.shape + data.shape[2:])
    mask = (pos >= 0).reshape(pos.shape + (1,) * (data.ndim - 2))
    return jnp.where(mask, vals, fill)
