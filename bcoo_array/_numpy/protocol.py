"""NumPy's override protocols: ``__array_function__`` (NEP 18) and ``__array_ufunc__`` (NEP 13).

Both answer from the tables of ``.registry``. A NumPy function without an
entry raises a TypeError that names the ways to densify on purpose
(``A.toarray()``, or the opt-in ``BCOO_ARRAY_AUTO_DENSIFY=1``), unless an
argument of a type we do not know overrides ``__array_function__`` (then
NotImplemented, so that type may answer). Under the opt-in, such a function
instead densifies its BCOOArray arguments (after the densification guard,
``bcoo_array.set_max_dense_bytes``) and returns NumPy's own result. A
BCOOArray is never turned into an object array nor silently densified.

Ufuncs: ``__call__`` of a ufunc of ``UFUNCS`` is its namespace function; any
other ufunc (``numpy.cbrt``, ``scipy.special.erf``) is applied to the stored
values and the fill value (``.foreign``), with or without the opt-in. The
methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at`` are
served by ``.methods`` as ``.registry.method_support`` states; what is
refused raises TypeError naming the fix, or densifies under the opt-in.

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

from . import foreign
from . import methods as me
from .operands import (
    PY_SCALARS,
    auto_densify,
    check_ufunc_kwargs,
    densify_all,
    densify_message,
    elementwise_arg,
    holds_bcoo,
    reject_out,
    sparse_arg,
)
from .registry import ACCUMULATE, FUNCTIONS, METHODS, REDUCE, UFUNCS, method_support


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
        values for ``ndim``/``shape``/``size``/``may_share_memory``); NumPy's
        result on densified arguments for an unregistered function under
        ``BCOO_ARRAY_AUTO_DENSIFY=1``; NotImplemented when an argument type
        we do not know overrides ``__array_function__`` (NumPy then asks it,
        or raises TypeError).

    Raises
    ------
    TypeError
        For ``out=`` (JAX buffers are immutable), a NumPy keyword this type
        cannot honour (the message names it), or an unregistered function
        without the opt-in (the message names ``A.toarray()`` and the opt-in).
    MemoryError
        Under the opt-in, when densifying exceeds ``bcoo_array.set_max_dense_bytes``.
    """
    impl = FUNCTIONS.get(func)
    if not all(_known_type(t) for t in types):
        return NotImplemented
    if impl is None:
        if any(not issubclass(t, (xp.BCOOArray, np.ndarray, np.generic)) for t in types):
            return NotImplemented  # pydata-sparse may implement it
        return _densified_call(func, args, kwargs)
    if "out" in kwargs:
        reject_out(kwargs["out"], func.__name__)
    return impl(*args, **kwargs)


def _densified_call(func, args, kwargs):
    """A NumPy function without a sparse implementation: refused, or NumPy on densified arguments (opt-in)."""
    name = func.__name__
    if not auto_densify():
        raise TypeError(densify_message("it has no sparse implementation (no entry in the __array_function__ "
                                        "table)", name))
    if "out" in kwargs and holds_bcoo(kwargs["out"]):
        reject_out(kwargs["out"], name)
    run = getattr(func, "_implementation", func)  # NumPy's own code: no second dispatch to this protocol
    return run(*densify_all(tuple(args), name), **densify_all(dict(kwargs), name))


