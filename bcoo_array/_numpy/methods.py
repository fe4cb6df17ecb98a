"""NumPy's ufunc methods on BCOOArrays: ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

Which ufunc gets which method is decided by the tables of ``.registry``
(``REDUCE``, ``ACCUMULATE``, ``UFUNCS``) and ``.registry.method_support``;
``.protocol`` looks the implementation up and calls the method here.

* ``reduce``: a reduction of the namespace computed from the stored entries
  plus the fill value (``add`` is [`bcoo_array.sum`][], ``maximum``
  [`bcoo_array.max`][], ``logical_xor`` the parity of
  [`bcoo_array.count_nonzero`][], the ``bitwise_*`` reductions one bit at a
  time, ...); each runs under ``jax.jit``. A ufunc without one is refused
  (``.foreign.refuse_or_densify``): its reduction would need the dense values.
* ``reduceat``: ``reduce`` of each segment, joined with [`bcoo_array.concat`][].
* ``accumulate``: ``add`` and ``multiply`` are [`bcoo_array.cumulative_sum`][]
  and [`bcoo_array.cumulative_prod`][]. Other binary ufuncs accumulate
  with NumPy on the dense values after the densification guard: a running
  value is dense by nature, like a cumulative sum (dense layout).
* ``outer``: sparse operands whose stored values meet the other operand's
  fill value in the result's fill value (``f(x, fill_b) == f(fill_a, y) ==
  f(fill_a, fill_b)``, e.g. ``multiply`` of zero-filled arrays) give the
  product of the two patterns (``nse = nse_a * nse_b``); otherwise the
  operands are reshaped and broadcast through the element-wise function
  (union of the broadcast patterns, sparse where the fill rule allows).
* ``at``: NumPy's unbuffered in-place operation as a read-modify-write of
  the touched positions only: their current values are read (``A[idx]``),
  NumPy's ``ufunc.at`` runs on that small dense copy (so repeated indices
  accumulate exactly as in NumPy) and the results are assigned back
  (``A[idx] = ...``, which rebinds ``A``'s buffers, as ``__setitem__`` does).
"""

from __future__ import annotations

import operator

import numpy as np

import bcoo_array as xp

from .._dtypes import x64_enabled
from .._shapes import normalize_axes, normalize_axis
from . import foreign
from .extras import nanmax, nanmin
from .operands import (
    PY_SCALARS,
    check_ufunc_kwargs,
    counting_input,
    densify,
    elementwise_arg,
    is_traced,
    sparse_arg,
)

# -- calling a namespace function with NumPy's dtype rules ------------------------------------------

_LOGICAL = frozenset({np.logical_and, np.logical_or, np.logical_xor, np.logical_not})
_HALF_WIDTH = {"float64": np.dtype(np.float32), "complex128": np.dtype(np.complex64), "int64": np.dtype(np.int32),
               "uint64": np.dtype(np.uint32)}


def _dtype_of(a):
    return type(a) if isinstance(a, PY_SCALARS) else np.dtype(a.dtype)


def _astype(a, dt):
    if isinstance(a, PY_SCALARS) or np.dtype(a.dtype) == dt:
        return a
    return xp.astype(a, dt) if isinstance(a, xp.BCOOArray) else a.astype(dt)


def _truth(a):
    """``a != 0`` (NumPy's truth of any number: NaN and complex numbers with a non-zero part are True)."""
    if isinstance(a, PY_SCALARS):
        return bool(a)
    if np.dtype(a.dtype) == np.bool_:
        return a
    if isinstance(a, xp.BCOOArray):
        return xp.not_equal(a, np.zeros((), a.dtype)[()])
    return a != 0


