"""Manipulation functions of the array API standard: ``broadcast_arrays``,
``broadcast_shapes``, ``broadcast_to``, ``concat``, ``expand_dims``,
``flip``, ``moveaxis``, ``permute_dims``, ``repeat``, ``reshape``, ``roll``,
``squeeze``, ``stack``, ``tile``, ``unstack``.

All keep the array sparse and its fill value: structural work moves, copies
or offsets index columns and never densifies, except that joining arrays
with different fill values stores every entry of the arrays whose fill value
differs from the first one's (a result has a single fill value). Spec:
https://data-apis.org/array-api/2025.12/API_specification/manipulation_functions.html
"""

from __future__ import annotations

import operator
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray, Deferred
from ._engine import Operation, host_enabled, host_view
from ._fill import same_value_np, zero_fill
from ._kernels import slicing
from ._kernels.coalesce import broadcast_batch
from ._kernels.cache import PLANS, has_padding, record_no_padding
from ._kernels.host import adopt, aligned_empty
from ._kernels.matmul import host_rmatvec
from ._shapes import (
    broadcast_shape,
    index_dtype_for,
    is_concrete,
    normalize_axes,
    normalize_axis,
    normalize_shape,
    prod,
    valid_rows,
)
from ._operands import as_operand, as_sparse, cast
from ._relayout import broadcast, dense_layout, fill_only, is_dense_layout, to_coo
from ._routing import routed


@routed
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
        Always a new array object (sharing ``x``'s immutable buffers where
        the shape is unchanged), so an in-place update of one (``A[i, j] =
        v``, ``setdiag``) leaves the other as it was.

    Raises
    ------
    ValueError
        If the shapes are not compatible.
    """
    x = as_sparse(x)
    out = broadcast(x, shape)
    return out._replace() if out is x else out


@routed
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
    arrs = [as_sparse(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    shape = broadcast_shape(*(a.shape for a in arrs)) if arrs else ()
    return tuple(broadcast_to(a, shape) for a in arrs)  # the standard (2025.12) returns a tuple


def _permute_buffers_impl(m, data, indices, data_axes, index_axes, columns):
    """Move the buffers' axes and index columns (``m``: NumPy or ``jax.numpy``)."""
    indices = m.transpose(indices, index_axes)
    return m.transpose(data, data_axes), indices[..., list(columns)]


#: Eagerly on the host NumPy; else one compiled call (not three eager ones).
_permute_buffers = Operation("permute_dims", operands=lambda data, indices, **kw: (data, indices))
_permute_buffers.host(lambda data, indices, **kw: _permute_buffers_impl(np, host_view(data), host_view(indices),
                                                                          **kw))
_permute_buffers.xla(jax.jit(partial(_permute_buffers_impl, jnp),
                             static_argnames=("data_axes", "index_axes", "columns")))


def transposed_matvec(x: BCOOArray):
    """The vector product of ``x.T`` read from ``x``'s buffers (``matmul.host_rmatvec``), or None.

    For a zero-filled 2-D matrix with every dimension sparse and concrete
    buffers on the host; the cached CSR structure is keyed on ``x``'s JAX
    index buffer when it has one (each of its host views is a new object).
    """
    if (x.ndim != 2 or x.n_batch or x.n_dense or not host_enabled()
            or not zero_fill(x.fill_value)):
        return None
    host = x._host_buffers()
    if host is None:
        return None
    indices = x._indices if x._indices is not None else host[1]
    values = x._data if x._data is not None else host[0]
    # one binding per pair of buffers (scipy's constructor costs more than a small product)
    return PLANS.get((values, indices), ("rmatvec", x.shape), lambda: host_rmatvec(host[0], indices, x.shape))


