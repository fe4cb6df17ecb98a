"""Linear algebra functions of the array API standard: ``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot``.

``sparse @ dense`` and ``dense @ sparse`` give dense results (stored as a
BCOOArray in dense layout). ``sparse @ sparse`` of 2-D zero-filled arrays
stays sparse, computed with memory proportional to the number of products
(Gustavson / expand-sort-compress), never nse_A x nse_B; while tracing, or
for batched or non-zero-filled operands, it goes through a dense right-hand
side. Spec: https://data-apis.org/array-api/2025.12/API_specification/linear_algebra_functions.html
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._fill_rule import dense_layout, update_layout
from ._kernels.csr import matmat as csr_matmat
from ._kernels.matmul import coo_matmat, spgemm_plan
from ._layout import index_dtype_for, is_concrete, is_tracer, prod, same_value_np
from ._manipulation_functions import _sparse, permute_dims, reshape
from ._operands import as_operand, cast, check_category
from . import _dtypes


def _zero_fill(x: BCOOArray) -> bool:
    return same_value_np(x.fill_value, np.zeros((), x.dtype))


def _stored_delta(x: BCOOArray) -> BCOOArray:
    """``x - fill`` as a zero-filled array on ``x``'s pattern (needs unique indices)."""
    if _zero_fill(x):
        return x
    c = x._canonical()
    return c._replace(data=c.data - jnp.asarray(c.fill_value, c.dtype), fill_value=np.zeros((), c.dtype)[()])


def _sparse_dense(a: BCOOArray, d):
    """Dense result of ``a @ d`` for ``a`` of ndim >= 2 and ``d`` of ndim >= 2 (matmul semantics)."""
    from jax.experimental import sparse as jsparse

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
    if a.ndim == 2 and d.ndim == 2 and s.n_batch == 0 and s.n_dense == 0 and is_concrete(s.indices):
        out = csr_matmat(s.data, s.indices, s.shape, d)[0]
    elif a.ndim == 2 and d.ndim == 2 and s.n_batch == 0 and s.n_dense == 0:
        out = coo_matmat(s.data, s.indices[:, 0], s.indices[:, 1], d, a.shape[0], s.indices_sorted)
    else:
        batch = jnp.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        from ._manipulation_functions import broadcast_to

        s = broadcast_to(s, batch + a.shape[-2:])
        d = jnp.broadcast_to(d, batch + d.shape[-2:])
        nb = len(batch)
        if s.n_batch != nb or s.n_dense:
            # bcoo_dot_general contracts sparse dimensions only: make the last one sparse.
            s = update_layout(s, nb, 0)
        mat = jsparse.BCOO((s.data, s.indices), shape=s.shape)
        dims = (([s.ndim - 1], [d.ndim - 2]), (list(range(nb)), list(range(nb))))
        out = jsparse.bcoo_dot_general(mat, d, dimension_numbers=dims)
    if not _zero_fill(a):
        colsum = jnp.sum(d, axis=-2, keepdims=True, dtype=d.dtype)  # jnp.sum would widen int32
        out = out + jnp.asarray(a.fill_value, out.dtype) * colsum
    return out


