"""Operations on ShardedBCOOArray: each runs the ordinary BCOOArray code on
every block inside ``jax.shard_map``, with collectives where values cross
blocks.

* elementwise functions, ``astype``, ``permute_dims``: block by block, no
  communication; dense operands are split the same way or replicated;
* reductions over the partitioned dimension: each device reduces its block
  with the operation's identity as fill value and counts its stored
  entries, then ``psum`` / ``pmax`` / ``pmin`` (``all_gather`` for products)
  combine the partial values and counts, and the fill value enters once for
  the positions stored nowhere (as in ``bcoo_array._kernels.reduce``);
  other reductions are block by block;
* ``A @ x`` with ``A`` row-partitioned: each device multiplies its rows by
  the (replicated or all-gathered) right-hand side, giving a row-partitioned
  result; with ``A`` partitioned along the contracted dimension each device
  multiplies its columns by its slice of ``x`` and a ``psum`` adds the
  partial products (replicated result).

shard_map runs with every mesh axis manual, so it works on meshes of
``Auto`` and ``Explicit`` axis types alike.
"""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _linear_algebra_functions as la
from .. import _statistical_functions as st
from .._array_object import BCOOArray
from .._kernels.reduce import combine, repeat_reduce
from .._shapes import is_tracer, prod
from .._manipulation_functions import permute_dims, reshape
from .._operands import as_operand
from .._relayout import dense_layout, update_layout
from . import _partition
from ._array import ShardedBCOOArray, spec_entry

# -- running code on blocks -----------------------------------------------------------


def _block_index(mesh_axes):
    return jax.lax.axis_index(spec_entry(mesh_axes))


def _constrain(x, mesh, spec: P):
    """Put dense ``x`` on ``NamedSharding(mesh, spec)`` (device_put when concrete, a reshard when traced)."""
    sh = NamedSharding(mesh, spec)
    if not is_tracer(x):
        return jax.device_put(jnp.asarray(x), sh)
    explicit = all(str(t).endswith("Explicit") for t in getattr(mesh, "axis_types", ()))
    if explicit:
        return jax.sharding.reshard(x, sh)
    return jax.lax.with_sharding_constraint(x, sh)


_UNCACHEABLE = ("uncacheable",)
_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 256


