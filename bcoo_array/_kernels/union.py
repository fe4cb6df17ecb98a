"""Pattern union of two canonical operands: where each output index finds its
entry in either input. Memory is O(nse_a + nse_b): no nse_a x nse_b products.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._shapes import is_concrete, is_tracer, valid_rows
from .cache import FACTS, PLANS, valid_entries
from .csr import _csr_arrays_numpy, csr_arrays
from .host import adopt, aligned_empty, to_device
from .native import host_coo_lookup
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
    """``union`` of one batch element with concrete indices, planned by NumPy.

    2-D canonical operands go through scipy's CSR merge (``_merge_csr``);
    otherwise the inputs are sorted, so the stable sort of their
    concatenation is one merge (NumPy's timsort finds the two runs).
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
    return adopt(p.out_indices[None]), adopt(pos_a[:, :n_out]), adopt(pos_b[:, :n_out])


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
    plan = PLANS.get((ix, iy), ("union-2d", *shape), lambda: _union_plan_2d(ix, iy, tuple(shape)))
    if plan is None:
        return None
    idx, pos_x, pos_y = plan
    data = _apply_union(fn, dx, dy, pos_x, pos_y, np.asarray(fill_x, dx.dtype), np.asarray(fill_y, dy.dtype))
    return data, idx


def _union_plan_2d(ix, iy, shape):
    """The merged indices and both position maps, as device arrays (cached per pair of index buffers)."""
    plan = union_plan_2d_host(ix, iy, shape)
    if plan is None:
        return None
    return tuple(to_device(a, owned=True) for a in plan)


def union_plan_2d_host(ix, iy, shape):
    """The sorted union of two canonical 2-D patterns with concrete indices, as NumPy arrays, or None.

    Returns ``(indices (n, 2), pos_x (n,), pos_y (n,))``, ``-1`` where a side
    stores nothing; cached per pair of index buffers. None when either side
    is not canonical.
    """
    return PLANS.get((ix, iy), ("union-2d-host", *shape), lambda: _union_plan_2d_host(ix, iy, tuple(shape)))


def union_scatter_2d_host(ix, iy, shape):
    """``union_plan_2d_host`` as scatters: ``(indices, side_x, side_y)`` or None (cached per pair of buffers).

    A side is None when it stores every union position in order (its values are the union's as they are),
    else the union positions of its entries: canonical operands list their valid entries first and in the
    union's order, so ``values[side] = data[:side.size]`` places them with one scatter.
    """
    def make():
        plan = union_plan_2d_host(ix, iy, tuple(shape))
        if plan is None:
            return None
        idx, pos_x, pos_y = plan

        def side(pos):  # intp positions: NumPy's scatter converts any other index dtype on every call
            present = np.flatnonzero(pos >= 0)
            return None if present.size == pos.size else present

        return idx, side(pos_x), side(pos_y)

    return PLANS.get((ix, iy), ("union-2d-scatter", *shape), make)


def scatter_or_fill_np(data: np.ndarray, side, n: int, fill) -> np.ndarray:
    """The values of one operand on a union of ``n`` positions (``union_scatter_2d_host``'s ``side``)."""
    if side is None:
        return data[:n]
    out = np.full(n, fill, data.dtype)
    out[side] = data[:side.size]
    return out


def _union_plan_2d_host(ix, iy, shape):
    sx = csr_arrays(ix, shape)
    sy = csr_arrays(iy, shape)
    if (sx is None or sy is None or not (sx.canonical and sy.canonical)
            or max(sx.n_valid, sy.n_valid) >= 2**31 - 1):  # entry numbers must fit 32 bits
        return None
    return _merge_csr(sx, sy, shape, np.dtype(ix.dtype))


def union_np(ix: np.ndarray, iy: np.ndarray, sizes, *,
             canonical: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Sorted union of two duplicate-free patterns ``(nse, k)`` (padding allowed), on the host.

    Returns ``(indices, pos_x, pos_y)`` (``-1`` where a side stores nothing),
    or None when the positions do not fit int64 (the caller plans per
    dimension instead). ``canonical=True`` promises both patterns sorted with
    their padding last (canonical form): a side storing nothing, or one
    pattern on both sides (``A * (A > 0)``: the same index buffer), then costs
    one comparison instead of a merge.
    """
    sizes = tuple(int(s) for s in sizes)
    if canonical and (iy is ix or 0 in (ix.shape[0], iy.shape[0]) or ix.shape == iy.shape):
        got = _union_trivial(ix, iy, sizes)  # (only where it can hold: its checks read every entry)
        if got is not None:
            return got
    total = 1
    for s in sizes:
        total *= s
    if total >= 2**62:
        return None

    def raveled(idx):  # row-major positions (int64)
        if not sizes or not idx.shape[0]:
            return np.zeros(idx.shape[0], np.int64)
        return np.ravel_multi_index(tuple(idx[:, j].astype(np.int64) for j in range(len(sizes))), sizes)

    def keys(idx):
        valid = valid_rows(idx, sizes)
        if not valid.all():
            return raveled(idx[valid]), np.flatnonzero(valid)
        return raveled(idx), np.arange(idx.shape[0])

    def ordered(k, e):  # canonical input is sorted already: skip the sort
        if k.size > 1 and not bool(np.all(k[1:] >= k[:-1])):
            order = np.argsort(k, kind="stable")
            return k[order], e[order]
        return k, e

    kx, ex = ordered(*keys(ix))
    ky, ey = ordered(*keys(iy))
    if ky.size == 0 or (kx.size == ky.size and bool(np.array_equal(kx, ky))):  # one side empty, or one pattern
        u, pos_x, pos_y = kx, ex, (ey if ky.size else np.full(kx.size, -1, np.int64))
    elif kx.size == 0:
        u, pos_x, pos_y = ky, np.full(ky.size, -1, np.int64), ey
    else:
        u = None
    if u is not None:
        out = np.stack(np.unravel_index(u, sizes), axis=1).astype(ix.dtype) if sizes \
            else np.zeros((u.size, 0), ix.dtype)
        return out, pos_x, pos_y
    # One stable sort of both sorted runs (timsort merges them in linear time), each key tagged with its side:
    # a key found on both sides appears twice in a row, x's first.
    keys_all = np.concatenate((kx, ky))
    order = np.argsort(keys_all, kind="stable")
    sk = keys_all[order]
    first = np.empty(sk.size, bool)
    first[0] = True
    np.not_equal(sk[1:], sk[:-1], out=first[1:])
    u = sk[first]
    group = np.cumsum(first) - 1
    from_x = order < kx.size
    pos_x = np.full(u.size, -1, np.int64)
    pos_y = np.full(u.size, -1, np.int64)
    pos_x[group[from_x]] = ex[order[from_x]]
    pos_y[group[~from_x]] = ey[order[~from_x] - kx.size]
    out = np.stack(np.unravel_index(u, sizes), axis=1).astype(ix.dtype) if sizes else np.zeros((u.size, 0), ix.dtype)
    return out, pos_x, pos_y


def valid_prefix(idx: np.ndarray, sizes) -> int | None:
    """How many leading entries of canonical ``idx`` are stored (None if padding is not last); cached per
    buffer (``cache.valid_entries``)."""
    if not sizes:
        return idx.shape[0]
    n, first = valid_entries(idx, sizes)
    return n if first else None


def _union_trivial(ix: np.ndarray, iy: np.ndarray, sizes):
    """``union_np`` of canonical patterns when one side is empty or both are one pattern, else None."""
    nx = valid_prefix(ix, sizes)
    ny = nx if iy is ix else valid_prefix(iy, sizes)
    if nx is None or ny is None:
        return None
    if ny == 0 or (nx == ny and (iy is ix or bool(np.array_equal(ix[:nx], iy[:ny])))):
        every = np.arange(nx)
        return ix[:nx], every, (every if ny else np.full(nx, -1, np.int64))
    if nx == 0:
        return iy[:ny].astype(ix.dtype, copy=False), np.full(ny, -1, np.int64), np.arange(ny)
    return None


def lookup_np(data: np.ndarray, idx: np.ndarray, query: np.ndarray, sizes, fill, *,
              query_sorted: bool = False) -> np.ndarray:
    """Values of a canonical pattern ``(data, idx)`` at the stored-entry coordinates ``query`` (``(q, k)``).

    ``fill`` where ``idx`` stores nothing. A query sorted row-major
    (``query_sorted``, as a canonical pattern is) of a 2-D pattern is one
    native galloping walk over the pattern (``host_coo_lookup``); otherwise
    a binary search of the query's row-major positions among the pattern's
    (sorted, as canonical form is). The caller has checked that positions
    fit int64 (``union_np`` did).
    """
    sizes = tuple(int(s) for s in sizes)
    n = valid_prefix(idx, sizes)
    if n is None:
        raise ValueError("lookup_np needs a canonical pattern (padding last)")
    fill = np.asarray(fill, data.dtype)
    if n == 0 or query.shape[0] == 0:
        return np.broadcast_to(fill, query.shape[:1] + data.shape[1:]).copy()
    if not sizes:  # a 0-d pattern stores at most its one position
        return np.broadcast_to(data[0], query.shape[:1] + data.shape[1:]).copy()

    if query_sorted and len(sizes) == 2:
        pos = host_coo_lookup(idx, n, query.astype(idx.dtype, copy=False))
        if pos is not None:
            found = (pos >= 0).reshape((-1,) + (1,) * (data.ndim - 1))
            return np.where(found, data[np.maximum(pos, 0)], fill)

    def raveled(i):
        return np.ravel_multi_index(tuple(i[:, j].astype(np.int64) for j in range(len(sizes))), sizes)

    keys = PLANS.get((idx,), ("row-major-positions", sizes), lambda: raveled(idx[:n]))  # the pattern's, cached
    q = raveled(query)
    pos = np.minimum(np.searchsorted(keys, q), n - 1)
    found = (keys[pos] == q).reshape((-1,) + (1,) * (data.ndim - 1))
    return np.where(found, data[pos], fill)


def take_or_fill_np(data: np.ndarray, pos: np.ndarray, fill) -> np.ndarray:
    """NumPy twin of ``take_or_fill`` for one batch element: ``data[pos]`` (axis 0), ``fill`` where ``pos < 0``."""
    fill = np.asarray(fill, data.dtype)
    if data.shape[0] == 0:
        return np.broadcast_to(fill, pos.shape + data.shape[1:]).copy()
    vals = data[np.maximum(pos, 0)]
    mask = (pos >= 0).reshape(pos.shape + (1,) * (data.ndim - 1))
    return np.where(mask, vals, fill)


def _merge_csr(sx, sy, shape, index_dtype):
    """Sorted union of two canonical CSR structures and both position maps (-1: absent).

    Each side's entries are numbered ``1..n`` and packed into the low (x) and
    high (y) 32 bits of int64 CSR values; scipy's linear ``csr_plus_csr``
    merge adds them, and the two halves of each sum are the entry numbers of
    both sides at that output position (0 = absent).
    """
    import scipy.sparse as sp

    m, n = shape
    A = sp.csr_array((np.arange(1, sx.n_valid + 1, dtype=np.int64), sx.cols, sx.indptr), shape=shape, copy=False)
    B = sp.csr_array((np.arange(1, sy.n_valid + 1, dtype=np.int64) << 32, sy.cols, sy.indptr), shape=shape,
                     copy=False)
    A.has_canonical_format = True
    B.has_canonical_format = True
    C = A + B
    del A, B  # (the entry numbers: 8 bytes per entry of each side)
    if not C.has_sorted_indices:
        C.sort_indices()
    # The outputs go straight into 64-byte aligned buffers (JAX adopts them without a copy), and
    # each temporary is dropped as soon as it is read: the peak stays near the merged CSR's size.
    nnz = C.nnz
    halves = C.data.view(np.uint32).reshape(-1, 2)
    low, high = (0, 1) if np.little_endian else (1, 0)
    pos_x = aligned_empty((nnz,), np.int32)
    pos_y = aligned_empty((nnz,), np.int32)
    np.subtract(halves[:, low], 1, out=pos_x, casting="unsafe")
    np.subtract(halves[:, high], 1, out=pos_y, casting="unsafe")
    del halves
    C.data = np.zeros(0, np.int64)
    out_idx = aligned_empty((nnz, 2), index_dtype)
    out_idx[:, 0] = np.repeat(np.arange(m, dtype=index_dtype), np.diff(C.indptr))
    out_idx[:, 1] = C.indices
    return out_idx, pos_x, pos_y


@partial(jax.jit, static_argnames=("fn",))
def _apply_union(fn, dx, dy, pos_x, pos_y, fill_x, fill_y):
    def take(d, pos, fill):
        if d.shape[0] == 0:
            return jnp.broadcast_to(fill, pos.shape)
        return jnp.where(pos >= 0, d.at[jnp.maximum(pos, 0)].get(mode="promise_in_bounds"), fill)

    return fn(take(dx, pos_x, fill_x), take(dy, pos_y, fill_y))


def _union_csr(a: np.ndarray, b: np.ndarray, sizes, batch: bool = True):
    """``union`` of one batch element of 2-D indices by ``_merge_csr``, or None if not canonical."""
    m, n = (int(s) for s in sizes)
    sa = _csr_arrays_numpy(a, m, n)
    sb = _csr_arrays_numpy(b, m, n)
    if sa is None or sb is None or not (sa.canonical and sb.canonical) or max(sa.n_valid, sb.n_valid) >= 2**31 - 1:
        return None
    out_idx, pos_a, pos_b = _merge_csr(sa, sb, (m, n), a.dtype)
    if not batch:
        return out_idx, pos_a, pos_b
    return adopt(out_idx[None]), adopt(pos_a[None]), adopt(pos_b[None])


def take_or_fill(data, pos, fill):
    """``data[pos]`` along the nse axis (axis 1 of ``(B, nse, *dense)``), ``fill`` where ``pos < 0``."""
    fill = jnp.asarray(fill, data.dtype) if is_tracer(fill) else np.asarray(fill, data.dtype)
    return _take_or_fill(data, pos, fill)


def lookup(data, idx, query, sizes: tuple[int, ...], fill):
    """Batched twin of ``lookup_np``: values of ``(data, idx)`` (``(B, n, *dense)``, ``(B, n, k)``, unique) at the
    coordinates ``query`` (``(B, q, k)``, unique), ``fill`` where nothing is stored or ``query`` is padding.

    A union of the two patterns maps each query entry to its stored entry (no linear key, so any shape).
    """
    _, pos_q, pos_d = union(query, idx.astype(query.dtype), tuple(sizes))
    fill = jnp.asarray(fill, data.dtype) if is_tracer(fill) else np.asarray(fill, data.dtype)
    return _scatter_found(take_or_fill(data, pos_d, fill), pos_q, query.shape[1], fill)


@partial(jax.jit, static_argnames=("q",))
def _scatter_found(values, pos_q, q: int, fill):
    out = jnp.broadcast_to(fill, (values.shape[0], q) + values.shape[2:])
    at = jnp.where(pos_q >= 0, pos_q, q)  # out of range: dropped
    return jax.vmap(lambda o, a, v: o.at[a].set(v, mode="drop"))(out, at, values)


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


def union_fused_first(ix, iy, shape, plan_keys=None, plan: str = "union-2d-scatter") -> bool:
    """Whether ``A op B`` on this pair of 2-D index buffers should run the fused native merge
    (``native.host_coo_union_apply``) rather than plan the union.

    The first call on a pair (host index buffers ``ix``, ``iy``) merges and applies in one pass, with no
    plan (the result's memory only); a second call builds the plan, which later calls reuse (two
    scatters, no merge). ``plan`` names the engine's plan (the host engine's ``union_scatter_2d_host``,
    or ``"union-2d"``, ``union_apply_2d``'s), cached on ``plan_keys`` (default ``(ix, iy)``; None
    entries: buffers not made yet, so no plan either).
    """
    keys = plan_keys or (ix, iy)
    if all(k is not None for k in keys) and PLANS.peek(tuple(keys), (plan, *shape)) is not None:
        return False
    seen = ("union-seen", *shape)
    if FACTS.peek((ix, iy), seen):
        return False
    FACTS.get((ix, iy), seen, lambda: True)
    return True
