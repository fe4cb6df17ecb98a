"""Ufuncs with no namespace function, applied to the stored values and the fill value.

A NumPy ufunc that ``.registry.UFUNCS`` does not map (``numpy.cbrt``,
``numpy.fmod``, ``scipy.special.erf``, ``scipy.special.expit``, ...) is a
function of each element, so, as pydata-sparse does, it runs on the stored
values of its sparse operands and once on their fill values: the result keeps
the pattern (the union of the operands' patterns) and its fill value is the
ufunc of the fill values. With a dense operand ``d`` the rule of the
namespace applies: the result stays sparse when ``f(fill, d)`` is one value
for every entry of ``d``; otherwise it is dense (a BCOOArray in dense layout,
after the densification guard). This is NumPy code on concrete values, so it
runs outside ``jax.jit`` only.

Refused, with a TypeError that names the fix: generalized ufuncs (a
``signature``), results NumPy cannot store in a BCOOArray (``object`` dtype,
as from ``numpy.frompyfunc``), and traced operands. Under the opt-in
``BCOO_ARRAY_AUTO_DENSIFY=1`` a refusal becomes NumPy's own call on the
densified operands (``refuse_or_densify``).
"""

from __future__ import annotations

import jax
import numpy as np

import bcoo_array as xp

from .._dtypes import x64_enabled
from .._limits import check_dense
from .operands import (
    PY_SCALARS,
    auto_densify,
    check_ufunc_kwargs,
    densify_all,
    densify_message,
    is_traced,
    numpy_scalar,
    sparse_arg,
)


class Refused(TypeError):
    """A ufunc call this module cannot serve sparsely (the opt-in may densify it instead)."""


def _label(ufunc, method: str) -> str:
    return ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"


def refuse_or_densify(ufunc, method: str, inputs, kwargs, why: str):
    """Refuse a ufunc call, or under ``BCOO_ARRAY_AUTO_DENSIFY=1`` run NumPy on densified operands.

    Parameters
    ----------
    ufunc : numpy.ufunc
        The ufunc.
    method : str
        ``'__call__'``, ``'reduce'``, ``'accumulate'``, ``'reduceat'`` or ``'outer'``.
    inputs : tuple
        The operands.
    kwargs : dict
        The keywords (``out=`` may name NumPy arrays under the opt-in).
    why : str
        Why there is no sparse answer, for the message.

    Returns
    -------
    object
        NumPy's result on the densified operands (opt-in only).

    Raises
    ------
    TypeError
        Without the opt-in (naming ``A.toarray()`` and the opt-in), for ``out=``
        holding a BCOOArray, or for a traced operand.
    MemoryError
        Under the opt-in, above the densification limit.
    """
    name = _label(ufunc, method)
    if not auto_densify():
        raise TypeError(densify_message(why, name))
    if "out" in kwargs and _holds_sparse(kwargs["out"]):
        raise TypeError(f"numpy.{name}(): out= cannot be a BCOOArray (JAX buffers are immutable)")
    fn = ufunc if method == "__call__" else getattr(ufunc, method)
    return fn(*densify_all(tuple(inputs), name), **densify_all(dict(kwargs), name))


def _holds_sparse(obj) -> bool:
    if isinstance(obj, xp.BCOOArray):
        return True
    return type(obj) in (list, tuple) and any(_holds_sparse(o) for o in obj)


# -- stored entries on the host ----------------------------------------------------------------


def host_entries(x) -> tuple[np.ndarray, np.ndarray]:
    """The stored entries of a concrete BCOOArray, canonical: coordinates and values.

    Parameters
    ----------
    x : BCOOArray
        Any layout; batch and dense dimensions become sparse ones
        ([`bcoo_array.update_layout`][]), duplicates are summed, padding dropped.

    Returns
    -------
    coords : numpy.ndarray, int64, shape ``(nse, x.ndim)``
        Row-major sorted, unique.
    values : numpy.ndarray, shape ``(nse,)``
    """
    y = x
    if y.n_batch or y.n_dense:
        y = xp.update_layout(y, n_batch=0, n_dense=0)
    y = y.sum_duplicates()
    host = y._host_buffers()
    data, idx = host if host is not None else (np.asarray(y.data), np.asarray(y.indices))
    idx = np.asarray(idx, np.int64).reshape(-1, x.ndim)
    data = np.asarray(data).reshape(-1)
    if x.ndim:
        keep = np.all(idx < np.asarray(x.shape, np.int64), axis=1)
        idx, data = idx[keep], data[keep]
    return idx, data


