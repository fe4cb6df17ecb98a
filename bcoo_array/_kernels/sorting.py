"""Sorting, set and search kernels over the stored entries plus the fill value.

A lane (a 1-D slice along the sorted axis) of length ``L`` holding ``k``
stored values and ``L - k`` unstored ones (all equal to ``fill``) sorts to:
the stored values that sort before ``fill``, then the ``L - k`` unstored
positions, then the other stored values. So a sorted sparse array stores
exactly as many entries per lane as its input; ``sort_lanes`` computes
their new positions with one lexicographic sort of the ``nse`` entries
(memory O(nse), never the dense lane). The distinct values of an array are
the distinct stored values plus ``fill`` when some position is unstored
(``unique_entries``); a sorted 1-D array's insertion points are counts
of the stored values before each query plus the unstored block when ``fill``
comes before it (``count_before``).

Order: NumPy's, NaN last (every NaN after every number), ``-0.0`` equal to
``0.0``; descending is the reverse of ascending (so NaN first), as in
NumPy and array-api-strict.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._engine import Operation, host_view
from .._shapes import valid_rows
from .cache import PLANS, has_padding


def lt(a, b):
    """``a`` sorts strictly before ``b`` in NumPy's order (NaN last); element-wise, broadcasting."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if not jnp.issubdtype(jnp.result_type(a, b), jnp.inexact):
        return a < b
    return (a < b) | (~jnp.isnan(a) & jnp.isnan(b))


def lt_np(a, b):
    """NumPy twin of ``lt``."""
    a, b = np.asarray(a), np.asarray(b)
    if np.result_type(a, b).kind not in "fc":
        return a < b
    return (a < b) | (~np.isnan(a) & np.isnan(b))


#: ``sort_lanes(data, indices, shape, axis, fill, descending)``: see ``_sort_lanes_xla``; the host engine runs
#: the same algorithm in NumPy (``_sort_lanes_host``).
sort_lanes = Operation("sort_lanes", operands=lambda data, indices, *args, **kw: (data, indices))


@sort_lanes.host
def _sort_lanes_host(data, indices, shape, axis: int, fill, descending: bool, *, canonical: bool = False):
    data, indices = host_view(data), host_view(indices)
    nse, ndim = indices.shape
    if nse == 0:
        return data, indices
    sizes = np.asarray(shape, indices.dtype)
    if axis == ndim - 1 and data.dtype.kind in "biuf" and not has_padding(indices, shape):
        got = _sort_contiguous_lanes(data, indices, shape, fill, descending, canonical=canonical)
        if got is not None:
            return got
    valid = valid_rows(indices, shape)
    others = [k for k in range(ndim) if k != axis]
    lane_cols = [np.where(valid, indices[:, k], shape[k]).astype(indices.dtype) for k in others]
    pos = np.where(valid, indices[:, axis], shape[axis])
    # np.lexsort: the last key is the primary one (as jnp.lexsort); NumPy's order: NaN last, -0.0 tied with 0.0.
    order = np.lexsort([pos, data] + lane_cols[::-1] + [(~valid).astype(np.int8)])
    d = data[order]
    v = valid[order]
    idx = indices[order]
    start = np.empty(nse, bool)
    start[0] = True
    start[1:] = v[1:] != v[:-1]
    for c in lane_cols:
        co = c[order]
        start[1:] |= co[1:] != co[:-1]
    seg = np.cumsum(start) - 1
    starts = np.flatnonzero(start)
    counts = np.diff(np.append(starts, nse))
    rank = np.arange(nse) - starts[seg]
    out_idx = idx.copy()
    out_idx[:, axis] = _lane_positions(d, fill, rank, counts[seg], shape[axis], descending)
    out_idx[~v] = sizes
    return d, out_idx


def _sort_contiguous_lanes(data, indices, shape, fill, descending: bool, *, canonical: bool = False):
    """``_sort_lanes_host`` along the last axis of row-major sorted entries (canonical form, no padding).

    ``canonical`` promises sorted, unique entries (the array's flags): the lanes are then known to be
    contiguous runs of increasing positions, and the checks of that are skipped.

    Each lane's entries are contiguous: they are copied into the rows of a
    padded block (the padding sorts last: NaN, the dtype's maximum or True),
    which NumPy sorts row by row (a stable sort; rows are short) instead of
    one ``lexsort`` over every entry (1.7 ms against 0.1 ms for 14,000
    entries in 400 lanes). None when the entries are not grouped by lane or
    the block would be much larger than the entries (a few long lanes). The
    lanes' layout depends on the indices only: cached on the buffer, so a
    warm call sorts values and nothing else.
    """
    lanes = PLANS.get((indices,), ("lanes", tuple(shape), canonical), lambda: _lane_layout(indices, canonical))
    if lanes is None:
        return None
    n_lanes, width, at, rank, k = lanes
    kind = data.dtype.kind
    pad = np.nan if kind == "f" else (True if kind == "b" else np.iinfo(data.dtype).max)
    block = np.full(n_lanes * width, pad, data.dtype)
    block[at] = data
    block = block.reshape(n_lanes, width)
    block.sort(axis=1, kind="stable")
    d = block.reshape(-1)[at]
    out_idx = indices.copy()
    out_idx[:, -1] = _lane_positions(d, fill, rank, k, shape[-1], descending)
    return d, out_idx


