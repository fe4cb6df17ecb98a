"""Pattern union of two canonical operands: where each output index finds its
entry in either input. Memory is O(nse_a + nse_b): no nse_a x nse_b products.
"""

from __future__ import annotations

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