@routed
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
    x = as_sparse(x)
    axes = tuple(normalize_axis(a, x.ndim, "axes") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes={axes} is not a permutation of range({x.ndim})")
    if axes == tuple(range(x.ndim)):
        return x._replace()  # a new array: item assignment on the result must not change x
    if axes == (1, 0) and x.n_batch == 0 and x.n_dense == 0:
        got = slicing.transpose(*x._buffers(), x.shape)
        if got is not None:
            # scipy's CSR -> CSC with a cached plan: the result is already in canonical order. Its values are a
            # gather of x's, done on first use; its product with a vector reads x's own buffers (scipy's .T is
            # a CSC view), so A.T @ v never gathers.
            values, indices, canonical = got
            if callable(values):
                values = Deferred(values, (indices.shape[0],), x.dtype)
            out = BCOOArray._from_buffers(values, indices, x.shape[::-1],
                                          n_batch=0, n_dense=0, fill_value=x.fill_value, indices_sorted=True,
                                          unique_indices=canonical)
            bound = transposed_matvec(x)
            if bound is not None:
                out._matvec = (bound,)
            return out
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
        *x._buffers(), data_axes=axes[:nb] + (nb,) + tuple(a - ns + 1 for a in axes[nb + ns:]),
        index_axes=axes[:nb] + (nb, nb + 1), columns=tuple(a - nb for a in axes[nb:nb + ns]))
    shape = tuple(x.shape[a] for a in axes)
    keeps_order = list(axes[nb:nb + ns]) == sorted(axes[nb:nb + ns])
    return BCOOArray._from_buffers(data, indices, shape, n_batch=nb, n_dense=x.n_dense, fill_value=x.fill_value,
                                   indices_sorted=x.indices_sorted and keeps_order, unique_indices=x.unique_indices)


@routed
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
    x = as_sparse(x)
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
        return x._replace()  # a new array (sharing the immutable buffers): item assignment on it leaves x alone
    if is_dense_layout(x):
        data = x._buffers()[0]
        return x._replace(data=data.reshape((1,) + shape), shape=shape, n_dense=len(shape))
    if x.size == 0:
        # Nothing can be stored in a zero-size array (np.unravel_index refuses the shape).
        return fill_only(shape, x.dtype, x.fill_value)
    return _reshape_coo(to_coo(x), shape)


#: ``reshape`` of an all-sparse array: new coordinates of the same entries.
_reshape_coo = Operation("reshape", operands=lambda c, shape: (c,))


@_reshape_coo.host
def _reshape_coo_host(c: BCOOArray, shape) -> BCOOArray:
    data, idx = c._host_buffers()
    nse = idx.shape[0]
    sizes = c.shape
    valid = valid_rows(idx, sizes)
    if not shape:
        # A 0-d result has no sparse dimension, so no padding (see the XLA twin): one value.
        kept = data[valid]
        if not kept.size:
            value = np.asarray(c.fill_value, data.dtype)
        elif data.dtype == np.bool_:
            value = np.asarray(kept.any())
        else:
            value = np.asarray(kept.sum(dtype=data.dtype))
        return BCOOArray._from_buffers(value.reshape(1), np.zeros((1, 0), index_dtype_for(shape)), (), n_batch=0,
                                       n_dense=0, fill_value=c.fill_value, indices_sorted=True, unique_indices=True)
    idx64 = idx.astype(np.int64)
    cols = tuple(np.where(valid, idx64[:, k], 0) for k in range(len(sizes)))
    if prod(sizes) >= 2**62:
        # Positions past int64 (more than 2**62 elements): row-major arithmetic in Python integers.
        if max(shape) >= 2**63:
            raise ValueError(f"reshape(): shape {shape} has a dimension of 2**63 or more positions, past the int64 "
                             "indices of a BCOOArray; keep every dimension below 2**63")
        flat = np.zeros(nse, object)
        for col, n in zip(cols, sizes):
            flat = flat * n + col.astype(object)
        out_cols = []
        for n in shape[::-1]:
            out_cols.append(flat % n)
            flat = flat // n
        new = np.stack(out_cols[::-1], axis=1).astype(np.int64).astype(index_dtype_for(shape))
    else:
        flat = np.ravel_multi_index(cols, sizes) if len(sizes) else np.zeros(nse, np.int64)
        new = np.stack(np.unravel_index(flat, shape), axis=1).astype(index_dtype_for(shape))
    if not valid.all():
        new[~valid] = np.asarray(shape, new.dtype)
    return BCOOArray._from_buffers(data, new, shape, n_batch=0, n_dense=0, fill_value=c.fill_value,
                                   indices_sorted=c.indices_sorted, unique_indices=c.unique_indices)


