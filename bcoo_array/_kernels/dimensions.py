"""Buffer-level layout changes: moving dimensions between batch, sparse and
dense, and reading the canonical COO triplets of a layout on the host."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._engine import Operation, host_view
from .._shapes import index_dtype_for, is_concrete, prod, valid_rows
from .coalesce import sum_duplicates


#: ``update_layout(data, indices, shape, n_batch, n_dense, fill, fill_is_zero, new_n_batch, new_n_dense,
#: canonical)``: see ``_update_layout_xla``. The host engine serves the move to all-sparse (``to_coo``).
update_layout = Operation("update_layout", operands=lambda data, indices, *args: (data, indices))


@update_layout.host
def _update_layout_host(data, indices, shape, n_batch: int, n_dense: int, fill, fill_is_zero: bool,
                        new_n_batch: int, new_n_dense: int, canonical: bool):
    if n_batch == 0 and new_n_batch > 0 and new_n_dense == n_dense:
        return _to_batched_host(host_view(data), host_view(indices), tuple(shape), new_n_batch)
    if new_n_batch or new_n_dense:
        return NotImplemented
    data, indices = host_view(data), host_view(indices)
    shape = tuple(shape)
    ndim = len(shape)
    batch, dense = shape[:n_batch], shape[ndim - n_dense:]
    k = indices.shape[-1]
    sizes = shape[n_batch:n_batch + k]
    B, Dn = prod(batch), prod(dense)
    nse = indices.shape[n_batch]
    idt = np.promote_types(indices.dtype, index_dtype_for(shape))
    d = np.broadcast_to(data, batch + data.shape[n_batch:]).reshape(B, nse, Dn)
    i = np.broadcast_to(indices, batch + indices.shape[n_batch:]).reshape(B, nse, k)
    out = np.empty((B, nse, Dn, ndim), idt)
    if n_batch:
        out[..., :n_batch] = np.stack(np.unravel_index(np.arange(B), batch), axis=-1)[:, None, None, :]
    out[..., n_batch:n_batch + k] = i[:, :, None, :]
    if n_dense:
        out[..., n_batch + k:] = np.stack(np.unravel_index(np.arange(Dn), dense), axis=-1)[None, None, :, :]
    valid = valid_rows(i, sizes)
    if not valid.all():
        out[~valid] = np.asarray(shape, idt)  # padding stays padding, in every column
    return np.ascontiguousarray(d).reshape(-1), out.reshape(-1, ndim)


def _batched_plan(indices: np.ndarray, shape: tuple, nb: int):
    """Where each valid entry goes when the leading ``nb`` sparse dimensions become batch dimensions:
    ``(src, bid, pos, nse, new_indices)`` (entry, batch element, slot; the fullest element's count; the new
    index buffer with padding in the free slots)."""
    k = indices.shape[1]
    sizes = shape[:k]
    batch = shape[:nb]
    B = prod(batch)
    src = np.flatnonzero(valid_rows(indices, sizes))
    idx = indices[src]
    bid = np.ravel_multi_index(tuple(idx[:, j].astype(np.int64) for j in range(nb)), batch)
    order = np.argsort(bid, kind="stable")
    src, bid, idx = src[order], bid[order], idx[order]
    counts = np.bincount(bid, minlength=B)
    nse = int(counts.max()) if counts.size else 0
    pos = np.arange(bid.size) - (np.cumsum(counts) - counts)[bid]
    out_idx = np.empty((B, nse, k - nb), indices.dtype)
    out_idx[...] = np.asarray(sizes[nb:], indices.dtype)  # padding in every column
    out_idx[bid, pos] = idx[:, nb:]
    return src, bid, pos, nse, out_idx.reshape(batch + out_idx.shape[1:])


def _to_batched_host(data: np.ndarray, indices: np.ndarray, shape: tuple, nb: int):
    """Leading sparse dimensions made batch dimensions: each batch element keeps its own entries, padded to
    the fullest element's count (``jax.experimental.sparse``'s ``bcoo_update_layout`` gives every element
    every entry, zeroed where it belongs to another, so a stack of 8 matrices stored 8x its fullest one)."""
    src, bid, pos, nse, out_idx = _batched_plan(indices, shape, nb)
    batch = shape[:nb]
    out_data = np.zeros((prod(batch), nse) + data.shape[1:], data.dtype)
    out_data[bid, pos] = data[src]
    return out_data.reshape(batch + out_data.shape[1:]), out_idx


@update_layout.xla
def _update_layout_xla(data, indices, shape, n_batch: int, n_dense: int, fill, fill_is_zero: bool,
                       new_n_batch: int, new_n_dense: int, canonical: bool):
    """Buffers of the same array with ``new_n_batch`` batch and ``new_n_dense`` dense dimensions.

    Parameters
    ----------
    data, indices : arrays
        Buffers of an array of ``shape`` with ``n_batch`` / ``n_dense``.
    fill : scalar
        The fill value; ``fill_is_zero`` says whether it is exactly 0.
    canonical : bool
        Whether the indices are sorted and unique (needed to make a sparse
        dimension dense; summed here otherwise).

    Returns
    -------
    data, indices : arrays
        New buffers (not sorted, as ``jax.experimental.sparse.bcoo_update_layout`` leaves them).

    Notes
    -----
    Uses ``jax.experimental.sparse.bcoo_update_layout``, then writes the
    fill value into new dense blocks where nothing was stored (that function
    knows only zero).
    """
    if 0 in tuple(shape):
        # An empty array stores nothing in any layout (bcoo_update_layout fails on zero-size dimensions).
        ndim = len(shape)
        batch, dense = tuple(shape[:new_n_batch]), tuple(shape[ndim - new_n_dense:])
        return (jnp.zeros(batch + (0,) + dense, data.dtype),
                jnp.zeros(batch + (0, ndim - new_n_batch - new_n_dense), indices.dtype))
    if new_n_batch > n_batch and new_n_dense > n_dense and not fill_is_zero:
        # One change at a time: the padding of new batch elements is marked before blocks are filled.
        data, indices = update_layout(data, indices, shape, n_batch, n_dense, fill, fill_is_zero, new_n_batch,
                                      n_dense, canonical)
        return update_layout(data, indices, shape, new_n_batch, n_dense, fill, fill_is_zero, new_n_batch,
                             new_n_dense, False)
    if n_batch == 0 and new_n_batch > 0 and new_n_dense == n_dense and is_concrete(indices):
        # The host twin's algorithm with concrete indices: a NumPy plan, the values placed by XLA.
        src, bid, pos, nse, out_idx = _batched_plan(np.asarray(indices), tuple(shape), new_n_batch)
        batch = tuple(shape[:new_n_batch])
        out = jnp.zeros((prod(batch), nse) + tuple(data.shape[1:]), data.dtype).at[bid, pos].set(data[src])
        return out.reshape(batch + out.shape[1:]), jnp.asarray(out_idx)
    if new_n_dense > n_dense and not canonical:
        data, indices = sum_duplicates(data, indices, shape, n_batch, n_dense)
    new_data, new_indices = _bcoo_update_layout(data, indices, tuple(shape), new_n_batch, new_n_dense)
    if new_n_batch > n_batch and not fill_is_zero:
        # bcoo_update_layout pads the shorter batch elements with zeros at real positions, harmless only for
        # a zero fill: mark them as padding (an index equal to its dimension's size), as everywhere else.
        stored, _ = _bcoo_update_layout(jnp.ones(data.shape, bool), indices, tuple(shape), new_n_batch,
                                        new_n_dense)
        stored = stored.reshape(stored.shape[:new_n_batch + 1] + (-1,)).any(axis=-1)
        sizes = tuple(shape[new_n_batch:len(shape) - new_n_dense])
        new_indices = jnp.where(stored[..., None], new_indices, jnp.asarray(sizes, new_indices.dtype))
    if new_n_dense > n_dense and not fill_is_zero:
        stored, _ = _bcoo_update_layout(jnp.ones(data.shape, bool), indices, tuple(shape), new_n_batch, new_n_dense)
        # Entries that now share an index hold disjoint parts of one dense block (zeros
        # elsewhere): merge them first, or the fill written into each part adds up.
        new_data, merged = sum_duplicates(new_data, new_indices, shape, new_n_batch, new_n_dense)
        stored, _ = sum_duplicates(stored, new_indices, shape, new_n_batch, new_n_dense)
        new_indices = merged
        new_data = jnp.where(stored, new_data, jnp.asarray(fill, new_data.dtype))
    return new_data, new_indices


@partial(jax.jit, static_argnames=("shape", "n_batch", "n_dense"))
def _bcoo_update_layout(data, indices, shape, n_batch: int, n_dense: int):
    """``jax.experimental.sparse.bcoo_update_layout`` on buffers, as one compiled program (eagerly too)."""
    from jax.experimental import sparse as jsparse  # deferred: slow to import

    out = jsparse.bcoo_update_layout(jsparse.BCOO((data, indices), shape=shape), n_batch=n_batch, n_dense=n_dense,
                                     on_inefficient=None)
    return out.data, out.indices


def coo_triplets(data, indices, shape, n_batch: int, n_dense: int, canonical: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(values, coords)`` of concrete buffers on the host: every dimension sparse, canonical, no padding.

    Returns
    -------
    values : numpy.ndarray, shape ``(nnz,)``
    coords : numpy.ndarray, shape ``(ndim, nnz)``
        pydata-sparse's layout; duplicates summed (logical or for bool) and
        coordinates sorted lexicographically (row-major).
    """
    if n_batch or n_dense:
        data, indices = update_layout(data, indices, shape, n_batch, n_dense, 0, True, 0, 0, canonical)
        canonical = False
    if not canonical:
        data, indices = sum_duplicates(data, indices, shape, 0, 0)
    idx = np.asarray(indices)
    vals = np.asarray(data)
    if idx.shape[0]:
        valid = valid_rows(idx, shape)
        if not valid.all():
            idx, vals = np.compress(valid, idx, axis=0), vals[valid]
    return vals, idx.T
