"""Manipulation functions of the array API standard.

All keep the array sparse and its fill value; structural work is done on the
indices only. Spec:
https://data-apis.org/array-api/2025.12/API_specification/manipulation_functions.html
"""

from __future__ import annotations

import operator
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._kernels.coalesce import broadcast_batch
from ._layout import index_dtype_for, is_concrete, normalize_shape, prod
from ._operands import as_operand


def _sparse(x, argname="x") -> BCOOArray:
    from ._fill_rule import dense_layout

    x = as_operand(x, argname)
    return x if isinstance(x, BCOOArray) else dense_layout(x)


def _normalize_axis(axis, ndim: int, argname: str = "axis") -> int:
    try:
        a = operator.index(axis)
    except TypeError as exc:
        raise TypeError(f"{argname}={axis!r} must be an integer") from exc
    if not -ndim <= a < ndim:
        raise IndexError(f"{argname}={a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def normalize_axes(axis, ndim: int, argname: str = "axis") -> tuple[int, ...]:
    """Normalise ``axis`` (None, int or tuple) to a sorted tuple of non-negative ints.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(_normalize_axis(a, ndim, argname) for a in axis)
    else:
        out = (_normalize_axis(axis, ndim, argname),)
    if len(set(out)) != len(out):
        raise ValueError(f"{argname}={axis!r} repeats an axis")
    return tuple(sorted(out))


def to_coo(x: BCOOArray) -> BCOOArray:
    """The same array with every dimension sparse (n_batch = n_dense = 0)."""
    from ._fill_rule import update_layout

    return update_layout(x, 0, 0)


def broadcast_to(x, /, shape) -> BCOOArray:
    """Broadcast ``x`` to ``shape`` (array API ``broadcast_to``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    shape : tuple of int
        Target shape, compatible with ``x.shape`` by the broadcasting rules.

    Returns
    -------
    BCOOArray
        New leading dimensions become batch dimensions; a size-1 sparse
        dimension of size n multiplies nse by n; the fill value is kept.

    Raises
    ------
    ValueError
        If the shapes are not compatible.
    """
    x = _sparse(x)
    shape = normalize_shape(shape)
    if shape == x.shape:
        return x
    nd = len(shape) - x.ndim
    if nd < 0 or any(s not in (1, t) for s, t in zip(x.shape, shape[nd:])):
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    if prod(shape) == 0 and x.n_sparse:
        # A size-1 sparse dimension broadcast to 0 (or any empty target): nothing is stored.
        return BCOOArray._from_buffers(jnp.zeros((0,), x.dtype), jnp.zeros((0, len(shape)), index_dtype_for(shape)),
                                       shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                       indices_sorted=True, unique_indices=True)
    data, indices = x.data, x.indices
    if nd:
        data = data.reshape((1,) * nd + data.shape)
        indices = indices.reshape((1,) * nd + indices.shape)
    n_batch = x.n_batch + nd
    cur = (1,) * nd + x.shape
    n_sparse = x.n_sparse
    for k in range(n_sparse):
        ax = n_batch + k
        n = shape[ax]
        if cur[ax] == 1 and n != 1:
            nse = indices.shape[n_batch]
            rep = jnp.repeat(jnp.arange(n, dtype=indices.dtype), nse)
            pad = indices[..., k] >= 1  # padding stays padding
            indices = jnp.concatenate([indices] * n, axis=n_batch)
            col = jnp.broadcast_to(rep, indices.shape[:-1])
            newcol = jnp.where(jnp.concatenate([pad] * n, axis=n_batch), n, col)
            indices = indices.at[..., k].set(newcol)
            data = jnp.concatenate([data] * n, axis=n_batch)
    idt = index_dtype_for(shape[n_batch:n_batch + n_sparse])
    indices = indices.astype(idt)
    dense_shape = shape[len(shape) - x.n_dense:] if x.n_dense else ()
    data = jnp.broadcast_to(data, data.shape[:n_batch + 1] + dense_shape)
    data, indices = broadcast_batch(data, indices, shape, n_batch)
    return BCOOArray._from_buffers(data, indices, shape, n_batch=n_batch, n_dense=x.n_dense,
                                   fill_value=x.fill_value, indices_sorted=x.indices_sorted and nd >= 0 and n_sparse == 0,
                                   unique_indices=x.unique_indices)


def broadcast_arrays(*arrays) -> tuple[BCOOArray, ...]:
    """Broadcast arrays against each other (array API ``broadcast_arrays``).

    Returns
    -------
    tuple of BCOOArray
        Each of the common broadcast shape.

    Raises
    ------
    ValueError
        If the shapes are not compatible.
    """
    arrs = [_sparse(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    shape = jnp.broadcast_shapes(*(a.shape for a in arrs)) if arrs else ()
    return tuple(broadcast_to(a, shape) for a in arrs)  # the standard (2025.12) returns a tuple


@partial(jax.jit, static_argnames=("data_axes", "index_axes", "columns"))
def _permute_buffers(data, indices, data_axes, index_axes, columns):
    """Move the buffers' axes and index columns in one compiled call (not three eager ones)."""
    indices = jnp.transpose(indices, index_axes)
    return jnp.transpose(data, data_axes), indices[..., list(columns)]


def permute_dims(x, /, axes) -> BCOOArray:
    """Permute the dimensions of ``x`` (array API ``permute_dims``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    axes : tuple of int
        A permutation of ``range(x.ndim)`` (negative values allowed).

    Returns
    -------
    BCOOArray
        Entries keep their values; only the index columns move. A permutation
        that mixes batch, sparse and dense dimensions first converts ``x`` to
        all-sparse layout.

    Raises
    ------
    ValueError
        If ``axes`` is not a permutation.
    """
    x = _sparse(x)
    axes = tuple(_normalize_axis(a, x.ndim, "axes") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes={axes} is not a permutation of range({x.ndim})")
    if axes == tuple(range(x.ndim)):
        return x
    nb, ns = x.n_batch, x.n_sparse
    groups_kept = (
        all(a < nb for a in axes[:nb])
        and all(nb <= a < nb + ns for a in axes[nb:nb + ns])
        and all(a >= nb + ns for a in axes[nb + ns:])
    )
    if not groups_kept:
        x = to_coo(x)
        nb, ns = 0, x.ndim
    data, indices = _permute_buffers(
        x.data, x.indices, data_axes=axes[:nb] + (nb,) + tuple(a - ns + 1 for a in axes[nb + ns:]),
        index_axes=axes[:nb] + (nb, nb + 1), columns=tuple(a - nb for a in axes[nb:nb + ns]))
    shape = tuple(x.shape[a] for a in axes)
    keeps_order = list(axes[nb:nb + ns]) == sorted(axes[nb:nb + ns])
    return BCOOArray._from_buffers(data, indices, shape, n_batch=nb, n_dense=x.n_dense, fill_value=x.fill_value,
                                   indices_sorted=x.indices_sorted and keeps_order, unique_indices=x.unique_indices)


def reshape(x, /, shape, *, copy: bool | None = None) -> BCOOArray:
    """Give ``x`` a new shape with the same number of elements (array API ``reshape``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    shape : tuple of int
        New shape; one entry may be -1.
    copy : bool, optional
        Ignored beyond validation: JAX buffers are immutable, so sharing is safe.

    Returns
    -------
    BCOOArray
        Entries in the same row-major order; all-sparse layout (n_batch =
        n_dense = 0) unless only batch dimensions change. Linear indices are
        computed in int64 NumPy for concrete indices; while tracing they need
        an index dtype wide enough for ``x.size`` (x64 for over 2**31 elements).

    Raises
    ------
    ValueError
        If the sizes differ or -1 is used twice.
    """
    x = _sparse(x)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if sum(1 for s in shape if s == -1) > 1:
        raise ValueError(f"shape={shape} may contain -1 at most once")
    known = prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or x.size % known:
            raise ValueError(f"cannot reshape an array of size {x.size} into shape {shape}")
        shape = tuple(x.size // known if s == -1 else s for s in shape)
    shape = normalize_shape(shape)
    if prod(shape) != x.size:
        raise ValueError(f"cannot reshape an array of size {x.size} into shape {shape}")
    if shape == x.shape:
        return x
    if x.size == 0:
        # Nothing can be stored in a zero-size array (np.unravel_index refuses the shape).
        return BCOOArray._from_buffers(jnp.zeros((0,), x.dtype), jnp.zeros((0, len(shape)), index_dtype_for(shape)),
                                       shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                       indices_sorted=True, unique_indices=True)
    c = to_coo(x)
    idx = c.indices
    nse = idx.shape[0]
    sizes = c.shape
    valid_cols = [idx[:, k] < sizes[k] for k in range(len(sizes))]
    if is_concrete(idx):
        idx_np = np.asarray(idx).astype(np.int64)
        valid = np.all(idx_np < np.asarray(sizes, np.int64), axis=1) if len(sizes) else np.ones(nse, bool)
        flat = np.ravel_multi_index(tuple(np.where(valid, idx_np[:, k], 0) for k in range(len(sizes))), sizes) \
            if len(sizes) else np.zeros(nse, np.int64)
        new = np.stack(np.unravel_index(flat, shape), axis=1) if shape else np.zeros((nse, 0), np.int64)
        new = np.where(valid[:, None], new, np.asarray(shape, np.int64))
        new_idx = jnp.asarray(new.astype(index_dtype_for(shape)))
    else:
        idt = index_dtype_for((x.size,))
        valid = jnp.all(jnp.stack(valid_cols, axis=1), axis=1) if sizes else jnp.ones(nse, bool)
        flat = jnp.zeros(nse, idt)
        for k, s in enumerate(sizes):
            flat = flat * s + jnp.where(valid, idx[:, k], 0).astype(idt)
        cols = []
        for s in reversed(shape):
            cols.append(flat % s if s else flat)
            flat = flat // s if s else flat
        new = jnp.stack(cols[::-1], axis=1) if shape else jnp.zeros((nse, 0), idt)
        new = jnp.where(valid[:, None], new, jnp.asarray(shape, idt)).astype(index_dtype_for(shape))
        new_idx = new
    return BCOOArray._from_buffers(c.data, new_idx, shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=c.indices_sorted, unique_indices=c.unique_indices)


def expand_dims(x, /, axis=0) -> BCOOArray:
    """Insert size-1 dimensions at ``axis`` (an int or, since 2025.12, a tuple).

    Returns
    -------
    BCOOArray
        A view with the same entries; the new dimensions are sparse.

    Raises
    ------
    IndexError
        If an axis is out of range for the output.
    ValueError
        If an axis repeats.
    """
    x = _sparse(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    out_ndim = x.ndim + len(axes)
    norm = normalize_axes(axes, out_ndim)
    shape = list(x.shape)
    for a in norm:
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


def squeeze(x, /, axis) -> BCOOArray:
    """Remove size-1 dimensions named by ``axis`` (array API ``squeeze``).

    Raises
    ------
    ValueError
        If a named dimension does not have size 1.
    """
    x = _sparse(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]}; only size-1 axes can be squeezed")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


__all__ = ["broadcast_arrays", "broadcast_to", "expand_dims", "permute_dims", "reshape", "squeeze"]
