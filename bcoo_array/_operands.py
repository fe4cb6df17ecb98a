"""Operand normalisation, the one place every entry point reads its operands.

* a BCOOArray passes through; a scipy.sparse, pydata-sparse or
  jax.experimental.sparse array is converted to one (``._convert``);
* a JAX array passes through; a NumPy array stays NumPy (so that its values
  stay concrete under ``jax.jit``), refusing a silent 64-bit downcast;
* Python scalars become 0-d arrays by the standard's rules
  (``scalar_dtype``); a NumPy scalar (or 0-d NumPy array) beside an array
  keeps its own dtype, as in NumPy (``numpy_scalar``: ``np.float64(2)`` is a
  ``float`` subclass, but not a weak scalar), a 64-bit one taken at 32 bits
  with JAX's x64 mode off;
* dtype categories are checked (``check_category``) and operands cast to
  the promoted dtype (``binary_operands``, ``cast``).
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray, NoPattern
from ._convert import from_foreign
from . import _fill_rule
from ._fill import Twin
from ._relayout import dense_layout

PY_SCALARS = (bool, int, float, complex)

def is_python_scalar(x) -> bool:
    """Whether ``x`` is a Python scalar, the standard's weak operand (NumPy's ``float64`` and ``complex128``
    scalars subclass ``float`` and ``complex`` but carry a dtype, so they are not)."""
    return isinstance(x, PY_SCALARS) and not isinstance(x, np.generic)


def is_array(x) -> bool:
    """Whether ``x`` is an array operand (a BCOOArray, a JAX or NumPy array)."""
    return isinstance(x, (BCOOArray, jax.Array, np.ndarray, np.generic, jax.core.Tracer))


def as_operand(x, argname: str):
    """``x`` as an operand: a BCOOArray, a JAX array or a NumPy array.

    BCOOArrays and JAX arrays pass through; NumPy arrays and scalars stay
    NumPy (concrete under ``jax.jit``); scipy.sparse, pydata-sparse and
    jax.experimental.sparse arrays are converted to BCOOArrays.

    Raises
    ------
    TypeError
        For objects that are not arrays (lists, strings, None, ...); the
        message names ``argname``.
    ValueError
        For a 64-bit NumPy dtype with JAX's x64 mode off.
    """
    if isinstance(x, BCOOArray):
        return x
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        # NumPy input stays NumPy: its values are concrete even under jax.jit,
        # where jnp.asarray would turn it into a tracer.
        _dtypes.canonicalize_dtype(x.dtype, argname=f"{argname}.dtype")
        return np.asarray(x)
    converted = from_foreign(x)
    if converted is not None:
        return converted
    raise TypeError(f"{argname} must be an array, got {type(x).__name__}")


def is_numpy_scalar(x) -> bool:
    """Whether ``x`` is a single NumPy value: a NumPy scalar or a 0-d NumPy array.

    Both count as scalars beside an array: NumPy itself hands
    ``__array_ufunc__`` a 0-d array for the scalar of ``np.float64(2) < A``
    (and the scalar itself for ``np.float64(2) * A``).
    """
    return isinstance(x, np.generic) or (type(x) is np.ndarray and x.ndim == 0)


def numpy_scalar(x, argname: str) -> np.ndarray:
    """A NumPy scalar (or 0-d NumPy array) operand beside an array: a 0-d NumPy array of its dtype.

    NumPy's rule (NEP 50): a NumPy scalar has its dtype, it is not a weak
    Python scalar, so ``A * np.float64(2)`` and ``np.float64(2) * A`` (which
    NumPy sends to ``__array_ufunc__``) both promote ``A``'s dtype with
    float64. With JAX's x64 mode off a 64-bit scalar (what NumPy's functions
    return: ``1 / np.sqrt(n)``, ``np.float64(x.sum())``) is taken as the
    32-bit scalar of the same kind, as JAX takes it and as the standard takes
    a Python scalar's value: an integer out of its range raises, a float
    rounds. So ``(1 / np.sqrt(n)) * A`` is float32 for a float32 ``A``,
    whichever side the scalar is on. A 64-bit NumPy array of one or more
    dimensions still raises (see ``as_operand``).

    Parameters
    ----------
    x : numpy.generic or 0-d numpy.ndarray
        The scalar (``is_numpy_scalar``).
    argname : str
        Name used in error messages.

    Returns
    -------
    numpy.ndarray
        0-d.

    Raises
    ------
    TypeError
        For a dtype outside the standard's.
    OverflowError
        With x64 off, for an int64 / uint64 value outside int32 / uint32.
    """
    arr = _dtypes.numpy_scalar_value(x, argname)
    _dtypes.canonicalize_dtype(arr.dtype, argname=f"{argname}.dtype")
    return arr


def scalar_dtype(value, other: np.dtype) -> np.dtype:
    """The dtype a Python scalar takes beside an array of dtype ``other``.

    Following the standard: a scalar of the array's kind (or a "lower" kind:
    int with a floating array, float with a complex one) takes the array's
    dtype; otherwise the default dtype of the scalar's kind.
    """
    kind = other.kind
    if isinstance(value, bool):
        return other if kind == "b" else _dtypes.bool_
    if isinstance(value, int):
        return other if kind in "iufc" else _dtypes.default_int()
    if isinstance(value, float):
        if kind in "fc":
            return other
        return _dtypes.default_float()
    if kind == "c":
        return other
    if kind == "f":
        return np.dtype(np.complex128) if other == _dtypes.float64 else np.dtype(np.complex64)
    return _dtypes.default_complex()


def scalar_to_array(value, dtype: np.dtype):
    """A 0-d NumPy array of ``dtype`` holding Python scalar ``value``.

    Raises
    ------
    OverflowError
        If an integer scalar does not fit the integer dtype.
    """
    if dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python int {value} is out of bounds for {dtype}")
    return np.asarray(value, dtype)  # NumPy, so that it stays concrete under jax.jit


def check_category(dtype: np.dtype, category: str, name: str, argname: str = "x") -> None:
    """Raise TypeError unless ``dtype`` is in the standard's ``category`` for ``name``."""
    if dtype not in _dtypes.CATEGORIES[category]:
        raise TypeError(f"{name}() needs {argname} of a {category} dtype, got {dtype}")