class _Run:
    """Collects the operands of one shard_map call and rebuilds the local blocks inside it."""

    def __init__(self, mesh, mesh_axes):
        self.mesh = mesh
        self.mesh_axes = tuple(mesh_axes)
        self.entry = spec_entry(self.mesh_axes)
        self.args = []
        self.specs = []
        self.builders = []
        self.key_parts = []
        self.state = {}

    def sharded(self, A: ShardedBCOOArray):
        k = len(self.args)
        self.args += [A.data, A.indices]
        self.specs += [P(self.entry), P(self.entry)]
        self.builders.append(lambda vals: A._local(vals[k], vals[k + 1]))
        self.key_parts.append(("sharded", A.tree_flatten()[1]))

    def split(self, x, dim: int, n: int, b: int):
        """Dense ``x`` split along ``dim`` into blocks of ``b`` (padded with zeros)."""
        k = len(self.args)
        p = prod(self.mesh.shape[a] for a in self.mesh_axes)
        x = jnp.asarray(x)
        if p * b != n:
            pad = [(0, 0)] * x.ndim
            pad[dim] = (0, p * b - n)
            x = jnp.pad(x, pad)
        spec = P(*([None] * dim + [self.entry]))
        self.args.append(_constrain(x, self.mesh, spec))
        self.specs.append(spec)
        self.builders.append(lambda vals: vals[k])
        self.key_parts.append(("split", dim, n, b))

    def replicated(self, x):
        k = len(self.args)
        self.args.append(_constrain(x, self.mesh, P()))
        self.specs.append(P())
        self.builders.append(lambda vals: vals[k])
        self.key_parts.append(("replicated",))

    def replicated_sparse(self, a: BCOOArray):
        """An unsharded BCOOArray, replicated on every device (passed as shard_map arguments)."""
        k = len(self.args)
        self.args += [_constrain(a.data, self.mesh, P()), _constrain(a.indices, self.mesh, P())]
        self.specs += [P(), P()]
        self.builders.append(lambda vals: a._replace(data=vals[k], indices=vals[k + 1]))
        self.key_parts.append(("bcoo", a.tree_flatten()[1]))

    def static(self, x):
        self.builders.append(lambda vals: x)
        try:
            hash(x)
            self.key_parts.append(("static", type(x).__name__, x))
        except TypeError:  # e.g. a NumPy array: not cached
            self.key_parts.append(_UNCACHEABLE)

    def call(self, body, out_specs, key=None):
        """Run ``body(*operands)`` on every block; ``out_specs`` as for shard_map.

        With a ``key`` (a hashable description of ``body``), the compiled
        program is reused by later calls with the same key, operand metadata
        and buffer shapes, and ``state`` (filled by ``body`` while tracing)
        is restored from the first call.
        """
        full = None
        if key is not None and _UNCACHEABLE not in self.key_parts:
            full = (key, tuple(self.key_parts), tuple(str(sp) for sp in self.specs), str(out_specs),
                    tuple((tuple(a.shape), str(a.dtype)) for a in self.args), self.mesh, self.mesh_axes,
                    bool(jax.config.jax_enable_x64))
            hit = _CACHE.get(full)
            if hit is not None:
                _CACHE.move_to_end(full)
                f, state = hit
                out = f(*self.args)
                self.state = state
                return out
        builders = self.builders

        def inner(*vals):
            return body(*(b(vals) for b in builders))

        # check_vma=False: all_gather results are replicated although typed as varying.
        f = jax.jit(jax.shard_map(inner, mesh=self.mesh, in_specs=tuple(self.specs), out_specs=out_specs,
                                  check_vma=False))
        out = f(*self.args)
        if full is not None:
            _CACHE[full] = (f, self.state)
            if len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        return out


def _finish(run: _Run, body, out_shape, out_axis, key=None):
    """Run ``body`` (local operands -> local BCOOArray) and assemble the sharded result."""
    entry = run.entry
    state = run.state

    def wrapped(*ops):
        out = body(*ops)
        if not isinstance(out, BCOOArray):
            out = dense_layout(out)
        state["out"] = (tuple(out.shape), out.n_batch, out.n_dense, out.fill_value, out.indices_sorted,
                        out.unique_indices)
        return out.data[None], out.indices[None]

    data, indices = run.call(wrapped, (P(entry), P(entry)), key=key)
    shape, n_batch, n_dense, fill, srt, uniq = run.state["out"]
    res = ShardedBCOOArray._from_buffers(
        data, indices, out_shape, axis=out_axis, mesh=run.mesh, mesh_axes=run.mesh_axes, n_batch=n_batch,
        n_dense=n_dense, fill_value=fill, indices_sorted=srt, unique_indices=uniq)
    if res.block_shape != shape:
        raise AssertionError(f"block result shape {shape} differs from {res.block_shape}")
    return res


def map_blocks(fn, A: ShardedBCOOArray, out_shape=None, out_axis=None, key=None) -> ShardedBCOOArray:
    """Apply ``fn`` (BCOOArray -> BCOOArray of the block shape) to every block of ``A``.

    ``key``, a hashable description of ``fn``, lets later calls reuse the compiled program.
    """
    run = _Run(A.mesh, A.mesh_axes)
    run.sharded(A)
    return _finish(run, fn, A.shape if out_shape is None else out_shape, A.axis if out_axis is None else out_axis,
                   key=key)


def mask_virtual(local: BCOOArray, A_shape, axis: int, b: int, j) -> BCOOArray:
    """The block with its virtual positions (global index >= shape[axis]) made padding.

    The result has ``n_batch = 0`` and ``axis`` as a sparse dimension.
    """
    ndim = local.ndim
    want_dense = min(local.n_dense, ndim - axis - 1)
    loc = update_layout(local, 0, want_dense) if (local.n_batch, local.n_dense) != (0, want_dense) else local
    valid = jnp.clip(A_shape[axis] - j * b, 0, b).astype(loc.indices.dtype)
    idx = loc.indices
    sizes = jnp.asarray(loc.shape[:loc.n_sparse], idx.dtype)
    bad = idx[:, axis] >= valid
    idx = jnp.where(bad[:, None], sizes, idx)
    return loc._replace(indices=idx)


