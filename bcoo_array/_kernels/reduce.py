"""Reductions over any set of axes of an all-sparse-or-dense (n_batch = 0),
duplicate-free array, counting the unstored entries through the fill value.

For each output position the stored values of its slice are reduced by a
segment reduction, then combined with the fill value raised to the number of
unstored entries of the slice (``fill * missing`` for a sum, ``fill **
missing`` for a product, ``fill`` itself for max/min when anything is
missing). The output keeps the kept sparse dimensions sparse.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._engine import Operation, host_view
from .._fill import zero_fill
from .._shapes import is_concrete, prod
from .coalesce import segment_reduce_np
from .cache import PLANS
from .csr import axis_plan_host, csr_arrays, sum_axis
from .plan import accurate_segment_sum, group, group_numpy, segment_prod, segment_reduce

_DENSE_REDUCE = {"sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min}


def repeat_reduce(value, n, op: str):
    """``op`` applied to ``n`` copies of ``value`` (``n`` may be an array; ``n == 0`` gives the identity)."""
    if op == "sum":
        if value.dtype == jnp.bool_:
            return value & (n > 0)
        # where, not a bare product: n == 0 copies of NaN or inf sum to 0, not NaN
        return jnp.where(jnp.asarray(n) > 0, value * jnp.asarray(n).astype(value.dtype), np.zeros((), value.dtype))
    if op == "prod":
        if value.dtype == jnp.bool_:
            return value | (n == 0)
        return _int_pow(value, n) if jnp.issubdtype(value.dtype, jnp.integer) else \
            jnp.where(n == 0, np.ones((), value.dtype), value ** jnp.asarray(n).astype(value.dtype))
    return value


def _int_pow(value, n):
    """value ** n for integer value, exact with wraparound, by repeated squaring."""
    n = jnp.asarray(n)
    result = jnp.ones(jnp.broadcast_shapes(jnp.shape(value), n.shape), value.dtype)
    base = jnp.broadcast_to(value, result.shape)
    e = jnp.broadcast_to(n, result.shape).astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)

    def body(_, state):
        r, b, e = state
        r = jnp.where(e % 2 == 1, r * b, r)
        return r, b * b, e // 2

    r, _, _ = jax.lax.fori_loop(0, 64, body, (result, base, e))
    return r


def combine(a, b, op: str):
    """Combine two partial reductions."""
    if op == "sum":
        return (a | b) if a.dtype == jnp.bool_ else a + b
    if op == "prod":
        return (a & b) if a.dtype == jnp.bool_ else a * b
    return jnp.maximum(a, b) if op == "max" else jnp.minimum(a, b)


#: ``reduce_coo(data, indices, shape, n_dense, axes, op, fill)``: reduce a canonical, n_batch = 0 array over
#: ``axes`` (see ``_reduce_coo_xla``); the host engine runs ``_reduce_coo_host``, the same algorithm in NumPy.
reduce_coo = Operation("reduce_coo", operands=lambda data, indices, *args, **kw: (data, indices),
                       # row sums of a matrix are one reduceat on the host at any size (scipy's way)
                       large=lambda data, indices, shape, n_dense, axes, op, fill: not (
                           op == "sum" and len(shape) == 2 and tuple(axes) == (1,) and n_dense == 0))

_NP_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_NP_UFUNC_BOOL = {"sum": np.logical_or, "prod": np.logical_and, "max": np.logical_or, "min": np.logical_and}


def _axis_groups(ndim: int, n_dense: int, axes):
    """Reduced and kept axes, sparse and dense: ``(sp_red, de_red, sp_keep, de_keep)``."""
    n_sparse = ndim - n_dense
    sp_red = tuple(a for a in axes if a < n_sparse)
    de_red = tuple(a for a in axes if a >= n_sparse)
    sp_keep = tuple(a for a in range(n_sparse) if a not in sp_red)
    de_keep = [a for a in range(n_sparse, ndim) if a not in de_red]
    return sp_red, de_red, sp_keep, de_keep


def repeat_reduce_np(value: np.ndarray, n, op: str) -> np.ndarray:
    """NumPy twin of ``repeat_reduce``: ``op`` over ``n`` copies of ``value`` (``n == 0``: the identity)."""
    value = np.asarray(value)
    n = np.asarray(n)
    with np.errstate(all="ignore"):
        if op == "sum":
            if value.dtype == np.bool_:
                return value & (n > 0)
            return np.where(n > 0, value * n.astype(value.dtype), np.zeros((), value.dtype))
        if op == "prod":
            if value.dtype == np.bool_:
                return value | (n == 0)
            if value.dtype.kind in "iu":
                # in uint64 (the low bits of a product do not depend on the higher ones): wraps as _int_pow,
                # and a count past the value dtype's range is not cast to a negative exponent
                return np.power(value.astype(np.uint64), n.astype(np.uint64)).astype(value.dtype)
            return np.where(n == 0, np.ones((), value.dtype), value ** n.astype(value.dtype))
    return np.broadcast_to(value, np.broadcast_shapes(value.shape, n.shape)) if n.ndim else value


def repeat_reduce_big(value: np.ndarray, n: int, op: str) -> np.ndarray:
    """``repeat_reduce_np`` for one count ``n`` past int64 (a Python int): an array of more than 2**63 positions.

    Exact where the dtype is: integers wrap modulo ``2**bits`` as NumPy's
    sums and products do (Python integers do the arithmetic), bool is
    exact; floating point rounds the count (a non-zero value summed that
    often overflows to infinity, a product tends to 0, 1 or infinity, with
    the sign of ``value ** n``).
    """
    value = np.asarray(value)
    if op in ("max", "min") or n == 0:
        return value if op in ("max", "min") else repeat_reduce_np(value, 0, op)
    kind = value.dtype.kind
    if kind == "b":
        return value.copy() if op == "sum" else value.copy()  # any (sum) / all (prod) of n >= 1 copies
    if kind in "iu":
        mod = 1 << (8 * value.dtype.itemsize)
        flat = [int(v) for v in value.reshape(-1)]
        out = [(v * n) % mod if op == "sum" else pow(v, n, mod) for v in flat]
        return np.array(out, dtype=np.uint64).astype(value.dtype).reshape(value.shape)
    with np.errstate(all="ignore"):
        if op == "sum":
            return (value * value.dtype.type(float(n))).astype(value.dtype)
        if kind == "c":
            return (value ** float(n)).astype(value.dtype)
        mag = np.abs(value) ** value.dtype.type(float(n))
        return np.where((value < 0) & bool(n % 2), -mag, mag).astype(value.dtype)


@reduce_coo.host
def _reduce_coo_host(data, indices, shape, n_dense: int, axes: tuple[int, ...], op: str, fill):
    vals, out_idx, out_shape, n_dense_out, out_fill = _reduce_coo_np(data, indices, shape, n_dense, axes, op, fill)
    if op in ("max", "min") and np.dtype(data.dtype).kind == "f" and (
            not np.all(vals) or not out_fill):  # (a zero result: its sign as XLA's, IEEE 754-2019's)
        vals, out_fill = _order_zeros(vals, out_fill, data, indices, shape, n_dense, axes, op, fill)
    return vals, out_idx, out_shape, n_dense_out, out_fill


def _order_zeros(vals, out_fill, data, indices, shape, n_dense: int, axes, op: str, fill):
    """The zeros of a host ``max``/``min`` (``vals`` per output position, ``out_fill``) with the sign that
    IEEE 754-2019 and XLA give them (``-0 < +0``: a minimum is -0 where any zero it reduces is -0, a
    maximum +0 where any is +0), where NumPy's reductions return either zero: a second reduction, of
    whether each entry (and the fill) is such a zero, over the same positions (logical or)."""
    negative = op == "min"
    data, f = host_view(data), np.asarray(fill, data.dtype)
    flags = (data == 0) & (np.signbit(data) == negative)
    flag_fill = bool(f == 0 and np.signbit(f) == negative)
    got, _, _, _, got_fill = _reduce_coo_np(flags, indices, shape, n_dense, axes, "max", flag_fill)
    zero, other = (np.asarray(-0.0, vals.dtype), np.asarray(0.0, vals.dtype))[::1 if negative else -1]
    vals = np.where(vals == 0, np.where(got, zero, other), vals).astype(vals.dtype)
    if out_fill == 0:
        out_fill = (zero if got_fill else other)[()]
    return vals, out_fill


def _reduce_coo_np(data, indices, shape, n_dense: int, axes: tuple[int, ...], op: str, fill):
    """``_reduce_coo_host`` before its zeros are ordered: NumPy's ``maximum``/``minimum`` reductions."""
    buffer = indices  # plans are cached on the buffer object itself (a view is new at every call)
    data, indices = host_view(data), host_view(indices)
    shape = tuple(shape)
    if (op == "sum" and len(shape) == 2 and n_dense == 0 and len(axes) == 1 and shape[axes[0]] > 0
            and data.dtype.kind in "fc" and zero_fill(np.asarray(fill, data.dtype))):
        # Row or column sums of a zero-filled matrix. Over the CSR structure (one native pass, cached and
        # shared with the products): row sums are one reduceat over the non-empty rows' starts (scipy's own
        # way), column sums one bincount over the contiguous columns. A new matrix pays no grouping plan
        # (1.4 million entries: 9 ms for the plan, 1.3 ms for the structure).
        got = _axis_sum_csr(buffer, data, indices.dtype, shape, axes[0])
        if got is not None:
            return got
        seg, out_idx, n_out, is_sorted = axis_plan_host(buffer, shape, axes[0])
        if is_sorted and n_out and data.dtype.kind == "f":
            # Row sums of a row-sorted matrix (scipy's own way): one reduceat over the row starts.
            starts, n_valid = PLANS.get((buffer,), ("axis-starts", tuple(shape), axes[0]),
                                        lambda: _segment_starts(seg, n_out))
            vals = np.add.reduceat(data[:n_valid], starts) if n_valid else np.zeros(n_out, data.dtype)
            return vals + data.dtype.type(0.0), out_idx, (shape[1 - axes[0]],), 0, np.zeros((), data.dtype)[()]
        if data.dtype.kind == "c":
            vals = (np.bincount(seg, data.real, n_out + 1)[:n_out]
                    + 1j * np.bincount(seg, data.imag, n_out + 1)[:n_out]).astype(data.dtype)
        else:
            vals = np.bincount(seg, data, n_out + 1)[:n_out].astype(data.dtype)
        return vals, out_idx, (shape[1 - axes[0]],), 0, np.zeros((), data.dtype)[()]
    n_sparse = len(shape) - n_dense
    sp_red, de_red, sp_keep, de_keep = _axis_groups(len(shape), n_dense, axes)
    is_bool = data.dtype == np.bool_
    ufunc = (_NP_UFUNC_BOOL if is_bool else _NP_UFUNC)[op]
    kw = {} if is_bool or op in ("max", "min") else {"dtype": data.dtype}
    if de_red:
        data = ufunc.reduce(data, axis=tuple(a - n_sparse + 1 for a in de_red), **kw)
    u = repeat_reduce_np(np.asarray(fill, data.dtype), prod(shape[a] for a in de_red), op)
    n_rs = prod(shape[a] for a in sp_red)
    sizes = shape[:n_sparse]
    nse = indices.shape[0]
    valid = np.ones(nse, bool)
    for j in range(n_sparse):
        valid &= indices[:, j] < sizes[j]
    if sp_keep:
        kept = tuple(sizes[a] for a in sp_keep)
        proj = np.where(valid[:, None], indices[:, list(sp_keep)], np.asarray(kept, indices.dtype))
        plan = group_numpy(proj, kept)
        order, segment, out_idx, n_out = plan.order, plan.segment, plan.out_indices, plan.n_out
        out_idx = out_idx.astype(indices.dtype, copy=False)
    else:
        n_out = 1 if nse else 0
        order = np.argsort(~valid, kind="stable")
        segment = np.where(valid[order], 0, n_out)
        out_idx = np.zeros((n_out, 0), indices.dtype)
    with np.errstate(all="ignore"):
        vals = segment_reduce_np(data[order], segment, n_out, op)
        count = np.bincount(segment[segment < n_out], minlength=n_out)[:n_out] if n_out else np.zeros(0, np.int64)
        ub = np.broadcast_to(u, vals.shape)
        if n_rs >= 2**62:  # more positions than int64 counts: the unstored ones are counted in Python integers
            if op in ("max", "min"):
                vals = ufunc(vals, ub)  # every output position has unstored ones
            elif n_out:
                vals = ufunc(vals, np.stack([repeat_reduce_big(ub[i], n_rs - int(count[i]), op)
                                             for i in range(n_out)]))
            out_fill = repeat_reduce_big(u, n_rs, op)
        else:
            missing = (n_rs - count).reshape((n_out,) + (1,) * (vals.ndim - 1))
            if op in ("max", "min"):
                vals = np.where(missing > 0, ufunc(vals, ub), vals)
            else:
                vals = ufunc(vals, repeat_reduce_np(ub, missing, op))
            out_fill = repeat_reduce_np(u, n_rs, op) if n_rs else _identity(op, data.dtype, u)
        vals = np.ascontiguousarray(vals, dtype=data.dtype)
    out_shape = tuple(shape[a] for a in sp_keep) + tuple(shape[a] for a in de_keep)
    return vals, out_idx, out_shape, len(de_keep), np.asarray(out_fill, data.dtype)[()]


