"""One vector on a TPU: the stored entries in ``(8, 128)`` blocks, ``x`` gathered in VMEM, rows summed by
segmented lane sums.

A product ``y = A @ x`` with one vector spends its time fetching ``x[c]`` for
each stored entry ``(r, c, v)``. XLA's element gather fetches 0.1-0.3 G
elements/s on a TPU v5e; a kernel that keeps ``x`` in VMEM and reads one
entry's column per step of the scalar unit (``.sell``'s SELL-8 kernel)
reached 2.8 ns per entry. This kernel fetches 8 entries per vector step and
sums rows without per-row control flow:

- ``x`` sits in VMEM packed 128 elements per row (element ``c`` at row ``8 +
  (c >> 7)``, lane ``c & 127``; 8 zero rows ahead of it).
- The entries, sorted by row, are split by *window* (the 128 rows ``y``
  keeps in one VMEM row) and each window's entries cut into *segments* of
  128 (the last one padded). Segments fill the 8 sublanes of a block in
  order; a block holds 1024 slots.
- For lane ``j`` of a block, the 8 slots ``(i, j)`` each load the 8 rows of
  ``x`` that put their column's row on sublane ``i`` (an unaligned dynamic
  load from the slot's precomputed row ``(c >> 7) + 8 - i``), one select per
  slot keeps that sublane, and one lane gather (``take_along_axis`` by
  ``c & 127``) brings each slot's element to lane ``j``. The 128 lanes are
  unrolled (``LANE_UNROLL``; 16 at a time for eager products, which pay
  for the compile in their first call).
- The block's products are summed per row by a segmented inclusive scan
  along the lanes (Hillis and Steele's log-step scan, restricted to each
  lane's row: "Data parallel algorithms", CACM 29(12), 1986; segments of
  fixed-size tiles of entries as in Liu and Vinter's CSR5, ICS 2015), and
  each row's total, at its last lane, is gathered onto the row's lane of
  the window and added to the result's VMEM row: one update per segment.

Per block the tables hold each slot's row of ``x`` (SMEM scalars), its
column and value and its segment's bounds (VMEM), and each segment's row
of the result (SMEM); blocks that grid-step padding added (``pad``, so
that shapes repeat across matrices) are skipped. On a TPU v5e, in a loop
(2026-12-06): 1.72 ns per slot, a random 10^6 x 10^6 matrix with 10^7
entries 18.1 ms for the kernel, 18.3 through a prepared operator
(``.sell``'s packed SELL-8 kernel that served one vector before: 41.5;
jax's BCOO: 162), cage11 1.03 ms, nh2010 0.47
(``.costs.COSTS["tpu"]["segmented_slot"]``). Of the variants probed on the chip
(``.device_data/probe_gk.py``, not committed), the lane loop unrolled 4,
8, 16, 32 and 128 times took 4.1, 2.7, 2.3, 2.0 and 1.72 ns per slot;
aligned loads from 8 shifted copies of ``x``, one-row loads broadcast over
the sublanes, a tree of lane selects and 4 or 16 blocks per grid step
changed nothing, nor did two slots' rows of ``x`` per SMEM word (16 bits
each: half the scalar reads, 1.71 ns per slot either way on the random
matrix); a variant reading one row per 8 slots (wrong results, a bound)
took 1.39 ns.

The product is the primitive ``segmented_matvec_p`` (linear in the values
and in ``x``: its JVP binds it again, its transpose is JAX's transpose of
the XLA formula ``segmented_reference``, a COO product of the same slots; a
mapped ``x`` or mapped values run one product per vector). Off a TPU the
kernel runs in Pallas interpret mode (how the tests check it on a CPU) and
``segmented_reference`` is the portable path.
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
from .sell import bilinear_jvp, bilinear_transpose, load_resident, sorted_entries, store_resident

#: Lanes (slots of a segment; rows of a window) and sublanes (segments of a block) of a vector register.
LANES = 128
SUBLANES = 8

#: Slots of a block: one vector register of them.
BLOCK = LANES * SUBLANES

#: ``log2(LANES)``: element ``c`` of a packed vector sits at row ``c >> LANE_BITS``, lane ``c & (LANES - 1)``.
LANE_BITS = int(np.log2(LANES))

#: Blocks one grid step takes (their tables reach SMEM and VMEM together). 4 and 16 ran as fast on a TPU v5e.
BLOCKS_PER_STEP = 8

#: Lanes of a block per iteration of the kernel's lane loop: all 128, no loop (TPU v5e, in a loop: 1.72 ns
#: per slot; 32 lanes 1.98, 16 lanes 2.3). The program then compiles in about 1.5 s, so an eager product's
#: first call takes ``EAGER_LANE_UNROLL`` (0.3 s).
LANE_UNROLL = LANES

#: ``LANE_UNROLL`` in Pallas interpret mode (off a TPU): the same steps in a loop, which traces in a small
#: fraction of the unrolled kernel's time (the tests run the unrolled kernel in interpret mode too).
INTERPRET_LANE_UNROLL = 1

#: ``LANE_UNROLL`` of the layouts eager products build (``.matmul``): a faster first call, 1.35x the time a
#: call.
EAGER_LANE_UNROLL = 16

#: Zero rows of VMEM ahead of the packed ``x``: a slot on sublane ``i`` loads 8 rows from ``i`` rows before
#: its column's row (at least row 1), and padding slots load rows 0-7.
X_PAD_ROWS = SUBLANES

#: VMEM the kernel may use on a 128 MiB chip (bytes; scaled to the chip in use): ``x`` and the result,
#: resident once each, and the pipelined tables of two grid steps.
VMEM_LIMIT_BYTES = 100 << 20

#: Largest packed ``x`` plus result the kernel keeps in VMEM on a 128 MiB chip (bytes).
RESIDENT_MAX_BYTES = 88 << 20

#: VMEM left to Mosaic beside the resident ``x`` and result on a chip of less VMEM (bytes).
MOSAIC_BYTES = 4 << 20


def vmem_limit_bytes() -> int:
    """The kernel's VMEM limit on the chip in use: ``VMEM_LIMIT_BYTES``'s share of its VMEM
    (``.costs.vmem_share``)."""
    return _costs.vmem_share(VMEM_LIMIT_BYTES)


def _x_rows(k: int) -> int:
    """VMEM rows of the packed ``x`` of ``k`` elements: the zero rows ahead, ``x``, and room for the 8-row
    load of its last element's row from the lowest sublane, in whole ``(8, 128)`` tiles."""
    return -(-(X_PAD_ROWS + -(-max(int(k), 1) // LANES) + SUBLANES) // SUBLANES) * SUBLANES


def _out_rows(m: int) -> int:
    """VMEM rows of the packed result of ``m`` elements, plus one tile whose first row takes padding
    segments."""
    return (-(-max(int(m), 1) // (LANES * SUBLANES)) + 1) * SUBLANES


def fits(shape) -> bool:
    """Whether the packed ``x`` and ``A @ x`` of a matrix of ``shape`` stay in VMEM on the chip in use."""
    m, k = shape
    budget = max(0, min(RESIDENT_MAX_BYTES, vmem_limit_bytes() - MOSAIC_BYTES))
    return (_x_rows(k) + _out_rows(m)) * LANES * 4 <= budget


# --- host: the block tables -----------------------------------------------------------------------------

def slot_count(rows, m: int) -> tuple[int, int]:
    """Host: ``(slots, blocks)`` of the tables of entries with row indices ``rows`` in a matrix of ``m``
    rows (``segmented_tables``; grid-step padding not counted): each window's entries in whole segments of
    128, 8 segments a block."""
    per_window = np.bincount(np.asarray(rows, np.int64) >> LANE_BITS, minlength=1)
    segments = int((-(-per_window // LANES)).sum())
    blocks = -(-segments // SUBLANES)
    return blocks * BLOCK, blocks


def segmented_tables(rows: np.ndarray, cols: np.ndarray, shape, pad=None):
    """Host: the block tables of unique entries sorted by row (then column).

    Each window of 128 rows takes its entries in segments of 128 slots (the
    last one padded); segments fill the sublanes of ``(8, 128)`` blocks in
    order, ``BLOCKS_PER_STEP`` blocks a grid step.

    Returns ``(slot, arrays)``: ``slot`` (nnz,) int64, each entry's slot
    (``8 * 128 * block + 128 * sublane + lane``), and ``arrays``:

    - ``seg_out`` (steps, 1, 8 * BLOCKS_PER_STEP) int32, each segment's row
      of the packed result (its window; padding segments take the extra
      row ``_out_rows(m) - 8``);
    - ``seg_addr`` (steps, 1, BLOCK * BLOCKS_PER_STEP) int32, each slot's
      first row of the 8-row load of ``x``, lane by lane (slot ``(i, j)`` of
      a block at ``8 * j + i``): ``8 + (c >> 7) - i``, 0 for padding;
    - ``seg_cols``, ``seg_rows`` (steps * 8 * BLOCKS_PER_STEP, 128) int32,
      each slot's column and row (padding: column ``k``, row ``m``);
    - ``seg_ends`` (the same shape) int32, each slot's first lane of its row
      in its segment (padding: its own lane) plus, shifted left by 16, the
      last lane of the row of that lane of the window in this segment (-1
      where it has none).

    ``pad``: a function of the step count giving the steps to keep (empty
    ones added), or None. Raises ``ValueError`` where an index is negative or
    out of ``shape``, or the rows are not sorted.
    """
    m, k = shape
    rows, cols = sorted_entries(rows, cols, shape, "segmented_tables")
    n = len(rows)
    window = rows >> LANE_BITS
    n_windows = -(-max(m, 1) // LANES)
    per_window = np.bincount(window, minlength=n_windows)
    first_in_window = np.concatenate([[0], np.cumsum(per_window)])[:-1]
    pos = np.arange(n) - first_in_window[window]  # the entry's place in its window's stream
    segs = -(-per_window // LANES)
    seg0 = np.concatenate([[0], np.cumsum(segs)])[:-1]
    n_segs = int(segs.sum())
    blocks = max(1, -(-n_segs // SUBLANES))
    steps = -(-blocks // BLOCKS_PER_STEP)
    steps = steps if pad is None else max(steps, int(pad(steps)))
    blocks = steps * BLOCKS_PER_STEP
    seg = seg0[window] + pos // LANES  # the entry's segment
    blk, sub, lane = seg // SUBLANES, seg % SUBLANES, pos % LANES
    slot = blk * BLOCK + sub * LANES + lane
    cols_t = np.full((blocks, SUBLANES, LANES), k, np.int64)
    cols_t[blk, sub, lane] = cols
    rows_t = np.full((blocks, SUBLANES, LANES), m, np.int64)
    rows_t[blk, sub, lane] = rows
    addr = np.zeros((blocks, LANES, SUBLANES), np.int64)
    addr[blk, lane, sub] = X_PAD_ROWS + (cols >> LANE_BITS) - sub
    counts = np.bincount(rows, minlength=m)
    row_first = np.concatenate([[0], np.cumsum(counts)])[:-1][rows] - first_in_window[window]
    start = np.broadcast_to(np.arange(LANES), (blocks, SUBLANES, LANES)).copy()
    start[blk, sub, lane] = np.maximum(row_first - (pos // LANES) * LANES, 0)
    last = np.full((blocks, SUBLANES, LANES), -1, np.int64)
    ends_row = np.ones(n, bool)  # the entry is its row's last in its segment
    if n > 1:
        ends_row[:-1] = (rows[1:] != rows[:-1]) | (seg[1:] != seg[:-1])
    last[blk[ends_row], sub[ends_row], rows[ends_row] & (LANES - 1)] = lane[ends_row]
    out = np.full(blocks * SUBLANES, _out_rows(m) - SUBLANES, np.int64)
    out[:n_segs] = np.repeat(np.arange(n_windows), segs)
    i32 = functools.partial(np.asarray, dtype=np.int32)
    arrays = dict(
        seg_out=i32(out).reshape(steps, 1, SUBLANES * BLOCKS_PER_STEP),
        seg_addr=i32(addr).reshape(steps, 1, BLOCK * BLOCKS_PER_STEP),
        seg_cols=i32(cols_t).reshape(-1, LANES), seg_rows=i32(rows_t).reshape(-1, LANES),
        seg_ends=(i32(start) | (i32(last) << 16)).reshape(-1, LANES))
    return slot, arrays


# --- the kernel -----------------------------------------------------------------------------------------

def _kernel(out_ref, addr_ref, cols_ref, vals_ref, ends_ref, x_hbm, o_hbm, x_vmem, o_vmem, sem, *, unroll: int):
    """One grid step: ``BLOCKS_PER_STEP`` blocks, each 1024 products summed per row into the result.

    ``x_vmem`` holds ``X_PAD_ROWS`` zero rows, then ``x`` 128 elements per
    row, then zeros; ``o_vmem`` the result the same way (without the zero
    rows ahead). The result is written back at the last step. ``unroll``:
    lanes per iteration of the lane loop (128: no loop). Integer constants
    are int32, as Mosaic's indices are, with or without ``jax_enable_x64``.
    """
    load_resident(x_hbm, x_vmem, o_vmem, sem)

    sub = jax.lax.broadcasted_iota(np.int32, (SUBLANES, LANES), 0)
    lane = jax.lax.broadcasted_iota(np.int32, (SUBLANES, LANES), 1)
    zero = jnp.zeros((SUBLANES, LANES), o_vmem.dtype)
    pad_row = np.int32(o_vmem.shape[0] - SUBLANES)  # the result's row of padding segments (``_out_rows``)

    def block(_, b):  # b: the block, an int32 carry (fori_loop's index is int64 under jax_enable_x64)
        @pl.when(out_ref[0, 0, b * np.int32(SUBLANES)] < pad_row)  # padding blocks (grid-step buckets): skipped
        def _():
            r0 = b * np.int32(SUBLANES)
            lanes_of_x = jnp.bitwise_and(cols_ref[pl.ds(r0, SUBLANES), :], np.int32(LANES - 1))
            base = b * np.int32(BLOCK)

            def row_of(j, i):  # the first row of x that slot (i, j) loads
                return addr_ref[0, 0, base + j * np.int32(SUBLANES) + np.int32(i)]

            def lane_step(j, xg):  # the 8 slots of lane j (int32): 8 row loads, 7 selects, one lane gather
                v = None
                for i in range(SUBLANES):
                    rows8 = x_vmem[pl.ds(row_of(j, i), SUBLANES), :]
                    v = rows8 if i == 0 else jnp.where(sub == i, rows8, v)
                picked = jnp.take_along_axis(v, lanes_of_x, axis=1, mode="promise_in_bounds")
                return jnp.where(lane == j, picked, xg)

            if unroll >= LANES:
                xg = zero
                for j in range(LANES):
                    xg = lane_step(np.int32(j), xg)
            else:
                step_lane = lambda _, c: (c[0] + np.int32(1), lane_step(*c))  # noqa: E731
                _, xg = jax.lax.fori_loop(0, LANES, step_lane, (np.int32(0), zero), unroll=unroll)
            acc = xg * vals_ref[pl.ds(r0, SUBLANES), :]
            ends = ends_ref[pl.ds(r0, SUBLANES), :]
            start = jnp.bitwise_and(ends, np.int32(0xFFFF))
            shift = 1
            while shift < LANES:  # segmented inclusive scan: each lane sums its row's lanes up to it
                acc = acc + jnp.where(lane - np.int32(shift) >= start, pltpu.roll(acc, np.int32(shift), 1), zero)
                shift *= 2
            last = jax.lax.shift_right_arithmetic(ends, np.int32(16))
            totals = jnp.take_along_axis(acc, jnp.maximum(last, 0), axis=1, mode="promise_in_bounds")
            totals = jnp.where(last >= 0, totals, zero)
            for i in range(SUBLANES):
                row = out_ref[0, 0, b * np.int32(SUBLANES) + np.int32(i)]
                o_vmem[pl.ds(row, 1), :] += totals[i:i + 1, :]

        return b + np.int32(1)

    jax.lax.fori_loop(0, BLOCKS_PER_STEP, block, np.int32(0))

    store_resident(o_vmem, o_hbm, sem)


def _interpret() -> bool:
    return jax.default_backend() != "tpu"


def segmented_kernel(values, out, addr, cols, ends, x, *, shape, interpret: bool | None = None,
                     unroll: int | None = None):
    """``A @ x`` for one float32 vector ``x`` of shape ``(k,)``: the Pallas kernel (interpret mode off a TPU).

    ``values`` (blocks * 1024,) in slot order; ``out``, ``addr``, ``cols``,
    ``ends``: ``segmented_tables``'s; ``unroll``: lanes per iteration of the
    kernel's lane loop (None: ``LANE_UNROLL``, or ``INTERPRET_LANE_UNROLL``
    in interpret mode). Returns ``(m,)``.
    """
    m, k = shape
    steps = out.shape[0]
    dtype = jnp.result_type(values, x)
    kr = _x_rows(k)
    xs = jnp.pad(x.astype(dtype), (X_PAD_ROWS * LANES, kr * LANES - X_PAD_ROWS * LANES - k)).reshape(kr, LANES)
    rows_per_step = SUBLANES * BLOCKS_PER_STEP
    interpret = _interpret() if interpret is None else interpret
    if unroll is None:
        unroll = INTERPRET_LANE_UNROLL if interpret else LANE_UNROLL
    smem = functools.partial(pl.BlockSpec, memory_space=pltpu.SMEM)
    vmem = pl.BlockSpec((rows_per_step, LANES), lambda s: (s, 0))
    call = pl.pallas_call(
        functools.partial(_kernel, unroll=max(1, int(unroll))),
        out_shape=jax.ShapeDtypeStruct((_out_rows(m), LANES), dtype),
        grid=(steps,),
        in_specs=[smem((1, 1, rows_per_step), lambda s: (s, 0, 0)),
                  smem((1, 1, BLOCK * BLOCKS_PER_STEP), lambda s: (s, 0, 0)),
                  vmem, vmem, vmem, pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((kr, LANES), dtype), pltpu.VMEM((_out_rows(m), LANES), dtype),
                        pltpu.SemaphoreType.DMA(())],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=vmem_limit_bytes()),
        interpret=interpret,
    )
    y = call(out, addr, cols, values.astype(dtype).reshape(-1, LANES), ends, xs)
    return y.reshape(-1)[:m]


def segmented_reference(values, rows, cols, x, *, shape):
    """``A @ x`` from the slots in XLA: a COO product (a gather of ``x`` per slot, a segment sum) for ``x``
    of shape ``(k,)`` or ``(k, n)``; padding slots (row ``m``) add nothing."""
    from .coo import coo_matmat

    m, k = shape
    dtype = jnp.result_type(values, x)
    return coo_matmat(values.astype(dtype), rows.reshape(-1), cols.reshape(-1), x.astype(dtype), m)


# --- the primitive --------------------------------------------------------------------------------------

segmented_matvec_p = Primitive("bcoo_array_segmented_matvec")


def segmented_matvec(values, out, addr, cols, rows, ends, x, *, shape, use_kernel: bool = True,
                     unroll: int | None = None):
    """``A @ x`` from the block tables of ``segmented_tables``: ``x`` of shape ``(k,)`` to ``(m,)``.

    ``use_kernel=False`` takes the XLA formula (``segmented_reference``);
    ``unroll``: the kernel's (``segmented_kernel``). Differentiable in
    ``values`` and ``x``, batchable over both.
    """
    return segmented_matvec_p.bind(values, out, addr, cols, rows, ends, x, shape=tuple(shape),
                                   use_kernel=bool(use_kernel), unroll=None if unroll is None else int(unroll))


def _impl(values, out, addr, cols, rows, ends, x, *, shape, use_kernel, unroll):
    dtype = jnp.result_type(values, x)
    if shape[0] == 0:
        return jnp.zeros((0,), dtype)
    if use_kernel and np.dtype(dtype) == np.float32 and shape[1] > 0 and fits(shape):
        return segmented_kernel(values, out, addr, cols, ends, x, shape=shape, unroll=unroll)
    return segmented_reference(values, rows, cols, x, shape=shape)


segmented_matvec_p.def_impl(_impl)


@segmented_matvec_p.def_abstract_eval
def _abstract(values, out, addr, cols, rows, ends, x, *, shape, use_kernel, unroll):
    return jax.core.ShapedArray((shape[0],), jnp.result_type(values.dtype, x.dtype))


mlir.register_lowering(segmented_matvec_p, mlir.lower_fun(_impl, multiple_results=False))


def _jvp(primals, tangents, *, shape, use_kernel, unroll):
    values, *tables, x = primals
    bind = functools.partial(segmented_matvec_p.bind, shape=shape, use_kernel=use_kernel, unroll=unroll)
    return bilinear_jvp(lambda v, z: bind(v, *tables, z), values, x, tangents[0], tangents[-1])


ad.primitive_jvps[segmented_matvec_p] = _jvp


def _transpose(ct, values, out, addr, cols, rows, ends, x, *, shape, use_kernel, unroll):
    reference = lambda v, z: segmented_reference(v, rows, cols, z, shape=shape)  # noqa: E731
    dv, dx = bilinear_transpose(ct, values, x, reference, empty=0 in shape, what="segmented")
    return (dv,) + (None,) * 5 + (dx,)


ad.primitive_transposes[segmented_matvec_p] = _transpose


def _batch(args, dims, *, shape, use_kernel, unroll):
    values, out, addr, cols, rows, ends, x = args
    dv, dx = dims[0], dims[-1]
    if any(d is not None for d in dims[1:-1]):
        raise ValueError("vmap over a prepared operator's index arrays is not supported; map its values or x")
    tables = (out, addr, cols, rows, ends)
    product = functools.partial(segmented_matvec, shape=shape, use_kernel=use_kernel, unroll=unroll)
    # one vector per product: the kernel takes one (``.sell``'s row kernel serves many columns)
    if dv is not None and dx is not None:
        pairs = (jnp.moveaxis(values, dv, 0), jnp.moveaxis(x, dx, 0))
        return jax.lax.map(lambda a: product(a[0], *tables, a[1]), pairs), 0
    if dv is not None:
        return jax.lax.map(lambda v: product(v, *tables, x), jnp.moveaxis(values, dv, 0)), 0
    return jax.lax.map(lambda z: product(values, *tables, z), jnp.moveaxis(x, dx, 0)), 0


batching.primitive_batchers[segmented_matvec_p] = _batch
