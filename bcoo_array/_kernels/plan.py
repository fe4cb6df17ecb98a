"""Grouping plans: which stored entries share a sparse index.

A *plan* for a flat list of ``n`` indices (shape ``(n, k)``) is

* ``order``: a permutation that sorts the entries lexicographically,
* ``segment``: for the j-th sorted entry, the number of its distinct index
  (``n_out`` or more for padding, so scatters with ``mode="drop"`` ignore it),
* ``out_indices``: ``(n_out, k)``, the distinct indices in sorted order, padded
  with the dimension sizes,
* ``count``: the number of distinct valid indices.

With concrete indices the plan is computed by NumPy and ``n_out == count``;
while tracing it is computed by ``jnp.lexsort`` and ``n_out == n`` (static),
padding filling the tail. This is the sort-based coalescing of COO formats
(as in ``scipy.sparse.coo_array.sum_duplicates``).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._shapes import is_concrete
from .host import adopt


class Plan(NamedTuple):
    order: jax.Array
    segment: jax.Array
    out_indices: jax.Array
    count: jax.Array | int
    n_out: int


def _linear_key(idx: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray | None:
    """Row-major linear index as int64, or None if it could overflow."""
    total = 1
    for s in sizes:
        total *= max(int(s), 1)
    if total >= 2**62:
        return None
    key = np.zeros(idx.shape[0], dtype=np.int64)
    for j, s in enumerate(sizes):
        key *= int(s)
        key += idx[:, j].astype(np.int64)
    return key


def _counting_order(keys: np.ndarray, size: int) -> np.ndarray:
    """Stable order sorting integer ``keys`` in ``[0, size)``: a linear-time counting sort.

    Uses scipy's COO -> CSR conversion (a counting sort by row) on the pairs
    ``(key, position)``; the CSR column indices are then the sorted positions.
    """
    import scipy.sparse as sp

    n = keys.size
    pos = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    csr = sp.coo_array((np.ones(n, np.int8), (keys, pos)), shape=(size, n)).tocsr()
    return csr.indices


def _stable_order(idx: np.ndarray, sizes: tuple[int, ...], key: np.ndarray) -> np.ndarray:
    """Stable order of the rows of ``idx`` (all valid) by their row-major ``key``.

    Already sorted input costs one comparison pass; a few sorted runs are
    merged by NumPy's timsort (stable argsort). Two sparse dimensions of
    moderate size use a two-pass LSD radix sort (columns, then rows) of
    linear cost; a transposed canonical matrix, already ordered by column,
    needs only the second pass. Anything else is NumPy's stable argsort.
    """
    n = key.size
    descents = int(np.count_nonzero(key[1:] < key[:-1])) if n > 1 else 0
    if descents == 0:
        return np.arange(n)
    if descents < 64:
        # A few sorted runs (e.g. two canonical operands concatenated): timsort merges them.
        return np.argsort(key, kind="stable")
    if len(sizes) == 2 and n >= 1024 and max(sizes) <= 4 * n + 4096 and max(sizes) < 2**31 and n < 2**31:
        r, c = idx[:, 0], idx[:, 1]
        order = None
        if not bool(np.all(c[1:] >= c[:-1])):
            order = _counting_order(c, int(sizes[1]))
            r = r[order]
        second = _counting_order(r, int(sizes[0]))
        return second if order is None else order[second]
    return np.argsort(key, kind="stable")


def group_numpy(indices: np.ndarray, sizes: tuple[int, ...]) -> Plan:
    """Plan for concrete ``indices`` of shape ``(n, k)`` (NumPy, exact ``n_out``)."""
    idx = np.asarray(indices)
    n, k = idx.shape
    valid = np.ones(n, dtype=bool)
    for j in range(k):  # column by column: NumPy's axis=1 reductions of (n, k) are slow
        col = idx[:, j]
        valid &= col < sizes[j]
        if idx.dtype.kind == "i":
            valid &= col >= 0
    if k == 0:
        order = np.arange(n)
        start = np.zeros(n, dtype=bool)
        if n:
            start[0] = True
    else:
        key = _linear_key(idx, sizes) if valid.all() else None
        if key is not None:
            order = _stable_order(idx, sizes, key)
            skey = key[order]
            start = np.empty(n, dtype=bool)
            if n:
                start[0] = True
                np.not_equal(skey[1:], skey[:-1], out=start[1:])
        else:
            cols = [idx[:, j] for j in reversed(range(k))]
            order = np.lexsort(cols + [~valid])
            sidx = np.take(idx, order, axis=0)
            start = np.empty(n, dtype=bool)
            if n:
                start[0] = True
                start[1:] = False
                for j in range(k):
                    start[1:] |= sidx[1:, j] != sidx[:-1, j]
    svalid = valid[order]
    start &= svalid
    segment = np.cumsum(start, dtype=np.int64) - 1
    count = int(segment[-1] + 1) if n else 0
    segment = np.where(svalid, segment, count).astype(np.int32 if n < 2**31 else np.int64)
    # np.take(axis=0) is several times faster than fancy indexing idx[rows] of an (n, k) array.
    out_indices = np.take(idx, order[start], axis=0) if k else np.zeros((count, 0), dtype=idx.dtype)
    return Plan(order, segment, out_indices, count, count)


def group_traced(indices, sizes: tuple[int, ...]) -> Plan:
    """Plan with ``jnp`` (traceable); ``n_out`` equals the number of entries.

    With no sparse dimension (``k == 0``) every entry sits at the single
    position ``()``, which has no padding value, so ``n_out`` is ``min(n, 1)``.
    """
    n, k = indices.shape
    if k == 0:
        n_out = min(n, 1)
        return Plan(jnp.arange(n), jnp.zeros(n, jnp.int32), jnp.zeros((n_out, 0), indices.dtype),
                    jnp.asarray(n_out), n_out)
    sizes_arr = jnp.asarray(sizes, dtype=indices.dtype) if k else None
    if k:
        valid = jnp.all((indices >= 0) & (indices < sizes_arr), axis=1)
        keys = tuple(indices[:, j] for j in reversed(range(k))) + (~valid,)
        order = jnp.lexsort(keys)
        sidx = indices[order]
        diff = jnp.any(sidx[1:] != sidx[:-1], axis=1)
    else:
        valid = jnp.ones(n, dtype=bool)
        order = jnp.arange(n)
        sidx = indices
        diff = jnp.zeros(max(n - 1, 0), dtype=bool)
    svalid = valid[order]
    start = jnp.concatenate([jnp.ones(min(n, 1), dtype=bool), diff]) & svalid
    segment = jnp.cumsum(start) - 1
    count = jnp.sum(start)
    segment = jnp.where(svalid, segment, n).astype(jnp.int32)
    fill = jnp.broadcast_to(sizes_arr, (n, k)) if k else jnp.zeros((n, 0), indices.dtype)
    out_indices = fill.at[segment].set(sidx, mode="drop")
    return Plan(order, segment, out_indices, count, n)


def group(indices, sizes: tuple[int, ...]) -> Plan:
    """Plan for ``indices`` of shape ``(n, k)``: NumPy when concrete, else traced."""
    if is_concrete(indices):
        p = group_numpy(np.asarray(indices), sizes)
        return Plan(
            adopt(p.order), adopt(p.segment), adopt(p.out_indices), p.count, p.n_out
        )
    return group_traced(indices, sizes)


def group_batched(indices, sizes: tuple[int, ...]) -> Plan:
    """Plans for indices of shape ``(B, n, k)``, one per batch element.

    Returns arrays with a leading batch dimension; ``n_out`` is the largest
    count when concrete, ``n`` while tracing.
    """
    B, n, k = indices.shape
    if B == 1:
        p = group(indices[0], sizes)
        return Plan(p.order[None], p.segment[None], p.out_indices[None], jnp.reshape(jnp.asarray(p.count), (1,)), p.n_out)
    order, segment, out_indices, count = _group_batched_traced(indices, sizes)
    if is_concrete(count):
        n_out = int(np.max(np.asarray(count))) if B else 0
        return Plan(order, segment, out_indices[:, :n_out], count, n_out)
    return Plan(order, segment, out_indices, count, out_indices.shape[1])


@partial(jax.jit, static_argnames=("sizes",))
def _group_batched_traced(indices, sizes: tuple[int, ...]):
    """``group_traced`` of each batch element: one compiled program (eagerly too)."""
    return jax.vmap(lambda i: group_traced(i, sizes)[:4])(indices)


#: Entries of a chunk, and chunk levels, of ``accurate_segment_sum``.
SUM_CHUNK = 32
SUM_LEVELS = 2

#: Fewest entries ``accurate_segment_sum`` chunks (fewer: a plain segment sum, whose sequential error over
#: at most this many entries stays below about 2e-5 in float32; the chunks cost about 0.1 s of compile).
ACCURATE_SUM_MIN_ENTRIES = 4096


def accurate_segment_sum(values, segment, n_out: int):
    """``jax.ops.segment_sum`` of floating ``values`` (shape ``(n, *dense)``) at ``segment`` ids (ids of
    ``n_out`` or more dropped) without most of its sequential rounding error where a segment's entries
    are contiguous (sorted ids: the canonical order's row sums, a plan's groups).

    XLA's segment sum is a scatter-add: a segment of ``L`` entries adds
    them one at a time, an error growing with ``L`` (float32: a relative
    1e-3 for 2 * 10^5 entries of similar size, and a variance computed
    from such a mean off by orders of magnitude). Here, ``SUM_LEVELS``
    times, the entries are cut into chunks of ``SUM_CHUNK``; a chunk whose
    entries all belong to one segment is summed by XLA's reduction (a
    tree) into one entry, the others' entries go to the final scatter-add
    as they are. A segment of contiguous entries then adds about ``L /
    1024 + 4 * SUM_CHUNK`` terms one at a time: a relative error of about
    1e-7 where the plain segment sum gave 1e-3 (on a 2-core CPU, two chunk
    levels cost about 0.1 s more to compile and up to twice the run time;
    fewer than ``ACCURATE_SUM_MIN_ENTRIES`` entries take the plain sum).
    Scattered ids (a column sum in row order) gain nothing and lose nothing
    but the time.
    """
    if values.shape[0] < ACCURATE_SUM_MIN_ENTRIES:
        return jax.ops.segment_sum(values, segment, num_segments=n_out)
    vals, ids = [], []
    v, s = values, segment
    for _ in range(SUM_LEVELS):
        n = v.shape[0]
        if n < 2 * SUM_CHUNK:
            break
        pad = -n % SUM_CHUNK
        if pad:
            v = jnp.concatenate([v, jnp.zeros((pad,) + v.shape[1:], v.dtype)])
            s = jnp.concatenate([s, jnp.full(pad, n_out, s.dtype)])
        v2 = v.reshape((-1, SUM_CHUNK) + v.shape[1:])
        s2 = s.reshape(-1, SUM_CHUNK)
        uniform = jnp.all(s2 == s2[:, :1], axis=1)
        u = uniform.reshape(uniform.shape + (1,) * (v.ndim - 1))
        zero = jnp.zeros((), v.dtype)
        vals.append(jnp.where(u[:, None], zero, v2).reshape(v.shape))  # a mixed chunk's entries, as they are
        ids.append(jnp.where(uniform[:, None], n_out, s2).reshape(-1))
        v = jnp.where(u, jnp.sum(v2, axis=1), zero)  # a uniform chunk's sum; a mixed one carries 0
        s = s2[:, -1]  # (any id of the chunk: sorted ids stay sorted)
    vals.append(v)
    ids.append(s)
    if len(vals) == 1:
        return jax.ops.segment_sum(v, s, num_segments=n_out)
    return jax.ops.segment_sum(jnp.concatenate(vals), jnp.concatenate(ids), num_segments=n_out)


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def segment_prod(values, segment, n_out: int):
    """``jax.ops.segment_prod`` (ids of ``n_out`` or more dropped), differentiable in ``values``.

    XLA's scatter-multiply has no gradient for repeated ids; the JVP here is
    the sum over each segment of the product of the *other* entries times
    the entry's tangent: the segment's product of its non-zero entries,
    divided by the entry where the segment has no zero, that product for
    the one zero where it has exactly one, and 0 where it has more (the
    rule ``jax.numpy.prod`` differentiates by).
    """
    return jax.ops.segment_prod(values, segment, num_segments=n_out)


@segment_prod.defjvp
def _segment_prod_jvp(n_out, primals, tangents):
    values, segment = primals
    dv = tangents[0]
    out = segment_prod(values, segment, n_out)
    zero = values == 0
    one = jnp.ones((), values.dtype)
    nonzero = jax.ops.segment_prod(jnp.where(zero, one, values), segment, num_segments=n_out)
    zeros = jax.ops.segment_sum(zero.astype(jnp.int32), segment, num_segments=n_out)
    at = jnp.clip(segment, 0, max(n_out - 1, 0))  # (dropped ids: their tangent is dropped by the sum below)
    z, p = (zeros[at], nonzero[at]) if n_out else (jnp.zeros_like(zero, jnp.int32), jnp.ones_like(values))
    nil = jnp.zeros((), values.dtype)
    others = jnp.where(zero, jnp.where(z == 1, p, nil), jnp.where(z == 0, p / jnp.where(zero, one, values), nil))
    return out, jax.ops.segment_sum(others * dv, segment, num_segments=n_out)


def additive_identity(dtype) -> np.generic:
    """The value sums of ``dtype`` start from: -0.0 for floats and -0.0 - 0.0j for complex numbers (IEEE 754:
    ``x + -0`` is ``x`` for every ``x``, -0 included, where ``+0`` turns a lone -0 into +0), 0 (False) for
    the others."""
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return dtype.type(complex(-0.0, -0.0))
    return dtype.type(-0.0 if jnp.issubdtype(dtype, jnp.inexact) else 0)  # (bfloat16's NumPy kind is "V")


def segment_reduce(values, segment, n_out: int, op: str = "sum"):
    """Reduce ``values`` (already in plan order) into ``n_out`` segments.

    ``op`` is one of ``"sum"``, ``"max"``, ``"min"``, ``"prod"``; bool sums are
    logical or; float and complex sums add into -0 (a segment without entries
    holds -0). Segment ids of ``n_out`` or more are dropped.
    """
    if op == "sum" and values.dtype == jnp.bool_:
        op = "max"
    if op == "prod" and jnp.issubdtype(values.dtype, jnp.inexact):
        return segment_prod(values, segment, n_out)  # (differentiable)
    if op == "sum" and jnp.issubdtype(values.dtype, jnp.inexact):
        # Added into -0 (``additive_identity``), not into +0 as jax.ops.segment_sum does: a duplicate-free
        # entry of -0 stays -0, as on the host. (A segment that gets no entry, padding, holds -0.)
        base = jnp.full((n_out,) + values.shape[1:], additive_identity(values.dtype))
        return base.at[segment].add(values, mode="drop", indices_are_sorted=True)
    fn = {
        "sum": jax.ops.segment_sum,
        "max": jax.ops.segment_max,
        "min": jax.ops.segment_min,
        "prod": jax.ops.segment_prod,
    }[op]
    return fn(values, segment, num_segments=n_out, indices_are_sorted=True)
