"""The indexing chapter of the array API standard: ``take``,
``take_along_axis``, and the keys of ``__getitem__`` / ``__setitem__``.

Supported keys, as in the standard's indexing page:

* basic: integers (negative too), slices (any step), ``...`` and ``None``;
  the result stays sparse (entries outside the selection are dropped, or
  turned into padding while tracing);
* one integer array among basic keys: [`take`][bcoo_array.take] along that axis;
* integer arrays on every indexed axis (broadcast together): a pointwise
  lookup, jittable (binary search in the sorted pattern);
* a boolean mask: eager only (its number of True entries fixes the shape).

``setitem`` writes the selected positions: the Python object rebinds its
``data`` and ``indices`` to new buffers (JAX buffers are immutable), so
other references to the old buffers, and copies of the pytree taken
earlier, keep the old values.

Spec: https://data-apis.org/array-api/2025.12/API_specification/indexing_functions.html
and https://data-apis.org/array-api/2025.12/API_specification/indexing.html
"""

from __future__ import annotations

import operator
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._dtypes import result_type
from ._engine import Operation, host_enabled
from ._fill import same_value, same_value_np
from ._kernels import host, slicing
from ._kernels.coalesce import take_entries
from ._kernels.csr import csr_arrays
from ._kernels.native import host_csr_select
from ._kernels.fromdense import same_value_host
from ._kernels.union import lookup_np, take_or_fill, take_or_fill_np, union, union_np
from ._shapes import index_dtype_for, is_concrete, is_tracer, normalize_axes, prod, valid_rows
from ._limits import check_dense, check_entries
from ._manipulation_functions import expand_dims, permute_dims, reshape
from ._operands import PY_SCALARS, as_operand, as_sparse
from ._relayout import dense_layout, update_layout
from ._routing import routed


