"""The ``panels`` layout's product: a Pallas TPU kernel with ``x`` resident in VMEM.

XLA's gathers on a TPU cost about 9 ns per index whatever their width
(``.costs.COSTS``), so every XLA formulation of an irregular product is
bound by its gathers. This kernel has none in HBM: the whole of ``x`` and of
the result stay in VMEM for the call, and each stored entry's element of
``x`` is picked *inside a vector register* by a lane gather.

Layout (built by ``.layouts.build_panels``): rows are cut into blocks of 128
(one per lane of a vector register) and columns into panels of 128. The
entries of one row block that fall in one column panel form a *group*; each
row's entries in the group take the sublane slots 0, 1, 2, ... of consecutive
``(8, 128)`` *tiles* (the group's ELL depth, rounded up to 8). A tile holds
the values and the local columns (0-127, or -1 for padding) of up to 1,024
entries, all in one row block and one column panel, row ``r`` of the block
on lane ``r``. Tiles carry their row block and panel in a small table read
from SMEM.

On scattered patterns most groups are shallow (one or two entries per row),
so uniform tiles are mostly padding. *Mixed* tiles pack the sublane rows of
all the groups of a row block one after the other, each sublane reading its
own panel (the table then holds 8 panels per tile): cage11 needs 1,635 mixed
tiles instead of 6,095, delaunay_n16 3,528 instead of 8,550. Their ``x`` is
assembled from 8 loads per tile; on a TPU v5e a solver's product took 0.073
instead of 0.155 ms on cage11, 0.118 instead of 0.279 on delaunay_n16. The
layout (``.layouts``) takes the cheaper kind for the matrix and for its
transpose.

``x`` is held in VMEM with each panel repeated on the 8 sublanes, so per tile
the kernel makes one aligned ``(8, 128)`` load of its panel, gathers each
slot's element with one in-register lane gather, multiplies, and adds the
``(8, 128)`` products into its row block's 8 partial sums (summed after the
call). The tile loop takes ``TILE_UNROLL`` tiles per iteration: independent
tiles overlap their loads and gathers, and when they share a row block (the
common case: tiles are ordered by row block) their products add up in
registers before one update of the resident sums. On a TPU v5e that made a
solver's product 2-4.6x faster than one tile per iteration with a sublane sum
per tile (cage11: 0.70 to 0.15 ms). Padding slots are masked, so an ``inf``
or NaN of ``x`` meets no stored zero. Several right-hand sides (SpMM, or
``vmap`` over ``x``) reuse each loaded tile.

The product is the primitive ``panels_matmat_p`` (``jax.extend.core``) with
its own JVP (it is linear in the values and in ``x``), transpose (``A.T @ y``
and the values' cotangent, in XLA from the tile table: a row gather of ``y``
per tile, as a tile's lanes are consecutive rows) and batching rule
(a mapped ``x`` becomes more right-hand sides). Off a TPU the same kernel
runs in Pallas interpret mode (how the tests check it on a CPU) and the XLA
formula ``panels_reference`` is the portable path.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import costs as _costs
from . import sell as _sell
from .host import unique_counts, unique_inverse

#: Lanes of a vector register (rows of a row block, columns of a panel) and its sublanes (slots per tile).
LANES = 128
SUBLANES = 8

#: Tiles one grid step processes at most (the block of the tile arrays the pipeline copies in); a layout
#: of fewer tiles takes steps of 64 or 128 (``pad_tiles``). A grid step costs about 0.35 us on a TPU.
TILES_PER_STEP = 256

#: Tiles one iteration of the kernel's tile loop processes (unrolled by hand; it divides every step's
#: tile count): independent tiles interleave their loads and lane gathers, and tiles of one row block add
#: up in registers before one update of the resident result. Timed on a TPU v5e (``benchmarks/
#: accelerator.py --layouts panels:U``): 8 is 2.7-4x faster than 1 in a solver's loop.
TILE_UNROLL = 8

#: ``TILE_UNROLL`` of the products of eager calls (``.matmul``'s accelerator hook), whose first call compiles
#: the kernel: on a TPU v5e a first eager ``A @ v`` (2000 x 2000, 20,000 entries) took 553, 680, 793 and
#: 1,174 ms unrolled 1, 2, 4 and 8 times (dense ``jax.numpy``: 334 ms), while a call of a prepared 4 or 8
#: times unrolled product took the same time (0.6 ms of dispatch dominate it).
EAGER_TILE_UNROLL = 4

#: Tiles (of the matrix or of its transpose, whichever has more) up to which an eager product unrolls its
#: tile loop once (``eager_tile_unroll``): its first call compiled 240 ms faster unrolled once than 4 times
#: (553 against 793 ms above), while its kernel, at most about 4x slower unrolled once (8 is 2.7-4x faster
#: than 1), costs about 40 ns a tile: 0.04 ms for 1,024 tiles, within the 0.6 ms of a call's dispatch.
EAGER_SMALL_TILES = 1024


def eager_tile_unroll(n_tiles: int) -> int:
    """The tile-loop unroll of an eager product (``.matmul``'s accelerator hook) whose layout has
    ``n_tiles`` tiles in its larger orientation: 1 up to ``EAGER_SMALL_TILES`` (the first call compiles
    fastest; dispatch dominates the calls), else ``EAGER_TILE_UNROLL``."""
    return 1 if n_tiles <= EAGER_SMALL_TILES else EAGER_TILE_UNROLL


#: VMEM the kernel may use on a 128 MiB chip (bytes; ``vmem_limit_bytes`` scales it to the chip in use):
#: ``x`` and the result stay resident, twice (the pipeline's buffers).
VMEM_LIMIT_BYTES = 96 << 20

#: VMEM of the pipeline's other buffers (bytes): a grid step's tile values and columns, twice (4 MiB),
#: and room for Mosaic's own.
PIPELINE_BYTES = 8 << 20

#: Largest ``x`` plus result (elements, per right-hand side times right-hand sides) the kernel keeps in
#: VMEM on a 128 MiB chip (``resident_max_elements``: on the chip in use), each held as ``(8, 128)``
#: slabs: a panel of ``x`` repeated on the 8 sublanes (one aligned load per tile) and 8 partial sums
#: per row block (summed after the kernel).
RESIDENT_MAX_ELEMENTS = 8 << 20

#: Right-hand sides one kernel call takes (its tile loop is unrolled over them); more run in groups.
RHS_PER_CALL = 8


def vmem_limit_bytes() -> int:
    """The kernel's VMEM limit on the chip in use: ``VMEM_LIMIT_BYTES``'s share of its VMEM
    (``.costs.vmem_share``; 96 MiB of a TPU v5e's 128, 48 of a TPU 7x's 64)."""
    return _costs.vmem_share(VMEM_LIMIT_BYTES)


def resident_max_elements() -> int:
    """Largest ``x`` plus result (32-bit elements) the kernel keeps in VMEM on the chip in use:
    ``RESIDENT_MAX_ELEMENTS``, or what ``vmem_limit_bytes`` holds twice beside ``PIPELINE_BYTES``
    where that is less (0 where nothing fits: the layout is then never chosen)."""
    return max(0, min(RESIDENT_MAX_ELEMENTS, (vmem_limit_bytes() - PIPELINE_BYTES) // (2 * 4)))


def fits(shape, n_rhs: int = 1) -> bool:
    """Whether ``x`` and ``A @ x`` of ``n_rhs`` columns stay resident in VMEM for a matrix of ``shape``
    (``resident_max_elements``)."""
    m, k = shape
    return (_blocks(m) + _blocks(k)) * SUBLANES * LANES * max(n_rhs, 1) <= resident_max_elements()


def _blocks(n: int) -> int:
    """Blocks of 128 (row blocks, column panels) that hold ``n`` rows or columns (at least one)."""
    return -(-max(int(n), 1) // LANES)


def _kernel(meta_ref, vals_ref, cols_ref, x_ref, o_ref, *, n_rhs: int, tiles: int, unroll: int, mixed: bool):
    """One grid step: ``tiles`` tiles, ``unroll`` at a time.

    ``x_ref`` (n_rhs, panels, 8, 128): each panel of ``x`` on all 8
    sublanes; ``o_ref`` (n_rhs, row blocks, 8, 128): per row block the sums
    of each sublane slot (their sum is the result, taken after the call).
    ``meta_ref`` holds the step's row blocks, then its panels (uniform
    tiles) or the panels of sublane 0, 1, ... 7 (``mixed`` tiles: a tile's
    ``x`` is assembled from 8 loads, one per sublane).
    """
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    zero = jnp.zeros((), o_ref.dtype)

    sublane = jax.lax.broadcasted_iota(jnp.int32, (SUBLANES, LANES), 0) if mixed else None

    def tile(t):
        b = meta_ref[0, 0, t]
        ps = [meta_ref[0, 0, t + np.int32((1 + s) * tiles)] for s in range(SUBLANES if mixed else 1)]
        c = cols_ref[t]
        ok = c >= 0
        ci = jnp.maximum(c, 0)
        v = vals_ref[t]
        prods = []
        for j in range(n_rhs):
            xp = x_ref[j, ps[0]]
            for s in range(1, len(ps)):  # a mixed tile: sublane s reads its own panel
                xp = jnp.where(sublane == s, x_ref[j, ps[s]], xp)
            g = jax.vmap(lambda a, i: a[i])(xp, ci)  # in-register lane gather (tpu.dynamic_gather)
            prods.append(jnp.where(ok, v * g, zero))  # padding slots masked: an inf of x meets no stored zero
        return b, prods

    def group(g, carry):
        items = [tile(g * np.int32(unroll) + np.int32(i)) for i in range(unroll)]
        b0 = items[0][0]
        if unroll == 1:
            for j in range(n_rhs):
                o_ref[j, b0] += items[0][1][j]
            return carry
        same = items[1][0] == b0
        for b, _ in items[2:]:
            same = jnp.logical_and(same, b == b0)

        @pl.when(same)  # the common case: one row block, summed in registers, one update
        def _():
            for j in range(n_rhs):
                parts = [prods[j] for _, prods in items]
                while len(parts) > 1:
                    parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i]
                             for i in range(0, len(parts), 2)]
                o_ref[j, b0] += parts[0]

        @pl.when(jnp.logical_not(same))  # a row block ends inside the group: tile by tile
        def _():
            for b, prods in items:
                for j in range(n_rhs):
                    o_ref[j, b] += prods[j]

        return carry

    # unrolled by hand over int32 indices (fori_loop's own unroll mixes i64 and i32 under x64 in Mosaic)
    jax.lax.fori_loop(jnp.int32(0), jnp.int32(tiles // unroll), group, 0)


def _interpret() -> bool:
    return jax.default_backend() != "tpu"


def panels_kernel(values, meta, cols, x, *, shape, interpret: bool | None = None, unroll: int | None = None):
    """``A @ x`` for ``x`` of shape ``(n_rhs, k)``: the Pallas kernel (interpret mode off a TPU).

    ``values`` (T*1024,) the flat value buffer, ``meta`` (2, T) int32 row
    block and panel of each tile (tiles of one row block consecutive), or
    (9, T) for mixed tiles (row block, then the panel of each sublane),
    ``cols`` (T, 8, 128) int32 local columns (-1 for padding); T from
    ``pad_tiles``. ``unroll``: tiles per iteration of the tile loop
    (None: ``TILE_UNROLL``; 1 where it does not divide a grid step's tiles).
    Returns ``(n_rhs, m)``.
    """
    m, k = shape
    n_rhs = x.shape[0]
    nrb, ncb = _blocks(m), _blocks(k)
    group = max(1, min(RHS_PER_CALL, resident_max_elements() // ((nrb + ncb) * SUBLANES * LANES)))
    if n_rhs > group:  # VMEM holds x and the result of a few right-hand sides at a time
        return jnp.concatenate([panels_kernel(values, meta, cols, x[i:i + group], shape=shape, interpret=interpret,
                                              unroll=unroll) for i in range(0, n_rhs, group)], axis=0)
    dtype = jnp.result_type(values, x)
    T = cols.shape[0]
    per_step = _tiles_per_step(T)
    steps = T // per_step
    unroll = TILE_UNROLL if unroll is None else int(unroll)
    unroll = unroll if unroll >= 1 and per_step % unroll == 0 else 1
    xs = jnp.pad(x.astype(dtype), ((0, 0), (0, ncb * LANES - k))).reshape(n_rhs, ncb, 1, LANES)
    xs = jnp.broadcast_to(xs, (n_rhs, ncb, SUBLANES, LANES))  # a panel per (8, 128) slab: one load per tile
    vals = values.astype(dtype).reshape(T, SUBLANES, LANES)
    tile_block = (per_step, SUBLANES, LANES)
    # the tile table by grid step, (steps, 1, R * per_step): an SMEM block's last dimension must be a whole
    # 128 lanes or the array's own (row blocks of a step, then their panels: R = 2, or 9 for mixed tiles)
    R = meta.shape[0]
    meta_steps = meta.reshape(R, steps, per_step).transpose(1, 0, 2).reshape(steps, 1, R * per_step)
    call = pl.pallas_call(
        functools.partial(_kernel, n_rhs=n_rhs, tiles=per_step, unroll=unroll, mixed=R > 2),
        out_shape=jax.ShapeDtypeStruct((n_rhs, nrb, SUBLANES, LANES), dtype),
        grid=(steps,),
        in_specs=[
            pl.BlockSpec((1, 1, R * per_step), lambda i: (i, 0, 0), memory_space=pltpu.SMEM),
            pl.BlockSpec(tile_block, lambda i: (i, 0, 0)),
            pl.BlockSpec(tile_block, lambda i: (i, 0, 0)),
            pl.BlockSpec((n_rhs, ncb, SUBLANES, LANES), lambda i: (0, 0, 0, 0)),
        ],
        out_specs=pl.BlockSpec((n_rhs, nrb, SUBLANES, LANES), lambda i: (0, 0, 0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=vmem_limit_bytes()),
        interpret=_interpret() if interpret is None else interpret,
    )
    out = call(meta_steps, vals, cols, xs)
    return jnp.sum(out, axis=2, dtype=dtype).reshape(n_rhs, nrb * LANES)[:, :m]


def _row_blocks(y, m: int):
    """``y`` (n_rhs, m) as rows of 128 lanes, ``(n_rhs, rows, 128)``, zero-padded."""
    nrb = -(-max(m, 1) // LANES)
    return jnp.pad(y, ((0, 0), (0, nrb * LANES - m))).reshape(y.shape[0], nrb, LANES)


def _columns(meta, cols, k: int):
    """Each slot's global column (clipped into range) and whether it holds an entry."""
    ok = cols >= 0
    panel = meta[1:].T[:, :, None]  # (T, 1 or 8, 1): the tile's panel, or each of its sublanes'
    colg = panel * LANES + jnp.maximum(cols, 0)
    return jnp.minimum(colg, k - 1), ok


def panels_reference(values, meta, cols, x, *, shape):
    """``A @ x`` (``x`` of shape ``(n_rhs, k)``) from the tile table in XLA.

    One element gather of ``x`` per slot; the rows need no scatter: a tile's
    lanes are consecutive rows, so its 8 sublanes are summed and whole
    128-lane rows are added per row block (a segment sum of rows).
    """
    m, k = shape
    dtype = jnp.result_type(values, x)
    if k == 0:  # no column: every slot is padding, nothing to gather
        return jnp.zeros((x.shape[0], m), dtype)
    T = cols.shape[0]
    colg, ok = _columns(meta, cols, k)
    vals = values.astype(dtype).reshape(T, SUBLANES, LANES)
    xg = jnp.take(x.astype(dtype), colg.reshape(-1), axis=1).reshape((x.shape[0], T, SUBLANES, LANES))
    per_tile = jnp.sum(jnp.where(ok, vals * xg, jnp.zeros((), dtype)), axis=2)  # (n_rhs, T, 128)
    nrb = -(-max(m, 1) // LANES)
    out = jax.vmap(lambda t: jax.ops.segment_sum(t, meta[0], num_segments=nrb))(per_tile)
    return out.reshape(x.shape[0], nrb * LANES)[:, :m]


def transpose_reference(values, meta, cols, y, *, shape):
    """``A.T @ y`` (``y`` of shape ``(n_rhs, m)``) from the tile table in XLA.

    ``y`` is read one 128-lane row per tile (a row gather: a tile's lanes are
    consecutive rows) and scattered to each slot's column (a segment sum).
    """
    m, k = shape
    dtype = jnp.result_type(values, y)
    T = cols.shape[0]
    colg, ok = _columns(meta, cols, k)
    yrows = jnp.take(_row_blocks(y.astype(dtype), m), meta[0], axis=1)  # (n_rhs, T, 128)
    prod = jnp.where(ok, values.astype(dtype).reshape(T, SUBLANES, LANES) * yrows[:, :, None, :],
                     jnp.zeros((), dtype))
    return jax.vmap(lambda p: jax.ops.segment_sum(p.reshape(-1), colg.reshape(-1), num_segments=k))(prod)


def values_cotangent(meta, cols, x, ct, *, shape):
    """The cotangent of the flat values: ``ct[row] * x[col]`` summed over right-hand sides, 0 on padding."""
    m, k = shape
    T = cols.shape[0]
    if k == 0 or m == 0:  # no entry can be stored: every slot is padding
        return jnp.zeros((T * SUBLANES * LANES,), jnp.result_type(x, ct))
    colg, ok = _columns(meta, cols, k)
    xg = jnp.take(x, colg.reshape(-1), axis=1).reshape((x.shape[0], T, SUBLANES, LANES))
    yrows = jnp.take(_row_blocks(ct, m), meta[0], axis=1)[:, :, None, :]  # (n_rhs, T, 1, 128)
    return jnp.where(ok, jnp.sum(xg * yrows, axis=0), 0).reshape(-1)


# --- the primitive --------------------------------------------------------------------------------------

panels_matmat_p = Primitive("bcoo_array_panels_matmat")


def panels_matmat(values, meta, cols, x, *, shape, use_kernel: bool = True, unroll: int | None = None, sell=()):
    """``(A @ x.T).T`` in the ``panels`` layout: ``x`` of shape ``(n_rhs, k)`` to ``(n_rhs, m)``.

    ``use_kernel=False`` takes the XLA formulas (``panels_reference``,
    ``.sell.sell_reference``); ``unroll`` is the kernel's
    (``panels_kernel``). ``sell``: the layout's SELL-8 slots of the same
    matrix, ``(values, table, rows, cols)`` (``.sell``), or ``()``. With
    them, ``n_rhs`` right-hand sides run on whichever is cheaper
    (``.sell.sell_is_cheaper``), decided from the shapes when the product is
    traced, so a ``vmap`` over many vectors reaches the SELL kernel too.
    Differentiable in the values (both copies) and ``x``, batchable over
    them.
    """
    return panels_matmat_p.bind(values, meta, cols, x, *sell, shape=tuple(shape), use_kernel=bool(use_kernel),
                                unroll=None if unroll is None else int(unroll))


def _takes_sell(meta, cols, sell, n_rhs: int, dtype, *, shape, use_kernel: bool) -> bool:
    """Whether a product of ``n_rhs`` right-hand sides runs on the SELL slots (``.sell.sell_is_cheaper``)."""
    if not sell:
        return False
    kernel = use_kernel and np.dtype(dtype) == np.float32 and _sell.fits(shape)
    return _sell.sell_is_cheaper(cols.shape[0], meta.shape[0] > 2, sell[2].shape[0], n_rhs, shape, kernel)


def _impl(values, meta, cols, x, *sell, shape, use_kernel, unroll):
    dtype = jnp.result_type(values, x)
    if x.shape[0] == 0 or cols.shape[0] == 0:
        return jnp.zeros((x.shape[0], shape[0]), dtype)
    if _takes_sell(meta, cols, sell, x.shape[0], dtype, shape=shape, use_kernel=use_kernel):
        sv, table, rows, scols = sell
        return _sell.sell_matmat(sv, table, rows, scols, x.T.astype(dtype), shape=shape, use_kernel=use_kernel).T
    if use_kernel and np.dtype(dtype).itemsize == 4 and np.dtype(dtype).kind in "fiu":
        return panels_kernel(values, meta, cols, x, shape=shape, unroll=unroll)
    return panels_reference(values, meta, cols, x, shape=shape)  # complex x (no 32-bit tile): the XLA formula


panels_matmat_p.def_impl(_impl)


@panels_matmat_p.def_abstract_eval
def _abstract(values, meta, cols, x, *sell, shape, use_kernel, unroll):
    dtype = jnp.result_type(values.dtype, x.dtype)
    return jax.core.ShapedArray((x.shape[0], shape[0]), dtype)


mlir.register_lowering(panels_matmat_p, mlir.lower_fun(_impl, multiple_results=False))


def _jvp(primals, tangents, *, shape, use_kernel, unroll):
    values, meta, cols, x, *sell = primals
    dv, _, _, dx, *dsell = tangents
    bind = functools.partial(panels_matmat_p.bind, shape=shape, use_kernel=use_kernel, unroll=unroll)
    y = bind(values, meta, cols, x, *sell)
    dy = None
    dsv = dsell[0] if dsell else ad.Zero
    if type(dv) is not ad.Zero or (sell and type(dsv) is not ad.Zero):  # linear in the two value copies
        dv = ad.instantiate_zeros(dv)
        tangent_sell = (ad.instantiate_zeros(dsv), *sell[1:]) if sell else ()
        dy = bind(dv, meta, cols, x, *tangent_sell)
    if type(dx) is not ad.Zero:
        t = bind(values, meta, cols, dx, *sell)
        dy = t if dy is None else dy + t
    if dy is None:
        dy = jnp.zeros_like(y)  # only the integer tables carried tangents (float0): the product does not move
    return y, dy


ad.primitive_jvps[panels_matmat_p] = _jvp


def _transpose(ct, values, meta, cols, x, *sell, shape, use_kernel, unroll):
    none = (None,) * (4 + len(sell))
    if type(ct) is ad.Zero:
        return none
    value_args = [values] + ([sell[0]] if sell else [])
    if any(ad.is_undefined_primal(v) for v in value_args) and ad.is_undefined_primal(x):
        raise ValueError("the panels product is bilinear: transpose it in the values or in x, not both")
    if ad.is_undefined_primal(x):
        return none[:3] + (transpose_reference(values, meta, cols, ct, shape=shape).astype(x.aval.dtype),) + none[4:]

    def real(dv, aval):  # real values, complex x: the cotangent of a real input is the real part
        if not jnp.issubdtype(aval.dtype, jnp.complexfloating) and jnp.iscomplexobj(dv):
            dv = jnp.real(dv)
        return dv.astype(aval.dtype)

    out = list(none)
    dtype = jnp.result_type(ct, x)
    if _takes_sell(meta, cols, sell, x.shape[0], dtype, shape=shape, use_kernel=use_kernel):
        sv, table, rows, scols = sell  # the values' cotangent lands on the copy the product read
        f = lambda v: _sell.sell_reference(v, rows, scols, x.T, shape=shape).T  # noqa: E731
        (dsv,) = jax.linear_transpose(f, jax.ShapeDtypeStruct(sv.aval.shape, dtype))(ct)
        if ad.is_undefined_primal(sv):
            out[4] = real(dsv, sv.aval)
        if ad.is_undefined_primal(values):
            out[0] = jnp.zeros(values.aval.shape, values.aval.dtype)
        return tuple(out)
    if ad.is_undefined_primal(values):
        out[0] = real(values_cotangent(meta, cols, x, ct, shape=shape), values.aval)
    if sell and ad.is_undefined_primal(sell[0]):
        out[4] = jnp.zeros(sell[0].aval.shape, sell[0].aval.dtype)
    return tuple(out)


ad.primitive_transposes[panels_matmat_p] = _transpose


def _batch(args, dims, *, shape, use_kernel, unroll):
    values, meta, cols, x, *sell = args
    dv, dm, dc, dx, *dsell = dims
    params = dict(shape=shape, use_kernel=use_kernel, unroll=unroll)
    if dm is not None or dc is not None or any(d is not None for d in dsell[1:]):
        raise ValueError("vmap over a prepared operator's index arrays is not supported; map its values or x")
    dsv = dsell[0] if dsell else None
    if dv is not None or dsv is not None:  # mapped values: one product per value set (a loop of the kernel)
        B = (values.shape[dv] if dv is not None else sell[0].shape[dsv])
        values = jnp.moveaxis(values, dv, 0) if dv is not None else jnp.broadcast_to(values, (B,) + values.shape)
        svals = ()
        if sell:
            svals = jnp.moveaxis(sell[0], dsv, 0) if dsv is not None else jnp.broadcast_to(sell[0], (B,) + sell[0].shape)
        xs = jnp.moveaxis(x, dx, 0) if dx is not None else None

        def one(a):
            v, sv, xi = a
            s = (sv, *sell[1:]) if sell else ()
            return panels_matmat(v, meta, cols, x if xi is None else xi, sell=s, **params)

        return jax.lax.map(one, (values, svals if sell else None, xs)), 0
    x = jnp.moveaxis(x, dx, 0)  # (B, n_rhs, k): every mapped column is one more right-hand side
    B, n = x.shape[0], x.shape[1]
    y = panels_matmat(values, meta, cols, x.reshape(B * n, x.shape[2]), sell=tuple(sell), **params)
    return y.reshape(B, n, shape[0]), 0


batching.primitive_batchers[panels_matmat_p] = _batch


def pad_tiles(n_tiles: int) -> int:
    """Tiles a layout of ``n_tiles`` stores: one step of a multiple of 8 tiles (at least 8) for a small
    matrix, else whole grid steps of 64, 128 (from 2,048 tiles) or ``TILES_PER_STEP`` (from 8,192) tiles:
    fewer than one step of padding tiles (at most 63, 6% of 1,024 and more; 127 or 255, under 7% and 4%)."""
    if n_tiles <= 64:
        return max(SUBLANES, -(-n_tiles // SUBLANES) * SUBLANES)
    step = 64 if n_tiles < 2048 else 128 if n_tiles < 8192 else TILES_PER_STEP
    return -(-n_tiles // step) * step


def _tiles_per_step(T: int) -> int:
    """The grid step of a layout of ``T`` tiles (``pad_tiles``): the largest of ``TILES_PER_STEP``, 128
    and 64 that divides it, or all of a small layout's tiles."""
    for step in (TILES_PER_STEP, 128, 64):
        if T >= step and T % step == 0:
            return step
    return T


def tile_positions(rows: np.ndarray, cols: np.ndarray, shape, mixed: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """Host: each unique entry's slot in the tile buffer, the tile table and the tile count.

    ``rows``/``cols`` are unique positions sorted by row then column. The
    entries of a row block in a column panel (a *group*) take, row by row,
    sublane rows ``0, 1, ...`` up to the group's depth (its longest row).
    Uniform tiles (``mixed=False``) hold one group each, its depth rounded
    up to 8 sublanes; mixed tiles pack the sublane rows of all the groups of
    one row block, one after the other, so a tile's sublanes can read
    different panels (fewer tiles where groups are shallow: scattered
    patterns).

    Returns ``(slot, meta, n_tiles)``: ``slot`` (nnz,) into the flat buffer
    of ``n_tiles * 1024`` values; ``meta`` the row block of each tile
    (``meta[0]``) and its panel (uniform: ``meta[1]``, shape ``(2,
    n_tiles)``) or the panel of each of its 8 sublanes (mixed:
    ``meta[1:9]``, shape ``(9, n_tiles)``).
    """
    m, k = shape
    ncp = -(-k // LANES)
    n = len(rows)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((1 + (SUBLANES if mixed else 1), 0), np.int32), 0
    rb, lane, pb = rows // LANES, rows % LANES, cols // LANES
    group = rb * ncp + pb
    order = np.lexsort((cols, lane, group))
    g, ln = group[order], lane[order]
    run_key = g * LANES + ln
    new_run = np.concatenate([[True], run_key[1:] != run_key[:-1]])
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    depth = np.arange(n) - run_start  # slot depth of each entry within its row's run
    new_group = np.concatenate([[True], g[1:] != g[:-1]])
    gid = np.cumsum(new_group) - 1
    ug = g[new_group]  # sorted: by row block, then panel
    group_depth = np.zeros(len(ug), np.int64)
    np.maximum.at(group_depth, gid, depth + 1)
    g_rb, g_pb = ug // ncp, ug % ncp
    if not mixed:
        group_tiles = -(-group_depth // SUBLANES)
        tile_start = np.concatenate([[0], np.cumsum(group_tiles)])
        n_tiles = int(tile_start[-1])
        sub_row = tile_start[gid] * SUBLANES + depth  # each entry's sublane row, counted over all tiles
        tg = np.repeat(np.arange(len(ug)), group_tiles)
        meta = np.stack([g_rb[tg], g_pb[tg]]).astype(np.int32)
    else:
        # a row block's groups one after the other, in sublane rows; each row block starts a new tile
        new_rb = np.concatenate([[True], g_rb[1:] != g_rb[:-1]])
        rb_id = np.cumsum(new_rb) - 1
        rb_rows = np.bincount(rb_id, weights=group_depth).astype(np.int64)
        rb_tiles = -(-rb_rows // SUBLANES)
        rb_start = np.concatenate([[0], np.cumsum(rb_tiles)])[:-1] * SUBLANES
        ends = np.cumsum(group_depth)
        offset = ends - group_depth - np.concatenate([[0], ends])[np.flatnonzero(new_rb)][rb_id]
        g_start = rb_start[rb_id] + offset  # the group's first sublane row
        n_tiles = int(rb_tiles.sum())
        sub_row = g_start[gid] + depth
        panel = np.full(n_tiles * SUBLANES, -1, np.int64)
        panel[np.repeat(g_start - np.concatenate([[0], ends[:-1]]), group_depth) + np.arange(ends[-1])] = \
            np.repeat(g_pb, group_depth)
        filled = np.maximum.accumulate(np.where(panel >= 0, np.arange(len(panel)), 0))
        panel = panel[filled]  # a row block's last tile: padding sublanes repeat its last panel
        meta = np.concatenate([np.repeat(g_rb[new_rb], rb_tiles)[None],
                               panel.reshape(n_tiles, SUBLANES).T]).astype(np.int32)
    tile, sub = sub_row // SUBLANES, sub_row % SUBLANES
    slot_sorted = tile * (SUBLANES * LANES) + sub * LANES + ln
    slot = np.empty(n, np.int64)
    slot[order] = slot_sorted
    return slot, meta, n_tiles


def tile_counts(rows: np.ndarray, cols: np.ndarray, shape) -> tuple[int, int]:
    """Host: tiles the ``panels`` layout of these unique positions needs, uniform and mixed
    (``tile_positions``; the cost model's counts)."""
    m, k = shape
    if len(rows) == 0:
        return 0, 0
    ncp = -(-k // LANES)
    group = (rows // LANES) * ncp + cols // LANES
    run = group * LANES + rows % LANES
    ukey, counts = unique_counts(run)
    ug, gid = unique_inverse(ukey // LANES)
    depth = np.zeros(len(ug), np.int64)
    np.maximum.at(depth, gid, counts)
    _, rb_id = unique_inverse(ug // ncp)
    rb_rows = np.bincount(rb_id, weights=depth).astype(np.int64)
    return int((-(-depth // SUBLANES)).sum()), int((-(-rb_rows // SUBLANES)).sum())
