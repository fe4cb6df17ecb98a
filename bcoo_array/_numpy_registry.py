"""The explicit registries behind NumPy dispatch.

:data:`FUNCTIONS` maps NumPy functions (the objects ``numpy.sum``,
``numpy.linalg.norm``, ...) to an :class:`Entry`: an implementation with
NumPy's signature, the namespace functions it calls, and whether its result
is sparse. :data:`UFUNCS` maps NumPy ufuncs to the element-wise namespace
functions; :data:`REDUCE` and :data:`ACCUMULATE` map the ufuncs whose
``.reduce`` / ``.accumulate`` are supported.

Implementations call the namespace (``bcoo_array.concat``, ...) at call
time, so functions added to the namespace later are picked up; an entry
whose namespace functions are missing answers NotImplemented (NumPy then
raises its usual TypeError). Nothing here is found by name lookup: the
tables are literals, and ``docs/numpy_coverage.md`` is generated from them
(``python docs/numpy_coverage.py``).
"""

from __future__ import annotations

import operator
from typing import Callable, NamedTuple

import numpy as np

from . import _elementwise_functions as _ew
from . import _numpy_functions as _nf
from ._numpy_functions import _UNSET, reject_out, sparse_arg

#: Result kinds used in the table.
SPARSE = "sparse"  # a sparse input gives a sparse result
DENSE = "dense"  # inherently dense: a dense-layout BCOOArray (or 0-d)
MIXED = "sparse; dense if the fill varies"  # element-wise with a dense operand (see _fill_rule)


class Entry(NamedTuple):
    """One registered NumPy function."""

    impl: Callable
    needs: tuple[str, ...] = ()  # namespace functions called ("linalg.det" for extensions)
    result: str = SPARSE


def _xp():
    import bcoo_array

    return bcoo_array


def available(needs: tuple[str, ...]) -> bool:
    """Whether every namespace function in ``needs`` exists now."""
    xp = _xp()
    for name in needs:
        obj = xp
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
    return True


def _unsupported(name: str, **kw) -> None:
    """Raise TypeError for NumPy keywords given values this type cannot honour."""
    for k, v in kw.items():
        if v is not _UNSET:
            raise TypeError(f"numpy.{name}(): {k}={v!r} is not supported for BCOOArray")


def _flat(x):
    return _xp().reshape(x, (-1,))


def _axis_or_flat(x, axis):
    """``(x, axis)``; ``axis=None`` flattens ``x`` as NumPy does."""
    return (_flat(x), 0) if axis is None else (x, axis)


# -- statistics ----------------------------------------------------------------------------


def _count_input(x, dtype):
    """Bools count as the default integer in NumPy's sum/prod/cumsum (the standard's sum refuses bool)."""
    xp = _xp()
    if dtype is None and x.dtype == xp.bool:
        return xp.astype(x, xp.__array_namespace_info__().default_dtypes()["integral"])
    return x


