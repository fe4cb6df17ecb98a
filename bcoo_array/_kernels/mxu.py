"""Products with many right-hand sides on the MXU: dense ``(8, 128)`` blocks of the matrix, ``x`` resident in VMEM.

The SELL-8 kernel (``.sell``) adds one scaled row of ``x`` per stored entry,
about 2.3 ns per entry on a TPU v5e with 128 columns, bound by its scalar
work. The chip's matrix unit (MXU) has no such bound: a dense block of the
matrix times a panel of ``x`` is one matrix product, whatever the number of
stored entries in the block. Where a matrix's entries cluster (meshes,
stencils, graphs after a reverse Cuthill-McKee ordering), dense ``(8, 128)``
blocks, mostly zeros, are cheaper than per-entry work:

- The matrix is cut into *blocks* of 8 rows by 128 columns (a *row block*
  by a column *panel*); every block holding an entry is stored dense,
  float32, zeros elsewhere (4 KiB each).
- Blocks are ordered by panel, ``SUBGROUP`` of one panel per *sub-group*
  (each panel's blocks padded to a whole number of sub-groups with empty
  blocks that add zeros to a spare row block), ``GROUP`` blocks per
  *group*. A sub-group is one ``(8 * SUBGROUP, 128) @ (128, 128)`` product
  on the MXU against its panel of ``x`` (float32 precision:
  ``Precision.HIGHEST``), whose ``SUBGROUP`` row blocks of 8 are then
  added to the result, resident in VMEM like ``x`` (``.sell.load_resident``).
- ``A.T @ x`` takes the same blocks: a sub-group's transposed product
  ``blocks.T @ x[its row blocks]`` is one ``(128, 8 * SUBGROUP) @ (8 *
  SUBGROUP, 128)`` product added to the result's rows of its panel, so
  one set of blocks serves both orientations.
- Where a square matrix's reverse Cuthill-McKee order needs fewer blocks,
  a layout may keep the blocks of that order (``.layouts._mxu_blocks``)
  beside its own: ``x`` goes in permuted and the result comes out put
  back (``mxu_matmat``'s ``perm`` and ``inverse``), by the kernel itself
  in VMEM, a row at a time: ``x`` comes in by chunks whose rows are
  scattered to their places while the next chunks arrive
  (``_load_permuted``), and the result's rows are gathered back a chunk at
  a time, each chunk copied out while the next is gathered
  (``_store_permuted``). On a TPU v5e (nh2010, 128 columns, in a loop):
  0.602 ms against 0.363 for the kernel alone, so 2.45 ns per row moved
  (``.device_data/probe_p16.py``, fourteenth session; 0.684 with the whole
  copies in and out before and after the moves, not unrolled, and 0.725
  with two XLA row gathers around the kernel, ``probe_kperm.py``).
- A grid step brings ``GROUPS_PER_STEP`` groups' blocks into VMEM (the
  pipeline overlaps the next step's copy) and a small table of their
  panels and row blocks into SMEM.

A stored zero of a block times an ``inf`` or NaN of ``x`` is NaN, where a
sparse product adds nothing, and the six-pass product splits an ``inf``
(of ``x`` or of a value) into bfloat16 parts ``inf`` and ``inf - inf``,
so an ``inf`` entry times a finite ``x`` gives NaN where the sparse
product gives ``inf`` (measured on a TPU v5e, cage11 with one ``inf``
value: ``.device_data/probe_split.py``, 2026-12-07). So the kernel also
reports whether its result is finite (a pass over it in VMEM at the last
grid step), and where it is not the product is the COO formula on the
SELL-8 slots of the same layout (``.sell.sell_reference``; exact sparse
semantics). A finite result means no ``inf`` or NaN met the product: it
is the sparse product's. (A finite ``x`` or value beyond bfloat16's
range, above about 3.39e38, overflows the split too: its non-finite
result takes the same COO formula.)

Measured on a TPU v5e (``.device_data/probe_mxu.py``, 128 columns, in a
loop, blocks of 8 x 128, 32 per group; 2026-12-06): nh2010 after RCM 0.59
ms (SELL-8 1.08; jax.experimental.sparse 4.06), cage11 0.84 (1.68), delaunay_n16 after
RCM 0.80 (1.75), bayer10 0.17 (0.39), bcsstk16 0.11 (0.74): about 15 ns
per block beyond the resident copies, mostly its 4 KiB of values streamed
from HBM and the MXU's six passes of a float32 product (the one-pass
``Precision.DEFAULT`` was 1.3-1.7x faster but off by 3e-3). Relative error
against scipy's float64 product: at most 2.1e-7. Through a layout, the
blocks are the last part of the operator's flat value buffer, starting at
a multiple of ``STEP_VALUES``: the kernel reads them from the whole buffer
(a 1-D block of a grid step's values at the part's offset, reshaped to
``(rows, 128)`` in VMEM), because XLA copies a slice handed to a kernel
(0.8 ms for cage11's 224 MiB, which took its gain away: 1.51 ms against
0.85 read in place, ``.device_data/probe_nocopy.py``, 2026-12-07). ``x``
and the result stay unpadded in HBM (the kernel pads its VMEM copies),
and the grid steps that pad the table to a size bucket copy no values (a
scalar-prefetched count of real steps clamps the values' index map):
cage11 0.83 ms against 0.88 (``.device_data/probe_resident.py``).
A grid step's groups run unrolled, without a branch per group (a padding
group adds zeros to rows past the result's), so that one group's product on
the MXU overlaps another's additions to the result (``GROUP_UNROLL``):
delaunay_n16 0.93 -> 0.73 ms, cage11 0.78 -> 0.57. Through the layouts
(``benchmarks/accelerator.py``, 128 columns in a loop, 2026-12-07): bcsstk16
0.049 ms (70x jax.experimental.sparse), bayer10 0.11-0.12 (8.6-9.9x),
cage11 0.58 (17.9x), delaunay_n16 0.71 (10.0x). Sub-groups of 16 blocks
in place of one panel per group of 32 (thirteenth session, kernel alone,
``.device_data/probe_sub.py``; ``A @ X`` / ``A.T @ X``, ms): bayer10 0.109
/ 0.103 -> 0.098 / 0.092 (6,304 blocks computed for its 4,371 -> 5,200),
delaunay_n16 0.726 / 0.718 -> 0.695 / 0.702, cage11 0.557 / 0.553 -> 0.532
/ 0.532. Sub-groups of 8 were faster still for ``A @ X`` (0.090, 0.669,
0.517) but slower for ``A.T @ X`` (0.131, 1.015, 0.906: a transposed
product contracts over the sub-group's 64 rows, half the MXU's 128).
Through the layouts: bayer10 0.094 ms (11.2x), delaunay_n16 0.685-0.691
(10.3x), cage11 0.548 (18.8x), nh2010's RCM blocks 0.726-0.768 (5.3-5.6x,
against 1.048 on its SELL-8 slots).

The product is the primitive ``mxu_matmat_p``, linear in ``x`` and in its
two value copies *together* (the blocks' values and the SELL slots', parts
of one value buffer in the layouts, so that they always carry the same
values and tangents): its JVP binds it again; its transpose in ``x`` is
the product of the other orientation (the same blocks; its COO formula
the transpose of this orientation's slots' formula, ``flipped``: until
2026-12-07 it was their product again, ``A @ ct`` for ``A.T @ ct``
wherever the formula served a gradient), in the values JAX's transpose of
the SELL slots' COO formula (the stored entries' cotangents, none on the
blocks' stored zeros), the blocks getting zeros. A mapped ``x`` becomes
more right-hand sides (a ``vmap`` of a product with a matrix ``x``; a
``vmap`` over vectors becomes one product with as many columns through
``.accel.vector_product_p``, and reaches the blocks as a matrix ``x`` does:
128 vectors of cage11 0.81 ms in a loop against 1.69 on the one-vector
kernels' own batching, TPU v5e, 2026-12-07). Off a TPU the COO
formula on the SELL slots is the portable path; the kernel runs in Pallas
interpret mode in the tests.
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

from . import sell as _sell
from .coo import coo_matmat
from .costs import COSTS
from .host import unique_counts, unique_inverse

#: Rows of a block (sublanes) and its columns (lanes; also the right-hand sides one kernel call takes).
BLOCK_ROWS = 8
LANES = 128

#: Blocks a grid step's loop takes at a time (the group's rows: ``8 * GROUP``). Timed on a TPU v5e (nh2010
#: after RCM, 128 columns, one panel per group, a branch per group): 8 per group 0.81 ms, 16 0.65, 32 0.59.
GROUP = 32

#: Blocks of one panel that share one MXU product (a *sub-group*, ``GROUP // SUBGROUP`` of them per group,
#: each of its own panel): each panel's blocks are padded to a multiple of ``SUBGROUP``, not of ``GROUP``.
#: Timed on a TPU v5e (128 columns, kernel alone, in a loop, ``.device_data/probe_sub.py``, 2026-12-07;
#: ``A @ X`` / ``A.T @ X``, ms): 32 (one panel per group, before) bayer10 0.109 / 0.103, delaunay_n16 0.726
#: / 0.718, cage11 0.557 / 0.553, nh2010 after RCM 0.382 / 0.373; 16: 0.098 / 0.092, 0.695 / 0.702, 0.532
#: / 0.532, 0.360 / 0.359; 8: 0.090 / 0.131, 0.669 / 1.015, 0.517 / 0.906, 0.344 / 0.538 (a transposed
#: product of 8 blocks contracts over 64 rows, half the MXU's depth).
SUBGROUP = 16

#: Groups one grid step brings into VMEM (2 MiB of values; a grid step costs about 0.35 us).
GROUPS_PER_STEP = 16

#: Values of a grid step's blocks (2 MiB of float32): the blocks' part of a buffer starts at a multiple of it.
STEP_VALUES = GROUPS_PER_STEP * GROUP * BLOCK_ROWS * LANES

#: Groups of a grid step unrolled in the kernel's loop (no branch between them), so that the MXU product of
#: one overlaps the additions of another: all of them. Timed on a TPU v5e (128 columns, in a loop;
#: delaunay_n16, cage11, bayer10; ms; ``.device_data/probe_bf16.py``, 2026-12-07): a branch per group
#: skipping the padding ones (before) 0.925, 0.779, 0.131; no branch, unrolled 1: 0.921, 0.757, 0.144;
#: 2: 0.842, 0.669, 0.121; 4: 0.778, 0.613, 0.117; 8: 0.746, 0.578, 0.117; 16: 0.726, 0.567, 0.114
#: (``A.T @ X`` 0.720, 0.556, 0.111 against 0.996, 0.861, 0.146 unrolled 1).
GROUP_UNROLL = GROUPS_PER_STEP

#: Fields of a group in the step table: its sub-groups' panels, then its ``GROUP`` row blocks.
GROUP_FIELDS = GROUP // SUBGROUP + GROUP

#: Most bytes of blocks a layout keeps (the matrix's blocks serve its transpose too).
MAX_BYTES = 1 << 30

#: Largest share of the SELL-8 slots' price (128 columns) at which a layout keeps the blocks: their memory
#: (tens of times the entries') only for a clear gain. On a TPU v5e (ninth session), cage11's blocks, priced
#: at 0.55 of its slots, ran at 0.48 of their time (0.81 against 1.69 ms); delaunay_n16's at 0.64, 0.57.
#: nh2010's blocks of its RCM order (thirteenth session, two row permutations per product), priced at 0.77,
#: ran at 0.69 (0.726 against 1.048 ms; 117 MiB): 0.8 keeps them (0.75 before).
KEEP_MAX_SHARE = 0.8

#: Rows of the result the kernel's finiteness check reads per iteration.
CHECK_ROWS = 128

#: Whether a product given its SELL-8 slots' step table (``mxu_matmat``'s ``s_table``; the layouts give it)
#: replaces a non-finite result by the slots' own kernel (``.sell.sell_redo``: aliased to the result, idle
#: where it is finite, no XLA control flow) rather than a ``lax.cond`` on a COO formula. On a TPU v5e (128
#: columns, in a loop, the operator an argument; ``.device_data/probe_gap3.py``, seventeenth session) the
#: ``cond`` costs 0.035 ms beyond the kernel on bayer10 (0.102 against 0.067 ms: 0.019 for any ``cond``
#: or ``while_loop``, even with a trivial other branch, and 0.016 more for the COO formula's branch,
#: never taken) and 0.017 on bcsstk16 (0.052 against 0.035). Off until the redo kernel is compiled and
#: timed on a chip: it runs in interpret mode only so far (no device time was left that session).
REDO_KERNEL = False

_HIGHEST = jax.lax.Precision.HIGHEST


def _round_up(n: int, unit: int) -> int:
    return -(-max(int(n), 1) // unit) * unit


def padded_rows(shape, transpose: bool) -> tuple[int, int]:
    """Rows of the kernel's resident ``x`` and result for a matrix of ``shape`` ``(m, k)``: ``x`` is read
    by 128-row panels (``k`` rounded up to 128) and the result written by row blocks of 8 (one spare row
    block for the padding blocks, then up to 128); swapped for ``A.T @ x``. Both are multiples of 128."""
    m, k = shape
    panels = _round_up(k, LANES)
    blocks = _round_up((-(-m // BLOCK_ROWS) + 1) * BLOCK_ROWS, CHECK_ROWS)
    return (blocks, panels) if transpose else (panels, blocks)


def fits(shape) -> bool:
    """Whether the kernel's resident ``x`` and result (either orientation, 128 columns of float32) fit
    the VMEM the SELL-8 kernel keeps for them (``.sell.resident_max_bytes``) beside the pipeline's two
    buffers of a grid step's blocks."""
    step_bytes = GROUPS_PER_STEP * GROUP * BLOCK_ROWS * LANES * 4
    return sum(padded_rows(shape, False)) * LANES * 4 + 2 * step_bytes <= _sell.resident_max_bytes()