def binary_operands(x1, x2, name: str, category: str = "all"):
    """Normalise the operands of a binary function; returns ``(x1, x2, dtype)``.

    At most one operand may be a Python scalar (weak: it takes the other
    operand's dtype by the standard's rules). A NumPy scalar or 0-d NumPy
    array keeps its dtype (``numpy_scalar``: 32-bit with JAX's x64 mode
    off). Both operands are cast to the promoted dtype.

    Raises
    ------
    TypeError
        If both are Python scalars, an operand is not an array, or a dtype is
        outside ``category``.
    ValueError
        For a 64-bit NumPy array of one or more dimensions with JAX's x64
        mode off (``as_operand``).
    OverflowError
        If an integer scalar does not fit its dtype.
    """
    s1, s2 = is_python_scalar(x1), is_python_scalar(x2)
    if s1 and s2:
        raise TypeError(f"{name}() needs at least one array argument, got two Python scalars")
    if s1:
        x2 = _array_operand(x2, "x2")
        x1 = scalar_to_array(x1, scalar_dtype(x1, np.dtype(x2.dtype)))
    elif s2:
        x1 = _array_operand(x1, "x1")
        x2 = scalar_to_array(x2, scalar_dtype(x2, np.dtype(x1.dtype)))
    else:
        x1 = _array_operand(x1, "x1")
        x2 = _array_operand(x2, "x2")
    x1, x2 = adopt_pattern(x1, x2)
    d1, d2 = np.dtype(x1.dtype), np.dtype(x2.dtype)
    check_category(d1, category, name, "x1")
    check_category(d2, category, name, "x2")
    dtype = _dtypes.result_type(d1, d2)
    return cast(x1, dtype), cast(x2, dtype), dtype


def _array_operand(x, argname: str):
    """``as_operand``, a NumPy scalar or 0-d NumPy array through ``numpy_scalar``."""
    return numpy_scalar(x, argname) if is_numpy_scalar(x) else as_operand(x, argname)


def _same_layout(a: BCOOArray, b: BCOOArray) -> bool:
    return (a.shape == b.shape and a.n_batch == b.n_batch and a.n_dense == b.n_dense and a.nse == b.nse
            and a.n_sparse == b.n_sparse)


def adopt_pattern(x1, x2):
    """Give a sparse tangent without indices (``NoPattern``: a custom rule's) the pattern of the other operand.

    In a ``custom_jvp`` rule, a tangent is combined with its primal (``2 * a * a_dot``): an operand of the same
    shape, layout and nse, whose indices are the tangent's. Other operands are returned unchanged.
    """
    def patternless(a):
        return isinstance(a, BCOOArray) and type(a._indices) is NoPattern

    if patternless(x1) and isinstance(x2, BCOOArray) and not patternless(x2) and _same_layout(x1, x2):
        x1 = x2.with_data(x1.data)._replace(fill_value=x1.fill_value)
    elif patternless(x2) and isinstance(x1, BCOOArray) and not patternless(x1) and _same_layout(x1, x2):
        x2 = x1.with_data(x2.data)._replace(fill_value=x2.fill_value)
    return x1, x2


def cast(x, dtype: np.dtype):
    """Cast a BCOOArray or JAX array to ``dtype`` (no-op when it already has it)."""
    if np.dtype(x.dtype) == dtype:
        return x
    if isinstance(x, BCOOArray):
        # Duplicates are summed first: casting does not commute with summation (unary does).
        return _fill_rule.unary(_caster(np.dtype(dtype)), x)
    return x.astype(dtype)


@functools.lru_cache(maxsize=None)
def _caster(dtype: np.dtype) -> Twin:
    """One stable function per dtype, so compiled casts and cast fill values are cached on it."""
    return Twin(lambda f: f.astype(dtype), lambda f: host_cast(f, dtype), dtype=dtype)


def host_cast(a, dtype: np.dtype) -> np.ndarray:
    """``a.astype(dtype)`` in NumPy with XLA's conversion of floats to integers, so the host engine and a
    jitted cast agree on every input: values beyond the integer range saturate at its ends and NaN gives 0
    (NumPy gives an undefined value there, the C cast's: ``INT_MIN`` for NaN and inf on x86, wrapped
    values for unsigned targets). Other casts are NumPy's, which XLA's match."""
    a = np.asarray(a)
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or a.dtype.kind != "f":
        return a.astype(dtype)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        out = a.astype(dtype)
    # float(info.max) rounds up to a power of two (2**31, 2**63): every value from there on saturates
    out = np.where(a >= float(info.max), np.asarray(info.max, dtype), out)
    out = np.where(a <= float(info.min), np.asarray(info.min, dtype), out)
    return np.where(np.isnan(a), np.zeros((), dtype), out)


def as_sparse(x, argname: str = "x") -> BCOOArray:
    """``as_operand``, then a dense array wrapped in dense layout: always a BCOOArray."""
    x = as_operand(x, argname)
    return x if isinstance(x, BCOOArray) else dense_layout(x)