def same_mesh(arrays) -> None:
    """Raise ValueError unless every sharded array lives on the same mesh axes."""
    ref = arrays[0]
    for a in arrays[1:]:
        if a.mesh != ref.mesh or a.mesh_axes != ref.mesh_axes:
            raise ValueError(
                f"sharded arrays on different meshes (or mesh axes) cannot be combined: {ref.mesh_axes} on "
                f"{ref.mesh} and {a.mesh_axes} on {a.mesh}; re-shard one with A.to_device(NamedSharding(...))")


# -- elementwise ---------------------------------------------------------------------


def _is_array(x):
    return isinstance(x, (ShardedBCOOArray, BCOOArray, jax.Array, np.ndarray, jax.core.Tracer))


def elementwise(fn, args, kwargs):
    """Apply a namespace function elementwise (broadcasting) over sharded and other operands."""
    items = list(args) + list(kwargs.values())
    sharded = [a for a in items if isinstance(a, ShardedBCOOArray)]
    same_mesh(sharded)
    ref = sharded[0]
    arrays = [a for a in items if _is_array(a)]
    out_shape = tuple(jnp.broadcast_shapes(*(tuple(a.shape) for a in arrays)))
    out_ndim = len(out_shape)
    out_axis = ref.axis + out_ndim - ref.ndim
    n = out_shape[out_axis]
    b = _partition.block_size(n, ref.n_blocks)
    run = _Run(ref.mesh, ref.mesh_axes)
    for a in items:
        if isinstance(a, ShardedBCOOArray):
            ax = a.axis + out_ndim - a.ndim
            if ax != out_axis or a.shape[a.axis] != n:
                raise ValueError(
                    f"sharded operands are partitioned along different dimensions ({a.axis} of {a.shape} and "
                    f"{ref.axis} of {ref.shape}); re-shard one so both split the same dimension")
            run.sharded(a)
        elif _is_array(a):
            d_axis = out_axis - (out_ndim - a.ndim)
            if d_axis < 0 or a.shape[d_axis] == 1:
                if isinstance(a, np.ndarray):
                    run.static(a)
                elif isinstance(a, BCOOArray):
                    run.replicated_sparse(a)
                else:
                    run.replicated(a)
            else:
                dense = a.todense() if isinstance(a, BCOOArray) else a
                run.split(dense, d_axis, n, b)
        else:
            run.static(a)
    nargs = len(args)
    keys = list(kwargs)

    def body(*ops):
        return fn(*ops[:nargs], **dict(zip(keys, ops[nargs:])))

    return _finish(run, body, out_shape, out_axis, key=("elementwise", fn, nargs, tuple(keys)))


# -- reductions ----------------------------------------------------------------------


def _identity(op: str, dt: np.dtype):
    if op == "sum":
        return np.zeros((), dt)[()]
    if op == "prod":
        return np.ones((), dt)[()]
    if dt.kind == "b":
        return np.bool_(op == "min")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(info.min if op == "max" else info.max)
    return dt.type(-np.inf if op == "max" else np.inf)


