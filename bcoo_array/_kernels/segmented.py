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
- The products are summed per row by a segmented inclusive scan along
  the lanes (Hillis and Steele's log-step scan, restricted to each lane's
  row: "Data parallel algorithms", CACM 29(12), 1986; segments of
  fixed-size tiles of entries as in Liu and Vinter's CSR5, ICS 2015), and
  each row's total, at its last lane, is gathered onto the row's lane of
  the window and added to the result's VMEM row: one update per segment.
  The scan runs once per grid step on its 8 blocks together (64 rows of
  products kept in VMEM): each scan step waits on a lane rotation's
  latency, which a block alone paid at every step (0.45 ns per slot at
  width 1, 2.1 at width 8).

Per block the tables hold each slot's row of ``x`` (SMEM scalars), its
column and value and its segment's bounds (VMEM), and each segment's row
of the result (SMEM); grid steps that padding added (``pad``, so that
shapes repeat across matrices) are skipped. On a TPU v5e, in a loop
(2026-12-06, seventh session): 1.27 ns per slot, a random 10^6 x 10^6
matrix with 10^7 entries 13.4 ms for the kernel, 14.0 through a prepared
operator (jax's BCOO: 162; each block scanning on its own: 18.1, and
``.sell``'s packed SELL-8 kernel before it 41.5)
(``.costs.COSTS["tpu"]["segmented_slot"]``). With one scan per block, cage11
took 1.03 ms and nh2010 0.47 (not re-timed). Of the variants probed on the
chip then (``.device_data/probe_gk.py``, not committed), the lane loop unrolled 4,
8, 16, 32 and 128 times took 4.1, 2.7, 2.3, 2.0 and 1.72 ns per slot;
aligned loads from 8 shifted copies of ``x``, one-row loads broadcast over
the sublanes, a tree of lane selects and 4 or 16 blocks per grid step
changed nothing, nor did two slots' rows of ``x`` per SMEM word (16 bits
each: half the scalar reads, 1.71 ns per slot either way on the random
matrix); a variant reading one row per 8 slots (wrong results, a bound)
took 1.39 ns.

*Wide* tables (``segmented_tables(..., width=w)``, ``w`` of 2, 4 or 8)
serve ``w`` columns of ``x`` per call, for matrices whose ``x`` is too large
for ``.sell``'s row kernel (128 lanes a row): ``x`` is packed ``128 / w``
rows per VMEM row, segments and windows hold ``128 / w`` slots and rows,
lane ``l`` of a segment serves its slot ``l // w`` and column ``l % w``, and
the scan steps by ``w`` lanes. A block then holds ``1024 / w`` slots, and
its slot tables (columns, values, bounds) take ``8 / w`` rows, expanded to
the block's lanes once per block. On a TPU v5e, in a loop (2026-12-06,
seventh session): 3.67 ns per slot at width 8 (0.46 per slot and column) on
a random 2 * 10^5 x 2 * 10^5 matrix with 2 * 10^6 entries (5.67 with a scan
per block; width 2 then took 2.65); 16 columns of the random 10^6 x 10^6
matrix 84 ms (two calls), against 793 for jax's BCOO. Probed on the chip
(``.device_data/probe_wk.py``), the table expansion takes 0.5 ns of a slot's
3.67 and the result's updates 0.5. Wide kernels compile in 25-40 s (width 8
and 2); the one-vector kernel's first call took 2.8 s with a scan per block
and 3.7 with one per step (the 2 * 10^5 matrix, compile included).

The product is the primitive ``segmented_matvec_p`` (linear in the values
and in ``x``: its JVP binds it again, its transpose is JAX's transpose of
the XLA formula ``segmented_reference``, a COO product of the same slots; a
mapped ``x`` runs one product per vector on tables of width 1 and becomes
more columns on wide ones; mapped values run one product each). Off a TPU the
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

