"""Searching functions of the array API standard: ``argmax``, ``argmin``,
``count_nonzero``, ``nonzero``, ``searchsorted``, ``where``.

``count_nonzero`` and ``where`` keep sparsity (fill-value rule); ``argmax``
and ``argmin`` search the stored entries plus the fill value and return
dense-layout index arrays; ``searchsorted`` counts the stored values of a
sparse ``x1`` plus its fill block, and keeps a sparse ``x2`` sparse (fill
value: the insertion point of its fill value); ``nonzero`` has a
data-dependent shape and works eagerly only. What must be densified passes
the densification guard (``._limits.check_dense``) first.
Spec: https://data-apis.org/array-api/2025.12/API_specification/searching_functions.html
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._data_type_functions import astype
from ._engine import Operation, host_max_entries, operand_entries
from ._elementwise_functions import not_equal
from ._fill import eval_fill
from ._kernels.coalesce import flatten_batch, sparse_sizes, unflatten_batch
from ._kernels.reduce import arg_extreme_rows
from ._kernels.sorting import count_before
from ._kernels.union import lookup, lookup_np, take_or_fill, take_or_fill_np, union, union_np, valid_prefix
from ._shapes import broadcast_shape, is_concrete, normalize_axis, prod, valid_rows
from ._limits import check_dense
from ._manipulation_functions import broadcast_to, permute_dims, reshape
from ._operands import (
    PY_SCALARS,
    as_operand,
    as_sparse,
    binary_operands,
    check_category,
    scalar_dtype,
    scalar_to_array,
)
from ._relayout import (
    dense_layout,
    dense_values,
    fill_only,
    is_dense_layout,
    to_coo,
    update_layout,
)
from ._routing import routed
from ._statistical_functions import sum as _sum


def _dense(x):
    return x.todense() if isinstance(x, BCOOArray) else jnp.asarray(x)


def _arg_extreme(x, axis, keepdims, name, fn):
    x = as_sparse(x)
    check_category(x.dtype, "real numeric", name)
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{name}() of an empty array has no result; pass a non-empty array")
        ax = None
        m2 = reshape(x, (1, x.size))
        out_shape = (1,) * x.ndim if keepdims else ()
    else:
        ax = normalize_axis(axis, x.ndim)
        if x.shape[ax] == 0:
            raise ValueError(f"{name}() along axis {ax} of size 0 has no result; pass a non-empty axis")
        rest = tuple(s for i, s in enumerate(x.shape) if i != ax)
        moved = permute_dims(x, tuple(i for i in range(x.ndim) if i != ax) + (ax,))
        m2 = reshape(moved, (prod(rest), x.shape[ax]))
        out_shape = tuple(1 if i == ax else s for i, s in enumerate(x.shape)) if keepdims else rest
    if is_dense_layout(x):
        dense = x._dense()
        if isinstance(dense, np.ndarray):  # the host engine's values: NumPy's own argmax / argmin
            fn = np.argmax if fn is jnp.argmax else np.argmin
        out = fn(dense.reshape(-1)) if ax is None else fn(dense, axis=ax)
        return dense_layout(out.astype(_dtypes.default_int()).reshape(out_shape))
    # Sparse search: O(nse + rows) memory, never the dense array (see _kernels.reduce.arg_extreme_rows).
    c = to_coo(m2)._canonical()
    data, indices = c._buffers()
    pos = arg_extreme_rows(data, indices[:, 0], indices[:, 1], m2.shape[0], m2.shape[1], c.fill_value,
                           bool(np.isnan(c.fill_value)) if c.dtype.kind == "f" else False, fn is jnp.argmax)
    return dense_layout(pos.astype(_dtypes.default_int()).reshape(out_shape))


_ARG_DOC = """Indices of the {what} values along ``axis`` (array API ``{name}``).

Parameters
----------
x : BCOOArray or array
    Input of a real numeric dtype.
axis : int, optional
    Axis to search; None searches the flattened array (row-major).
keepdims : bool
    Keep the searched axis as a size-1 dimension.

Returns
-------
BCOOArray
    Dense layout, the default index dtype (int64 with x64, else int32): the
    first occurrence of the {what} value (a NaN counts as the {what}, as in
    NumPy). Unstored entries take part with the value ``x.fill_value``. A
    sparse ``x`` is searched over its stored entries plus the fill value
    (``._kernels.reduce.arg_extreme_rows``: memory O(nse + number of
    results), never ``x.size``); a dense-layout ``x`` with
    ``jax.numpy.{name}``.

