"""Applying elementwise functions under the fill-value rule.

For a function ``f`` and operands with fill values ``a`` and ``b``, the
result's fill value is ``f(a, b)`` and its stored entries are ``f`` evaluated
at the union of the operands' patterns (pydata-sparse's rule). The result is
exactly the dense result, entry by entry.

A sparse operand combined with a dense one stays sparse when ``f(fill, d)``
is the same value for every dense entry ``d`` (checked on concrete values;
while tracing, assumed only for annihilating operations such as ``0 * d``,
which then treat ``d`` as finite, as ``jax.experimental.sparse`` does);
otherwise the result is a BCOOArray in *dense layout* (no sparse dimension,
every entry stored). A small sparse operand that broadcasts against a larger
one (a row of column scales in ``A / s``) is read as dense first, so
``A / s`` keeps ``A``'s pattern when ``0 / s`` is 0 everywhere (eagerly;
under ``jit`` the union of the broadcast patterns is stored).
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._array_object import BCOOArray
from ._fill import apply_with_fill, eval_fill, on_one_device, same_value, same_value_np
from ._kernels.coalesce import flatten_batch, sparse_sizes, unflatten_batch
from ._kernels.fromdense import gather
from ._kernels.mesh import replicated_on_mesh
from ._kernels.union import take_or_fill, union, union_apply_2d
from ._layout import is_concrete
from ._relayout import (
    broadcast,
    dense_layout,
    dense_layout_block,
    dense_values,
    update_layout,
)


def unary(fn: Callable, x: BCOOArray, *, linear: bool = False) -> BCOOArray:
    """Apply ``fn`` to every entry; ``linear`` functions skip summing duplicates."""
    src = x if linear else x._canonical()
    data, fill = apply_with_fill(fn, (src.data,), (src.fill_value,))
    return src._replace(data=data, fill_value=fill)


def _dense_operand(y):
    if isinstance(y, BCOOArray):
        return y.todense()
    return y if isinstance(y, np.ndarray) else jnp.asarray(y)


def binary(fn: Callable, x, y, *, annihilator=None) -> BCOOArray:
    """Apply binary ``fn`` under broadcasting; at least one operand is a BCOOArray.

    ``annihilator``, where given, is the fill value ``z`` with ``fn(z, d) == z``
    and ``fn(d, z) == z`` for every finite ``d`` (0 for multiply).
    """
    # A dense-layout operand is a dense array: the sparse-dense rule keeps the result sparse
    # where it can, and no entry-by-entry union with a full pattern is built.
    x = dense_values(x)
    y = dense_values(y)
    xs = isinstance(x, BCOOArray) and x.ndim > 0
    ys = isinstance(y, BCOOArray) and y.ndim > 0
    if not xs and not ys:
        # Dense (or 0-d) operands: the result's stored block in one compiled program.
        return dense_layout_block(_dense_block(fn)(_dense_operand(x), _dense_operand(y)))
    out_shape = jnp.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    if xs and ys:
        return _sparse_sparse(fn, x, y, out_shape)
    if xs:
        return _sparse_dense(fn, x, _dense_operand(y), out_shape, annihilator)
    return _sparse_dense(_swapped(fn), y, _dense_operand(x), out_shape, annihilator)


@functools.lru_cache(maxsize=None)
def _dense_block(fn: Callable):
    """``fn(a, b)[None]``, the stored block of a dense-layout result, as one compiled program."""
    return jax.jit(lambda a, b: fn(a, b)[None])


@functools.lru_cache(maxsize=None)
def _swapped(fn: Callable) -> Callable:
    """``fn`` with its two arguments swapped: one stable function per ``fn`` (compiled stages cache on it)."""
    def swapped(a, b):
        return fn(b, a)

    swapped.fuse_complex = getattr(fn, "fuse_complex", True)
    return swapped


def _sparse_dense(fn, a: BCOOArray, d, out_shape, annihilator, *, or_none: bool = False) -> BCOOArray | None:
    """``fn(a, d)`` for sparse ``a`` and dense ``d``: ``a``'s pattern when ``fn(fill, d)`` is one value, else dense.

    With ``or_none``, None instead of the dense result (the caller has a sparser way).
    """
    fa = a.fill_value
    if d.ndim == 0 and is_concrete(d):
        src = a._canonical()
        data, fill = apply_with_fill(fn, (src.data, d), (fa, d))
        res = src._replace(data=data, fill_value=fill)
        return broadcast(res, out_shape) if res.shape != tuple(out_shape) else res
    keep_sparse = False
    fill = None
    if is_concrete(d) and d.size and on_one_device((d,)):
        with jax.ensure_compile_time_eval():  # concrete even inside an outer trace (shard_map, jit)
            constant, g0 = _constant_probe(fn)(np.asarray(fa), d)  # one compiled program
        if bool(constant):
            keep_sparse = True
            fill = np.asarray(g0)[()]
    elif is_concrete(d):
        with jax.ensure_compile_time_eval():
            g = fn(jnp.asarray(fa), d)
            g0 = replicated_on_mesh(lambda v: v.reshape(-1)[0], g) if g.size else None
            constant = g0 is None or bool(jnp.all(same_value(g, g0)))
        if constant:
            keep_sparse = True
            fill = np.asarray(g0)[()] if g0 is not None else eval_fill(fn, fa, np.zeros((), d.dtype))
    elif annihilator is not None and same_value_np(fa, np.asarray(annihilator, a.dtype)):
        keep_sparse = True
        fill = eval_fill(fn, fa, np.zeros((), d.dtype))
    if not keep_sparse:
        if or_none:
            return None
        return dense_layout(fn(broadcast(a, out_shape).todense(), jnp.broadcast_to(d, out_shape)))
    src = broadcast(a, out_shape)._canonical()
    vals = gather(d, src.indices, src.shape, src.n_batch, src.n_dense)  # broadcasts d to src.shape
    return src._replace(data=_stored_apply(fn)(src.data, vals), fill_value=fill)


@functools.lru_cache(maxsize=None)
def _constant_probe(fn: Callable):
    """``fn(fill, d)`` for every dense entry ``d``: whether it is one value, and that value (one program)."""
    def run(fill, d):
        g = fn(fill, d).reshape(-1)
        return jnp.all(same_value(g, g[0])), g[0]

    return jax.jit(run)


@functools.lru_cache(maxsize=None)
def _stored_apply(fn: Callable):
    """``fn(values, other)`` with ``values`` broadcast to ``other``'s shape, as one compiled program."""
    return jax.jit(lambda values, other: fn(jnp.broadcast_to(values, other.shape), other))


