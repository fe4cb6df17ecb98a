"""Creation functions of the array API standard, plus ``BCOOArray`` constructors
from foreign objects.

``zeros``, ``ones``, ``full`` and ``empty`` store nothing: the value is the
fill value (``ones((n, n))`` has nse 0 and fill value 1). Arrays built from
dense values store every entry that differs from the fill value 0.
Spec: https://data-apis.org/array-api/2025.12/API_specification/creation_functions.html
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._convert import from_foreign
from ._fill import zero_fill
from ._kernels.host import adopt, to_device
from ._shapes import index_dtype_for, is_concrete, normalize_shape
from ._operands import PY_SCALARS
from ._relayout import dense_layout, fill_only, is_dense_layout, update_layout
from ._routing import routed


def _device_put(x: BCOOArray, device) -> BCOOArray:
    return x if device is None else x.to_device(device)


def _nested_dense(obj):
    """A nested sequence with its BCOOArray elements densified (the standard lets
    nested sequences hold arrays, e.g. ``asarray([x[0], x[1]])``)."""
    if isinstance(obj, BCOOArray):
        return np.asarray(obj.todense())
    if isinstance(obj, (list, tuple)):
        return [_nested_dense(o) for o in obj]
    return obj


@routed
def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> BCOOArray:
    """Convert ``obj`` to a BCOOArray (array API ``asarray``).

    Parameters
    ----------
    obj : BCOOArray, array, nested sequence, Python scalar, or a sparse array of scipy.sparse, pydata-sparse or jax.experimental.sparse
        Input. Dense input stores its non-zero entries (fill value 0);
        sparse input keeps its pattern (and pydata-sparse's fill value).
    dtype : dtype, optional
        Output dtype. Python data take the default dtype of its kind; NumPy
        and JAX arrays keep theirs.
    device : optional
        Target device.
    copy : bool, optional
        True always copies; False raises if a copy would be needed (only a
        BCOOArray of the right dtype can be returned without one).

    Returns
    -------
    BCOOArray

    Raises
    ------
    ValueError
        If ``copy=False`` cannot be honoured, or a 64-bit dtype is needed with
        x64 off (NumPy float64 input with x64 off: pass ``dtype=float32`` or
        turn x64 on).
    TypeError
        For objects that are not numeric.
    OverflowError
        For Python integers that do not fit the dtype.
    """
    dt = _dtypes.canonicalize_dtype(dtype) if dtype is not None else None
    if isinstance(obj, BCOOArray):
        if dt is None or dt == obj.dtype:
            return _device_put(obj._replace() if copy else obj, device)
        if copy is False:
            raise ValueError("asarray(copy=False) cannot change the dtype without a copy")
        return _device_put(obj.astype(dt), device)
    if dt is not None and _is_foreign_sparse(obj):
        obj = obj.astype(dt)  # cast first: the source dtype may need x64 when dt does not
    foreign = from_foreign(obj)
    if foreign is not None:
        if copy is False:
            raise ValueError("asarray(copy=False) cannot convert a foreign sparse array without a copy")
        out = foreign if dt is None else foreign.astype(dt)
        return _device_put(out, device)
    if copy is False:
        raise ValueError("asarray(copy=False) cannot convert dense input to a BCOOArray without a copy")
    if isinstance(obj, jax.core.Tracer):
        return _device_put(BCOOArray.fromdense(obj if dt is None else obj.astype(dt)), device)
    # Concrete input (NumPy, Python values, a jax.Array) has a known pattern even while
    # jax.jit traces: convert and store it by value, rather than staging the comparison
    # with the fill value (which would need nse= under jit).
    with jax.ensure_compile_time_eval():
        out = BCOOArray.fromdense(_dense_input(obj, dt))
    return _device_put(out, device)


def _dense_input(obj, dt):
    """The concrete dense values of ``asarray``'s non-sparse input ``obj`` (dtype ``dt`` if given).

    NumPy and Python input stays NumPy (``BCOOArray.fromdense`` reads it on the
    host); JAX and DLPack input is a ``jax.Array``.
    """
    if isinstance(obj, jax.Array):
        x = obj if dt is None else obj.astype(dt)
    elif isinstance(obj, (np.ndarray, np.generic)):
        src = _dtypes.canonicalize_dtype(obj.dtype, argname="obj.dtype") if dt is None else dt
        x = np.asarray(obj).astype(src, copy=False)  # BCOOArray.fromdense reads NumPy on the host
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, PY_SCALARS):
        x = jnp.from_dlpack(obj)
        if dt is not None:
            x = x.astype(dt)
    else:
        obj = _nested_dense(obj)
        target = dt if dt is not None else _dtypes.python_values_dtype(obj)
        arr = np.asarray(obj)
        if target.kind in "iu" and arr.dtype.kind in "iu":
            info = np.iinfo(target)
            if arr.size and (arr.min() < info.min or arr.max() > info.max):
                raise OverflowError(f"integer values out of range for {target}")
        x = arr.astype(target)
    return x


def _is_foreign_sparse(obj) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith(("scipy.sparse", "sparse", "jax.experimental.sparse")) and hasattr(obj, "astype")


def _fill_only(shape, fill, dtype, device) -> BCOOArray:
    return _device_put(fill_only(normalize_shape(shape), dtype, fill), device)


def _dtype_or(dtype, default: np.dtype) -> np.dtype:
    return _dtypes.canonicalize_dtype(dtype) if dtype is not None else default


@routed
def zeros(shape, *, dtype=None, device=None) -> BCOOArray:
    """An array of zeros: nothing stored, fill value 0 (array API ``zeros``).

    Parameters
    ----------
    shape : int or tuple of int
    dtype : dtype, optional
        Default: the default real floating-point dtype.
    device : optional

    Raises
    ------
    ValueError
        For a negative dimension or a 64-bit dtype with x64 off.
    """
    dt = _dtype_or(dtype, _dtypes.default_float())
    return _fill_only(shape, 0, dt, device)


@routed
def empty(shape, *, dtype=None, device=None) -> BCOOArray:
    """An uninitialised array; here the same as [`zeros`][bcoo_array.zeros] (array API ``empty``)."""
    return zeros(shape, dtype=dtype, device=device)


@routed
def ones(shape, *, dtype=None, device=None) -> BCOOArray:
    """An array of ones: nothing stored, fill value 1 (array API ``ones``).

    Same parameters as [`zeros`][bcoo_array.zeros].
    """
    dt = _dtype_or(dtype, _dtypes.default_float())
    return _fill_only(shape, 1, dt, device)


@routed
def full(shape, fill_value, *, dtype=None, device=None) -> BCOOArray:
    """An array filled with ``fill_value``: nothing stored (array API ``full``).

    Parameters
    ----------
    shape : int or tuple of int
    fill_value : bool, int, float or complex
    dtype : dtype, optional
        Default: inferred from ``fill_value`` by the standard (bool, default
        integer, default float, default complex).
    device : optional

    Raises
    ------
    ValueError
        If ``fill_value`` does not fit ``dtype``.
    """
    if isinstance(fill_value, BCOOArray):
        fill_value = fill_value.todense()
    if hasattr(fill_value, "dtype") and dtype is None:
        dt = np.dtype(fill_value.dtype)
        fill_value = np.asarray(fill_value)[()]
    else:
        dt = _dtype_or(dtype, _dtypes.python_values_dtype(fill_value))
    if isinstance(fill_value, int) and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= fill_value <= info.max:
            raise OverflowError(f"fill_value={fill_value} is out of range for {dt}")
    return _fill_only(shape, fill_value, dt, device)


@routed
def zeros_like(x, /, *, dtype=None, device=None) -> BCOOArray:
    """[`zeros`][bcoo_array.zeros] with ``x``'s shape and (by default) dtype and device."""
    return zeros(x.shape, dtype=dtype if dtype is not None else x.dtype, device=device)


@routed
def ones_like(x, /, *, dtype=None, device=None) -> BCOOArray:
    """[`ones`][bcoo_array.ones] with ``x``'s shape and (by default) dtype and device."""
    return ones(x.shape, dtype=dtype if dtype is not None else x.dtype, device=device)


@routed
def empty_like(x, /, *, dtype=None, device=None) -> BCOOArray:
    """[`empty`][bcoo_array.empty] with ``x``'s shape and (by default) dtype and device."""
    return zeros_like(x, dtype=dtype, device=device)


@routed
def full_like(x, /, fill_value, *, dtype=None, device=None) -> BCOOArray:
    """[`full`][bcoo_array.full] with ``x``'s shape and (by default) dtype and device."""
    return full(x.shape, fill_value, dtype=dtype if dtype is not None else x.dtype, device=device)


@routed
def eye(n_rows, n_cols=None, /, *, k: int = 0, dtype=None, device=None) -> BCOOArray:
    """The identity-like matrix with ones on diagonal ``k`` (array API ``eye``).

    Returns
    -------
    BCOOArray
        Shape ``(n_rows, n_cols)``; the diagonal is stored, canonical.
    """
    n_rows = operator.index(n_rows)
    n_cols = n_rows if n_cols is None else operator.index(n_cols)
    dt = _dtype_or(dtype, _dtypes.default_float())
    start_r = max(0, -k)
    length = max(0, min(n_rows - start_r, n_cols - start_r - k))
    r = np.arange(start_r, start_r + length)
    idt = index_dtype_for((n_rows, n_cols))
    # A diagonal outside the matrix stores nothing (k may be any Python int, even beyond int64).
    idx = np.stack([r, r + k], axis=1).astype(idt) if length else np.zeros((0, 2), idt)
    out = BCOOArray._from_buffers(to_device(np.ones(length, dt), owned=True), to_device(idx, owned=True),
                                  (n_rows, n_cols), n_batch=0, n_dense=0,
                                  fill_value=0, indices_sorted=True, unique_indices=True)
    return _device_put(out, device)


@routed
def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> BCOOArray:
    """Evenly spaced values in ``[start, stop)`` (array API ``arange``).

    Returns
    -------
    BCOOArray
        1-D; entries other than 0 are stored. The default dtype is the
        default integer for integer arguments, else the default float.

    Raises
    ------
    ValueError
        If ``step`` is 0.
    OverflowError
        If an integer value does not fit ``dtype`` (with JAX's x64 mode off
        the default integer is int32).
    """
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_int = all(isinstance(v, int) for v in (start, stop, step))
        dtype = _dtypes.default_int() if is_int else _dtypes.default_float()
    dt = _dtypes.canonicalize_dtype(dtype)
    if step == 0:
        raise ValueError("arange(): step must not be 0")
    vals = np.arange(start, stop, step)
    if dt.kind in "iu" and vals.dtype.kind == "f":
        vals = start + step * np.arange(vals.size)
    if dt.kind in "iu" and vals.size:  # (the ends: the values are monotonic)
        info = np.iinfo(dt)
        lo, hi = sorted((vals[0], vals[-1]))
        if lo < info.min or hi > info.max:
            raise OverflowError(
                f"arange({start}, {stop}, {step}) has values from {lo} to {hi}, out of range for {dt}"
                + (f"; {_dtypes.X64_FIX} for int64" if not _dtypes.x64_enabled()
                   and dt == _dtypes.default_int() else "; pass a wider dtype"))
    return _device_put(BCOOArray.fromdense(vals.astype(dt)), device)


@routed
def linspace(start, stop, /, num: int, *, dtype=None, device=None, endpoint: bool = True) -> BCOOArray:
    """``num`` evenly spaced samples from ``start`` to ``stop`` (array API ``linspace``).

    Returns
    -------
    BCOOArray
        1-D of the default float (or complex) dtype unless ``dtype`` is given.
    """
    if dtype is None:
        dtype = _dtypes.default_complex() if isinstance(start, complex) or isinstance(stop, complex) \
            else _dtypes.default_float()
    dt = _dtypes.canonicalize_dtype(dtype)
    # NumPy computes in float64 (complex128) and rounds once to dt; no compilation per num.
    vals = np.linspace(start, stop, num, endpoint=endpoint).astype(dt)
    return _device_put(BCOOArray.fromdense(vals), device)


@routed
def meshgrid(*arrays, indexing: str = "xy") -> tuple[BCOOArray, ...]:
    """Coordinate matrices from 1-D coordinate vectors (array API ``meshgrid``).

    Returns
    -------
    tuple of BCOOArray
        Dense values stored sparsely (zeros unstored); a tuple, as the
        standard (2025.12) specifies.

    Raises
    ------
    ValueError
        For ``indexing`` other than "xy" or "ij".
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing={indexing!r} must be 'xy' or 'ij'")
    dense = [a.todense() if isinstance(a, BCOOArray) else jnp.asarray(a) for a in arrays]
    return tuple(BCOOArray.fromdense(g) for g in jnp.meshgrid(*dense, indexing=indexing))


def _tri(x, k: int, lower: bool) -> BCOOArray:
    x = x if isinstance(x, BCOOArray) else asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'}() needs at least 2 dimensions, got {x.ndim}")
    if is_dense_layout(x) or not zero_fill(x.fill_value):
        d = x.todense()
        return dense_layout(jnp.tril(d, k) if lower else jnp.triu(d, k))
    c = update_layout(x, 0, 0)
    r, col = c.indices[:, -2].astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32), c.indices[:, -1]
    keep = (col - r <= k) if lower else (col - r >= k)
    idx = jnp.where(keep[:, None], c.indices, jnp.asarray(c.shape, c.indices.dtype))
    out = c._replace(indices=idx)

    if is_concrete(keep):
        sel = adopt(np.nonzero(np.asarray(keep))[0])
        out = c._replace(indices=c.indices[sel], data=c.data[sel])
    return out


@routed
def tril(x, /, *, k: int = 0) -> BCOOArray:
    """Lower triangle of the last two dimensions (array API ``tril``): entries above diagonal ``k`` are zeroed.

    Raises
    ------
    ValueError
        For fewer than two dimensions.
    """
    return _tri(x, k, True)


@routed
def triu(x, /, *, k: int = 0) -> BCOOArray:
    """Upper triangle of the last two dimensions (array API ``triu``): entries below diagonal ``k`` are zeroed.

    Raises
    ------
    ValueError
        For fewer than two dimensions.
    """
    return _tri(x, k, False)


@routed
def from_dlpack(x, /, *, device=None, copy=None) -> BCOOArray:
    """Import a dense array through DLPack and store its non-zero entries (array API ``from_dlpack``).

    Host memory is read through NumPy (any strides, e.g. a transposed or
    sliced view), device memory through JAX; the stored entries are copied.

    Raises
    ------
    BufferError
        If ``x`` cannot export DLPack (a BCOOArray cannot).
    """
    if isinstance(x, BCOOArray):
        return x._replace() if copy else x
    try:
        # Host memory through NumPy, which reads any strides (a transposed or sliced view; JAX's importer
        # takes compact strides only); the entries are copied into the array's own buffers.
        arr = np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError):
        arr = jnp.from_dlpack(x)  # device memory
    return _device_put(BCOOArray.fromdense(arr), device)


__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
    "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]
