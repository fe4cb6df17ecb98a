"""Set functions of the array API standard: ``isin`` and ``unique_*``.

The ``unique_*`` functions have data-dependent output shapes, so they run
eagerly only (under ``jax.jit`` they raise, naming the way out). They read
only the stored entries plus the fill value, weighted by the number of
unstored positions (``._kernels.sorting.unique_entries``), never
``x.todense()``; the inverse indices are sparse, with the fill value's index
as their fill value. A NaN fill value is the exception: every unstored NaN is
a distinct value, so the result grows with ``x.size`` and the densification
guard (``._limits.check_dense``) checks it first.
As the standard says, NaNs are all distinct; ``-0.0`` equals ``0.0``.
Spec: https://data-apis.org/array-api/2025.12/API_specification/set_functions.html
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._fill import eval_fill
from ._kernels.dimensions import coo_triplets
from ._kernels.sorting import unique_entries
from ._shapes import index_dtype_for, is_concrete
from ._limits import check_dense
from ._operands import PY_SCALARS, as_operand, as_sparse, scalar_dtype, scalar_to_array
from ._relayout import dense_layout, dense_values, is_dense_layout, to_coo
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
    if not x._concrete():
        raise jax.errors.ConcretizationTypeError(
            x.data, f"{name}(): the number of distinct values fixes the output shape, so it cannot run under "
            "jax.jit; call it eagerly, or use jax.numpy.unique(x.todense(), size=N, fill_value=...) with a "
            "static bound")


def _entries(x: BCOOArray):
    """Stored values, their sorted row-major flat positions and coordinates ``(ndim, n)`` (host, eager).

    Duplicates summed, padding dropped (``._kernels.dimensions.coo_triplets``);
    a dense-layout array gives every position without building coordinates
    (``None``).
    """
    if is_dense_layout(x):
        return np.asarray(x._buffers()[0][0]).reshape(-1), np.arange(x.size, dtype=np.int64), None
    vals, coords = coo_triplets(*x._buffers(), x.shape, x.n_batch, x.n_dense,
                                x.indices_sorted and x.unique_indices)
    coords = np.asarray(coords).astype(np.int64)
    if x.ndim == 0 or vals.shape[0] == 0:
        flat = np.zeros(vals.shape[0], np.int64)
    else:
        flat = np.ravel_multi_index(tuple(coords), x.shape)
    return np.asarray(vals), flat, coords


def _nan_fill_gap(x: BCOOArray, n_stored: int) -> int:
    """Number of unstored positions when the fill value is NaN (every one a distinct value), else 0."""
    f = np.asarray(x.fill_value)
    if x.dtype.kind in "fc" and bool(np.isnan(f)):
        return x.size - n_stored
    return 0


def _values_counts(x: BCOOArray, name: str):
    vals, flat, _ = _entries(x)
    n_nan = _nan_fill_gap(x, vals.shape[0])
    if not n_nan:
        u = unique_entries(vals, flat, x.size, x.fill_value)
        return u.values, u.counts
    # NaN fill: each unstored NaN is a distinct value with count 1 (the result has >= n_nan entries).
    u = unique_entries(vals, flat, vals.shape[0], x.fill_value)
    n_out = u.values.shape[0] + n_nan
    dts = (x.dtype,) if name == "unique_values" else (x.dtype, _dtypes.default_int())
    check_dense(name, (n_out,), *dts, what=f"{n_nan:,} unstored NaN values, each distinct",
                alternative=f"{name}(xp.asarray(x.todense()))")
    return (np.concatenate([u.values, np.full(n_nan, x.fill_value, x.dtype)]),
            np.concatenate([u.counts, np.ones(n_nan, np.int64)]))


def _idx(a, what: str) -> BCOOArray:
    """Counts or positions (host NumPy, int64) in the default index dtype; an ``OverflowError`` where one
    does not fit it (int32 with JAX's x64 mode off: an array of more than 2**31 - 1 elements)."""
    a = np.asarray(a)
    dt = _dtypes.default_int()
    if a.size and a.max() > np.iinfo(dt).max:
        raise OverflowError(f"{what} reach {int(a.max())}, more than the default index dtype {np.dtype(dt)} "
                            f"holds; {_dtypes.X64_FIX}")
    return dense_layout(a.astype(dt))


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
        1-D, ``x``'s dtype, dense layout. Computed from the stored values
        (duplicates summed, padding ignored) plus the fill value when some
        position is unstored: memory O(nse), never ``x.size``. Each NaN is
        distinct (so a NaN fill value contributes one NaN per unstored
        position); ``-0.0`` equals ``0.0``.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    MemoryError
        If the fill value is NaN and the unstored NaNs would take more than
        [`bcoo_array.get_max_dense_bytes`][].
    """
    x = as_sparse(x)
    _eager(x, "unique_values")
    uniq, _ = _values_counts(x, "unique_values")
    return dense_layout(np.asarray(uniq, x.dtype))


@routed
def unique_counts(x, /) -> UniqueCountsResult:
    """Distinct values of ``x`` and how often each occurs (array API ``unique_counts``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any shape and dtype.

    Returns
    -------
    UniqueCountsResult
        ``values`` (as [`unique_values`][bcoo_array.unique_values]) and ``counts`` (default index
        dtype), both 1-D, dense layout. The fill value counts once per
        unstored position (``x.size`` minus the number of distinct stored
        positions), computed without densifying.

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    MemoryError
        As [`unique_values`][bcoo_array.unique_values], for a NaN fill value.
    OverflowError
        If a count does not fit the default index dtype (int32 with JAX's
        x64 mode off).
    """
    x = as_sparse(x)
    _eager(x, "unique_counts")
    uniq, counts = _values_counts(x, "unique_counts")
    return UniqueCountsResult(dense_layout(np.asarray(uniq, x.dtype)), _idx(counts, "unique_counts(): counts"))


def _unique_full(x: BCOOArray, name: str):
    """``(values, first, counts, inverse)``: NumPy arrays but ``inverse``, a BCOOArray of ``x``'s shape."""
    idt = _dtypes.default_int()
    vals, flat, coords = _entries(x)
    n_nan = _nan_fill_gap(x, vals.shape[0])
    if n_nan:
        # Every unstored NaN is a value of its own: the inverse differs at every unstored position.
        check_dense(name, x.shape, x.dtype, idt, what="the densified input and the inverse indices (the fill "
                    "value is NaN, so every unstored position is a distinct value)",
                    alternative=f"{name}(xp.asarray(x.todense()))")
        flat_x = np.asarray(x.todense()).reshape(-1)
        u = unique_entries(flat_x, np.arange(x.size, dtype=np.int64), x.size, x.fill_value)
        inv = dense_layout(u.inverse.astype(idt).reshape(x.shape))
        return u.values, u.first, u.counts, inv
    u = unique_entries(vals, flat, x.size, x.fill_value)
    if coords is None or x.ndim == 0:
        inv_np = np.zeros(x.size, np.int64) + max(u.fill_index, 0)
        inv_np[flat] = u.inverse
        return u.values, u.first, u.counts, dense_layout(inv_np.astype(idt).reshape(x.shape))
    fill = max(u.fill_index, 0)  # no unstored position (-1): any fill will do
    inv = BCOOArray._from_buffers(u.inverse.astype(idt), np.ascontiguousarray(coords.T.astype(index_dtype_for(x.shape))),
                                  x.shape,
                                  n_batch=0, n_dense=0, fill_value=np.asarray(fill, idt)[()],
                                  indices_sorted=True, unique_indices=True)
    return u.values, u.first, u.counts, inv


@routed
def unique_inverse(x, /) -> UniqueInverseResult:
    """Distinct values of ``x`` and, for each element, its position among them
    (array API ``unique_inverse``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any shape and dtype.

    Returns
    -------
    UniqueInverseResult
        ``values`` (as [`unique_values`][bcoo_array.unique_values]) and ``inverse_indices``
        (``x``'s shape, default index dtype). For a sparse ``x`` the inverse
        is sparse: stored at ``x``'s stored positions (every dimension
        sparse), fill value the index of ``x``'s fill value among
        ``values``. Memory O(nse), never ``x.size``, except for a NaN fill
        value with unstored positions: every NaN is distinct, so the inverse
        differs at every position and is computed densely (dense layout).

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    MemoryError
        For a NaN fill value, if the dense input and inverse would take more
        than [`bcoo_array.get_max_dense_bytes`][].
    """
    x = as_sparse(x)
    _eager(x, "unique_inverse")
    uniq, _, _, inv = _unique_full(x, "unique_inverse")
    return UniqueInverseResult(dense_layout(np.asarray(uniq, x.dtype)), inv)


@routed
def unique_all(x, /) -> UniqueAllResult:
    """Distinct values, first-occurrence indices, inverse indices and counts
    (array API ``unique_all``).

    Parameters
    ----------
    x : BCOOArray or array
        Input of any shape and dtype.

    Returns
    -------
    UniqueAllResult
        ``values``, ``indices`` (flat row-major index of each value's first
        occurrence; for the fill value the first unstored position, or an
        earlier stored entry equal to it), ``counts`` (all 1-D, dense layout,
        default index dtype for the integer ones) and ``inverse_indices`` as
        in [`unique_inverse`][bcoo_array.unique_inverse]. Computed from the stored entries and the
        fill value (memory O(nse)), as [`unique_inverse`][bcoo_array.unique_inverse].

    Raises
    ------
    jax.errors.ConcretizationTypeError
        Under ``jax.jit`` (data-dependent output shape).
    MemoryError
        As [`unique_inverse`][bcoo_array.unique_inverse].
    OverflowError
        If an index or a count does not fit the default index dtype (int32
        with JAX's x64 mode off).
    """
    x = as_sparse(x)
    _eager(x, "unique_all")
    uniq, first, counts, inv = _unique_full(x, "unique_all")
    return UniqueAllResult(dense_layout(np.asarray(uniq, x.dtype)), _idx(first, "unique_all(): indices"), inv,
                           _idx(counts, "unique_all(): counts"))


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
        promotion (so NaN is in nothing). A sparse ``x2`` is read as its
        stored values plus its fill value (never densified). Under
        ``jax.jit`` with a traced ``x2`` the fill value of the result is
        unknown, so a sparse ``x1`` gives a dense-layout result, checked by
        the densification guard.

    Raises
    ------
    TypeError
        If both are Python scalars, or an operand is not an array or int.
    MemoryError
        If a sparse ``x1`` must be densified (traced ``x2`` under ``jit``)
        and would take more than [`bcoo_array.get_max_dense_bytes`][].
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
    b_concrete = b._concrete() if isinstance(b, BCOOArray) else is_concrete(b)
    # A concrete x2 (eager, or closed over under jit) stays concrete, so the result's fill value is static.
    with jax.ensure_compile_time_eval() if b_concrete else contextlib.nullcontext():
        test = _test_values(b, dt)

    def fn(v):
        return jnp.isin(v.astype(dt), test, invert=invert)

    if isinstance(a, BCOOArray) and a.ndim > 0 and is_concrete(test):
        src = a._canonical()
        return src._replace(data=fn(src.data), fill_value=eval_fill(fn, src.fill_value))
    if isinstance(a, BCOOArray) and a.ndim > 0 and not is_dense_layout(a):
        check_dense("isin", a.shape, a.dtype, np.bool_, what="x1 densified (x2 is traced, so the result's fill "
                    "value is unknown) and the result", alternative="isin(x1.todense(), x2)")
    dense = dense_values(a)
    dense = dense.todense() if isinstance(dense, BCOOArray) else jnp.asarray(dense)
    return dense_layout(fn(dense))


def _test_values(b, dt):
    """A 1-D array holding every value of ``b`` (cast to ``dt``), never ``b.todense()`` for a sparse ``b``.

    A sparse ``b`` gives its stored values (duplicates summed) plus its fill
    value when some position is unstored; padding entries are replaced by a
    value already in the set, so this works on traced buffers too (static
    length ``nse + 1``).
    """
    if not isinstance(b, BCOOArray):
        return jnp.asarray(b).astype(dt).reshape(-1)
    if b.ndim == 0:
        return b.todense().astype(dt).reshape(-1)
    if is_dense_layout(b):
        return b.data[0].astype(dt).reshape(-1)
    if b.size == 0:
        return jnp.zeros((0,), dt)
    c = to_coo(b)._canonical()
    fill = jax.device_put(np.asarray(b.fill_value).astype(dt))
    if c.nse == 0:
        return fill.reshape(1)
    vals = c.data.astype(dt)
    valid = jnp.all(c.indices < jnp.asarray(b.shape, c.indices.dtype), axis=1)
    # More positions than stored entries: some is unstored, statically; else count the valid entries.
    has_gap = True if b.size > c.nse else jnp.sum(valid.astype(jnp.int32)) < b.size
    # Some position is unstored (the fill is a value of b), or every one is stored (an entry is valid).
    stand_in = jnp.where(has_gap, fill, vals[jnp.argmax(valid)])
    return jnp.concatenate([jnp.where(valid, vals, stand_in), stand_in.reshape(1)])


__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]