def reduce(A: ShardedBCOOArray, op: str, axes: tuple, keepdims: bool):
    """Reduce ``A`` (dtype already final) over ``axes`` with ``op`` in {sum, prod, max, min}.

    Returns a ShardedBCOOArray when ``axes`` leaves the partitioned dimension,
    else a BCOOArray (dense layout) replicated over the mesh.
    """
    core = {"sum": st.sum, "prod": st.prod, "max": st.max, "min": st.min}[op]
    if A.axis not in axes:
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(A.shape)) if keepdims else \
            tuple(s for i, s in enumerate(A.shape) if i not in axes)
        out_axis = A.axis if keepdims else A.axis - sum(1 for a in axes if a < A.axis)
        return map_blocks(lambda blk: core(blk, axis=axes, keepdims=keepdims), A, out_shape, out_axis,
                          key=("reduce_blocks", op, axes, keepdims))
    dt = A.dtype
    ident = _identity(op, dt)
    fill = A.fill_value
    n_red = prod(A.shape[a] for a in axes)
    b = A.block
    entry = spec_entry(A.mesh_axes)
    run = _Run(A.mesh, A.mesh_axes)
    run.sharded(A)

    def body(local):
        j = _block_index(A.mesh_axes)
        loc = mask_virtual(local, A.shape, A.axis, b, j)._canonical()
        vals = core(loc._replace(fill_value=ident), axis=axes).todense()
        ones = loc._replace(data=jnp.ones(loc.data.shape, jnp.int32), fill_value=np.int32(0))
        cnt = st.sum(ones, axis=axes, dtype=np.dtype(np.int64) if jax.config.jax_enable_x64 else None).todense()
        cnt = jax.lax.psum(cnt, entry)
        if op == "sum":
            vals = jax.lax.psum(vals, entry)
        elif op == "prod":
            g = jax.lax.all_gather(vals, entry, tiled=False)
            vals = jnp.all(g, axis=0) if dt.kind == "b" else jnp.prod(g, axis=0).astype(dt)
        else:
            v = vals.astype(jnp.uint8) if dt.kind == "b" else vals
            v = jax.lax.pmax(v, entry) if op == "max" else jax.lax.pmin(v, entry)
            vals = v.astype(dt)
        missing = n_red - cnt
        fv = jnp.broadcast_to(jnp.asarray(fill, dt), vals.shape)
        if op in ("sum", "prod"):
            return combine(vals, repeat_reduce(fv, missing, op), op)
        return jnp.where(missing > 0, combine(vals, fv, op), vals)

    out = run.call(body, P(), key=("reduce", op, axes))
    res = dense_layout(out)
    if keepdims:
        res = reshape(res, tuple(1 if i in axes else s for i, s in enumerate(A.shape)))
    return res


# -- gathering -----------------------------------------------------------------------


def todense(A: ShardedBCOOArray) -> jax.Array:
    """Dense value of ``A``, replicated over the mesh (works under jit)."""
    run = _Run(A.mesh, A.mesh_axes)
    run.sharded(A)
    entry = run.entry

    def body(local):
        return jax.lax.all_gather(local.todense(), entry, axis=A.axis, tiled=True)

    full = run.call(body, P(), key=("todense",))
    n = A.shape[A.axis]
    if full.shape[A.axis] != n:
        full = jax.lax.slice_in_dim(full, 0, n, axis=A.axis)
    return full


# -- linear algebra ------------------------------------------------------------------


def _rhs_split_spec(x, entry):
    """Whether dense ``x`` already lies split along dim 0 over ``entry`` (then it stays so)."""
    try:
        sh = x.sharding if not is_tracer(x) else jax.typeof(x).sharding
    except Exception:
        return False
    spec = getattr(sh, "spec", None)
    return spec is not None and len(spec) > 0 and spec[0] == entry and all(s is None for s in spec[1:])


def matmul_mixed(x1, x2):
    """``bcoo_array.matmul`` with a sharded operand, under the mixed-type rule of the namespace.

    With a dense JAX operand the product is a ``jax.Array`` (laid out on the
    mesh as the sharded result's blocks were, or replicated); with a dense
    NumPy operand, eagerly, a NumPy array; with sparse operands only, a
    ShardedBCOOArray or BCOOArray, as ``matmul`` below gives.
    """
    out = matmul(x1, x2)
    kind = la._dense_kind(x1, x2)
    if kind is None:
        return out
    dense = out.todense() if isinstance(out, (ShardedBCOOArray, BCOOArray)) else out
    if kind == "numpy" and not is_tracer(dense):
        return np.array(dense)
    return dense