@_reshape_coo.xla
def _reshape_coo_xla(c: BCOOArray, shape) -> BCOOArray:
    x = c
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
        new_idx = adopt(new.astype(index_dtype_for(shape)))
    else:
        valid = jnp.all(jnp.stack(valid_cols, axis=1), axis=1) if sizes else jnp.ones(nse, bool)
        cols = []
        # Group by group (runs of dimensions with equal products): a position is only formed within a group,
        # so the arithmetic fits the index dtype unless one group holds more positions than it can count.
        for src, dst in _reshape_groups(tuple(sizes), tuple(shape)):
            n_group = prod(sizes[k] for k in src)
            idt = _traced_position_dtype(n_group, sizes, shape)
            flat = jnp.zeros(nse, idt)
            for k in src:
                flat = flat * sizes[k] + jnp.where(valid, idx[:, k], 0).astype(idt)
            out = []
            for k in reversed(dst):
                out.append(flat % shape[k])
                flat = flat // shape[k]
            cols += out[::-1]
        odt = index_dtype_for(shape)
        new = jnp.stack([c.astype(odt) for c in cols], axis=1) if shape else jnp.zeros((nse, 0), odt)
        new_idx = jnp.where(valid[:, None], new, jnp.asarray(shape, odt))
    if not shape:
        # A 0-d result has no sparse dimension, so no padding: an entry at () would make
        # x's padding count. Store the one value: the sum of the valid entries (or), or
        # the fill value when there is none.
        keep, data = jnp.asarray(valid), c.data
        total = jnp.any(keep & data) if data.dtype == jnp.bool_ else \
            jnp.sum(jnp.where(keep, data, jnp.zeros((), data.dtype)), dtype=data.dtype)
        data = jnp.where(jnp.any(keep), total, jnp.asarray(x.fill_value, data.dtype))[None]
        return BCOOArray._from_buffers(data, jnp.zeros((1, 0), new_idx.dtype), (), n_batch=0, n_dense=0,
                                       fill_value=x.fill_value, indices_sorted=True, unique_indices=True)
    return BCOOArray._from_buffers(c.data, new_idx, shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                   indices_sorted=c.indices_sorted, unique_indices=c.unique_indices)


