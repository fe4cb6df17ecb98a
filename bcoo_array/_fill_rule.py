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
from ._engine import Operation, host_max_entries, host_view, operand_entries
from ._fill import (Twin, apply_with_fill, eval_fill, host_apply, on_one_device, result_dtype, same_float,
                    same_value_np)
from ._kernels.fromdense import gather_np
from ._kernels.cache import has_padding
from ._kernels.host import aligned_empty
from ._kernels.native import host_coo_union_apply
from ._kernels.union import (scatter_or_fill_np, take_or_fill_np, union_fused_first, union_np,
                             union_scatter_2d_host, valid_prefix)
from ._kernels.coalesce import flatten_batch, sparse_sizes, unflatten_batch
from ._kernels.fromdense import gather
from ._kernels.mesh import replicated_on_mesh
from ._kernels.union import take_or_fill, union, union_apply_2d
from ._shapes import broadcast_shape, index_dtype_for, is_concrete, prod, valid_rows
from ._limits import check_dense, check_entries
from ._relayout import (
    broadcast,
    dense_layout,
    dense_layout_block,
    dense_values,
    dense_values_host,
    to_coo,
    update_layout,
)


#: ``unary(fn, x, *, linear=False)``: apply ``fn`` to every entry; ``linear`` functions skip summing duplicates.
unary = Operation("unary", operands=lambda fn, x, **kw: (x,), large=True)


@unary.host
def _unary_host(fn, x: BCOOArray, *, linear: bool = False):
    if getattr(fn, "numpy_fn", None) is None:
        return NotImplemented
    src = x if linear else x._canonical()
    host = src._host_buffers()
    got = None if host is None else host_apply(fn, (host[0],), (src.fill_value,))
    if got is None:
        return NotImplemented
    return src._replace(data=got[0], fill_value=got[1])


@unary.xla
def _unary_xla(fn: Callable, x: BCOOArray, *, linear: bool = False) -> BCOOArray:
    src = x if linear else x._canonical()
    data, fill = apply_with_fill(fn, (src.data,), (src.fill_value,))
    return src._replace(data=data, fill_value=fill)


def _dense_operand(y):
    if isinstance(y, BCOOArray):
        return y.todense()
    return y if isinstance(y, np.ndarray) else jnp.asarray(y)


#: ``binary(fn, x, y, *, annihilator=None)``: apply binary ``fn`` under broadcasting; at least one operand is
#: a BCOOArray. ``annihilator``, where given, is the fill value ``z`` with ``fn(z, d) == z`` and
#: ``fn(d, z) == z`` for every finite ``d`` (0 for multiply).
def _merges_two_large_patterns(fn, x, y, **kw) -> bool:
    """Whether ``binary``'s call is a union of two large patterns, where XLA's threaded merge wins (cage11,
    2.6 million entries: ``A + B`` 2 ms against 14 ms): both operands sparse, each storing more than a
    sixteenth of ``host_max_entries()``. With a dense or a small operand the work is a gather, which the
    host does as fast or faster (``A * v`` at 2 million entries 5.5 ms against 11 ms; a dense result 118 ms
    against 353 ms)."""
    floor = host_max_entries() // 16
    return (isinstance(x, BCOOArray) and isinstance(y, BCOOArray)
            and operand_entries(x) > floor and operand_entries(y) > floor)


binary = Operation("binary", operands=lambda fn, x, y, **kw: (x, y), large=_merges_two_large_patterns)


def _host_dense(y) -> np.ndarray:
    """A dense operand on the host: NumPy values (a 0-d BCOOArray read by the host engine)."""
    if isinstance(y, BCOOArray):
        return y._dense()
    if isinstance(y, (np.ndarray, np.generic)):
        return np.asarray(y)
    return host_view(y)


def _host_values(fn, *args) -> np.ndarray | None:
    """``fn``'s NumPy twin on host operands, cast to JAX's result dtype; None where it does not serve them."""
    got = host_apply(fn, args, tuple(np.zeros((), a.dtype) for a in args))
    return None if got is None else got[0]