def _axis_sum_csr(buffer, data: np.ndarray, index_dtype, shape: tuple, axis: int):
    """``sum(axis)`` of a zero-filled, real, row-sorted matrix over its CSR structure, in the form of
    ``_reduce_coo_host``; None where the structure does not apply (unsorted rows, a huge sparse dimension).

    The same arithmetic as the grouping plan's paths: a sequential reduceat per row (as scipy's row sums),
    a bincount (float64 accumulation, cast back) per column.
    """
    if data.dtype.kind != "f":
        return None
    st = csr_arrays(buffer, shape)
    if st is None:
        return None
    m, n = shape
    nv = st.n_valid
    if axis == 1:
        rows = PLANS.get((buffer,), ("nonempty-rows", m, n),
                         lambda: np.flatnonzero(np.diff(st.indptr)).astype(index_dtype)[:, None])
        vals = (np.add.reduceat(data[:nv], st.indptr[rows[:, 0]]) if rows.shape[0]
                else np.zeros(0, data.dtype))
        return vals + data.dtype.type(0.0), rows, (m,), 0, np.zeros((), data.dtype)[()]
    cols = PLANS.get((buffer,), ("nonempty-cols", m, n),
                     lambda: np.flatnonzero(np.bincount(st.cols, minlength=n)).astype(index_dtype)[:, None])
    vals = np.bincount(st.cols, data[:nv], n)[cols[:, 0]].astype(data.dtype)
    return vals, cols, (n,), 0, np.zeros((), data.dtype)[()]


