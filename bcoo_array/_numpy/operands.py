"""Argument handling shared by the NumPy adapters and extras.

NumPy functions take "array-likes" where the namespace takes arrays; the
helpers here turn NumPy's arguments into what ``bcoo_array`` accepts,
refuse ``out=`` and other keywords a BCOOArray cannot honour, and carry the
two NumPy dtype rules (sums of booleans count as integers; means of integers
are floating) that differ from the array API standard.

Only public names of ``bcoo_array`` are used: this package sits above the
namespace.
"""

from __future__ import annotations

import os

import jax
import numpy as np

import bcoo_array as xp

from .._dtypes import numpy_scalar_value
from .._limits import check_dense

#: Python scalar types, passed to element-wise namespace functions as they are.
PY_SCALARS = (bool, int, float, complex)

#: Default of keywords whose absence must be told apart from any value (``initial=``, ``where=``, ...).
UNSET = object()


def sparse_arg(x, argname: str = "a"):
    """Any array-like as a BCOOArray.

    Parameters
    ----------
    x : array_like
        A BCOOArray (returned as it is), a NumPy or JAX array, a scipy.sparse,
        pydata-sparse or jax.experimental.sparse array, a nested sequence or a
        scalar; converted with [`bcoo_array.asarray`][] (dense input stores
        its non-zero entries).
    argname : str
        Name used in error messages.

    Returns
    -------
    BCOOArray

    Raises
    ------
    TypeError
        If ``x`` is not array-like.
    ValueError
        If ``x`` is 64-bit while JAX's 64-bit mode is off.
    """
    if isinstance(x, xp.BCOOArray):
        return x
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise TypeError(f"{argname} must be array-like, got {type(x).__name__}")
    return xp.asarray(x)


def elementwise_arg(x, argname: str):
    """An operand of an element-wise namespace function.

    BCOOArrays, Python scalars, JAX arrays and NumPy arrays of one or more
    dimensions pass unchanged. NumPy scalars and 0-d arrays (NumPy hands the
    scalar of ``np.float64(2) < A`` over as one) become 0-d NumPy arrays of
    their dtype by ``numpy_scalar`` (NumPy's rule, not a Python scalar's
    weak one), so ``np.float64(2) * A`` gives what ``A * np.float64(2)``
    gives: with JAX's x64 mode off a 64-bit scalar is taken at 32 bits,
    while a 64-bit NumPy array is refused by the namespace. These dense
    operands then follow the namespace's sparse-dense rule. Foreign sparse
    arrays and nested sequences are converted with ``sparse_arg``.

    Parameters
    ----------
    x : array_like or scalar
        The operand.
    argname : str
        Name used in error messages.

    Returns
    -------
    BCOOArray, JAX or NumPy array, or Python scalar

    Raises
    ------
    TypeError
        If ``x`` is not array-like.
    OverflowError
        With x64 off, for an int64 / uint64 scalar outside the 32-bit range.
    """
    if isinstance(x, np.generic) or (type(x) is np.ndarray and x.ndim == 0):
        return numpy_scalar(x, argname)
    if isinstance(x, (xp.BCOOArray, np.ndarray, jax.Array, *PY_SCALARS)):
        return x
    return sparse_arg(x, argname)


def numpy_scalar(x, argname: str) -> np.ndarray:
    """A NumPy scalar or 0-d NumPy array operand as a 0-d NumPy array of its dtype, applied before NumPy's
    loop is resolved: the namespace's rule (``bcoo_array._dtypes.numpy_scalar_value``: NEP 50's dtype, a
    64-bit one at 32 bits with JAX's x64 mode off; an integer outside the 32-bit range raises
    ``OverflowError``). The namespace checks the dtype."""
    return numpy_scalar_value(x, argname)


def reject_out(out, name: str) -> None:
    """Raise TypeError when ``out`` is given (JAX buffers are immutable).

    Parameters
    ----------
    out : object
        NumPy's ``out=`` argument; None (or a tuple of None) passes.
    name : str
        The NumPy function, for the message.

    Raises
    ------
    TypeError
        If ``out`` holds an array.
    """
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(
            f"numpy.{name}(): out= is not supported for BCOOArray (JAX buffers are immutable); use the return value"
        )


def refuse(name: str, **keywords) -> None:
    """Raise TypeError for NumPy keywords given a value (anything but ``UNSET``).

    Parameters
    ----------
    name : str
        The NumPy function, for the message.
    **keywords
        The keywords to check, as given by the caller.

    Raises
    ------
    TypeError
        Naming the first keyword that was given.
    """
    for k, v in keywords.items():
        if v is not UNSET:
            raise TypeError(f"numpy.{name}(): {k}={v!r} is not supported for BCOOArray")


def where_unset(where):
    """NumPy's ``where=`` as ``UNSET`` when it is the default ``True``."""
    return UNSET if where is True else where


def flat_axis(x, axis):
    """``(x, axis)``, or ``(x flattened, 0)`` for ``axis=None`` as NumPy's sort/cumsum/take do."""
    return (xp.reshape(x, (-1,)), 0) if axis is None else (x, axis)


def counting_input(x, dtype):
    """NumPy's rule for sums and products: booleans count as the default integer.

    The standard's ``sum`` refuses booleans; NumPy's ``sum``, ``prod`` and
    ``cumsum`` count them. With an explicit ``dtype`` nothing changes.
    """
    if dtype is None and x.dtype == xp.bool:
        return xp.astype(x, xp.__array_namespace_info__().default_dtypes()["integral"])
    return x