@binary.host
def _binary_host(fn, x, y, *, annihilator=None):
    if getattr(fn, "numpy_fn", None) is None:
        return NotImplemented
    x = dense_values_host(x)
    y = dense_values_host(y)
    xs = isinstance(x, BCOOArray) and x.ndim > 0
    ys = isinstance(y, BCOOArray) and y.ndim > 0
    if not xs and not ys:
        values = _host_values(fn, _host_dense(x), _host_dense(y))
        return NotImplemented if values is None else dense_layout_block(np.ascontiguousarray(values[None]))
    out_shape = broadcast_shape(tuple(x.shape), tuple(y.shape))
    if xs and ys:
        return _sparse_sparse_host(fn, x, y, out_shape)
    if xs:
        return _sparse_dense_host(fn, x, _host_dense(y), out_shape)
    return _sparse_dense_host(_swapped(fn), y, _host_dense(x), out_shape)


def _sparse_dense_host(fn, a: BCOOArray, d: np.ndarray, out_shape, *, or_none: bool = False):
    """Host twin of ``_sparse_dense``: ``a``'s pattern when ``fn(fill, d)`` is one value, else dense layout."""
    fa = a.fill_value
    if d.ndim == 0:
        src = a._canonical()
        got = host_apply(fn, (src._host_buffers()[0], d), (fa, d))
        if got is None:
            return NotImplemented
        res = src._replace(data=got[0], fill_value=got[1])
        return broadcast(res, out_shape) if res.shape != tuple(out_shape) else res
    if d.size == 0:
        return None if or_none else NotImplemented
    g = _host_values(fn, np.asarray(fa, a.dtype), d)
    if g is None:
        return None if or_none else NotImplemented
    g = g.reshape(-1)
    if not bool(np.all(_one_value_np(g, g[0]))):
        if or_none:
            return None
        _check_dense_result(fn, a, d, out_shape)
        dense = broadcast(a, out_shape)._dense()
        values = _host_values(fn, dense, np.broadcast_to(d, out_shape))
        return NotImplemented if values is None else dense_layout_block(np.ascontiguousarray(values[None]))
    src = broadcast(a, out_shape)._canonical()
    hd, hi = src._host_buffers()
    vals = gather_np(d, hi, src.shape, src.n_batch, src.n_dense)
    values = _host_values(fn, np.broadcast_to(hd, vals.shape), vals)
    if values is None:
        return None if or_none else NotImplemented
    zero = g.dtype.kind in "fc" and g[0] == 0  # (only a zero's sign can differ among equal values)
    return src._replace(data=values, fill_value=_common_fill(g[0], zero and bool(np.all(_same_signs(g, g[0], np)))))


#: The public name of each element-wise function of the namespace (``bcoo_array.<name>``), by its kernel
#: function: ``_elementwise_functions`` fills it from its ``TABLE``, so that errors name ``divide``, not the
#: private ``_divide`` it runs.
PUBLIC_NAMES: dict = {}


def public_name(fn) -> str:
    """The name an error message gives ``fn``: its namespace name, else ``"element-wise function"``."""
    for key in (fn, getattr(fn, "jax_fn", None)):
        try:
            name = PUBLIC_NAMES.get(key)
        except TypeError:  # an unhashable callable
            name = None
        if name is not None:
            return f"bcoo_array.{name}"
    name = getattr(fn, "__name__", None)
    if not name or not name.isidentifier() or name.startswith("_") or name == "wrapped":
        return "element-wise function"
    return name


def _check_dense_result(fn, a: BCOOArray, d, out_shape) -> None:
    """The guard before a sparse-dense function whose result is dense: ``fn(fill, d)`` is not one value."""
    name = public_name(fn)
    check_dense(name, out_shape, a.dtype, d.dtype,
                what="the densified sparse operand and the result: fn(fill_value, y) takes several values over the "
                "dense operand y, so every position of the result is stored",
                alternative=f"{name}(x.todense(), y) on the dense values")