def _segment_starts(seg: np.ndarray, n_out: int):
    """Start of each segment of non-decreasing ``seg`` (padding, ``n_out``, last) and the count of valid entries."""
    n_valid = int(np.searchsorted(seg, n_out))
    head = seg[:n_valid]
    starts = np.flatnonzero(np.concatenate(([True], head[1:] != head[:-1]))) if n_valid else np.zeros(0, np.intp)
    return starts, n_valid


@reduce_coo.xla
def _reduce_coo_xla(data, indices, shape, n_dense: int, axes: tuple[int, ...], op: str, fill):
    """Reduce a canonical, n_batch = 0 array over ``axes``.

    Parameters
    ----------
    data : ``(nse, *dense)``; indices : ``(nse, n_sparse)``
        Duplicate-free buffers (padding allowed).
    shape : tuple
        The array's shape.
    axes : tuple of int
        Sorted axes to reduce.
    op : {"sum", "prod", "max", "min"}
        The reduction (bool sum is logical or, bool prod logical and).
    fill : scalar
        The fill value.

    Returns
    -------
    data, indices, out_shape, out_n_dense, out_fill
        The reduced array in the same form (kept sparse axes first, then kept
        dense axes).
    """
    if (op == "sum" and len(shape) == 2 and n_dense == 0 and len(axes) == 1 and shape[axes[0]] > 0
            and data.dtype != jnp.bool_ and is_concrete(indices)
            and zero_fill(np.asarray(fill, data.dtype))):
        # Fast path: one segment sum over a plan cached on the index buffer (see .csr).
        vals, out_idx = sum_axis(data, indices, tuple(shape), axes[0])
        return vals, out_idx, (shape[1 - axes[0]],), 0, np.zeros((), data.dtype)[()]
    n_sparse = len(shape) - n_dense
    sp_red, de_red, sp_keep, de_keep = _axis_groups(len(shape), n_dense, axes)
    n_d = prod(shape[a] for a in de_red)
    n_rs = prod(shape[a] for a in sp_red)
    u, out_fill = reduction_fills(fill, data.dtype, n_d, n_rs, op)
    sizes = tuple(shape[:n_sparse])
    kept_sizes = tuple(shape[a] for a in sp_keep)
    # Two compiled stages around the grouping plan (NumPy when the indices are concrete),
    # so that an eager call compiles two programs, not one per primitive.
    data, proj, valid = reduce_prepare(data, indices, sizes, n_sparse, de_red, sp_keep, op)
    if sp_keep:
        plan = group(proj, kept_sizes)
        order, segment, out_idx, n_out = plan.order, plan.segment, plan.out_indices, plan.n_out
    else:
        n_out = 1 if indices.shape[0] else 0
        order = segment = None
        out_idx = jax.device_put(np.zeros((n_out, 0), indices.dtype))  # a transfer, not a compiled program
    vals = _reduce_segments(data, valid, order, segment, u, n_out, n_rs, op)
    out_shape = tuple(shape[a] for a in sp_keep) + tuple(shape[a] for a in de_keep)
    return vals, out_idx, out_shape, len(de_keep), out_fill