def linear(coords: np.ndarray, shape) -> np.ndarray:
    """Row-major positions of coordinates in an array of ``shape``.

    Parameters
    ----------
    coords : numpy.ndarray, shape ``(n, len(shape))``
        In-range coordinates.
    shape : tuple of int
        The array's shape (``()`` gives position 0).

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n,)``.
    """
    if not shape:
        return np.zeros(coords.shape[0], np.int64)
    if coords.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.ravel_multi_index(tuple(coords.T), shape).astype(np.int64)


def one_value(g: np.ndarray, g0) -> np.ndarray:
    """Element-wise: whether ``g`` holds the value ``g0``, as the namespace's fill rule compares values.

    Parameters
    ----------
    g : array_like
        Values.
    g0 : scalar
        The value (``==``; NaN matches NaN, ``-0.0`` matches ``0.0``).

    Returns
    -------
    numpy.ndarray
        bool, ``g``'s shape.
    """
    g = np.asarray(g)
    if g.dtype.kind in "fc":
        return (g == g0) | (np.isnan(g) & np.isnan(g0))
    return g == g0


def plus_zero(value: np.ndarray) -> np.generic:
    """A 0-d value as a NumPy scalar, a zero's sign bit cleared (the fill rule keeps ``+0``).

    Parameters
    ----------
    value : array_like
        0-d.

    Returns
    -------
    numpy.generic
        ``+0`` (``+0 + 0j``) for a zero of either sign, else the value.
    """
    v = np.asarray(value)
    if v.dtype.kind in "fc" and v == 0:
        return np.zeros((), v.dtype)[()]
    return v[()]


def storable(out, name: str) -> None:
    """Check that a NumPy result has a dtype a BCOOArray can hold (bool, integers, floats, complex).

    Parameters
    ----------
    out : array_like
        NumPy's result.
    name : str
        The NumPy call, for the message.

    Raises
    ------
    Refused
        For any other dtype (``object`` from ``numpy.frompyfunc``, datetimes, strings).
    """
    dt = np.asarray(out).dtype
    if dt.kind not in "biufc":
        raise Refused(densify_message(f"its result has dtype {dt}, which a BCOOArray cannot hold", name))


def from_entries(values: np.ndarray, lin: np.ndarray, shape, fill) -> xp.BCOOArray:
    """A canonical BCOOArray of stored values at row-major positions.

    Parameters
    ----------
    values : numpy.ndarray, shape ``(n,)``
        The stored values.
    lin : numpy.ndarray, shape ``(n,)``
        Their row-major positions, sorted and unique.
    shape : tuple of int
        The array's shape.
    fill : scalar
        The fill value (cast exactly to ``values.dtype``).

    Returns
    -------
    BCOOArray
        All-sparse layout, indices sorted and unique.
    """
    coords = tuple(np.asarray(c, np.int64) for c in np.unravel_index(lin, shape)) if shape else ()
    return xp.BCOOArray((values, coords), shape=shape, fill_value=fill, indices_sorted=True, unique_indices=True)


def dense_result(values: np.ndarray) -> xp.BCOOArray:
    """A NumPy result as a BCOOArray in dense layout, as the namespace gives inherently dense results.

    Parameters
    ----------
    values : array_like
        The dense values.

    Returns
    -------
    BCOOArray
        ``n_dense = ndim`` (one block holding every entry), fill value 0.
    """
    values = np.asarray(values)
    return xp.BCOOArray.fromdense(values, n_dense=values.ndim)


# -- the ufunc on stored values and fill values ---------------------------------------------------