@routed
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
        per matching index, by a sort and binary search), also while the
        array is traced; with traced ``indices`` it is computed densely
        (within the densification limit, ``set_max_dense_bytes``).

    Raises
    ------
    IndexError
        If an index is out of range.
    ValueError
        If ``axis`` is None for an array of more than one dimension, or
        ``indices`` is not 1-D.
    MemoryError
        With traced ``indices``, if the dense input or result would pass the densification limit.
    """
    x = as_sparse(x)
    if isinstance(indices, BCOOArray):
        idx = indices._dense()
    elif isinstance(indices, (jax.Array, jax.core.Tracer)):
        idx = indices
    else:
        idx = np.asarray(indices)  # concrete: read on the host (jnp.asarray would stage a program per shape)
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
    if not is_concrete(idx):
        # Traced keys: how often each stored entry repeats is unknown while tracing, so the result is dense.
        out_shape = x.shape[:ax] + (idx.shape[0],) + x.shape[ax + 1:]
        check_dense("take", x.shape, x.dtype, what="the densified input of a take with traced indices")
        check_dense("take", out_shape, x.dtype, what="the dense result of a take with traced indices")
        d = jnp.take(x.todense(), jnp.where(idx < 0, idx + n, idx), axis=ax)
        return dense_layout(d)
    q = np.asarray(idx).astype(np.int64)
    if q.size and (q.min() < -n or q.max() >= n):
        bad = q.min() if q.min() < -n else q.max()
        raise IndexError(f"index {int(bad)} is out of bounds for axis {ax} with size {n}")
    q = np.where(q < 0, q + n, q)
    if not x._concrete_indices():
        return _take_traced(update_layout(x, 0, 0), q, ax)
    c = update_layout(x, 0, 0)._canonical()
    if c.ndim == 2 and host_enabled():
        got = _take_2d_host(c, q, ax)
        if got is not None:
            return got
    cdata, cind = c._buffers()
    ind = np.asarray(cind).astype(np.int64)
    valid = valid_rows(ind, c.shape)
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
    data = take_entries(cdata, src)
    return BCOOArray._from_buffers(data, new.astype(idt), shape, n_batch=0, n_dense=0,
                                   fill_value=x.fill_value, indices_sorted=False, unique_indices=True)


def _take_traced(c: BCOOArray, q: np.ndarray, ax: int) -> BCOOArray:
    """``take`` of an all-sparse array with traced indices along ``ax`` at concrete positions ``q`` (in range).

    Sparse, with a static entry count: each stored entry is repeated once per position of ``q`` that
    selects it, at most ``k`` times (``k`` the largest multiplicity in ``q``, known from the keys), so the
    result has ``nse * k`` entries, the unmatched ones padding. A sorted copy of ``q`` answers, per
    entry, by binary search (``jnp.searchsorted``) where its run of equal keys starts and how long it is.
    """
    nse = c.indices.shape[0]
    shape = c.shape[:ax] + (q.size,) + c.shape[ax + 1:]
    idt = index_dtype_for(shape)
    order = np.argsort(q, kind="stable")
    sq = q[order]
    values, starts, counts = np.unique(sq, return_index=True, return_counts=True)
    k = int(counts.max()) if q.size else 0
    if k == 0 or nse == 0:
        return BCOOArray._from_buffers(jnp.zeros((0,) + c.data.shape[1:], c.dtype), jnp.zeros((0, len(shape)), idt),
                                       shape, n_batch=0, n_dense=c.n_dense, fill_value=c.fill_value,
                                       indices_sorted=True, unique_indices=True)
    check_entries("take", nse * k, c.dtype, idt, len(shape) - c.n_dense, prod(c.shape[len(shape) - c.n_dense:]),
                  what=f"the {nse} stored entries repeated up to {k} times (the most any position repeats)")
    ind = c.indices
    n_sparse = ind.shape[1]
    valid = jnp.ones(nse, bool)
    for j in range(n_sparse):
        valid &= ind[:, j] < c.shape[j]
    col = ind[:, ax].astype(jnp.int64 if values.dtype == np.int64 and jax.config.jax_enable_x64 else idt)
    vals_j = jnp.asarray(values.astype(col.dtype))
    j = jnp.clip(jnp.searchsorted(vals_j, col), 0, values.size - 1)
    hit = valid & (vals_j[j] == col)
    first = jnp.asarray(starts.astype(np.int64 if jax.config.jax_enable_x64 else np.int32))[j]
    count = jnp.where(hit, jnp.asarray(counts.astype(first.dtype))[j], 0)
    r = jnp.arange(k, dtype=first.dtype)
    keep = r[None, :] < count[:, None]                                      # (nse, k)
    qpos = jnp.asarray(order.astype(first.dtype))[jnp.minimum(first[:, None] + r[None, :], q.size - 1)]
    new = jnp.broadcast_to(ind.astype(idt)[:, None, :], (nse, k, n_sparse))
    new = new.at[:, :, ax].set(qpos.astype(idt))
    new = jnp.where(keep[..., None], new, jnp.asarray(shape[:n_sparse], idt)).reshape(nse * k, n_sparse)
    data = jnp.broadcast_to(c.data[:, None], (nse, k) + c.data.shape[1:]).reshape((nse * k,) + c.data.shape[1:])
    return BCOOArray._from_buffers(data, new, shape, n_batch=0, n_dense=c.n_dense, fill_value=c.fill_value,
                                   indices_sorted=False, unique_indices=c.unique_indices)


def _outer_2d_host(x: BCOOArray, keys) -> BCOOArray | None:
    """``A[np.ix_(r, c)]`` of a canonical matrix on host buffers in one native pass over its cached CSR
    structure (scipy's row and column index kernels fused), or None where it does not apply."""
    if not (x.indices_sorted and x.unique_indices and x.n_batch == 0 and x.n_dense == 0):
        return None
    if not all(is_concrete(k) for k in keys):
        return None
    hb = x._host_buffers()
    if hb is None:
        return None
    m, n = x.shape
    q = []
    for ax, k in enumerate(keys):
        k = np.asarray(k).astype(np.int64)
        size = x.shape[ax]
        if k.size and (k.min() < -size or k.max() >= size):
            bad = k.min() if k.min() < -size else k.max()
            raise IndexError(f"index {int(bad)} is out of bounds for axis {ax} with size {size}")
        q.append(np.where(k < 0, k + size, k))
    rows, cols = q
    shape = (rows.size, cols.size)
    if n > 4 * (x.nse + cols.size) + 65536:
        return None  # a count per column would outweigh the entries: the general path
    csr = csr_arrays(hb[1], (m, n))
    if csr is None or not csr.canonical:
        return None
    got = host_csr_select(csr.indptr, csr.cols, rows, cols, n, index_dtype_for(shape))
    if got is None:
        return None
    out_idx, src = got
    increasing = cols.size < 2 or bool(np.all(cols[1:] >= cols[:-1]))
    return BCOOArray._from_buffers(hb[0][src], out_idx, shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=increasing, unique_indices=True)


def _take_2d_host(c: BCOOArray, q: np.ndarray, ax: int) -> BCOOArray | None:
    """``take`` of a canonical 2-D matrix on host buffers through its (cached) CSR structure, or None.

    Rows (``ax = 0``): each selected row's run of entries, copied in order
    (scipy's ``csr_row_index``). Columns (``ax = 1``): each entry repeated
    once per time its column is selected (a count per column and the
    selected positions grouped by column, as scipy's ``csr_column_index``),
    row by row. The result is canonical when the rows, or the sorted
    columns, are selected in increasing order.
    """
    hb = c._host_buffers()
    if hb is None:
        return None
    hd, hi = hb
    m, n = c.shape
    csr = csr_arrays(hi, (m, n))
    if csr is None or not csr.canonical:
        return None
    indptr = csr.indptr.astype(np.int64, copy=False)
    shape = (q.size, n) if ax == 0 else (m, q.size)
    idt = index_dtype_for(shape)
    if ax == 0:
        starts = indptr[q]
        cnt = indptr[q + 1] - starts
        total = int(cnt.sum())
        src = np.arange(total) + np.repeat(starts - (np.cumsum(cnt) - cnt), cnt)
        out = host.aligned_empty((total, 2), idt)
        out[:, 0] = np.repeat(np.arange(q.size), cnt)
        out[:, 1] = csr.cols[src]
        return BCOOArray._from_buffers(hd[src], out, shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                       indices_sorted=True, unique_indices=True)
    if n > 4 * (csr.n_valid + q.size) + 65536:
        return None  # a count per column would outweigh the entries: the general path
    per_col = np.bincount(q, minlength=n)
    first = np.cumsum(per_col) - per_col  # where each column's selections start among the sorted positions
    by_col = np.argsort(q, kind="stable")
    cols = csr.cols
    e_cnt = per_col[cols]
    total = int(e_cnt.sum())
    src = np.repeat(np.arange(cols.size), e_cnt)
    k = np.arange(total) - np.repeat(np.cumsum(e_cnt) - e_cnt, e_cnt)
    out = host.aligned_empty((total, 2), idt)
    out[:, 0] = hi[src, 0]
    out[:, 1] = by_col[first[cols[src]] + k]
    increasing = q.size < 2 or bool(np.all(q[1:] >= q[:-1]))
    return BCOOArray._from_buffers(hd[src], out, shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                   indices_sorted=increasing, unique_indices=True)


@routed
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
    x = as_sparse(x)
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


def _is_int_array(k) -> bool:
    return (isinstance(k, (np.ndarray, jax.Array, jax.core.Tracer)) and jnp.issubdtype(k.dtype, jnp.integer)) or (
        isinstance(k, BCOOArray) and k.dtype.kind in "iu")


def _is_bool_array(k) -> bool:
    return (isinstance(k, (np.ndarray, jax.Array, jax.core.Tracer, BCOOArray)) and np.dtype(k.dtype) == np.bool_) \
        or isinstance(k, bool)


def _as_dense_key(k):
    """A BCOOArray key as dense values: NumPy on the host engine (as a NumPy key is), else a ``jax.Array``."""
    if isinstance(k, BCOOArray):
        return k._dense()
    return k


def _expand(key, ndim: int):
    """Normalise a key to a tuple without Ellipsis (Nones kept); check its length."""
    if not isinstance(key, tuple):
        key = (key,)
    # A list is an integer (or boolean) array key, as in NumPy: A[[1, 2]] is A[np.array([1, 2])]; an empty
    # one selects nothing (NumPy's float64 array of [] would not index).
    key = tuple((np.asarray(k) if k else np.zeros(0, np.intp)) if isinstance(k, list) else k for k in key)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis and not (_is_bool_array(k) and not isinstance(k, bool)))
    consumed += sum(_as_dense_key(k).ndim for k in key if _is_bool_array(k) and not isinstance(k, bool))
    if consumed > ndim:
        raise IndexError(f"too many indices: the array is {ndim}-d but {consumed} were given")
    if n_ell:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)  # not key.index: arrays compare elementwise
        key = key[:i] + (slice(None),) * (ndim - consumed) + key[i + 1:]
    else:
        key = key + (slice(None),) * (ndim - consumed)
    return key