def reduction_fills(fill, dtype, n_d: int, n_rs: int, op: str):
    """``(u, out_fill)`` of a reduction: ``u`` the fill reduced over the ``n_d`` positions of the reduced dense
    dimensions, ``out_fill`` the result's fill value (``u`` over the ``n_rs`` positions of the reduced sparse
    dimensions; the identity where there are none). Concrete, also under ``jit`` (fill values are static)."""
    with jax.ensure_compile_time_eval():
        f = np.asarray(fill)
        u = _repeat_fill(f if f.dtype == dtype else jnp.asarray(f, dtype), n_d, op)
        if not n_rs:
            out_fill = _identity(op, dtype, u)
        elif n_rs >= 2**31:  # past the int32 counts of x64 off: Python integers
            out_fill = repeat_reduce_big(np.asarray(u), n_rs, op)
        else:
            out_fill = _repeat_fill(u, n_rs, op)
    return u, out_fill


#: ``repeat_reduce`` on a fill value as one compiled program (per dtype and op), not one per primitive.
_repeat_fill = jax.jit(repeat_reduce, static_argnames=("op",))


@partial(jax.jit, static_argnames=("sizes", "n_sparse", "de_red", "sp_keep", "op"))
def reduce_prepare(data, indices, sizes, n_sparse, de_red, sp_keep, op):
    """Reduce the dense axes ``de_red``; the kept sparse indices (padding -> sizes) and validity."""
    if de_red:
        red = _DENSE_REDUCE[op] if data.dtype != jnp.bool_ else (jnp.any if op in ("sum", "max") else jnp.all)
        # jnp.sum / jnp.prod widen small integers; the caller has already chosen the dtype.
        kw = {"dtype": data.dtype} if op in ("sum", "prod") and data.dtype != jnp.bool_ else {}
        data = red(data, axis=tuple(a - n_sparse + 1 for a in de_red), **kw)
    nse = indices.shape[0]
    if n_sparse:
        valid = jnp.all(indices < jnp.asarray(sizes, indices.dtype), axis=1)
    else:
        valid = jnp.ones(nse, bool)
    proj = indices[:, list(sp_keep)]
    if sp_keep:
        kept_sizes = tuple(sizes[a] for a in sp_keep)
        proj = jnp.where(valid[:, None], proj, jnp.asarray(kept_sizes, indices.dtype))
    return data, proj, valid


