"""NumPy functions with no counterpart in the ``bcoo_array`` namespace.

Each is composed of public namespace functions (one implementation per
algorithm: whatever the namespace already computes, such as norms,
diagonals, counts, ``all``/``any`` or axis moves, is called, not
re-implemented), so a sparse input stays sparse wherever the namespace
functions keep it sparse, and everything runs under ``jax.jit``.

Each follows the NumPy function of the same name
(https://numpy.org/doc/stable/reference/routines.html). Results that NumPy
returns as Python scalars (``allclose``, ``array_equal``) are 0-d
BCOOArrays here; ``bool()`` converts them.
"""

from __future__ import annotations

import cmath
import operator

import jax
import numpy as np

import bcoo_array as xp

from .operands import (
    PY_SCALARS,
    UNSET,
    counting_input,
    elementwise_arg,
    flat_axis,
    joined_args,
    refuse,
    reject_out,
    sparse_arg,
    where_unset,
)

# -- shapes ------------------------------------------------------------------------------------


def swapaxes(a, axis1, axis2):
    """Interchange two axes (``numpy.swapaxes``).

    Parameters
    ----------
    a : array_like
        Input, at least 1-D.
    axis1, axis2 : int
        The axes to swap; negative values count from the end.

    Returns
    -------
    BCOOArray
        [`bcoo_array.moveaxis`][] of each axis to the other's place (sparse stays sparse).

    Raises
    ------
    IndexError
        If an axis is out of range.
    """
    i, j = operator.index(axis1), operator.index(axis2)
    x = sparse_arg(a)
    if x.ndim and i % x.ndim == j % x.ndim:  # one axis named twice: nothing moves (moveaxis checks the range)
        return xp.moveaxis(x, i, j)
    return xp.moveaxis(x, (i, j), (j, i))


def atleast_nd(a, ndim: int):
    """``a`` with at least ``ndim`` dimensions, as ``numpy.atleast_1d`` / ``2d`` / ``3d``.

    Parameters
    ----------
    a : array_like
        Input.
    ndim : {1, 2, 3}
        1 and 2 prepend axes of length 1; 3 follows ``numpy.atleast_3d``:
        ``()`` becomes ``(1, 1, 1)``, ``(n,)`` ``(1, n, 1)`` and ``(m, n)`` ``(m, n, 1)``.

    Returns
    -------
    BCOOArray
        [`bcoo_array.reshape`][] of ``a`` (sparse stays sparse).
    """
    x = sparse_arg(a)
    if x.ndim >= ndim:
        return x
    if ndim == 3:
        return xp.reshape(x, {0: (1, 1, 1), 1: (1, *x.shape, 1), 2: (*x.shape, 1)}[x.ndim])
    return xp.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


def _atleast(ndim, arys):
    out = [atleast_nd(a, ndim) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys):
    """Each input with at least one dimension (``numpy.atleast_1d``); see ``atleast_nd``.

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        One array for one input, else a tuple.
    """
    return _atleast(1, arys)


def atleast_2d(*arys):
    """Each input with at least two dimensions (``numpy.atleast_2d``); see ``atleast_nd``.

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        One array for one input, else a tuple.
    """
    return _atleast(2, arys)


def atleast_3d(*arys):
    """Each input with at least three dimensions (``numpy.atleast_3d``); see ``atleast_nd``.

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        One array for one input, else a tuple.
    """
    return _atleast(3, arys)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """Join along the second axis, or the first for 1-D inputs (``numpy.hstack``).

    NumPy's semantics, not those of [`bcoo_array.hstack`][] (scipy's
    block form): [`bcoo_array.concat`][] of the inputs made at least 1-D.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For ``casting`` other than ``'same_kind'``.
    """
    xs = [atleast_nd(x, 1) for x in joined_args(tup, dtype, casting, "hstack")]
    return xp.concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """Join along the first axis the inputs made at least 2-D (``numpy.vstack``).

    NumPy's semantics, not those of [`bcoo_array.vstack`][] (scipy's
    block form).

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For ``casting`` other than ``'same_kind'``.
    """
    xs = [atleast_nd(x, 2) for x in joined_args(tup, dtype, casting, "vstack")]
    return xp.concat(xs, axis=0)