def matmul(x1, x2):
    """``x1 @ x2`` with exactly one ShardedBCOOArray operand (see the module notes)."""
    if isinstance(x1, ShardedBCOOArray) and isinstance(x2, ShardedBCOOArray):
        same_mesh([x1, x2])
        raise TypeError("matmul of two sharded arrays is not supported; gather one operand with unshard() "
                        "(it is then replicated) or densify it")
    if isinstance(x2, ShardedBCOOArray):
        # x @ A == (A^T @ x^T)^T
        x = as_operand(x1, "x1")
        if x.ndim == 1:
            return matmul(permute(x2, _swap_last(x2.ndim)), x)
        xt = _dense_swap(x)
        out = matmul(permute(x2, _swap_last(x2.ndim)), xt)
        if isinstance(out, ShardedBCOOArray):
            return permute(out, _swap_last(out.ndim))
        return la.matrix_transpose(out)
    A = x1
    x = as_operand(x2, "x2")
    if isinstance(x, BCOOArray):
        x = x.todense()
    if A.ndim < 2 or x.ndim < 1:
        raise ValueError(f"matmul(): shapes {A.shape} and {x.shape} do not multiply (sharded x1 needs ndim >= 2)")
    k_dim = A.ndim - 1
    if A.shape[-1] != x.shape[-2 if x.ndim > 1 else 0]:
        raise ValueError(f"matmul(): contracted dimensions differ: x1.shape={A.shape}, x2.shape={x.shape}")
    entry = spec_entry(A.mesh_axes)
    run = _Run(A.mesh, A.mesh_axes)
    run.sharded(A)
    if A.axis == k_dim:
        # Column partition: each block multiplies its slice of x; psum adds the partial products.
        b = A.block
        kx = 0 if x.ndim == 1 else x.ndim - 2
        run.split(x, kx, A.shape[-1], b)

        def body(local, xb):
            j = _block_index(A.mesh_axes)
            loc = mask_virtual(local, A.shape, A.axis, b, j)
            y = la.matmul_as_bcoo(loc, xb).todense()
            return jax.lax.psum(y, entry)

        return dense_layout(run.call(body, P(), key=("matmul_columns",)))
    m_dims = tuple(A.shape[:-1]) if x.ndim == 1 else \
        tuple(jnp.broadcast_shapes(A.shape[:-2], x.shape[:-2])) + (A.shape[-2], x.shape[-1])
    out_shape = tuple(m_dims)
    out_axis = A.axis if x.ndim == 1 else A.axis + len(out_shape) - A.ndim
    k = A.shape[-1]
    split = False
    if x.ndim > 2 and A.axis < A.ndim - 2:
        d_axis = out_axis - (len(out_shape) - x.ndim)
        if d_axis >= 0 and x.shape[d_axis] != 1:
            run.split(x, d_axis, out_shape[out_axis], _partition.block_size(out_shape[out_axis], A.n_blocks))
        else:
            run.replicated(x)
    else:
        split = (not isinstance(x, np.ndarray)) and x.ndim in (1, 2) and x.shape[0] % A.n_blocks == 0 \
            and _rhs_split_spec(x, entry)
        if split:
            run.split(x, 0, x.shape[0], x.shape[0] // A.n_blocks)
        else:
            run.replicated(x)

    def body(local, xb):
        if split:
            xb = jax.lax.all_gather(xb, entry, axis=0, tiled=True)[:k]
        return la.matmul_as_bcoo(local, xb)

    return _finish(run, body, out_shape, out_axis, key=("matmul_rows", split, k, x.ndim))


def _swap_last(ndim):
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _dense_swap(x):
    if isinstance(x, BCOOArray):
        return la.matrix_transpose(x)
    return jnp.swapaxes(jnp.asarray(x) if not isinstance(x, np.ndarray) else x, -1, -2)


def permute(A: ShardedBCOOArray, axes) -> ShardedBCOOArray:
    """``permute_dims`` block by block; the partitioned dimension moves with the permutation."""
    axes = tuple(int(a) % A.ndim for a in axes)
    if sorted(axes) != list(range(A.ndim)):
        raise ValueError(f"axes={axes} is not a permutation of {A.ndim} dimensions")
    out_shape = tuple(A.shape[a] for a in axes)
    return map_blocks(lambda blk: permute_dims(blk, axes), A, out_shape, axes.index(A.axis), key=("permute", axes))