def floating_input(x, dtype=None):
    """``x`` cast to ``dtype``, or integers and booleans to the default float (NumPy's mean/var/norm rule)."""
    if dtype is not None:
        return xp.astype(x, dtype)
    if x.dtype.kind in "iub":
        return xp.astype(x, xp.__array_namespace_info__().default_dtypes()["real floating"])
    return x


def joined_args(arrays, dtype, casting, name: str) -> list:
    """The operands of NumPy's joining functions (``concatenate``, ``stack``, ``hstack``, ...) as BCOOArrays.

    Parameters
    ----------
    arrays : sequence of array_like
        The operands.
    dtype : dtype or None
        Cast every operand to it.
    casting : str
        Only NumPy's default ``'same_kind'`` is accepted.
    name : str
        The NumPy function, for the message.

    Returns
    -------
    list of BCOOArray

    Raises
    ------
    TypeError
        For another ``casting``.
    """
    if casting != "same_kind":
        raise TypeError(f"numpy.{name}(): casting={casting!r} is not supported; cast with dtype= or astype")
    xs = [sparse_arg(a, "arrays") for a in arrays]
    return xs if dtype is None else [xp.astype(x, dtype) for x in xs]


# -- ufunc keywords ----------------------------------------------------------------------------

_NO_DEFAULT = object()
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None, "where": True}


def check_ufunc_kwargs(name: str, kwargs: dict, allowed=()) -> None:
    """Refuse ``out=`` and ufunc keywords given a value other than their default.

    Parameters
    ----------
    name : str
        ``'add'``, ``'add.reduce'``, ..., for the message.
    kwargs : dict
        The keywords of the ufunc call.
    allowed : collection of str
        Keywords the caller handles itself (``dtype`` always passes).

    Raises
    ------
    TypeError
        For ``out=`` or a keyword such as ``where=`` with a non-default value.
    """
    reject_out(kwargs.get("out"), name)
    for k, v in kwargs.items():
        if k in ("out", "dtype") or k in allowed:
            continue
        default = _UFUNC_DEFAULTS.get(k, _NO_DEFAULT)
        if v is default or (isinstance(v, (str, bool)) and type(v) is type(default) and v == default):
            continue
        raise TypeError(f"numpy.{name}(): {k}={v!r} is not supported for BCOOArray")


# -- the opt-in to implicit densification ------------------------------------------------------

#: The opt-in that lets NumPy densify a BCOOArray (the array class reads the same variable for
#: ``numpy.asarray(A)``): read at every call.
AUTO_DENSIFY_ENV = "BCOO_ARRAY_AUTO_DENSIFY"


def auto_densify() -> bool:
    """Whether ``BCOO_ARRAY_AUTO_DENSIFY=1`` is set (read at every call)."""
    return os.environ.get(AUTO_DENSIFY_ENV, "0") == "1"


def is_traced(x) -> bool:
    """Whether ``x`` (a BCOOArray or a JAX value) holds a tracer (under ``jax.jit``, ``grad``, ``vmap``)."""
    if isinstance(x, xp.BCOOArray):
        return not x._concrete()
    return isinstance(x, jax.core.Tracer)


def densify(x, name: str) -> np.ndarray:
    """``x.toarray()``: a fresh NumPy array, after the library's densification guard.

    Parameters
    ----------
    x : BCOOArray
        A concrete array.
    name : str
        The NumPy function that asked (``'median'``, ``'divide.reduce'``), for the messages.

    Returns
    -------
    numpy.ndarray
        Writable, of ``x``'s shape and dtype.

    Raises
    ------
    MemoryError
        Above the limit on implicit densification (``bcoo_array.set_max_dense_bytes``).
    TypeError
        If ``x`` is traced (there are no values to densify under ``jax.jit``).
    """
    if is_traced(x):
        raise TypeError(f"numpy.{name}(): a traced BCOOArray (under jax.jit) cannot be densified for NumPy; "
                        "compute it outside jit, or with bcoo_array functions")
    check_dense(f"numpy.{name}", x.shape, x.dtype, what="a BCOOArray operand densified for NumPy",
                alternative=f"numpy.{name}(A.toarray())")
    return x.toarray()


def densify_all(obj, name: str):
    """``obj`` with every BCOOArray (also inside lists, tuples and dict values) densified by ``densify``."""
    if isinstance(obj, xp.BCOOArray):
        return densify(obj, name)
    if type(obj) in (list, tuple):
        return type(obj)(densify_all(o, name) for o in obj)
    if type(obj) is dict:
        return {k: densify_all(v, name) for k, v in obj.items()}
    return obj


def holds_bcoo(obj) -> bool:
    """Whether ``obj`` is a BCOOArray or a list / tuple / dict holding one."""
    if isinstance(obj, xp.BCOOArray):
        return True
    if type(obj) in (list, tuple):
        return any(holds_bcoo(o) for o in obj)
    if type(obj) is dict:
        return any(holds_bcoo(v) for v in obj.values())
    return False


def densify_message(what: str, name: str) -> str:
    """The text of a refusal: why, and the two ways to densify on purpose."""
    return (f"numpy.{name}() is not supported for BCOOArray: {what}. To compute it on the dense values on "
            f"purpose, pass A.toarray() (NumPy) or A.todense() (JAX); or set {AUTO_DENSIFY_ENV}=1 to let "
            "NumPy functions without a sparse implementation densify BCOOArray operands (within "
            "bcoo_array.set_max_dense_bytes)")
