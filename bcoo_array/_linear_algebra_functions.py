"""Linear algebra functions of the array API standard: ``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot``.

``sparse @ dense`` and ``dense @ sparse`` give dense results (stored as a
BCOOArray in dense layout). ``sparse @ sparse`` of 2-D zero-filled arrays
stays sparse, computed with memory proportional to the number of products
(Gustavson / expand-sort-compress), never nse_A x nse_B; while tracing, or
for batched or non-zero-filled operands, it goes through a dense right-hand
side. The kernels themselves, and the choice among them, live in
``._kernels.matmul``. Spec:
https://data-apis.org/array-api/2025.12/API_specification/linear_algebra_functions.html
"""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._elementwise_functions import conj, multiply
from ._fill import same_value_np
from ._kernels.matmul import batched_spmm, spgemm, spmm
from ._layout import index_dtype_for, is_concrete, is_tracer, prod
from ._manipulation_functions import permute_dims, reshape
from ._operands import as_operand, as_sparse, cast, check_category
from ._relayout import broadcast, dense_layout, dense_values, update_layout
from ._statistical_functions import sum as _sum
from ._routing import routed


def _zero_fill(x: BCOOArray) -> bool:
    return same_value_np(x.fill_value, np.zeros((), x.dtype))


def _stored_delta(x: BCOOArray) -> BCOOArray:
    """``x - fill`` as a zero-filled array on ``x``'s pattern (needs unique indices)."""
    if _zero_fill(x):
        return x
    c = x._canonical()
    return c._replace(data=c.data - jnp.asarray(c.fill_value, c.dtype), fill_value=np.zeros((), c.dtype)[()])


_EMPTY_INDICES = {}


def _dense_result(data) -> BCOOArray:
    """Wrap ``data`` of shape ``(1, *shape)`` as a dense-layout BCOOArray (no eager reshaping)."""
    if is_tracer(data):
        idx = jnp.zeros((1, 0), jnp.int32)  # a constant of this trace (a cached array may belong to another mesh)
    else:
        idx = _EMPTY_INDICES.get(None)
        if idx is None:
            idx = _EMPTY_INDICES[None] = jnp.zeros((1, 0), jnp.int32)
    shape = tuple(data.shape[1:])
    return BCOOArray._from_buffers(data, idx, shape, n_batch=0, n_dense=len(shape),
                                   fill_value=np.zeros((), data.dtype)[()], indices_sorted=True, unique_indices=True)


def _sparse_dense(a: BCOOArray, d):
    """Dense result of ``a @ d`` for ``a`` of ndim >= 2 and ``d`` of ndim >= 2 (matmul semantics)."""
    if not np.isfinite(a.fill_value):
        # ``a - fill`` would be NaN at every stored entry (the decomposition below
        # needs a finite fill): multiply the dense values instead.
        return jnp.matmul(a.todense(), d)
    if a.size == 0 or d.size == 0:
        # An empty operand gives an empty result or empty sums (0); XLA's gathers reject the
        # zero-size sparse dimensions on the general path.
        batch = jnp.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        return jnp.zeros(batch + (a.shape[-2], d.shape[-1]), _dtypes.result_type(a.dtype, d.dtype))
    s = _stored_delta(a)
    if a.ndim == 2 and d.ndim == 2 and s.n_batch == 0 and s.n_dense == 0:
        out = spmm(s.data, s.indices, s.shape, d, rows_sorted=s.indices_sorted)[0]
    else:
        batch = jnp.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        s = broadcast(s, batch + a.shape[-2:])
        d = jnp.broadcast_to(d, batch + d.shape[-2:])
        nb = len(batch)
        if s.n_batch != nb or s.n_dense:
            # bcoo_dot_general contracts sparse dimensions only: make the last one sparse.
            s = update_layout(s, nb, 0)
        out = batched_spmm(s.data, s.indices, s.shape, d, nb)
    if not _zero_fill(a):
        colsum = jnp.sum(d, axis=-2, keepdims=True, dtype=d.dtype)  # jnp.sum would widen int32
        out = out + jnp.asarray(a.fill_value, out.dtype) * colsum
    return out