def _cast_inputs(inputs, dtype):
    if dtype is None:
        return inputs
    dt = np.dtype(dtype)
    return tuple(x if isinstance(x, PY_SCALARS) else xp.astype(sparse_arg(x), dt) for x in inputs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """Answer a ufunc call (NEP 13): ``__call__`` and the methods, as ``.registry.method_support`` states.

    ``__call__`` of a ufunc of ``UFUNCS`` takes any mix of BCOOArrays,
    NumPy/JAX arrays, scalars and foreign sparse arrays (``dtype=`` casts the
    inputs first); another ufunc is applied to the stored values and the fill
    value (``.foreign.apply``). ``.reduce`` takes ``axis`` (default 0, None
    for all axes), ``dtype`` and ``keepdims``; ``.accumulate`` and
    ``.reduceat`` take ``axis`` and ``dtype``; ``.outer`` the keywords of
    ``__call__``; ``.at`` updates its BCOOArray operand in place.

    Parameters
    ----------
    self : BCOOArray
        The array whose ``__array_ufunc__`` NumPy called.
    ufunc : numpy.ufunc
        The ufunc.
    method : str
        ``'__call__'``, ``'reduce'``, ``'accumulate'``, ``'reduceat'``, ``'outer'`` or ``'at'``.
    *inputs, **kwargs
        The arguments of the call, as NumPy normalises them.

    Returns
    -------
    BCOOArray, tuple of BCOOArray, None or NotImplemented
        BCOOArrays (the namespace's closure, dense results in dense layout);
        None for ``at``; NumPy's result for a refused call under
        ``BCOO_ARRAY_AUTO_DENSIFY=1``; NotImplemented for a method NumPy
        does not have.

    Raises
    ------
    TypeError
        For ``out=``, ``where=`` other than True, ``initial=``, another
        keyword with a non-default value, a traced operand where NumPy code
        must run, or a refused method (the message names ``A.toarray()`` and
        the opt-in).
    """
    if method == "__call__":
        fn = UFUNCS.get(ufunc)
        if fn is None:
            return _foreign_call(ufunc, method, inputs, kwargs)
        check_ufunc_kwargs(ufunc.__name__, kwargs, allowed=("axis",) if ufunc is np.vecdot else ())
        args = [elementwise_arg(x, f"x{k + 1}") for k, x in enumerate(inputs)]
        args = _cast_inputs(args, kwargs.get("dtype"))
        extra = {"axis": kwargs["axis"]} if "axis" in kwargs else {}
        return me.call_with_numpy_dtypes(ufunc, fn, args, extra)
    if method not in METHODS:
        return NotImplemented
    if method_support(ufunc, method) is None:
        if method == "at":
            raise TypeError(f"numpy.{ufunc.__name__}.at() is not supported for BCOOArray: only ufuncs of one or "
                            "two inputs and one output, without a signature; update A.toarray() with NumPy instead")
        return foreign.refuse_or_densify(ufunc, method, inputs, kwargs, _why(ufunc, method))
    if method == "reduce":
        return me.reduce(ufunc, REDUCE[ufunc], inputs, kwargs)
    if method == "reduceat":
        return me.reduceat(ufunc, REDUCE[ufunc], inputs, kwargs)
    if method == "accumulate":
        return me.accumulate(ufunc, ACCUMULATE.get(ufunc), inputs, kwargs)
    if method == "outer":
        return _foreign_call(ufunc, method, inputs, kwargs, lambda: me.outer(ufunc, UFUNCS.get(ufunc), inputs,
                                                                               kwargs))
    return me.at(ufunc, inputs, kwargs)


def _why(ufunc, method) -> str:
    if ufunc.signature is not None:
        return f"it is a generalized ufunc (signature {ufunc.signature!r})"
    if method in ("reduce", "reduceat"):
        return (f"{ufunc.__name__} has no reduction computed from the stored entries (served: "
                + ", ".join(sorted(u.__name__ for u in REDUCE)) + ")")
    return f"{method} is not served for {ufunc.__name__}"


def _foreign_call(ufunc, method, inputs, kwargs, run=None):
    """``run()`` (default: the ufunc on stored values, ``.foreign.apply``); a ``Refused`` goes to the opt-in."""
    try:
        if run is None:
            return foreign.apply(ufunc, inputs, kwargs, method)
        return run()
    except foreign.Refused as exc:
        if auto_densify():
            return foreign.refuse_or_densify(ufunc, method, inputs, kwargs, str(exc))
        raise TypeError(str(exc)) from None