def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    reject_out(out, "sum")
    _unsupported("sum", initial=initial, where=_UNSET if where is True else where)
    return _xp().sum(_count_input(sparse_arg(a), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def _np_prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    reject_out(out, "prod")
    _unsupported("prod", initial=initial, where=_UNSET if where is True else where)
    return _xp().prod(_count_input(sparse_arg(a), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def _np_max(a, axis=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    reject_out(out, "max")
    _unsupported("max", initial=initial, where=_UNSET if where is True else where)
    return _xp().max(sparse_arg(a), axis=axis, keepdims=keepdims)


def _np_min(a, axis=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    reject_out(out, "min")
    _unsupported("min", initial=initial, where=_UNSET if where is True else where)
    return _xp().min(sparse_arg(a), axis=axis, keepdims=keepdims)


def _float_input(x, dtype):
    """``x`` cast to ``dtype``, or integers and bools to the default float (NumPy's mean/var/std rule)."""
    xp = _xp()
    if dtype is not None:
        return xp.astype(x, dtype)
    if x.dtype.kind in "iub":
        return xp.astype(x, xp.__array_namespace_info__().default_dtypes()["real floating"])
    return x


def _np_mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_UNSET):
    reject_out(out, "mean")
    _unsupported("mean", where=_UNSET if where is True else where)
    return _xp().mean(_float_input(sparse_arg(a), dtype), axis=axis, keepdims=keepdims)


def _var_args(name, a, dtype, out, ddof, where, mean, correction):
    reject_out(out, name)
    _unsupported(name, where=_UNSET if where is True else where, mean=mean)
    if correction is not _UNSET:
        if ddof != 0:
            raise ValueError(f"numpy.{name}(): ddof and correction cannot both be given")
        ddof = correction
    return _float_input(sparse_arg(a), dtype), ddof


def _np_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_UNSET, mean=_UNSET,
            correction=_UNSET):
    x, ddof = _var_args("var", a, dtype, out, ddof, where, mean, correction)
    return _xp().var(x, axis=axis, correction=ddof, keepdims=keepdims)


def _np_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_UNSET, mean=_UNSET,
            correction=_UNSET):
    x, ddof = _var_args("std", a, dtype, out, ddof, where, mean, correction)
    return _xp().std(x, axis=axis, correction=ddof, keepdims=keepdims)


def _np_cumsum(a, axis=None, dtype=None, out=None):
    reject_out(out, "cumsum")
    x, ax = _axis_or_flat(_count_input(sparse_arg(a), dtype), axis)
    return _xp().cumulative_sum(x, axis=ax, dtype=dtype)


def _np_cumprod(a, axis=None, dtype=None, out=None):
    reject_out(out, "cumprod")
    x, ax = _axis_or_flat(_count_input(sparse_arg(a), dtype), axis)
    return _xp().cumulative_prod(x, axis=ax, dtype=dtype)


def _np_cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    reject_out(out, "cumulative_sum")
    return _xp().cumulative_sum(sparse_arg(x), axis=axis, dtype=dtype, include_initial=include_initial)


def _np_cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    reject_out(out, "cumulative_prod")
    return _xp().cumulative_prod(sparse_arg(x), axis=axis, dtype=dtype, include_initial=include_initial)


def _np_all(a, axis=None, out=None, keepdims=False, *, where=_UNSET):
    reject_out(out, "all")
    _unsupported("all", where=_UNSET if where is True else where)
    return _nf.logical_reduce(a, axis, keepdims, any_=False)


def _np_any(a, axis=None, out=None, keepdims=False, *, where=_UNSET):
    reject_out(out, "any")
    _unsupported("any", where=_UNSET if where is True else where)
    return _nf.logical_reduce(a, axis, keepdims, any_=True)


# -- searching, sorting, sets --------------------------------------------------------------


def _np_argmax(a, axis=None, out=None, *, keepdims=False):
    reject_out(out, "argmax")
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    if axis is None and keepdims:
        return _xp().reshape(_xp().argmax(x, axis=0), (1,) * sparse_arg(a).ndim)
    return _xp().argmax(x, axis=ax, keepdims=keepdims)


def _np_argmin(a, axis=None, out=None, *, keepdims=False):
    reject_out(out, "argmin")
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    if axis is None and keepdims:
        return _xp().reshape(_xp().argmin(x, axis=0), (1,) * sparse_arg(a).ndim)
    return _xp().argmin(x, axis=ax, keepdims=keepdims)


def _np_nonzero(a):
    return tuple(_xp().nonzero(sparse_arg(a)))


def _np_where(condition, x=_UNSET, y=_UNSET):
    if x is _UNSET and y is _UNSET:
        return _np_nonzero(condition)
    if x is _UNSET or y is _UNSET:
        raise ValueError("numpy.where(): pass both x and y, or neither")
    c = sparse_arg(condition, "condition")
    if c.dtype != np.bool_:
        c = _xp().astype(c, _xp().bool)
    return _xp().where(c, _nf.elementwise_arg(x, "x"), _nf.elementwise_arg(y, "y"))


def _np_searchsorted(a, v, side="left", sorter=None):
    return _xp().searchsorted(sparse_arg(a), _nf.elementwise_arg(v, "v"), side=side,
                              sorter=None if sorter is None else sparse_arg(sorter, "sorter"))


def _sort_kind(kind, stable):
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"kind={kind!r} is not a NumPy sort kind")
    # Any kind's result is a valid answer when ties keep their order, so a stable
    # sort honours every kind.
    return True if stable is None else bool(stable)


def _np_sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _unsupported("sort", order=_UNSET if order is None else order)
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    return _xp().sort(x, axis=ax, stable=_sort_kind(kind, stable))


def _np_argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _unsupported("argsort", order=_UNSET if order is None else order)
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    return _xp().argsort(x, axis=ax, stable=_sort_kind(kind, stable))


def _np_unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
               equal_nan=True, sorted=True):
    if axis is not None:
        raise TypeError("numpy.unique(): axis= is not supported for BCOOArray; only flattened uniques")
    xp = _xp()
    x = sparse_arg(ar)
    if equal_nan and x.dtype.kind in "fc":
        # NumPy merges NaNs by default; the array API keeps each NaN distinct, so
        # the two agree only when there is no NaN.
        from ._layout import is_concrete

        if not is_concrete(x.data, x.indices):
            raise TypeError("numpy.unique(): equal_nan=True needs concrete values; pass equal_nan=False under jit")
        if bool(_nf.logical_reduce(xp.isnan(x), any_=True)):
            raise TypeError("numpy.unique(): merging NaNs (equal_nan=True) is not supported; pass equal_nan=False "
                            "to keep each NaN distinct, as the array API does")
    if not (return_index or return_inverse or return_counts):
        return xp.unique_values(x)
    res = xp.unique_all(x)
    out = [res.values]
    if return_index:
        out.append(res.indices)
    if return_inverse:
        out.append(res.inverse_indices)  # the input's shape, as NumPy >= 2.1 returns it
    if return_counts:
        out.append(res.counts)
    return tuple(out)


# -- manipulation ----------------------------------------------------------------------------


def _np_transpose(a, axes=None):
    x = sparse_arg(a)
    return _xp().permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else tuple(axes))


