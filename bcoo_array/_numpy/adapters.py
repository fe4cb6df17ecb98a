"""Thin adapters from NumPy signatures onto the ``bcoo_array`` namespace.

Each function here backs one NumPy function that has a
counterpart in the namespace: it converts array-likes, maps NumPy's
arguments (``axis=None`` meaning "flattened", ``newshape=``, ``ddof=``,
``a_min=``, ``UPLO=``, ...) onto the namespace's, refuses ``out=`` and
keywords a BCOOArray cannot honour with TypeError, and calls the namespace
function. No algorithm lives here: results, sparsity and dtype rules are
the namespace's (see each namespace function's docstring), except where
NumPy's dtype rules differ from the standard's (booleans summed as
integers, integers averaged as floats, real input to complex transforms).

Every adapter raises TypeError for ``out=`` (JAX buffers are immutable) and
for NumPy's ``initial=`` / ``where=`` / ``mean=`` where it takes them; the
Raises sections below list only the other errors.

Names follow the NumPy function; a trailing underscore avoids shadowing a
builtin (``sum_``, ``max_``, ...); ``linalg_*`` and ``fft_*`` back
``numpy.linalg`` and ``numpy.fft``.
"""

from __future__ import annotations

import operator

import numpy as np

import bcoo_array as xp

from .operands import (
    UNSET,
    counting_input,
    elementwise_arg,
    flat_axis,
    floating_input,
    joined_args,
    refuse,
    reject_out,
    sparse_arg,
    where_unset,
)