def _reshape_groups(sizes: tuple, shape: tuple) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The finest pairing of runs of ``sizes``' and ``shape``'s dimensions with equal products (no size 0).

    A reshape maps each run onto its partner independently (NumPy's ``_attempt_nocopy_reshape`` walks the
    same runs); size-1 dimensions join a neighbouring run.
    """
    groups, i, j = [], 0, 0
    while i < len(sizes) and j < len(shape):
        si, sj, p, q = i, j, sizes[i], shape[j]
        while p != q:
            if p < q:
                i += 1
                p *= sizes[i]
            else:
                j += 1
                q *= shape[j]
        i, j = i + 1, j + 1
        groups.append((tuple(range(si, i)), tuple(range(sj, j))))
    rest_src, rest_dst = tuple(range(i, len(sizes))), tuple(range(j, len(shape)))  # size-1 dimensions
    if groups:
        src, dst = groups[-1]
        groups[-1] = (src + rest_src, dst + rest_dst)
    elif rest_src or rest_dst:
        groups.append((rest_src, rest_dst))
    return groups


def _traced_position_dtype(n_group: int, sizes: tuple, shape: tuple):
    """The integer dtype for positions within a run of ``n_group`` under a trace, or a ValueError naming the limit."""
    idt = index_dtype_for((1,))  # int32, or int64 with x64 on
    limit = np.iinfo(idt).max if not jax.config.jax_enable_x64 else 2**63 - 1
    if n_group - 1 > limit:
        bits = 64 if jax.config.jax_enable_x64 else 32
        raise ValueError(
            f"reshape() of shape {tuple(sizes)} to {tuple(shape)} under a trace (jit, vmap, grad) merges dimensions "
            f"into a run of {n_group} positions, past the int{bits} position arithmetic of traced indices"
            + ("; turn on JAX's 64-bit mode (JAX_ENABLE_X64=1) or reshape outside the trace, where positions are "
               "exact Python integers" if bits == 32 else
               "; reshape outside the trace, where positions are exact Python integers"))
    return jnp.int64 if n_group - 1 > np.iinfo(np.int32).max else idt


@routed
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
    x = as_sparse(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    out_ndim = x.ndim + len(axes)
    norm = normalize_axes(axes, out_ndim)
    shape = list(x.shape)
    for a in norm:
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


@routed
def squeeze(x, /, axis) -> BCOOArray:
    """Remove size-1 dimensions named by ``axis`` (array API ``squeeze``).

    Raises
    ------
    ValueError
        If a named dimension does not have size 1.
    """
    x = as_sparse(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]}; only size-1 axes can be squeezed")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


@routed
def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to (array API ``broadcast_shapes``).

    Parameters
    ----------
    *shapes : tuple of int (or None)
        Shapes to broadcast. A ``None`` dimension (unknown size, as the
        standard allows for lazy libraries) gives ``None`` in the result
        unless another shape has a size other than 1 there.

    Returns
    -------
    tuple
        The broadcast shape; ``()`` for no arguments.

    Raises
    ------
    ValueError
        If two sizes of one dimension differ and neither is 1.
    TypeError
        If a shape is not a sequence of integers (or None).
    """
    return broadcast_shape(*shapes, name="broadcast_shapes")


def _coo_offset(c: BCOOArray, ax: int, offset: int, out_shape) -> tuple:
    """Indices of all-sparse ``c`` moved by ``offset`` along ``ax``, in ``out_shape``; padding re-marked."""
    idt = np.dtype(index_dtype_for(out_shape))
    if not c.ndim:
        return c.data, c.indices.astype(idt)
    return c.data, _offset_indices(c.indices, np.asarray(offset, idt), ax, tuple(c.shape), tuple(out_shape))


@partial(jax.jit, static_argnames=("ax", "shape", "out_shape"))
def _offset_indices(indices, offset, ax: int, shape, out_shape):
    """``_coo_offset``'s index arithmetic as one compiled program (the offset is an argument, not a constant)."""
    idx = indices.astype(offset.dtype)
    valid = jnp.all(idx < jnp.asarray(shape, idx.dtype), axis=1)
    idx = idx.at[:, ax].add(offset)
    return jnp.where(valid[:, None], idx, jnp.asarray(out_shape, idx.dtype))