def _lane_positions(d, fill, rank, k, n: int, descending: bool):
    """Where each sorted stored value goes in its lane of length ``n`` holding ``k`` stored values: values that
    sort before the fill value keep their rank, the others follow the ``n - k`` unstored ones."""
    with np.errstate(invalid="ignore"):
        before = lt_np(d, np.asarray(fill, d.dtype))
    new_pos = np.where(before, rank, rank + (n - k))
    return n - 1 - new_pos if descending else new_pos


def _lane_layout(indices, canonical: bool):
    """The lanes of row-major sorted ``indices`` (every coordinate but the last): ``(n_lanes, width, at, rank,
    count)``, ``at`` each entry's flat position in an ``(n_lanes, width)`` block, ``rank`` its place in its lane
    and ``count`` its lane's length; None when the lanes are not contiguous runs of increasing positions or the
    block would be much larger than the entries."""
    nse, ndim = indices.shape
    start = np.zeros(nse, bool)
    start[0] = True
    for k in range(ndim - 1):
        col = indices[:, k]
        start[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(start)
    seg = np.cumsum(start) - 1
    rank = np.arange(nse) - starts[seg]
    inner = ~start[1:]
    if not canonical and nse > 1 and not bool(np.all(indices[1:, -1][inner] > indices[:-1, -1][inner])):
        return None  # positions not increasing within a lane: the general path
    if not canonical and starts.size > 1:  # each lane one run: the lanes' coordinates increase run to run
        a, b = indices[starts[:-1], :-1], indices[starts[1:], :-1]
        first = np.argmax(a != b, axis=1)
        rows = np.arange(first.size)
        if not bool(np.all(b[rows, first] > a[rows, first])):
            return None
    counts = np.diff(np.append(starts, nse))
    width = int(counts.max())
    if starts.size * width > 4 * nse + 4096:
        return None
    at = seg * width + rank  # flat positions: 2-D fancy indexing is several times slower
    return starts.size, width, at, rank, counts[seg]


@sort_lanes.xla
def _sort_lanes_xla_call(data, indices, shape, axis: int, fill, descending: bool, *, canonical: bool = False):
    return _sort_lanes_xla(data, indices, shape, axis, fill, descending)  # (its lexsort needs no promise)


@partial(jax.jit, static_argnames=("shape", "axis", "descending"))
def _sort_lanes_xla(data, indices, shape, axis: int, fill, descending: bool):
    """Sort every lane along ``axis`` of a COO array (n_batch = n_dense = 0), unstored entries = ``fill``.

    Parameters
    ----------
    data : array, shape ``(nse,)``
        Stored values, duplicates already summed (may be traced).
    indices : integer array, shape ``(nse, ndim)``
        Their coordinates, unique; padding rows (an index equal to its
        dimension's size in some column) are allowed and stay padding.
    shape : tuple of int
        The array's shape (``ndim >= 1``).
    axis : int
        The axis to sort along, in ``[0, ndim)``.
    fill : scalar
        The value of the unstored entries.
    descending : bool
        Descending order: the reverse of ascending (NaN first).

    Returns
    -------
    data, indices : arrays of the input shapes
        The sorted array's stored entries, unique, padding last (lane-major
        order, so not sorted lexicographically unless ``axis`` is the last
        and the order ascending). The stored values are permuted (a gather),
        so gradients flow through ``data``. One compiled call (``fill``
        travels as a 0-d array, so NaN fill values hit the cache too).
    """
    nse, ndim = indices.shape
    if nse == 0:
        return data, indices
    sizes = jnp.asarray(shape, indices.dtype)
    valid = jnp.all(indices < sizes, axis=1)
    others = [k for k in range(ndim) if k != axis]
    lane_cols = [jnp.where(valid, indices[:, k], jnp.asarray(shape[k], indices.dtype)) for k in others]
    pos = jnp.where(valid, indices[:, axis], jnp.asarray(shape[axis], indices.dtype))
    # jnp.lexsort: the last key is the primary one. Padding last, then by lane, then by value
    # (lax.sort's order: NaN last, -0.0 tied with 0.0), then by position (stability).
    keys = [pos, data] + lane_cols[::-1] + [(~valid).astype(jnp.int8)]
    order = jnp.lexsort(keys)
    d = data[order]
    v = valid[order]
    idx = indices[order]
    lane = jnp.stack([c[order] for c in lane_cols] + [(~v).astype(indices.dtype)], axis=1)
    start = jnp.concatenate([jnp.ones((1,), bool), jnp.any(lane[1:] != lane[:-1], axis=1)])
    seg = jnp.cumsum(start.astype(jnp.int32)) - 1
    i = jnp.arange(nse, dtype=indices.dtype)
    first = jax.ops.segment_min(i, seg, num_segments=nse, indices_are_sorted=True)
    count = jax.ops.segment_sum(jnp.ones(nse, indices.dtype), seg, num_segments=nse, indices_are_sorted=True)
    rank = i - first[seg]
    k = count[seg]
    n = jnp.asarray(shape[axis], indices.dtype)
    fill_v = jnp.asarray(fill, data.dtype)
    before = lt(d, fill_v)
    new_pos = jnp.where(before, rank, rank + (n - k))
    if descending:
        new_pos = n - 1 - new_pos
    out_idx = idx.at[:, axis].set(new_pos.astype(indices.dtype))
    out_idx = jnp.where(v[:, None], out_idx, sizes)
    return d, out_idx


def first_unstored(flat: np.ndarray) -> int:
    """The smallest position missing from the sorted, distinct, non-negative positions ``flat``."""
    n = flat.shape[0]
    if n == 0:
        return 0
    miss = np.flatnonzero(flat != np.arange(n, dtype=flat.dtype))
    return int(miss[0]) if miss.size else n


class Unique(NamedTuple):
    """The result of ``unique_entries`` (NumPy arrays on the host)."""

    values: np.ndarray
    first: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    fill_index: int


def unique_entries(vals: np.ndarray, flat: np.ndarray, size: int, fill) -> Unique:
    """Distinct values of an array from its stored entries and its fill value (NumPy, eager).

    Parameters
    ----------
    vals : numpy.ndarray, shape ``(n,)``
        The stored values, one per stored position (duplicates summed, no padding).
    flat : numpy.ndarray of int64, shape ``(n,)``
        Their row-major flat positions, sorted and distinct.
    size : int
        The number of positions of the array (``n <= size``).
    fill : scalar
        The value of the ``size - n`` unstored positions; must not be NaN
        when ``n < size`` (every NaN is distinct: the caller expands them).

    Returns
    -------
    Unique
        ``values`` (sorted, NaN last, each NaN distinct), ``first`` (flat
        position of each value's first occurrence, int64), ``counts``
        (int64), ``inverse`` (for each stored entry, the index of its value)
        and ``fill_index`` (the index of ``fill``, or -1 when every position
        is stored). Equal values are grouped as ``numpy.unique`` groups
        them (``-0.0`` with ``0.0``); a group's value is its first occurrence.
    """
    n = vals.shape[0]
    n_unstored = size - n
    weights = np.ones(n, np.int64)
    if n_unstored:
        vals = np.concatenate([vals, np.asarray([fill], vals.dtype)])
        flat = np.concatenate([flat.astype(np.int64), np.asarray([first_unstored(flat)], np.int64)])
        weights = np.concatenate([weights, np.asarray([n_unstored], np.int64)])
    m = vals.shape[0]
    if m == 0:
        empty = np.zeros(0, np.int64)
        return Unique(vals, empty, empty, empty, -1)
    order = np.lexsort((flat, vals))  # NaN last, ties by position
    sv = vals[order]
    new = np.ones(m, bool)
    new[1:] = sv[1:] != sv[:-1]  # NaN != NaN: every NaN is its own group
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    inverse = np.empty(m, np.int64)
    inverse[order] = group
    counts = np.add.reduceat(weights[order], starts).astype(np.int64)
    return Unique(sv[starts], flat[order][starts].astype(np.int64), counts, inverse[:n],
                  int(inverse[n]) if n_unstored else -1)


@partial(jax.jit, static_argnames=("length", "side"))
def count_before(stored, valid, length: int, fill, v, side: str):
    """Insertion points of ``v`` into a sorted 1-D array given by its stored entries and fill value.

    Parameters
    ----------
    stored : array, shape ``(nse,)``
        Stored values of the sorted array (any order; may be traced).
    valid : bool array, shape ``(nse,)``
        Which entries are real (False for padding).
    length : int
        The array's length; ``length - sum(valid)`` positions hold ``fill``.
    fill : scalar or 0-d array
        The fill value (may be traced).
    v : array
        Query values, any shape, the dtype of ``stored``.
    side : {'left', 'right'}

    Returns
    -------
    array of ``v``'s shape
        For 'left' the number of elements that sort strictly before each
        ``v``, for 'right' the number that do not sort after it: the
        insertion points of ``numpy.searchsorted`` when the array is
        sorted (NaN last). Memory O(nse + v.size).
    """
    dt = stored.dtype
    if jnp.issubdtype(dt, jnp.inexact):
        top = jnp.asarray(jnp.nan, dt)
    else:
        top = jnp.asarray(jnp.iinfo(dt).max, dt)
    keyed = jnp.sort(jnp.where(valid, stored, top))  # padding sorts last (or ties with the last)
    n_valid = jnp.sum(valid.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32))
    r = jnp.minimum(jnp.searchsorted(keyed, v, side=side), n_valid)
    fill_v = jnp.asarray(fill, dt)
    fill_counts = lt(fill_v, v) if side == "left" else ~lt(v, fill_v)
    return r + jnp.where(fill_counts, length - n_valid, 0)
