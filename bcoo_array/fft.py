"""The Fourier transform extension of the array API standard (``xp.fft``).

A Fourier transform of a sparse array is inherently dense (every frequency
mixes every entry), so every transform here densifies its input with
``x.todense()``, runs ``jax.numpy.fft`` and returns a BCOOArray in *dense
layout* (``n_sparse = 0``, every entry stored). A sparse input passes the
densification guard first (``._limits``): above
[`bcoo_array.get_max_dense_bytes`][] for the densified input plus the
result, the transform raises ``MemoryError`` before allocating anything; an
input already in dense layout is not checked. ``fftshift`` and
``ifftshift`` only move entries and keep a sparse input sparse.
Spec: https://data-apis.org/array-api/2025.12/extensions/fourier_transform_functions.html
"""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._creation_functions import _device_put
from ._limits import check_dense_arrays
from ._shapes import normalize_axis
from ._manipulation_functions import roll
from ._operands import as_sparse, check_category
from ._relayout import dense_layout, is_dense_layout
from ._routing import public, routed

_NORMS = ("backward", "ortho", "forward")


def _check(x, name: str, category: str) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, category, name)
    if x.ndim == 0:
        raise ValueError(f"fft.{name}() needs an array of at least one dimension")
    return x


def _check_norm(norm, name):
    if norm not in _NORMS:
        raise ValueError(f"fft.{name}(): norm={norm!r} must be one of {_NORMS}")


def _check_n(n, name, argname="n"):
    if n is None:
        return None
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fft.{name}(): {argname}={n} must be a positive integer")
    return n


_DOC_1D = """{summary} along one axis (array API ``fft.{name}``).

Parameters
----------
x : BCOOArray or array
    Input of a {category} dtype, at least 1-D.
n : int, optional
    Length of the transformed axis {nwhat} (the input is zero-padded or
    trimmed); default {ndefault}.
axis : int
    Axis to transform (default the last).
norm : {{'backward', 'ortho', 'forward'}}
    Normalisation mode, as in ``numpy.fft.{name}``.

Returns
-------
BCOOArray
    {result} Dense layout: the transform of a sparse array is dense; the
    input is densified and ``jax.numpy.fft.{name}`` does the work.

Raises
------
TypeError
    If ``x``'s dtype is not {category}.
ValueError
    If ``x`` is 0-d, ``n < 1`` or ``norm`` is unknown.
IndexError
    If ``axis`` is out of range.
MemoryError
    If ``x`` is sparse and its densified input plus the result would take
    more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by default; see
    [`bcoo_array.set_max_dense_bytes`][]). Static shapes only: it raises
    under ``jax.jit`` too.
"""

_DOC_ND = """{summary} over several axes (array API ``fft.{name}``).

Parameters
----------
x : BCOOArray or array
    Input of a {category} dtype, at least 1-D.
s : sequence of int, optional
    Length of each transformed axis {nwhat} (default: the input's sizes{sdefault}).
axes : sequence of int, optional
    Axes to transform (default: the last ``len(s)``, or all).
norm : {{'backward', 'ortho', 'forward'}}
    Normalisation mode, as in ``numpy.fft.{name}``.

Returns
-------
BCOOArray
    {result} Dense layout: the input is densified and
    ``jax.numpy.fft.{name}`` does the work.

Raises
------
TypeError
    If ``x``'s dtype is not {category}.
ValueError
    If ``x`` is 0-d, ``s`` and ``axes`` differ in length, a size is < 1 or
    ``norm`` is unknown.
IndexError
    If an axis is out of range.
MemoryError
    If ``x`` is sparse and its densified input plus the result would take
    more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by default; see
    [`bcoo_array.set_max_dense_bytes`][]). Static shapes only: it raises
    under ``jax.jit`` too.
"""

#: name -> (input category, result description, what n means, default n)
_ONE_D = {
    "fft": ("complex floating-point", "Complex, ``x``'s dtype.", "in the input", "``x.shape[axis]``"),
    "ifft": ("complex floating-point", "Complex, ``x``'s dtype.", "in the input", "``x.shape[axis]``"),
    "rfft": ("real floating-point", "Complex of ``x``'s precision; length ``n // 2 + 1`` along ``axis``.",
             "in the input", "``x.shape[axis]``"),
    "irfft": ("complex floating-point", "Real of ``x``'s precision; length ``n`` along ``axis``.",
              "in the output", "``2 * (x.shape[axis] - 1)``"),
    "hfft": ("complex floating-point", "Real of ``x``'s precision; length ``n`` along ``axis``.",
             "in the output", "``2 * (x.shape[axis] - 1)``"),
    "ihfft": ("real floating-point", "Complex of ``x``'s precision; length ``n // 2 + 1`` along ``axis``.",
              "in the input", "``x.shape[axis]``"),
}
_SUMMARY = {
    "fft": "Discrete Fourier transform", "ifft": "Inverse discrete Fourier transform",
    "rfft": "Discrete Fourier transform of real input", "irfft": "Inverse of rfft",
    "hfft": "Discrete Fourier transform of a Hermitian-symmetric signal", "ihfft": "Inverse of hfft",
    "fftn": "N-dimensional discrete Fourier transform", "ifftn": "N-dimensional inverse discrete Fourier transform",
    "rfftn": "N-dimensional discrete Fourier transform of real input", "irfftn": "Inverse of rfftn",
}
_N_D = {
    "fftn": ("complex floating-point", "Complex, ``x``'s dtype.", "in the input", ""),
    "ifftn": ("complex floating-point", "Complex, ``x``'s dtype.", "in the input", ""),
    "rfftn": ("real floating-point", "Complex of ``x``'s precision; the last axis has ``s[-1] // 2 + 1`` entries.",
              "in the input", ""),
    "irfftn": ("complex floating-point", "Real of ``x``'s precision.", "in the output",
               ", ``2 * (size - 1)`` for the last axis"),
}


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex128) if dt in (np.float64, np.complex128) else np.dtype(np.complex64)


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt in (np.float64, np.complex128) else np.dtype(np.float32)


