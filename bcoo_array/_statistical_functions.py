"""Statistical functions of the array API standard.

Reductions count unstored entries through the fill value: the ``max`` of a
row whose stored values are all negative is 0 when the row has unstored
zeros. Results stay sparse over the kept sparse dimensions.
Spec: https://data-apis.org/array-api/2025.12/API_specification/statistical_functions.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._data_type_functions import astype
from ._elementwise_functions import divide, sqrt
from ._engine import Operation
from ._limits import check_dense
from ._kernels.plan import group, group_numpy
from ._kernels.reduce import (reduce_coo, reduce_prepare, reduce_scatter, reduction_fills, scatter_reduce_applies,
                              variance_segments)
from ._shapes import normalize_axes, valid_rows
from ._shapes import prod as _size  # (the name prod is the reduction below)
from ._manipulation_functions import reshape
from ._operands import as_sparse, check_category
from ._relayout import dense_layout, is_dense_layout, update_layout
from ._routing import routed


def _keepdims(out: BCOOArray, shape, axes, keepdims: bool) -> BCOOArray:
    if not keepdims:
        return out
    return reshape(out, tuple(1 if i in axes else s for i, s in enumerate(shape)))


def _reduce(x: BCOOArray, axes, op: str, keepdims: bool) -> BCOOArray:
    if (x.n_batch == 0 and x.dtype != jnp.bool_ and not x._concrete_indices()
            and scatter_reduce_applies(x.shape, x.n_dense, x.nse, axes, x.unique_indices)):
        # Traced indices (jit, vmap): one scatter into the result, no sort (the canonical path below sorts).
        fill = np.asarray(x.fill_value, x.dtype)
        vals = reduce_scatter(x.data, x.indices, fill, x.shape, x.n_dense, tuple(axes), op)
        out_shape = tuple(s for a, s in enumerate(x.shape) if a not in axes)
        n_sparse = x.ndim - x.n_dense
        _, out_fill = reduction_fills(fill, x.dtype, _size(x.shape[a] for a in axes if a >= n_sparse),
                                      _size(x.shape[a] for a in axes if a < n_sparse), op)
        out_fill = np.asarray(out_fill, x.dtype)[()]
        out = BCOOArray._from_buffers(vals, jnp.zeros((1, 0), x.indices.dtype), out_shape, n_batch=0,
                                      n_dense=len(out_shape), fill_value=out_fill,
                                      indices_sorted=True, unique_indices=True)
        return _keepdims(out, x.shape, axes, keepdims)
    c = update_layout(x, 0, x.n_dense)._canonical()
    data, idx, shape, n_dense, fill = reduce_coo(*c._buffers(), c.shape, c.n_dense, axes, op, c.fill_value)
    with jax.ensure_compile_time_eval():
        fill = np.asarray(fill)[()]
    out = BCOOArray._from_buffers(data, idx, shape, n_batch=0, n_dense=n_dense, fill_value=fill,
                                  indices_sorted=True, unique_indices=True)
    return _keepdims(out, x.shape, axes, keepdims)


def _cast(x: BCOOArray, dt: np.dtype) -> BCOOArray:
    return x if x.dtype == dt else astype(x, dt)


_DOC = """{summary} of ``x`` over ``axis`` (array API ``{name}``).

Parameters
----------
x : BCOOArray or array
    Input of a {category} dtype.
axis : int, tuple of int or None
    Axes to reduce (negative values count from the end); None reduces all.
{extra}keepdims : bool
    Keep reduced axes as size-1 dimensions.

Returns
-------
BCOOArray
    The reduced array; kept sparse dimensions stay sparse, a 0-d result is
    a 0-d BCOOArray. Unstored entries count as ``x.fill_value``.

Raises
------
TypeError
    If the dtype is not {category}.