def _operand(x, name):
    """``('s', BCOOArray)``, ``('d', ndarray)`` for an N-d dense operand, or ``('v', value)`` for a scalar.

    A NumPy scalar or 0-d array is a value of its dtype, 32-bit with JAX's x64 mode off (``numpy_scalar``,
    the rule of the namespace's operands).
    """
    if isinstance(x, xp.BCOOArray):
        return "s", x
    if isinstance(x, np.generic) or (type(x) is np.ndarray and x.ndim == 0):
        arr = numpy_scalar(x, name)
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"numpy.{name}(): operand of dtype {arr.dtype} is not supported with a BCOOArray")
        return "v", arr
    if isinstance(x, PY_SCALARS):
        return "v", x
    if isinstance(x, jax.core.Tracer):
        return "t", x
    if isinstance(x, (np.ndarray, np.generic, jax.Array, list, tuple)):
        arr = np.asarray(x)
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"numpy.{name}(): operand of dtype {arr.dtype} is not supported with a BCOOArray")
        return ("d", arr) if arr.ndim else ("v", arr)
    return "s", sparse_arg(x, name)


_HALF_WIDTH = {"float64": np.float32, "complex128": np.complex64, "int64": np.int32, "uint64": np.uint32}


def _call(ufunc, args, kw):
    """The ufunc under ``errstate(all='ignore')`` (host work never raises floating-point flags), as a tuple.

    With JAX's 64-bit mode off, a 64-bit result of narrower operands (``erf``
    of int32 is float64 in NumPy) is taken at half width, as JAX computes it;
    64-bit operands are left to the BCOOArray constructor, which refuses them.
    """
    with np.errstate(all="ignore"):
        out = ufunc(*args, **kw)
    out = out if ufunc.nout > 1 else (out,)
    if x64_enabled() or any(np.asarray(a).dtype.name in _HALF_WIDTH for a in args if not isinstance(a, PY_SCALARS)):
        return out
    return tuple(np.asarray(o).astype(_HALF_WIDTH.get(np.asarray(o).dtype.name, np.asarray(o).dtype), copy=False)
                 for o in out)


def apply(ufunc, inputs, kwargs, method: str = "__call__"):
    """``ufunc(*inputs)`` on the stored values and the fill values (the module's rule).

    Parameters
    ----------
    ufunc : numpy.ufunc
        A ufunc without a namespace function (any number of inputs and outputs).
    inputs : tuple
        BCOOArrays (at least one), NumPy / JAX arrays, scalars, foreign sparse arrays.
    kwargs : dict
        Ufunc keywords; ``dtype`` and ``casting`` pass to NumPy, ``out=`` and
        ``where=`` are refused.
    method : str
        The ufunc method being served, for messages.

    Returns
    -------
    BCOOArray or tuple of BCOOArray
        One per output of the ufunc. Sparse operands only: the union of their
        patterns (one operand: its own pattern and layout), fill value the
        ufunc of the fill values. With a dense operand: sparse when the fill
        rule allows, else dense layout.

    Raises
    ------
    TypeError
        For ``out=``/``where=``, a generalized ufunc, an ``object`` result
        or a traced operand (``Refused`` where the opt-in may densify instead).
    MemoryError
        When a dense result exceeds the densification limit.
    """
    name = _label(ufunc, method)
    check_ufunc_kwargs(name, kwargs, allowed=("casting",))
    kw = {k: v for k, v in kwargs.items() if k in ("dtype", "casting") and v is not None}
    if ufunc.signature is not None:
        raise Refused(densify_message(f"it is a generalized ufunc (signature {ufunc.signature!r})", name))
    ops = [_operand(x, name) for x in inputs]
    if any(k == "t" or (k == "s" and is_traced(v)) for k, v in ops):
        raise TypeError(f"numpy.{name}() is a NumPy function of concrete values; it cannot run on a traced "
                        "BCOOArray (under jax.jit). Use a namespace function of bcoo_array, or call it outside jit")
    sparse = [v for k, v in ops if k == "s"]
    dense = [v for k, v in ops if k == "d"]
    shape = tuple(np.broadcast_shapes(*(v.shape for k, v in ops if k in "sd")))
    if len(sparse) == 1 and not dense and sparse[0].shape == shape:
        return _same_pattern(ufunc, ops, kw, name)
    return _union(ufunc, ops, shape, kw, name)


