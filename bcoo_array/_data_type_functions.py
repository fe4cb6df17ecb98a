"""Data type functions of the array API standard: ``astype``, ``can_cast``,
``finfo``, ``iinfo``, ``isdtype``, ``result_type``.

Spec: https://data-apis.org/array-api/2025.12/API_specification/data_type_functions.html
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._operands import PY_SCALARS, as_operand, cast, scalar_dtype
from ._relayout import dense_layout
from ._routing import routed


@routed
def astype(x, dtype, /, *, copy: bool = True, device=None) -> BCOOArray:
    """Cast ``x`` to ``dtype``.

    Parameters
    ----------
    x : BCOOArray or array
        Input of any shape.
    dtype : dtype
        Target dtype.
    copy : bool
        If False and ``x`` already has ``dtype``, return ``x`` itself.
    device : optional
        Target device (see [`BCOOArray.to_device`][bcoo_array.BCOOArray.to_device]).

    Returns
    -------
    BCOOArray
        Same shape; duplicates are summed first (casting does not commute
        with summation), and the fill value is cast the same way as the data.

    Raises
    ------
    TypeError
        For complex to real casts (take ``real`` first) or a dtype outside
        the standard.
    ValueError
        For a 64-bit dtype with x64 off.
    """
    x = as_operand(x, "x")
    dt = _dtypes.canonicalize_dtype(dtype)
    if not isinstance(x, BCOOArray):
        x = dense_layout(x)
    if np.dtype(x.dtype).kind == "c" and dt.kind != "c":
        raise TypeError(f"astype() from {x.dtype} to {dt} would drop the imaginary part; use real(x) first")
    if x.dtype == dt and not copy:
        out = x
    elif x.dtype == dt:
        out = x._replace()
    else:
        out = cast(x, dt)
    if device is not None:
        out = out.to_device(device)
    return out


@routed
def can_cast(from_, to, /) -> bool:
    """Whether ``from_`` (a dtype or array) casts to ``to`` under the standard's promotion rules.

    Returns
    -------
    bool
        True when ``result_type(from_, to) == to`` (a safe cast).
    """
    src = np.dtype(from_.dtype) if hasattr(from_, "dtype") else np.dtype(from_)
    dst = np.dtype(to)
    try:
        return _dtypes.result_type(src, dst) == dst
    except TypeError:
        return False


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating-point dtype (fields of the standard)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:
    """Machine limits of an integer dtype (fields of the standard)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


@routed
def finfo(type, /) -> finfo_object:
    """Machine limits of a floating-point dtype or array (``bits``, ``eps``, ``max``, ``min``, ``smallest_normal``, ``dtype``).

    For complex dtypes the limits are those of the real component.

    Raises
    ------
    TypeError
        If ``type`` is not floating-point.
    """
    dt = np.dtype(type.dtype) if hasattr(type, "dtype") and not isinstance(type, np.dtype) else np.dtype(type)
    if dt.kind not in "fc":
        raise TypeError(f"finfo() needs a floating-point dtype, got {dt}")
    fi = np.finfo(dt)
    real = np.dtype(fi.dtype)
    return finfo_object(int(fi.bits), float(fi.eps), float(fi.max), float(fi.min), float(fi.smallest_normal), real)


@routed
def iinfo(type, /) -> iinfo_object:
    """Machine limits of an integer dtype or array (``bits``, ``max``, ``min``, ``dtype``).

    Raises
    ------
    TypeError
        If ``type`` is not an integer dtype.
    """
    dt = np.dtype(type.dtype) if hasattr(type, "dtype") and not isinstance(type, np.dtype) else np.dtype(type)
    if dt.kind not in "iu":
        raise TypeError(f"iinfo() needs an integer dtype, got {dt}")
    ii = np.iinfo(dt)
    return iinfo_object(int(ii.bits), int(ii.max), int(ii.min), dt)


@routed
def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name ("bool", "signed integer",
    "unsigned integer", "integral", "real floating", "complex floating", "numeric") or a tuple.

    Raises
    ------
    TypeError
        If ``dtype`` is not a dtype object (arrays are refused, as the standard says).
    ValueError
        For an unknown kind name.
    """
    if not isinstance(dtype, np.dtype):
        raise TypeError(f"isdtype() needs a dtype object, got {type(dtype).__name__}; pass x.dtype")
    return _dtypes.isdtype_kind(dtype, kind)


@routed
def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion rules give for the arguments.

    Parameters
    ----------
    *arrays_and_dtypes : arrays, dtypes or Python scalars
        At least one array or dtype; Python scalars take part as the standard
        says (they adopt the kind-compatible array dtype).

    Raises
    ------
    TypeError
        For a promotion the standard does not define (bool with numeric), or
        only Python scalars.
    ValueError
        For no arguments.
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type() needs at least one argument")
    dtypes = []
    scalars = []
    for a in arrays_and_dtypes:
        if isinstance(a, PY_SCALARS):
            scalars.append(a)
        elif hasattr(a, "dtype") and not isinstance(a, np.dtype):
            dtypes.append(np.dtype(a.dtype))
        else:
            dtypes.append(np.dtype(a))
    if not dtypes:
        raise TypeError("result_type() needs at least one array or dtype besides Python scalars")
    out = _dtypes.result_type(*dtypes)

    for s in scalars:
        sd = scalar_dtype(s, out)
        if isinstance(s, bool) and out.kind != "b":
            raise TypeError(f"result_type(): a Python bool does not promote with {out}")
        if not isinstance(s, bool) and out.kind == "b":
            raise TypeError(f"result_type(): a Python {type(s).__name__} does not promote with bool")
        out = _dtypes.result_type(out, sd)
    return out


__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