#: Lanes (slots of a segment and rows of a window, at width 1) and sublanes (segments of a block) of a vector register.
LANES = 128
SUBLANES = 8

#: Slots of a block of width 1: one vector register of them (``1024 / width`` at ``width``).
BLOCK = LANES * SUBLANES

#: Blocks one grid step takes (their tables reach SMEM and VMEM together). 4 and 16 ran as fast on a TPU v5e.
BLOCKS_PER_STEP = 8

#: Lanes of a block per iteration of the kernel's lane loop: all 128, no loop (TPU v5e, in a loop, measured
#: with a scan per block: 1.72 ns per slot; 32 lanes 1.98, 16 lanes 2.3). The program then compiled in about
#: 1.5 s, so an eager product's first call takes ``EAGER_LANE_UNROLL`` (0.3 s).
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


#: Bytes of a slot of the block tables: its value, row of ``x`` to load, column, row and segment bounds.
SLOT_BYTES = 20

#: Widest column group of the wide tables (``width``): a block's entries then fill whole 128-lane rows
#: (``8 / width`` of them).
MAX_WIDTH = 8


def _check_width(width) -> int:
    """``width`` as an int: a power of two from 1 to ``MAX_WIDTH``; else ``ValueError``."""
    w = int(width)
    if w < 1 or w > MAX_WIDTH or w & (w - 1):
        raise ValueError(f"width must be a power of two from 1 to {MAX_WIDTH}, got {width!r}")
    return w


def per_segment(width: int = 1) -> int:
    """Entries of a segment (one sublane of a block), and rows of a window (one packed row of the result),
    for ``width`` columns of ``x``: ``128 / width``."""
    return LANES // _check_width(width)


