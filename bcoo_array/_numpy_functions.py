"""NumPy functions that the array API standard lacks, built on the namespace.

These back :mod:`._numpy_registry` (``numpy.einsum(A, ...)`` and friends on a
BCOOArray). Each follows the NumPy function of the same name
(https://numpy.org/doc/stable/reference/routines.html) and is written with
the namespace functions and the fill-value rule (:mod:`._fill_rule`), so a
sparse input stays sparse wherever the result's fill value is constant.

Results that NumPy returns as Python scalars (``allclose``,
``array_equal``, ``count_nonzero`` without an axis) are 0-d BCOOArrays here,
so they work under ``jax.jit``; ``bool()``/``int()`` convert them.
"""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np

from . import _fill_rule
from ._array_object import BCOOArray
from ._convert import from_foreign
from ._operands import PY_SCALARS, as_operand, binary_operands


def _xp():
    import bcoo_array

    return bcoo_array


# -- operands ---------------------------------------------------------------------------


def sparse_arg(x, argname: str = "a") -> BCOOArray:
    """Any array-like (BCOOArray, NumPy/JAX array, foreign sparse array, nested
    sequence, scalar) as a BCOOArray; dense input stores its non-zero entries.

    Raises
    ------
    TypeError
        If ``x`` is not array-like.
    ValueError
        If ``x`` is 64-bit while JAX's 64-bit mode is off.
    """
    if isinstance(x, BCOOArray):
        return x
    conv = foreign_arg(x)
    if conv is not None:
        return conv
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise TypeError(f"{argname} must be array-like, got {type(x).__name__}")
    return _xp().asarray(x)


def foreign_arg(x):
    """A scipy.sparse / pydata-sparse / jax.experimental.sparse array as a BCOOArray; None otherwise."""
    if isinstance(x, (BCOOArray, np.ndarray, np.generic, *PY_SCALARS)) or x is None:
        return None
    return from_foreign(x)


def elementwise_arg(x, argname: str):
    """Operand of an element-wise function: BCOOArray and Python scalars as
    they are, foreign sparse arrays converted, NumPy/JAX arrays as JAX arrays
    (so the sparse-dense rule of :mod:`._fill_rule` applies), sequences via
    :func:`bcoo_array.asarray`."""
    if isinstance(x, (BCOOArray, *PY_SCALARS)):
        return x
    conv = foreign_arg(x)
    if conv is not None:
        return conv
    if isinstance(x, (list, tuple)):
        return _xp().asarray(x)
    return as_operand(x, argname)


def _to_bcoo(x) -> BCOOArray:
    """A JAX array result as a dense-layout BCOOArray (BCOOArray unchanged)."""
    return x if isinstance(x, BCOOArray) else _fill_rule.dense_layout(x)


def _check_axes_unique(axes, ndim, argname):
    from ._layout import normalize_axes

    return normalize_axes(axes, ndim, argname)


# -- shape helpers ---------------------------------------------------------------------


def swapaxes(a, axis1, axis2):
    """Interchange two axes (``numpy.swapaxes``).

    Parameters
    ----------
    a : array_like
        Input of any dtype, at least 1-D.
    axis1, axis2 : int
        The axes to swap; negative values count from the end.

    Returns
    -------
    BCOOArray
        ``a``'s dtype; shape with the two axes exchanged. Sparse stays sparse.

    Raises
    ------
    IndexError
        If an axis is out of range.
    """
    from ._layout import normalize_axis

    x = sparse_arg(a)
    i = normalize_axis(axis1, x.ndim, "axis1")
    j = normalize_axis(axis2, x.ndim, "axis2")
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _xp().permute_dims(x, tuple(perm))