def _out_dtype(name: str, dt: np.dtype) -> np.dtype:
    return _real_of(dt) if name in ("irfft", "hfft", "irfftn") else _complex_of(dt)


def _out_len(name: str, m: int, n: int | None) -> int:
    """Length of the transformed axis in the result: input length ``m``, ``n`` as the caller gave it."""
    if name in ("irfft", "hfft", "irfftn"):
        return n if n is not None else 2 * (m - 1)
    size = n if n is not None else m
    return size // 2 + 1 if name in ("rfft", "ihfft", "rfftn") else size


def _guard(name: str, x: BCOOArray, out_shape, call: str) -> None:
    """The densification guard before ``x.todense()``: the densified input plus the result.

    An input in dense layout already stores every entry and is not checked
    (as for every guarded function, docs/design.md).
    """
    if is_dense_layout(x):
        return
    check_dense_arrays(f"fft.{name}", [(x.shape, x.dtype), (out_shape, _out_dtype(name, x.dtype))],
                       what="the densified input and the transform: the Fourier transform of a sparse array "
                       "is dense", alternative=f"jax.numpy.fft.{name}(x.todense(), {call})")


def _make_1d(name: str):
    category, result, nwhat, ndefault = _ONE_D[name]
    jfn = getattr(jnp.fft, name)

    def fn(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
        x = _check(x, name, category)
        _check_norm(norm, name)
        n = _check_n(n, name)
        ax = normalize_axis(axis, x.ndim)
        if n is None and name in ("irfft", "hfft") and x.shape[ax] < 2:
            raise ValueError(f"fft.{name}(): the default output length 2 * (m - 1) is {2 * (x.shape[ax] - 1)} "
                             f"for an input of length {x.shape[ax]}; pass n >= 1")
        out_shape = x.shape[:ax] + (_out_len(name, x.shape[ax], n),) + x.shape[ax + 1:]
        _guard(name, x, out_shape, f"n={n}, axis={ax}, norm={norm!r}")
        out = jfn(x.todense(), n=n, axis=ax, norm=norm)
        return dense_layout(out.astype(_out_dtype(name, x.dtype)))

    fn.__doc__ = _DOC_1D.format(summary=_SUMMARY[name], name=name, category=category, result=result,
                                nwhat=nwhat, ndefault=ndefault)
    return public(fn, name, "bcoo_array.fft")


def _nd_out_shape(name: str, shape: tuple, s, axes) -> tuple:
    """The result's shape of the N-d transform ``name`` (``s`` and ``axes`` checked, ``axes`` filled in from ``s``)."""
    if axes is None:
        axes = tuple(range(len(shape)))
    out = list(shape)
    for i, a in enumerate(axes):
        n = s[i] if s is not None else None
        if i == len(axes) - 1:  # the real transforms halve (or restore) the last axis only
            out[a] = _out_len(name, shape[a], n)
        elif n is not None:
            out[a] = n
    return tuple(out)


def _make_nd(name: str):
    category, result, nwhat, sdefault = _N_D[name]
    jfn = getattr(jnp.fft, name)

    def fn(x, /, *, s=None, axes=None, norm: str = "backward"):
        x = _check(x, name, category)
        _check_norm(norm, name)
        if axes is not None:
            axes = tuple(normalize_axis(a, x.ndim, "axes") for a in axes)
            if len(set(axes)) != len(axes):
                raise ValueError(f"fft.{name}(): axes={axes} repeats an axis")
        if s is not None:
            s = tuple(_check_n(v, name, "s") for v in s)
            if axes is not None and len(s) != len(axes):
                raise ValueError(f"fft.{name}(): s={s} and axes={axes} differ in length")
            if axes is None:
                axes = tuple(range(x.ndim - len(s), x.ndim))
        elif name == "irfftn":
            last = (axes if axes is not None else tuple(range(x.ndim)))[-1] if (axes is None or axes) else None
            if last is not None and x.shape[last] < 2:
                raise ValueError(f"fft.irfftn(): the default length 2 * (m - 1) of the last axis is "
                                 f"{2 * (x.shape[last] - 1)}; pass s with sizes >= 1")
        _guard(name, x, _nd_out_shape(name, x.shape, s, axes), f"s={s}, axes={axes}, norm={norm!r}")
        out = jfn(x.todense(), s=s, axes=axes, norm=norm)
        return dense_layout(out.astype(_out_dtype(name, x.dtype)))

    fn.__doc__ = _DOC_ND.format(summary=_SUMMARY[name], name=name, category=category, result=result,
                                nwhat=nwhat, sdefault=sdefault)
    return public(fn, name, "bcoo_array.fft")


# The transforms of the tables, bound to static names (docs, IDEs and type checkers see them).
fft = _make_1d("fft")
ifft = _make_1d("ifft")
rfft = _make_1d("rfft")
irfft = _make_1d("irfft")
hfft = _make_1d("hfft")
ihfft = _make_1d("ihfft")
fftn = _make_nd("fftn")
ifftn = _make_nd("ifftn")
rfftn = _make_nd("rfftn")
irfftn = _make_nd("irfftn")


def _freq(name, n, d, dtype, device):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fft.{name}(): n={n} must be a positive integer")
    dt = _dtypes.default_float() if dtype is None else _dtypes.canonicalize_dtype(dtype)
    check_category(dt, "real floating-point", name, "dtype")
    out = getattr(jnp.fft, name)(n, d=d, dtype=dt).astype(dt)
    res = dense_layout(out)
    return _device_put(res, device) if device is not None else res


@routed
def fftfreq(n, /, *, d: float = 1.0, dtype=None, device=None) -> BCOOArray:
    """Sample frequencies of [`fft`][bcoo_array.fft.fft] (array API ``fft.fftfreq``).

    Parameters
    ----------
    n : int
        Window length (positive).
    d : float
        Sample spacing.
    dtype : real floating dtype, optional
        Default: the default floating dtype.
    device : device, optional
        Where to place the result.

    Returns
    -------
    BCOOArray
        Shape ``(n,)``: ``[0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1] / (d*n)``,
        dense layout.

    Raises
    ------
    ValueError
        If ``n < 1``.
    TypeError
        If ``dtype`` is not real floating.
    """
    return _freq("fftfreq", n, d, dtype, device)


@routed
def rfftfreq(n, /, *, d: float = 1.0, dtype=None, device=None) -> BCOOArray:
    """Sample frequencies of [`rfft`][bcoo_array.fft.rfft] (array API ``fft.rfftfreq``).

    Parameters
    ----------
    n : int
        Window length (positive).
    d : float
        Sample spacing.
    dtype : real floating dtype, optional
        Default: the default floating dtype.
    device : device, optional
        Where to place the result.

    Returns
    -------
    BCOOArray
        Shape ``(n // 2 + 1,)``: ``[0, 1, ..., n//2] / (d*n)``, dense layout.

    Raises
    ------
    ValueError
        If ``n < 1``.
    TypeError
        If ``dtype`` is not real floating.
    """
    return _freq("rfftfreq", n, d, dtype, device)


def _shift(x, axes, sign):
    x = as_sparse(x)
    if axes is None:
        ax = tuple(range(x.ndim))
    elif isinstance(axes, (tuple, list)):
        ax = tuple(normalize_axis(a, x.ndim, "axes") for a in axes)
    else:
        ax = (normalize_axis(axes, x.ndim, "axes"),)
    if not ax:
        return x
    shifts = tuple((x.shape[a] // 2) if sign > 0 else -(x.shape[a] // 2) for a in ax)
    return roll(x, shifts, axis=ax)


@routed
def fftshift(x, /, *, axes=None) -> BCOOArray:
    """Move the zero-frequency term to the centre (array API ``fft.fftshift``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    axes : int or sequence of int, optional
        Axes to shift (default all).

    Returns
    -------
    BCOOArray
        [`bcoo_array.roll`][] by ``size // 2`` along each axis: sparse input
        stays sparse.

    Raises
    ------
    IndexError
        If an axis is out of range.
    """
    return _shift(x, axes, +1)


@routed
def ifftshift(x, /, *, axes=None) -> BCOOArray:
    """Inverse of [`fftshift`][bcoo_array.fft.fftshift] (array API ``fft.ifftshift``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    axes : int or sequence of int, optional
        Axes to shift (default all).

    Returns
    -------
    BCOOArray
        [`bcoo_array.roll`][] by ``-(size // 2)`` along each axis (sparse).

    Raises
    ------
    IndexError
        If an axis is out of range.
    """
    return _shift(x, axes, -1)


__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft", "irfft", "irfftn",
           "rfft", "rfftfreq", "rfftn"]
