"""Data types: the namespace's dtype objects, their categories, type promotion
and the 64-bit policy.

The dtype objects are ``numpy.dtype`` instances, the same objects that JAX
arrays report as ``.dtype``, so ``A.dtype == bcoo_array.float32`` holds.

Promotion follows the array API standard's tables
(https://data-apis.org/array-api/2025.12/API_specification/type_promotion.html).
Mixed-kind promotions the standard leaves unspecified (integer with floating,
int64 with uint64) follow NumPy's ``result_type``, capped by the JAX x64 setting.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from ._warnings import DowncastWarning, warn

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_REAL_FLOAT = (float16, float32, float64)
_COMPLEX = (complex64, complex128)

#: The dtype categories of the standard, keyed by the names its function pages use.
CATEGORIES: dict[str, tuple[np.dtype, ...]] = {
    "bool": (bool_,),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integer": _SIGNED + _UNSIGNED,
    "integer or boolean": (bool_,) + _SIGNED + _UNSIGNED,
    "real floating-point": _REAL_FLOAT,
    "complex floating-point": _COMPLEX,
    "floating-point": _REAL_FLOAT + _COMPLEX,
    "real numeric": _SIGNED + _UNSIGNED + _REAL_FLOAT,
    "numeric": _SIGNED + _UNSIGNED + _REAL_FLOAT + _COMPLEX,
    "all": (bool_,) + _SIGNED + _UNSIGNED + _REAL_FLOAT + _COMPLEX,
}

_X64_ONLY = (int64, uint64, float64, complex128)


def x64_enabled() -> bool:
    """Whether JAX 64-bit mode (``jax_enable_x64``) is on."""
    return bool(jax.config.jax_enable_x64)


def supported_dtypes() -> tuple[np.dtype, ...]:
    """The dtypes the current JAX configuration can hold without downcasting."""
    if x64_enabled():
        return CATEGORIES["all"]
    return tuple(d for d in CATEGORIES["all"] if d not in _X64_ONLY)


def default_float() -> np.dtype:
    """The default real floating-point dtype: float64 with x64 on, else float32."""
    return float64 if x64_enabled() else float32


def default_complex() -> np.dtype:
    """The default complex dtype: complex128 with x64 on, else complex64."""
    return complex128 if x64_enabled() else complex64


def default_int() -> np.dtype:
    """The default integer dtype: int64 with x64 on, else int32."""
    return int64 if x64_enabled() else int32


#: How to get 64-bit values, for the errors that refuse what would not fit 32 bits with x64 off.
X64_FIX = "turn on JAX's 64-bit mode (jax.config.update('jax_enable_x64', True) or JAX_ENABLE_X64=1)"

#: The 32-bit dtype that takes a 64-bit NumPy scalar's value with JAX's x64 mode off.
_SCALAR_HALF_WIDTH = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.complex64),
                      np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32)}


def python_values_dtype(obj) -> np.dtype:
    """The dtype of Python values (a scalar, a nested sequence): bool, or the default integer, float or
    complex dtype of their kind (``default_int``...: 32-bit while JAX's 64-bit mode is off, where NumPy
    would make 64-bit arrays). Raises ``TypeError`` for values that are not numbers or booleans."""
    arr = np.asarray(obj)
    if arr.dtype.kind == "b":
        return bool_
    if arr.dtype.kind in "iu":
        return default_int()
    if arr.dtype.kind == "f":
        return default_float()
    if arr.dtype.kind == "c":
        return default_complex()
    raise TypeError(f"cannot make an array from objects of type {arr.dtype}; expected numbers or booleans")


def numpy_scalar_value(x, argname: str) -> np.ndarray:
    """A NumPy scalar (or 0-d NumPy array) as the 0-d NumPy array JAX holds of it: its own dtype, or with
    JAX's x64 mode off a 64-bit one as the 32-bit scalar of the same kind (as JAX takes it, and as the
    standard takes a Python scalar's value: an integer out of its range raises, a float rounds; a finite
    float beyond the 32-bit range, which would round to ``inf``, raises).

    The one rule for NumPy scalars beside an array, of the namespace's operands
    (``._operands.numpy_scalar``) and NumPy's ufunc operands
    (``._numpy.operands.numpy_scalar``). The dtype is not checked here.

    Raises
    ------
    OverflowError
        With x64 off, for an int64 / uint64 value outside int32 / uint32, or a finite float64 / complex128
        value (or part) beyond float32's largest (``inf`` in float32: NumPy keeps it in float64).
    """
    arr = np.asarray(x)
    half = _SCALAR_HALF_WIDTH.get(arr.dtype)
    if half is None or x64_enabled():
        return arr
    value = arr.item()
    if half.kind in "iu":
        info = np.iinfo(half)
        if not info.min <= value <= info.max:
            raise OverflowError(f"{argname}: NumPy {arr.dtype} scalar {value} is out of bounds for {half}, the "
                                "dtype it takes while JAX's 64-bit mode is off")
        return np.asarray(value, half)
    with np.errstate(over="ignore"):
        out = np.asarray(value, half)
    parts, got = np.asarray([arr.real, arr.imag]), np.asarray([out.real, out.imag])
    if np.any(np.isfinite(parts) & ~np.isfinite(got)):
        raise OverflowError(f"{argname}: NumPy {arr.dtype} scalar {value} overflows {half} (to inf), the dtype it "
                            f"takes while JAX's 64-bit mode is off; {X64_FIX}, or scale the values")
    return out


def canonicalize_dtype(dtype, *, argname: str = "dtype") -> np.dtype:
    """Return ``dtype`` as a supported ``numpy.dtype``.

    Raises
    ------
    TypeError
        If ``dtype`` is not one of the standard's dtypes.
    ValueError
        If ``dtype`` is 64-bit and JAX's x64 mode is off (JAX would silently
        downcast it).
    """
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{argname}={dtype!r} is not a data type") from exc
    if dt not in CATEGORIES["all"]:
        raise TypeError(
            f"{argname}={dt} is not a dtype of the array API standard; use one of "
            "bool, int8-int64, uint8-uint64, float16, float32, float64, complex64, complex128"
        )
    if dt in _X64_ONLY and not x64_enabled():
        if downcast_64bit():
            half = np.dtype(_HALF_WIDTH[dt.name])
            warn(f"{argname}={dt} taken as {half}: JAX's 64-bit mode is off and the downcast opt-in is on "
                 f"({DOWNCAST_ENV}=1 or bcoo_array.set_downcast_64bit(True)); values outside {half}'s range or "
                 "precision change", DowncastWarning)
            return half
        raise ValueError(
            f"{argname}={dt} needs JAX's 64-bit mode, which is off; JAX would silently "
            "downcast it. Turn it on with jax.config.update('jax_enable_x64', True) "
            "or the environment variable JAX_ENABLE_X64=1 before creating arrays, or ask "
            f"for a 32-bit dtype (e.g. dtype=bcoo_array.{_HALF_WIDTH.get(dt.name, 'float32')}, "
            "or cast the input with .astype first); code that passes NumPy's 64-bit defaults it cannot change "
            f"can opt in to a downcast with a warning: {DOWNCAST_ENV}=1 or bcoo_array.set_downcast_64bit(True)."
        )
    return dt


#: Environment variable of the opt-in that takes 64-bit inputs as 32-bit ones while x64 is off ("1" to enable).
DOWNCAST_ENV = "BCOO_ARRAY_DOWNCAST_64BIT"
_downcast_override: bool | None = None


def downcast_64bit() -> bool:
    """Whether 64-bit inputs are taken as 32-bit ones while JAX's x64 mode is off (the opt-in).

    Returns
    -------
    bool
        The value given to [`bcoo_array.set_downcast_64bit`][], else whether
        the environment variable ``BCOO_ARRAY_DOWNCAST_64BIT`` is ``1``
        (read at every call); False by default.
    """
    if _downcast_override is not None:
        return _downcast_override
    return os.environ.get(DOWNCAST_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def set_downcast_64bit(enabled: bool | None) -> bool:
    """Opt in (or out) of taking 64-bit inputs as 32-bit while JAX's x64 mode is off.

    By default, with x64 off, a float64/int64/uint64/complex128 input or
    ``dtype=`` argument raises ``ValueError`` (JAX would downcast it
    silently). Array-API consumers that pass NumPy's 64-bit defaults
    (``np.ones(n)``, ``dtype=np.float64``) and cannot change them can opt in:
    such inputs are then taken as float32/int32/uint32/complex64, each with a
    ``DowncastWarning`` (as ``jax.numpy`` downcasts, but never silently).
    With x64 on, this setting does nothing.

    Parameters
    ----------
    enabled : bool or None
        True to downcast, False to raise, None to follow the environment
        variable ``BCOO_ARRAY_DOWNCAST_64BIT`` again.

    Returns
    -------
    bool
        The previous setting, as [`bcoo_array.downcast_64bit`][] gave it.

    Raises
    ------
    TypeError
        If ``enabled`` is not a bool or None.
    """
    global _downcast_override
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"set_downcast_64bit(): enabled must be True, False or None, got {enabled!r}")
    previous = downcast_64bit()
    _downcast_override = enabled
    return previous


#: The 32-bit dtype of the same kind, offered in the x64 error message.
_HALF_WIDTH = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}


def isdtype_kind(dtype: np.dtype, kind) -> bool:
    """Implement [`bcoo_array.isdtype`][] for one dtype and a kind or tuple of kinds."""
    if isinstance(kind, tuple):
        return any(isdtype_kind(dtype, k) for k in kind)
    if isinstance(kind, str):
        names = {
            "bool": "bool",
            "signed integer": "signed integer",
            "unsigned integer": "unsigned integer",
            "integral": "integer",
            "real floating": "real floating-point",
            "complex floating": "complex floating-point",
            "numeric": "numeric",
        }
        if kind not in names:
            raise ValueError(f"kind={kind!r} is not a dtype kind of the standard; use one of {sorted(names)}")
        return dtype in CATEGORIES[names[kind]]
    try:
        return np.dtype(dtype) == np.dtype(kind)
    except TypeError as exc:
        raise TypeError(f"kind={kind!r} is neither a dtype, a kind name nor a tuple of them") from exc


def _kind(dt: np.dtype) -> str:
    if dt == bool_:
        return "b"
    if dt in _SIGNED:
        return "i"
    if dt in _UNSIGNED:
        return "u"
    if dt in _REAL_FLOAT:
        return "f"
    return "c"


def result_type(*dtypes: np.dtype) -> np.dtype:
    """Promote dtypes by the standard's tables (no value-based casting).

    bool promotes only with bool; signed with unsigned by the lattice
    (``int8 + uint8 -> int16``); real with complex to the complex of the
    wider precision. Combinations the standard leaves unspecified (integer
    with floating, ``int64 + uint64``) follow NumPy, capped at 32 bits with
    x64 off.

    Raises
    ------
    TypeError
        If bool is mixed with a numeric dtype.
    ValueError
        If no dtype is given.
    """
    if not dtypes:
        raise ValueError("at least one dtype is required")
    out = np.dtype(dtypes[0])
    for dt in dtypes[1:]:
        out = _promote_pair(out, np.dtype(dt))
    return out


def _promote_pair(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ka, kb = _kind(a), _kind(b)
    if "b" in (ka, kb):
        raise TypeError(f"the standard defines no promotion of {a} with {b}; cast explicitly with astype")
    res = np.result_type(a, b)
    if not x64_enabled() and res in _X64_ONLY and ka in "iu" and kb in "iu" and a not in _X64_ONLY \
            and b not in _X64_ONLY:
        raise ValueError(
            f"the standard promotes {a} with {b} to {res}, which needs JAX's 64-bit mode; turn it on with "
            "jax.config.update('jax_enable_x64', True) or JAX_ENABLE_X64=1, or cast one operand with astype"
        )
    if not x64_enabled() and res in _X64_ONLY:
        res = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}[res]
    return res


def sum_dtype(dt: np.dtype, dtype) -> np.dtype:
    """The accumulator dtype of ``sum``/``prod``/``cumulative_sum`` of ``dt`` (the standard's rule).

    ``dtype`` wins when given; otherwise bool and integers narrower than the
    default integer widen to it (unsigned to the widest unsigned), others keep ``dt``.
    """
    if dtype is not None:
        return canonicalize_dtype(dtype)
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < default_int().itemsize):
        return default_int()
    if dt.kind == "u" and dt.itemsize < default_int().itemsize:
        return np.dtype(np.uint64) if x64_enabled() else np.dtype(np.uint32)
    return dt