def moveaxis(a, source, destination):
    """Move axes to new positions, others keeping their order (``numpy.moveaxis``).

    Parameters
    ----------
    a : array_like
        Input of any dtype.
    source, destination : int or sequence of int
        Original and new positions, of equal length.

    Returns
    -------
    BCOOArray
        ``a``'s dtype, permuted shape.

    Raises
    ------
    ValueError
        If ``source`` and ``destination`` differ in length or repeat an axis.
    IndexError
        If an axis is out of range.
    """
    from ._layout import normalize_axis

    x = sparse_arg(a)
    src = [source] if not isinstance(source, (list, tuple)) else list(source)
    dst = [destination] if not isinstance(destination, (list, tuple)) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis(): source and destination must have the same number of elements")
    src = [normalize_axis(s, x.ndim, "source") for s in src]
    dst = [normalize_axis(d, x.ndim, "destination") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis(): repeated axis in source or destination")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _xp().permute_dims(x, tuple(order))


def atleast_nd(a, ndim: int):
    """``a`` with leading (``ndim`` = 1, 2) or NumPy's ``atleast_3d`` axes of length 1 added."""
    x = sparse_arg(a)
    xp = _xp()
    if x.ndim >= ndim:
        return x
    if ndim == 3:  # numpy.atleast_3d: (n,) -> (1, n, 1); (m, n) -> (m, n, 1)
        shape = {0: (1, 1, 1), 1: (1,) + x.shape + (1,), 2: x.shape + (1,)}[x.ndim]
        return xp.reshape(x, shape)
    return xp.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


def copy(a, order="K", subok=False):
    """A new array object with the same values (``numpy.copy``).

    The buffers are immutable JAX arrays and are shared; the new object is
    independent of ``a`` (``a[...] = v`` rebinds ``a``'s buffers only).

    Raises
    ------
    TypeError
        If ``order`` is not ``'K'``, ``'C'`` or ``'A'`` (there is no Fortran layout).
    """
    if order not in ("K", "C", "A"):
        raise TypeError(f"copy(): order={order!r} is not supported; BCOOArray has no memory order")
    return sparse_arg(a)._replace()


# -- products --------------------------------------------------------------------------


def dot(a, b):
    """Dot product with NumPy's rules (``numpy.dot``).

    0-d operands multiply; 1-D and 2-D operands use :func:`bcoo_array.matmul`;
    otherwise the last axis of ``a`` contracts with the second-to-last of ``b``.

    Returns
    -------
    BCOOArray
        Promoted dtype. Sparse-sparse and sparse-dense products keep the
        sparsity rules of :func:`bcoo_array.matmul`.

    Raises
    ------
    ValueError
        If contracted sizes differ.
    """
    xp = _xp()
    x, y = elementwise_arg(a, "a"), elementwise_arg(b, "b")
    if isinstance(x, PY_SCALARS) or isinstance(y, PY_SCALARS) or x.ndim == 0 or y.ndim == 0:
        return xp.multiply(x, y)
    if x.ndim <= 2 and y.ndim <= 2:
        return _to_bcoo(xp.matmul(x, y))
    axb = y.ndim - 2 if y.ndim >= 2 else 0
    return _to_bcoo(xp.tensordot(x, y, axes=([x.ndim - 1], [axb])))


def inner(a, b):
    """Inner product over the last axes (``numpy.inner``), no conjugation.

    Returns
    -------
    BCOOArray
        Shape ``a.shape[:-1] + b.shape[:-1]``; 0-d operands multiply.

    Raises
    ------
    ValueError
        If the last dimensions differ.
    """
    xp = _xp()
    x, y = elementwise_arg(a, "a"), elementwise_arg(b, "b")
    if isinstance(x, PY_SCALARS) or isinstance(y, PY_SCALARS) or x.ndim == 0 or y.ndim == 0:
        return xp.multiply(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"inner(): last dimensions differ: {x.shape} and {y.shape}")
    return _to_bcoo(xp.tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1])))


def outer(a, b, out=None):
    """Outer product of the flattened operands (``numpy.outer``).

    Returns
    -------
    BCOOArray
        Shape ``(a.size, b.size)``, promoted dtype; the product of sparse
        operands with fill value 0 stays sparse.

    Raises
    ------
    TypeError
        If ``out`` is given.
    """
    reject_out(out, "outer")
    xp = _xp()
    x, y = sparse_arg(a, "a"), sparse_arg(b, "b")
    return xp.multiply(xp.reshape(x, (-1, 1)), xp.reshape(y, (1, -1)))


def vdot(a, b):
    """``sum(conj(a.ravel()) * b.ravel())`` (``numpy.vdot``).

    Returns
    -------
    BCOOArray
        0-d, promoted dtype.

    Raises
    ------
    ValueError
        If the sizes differ.
    """
    xp = _xp()
    x, y = sparse_arg(a, "a"), sparse_arg(b, "b")
    if x.size != y.size:
        raise ValueError(f"vdot(): sizes differ: {x.size} and {y.size}")
    return xp.vecdot(xp.reshape(x, (-1,)), xp.reshape(y, (-1,)))


