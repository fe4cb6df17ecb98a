"""Set functions of the array API standard: ``isin`` and ``unique_*``.

The ``unique_*`` functions have data-dependent output shapes, so they run
eagerly only (under ``jax.jit`` they raise, naming the way out).
``unique_values`` and ``unique_counts`` read only the stored entries plus the
fill value (weighted by the number of unstored positions); ``unique_inverse``
and ``unique_all`` need a position per element and work on ``x.todense()``.
As the standard says, NaNs are all distinct; ``-0.0`` equals ``0.0``.
Spec: https://data-apis.org/array-api/2025.12/API_specification/set_functions.html
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._fill import eval_fill
from ._layout import is_concrete
from ._operands import PY_SCALARS, as_operand, as_sparse, scalar_dtype, scalar_to_array
from ._relayout import dense_layout, to_coo
from ._routing import routed


class UniqueAllResult(NamedTuple):
    values: BCOOArray
    indices: BCOOArray
    inverse_indices: BCOOArray
    counts: BCOOArray


class UniqueCountsResult(NamedTuple):
    values: BCOOArray
    counts: BCOOArray


class UniqueInverseResult(NamedTuple):
    values: BCOOArray
    inverse_indices: BCOOArray


def _eager(x: BCOOArray, name: str) -> None:
    if not is_concrete(x.data, x.indices):
        raise jax.errors.ConcretizationTypeError(
            x.data, f"{name}(): the number of distinct values fixes the output shape, so it cannot run under "
            "jax.jit; call it eagerly, or use jax.numpy.unique(x.todense(), size=N, fill_value=...) with a "
            "static bound")


def _stored_values(x: BCOOArray):
    """The stored values (duplicates merged, padding dropped) and the number of unstored positions."""
    c = to_coo(x)._canonical()
    idx = np.asarray(c.indices).astype(np.int64)
    data = np.asarray(c.data)
    valid = np.all(idx < np.asarray(c.shape, np.int64), axis=1) if c.ndim else np.ones(idx.shape[0], bool)
    vals = data[valid]
    return vals, x.size - vals.shape[0]


def _values_counts(x: BCOOArray):
    vals, n_unstored = _stored_values(x)
    weights = np.ones(vals.shape[0], np.int64)
    if n_unstored:
        f = np.asarray(x.fill_value)
        if np.isnan(f) if x.dtype.kind in "fc" else False:
            extra = np.full(n_unstored, f, x.dtype)  # every NaN is distinct
            extra_w = np.ones(n_unstored, np.int64)
        else:
            extra = f.reshape(1).astype(x.dtype)
            extra_w = np.array([n_unstored], np.int64)
        vals = np.concatenate([vals, extra])
        weights = np.concatenate([weights, extra_w])
    uniq, inv = np.unique(vals, return_inverse=True, equal_nan=False)
    counts = np.bincount(inv.reshape(-1), weights=weights, minlength=uniq.shape[0]).astype(np.int64)
    return uniq, counts


def _idx(a) -> BCOOArray:
    return dense_layout(jnp.asarray(np.asarray(a).astype(_dtypes.default_int())))


@routed
def unique_values(x, /) -> BCOOArray:
    """The distinct values of ``x``, sorted (array API ``unique_values``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any shape and dtype.

    Returns
    -------
    BCOOArray
        1-D, ``x``'s dtype, dense layout. The fill value is included when
        some position is unstored. Each NaN is distinct.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    """
    x = as_sparse(x)
    _eager(x, "unique_values")
    uniq, _ = _values_counts(x)
    return dense_layout(jnp.asarray(uniq, x.dtype))


@routed
def unique_counts(x, /) -> UniqueCountsResult:
    """Distinct values of ``x`` and how often each occurs (array API ``unique_counts``).

    Returns
    -------
    UniqueCountsResult
        ``values`` (as [`unique_values`][bcoo_array.unique_values]) and ``counts`` (default index
        dtype), both 1-D, dense layout; unstored positions count towards the
        fill value.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    """
    x = as_sparse(x)
    _eager(x, "unique_counts")
    uniq, counts = _values_counts(x)
    return UniqueCountsResult(dense_layout(jnp.asarray(uniq, x.dtype)), _idx(counts))


def _dense_unique(x: BCOOArray):
    flat = np.asarray(x.todense()).reshape(-1)
    return np.unique(flat, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)


def _inverse(x: BCOOArray, uniq, inv) -> BCOOArray:
    """The inverse indices in ``x``'s shape, sparse with the fill value's index as fill."""
    inv = jnp.asarray(np.asarray(inv).reshape(x.shape).astype(_dtypes.default_int()))
    if x.n_sparse == 0:
        return dense_layout(inv)
    f = np.asarray(x.fill_value)
    hits = np.nonzero(uniq == f)[0]
    fill = int(hits[0]) if hits.size else 0
    return BCOOArray.fromdense(inv, fill_value=fill)


@routed
def unique_inverse(x, /) -> UniqueInverseResult:
    """Distinct values of ``x`` and, for each element, its position among them
    (array API ``unique_inverse``).

    Returns
    -------
    UniqueInverseResult
        ``values`` (1-D, dense layout) and ``inverse_indices`` (``x``'s
        shape, default index dtype; sparse with the index of ``x``'s fill
        value as its fill value when ``x`` is sparse). Computed on
        ``x.todense()`` with ``numpy.unique``.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    """
    x = as_sparse(x)
    _eager(x, "unique_inverse")
    uniq, _, inv, _ = _dense_unique(x)
    return UniqueInverseResult(dense_layout(jnp.asarray(uniq, x.dtype)), _inverse(x, uniq, inv))


@routed
def unique_all(x, /) -> UniqueAllResult:
    """Distinct values, first-occurrence indices, inverse indices and counts
    (array API ``unique_all``).

    Returns
    -------
    UniqueAllResult
        ``values``, ``indices`` (flat row-major index of each value's first
        occurrence), ``counts`` (all 1-D, dense layout, default index dtype
        for the integer ones) and ``inverse_indices`` as in
        [`unique_inverse`][bcoo_array.unique_inverse]. Computed on ``x.todense()`` with
        ``numpy.unique``.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    """
    x = as_sparse(x)
    _eager(x, "unique_all")
    uniq, first, inv, counts = _dense_unique(x)
    return UniqueAllResult(dense_layout(jnp.asarray(uniq, x.dtype)), _idx(first), _inverse(x, uniq, inv),
                           _idx(counts))


@routed
def isin(x1, x2, /, *, invert: bool = False) -> BCOOArray:
    """Whether each element of ``x1`` occurs in ``x2`` (array API ``isin``).

    Parameters
    ----------
    x1 : BCOOArray, array or int
        Elements to test.
    x2 : BCOOArray, array or int
        Values to test against (any shape; its values are what count).
    invert : bool
        Test for *not* in ``x2`` instead.

    Returns
    -------
    BCOOArray
        Boolean, ``x1``'s shape (0-d for a scalar ``x1``). Sparse when
        ``x1`` is: stored entries tested one by one, fill value
        ``x1.fill_value in x2``. Equality is [`equal`][bcoo_array.equal] after type
        promotion (so NaN is in nothing).

    Raises
    ------
    TypeError
        If both are Python scalars, or an operand is not an array or int.
    """
    s1, s2 = isinstance(x1, PY_SCALARS), isinstance(x2, PY_SCALARS)
    if s1 and s2:
        raise TypeError("isin() needs at least one array argument, got two Python scalars")
    if s1:
        b = as_operand(x2, "x2")
        a = scalar_to_array(x1, scalar_dtype(x1, np.dtype(b.dtype)))
    elif s2:
        a = as_operand(x1, "x1")
        b = scalar_to_array(x2, scalar_dtype(x2, np.dtype(a.dtype)))
    else:
        a, b = as_operand(x1, "x1"), as_operand(x2, "x2")
    dt = _dtypes.result_type(np.dtype(a.dtype), np.dtype(b.dtype))
    test = (b.todense() if isinstance(b, BCOOArray) else jnp.asarray(b)).astype(dt).reshape(-1)

    def fn(v):
        return jnp.isin(v.astype(dt), test, invert=invert)

    if isinstance(a, BCOOArray) and a.ndim > 0 and is_concrete(test):
        src = a._canonical()
        return src._replace(data=fn(src.data), fill_value=eval_fill(fn, src.fill_value))
    dense = a.todense() if isinstance(a, BCOOArray) else jnp.asarray(a)
    return dense_layout(fn(dense))


__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]
