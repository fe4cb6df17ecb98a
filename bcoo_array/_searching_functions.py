"""Searching functions of the array API standard: ``argmax``, ``argmin``,
``count_nonzero``, ``nonzero``, ``searchsorted``, ``where``.

``count_nonzero`` and ``where`` keep sparsity (fill-value rule); ``argmax``,
``argmin`` and ``searchsorted`` return index arrays, which are inherently
dense, in dense layout; ``nonzero`` has a data-dependent shape and works
eagerly only.
Spec: https://data-apis.org/array-api/2025.12/API_specification/searching_functions.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._data_type_functions import astype
from ._elementwise_functions import not_equal
from ._fill import eval_fill
from ._kernels.coalesce import flatten_batch, sparse_sizes, unflatten_batch
from ._kernels.reduce import arg_extreme_rows
from ._kernels.union import take_or_fill, union
from ._layout import is_concrete, normalize_axis, prod
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
from ._relayout import dense_layout, is_dense_layout, to_coo, update_layout
from ._statistical_functions import sum as _sum
from ._routing import routed


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
        dense = x.todense()
        out = fn(dense.reshape(-1)) if ax is None else fn(dense, axis=ax)
        return dense_layout(out.astype(_dtypes.default_int()).reshape(out_shape))
    # Sparse search: O(nse + rows) memory, never the dense array (see _kernels.reduce.arg_extreme_rows).
    c = to_coo(m2)._canonical()
    pos = arg_extreme_rows(c.data, c.indices[:, 0], c.indices[:, 1], m2.shape[0], m2.shape[1], c.fill_value,
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
    NumPy). Unstored entries take part with the value ``x.fill_value``. The
    search runs on ``x.todense()`` (as ``jax.numpy.{name}``), so it needs
    memory for ``x.size`` entries.

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
    """
    x = as_sparse(x)
    nz = x if x.dtype == np.bool_ else not_equal(x, 0)
    return _sum(astype(nz, _dtypes.default_int()), axis=axis, keepdims=keepdims)


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
        from ``x.todense()``.

    Raises
    ------
    ValueError
        If ``x`` is 0-d.
    jax.errors.ConcretizationTypeError
        Under ``jax.jit``: the output length depends on the values. Call it
        outside ``jit``, or use ``jax.numpy.nonzero(x.todense(), size=...)``
        with a static upper bound.
    """
    x = as_sparse(x)
    if x.ndim == 0:
        raise ValueError("nonzero() needs an array of at least one dimension; use x != 0 or bool(x) for a 0-d array")
    if not is_concrete(x.data, x.indices):
        raise jax.errors.ConcretizationTypeError(
            x.data, "nonzero(): the number of non-zero entries fixes the output shape, so it cannot run under "
            "jax.jit; call it eagerly or use jax.numpy.nonzero(x.todense(), size=N) with a static bound")
    idt = _dtypes.default_int()
    if bool(x.fill_value != np.zeros((), x.dtype)):
        dense = np.asarray(x.todense())
        return tuple(dense_layout(jnp.asarray(c.astype(idt))) for c in np.nonzero(dense))
    c = to_coo(x)._canonical()
    idx = np.asarray(c.indices).astype(np.int64)
    data = np.asarray(c.data)
    valid = np.all(idx < np.asarray(c.shape, np.int64), axis=1)
    keep = valid & (data != 0)
    sel = idx[keep]
    order = np.lexsort(sel.T[::-1]) if sel.shape[0] else np.zeros(0, np.int64)
    sel = sel[order]
    return tuple(dense_layout(jnp.asarray(sel[:, k].astype(idt))) for k in range(x.ndim))


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
        ``x2``'s shape, the default index dtype, dense layout (computed with
        ``jax.numpy.searchsorted`` on the densified operands; NaN sorts
        last, consistent with [`sort`][bcoo_array.sort]).

    Raises
    ------
    ValueError
        If ``x1`` is not 1-D, ``side`` is invalid, or ``sorter`` has the
        wrong shape.
    TypeError
        If a dtype is not real numeric or ``sorter`` is not integer.
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
    da = _dense(a).astype(dt)
    db = _dense(b).astype(dt)
    if sorter is not None:
        s = _dense(as_operand(sorter, "sorter"))
        if s.shape != da.shape:
            raise ValueError(f"searchsorted(): sorter has shape {s.shape}, x1 has {da.shape}")
        if not jnp.issubdtype(s.dtype, jnp.integer):
            raise TypeError(f"searchsorted(): sorter must have an integer dtype, got {s.dtype}")
        da = da[s]
    out = jnp.searchsorted(da, db, side=side)
    return dense_layout(out.astype(_dtypes.default_int()))


def _scalar_operand(v, dtype) -> BCOOArray:
    """A 0-d BCOOArray storing nothing, whose fill value is ``v``."""
    fill = np.asarray(v).astype(dtype)[()]
    return BCOOArray._from_buffers(jnp.zeros((0,), dtype), jnp.zeros((0, 0), jnp.int32), (), n_batch=0, n_dense=0,
                                   fill_value=fill, indices_sorted=True, unique_indices=True)


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
    """
    c = as_operand(condition, "condition")
    if np.dtype(c.dtype) != np.bool_:
        raise TypeError(f"where(): condition must have a boolean dtype, got {c.dtype}; compare it first (x != 0)")
    a, b, dt = binary_operands(x1, x2, "where")
    shape = tuple(jnp.broadcast_shapes(tuple(c.shape), tuple(a.shape), tuple(b.shape)))
    ops = [c, a, b]
    dense_op = any(not isinstance(o, BCOOArray) and o.ndim > 0 for o in ops)
    if dense_op or shape == () or 0 in shape:
        return dense_layout(jnp.where(_dense(c), _dense(a), _dense(b)).astype(dt).reshape(shape))
    sp = []
    for o in ops:
        if not isinstance(o, BCOOArray):
            o = _scalar_operand(o, o.dtype) if is_concrete(o) else dense_layout(o)
        sp.append(broadcast_to(o, shape))
    n_batch = min(o.n_batch for o in sp)
    n_dense = min(o.n_dense for o in sp)
    sp = [update_layout(o, n_batch, n_dense)._canonical() for o in sp]
    flat = [flatten_batch(o.data, o.indices, shape, n_batch) for o in sp]
    idt = flat[0][1].dtype
    sizes = sparse_sizes(shape, n_batch, n_dense)
    (dc, ic), (da, ia), (db, ib) = flat
    idx1, pc, pa = union(ic, ia.astype(idt), sizes)
    vc1 = take_or_fill(dc, pc, sp[0].fill_value)
    va1 = take_or_fill(da, pa, sp[1].fill_value)
    idx2, p1, pb = union(idx1.astype(idt), ib.astype(idt), sizes)
    vc = take_or_fill(vc1, p1, sp[0].fill_value)
    va = take_or_fill(va1, p1, sp[1].fill_value)
    vb = take_or_fill(db, pb, sp[2].fill_value)
    data, indices = unflatten_batch(jnp.where(vc, va, vb), idx2.astype(idt), shape, n_batch)
    fill = eval_fill(jnp.where, sp[0].fill_value, sp[1].fill_value, sp[2].fill_value)
    return BCOOArray._from_buffers(data, indices, shape, n_batch=n_batch, n_dense=n_dense, fill_value=fill,
                                   indices_sorted=True, unique_indices=True)


__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]