def kron(a, b):
    """Kronecker product (``numpy.kron``).

    Shapes are aligned by prepending 1s to the operand of fewer dimensions;
    the result has shape ``a.shape[k] * b.shape[k]`` on each axis and is
    built as a broadcast product reshaped, so a zero-filled sparse operand
    keeps the result sparse (pattern = product of the patterns).

    Raises
    ------
    TypeError
        If an operand is not array-like.
    """
    xp = _xp()
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
        raise TypeError("einsum(): only the subscripts-string form is supported, e.g. einsum('ij,jk->ik', a, b)")
    s = subscripts.replace(" ", "")
    if "." in s:
        raise TypeError("einsum(): ellipsis ('...') is not supported; write every axis label")
    lhs, arrow, rhs = s.partition("->")
    ins = lhs.split(",")
    if len(ins) != nops:
        raise ValueError(f"einsum(): {len(ins)} input subscripts for {nops} operands")
    for t in ins + [rhs]:
        if not all(c.isalpha() for c in t):
            raise ValueError(f"einsum(): invalid subscript {t!r}; use letters")
    if not arrow:
        counts = {}
        for c in "".join(ins):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(rhs)) != len(rhs):
        raise ValueError(f"einsum(): output subscript {rhs!r} repeats a label")
    missing = set(rhs) - set("".join(ins))
    if missing:
        raise ValueError(f"einsum(): output labels {sorted(missing)} appear in no input")
    return ins, rhs


