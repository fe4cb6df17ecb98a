"""NumPy's override protocols: ``__array_function__`` (NEP 18) and ``__array_ufunc__`` (NEP 13).

Both answer from the tables of ``.registry``; anything not in them
returns NotImplemented, so NumPy raises its usual TypeError. A BCOOArray is
never turned into an object array nor silently densified.

Operands may mix BCOOArrays with NumPy and JAX arrays, Python and NumPy
scalars, and scipy.sparse / pydata-sparse / jax.experimental.sparse arrays
(converted with [`bcoo_array.asarray`][]). NumPy arrays keep the 64-bit
policy of the namespace: a float64 array with JAX's x64 mode off raises
ValueError instead of being downcast. ``out=`` is refused with TypeError,
since JAX buffers are immutable.

References: NEP 18 (https://numpy.org/neps/nep-0018-array-function-protocol.html),
NEP 13 (https://numpy.org/neps/nep-0013-ufunc-overrides.html).
"""

from __future__ import annotations

import sys

import numpy as np

import bcoo_array as xp

from .operands import PY_SCALARS, elementwise_arg, reject_out, sparse_arg
from .registry import ACCUMULATE, FUNCTIONS, REDUCE, UFUNCS


def _known_type(t: type) -> bool:
    """Types whose ``__array_function__`` we may override: ours, NumPy's and pydata-sparse's."""
    if issubclass(t, (xp.BCOOArray, np.ndarray, np.generic)):
        return True
    sparse = sys.modules.get("sparse")
    return sparse is not None and isinstance(getattr(sparse, "SparseArray", None), type) and issubclass(
        t, sparse.SparseArray)


def array_function(self, func, types, args, kwargs):
    """Answer ``func(*args, **kwargs)`` from ``.registry.FUNCTIONS`` (NEP 18).

    Parameters
    ----------
    self : BCOOArray
        The array whose ``__array_function__`` NumPy called.
    func : callable
        The NumPy function, e.g. ``numpy.sum``.
    types : collection of type
        The types of the arguments that override ``__array_function__``.
    args, kwargs : tuple, dict
        The arguments of the call.

    Returns
    -------
    object
        The implementation's result (BCOOArrays, tuples of them, or Python
        values for ``ndim``/``shape``/``size``), or NotImplemented for an
        unregistered function or when an argument type we do not know
        overrides ``__array_function__`` (NumPy then raises TypeError).

    Raises
    ------
    TypeError
        For ``out=`` (JAX buffers are immutable) or a NumPy keyword this type
        cannot honour (the message names it).
    """
    impl = FUNCTIONS.get(func)
    if impl is None or not all(_known_type(t) for t in types):
        return NotImplemented
    if "out" in kwargs:
        reject_out(kwargs["out"], func.__name__)
    return impl(*args, **kwargs)


_NO_DEFAULT = object()
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None, "where": True}


def _check_ufunc_kwargs(name: str, kwargs: dict, allowed=()) -> None:
    """Refuse ``out=`` and ufunc keywords given a value other than their default."""
    reject_out(kwargs.get("out"), name)
    for k, v in kwargs.items():
        if k in ("out", "dtype") or k in allowed:
            continue
        default = _UFUNC_DEFAULTS.get(k, _NO_DEFAULT)
        if v is default or (isinstance(v, (str, bool)) and type(v) is type(default) and v == default):
            continue
        raise TypeError(f"numpy.{name}(): {k}={v!r} is not supported for BCOOArray")


def _cast_inputs(inputs, dtype):
    if dtype is None:
        return inputs
    dt = np.dtype(dtype)
    return tuple(x if isinstance(x, PY_SCALARS) else xp.astype(sparse_arg(x), dt) for x in inputs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """Answer a ufunc call from ``.registry.UFUNCS``, ``REDUCE`` or ``ACCUMULATE`` (NEP 13).

    ``__call__`` takes any mix of BCOOArrays, NumPy/JAX arrays, scalars and
    foreign sparse arrays; ``dtype=`` casts the inputs first. ``.reduce``
    (add, multiply, maximum, minimum, logical_and, logical_or) and
    ``.accumulate`` (add, multiply) take ``axis`` (default 0, None for all
    axes in ``reduce``), ``dtype`` and ``keepdims``.

    Parameters
    ----------
    self : BCOOArray
        The array whose ``__array_ufunc__`` NumPy called.
    ufunc : numpy.ufunc
        The ufunc.
    method : str
        ``'__call__'``, ``'reduce'``, ``'accumulate'``, ...
    *inputs, **kwargs
        The arguments of the call.

    Returns
    -------
    BCOOArray or NotImplemented
        NotImplemented for an unregistered ufunc or method (NumPy then raises TypeError).

    Raises
    ------
    TypeError
        For ``out=``, ``where=`` other than True, ``initial=``, or another
        keyword with a non-default value.
    """
    if method == "__call__":
        fn = UFUNCS.get(ufunc)
        if fn is None:
            return NotImplemented
        _check_ufunc_kwargs(ufunc.__name__, kwargs, allowed=("axis",) if ufunc is np.vecdot else ())
        args = [elementwise_arg(x, f"x{k + 1}") for k, x in enumerate(inputs)]
        args = _cast_inputs(args, kwargs.get("dtype"))
        extra = {"axis": kwargs["axis"]} if "axis" in kwargs else {}
        return fn(*args, **extra)
    if method == "reduce" and ufunc in REDUCE:
        name = f"{ufunc.__name__}.reduce"
        if "initial" in kwargs:
            raise TypeError(f"numpy.{name}(): initial= is not supported for BCOOArray")
        _check_ufunc_kwargs(name, kwargs, allowed=("axis", "keepdims"))
        (x,) = inputs
        return REDUCE[ufunc](sparse_arg(x), kwargs.get("axis", 0), kwargs.get("dtype"), kwargs.get("keepdims", False))
    if method == "accumulate" and ufunc in ACCUMULATE:
        name = f"{ufunc.__name__}.accumulate"
        _check_ufunc_kwargs(name, kwargs, allowed=("axis",))
        (x,) = inputs
        return ACCUMULATE[ufunc](sparse_arg(x), kwargs.get("axis", 0), kwargs.get("dtype"))
    return NotImplemented