def _spgemm(a: BCOOArray, b: BCOOArray) -> BCOOArray:
    """Sparse @ sparse for 2-D, zero-filled operands with concrete indices."""
    a = update_layout(a, 0, 0)._canonical()
    b = update_layout(b, 0, 0)._canonical()
    (m, k), n = a.shape, b.shape[1]
    data, indices, is_sorted = spgemm(a.data, a.indices, b.data, b.indices, m, k, n)
    indices = jnp.asarray(np.asarray(indices).astype(index_dtype_for((m, n))))
    return BCOOArray._from_buffers(jnp.asarray(data), indices, (m, n), n_batch=0, n_dense=0, fill_value=0,
                                   indices_sorted=is_sorted, unique_indices=True)


def _is_plain_matrix(x) -> bool:
    """A zero-filled 2-D BCOOArray with every dimension sparse: the operand of the direct kernels."""
    return (isinstance(x, BCOOArray) and x.ndim == 2 and x.n_batch == 0 and x.n_dense == 0
            and x.dtype.kind in "iufc" and _zero_fill(x))


@routed
def matmul(x1, x2, /) -> BCOOArray:
    """Matrix product with the standard's broadcasting and 1-D rules (array API ``matmul``).

    Parameters
    ----------
    x1 : BCOOArray or array, shape ``(..., m, k)`` or ``(k,)``
    x2 : BCOOArray or array, shape ``(..., k, n)`` or ``(k,)``
        Numeric operands (BCOOArray, NumPy or JAX arrays, scipy.sparse /
        pydata-sparse / jax.experimental.sparse arrays); dtypes promote by
        the standard's rules.

    Returns
    -------
    BCOOArray
        Shape ``(..., m, n)`` with 1-D operands' dimensions removed. Sparse @
        sparse (2-D, zero fill, concrete indices) is sparse; any product with
        a dense operand or a non-zero fill value is dense (dense layout), the
        fill value entering as ``fill * sum`` of the other operand.

    Raises
    ------
    TypeError
        For non-numeric dtypes.
    ValueError
        For 0-d operands or mismatched contracted dimensions.

    Notes
    -----
    The operands are normalised once, then one kernel of
    ``._kernels.matmul`` runs (which one depends on the layout, the
    backend and whether the indices are traced). Unstored entries count as
    exact zeros: ``S @ d`` ignores ``inf`` / ``nan`` of ``d`` where ``S``
    stores nothing, as scipy.sparse and jax.experimental.sparse do.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    da, db = np.dtype(a.dtype), np.dtype(b.dtype)
    if da != db or da.kind not in "iufc":
        check_category(da, "numeric", "matmul", "x1")
        check_category(db, "numeric", "matmul", "x2")
        dt = _dtypes.result_type(da, db)
        a, b = cast(a, dt), cast(b, dt)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul() does not take 0-d operands; use multiply")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul(): contracted dimensions differ: x1.shape={a.shape}, x2.shape={b.shape}")
    # A dense-layout operand (a product's result, say) is a dense array.
    a = dense_values(a)
    b = dense_values(b)
    if _is_plain_matrix(a) and not isinstance(b, BCOOArray) and b.ndim <= 2:
        # The common case (scipy's A @ x, A @ X): one kernel call on the buffers.
        return _dense_result(spmm(a.data, a.indices, a.shape, b, rows_sorted=a.indices_sorted))
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1,) + a.shape) if isinstance(a, BCOOArray) else a[None]
    if squeeze_b:
        b = reshape(b, b.shape + (1,)) if isinstance(b, BCOOArray) else b[:, None]
    sa, sb = isinstance(a, BCOOArray), isinstance(b, BCOOArray)
    if sa and sb:
        if a.ndim == 2 and b.ndim == 2 and _zero_fill(a) and _zero_fill(b) and is_concrete(a.indices, b.indices):
            out = _spgemm(a, b)
        else:
            out = dense_layout(_sparse_dense(a, b.todense()))
    elif sa:
        out = dense_layout(_sparse_dense(a, b))
    elif sb:
        # d @ s == (s^T @ d^T)^T
        out_t = _sparse_dense(matrix_transpose(b), jnp.swapaxes(a, -1, -2))
        out = dense_layout(jnp.swapaxes(out_t, -1, -2))
    else:
        out = dense_layout(jnp.matmul(a, b))
    if squeeze_a or squeeze_b:
        shape = list(out.shape)
        if squeeze_b:
            shape.pop(-1)
        if squeeze_a:
            shape.pop(-1 if squeeze_b else -2)
        out = reshape(out, tuple(shape))
    return out


@routed
def matrix_transpose(x, /) -> BCOOArray:
    """Transpose the last two dimensions (array API ``matrix_transpose``).

    Returns
    -------
    BCOOArray
        Shape ``(..., n, m)``; the entries move, values and fill value stay.

    Raises
    ------
    ValueError
        If ``x`` has fewer than two dimensions.
    """
    x = as_sparse(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got {x.ndim}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


@routed
def tensordot(x1, x2, /, *, axes=2) -> BCOOArray:
    """Contract ``x1`` and ``x2`` over the given axes (array API ``tensordot``).

    Parameters
    ----------
    x1, x2 : BCOOArray or array
        Numeric operands.
    axes : int or (sequence, sequence)
        The last ``axes`` dimensions of ``x1`` with the first of ``x2``, or
        explicit lists of axes.

    Returns
    -------
    BCOOArray
        Shape: ``x1``'s free axes then ``x2``'s. Computed as one matrix
        product of the operands reshaped to 2-D, so sparsity follows
        [`matmul`][bcoo_array.matmul].

    Raises
    ------
    ValueError
        If contracted dimensions differ in size.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    if isinstance(axes, int) or isinstance(axes, np.integer):
        n = operator.index(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError(f"axes={n} must be between 0 and min(x1.ndim, x2.ndim)")
        ax_a = list(range(a.ndim - n, a.ndim))
        ax_b = list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [operator.index(i) % a.ndim for i in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [operator.index(i) % b.ndim for i in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError(f"tensordot(): contracted axes {ax_a} of {a.shape} and {ax_b} of {b.shape} differ")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    kdim = prod(a.shape[i] for i in ax_a)
    ma = prod(a.shape[i] for i in free_a)
    nb = prod(b.shape[j] for j in free_b)

    def as2d(x, order, shape2):
        if isinstance(x, BCOOArray):
            return reshape(permute_dims(x, tuple(order)), shape2)
        return jnp.transpose(x, order).reshape(shape2)

    a2 = as2d(a, free_a + ax_a, (ma, kdim))
    b2 = as2d(b, ax_b + free_b, (kdim, nb))
    out = matmul(a2, b2)
    return reshape(out, tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b))


@routed
def vecdot(x1, x2, /, *, axis=-1) -> BCOOArray:
    """Vector dot product ``sum(conj(x1) * x2, axis)`` (array API ``vecdot``).

    Returns
    -------
    BCOOArray
        The broadcast shape without ``axis``; sparse operands stay sparse.

    Raises
    ------
    ValueError
        If the sizes along ``axis`` differ.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    check_category(np.dtype(a.dtype), "numeric", "vecdot", "x1")
    check_category(np.dtype(b.dtype), "numeric", "vecdot", "x2")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot() needs operands of at least one dimension")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot(): sizes along axis {axis} differ: {a.shape} and {b.shape}")
    if axis >= 0 and (axis >= a.ndim or axis >= b.ndim):
        raise ValueError("vecdot(): a non-negative axis must be valid for both operands; pass a negative axis")
    ax = axis if axis < 0 else axis - max(a.ndim, b.ndim)
    prodarr = multiply(conj(a), b)
    # The standard: the result has the promoted dtype of the operands (no widening as in sum).
    return _sum(prodarr, axis=ax, dtype=prodarr.dtype)


__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