def _outer_host(fn, x: BCOOArray, y: BCOOArray):
    """``fn`` of a column ``(n, 1)`` and a row ``(1, m)`` (the outer broadcast), built in canonical order.

    The union of the broadcast patterns is every column of each row ``x``
    stores, plus ``y``'s stored columns in the other rows: written row by row
    with no sort and no broadcast copies of the operands, O(result) work.
    None where ``fn`` has no NumPy twin for the dtypes.
    """
    n, m = x.shape[0], y.shape[1]
    xd, yd = x._dense().reshape(n), y._dense().reshape(m)

    def stored(a, size):  # which positions of a 2-D vector store an entry (padding excluded)
        data, idx = to_coo(a)._host_buffers()
        mask = np.zeros(size, bool)
        valid = valid_rows(idx, a.shape)
        mask[idx[valid, 0 if a.shape[1] == 1 else 1]] = True
        return mask

    sx, sy = stored(x, n), stored(y, m)
    cols_y = np.flatnonzero(sy)
    full, part = np.flatnonzero(sx), np.flatnonzero(~sx)
    check_entries(public_name(fn),
                  full.size * m + part.size * cols_y.size, np.result_type(x.dtype, y.dtype), index_dtype_for((n, m)), 2,
                  what=f"the outer broadcast of a ({n}, 1) and a (1, {m}) operand: every column of each row the "
                  "first stores")
    counts = np.where(sx, m, cols_y.size)
    total = int(counts.sum())
    idt = index_dtype_for((n, m))
    if n * m <= 2 * total:
        # Most positions are stored: compute every position (NumPy's broadcast, one pass) and keep the stored
        # ones in row-major order by one compress (a bool per position, at most twice the result's entries).
        got = host_apply(fn, (xd[:, None], yd[None, :]), (x.fill_value, y.fill_value))
        if got is None:
            return NotImplemented
        # The column pattern of a row is every column or y's stored ones: one concatenate of n references to
        # the two patterns, written straight into the index buffer (a tile of n * m columns and a compress
        # took 1.8 s at n = m = 8,000; this 0.03 s). The values: a boolean index in row-major order (NumPy's
        # 1-D compress turns the mask into 8-byte positions first: 1.0 s against 0.11 s there).
        indices = aligned_empty((total, 2), idt)
        indices[:, 0] = np.repeat(np.arange(n, dtype=idt), counts)
        every, some = np.arange(m, dtype=idt), cols_y.astype(idt)
        np.concatenate([every if s else some for s in sx.tolist()] or [every[:0]], out=indices[:, 1])
        data = np.broadcast_to(got[0], (n, m))[sx[:, None] | sy[None, :]]
        return BCOOArray._from_buffers(data, indices, (n, m), n_batch=0, n_dense=0, fill_value=got[1],
                                       indices_sorted=True, unique_indices=True)
    got_full = host_apply(fn, (xd[full][:, None], yd[None, :]), (x.fill_value, y.fill_value))
    got_part = host_apply(fn, (xd[part][:, None], yd[cols_y][None, :]), (x.fill_value, y.fill_value))
    if got_full is None or got_part is None:
        return NotImplemented
    starts = np.zeros(n, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    data = np.empty(total, got_full[0].dtype)
    indices = np.empty((total, 2), idt)
    for rows, cols, values in ((full, np.arange(m), got_full[0]), (part, cols_y, got_part[0])):
        dest = (starts[rows][:, None] + np.arange(cols.size)).reshape(-1)
        data[dest] = values.reshape(-1)
        indices[dest, 0] = np.repeat(rows, cols.size)
        indices[dest, 1] = np.tile(cols, rows.size)
    return BCOOArray._from_buffers(data, indices, (n, m), n_batch=0, n_dense=0, fill_value=got_full[1],
                                   indices_sorted=True, unique_indices=True)


def _stores_everywhere(v: BCOOArray) -> bool:
    """Whether ``v`` (concrete, on the host) stores an entry at every position (``xp.asarray`` of a row of
    means): read as the dense operand it is, so that a result stored everywhere takes dense layout, as with a
    NumPy operand, rather than a union with a full pattern. Both engines decide alike."""
    if (not v.unique_indices or v.n_batch or v.size == 0
            or v.nse != v.size // max(1, prod(v.shape[v.ndim - v.n_dense:]))):
        return False
    buffers = v._host_buffers() if v._concrete_indices() else None
    return buffers is not None and not has_padding(buffers[1], v.shape[:v.ndim - v.n_dense])


def _sparse_sparse_host(fn, x: BCOOArray, y: BCOOArray, out_shape):
    """Host twin of ``_sparse_sparse``: the union of the broadcast patterns (NumPy plans, NumPy values)."""
    if x.ndim == 2 and y.ndim == 2 and x.shape[1] == 1 and y.shape[0] == 1 and x.shape[0] > 1 and y.shape[1] > 1:
        return _outer_host(fn, x, y)
    if y.ndim == 2 and x.ndim == 2 and y.shape[1] == 1 and x.shape[0] == 1 and y.shape[0] > 1 and x.shape[1] > 1:
        return _outer_host(_swapped(fn), y, x)  # (n, 1) and (1, m) again: the result is (n, m)
    got, operands = _union_operands(
        fn, x, y, out_shape,
        lambda f, a, b: _sparse_dense_host(f, a, b._dense(), out_shape, or_none=not _stores_everywhere(b)))
    if got is not None:
        return got
    x, y, n_batch, n_dense = operands
    shape = tuple(out_shape)
    hx, hy = x._host_buffers(), y._host_buffers()
    if n_batch or hx is None or hy is None:
        return NotImplemented
    (dx, ix), (dy, iy) = hx, hy
    if n_dense == 0 and len(shape) == 2:
        fused = _union_fused_host(fn, x, y, dx, ix, dy, iy, shape)
        if fused is not None:
            return fused
    scatter = union_scatter_2d_host(ix, iy, shape) if n_dense == 0 and len(shape) == 2 else None
    if scatter is not None:  # 2-D canonical operands: the merge plan cached on the pair, applied by scatters
        out_idx, side_x, side_y = scatter
        vx = scatter_or_fill_np(dx, side_x, out_idx.shape[0], x.fill_value)
        vy = scatter_or_fill_np(dy, side_y, out_idx.shape[0], y.fill_value)
    else:
        plan = union_np(ix, iy.astype(ix.dtype, copy=False), sparse_sizes(shape, 0, n_dense), canonical=True)
        if plan is None:
            return NotImplemented
        out_idx, pos_x, pos_y = plan
        vx = take_or_fill_np(dx, pos_x, x.fill_value)
        vy = take_or_fill_np(dy, pos_y, y.fill_value)
    got = host_apply(fn, (vx, vy), (x.fill_value, y.fill_value))
    if got is None:
        return NotImplemented
    return BCOOArray._from_buffers(got[0], out_idx, shape, n_batch=0, n_dense=n_dense, fill_value=got[1],
                                   indices_sorted=True, unique_indices=True)


#: The NumPy functions whose union the native merge applies in the same pass.
_FUSED_UNION_OPS = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply"}


def _union_fused_host(fn, x: BCOOArray, y: BCOOArray, dx, ix, dy, iy, shape, *, plan_keys=None,
                      plan: str = "union-2d-scatter"):
    """``fn(x, y)`` of canonical 2-D operands by the native merge that applies ``fn`` as it goes (first
    call on the pair: no plan, only the result's memory), or None. ``dx``, ``ix``, ``dy``, ``iy`` are
    NumPy views; ``plan_keys`` the index buffers the engine's plan is cached on (default ``(ix, iy)``)."""
    op = _FUSED_UNION_OPS.get(getattr(fn, "numpy_fn", None))
    if (op is None or dx.dtype != dy.dtype or iy.dtype != ix.dtype or dx.ndim != 1
            or result_dtype(fn, (np.dtype(dx.dtype), np.dtype(dy.dtype))) != dx.dtype
            or not union_fused_first(ix, iy, shape, plan_keys, plan)):
        return None
    nx, ny = valid_prefix(ix, shape), valid_prefix(iy, shape)
    if nx is None or ny is None:
        return None
    got = host_coo_union_apply(op, dx, ix, nx, dy, iy, ny, x.fill_value, y.fill_value)
    fill = host_apply(fn, (np.zeros(0, dx.dtype), np.zeros(0, dy.dtype)), (x.fill_value, y.fill_value))
    if got is None or fill is None:
        return None
    return BCOOArray._from_buffers(got[0], got[1], shape, n_batch=0, n_dense=0, fill_value=fill[1],
                                   indices_sorted=True, unique_indices=True)


@binary.xla
def _binary_xla(fn: Callable, x, y, *, annihilator=None) -> BCOOArray:
    # A dense-layout operand is a dense array: the sparse-dense rule keeps the result sparse
    # where it can, and no entry-by-entry union with a full pattern is built.
    x = dense_values(x)
    y = dense_values(y)
    xs = isinstance(x, BCOOArray) and x.ndim > 0
    ys = isinstance(y, BCOOArray) and y.ndim > 0
    if not xs and not ys:
        # Dense (or 0-d) operands: the result's stored block in one compiled program.
        return dense_layout_block(_dense_block(fn)(_dense_operand(x), _dense_operand(y)))
    out_shape = broadcast_shape(tuple(x.shape), tuple(y.shape))
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
    np_fn = getattr(fn, "numpy_fn", None)
    if np_fn is None:
        return swapped
    return Twin(swapped, lambda a, b: np_fn(b, a), complex_ok=fn.complex_ok)


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
            constant, g0, signs = _constant_probe(fn)(np.asarray(fa), d)  # one compiled program
        if bool(constant):
            keep_sparse = True
            fill = _common_fill(g0, bool(signs))
    elif is_concrete(d):
        with jax.ensure_compile_time_eval():
            g = fn(jnp.asarray(fa), d)
            g0 = replicated_on_mesh(lambda v: v.reshape(-1)[0], g) if g.size else None
            constant = g0 is None or bool(jnp.all(_one_value(g, g0)))
            signs = g0 is not None and bool(jnp.all(_same_signs(g, g0, jnp)))
        if constant:
            keep_sparse = True
            fill = _common_fill(g0, signs) if g0 is not None else eval_fill(fn, fa, np.zeros((), d.dtype))
    elif annihilator is not None and same_value_np(fa, np.asarray(annihilator, a.dtype)):
        keep_sparse = True
        fill = eval_fill(fn, fa, np.zeros((), d.dtype))
    if not keep_sparse:
        if or_none:
            return None
        _check_dense_result(fn, a, d, out_shape)
        return dense_layout(fn(broadcast(a, out_shape).todense(), jnp.broadcast_to(d, out_shape)))
    src = broadcast(a, out_shape)._canonical()
    vals = gather(d, src.indices, src.shape, src.n_batch, src.n_dense)  # broadcasts d to src.shape
    return src._replace(data=_stored_apply(fn)(src.data, vals), fill_value=fill)


# The sparse-dense rule compares values, not bits: ``0 * d`` is one value (zero) over a ``d`` of mixed
# signs, so ``A * v`` keeps ``A``'s pattern as in scipy.sparse and pydata-sparse (whose ``equivalent``
# compares with ``==``); the unstored entries are then +0 (NumPy would give -0.0 where ``d < 0``), or -0
# where every one of them is -0 (``d`` all negative), as in NumPy. NaN matches NaN.

def _one_value(g, g0):
    """Elementwise: ``g`` holds the value ``g0`` (``==``, or both NaN), traceable. Floats compare by their
    bits (equal, or both zeros): XLA on a CPU compares subnormals as zeros (``nextafter(0, +-1)``, +-1.4e-45
    in float32, would be one value), where ``==`` in NumPy and IEEE 754 tells them apart."""
    if jnp.issubdtype(g.dtype, jnp.complexfloating):
        same = same_float(g.real, g0.real) & same_float(g.imag, g0.imag)
        return same | (jnp.isnan(g) & jnp.isnan(g0))
    if jnp.issubdtype(g.dtype, jnp.inexact):
        return same_float(g, g0) | (jnp.isnan(g) & jnp.isnan(g0))
    return g == g0


def _one_value_np(g: np.ndarray, g0) -> np.ndarray:
    """NumPy twin of ``_one_value``."""
    if g.dtype.kind in "fc":
        return (g == g0) | (np.isnan(g) & np.isnan(g0))
    return g == g0


def _same_signs(g, g0, xnp):
    """Elementwise: ``g`` has ``g0``'s sign bits (of both parts where complex; True for other dtypes), with
    ``xnp`` NumPy or ``jax.numpy``: what tells an all -0 ``g`` from a ``g`` of zeros of both signs."""
    kind = np.dtype(g.dtype).kind
    if kind == "c":
        return ((xnp.signbit(g.real) == xnp.signbit(g0.real)) & (xnp.signbit(g.imag) == xnp.signbit(g0.imag)))
    if kind == "f":
        return xnp.signbit(g) == xnp.signbit(g0)
    return xnp.ones(g.shape, bool)


def _common_fill(g0, same_signs: bool):
    """The fill of a result whose unstored entries all hold ``g0``'s value (``==``): ``g0`` where they
    all have its sign bits too (-0.0 where ``fn(fill, d)`` is -0 everywhere), else ``g0`` with a zero's
    sign bit cleared (+0: zeros of both signs); non-zero values unchanged."""
    v = np.asarray(g0)
    if v.dtype.kind in "fc" and v == 0 and not same_signs:
        return np.zeros((), v.dtype)[()]
    return v[()]


@functools.lru_cache(maxsize=None)
def _constant_probe(fn: Callable):
    """``fn(fill, d)`` for every dense entry ``d``: whether it is one value, that value, and whether they all
    have its sign bits (one program)."""
    def run(fill, d):
        g = fn(fill, d).reshape(-1)
        return jnp.all(_one_value(g, g[0])), g[0], jnp.all(_same_signs(g, g[0], jnp))

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
            and v._concrete())


def _union_operands(fn, x: BCOOArray, y: BCOOArray, out_shape, via_dense):
    """The steps both engines take before a union: ``(result, None)`` or ``(None, (x, y, n_batch, n_dense))``.

    A broadcast operand (``A / s`` with ``s`` a row of column scales): when ``fn(fill, s)`` is one value
    wherever the other stores nothing, the result keeps the other's pattern, as scipy's would
    (``via_dense(fn, sparse, small)``, the engine's sparse-dense rule, or None when it does not hold).
    Otherwise both operands broadcast to ``out_shape``, take one layout and their canonical form.
    """
    if _small_broadcast(y, out_shape) and not _small_broadcast(x, out_shape):
        got = via_dense(fn, x, y)
        if got is not None:
            return got, None
    elif _small_broadcast(x, out_shape) and not _small_broadcast(y, out_shape):
        got = via_dense(_swapped(fn), y, x)
        if got is not None:
            return got, None
    x = broadcast(x, out_shape)
    y = broadcast(y, out_shape)
    n_batch = min(x.n_batch, y.n_batch)
    n_dense = min(x.n_dense, y.n_dense)
    return None, (update_layout(x, n_batch, n_dense)._canonical(), update_layout(y, n_batch, n_dense)._canonical(),
                  n_batch, n_dense)


def _sparse_sparse(fn, x: BCOOArray, y: BCOOArray, out_shape) -> BCOOArray:
    got, operands = _union_operands(
        fn, x, y, out_shape,
        lambda f, a, b: _sparse_dense(f, a, b.todense(), out_shape, None, or_none=not _stores_everywhere(b)))
    if got is not None:
        return got
    x, y, n_batch, n_dense = operands
    shape = tuple(out_shape)
    if n_batch == 0 and n_dense == 0 and len(shape) == 2 and (x._concrete_indices() and y._concrete_indices()):
        hx, hy = x._host_buffers(), y._host_buffers()  # (views: no buffer crosses into JAX for this)
        if hx is not None and hy is not None:  # concrete CPU buffers: a first call on a pair merges natively
            fused = _union_fused_host(fn, x, y, *hx, *hy, shape, plan_keys=(x._indices, y._indices),
                                      plan="union-2d")
            if fused is not None:
                return fused
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