def _x_rows(k: int, width: int = 1) -> int:
    """VMEM rows of the packed ``x`` of ``k`` rows of ``width`` elements: the zero rows ahead, ``x``, and
    room for the 8-row load of its last row from the lowest sublane, in whole ``(8, 128)`` tiles."""
    return -(-(X_PAD_ROWS + -(-max(int(k), 1) * width // LANES) + SUBLANES) // SUBLANES) * SUBLANES


def _out_rows(m: int, width: int = 1) -> int:
    """VMEM rows of the packed result of ``m`` rows of ``width`` elements, plus one tile whose first row
    takes padding segments."""
    return (-(-max(int(m), 1) * width // (LANES * SUBLANES)) + 1) * SUBLANES


def fits(shape, width: int = 1) -> bool:
    """Whether the packed ``x`` and ``A @ x`` of a matrix of ``shape``, ``width`` columns each, stay in VMEM
    on the chip in use."""
    m, k = shape
    budget = max(0, min(RESIDENT_MAX_BYTES, vmem_limit_bytes() - MOSAIC_BYTES))
    return (_x_rows(k, width) + _out_rows(m, width)) * LANES * 4 <= budget


def wide_is_cheaper(n: int, width: int, wide_slots: int, coo_slots: int) -> bool:
    """Whether ``n`` columns of ``x`` cost less as ``ceil(n / width)`` kernel calls on tables of
    ``width`` columns and ``wide_slots`` slots than as the COO formula (a gather of 128-lane rows of ``x``
    per slot, ``segmented_reference``) on ``coo_slots`` slots, 128 columns at a time.

    Priced with ``.costs.COSTS["tpu"]``: per call, ``segmented_wide_slot``
    per slot (beyond its ``SLOT_BYTES``), ``segmented_wide_block`` per
    block and ``segmented_call``; against ``coo_row_entry_large`` per slot
    and 128 columns (this is asked only where ``x`` is too large for the
    SELL-8 kernel's VMEM). Decided from array shapes, so the choice costs no
    program of its own.
    """
    return wide_cost(n, width, wide_slots) < coo_cost(n, coo_slots)


def wide_cost(n: int, width: int, wide_slots: int) -> float:
    """The price of ``n`` columns of ``x`` as ``ceil(n / width)`` kernel calls on wide tables of ``width``
    columns and ``wide_slots`` slots (``wide_is_cheaper``)."""
    cost = _costs.COSTS["tpu"]
    width = max(1, int(width))
    calls = -(-int(n) // width)
    blocks = -(-int(wide_slots) * width // BLOCK)
    return calls * (wide_slots * (SLOT_BYTES + cost["segmented_wide_slot"]) + blocks * cost["segmented_wide_block"]
                    + cost["segmented_call"])


def coo_cost(n: int, coo_slots: int) -> float:
    """The price of ``n`` columns of ``x`` by the COO formula on ``coo_slots`` slots, 128 columns at a time
    (``segmented_reference``; ``wide_is_cheaper``)."""
    return -(-int(n) // LANES) * coo_slots * _costs.COSTS["tpu"]["coo_row_entry_large"]


def vector_cost(slots: int) -> float:
    """The price of one vector on the one-vector kernel's ``slots`` slots (``segmented_slot`` per slot
    beyond its ``SLOT_BYTES``, ``segmented_call`` per call; what a ``vmap`` pays per mapped vector where
    it maps the kernel)."""
    cost = _costs.COSTS["tpu"]
    return slots * (SLOT_BYTES + cost["segmented_slot"]) + cost["segmented_call"]


# --- host: the block tables -----------------------------------------------------------------------------

def slot_count(rows, m: int, width: int = 1) -> tuple[int, int]:
    """Host: ``(slots, blocks)`` of the tables of entries with row indices ``rows`` in a matrix of ``m``
    rows (``segmented_tables``; grid-step padding not counted): each window's entries in whole segments
    (``per_segment(width)`` entries each), 8 segments a block."""
    per = per_segment(width)
    per_window = np.bincount(np.asarray(rows, np.int64) // per, minlength=1)
    segments = int((-(-per_window // per)).sum())
    blocks = -(-segments // SUBLANES)
    return blocks * SUBLANES * per, blocks


def segmented_tables(rows: np.ndarray, cols: np.ndarray, shape, pad=None, width: int = 1):
    """Host: the block tables of unique entries sorted by row (then column), for ``width`` columns of ``x``.

    With ``P = per_segment(width)`` (``128 / width``): each window of ``P``
    rows (one packed row of the result, ``width`` lanes a row) takes its
    entries in segments of ``P`` slots (the last one padded); segments fill
    the 8 sublanes of blocks in order, ``BLOCKS_PER_STEP`` blocks a grid
    step. A block holds ``8 * P`` slots; slot ``q`` of sublane ``i`` serves
    lanes ``width * q`` to ``width * q + width - 1`` of the block's vector
    steps (one column of ``x`` each).

    Returns ``(slot, arrays)``: ``slot`` (nnz,) int64, each entry's slot
    (``8 * P * block + P * sublane + q``), and ``arrays``:

    - ``seg_out`` (steps, 1, 8 * BLOCKS_PER_STEP) int32, each segment's row
      of the packed result (its window; padding segments take the extra
      row ``_out_rows(m, width) - 8``);
    - ``seg_addr`` (steps, 1, 8 * P * BLOCKS_PER_STEP) int32, each slot's
      first row of the 8-row load of the packed ``x``, slot by slot of the
      segments (slot ``(i, q)`` of a block at ``8 * q + i``): ``8 + (c // P)
      - i``, 0 for padding;
    - ``seg_cols``, ``seg_rows`` (steps * BLOCKS_PER_STEP * 8 / width, 128)
      int32, each slot's column and row in slot order (padding: column
      ``k``, and the row of the slot before it, so that rows stay sorted);
    - ``seg_ends`` (the same shape) int32, each slot's first slot of its row
      in its segment (padding: its own) plus, shifted left by 16, the last
      slot of the segment's entries in the ``q``-th row of the window (-1
      where it has none).

    ``pad``: a function of the step count giving the steps to keep (empty
    ones added), or None. Raises ``ValueError`` where an index is negative or
    out of ``shape``, the rows are not sorted, or ``width`` is not a power of
    two up to ``MAX_WIDTH``.
    """
    m, k = shape
    per = per_segment(width)
    shift = per.bit_length() - 1  # (per is a power of two: shifts and masks, not int64 divisions)
    rows, cols = sorted_entries(rows, cols, shape, "segmented_tables")
    n = len(rows)
    n_windows = -(-max(m, 1) // per)
    # Sequential passes only (repeats of per-window and per-row values, scatters at increasing slots, one
    # blocked transpose): a random 10^6 x 10^6 matrix's 10^7 entries in 0.7-0.9 s, against 1.4-3.2 s with
    # gathers and a scatter across each block (2-core CPU, under load).
    per_window = np.bincount(rows >> shift, minlength=n_windows)
    first_in_window = np.cumsum(per_window) - per_window
    segs = -(-per_window // per)
    seg0 = np.cumsum(segs) - segs
    n_segs = int(segs.sum())
    blocks = max(1, -(-n_segs // SUBLANES))
    steps = -(-blocks // BLOCKS_PER_STEP)
    steps = steps if pad is None else max(steps, int(pad(steps)))
    blocks = steps * BLOCKS_PER_STEP
    n_slots = blocks * SUBLANES * per
    # the entry's slot, (8 * block + sublane) * P + q: its segment's first slot plus its place q in it, i.e.
    # its window's first slot (seg0 * P) plus its place in the window's stream
    slot = np.arange(n, dtype=np.int64)
    slot += np.repeat((seg0 << shift) - first_in_window, per_window)
    q = (slot & (per - 1)).astype(np.int32)
    seg = slot >> shift
    cols_t = np.full(n_slots, k, np.int32)
    cols_t[slot] = cols
    rows_t = np.full(n_slots, -1, np.int32)
    rows_t[slot] = rows
    np.maximum.accumulate(rows_t, out=rows_t)  # padding: the row before (sorted rows for the COO formula)
    rows_t[rows_t < 0] = m if n == 0 else rows[0]
    # each slot's first row of x's 8-row load, 8 + c // P - sublane, slot by slot (in slot order here, then
    # block by block transposed: slot q of the segments, then sublane)
    addr = np.zeros(n_slots, np.int32)
    addr[slot] = (cols >> shift) + (X_PAD_ROWS - (seg & (SUBLANES - 1)))
    addr = np.ascontiguousarray(addr.reshape(blocks, SUBLANES, per).transpose(0, 2, 1)).reshape(-1)
    # the first slot of the entry's row in its segment: q less the entry's rank in its row, at least 0
    counts = np.bincount(rows, minlength=m)
    rank = np.arange(n, dtype=np.int64)
    rank -= np.repeat(np.cumsum(counts) - counts, counts)
    ends = np.tile(np.arange(per, dtype=np.int32), blocks * SUBLANES)  # padding: its own slot
    ends[slot] = np.maximum(q - rank, 0)
    last = np.full(n_slots, -1, np.int32)
    ends_row = np.ones(n, bool)  # the entry is its row's last in its segment
    if n > 1:
        ends_row[:-1] = (rows[1:] != rows[:-1]) | (seg[1:] != seg[:-1])
    last[(slot - q)[ends_row] + (rows[ends_row] & (per - 1))] = q[ends_row]
    ends |= last << 16
    out = np.full(blocks * SUBLANES, _out_rows(m, width) - SUBLANES, np.int32)
    out[:n_segs] = np.repeat(np.arange(n_windows, dtype=np.int32), segs)
    arrays = dict(
        seg_out=out.reshape(steps, 1, SUBLANES * BLOCKS_PER_STEP),
        seg_addr=addr.reshape(steps, 1, SUBLANES * per * BLOCKS_PER_STEP),
        seg_cols=cols_t.reshape(-1, LANES), seg_rows=rows_t.reshape(-1, LANES), seg_ends=ends.reshape(-1, LANES))
    return slot, arrays


# --- the kernel -----------------------------------------------------------------------------------------

def _kernel(out_ref, addr_ref, cols_ref, vals_ref, ends_ref, x_hbm, o_hbm, x_vmem, o_vmem, acc_vmem, sem, *,
            unroll: int, width: int):
    """One grid step: ``BLOCKS_PER_STEP`` blocks, each ``8 * P`` products (``P = 128 / width``) summed per
    row into the result.

    ``x_vmem`` holds ``X_PAD_ROWS`` zero rows, then ``x`` 128 elements per
    row (``P`` rows of ``x`` of ``width`` elements each), then zeros;
    ``o_vmem`` the result the same way (without the zero rows ahead). The
    result is written back at the last step. The blocks' products go to
    ``acc_vmem`` (one block per 8 rows), and the step's segmented scan and
    row totals then run on all of them at once: a scan step's lane rotation
    has a long latency, which one block alone waits out at each of its
    steps. ``unroll``: slots of a segment per iteration of the slot loop
    (``P`` or more: no loop). Integer constants are int32, as Mosaic's
    indices are, with or without ``jax_enable_x64``.
    """
    load_resident(x_hbm, x_vmem, o_vmem, sem)

    per = LANES // width
    wbits = int(np.log2(width))
    rows_per_block = SUBLANES // width  # rows of a block's slot tables (``seg_cols``, values, ``seg_ends``)
    step_rows = SUBLANES * BLOCKS_PER_STEP
    sub = jax.lax.broadcasted_iota(np.int32, (SUBLANES, LANES), 0)
    lane = jax.lax.broadcasted_iota(np.int32, (SUBLANES, LANES), 1)
    slot_of_lane = jax.lax.shift_right_logical(lane, np.int32(wbits))  # the slot of its segment a lane serves
    column = jnp.bitwise_and(lane, np.int32(width - 1))  # and its column of x
    # where a lane's slot sits in its block's slot rows: row sublane // width (row_of_sub), lane
    # (sublane % width) * P + slot (expand)
    expand = jnp.bitwise_and(sub, np.int32(width - 1)) * np.int32(per) + slot_of_lane
    row_of_sub = jax.lax.shift_right_logical(sub, np.int32(wbits))
    zero = jnp.zeros((SUBLANES, LANES), o_vmem.dtype)
    pad_row = np.int32(o_vmem.shape[0] - SUBLANES)  # the result's row of padding segments (``_out_rows``)

    def lane_table(ref, b):  # block b's slot table, one value per lane: (8, 128); b an int32 or a Python int
        if width == 1:
            return ref[pl.ds(b * SUBLANES, SUBLANES), :]
        t = None
        for r in range(rows_per_block):
            row = jnp.broadcast_to(ref[pl.ds(b * rows_per_block + r, 1), :], (SUBLANES, LANES))
            t = row if r == 0 else jnp.where(row_of_sub == r, row, t)
        return jnp.take_along_axis(t, expand, axis=1, mode="promise_in_bounds")

    def block(_, b):  # b: the block, an int32 carry (fori_loop's index is int64 under jax_enable_x64)
        cols = lane_table(cols_ref, b)
        if width == 1:
            lanes_of_x = jnp.bitwise_and(cols, np.int32(LANES - 1))
        else:  # slot c's row of x: lanes (c % P) * width ... + width - 1 of packed row c // P
            lanes_of_x = jnp.bitwise_and(cols, np.int32(per - 1)) * np.int32(width) + column
        base = b * np.int32(SUBLANES * per)

        def row_of(j, i):  # the first row of x that slot (i, j) loads
            return addr_ref[0, 0, base + j * np.int32(SUBLANES) + np.int32(i)]

        def lane_step(j, xg):  # the 8 slots j (int32): 8 row loads, 7 selects, one lane gather
            v = None
            for i in range(SUBLANES):
                rows8 = x_vmem[pl.ds(row_of(j, i), SUBLANES), :]
                v = rows8 if i == 0 else jnp.where(sub == i, rows8, v)
            picked = jnp.take_along_axis(v, lanes_of_x, axis=1, mode="promise_in_bounds")
            return jnp.where((lane if width == 1 else slot_of_lane) == j, picked, xg)

        if unroll >= per:
            xg = zero
            for j in range(per):
                xg = lane_step(np.int32(j), xg)
        else:
            step_lane = lambda _, c: (c[0] + np.int32(1), lane_step(*c))  # noqa: E731
            _, xg = jax.lax.fori_loop(0, per, step_lane, (np.int32(0), zero), unroll=unroll)
        acc_vmem[pl.ds(b * np.int32(SUBLANES), SUBLANES), :] = xg * lane_table(vals_ref, b)
        return b + np.int32(1)

    # Grid-step padding (whole steps of padding blocks, the shape buckets) is skipped; a real step's padding
    # blocks add zeros to the padding row.
    @pl.when(out_ref[0, 0, 0] < pad_row)
    def _():
        jax.lax.fori_loop(0, BLOCKS_PER_STEP, block, np.int32(0))
        acc = acc_vmem[...]  # (8 * BLOCKS_PER_STEP, 128): the step's products, block by block
        if width == 1:
            ends = ends_ref[...]
        else:
            ends = jnp.concatenate([lane_table(ends_ref, b) for b in range(BLOCKS_PER_STEP)], axis=0)
        lanes = jax.lax.broadcasted_iota(np.int32, (step_rows, LANES), 1)
        start = jnp.bitwise_and(ends, np.int32(0xFFFF))
        last = jax.lax.shift_right_arithmetic(ends, np.int32(16))
        if width > 1:  # slots to lanes: each slot's lane of this column
            columns = jnp.bitwise_and(lanes, np.int32(width - 1))
            start = jax.lax.shift_left(start, np.int32(wbits)) + columns
            last = jax.lax.shift_left(last, np.int32(wbits)) + columns
        zeros = jnp.zeros((step_rows, LANES), o_vmem.dtype)
        shift = width
        while shift < LANES:  # segmented inclusive scan: each lane sums its row's lanes up to it
            acc = acc + jnp.where(lanes - np.int32(shift) >= start, pltpu.roll(acc, np.int32(shift), 1), zeros)
            shift *= 2
        totals = jnp.take_along_axis(acc, jnp.maximum(last, 0), axis=1, mode="promise_in_bounds")
        totals = jnp.where(last >= 0, totals, zeros)
        for i in range(step_rows):  # each segment's row totals onto its window's row of the result
            row = out_ref[0, 0, i]
            o_vmem[pl.ds(row, 1), :] += totals[i:i + 1, :]

    store_resident(o_vmem, o_hbm, sem)


def _interpret() -> bool:
    return jax.default_backend() != "tpu"


def table_width(addr) -> int:
    """The columns of ``x`` (``width``) the tables with this ``seg_addr`` serve (``segmented_tables``)."""
    return LANES * SUBLANES * BLOCKS_PER_STEP // int(addr.shape[-1])


def segmented_kernel(values, out, addr, cols, ends, x, *, shape, interpret: bool | None = None,
                     unroll: int | None = None):
    """``A @ x`` for float32 ``x`` of shape ``(k,)`` (tables of width 1) or ``(k, width)``: the Pallas
    kernel (interpret mode off a TPU).

    ``values`` (slots,) in slot order; ``out``, ``addr``, ``cols``,
    ``ends``: ``segmented_tables``'s, whose ``width`` (``table_width``) must
    be ``x``'s columns; ``unroll``: slots of a segment per iteration of the
    kernel's slot loop (None: ``LANE_UNROLL``, or ``INTERPRET_LANE_UNROLL``
    in interpret mode). Returns ``(m,)`` or ``(m, width)``. Raises
    ``ValueError`` where ``x``'s columns are not the tables' width.
    """
    m, k = shape
    width = table_width(addr)
    n = 1 if x.ndim == 1 else x.shape[1]
    if n != width or (x.ndim == 1) != (width == 1):
        raise ValueError(f"segmented_kernel: tables of width {width} take x of shape "
                         f"{(k,) if width == 1 else (k, width)}, got {x.shape}")
    steps = out.shape[0]
    dtype = jnp.result_type(values, x)
    kr, mr = _x_rows(k, width), _out_rows(m, width)
    flat = x.astype(dtype).reshape(-1)
    xs = jnp.pad(flat, (X_PAD_ROWS * LANES, kr * LANES - X_PAD_ROWS * LANES - k * width)).reshape(kr, LANES)
    interpret = _interpret() if interpret is None else interpret
    if unroll is None:
        unroll = INTERPRET_LANE_UNROLL if interpret else LANE_UNROLL
    smem = functools.partial(pl.BlockSpec, memory_space=pltpu.SMEM)
    vmem = pl.BlockSpec((SUBLANES * BLOCKS_PER_STEP // width, LANES), lambda s: (s, 0))
    call = pl.pallas_call(
        functools.partial(_kernel, unroll=max(1, int(unroll)), width=width),
        out_shape=jax.ShapeDtypeStruct((mr, LANES), dtype),
        grid=(steps,),
        in_specs=[smem((1, 1, SUBLANES * BLOCKS_PER_STEP), lambda s: (s, 0, 0)),
                  smem((1, 1, addr.shape[-1]), lambda s: (s, 0, 0)),
                  vmem, vmem, vmem, pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((kr, LANES), dtype), pltpu.VMEM((mr, LANES), dtype),
                        pltpu.VMEM((SUBLANES * BLOCKS_PER_STEP, LANES), dtype), pltpu.SemaphoreType.DMA(())],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=vmem_limit_bytes()),
        interpret=interpret,
    )
    y = call(out, addr, cols, values.astype(dtype).reshape(-1, LANES), ends, xs).reshape(-1)[:m * width]
    return y if width == 1 else y.reshape(m, width)


def segmented_reference(values, rows, cols, x, *, shape):
    """``A @ x`` from the slots in XLA: a COO product (a gather of ``x`` per slot, a segment sum over rows
    sorted as the tables keep them) for ``x`` of shape ``(k,)`` or ``(k, n)``.

    Padding slots (column ``k``, the row of the slot before them) gather a
    row of zeros added after ``x``, so they add nothing whatever ``x``
    holds. On a TPU, ``x`` of 2 to 127 columns is gathered as rows of 128
    (zeros added in the same copy): XLA gathers narrower rows there about 3x
    slower than whole 128-lane rows (a random 10^6 x 10^6 matrix with 10^7
    entries and 16 columns: 884 ms, against 261 padded; TPU v5e,
    2026-12-06).
    """
    from .coo import coo_matmat

    m, k = shape
    dtype = jnp.result_type(values, x)
    n = x.shape[1] if x.ndim == 2 else 0
    lanes = 1 < n < LANES and jax.default_backend() == "tpu"
    pad = ((0, 1),) + (((0, LANES - n if lanes else 0),) if x.ndim == 2 else ())
    y = coo_matmat(values.astype(dtype), rows.reshape(-1), cols.reshape(-1), jnp.pad(x.astype(dtype), pad), m,
                   rows_sorted=True)
    return y[:, :n] if lanes else y


# --- the primitive --------------------------------------------------------------------------------------

segmented_matvec_p = Primitive("bcoo_array_segmented_matvec")


def segmented_matvec(values, out, addr, cols, rows, ends, x, *, shape, use_kernel: bool = True,
                     unroll: int | None = None):
    """``A @ x`` from the block tables of ``segmented_tables``: ``x`` of shape ``(k,)`` to ``(m,)``, or
    ``(k, n)`` to ``(m, n)``.

    The kernel (``segmented_kernel``) takes the tables' ``width`` columns of
    ``x`` per call (``table_width``; the last call's padded with zeros), so
    ``n`` columns cost ``ceil(n / width)`` calls, made in a loop (one kernel
    in the program, compiled once). ``use_kernel=False`` takes
    the XLA formula (``segmented_reference``), as does any ``x`` but float32
    or one that does not fit VMEM (``fits``); ``unroll``: the kernel's.
    Differentiable in ``values`` and ``x``, batchable over both.
    """
    return segmented_matvec_p.bind(values, out, addr, cols, rows, ends, x, shape=tuple(shape),
                                   use_kernel=bool(use_kernel), unroll=None if unroll is None else int(unroll))


def _impl(values, out, addr, cols, rows, ends, x, *, shape, use_kernel, unroll):
    dtype = jnp.result_type(values, x)
    m, k = shape
    if m == 0 or x.size == 0:
        return jnp.zeros((m,) + x.shape[1:], dtype)
    width = table_width(addr)
    if not (use_kernel and np.dtype(dtype) == np.float32 and k > 0 and fits(shape, width)):
        return segmented_reference(values, rows, cols, x, shape=shape)
    kernel = functools.partial(segmented_kernel, values, out, addr, cols, ends, shape=shape, unroll=unroll)
    if x.ndim == 1:
        return kernel(x) if width == 1 else kernel(jnp.pad(x[:, None], ((0, 0), (0, width - 1))))[:, 0]
    n = x.shape[1]
    groups = -(-n // width)
    xw = jnp.pad(x, ((0, 0), (0, groups * width - n)))
    if groups == 1:
        return (kernel(xw[:, 0])[:, None] if width == 1 else kernel(xw))[:, :n]
    # one call per group of columns in a loop: one kernel in the program (a wide one compiles in ~25 s)
    xg = jnp.moveaxis(xw.reshape(k, groups, width), 1, 0)  # (groups, k, width)
    ys = jax.lax.map(kernel, xg[..., 0] if width == 1 else xg)  # (groups, m) or (groups, m, width)
    y = ys.T if width == 1 else jnp.moveaxis(ys, 0, 1).reshape(m, groups * width)
    return y[:, :n]


segmented_matvec_p.def_impl(_impl)


@segmented_matvec_p.def_abstract_eval
def _abstract(values, out, addr, cols, rows, ends, x, *, shape, use_kernel, unroll):
    return jax.core.ShapedArray((shape[0],) + x.shape[1:], jnp.result_type(values.dtype, x.dtype))


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
    if dv is None and table_width(addr) > 1:  # a mapped x: more columns of one product
        x = jnp.moveaxis(x, dx, 1)  # (k, B) or (k, B, n)
        k, B = x.shape[:2]
        y = product(values, *tables, x.reshape(k, -1))
        return y.reshape((shape[0], B) + x.shape[2:]), 1
    # one product per mapped vector (tables of width 1 take one column per call anyway)
    if dv is not None and dx is not None:
        pairs = (jnp.moveaxis(values, dv, 0), jnp.moveaxis(x, dx, 0))
        return jax.lax.map(lambda a: product(a[0], *tables, a[1]), pairs), 0
    if dv is not None:
        return jax.lax.map(lambda v: product(v, *tables, x), jnp.moveaxis(values, dv, 0)), 0
    return jax.lax.map(lambda z: product(values, *tables, z), jnp.moveaxis(x, dx, 0)), 0


batching.primitive_batchers[segmented_matvec_p] = _batch
