"""Indexing functions of the array API standard: ``take`` and ``take_along_axis``.

Spec: https://data-apis.org/array-api/2025.12/API_specification/indexing_functions.html
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._fill_rule import dense_layout, update_layout
from ._layout import index_dtype_for, is_concrete
from ._manipulation_functions import _sparse, normalize_axes
from ._operands import as_operand


def take(x, indices, /, *, axis=None) -> BCOOArray:
    """Select entries along ``axis`` at integer ``indices`` (array API ``take``).

    Parameters
    ----------
    x : BCOOArray or array
        Input; ``axis`` may be None only for 1-D ``x``.
    indices : 1-D integer array
        Positions along ``axis``; negative values count from the end.
    axis : int, optional

    Returns
    -------
    BCOOArray
        ``x.shape`` with ``shape[axis] = len(indices)``. With concrete
        indices the result stays sparse (each stored entry is repeated once
        per matching index, by a sort and binary search); while tracing it
        is computed densely.

    Raises
    ------
    IndexError
        If an index is out of range.
    ValueError
        If ``axis`` is None for an array of more than one dimension, or
        ``indices`` is not 1-D.
    """
    x = _sparse(x)
    idx = indices.todense() if isinstance(indices, BCOOArray) else jnp.asarray(indices)
    if idx.ndim != 1:
        raise ValueError(f"take() needs 1-D indices, got shape {idx.shape}")
    if not jnp.issubdtype(idx.dtype, jnp.integer):
        raise TypeError(f"take() needs integer indices, got {idx.dtype}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take() needs axis= for an array of more than one dimension")
        axis = 0
    ax = normalize_axes(axis, x.ndim)[0]
    n = x.shape[ax]
    if not (is_concrete(idx) and is_concrete(x.indices)):
        d = jnp.take(x.todense(), jnp.where(idx < 0, idx + n, idx), axis=ax)
        return dense_layout(d)
    q = np.asarray(idx).astype(np.int64)
    if q.size and (q.min() < -n or q.max() >= n):
        bad = q.min() if q.min() < -n else q.max()
        raise IndexError(f"index {int(bad)} is out of bounds for axis {ax} with size {n}")
    q = np.where(q < 0, q + n, q)
    c = update_layout(x, 0, 0)._canonical()
    ind = np.asarray(c.indices).astype(np.int64)
    valid = np.all(ind < np.asarray(c.shape, np.int64), axis=1)
    ent = np.nonzero(valid)[0]
    col = ind[ent, ax]
    order = np.argsort(col, kind="stable")
    scol = col[order]
    lo = np.searchsorted(scol, q, side="left")
    hi = np.searchsorted(scol, q, side="right")
    cnt = hi - lo
    total = int(cnt.sum())
    qpos = np.repeat(np.arange(q.size), cnt)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    src = ent[order[np.arange(total) + starts]]
    shape = list(c.shape)
    shape[ax] = q.size
    shape = tuple(shape)
    new = ind[src]
    new[:, ax] = qpos
    idt = index_dtype_for(shape)
    data = c.data[jnp.asarray(src)]
    return BCOOArray._from_buffers(data, jnp.asarray(new.astype(idt)), shape, n_batch=0, n_dense=0,
                                   fill_value=x.fill_value, indices_sorted=False, unique_indices=True)


def take_along_axis(x, indices, /, *, axis=-1) -> BCOOArray:
    """Pick values along ``axis`` by an index array of ``x``'s rank (array API ``take_along_axis``).

    Parameters
    ----------
    x : BCOOArray or array
    indices : integer array
        Same number of dimensions as ``x``, broadcast against it except along ``axis``.
    axis : int

    Returns
    -------
    BCOOArray
        Shape of the broadcast ``indices``, dense layout: the result is a
        pointwise lookup (binary search in the sorted pattern, jittable).

    Raises
    ------
    ValueError
        If ``indices`` does not have ``x.ndim`` dimensions.
    """
    from ._indexing import _lookup

    x = _sparse(x)
    idx = indices.todense() if isinstance(indices, BCOOArray) else jnp.asarray(as_operand(indices, "indices"))
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis() needs indices with {x.ndim} dimensions, got {idx.ndim}")
    ax = normalize_axes(axis, x.ndim)[0]
    n = x.shape[ax]
    idx = jnp.where(idx < 0, idx + n, idx)
    shp = list(x.shape)
    shp[ax] = idx.shape[ax]
    out_shape = jnp.broadcast_shapes(tuple(shp), idx.shape)
    idx = jnp.broadcast_to(idx, out_shape)
    coords = list(jnp.indices(out_shape, sparse=False)) if out_shape else []
    coords[ax] = idx
    c = update_layout(x, 0, 0)._canonical()
    return dense_layout(_lookup(c, coords))


__all__ = ["take", "take_along_axis"]