# -- NaN-aware reductions ----------------------------------------------------------------------


def _nan_to(x, value):
    """``x`` with NaN entries (and a NaN fill value) replaced by ``value``; non-floating ``x`` unchanged."""
    if x.dtype.kind not in "fc":
        return x
    return xp.where(xp.isnan(x), value, x)


def _count_not_nan(x, axis, keepdims):
    """Number of non-NaN entries of floating ``x`` over ``axis``: [`bcoo_array.count_nonzero`][]."""
    return xp.count_nonzero(xp.logical_not(xp.isnan(x)), axis=axis, keepdims=keepdims)


def _nan_input(a, out, name, **unsupported):
    reject_out(out, name)
    refuse(name, **unsupported)
    return sparse_arg(a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=UNSET, where=True):
    """Sum treating NaN as 0 (``numpy.nansum``).

    Returns
    -------
    BCOOArray
        As [`bcoo_array.sum`][] of ``a`` with NaN replaced (booleans count as integers).

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``.
    """
    x = _nan_input(a, out, "nansum", initial=initial, where=where_unset(where))
    return xp.sum(counting_input(_nan_to(x, 0), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=UNSET, where=True):
    """Product treating NaN as 1 (``numpy.nanprod``).

    Returns
    -------
    BCOOArray
        As [`bcoo_array.prod`][] of ``a`` with NaN replaced (booleans count as integers).

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``.
    """
    x = _nan_input(a, out, "nanprod", initial=initial, where=where_unset(where))
    return xp.prod(counting_input(_nan_to(x, 1), dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def _nan_extreme(name, a, axis, out, keepdims, initial, where, is_max):
    x = _nan_input(a, out, name, initial=initial, where=where_unset(where))
    reduce = xp.max if is_max else xp.min
    if x.dtype.kind not in "fc":
        return reduce(x, axis=axis, keepdims=keepdims)
    m = reduce(_nan_to(x, -np.inf if is_max else np.inf), axis=axis, keepdims=keepdims)
    return xp.where(xp.equal(_count_not_nan(x, axis, keepdims), 0), np.nan, m)


def nanmax(a, axis=None, out=None, keepdims=False, initial=UNSET, where=True):
    """Maximum ignoring NaN (``numpy.nanmax``).

    Returns
    -------
    BCOOArray
        As [`bcoo_array.max`][]; NaN for an all-NaN slice (NumPy also
        warns; this does not).

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``, or a complex input.
    """
    return _nan_extreme("nanmax", a, axis, out, keepdims, initial, where, True)


def nanmin(a, axis=None, out=None, keepdims=False, initial=UNSET, where=True):
    """Minimum ignoring NaN (``numpy.nanmin``); see ``nanmax``.

    Returns
    -------
    BCOOArray
        As [`bcoo_array.min`][]; NaN for an all-NaN slice.

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``, or a complex input.
    """
    return _nan_extreme("nanmin", a, axis, out, keepdims, initial, where, False)


def _floating(name, x, dtype):
    if dtype is not None:
        x = xp.astype(x, dtype)
    if x.dtype.kind not in "fc":
        raise TypeError(f"numpy.{name}() needs a floating-point array (got {x.dtype}); pass dtype= or cast first")
    return x


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Mean of the non-NaN entries (``numpy.nanmean``): their sum over their count.

    Returns
    -------
    BCOOArray
        Floating dtype of ``a`` (or ``dtype``); NaN where every entry is NaN.

    Raises
    ------
    TypeError
        For ``out=`` or ``where=``, or a non-floating input without ``dtype``.
    """
    x = _floating("nanmean", _nan_input(a, out, "nanmean", where=where_unset(where)), dtype)
    total = xp.sum(_nan_to(x, 0), axis=axis, keepdims=keepdims)
    return xp.divide(total, xp.astype(_count_not_nan(x, axis, keepdims), x.dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=UNSET,
           correction=UNSET):
    """Variance of the non-NaN entries (``numpy.nanvar``): ``sum(|x - mean|**2) / (n - ddof)``.

    Returns
    -------
    BCOOArray
        Real floating dtype; NaN where ``n - ddof <= 0``.

    Raises
    ------
    TypeError
        For ``out=``, ``where=`` or ``mean=``, or a non-floating input.
    ValueError
        If both ``ddof`` and ``correction`` are given.
    """
    x = _floating("nanvar", _nan_input(a, out, "nanvar", where=where_unset(where), mean=mean), dtype)
    if correction is not UNSET:
        if ddof != 0:
            raise ValueError("numpy.nanvar(): ddof and correction cannot both be given")
        ddof = correction
    dev = _nan_to(xp.subtract(x, nanmean(x, axis=axis, keepdims=True)), 0)
    total = xp.sum(xp.square(xp.abs(dev)), axis=axis, keepdims=keepdims)
    denom = xp.subtract(xp.astype(_count_not_nan(x, axis, keepdims), total.dtype), float(ddof))
    return xp.where(xp.greater(denom, 0.0), xp.divide(total, denom), np.nan)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=UNSET,
           correction=UNSET):
    """Standard deviation of the non-NaN entries (``numpy.nanstd``): the square root of ``nanvar``.

    Returns
    -------
    BCOOArray
        Real floating dtype; NaN where ``n - ddof <= 0``.

    Raises
    ------
    TypeError
        As ``nanvar``.
    """
    return xp.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


def _nan_arg(name, a, axis, out, keepdims, is_max):
    reject_out(out, name)
    x = sparse_arg(a)
    if x.dtype.kind in "fc":
        seen = _count_not_nan(x, axis, False)

        if seen._concrete() and bool(xp.any(xp.equal(seen, 0))):
            raise ValueError(f"numpy.{name}(): all-NaN slice encountered")
        x = _nan_to(x, -np.inf if is_max else np.inf)
    return (xp.argmax if is_max else xp.argmin)(x, axis=axis, keepdims=keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum ignoring NaN (``numpy.nanargmax``).

    Returns
    -------
    BCOOArray
        As [`bcoo_array.argmax`][] (``axis=None``: index into the flattened array).

    Raises
    ------
    TypeError
        For ``out=``.
    ValueError
        If a slice is all NaN (checked on concrete values).
    """
    return _nan_arg("nanargmax", a, axis, out, keepdims, True)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum ignoring NaN (``numpy.nanargmin``); see ``nanargmax``.

    Returns
    -------
    BCOOArray
        As [`bcoo_array.argmin`][].

    Raises
    ------
    TypeError
        For ``out=``.
    ValueError
        If a slice is all NaN (checked on concrete values).
    """
    return _nan_arg("nanargmin", a, axis, out, keepdims, False)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as 0 (``numpy.nancumsum``); ``axis=None`` flattens.

    Returns
    -------
    BCOOArray
        As [`bcoo_array.cumulative_sum`][].

    Raises
    ------
    TypeError
        For ``out=``.
    """
    reject_out(out, "nancumsum")
    x, axis = flat_axis(counting_input(_nan_to(sparse_arg(a), 0), dtype), axis)
    return xp.cumulative_sum(x, axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as 1 (``numpy.nancumprod``); ``axis=None`` flattens.

    Returns
    -------
    BCOOArray
        As [`bcoo_array.cumulative_prod`][].

    Raises
    ------
    TypeError
        For ``out=``.
    """
    reject_out(out, "nancumprod")
    x, axis = flat_axis(counting_input(_nan_to(sparse_arg(a), 1), dtype), axis)
    return xp.cumulative_prod(x, axis=axis, dtype=dtype)


# -- comparisons -------------------------------------------------------------------------------


def _inexact_pair(x, y):
    """``x``, ``y`` in one inexact dtype (NumPy's ``result_type(x, y, 1.0)``); Python scalars as 0-d arrays."""
    arrays = [v for v in (x, y) if not isinstance(v, PY_SCALARS)]
    if not arrays:
        raise TypeError("numpy.isclose() needs at least one array argument")
    dt = xp.result_type(*arrays)
    if dt.kind not in "fc":
        dt = xp.__array_namespace_info__().default_dtypes()["real floating"]
    if any(isinstance(v, complex) for v in (x, y)) and dt.kind != "c":
        dt = xp.complex128 if dt == xp.float64 else xp.complex64
    return tuple(xp.asarray(v, dtype=dt) if isinstance(v, PY_SCALARS) else xp.astype(v, dt) for v in (x, y))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Element-wise ``|a - b| <= atol + rtol * |b|`` (``numpy.isclose``).

    As NumPy: infinities are close only to themselves, NaN to nothing unless
    ``equal_nan``, and the comparison is made in floating point.

    Returns
    -------
    BCOOArray
        bool, broadcast shape. Composed of element-wise namespace functions,
        so two sparse operands give a sparse result whose fill value is
        ``isclose`` of the fill values.

    Raises
    ------
    TypeError
        If both operands are Python scalars or an operand is not numeric.
    """
    x, y = _inexact_pair(elementwise_arg(a, "a"), elementwise_arg(b, "b"))
    within = xp.less_equal(xp.abs(xp.subtract(x, y)), xp.add(xp.multiply(xp.abs(y), rtol), atol))
    finite = xp.logical_and(xp.isfinite(x), xp.isfinite(y))
    close = xp.where(finite, within, xp.equal(x, y))
    if equal_nan:
        close = xp.logical_or(close, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every entry is ``isclose`` (``numpy.allclose``).

    Returns
    -------
    BCOOArray
        0-d bool (NumPy returns a Python bool: use ``bool()``).
    """
    return xp.all(isclose(a, b, rtol, atol, equal_nan))


def _shape_of(v):
    return np.shape(v) if isinstance(v, PY_SCALARS) else tuple(v.shape)


def array_equal(a1, a2, equal_nan=False):
    """Same shape and equal entries (``numpy.array_equal``).

    Parameters
    ----------
    a1, a2 : array_like
        The operands.
    equal_nan : bool
        Count NaN equal to NaN (in either part, for complex).

    Returns
    -------
    BCOOArray
        0-d bool (NumPy returns a Python bool: use ``bool()``); False for different shapes.
    """
    x, y = elementwise_arg(a1, "a1"), elementwise_arg(a2, "a2")
    if _shape_of(x) != _shape_of(y):
        return xp.asarray(False)
    if isinstance(x, PY_SCALARS) and isinstance(y, PY_SCALARS):
        return xp.asarray(x == y)
    same = xp.equal(x, y)
    if equal_nan:
        nan_x, nan_y = (cmath.isnan(v) if isinstance(v, PY_SCALARS) else xp.isnan(v) for v in (x, y))
        same = xp.logical_or(same, xp.logical_and(nan_x, nan_y))
    return xp.all(same)


# -- products ----------------------------------------------------------------------------------


def _is_scalar_like(v):
    return isinstance(v, PY_SCALARS) or v.ndim == 0


def dot(a, b):
    """Dot product with NumPy's rules (``numpy.dot``).

    0-d operands multiply; 1-D and 2-D operands use [`bcoo_array.matmul`][];
    otherwise the last axis of ``a`` contracts with the second-to-last of ``b``
    ([`bcoo_array.tensordot`][]).

    Returns
    -------
    BCOOArray
        Promoted dtype; sparsity as [`bcoo_array.matmul`][] / [`bcoo_array.tensordot`][].

    Raises
    ------
    ValueError
        If contracted sizes differ.
    """
    x, y = elementwise_arg(a, "a"), elementwise_arg(b, "b")
    if _is_scalar_like(x) or _is_scalar_like(y):
        return xp.multiply(x, y)
    if x.ndim <= 2 and y.ndim <= 2:
        return xp.matmul(x, y)
    return xp.tensordot(x, y, axes=([x.ndim - 1], [max(y.ndim - 2, 0)]))


def inner(a, b):
    """Inner product over the last axes, without conjugation (``numpy.inner``).

    Returns
    -------
    BCOOArray
        Shape ``a.shape[:-1] + b.shape[:-1]`` ([`bcoo_array.tensordot`][]); 0-d operands multiply.

    Raises
    ------
    ValueError
        If the last dimensions differ.
    """
    x, y = elementwise_arg(a, "a"), elementwise_arg(b, "b")
    if _is_scalar_like(x) or _is_scalar_like(y):
        return xp.multiply(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"numpy.inner(): last dimensions differ: {x.shape} and {y.shape}")
    return xp.tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]))


def vdot(a, b):
    """``sum(conj(a.ravel()) * b.ravel())`` (``numpy.vdot``): [`bcoo_array.vecdot`][] of the flattened operands.

    Returns
    -------
    BCOOArray
        0-d, promoted dtype.

    Raises
    ------
    ValueError
        If the sizes differ.
    """
    x, y = sparse_arg(a, "a"), sparse_arg(b, "b")
    if x.size != y.size:
        raise ValueError(f"numpy.vdot(): sizes differ: {x.size} and {y.size}")
    return xp.vecdot(xp.reshape(x, (-1,)), xp.reshape(y, (-1,)))


def kron(a, b):
    """Kronecker product of n-D operands (``numpy.kron``).

    NumPy's semantics, not those of [`bcoo_array.kron`][] (scipy's: 2-D,
    zero fill only). Shapes are aligned by prepending 1s to the operand of
    fewer dimensions; the result, of shape ``a.shape[k] * b.shape[k]`` on
    each axis, is a broadcast product reshaped, so zero-filled sparse
    operands give a sparse result (the product of the patterns).

    Returns
    -------
    BCOOArray
        Promoted dtype.

    Raises
    ------
    TypeError
        If an operand is not array-like.
    """
    x, y = sparse_arg(a, "a"), sparse_arg(b, "b")
    nd = max(x.ndim, y.ndim)
    if nd == 0:
        return xp.multiply(x, y)
    xs = (1,) * (nd - x.ndim) + x.shape
    ys = (1,) * (nd - y.ndim) + y.shape
    xe = xp.reshape(x, tuple(v for s in xs for v in (s, 1)))
    ye = xp.reshape(y, tuple(v for s in ys for v in (1, s)))
    return xp.reshape(xp.multiply(xe, ye), tuple(p * q for p, q in zip(xs, ys)))


def _parse_einsum(subscripts, nops):
    if not isinstance(subscripts, str):
        raise TypeError("numpy.einsum(): only the subscripts-string form is supported, "
                        "e.g. einsum('ij,jk->ik', a, b)")
    s = subscripts.replace(" ", "")
    if "." in s:
        raise TypeError("numpy.einsum(): ellipsis ('...') is not supported; write every axis label")
    lhs, arrow, rhs = s.partition("->")
    ins = lhs.split(",")
    if len(ins) != nops:
        raise ValueError(f"numpy.einsum(): {len(ins)} input subscripts for {nops} operands")
    for t in ins + [rhs]:
        if not all(c.isalpha() for c in t):
            raise ValueError(f"numpy.einsum(): invalid subscript {t!r}; use letters")
    if not arrow:  # implicit output: the labels seen once, sorted
        joined = "".join(ins)
        rhs = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    if len(set(rhs)) != len(rhs):
        raise ValueError(f"numpy.einsum(): output subscript {rhs!r} repeats a label")
    missing = set(rhs) - set("".join(ins))
    if missing:
        raise ValueError(f"numpy.einsum(): output labels {sorted(missing)} appear in no input")
    return ins, rhs


def _einsum_diagonals(x, labels):
    """Take the diagonal ([`bcoo_array.linalg.diagonal`][]) for each label repeated in one operand (``'ii->i'``)."""
    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"numpy.einsum(): label {dup!r} has sizes {x.shape[i]} and {x.shape[j]}")
        x = xp.linalg.diagonal(xp.moveaxis(x, (i, j), (-2, -1)))
        labels = "".join(c for k, c in enumerate(labels) if k not in (i, j)) + dup


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation over one or two operands (``numpy.einsum``).

    Parameters
    ----------
    subscripts : str
        The first positional argument: NumPy's subscripts, explicit
        (``'ij,jk->ik'``) or implicit (``'ij,jk'``); a label repeated inside
        one operand takes its diagonal.
    *operands : array_like
        One or two arrays.
    dtype : dtype, optional
        Cast the operands to it first.
    optimize : bool or str
        Accepted for compatibility: with at most two operands there is only
        one contraction order.

    Returns
    -------
    BCOOArray
        Promoted dtype. Labels summed inside one operand are reduced first
        ([`bcoo_array.sum`][]); with no shared output labels the
        contraction is one [`bcoo_array.tensordot`][], otherwise a
        broadcast product summed over the contracted labels.

    Raises
    ------
    TypeError
        For ``out=``, more than two operands, ellipses, the interleaved
        operand form, or a non-default ``order``/``casting``.
    ValueError
        For malformed subscripts or mismatched sizes.
    """
    reject_out(out, "einsum")
    if order != "K" or casting != "safe":
        raise TypeError("numpy.einsum(): order= and casting= are not supported; cast with dtype= or astype")
    if not operands:
        raise TypeError("numpy.einsum() needs a subscripts string and operands")
    subscripts, arrays = operands[0], operands[1:]
    if len(arrays) not in (1, 2):
        raise TypeError(f"numpy.einsum(): {len(arrays)} operands given; at most two are supported, "
                        "chain np.einsum calls")
    ins, rhs = _parse_einsum(subscripts, len(arrays))
    xs = [sparse_arg(a, f"operand {k}") for k, a in enumerate(arrays)]
    if dtype is not None:
        xs = [xp.astype(x, dtype) for x in xs]
    ops = []
    for x, lab in zip(xs, ins):
        if len(lab) != x.ndim:
            raise ValueError(f"numpy.einsum(): subscript {lab!r} for an operand of {x.ndim} dimensions")
        ops.append(list(_einsum_diagonals(x, lab)))
    sizes = {}
    for x, lab in ops:
        for c, n in zip(lab, x.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"numpy.einsum(): label {c!r} has sizes {sizes[c]} and {n}")
    # Sum the labels that appear in one operand only and not in the output.
    for k, (x, lab) in enumerate(ops):
        others = "".join(lb for m, (_, lb) in enumerate(ops) if m != k)
        drop = tuple(i for i, c in enumerate(lab) if c not in rhs and c not in others)
        if drop:
            x = xp.sum(x, axis=drop)
            lab = "".join(c for i, c in enumerate(lab) if i not in drop)
        ops[k] = [x, lab]
    if len(ops) == 1:
        x, lab = ops[0]
        return xp.permute_dims(x, tuple(lab.index(c) for c in rhs)) if x.ndim else x
    (a, la), (b, lb) = ops
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in rhs]
    contract = [c for c in shared if c not in rhs]
    if not batch:
        res = xp.tensordot(a, b, axes=([la.index(c) for c in contract], [lb.index(c) for c in contract]))
        lr = [c for c in la if c not in contract] + [c for c in lb if c not in contract]
        return xp.permute_dims(res, tuple(lr.index(c) for c in rhs)) if res.ndim else res
    full = list(rhs) + contract

    def align(x, lab):
        present = [c for c in full if c in lab]
        x = xp.permute_dims(x, tuple(lab.index(c) for c in present))
        return xp.reshape(x, tuple(sizes[c] if c in lab else 1 for c in full))

    product = xp.multiply(align(a, la), align(b, lb))
    if contract:
        product = xp.sum(product, axis=tuple(range(len(rhs), len(full))))
    return product


# -- indices of non-zero entries ---------------------------------------------------------------


def argwhere(a):
    """Indices of the non-zero entries, one row per entry (``numpy.argwhere``).

    From the stored entries when the fill value is zero
    ([`bcoo_array.nonzero`][]: row-major order, explicit zeros left out);
    with a non-zero fill value every unstored position is listed, which
    [`bcoo_array.nonzero`][] allows within the densification limit.

    Parameters
    ----------
    a : array_like
        Input of any dimension.

    Returns
    -------
    BCOOArray
        Shape ``(N, a.ndim)``, integer (the namespace's index dtype), in dense
        layout: the values of NumPy's index array. A 0-d input gives shape
        ``(1, 0)`` when non-zero, else ``(0, 0)``.

    Raises
    ------
    MemoryError
        For a non-zero fill value whose listing exceeds the densification limit.
    """
    x = sparse_arg(a)
    if x.ndim == 0:
        rows = 1 if bool(xp.astype(x, xp.bool)) else 0
        return xp.zeros((rows, 0), dtype=xp.__array_namespace_info__().default_dtypes()["indexing"])
    return xp.stack(xp.nonzero(x), axis=1)


def flatnonzero(a):
    """Positions of the non-zero entries in the flattened input (``numpy.flatnonzero``).

    [`bcoo_array.nonzero`][] of ``a`` reshaped to one dimension (a sparse
    reshape): from the stored entries when the fill value is zero.

    Parameters
    ----------
    a : array_like
        Input of any dimension.

    Returns
    -------
    BCOOArray
        1-D integer positions in row-major order, dense layout.

    Raises
    ------
    MemoryError
        For a non-zero fill value whose listing exceeds the densification limit.
    """
    return xp.nonzero(xp.reshape(sparse_arg(a), (-1,)))[0]


# -- weighted average --------------------------------------------------------------------------


def _weights(w, x, axes):
    """NumPy's check of the weights' shape, and ``w`` reshaped to broadcast against ``x``."""
    shape = tuple(w.shape)
    if shape == x.shape:
        return w
    if axes is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    if shape != tuple(x.shape[ax] for ax in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
    order = tuple(int(i) for i in np.argsort(axes))
    target = tuple(s if ax in axes else 1 for ax, s in enumerate(x.shape))
    if isinstance(w, xp.BCOOArray):
        return xp.reshape(xp.permute_dims(w, order), target)
    return np.reshape(np.transpose(w, order), target)


def average(a, axis=None, weights=None, returned=False, *, keepdims=UNSET):
    """Weighted average along the given axes (``numpy.average``).

    Composed of [`bcoo_array.sum`][], [`bcoo_array.multiply`][] and
    [`bcoo_array.divide`][] (without weights, [`bcoo_array.mean`][]), so the
    sums are taken over the stored entries plus the fill value.

    Parameters
    ----------
    a : array_like
        The values.
    axis : int, tuple of int or None
        Axes to average over; None averages every entry.
    weights : array_like, optional
        Of ``a``'s shape, or, with ``axis``, of the shape of ``a`` along those
        axes. A BCOOArray or a dense (NumPy / JAX) array.
    returned : bool
        Also return the sum of the weights (the count without weights),
        broadcast to the average's shape.
    keepdims : bool, optional
        Keep the reduced axes with length 1.

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        The average (integers and booleans averaged in the default floating
        dtype, as NumPy's ``result_type(a, weights, float64)``); with
        ``returned``, ``(average, sum_of_weights)``.

    Raises
    ------
    TypeError
        If the shapes of ``a`` and ``weights`` differ and ``axis`` is None.
    ValueError
        If ``weights`` does not match ``a`` along ``axis``.
    ZeroDivisionError
        If the weights sum to zero along an axis (checked on concrete values).
    """
    x = sparse_arg(a)
    kd = False if keepdims is UNSET else bool(keepdims)
    axes = None if axis is None else tuple(
        int(v) for v in np.lib.array_utils.normalize_axis_tuple(axis, x.ndim, "axis"))
    if weights is None:
        avg = xp.mean(_mean_input(x), axis=axes, keepdims=kd)
        if not returned:
            return avg
        count = x.size // max(avg.size, 1) if avg.size else 0
        return avg, xp.full(avg.shape, count, dtype=avg.dtype)
    w = elementwise_arg(weights, "weights")
    if isinstance(w, PY_SCALARS):
        w = np.asarray(w)
    w = _weights(w, x, axes)
    wdt = np.dtype(w.dtype)
    if x.dtype.kind in "iub":
        rdt = xp.result_type(x.dtype, wdt, xp.__array_namespace_info__().default_dtypes()["real floating"])
    else:
        rdt = xp.result_type(x.dtype, wdt)
    xc = xp.astype(x, rdt)
    wc = xp.astype(w, rdt) if isinstance(w, xp.BCOOArray) else sparse_arg(np.asarray(w).astype(rdt), "weights")
    scl = xp.sum(wc, axis=axes, keepdims=kd)
    if scl._concrete() and bool(xp.any(xp.equal(scl, 0))):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = xp.divide(xp.sum(xp.multiply(xc, wc), axis=axes, keepdims=kd), scl)
    if not returned:
        return avg
    if scl.shape != avg.shape:
        scl = xp.broadcast_to(scl, avg.shape)
    return avg, scl


def _mean_input(x):
    """Integers and booleans in the default float (NumPy's mean rule)."""
    if x.dtype.kind in "iub":
        return xp.astype(x, xp.__array_namespace_info__().default_dtypes()["real floating"])
    return x


# -- memory overlap ----------------------------------------------------------------------------


def _memory(x):
    """The buffers behind ``x``: NumPy views in host memory, and JAX buffers that have none (device, traced)."""
    if isinstance(x, xp.BCOOArray):
        views = [b for b in (x._hdata, x._hindices) if isinstance(b, np.ndarray)]
        try:
            host = x._host_buffers()
        except Exception:  # a tangent without indices (NoPattern) has no pattern buffer to compare
            host = None
        if host is not None:
            views += [b for b in host if isinstance(b, np.ndarray)]
        others = [b for b in (x._data, x._indices) if isinstance(b, (jax.Array, jax.core.Tracer))]
        return views, others
    if isinstance(x, np.ndarray):
        return [x], []
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        try:
            return [np.from_dlpack(x)], [x]  # a zero-copy view of a CPU buffer
        except Exception:  # on an accelerator, or not exportable: compare the buffer itself
            return [], [x]
    if isinstance(x, jax.core.Tracer):
        return [], [x]
    return [], []  # scalars and sequences: NumPy would make a fresh array


def _overlap(a, b, numpy_test) -> bool:
    va, oa = _memory(a)
    vb, ob = _memory(b)
    if any(numpy_test(p, q) for p in va for q in vb):
        return True
    for p in oa:
        for q in ob:
            if p is q:
                return True
            if isinstance(p, jax.core.Tracer) or isinstance(q, jax.core.Tracer):
                continue
            try:
                if p.devices() != q.devices():
                    continue
                lo_p, lo_q = p.unsafe_buffer_pointer(), q.unsafe_buffer_pointer()
            except Exception:  # deleted, sharded or without a single buffer: identity decides
                continue
            if p.nbytes and q.nbytes and lo_p < lo_q + q.nbytes and lo_q < lo_p + p.nbytes:
                return True
    return False


def may_share_memory(a, b, /, max_work=None):
    """Whether ``a`` and ``b`` might share memory (``numpy.may_share_memory``).

    Two BCOOArrays share memory when a buffer of one (``data``, ``indices``,
    their NumPy host copies or host views) is a buffer of the other or
    overlaps it; a BCOOArray and a NumPy array share memory only when the
    NumPy array is a view of one of the BCOOArray's host buffers (NumPy's
    bounds test, as ``numpy.may_share_memory`` itself); a JAX array, when it
    is one of the buffers or overlaps one. Scalars and sequences share nothing.

    Parameters
    ----------
    a, b : object
        BCOOArrays, NumPy or JAX arrays, anything else.
    max_work : int, optional
        Passed to NumPy for pairs of NumPy buffers.

    Returns
    -------
    bool
    """
    def test(p, q):
        return bool(np.may_share_memory(p, q) if max_work is None else np.may_share_memory(p, q, max_work))

    return _overlap(a, b, test)


def shares_memory(a, b, /, max_work=None):
    """Whether ``a`` and ``b`` share memory, exactly (``numpy.shares_memory``).

    As ``may_share_memory``, with NumPy's exact overlap test for pairs of
    NumPy buffers (host views of JAX buffers included); JAX buffers without
    a host view are contiguous, so their bounds decide.

    Parameters
    ----------
    a, b : object
        BCOOArrays, NumPy or JAX arrays, anything else.
    max_work : int, optional
        Passed to NumPy (``-1``, exact, by default).

    Returns
    -------
    bool

    Raises
    ------
    numpy.exceptions.TooHardError
        When NumPy's exact test exceeds ``max_work``.
    """
    def test(p, q):
        return bool(np.shares_memory(p, q) if max_work is None else np.shares_memory(p, q, max_work))

    return _overlap(a, b, test)