@partial(jax.jit, static_argnames=("n_out", "n_rs", "op"))
def _reduce_segments(data, valid, order, segment, u, n_out: int, n_rs: int, op: str):
    """Segment-reduce the stored values in plan order and combine each output with its unstored fills."""
    nse = data.shape[0]
    if order is None and op == "sum" and jnp.issubdtype(data.dtype, jnp.inexact):
        # One output position: XLA's reduction sums as a tree (pairwise, as NumPy), where a segment sum
        # (a scatter-add) is sequential and loses about log10(nse) digits in float32.
        mask = valid.reshape(valid.shape + (1,) * (data.ndim - 1))
        vals = jnp.sum(jnp.where(mask, data, jnp.zeros((), data.dtype)), axis=0, keepdims=True)[:n_out]
        count = jnp.sum(valid, dtype=jnp.int32, keepdims=True)[:n_out]
        return with_unstored(vals, count, u, n_rs, op)
    if order is None:
        # One output position; drop padding by sending it past the single segment.
        order = jnp.arange(nse)
        segment = jnp.where(valid, 0, n_out).astype(jnp.int32)
    if op in ("max", "min") or data.dtype == jnp.bool_:
        seg_op = {"sum": "max", "prod": "min"}.get(op, op) if data.dtype == jnp.bool_ else op
    else:
        seg_op = op
    if seg_op == "sum" and jnp.issubdtype(data.dtype, jnp.inexact):
        vals = accurate_segment_sum(data[order], segment, n_out)  # (a scatter-add's error grows with a slice)
    else:
        vals = segment_reduce(data[order], segment, n_out, seg_op)
    count = jax.ops.segment_sum(jnp.ones(nse, jnp.int32)[order] if nse else jnp.zeros(0, jnp.int32),
                                segment, num_segments=n_out, indices_are_sorted=True)
    return with_unstored(vals, count, u, n_rs, op)


def with_unstored(vals, count, u, n_rs: int, op: str):
    """Each output's reduced stored values ``vals`` combined with its unstored entries: ``n_rs - count`` copies
    of the (reduced) fill value ``u`` (for max / min: ``u`` once where any is unstored)."""
    count_b = count.reshape(count.shape + (1,) * (vals.ndim - 1))
    ub = jnp.broadcast_to(u, vals.shape)
    if op in ("max", "min"):
        some_missing = count_b < n_rs if n_rs <= np.iinfo(count.dtype).max else jnp.ones(count_b.shape, bool)
        return jnp.where(some_missing, combine(vals, ub, op), vals)
    return combine(vals, repeat_missing(ub, count_b, n_rs, op), op)


def scatter_reduce_applies(shape, n_dense: int, nse: int, axes, unique: bool) -> bool:
    """Whether ``reduce_scatter`` serves a traced reduction: duplicate-free entries, a result no larger than
    nse, and every slice non-empty."""
    sp_red, _, sp_keep, _ = _axis_groups(len(shape), n_dense, axes)
    return (unique and prod(shape[a] for a in sp_keep) <= max(nse, 1)
            and all(shape[a] > 0 for a in range(len(shape))))


