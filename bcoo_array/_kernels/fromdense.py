"""Dense to BCOO: store every entry that differs from the fill value."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._fill import same_value
from .._shapes import is_concrete, prod, valid_rows
from .cache import PLANS, has_padding, record_no_padding
from .host import adopt
from .mesh import replicated_on_mesh


def fromdense(x, shape, n_batch: int, n_dense: int, fill, nse: int | None, index_dtype):
    """Return ``(data, indices)`` of the entries of ``x`` that differ from ``fill``.

    ``x`` may be split over a mesh with Explicit axes (``jax.make_mesh``'s
    default): ``data`` and ``indices`` are then replicated over that mesh, as
    they are on an Auto mesh.

    A sparse position is stored when any of its dense-dimension values differs
    from ``fill`` (bit-exact: NaN matches NaN, ``-0.0`` differs from ``0.0``).
    ``nse`` defaults to the largest count over batches (``x`` must then be
    concrete); positions beyond the count are padding.

    Raises
    ------
    ValueError
        If ``nse`` is None while ``x`` is traced, or smaller than needed.
    """
    return replicated_on_mesh(lambda v: _fromdense(v, shape, n_batch, n_dense, fill, nse, index_dtype), x)


def _fromdense(x, shape, n_batch: int, n_dense: int, fill, nse: int | None, index_dtype):
    ndim = len(shape)
    sizes = tuple(shape[n_batch: ndim - n_dense])
    B = prod(shape[:n_batch])
    xb = x.reshape((B,) + tuple(shape[n_batch:]))
    mask = ~same_value(xb, fill)
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(1 + len(sizes), mask.ndim)))
    if len(sizes) == 0:
        if nse is None:
            nse = 1
        if nse == 0 and B and is_concrete(mask) and bool(np.any(np.asarray(mask))):
            raise ValueError("nse=0 is smaller than the 1 entry that differs from fill_value")
        # Entries at the single position () are summed: store x once, then zeros.
        rest = jnp.zeros((B, max(nse - 1, 0)) + xb.shape[1:], xb.dtype)
        data = jnp.concatenate([xb[:, None], rest], axis=1)[:, :nse]
        indices = jnp.zeros((B, nse, 0), index_dtype)
        return data.reshape(tuple(shape[:n_batch]) + data.shape[1:]), indices.reshape(tuple(shape[:n_batch]) + (nse, 0))
    counts = jnp.sum(mask.reshape(B, prod(sizes)), axis=1)  # explicit size: -1 is ambiguous when empty
    if nse is None:
        if not is_concrete(x):
            raise ValueError(
                "fromdense needs nse= under jax.jit: the number of stored entries depends on the values. "
                "Pass nse=<upper bound> (entries beyond the count are padding)."
            )
        nse = int(np.max(np.asarray(counts))) if B else 0
    elif is_concrete(counts) and B and int(np.max(np.asarray(counts))) > nse:
        raise ValueError(f"nse={nse} is smaller than the {int(np.max(np.asarray(counts)))} entries that differ from fill_value")
    if B == 1 and is_concrete(mask):
        nz = np.nonzero(np.asarray(mask[0]))
        pad = nse - nz[0].size
        cols = [np.concatenate([c, np.full(pad, s)]) for c, s in zip(nz, sizes)]
        idx = adopt(np.stack(cols, axis=1).astype(index_dtype)[None])
    else:
        def one(m):
            nz = jnp.nonzero(m, size=nse, fill_value=sizes)
            return jnp.stack(nz, axis=1).astype(index_dtype)
        idx = jax.vmap(one)(mask)

    def gather(xv, i):
        where = tuple(i[:, j] for j in range(i.shape[1]))
        if any(s == 0 for s in xv.shape[:i.shape[1]]):  # every index is padding; XLA rejects the gather
            return jnp.zeros((i.shape[0],) + xv.shape[i.shape[1]:], xv.dtype)
        return xv.at[where].get(mode="fill", fill_value=0)

    data = jax.vmap(gather)(xb, idx)
    batch = tuple(shape[:n_batch])
    return data.reshape(batch + data.shape[1:]), idx.reshape(batch + idx.shape[1:])


def gather(x, indices, shape, n_batch: int, n_dense: int):
    """Values of dense ``x`` (of ``shape``) at stored ``indices``: ``(*batch, nse, *dense)``.

    Padding positions read 0. An ``x`` split over Explicit mesh axes gives
    a result replicated over its mesh.
    """
    return replicated_on_mesh(lambda v, i: _gather(v, i, tuple(shape), n_batch, n_dense), x, indices)


@partial(jax.jit, static_argnames=("shape", "n_batch", "n_dense"))
def _gather(x, indices, shape, n_batch: int, n_dense: int):
    # x is never broadcast along its sparse or dense dimensions: a dimension of size 1 is read at index 0.
    # (Broadcasting first costs nothing forward, since XLA fuses it into the gather, but the transpose
    # scatter-adds into the broadcast shape: grad of A * d[None, :] would build an n x n buffer.)
    ndim = len(shape)
    x = jnp.reshape(x, (1,) * (ndim - jnp.ndim(x)) + jnp.shape(x))
    batch = tuple(shape[:n_batch])
    B = prod(batch)
    xb = jnp.broadcast_to(x, batch + x.shape[n_batch:]).reshape((B,) + x.shape[n_batch:])
    ib = jnp.broadcast_to(indices, batch + indices.shape[n_batch:]).reshape((B,) + indices.shape[n_batch:])
    n_sparse = indices.shape[-1]
    sparse_shape = tuple(shape[n_batch:n_batch + n_sparse])
    dense_shape = tuple(shape[n_batch + n_sparse:])

    def one(xv, i):
        if n_sparse == 0:
            return jnp.broadcast_to(xv, (i.shape[0],) + dense_shape)
        if any(s == 0 for s in sparse_shape):  # every index is padding; XLA rejects the gather
            return jnp.zeros((i.shape[0],) + dense_shape, xv.dtype)
        read_at_zero = [j for j in range(n_sparse) if xv.shape[j] == 1 and sparse_shape[j] != 1]
        where = tuple(jnp.zeros_like(i[:, j]) if j in read_at_zero else i[:, j] for j in range(n_sparse))
        got = xv.at[where].get(mode="fill", fill_value=0)
        if read_at_zero:  # padding (an index out of range) reads 0, as the fill-mode gather does
            ok = jnp.all(jnp.stack([(i[:, j] >= 0) & (i[:, j] < sparse_shape[j]) for j in read_at_zero]), axis=0)
            got = jnp.where(ok.reshape(ok.shape + (1,) * (got.ndim - 1)), got, jnp.zeros((), got.dtype))
        return jnp.broadcast_to(got, (i.shape[0],) + dense_shape)

    out = jax.vmap(one)(xb, ib)
    return out.reshape(batch + out.shape[1:])


def gather_np(x: np.ndarray, indices: np.ndarray, shape, n_batch: int, n_dense: int) -> np.ndarray:
    """NumPy twin of ``gather``: values of dense ``x`` (broadcast to ``shape``) at stored ``indices``,
    ``(*batch, nse, *dense)``; padding positions read 0. ``x`` is never broadcast in memory: a dimension of
    size 1 is read at index 0. Whether ``indices`` hold padding is cached on the buffer (a warm call reads
    no index twice)."""
    shape = tuple(shape)
    ndim = len(shape)
    x = np.asarray(x).reshape((1,) * (ndim - np.ndim(x)) + np.shape(x))
    batch = shape[:n_batch]
    k = indices.shape[-1]
    sizes = shape[n_batch:n_batch + k]
    dense = shape[n_batch + k:]
    ib = indices if indices.shape[:n_batch] == batch else np.broadcast_to(indices, batch + indices.shape[n_batch:])
    nse = ib.shape[n_batch]
    out_shape = batch + (nse,) + dense
    if any(s == 0 for s in sizes) or nse == 0 or 0 in batch:
        return np.zeros(out_shape, x.dtype)
    if indices.shape == ib.shape and not has_padding(indices, sizes):
        valid, padded = None, False
    else:
        valid = valid_rows(ib, sizes)
        padded = not bool(valid.all())
    where = []
    for a in range(n_batch):  # batch coordinates, shaped to broadcast against (*batch, nse)
        n = shape[a] if x.shape[a] != 1 else 1
        where.append(np.arange(n).reshape((n,) + (1,) * (n_batch - a)) if n > 1 else 0)
    for j in range(k):
        a = n_batch + j
        where.append((np.where(valid, ib[..., j], 0) if padded else ib[..., j]) if x.shape[a] != 1 else 0)
    if n_batch == 0 and k == len(where) and x.ndim == k and sum(isinstance(w, np.ndarray) for w in where) == 1:
        # One varying coordinate (a row or column vector, ``A * v``): a 1-D take is several times faster
        j = next(i for i, w in enumerate(where) if isinstance(w, np.ndarray))
        if x.shape[j] == x.size:
            if not padded and indices.ndim == 2:
                # the coordinate as a contiguous intp array, cached on the buffer: NumPy's take reads it
                # as is (a strided int32 column is converted on every call: 19 -> 9 us at 14,000 entries)
                coord = PLANS.get((indices,), ("coordinate", j),
                                  lambda: np.ascontiguousarray(indices[:, j], dtype=np.intp))
                out = np.take(x.reshape(-1), coord)
            else:
                out = np.take(x.reshape(-1), where[j])
        else:
            out = x[tuple(where)]
    else:
        out = x[tuple(where)]  # (*batch', nse', *x's dense dimensions)
    if out.shape != out_shape:
        out = np.broadcast_to(out, out_shape)
    if padded:
        out = np.array(out)
        out[~valid] = 0
    return out


def same_value_host(x: np.ndarray, fill) -> np.ndarray:
    """NumPy twin of ``.._fill.same_value`` (NaN matches NaN, ``-0.0`` differs from ``0.0``)."""
    f = np.asarray(fill, dtype=x.dtype)
    if x.dtype.kind == "c":
        return same_value_host(x.real, f.real) & same_value_host(x.imag, f.imag)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            same = (x == f) & (np.signbit(x) == np.signbit(f))
        return same | (np.isnan(x) & np.isnan(f)) if np.isnan(f) else same
    return x == f


def fromdense_host(x: np.ndarray, shape, n_batch: int, n_dense: int, fill, nse: int | None, index_dtype):
    """``fromdense`` of a NumPy array, on the host: NumPy ``(data, indices)`` in 64-byte aligned buffers.

    The same result as ``fromdense`` (entries in row-major order per batch
    element, padding last with indices equal to the dimension sizes), without
    an XLA dispatch or a compilation per shape: the eager path of ``asarray``
    and ``fromdense`` for NumPy input and concrete CPU buffers.

    Raises
    ------
    ValueError
        If ``nse`` is smaller than the number of entries to store.
    """
    from .host import aligned_empty, host_empty

    ndim = len(shape)
    if n_batch == 0 and n_dense == 0 and nse is None and ndim:
        # The common case (asarray of a NumPy array): the positions that differ, in row-major order, no padding.
        flat = x.reshape(-1)
        pos = np.flatnonzero(~same_value_host(flat, fill))
        data = host_empty((pos.size,), x.dtype)
        np.take(flat, pos, out=data)
        indices = host_empty((pos.size, ndim), index_dtype)
        if ndim == 1:
            indices[:, 0] = pos
        else:
            for j, c in enumerate(np.unravel_index(pos, shape)):
                indices[:, j] = c
        record_no_padding(indices, shape)
        return data, indices
    batch, sizes, dense = tuple(shape[:n_batch]), tuple(shape[n_batch:ndim - n_dense]), tuple(shape[ndim - n_dense:])
    B = prod(batch)
    xb = x.reshape((B,) + sizes + dense)
    mask = ~same_value_host(xb, fill)
    if n_dense:
        mask = mask.any(axis=tuple(range(1 + len(sizes), mask.ndim)))
    flat = mask.reshape(B, prod(sizes))
    counts = flat.sum(axis=1) if B else np.zeros(0, np.int64)
    need = int(counts.max()) if B and flat.shape[1] else 0
    if not sizes:
        # Entries at the single position () are summed: store x once, then zeros.
        if nse is None:
            nse = 1
        if nse == 0 and need:
            raise ValueError("nse=0 is smaller than the 1 entry that differs from fill_value")
        need = 0
    if nse is None:
        nse = need
    elif need > nse:
        raise ValueError(f"nse={nse} is smaller than the {need} entries that differ from fill_value")
    data = aligned_empty((B, nse) + dense, x.dtype)
    data[...] = 0
    indices = aligned_empty((B, nse, len(sizes)), index_dtype)
    if not sizes:
        if nse:
            data[:, 0] = xb
    else:
        indices[...] = np.asarray(sizes, dtype=index_dtype)  # padding: an index equal to its dimension
        b, pos = np.nonzero(flat)  # row-major: by batch element, then position
        starts = np.zeros(B + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        slot = np.arange(b.size) - starts[b]
        for j, c in enumerate(np.unravel_index(pos, sizes)):
            indices[b, slot, j] = c
        data[b, slot] = xb.reshape((B, prod(sizes)) + dense)[b, pos]
    return data.reshape(batch + (nse,) + dense), indices.reshape(batch + (nse, len(sizes)))
