"""Changing the layout of a BCOOArray without changing its values.

* ``dense_layout`` wraps a dense array (every entry stored, no sparse
  dimension);
* [`update_layout`][bcoo_array.update_layout] moves dimensions between batch, sparse and dense;
* ``to_coo`` makes every dimension sparse;
* ``broadcast`` broadcasts to a larger shape (new leading dimensions
  become batch dimensions);
* ``drop_fill_entries`` removes stored entries equal to the fill value.

All keep the fill value exactly.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._fill import zero_fill
from ._engine import Operation, host_enabled, host_view, runs_on_host
from ._kernels.dimensions import update_layout as _update_layout
from ._shapes import index_dtype_for, normalize_shape, prod
from ._limits import check_dense, check_entries


def dense_layout(x) -> BCOOArray:
    """Wrap a dense array as a BCOOArray with every entry stored (n_sparse = 0, nse = 1).

    A NumPy or host-readable JAX array is copied into a host block (the host engine's, see ``._engine``);
    anything else (traced, on a device) is wrapped by JAX.
    """
    if runs_on_host(x):
        view = x if isinstance(x, (np.ndarray, np.generic)) else host_view(x)
        if view is not None:
            view = np.asarray(view)
            dt = jax.dtypes.canonicalize_dtype(view.dtype)
            return dense_layout_block(np.array(view[None], dtype=dt))
    return dense_layout_block(jnp.asarray(x)[None])


def fill_only(shape: tuple, dtype, fill_value) -> BCOOArray:
    """A BCOOArray of ``shape`` storing nothing: every entry is ``fill_value`` (of ``dtype``).

    The empty buffers reach JAX by ``jax.device_put`` (no compiled program).
    """
    shape = tuple(shape)
    data, indices = np.zeros((0,), dtype), np.zeros((0, len(shape)), index_dtype_for(shape))
    if not host_enabled():
        data, indices = jax.device_put(data), jax.device_put(indices)
    return BCOOArray._from_buffers(
        data, indices,
        shape, n_batch=0, n_dense=0, fill_value=fill_value, indices_sorted=True, unique_indices=True,
    )


def dense_layout_block(block) -> BCOOArray:
    """The dense-layout BCOOArray whose one stored block is ``block`` (shape ``(1, *shape)``)."""
    indices = np.zeros((1, 0), np.int32)
    return BCOOArray._from_buffers(
        block, indices if isinstance(block, np.ndarray) else jax.device_put(indices), tuple(block.shape[1:]), n_batch=0, n_dense=block.ndim - 1,
        fill_value=np.zeros((), block.dtype)[()], indices_sorted=True, unique_indices=True,
    )


def is_dense_layout(x) -> bool:
    """Whether ``x`` is a BCOOArray in dense layout: one stored block holding every entry.

    Such an array (what ``dense_layout`` makes, and what products with a
    dense operand return) is best handled as the dense array ``x.data[0]``;
    converting it to COO would store one index row per entry. (A 0-d array
    has no sparse dimension whatever its layout, so it is not counted.)
    """
    return (isinstance(x, BCOOArray) and x.ndim > 0 and x.n_batch == 0 and x.n_sparse == 0
            and x.nse == 1)


def dense_values(x):
    """The dense array of a dense-layout BCOOArray (its one stored block); any other ``x`` unchanged.

    Operations that take dense operands call this first, so a product's
    dense result takes the dense path instead of a union with a full pattern.
    """
    return x.data[0] if is_dense_layout(x) else x


def dense_values_host(x):
    """``dense_values`` for the host engine: the block of a dense-layout BCOOArray as a NumPy array (no hand-off
    to JAX); any other ``x`` unchanged."""
    return x._host_buffers()[0][0] if is_dense_layout(x) else x


def update_layout(x: BCOOArray, n_batch: int | None = None, n_dense: int | None = None) -> BCOOArray:
    """The same array stored with ``n_batch`` batch and ``n_dense`` dense dimensions.

    The public relayout (``jax.experimental.sparse.bcoo_update_layout``):
    batch dimensions become sparse or the reverse, dense dimensions become
    sparse or the reverse; values, shape and fill value are unchanged. Its
    main use is ``jax.vmap``, which maps the leading *batch* dimensions of a
    BCOOArray's buffers: an array built by ``xp.stack`` has every dimension
    sparse, so give it a batch dimension first::

        S = xp.update_layout(xp.stack([A, 2 * A]), n_batch=1)
        jax.vmap(lambda a: xp.sum(a * a))(S)

    Parameters
    ----------
    x : BCOOArray
        Any shape and layout.
    n_batch : int, optional
        Number of leading batch dimensions of the result (default: ``x.n_batch``).
    n_dense : int, optional
        Number of trailing dense dimensions of the result (default: ``x.n_dense``).

    Returns
    -------
    BCOOArray
        Same shape, dtype, values and fill value; ``x`` itself when the layout
        does not change. Each batch element stores its own entries, as many
        as the fullest one (padding the others) when the indices are
        concrete; traced indices keep every entry in each element (zero
        values where they belong to another), as
        ``jax.experimental.sparse.bcoo_update_layout``. A new dense dimension
        stores whole blocks (the fill value where nothing was stored).

    Raises
    ------
    TypeError
        If ``x`` is not a BCOOArray, or ``n_batch`` / ``n_dense`` is not an int.
    ValueError
        If ``n_batch`` or ``n_dense`` is negative or ``n_batch + n_dense > x.ndim``.
    """
    if not isinstance(x, BCOOArray):
        raise TypeError(f"update_layout(): x must be a BCOOArray, got {type(x).__name__}")
    n_batch = x.n_batch if n_batch is None else n_batch
    n_dense = x.n_dense if n_dense is None else n_dense
    for name, v in (("n_batch", n_batch), ("n_dense", n_dense)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"update_layout(): {name} must be an int, got {type(v).__name__}")
    n_batch, n_dense = int(n_batch), int(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > x.ndim:
        raise ValueError(f"update_layout(): n_batch={n_batch} and n_dense={n_dense} must be >= 0 with "
                         f"n_batch + n_dense <= x.ndim = {x.ndim}")
    if (n_batch, n_dense) == (x.n_batch, x.n_dense):
        return x
    if (n_batch, n_dense) == (0, 0) and x.nse == 0 and x.n_dense == 0:
        return fill_only(x.shape, x.dtype, x.fill_value)  # storing nothing: no entry to move
    if n_batch < x.n_batch:  # the batch elements' entries are materialized (their buffers may be broadcast)
        moved = prod(x.shape[n_batch:x.n_batch])
        check_entries("update_layout", prod(x.shape[:x.n_batch]) * x.nse, x.dtype, index_dtype_for(x.shape),
                      x.ndim - n_batch - n_dense, prod(x.shape[x.ndim - x.n_dense:]),
                      what=f"{moved:,} batch elements of {x.nse:,} stored entries each, made sparse (a broadcast "
                      "to a larger shape stores every copy)")
    if n_dense > x.n_dense:
        check_dense("update_layout", x.shape[:x.n_batch] + (x.nse,) + x.shape[x.ndim - n_dense:], x.dtype,
                    what="a dense block per stored entry")
    data, indices = _update_layout(*x._buffers(), x.shape, x.n_batch, x.n_dense, x.fill_value,
                                   zero_fill(x.fill_value), n_batch, n_dense,
                                   x.indices_sorted and x.unique_indices)
    # Leading sparse dimensions made batch dimensions of concrete canonical indices: each element keeps its own
    # entries in their order (padding last), so it stays canonical. (Traced indices give every element every
    # entry: duplicates.)
    # Dense dimensions made sparse with no batch dimension: each entry's block expands in row-major order in its
    # place (both engines), so sorted unique indices stay so and padding stays last.
    canonical = x.indices_sorted and x.unique_indices
    keeps = canonical and ((n_batch > x.n_batch and n_dense == x.n_dense and x._concrete_indices())
                           or (n_batch == x.n_batch == 0 and n_dense < x.n_dense and (x.n_sparse or x.nse <= 1)))
    return BCOOArray._from_buffers(data, indices, x.shape, n_batch=n_batch, n_dense=n_dense, fill_value=x.fill_value,
                                   indices_sorted=keeps, unique_indices=keeps)


def to_coo(x: BCOOArray) -> BCOOArray:
    """The same array with every dimension sparse (n_batch = n_dense = 0)."""
    return update_layout(x, 0, 0)


def broadcast(x: BCOOArray, shape) -> BCOOArray:
    """Broadcast ``x`` to ``shape`` (the work behind the array API's ``broadcast_to``).

    New leading dimensions become batch dimensions; a size-1 sparse dimension
    broadcast to size n multiplies nse by n; the fill value is kept.

    Raises
    ------
    ValueError
        If the shapes are not compatible.
    """
    shape = normalize_shape(shape)
    if shape == x.shape:
        return x
    nd = len(shape) - x.ndim
    if nd < 0 or any(s not in (1, t) for s, t in zip(x.shape, shape[nd:])):
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    if (prod(shape) == 0 and x.n_sparse) or (x.nse == 0 and x.n_batch == 0 and x.n_dense == 0):
        # A size-1 sparse dimension broadcast to 0 (or any empty target), or an array storing nothing (a Python
        # scalar's 0-d operand in where(c, A, 0.0)): nothing is stored, and no batch dimension is made for it.
        return fill_only(shape, x.dtype, x.fill_value)
    n_batch = x.n_batch + nd
    idt = index_dtype_for(shape[n_batch:n_batch + x.n_sparse])
    grow = prod(t for s, t in zip(x.shape[x.n_batch:x.n_batch + x.n_sparse], shape[n_batch:n_batch + x.n_sparse])
                if s == 1)
    # A size-1 sparse dimension broadcast to n stores each entry n times; new batch dimensions are views on the
    # host but copies in XLA: both engines refuse what one of them would materialize past the limit.
    check_entries("broadcast_to", prod(shape[:n_batch]) * x.nse * grow, x.dtype, idt, x.n_sparse,
                  prod(x.shape[x.ndim - x.n_dense:]),
                  what=f"{prod(shape[:n_batch]):,} batch elements, each storing {x.nse:,} entries repeated {grow:,} "
                  "times along the broadcast sparse dimensions")
    data, indices = _broadcast_buffers(*x._buffers(), (1,) * nd + x.shape, shape, nd, n_batch, x.n_sparse,
                                       x.n_dense, np.dtype(idt))
    # New batch dimensions share x's indices (each element is x, canonical when x is); a grown sparse dimension
    # repeats the entries block by block (sorted only in special cases: not claimed).
    return BCOOArray._from_buffers(data, indices, shape, n_batch=n_batch, n_dense=x.n_dense,
                                   fill_value=x.fill_value, indices_sorted=x.indices_sorted and grow == 1,
                                   unique_indices=x.unique_indices)


def _broadcast_buffers_impl(m, data, indices, cur, shape, nd, n_batch, n_sparse, n_dense, idt):
    """The buffers of ``broadcast``, written once for NumPy and JAX (``m``: the array module): ``cur`` is the
    input shape with ``nd`` leading 1s."""
    if nd:
        data = data.reshape((1,) * nd + data.shape)
        indices = indices.reshape((1,) * nd + indices.shape)
    for k in range(n_sparse):
        ax = n_batch + k
        n = shape[ax]
        if cur[ax] == 1 and n != 1:
            nse = indices.shape[n_batch]
            rep = m.repeat(m.arange(n, dtype=indices.dtype), nse)
            pad = indices[..., k] >= 1  # padding stays padding
            indices = m.concatenate([indices] * n, axis=n_batch)
            col = m.broadcast_to(rep, indices.shape[:-1])
            newcol = m.where(m.concatenate([pad] * n, axis=n_batch), n, col).astype(indices.dtype)
            if m is np:
                indices = indices.copy()
                indices[..., k] = newcol
            else:
                indices = indices.at[..., k].set(newcol)
            data = m.concatenate([data] * n, axis=n_batch)
    indices = indices.astype(idt)
    dense_shape = shape[len(shape) - n_dense:] if n_dense else ()
    data = m.broadcast_to(data, data.shape[:n_batch + 1] + dense_shape)
    batch = tuple(shape[:n_batch])
    if data.shape[:n_batch] != batch:
        data = m.broadcast_to(data, batch + data.shape[n_batch:])
    if indices.shape[:n_batch] != batch:
        indices = m.broadcast_to(indices, batch + indices.shape[n_batch:])
    return data, indices


_broadcast_buffers = Operation("broadcast_buffers", operands=lambda data, indices, *a: (data, indices))
_broadcast_buffers.host(lambda data, indices, *static: _broadcast_buffers_impl(
    np, host_view(data), host_view(indices), *static))
_broadcast_buffers.xla(jax.jit(partial(_broadcast_buffers_impl, jnp), static_argnums=tuple(range(2, 9))))


def drop_fill_entries(x: BCOOArray) -> BCOOArray:
    """``x`` without the stored entries that equal its fill value (eager, bool, every dimension sparse).

    A comparison of sparse arrays evaluates the union of their patterns and
    would store ``False`` wherever the answer equals the fill value; scipy
    stores only the ``True`` entries, and code counts them with ``.nnz``.
    The values are unchanged. Under ``jit`` (traced buffers), for other
    layouts or dtypes, or with duplicate entries, ``x`` is returned as it is.
    """
    if x.dtype != np.bool_ or x.n_batch or x.n_dense or x.ndim == 0 or not x.unique_indices:
        return x  # (with duplicates, an entry equal to the fill may be needed: True | False)
    host = x._host_buffers()
    if host is None:
        return x
    keep = host[0] != x.fill_value
    n = int(np.count_nonzero(keep))
    if n == keep.size:
        return x
    # Every kept value is the other boolean: written, not gathered. (np.compress: a boolean mask on a 2-D array
    # is several times slower, 83 against 10 us for 14,000 rows.)
    return x._replace(data=np.full(n, not x.fill_value, np.bool_), indices=np.compress(keep, host[1], axis=0))