@routed
def concat(arrays, /, *, axis=0) -> BCOOArray:
    """Join arrays along an existing axis (array API ``concat``).

    Parameters
    ----------
    arrays : tuple or list of BCOOArray or array
        Same number of dimensions and the same shape except along ``axis``;
        dtypes promote by the standard's rules.
    axis : int or None
        The joining axis; None flattens every array first (row-major).

    Returns
    -------
    BCOOArray
        The promoted dtype, fill value of the first array. Stored entries are
        those of the inputs with offset indices (all-sparse layout); if every
        input is in dense layout the result is too.

    Raises
    ------
    TypeError
        If ``arrays`` is not a non-empty tuple or list.
    ValueError
        If shapes do not fit or an array is 0-d (with an axis).
    IndexError
        If ``axis`` is out of range.
    """
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise TypeError("concat() needs a non-empty tuple or list of arrays")
    arrs = [as_sparse(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    dt = _dtypes.result_type(*(a.dtype for a in arrs))
    arrs = [cast(a, dt) for a in arrs]
    if axis is None:
        arrs = [reshape(a, (-1,)) for a in arrs]
        ax = 0
    else:
        nd = arrs[0].ndim
        if nd == 0:
            raise ValueError("concat() cannot join 0-d arrays along an axis; use stack or axis=None")
        if any(a.ndim != nd for a in arrs):
            raise ValueError(f"concat(): arrays have different numbers of dimensions {[a.ndim for a in arrs]}")
        ax = normalize_axis(axis, nd)
    base = arrs[0].shape
    for i, a in enumerate(arrs):
        if a.shape[:ax] != base[:ax] or a.shape[ax + 1:] != base[ax + 1:]:
            raise ValueError(f"concat(): arrays[{i}] has shape {a.shape}, which differs from {base} "
                             f"outside axis {ax}")
    out_shape = base[:ax] + (sum(a.shape[ax] for a in arrs),) + base[ax + 1:]
    if len(arrs) == 1:  # a new object on the same immutable buffers: in-place updates of either stay apart
        return arrs[0]._replace()
    if all(a.n_sparse == 0 and a.nse == 1 for a in arrs):
        return _concat_dense(arrs, ax)
    fill = arrs[0].fill_value
    coos = []
    for a in arrs:
        if not same_value_np(a.fill_value, fill):
            a = dense_layout(a.todense())._replace(fill_value=fill)
        coos.append(to_coo(a))
    return _concat_coo(coos, ax, out_shape, fill)


#: ``concat`` of dense-layout arrays: a dense-layout result.
_concat_dense = Operation("concat_dense", operands=lambda arrs, ax: arrs)
_concat_dense.host(lambda arrs, ax: dense_layout(np.concatenate([a._dense() for a in arrs], axis=ax)))
_concat_dense.xla(lambda arrs, ax: dense_layout(jnp.concatenate([a.todense() for a in arrs], axis=ax)))

#: ``concat`` of all-sparse arrays of one fill value: their entries, indices offset along ``ax``.
_concat_coo = Operation("concat", operands=lambda coos, *args: coos)


@_concat_coo.host
def _concat_coo_host(coos, ax: int, out_shape, fill) -> BCOOArray:
    # One output buffer per field, each operand's indices written once at its place (offset along ``ax``).
    idt = np.dtype(index_dtype_for(out_shape))
    buffers = [c._host_buffers() for c in coos]
    total = sum(d.shape[0] for d, _ in buffers)
    k = len(out_shape)
    data = aligned_empty((total,), np.result_type(*(d.dtype for d, _ in buffers)))
    indices = aligned_empty((total, k), idt)
    bound = np.asarray(out_shape, idt)
    start, offset, padded = 0, 0, []
    for c, (d, i0) in zip(coos, buffers):
        end = start + d.shape[0]
        data[start:end] = d
        if k:
            out = indices[start:end]
            out[...] = i0
            has = has_padding(i0, c.shape)
            if has:
                valid = valid_rows(i0, c.shape)
            if offset:
                out[:, ax] += offset
            if has:
                out[~valid] = bound
        padded.append(k > 0 and has)
        start = end
        offset += c.shape[ax] if c.ndim else 0
    if k and not any(padded):
        record_no_padding(indices, out_shape)
    # Along axis 0, sorted operands in order give sorted entries (a padded one only may come last).
    in_order = ax == 0 and all(c.indices_sorted for c in coos) and not any(padded[:-1])
    return BCOOArray._from_buffers(data, indices, out_shape, n_batch=0, n_dense=0,
                                   fill_value=fill, indices_sorted=in_order,
                                   unique_indices=all(c.unique_indices for c in coos))


@_concat_coo.xla
def _concat_coo_xla(coos, ax: int, out_shape, fill) -> BCOOArray:
    datas, idxs, offset = [], [], 0
    for c in coos:
        d, i = _coo_offset(c, ax, offset, out_shape)
        datas.append(d)
        idxs.append(i)
        offset += c.shape[ax] if c.ndim else 0
    return BCOOArray._from_buffers(jnp.concatenate(datas), jnp.concatenate(idxs), out_shape, n_batch=0, n_dense=0,
                                   fill_value=fill, unique_indices=all(c.unique_indices for c in coos))


@routed
def stack(arrays, /, *, axis: int = 0) -> BCOOArray:
    """Join arrays along a new axis (array API ``stack``).

    Parameters
    ----------
    arrays : tuple or list of BCOOArray or array
        All of the same shape; dtypes promote.
    axis : int
        Position of the new axis in the result (``-ndim - 1 <= axis <= ndim``).

    Returns
    -------
    BCOOArray
        Shape with ``len(arrays)`` inserted at ``axis``; sparse as [`concat`][bcoo_array.concat].

    Raises
    ------
    TypeError
        If ``arrays`` is not a non-empty tuple or list.
    ValueError
        If the shapes differ.
    IndexError
        If ``axis`` is out of range.
    """
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise TypeError("stack() needs a non-empty tuple or list of arrays")
    arrs = [as_sparse(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    shape = arrs[0].shape
    for i, a in enumerate(arrs):
        if a.shape != shape:
            raise ValueError(f"stack(): arrays[{i}] has shape {a.shape}, arrays[0] has {shape}")
    ax = normalize_axis(axis, len(shape) + 1)
    return concat([expand_dims(a, axis=ax) for a in arrs], axis=ax)


@routed
def unstack(x, /, *, axis: int = 0) -> tuple[BCOOArray, ...]:
    """Split ``x`` into its slices along ``axis`` (array API ``unstack``).

    Returns
    -------
    tuple of BCOOArray
        ``x.shape[axis]`` arrays of ``x``'s shape without ``axis``, each a
        sparse slice (basic indexing) with ``x``'s fill value.

    Raises
    ------
    ValueError
        If ``x`` is 0-d.
    IndexError
        If ``axis`` is out of range.
    """
    x = as_sparse(x)
    if x.ndim == 0:
        raise ValueError("unstack() needs an array of at least one dimension")
    ax = normalize_axis(axis, x.ndim)
    return tuple(x[(slice(None),) * ax + (i,)] for i in range(x.shape[ax]))


def _dense_axis(x: BCOOArray, a: int) -> int:
    """The axis of ``x.data`` holding dense dimension ``a`` of ``x``."""
    return x.n_batch + 1 + (a - x.n_batch - x.n_sparse)


@routed
def flip(x, /, *, axis=None) -> BCOOArray:
    """Reverse the order of elements along ``axis`` (array API ``flip``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    axis : int, tuple of int or None
        Axes to reverse; None reverses all.

    Returns
    -------
    BCOOArray
        ``x``'s shape, dtype, layout and fill value: sparse indices become
        ``size - 1 - i``, batch and dense dimensions are reversed in the buffers.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    """
    x = as_sparse(x)
    axes = normalize_axes(axis, x.ndim)
    data, indices = broadcast_batch(x.data, x.indices, x.shape, x.n_batch)
    for a in axes:
        if a < x.n_batch:
            data, indices = jnp.flip(data, a), jnp.flip(indices, a)
        elif a < x.n_batch + x.n_sparse:
            k, n = a - x.n_batch, x.shape[a]
            col = indices[..., k]
            indices = indices.at[..., k].set(jnp.where(col < n, n - 1 - col, col))
        else:
            data = jnp.flip(data, _dense_axis(x, a))
    return x._replace(data=data, indices=indices, indices_sorted=False)


@routed
def roll(x, /, shift, *, axis=None) -> BCOOArray:
    """Shift elements cyclically along ``axis`` (array API ``roll``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    shift : int or tuple of int
        Number of places (negative: backwards). With a tuple, ``axis`` must
        be a tuple of the same length.
    axis : int, tuple of int or None
        Axes to roll; None rolls the flattened array and restores the shape.

    Returns
    -------
    BCOOArray
        ``x``'s shape, dtype and fill value; sparse indices become
        ``(i + shift) mod size``, batch and dense dimensions are rolled in
        the buffers.

    Raises
    ------
    ValueError
        If ``shift`` and ``axis`` have different lengths.
    TypeError
        If a shift is not an integer.
    IndexError
        If an axis is out of range.
    """
    x = as_sparse(x)
    if axis is None:
        if isinstance(shift, (tuple, list)):
            shift = sum(operator.index(s) for s in shift)
        return reshape(roll(reshape(x, (-1,)), operator.index(shift), axis=0), x.shape)
    shifts = tuple(shift) if isinstance(shift, (tuple, list)) else (shift,)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll(): shift={shift!r} and axis={axis!r} have different lengths")
    total = [0] * x.ndim
    for s, a in zip(shifts, axes):
        try:
            s = operator.index(s)
        except TypeError as exc:
            raise TypeError(f"roll(): shift {s!r} must be an integer") from exc
        total[normalize_axis(a, x.ndim)] += s
    data, indices = broadcast_batch(x.data, x.indices, x.shape, x.n_batch)
    for a, s in enumerate(total):
        n = x.shape[a]
        if n == 0 or s % n == 0:
            continue
        if a < x.n_batch:
            data, indices = jnp.roll(data, s, a), jnp.roll(indices, s, a)
        elif a < x.n_batch + x.n_sparse:
            k = a - x.n_batch
            col = indices[..., k]
            indices = indices.at[..., k].set(jnp.where(col < n, (col + (s % n)) % n, col))
        else:
            data = jnp.roll(data, s, _dense_axis(x, a))
    return x._replace(data=data, indices=indices, indices_sorted=False)


@routed
def moveaxis(x, source, destination, /) -> BCOOArray:
    """Move axes to new positions, the others keeping their order (array API ``moveaxis``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    source, destination : int or tuple of int
        Original and new positions (same length, each without repeats).

    Returns
    -------
    BCOOArray
        [`permute_dims`][bcoo_array.permute_dims] with the matching permutation (sparse).

    Raises
    ------
    ValueError
        If the lengths differ or an axis repeats.
    IndexError
        If an axis is out of range.
    """
    x = as_sparse(x)
    src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis(): source={source!r} and destination={destination!r} differ in length")
    src = tuple(normalize_axis(a, x.ndim, "source") for a in src)
    dst = tuple(normalize_axis(a, x.ndim, "destination") for a in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis(): source and destination must not repeat an axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


@routed
def repeat(x, repeats, /, *, axis=None) -> BCOOArray:
    """Repeat each element ``repeats`` times along ``axis`` (array API ``repeat``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    repeats : int or 1-D integer array
        Repetitions per element: an int, or an array of shape ``(1,)`` or
        ``(x.shape[axis],)`` (``(x.size,)`` for ``axis=None``). An array
        fixes the output shape by its values, so it must be concrete (not
        traced); ``x`` may be traced.
    axis : int or None
        The axis; None repeats the flattened array (1-D result).

    Returns
    -------
    BCOOArray
        Sparse: each stored entry is copied with shifted indices (all-sparse
        layout; nse grows by the largest repeat count, extra copies being
        padding). Same dtype and fill value.

    Raises
    ------
    ValueError
        If a repeat count is negative or ``repeats`` has the wrong shape, or
        a ``repeats`` array is traced.
    TypeError
        If ``repeats`` is neither an int nor an integer array.
    IndexError
        If ``axis`` is out of range.
    """
    x = as_sparse(x)
    if axis is None:
        x = reshape(x, (-1,))
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        reps = None
        r = int(repeats)
    else:
        arr = as_operand(repeats, "repeats")
        arr = arr.todense() if isinstance(arr, BCOOArray) else arr
        if not jnp.issubdtype(arr.dtype, jnp.integer):
            raise TypeError(f"repeat(): repeats must be an int or an integer array, got dtype {arr.dtype}")
        if not is_concrete(arr):
            raise ValueError("repeat(): a traced repeats array would make the output shape data-dependent; "
                             "pass a concrete array or a Python int")
        reps = np.asarray(arr).astype(np.int64)
        if reps.ndim != 1 or reps.shape[0] not in (1, n):
            raise ValueError(f"repeat(): repeats has shape {reps.shape}; expected (1,) or ({n},)")
        if reps.shape[0] == 1:
            r, reps = int(reps[0]), None
    if reps is None:
        if r < 0:
            raise ValueError(f"repeat(): repeats={r} must be non-negative")
        y = expand_dims(x, axis=ax + 1)
        y = broadcast_to(y, y.shape[:ax + 1] + (r,) + y.shape[ax + 2:])
        return reshape(y, x.shape[:ax] + (n * r,) + x.shape[ax + 1:])
    if (reps < 0).any():
        raise ValueError("repeat(): every repeat count must be non-negative")
    out_shape = x.shape[:ax] + (int(reps.sum()),) + x.shape[ax + 1:]
    if n == 0 or not reps.any():
        # Nothing to copy (an empty axis, or every count zero): no stored entry, only the fill value.
        return fill_only(out_shape, x.dtype, x.fill_value)
    idt = index_dtype_for(out_shape)
    c = to_coo(x)
    R = int(reps.max())
    idx = c.indices.astype(idt)
    valid = jnp.all(idx < jnp.asarray(x.shape, idt), axis=1)
    col = jnp.where(valid, idx[:, ax], 0)
    starts = adopt(np.concatenate([[0], np.cumsum(reps)[:-1]]).astype(idt))
    counts = jnp.asarray(reps.astype(idt))
    k = jnp.arange(R, dtype=idt)
    new_col = starts[col][None, :] + k[:, None]  # (R, nse)
    ok = valid[None, :] & (k[:, None] < counts[col][None, :])
    new_idx = jnp.broadcast_to(idx[None], (R,) + idx.shape).at[..., ax].set(new_col)
    new_idx = jnp.where(ok[..., None], new_idx, jnp.asarray(out_shape, idt))
    data = jnp.broadcast_to(c.data[None], (R,) + c.data.shape)
    nse = R * c.nse
    return BCOOArray._from_buffers(data.reshape((nse,) + c.data.shape[1:]), new_idx.reshape(nse, x.ndim), out_shape,
                                   n_batch=0, n_dense=0, fill_value=x.fill_value, unique_indices=c.unique_indices)


@routed
def tile(x, repetitions, /) -> BCOOArray:
    """Tile ``x`` ``repetitions[i]`` times along each axis (array API ``tile``).

    Parameters
    ----------
    x : BCOOArray or array
        Input.
    repetitions : tuple of int
        Non-negative counts; shorter than ``x.ndim`` means leading ones,
        longer prepends size-1 axes to ``x``.

    Returns
    -------
    BCOOArray
        Shape ``x.shape[i] * repetitions[i]`` (after padding both); sparse,
        nse multiplied by ``prod(repetitions)``.

    Raises
    ------
    TypeError
        If ``repetitions`` is not a tuple of integers.
    ValueError
        If a count is negative.
    """
    x = as_sparse(x)
    if not isinstance(repetitions, (tuple, list)):
        raise TypeError(f"tile(): repetitions must be a tuple of int, got {type(repetitions).__name__}")
    reps = tuple(operator.index(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile(): repetitions={reps} must be non-negative")
    d = max(x.ndim, len(reps))
    reps = (1,) * (d - len(reps)) + reps
    shape = (1,) * (d - x.ndim) + x.shape
    if all(r == 1 for r in reps):
        return reshape(x, shape)
    inter = tuple(v for s in shape for v in (1, s))
    y = reshape(x, inter)
    y = broadcast_to(y, tuple(v for r, s in zip(reps, shape) for v in (r, s)))
    return reshape(y, tuple(r * s for r, s in zip(reps, shape)))


__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]