_SCIPY_SPGEMM_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _spgemm(a: BCOOArray, b: BCOOArray) -> BCOOArray:
    """Sparse @ sparse for 2-D, zero-filled, n_batch = n_dense = 0 operands with concrete indices."""
    a = update_layout(a, 0, 0)._canonical()
    b = update_layout(b, 0, 0)._canonical()
    m, k = a.shape
    n = b.shape[1]
    if (is_concrete(a.data, b.data) and a.dtype in _SCIPY_SPGEMM_DTYPES and b.dtype == a.dtype
            and jax.default_backend() == "cpu"):
        # Eager, on CPU, nothing to differentiate: scipy's SMMP SpGEMM (Bank & Douglas) on the
        # canonical buffers. It drops products that cancel to exactly 0 (the value is the same)
        # and leaves columns unsorted within rows: the result is flagged unsorted and gets
        # sorted only if a later operation needs it.
        from ._convert.scipy import from_scipy, to_scipy

        return from_scipy(to_scipy(a, "csr") @ to_scipy(b, "csr"))
    ia = np.asarray(a.indices)
    ib = np.asarray(b.indices)
    va = np.nonzero((ia[:, 0] < m) & (ia[:, 1] < k))[0]
    vb = np.nonzero((ib[:, 0] < k) & (ib[:, 1] < n))[0]
    a_pos, b_pos, seg, rows, cols = spgemm_plan(ia[va, 0], ia[va, 1], ib[vb, 0], ib[vb, 1], k, n)
    prods = a.data[jnp.asarray(va[a_pos])] * b.data[jnp.asarray(vb[b_pos])]
    data = jax.ops.segment_sum(prods, jnp.asarray(seg), num_segments=rows.size, indices_are_sorted=False)
    idt = index_dtype_for((m, n))
    indices = jnp.asarray(np.stack([rows, cols], axis=1).astype(idt))
    return BCOOArray._from_buffers(data, indices, (m, n), n_batch=0, n_dense=0, fill_value=0,
                                   indices_sorted=True, unique_indices=True)


_EMPTY_INDICES = {}


def _fast_sparse_dense(a, d):
    """``a @ d`` in one compiled call, or None when the general path is needed.

    Taken for a zero-filled 2-D ``a`` (n_batch = n_dense = 0, concrete
    indices) and a JAX array ``d`` of ``a``'s dtype, 1-D or 2-D with matching
    size (see :mod:`._kernels.csr`). Everything else (errors included) goes
    through the general path, which gives the same values.
    """
    if not (type(a) is BCOOArray and isinstance(d, jax.Array) and a.ndim == 2 and a.n_batch == 0
            and a.n_dense == 0 and d.ndim in (1, 2) and d.dtype == a.data.dtype and d.shape[0] == a.shape[1]
            and a.dtype.kind in "iufc" and not is_tracer(a.indices) and _zero_fill(a)):
        return None
    out = csr_matmat(a.data, a.indices, a.shape, d)
    shape = out.shape[1:]
    idx = _EMPTY_INDICES.get(None)
    if idx is None:
        with jax.ensure_compile_time_eval():
            idx = _EMPTY_INDICES[None] = jnp.zeros((1, 0), jnp.int32)
    return BCOOArray._from_buffers(out, idx, shape, n_batch=0, n_dense=len(shape),
                                   fill_value=np.zeros((), out.dtype)[()], indices_sorted=True, unique_indices=True)


def matmul(x1, x2, /) -> BCOOArray:
    """Matrix product with the standard's broadcasting and 1-D rules (array API ``matmul``).

    Parameters
    ----------
    x1 : BCOOArray or array, shape ``(..., m, k)`` or ``(k,)``
    x2 : BCOOArray or array, shape ``(..., k, n)`` or ``(k,)``
        Numeric operands; dtypes promote by the standard's rules.

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
    """
    fast = _fast_sparse_dense(x1, x2)
    if fast is not None:
        return fast
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    check_category(np.dtype(a.dtype), "numeric", "matmul", "x1")
    check_category(np.dtype(b.dtype), "numeric", "matmul", "x2")
    dt = _dtypes.result_type(a.dtype, b.dtype)
    a, b = cast(a, dt), cast(b, dt)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul() does not take 0-d operands; use multiply")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul(): contracted dimensions differ: x1.shape={a.shape}, x2.shape={b.shape}")
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1,) + a.shape) if isinstance(a, BCOOArray) else a[None]
    if squeeze_b:
        b = reshape(b, b.shape + (1,)) if isinstance(b, BCOOArray) else b[:, None]
    sa, sb = isinstance(a, BCOOArray), isinstance(b, BCOOArray)
    if sa and sb:
        if (a.ndim == 2 and b.ndim == 2 and _zero_fill(a) and _zero_fill(b)
                and is_concrete(a.indices, b.indices)):
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
    x = _sparse(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got {x.ndim}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


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
        :func:`matmul`.

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
    from ._elementwise_functions import conj, multiply
    from ._statistical_functions import sum as _sum

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
