"""Sorting functions of the array API standard: ``sort`` and ``argsort``.

Both sort ``x.todense()`` along one axis with ``jax.numpy.sort`` /
``jax.numpy.argsort`` (NaN sorts last ascending and first descending, as
in NumPy). ``sort`` stores the result again with ``x``'s fill value, so a
sparse input gives a sparse output (the number of non-fill entries does not
change); ``argsort`` returns a permutation, inherently dense (dense layout).
Spec: https://data-apis.org/array-api/2025.12/API_specification/sorting_functions.html
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _dtypes
from ._array_object import BCOOArray
from ._layout import is_concrete, normalize_axis, prod
from ._operands import as_sparse, check_category
from ._relayout import dense_layout
from ._routing import routed


def _prepare(x, axis, name):
    x = as_sparse(x)
    check_category(x.dtype, "real numeric", name)
    if x.ndim == 0:
        raise ValueError(f"{name}() needs an array of at least one dimension, got a 0-d array")
    return x, normalize_axis(axis, x.ndim)


@routed
def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> BCOOArray:
    """Sorted copy of ``x`` along ``axis`` (array API ``sort``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of a real numeric dtype, at least 1-D.
    axis : int
        Axis to sort along (default the last).
    descending : bool
        Sort in descending order.
    stable : bool
        Keep equal elements in their order (always honoured).

    Returns
    -------
    BCOOArray
        ``x``'s shape, dtype and fill value; stores the entries that differ
        from the fill value (at most the number ``x`` stores; under ``jit``
        the nse is that static bound, padded).

    Raises
    ------
    TypeError
        If ``x`` is not real numeric.
    ValueError
        If ``x`` is 0-d.
    IndexError
        If ``axis`` is out of range.
    """
    x, ax = _prepare(x, axis, "sort")
    out = jnp.sort(x.todense(), axis=ax, descending=descending, stable=True)
    if x.n_sparse == 0:
        return dense_layout(out)._replace(fill_value=x.fill_value)
    nse = None
    if not is_concrete(x.data, x.indices):
        # Sorting keeps the number of non-fill entries, at most the stored count.
        nse = min(x.size, x.nse * prod(x.shape[:x.n_batch]) * prod(x.shape[x.ndim - x.n_dense:]))
    return BCOOArray.fromdense(out, nse=nse, fill_value=x.fill_value)


@routed
def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> BCOOArray:
    """Indices that sort ``x`` along ``axis`` (array API ``argsort``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of a real numeric dtype, at least 1-D.
    axis : int
        Axis to sort along (default the last).
    descending : bool
        Sort in descending order; ties keep their original order when
        ``stable`` (the standard's requirement), as in
        ``jax.numpy.argsort(..., descending=True, stable=True)``.
    stable : bool
        Keep equal elements in their order (always honoured).

    Returns
    -------
    BCOOArray
        ``x``'s shape, default index dtype, dense layout.

    Raises
    ------
    TypeError
        If ``x`` is not real numeric.
    ValueError
        If ``x`` is 0-d.
    IndexError
        If ``axis`` is out of range.
    """
    x, ax = _prepare(x, axis, "argsort")
    out = jnp.argsort(x.todense(), axis=ax, descending=descending, stable=True)
    return dense_layout(out.astype(_dtypes.default_int()))


__all__ = ["argsort", "sort"]