def call_with_numpy_dtypes(ufunc, fn, args, extra=None):
    """``fn(*args)`` (the namespace function of ``ufunc``) with the operands NumPy's loop would take.

    NumPy casts the operands to the dtypes of the loop it resolves
    (``ufunc.resolve_dtypes``): ``numpy.sqrt`` of integers computes in
    float64, ``numpy.add`` of an int8 array and ``2.5`` in float64,
    ``numpy.sin`` of booleans in float16. The standard's functions refuse
    some of those operands (``sqrt`` of integers), so the operands are cast
    first; Python scalars stay weak. The logical ufuncs take NumPy's truth of
    any number (``x != 0``). A boolean loop the namespace refuses (``add``,
    ``absolute`` of booleans) runs in int8 and keeps the non-zero results;
    another loop it refuses (``reciprocal`` of integers) is NumPy's own on
    the stored values and the fill value (``.foreign.apply``, concrete
    operands only). With
    JAX's 64-bit mode off, a 64-bit loop NumPy picks for narrower operands is
    taken at half width (``sqrt`` of int32 in float32, as JAX does); 64-bit
    arrays themselves are left to the namespace, which refuses them (64-bit
    NumPy scalars arrive at 32 bits already, ``.operands.elementwise_arg``).

    Parameters
    ----------
    ufunc : numpy.ufunc
        The ufunc called.
    fn : callable
        Its namespace function.
    args : sequence
        Operands (BCOOArrays, NumPy / JAX arrays, Python scalars).
    extra : dict, optional
        Keywords for ``fn`` (``axis`` of ``vecdot``).

    Returns
    -------
    BCOOArray
    """
    extra = extra or {}
    if ufunc in _LOGICAL:
        return fn(*(_truth(a) for a in args), **extra)
    if ufunc.signature is not None:
        return fn(*args, **extra)
    try:
        loop = ufunc.resolve_dtypes(tuple(_dtype_of(a) for a in args) + (None,) * ufunc.nout)
    except Exception:  # NumPy has no loop for these operands: the namespace raises its own TypeError
        return fn(*args, **extra)
    ins = [np.dtype(d) for d in loop[:ufunc.nin]]
    if not x64_enabled():
        own = [np.dtype(a.dtype) for a in args if not isinstance(a, PY_SCALARS)]
        if any(d.name in _HALF_WIDTH for d in own):
            return fn(*args, **extra)  # 64-bit operands: the namespace's ValueError
        ins = [_HALF_WIDTH.get(d.name, d) for d in ins]
    cast = [_astype(a, d) for a, d in zip(args, ins)]
    try:
        return fn(*cast, **extra)
    except TypeError:
        if all(d == np.bool_ for d in ins) and all(np.dtype(d) == np.bool_ for d in loop[ufunc.nin:]):
            # the standard refuses booleans here; NumPy's boolean loop is the int8 one, kept where non-zero
            return _truth(fn(*(_astype(a, np.dtype(np.int8)) for a in cast), **extra))
        if any(is_traced(a) for a in args):
            raise
    # A loop the standard does not have (``reciprocal`` of integers): NumPy's own, on the stored values.
    return foreign.apply(ufunc, tuple(args), {})


# -- reductions (x, axis, dtype, keepdims), NumPy's defaults applied by ``reduce`` ------------------


def _cast(x, dtype):
    return x if dtype is None else xp.astype(x, dtype)


def _odd(count):
    """Whether each count is odd (a bool array)."""
    return xp.equal(xp.remainder(count, 2), 1)