def _same_pattern(ufunc, ops, kw, name):
    """One sparse operand and scalars: the ufunc of its stored values, in its own layout."""
    x = next(v for k, v in ops if k == "s")
    if not x.unique_indices:
        x = x.sum_duplicates()  # the value of a position is the sum of its duplicates
    host = x._host_buffers()
    data, idx = host if host is not None else (np.asarray(x.data), np.asarray(x.indices))
    vals = _call(ufunc, [data if k == "s" else v for k, v in ops], kw)
    fills = _call(ufunc, [np.asarray(x.fill_value) if k == "s" else v for k, v in ops], kw)
    out = []
    for v, f in zip(vals, fills):
        storable(v, name)
        out.append(xp.BCOOArray((v, idx), shape=x.shape, fill_value=np.asarray(f)[()],
                                indices_sorted=x.indices_sorted, unique_indices=True))
    return out[0] if len(out) == 1 else tuple(out)


def _union(ufunc, ops, shape, kw, name):
    """Sparse operands broadcast to ``shape`` and merged on the union of their patterns; dense ones gathered."""
    sparse_ops = [(k, xp.broadcast_to(v, shape) if k == "s" and v.shape != shape else v) for k, v in ops]
    entries = {i: host_entries(v) for i, (k, v) in enumerate(sparse_ops) if k == "s"}
    lins = {i: linear(c, shape) for i, (c, _) in entries.items()}
    union = np.unique(np.concatenate(list(lins.values()))) if lins else np.zeros(0, np.int64)
    coords = np.unravel_index(union, shape) if shape else ()
    args, probe = [], []
    for i, (k, v) in enumerate(sparse_ops):
        if k == "s":
            lin, (_, vals) = lins[i], entries[i]
            pos = np.searchsorted(lin, union)
            hit = pos < lin.size
            hit[hit] = lin[pos[hit]] == union[hit]
            fill = np.asarray(v.fill_value)
            taken = vals[np.minimum(pos, max(lin.size - 1, 0))] if lin.size else np.zeros(union.shape, v.dtype)
            args.append(np.where(hit, taken, fill).astype(v.dtype, copy=False))
            probe.append(fill)
        elif k == "d":
            args.append(np.broadcast_to(v, shape)[coords] if shape else v)
            probe.append(v)
        else:
            args.append(v)
            probe.append(v)
    vals = _call(ufunc, args, kw)
    fills = _call(ufunc, probe, kw)
    for v in vals:
        storable(v, name)
    out = []
    for v, f in zip(vals, fills):
        f = np.asarray(f)
        if f.ndim:  # a dense operand: one value for every entry, or a dense result
            flat = f.reshape(-1)
            if flat.size and not one_value(flat, flat[0]).all():
                return _dense(ufunc, ops, shape, kw, name, [np.asarray(g).dtype for g in fills])
            if not flat.size:
                f = np.zeros((), f.dtype)[()]
            elif (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
                f = flat[0]  # bit-identical everywhere: that value, a signed zero included
            else:
                f = plus_zero(flat[0])  # equal values of either sign of zero: +0, as the namespace's rule
        else:
            f = f[()]
        out.append(from_entries(v, union, shape, f))
    return out[0] if len(out) == 1 else tuple(out)


def _dense(ufunc, ops, shape, kw, name, dts):
    """The ufunc on the dense values, when a dense operand makes the fill vary (the guard first)."""
    check_dense(f"numpy.{name}", shape, *dts, what="the result: a dense operand makes the fill value vary",
                alternative=f"numpy.{name}(A.toarray(), d)")
    args = [v.toarray() if k == "s" else v for k, v in ops]
    vals = _call(ufunc, args, kw)
    for v in vals:
        storable(v, name)
    out = [dense_result(v) for v in vals]
    return out[0] if len(out) == 1 else tuple(out)
