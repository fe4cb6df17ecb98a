"""Canonical form: sorted, duplicate-free indices, padding at the end.

``sum_duplicates`` merges entries that share an index by summing their data
(logical or for bool), as ``scipy.sparse`` and ``jax.experimental.sparse`` do.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._engine import Operation, host_view
from .._shapes import is_concrete, prod, valid_rows
from .cache import has_padding
from .host import adopt
from .plan import additive_identity, group_batched, group_numpy, segment_reduce


def broadcast_batch(data, indices, shape, n_batch: int):
    """Broadcast the batch dimensions of both buffers to ``shape[:n_batch]``."""
    batch = tuple(shape[:n_batch])
    if data.shape[:n_batch] != batch:
        data = jnp.broadcast_to(data, batch + data.shape[n_batch:])
    if indices.shape[:n_batch] != batch:
        indices = jnp.broadcast_to(indices, batch + indices.shape[n_batch:])
    return data, indices


def flatten_batch(data, indices, shape, n_batch: int):
    """Buffers with all batch dimensions merged into one leading dimension."""
    return _flatten_batch(data, indices, tuple(shape), n_batch)


def unflatten_batch(data_b, indices_b, shape, n_batch: int):
    """Inverse of ``flatten_batch``."""
    return _unflatten_batch(data_b, indices_b, tuple(shape), n_batch)


# One compiled program each (eagerly, a broadcast and reshapes would compile one per primitive).
@partial(jax.jit, static_argnames=("shape", "n_batch"))
def _flatten_batch(data, indices, shape, n_batch: int):
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    B = prod(shape[:n_batch])
    return data.reshape((B,) + data.shape[n_batch:]), indices.reshape((B,) + indices.shape[n_batch:])


@partial(jax.jit, static_argnames=("shape", "n_batch"))
def _unflatten_batch(data_b, indices_b, shape, n_batch: int):
    batch = tuple(shape[:n_batch])
    return data_b.reshape(batch + data_b.shape[1:]), indices_b.reshape(batch + indices_b.shape[1:])


def sparse_sizes(shape, n_batch: int, n_dense: int) -> tuple[int, ...]:
    """The sizes of the sparse dimensions."""
    return tuple(shape[n_batch: len(shape) - n_dense])


#: ``sum_duplicates(data, indices, shape, n_batch, n_dense, reduce="sum")``: canonical ``(data, indices)``,
#: sorted, unique, padding last. With concrete indices the new nse is the largest number of distinct
#: indices in any batch; while tracing it stays the input nse (padded), except with no sparse dimension,
#: where it is ``min(nse, 1)`` (there is no padding value for the single position ``()``).
sum_duplicates = Operation("sum_duplicates", operands=lambda data, indices, *args, **kw: (data, indices))

#: NumPy ufuncs of ``segment_reduce``'s reductions (bool sums are logical or, bool products logical and).
_NP_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_NP_REDUCE_BOOL = {"sum": np.logical_or, "prod": np.logical_and, "max": np.logical_or, "min": np.logical_and}


def segment_reduce_np(values: np.ndarray, segment: np.ndarray, n_out: int, reduce: str) -> np.ndarray:
    """NumPy twin of ``plan.segment_reduce`` for sorted segments: ``values`` ``(n, *dense)`` in segment order,
    ``segment`` ``(n,)`` non-decreasing, entries with ``segment >= n_out`` (padding, last) dropped."""
    n_valid = int(np.searchsorted(segment, n_out)) if segment.size else 0
    values, segment = values[:n_valid], segment[:n_valid]
    out_shape = (n_out,) + values.shape[1:]
    if n_valid == 0:
        return np.zeros(out_shape, values.dtype)
    ufunc = (_NP_REDUCE_BOOL if values.dtype == np.bool_ else _NP_REDUCE)[reduce]
    if reduce == "sum" and values.dtype.kind in "fc" and segment[0] == segment[-1]:
        # One segment (a full reduction): np.add.reduce sums pairwise, as NumPy's own sum does (reduceat is
        # sequential: float32 loses about log10(n) digits over a million values).
        red = np.add.reduce(values, axis=0, dtype=values.dtype, keepdims=True)
        starts = np.zeros(1, np.intp)
    else:
        starts = np.flatnonzero(np.concatenate(([True], segment[1:] != segment[:-1])))
        red = ufunc.reduceat(values, starts, axis=0, dtype=values.dtype)  # (NumPy would widen small ints)
    if starts.size == n_out:
        return red
    out = np.zeros(out_shape, values.dtype)  # (segments with no entry: not produced by the plans here)
    out[segment[starts]] = red
    return out


@sum_duplicates.host
def _sum_duplicates_host(data, indices, shape, n_batch: int, n_dense: int, reduce: str = "sum"):
    data, indices = host_view(data), host_view(indices)
    if n_batch:
        return _sum_duplicates_batched_np(data, indices, tuple(shape), n_batch, n_dense, reduce)
    k = indices.shape[-1]
    if indices.shape[0] == 0:
        return data, indices  # nothing stored: canonical already
    if k == 0:
        keep = min(indices.shape[0], 1)
        ufunc = (_NP_REDUCE_BOOL if data.dtype == np.bool_ else _NP_REDUCE)[reduce]
        return ufunc.reduce(data, axis=0, keepdims=True, dtype=data.dtype)[:keep], np.array(indices[:keep])
    sizes = sparse_sizes(shape, n_batch, n_dense)
    if len(sizes) == 2:
        fast = _sort_unique_2d(indices, sizes)
        if fast is not None:
            order, out_idx = fast
            return data[order], out_idx.astype(indices.dtype, copy=False)
    p = group_numpy(indices, sizes)
    values = data[p.order]
    out = values[:p.n_out] if int(np.count_nonzero(p.segment < p.n_out)) == p.n_out else \
        segment_reduce_np(values, p.segment, p.n_out, reduce)
    return np.ascontiguousarray(out), p.out_indices.astype(indices.dtype, copy=False)


def _sum_duplicates_batched_np(data: np.ndarray, indices: np.ndarray, shape: tuple, n_batch: int, n_dense: int,
                               reduce: str):
    """The host twin of the batched ``sum_duplicates``: each batch element's entries sorted, merged and padded
    to the fullest element's count (the XLA engine's nse). An index buffer shared by every element (a
    broadcast, ``xp.asarray(v)`` against a matrix) is planned once."""
    batch = shape[:n_batch]
    B = prod(batch)
    sizes = sparse_sizes(shape, n_batch, n_dense)
    k = indices.shape[-1]
    nse = indices.shape[n_batch]
    dense = data.shape[n_batch + 1:]
    db = np.broadcast_to(data, batch + data.shape[n_batch:]).reshape((B, nse) + dense)
    if B == 0 and k:  # no batch element: nothing stored (the fullest element stores nothing)
        return np.zeros(batch + (0,) + dense, data.dtype), np.zeros(batch + (0, k), indices.dtype)
    if nse == 0 or k == 0:
        ib = np.broadcast_to(indices, batch + indices.shape[n_batch:]).reshape(B, nse, k)
        if k == 0 and nse > 1:  # every entry sits at (): one survives, holding the reduction
            ufunc = (_NP_REDUCE_BOOL if data.dtype == np.bool_ else _NP_REDUCE)[reduce]
            db, ib = ufunc.reduce(db, axis=1, keepdims=True, dtype=data.dtype), ib[:, :1]
        return (np.ascontiguousarray(db).reshape(batch + db.shape[1:]),
                np.ascontiguousarray(ib).reshape(batch + ib.shape[1:]))
    if indices.shape[:n_batch] == (1,) * n_batch:
        p = group_numpy(indices.reshape(nse, k), sizes)
        values = np.take(db, p.order, axis=1)
        if int(np.count_nonzero(p.segment < p.n_out)) == p.n_out:
            out = values[:, :p.n_out]
        else:
            out = np.moveaxis(segment_reduce_np(np.moveaxis(values, 1, 0), p.segment, p.n_out, reduce), 0, 1)
        out_idx = np.broadcast_to(p.out_indices.astype(indices.dtype, copy=False), (B, p.n_out, k))
        return (np.ascontiguousarray(out).reshape(batch + out.shape[1:]),
                np.ascontiguousarray(out_idx).reshape(batch + (p.n_out, k)))
    # Each element its own pattern: the batch number as a leading coordinate, one plan for all.
    ib = np.broadcast_to(indices, batch + indices.shape[n_batch:]).reshape(B * nse, k)
    flat = np.empty((B * nse, k + 1), np.int64)
    flat[:, 0] = np.repeat(np.arange(B), nse)
    flat[:, 1:] = ib
    p = group_numpy(flat, (B,) + tuple(sizes))
    values = np.take(db.reshape((B * nse,) + dense), p.order, axis=0)
    if int(np.count_nonzero(p.segment < p.n_out)) == p.n_out:
        red = values[:p.n_out]
    else:
        red = segment_reduce_np(values, p.segment, p.n_out, reduce)
    bid = p.out_indices[:, 0]
    counts = np.bincount(bid, minlength=B)
    width = int(counts.max())
    slot = np.arange(p.n_out) - (np.cumsum(counts) - counts)[bid]
    out = np.zeros((B, width) + dense, data.dtype)
    out[bid, slot] = red
    out_idx = np.empty((B, width, k), indices.dtype)
    out_idx[...] = np.asarray(sizes, indices.dtype)  # padding: an index equal to its dimension's size
    out_idx[bid, slot] = p.out_indices[:, 1:]
    return out.reshape(batch + out.shape[1:]), out_idx.reshape(batch + (width, k))


@sum_duplicates.xla
def _sum_duplicates_xla(data, indices, shape, n_batch: int, n_dense: int, reduce: str = "sum"):
    if n_batch == 0 and indices.shape[-1] > 0 and is_concrete(indices):
        # No batch, concrete indices: plan with NumPy (linear-time counting sort for
        # 2-D), then apply it in one compiled call; a pure permutation (no duplicate)
        # is a single gather.
        sizes = sparse_sizes(shape, n_batch, n_dense)
        if len(sizes) == 2:
            fast = _sort_unique_2d(np.asarray(indices), sizes)
            if fast is not None:
                order, out_idx = fast
                return _apply_permutation(data, adopt(order)), adopt(out_idx.astype(indices.dtype))
        p = group_numpy(np.asarray(indices), sizes)
        n_valid = int(np.count_nonzero(p.segment < p.n_out))
        if n_valid == p.n_out:
            out = _apply_permutation(data, adopt(p.order[:p.n_out]))
        else:
            out = _apply_plan(data, adopt(p.order), adopt(p.segment), p.n_out, reduce)
        return out, adopt(p.out_indices.astype(indices.dtype, copy=False))
    db, ib = flatten_batch(data, indices, shape, n_batch)
    if ib.shape[2] == 0:
        # No sparse dimension: every entry sits at (), so at most one survives
        # (static, eager or traced; there is no padding to fill a larger nse).
        keep = min(ib.shape[1], 1)
        if db.dtype == jnp.bool_:
            red = {"sum": jnp.any, "max": jnp.any, "prod": jnp.all, "min": jnp.all}[reduce]
        else:
            red = partial({"sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min}[reduce],
                          **({"dtype": db.dtype} if reduce in ("sum", "prod") else {}))
        out = red(db, axis=1, keepdims=True) if keep else db[:, :0]
        return unflatten_batch(out, ib[:, :keep], shape, n_batch)
    plan = group_batched(ib, sparse_sizes(shape, n_batch, n_dense))
    n_out = plan.n_out
    out = _segment_reduce_batched(db, plan.order, plan.segment, n_out, reduce)
    return unflatten_batch(out, plan.out_indices.astype(indices.dtype), tuple(shape), n_batch)


@partial(jax.jit, static_argnames=("n_out", "reduce"))
def _segment_reduce_batched(data_b, order, segment, n_out: int, reduce: str):
    """``segment_reduce`` of each batch element in plan order: one compiled program."""
    return jax.vmap(lambda d, o, s: segment_reduce(d[o], s, n_out, reduce))(data_b, order, segment)


def _sort_unique_2d(idx: np.ndarray, sizes) -> tuple[np.ndarray, np.ndarray] | None:
    """Sort order and sorted indices of duplicate-free 2-D ``idx`` by scipy's COO -> CSR, or None.

    scipy's conversion is a linear counting sort by row followed by a sort
    within each (short) row, the same work as ``scipy.sparse``'s own
    transposition. The values carried through it are the entry numbers, so
    they come out as the permutation. Returns None when duplicates exist
    (scipy would sum the numbers; the caller's general path sums the values).
    """
    import scipy.sparse as sp

    m, n = (int(s) for s in sizes)
    if max(m, n, idx.shape[0]) >= 2**31 - 1:
        return None
    r, c = idx[:, 0], idx[:, 1]
    valid = (r < m) & (c < n)
    if idx.dtype.kind == "i":
        valid &= (r >= 0) & (c >= 0)
    sel = None if valid.all() else np.flatnonzero(valid)
    if sel is not None:
        r, c = r[sel], c[sel]
    nv = r.size
    csr = sp.coo_array((np.arange(1, nv + 1, dtype=np.int64), (r, c)), shape=(m, n)).tocsr()
    if csr.nnz != nv:
        return None
    order = csr.data - 1
    if sel is not None:
        order = sel[order]
    out = np.empty((nv, 2), dtype=idx.dtype)
    out[:, 0] = np.repeat(np.arange(m, dtype=idx.dtype), np.diff(csr.indptr))
    out[:, 1] = csr.indices
    return order, out


#: ``take_entries(data, positions)``: ``data[positions]`` along the nse axis (``positions`` in range). Host: NumPy
#: indexing; XLA: one compiled program (eager JAX indexing runs several primitives, each compiled on its first
#: shape).
take_entries = Operation("take_entries", operands=lambda data, positions: (data, positions))
take_entries.host(lambda data, positions: host_view(data)[host_view(positions) if not isinstance(
    positions, np.ndarray) else positions])
take_entries.xla(lambda data, positions: _apply_permutation(data, positions))


@jax.jit
def _apply_permutation(data, order):
    return data[order]


@partial(jax.jit, static_argnames=("n_out", "reduce"))
def _apply_plan(data, order, segment, n_out: int, reduce: str):
    return segment_reduce(data[order], segment, n_out, reduce)


#: ``todense(data, indices, shape, n_batch, n_dense, fill, fill_is_zero)``: scatter the stored entries into a
#: dense array of ``shape`` (duplicates summed, logical or for bool); unstored positions get ``fill``.
#: Host: a NumPy array; XLA: a ``jax.Array``.
todense = Operation("todense", operands=lambda data, indices, *args, **kw: (data, indices))


@todense.host
def _todense_host(data, indices, shape, n_batch: int, n_dense: int, fill, fill_is_zero: bool, *,
                  unique: bool = False, indices_sorted: bool = False) -> np.ndarray:
    data, indices = host_view(data), host_view(indices)
    return todense_np(data, indices, tuple(shape), n_batch, n_dense, fill, unique=unique,
                      indices_sorted=indices_sorted)


def todense_np(data: np.ndarray, indices: np.ndarray, shape, n_batch: int, n_dense: int, fill, *,
               unique: bool = False, indices_sorted: bool = False) -> np.ndarray:
    """NumPy twin of the XLA ``todense``: a fresh C-contiguous array of ``shape``.

    ``unique`` promises duplicate-free entries: one scatter into the fill value, no count of the positions
    written (an all-sparse array without batch dimensions whose buffer holds no padding, cached per buffer,
    is not even checked for it). With ``indices_sorted`` too, such an array storing every position holds
    its values in row-major order already: a copy of ``data``, no scatter (``xp.asarray`` of a row).
    """
    shape = tuple(shape)
    if unique and n_batch == 0 and n_dense == 0 and len(shape) and indices.ndim == 2 and data.ndim == 1:
        sizes = shape
        if not has_padding(indices, sizes):
            if indices_sorted and data.shape[0] == prod(sizes):
                return data.reshape(shape).copy()
            flat = indices[:, 0] if len(sizes) == 1 else np.ravel_multi_index(tuple(indices.T), sizes)
            out = np.full(prod(sizes), fill, data.dtype)
            out[flat] = data
            return out.reshape(shape)
    dtype = data.dtype
    batch = shape[:n_batch]
    n_sparse = len(shape) - n_batch - n_dense
    sizes = shape[n_batch:n_batch + n_sparse]
    dense_shape = shape[len(shape) - n_dense:]
    B, S = prod(batch), prod(sizes)
    nse = indices.shape[n_batch] if indices.ndim > n_batch else 0
    d = np.broadcast_to(data, batch + data.shape[n_batch:]).reshape((B * nse,) + dense_shape)
    idx = np.broadcast_to(indices, batch + indices.shape[n_batch:]).reshape(B, nse, n_sparse)
    if n_sparse:
        valid = valid_rows(idx, sizes)
        flat = np.ravel_multi_index(tuple(np.where(valid, idx[:, :, k], 0) for k in range(n_sparse)), sizes) \
            if S else np.zeros((B, nse), np.intp)
    else:
        valid = np.ones((B, nse), bool)
        flat = np.zeros((B, nse), np.intp)
    flat = (flat + (np.arange(B, dtype=np.intp) * S)[:, None]).reshape(-1)
    keep = valid.reshape(-1)
    if not keep.all():
        flat, d = flat[keep], d[keep]
    out = np.full((B * S,) + dense_shape, additive_identity(dtype))  # (a stored -0.0 stays -0.0)
    stored = np.zeros(B * S, bool)
    stored[flat] = True
    n_stored = int(np.count_nonzero(stored))
    if n_stored == flat.size:  # no duplicates: one scatter
        out[flat] = d
    elif dtype == np.bool_:
        np.logical_or.at(out, flat, d)
    else:
        np.add.at(out, flat, d)
    if n_stored != stored.size:
        out[~stored] = fill
    return out.reshape(shape)


@todense.xla
def _todense_xla(data, indices, shape, n_batch: int, n_dense: int, fill, fill_is_zero: bool, *, unique: bool = False,
                 indices_sorted: bool = False):
    """One compiled call per layout: ``fill`` travels as a 0-d array, so NaN fill values hit the
    compilation cache like any other."""
    return _todense(data, indices, np.asarray(fill, data.dtype), shape=tuple(shape), n_batch=n_batch,
                    n_dense=n_dense, fill_is_zero=bool(fill_is_zero))


@partial(jax.jit, static_argnames=("shape", "n_batch", "n_dense", "fill_is_zero"))
def _todense(data, indices, fill, shape, n_batch: int, n_dense: int, fill_is_zero: bool):
    db, ib = flatten_batch(data, indices, shape, n_batch)
    sizes = sparse_sizes(shape, n_batch, n_dense)
    dense_shape = tuple(shape[len(shape) - n_dense:])

    inexact = jnp.issubdtype(data.dtype, jnp.inexact)
    # Entries accumulate onto the identity of IEEE addition (``additive_identity``: -0.0, -0.0 - 0.0j), so a
    # stored -0.0 keeps its sign (both parts' signs); the unstored positions then get the fill value.
    zero = additive_identity(data.dtype)

    def one(d, i):
        where = tuple(i[:, j] for j in range(i.shape[1]))
        out = jnp.full(sizes + dense_shape, zero)
        if d.dtype == jnp.bool_:
            out = out.at[where].max(d, mode="drop")
        else:
            out = out.at[where].add(d, mode="drop")
        if fill_is_zero and not inexact:
            return out
        mask = jnp.zeros(sizes, bool).at[where].set(True, mode="drop")
        mask = mask.reshape(mask.shape + (1,) * len(dense_shape))
        return jnp.where(mask, out, fill)

    if len(sizes) == 0:
        # every stored entry sits at the single position (); nse == 0 means unstored.
        def one(d, i):  # noqa: F811 - a simpler kernel for n_sparse == 0
            if not d.shape[0]:
                return jnp.broadcast_to(fill, dense_shape)
            if d.shape[0] == 1:  # the stored block itself (no scatter: a dense operand sharded over an
                return d[0]      # Explicit mesh axis, whose block this is, cannot be scattered unannotated)
            if d.dtype == jnp.bool_:
                return jnp.any(d, axis=0)
            # (onto -0.0 for floats, as above; no promotion of small ints; a scatter-add, differentiable)
            at = jnp.zeros(d.shape[0], jnp.int32)
            return jnp.full((1,) + dense_shape, zero).at[at].add(d, indices_are_sorted=True)[0]

    out = jax.vmap(one)(db, ib)
    return out.reshape(shape)