Raises
------
TypeError
    If ``x`` is not real numeric.
ValueError
    If the searched axis (or the array, for ``axis=None``) is empty.
IndexError
    If ``axis`` is out of range.
"""


@routed
def argmax(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:
    return _arg_extreme(x, axis, keepdims, "argmax", jnp.argmax)


@routed
def argmin(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:
    return _arg_extreme(x, axis, keepdims, "argmin", jnp.argmin)


argmax.__doc__ = _ARG_DOC.format(what="largest", name="argmax")
argmin.__doc__ = _ARG_DOC.format(what="smallest", name="argmin")


@routed
def count_nonzero(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:
    """Count the non-zero elements over ``axis`` (array API ``count_nonzero``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any dtype; complex elements count when either part is
        non-zero, booleans when True.
    axis : int, tuple of int or None
        Axes to count over; None counts over all.
    keepdims : bool
        Keep counted axes as size-1 dimensions.

    Returns
    -------
    BCOOArray
        The default index dtype. Stays sparse over the kept sparse
        dimensions: computed as ``sum(x != 0)``, unstored entries counting
        as ``x.fill_value != 0``.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    OverflowError
        If a count may not fit the default index dtype: a non-zero fill
        value counted over more elements per result than it holds (2**31 - 1
        with JAX's x64 mode off, int32; 2**63 - 1 with it on).
    """
    x = as_sparse(x)
    _check_count_fits(x, axis, "count_nonzero()")
    nz = x if x.dtype == np.bool_ else not_equal(x, 0)
    return _sum(astype(nz, _dtypes.default_int()), axis=axis, keepdims=keepdims)


def _check_count_fits(x, axis, what: str) -> None:
    """Refuse a count of ``x``'s elements over ``axis`` that may pass the default index dtype's range (int32
    with x64 off) instead of wrapping around: only a non-zero fill value counts unstored elements, so with a
    zero one a count is at most the stored entries."""
    dt = _dtypes.default_int()
    raw = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    if any(not isinstance(a, int) or not -x.ndim <= a < x.ndim for a in raw):
        return  # (the reduction names the bad axis)
    extent = 1
    for a in {a % x.ndim for a in raw}:
        extent *= x.shape[a]
    if extent <= np.iinfo(dt).max:
        return
    fill = x.fill_value
    if isinstance(fill, (bool, int, float, complex, np.generic)) and fill == 0:
        return
    fix = _dtypes.X64_FIX if not _dtypes.x64_enabled() else "count over fewer axes, or subtract the fill value first"
    raise OverflowError(f"{what} counts up to {extent} elements per result (fill value {fill}), more than the "
                        f"default index dtype {np.dtype(dt)} holds; {fix}")


@routed
def nonzero(x, /) -> tuple[BCOOArray, ...]:
    """Indices of the non-zero elements, one array per dimension (array API ``nonzero``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of at least one dimension.

    Returns
    -------
    tuple of BCOOArray
        ``x.ndim`` 1-D arrays of the default index dtype (dense layout), in
        row-major (C) order. With a zero fill value only the stored entries
        are inspected; with a non-zero fill value every unstored position is
        non-zero, so the answer has about ``x.size`` entries and is computed
        from ``x.todense()``, after the densification guard.

    Raises
    ------
    ValueError
        If ``x`` is 0-d.
    jax.errors.ConcretizationTypeError
        Under ``jax.jit``: the output length depends on the values. Call it
        outside ``jit``, or use ``jax.numpy.nonzero(x.todense(), size=...)``
        with a static upper bound.
    MemoryError
        For a sparse ``x`` with a non-zero fill value, if the dense input and
        the index arrays would take more than
        [`bcoo_array.get_max_dense_bytes`][].
    """
    x = as_sparse(x)
    if x.ndim == 0:
        raise ValueError("nonzero() needs an array of at least one dimension; use x != 0 or bool(x) for a 0-d array")
    if not x._concrete():
        raise jax.errors.ConcretizationTypeError(
            x.data, "nonzero(): the number of non-zero entries fixes the output shape, so it cannot run under "
            "jax.jit; call it eagerly or use jax.numpy.nonzero(x.todense(), size=N) with a static bound")
    idt = _dtypes.default_int()
    if bool(x.fill_value != np.zeros((), x.dtype)):
        if not is_dense_layout(x):
            check_dense("nonzero", x.shape, x.dtype, *(idt,) * x.ndim,
                        what="the densified input and one index array per dimension (the fill value is "
                        "non-zero, so every unstored position is in the answer)",
                        alternative="jax.numpy.nonzero(x.todense())")
        dense = np.asarray(x.todense())
        return tuple(dense_layout(jnp.asarray(c.astype(idt))) for c in np.nonzero(dense))
    c = to_coo(x)._canonical()
    data, idx = (np.asarray(b) for b in c._buffers())
    valid = valid_rows(idx, c.shape)
    idx = idx.astype(np.int64)
    keep = valid & (data != 0)
    sel = np.compress(keep, idx, axis=0)  # canonical: already in row-major order
    return tuple(dense_layout(sel[:, k].astype(idt)) for k in range(x.ndim))


def _is_sparse(x) -> bool:
    """A BCOOArray of at least one dimension that does not store every entry (not dense layout)."""
    return isinstance(x, BCOOArray) and x.ndim > 0 and not is_dense_layout(x)


@routed
def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> BCOOArray:
    """Insertion points of ``x2`` into the sorted 1-D ``x1`` (array API ``searchsorted``).

    Parameters
    ----------
    x1 : BCOOArray or array
        1-D, real numeric, sorted ascending (or sorted by ``sorter``).
    x2 : BCOOArray, array or Python scalar
        Values to insert; a Python scalar takes ``x1``'s dtype where the
        standard's scalar rules allow it.
    side : {'left', 'right'}
        Which index an exact match gets (``x1[i-1] < v <= x1[i]`` for left).
    sorter : array of int, optional
        Indices that sort ``x1`` ascending.

    Returns
    -------
    BCOOArray
        ``x2``'s shape, the default index dtype. NaN sorts last, consistent
        with [`sort`][bcoo_array.sort]. For a sparse ``x1`` the answer is counted from its
        stored values and its block of unstored (fill) values: the number
        of elements before each value (``side='left'``) or not after it
        (``'right'``), which is the insertion point because ``x1`` (or
        ``x1[sorter]``) is sorted; memory O(nse + x2's stored size), never
        ``x1.size``. A sparse ``x2`` gives a sparse result on ``x2``'s
        stored positions, whose fill value is the insertion point of
        ``x2``'s fill value (so ``x1`` must be concrete; under ``jax.jit``
        with a traced ``x1`` the result is dense layout, checked by the
        densification guard). A dense ``x1`` uses
        ``jax.numpy.searchsorted``.

    Raises
    ------
    ValueError
        If ``x1`` is not 1-D, ``side`` is invalid, or ``sorter`` has the
        wrong shape.
    TypeError
        If a dtype is not real numeric or ``sorter`` is not integer.
    MemoryError
        If a sparse ``x2`` must be densified (traced ``x1`` under ``jit``)
        and would take more than [`bcoo_array.get_max_dense_bytes`][].
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side={side!r} must be 'left' or 'right'")
    a = as_operand(x1, "x1")
    if a.ndim != 1:
        raise ValueError(f"searchsorted(): x1 must be 1-D, got shape {a.shape}")
    check_category(np.dtype(a.dtype), "real numeric", "searchsorted", "x1")
    if isinstance(x2, PY_SCALARS):
        b = scalar_to_array(x2, scalar_dtype(x2, np.dtype(a.dtype)))
    else:
        b = as_operand(x2, "x2")
    check_category(np.dtype(b.dtype), "real numeric", "searchsorted", "x2")
    dt = _dtypes.result_type(np.dtype(a.dtype), np.dtype(b.dtype))
    idt = _dtypes.default_int()
    s = None
    sparse_a = _is_sparse(a)
    if sorter is not None:
        s = dense_values(as_operand(sorter, "sorter"))
        if tuple(s.shape) != tuple(a.shape):
            raise ValueError(f"searchsorted(): sorter has shape {tuple(s.shape)}, x1 has {tuple(a.shape)}")
        if not jnp.issubdtype(s.dtype, jnp.integer):
            raise TypeError(f"searchsorted(): sorter must have an integer dtype, got {s.dtype}")
        if sparse_a:
            s = None  # counting does not need the order
        else:
            s = s.todense() if isinstance(s, BCOOArray) else jnp.asarray(s)
    concrete = a._concrete() if isinstance(a, BCOOArray) else is_concrete(a)
    concrete = concrete and (s is None or is_concrete(s))
    # A concrete x1 (eager, or closed over under jit) stays concrete, so the result's fill value is static.
    with jax.ensure_compile_time_eval() if concrete else contextlib.nullcontext():
        if sparse_a:
            # Counting needs no order (the sorter is not read): sorted(x1) is x1[sorter] when that is sorted.
            c = to_coo(a)._canonical()
            stored = c.data.astype(dt)
            valid = c.indices[:, 0] < a.shape[0]
        else:
            da = dense_values(a)
            da = (da.todense() if isinstance(da, BCOOArray) else jnp.asarray(da)).astype(dt)
            if s is not None:
                da = da[s]
    if sparse_a:
        fill1 = np.asarray(a.fill_value).astype(dt)[()]
        length = a.shape[0]

        def fn(v):
            return count_before(stored, valid, length, fill1, v.astype(dt), side).astype(idt)
    else:
        def fn(v):
            return jnp.searchsorted(da, v.astype(dt), side=side).astype(idt)
    if _is_sparse(b) and concrete:
        src = b._canonical()
        with jax.ensure_compile_time_eval():
            fill = np.asarray(fn(jnp.asarray(b.fill_value))).astype(idt)[()]
        return src._replace(data=fn(src.data), fill_value=fill)
    if _is_sparse(b):
        check_dense("searchsorted", b.shape, b.dtype, idt, what="x2 densified (x1 is traced, so the result's fill "
                    "value is unknown) and the result", alternative="searchsorted(x1, x2.todense())")
    return dense_layout(fn(_dense(dense_values(b))).reshape(b.shape))


def _scalar_operand(v, dtype) -> BCOOArray:
    """A 0-d BCOOArray storing nothing, whose fill value is ``v``."""
    fill = np.asarray(v).astype(dtype)[()]
    return fill_only((), dtype, fill)


@routed
def where(condition, x1, x2, /) -> BCOOArray:
    """Elements of ``x1`` where ``condition`` is True, else of ``x2`` (array API ``where``).

    Parameters
    ----------
    condition : BCOOArray or array
        Boolean.
    x1, x2 : BCOOArray, array or Python scalar
        Values (at most one a Python scalar); promoted by the standard's
        rules (a scalar as in "mixing arrays with Python scalars").

    Returns
    -------
    BCOOArray
        The broadcast shape of the three operands and the promoted dtype.
        When every array operand is a BCOOArray (or 0-d), the result is
        sparse: stored entries on the union of the three patterns, fill value
        ``where(condition.fill_value, x1.fill_value, x2.fill_value)``
        (pydata-sparse's rule). A dense non-0-d operand gives dense layout.

    Raises
    ------
    TypeError
        If ``condition`` is not boolean or both values are Python scalars.
    ValueError
        If the shapes do not broadcast.
    MemoryError
        If a dense operand makes the result dense and sparse operands would
        be densified beyond [`bcoo_array.get_max_dense_bytes`][].
    """
    c = as_operand(condition, "condition")
    if np.dtype(c.dtype) != np.bool_:
        raise TypeError(f"where(): condition must have a boolean dtype, got {c.dtype}; compare it first (x != 0)")
    a, b, dt = binary_operands(x1, x2, "where")
    shape = broadcast_shape(tuple(c.shape), tuple(a.shape), tuple(b.shape), name="where")
    ops = [c, a, b]
    dense_op = any(not isinstance(o, BCOOArray) and o.ndim > 0 for o in ops)
    if dense_op or shape == () or 0 in shape:
        sparse_ops = [o for o in ops if _is_sparse(o)]
        if dense_op and sparse_ops:
            check_dense("where", shape, dt, *(o.dtype for o in sparse_ops),
                        what="the dense result and the densified sparse operands (another operand is dense)",
                        alternative="jax.numpy.where(...) on .todense() of each operand")
        return dense_layout(jnp.where(_dense(c), _dense(a), _dense(b)).astype(dt).reshape(shape))
    sp = []
    for o in ops:
        if not isinstance(o, BCOOArray):
            o = _scalar_operand(o, o.dtype) if is_concrete(o) else dense_layout(o)
        sp.append(broadcast_to(o, shape))
    n_batch = min(o.n_batch for o in sp)
    n_dense = min(o.n_dense for o in sp)
    sp = [update_layout(o, n_batch, n_dense)._canonical() for o in sp]
    return _where_sparse(sp, shape, n_batch, n_dense, dt)


def _where_merges_many(sp, *args) -> bool:
    """Whether ``where``'s union is large: the condition's pattern and the pattern of the operand its fill
    selects are both non-empty and hold more than ``host_max_entries()`` entries together. The other operand
    is only looked up (the host's galloping lookup beats XLA's: ``where(A > 0.5, A, 0.0)`` at 2 million
    entries 16 ms against 68 ms), so only the union's size takes the XLA engine's threaded merge."""
    c, a, b = sp
    n_c, n_s = operand_entries(c), operand_entries(a if c.fill_value else b)
    return n_c > 0 and n_s > 0 and n_c + n_s > host_max_entries()


#: ``where`` of three canonical sparse operands of one layout: stored entries on the union of the patterns.
_where_sparse = Operation("where", operands=lambda sp, *args: sp, large=_where_merges_many)


@_where_sparse.host
def _where_sparse_host(sp, shape, n_batch: int, n_dense: int, dt):
    # Where the condition stores nothing it is its fill value, which selects one operand everywhere there:
    # the result's pattern is the union of the condition's and that operand's. The other operand matters
    # only at the condition's stored entries, where it is looked up (``where(A > 0.5, A, 0.0)`` merges the
    # few entries above 0.5 with an empty pattern instead of A's whole pattern).
    if n_batch:
        return NotImplemented
    (dc, ic), (da, ia), (db, ib) = (o._host_buffers() for o in sp)
    fc, fa, fb = (o.fill_value for o in sp)
    sizes = sparse_sizes(shape, n_batch, n_dense)
    (ds, is_, fs), (do, io, fo) = ((da, ia, fa), (db, ib, fb)) if fc else ((db, ib, fb), (da, ia, fa))
    nc = valid_prefix(ic, sizes)
    if nc is not None and is_.shape[-2] == 0:
        # The operand the fill selects stores nothing (a scalar: ``where(A > 0.5, A, 0.0)``): the result's
        # pattern is the condition's, with no union to plan and no values to take for that side.
        idx = ic[:nc]
        vo = lookup_np(do, io.astype(ic.dtype, copy=False), idx, sizes, fo, query_sorted=True)
        vs = np.asarray(fs, ds.dtype)
        va, vb = (vs, vo) if fc else (vo, vs)
        fill = np.where(fc, fa, fb).astype(dt)[()]
        return BCOOArray._from_buffers(np.where(dc[:nc], va, vb).astype(dt, copy=False), idx, shape, n_batch=0,
                                       n_dense=n_dense, fill_value=fill, indices_sorted=True, unique_indices=True)
    plan = union_np(ic, is_.astype(ic.dtype, copy=False), sizes, canonical=True)
    if plan is None:
        return NotImplemented
    idx, pc, ps = plan
    vc = take_or_fill_np(dc, pc, fc)
    vs = take_or_fill_np(ds, ps, fs)
    vo = lookup_np(do, io.astype(ic.dtype, copy=False), idx, sizes, fo, query_sorted=True)
    va, vb = (vs, vo) if fc else (vo, vs)
    fill = np.where(fc, fa, fb).astype(dt)[()]
    return BCOOArray._from_buffers(np.where(vc, va, vb).astype(dt, copy=False), idx, shape, n_batch=0,
                                   n_dense=n_dense, fill_value=fill, indices_sorted=True, unique_indices=True)


@_where_sparse.xla
def _where_sparse_xla(sp, shape, n_batch: int, n_dense: int, dt):
    # The host twin's algorithm: the union of the condition's pattern with the operand its fill selects,
    # the other operand looked up at those entries.
    flat = [flatten_batch(o.data, o.indices, shape, n_batch) for o in sp]
    idt = flat[0][1].dtype
    sizes = sparse_sizes(shape, n_batch, n_dense)
    fc, fa, fb = (o.fill_value for o in sp)
    (dc, ic), (da, ia), (db, ib) = flat
    (ds, is_, fs), (do, io, fo) = ((da, ia, fa), (db, ib, fb)) if fc else ((db, ib, fb), (da, ia, fa))
    idx, pc, ps = union(ic, is_.astype(idt), sizes)
    idx = idx.astype(idt)
    vc = take_or_fill(dc, pc, fc)
    vs = take_or_fill(ds, ps, fs)
    vo = lookup(do, io.astype(idt), idx, sizes, fo)
    va, vb = (vs, vo) if fc else (vo, vs)
    data, indices = unflatten_batch(jnp.where(vc, va, vb).astype(dt), idx, shape, n_batch)
    fill = eval_fill(jnp.where, fc, fa, fb)
    return BCOOArray._from_buffers(data, indices, shape, n_batch=n_batch, n_dense=n_dense, fill_value=fill,
                                   indices_sorted=True, unique_indices=True)


__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]