def _scatter_identity(op: str, dtype):
    if op == "sum":
        return np.zeros((), dtype)
    if op == "prod":
        return np.ones((), dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        return np.asarray(-np.inf if op == "max" else np.inf, dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if op == "max" else info.max, dtype)


def reduce_scatter(data, indices, fill, shape, n_dense: int, axes, op: str):
    """``op`` (sum, prod, max, min) over ``axes`` of a duplicate-free array with traced indices: one scatter.

    No sort (the canonical path groups the entries by a sort first; ``jax.experimental.sparse``'s
    ``bcoo_reduce_sum`` keeps them and leaves duplicates in its result): every stored value is combined
    into its output position at once, starting from ``op``'s identity (+0.0 for a sum, NumPy's: its sum
    of ``-0.0`` values is ``+0.0``), then each position meets the fill value as often as its slice has
    unstored entries (a count by a second scatter, skipped for a sum with fill +0). The result is in
    dense layout, ``(1, *kept sparse sizes, *kept dense sizes)``, which ``scatter_reduce_applies``
    bounds by nse.
    """
    return _reduce_scatter(data, indices, np.asarray(fill, data.dtype), shape=tuple(shape), n_dense=n_dense,
                           axes=tuple(axes), op=op, skip_count=op == "sum" and zero_fill(np.asarray(fill)))


@partial(jax.jit, static_argnames=("shape", "n_dense", "axes", "op", "skip_count"))
def _reduce_scatter(data, indices, fill, shape, n_dense: int, axes, op: str, skip_count: bool):
    n_sparse = len(shape) - n_dense
    sp_red, de_red, sp_keep, de_keep = _axis_groups(len(shape), n_dense, axes)
    if de_red:
        data = _DENSE_REDUCE[op](data, axis=tuple(a - n_sparse + 1 for a in de_red),
                                 **({"dtype": data.dtype} if op in ("sum", "prod") else {}))
    sizes = shape[:n_sparse]
    kept = tuple(shape[a] for a in sp_keep)
    P = prod(kept)
    nse = indices.shape[0]
    valid = jnp.ones(nse, bool)
    for j in range(n_sparse):
        valid &= indices[:, j] < sizes[j]
    lin = jnp.zeros(nse, jnp.int32)
    for a in sp_keep:
        lin = lin * shape[a] + indices[:, a].astype(jnp.int32)
    seg = jnp.where(valid, lin, P)
    if P == 1 and op == "sum" and jnp.issubdtype(data.dtype, jnp.inexact):
        # One output position: a tree reduction (pairwise, as NumPy), not a sequential scatter-add.
        mask = valid.reshape(valid.shape + (1,) * (data.ndim - 1))
        vals = jnp.sum(jnp.where(mask, data, jnp.zeros((), data.dtype)), axis=0, keepdims=True)
    else:
        start = jnp.full((P + 1,) + data.shape[1:], _scatter_identity(op, data.dtype), data.dtype)
        at = start.at[seg]
        if op == "sum" and jnp.issubdtype(data.dtype, jnp.inexact):  # (+0.0 added: the identity's sign rule)
            vals = accurate_segment_sum(data, seg, P) + start[:P]
        elif op == "prod" and jnp.issubdtype(data.dtype, jnp.inexact):  # (a scatter-multiply has no gradient)
            vals = segment_prod(data, seg, P)
        else:
            vals = {"sum": at.add, "prod": at.multiply, "max": at.max, "min": at.min}[op](data)[:P]
    n_rs = prod(shape[a] for a in sp_red)
    u = repeat_reduce(fill, prod(shape[a] for a in de_red), op) if de_red else fill
    if skip_count:  # a sum with fill +0: the unstored entries add nothing
        return vals.reshape((1,) + kept + tuple(data.shape[1:]))
    count = jnp.zeros(P + 1, jnp.int32).at[seg].add(1)[:P]
    return with_unstored(vals, count, u, n_rs, op).reshape((1,) + kept + tuple(data.shape[1:]))


def repeat_missing(value, count, n_rs: int, op: str):
    """``repeat_reduce(value, n_rs - count, op)`` for a static ``n_rs`` past the range of ``count``'s dtype.

    An array with more positions than int32 (x64 off) or int64 indices count holds: ``n_rs - count`` is
    never formed as an integer array. Floating point takes the count as a float (rounded, as NumPy's
    sum of that many values); integers wrap modulo ``2**bits`` exactly: a sum multiplies by ``n_rs``
    modulo ``2**bits``, a product of an even value is 0 (the count is past ``bits``) and of an odd one
    uses the count modulo ``2**(bits - 2)``, the order of the odd residues' group (Knuth, TAOCP 2,
    4.5.4). ``count`` is at most the number of stored entries, below ``n_rs``.
    """
    if n_rs <= np.iinfo(count.dtype).max:
        return repeat_reduce(value, n_rs - count, op)
    dt = value.dtype
    if dt == jnp.bool_:
        return value  # any (sum) or all (prod) of at least one copy
    wide = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    if jnp.issubdtype(dt, jnp.inexact):
        real = jnp.finfo(dt).dtype
        n = jnp.asarray(float(n_rs), real) - count.astype(real)
        if op == "sum":
            return value * n.astype(dt)
        if jnp.issubdtype(dt, jnp.complexfloating):
            return value ** n.astype(dt)
        odd = ((n_rs % 2) - count.astype(wide) % 2) % 2 == 1
        mag = jnp.abs(value) ** n
        return jnp.where((value < 0) & odd, -mag, mag).astype(dt)
    bits = 8 * jnp.dtype(dt).itemsize
    if op == "sum":
        n = jnp.asarray(np.array(n_rs % 2**bits, np.uint64).astype(dt)) - count.astype(dt)  # modulo 2**bits
        return value * n
    m = 2 ** (bits - 2)
    e = (jnp.asarray(n_rs % m, wide) - count.astype(wide) % m) % m
    return jnp.where(value % 2 != 0, _int_pow(value, e), jnp.zeros((), dt))


@partial(jax.jit, static_argnames=("n_out", "n", "correction"))
def variance_segments(data, valid, order, segment, fill, n_out: int, n: int, correction):
    """Variance of each output slice (plan order, ``n`` positions per slice, ``fill`` at unstored ones).

    Two passes, as NumPy's ``var``: the mean of the stored values plus
    ``missing * fill``, then the squared deviations of the stored values
    plus ``missing * (fill - mean)**2``, less the square of the deviations'
    sum over ``n`` (the corrected two-pass algorithm of Chan, Golub and
    LeVeque, "Algorithms for computing the sample variance", The American
    Statistician 37(3), 1983: it cancels the rounding error of the mean,
    which float32 values far from zero would otherwise square into the
    result), divided by ``n - correction``. Slices count their stored
    entries in integers (a float32 count stops at 2**24).
    """
    nse = data.shape[0]
    if order is None:
        order = jnp.arange(nse)
        segment = jnp.where(valid, 0, n_out).astype(jnp.int32)
    dt = data.dtype
    d = data[order]
    count_dtype = jnp.int32 if nse < 2**31 else jnp.int64
    cnt = jax.ops.segment_sum(jnp.ones(nse, count_dtype), segment, num_segments=n_out, indices_are_sorted=True)
    s1 = accurate_segment_sum(d, segment, n_out)  # (a sequential sum's error would be squared below)
    n_f = jnp.asarray(n, dt)
    # unstored entries per slice (exact where n fits the count's integers; 0 * NaN-fill stays 0)
    if n <= np.iinfo(count_dtype).max:
        miss = (jnp.asarray(n, count_dtype) - cnt).astype(dt)
    else:
        miss = n_f - cnt.astype(dt)
    zero = jnp.zeros((), dt)
    m = (s1 + jnp.where(miss > 0, miss * fill, zero)) / n_f
    dev = d - m[jnp.clip(segment, 0, n_out - 1)] if n_out else d
    sums = accurate_segment_sum(jnp.stack([dev * dev, dev], axis=-1), segment, n_out)  # (one pass for both)
    s2 = sums[..., 0] + jnp.where(miss > 0, miss * (fill - m) ** 2, zero)
    c = sums[..., 1] + jnp.where(miss > 0, miss * (fill - m), zero)
    # (never below 0: c * c / n is at most s2 but for rounding; NaN stays NaN)
    return jnp.maximum(s2 - c * c / n_f, zero) / jnp.asarray(n - correction, dt)


def _identity(op: str, dtype, u):
    """Value of an empty reduction (used for the fill of a zero-size slice)."""
    if op == "sum":
        return np.zeros((), dtype)
    if op == "prod":
        return np.ones((), dtype)
    return u


def arg_extreme_np(rows, cols, vals, nrows: int, ncols: int, fill, op: str) -> np.ndarray:
    """NumPy twin of ``arg_extreme_rows``: column of the first maximum (``op="max"``) or minimum per row.

    ``rows``, ``cols``, ``vals``: canonical (sorted, unique) stored entries;
    unstored entries hold ``fill``. Ties go to the smallest column and NaN
    counts as the extreme, as in ``numpy.argmax`` / ``numpy.argmin``.
    Complex values compare lexicographically (real, then imaginary), as NumPy does.
    """
    rows = rows.astype(np.int64)
    cols = cols.astype(np.int64)
    counts = np.bincount(rows, minlength=nrows)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(rows.size) - starts[rows]
    gap_mask = cols != rank  # first position where the column is not its rank: a gap before it
    first_gap = counts.copy()
    if gap_mask.any():
        np.minimum.at(first_gap, rows[gap_mask], rank[gap_mask])
    has_gap = counts < ncols
    grow = np.nonzero(has_gap)[0]
    all_rows = np.concatenate([rows, grow])
    all_cols = np.concatenate([cols, first_gap[grow]])
    all_vals = np.concatenate([vals, np.full(grow.size, fill, dtype=vals.dtype)])
    # Rank the values (np.unique sorts complex lexicographically and NaN last).
    _, rank_v = np.unique(all_vals, return_inverse=True)
    rank_v = rank_v.reshape(-1).astype(np.int64)
    nan = np.isnan(all_vals) if all_vals.dtype.kind in "fc" else np.zeros(all_vals.size, bool)
    keys = [all_cols, -rank_v if op == "max" else rank_v, ~nan, all_rows]
    order = np.lexsort(keys)
    srows = all_rows[order]
    first = np.concatenate([[True], srows[1:] != srows[:-1]]) if srows.size else np.zeros(0, bool)
    out = np.zeros(nrows, np.int64)
    out[srows[first]] = all_cols[order][first]
    return out


#: ``arg_extreme_rows(values, rows, cols, n_rows, n_cols, fill, fill_is_nan, maximize)``: see
#: ``_arg_extreme_rows_xla``; the host engine runs ``arg_extreme_np`` (scipy's ``argmax`` method too).
arg_extreme_rows = Operation("arg_extreme_rows", operands=lambda values, rows, cols, *args: (values, rows, cols))


@arg_extreme_rows.host
def _arg_extreme_rows_host(values, rows, cols, n_rows: int, n_cols: int, fill, fill_is_nan: bool,
                           maximize: bool):
    values, rows, cols = host_view(values), host_view(rows), host_view(cols)
    valid = rows < n_rows
    if not valid.all():
        values, rows, cols = values[valid], rows[valid], cols[valid]
    return arg_extreme_np(rows, cols, values, n_rows, n_cols, fill, "max" if maximize else "min").astype(cols.dtype)


@arg_extreme_rows.xla
def _arg_extreme_rows_xla(values, rows, cols, n_rows: int, n_cols: int, fill, fill_is_nan: bool, maximize: bool):
    """Column of the first maximum (or minimum) of each row of a 2-D COO matrix, unstored entries = ``fill``.

    Parameters
    ----------
    values : array, shape ``(nse,)``
        Stored values of a real dtype (may be traced).
    rows, cols : integer arrays, shape ``(nse,)``
        Canonical coordinates (sorted by row then column, unique); padding
        rows (``row == n_rows``) come last and are ignored.
    n_rows, n_cols : int
        The matrix shape; ``n_cols >= 1``.
    fill : scalar
        The value of unstored entries.
    fill_is_nan : bool
    maximize : bool
        ``argmax`` (True) or ``argmin``.

    Returns
    -------
    array, shape ``(n_rows,)``, the dtype of ``cols``
        NumPy's semantics: NaN is the extreme, ties go to the smallest
        column. Memory is O(nse + n_rows), never ``n_rows * n_cols``.
    """
    valid = rows < n_rows
    seg = jnp.where(valid, rows, n_rows)
    big = jnp.asarray(n_cols, cols.dtype)
    masked = jnp.where(valid, values, jnp.asarray(fill, values.dtype))
    if maximize:
        best = jax.ops.segment_max(masked, seg, num_segments=n_rows + 1)[:n_rows]
    else:
        best = jax.ops.segment_min(masked, seg, num_segments=n_rows + 1)[:n_rows]
    best_of_entry = best[jnp.minimum(seg, n_rows - 1)] if n_rows else masked
    equal = masked == best_of_entry  # -0.0 ties with 0.0, as in NumPy
    if jnp.issubdtype(values.dtype, jnp.inexact):
        equal = equal | (jnp.isnan(masked) & jnp.isnan(best_of_entry))
    is_best = valid & equal
    best_col = jax.ops.segment_min(jnp.where(is_best, cols, big), seg, num_segments=n_rows + 1)[:n_rows]
    count = jax.ops.segment_sum(valid.astype(cols.dtype), seg, num_segments=n_rows + 1)[:n_rows]
    start = jnp.cumsum(count) - count
    rank = jnp.arange(cols.shape[0], dtype=cols.dtype) - start[jnp.minimum(seg, max(n_rows - 1, 0))] \
        if n_rows else jnp.zeros_like(cols)
    gap_here = valid & (cols != rank)
    first_gap = jax.ops.segment_min(jnp.where(gap_here, rank, big), seg, num_segments=n_rows + 1)[:n_rows]
    first_gap = jnp.minimum(first_gap, count)  # no mismatch: the gap follows the stored run
    has_gap = count < n_cols
    fill_v = jnp.asarray(fill, values.dtype)
    if fill_is_nan:
        fill_wins = ~jnp.isnan(best) if jnp.issubdtype(values.dtype, jnp.inexact) else jnp.ones_like(has_gap)
        tie = ~fill_wins
    else:
        best_nan = jnp.isnan(best) if jnp.issubdtype(values.dtype, jnp.inexact) else jnp.zeros_like(has_gap)
        fill_wins = ~best_nan & ((fill_v > best) if maximize else (fill_v < best))
        tie = ~best_nan & (fill_v == best)
    pick_gap = has_gap & ((count == 0) | fill_wins | (tie & (first_gap < best_col)))
    return jnp.where(pick_gap, first_gap, best_col)