def getitem(x: BCOOArray, key) -> BCOOArray:
    """Index ``x`` (see the module docstring for the supported keys).

    Raises
    ------
    IndexError
        For out-of-range integers, too many indices, or unsupported mixes of
        arrays and slices.
    TypeError
        For keys of other types (floats, lists of floats, ...).
    ValueError
        For a boolean mask under ``jax.jit``.
    """
    fast = _matrix_row_or_column(x, key)
    if fast is not None:
        return fast
    key = _expand(key, x.ndim)
    arrays = [k for k in key if _is_int_array(k) or (_is_bool_array(k) and not isinstance(k, bool))]
    if any(isinstance(k, bool) for k in key):
        raise IndexError("Python bool keys are not supported; use a boolean array mask")
    if len(arrays) > 1 and any(_is_bool_array(k) for k in arrays):
        # A mask among other arrays is its nonzero() coordinates, as NumPy reads it (``A[m0, m1]``).
        key = _masks_as_int_arrays(key)
        arrays = [k for k in key if _is_int_array(k) or (_is_bool_array(k) and not isinstance(k, bool))]
    if not arrays:
        return _basic(x, key)
    if len(arrays) == 1 and _is_bool_array(arrays[0]):
        return _mask_index(x, key)
    if len(arrays) == 1:
        pos = [i for i, k in enumerate(key) if k is arrays[0]][0]
        before = tuple(k if k is not arrays[0] else slice(None) for k in key)
        y = _basic(x, before)
        ax_after = sum(1 for k in before[:pos] if k is not None and not isinstance(k, (int, np.integer)))
        ax_after += sum(1 for k in before[:pos] if k is None)
        # NumPy's rule: integers count as advanced indices next to an array; advanced indices separated by a
        # slice or None put their result dimensions first (``a[0, :, [0, 1]]`` has shape (2, n)).
        adv = [i for i, k in enumerate(key) if i == pos or isinstance(k, (int, np.integer))]

        idx = _as_dense_key(arrays[0])
        flat = jnp.reshape(idx, (-1,))
        out = take(y, flat, axis=ax_after)
        if idx.ndim != 1:
            out = reshape(out, out.shape[:ax_after] + tuple(idx.shape) + out.shape[ax_after + 1:])
        if adv[-1] - adv[0] + 1 != len(adv) and ax_after:
            moved = tuple(range(ax_after, ax_after + idx.ndim))
            rest = tuple(a for a in range(out.ndim) if a not in moved)
            out = permute_dims(out, moved + rest)
        return out
    outer = _outer_keys(key, x.ndim)
    if outer is not None:
        # ``A[np.ix_(rows, cols)]``: a take along each axis, sparse, never the broadcast of the keys
        got = _outer_2d_host(x, outer) if x.ndim == 2 and host_enabled() else None
        if got is not None:
            return got
        for ax, idx in enumerate(outer):
            x = take(x, idx, axis=ax)
        return x
    if all(_is_int_array(k) or isinstance(k, (int, np.integer)) for k in key) and len(key) == x.ndim:
        return _pointwise(x, key)
    raise IndexError(
        "this mix of integer arrays with slices or None is not supported; index with integer arrays on "
        "every axis, or one integer array with basic indices"
    )


def _masks_as_int_arrays(key) -> tuple:
    """Each boolean mask (1-D or more) of ``key`` replaced by its ``nonzero()`` integer arrays (eager only)."""
    out = []
    for k in key:
        if _is_bool_array(k) and not isinstance(k, bool):
            m = _as_dense_key(k)
            if is_tracer(m):
                raise ValueError("a boolean mask key under jax.jit has a shape that depends on its values; index "
                                 "with integer arrays of static size (jnp.nonzero(mask, size=n)) instead")
            m = np.asarray(m)
            if m.ndim:
                out.extend(np.nonzero(m))
                continue
        out.append(k)
    return tuple(out)


def _outer_keys(key, ndim: int):
    """The 1-D index arrays of an outer key (``np.ix_(r, c)``: array ``j`` varies along axis ``j`` only), or None.

    Such a key selects the Cartesian product of its arrays, in their order:
    a ``take`` along each axis, where the broadcast of the keys (what
    pointwise indexing reads) could be far larger than the array.
    """
    if len(key) != ndim or ndim < 2 or not all(_is_int_array(k) for k in key):
        return None
    keys = [_as_dense_key(k) for k in key]
    if not all(k.ndim == ndim for k in keys):
        return None
    out = []
    for j, k in enumerate(keys):
        if any(n != 1 for a, n in enumerate(k.shape) if a != j):
            return None
        out.append(k.reshape(-1))
    if sum(o.shape[0] != 1 for o in out) < 2:
        return None  # at most one varying key: pointwise indexing reads no more than the result
    return out