def _einsum_diagonals(x, labels):
    """Take diagonals for labels repeated inside one operand (``'ii->i'``)."""
    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum(): label {dup!r} has sizes {x.shape[i]} and {x.shape[j]}")
        x = diagonal(x, 0, i, j)
        labels = "".join(c for k, c in enumerate(labels) if k not in (i, j)) + dup


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation over one or two operands (``numpy.einsum``).

    Parameters
    ----------
    subscripts : str
        NumPy's subscripts, explicit (``'ij,jk->ik'``) or implicit (``'ij,jk'``);
        a label repeated inside one operand takes its diagonal.
    *operands : array_like
        One or two arrays.
    dtype : dtype, optional
        Cast the operands to it first.
    optimize : bool or str
        Accepted for compatibility: with at most two operands there is only
        one contraction order, so it cannot change the result.

    Returns
    -------
    BCOOArray
        Promoted dtype. Labels summed inside one operand are reduced first;
        with no shared output labels the contraction is one
        :func:`bcoo_array.tensordot` (sparsity of :func:`bcoo_array.matmul`),
        otherwise a broadcast product summed over the contracted labels.

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
        raise TypeError("einsum(): order= and casting= are not supported; cast with dtype= or astype")
    if not operands:
        raise TypeError("einsum() needs a subscripts string and operands")
    subscripts, arrays = operands[0], operands[1:]
    if len(arrays) not in (1, 2):
        raise TypeError(f"einsum(): {len(arrays)} operands given; at most two are supported, chain np.einsum calls")
    xp = _xp()
    ins, rhs = _parse_einsum(subscripts, len(arrays))
    xs = [sparse_arg(a, f"operand {k}") for k, a in enumerate(arrays)]
    if dtype is not None:
        xs = [xp.astype(x, dtype) for x in xs]
    ops = []
    for x, lab in zip(xs, ins):
        if len(lab) != x.ndim:
            raise ValueError(f"einsum(): subscript {lab!r} for an operand of {x.ndim} dimensions")
        ops.append(list(_einsum_diagonals(x, lab)))
    sizes = {}
    for x, lab in ops:
        for c, n in zip(lab, x.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum(): label {c!r} has sizes {sizes[c]} and {n}")
    # Sum labels that appear in one operand only and not in the output.
    for k, (x, lab) in enumerate(ops):
        others = "".join(l for m, (_, l) in enumerate(ops) if m != k)
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
        res = _to_bcoo(res)
        return xp.permute_dims(res, tuple(lr.index(c) for c in rhs)) if res.ndim else res
    full = list(rhs) + contract

    def align(x, lab):
        present = [c for c in full if c in lab]
        x = xp.permute_dims(x, tuple(lab.index(c) for c in present))
        return xp.reshape(x, tuple(sizes[c] if c in lab else 1 for c in full))

    prodarr = xp.multiply(align(a, la), align(b, lb))
    if contract:
        prodarr = xp.sum(prodarr, axis=tuple(range(len(rhs), len(full))))
    return prodarr


# -- reductions ------------------------------------------------------------------------


def reject_out(out, name: str) -> None:
    """Raise TypeError when ``out`` is given (JAX buffers are immutable)."""
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(
            f"{name}(): out= is not supported for BCOOArray (JAX buffers are immutable); use the return value"
        )


def _reduced_shape(shape, axes, keepdims):
    return tuple(1 if i in axes else n for i, n in enumerate(shape) if keepdims or i not in axes)


def logical_reduce(a, axis=None, keepdims=False, *, any_: bool):
    """``all`` (``any_=False``) or ``any`` of ``a != 0`` over ``axis``.

    Returns
    -------
    BCOOArray
        bool, the reduced shape; an empty reduction gives True for ``all``
        and False for ``any`` (NumPy's identities).
    """
    xp = _xp()
    x = sparse_arg(a)
    axes = _check_axes_unique(axis, x.ndim, "axis")
    b = x if x.dtype == np.bool_ else xp.not_equal(x, 0)
    if any(x.shape[i] == 0 for i in axes):
        return xp.full(_reduced_shape(x.shape, axes, keepdims), not any_, dtype=xp.bool)
    if not axes:
        return b
    u = xp.astype(b, xp.uint8)
    r = xp.max(u, axis=axes, keepdims=keepdims) if any_ else xp.min(u, axis=axes, keepdims=keepdims)
    return xp.astype(r, xp.bool)


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero entries over ``axis`` (``numpy.count_nonzero``).

    Returns
    -------
    BCOOArray
        The default integer dtype; 0-d when ``axis`` is None (NumPy returns
        a Python int: use ``int()``).
    """
    xp = _xp()
    x = sparse_arg(a)
    b = x if x.dtype == np.bool_ else xp.not_equal(x, 0)
    axes = _check_axes_unique(axis, x.ndim, "axis")
    return xp.sum(xp.astype(b, xp.__array_namespace_info__().default_dtypes()["integral"]), axis=axes,
                  keepdims=keepdims)


def _nan_to(x: BCOOArray, value) -> BCOOArray:
    """Replace NaN entries (and a NaN fill value) by ``value``; other dtypes unchanged."""
    if x.dtype.kind not in "fc":
        return x
    return _fill_rule.unary(lambda d: jnp.where(jnp.isnan(d), jnp.asarray(value, d.dtype), d), x)


def _not_nan_count(x: BCOOArray, axes, keepdims):
    xp = _xp()
    ok = xp.logical_not(xp.isnan(x)) if x.dtype.kind in "fc" else xp.ones_like(x, dtype=xp.bool)
    return xp.sum(xp.astype(ok, xp.int32), axis=axes, keepdims=keepdims)


def _nan_reduction_args(a, axis, out, name, **unsupported):
    reject_out(out, name)
    for k, v in unsupported.items():
        if v is not _UNSET:
            raise TypeError(f"{name}(): {k}= is not supported for BCOOArray")
    x = sparse_arg(a)
    return x, _check_axes_unique(axis, x.ndim, "axis")


_UNSET = object()


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    """Sum treating NaN as 0 (``numpy.nansum``); result as :func:`bcoo_array.sum`.

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``.
    """
    x, axes = _nan_reduction_args(a, axis, out, "nansum", initial=initial, where=where)
    return _xp().sum(_nan_to(x, 0), axis=axes, dtype=dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    """Product treating NaN as 1 (``numpy.nanprod``); result as :func:`bcoo_array.prod`.

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``.
    """
    x, axes = _nan_reduction_args(a, axis, out, "nanprod", initial=initial, where=where)
    return _xp().prod(_nan_to(x, 1), axis=axes, dtype=dtype, keepdims=keepdims)


def _nan_extreme(a, axis, out, keepdims, initial, where, name, is_max):
    xp = _xp()
    x, axes = _nan_reduction_args(a, axis, out, name, initial=initial, where=where)
    if x.dtype.kind not in "fc":
        return (xp.max if is_max else xp.min)(x, axis=axes, keepdims=keepdims)
    m = (xp.max if is_max else xp.min)(_nan_to(x, -np.inf if is_max else np.inf), axis=axes, keepdims=keepdims)
    cnt = _not_nan_count(x, axes, keepdims)
    return _fill_rule.binary(lambda v, c: jnp.where(c == 0, jnp.asarray(np.nan, v.dtype), v), m, cnt)


def nanmax(a, axis=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    """Maximum ignoring NaN (``numpy.nanmax``); an all-NaN slice gives NaN
    (NumPy also warns; this does not).

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``, or a complex input.
    """
    return _nan_extreme(a, axis, out, keepdims, initial, where, "nanmax", True)


def nanmin(a, axis=None, out=None, keepdims=False, initial=_UNSET, where=_UNSET):
    """Minimum ignoring NaN (``numpy.nanmin``); see :func:`nanmax`."""
    return _nan_extreme(a, axis, out, keepdims, initial, where, "nanmin", False)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_UNSET):
    """Mean of the non-NaN entries (``numpy.nanmean``); NaN where there are none.

    Returns
    -------
    BCOOArray
        Floating dtype of ``a`` (or ``dtype``).

    Raises
    ------
    TypeError
        For ``out=`` or ``where=``, or a non-floating input without ``dtype``.
    """
    xp = _xp()
    x, axes = _nan_reduction_args(a, axis, out, "nanmean", where=where)
    if dtype is not None:
        x = xp.astype(x, dtype)
    if x.dtype.kind not in "fc":
        raise TypeError(f"nanmean() needs a floating-point array (got {x.dtype}); pass dtype= or cast first")
    s = xp.sum(_nan_to(x, 0), axis=axes, keepdims=keepdims)
    c = _not_nan_count(x, axes, keepdims)
    return xp.divide(s, xp.astype(c, x.dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_UNSET, mean=_UNSET,
           correction=_UNSET):
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
    xp = _xp()
    x, axes = _nan_reduction_args(a, axis, out, "nanvar", where=where, mean=mean)
    if correction is not _UNSET:
        if ddof != 0:
            raise ValueError("nanvar(): ddof and correction cannot both be given")
        ddof = correction
    if dtype is not None:
        x = xp.astype(x, dtype)
    if x.dtype.kind not in "fc":
        raise TypeError(f"nanvar() needs a floating-point array (got {x.dtype}); pass dtype= or cast first")
    m = nanmean(x, axis=axes, keepdims=True)
    dev = _nan_to(xp.subtract(x, m), 0)
    sq = xp.square(xp.abs(dev)) if x.dtype.kind == "c" else xp.square(dev)
    s = xp.sum(sq, axis=axes, keepdims=keepdims)
    c = _not_nan_count(x, axes, keepdims)
    denom = xp.subtract(xp.astype(c, s.dtype), float(ddof))
    pos = xp.greater(denom, 0.0)
    return _fill_rule.binary(lambda v, p: jnp.where(p, v, jnp.asarray(np.nan, v.dtype)), xp.divide(s, denom), pos)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_UNSET, mean=_UNSET,
           correction=_UNSET):
    """Square root of :func:`nanvar` (``numpy.nanstd``)."""
    return _xp().sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


def _nan_arg(a, axis, out, keepdims, name, is_max):
    xp = _xp()
    reject_out(out, name)
    x = sparse_arg(a)
    if x.dtype.kind in "fc":
        ok = _not_nan_count(x, None if axis is None else (axis,), False)
        if _all_concrete(ok) and bool(np.any(np.asarray(ok.todense()) == 0)):
            raise ValueError(f"{name}(): all-NaN slice encountered")
        x = _nan_to(x, -np.inf if is_max else np.inf)
    f = xp.argmax if is_max else xp.argmin
    return f(x, axis=axis, keepdims=keepdims)


def _all_concrete(x: BCOOArray) -> bool:
    from ._layout import is_concrete

    return is_concrete(x.data, x.indices)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum ignoring NaN (``numpy.nanargmax``).

    Raises
    ------
    ValueError
        If a slice is all NaN (checked on concrete values).
    """
    return _nan_arg(a, axis, out, keepdims, "nanargmax", True)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum ignoring NaN (``numpy.nanargmin``); see :func:`nanargmax`."""
    return _nan_arg(a, axis, out, keepdims, "nanargmin", False)


def _nancum(a, axis, dtype, out, name, value, f):
    reject_out(out, name)
    xp = _xp()
    x = _nan_to(sparse_arg(a), value)
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    return f(x, axis=axis, dtype=dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as 0 (``numpy.nancumsum``); ``axis=None`` flattens."""
    return _nancum(a, axis, dtype, out, "nancumsum", 0, _xp().cumulative_sum)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as 1 (``numpy.nancumprod``); ``axis=None`` flattens."""
    return _nancum(a, axis, dtype, out, "nancumprod", 1, _xp().cumulative_prod)


# -- comparisons -----------------------------------------------------------------------


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` element-wise (``numpy.isclose``, via :func:`jax.numpy.isclose`).

    Returns
    -------
    BCOOArray
        bool, broadcast shape; the fill value is ``isclose`` of the fills, so
        two sparse operands give a sparse result.

    Raises
    ------
    TypeError
        If an operand is not numeric.
    """
    x, y, _ = binary_operands(elementwise_arg(a, "a"), elementwise_arg(b, "b"), "isclose", "numeric")
    fn = lambda u, v: jnp.isclose(u, v, rtol=rtol, atol=atol, equal_nan=equal_nan)  # noqa: E731
    return _fill_rule.binary(fn, x, y)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every entry is :func:`isclose` (``numpy.allclose``); a 0-d bool BCOOArray."""
    return logical_reduce(isclose(a, b, rtol, atol, equal_nan), any_=False)


def array_equal(a1, a2, equal_nan=False):
    """Same shape and equal entries (``numpy.array_equal``); a 0-d bool BCOOArray.

    ``equal_nan=True`` counts NaN equal to NaN (in either part for complex).
    """
    xp = _xp()
    x, y = elementwise_arg(a1, "a1"), elementwise_arg(a2, "a2")
    if tuple(np.shape(x) if isinstance(x, PY_SCALARS) else x.shape) != tuple(
            np.shape(y) if isinstance(y, PY_SCALARS) else y.shape):
        return xp.asarray(False)
    x, y, dt = binary_operands(x, y, "array_equal")
    if equal_nan and dt.kind in "fc":
        fn = lambda u, v: (u == v) | (jnp.isnan(u) & jnp.isnan(v))  # noqa: E731
    else:
        fn = lambda u, v: u == v  # noqa: E731
    return logical_reduce(_fill_rule.binary(fn, x, y), any_=False)


# -- diagonals, rounding, norms -----------------------------------------------------------


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal over two axes, appended as the last axis (``numpy.diagonal``).

    Returns
    -------
    BCOOArray
        ``a``'s dtype; shape: the other axes, then the diagonal's length.
        Gathered with :func:`bcoo_array.take`, so sparse stays sparse.

    Raises
    ------
    ValueError
        If ``a`` has fewer than two dimensions or the axes coincide.
    IndexError
        If an axis is out of range.
    """
    from ._layout import normalize_axis

    xp = _xp()
    x = sparse_arg(a)
    if x.ndim < 2:
        raise ValueError(f"diagonal() needs at least 2 dimensions, got {x.ndim}")
    i = normalize_axis(axis1, x.ndim, "axis1")
    j = normalize_axis(axis2, x.ndim, "axis2")
    if i == j:
        raise ValueError("diagonal(): axis1 and axis2 cannot be the same")
    k = operator.index(offset)
    n, m = x.shape[i], x.shape[j]
    rest = [d for d in range(x.ndim) if d not in (i, j)]
    rows = np.arange(max(0, -k), max(0, min(n, m - k)))
    flat = (rows * m + rows + k).astype(np.int32 if n * m < 2**31 else np.int64)
    y = xp.reshape(xp.permute_dims(x, (i, j, *rest)), (n * m,) + tuple(x.shape[d] for d in rest))
    d = xp.take(y, jnp.asarray(flat), axis=0)
    return xp.permute_dims(d, tuple(range(1, d.ndim)) + (0,))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (``numpy.trace``): ``sum(diagonal(a, ...), axis=-1)``.

    Raises
    ------
    TypeError
        If ``out`` is given.
    """
    reject_out(out, "trace")
    return _xp().sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def round_(a, decimals=0, out=None):
    """Round half to even to ``decimals`` places (``numpy.round``, via :func:`jax.numpy.round`).

    The fill value is rounded too, so sparsity is kept.

    Raises
    ------
    TypeError
        If ``out`` is given or ``a`` is boolean.
    """
    reject_out(out, "round")
    x = sparse_arg(a)
    if x.dtype == np.bool_:
        raise TypeError("round() of a bool array; cast it to a numeric dtype first")
    d = operator.index(decimals)
    if d == 0:
        return _xp().round(x)
    return _fill_rule.unary(lambda v: jnp.round(v, d), x)


def _vector_norm(x, axes, keepdims, ord):
    xp = _xp()
    ax = xp.abs(x)
    if ord is None or ord == 2:
        return xp.sqrt(xp.sum(xp.square(ax), axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return xp.max(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return xp.min(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return xp.sum(xp.astype(xp.not_equal(ax, 0), ax.dtype), axis=axes, keepdims=keepdims)
    if ord == 1:
        return xp.sum(ax, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm(): ord={ord!r} is not valid for vectors")
    p = float(ord)
    return xp.pow(xp.sum(xp.pow(ax, p), axis=axes, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x, axes, keepdims, ord):
    xp = _xp()
    r, c = axes
    if ord is None or ord == "fro":
        return _vector_norm(x, axes, keepdims, None)
    if ord in (1, -1, np.inf, -np.inf):
        inner_axis, outer_axis = (r, c) if ord in (1, -1) else (c, r)
        s = xp.sum(xp.abs(x), axis=inner_axis, keepdims=True)
        out = (xp.max if ord > 0 else xp.min)(s, axis=outer_axis, keepdims=True)
        return out if keepdims else xp.squeeze(out, axis=(r, c))
    if ord in (2, -2, "nuc"):
        linalg = getattr(xp, "linalg", None)
        if linalg is None or not hasattr(linalg, "svdvals"):
            raise TypeError(f"norm(): ord={ord!r} needs singular values (bcoo_array.linalg.svdvals), not available")
        sv = linalg.svdvals(xp.permute_dims(x, tuple(d for d in range(x.ndim) if d not in axes) + (r, c)))
        out = xp.sum(sv, axis=-1) if ord == "nuc" else (xp.max if ord == 2 else xp.min)(sv, axis=-1)
        return xp.expand_dims(xp.expand_dims(out, axis=r), axis=c) if keepdims else out
    raise ValueError(f"norm(): ord={ord!r} is not valid for matrices")


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (``numpy.linalg.norm``).

    ``axis`` None: the 2-norm of the flattened array (when ``ord`` is None),
    else a vector norm for 1-D and a matrix norm for 2-D input. An int axis
    gives vector norms (``ord``: None/2, inf, -inf, 0, 1, any real p); a pair
    gives matrix norms (None/'fro', 1, -1, inf, -inf; 2, -2 and 'nuc' need
    ``bcoo_array.linalg.svdvals``).

    Returns
    -------
    BCOOArray
        Real floating dtype (integers are cast to the default float).

    Raises
    ------
    ValueError
        For an invalid ``ord`` or ``x`` of the wrong dimension.
    """
    xp = _xp()
    a = sparse_arg(x, "x")
    if a.dtype.kind in "iub":
        a = xp.astype(a, xp.__array_namespace_info__().default_dtypes()["real floating"])
    if axis is None:
        if ord is None:
            return _vector_norm(a, tuple(range(a.ndim)), keepdims, None)
        if a.ndim not in (1, 2):
            raise ValueError(f"norm(): ord={ord!r} with axis=None needs a 1-D or 2-D array, got {a.ndim}-D")
        axis = tuple(range(a.ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    from ._layout import normalize_axis

    axes = tuple(normalize_axis(v, a.ndim, "axis") for v in axes)
    if len(axes) == 1:
        return _vector_norm(a, axes, keepdims, ord)
    if len(axes) == 2 and axes[0] != axes[1]:
        return _matrix_norm(a, axes, keepdims, ord)
    raise ValueError(f"norm(): axis={axis!r} must be an int or a pair of distinct ints")