def _reduced_size(x, axis) -> int:
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def add_reduce(x, axis, dtype, keepdims):
    """``numpy.add.reduce``: [`bcoo_array.sum`][] (booleans count as integers).

    Parameters
    ----------
    x : BCOOArray
        The operand.
    axis : int, tuple of int or None
        Axes to reduce (NumPy's default 0 is applied by the caller).
    dtype : dtype or None
        Accumulator and result dtype.
    keepdims : bool
        Keep the reduced axes with length 1.

    Returns
    -------
    BCOOArray
    """
    return xp.sum(counting_input(x, dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def multiply_reduce(x, axis, dtype, keepdims):
    """``numpy.multiply.reduce``: [`bcoo_array.prod`][] (booleans count as integers).

    Parameters
    ----------
    x : BCOOArray
        The operand.
    axis : int, tuple of int or None
        Axes to reduce.
    dtype : dtype or None
        Accumulator and result dtype.
    keepdims : bool
        Keep the reduced axes with length 1.

    Returns
    -------
    BCOOArray
    """
    return xp.prod(counting_input(x, dtype), axis=axis, dtype=dtype, keepdims=keepdims)


def maximum_reduce(x, axis, dtype, keepdims):
    """``numpy.maximum.reduce``: [`bcoo_array.max`][] of ``x`` cast to ``dtype`` ([`bcoo_array.any`][] for bool).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
        NaN propagates, as in NumPy.
    """
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        return xp.any(x, axis=axis, keepdims=keepdims)
    return xp.max(x, axis=axis, keepdims=keepdims)


def minimum_reduce(x, axis, dtype, keepdims):
    """``numpy.minimum.reduce``: [`bcoo_array.min`][] of ``x`` cast to ``dtype`` ([`bcoo_array.all`][] for bool).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
        NaN propagates, as in NumPy.
    """
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        return xp.all(x, axis=axis, keepdims=keepdims)
    return xp.min(x, axis=axis, keepdims=keepdims)


def fmax_reduce(x, axis, dtype, keepdims):
    """``numpy.fmax.reduce``: the maximum ignoring NaN (NaN only for an all-NaN slice), as ``numpy.nanmax``.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
    """
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        return xp.any(x, axis=axis, keepdims=keepdims)
    return nanmax(x, axis=axis, keepdims=keepdims)


def fmin_reduce(x, axis, dtype, keepdims):
    """``numpy.fmin.reduce``: the minimum ignoring NaN (NaN only for an all-NaN slice), as ``numpy.nanmin``.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
    """
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        return xp.all(x, axis=axis, keepdims=keepdims)
    return nanmin(x, axis=axis, keepdims=keepdims)


def logical_and_reduce(x, axis, dtype, keepdims):
    """``numpy.logical_and.reduce``: [`bcoo_array.all`][] (the result is boolean; ``dtype`` ignored).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
    """
    return xp.all(x, axis=axis, keepdims=keepdims)


def logical_or_reduce(x, axis, dtype, keepdims):
    """``numpy.logical_or.reduce``: [`bcoo_array.any`][] (the result is boolean; ``dtype`` ignored).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
    """
    return xp.any(x, axis=axis, keepdims=keepdims)


def logical_xor_reduce(x, axis, dtype, keepdims):
    """``numpy.logical_xor.reduce``: whether an odd number of entries is non-zero.

    The count is [`bcoo_array.count_nonzero`][], computed from the stored
    entries plus the fill value (``dtype`` ignored: the result is boolean).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
    """
    return _odd(xp.count_nonzero(x, axis=axis, keepdims=keepdims))


def _bool_only(name, x):
    if x.dtype != xp.bool:
        raise TypeError(f"numpy.{name}.reduce(): no loop for {x.dtype} input (NumPy reduces only booleans with "
                        f"{name}); compare first, e.g. A != 0")


def not_equal_reduce(x, axis, dtype, keepdims):
    """``numpy.not_equal.reduce`` of booleans: ``logical_xor_reduce``.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For non-boolean input (NumPy has no such reduction loop).
    ValueError
        For more than one axis (not reorderable, as in NumPy).
    """
    _bool_only("not_equal", x)
    return logical_xor_reduce(x, _one_axis("not_equal", x, axis), dtype, keepdims)


def equal_reduce(x, axis, dtype, keepdims):
    """``numpy.equal.reduce`` of booleans: the fold ``((a0 == a1) == a2) ...``.

    Each step is ``r ^ a ^ 1``, so the fold of ``n`` entries of which ``c``
    are True is True exactly when ``c + n - 1`` is odd.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For non-boolean input.
    ValueError
        For more than one axis (not reorderable, as in NumPy) or an empty axis (no identity).
    """
    _bool_only("equal", x)
    axes = _one_axis("equal", x, axis)
    n = _reduced_size(x, axes)
    if n == 0:
        raise ValueError("zero-size array to reduction operation equal which has no identity")
    return _odd(xp.add(xp.count_nonzero(x, axis=axes, keepdims=keepdims), n - 1))


def _bits(dt: np.dtype):
    """One mask per bit of an integer dtype, as scalars of that dtype (the sign bit included)."""
    return [np.array([1 << b], np.uint64).astype(dt)[0] for b in range(dt.itemsize * 8)]


def _bitwise_reduce(name, per_bit, x, axis, dtype, keepdims):
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        return per_bit(x, axis, keepdims)
    if x.dtype.kind not in "iu":
        raise TypeError(f"numpy.{name}.reduce(): ufunc '{name}' not supported for {x.dtype} input (integers and "
                        "booleans only)")
    result = None
    zero = np.zeros((), x.dtype)[()]
    for mask in _bits(np.dtype(x.dtype)):
        bit = per_bit(xp.not_equal(xp.bitwise_and(x, mask), zero), axis, keepdims)
        term = xp.where(bit, mask, zero)
        result = term if result is None else xp.bitwise_or(result, term)
    return result


def bitwise_and_reduce(x, axis, dtype, keepdims):
    """``numpy.bitwise_and.reduce``: each bit set where it is set in every entry ([`bcoo_array.all`][] per bit).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
        ``x``'s dtype (or ``dtype``); all bits set for an empty reduction, as NumPy.

    Raises
    ------
    TypeError
        For floating-point or complex input.
    """
    return _bitwise_reduce("bitwise_and", lambda b, a, k: xp.all(b, axis=a, keepdims=k), x, axis, dtype, keepdims)


def bitwise_or_reduce(x, axis, dtype, keepdims):
    """``numpy.bitwise_or.reduce``: each bit set where it is set in some entry ([`bcoo_array.any`][] per bit).

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For floating-point or complex input.
    """
    return _bitwise_reduce("bitwise_or", lambda b, a, k: xp.any(b, axis=a, keepdims=k), x, axis, dtype, keepdims)


def bitwise_xor_reduce(x, axis, dtype, keepdims):
    """``numpy.bitwise_xor.reduce``: each bit set where an odd number of entries sets it.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For floating-point or complex input.
    """
    return _bitwise_reduce("bitwise_xor", lambda b, a, k: _odd(xp.count_nonzero(b, axis=a, keepdims=k)), x, axis,
                           dtype, keepdims)


def _one_axis(name, x, axis):
    """The single axis a non-reorderable reduction may take (NumPy's rule)."""
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    if len(axes) > 1:
        raise ValueError(f"reduction operation '{name}' is not reorderable, so at most one axis may be specified")
    return axes


def _along(x, ax, start, stop):
    """``x[..., start:stop, ...]`` on axis ``ax``."""
    return x[(slice(None),) * ax + (slice(start, stop),)]


def subtract_reduce(x, axis, dtype, keepdims):
    """``numpy.subtract.reduce``: ``x[0] - sum(x[1:])`` along one axis.

    The same value as NumPy's left fold ``((x0 - x1) - x2) ...`` (exact for
    integers, which wrap around alike; floating-point sums may round
    differently), from the stored entries.

    Parameters
    ----------
    x, axis, dtype, keepdims
        As for ``add_reduce``.

    Returns
    -------
    BCOOArray
        ``x``'s dtype (or ``dtype``).

    Raises
    ------
    TypeError
        For boolean input (NumPy has no boolean subtract).
    ValueError
        For more than one axis, or an empty axis (no identity).
    """
    x = _cast(x, dtype)
    if x.dtype == xp.bool:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    axes = _one_axis("subtract", x, axis)
    if not axes:
        return x
    (ax,) = axes
    if x.shape[ax] == 0:
        raise ValueError("zero-size array to reduction operation subtract which has no identity")
    res = xp.subtract(_along(x, ax, 0, 1), xp.sum(_along(x, ax, 1, None), axis=ax, keepdims=True, dtype=x.dtype))
    return res if keepdims else xp.squeeze(res, axis=ax)


# -- the methods ---------------------------------------------------------------------------------


def reduce(ufunc, impl, inputs, kwargs):
    """``ufunc.reduce(x, axis=0, dtype=None, keepdims=False)`` through a reduction of ``.registry.REDUCE``.

    Parameters
    ----------
    ufunc : numpy.ufunc
        The ufunc.
    impl : callable
        Its entry of ``REDUCE``: ``impl(x, axis, dtype, keepdims)``.
    inputs : tuple
        ``(x,)``, any array-like.
    kwargs : dict
        NumPy's normalised keywords.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        For ``out=``, ``initial=`` or ``where=``.
    """
    name = f"{ufunc.__name__}.reduce"
    if "initial" in kwargs:
        raise TypeError(f"numpy.{name}(): initial= is not supported for BCOOArray")
    check_ufunc_kwargs(name, kwargs, allowed=("axis", "keepdims"))
    (x,) = inputs
    return impl(sparse_arg(x), kwargs.get("axis", 0), kwargs.get("dtype"), kwargs.get("keepdims", False))


def accumulate(ufunc, impl, inputs, kwargs):
    """``ufunc.accumulate(x, axis=0, dtype=None)``.

    ``impl`` (from ``ACCUMULATE``) is the namespace's cumulative function;
    for other binary ufuncs (``impl`` None) NumPy accumulates the dense
    values, a result dense by nature, after the densification guard.

    Parameters
    ----------
    ufunc : numpy.ufunc
        A binary ufunc.
    impl : callable or None
        ``impl(x, axis, dtype)`` or None.
    inputs : tuple
        ``(x,)``.
    kwargs : dict
        ``axis``, ``dtype``; ``out=`` is refused.

    Returns
    -------
    BCOOArray
        Dense layout for the NumPy path.

    Raises
    ------
    TypeError
        For ``out=``, or a traced operand on the NumPy path.
    ValueError
        For ``axis=None`` on more than one dimension (as NumPy).
    MemoryError
        Above the densification limit (NumPy path).
    """
    name = f"{ufunc.__name__}.accumulate"
    check_ufunc_kwargs(name, kwargs, allowed=("axis",))
    (x,) = inputs
    x = sparse_arg(x)
    axis = kwargs.get("axis", 0)
    if axis is None:
        if x.ndim != 1:
            raise ValueError("accumulate does not allow multiple axes")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    dtype = kwargs.get("dtype")
    if impl is not None:
        return impl(x, axis, dtype)
    if is_traced(x):
        raise TypeError(f"numpy.{name}() of a traced BCOOArray (under jax.jit): only add and multiply accumulate "
                        "in bcoo_array (cumulative_sum, cumulative_prod); call it outside jit")
    with np.errstate(all="ignore"):
        out = ufunc.accumulate(densify(x, name), axis=axis, dtype=dtype)
    foreign.storable(out, name)
    return foreign.dense_result(out)


def add_accumulate(x, axis, dtype):
    """``numpy.add.accumulate``: [`bcoo_array.cumulative_sum`][] (booleans count as integers).

    Parameters
    ----------
    x : BCOOArray
        The operand.
    axis : int
        The axis to accumulate along.
    dtype : dtype or None
        Accumulator and result dtype.

    Returns
    -------
    BCOOArray
    """
    return xp.cumulative_sum(counting_input(x, dtype), axis=axis, dtype=dtype)


def multiply_accumulate(x, axis, dtype):
    """``numpy.multiply.accumulate``: [`bcoo_array.cumulative_prod`][] (booleans count as integers).

    Parameters
    ----------
    x : BCOOArray
        The operand.
    axis : int
        The axis to accumulate along.
    dtype : dtype or None
        Accumulator and result dtype.

    Returns
    -------
    BCOOArray
    """
    return xp.cumulative_prod(counting_input(x, dtype), axis=axis, dtype=dtype)


def _segments(name, indices, n):
    """NumPy's reduceat indices as Python ints, checked against the axis length ``n``."""
    if isinstance(indices, xp.BCOOArray):
        indices = densify(indices, name)
    idx = np.asarray(indices)
    if idx.ndim != 1:
        raise ValueError(f"numpy.{name}(): indices must be one-dimensional, got shape {idx.shape}")
    if idx.dtype.kind not in "iu":
        idx = idx.astype(np.intp)
    out = [operator.index(i) for i in idx.tolist()]
    for i in out:
        if not 0 <= i < n:
            raise IndexError(f"index {i} out-of-bounds in {name} [0, {n})")
    return out


def reduceat(ufunc, impl, inputs, kwargs):
    """``ufunc.reduceat(x, indices, axis=0, dtype=None)``: ``impl`` (from ``REDUCE``) over each segment.

    Segment ``k`` is ``x[indices[k]:indices[k + 1]]`` along ``axis`` (to the
    end for the last), or the single entry ``x[indices[k]]`` when
    ``indices[k] >= indices[k + 1]``, as in NumPy; the reduced segments are
    joined with [`bcoo_array.concat`][], so sparse segments give a sparse result.

    Parameters
    ----------
    ufunc : numpy.ufunc
        The ufunc.
    impl : callable
        Its entry of ``REDUCE``.
    inputs : tuple
        ``(x, indices)``.
    kwargs : dict
        ``axis``, ``dtype``; ``out=`` is refused.

    Returns
    -------
    BCOOArray

    Raises
    ------
    IndexError
        For an index outside ``[0, x.shape[axis])``.
    ValueError
        For indices that are not one-dimensional.
    """
    name = f"{ufunc.__name__}.reduceat"
    check_ufunc_kwargs(name, kwargs, allowed=("axis",))
    x, indices = inputs
    x = sparse_arg(x)
    ax = normalize_axis(kwargs.get("axis", 0), x.ndim)
    dtype = kwargs.get("dtype")
    n = x.shape[ax]
    idx = _segments(name, indices, n)
    if not idx:
        first = impl(_along(x, ax, 0, 1), ax, dtype, True)
        return _along(first, ax, 0, 0)
    pieces = []
    for k, i in enumerate(idx):
        j = idx[k + 1] if k + 1 < len(idx) else n
        pieces.append(impl(_along(x, ax, i, max(j, i + 1)), ax, dtype, True))
    return pieces[0] if len(pieces) == 1 else xp.concat(pieces, axis=ax)


def _outer_operand(x, name):
    """An operand of ``outer``: BCOOArrays and NumPy arrays as they are, Python scalars as they are, NumPy
    scalars as 0-d arrays of their dtype (``elementwise_arg``: 32-bit with x64 off)."""
    if isinstance(x, PY_SCALARS) and not isinstance(x, np.generic):
        return x
    return elementwise_arg(x, name)


def _shape_of(x):
    return () if isinstance(x, PY_SCALARS) else tuple(x.shape)


def _expand(x, shape):
    if isinstance(x, PY_SCALARS) or tuple(x.shape) == shape:
        return x
    return xp.reshape(x, shape) if isinstance(x, xp.BCOOArray) else np.reshape(x, shape)


def _namespace_values(ufunc, fn):
    """``fn`` (the namespace function of ``ufunc``) on NumPy operands, its values as NumPy."""
    def run(*arrays):
        return np.asarray(call_with_numpy_dtypes(ufunc, fn, [xp.asarray(a) for a in arrays]).todense())
    return run


def _product_pattern(run, a, b):
    """``f.outer(a, b)`` stored on the product of the patterns, or None when the fill rule does not allow it."""
    ca, va = foreign.host_entries(a)
    cb, vb = foreign.host_entries(b)
    fa, fb = np.asarray(a.fill_value), np.asarray(b.fill_value)
    with np.errstate(all="ignore"):
        fill = np.asarray(run(fa, fb))
        if va.size and not foreign.one_value(run(va, fb), fill).all():
            return None
        if vb.size and not foreign.one_value(run(fa, vb), fill).all():
            return None
        vals = np.asarray(run(va.reshape(-1, 1), vb.reshape(1, -1))).reshape(-1)
    na, nb = va.size, vb.size
    coords = [np.repeat(ca[:, k], nb) for k in range(a.ndim)] + [np.tile(cb[:, k], na) for k in range(b.ndim)]
    shape = a.shape + b.shape
    return xp.BCOOArray((vals.astype(fill.dtype, copy=False), tuple(coords)), shape=shape, fill_value=fill[()],
                        indices_sorted=True, unique_indices=True)


def outer(ufunc, fn, inputs, kwargs):
    """``ufunc.outer(a, b)``: ``f(a[i...], b[j...])`` of shape ``a.shape + b.shape``.

    Parameters
    ----------
    ufunc : numpy.ufunc
        A binary ufunc without a signature.
    fn : callable or None
        Its namespace function (``UFUNCS``), or None for a ufunc that
        ``.foreign`` applies to stored values.
    inputs : tuple
        ``(a, b)``: BCOOArrays, NumPy / JAX arrays, scalars.
    kwargs : dict
        As for calling the ufunc (``dtype`` casts the operands first).

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        Two concrete sparse operands whose stored values meet the other's fill
        value in ``f(fill_a, fill_b)`` give the product pattern; otherwise the
        element-wise function of the operands reshaped to broadcast.

    Raises
    ------
    TypeError
        For ``out=`` or a keyword with a non-default value.
    """
    name = f"{ufunc.__name__}.outer"
    a, b = (_outer_operand(x, name) for x in inputs)
    if fn is not None:
        check_ufunc_kwargs(name, kwargs)
        dtype = kwargs.get("dtype")
        if dtype is not None:
            a, b = (x if isinstance(x, PY_SCALARS) else xp.astype(sparse_arg(x), np.dtype(dtype)) for x in (a, b))
    sa, sb = _shape_of(a), _shape_of(b)
    if isinstance(a, xp.BCOOArray) and isinstance(b, xp.BCOOArray) and not (is_traced(a) or is_traced(b)) and (
            ufunc.nout == 1):
        if fn is not None:
            run = _namespace_values(ufunc, fn)
        else:
            check_ufunc_kwargs(name, kwargs, allowed=("casting",))
            kw = {k: v for k, v in kwargs.items() if k in ("dtype", "casting") and v is not None}

            def run(p, q):
                out = ufunc(p, q, **kw)
                foreign.storable(out, name)
                return out
        res = _product_pattern(run, a, b)
        if res is not None:
            return res
    a2 = _expand(a, sa + (1,) * len(sb))
    b2 = _expand(b, (1,) * len(sa) + sb)
    if fn is not None:
        return call_with_numpy_dtypes(ufunc, fn, (a2, b2))
    return foreign.apply(ufunc, (a2, b2), kwargs, method="outer")


# -- at ------------------------------------------------------------------------------------------


def _index_key(key, name):
    """NumPy's index with BCOOArray parts made NumPy: integer arrays densified, boolean masks as their nonzero()."""
    def part(k):
        if isinstance(k, xp.BCOOArray):
            if k.dtype == xp.bool:
                return tuple(np.asarray(i.todense()) for i in xp.nonzero(k))
            return (densify(k, name),)
        return (k,)

    if isinstance(key, tuple):
        return tuple(p for k in key for p in part(k))
    parts = part(key)
    return parts if isinstance(key, xp.BCOOArray) and len(parts) > 1 else parts[0]


def _coordinates(shape, key):
    """The coordinates of ``a[key]`` for an array of ``shape``: one int array per axis, of the selection's shape.

    Each axis's coordinate is read through a stride-0 view of ``arange(n)``, so
    NumPy's own indexing rules (negative indices, slices, ``Ellipsis``,
    boolean masks, bounds errors) apply and nothing of ``a``'s size is allocated.
    """
    if not shape:
        probe = np.zeros((), np.int8)
        return (), probe[key].shape
    coords = []
    for k, n in enumerate(shape):
        base = np.arange(n, dtype=np.intp)
        strides = [0] * len(shape)
        strides[k] = base.strides[0]
        view = np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides, writeable=False)
        coords.append(np.asarray(view[key]))
    return tuple(coords), coords[0].shape


def at(ufunc, inputs, kwargs):
    """``ufunc.at(a, indices[, b])``: unbuffered in place, repeated indices applied once each.

    Parameters
    ----------
    ufunc : numpy.ufunc
        A unary or binary ufunc with one output (table or foreign: NumPy
        computes on the touched values).
    inputs : tuple
        ``(a, indices)`` or ``(a, indices, b)``: ``a`` a BCOOArray (updated in
        place by rebinding its buffers) or a NumPy array (updated by NumPy,
        ``b`` densified); ``indices`` any NumPy index; ``b`` broadcast to
        the selection.

    Returns
    -------
    None

    Raises
    ------
    TypeError
        For a traced operand (no values to update under ``jax.jit``).
    IndexError
        For an index out of bounds (NumPy's message).
    """
    name = f"{ufunc.__name__}.at"
    a, key = inputs[0], inputs[1]
    rest = inputs[2:]
    if any(is_traced(v) for v in (a, *rest)) or (isinstance(key, tuple) and any(is_traced(k) for k in key)) or (
            is_traced(key)):
        raise TypeError(f"numpy.{name}() updates concrete values in place; it cannot run on a traced BCOOArray "
                        "(under jax.jit). Outside jit it works; under jit write A[idx] = bcoo_array.<function>"
                        "(A[idx], b) with unique indices")
    key = _index_key(key, name)
    rest = tuple(densify(v, name) if isinstance(v, xp.BCOOArray) else v for v in rest)
    if not isinstance(a, xp.BCOOArray):
        with np.errstate(all="ignore"):
            ufunc.at(a, key, *rest)
        return None
    coords, sel_shape = _coordinates(a.shape, key)
    if a.ndim:
        lin = np.ravel_multi_index(coords, a.shape).reshape(-1) if coords[0].size else np.zeros(0, np.intp)
    else:
        lin = np.zeros(int(np.prod(sel_shape)), np.intp)
    values = [np.broadcast_to(np.asarray(v), sel_shape) for v in rest]  # NumPy's broadcasting rule for b
    if lin.size == 0:
        return None
    uniq, inverse = np.unique(lin, return_inverse=True)
    where = tuple(np.unravel_index(uniq, a.shape)) if a.ndim else ()
    current = a[where] if a.ndim else a
    work = np.array(current.todense(), dtype=a.dtype).reshape(uniq.shape)
    with np.errstate(all="ignore"):
        ufunc.at(work, inverse.reshape(sel_shape), *values)
    if a.ndim:
        a[where] = work
    else:
        a[()] = work.reshape(())
    return None