# -- statistics ------------------------------------------------------------------------------


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=UNSET, where=True):
    """``numpy.sum`` via [`bcoo_array.sum`][] (booleans count as integers).
    """
    reject_out(out, "sum")
    refuse("sum", initial=initial, where=where_unset(where))
    return xp.sum(counting_input(sparse_arg(a), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=UNSET, where=True):
    """``numpy.prod`` via [`bcoo_array.prod`][] (booleans count as integers).
    """
    reject_out(out, "prod")
    refuse("prod", initial=initial, where=where_unset(where))
    return xp.prod(counting_input(sparse_arg(a), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def max_(a, axis=None, out=None, keepdims=False, initial=UNSET, where=True):
    """``numpy.max`` / ``numpy.amax`` via [`bcoo_array.max`][].
    """
    reject_out(out, "max")
    refuse("max", initial=initial, where=where_unset(where))
    return xp.max(sparse_arg(a), axis=axis, keepdims=keepdims)


def min_(a, axis=None, out=None, keepdims=False, initial=UNSET, where=True):
    """``numpy.min`` / ``numpy.amin`` via [`bcoo_array.min`][].
    """
    reject_out(out, "min")
    refuse("min", initial=initial, where=where_unset(where))
    return xp.min(sparse_arg(a), axis=axis, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """``numpy.mean`` via [`bcoo_array.mean`][] (integers averaged in the default float).
    """
    reject_out(out, "mean")
    refuse("mean", where=where_unset(where))
    return xp.mean(floating_input(sparse_arg(a), dtype), axis=axis, keepdims=keepdims)


def _ddof(name, ddof, correction):
    if correction is UNSET:
        return ddof
    if ddof != 0:
        raise ValueError(f"numpy.{name}(): ddof and correction cannot both be given")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=UNSET,
        correction=UNSET):
    """``numpy.var`` via [`bcoo_array.var`][] (``ddof`` is the standard's ``correction``).

    Raises
    ------
    TypeError
        For ``out=``, ``where=`` or ``mean=``.
    ValueError
        If both ``ddof`` and ``correction`` are given.
    """
    reject_out(out, "var")
    refuse("var", where=where_unset(where), mean=mean)
    x = floating_input(sparse_arg(a), dtype)
    return xp.var(x, axis=axis, correction=_ddof("var", ddof, correction), keepdims=keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=UNSET,
        correction=UNSET):
    """``numpy.std`` via [`bcoo_array.std`][] (``ddof`` is the standard's ``correction``).

    Raises
    ------
    TypeError
        For ``out=``, ``where=`` or ``mean=``.
    ValueError
        If both ``ddof`` and ``correction`` are given.
    """
    reject_out(out, "std")
    refuse("std", where=where_unset(where), mean=mean)
    x = floating_input(sparse_arg(a), dtype)
    return xp.std(x, axis=axis, correction=_ddof("std", ddof, correction), keepdims=keepdims)


def cumsum(a, axis=None, dtype=None, out=None):
    """``numpy.cumsum`` via [`bcoo_array.cumulative_sum`][]; ``axis=None`` flattens.
    """
    reject_out(out, "cumsum")
    x, axis = flat_axis(counting_input(sparse_arg(a), dtype), axis)
    return xp.cumulative_sum(x, axis=axis, dtype=dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """``numpy.cumprod`` via [`bcoo_array.cumulative_prod`][]; ``axis=None`` flattens.
    """
    reject_out(out, "cumprod")
    x, axis = flat_axis(counting_input(sparse_arg(a), dtype), axis)
    return xp.cumulative_prod(x, axis=axis, dtype=dtype)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``numpy.cumulative_sum`` via [`bcoo_array.cumulative_sum`][].
    """
    reject_out(out, "cumulative_sum")
    return xp.cumulative_sum(sparse_arg(x), axis=axis, dtype=dtype, include_initial=include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``numpy.cumulative_prod`` via [`bcoo_array.cumulative_prod`][].
    """
    reject_out(out, "cumulative_prod")
    return xp.cumulative_prod(sparse_arg(x), axis=axis, dtype=dtype, include_initial=include_initial)


def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.all`` via [`bcoo_array.all`][].
    """
    reject_out(out, "all")
    refuse("all", where=where_unset(where))
    return xp.all(sparse_arg(a), axis=axis, keepdims=keepdims)


def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.any`` via [`bcoo_array.any`][].
    """
    reject_out(out, "any")
    refuse("any", where=where_unset(where))
    return xp.any(sparse_arg(a), axis=axis, keepdims=keepdims)


def count_nonzero(a, axis=None, *, keepdims=False):
    """``numpy.count_nonzero`` via [`bcoo_array.count_nonzero`][].

    Without ``axis`` the count is a 0-d BCOOArray, not NumPy's Python int
    (so it works under ``jax.jit``); ``int()`` converts it.
    """
    return xp.count_nonzero(sparse_arg(a), axis=axis, keepdims=keepdims)


def diff(a, n=1, axis=-1, prepend=UNSET, append=UNSET):
    """``numpy.diff`` via [`bcoo_array.diff`][]."""
    kw = {}
    if prepend is not UNSET:
        kw["prepend"] = sparse_arg(prepend, "prepend")
    if append is not UNSET:
        kw["append"] = sparse_arg(append, "append")
    return xp.diff(sparse_arg(a), axis=axis, n=n, **kw)


# -- searching, sorting, sets ------------------------------------------------------------------


def argmax(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmax`` via [`bcoo_array.argmax`][] (``axis=None``: index into the flattened array).
    """
    reject_out(out, "argmax")
    return xp.argmax(sparse_arg(a), axis=axis, keepdims=keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmin`` via [`bcoo_array.argmin`][] (``axis=None``: index into the flattened array).
    """
    reject_out(out, "argmin")
    return xp.argmin(sparse_arg(a), axis=axis, keepdims=keepdims)


def nonzero(a):
    """``numpy.nonzero`` via [`bcoo_array.nonzero`][]: a tuple of index arrays."""
    return tuple(xp.nonzero(sparse_arg(a)))


def where(condition, x=UNSET, y=UNSET):
    """``numpy.where`` via [`bcoo_array.where`][], or ``nonzero`` with the condition alone.

    A non-boolean condition is compared with zero, as NumPy does.

    Raises
    ------
    ValueError
        If only one of ``x`` and ``y`` is given.
    """
    if x is UNSET and y is UNSET:
        return nonzero(condition)
    if x is UNSET or y is UNSET:
        raise ValueError("numpy.where(): pass both x and y, or neither")
    c = sparse_arg(condition, "condition")
    if c.dtype != xp.bool:
        c = xp.astype(c, xp.bool)
    return xp.where(c, elementwise_arg(x, "x"), elementwise_arg(y, "y"))


def searchsorted(a, v, side="left", sorter=None):
    """``numpy.searchsorted`` via [`bcoo_array.searchsorted`][]."""
    return xp.searchsorted(sparse_arg(a), elementwise_arg(v, "v"), side=side,
                           sorter=None if sorter is None else sparse_arg(sorter, "sorter"))


def _stable(kind, stable):
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"kind={kind!r} is not a NumPy sort kind")
    # Any kind's result is a valid answer when ties keep their order, so a
    # stable sort honours every kind.
    return True if stable is None else bool(stable)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.sort`` via [`bcoo_array.sort`][] (stable whatever ``kind``; ``axis=None`` flattens).

    Raises
    ------
    TypeError
        For ``order=`` (there are no structured dtypes).
    ValueError
        For an unknown ``kind``.
    """
    refuse("sort", order=UNSET if order is None else order)
    x, axis = flat_axis(sparse_arg(a), axis)
    return xp.sort(x, axis=axis, stable=_stable(kind, stable))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.argsort`` via [`bcoo_array.argsort`][] (stable whatever ``kind``; ``axis=None`` flattens).

    Raises
    ------
    TypeError
        For ``order=``.
    ValueError
        For an unknown ``kind``.
    """
    refuse("argsort", order=UNSET if order is None else order)
    x, axis = flat_axis(sparse_arg(a), axis)
    return xp.argsort(x, axis=axis, stable=_stable(kind, stable))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """``numpy.unique`` via [`bcoo_array.unique_values`][] / [`bcoo_array.unique_all`][].

    ``return_inverse`` has the input's shape, as in NumPy >= 2.1.

    Raises
    ------
    TypeError
        For ``axis=``; for ``equal_nan=True`` (NumPy's default) when the
        input holds NaN (the standard keeps each NaN distinct: pass
        ``equal_nan=False``) or is traced under ``jax.jit``.
    """
    if axis is not None:
        raise TypeError("numpy.unique(): axis= is not supported for BCOOArray; only flattened uniques")
    x = sparse_arg(ar)
    if equal_nan and x.dtype.kind in "fc":
        if not x._concrete():
            raise TypeError("numpy.unique(): equal_nan=True needs concrete values; pass equal_nan=False under jit")
        if bool(xp.any(xp.isnan(x))):
            raise TypeError("numpy.unique(): merging NaNs (equal_nan=True) is not supported; pass equal_nan=False "
                            "to keep each NaN distinct, as the array API does")
    if not (return_index or return_inverse or return_counts):
        return xp.unique_values(x)
    res = xp.unique_all(x)
    out = [res.values]
    if return_index:
        out.append(res.indices)
    if return_inverse:
        out.append(res.inverse_indices)
    if return_counts:
        out.append(res.counts)
    return tuple(out)


def unique_values(x):
    """``numpy.unique_values`` via [`bcoo_array.unique_values`][]."""
    return xp.unique_values(sparse_arg(x, "x"))


def unique_counts(x):
    """``numpy.unique_counts`` via [`bcoo_array.unique_counts`][]."""
    return xp.unique_counts(sparse_arg(x, "x"))


def unique_inverse(x):
    """``numpy.unique_inverse`` via [`bcoo_array.unique_inverse`][]."""
    return xp.unique_inverse(sparse_arg(x, "x"))


def unique_all(x):
    """``numpy.unique_all`` via [`bcoo_array.unique_all`][]."""
    return xp.unique_all(sparse_arg(x, "x"))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """``numpy.isin`` via [`bcoo_array.isin`][].

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    if kind not in (None, "sort", "table"):
        raise ValueError(f"numpy.isin(): kind={kind!r} is not valid")
    return xp.isin(sparse_arg(element, "element"), sparse_arg(test_elements, "test_elements"), invert=invert)


# -- manipulation ------------------------------------------------------------------------------


def transpose(a, axes=None):
    """``numpy.transpose`` / ``numpy.permute_dims`` via [`bcoo_array.permute_dims`][] (no axes: reversed)."""
    x = sparse_arg(a)
    return xp.permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else tuple(axes))


def matrix_transpose(x, /):
    """``numpy.matrix_transpose`` via [`bcoo_array.matrix_transpose`][]."""
    return xp.matrix_transpose(sparse_arg(x, "x"))


def moveaxis(a, source, destination):
    """``numpy.moveaxis`` via [`bcoo_array.moveaxis`][] (lists of axes accepted)."""
    src = tuple(source) if isinstance(source, (list, tuple)) else source
    dst = tuple(destination) if isinstance(destination, (list, tuple)) else destination
    return xp.moveaxis(sparse_arg(a), src, dst)


def _shape(shape):
    return (operator.index(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def reshape(a, /, shape=None, order="C", *, newshape=UNSET, copy=None):
    """``numpy.reshape`` via [`bcoo_array.reshape`][] (C order; ``newshape=`` accepted).

    Raises
    ------
    TypeError
        For ``order`` other than ``'C'``, or both or neither of ``shape`` and ``newshape``.
    """
    if order != "C":
        raise TypeError(f"numpy.reshape(): order={order!r} is not supported; BCOOArray reshapes in C order")
    if newshape is not UNSET:
        if shape is not None:
            raise TypeError("numpy.reshape(): pass shape or newshape, not both")
        shape = newshape
    if shape is None:
        raise TypeError("numpy.reshape() needs shape")
    return xp.reshape(sparse_arg(a), _shape(shape), copy=copy)


def ravel(a, order="C"):
    """``numpy.ravel`` via [`bcoo_array.reshape`][] to one dimension.

    Raises
    ------
    TypeError
        For ``order='F'`` (C order only).
    """
    if order not in ("C", "K", "A"):
        raise TypeError(f"numpy.ravel(): order={order!r} is not supported; BCOOArray flattens in C order")
    return xp.reshape(sparse_arg(a), (-1,))


def expand_dims(a, axis):
    """``numpy.expand_dims`` via [`bcoo_array.expand_dims`][] (one axis or several)."""
    return xp.expand_dims(sparse_arg(a), axis=tuple(axis) if isinstance(axis, (list, tuple)) else axis)


def squeeze(a, axis=None):
    """``numpy.squeeze`` via [`bcoo_array.squeeze`][]; ``axis=None`` drops every axis of length 1."""
    x = sparse_arg(a)
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return xp.squeeze(x, axis=axis)


def broadcast_to(array, shape, subok=False):
    """``numpy.broadcast_to`` via [`bcoo_array.broadcast_to`][]."""
    return xp.broadcast_to(sparse_arg(array), _shape(shape))


def broadcast_arrays(*args, subok=False):
    """``numpy.broadcast_arrays`` via [`bcoo_array.broadcast_arrays`][]: a tuple."""
    return tuple(xp.broadcast_arrays(*(sparse_arg(a) for a in args)))


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``numpy.concatenate`` / ``numpy.concat`` via [`bcoo_array.concat`][] (``axis=None`` flattens).

    Raises
    ------
    TypeError
        For ``out=`` or ``casting`` other than ``'same_kind'``.
    """
    reject_out(out, "concatenate")
    xs = joined_args(arrays, dtype, casting, "concatenate")
    if axis is None:
        xs, axis = [xp.reshape(x, (-1,)) for x in xs], 0
    return xp.concat(xs, axis=axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``numpy.stack`` via [`bcoo_array.stack`][].

    Raises
    ------
    TypeError
        For ``out=`` or ``casting`` other than ``'same_kind'``.
    """
    reject_out(out, "stack")
    return xp.stack(joined_args(arrays, dtype, casting, "stack"), axis=axis)


def unstack(x, /, *, axis=0):
    """``numpy.unstack`` via [`bcoo_array.unstack`][]: a tuple."""
    return tuple(xp.unstack(sparse_arg(x, "x"), axis=axis))


def flip(m, axis=None):
    """``numpy.flip`` via [`bcoo_array.flip`][]."""
    return xp.flip(sparse_arg(m), axis=axis)


def roll(a, shift, axis=None):
    """``numpy.roll`` via [`bcoo_array.roll`][]."""
    return xp.roll(sparse_arg(a), shift, axis=axis)


def repeat(a, repeats, axis=None):
    """``numpy.repeat`` via [`bcoo_array.repeat`][] (``axis=None`` flattens)."""
    x, axis = flat_axis(sparse_arg(a), axis)
    if not isinstance(repeats, (int, np.integer)):
        repeats = sparse_arg(repeats, "repeats")
    return xp.repeat(x, repeats, axis=axis)


def tile(A, reps):
    """``numpy.tile`` via [`bcoo_array.tile`][]."""
    return xp.tile(sparse_arg(A), _shape(reps))


def copy(a, order="K", subok=False):
    """``numpy.copy`` via [`bcoo_array.asarray`][] with ``copy=True``.

    The buffers are immutable JAX arrays; the new object is independent of
    ``a`` (``a[...] = v`` rebinds ``a``'s buffers only).

    Raises
    ------
    TypeError
        For ``order='F'`` (a BCOOArray has no memory order).
    """
    if order not in ("K", "C", "A"):
        raise TypeError(f"numpy.copy(): order={order!r} is not supported; BCOOArray has no memory order")
    return xp.asarray(sparse_arg(a), copy=True)


def ndim(a):
    """``numpy.ndim``: the ``ndim`` attribute."""
    return sparse_arg(a).ndim


def shape(a):
    """``numpy.shape``: the ``shape`` attribute."""
    return sparse_arg(a).shape


def size(a, axis=None):
    """``numpy.size``: the ``size`` attribute, or the length of one axis."""
    x = sparse_arg(a)
    return x.size if axis is None else x.shape[axis]


def result_type(*arrays_and_dtypes):
    """``numpy.result_type``: NumPy's promotion, a sparse array taking part by its dtype (as a NumPy array
    would: strongly typed)."""
    return np.result_type(*(a.dtype if isinstance(a, xp.BCOOArray) else a for a in arrays_and_dtypes))


def iscomplexobj(x):
    """``numpy.iscomplexobj``: whether the dtype is complex (the values are not read)."""
    return np.dtype(sparse_arg(x).dtype).kind == "c"


def isrealobj(x):
    """``numpy.isrealobj``: whether the dtype is not complex (the values are not read)."""
    return not iscomplexobj(x)


# -- indexing ----------------------------------------------------------------------------------


def take(a, indices, axis=None, out=None, mode="raise"):
    """``numpy.take`` via [`bcoo_array.take`][] (``axis=None`` flattens; integer or n-D indices).

    Raises
    ------
    TypeError
        For ``out=`` or ``mode`` other than ``'raise'``.
    """
    reject_out(out, "take")
    if mode != "raise":
        raise TypeError(f"numpy.take(): mode={mode!r} is not supported; only mode='raise'")
    x, axis = flat_axis(sparse_arg(a), axis)
    if isinstance(indices, (int, np.integer)):
        picked = xp.take(x, xp.asarray([operator.index(indices)], dtype=xp.int32), axis=axis)
        return xp.squeeze(picked, axis=axis)
    idx = sparse_arg(indices, "indices")
    if idx.ndim == 1:
        return xp.take(x, idx, axis=axis)
    axis = operator.index(axis) % x.ndim
    flat = xp.take(x, xp.reshape(idx, (-1,)), axis=axis)
    return xp.reshape(flat, x.shape[:axis] + idx.shape + x.shape[axis + 1:])


def take_along_axis(arr, indices, axis=-1):
    """``numpy.take_along_axis`` via [`bcoo_array.take_along_axis`][] (``axis=None`` flattens)."""
    x, axis = flat_axis(sparse_arg(arr), axis)
    return xp.take_along_axis(x, sparse_arg(indices, "indices"), axis=axis)


def _to_last_two(name, x, axis1, axis2):
    """``x`` with ``axis1``, ``axis2`` moved to the end, where the ``linalg`` functions look."""
    if x.ndim < 2:
        raise ValueError(f"numpy.{name}() needs at least 2 dimensions, got {x.ndim}")
    return xp.moveaxis(x, (axis1, axis2), (-2, -1))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``numpy.diagonal`` via [`bcoo_array.linalg.diagonal`][] (the diagonal is the last axis).

    Raises
    ------
    ValueError
        If ``a`` has fewer than two dimensions or the axes coincide.
    IndexError
        If an axis is out of range.
    """
    x = _to_last_two("diagonal", sparse_arg(a), axis1, axis2)
    return xp.linalg.diagonal(x, offset=offset)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``numpy.trace`` via [`bcoo_array.linalg.trace`][].

    Raises
    ------
    TypeError
        For ``out=``.
    ValueError
        If ``a`` has fewer than two dimensions or the axes coincide.
    """
    reject_out(out, "trace")
    x = _to_last_two("trace", counting_input(sparse_arg(a), dtype), axis1, axis2)
    return xp.linalg.trace(x, offset=offset, dtype=dtype)


# -- creation and data types -------------------------------------------------------------------


def tril(m, k=0):
    """``numpy.tril`` via [`bcoo_array.tril`][]."""
    return xp.tril(sparse_arg(m), k=k)


def triu(m, k=0):
    """``numpy.triu`` via [`bcoo_array.triu`][]."""
    return xp.triu(sparse_arg(m), k=k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``numpy.meshgrid`` via [`bcoo_array.meshgrid`][]: a tuple.

    Raises
    ------
    TypeError
        For ``sparse=True`` (the outputs are already stored sparsely).
    """
    if sparse:
        raise TypeError("numpy.meshgrid(): sparse=True (broadcastable views) is not supported; the BCOOArray "
                        "outputs of sparse=False are already stored sparsely")
    return tuple(xp.meshgrid(*(sparse_arg(x) for x in xi), indexing=indexing))


def _like(name, fill, a, dtype, order, shape, device):
    if order not in ("K", "C", "A"):
        raise TypeError(f"numpy.{name}(): order={order!r} is not supported")
    x = sparse_arg(a)
    dt = x.dtype if dtype is None else dtype
    shp = x.shape if shape is None else _shape(shape)
    if fill is None:
        return xp.empty(shp, dtype=dt, device=device)
    return xp.full(shp, fill, dtype=dt, device=device)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.zeros_like`` via [`bcoo_array.full`][] (nothing stored)."""
    return _like("zeros_like", 0, a, dtype, order, shape, device)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.ones_like`` via [`bcoo_array.full`][] (fill value 1, nothing stored)."""
    return _like("ones_like", 1, a, dtype, order, shape, device)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.empty_like`` via [`bcoo_array.empty`][]."""
    return _like("empty_like", None, prototype, dtype, order, shape, device)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.full_like`` via [`bcoo_array.full`][] (the value is the fill value, nothing stored).

    Raises
    ------
    TypeError
        If ``fill_value`` is not a scalar.
    """
    if not isinstance(fill_value, (bool, int, float, complex, np.generic)):
        raise TypeError("numpy.full_like(): fill_value must be a scalar for BCOOArray")
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    return _like("full_like", fill_value, a, dtype, order, shape, device)


def astype(x, dtype, /, *, copy=True, device=None):
    """``numpy.astype`` via [`bcoo_array.astype`][]."""
    return xp.astype(sparse_arg(x, "x"), dtype, copy=copy, device=device)


# -- element-wise functions that are not ufuncs --------------------------------------------------


def clip(a, a_min=UNSET, a_max=UNSET, out=None, *, min=UNSET, max=UNSET, **kwargs):
    """``numpy.clip`` via [`bcoo_array.clip`][] (``a_min``/``a_max`` or ``min``/``max``).

    Raises
    ------
    TypeError
        For ``out=``, ufunc keywords, or both spellings of a bound.
    """
    reject_out(out, "clip")
    if kwargs:
        raise TypeError(f"numpy.clip(): ufunc keywords {sorted(kwargs)} are not supported for BCOOArray")
    if a_min is not UNSET and min is not UNSET or a_max is not UNSET and max is not UNSET:
        raise TypeError("numpy.clip(): pass a_min/a_max or min/max, not both")
    lo = a_min if a_min is not UNSET else (None if min is UNSET else min)
    hi = a_max if a_max is not UNSET else (None if max is UNSET else max)
    return xp.clip(sparse_arg(a), min=None if lo is None else elementwise_arg(lo, "a_min"),
                   max=None if hi is None else elementwise_arg(hi, "a_max"))


def round_(a, decimals=0, out=None):
    """``numpy.round`` / ``numpy.around`` via [`bcoo_array.round`][], half to even.

    With ``decimals`` it is NumPy's own recipe: scale by ``10**decimals``,
    round, scale back (integers: unchanged for ``decimals >= 0``). The fill
    value is rounded too, so sparsity is kept.

    Raises
    ------
    TypeError
        For ``out=`` or a boolean ``a``.
    """
    reject_out(out, "round")
    x = sparse_arg(a)
    if x.dtype == xp.bool:
        raise TypeError("numpy.round() of a bool array; cast it to a numeric dtype first")
    d = operator.index(decimals)
    if x.dtype.kind in "iu":
        if d >= 0:
            return x
        scale = 10 ** -d
        return xp.astype(xp.multiply(xp.round(xp.divide(floating_input(x), scale)), scale), x.dtype)
    if d == 0:
        return xp.round(x)
    if d > 0:
        return xp.divide(xp.round(xp.multiply(x, 10.0 ** d)), 10.0 ** d)
    return xp.multiply(xp.round(xp.divide(x, 10.0 ** -d)), 10.0 ** -d)


def real(val):
    """``numpy.real`` via [`bcoo_array.real`][]."""
    return xp.real(sparse_arg(val, "val"))


def imag(val):
    """``numpy.imag`` via [`bcoo_array.imag`][]."""
    return xp.imag(sparse_arg(val, "val"))


# -- products ----------------------------------------------------------------------------------


def tensordot(a, b, axes=2):
    """``numpy.tensordot`` / ``numpy.linalg.tensordot`` via [`bcoo_array.tensordot`][]."""
    return xp.tensordot(elementwise_arg(a, "a"), elementwise_arg(b, "b"), axes=axes)


def outer(a, b, out=None):
    """``numpy.outer``: [`bcoo_array.linalg.outer`][] of the flattened operands.
    """
    reject_out(out, "outer")
    return xp.linalg.outer(xp.reshape(sparse_arg(a, "a"), (-1,)), xp.reshape(sparse_arg(b, "b"), (-1,)))


# -- numpy.linalg ------------------------------------------------------------------------------


def linalg_norm(x, ord=None, axis=None, keepdims=False):
    """``numpy.linalg.norm`` via [`bcoo_array.linalg.vector_norm`][] / [`bcoo_array.linalg.matrix_norm`][].

    ``axis=None``: the 2-norm of the flattened array when ``ord`` is None,
    else a vector norm of 1-D and a matrix norm of 2-D input. An int axis
    gives vector norms; a pair of axes gives matrix norms (``ord`` None is
    ``'fro'``). Integers are cast to the default float.

    Raises
    ------
    ValueError
        For an invalid ``ord``, or ``ord`` with ``axis=None`` on other than 1-D or 2-D input.
    """
    a = floating_input(sparse_arg(x, "x"))
    if axis is None:
        if ord is None:
            return xp.linalg.vector_norm(a, keepdims=keepdims)
        if a.ndim not in (1, 2):
            raise ValueError(f"numpy.linalg.norm(): ord={ord!r} with axis=None needs a 1-D or 2-D array, "
                             f"got {a.ndim}-D")
        axis = tuple(range(a.ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) == 1:
        return xp.linalg.vector_norm(a, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError(f"numpy.linalg.norm(): axis={axis!r} must be an int or a pair of ints")
    res = xp.linalg.matrix_norm(xp.moveaxis(a, axes, (-2, -1)), ord="fro" if ord is None else ord)
    if keepdims:
        res = xp.expand_dims(res, axis=tuple(sorted(operator.index(v) % a.ndim for v in axes)))
    return res


def linalg_vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``numpy.linalg.vector_norm`` via [`bcoo_array.linalg.vector_norm`][] (integers cast to float)."""
    return xp.linalg.vector_norm(floating_input(sparse_arg(x, "x")), axis=axis, keepdims=keepdims, ord=ord)


def linalg_matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """``numpy.linalg.matrix_norm`` via [`bcoo_array.linalg.matrix_norm`][] (integers cast to float)."""
    return xp.linalg.matrix_norm(floating_input(sparse_arg(x, "x")), keepdims=keepdims, ord=ord)


def linalg_matmul(x1, x2, /):
    """``numpy.linalg.matmul`` via [`bcoo_array.matmul`][]."""
    return xp.matmul(elementwise_arg(x1, "x1"), elementwise_arg(x2, "x2"))


def linalg_vecdot(x1, x2, /, *, axis=-1):
    """``numpy.linalg.vecdot`` via [`bcoo_array.vecdot`][]."""
    return xp.vecdot(elementwise_arg(x1, "x1"), elementwise_arg(x2, "x2"), axis=axis)


def linalg_diagonal(x, /, *, offset=0):
    """``numpy.linalg.diagonal`` via [`bcoo_array.linalg.diagonal`][]."""
    return xp.linalg.diagonal(sparse_arg(x, "x"), offset=offset)


def linalg_trace(x, /, *, offset=0, dtype=None):
    """``numpy.linalg.trace`` via [`bcoo_array.linalg.trace`][]."""
    return xp.linalg.trace(sparse_arg(x, "x"), offset=offset, dtype=dtype)


def linalg_outer(x1, x2, /):
    """``numpy.linalg.outer`` via [`bcoo_array.linalg.outer`][] (1-D operands)."""
    return xp.linalg.outer(sparse_arg(x1, "x1"), sparse_arg(x2, "x2"))


def linalg_cross(x1, x2, /, *, axis=-1):
    """``numpy.linalg.cross`` via [`bcoo_array.linalg.cross`][]."""
    return xp.linalg.cross(sparse_arg(x1, "x1"), sparse_arg(x2, "x2"), axis=axis)


def linalg_cholesky(a, /, *, upper=False):
    """``numpy.linalg.cholesky`` via [`bcoo_array.linalg.cholesky`][]."""
    return xp.linalg.cholesky(sparse_arg(a), upper=upper)


def linalg_det(a):
    """``numpy.linalg.det`` via [`bcoo_array.linalg.det`][]."""
    return xp.linalg.det(sparse_arg(a))


def linalg_slogdet(a):
    """``numpy.linalg.slogdet`` via [`bcoo_array.linalg.slogdet`][]."""
    return xp.linalg.slogdet(sparse_arg(a))


def linalg_inv(a):
    """``numpy.linalg.inv`` via [`bcoo_array.linalg.inv`][]."""
    return xp.linalg.inv(sparse_arg(a))


def linalg_solve(a, b):
    """``numpy.linalg.solve`` via [`bcoo_array.linalg.solve`][]."""
    return xp.linalg.solve(sparse_arg(a), sparse_arg(b, "b"))


def linalg_svdvals(x, /):
    """``numpy.linalg.svdvals`` via [`bcoo_array.linalg.svdvals`][]."""
    return xp.linalg.svdvals(sparse_arg(x, "x"))


def _lower(name, UPLO):
    if UPLO != "L":
        raise TypeError(f"numpy.linalg.{name}(): UPLO={UPLO!r} is not supported; the array API reads the "
                        "lower triangle")


def linalg_eigh(a, UPLO="L"):
    """``numpy.linalg.eigh`` via [`bcoo_array.linalg.eigh`][].

    Raises
    ------
    TypeError
        For ``UPLO='U'``.
    """
    _lower("eigh", UPLO)
    return xp.linalg.eigh(sparse_arg(a))


def linalg_eigvalsh(a, UPLO="L"):
    """``numpy.linalg.eigvalsh`` via [`bcoo_array.linalg.eigvalsh`][].

    Raises
    ------
    TypeError
        For ``UPLO='U'``.
    """
    _lower("eigvalsh", UPLO)
    return xp.linalg.eigvalsh(sparse_arg(a))


def linalg_matrix_power(a, n):
    """``numpy.linalg.matrix_power`` via [`bcoo_array.linalg.matrix_power`][]."""
    return xp.linalg.matrix_power(sparse_arg(a), n)


def linalg_matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """``numpy.linalg.matrix_rank`` via [`bcoo_array.linalg.matrix_rank`][].

    Raises
    ------
    TypeError
        For ``tol=`` or ``hermitian=True`` (use ``rtol=``).
    """
    if tol is not None or hermitian:
        raise TypeError("numpy.linalg.matrix_rank(): tol= and hermitian= are not supported; use rtol=")
    return xp.linalg.matrix_rank(sparse_arg(A), rtol=rtol)


def linalg_pinv(a, rcond=None, hermitian=False, *, rtol=UNSET):
    """``numpy.linalg.pinv`` via [`bcoo_array.linalg.pinv`][].

    Raises
    ------
    TypeError
        For ``rcond=`` or ``hermitian=True`` (use ``rtol=``).
    """
    if rcond is not None or hermitian:
        raise TypeError("numpy.linalg.pinv(): rcond= and hermitian= are not supported; use rtol=")
    return xp.linalg.pinv(sparse_arg(a), rtol=None if rtol is UNSET else rtol)


def linalg_qr(a, mode="reduced"):
    """``numpy.linalg.qr`` via [`bcoo_array.linalg.qr`][]."""
    return xp.linalg.qr(sparse_arg(a), mode=mode)


def linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``numpy.linalg.svd`` via [`bcoo_array.linalg.svd`][] (``compute_uv=False``: [`svdvals`][bcoo_array.linalg.svdvals]).

    Raises
    ------
    TypeError
        For ``hermitian=True``.
    """
    if hermitian:
        raise TypeError("numpy.linalg.svd(): hermitian=True is not supported")
    if not compute_uv:
        return xp.linalg.svdvals(sparse_arg(a))
    return xp.linalg.svd(sparse_arg(a), full_matrices=full_matrices)


# -- numpy.fft ---------------------------------------------------------------------------------


def _fft_input(a, complex_only):
    """``a`` as a BCOOArray; real input cast to complex for the transforms whose
    array API version takes complex input only (NumPy takes real input too)."""
    x = sparse_arg(a)
    if complex_only and x.dtype.kind != "c":
        wide = x.dtype in (xp.float64, xp.int64, xp.uint64)
        default = xp.__array_namespace_info__().default_dtypes()["complex floating"]
        x = xp.astype(x, xp.complex128 if wide else xp.complex64 if x.dtype.kind == "f" else default)
    return x


def _transform(name: str, complex_only: bool):
    """The adapter of the one-axis transform ``numpy.fft.<name>``."""
    fn = getattr(xp.fft, name)

    def impl(a, n=None, axis=-1, norm=None, out=None):
        reject_out(out, f"fft.{name}")
        return fn(_fft_input(a, complex_only), n=n, axis=axis, norm="backward" if norm is None else norm)

    impl.__name__ = impl.__qualname__ = f"fft_{name}"
    impl.__doc__ = f"``numpy.fft.{name}`` via ``bcoo_array.fft.{name}`` (``norm=None`` is ``'backward'``)."
    return impl


def _transform_n(name: str, complex_only: bool):
    """The adapter of the n-axis transform ``numpy.fft.<name>``."""
    fn = getattr(xp.fft, name)

    def impl(a, s=None, axes=None, norm=None, out=None):
        reject_out(out, f"fft.{name}")
        return fn(_fft_input(a, complex_only), s=s, axes=axes, norm="backward" if norm is None else norm)

    impl.__name__ = impl.__qualname__ = f"fft_{name}"
    impl.__doc__ = f"``numpy.fft.{name}`` via ``bcoo_array.fft.{name}`` (``norm=None`` is ``'backward'``)."
    return impl


fft_fft = _transform("fft", complex_only=True)
fft_ifft = _transform("ifft", complex_only=True)
fft_rfft = _transform("rfft", complex_only=False)
fft_irfft = _transform("irfft", complex_only=True)
fft_hfft = _transform("hfft", complex_only=True)
fft_ihfft = _transform("ihfft", complex_only=False)
fft_fftn = _transform_n("fftn", complex_only=True)
fft_ifftn = _transform_n("ifftn", complex_only=True)
fft_rfftn = _transform_n("rfftn", complex_only=False)
fft_irfftn = _transform_n("irfftn", complex_only=True)


def fft_fftshift(x, axes=None):
    """``numpy.fft.fftshift`` via [`bcoo_array.fft.fftshift`][]."""
    return xp.fft.fftshift(sparse_arg(x, "x"), axes=axes)


def fft_ifftshift(x, axes=None):
    """``numpy.fft.ifftshift`` via [`bcoo_array.fft.ifftshift`][]."""
    return xp.fft.ifftshift(sparse_arg(x, "x"), axes=axes)