IndexError
    If an axis is out of range.
{raises}"""


@routed
def sum(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> BCOOArray:  # noqa: A001
    x = as_sparse(x)
    check_category(x.dtype, "numeric", "sum")
    axes = normalize_axes(axis, x.ndim)
    return _reduce(_cast(x, _dtypes.sum_dtype(x.dtype, dtype)), axes, "sum", keepdims)


@routed
def prod(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, "numeric", "prod")
    axes = normalize_axes(axis, x.ndim)
    return _reduce(_cast(x, _dtypes.sum_dtype(x.dtype, dtype)), axes, "prod", keepdims)


def _extreme(x, axis, keepdims, op):
    x = as_sparse(x)
    check_category(x.dtype, "real numeric", op)
    axes = normalize_axes(axis, x.ndim)
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}() of a zero-size reduction has no identity; reduce over non-empty axes")
    return _reduce(x, axes, op, keepdims)


@routed
def max(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:  # noqa: A001
    return _extreme(x, axis, keepdims, "max")


@routed
def min(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:  # noqa: A001
    return _extreme(x, axis, keepdims, "min")


@routed
def mean(x, /, *, axis=None, keepdims: bool = False) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, "floating-point", "mean")
    axes = normalize_axes(axis, x.ndim)
    n = _size(x.shape[a] for a in axes)
    total = _reduce(x, axes, "sum", keepdims)

    return divide(total, float(n) if n else float("nan"))


@routed
def var(x, /, *, axis=None, correction=0.0, keepdims: bool = False) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, "real floating-point", "var")
    axes = normalize_axes(axis, x.ndim)
    return _var(x, axes, correction, keepdims)


@routed
def std(x, /, *, axis=None, correction=0.0, keepdims: bool = False) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, "real floating-point", "std")
    axes = normalize_axes(axis, x.ndim)
    return sqrt(_var(x, axes, correction, keepdims))


@jax.jit
def _var_fill(ff, n, dof):
    """The variance of a slice of fill values only, ``n * (ff - ff)**2 / dof`` (NaN for non-finite fills)."""
    return n * (ff - ff) ** 2 / dof


def _var(x: BCOOArray, axes, correction, keepdims) -> BCOOArray:
    """Two-pass variance: mean per slice, then the squared deviations of the
    stored entries plus ``missing * (fill - mean)**2`` for the unstored ones."""
    n = _size(x.shape[a] for a in axes)
    c = update_layout(x, 0, 0)._canonical()
    keep = tuple(a for a in range(len(c.shape)) if a not in axes)
    sizes = tuple(c.shape[a] for a in keep)
    vals, out_idx, fill = _variance(c, keep, n, correction)
    if n - correction <= 0:
        # No degrees of freedom left: NaN, as NumPy and the standard's reference implementation give.
        vals = np.full(vals.shape, np.nan, c.dtype) if isinstance(vals, np.ndarray) else jnp.full_like(vals, jnp.nan)
        fill = np.asarray(np.nan, c.dtype)[()]
    out = BCOOArray._from_buffers(vals, out_idx, sizes, n_batch=0, n_dense=0, fill_value=fill,
                                  indices_sorted=True, unique_indices=True)
    return _keepdims(out, x.shape, axes, keepdims)


#: The variance of each kept slice of a canonical all-sparse ``c``: ``(values, out_indices, fill)``.
_variance = Operation("var", operands=lambda c, *args: (c,))


@_variance.host
def _variance_host(c: BCOOArray, keep, n: int, correction):
    data, idx = c._host_buffers()
    shape = c.shape
    sizes = tuple(shape[a] for a in keep)
    valid = valid_rows(idx, shape)
    if keep:
        proj = np.where(valid[:, None], idx[:, list(keep)], np.asarray(sizes, idx.dtype))
        plan = group_numpy(proj, sizes)
        order, seg, out_idx, n_out = plan.order, plan.segment, plan.out_indices.astype(idx.dtype), plan.n_out
    else:
        n_out = 1 if c.nse else 0
        order = np.argsort(~valid, kind="stable")
        seg = np.where(valid[order], 0, n_out)
        out_idx = np.zeros((n_out, 0), idx.dtype)
    d = data[order]
    inside = seg < n_out
    d, seg = d[inside], seg[inside]
    fill = np.asarray(c.fill_value, np.float64)
    with np.errstate(all="ignore"):
        cnt = np.bincount(seg, minlength=n_out)[:n_out]
        miss = float(n) - cnt  # unstored entries per slice (a float: n may pass int64); 0 * NaN-fill stays 0
        s1 = np.bincount(seg, d, minlength=n_out)[:n_out] if n_out else np.zeros(0)
        m = (s1 + np.where(miss > 0, miss * fill, 0.0)) / n
        dev = d - m[seg]
        s2 = np.bincount(seg, dev * dev, minlength=n_out)[:n_out] if n_out else np.zeros(0)
        s2 = s2 + np.where(miss > 0, miss * (fill - m) ** 2, 0.0)
        vals = (s2 / (n - correction)).astype(c.dtype)
        out_fill = np.asarray(n * (fill - fill) ** 2 / (n - correction), c.dtype)[()]
    return vals, out_idx, out_fill


@_variance.xla
def _variance_xla(c: BCOOArray, keep, n: int, correction):
    shape = c.shape
    sizes = tuple(shape[a] for a in keep)
    # Two compiled stages around the grouping plan (see ._kernels.reduce).
    _, proj, valid = reduce_prepare(c.data, c.indices, tuple(shape), len(shape), (), tuple(keep), "sum")
    if keep:
        plan = group(proj, sizes)
        order, seg, out_idx, n_out = plan.order, plan.segment, plan.out_indices, plan.n_out
    else:
        n_out = 1 if c.nse else 0
        order = seg = None
        out_idx = jax.device_put(np.zeros((n_out, 0), c.indices.dtype))
    vals = variance_segments(c.data, valid, order, seg, np.asarray(c.fill_value, c.dtype), n_out, n, correction)
    # An all-unstored slice: mean == fill, every deviation (fill - fill).
    with jax.ensure_compile_time_eval():
        fill = np.asarray(_var_fill(np.asarray(c.fill_value), float(n), float(n - correction)))[()]  # floats: n may pass int32
    return vals, out_idx, fill


def _cumulative(x, axis, dtype, include_initial, op, name):
    x = as_sparse(x)
    check_category(x.dtype, "numeric", name)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}() needs axis= for a {x.ndim}-d array")
        axis = 0
    ax = normalize_axes(axis, x.ndim)[0]
    dt = _dtypes.sum_dtype(x.dtype, dtype)
    if not is_dense_layout(x):
        check_dense(name, x.shape, x.dtype, dt, what="the densified input and the running result",
                    alternative=f"jax.numpy.cum{op}(x.todense(), axis={ax})")
    dense = x.todense().astype(dt)
    fn = jnp.cumsum if op == "sum" else jnp.cumprod
    out = fn(dense, axis=ax, dtype=dt)
    if include_initial:
        init_shape = list(out.shape)
        init_shape[ax] = 1
        init = jnp.zeros(init_shape, dt) if op == "sum" else jnp.ones(init_shape, dt)
        out = jnp.concatenate([init, out], axis=ax)
    return dense_layout(out)


@routed
def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False) -> BCOOArray:
    """Cumulative sum along ``axis`` (array API ``cumulative_sum``).

    Parameters
    ----------
    x : BCOOArray or array
        Numeric input.
    axis : int, optional
        Required unless ``x`` is 1-D.
    dtype : dtype, optional
        Accumulation dtype (default as for ``sum``).
    include_initial : bool
        Prepend the initial zero along ``axis``.

    Returns
    -------
    BCOOArray
        Dense layout (every entry stored): a running sum is dense past the
        first non-fill entry of each line.

    Raises
    ------
    ValueError
        If ``axis`` is missing for an array of more than one dimension.
    """
    return _cumulative(x, axis, dtype, include_initial, "sum", "cumulative_sum")


@routed
def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False) -> BCOOArray:
    """Cumulative product along ``axis`` (array API ``cumulative_prod``).

    Same parameters and result layout as [`cumulative_sum`][bcoo_array.cumulative_sum] (the initial
    value is one).
    """
    return _cumulative(x, axis, dtype, include_initial, "prod", "cumulative_prod")


sum.__doc__ = _DOC.format(summary="Sum", name="sum", category="numeric",
                          extra="dtype : dtype, optional\n    Accumulation dtype; by default small integers widen to the default integer.\n",
                          raises="")
prod.__doc__ = _DOC.format(summary="Product", name="prod", category="numeric",
                           extra="dtype : dtype, optional\n    Accumulation dtype; by default small integers widen to the default integer.\n",
                           raises="")
max.__doc__ = _DOC.format(summary="Maximum", name="max", category="real numeric", extra="",
                          raises="ValueError\n    If a reduced axis has size 0.\n")
min.__doc__ = _DOC.format(summary="Minimum", name="min", category="real numeric", extra="",
                          raises="ValueError\n    If a reduced axis has size 0.\n")
mean.__doc__ = _DOC.format(summary="Arithmetic mean", name="mean", category="floating-point", extra="",
                           raises="")
var.__doc__ = _DOC.format(summary="Variance (two-pass)", name="var", category="real floating-point",
                          extra="correction : float\n    Degrees of freedom subtracted from the count (1 for the unbiased estimate).\n",
                          raises="")
std.__doc__ = _DOC.format(summary="Standard deviation (two-pass)", name="std", category="real floating-point",
                          extra="correction : float\n    Degrees of freedom subtracted from the count.\n", raises="")

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]