def _int_key(k, size: int):
    """``k`` as an in-range non-negative int if it is an integer key, else None."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
        k = int(k)
        if -size <= k < size:
            return k % size
    return None


def _matrix_row_or_column(x: BCOOArray, key):
    """``A[i]``, ``A[i, :]``, ``A[:, j]`` or ``A[i:j]`` of a 2-D matrix by CSR / CSC slicing on the host, or None.

    Taken for a 2-D array with every dimension sparse and concrete CPU
    buffers (``._kernels.slicing``); other arrays and keys take the
    general path, which gives the same values.
    """
    if x.ndim != 2 or x.n_batch or x.n_dense:
        return None
    if not isinstance(key, tuple):
        key = (key,)
    is_full = [isinstance(k, slice) and k == slice(None) for k in key]
    if isinstance(key[0], slice) and not is_full[0] and (len(key) == 1 or (len(key) == 2 and isinstance(key[1], slice))):
        # A range of rows (and of columns): the rows' entries are one run of the CSR order
        start, stop, step = key[0].indices(x.shape[0])
        c0, c1, cstep = key[1].indices(x.shape[1]) if len(key) == 2 else (0, x.shape[1], 1)
        if step != 1 or cstep != 1:
            return None
        stop, c1 = max(start, stop), max(c0, c1)
        got = slicing.row_range(*x._buffers(), x.shape, start, stop)
        if got is None:
            return None
        values, indices, canonical = got
        if (c0, c1) != (0, x.shape[1]):
            inside = (indices[:, 1] >= c0) & (indices[:, 1] < c1)
            values, indices = values[inside], indices[inside]
            indices[:, 1] -= c0
        return BCOOArray._from_buffers(np.array(values), indices,  # (a copy: never keep the whole matrix alive)
                                       (stop - start, c1 - c0), n_batch=0, n_dense=0, fill_value=x.fill_value,
                                       indices_sorted=canonical, unique_indices=canonical)
    if len(key) == 1 or (len(key) == 2 and is_full[1]):
        i = _int_key(key[0], x.shape[0])
        got = None if i is None else slicing.row(*x._buffers(), x.shape, i)
        length = x.shape[1]
    elif len(key) == 2 and is_full[0]:
        j = _int_key(key[1], x.shape[1])
        got = None if j is None else slicing.column(*x._buffers(), x.shape, j)
        length = x.shape[0]
    else:
        return None
    if got is None:
        return None
    values, positions, canonical = got
    indices = positions.astype(index_dtype_for((length,)))[:, None]
    return BCOOArray._from_buffers(np.array(values), np.ascontiguousarray(indices), (length,),
                                   n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=canonical, unique_indices=canonical)


def _basic_output(key, new_cols):
    """Output dimensions of a basic key, in key order (one per slice and per None), and their index columns.

    ``new_cols[ax]`` is ``(column, length)`` of the sliced axis ``ax``; a None
    adds a dimension of size 1 (column None: all zeros).
    """
    out_shape, cols, ax = [], [], 0
    for k in key:
        if k is None:
            out_shape.append(1)
            cols.append(None)
            continue
        if isinstance(k, slice):
            newcol, length = new_cols[ax]
            out_shape.append(length)
            cols.append(newcol)
        ax += 1
    return tuple(out_shape), cols


def _basic(x: BCOOArray, key) -> BCOOArray:
    if all(isinstance(k, slice) and k == slice(None) for k in key if k is not None):
        if any(k is None for k in key):
            shape = []
            it = iter(x.shape)
            for k in key:
                shape.append(1 if k is None else next(it))
            return reshape(x, tuple(shape))
        return x
    c = update_layout(x, 0, 0)
    if all(k is not None and not isinstance(k, slice) for k in key):
        # A 0-d result keeps a single entry (below): merge duplicates first.
        c = c._canonical()
    fast = _basic_host(c, key)
    if fast is not None:
        return fast
    idx = c.indices
    data = c.data
    keep_cols = []
    valid = jnp.all(idx < jnp.asarray(c.shape, idx.dtype), axis=1) if c.ndim else jnp.ones(idx.shape[0], bool)
    new_cols = {}
    ax = 0
    for k in key:
        if k is None:
            continue
        n = c.shape[ax]
        col = idx[:, ax]
        if isinstance(k, (int, np.integer)) or (hasattr(k, "__index__") and not isinstance(k, slice)):
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
            valid = valid & (col == i % n)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            off = col.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32) - start
            if step > 0:
                inside = (off >= 0) & (col < stop)
            else:
                inside = (off <= 0) & (col > stop)
            inside = inside & (off % step == 0)
            valid = valid & inside
            new_cols[ax] = (off // step, length)
            keep_cols.append(ax)
        else:
            raise TypeError(f"index {k!r} of type {type(k).__name__} is not an integer, slice, ... or None")
        ax += 1
    out_shape, cols = _basic_output(key, new_cols)
    idt = index_dtype_for(out_shape)
    nse = idx.shape[0]
    pad = [jnp.full(nse, s, idt) for s in out_shape]
    stacked = [
        (jnp.zeros(nse, idt) if col is None else col.astype(idt)) for col in cols
    ]
    new_idx = jnp.stack([jnp.where(valid, s, p) for s, p in zip(stacked, pad)], axis=1) if out_shape \
        else jnp.zeros((nse, 0), idt)
    if is_concrete(valid):
        keep = np.nonzero(np.asarray(valid))[0]
        if not out_shape:
            keep = keep[:1] if keep.size else keep
        new_idx = new_idx[keep]
        data = data[keep]
    elif not out_shape:
        # A scalar result under tracing: sum the (unique) matching entry.
        c = c._canonical()
        data = jnp.sum(jnp.where(valid, c.data, jnp.zeros((), c.dtype)), dtype=c.dtype)[None] if c.dtype != jnp.bool_ else \
            jnp.any(valid & c.data)[None]
        has = jnp.any(valid)
        data = jnp.where(has, data, jnp.asarray(c.fill_value, c.dtype))
        new_idx = jnp.zeros((1, 0), idt)
        return BCOOArray._from_buffers(data, new_idx, (), n_batch=0, n_dense=0, fill_value=c.fill_value,
                                       indices_sorted=True, unique_indices=True)
    return BCOOArray._from_buffers(data, new_idx, out_shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=c.indices_sorted and all(
                                       not isinstance(k, slice) or (k.step or 1) > 0 for k in key),
                                   unique_indices=c.unique_indices)


def _basic_host(c: BCOOArray, key) -> BCOOArray | None:
    """``_basic`` on the host for concrete CPU buffers of an all-sparse ``c``: NumPy, no compilation per shape.

    The same entries, order and flags as the traced code in ``_basic``;
    None when the buffers are traced or not on the CPU.
    """
    got = c._host_buffers() if host_enabled() else None
    if got is None:
        return None
    data, idx = got
    shape = c.shape
    valid = valid_rows(idx, shape) if c.ndim else np.ones(idx.shape[0], bool)
    new_cols = {}
    ax = 0
    for k in key:
        if k is None:
            continue
        n = shape[ax]
        col = idx[:, ax].astype(np.int64)
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            off = col - start
            inside = ((off >= 0) & (col < stop)) if step > 0 else ((off <= 0) & (col > stop))
            valid &= inside & (off % step == 0)
            new_cols[ax] = (off // step, len(range(start, stop, step)))
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
            valid &= col == i % n
        ax += 1
    out_shape, cols = _basic_output(key, new_cols)
    keep = np.nonzero(valid)[0]
    if not out_shape:
        keep = keep[:1]
    new_idx = host.aligned_empty((keep.size, len(out_shape)), index_dtype_for(out_shape))
    for j, col in enumerate(cols):
        new_idx[:, j] = 0 if col is None else col[keep]
    return BCOOArray._from_buffers(data[keep], new_idx,
                                   out_shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                   indices_sorted=c.indices_sorted and all(
                                       not isinstance(k, slice) or (k.step or 1) > 0 for k in key),
                                   unique_indices=c.unique_indices)


def _lookup(c: BCOOArray, coords):
    """Values of canonical all-sparse ``c`` at integer coordinates (a list of equal-shape arrays)."""
    idt = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    if prod(c.shape) >= np.iinfo(np.dtype(idt)).max:
        raise IndexError("pointwise indexing of an array with more than 2**63 elements is not supported")
    return _lookup_op(c, list(coords))


#: The pointwise lookup: a sorted linear key and a binary search (NumPy on the host, one program for XLA).
_lookup_op = Operation("lookup", operands=lambda c, coords: (c, coords))


@_lookup_op.host
def _lookup_host(c: BCOOArray, coords):
    # ``lookup_np``: a binary search of the queries' row-major positions among the canonical pattern's
    data, indices = c._host_buffers()
    qshape = np.shape(coords[0]) if coords else ()
    query = np.stack([np.asarray(a, np.int64).reshape(-1) for a in coords], axis=1) if coords \
        else np.zeros((1, 0), np.int64)
    return lookup_np(data, indices, query, c.shape, c.fill_value).reshape(qshape)


@_lookup_op.xla
def _lookup_xla(c: BCOOArray, coords):
    return _lookup_values(c.data, c.indices, tuple(coords), np.asarray(c.fill_value, c.dtype), tuple(c.shape))


@partial(jax.jit, static_argnames=("shape",))
def _lookup_values(data, indices, coords, fill, shape):
    """``_lookup`` as one compiled program (eagerly too): a sorted linear key and a binary search."""
    idt = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32

    def lin(cols):
        key = jnp.zeros(cols[0].shape, idt)
        for col, s in zip(cols, shape):
            key = key * s + col.astype(idt)
        return key
    valid = jnp.all(indices < jnp.asarray(shape, indices.dtype), axis=1)
    keys = jnp.where(valid, lin([indices[:, k] for k in range(len(shape))]), jnp.iinfo(idt).max)
    order = jnp.argsort(keys)
    skeys = keys[order]
    q = lin(coords)
    pos = jnp.searchsorted(skeys, q)
    posc = jnp.clip(pos, 0, max(skeys.shape[0] - 1, 0))
    found = (skeys[posc] == q) if skeys.shape[0] else jnp.zeros(q.shape, bool)
    vals = data[order][posc] if skeys.shape[0] else jnp.zeros(q.shape, data.dtype)
    return jnp.where(found, vals, fill)


def _pointwise(x: BCOOArray, key) -> BCOOArray:
    arrs = []
    for ax, k in enumerate(key):
        a = _as_dense_key(k)
        n = x.shape[ax]
        if is_concrete(a):
            # Concrete keys are checked and wrapped on the host (no XLA program per key shape).
            a = np.asarray(a).astype(np.int64, copy=False)  # (a + n must not overflow a small key dtype)
            if a.size and (a.min() < -n or a.max() >= n):
                bad = a.min() if a.min() < -n else a.max()
                raise IndexError(f"index {int(bad)} is out of bounds for axis {ax} with size {n}")
            arrs.append(np.where(a < 0, a + n, a))
        else:
            arrs.append(jnp.where(a < 0, a + n, a))
    arrs = np.broadcast_arrays(*arrs) if all(isinstance(a, np.ndarray) for a in arrs) else jnp.broadcast_arrays(*arrs)
    c = update_layout(x, 0, 0)._canonical()
    return dense_layout(_lookup(c, arrs))


def _mask_index(x: BCOOArray, key) -> BCOOArray:
    pos = [i for i, k in enumerate(key) if _is_bool_array(k) and not isinstance(k, bool)][0]
    mask = _as_dense_key(key[pos])
    if is_tracer(mask):
        raise ValueError(
            "boolean-mask indexing under jax.jit has a data-dependent shape; use "
            "bcoo_array.where(mask, x, fill) to keep the shape, or index outside jit"
        )
    m = np.asarray(mask)
    start = sum(1 for k in key[:pos] if k is not None)
    if m.ndim == 0:
        # A 0-d mask adds a dimension of size 1 (True) or 0 (False), as in NumPy.

        sel = slice(None) if bool(m) else slice(0, 0)
        return getitem(expand_dims(x, axis=start), key[:pos] + (sel,) + key[pos + 1:])
    dims = x.shape[start:start + m.ndim]
    if m.ndim > len(dims) or any(ms not in (xs, 0) for ms, xs in zip(m.shape, dims)):
        raise IndexError(f"boolean index of shape {m.shape} does not match the indexed dimensions {dims}")
    if m.shape != dims or (m.ndim > 1 and all(isinstance(k, slice) and k == slice(None) for k in key[pos + 1:])
                           and all(isinstance(k, slice) and k == slice(None) for k in key[:pos])):
        # The masked dimensions merge into one and the True positions are taken
        # along it (row-major, as NumPy orders them); a zero-size mask selects nothing.

        flat = np.flatnonzero(m) if m.shape == dims else np.zeros(0, np.int64)
        merged = reshape(x, x.shape[:start] + (int(np.prod(dims)),) + x.shape[start + m.ndim:])
        out = take(merged, flat.astype(np.int32 if flat.size < 2**31 else np.int64), axis=start)
        rest = key[pos + 1:]
        return out if not rest else getitem(out, (slice(None),) * (start + 1) + rest)
    nz = np.nonzero(m)
    new_key = key[:pos] + tuple(nz) + key[pos + 1:]
    if all(_is_int_array(k) for k in new_key) and len(new_key) == x.ndim:
        return _pointwise(x, new_key)
    if m.ndim == 1:
        return getitem(x, new_key)
    raise IndexError("a multi-dimensional boolean mask must cover all indexed dimensions with no slice after it")


def _refuse_traced_key(key) -> None:
    """Item assignment needs concrete positions: the stored pattern (and its size) depends on them."""
    parts = key if isinstance(key, tuple) else (key,)
    for k in parts:
        items = (k.start, k.stop, k.step) if isinstance(k, slice) else \
            (k.data, k.indices) if isinstance(k, BCOOArray) else tuple(k) if isinstance(k, list) else (k,)
        if any(is_tracer(i) for i in items):
            raise TypeError(
                "item assignment A[key] = value with a traced key (an index computed under jax.jit, vmap or "
                "grad): which entries are stored depends on the positions, so they must be concrete. Pass the "
                "positions as static arguments (jax.jit(f, static_argnums=...)) or as NumPy arrays closed over, "
                "assign outside jax.jit, or write the values with bcoo_array.where(mask, value, A)")


def setitem(x: BCOOArray, key, value) -> BCOOArray:
    """Return ``x`` with the positions selected by ``key`` set to ``value``.

    ``key`` may hold integers, slices, ``...``, ``None``, integer arrays
    (or lists) and a boolean mask, combined as NumPy's advanced indexing
    combines them (``A[idx, :] = v``, ``A[:, idx] = v``, ``A[mask, 1:3] =
    v``: the broadcast arrays' dimensions first when a slice separates
    them, else in place); the selected positions must be concrete.
    ``value`` broadcasts to the selection and is cast to ``x.dtype``; where
    a position is selected twice the last write wins, as in NumPy.

    Raises
    ------
    IndexError
        For out-of-range keys.
    TypeError
        If ``value`` would need a lossy cast of kind (float into int, ...).
    """
    _refuse_traced_key(key)
    if isinstance(value, PY_SCALARS):
        val = np.asarray(value, x.dtype)
    else:
        val = value._dense() if isinstance(value, BCOOArray) else value
        val = val if isinstance(val, np.ndarray) or is_tracer(val) else jnp.asarray(val)
        if np.dtype(val.dtype) != x.dtype:
            if result_type(val.dtype, x.dtype) != x.dtype:
                raise TypeError(f"cannot assign values of dtype {val.dtype} into an array of dtype {x.dtype}")
            val = val.astype(x.dtype)
    host_scalar = None if is_tracer(val) else np.asarray(val)
    if host_scalar is not None and host_scalar.size == 1 and same_value_np(host_scalar.reshape(()), x.fill_value):
        # Assigning the fill value removes the selected entries (``A[rows, :] = 0``), by a test per stored
        # entry when the selection is a product of per-axis selections; it never stores the fill value.
        sets = _outer_selection(x.shape, key)
        if sets is not None:
            return _remove_entries(update_layout(x, 0, 0)._canonical(), sets)
    coords = _selected_coords(x.shape, key, x.dtype)
    if coords is None:  # a False 0-d mask selects nothing
        return x
    sel_shape = coords[0].shape if coords else ()
    # A 0-d True mask adds a dimension of size 1 to the selection, as NumPy's x[True] (shape (1, ...)): the
    # value broadcasts against that shape, then drops it.
    value_shape = _with_mask_axis(key, x.ndim, sel_shape)
    # A concrete value is shaped on the host (NumPy), with no XLA program per shape.
    host_val = None if is_tracer(val) else np.asarray(val)
    val = np.broadcast_to(host_val, value_shape).reshape(-1) if host_val is not None else \
        jnp.broadcast_to(val, value_shape).reshape(-1)
    flat = [np.asarray(cc).reshape(-1) for cc in coords]
    n = flat[0].size if flat else 1
    idt = index_dtype_for(x.shape)
    new_idx = np.stack(flat, axis=1).astype(idt) if flat else np.zeros((n, 0), idt)
    # Later duplicates win, as in NumPy: keep the last write of each position.
    if n > 1:
        keep = _last_writes(new_idx, x.shape)
        if keep is not None:
            new_idx = new_idx[keep]
            val = val[keep] if host_val is not None else val[jnp.asarray(keep)]
    c = update_layout(x, 0, 0)._canonical()
    return _assign_entries(c, new_idx, val)


#: ``x[...] = v`` once the positions are known: ``c`` canonical and all-sparse, ``new_idx`` ``(n, ndim)`` distinct
#: NumPy coordinates, ``val`` ``(n,)`` values (NumPy, or traced).
_assign_entries = Operation("setitem", operands=lambda c, new_idx, val: (c, val))


@_assign_entries.host
def _assign_entries_host(c: BCOOArray, new_idx: np.ndarray, val) -> BCOOArray:
    dc, ic = c._host_buffers()
    plan = union_np(ic, new_idx.astype(ic.dtype), c.shape)
    if plan is None:
        return NotImplemented
    out_idx, pos_a, pos_b = plan
    fill = c.fill_value
    data = np.where(pos_b >= 0, take_or_fill_np(np.asarray(val, c.dtype), pos_b, fill),
                    take_or_fill_np(dc, pos_a, fill))
    written_fill = (pos_b >= 0) & same_value_host(data, fill)
    if written_fill.any():  # an assigned fill value is not stored
        keep = ~written_fill
        data, out_idx = data[keep], np.compress(keep, out_idx, axis=0)
    return BCOOArray._from_buffers(data, out_idx, c.shape, n_batch=0, n_dense=0, fill_value=fill,
                                   indices_sorted=True, unique_indices=True)


@_assign_entries.xla
def _assign_entries_xla(c: BCOOArray, new_idx: np.ndarray, val) -> BCOOArray:
    out_idx, pos_a, pos_b = union(c.indices[None], host.adopt(new_idx.astype(np.dtype(c.indices.dtype))[None]), c.shape)
    data, out_idx = _merge_set(c.data, val, out_idx, pos_a, pos_b, np.asarray(c.fill_value, c.dtype),
                               tuple(c.shape))
    # An assigned fill value becomes padding (a static nse cannot shrink), so the entries are no longer sorted.
    return BCOOArray._from_buffers(data, out_idx, c.shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                   indices_sorted=False, unique_indices=True)


@partial(jax.jit, static_argnames=("shape",))
def _merge_set(data, val, out_idx, pos_a, pos_b, fill, shape):
    """The values of a union whose second operand's values win (``setitem``), as one compiled program;
    positions assigned the fill value become padding."""
    old = take_or_fill(data[None], pos_a, fill)
    new = take_or_fill(val[None], pos_b, fill)
    data = jnp.where(pos_b >= 0, new, old)[0]
    out_idx = out_idx[0]
    gone = (pos_b[0] >= 0) & same_value(data, fill)
    return data, jnp.where(gone[:, None], jnp.asarray(shape, out_idx.dtype), out_idx)


def _last_writes(new_idx: np.ndarray, shape) -> np.ndarray | None:
    """Sorted positions of the last write of each distinct coordinate row of ``new_idx`` (None: all distinct).

    One linear key per row (``np.unique(axis=0)`` is several times slower);
    rows whose key would overflow int64 take ``np.unique(axis=0)``.
    """
    n = new_idx.shape[0]
    if shape and prod(shape) < 2**62:
        keys = np.ravel_multi_index(tuple(new_idx[:, j].astype(np.int64) for j in range(len(shape))), shape)
        if keys.size < 2 or bool(np.all(keys[1:] > keys[:-1])):
            return None
        _, last = np.unique(keys[::-1], return_index=True)
    else:
        _, last = np.unique(new_idx[::-1], axis=0, return_index=True)
    return np.sort(n - 1 - last)


def _outer_selection(shape, key):
    """The selection of ``key`` as one index array per axis (a product of per-axis selections), or None.

    Keys of integers, slices, ``...``, ``None``, at most one 1-D integer array
    or 1-D boolean mask (concrete) select the product of their per-axis
    positions (duplicates allowed); other keys (several arrays, which pair
    up pointwise; n-D masks) give None. Out-of-range integers raise as
    ``setitem`` does.
    """
    key = _expand(key, len(shape))
    arrays = [k for k in key if _is_int_array(k) or (_is_bool_array(k) and not isinstance(k, bool))]
    if len(arrays) > 1 or any(isinstance(k, bool) for k in key):
        return None
    if any(_is_bool_array(k) and np.ndim(_as_dense_key(k)) != 1 for k in arrays):
        return None  # a 0-d or n-D mask does not select along one axis: the general path
    sets = []
    ax = 0
    for k in key:
        if k is None:
            continue
        n = shape[ax]
        if isinstance(k, slice):
            sets.append(None if k == slice(None) else np.arange(n)[k])
        elif _is_int_array(k) or _is_bool_array(k):
            a = _as_dense_key(k)
            if is_tracer(a):
                return None
            a = np.asarray(a)
            if a.dtype == np.bool_:
                if a.shape != (n,):
                    return None
                sets.append(np.flatnonzero(a))
            else:
                a = a.astype(np.int64, copy=False).reshape(-1)
                if a.size and (a.min() < -n or a.max() >= n):
                    raise IndexError(f"index out of bounds for axis {ax} with size {n}")
                sets.append(np.where(a < 0, a + n, a))
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
            sets.append(np.asarray([i % n]))
        ax += 1
    return sets


#: ``x[selection] = x.fill_value``: the entries of canonical all-sparse ``c`` inside a product of per-axis
#: selections (``sets``: an index array per axis, None for a whole axis) are removed.
_remove_entries = Operation("remove_entries", operands=lambda c, sets: (c,))


def _selected_entries(m, idx, shape, sets):
    """Whether each entry of ``idx`` lies in the product ``sets`` (``m``: NumPy or jax.numpy)."""
    inside = None
    for ax, sel in enumerate(sets):
        if sel is None:
            continue
        col = idx[:, ax]
        if shape[ax] <= 4 * (idx.shape[0] + sel.size) + 65536:  # a mask of the axis, read per entry
            mask = np.zeros(shape[ax] + 1, bool)  # (+1: padding reads False)
            mask[sel] = True
            hit = m.asarray(mask)[m.minimum(col, shape[ax])]
        else:  # a long axis: membership by binary search
            srt = host.unique_ints(sel)
            pos = m.minimum(m.searchsorted(m.asarray(srt), col), srt.size - 1)
            hit = m.asarray(srt)[pos] == col
        inside = hit if inside is None else inside & hit
    return inside


@_remove_entries.host
def _remove_entries_host(c: BCOOArray, sets) -> BCOOArray:
    data, idx = c._host_buffers()
    inside = _selected_entries(np, idx, c.shape, sets)
    if inside is None:  # the whole array
        inside = np.ones(idx.shape[0], bool)
    keep = ~inside
    return BCOOArray._from_buffers(data[keep], np.compress(keep, idx, axis=0), c.shape, n_batch=0, n_dense=0,
                                   fill_value=c.fill_value, indices_sorted=True, unique_indices=True)


@_remove_entries.xla
def _remove_entries_xla(c: BCOOArray, sets) -> BCOOArray:
    idx = c.indices
    inside = _selected_entries(jnp, idx, c.shape, sets)
    if inside is None:
        inside = jnp.ones(idx.shape[0], bool)
    idx = jnp.where(inside[:, None], jnp.asarray(c.shape, idx.dtype), idx)  # removed: padding
    return BCOOArray._from_buffers(c.data, idx, c.shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                   indices_sorted=False, unique_indices=True)


def _mixed_coords(shape, key):
    """Coordinates selected by a key mixing integer arrays with slices (NumPy's advanced indexing).

    Each axis's coordinate is read through the key from a zero-stride view
    of ``arange(shape[d])`` broadcast to ``shape``, so NumPy itself places
    the broadcast array dimensions (first when the arrays are separated by
    a slice, else in place) and only the selection is allocated, never
    ``shape``.
    """
    nkey = tuple(np.asarray(_as_dense_key(k)) if _is_int_array(k) else k for k in key)
    ndim = len(shape)
    coords = []
    for d, n in enumerate(shape):
        axis = np.arange(n).reshape((n,) + (1,) * (ndim - 1 - d))
        coords.append(np.broadcast_to(axis, shape)[nkey])
    return coords


def _with_mask_axis(key, ndim: int, sel_shape: tuple) -> tuple:
    """``sel_shape`` with the size-1 dimension a 0-d True mask in ``key`` adds (NumPy's ``x[True]``)."""
    key = _expand(key, ndim)
    for i, k in enumerate(key):
        if _is_bool_array(k) and not isinstance(k, bool) and np.ndim(_as_dense_key(k)) == 0:
            before = sum(1 for j in key[:i] if j is None or isinstance(j, slice))
            return sel_shape[:before] + (1,) + sel_shape[before:]
    return sel_shape


def _check_selection(shape, n_selected: int, dtype) -> None:
    """The guard before writing ``n_selected`` positions: their coordinates and values are allocated."""
    check_entries("__setitem__", n_selected, dtype, np.int64, len(shape),
                  what="every selected position, each stored with its value (assigning a non-fill value to a slice "
                  "fills it)", alternative="assign to smaller pieces, or build the array densely")


def _selected_coords(shape, key, dtype=np.float64):
    """Coordinate arrays (NumPy, broadcast) of the positions a key selects (None: nothing).

    Raises ``MemoryError`` (``check_entries``) before allocating a selection past the densification limit.
    """
    key = _expand(key, len(shape))
    while any(_is_bool_array(k) and not isinstance(k, bool) for k in key):  # each mask in turn (A[m0, m1])
        pos = [i for i, k in enumerate(key) if _is_bool_array(k) and not isinstance(k, bool)][0]
        m = _as_dense_key(key[pos])
        if is_tracer(m):
            raise ValueError("boolean-mask assignment under jax.jit is not supported; use bcoo_array.where")
        if np.ndim(m) == 0:
            # A 0-d mask selects everything the rest of the key selects (True) or nothing (False).
            if not bool(np.asarray(m)):
                return None
            return _selected_coords(shape, key[:pos] + key[pos + 1:])
        key = key[:pos] + tuple(np.nonzero(np.asarray(m))) + key[pos + 1:]
    per_axis = []
    ax = 0
    arrays_seen = False
    for k in key:
        if k is None:
            continue
        n = shape[ax]
        if isinstance(k, slice):
            per_axis.append(("s", np.arange(n)[k]))
        elif _is_int_array(k):
            a = np.asarray(_as_dense_key(k)).astype(np.int64, copy=False)  # (a + n must not overflow)
            if a.size and (a.min() < -n or a.max() >= n):
                raise IndexError(f"index out of bounds for axis {ax} with size {n}")
            per_axis.append(("a", np.where(a < 0, a + n, a)))
            arrays_seen = True
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
            per_axis.append(("i", np.asarray(i % n)))
        ax += 1
    try:
        arrays_shape = np.broadcast_shapes(*[v.shape for t, v in per_axis if t == "a"]) if arrays_seen else ()
    except ValueError as exc:
        shapes = " ".join(str(v.shape) for t, v in per_axis if t == "a")
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}") \
            from exc
    _check_selection(shape, prod(arrays_shape) * prod(v.size for t, v in per_axis if t == "s"), dtype)
    if arrays_seen:
        if any(t == "s" for t, _ in per_axis):
            return _mixed_coords(shape, key)
        return list(np.broadcast_arrays(*[v for _, v in per_axis]))
    grids = np.meshgrid(*[np.atleast_1d(v) for _, v in per_axis], indexing="ij") if per_axis else []
    # Integer keys select without keeping a dimension (the value broadcasts to the rest).
    sel_shape = tuple(v.size for t, v in per_axis if t != "i")
    return [g.reshape(sel_shape) for g in grids]


__all__ = ["take", "take_along_axis"]
