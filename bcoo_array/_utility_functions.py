"""Utility functions of the array API standard: ``all``, ``any``, ``diff``.

All three keep sparsity: ``all``/``any`` reduce the sparse boolean ``x != 0``
(unstored entries counting as ``x.fill_value != 0``) and ``diff`` subtracts
two shifted sparse slices.
Spec: https://data-apis.org/array-api/2025.12/API_specification/utility_functions.html
"""

from __future__ import annotations

import operator

import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._data_type_functions import astype
from ._elementwise_functions import equal, greater, logical_not, not_equal, subtract
from ._shapes import normalize_axis
from ._manipulation_functions import concat
from ._operands import as_sparse
from ._statistical_functions import sum as _sum
from ._routing import routed


def _truth(x: BCOOArray) -> BCOOArray:
    return x if x.dtype == np.bool_ else not_equal(x, 0)


def _count(b: BCOOArray, axis, keepdims) -> BCOOArray:
    return _sum(astype(b, _dtypes.default_int()), axis=axis, keepdims=keepdims)


@routed
def all(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:  # noqa: A001 - the standard's name
    """Whether every element over ``axis`` is true (non-zero) (array API ``all``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any dtype (complex: non-zero if either part is; NaN is true).
    axis : int, tuple of int or None
        Axes to reduce; None reduces all. An empty reduction is True.
    keepdims : bool
        Keep reduced axes as size-1 dimensions.

    Returns
    -------
    BCOOArray
        Boolean; sparse over the kept sparse dimensions. Computed as
        ``sum(x == 0) == 0`` with unstored entries counting as the fill value.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    """
    x = as_sparse(x)
    return equal(_count(logical_not(_truth(x)), axis, keepdims), 0)


@routed
def any(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:  # noqa: A001 - the standard's name
    """Whether some element over ``axis`` is true (non-zero) (array API ``any``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any dtype (complex: non-zero if either part is; NaN is true).
    axis : int, tuple of int or None
        Axes to reduce; None reduces all. An empty reduction is False.
    keepdims : bool
        Keep reduced axes as size-1 dimensions.

    Returns
    -------
    BCOOArray
        Boolean; sparse over the kept sparse dimensions. Computed as
        ``sum(x != 0) > 0`` with unstored entries counting as the fill value.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    """
    x = as_sparse(x)
    return greater(_count(_truth(x), axis, keepdims), 0)


@routed
def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> BCOOArray:
    """The ``n``-th forward difference along ``axis`` (array API ``diff``).

    Parameters
    ----------
    x : BCOOArray or array
        Numeric input of at least one dimension.
    axis : int
        Axis of the differences (default the last).
    n : int
        Number of times to difference (``n >= 0``).
    prepend, append : BCOOArray or array, optional
        Values joined before / after ``x`` along ``axis`` first (same shape
        as ``x`` elsewhere); dtypes promote with ``x``'s.

    Returns
    -------
    BCOOArray
        ``x``'s dtype (promoted with ``prepend``/``append``); the size along
        ``axis`` is ``M + N1 + N2 - n`` (0 if negative). Sparse: each step is
        ``x[1:] - x[:-1]`` on sparse slices, the fill value becoming
        ``fill - fill``.

    Raises
    ------
    TypeError
        If ``x`` is boolean (use ``not_equal`` of shifted slices) or ``n`` is
        not an integer.
    ValueError
        If ``x`` is 0-d, ``n`` is negative or the shapes of ``prepend`` /
        ``append`` do not fit.
    IndexError
        If ``axis`` is out of range.
    """
    x = as_sparse(x)
    if x.ndim == 0:
        raise ValueError("diff() needs an array of at least one dimension")
    try:
        n = operator.index(n)
    except TypeError as exc:
        raise TypeError(f"diff(): n={n!r} must be an integer") from exc
    if n < 0:
        raise ValueError(f"diff(): n={n} must be non-negative")
    if x.dtype == np.bool_:
        raise TypeError("diff() needs a numeric dtype, got bool; use not_equal(x[1:], x[:-1]) for booleans")
    ax = normalize_axis(axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        hi = (slice(None),) * ax + (slice(1, None),)
        lo = (slice(None),) * ax + (slice(None, m - 1),)
        x = subtract(x[hi], x[lo])
    return x


__all__ = ["all", "any", "diff"]
