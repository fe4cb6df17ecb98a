"""Sorting functions of the array API standard: ``sort`` and ``argsort``.

``sort`` of a sparse array never densifies: each lane along the axis sorts
to its stored values that come before the fill value, then the block of
unstored positions, then the rest (``._kernels.sorting.sort_lanes``), so
the result stores as many entries as the input, with its fill value.
``argsort`` returns a permutation of every position, inherently dense (dense
layout): it is computed on ``x.todense()`` after the densification guard
(``._limits.check_dense``). Order as in NumPy: NaN last ascending, first
descending (descending is the reverse of ascending).
Spec: https://data-apis.org/array-api/2025.12/API_specification/sorting_functions.html
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _dtypes
from ._array_object import BCOOArray
from ._kernels.sorting import sort_lanes
from ._shapes import normalize_axis
from ._limits import check_dense
from ._operands import as_sparse, check_category
from ._relayout import dense_layout, is_dense_layout, to_coo
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
        ``x``'s shape, dtype and fill value. A sparse ``x`` gives a sparse
        result (every dimension sparse) storing as many entries per lane as
        ``x`` (after summing duplicates; under ``jit`` the same static nse,
        padding kept): in each lane the stored values that sort before the
        fill value, then the unstored positions, then the others. Memory and
        work O(nse log nse), never ``x.size``. A dense-layout ``x`` is sorted
        with ``jax.numpy.sort``. NaN sorts last (first when
        ``descending``), as in NumPy; ``-0.0`` ties with ``0.0``.

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
    if is_dense_layout(x):
        out = jnp.sort(x.data[0], axis=ax, descending=descending, stable=True)
        return dense_layout(out)._replace(fill_value=x.fill_value)
    c = to_coo(x)._canonical()
    data, indices = sort_lanes(*c._buffers(), x.shape, ax, x.fill_value, descending,
                               canonical=c.indices_sorted and c.unique_indices)
    return BCOOArray._from_buffers(data, indices, x.shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=ax == x.ndim - 1 and not descending, unique_indices=True)


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
        ``x``'s shape, default index dtype, dense layout: a permutation of
        every position, so inherently dense. Computed with
        ``jax.numpy.argsort`` on ``x.todense()``.

    Raises
    ------
    TypeError
        If ``x`` is not real numeric.
    ValueError
        If ``x`` is 0-d.
    IndexError
        If ``axis`` is out of range.
    MemoryError
        If ``x`` is sparse and the dense input plus the index result would
        take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]). The check
        reads static shapes only, so it raises under ``jax.jit`` too.
    """
    x, ax = _prepare(x, axis, "argsort")
    idt = _dtypes.default_int()
    if is_dense_layout(x):
        dense = x.data[0]
    else:
        check_dense("argsort", x.shape, x.dtype, idt, what="the densified input and the index result",
                    alternative=f"jax.numpy.argsort(x.todense(), axis={ax}, stable=True)")
        dense = x.todense()
    out = jnp.argsort(dense, axis=ax, descending=descending, stable=True)
    return dense_layout(out.astype(idt))


__all__ = ["argsort", "sort"]