def value_count(table) -> int:
    """Values in the flat buffer of the blocks of a step ``table`` (``block_tables``): 1,024 per block."""
    return int(table.shape[0]) * STEP_VALUES


def part_start(n_before: int) -> int:
    """Where a value buffer's blocks' part starts after ``n_before`` other values: the next multiple of
    ``STEP_VALUES`` (the kernel reads the part in place, a grid step's values a block)."""
    return -(-int(n_before) // STEP_VALUES) * STEP_VALUES


def read_table(table):
    """Host: a step ``table`` (``block_tables``) as ``(panels, row_blocks)``, NumPy int32 arrays of one
    entry per block in the blocks' order: each block's panel (its sub-group's) and row block."""
    t = np.asarray(table).reshape(-1, GROUP_FIELDS)
    subs = GROUP // SUBGROUP
    return np.repeat(t[:, :subs].reshape(-1), SUBGROUP), t[:, subs:].reshape(-1)


def stored_blocks(table, m: int) -> int:
    """Host: the blocks of a step ``table`` (``block_tables``, a matrix of ``m`` rows) that hold entries
    (the others pad sub-groups and grid steps)."""
    return int(np.count_nonzero(read_table(table)[1] != -(-m // BLOCK_ROWS)))


def _block_keys(rows, cols, m: int):
    """Each entry's block as one key, ordered by panel, then row block: ``panel * n_rb + row_block``,
    ``n_rb`` the row blocks of ``m`` rows plus the spare one. Returns ``(keys, n_rb)``."""
    n_rb = -(-m // BLOCK_ROWS) + 1
    rows = np.asarray(rows, np.int64).reshape(-1)
    cols = np.asarray(cols, np.int64).reshape(-1)
    return (cols // LANES) * n_rb + rows // BLOCK_ROWS, n_rb


def _steps(padded_blocks: int, pad) -> int:
    """Grid steps of ``padded_blocks`` blocks (whole sub-groups), at least one, ``pad`` applied as in
    ``block_tables``."""
    steps = max(1, -(-padded_blocks // (GROUP * GROUPS_PER_STEP)))
    return steps if pad is None else max(steps, int(pad(steps)))


def block_count(rows, cols, shape, pad=None) -> int:
    """Host: blocks ``block_tables`` stores for the unique entries ``(rows, cols)`` (each panel's padded
    to a whole number of sub-groups, and the groups to whole grid steps, ``pad`` as there), without
    building them."""
    keys, n_rb = _block_keys(rows, cols, shape[0])
    per_panel = np.bincount(unique_counts(keys)[0] // n_rb) if len(keys) else np.zeros(1, np.int64)
    return _steps(int((-(-per_panel // SUBGROUP) * SUBGROUP).sum()), pad) * GROUPS_PER_STEP * GROUP


def mxu_cost(n_blocks: int, n_rhs: int, shape, permuted: bool = False) -> float:
    """The price of a product of ``n_rhs`` right-hand sides on ``n_blocks`` blocks (``.costs.COSTS["tpu"]``,
    bytes-equivalent): ``mxu_block`` per block, ``mxu_call`` and the resident ``x`` and result copied in and
    out, per 128 columns; ``permuted``: blocks of a reordered matrix, plus the row permutations of ``x`` and
    of the result (``mxu_permute_row`` per row, whatever the columns up to 128: a TPU's HBM stores rows of
    fewer lanes padded to 128)."""
    calls = -(-max(int(n_rhs), 1) // LANES)
    resident = sum(padded_rows(shape, False)) * LANES * 4
    permute = sum(shape) * COSTS["tpu"]["mxu_permute_row"] if permuted else 0.0
    return calls * (n_blocks * COSTS["tpu"]["mxu_block"] + COSTS["tpu"]["mxu_call"] + resident + permute)


def worth_keeping(n_blocks: int, n_sell_slots: int, shape, permuted: bool = False) -> bool:
    """Whether a layout keeps ``n_blocks`` blocks (``permuted``: of its reordered matrix) beside its
    ``n_sell_slots`` SELL-8 slots: they take at most ``MAX_BYTES`` and a product of 128 columns is priced
    on them (``mxu_cost``) at most ``KEEP_MAX_SHARE`` of its price on the slots (``.sell.sell_cost``)."""
    if n_blocks * BLOCK_ROWS * LANES * 4 > MAX_BYTES:
        return False
    price = mxu_cost(n_blocks, LANES, shape, permuted)
    return price <= KEEP_MAX_SHARE * _sell.sell_cost(n_sell_slots, LANES, shape, True)


def block_tables(rows, cols, shape, pad=None):
    """Host: the dense blocks of unique entries ``(rows, cols)`` of a matrix of ``shape``, in groups.

    Returns ``(slot, table)``:

    - ``slot`` (nnz,) int64: each entry's place in the blocks' flat value
      buffer of ``steps * GROUPS_PER_STEP * GROUP * 8 * 128`` values (block
      ``b``'s element ``(i, j)`` at ``(b * 8 + i) * 128 + j``);
    - ``table`` (steps, GROUPS_PER_STEP * GROUP_FIELDS) int32: per group the
      panel of each of its ``GROUP // SUBGROUP`` sub-groups, then the row
      block of each of its ``GROUP`` blocks (the spare row block ``ceil(m /
      8)`` for padding blocks; padding sub-groups read panel 0);
      ``read_table`` reads it back.

    Blocks are ordered by panel, then row block, each panel's padded to a
    whole number of sub-groups. ``pad``: a function of the
    step count giving the steps to keep (``.layouts`` pads to size buckets),
    or None. Raises ``ValueError`` where an index is negative or out of
    ``shape``.
    """
    m, k = shape
    rows = np.asarray(rows, np.int64).reshape(-1)
    cols = np.asarray(cols, np.int64).reshape(-1)
    if len(rows) != len(cols):
        raise ValueError(f"block_tables: rows and cols differ in length ({len(rows)} and {len(cols)})")
    if len(rows) and (min(rows.min(), cols.min()) < 0 or rows.max() >= m or cols.max() >= k):
        raise ValueError(f"block_tables: rows and cols must index a matrix of shape {tuple(shape)}")
    keys, n_rb = _block_keys(rows, cols, m)
    spare = n_rb - 1
    n_panels = -(-max(k, 1) // LANES)
    keys, inverse = unique_inverse(keys)
    panel, row_block = keys // n_rb, keys % n_rb
    per_panel = np.bincount(panel, minlength=n_panels)
    padded = -(-per_panel // SUBGROUP) * SUBGROUP
    first_padded = np.cumsum(padded) - padded
    first = np.cumsum(per_panel) - per_panel
    place = first_padded[panel] + np.arange(len(keys)) - first[panel]  # each block's place
    steps = _steps(int(padded.sum()), pad)
    total_groups = steps * GROUPS_PER_STEP
    block_rb = np.full(total_groups * GROUP, spare, np.int64)
    block_rb[place] = row_block
    sub_panel = np.zeros(total_groups * (GROUP // SUBGROUP), np.int64)
    sub_panel[place // SUBGROUP] = panel
    table = np.concatenate([sub_panel.reshape(total_groups, -1), block_rb.reshape(total_groups, GROUP)], axis=1)
    slot = (place[inverse] * BLOCK_ROWS + rows % BLOCK_ROWS) * LANES + cols % LANES
    return slot, table.reshape(steps, GROUPS_PER_STEP * GROUP_FIELDS).astype(np.int32)


# --- the kernel -----------------------------------------------------------------------------------------

#: Entries of the inverse order one DMA brings into SMEM (two such buffers: the next chunk's copy overlaps
#: the rows the current one moves), and rows of ``x`` or of the result per DMA in or out.
PERM_CHUNK = 1024
#: Row copies (DMAs of ``PERM_CHUNK`` rows of ``x`` in, or of the result out) in flight at once.
PERM_COPIES = 4
#: Groups of 8 row moves per iteration of the move loop. On a TPU v5e (nh2010's RCM blocks, 128 columns,
#: in a loop, ``.device_data/probe_ptile.py``, fourteenth session; ``A @ X`` ms, the whole of ``x`` copied
#: in before the moves): one row load and store each, not unrolled 0.686, unrolled by 4 0.625; 8 rows
#: loaded and stored as one aligned 8-row tile, built by a concatenation 0.712 (unrolled by 2: 0.664) or
#: by selects 0.693 (0.652).
PERM_UNROLL = 4


def _fetch_order(idx_hbm, idx_smem, idx_sems, c):
    """The DMA of chunk ``c`` (an int32) of the order (``PERM_CHUNK`` entries) into SMEM buffer ``c % 2``."""
    # (int32 offsets: under jax_enable_x64 a Python int would lower as i64, which Mosaic's slices refuse)
    return pltpu.make_async_copy(idx_hbm.at[pl.ds(pl.multiple_of(c * np.int32(PERM_CHUNK), PERM_CHUNK), PERM_CHUNK)],
                                 idx_smem.at[c % np.int32(2)], idx_sems.at[c % np.int32(2)])


def _move_rows(n_rows: int, move) -> None:
    """``move(i)`` for ``i`` in ``range(n_rows)`` (static ``n_rows``): groups of 8 in a loop unrolled by
    ``PERM_UNROLL`` (``i`` an int32, as in ``_kernel``), the remainder after it."""
    def rows8(_, g):
        for j in range(8):
            move(g * np.int32(8) + np.int32(j))
        return g + np.int32(1)

    if n_rows // 8:
        jax.lax.fori_loop(0, n_rows // 8, rows8, np.int32(0), unroll=min(PERM_UNROLL, n_rows // 8))
    for i in range(n_rows // 8 * 8, n_rows):
        move(jnp.int32(i))  # (a traced int32, as in the loop: Mosaic lowers no NumPy scalar as an index)


def _row_copy(src, dst, sems, c, m: int, last: bool):
    """The DMA of chunk ``c`` (an int32) of ``m`` rows from ``src`` to ``dst`` at the same rows, on
    semaphore ``c % PERM_COPIES``: ``PERM_CHUNK`` rows from ``c * PERM_CHUNK``, or (``last``) the rows
    past the whole chunks."""
    if last:
        rows = pl.ds(np.int32(m // PERM_CHUNK * PERM_CHUNK), m % PERM_CHUNK)
    else:
        rows = pl.ds(pl.multiple_of(c * np.int32(PERM_CHUNK), PERM_CHUNK), PERM_CHUNK)
    return pltpu.make_async_copy(src.at[rows], dst.at[rows], sems.at[c % np.int32(PERM_COPIES)])


def _by_chunks(m: int, inv_hbm, idx_smem, idx_sems, chunk) -> None:
    """``chunk(c, rows, last, order)`` for the chunks of ``m`` rows in turn, once chunk ``c``'s slice of
    the inverse order is in SMEM (``order(i)``: its entry ``i``, an int32), the next chunk's slice coming
    meanwhile: the whole chunks (``rows == PERM_CHUNK``) two per iteration of a loop, ``c`` an int32
    carry, so the kernel holds a few copies of the code whatever ``m`` and each knows its SMEM buffer
    (``c % 2``) statically; then an odd whole chunk and the shorter one past them (``last``), if any."""
    n_chunks, full, tail = -(-m // PERM_CHUNK), m // PERM_CHUNK, m % PERM_CHUNK
    _fetch_order(inv_hbm, idx_smem, idx_sems, jnp.int32(0)).start()

    def step(c, slot: int, rows, last):
        if not last:
            @pl.when(c + np.int32(1) < np.int32(n_chunks))
            def _():
                _fetch_order(inv_hbm, idx_smem, idx_sems, c + np.int32(1)).start()

        _fetch_order(inv_hbm, idx_smem, idx_sems, c).wait()
        chunk(c, rows, last, lambda i: idx_smem[slot, i])

    def pair(_, c):
        step(c, 0, PERM_CHUNK, False)
        step(c + np.int32(1), 1, PERM_CHUNK, False)
        return c + np.int32(2)

    if full // 2:
        jax.lax.fori_loop(0, full // 2, pair, np.int32(0))
    if full % 2:
        step(jnp.int32(full - 1), (full - 1) % 2, PERM_CHUNK, False)
    if tail:
        step(jnp.int32(full), full % 2, tail, True)


def _load_permuted(x_hbm, inv_hbm, staging, x_vmem, idx_smem, idx_sems, copy_sems) -> None:
    """``x_vmem[inv[j]] = x[j]`` for the ``m`` rows of ``x_hbm`` (so ``x_vmem[i] = x[perm[i]]``): ``x``
    comes into ``staging`` (VMEM, at least ``m`` rows) ``PERM_CHUNK`` rows per DMA, ``PERM_COPIES`` in
    flight, and each chunk's rows are moved one row load and store each while the next chunks arrive."""
    m = x_hbm.shape[0]
    n_chunks, full = -(-m // PERM_CHUNK), m // PERM_CHUNK

    def start_copy(c):  # (c an int32: a whole chunk, or the last, shorter one)
        if full:
            @pl.when(c < np.int32(full))
            def _():
                _row_copy(x_hbm, staging, copy_sems, c, m, False).start()
        if full < n_chunks:
            @pl.when(c == np.int32(full))
            def _():
                _row_copy(x_hbm, staging, copy_sems, c, m, True).start()

    for c in range(min(PERM_COPIES, n_chunks)):
        start_copy(jnp.int32(c))

    def chunk(c, rows, last, order):
        _row_copy(x_hbm, staging, copy_sems, c, m, last).wait()
        first = c * np.int32(PERM_CHUNK)

        def move(i):
            x_vmem[pl.ds(order(i), 1), :] = staging[pl.ds(first + i, 1), :]

        _move_rows(rows, move)
        if not last:
            start_copy(c + np.int32(PERM_COPIES))  # (its semaphore is free: chunk c's copy is done)

    _by_chunks(m, inv_hbm, idx_smem, idx_sems, chunk)


def _store_permuted(o_vmem, inv_hbm, buf, o_hbm, idx_smem, idx_sems, copy_sems) -> None:
    """``o_hbm[r] = o_vmem[inv[r]]`` for the ``m`` rows of ``o_hbm``: gathered into ``buf`` (VMEM, at
    least ``m`` rows rounded up to 8) a chunk of ``PERM_CHUNK`` rows at a time, each chunk's DMA out
    overlapping the next chunks' rows (``PERM_COPIES`` in flight)."""
    m = o_hbm.shape[0]
    n_chunks, full = -(-m // PERM_CHUNK), m // PERM_CHUNK

    def chunk(c, rows, last, order):
        first = c * np.int32(PERM_CHUNK)

        def move(i):
            buf[pl.ds(first + i, 1), :] = o_vmem[pl.ds(order(i), 1), :]

        _move_rows(rows, move)
        if n_chunks > PERM_COPIES:
            @pl.when(c >= np.int32(PERM_COPIES))  # (chunk c - PERM_COPIES, a whole one, holds the semaphore)
            def _():
                _row_copy(buf, o_hbm, copy_sems, c - np.int32(PERM_COPIES), m, False).wait()

        _row_copy(buf, o_hbm, copy_sems, c, m, last).start()

    _by_chunks(m, inv_hbm, idx_smem, idx_sems, chunk)
    for c in range(max(0, n_chunks - PERM_COPIES), n_chunks):
        _row_copy(buf, o_hbm, copy_sems, jnp.int32(c), m, c == full).wait()


def _kernel(*refs, transpose: bool, unroll: int, permuted: bool):
    """One grid step: ``GROUPS_PER_STEP`` groups, one MXU product each, added to the resident result.

    ``n_real_ref`` (1,): the steps that hold blocks (scalar prefetch: the
    padding steps' values are not copied, their index map repeating the
    last real step's block, and they compute nothing); ``vals_ref``
    (STEP_VALUES,): the step's blocks, flat (a group's reshaped to ``(8 *
    GROUP, 128)`` in VMEM); ``x_hbm``/``o_hbm``: ``x`` and the result,
    unpadded; ``x_vmem``/``o_vmem``: the same resident, padded
    (``padded_rows``); ``ok_ref`` (8, 128): 1 where the result's column on
    that lane is finite (checked in VMEM at the last step,
    ``_finite_lanes``).

    The groups of a real step are ``unroll``ed without a branch, so that
    one group's product on the MXU overlaps the previous group's additions
    to the result: a padding group (zeros, its blocks in the spare row block
    past the result's rows, its panel 0) adds zeros (or, times an ``inf`` of
    ``x``, NaN) to rows that are neither copied out nor checked.

    ``permuted`` (blocks of a square matrix's reordering): one more input,
    ``inv_hbm`` (the inverse of the order, padded to whole ``PERM_CHUNK``s
    with zeros), and, in place of ``sem``, three scratch buffers:
    ``idx_smem`` (2, PERM_CHUNK), its DMA semaphores, and ``PERM_COPIES``
    semaphores for the chunks of rows in flight. At the first step ``x``
    comes by chunks into the result's buffer and each row is stored in
    ``x_vmem`` at its place in the order (``_load_permuted``; the rows past
    ``m`` then zeroed); at the last the result's rows are gathered back into
    ``x_vmem`` by the inverse and copied out from there a chunk at a time
    (``_store_permuted``), so no permuted copy of ``x`` or of the result
    passes through HBM.
    """
    if permuted:
        (n_real_ref, table_ref, vals_ref, x_hbm, inv_hbm, o_hbm, ok_ref, x_vmem, o_vmem, idx_smem, idx_sems,
         copy_sems) = refs
        m = o_hbm.shape[0]

        @pl.when(pl.program_id(0) == 0)
        def _():
            _load_permuted(x_hbm, inv_hbm, o_vmem, x_vmem, idx_smem, idx_sems, copy_sems)  # (o_vmem: staging)
            _sell.zero_rows_from(x_vmem, m)  # (rows past m: zeros)
            o_vmem[...] = jnp.zeros(o_vmem.shape, o_vmem.dtype)
    else:
        n_real_ref, table_ref, vals_ref, x_hbm, o_hbm, ok_ref, x_vmem, o_vmem, sem = refs
        _sell.load_resident(x_hbm, x_vmem, o_vmem, sem)

    rows, subs, sub_rows = GROUP * BLOCK_ROWS, GROUP // SUBGROUP, SUBGROUP * BLOCK_ROWS

    def group(_, g):  # g: the group, an int32 carry
        base = g * np.int32(GROUP_FIELDS)
        blocks = vals_ref[pl.ds(pl.multiple_of(g * np.int32(rows * LANES), rows * LANES), rows * LANES)]
        blocks = blocks.reshape(rows, LANES)
        row_blocks = [pl.ds(pl.multiple_of(table_ref[0, 0, base + np.int32(subs + j)] * np.int32(BLOCK_ROWS),
                                           BLOCK_ROWS), BLOCK_ROWS) for j in range(GROUP)]
        for s in range(subs):  # a sub-group: SUBGROUP blocks of one panel, one MXU product
            panel = pl.ds(pl.multiple_of(table_ref[0, 0, base + np.int32(s)] * np.int32(LANES), LANES), LANES)
            sub_blocks = blocks[s * sub_rows:(s + 1) * sub_rows]
            mine = row_blocks[s * SUBGROUP:(s + 1) * SUBGROUP]
            if transpose:  # the panel's rows of the result += blocks.T @ x[the blocks' row blocks]
                xg = jnp.concatenate([x_vmem[r, :] for r in mine], axis=0)
                o_vmem[panel, :] += _group_product(sub_blocks, xg, True)
            else:  # each row block of the result += its block @ x[the panel]
                y = _group_product(sub_blocks, x_vmem[panel, :], False)
                for j, r in enumerate(mine):
                    o_vmem[r, :] += y[j * BLOCK_ROWS:(j + 1) * BLOCK_ROWS]
        return g + np.int32(1)

    @pl.when(pl.program_id(0) < n_real_ref[0])
    def _():
        jax.lax.fori_loop(0, GROUPS_PER_STEP, group, np.int32(0), unroll=unroll)

    @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
    def _():
        ok_ref[...] = _finite_lanes(o_vmem, o_hbm.shape[0])
    if permuted:  # the result's rows put back (into x_vmem, free now) and copied out, a chunk at a time
        @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
        def _():
            _store_permuted(o_vmem, inv_hbm, x_vmem, o_hbm, idx_smem, idx_sems, copy_sems)
    else:
        _sell.store_resident(o_vmem, o_hbm, sem)


def _group_product(blocks, x, transpose: bool):
    """A sub-group's product on the MXU, float32 (``Precision.HIGHEST``: six bfloat16 passes on a TPU):
    ``blocks @ x`` (``(8 * SUBGROUP, 128) @ (128, 128)``) or ``blocks.T @ x`` (``(128, 8 * SUBGROUP) @ (8 *
    SUBGROUP, 128)``). (The tests replace it with the chip's split to run its non-finite results on a CPU.)"""
    dims = (((0,), (0,)), ((), ())) if transpose else (((1,), (0,)), ((), ()))
    return jax.lax.dot_general(blocks, x, dims, precision=_HIGHEST, preferred_element_type=jnp.float32)


def _finite_lanes(ref, rows: int):
    """``(8, 128)`` float32: 1 on the lanes whose column is finite in the first ``rows`` rows of ``ref``
    (a VMEM ref of ``(r, 128)``, ``r`` a multiple of ``CHECK_ROWS`` and at least ``rows``), else 0."""
    def finite(chunk):
        ones = jnp.where(jnp.isfinite(chunk), np.float32(1), np.float32(0))
        return jnp.min(ones.reshape(CHECK_ROWS // 8, 8, LANES), axis=0)

    def check(_, carry):  # (an int32 carry of the chunk: fori_loop's index is int64 under jax_enable_x64)
        i, ok = carry
        chunk = ref[pl.ds(pl.multiple_of(i * np.int32(CHECK_ROWS), CHECK_ROWS), CHECK_ROWS), :]
        return i + np.int32(1), jnp.minimum(ok, finite(chunk))

    full = rows // CHECK_ROWS
    _, ok = jax.lax.fori_loop(0, full, check, (np.int32(0), jnp.ones((8, LANES), jnp.float32)))
    if rows % CHECK_ROWS:  # the last chunk's rows past ``rows`` (the spare row block, padding) not looked at
        start = full * CHECK_ROWS
        chunk = ref[pl.ds(start, CHECK_ROWS), :]
        row = jax.lax.broadcasted_iota(jnp.int32, chunk.shape, 0) + np.int32(start)
        ok = jnp.minimum(ok, finite(jnp.where(row < np.int32(rows), chunk, jnp.zeros_like(chunk))))
    return ok


def _interpret() -> bool:
    return jax.default_backend() != "tpu"


def _on_tpu() -> bool:
    """Whether products run the kernel (the tests set this to run it in interpret mode on a CPU)."""
    return jax.default_backend() == "tpu"


def _check_part(values, table, offset: int, who: str) -> None:
    """Raise ``ValueError`` unless ``values`` is a flat buffer holding the blocks of ``table`` from
    ``offset``, a multiple of ``STEP_VALUES`` (where the kernel reads them in place)."""
    offset = int(offset)
    if offset % STEP_VALUES or offset < 0 or values.ndim != 1 or values.shape[0] < offset + value_count(table):
        raise ValueError(f"{who}: values must be a flat buffer holding the blocks' {value_count(table)} values "
                         f"from offset, a multiple of {STEP_VALUES} (got offset {offset}, values of shape "
                         f"{tuple(values.shape)}); place the part with part_start")


def _check_x(x, shape, transpose: bool, who: str) -> None:
    """Raise ``ValueError`` unless ``x`` is 2-D with the rows of ``A @ x`` (``A.T @ x``) for ``shape``."""
    rows = shape[0] if transpose else shape[1]
    if getattr(x, "ndim", None) != 2 or x.shape[0] != rows:
        raise ValueError(f"{who}: x must be 2-D with {rows} rows for {'A.T @ x' if transpose else 'A @ x'} with A "
                         f"of shape {tuple(shape)} (got x of shape {tuple(getattr(x, 'shape', ()))})")


def _check_perms(perm, inverse, shape, who: str):
    """``(perm, inverse)`` as int32 arrays, or ``(None, None)``; raise ``ValueError`` unless both or
    neither are given, each of length ``m``, for a square ``shape``. (Whether ``perm`` is a permutation
    and ``inverse`` its inverse is not checked: the layouts build them.)"""
    if perm is None and inverse is None:
        return None, None
    if perm is not None and inverse is not None:
        perm, inverse = jnp.asarray(perm, jnp.int32), jnp.asarray(inverse, jnp.int32)
        if shape[0] == shape[1] and perm.shape == inverse.shape == (shape[0],):
            return perm, inverse
    raise ValueError(f"{who}: perm and inverse go together, each of length m, for a square matrix "
                     f"(shape {tuple(shape)}); pass both or neither")


def mxu_kernel(values, table, x, *, shape, transpose: bool = False, offset: int = 0,
               interpret: bool | None = None, perm=None, inverse=None, fallback=None):
    """``A @ x`` (or ``A.T @ x``) for float32 ``x`` of shape ``(k, n)`` (``(m, n)``): the Pallas kernel
    (interpret mode off a TPU), 128 columns per call.

    ``values``: a flat float32 buffer holding the blocks (``block_tables``)
    from ``offset``, a multiple of ``STEP_VALUES``; read in place.
    ``perm``/``inverse`` (int32, length ``m``; a square matrix): the
    blocks are those of ``A[perm][:, perm]``; the kernel permutes ``x``'s
    rows and puts the result's back itself, in VMEM (it reads the
    ``inverse`` only: ``x``'s row ``j`` goes to row ``inverse[j]``, and the
    result's row ``r`` comes from row ``inverse[r]``).

    Returns ``(y, finite)``: ``y`` of shape ``(m, n)`` (``(k, n)``), and
    whether ``y`` is finite (a bool scalar; where it is not, ``y`` may
    differ from the sparse product's non-finite values: a stored zero
    times an ``inf`` of ``x``, or an ``inf`` value split into ``inf - inf``
    by the MXU's bfloat16 passes, gives NaN). ``fallback`` (optional):
    ``(s_values, s_table, s_cols)``, the product orientation's SELL-8
    slots (``.sell.sell_tables``; float32 values) of the same entries,
    where ``.sell.redo_fits``: a non-finite ``y`` is then replaced by their
    product (``.sell.sell_redo``, a second kernel that, idle, reads and
    writes nothing), so ``y`` is the sparse product's in every case.
    Raises ``ValueError`` where
    ``offset`` is not a multiple of ``STEP_VALUES``, the buffer ends
    before the blocks do, or ``x`` has the wrong number of rows.
    """
    m, k = shape
    _check_part(values, table, offset, "mxu_kernel")
    _check_x(x, shape, transpose, "mxu_kernel")
    perm, inverse = _check_perms(perm, inverse, shape, "mxu_kernel")
    permuted = perm is not None
    n = x.shape[1]
    if n > LANES:
        parts = [mxu_kernel(values, table, x[:, i:i + LANES], shape=shape, transpose=transpose, offset=offset,
                            interpret=interpret, perm=perm, inverse=inverse, fallback=fallback)
                 for i in range(0, n, LANES)]
        return jnp.concatenate([p[0] for p in parts], axis=1), jnp.all(jnp.stack([p[1] for p in parts]))
    xr, orows = padded_rows(shape, transpose)
    out = k if transpose else m
    interpret = _interpret() if interpret is None else bool(interpret)
    # x and the result unpadded in HBM (load_resident and store_resident pad them in VMEM): with 128 columns
    # no XLA copy of either (on a TPU v5e, cage11: 0.83 ms against 0.88 with the pad and slice)
    xs = x.astype(jnp.float32) if n == LANES else jnp.pad(x.astype(jnp.float32), ((0, 0), (0, LANES - n)))
    steps, width = table.shape
    first, spare = offset // STEP_VALUES, -(-m // BLOCK_ROWS)
    first_blocks = table[:, GROUP // SUBGROUP]  # (each step's first block: real steps lead)
    n_real = jnp.maximum(jnp.sum(first_blocks != spare), 1).astype(jnp.int32).reshape(1)
    in_specs = [pl.BlockSpec((1, 1, width), lambda i, r: (i, 0, 0), memory_space=pltpu.SMEM),
                pl.BlockSpec((STEP_VALUES,), lambda i, r: (first + jnp.minimum(i, r[0] - 1),)),
                pl.BlockSpec(memory_space=pl.ANY)]
    scratch = [pltpu.VMEM((xr, LANES), jnp.float32), pltpu.VMEM((orows, LANES), jnp.float32),
               pltpu.SemaphoreType.DMA(())]
    extra = ()
    if permuted:  # the inverse order, padded with zeros to whole chunks of SMEM (the padding is not read)
        length = _round_up(max(xr, orows), PERM_CHUNK)
        extra = (jnp.pad(inverse.astype(jnp.int32), (0, length - m)),)
        in_specs += [pl.BlockSpec(memory_space=pl.ANY)]
        scratch = scratch[:2] + [pltpu.SMEM((2, PERM_CHUNK), jnp.int32), pltpu.SemaphoreType.DMA((2,)),
                                 pltpu.SemaphoreType.DMA((PERM_COPIES,))]
    call = pl.pallas_call(
        # (interpret mode runs the loop rolled: the same arithmetic, traced once)
        functools.partial(_kernel, transpose=transpose, unroll=1 if interpret else GROUP_UNROLL,
                          permuted=permuted),
        out_shape=(jax.ShapeDtypeStruct((out, LANES), jnp.float32),
                   jax.ShapeDtypeStruct((8, LANES), jnp.float32)),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(steps,), in_specs=in_specs,
            out_specs=(pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec((8, LANES), lambda i, r: (0, 0))),
            scratch_shapes=scratch),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=_sell.vmem_limit_bytes()),
        interpret=interpret,
    )
    y, ok = call(n_real, table.reshape(steps, 1, width), values.astype(jnp.float32), xs, *extra)
    finite = jnp.all(ok[:, :n] > 0)
    if fallback is not None:  # (the slots' matrix: A's, or A.T's for the transposed product)
        y = _sell.sell_redo(y, jnp.logical_not(finite), *fallback, xs, shape=(out, xs.shape[0]),
                            interpret=interpret)
    return (y if n == LANES else y[:, :n]), finite


# --- the primitive --------------------------------------------------------------------------------------

mxu_matmat_p = Primitive("bcoo_array_mxu_matmat")


def mxu_matmat(values, table, s_values, s_rows, s_cols, x, perm=None, inverse=None, *, shape,
               transpose: bool = False, offset: int = 0, use_kernel: bool = True, flipped: bool = False,
               s_order=None, s_table=None):
    """``A @ x`` (``transpose``: ``A.T @ x``) from the dense blocks, ``x`` of shape ``(k, n)`` (``(m, n)``).

    ``values``/``table``: a flat buffer holding the blocks from ``offset``
    (a multiple of ``STEP_VALUES``; the layouts' whole value buffer, read
    in place) and their step table (``block_tables``); ``perm``/``inverse``
    (square matrices; both or neither): where the blocks are those of the
    reordered matrix ``A[perm][:, perm]`` (a reverse Cuthill-McKee order,
    ``.layouts``), the order and its inverse, int32 of length ``m``: the
    kernel then takes ``x[perm]`` and its result's rows are put back by
    ``inverse`` (``A.T`` reorders alike); ``s_values``,
    ``s_rows``, ``s_cols``: the layout's SELL-8 slots of the product's
    orientation (``.sell``), holding the same entries, whose COO formula
    (``.sell.sell_reference``) serves a non-finite result of the kernel, values other than
    float32, and backends other than a TPU (``use_kernel=False``: always);
    ``flipped``: the slots are those of the other orientation (what the
    transpose in ``x`` binds: its COO formula is then the transpose of
    theirs); ``s_order`` (int32, one entry per slot, or None): the slots
    in row order (``.layouts``: a stable argsort of ``s_rows``), which the
    COO formula then takes, summing sorted rows: XLA on a TPU compiles an
    unsorted segment sum of rows of ``x`` in about 8 s, a sorted one in
    0.6 (TPU v5e, nh2010's 262,144 slots, 128 columns), and the formula is
    compiled with every product, though it runs only on a non-finite
    result; ``s_table`` (int32, or None): the slots' step table
    (``.sell.sell_tables``), with which, where ``REDO_KERNEL`` is on and
    the slots are this orientation's, a non-finite result is replaced by
    their kernel (``.sell.sell_redo``) instead of the ``cond`` and formula.
    Raises ``ValueError`` where ``x`` is not 2-D with the
    product's rows, or ``perm``/``inverse`` do not fit.
    Differentiable in ``x`` and in the two value copies together (the
    values' cotangent lands on ``s_values``; a transpose in ``values``
    alone raises ``ValueError``), batchable over ``x`` and the values.
    """
    _check_part(values, table, offset, "mxu_matmat")
    _check_x(x, shape, transpose, "mxu_matmat")
    perm, inverse = _check_perms(perm, inverse, shape, "mxu_matmat")
    none = jnp.zeros(0, jnp.int32)
    if s_order is not None and jnp.shape(s_order) != jnp.shape(s_rows):
        raise ValueError(f"mxu_matmat: s_order has shape {jnp.shape(s_order)}, but there are "
                         f"{jnp.shape(s_rows)[0]} slots; pass the slots' row order (one entry per slot) or None")
    s_table = jnp.zeros((0, 0), jnp.int32) if s_table is None else s_table
    return mxu_matmat_p.bind(values, table, s_values, s_rows, s_cols, x, none if perm is None else perm,
                             none if inverse is None else inverse, none if s_order is None else s_order, s_table,
                             shape=tuple(shape), transpose=bool(transpose), offset=int(offset),
                             use_kernel=bool(use_kernel), flipped=bool(flipped))


def _out_shape(shape, transpose, x):
    return (shape[1] if transpose else shape[0], x.shape[1])


def _coo(s_values, s_rows, s_cols, s_order, x, shape, transpose, flipped):
    """The COO formula of the SELL slots (``.sell.sell_reference``): their product, or with ``flipped``
    (slots of the other orientation) its transpose, applied to ``x``; the slots taken in row order
    first where ``s_order`` holds it (not empty): a sorted segment sum."""
    slot_shape = (shape[1], shape[0]) if transpose != flipped else tuple(shape)
    dtype = jnp.result_type(s_values, x)
    in_order = s_order.shape[0] > 0
    if in_order:
        s_values, s_rows, s_cols = (jnp.take(a, s_order, axis=0) for a in (s_values, s_rows, s_cols))
    f = lambda z: coo_matmat(s_values.astype(dtype), s_rows, s_cols, z.astype(dtype), slot_shape[0],  # noqa: E731
                             in_order)
    if not flipped:
        return f(x)
    (y,) = jax.linear_transpose(f, jax.ShapeDtypeStruct((slot_shape[1],) + x.shape[1:], dtype))(x.astype(dtype))
    return y


def _impl(values, table, s_values, s_rows, s_cols, x, perm, inverse, s_order, s_table, *, shape, transpose, offset,
          use_kernel, flipped):
    dtype = jnp.result_type(values, x)
    out_shape = _out_shape(shape, transpose, x)
    if 0 in out_shape or 0 in shape:
        return jnp.zeros(out_shape, dtype)
    if use_kernel and np.dtype(dtype) == np.float32 and _on_tpu() and fits(shape):
        perms = dict(perm=perm, inverse=inverse) if perm.shape[0] > 0 else {}
        slots_shape = (shape[1], shape[0]) if transpose else tuple(shape)  # (the slots' matrix: A or A.T)
        if REDO_KERNEL and s_table.shape[0] and not flipped and _sell.redo_fits(slots_shape):
            # no cond: the slots' own kernel replaces a non-finite result
            return mxu_kernel(values, table, x, shape=shape, transpose=transpose, offset=offset,
                              fallback=(s_values, s_table, s_cols), **perms)[0]
        y, finite = mxu_kernel(values, table, x, shape=shape, transpose=transpose, offset=offset, **perms)
        return jax.lax.cond(finite, lambda: y,
                            lambda: _coo(s_values, s_rows, s_cols, s_order, x, shape, transpose, flipped))
    return _coo(s_values, s_rows, s_cols, s_order, x, shape, transpose, flipped)


mxu_matmat_p.def_impl(_impl)


@mxu_matmat_p.def_abstract_eval
def _abstract(values, table, s_values, s_rows, s_cols, x, perm, inverse, s_order, s_table, *, shape, transpose,
              offset, use_kernel, flipped):
    return jax.core.ShapedArray(_out_shape(shape, transpose, x), jnp.result_type(values.dtype, x.dtype))


mlir.register_lowering(mxu_matmat_p, mlir.lower_fun(_impl, multiple_results=False))


def _jvp(primals, tangents, *, shape, transpose, offset, use_kernel, flipped):
    values, table, s_values, s_rows, s_cols, x, perm, inverse, s_order, s_table = primals
    dv, _, dsv, _, _, dx, _, _, _, _ = tangents
    params = dict(shape=shape, transpose=transpose, offset=offset, use_kernel=use_kernel, flipped=flipped)
    y = mxu_matmat_p.bind(*primals, **params)
    dy = None
    if type(dv) is not ad.Zero or type(dsv) is not ad.Zero:  # linear in the two value copies together
        dy = mxu_matmat_p.bind(ad.instantiate_zeros(dv), table, ad.instantiate_zeros(dsv), s_rows, s_cols, x,
                               perm, inverse, s_order, s_table, **params)
    if type(dx) is not ad.Zero:
        t = mxu_matmat_p.bind(values, table, s_values, s_rows, s_cols, dx, perm, inverse, s_order, s_table,
                              **params)
        dy = t if dy is None else dy + t
    return y, jnp.zeros_like(y) if dy is None else dy


ad.primitive_jvps[mxu_matmat_p] = _jvp


def _transpose(ct, values, table, s_values, s_rows, s_cols, x, perm, inverse, s_order, s_table, *, shape,
               transpose, offset, use_kernel, flipped):
    none = [None] * 10
    if type(ct) is ad.Zero:
        return none
    if ad.is_undefined_primal(values) and not ad.is_undefined_primal(s_values):
        raise ValueError("the MXU product is linear in its two value copies together (the blocks and the SELL "
                         "slots, one buffer's parts in the layouts): transpose it in both, or in x")
    if ad.is_undefined_primal(s_values) and ad.is_undefined_primal(x):
        raise ValueError("the MXU product is bilinear: transpose it in the values or in x, not both")
    if ad.is_undefined_primal(x):  # the product of the other orientation (a symmetric reordering: the same),
        # its slots those of this one (flipped: their COO formula transposed)
        dx = mxu_matmat_p.bind(values, table, s_values, s_rows, s_cols, ct, perm, inverse, s_order, s_table,
                               shape=shape, transpose=not transpose, offset=offset, use_kernel=use_kernel,
                               flipped=not flipped)
        none[5] = dx.astype(x.aval.dtype)
        return none
    # The values' cotangent lands on the SELL slots' copy, from its COO formula: each stored entry's slot gets
    # ct[row] . x[col], and nothing else does (the blocks' stored zeros must get none: a step along it would
    # store entries the matrix does not have). The blocks' copy gets zeros, so an entry's cotangent (the sum
    # over its copies) is counted once.
    aval = s_values.aval
    f = lambda v: _coo(v, s_rows, s_cols, s_order, x, shape, transpose, flipped)  # noqa: E731
    (dv,) = jax.linear_transpose(f, jax.ShapeDtypeStruct(aval.shape, ct.dtype))(ct)
    if not jnp.issubdtype(aval.dtype, jnp.complexfloating) and jnp.iscomplexobj(dv):
        dv = jnp.real(dv)
    none[2] = dv.astype(aval.dtype)
    if ad.is_undefined_primal(values):
        none[0] = jnp.zeros(values.aval.shape, values.aval.dtype)
    return none


ad.primitive_transposes[mxu_matmat_p] = _transpose


def _batch(args, dims, *, shape, transpose, offset, use_kernel, flipped):
    values, table, s_values, s_rows, s_cols, x, perm, inverse, s_order, s_table = args
    dv, dt, dsv, dr, dc, dx, dp, di, do, dst = dims
    params = dict(shape=shape, transpose=transpose, offset=offset, use_kernel=use_kernel, flipped=flipped,
                  s_order=s_order if s_order.shape[0] else None, s_table=s_table if s_table.shape[0] else None)
    perms = {} if perm.shape[0] == 0 else dict(perm=perm, inverse=inverse)
    if any(d is not None for d in (dt, dr, dc, dp, di, do, dst)):
        raise ValueError("vmap over a prepared operator's index arrays is not supported; map its values or x")
    if dv is not None or dsv is not None:  # mapped values: one product per value set
        B = values.shape[dv] if dv is not None else s_values.shape[dsv]
        vs = jnp.moveaxis(values, dv, 0) if dv is not None else jnp.broadcast_to(values, (B,) + values.shape)
        ss = jnp.moveaxis(s_values, dsv, 0) if dsv is not None else jnp.broadcast_to(s_values, (B,) + s_values.shape)
        if dx is not None:
            xs = jnp.moveaxis(x, dx, 0)
            out = jax.lax.map(lambda a: mxu_matmat(a[0], table, a[1], s_rows, s_cols, a[2], **perms, **params),
                              (vs, ss, xs))
        else:
            out = jax.lax.map(lambda a: mxu_matmat(a[0], table, a[1], s_rows, s_cols, x, **perms, **params),
                              (vs, ss))
        return out, 0
    x = jnp.moveaxis(x, dx, 1)  # (rows, B, n): every mapped column is one more right-hand side
    rows, B, n = x.shape
    y = mxu_matmat(values, table, s_values, s_rows, s_cols, x.reshape(rows, B * n), **perms, **params)
    return y.reshape(y.shape[0], B, n), 1


batching.primitive_batchers[mxu_matmat_p] = _batch