def _np_reshape(a, /, shape=None, order="C", *, newshape=_UNSET, copy=None):
    if order != "C":
        raise TypeError(f"numpy.reshape(): order={order!r} is not supported; BCOOArray reshapes in C order")
    if newshape is not _UNSET:
        if shape is not None:
            raise TypeError("numpy.reshape(): pass shape or newshape, not both")
        shape = newshape
    if shape is None:
        raise TypeError("numpy.reshape() needs shape")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return _xp().reshape(sparse_arg(a), shape, copy=copy)


def _np_ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        raise TypeError(f"numpy.ravel(): order={order!r} is not supported; BCOOArray flattens in C order")
    return _flat(sparse_arg(a))


def _np_expand_dims(a, axis):
    from ._layout import normalize_axes

    x = sparse_arg(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    for ax in normalize_axes(tuple(axes), x.ndim + len(axes)):
        x = _xp().expand_dims(x, axis=ax)
    return x


def _np_squeeze(a, axis=None):
    x = sparse_arg(a)
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return _xp().squeeze(x, axis=axis)


def _np_broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return _xp().broadcast_to(sparse_arg(array), shape)


def _np_broadcast_arrays(*args, subok=False):
    return tuple(_xp().broadcast_arrays(*(sparse_arg(a) for a in args)))


def _join_args(arrays, dtype, casting, name):
    if casting != "same_kind":
        raise TypeError(f"numpy.{name}(): casting={casting!r} is not supported; cast with dtype= or astype")
    xs = [sparse_arg(a, "arrays") for a in arrays]
    if dtype is not None:
        xs = [_xp().astype(x, dtype) for x in xs]
    return xs


def _np_concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    reject_out(out, "concatenate")
    xs = _join_args(arrays, dtype, casting, "concatenate")
    if axis is None:
        xs, axis = [_flat(x) for x in xs], 0
    return _xp().concat(xs, axis=axis)


def _np_stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    reject_out(out, "stack")
    return _xp().stack(_join_args(arrays, dtype, casting, "stack"), axis=axis)


def _np_hstack(tup, *, dtype=None, casting="same_kind"):
    xs = [_nf.atleast_nd(x, 1) for x in _join_args(tup, dtype, casting, "hstack")]
    return _xp().concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def _np_vstack(tup, *, dtype=None, casting="same_kind"):
    xs = [_nf.atleast_nd(x, 2) for x in _join_args(tup, dtype, casting, "vstack")]
    return _xp().concat(xs, axis=0)


def _np_unstack(x, /, *, axis=0):
    return tuple(_xp().unstack(sparse_arg(x), axis=axis))


def _np_flip(m, axis=None):
    return _xp().flip(sparse_arg(m), axis=axis)


def _np_roll(a, shift, axis=None):
    return _xp().roll(sparse_arg(a), shift, axis=axis)


def _np_repeat(a, repeats, axis=None):
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    if not isinstance(repeats, (int, np.integer)):
        repeats = sparse_arg(repeats, "repeats")
    return _xp().repeat(x, repeats, axis=ax)


def _np_tile(A, reps):
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    return _xp().tile(sparse_arg(A), reps)


def _np_diff(a, n=1, axis=-1, prepend=_UNSET, append=_UNSET):
    kw = {}
    if prepend is not _UNSET:
        kw["prepend"] = sparse_arg(prepend, "prepend")
    if append is not _UNSET:
        kw["append"] = sparse_arg(append, "append")
    return _xp().diff(sparse_arg(a), axis=axis, n=n, **kw)


def _np_isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    if kind not in (None, "sort", "table"):
        raise ValueError(f"numpy.isin(): kind={kind!r} is not valid")
    return _xp().isin(sparse_arg(element, "element"), sparse_arg(test_elements, "test_elements"), invert=invert)


def _np_take(a, indices, axis=None, out=None, mode="raise"):
    reject_out(out, "take")
    if mode != "raise":
        raise TypeError(f"numpy.take(): mode={mode!r} is not supported; only mode='raise'")
    x, ax = _axis_or_flat(sparse_arg(a), axis)
    xp = _xp()
    if isinstance(indices, (int, np.integer)):
        i = operator.index(indices)
        return xp.squeeze(xp.take(x, xp.asarray([i], dtype=xp.int32), axis=ax), axis=ax)
    idx = sparse_arg(indices, "indices")
    if idx.ndim != 1:
        flat = xp.take(x, xp.reshape(idx, (-1,)), axis=ax)
        shape = x.shape[:ax] + idx.shape + x.shape[ax + 1:]
        return xp.reshape(flat, shape)
    return xp.take(x, idx, axis=ax)


def _np_take_along_axis(arr, indices, axis=-1):
    x, ax = _axis_or_flat(sparse_arg(arr), axis)
    return _xp().take_along_axis(x, sparse_arg(indices, "indices"), axis=ax)


def _np_tril(m, k=0):
    return _xp().tril(sparse_arg(m), k=k)


def _np_triu(m, k=0):
    return _xp().triu(sparse_arg(m), k=k)


def _np_meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if sparse:
        raise TypeError("numpy.meshgrid(): sparse=True (broadcastable views) is not supported; the BCOOArray "
                        "outputs of sparse=False are already stored sparsely")
    return tuple(_xp().meshgrid(*(sparse_arg(x) for x in xi), indexing=indexing))


# -- creation and dtypes ---------------------------------------------------------------------


def _like(name, fill, a, dtype, order, subok, shape, device):
    if order not in ("K", "C", "A"):
        raise TypeError(f"numpy.{name}(): order={order!r} is not supported")
    xp = _xp()
    x = sparse_arg(a)
    dt = x.dtype if dtype is None else dtype
    shp = x.shape if shape is None else ((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    if fill is None:
        return xp.empty(shp, dtype=dt, device=device)
    return xp.full(shp, fill, dtype=dt, device=device)


def _np_zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("zeros_like", 0, a, dtype, order, subok, shape, device)


def _np_ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("ones_like", 1, a, dtype, order, subok, shape, device)


def _np_empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("empty_like", None, prototype, dtype, order, subok, shape, device)


def _np_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not isinstance(fill_value, (bool, int, float, complex, np.generic)):
        raise TypeError("numpy.full_like(): fill_value must be a scalar for BCOOArray")
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    return _like("full_like", fill_value, a, dtype, order, subok, shape, device)


def _np_astype(x, dtype, /, *, copy=True, device=None):
    return _xp().astype(sparse_arg(x), dtype, copy=copy, device=device)


def _np_real(val):
    return _xp().real(sparse_arg(val, "val"))


def _np_imag(val):
    return _xp().imag(sparse_arg(val, "val"))


def _np_clip(a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=_UNSET, max=_UNSET, **kwargs):  # noqa: A002
    reject_out(out, "clip")
    if kwargs:
        raise TypeError(f"numpy.clip(): ufunc keywords {sorted(kwargs)} are not supported for BCOOArray")
    if a_min is not _UNSET and min is not _UNSET or a_max is not _UNSET and max is not _UNSET:
        raise TypeError("numpy.clip(): pass a_min/a_max or min/max, not both")
    lo = a_min if a_min is not _UNSET else (None if min is _UNSET else min)
    hi = a_max if a_max is not _UNSET else (None if max is _UNSET else max)
    conv = (lambda b, n: b if b is None else _nf.elementwise_arg(b, n))
    return _xp().clip(sparse_arg(a), min=conv(lo, "a_min"), max=conv(hi, "a_max"))


def _np_ndim(a):
    return sparse_arg(a).ndim


def _np_shape(a):
    return sparse_arg(a).shape


def _np_size(a, axis=None):
    x = sparse_arg(a)
    return x.size if axis is None else x.shape[axis]


# -- linear algebra --------------------------------------------------------------------------


def _np_tensordot(a, b, axes=2):
    return _xp().tensordot(_nf.elementwise_arg(a, "a"), _nf.elementwise_arg(b, "b"), axes=axes)


def _np_matrix_transpose(x, /):
    return _xp().matrix_transpose(sparse_arg(x, "x"))


def _np_linalg_matmul(x1, x2, /):
    return _xp().matmul(_nf.elementwise_arg(x1, "x1"), _nf.elementwise_arg(x2, "x2"))


def _np_linalg_vecdot(x1, x2, /, *, axis=-1):
    return _xp().vecdot(_nf.elementwise_arg(x1, "x1"), _nf.elementwise_arg(x2, "x2"), axis=axis)


def _np_linalg_diagonal(x, /, *, offset=0):
    return _nf.diagonal(x, offset, -2, -1)


def _np_linalg_trace(x, /, *, offset=0, dtype=None):
    return _nf.trace(x, offset, -2, -1, dtype=dtype)


def _np_linalg_outer(x1, x2, /):
    a, b = sparse_arg(x1, "x1"), sparse_arg(x2, "x2")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"numpy.linalg.outer() needs 1-D inputs, got {a.ndim}-D and {b.ndim}-D")
    return _nf.outer(a, b)


def _np_vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    xp = _xp()
    a = sparse_arg(x, "x")
    if axis is None:
        a, axis = _flat(a), 0
        if keepdims:
            return xp.reshape(_nf.norm(a, ord, axis), (1,) * sparse_arg(x).ndim)
    if isinstance(axis, tuple) and len(axis) != 1:
        from ._layout import normalize_axes

        axes = normalize_axes(axis, a.ndim)
        rest = tuple(d for d in range(a.ndim) if d not in axes)
        moved = xp.reshape(xp.permute_dims(a, rest + axes), tuple(a.shape[d] for d in rest) + (-1,))
        out = _nf.norm(moved, ord, -1)
        if keepdims:
            out = xp.reshape(out, tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
        return out
    return _nf.norm(a, ord, axis if not isinstance(axis, tuple) else axis[0], keepdims)


def _np_matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _nf.norm(x, ord, (-2, -1), keepdims)


def _np_norm(x, ord=None, axis=None, keepdims=False):
    return _nf.norm(x, ord, axis, keepdims)


def _linalg(name: str) -> Callable:
    """Wrapper calling ``bcoo_array.linalg.<name>`` on one or two sparse arguments (no keywords)."""

    def impl(*args):
        return getattr(_xp().linalg, name)(*(sparse_arg(a) for a in args))

    impl.__name__ = name
    return impl


def _np_linalg_cholesky(a, /, *, upper=False):
    return _xp().linalg.cholesky(sparse_arg(a), upper=upper)


def _np_linalg_cross(x1, x2, /, *, axis=-1):
    return _xp().linalg.cross(sparse_arg(x1, "x1"), sparse_arg(x2, "x2"), axis=axis)


def _np_linalg_eigh(a, UPLO="L"):  # noqa: N803
    if UPLO != "L":
        raise TypeError("numpy.linalg.eigh(): UPLO='U' is not supported; the array API reads the lower triangle")
    return _xp().linalg.eigh(sparse_arg(a))


def _np_linalg_eigvalsh(a, UPLO="L"):  # noqa: N803
    if UPLO != "L":
        raise TypeError("numpy.linalg.eigvalsh(): UPLO='U' is not supported; the array API reads the lower triangle")
    return _xp().linalg.eigvalsh(sparse_arg(a))


def _np_linalg_matrix_power(a, n):
    return _xp().linalg.matrix_power(sparse_arg(a), n)


def _np_linalg_matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    if tol is not None or hermitian:
        raise TypeError("numpy.linalg.matrix_rank(): tol= and hermitian= are not supported; use rtol=")
    return _xp().linalg.matrix_rank(sparse_arg(A), rtol=rtol)


def _np_linalg_pinv(a, rcond=None, hermitian=False, *, rtol=_UNSET):
    if rcond is not None or hermitian:
        raise TypeError("numpy.linalg.pinv(): rcond= and hermitian= are not supported; use rtol=")
    return _xp().linalg.pinv(sparse_arg(a), rtol=None if rtol is _UNSET else rtol)


def _np_linalg_qr(a, mode="reduced"):
    return _xp().linalg.qr(sparse_arg(a), mode=mode)


def _np_linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise TypeError("numpy.linalg.svd(): hermitian=True is not supported")
    if not compute_uv:
        return _xp().linalg.svdvals(sparse_arg(a))
    return _xp().linalg.svd(sparse_arg(a), full_matrices=full_matrices)


# -- FFT -------------------------------------------------------------------------------------


#: Transforms whose array API version takes complex input only; NumPy takes
#: real input too (as complex with zero imaginary part).
_COMPLEX_INPUT = ("fft", "ifft", "fftn", "ifftn", "hfft", "irfft", "irfftn")


def _fft_input(name, a):
    x = sparse_arg(a)
    if name in _COMPLEX_INPUT and x.dtype.kind != "c":
        xp = _xp()
        dt = xp.complex128 if x.dtype in (xp.float64, xp.int64, xp.uint64) else (
            xp.complex64 if x.dtype.kind == "f" else xp.__array_namespace_info__().default_dtypes()["complex floating"])
        x = xp.astype(x, dt)
    return x


def _fft1(name: str) -> Callable:
    def impl(a, n=None, axis=-1, norm=None, out=None):
        reject_out(out, f"fft.{name}")
        return getattr(_xp().fft, name)(_fft_input(name, a), n=n, axis=axis, norm="backward" if norm is None else norm)

    impl.__name__ = name
    return impl


def _fftn(name: str) -> Callable:
    def impl(a, s=None, axes=None, norm=None, out=None):
        reject_out(out, f"fft.{name}")
        return getattr(_xp().fft, name)(_fft_input(name, a), s=s, axes=axes,
                                        norm="backward" if norm is None else norm)

    impl.__name__ = name
    return impl


def _fftshift(name: str) -> Callable:
    def impl(x, axes=None):
        return getattr(_xp().fft, name)(sparse_arg(x, "x"), axes=axes)

    impl.__name__ = name
    return impl


# -- the tables ------------------------------------------------------------------------------

#: NumPy function -> Entry. Keys are the function objects themselves.
FUNCTIONS: dict[Callable, Entry] = {
    # statistics (array API: statistical and utility functions)
    np.sum: Entry(_np_sum, ("sum",), DENSE),
    np.prod: Entry(_np_prod, ("prod",), DENSE),
    np.max: Entry(_np_max, ("max",), DENSE),
    np.amax: Entry(_np_max, ("max",), DENSE),
    np.min: Entry(_np_min, ("min",), DENSE),
    np.amin: Entry(_np_min, ("min",), DENSE),
    np.mean: Entry(_np_mean, ("mean",), DENSE),
    np.var: Entry(_np_var, ("var",), DENSE),
    np.std: Entry(_np_std, ("std",), DENSE),
    np.cumsum: Entry(_np_cumsum, ("cumulative_sum",), DENSE),
    np.cumprod: Entry(_np_cumprod, ("cumulative_prod",), DENSE),
    np.cumulative_sum: Entry(_np_cumulative_sum, ("cumulative_sum",), DENSE),
    np.cumulative_prod: Entry(_np_cumulative_prod, ("cumulative_prod",), DENSE),
    np.all: Entry(_np_all, ("min", "not_equal"), DENSE),
    np.any: Entry(_np_any, ("max", "not_equal"), DENSE),
    np.diff: Entry(_np_diff, ("diff",), SPARSE),
    # NaN-aware reductions (beyond the standard)
    np.nansum: Entry(_nf.nansum, ("sum",), DENSE),
    np.nanprod: Entry(_nf.nanprod, ("prod",), DENSE),
    np.nanmax: Entry(_nf.nanmax, ("max",), DENSE),
    np.nanmin: Entry(_nf.nanmin, ("min",), DENSE),
    np.nanmean: Entry(_nf.nanmean, ("sum",), DENSE),
    np.nanvar: Entry(_nf.nanvar, ("sum",), DENSE),
    np.nanstd: Entry(_nf.nanstd, ("sum",), DENSE),
    np.nanargmax: Entry(_nf.nanargmax, ("argmax",), DENSE),
    np.nanargmin: Entry(_nf.nanargmin, ("argmin",), DENSE),
    np.nancumsum: Entry(_nf.nancumsum, ("cumulative_sum",), DENSE),
    np.nancumprod: Entry(_nf.nancumprod, ("cumulative_prod",), DENSE),
    np.count_nonzero: Entry(_nf.count_nonzero, ("sum",), DENSE),
    # searching, sorting, sets
    np.argmax: Entry(_np_argmax, ("argmax",), DENSE),
    np.argmin: Entry(_np_argmin, ("argmin",), DENSE),
    np.nonzero: Entry(_np_nonzero, ("nonzero",), DENSE),
    np.where: Entry(_np_where, ("where", "nonzero"), MIXED),
    np.searchsorted: Entry(_np_searchsorted, ("searchsorted",), DENSE),
    np.sort: Entry(_np_sort, ("sort",), SPARSE),
    np.argsort: Entry(_np_argsort, ("argsort",), DENSE),
    np.unique: Entry(_np_unique, ("unique_values", "unique_all"), DENSE),
    np.unique_values: Entry(lambda x: _xp().unique_values(sparse_arg(x)), ("unique_values",), DENSE),
    np.unique_counts: Entry(lambda x: _xp().unique_counts(sparse_arg(x)), ("unique_counts",), DENSE),
    np.unique_inverse: Entry(lambda x: _xp().unique_inverse(sparse_arg(x)), ("unique_inverse",), DENSE),
    np.unique_all: Entry(lambda x: _xp().unique_all(sparse_arg(x)), ("unique_all",), DENSE),
    np.isin: Entry(_np_isin, ("isin",), SPARSE),
    # manipulation
    np.transpose: Entry(_np_transpose, ("permute_dims",), SPARSE),  # numpy.permute_dims is this object
    np.matrix_transpose: Entry(_np_matrix_transpose, ("matrix_transpose",), SPARSE),
    np.swapaxes: Entry(_nf.swapaxes, ("permute_dims",), SPARSE),
    np.moveaxis: Entry(_nf.moveaxis, ("permute_dims",), SPARSE),
    np.reshape: Entry(_np_reshape, ("reshape",), SPARSE),
    np.ravel: Entry(_np_ravel, ("reshape",), SPARSE),
    np.expand_dims: Entry(_np_expand_dims, ("expand_dims",), SPARSE),
    np.squeeze: Entry(_np_squeeze, ("squeeze",), SPARSE),
    np.broadcast_to: Entry(_np_broadcast_to, ("broadcast_to",), SPARSE),
    np.broadcast_arrays: Entry(_np_broadcast_arrays, ("broadcast_arrays",), SPARSE),
    np.atleast_1d: Entry(lambda *arys: _atleast(1, arys), ("reshape",), SPARSE),
    np.atleast_2d: Entry(lambda *arys: _atleast(2, arys), ("reshape",), SPARSE),
    np.atleast_3d: Entry(lambda *arys: _atleast(3, arys), ("reshape",), SPARSE),
    np.concatenate: Entry(_np_concatenate, ("concat",), SPARSE),  # numpy.concat is this object
    np.stack: Entry(_np_stack, ("stack",), SPARSE),
    np.hstack: Entry(_np_hstack, ("concat",), SPARSE),
    np.vstack: Entry(_np_vstack, ("concat",), SPARSE),
    np.unstack: Entry(_np_unstack, ("unstack",), SPARSE),
    np.flip: Entry(_np_flip, ("flip",), SPARSE),
    np.roll: Entry(_np_roll, ("roll",), SPARSE),
    np.repeat: Entry(_np_repeat, ("repeat",), SPARSE),
    np.tile: Entry(_np_tile, ("tile",), SPARSE),
    np.copy: Entry(_nf.copy, (), SPARSE),
    np.ndim: Entry(_np_ndim, (), "int"),
    np.shape: Entry(_np_shape, (), "tuple"),
    np.size: Entry(_np_size, (), "int"),
    # indexing
    np.take: Entry(_np_take, ("take",), SPARSE),
    np.take_along_axis: Entry(_np_take_along_axis, ("take_along_axis",), DENSE),
    np.diagonal: Entry(_nf.diagonal, ("take",), SPARSE),
    np.trace: Entry(_nf.trace, ("take", "sum"), DENSE),
    # creation and data types
    np.tril: Entry(_np_tril, ("tril",), SPARSE),
    np.triu: Entry(_np_triu, ("triu",), SPARSE),
    np.meshgrid: Entry(_np_meshgrid, ("meshgrid",), DENSE),
    np.zeros_like: Entry(_np_zeros_like, ("full",), SPARSE),
    np.ones_like: Entry(_np_ones_like, ("full",), SPARSE),
    np.empty_like: Entry(_np_empty_like, ("empty",), SPARSE),
    np.full_like: Entry(_np_full_like, ("full",), SPARSE),
    np.astype: Entry(_np_astype, ("astype",), SPARSE),
    # element-wise functions that are not ufuncs
    np.clip: Entry(_np_clip, ("clip",), MIXED),
    np.round: Entry(_nf.round_, ("round",), SPARSE),
    np.around: Entry(_nf.round_, ("round",), SPARSE),
    np.real: Entry(_np_real, ("real",), SPARSE),
    np.imag: Entry(_np_imag, ("imag",), SPARSE),
    np.isclose: Entry(_nf.isclose, (), MIXED),
    np.allclose: Entry(_nf.allclose, ("min",), DENSE),
    np.array_equal: Entry(_nf.array_equal, ("min",), DENSE),
    # products
    np.dot: Entry(_nf.dot, ("matmul", "tensordot"), MIXED),
    np.tensordot: Entry(_np_tensordot, ("tensordot",), MIXED),
    np.einsum: Entry(_nf.einsum, ("tensordot", "multiply", "sum"), MIXED),
    np.kron: Entry(_nf.kron, ("multiply", "reshape"), SPARSE),
    np.outer: Entry(_nf.outer, ("multiply", "reshape"), SPARSE),
    np.inner: Entry(_nf.inner, ("tensordot",), MIXED),
    np.vdot: Entry(_nf.vdot, ("vecdot",), DENSE),
    # numpy.linalg
    np.linalg.norm: Entry(_np_norm, ("sum", "max", "min"), DENSE),
    np.linalg.vector_norm: Entry(_np_vector_norm, ("sum", "max", "min"), DENSE),
    np.linalg.matrix_norm: Entry(_np_matrix_norm, ("sum", "max", "min"), DENSE),
    np.linalg.matmul: Entry(_np_linalg_matmul, ("matmul",), MIXED),
    np.linalg.vecdot: Entry(_np_linalg_vecdot, ("vecdot",), MIXED),
    np.linalg.tensordot: Entry(_np_tensordot, ("tensordot",), MIXED),
    np.linalg.matrix_transpose: Entry(_np_matrix_transpose, ("matrix_transpose",), SPARSE),
    np.linalg.diagonal: Entry(_np_linalg_diagonal, ("take",), SPARSE),
    np.linalg.trace: Entry(_np_linalg_trace, ("take", "sum"), DENSE),
    np.linalg.outer: Entry(_np_linalg_outer, ("multiply",), SPARSE),
    np.linalg.cross: Entry(_np_linalg_cross, ("linalg.cross",), MIXED),
    np.linalg.cholesky: Entry(_np_linalg_cholesky, ("linalg.cholesky",), DENSE),
    np.linalg.det: Entry(_linalg("det"), ("linalg.det",), DENSE),
    np.linalg.slogdet: Entry(_linalg("slogdet"), ("linalg.slogdet",), DENSE),
    np.linalg.inv: Entry(_linalg("inv"), ("linalg.inv",), DENSE),
    np.linalg.solve: Entry(_linalg("solve"), ("linalg.solve",), DENSE),
    np.linalg.svdvals: Entry(_linalg("svdvals"), ("linalg.svdvals",), DENSE),
    np.linalg.eigh: Entry(_np_linalg_eigh, ("linalg.eigh",), DENSE),
    np.linalg.eigvalsh: Entry(_np_linalg_eigvalsh, ("linalg.eigvalsh",), DENSE),
    np.linalg.matrix_power: Entry(_np_linalg_matrix_power, ("linalg.matrix_power",), DENSE),
    np.linalg.matrix_rank: Entry(_np_linalg_matrix_rank, ("linalg.matrix_rank",), DENSE),
    np.linalg.pinv: Entry(_np_linalg_pinv, ("linalg.pinv",), DENSE),
    np.linalg.qr: Entry(_np_linalg_qr, ("linalg.qr",), DENSE),
    np.linalg.svd: Entry(_np_linalg_svd, ("linalg.svd", "linalg.svdvals"), DENSE),
    # numpy.fft
    np.fft.fft: Entry(_fft1("fft"), ("fft.fft",), DENSE),
    np.fft.ifft: Entry(_fft1("ifft"), ("fft.ifft",), DENSE),
    np.fft.rfft: Entry(_fft1("rfft"), ("fft.rfft",), DENSE),
    np.fft.irfft: Entry(_fft1("irfft"), ("fft.irfft",), DENSE),
    np.fft.hfft: Entry(_fft1("hfft"), ("fft.hfft",), DENSE),
    np.fft.ihfft: Entry(_fft1("ihfft"), ("fft.ihfft",), DENSE),
    np.fft.fftn: Entry(_fftn("fftn"), ("fft.fftn",), DENSE),
    np.fft.ifftn: Entry(_fftn("ifftn"), ("fft.ifftn",), DENSE),
    np.fft.rfftn: Entry(_fftn("rfftn"), ("fft.rfftn",), DENSE),
    np.fft.irfftn: Entry(_fftn("irfftn"), ("fft.irfftn",), DENSE),
    np.fft.fftshift: Entry(_fftshift("fftshift"), ("fft.fftshift",), SPARSE),
    np.fft.ifftshift: Entry(_fftshift("ifftshift"), ("fft.ifftshift",), SPARSE),
}


def _atleast(ndim, arys):
    out = [_nf.atleast_nd(a, ndim) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


#: NumPy ufunc -> element-wise namespace function (``__call__``).
UFUNCS: dict[np.ufunc, Callable] = {
    np.absolute: _ew.abs,
    np.fabs: _ew.abs,
    np.arccos: _ew.acos,
    np.arccosh: _ew.acosh,
    np.add: _ew.add,
    np.arcsin: _ew.asin,
    np.arcsinh: _ew.asinh,
    np.arctan: _ew.atan,
    np.arctan2: _ew.atan2,
    np.arctanh: _ew.atanh,
    np.bitwise_and: _ew.bitwise_and,
    np.left_shift: _ew.bitwise_left_shift,
    np.invert: _ew.bitwise_invert,
    np.bitwise_or: _ew.bitwise_or,
    np.right_shift: _ew.bitwise_right_shift,
    np.bitwise_xor: _ew.bitwise_xor,
    np.ceil: _ew.ceil,
    np.conjugate: _ew.conj,
    np.copysign: _ew.copysign,
    np.cos: _ew.cos,
    np.cosh: _ew.cosh,
    np.divide: _ew.divide,
    np.equal: _ew.equal,
    np.exp: _ew.exp,
    np.expm1: _ew.expm1,
    np.floor: _ew.floor,
    np.floor_divide: _ew.floor_divide,
    np.greater: _ew.greater,
    np.greater_equal: _ew.greater_equal,
    np.hypot: _ew.hypot,
    np.isfinite: _ew.isfinite,
    np.isinf: _ew.isinf,
    np.isnan: _ew.isnan,
    np.less: _ew.less,
    np.less_equal: _ew.less_equal,
    np.log: _ew.log,
    np.log1p: _ew.log1p,
    np.log2: _ew.log2,
    np.log10: _ew.log10,
    np.logaddexp: _ew.logaddexp,
    np.logical_and: _ew.logical_and,
    np.logical_not: _ew.logical_not,
    np.logical_or: _ew.logical_or,
    np.logical_xor: _ew.logical_xor,
    np.maximum: _ew.maximum,
    np.minimum: _ew.minimum,
    np.multiply: _ew.multiply,
    np.negative: _ew.negative,
    np.nextafter: _ew.nextafter,
    np.not_equal: _ew.not_equal,
    np.positive: _ew.positive,
    np.power: _ew.pow,
    np.reciprocal: _ew.reciprocal,
    np.remainder: _ew.remainder,
    np.rint: _ew.round,
    np.sign: _ew.sign,
    np.signbit: _ew.signbit,
    np.sin: _ew.sin,
    np.sinh: _ew.sinh,
    np.square: _ew.square,
    np.sqrt: _ew.sqrt,
    np.subtract: _ew.subtract,
    np.tan: _ew.tan,
    np.tanh: _ew.tanh,
    np.trunc: _ew.trunc,
    np.matmul: lambda x1, x2: _xp().matmul(x1, x2),
    np.vecdot: lambda x1, x2, axis=-1: _xp().vecdot(x1, x2, axis=axis),
}

#: Ufuncs whose ``.reduce`` is supported -> function(x, axis, dtype, keepdims).
REDUCE: dict[np.ufunc, Callable] = {
    np.add: lambda x, axis, dtype, keepdims: _xp().sum(x, axis=axis, dtype=dtype, keepdims=keepdims),
    np.multiply: lambda x, axis, dtype, keepdims: _xp().prod(x, axis=axis, dtype=dtype, keepdims=keepdims),
    np.maximum: lambda x, axis, dtype, keepdims: _xp().max(_cast(x, dtype), axis=axis, keepdims=keepdims),
    np.minimum: lambda x, axis, dtype, keepdims: _xp().min(_cast(x, dtype), axis=axis, keepdims=keepdims),
    np.logical_and: lambda x, axis, dtype, keepdims: _nf.logical_reduce(x, axis, keepdims, any_=False),
    np.logical_or: lambda x, axis, dtype, keepdims: _nf.logical_reduce(x, axis, keepdims, any_=True),
}

#: Ufuncs whose ``.accumulate`` is supported -> function(x, axis, dtype).
ACCUMULATE: dict[np.ufunc, Callable] = {
    np.add: lambda x, axis, dtype: _xp().cumulative_sum(x, axis=axis, dtype=dtype),
    np.multiply: lambda x, axis, dtype: _xp().cumulative_prod(x, axis=axis, dtype=dtype),
}


def _cast(x, dtype):
    return x if dtype is None else _xp().astype(x, dtype)