#: A sparse operand that broadcasts against the other (a row or column of scales, say) and has at
#: most this many entries is read as a dense operand first, so the result can keep the other's pattern.
SMALL_BROADCAST_OPERAND = 1 << 20


def _small_broadcast(v: BCOOArray, out_shape) -> bool:
    return (tuple(v.shape) != tuple(out_shape) and v.size <= SMALL_BROADCAST_OPERAND
            and is_concrete(v.data, v.indices))


def _sparse_sparse(fn, x: BCOOArray, y: BCOOArray, out_shape) -> BCOOArray:
    # A broadcast operand (A / s with s a row of column scales): when fn(fill, s) is one value
    # wherever the other stores nothing, the result keeps the other's pattern, as scipy's would.
    if _small_broadcast(y, out_shape) and not _small_broadcast(x, out_shape):
        got = _sparse_dense(fn, x, y.todense(), out_shape, None, or_none=True)
        if got is not None:
            return got
    elif _small_broadcast(x, out_shape) and not _small_broadcast(y, out_shape):
        got = _sparse_dense(_swapped(fn), y, x.todense(), out_shape, None, or_none=True)
        if got is not None:
            return got
    x = broadcast(x, out_shape)
    y = broadcast(y, out_shape)
    n_batch = min(x.n_batch, y.n_batch)
    n_dense = min(x.n_dense, y.n_dense)
    x = update_layout(x, n_batch, n_dense)._canonical()
    y = update_layout(y, n_batch, n_dense)._canonical()
    shape = tuple(out_shape)
    if n_batch == 0 and n_dense == 0 and len(shape) == 2 and is_concrete(x.indices, y.indices):
        # 2-D with concrete indices: scipy's linear merge plans the union, one compiled call applies fn.
        fast = union_apply_2d(fn, x.data, x.indices, y.data, y.indices, shape, x.fill_value, y.fill_value)
        if fast is not None:
            return BCOOArray._from_buffers(
                fast[0], fast[1], shape, n_batch=0, n_dense=0,
                fill_value=eval_fill(fn, x.fill_value, y.fill_value), indices_sorted=True, unique_indices=True,
            )
    dx, ix = flatten_batch(x.data, x.indices, shape, n_batch)
    dy, iy = flatten_batch(y.data, y.indices, shape, n_batch)
    out_idx, pos_x, pos_y = union(ix, iy.astype(ix.dtype), sparse_sizes(shape, n_batch, n_dense))
    vx = take_or_fill(dx, pos_x, x.fill_value)
    vy = take_or_fill(dy, pos_y, y.fill_value)
    data, fill = apply_with_fill(fn, (vx, vy), (x.fill_value, y.fill_value))
    data, indices = unflatten_batch(data, out_idx, shape, n_batch)
    return BCOOArray._from_buffers(
        data, indices, shape, n_batch=n_batch, n_dense=n_dense,
        fill_value=fill, indices_sorted=True, unique_indices=True,
    )


