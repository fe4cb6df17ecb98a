"""Accelerator layouts of a 2-D sparse matrix, built on the host from concrete indices.

On a TPU, XLA's element gathers and scatters run at about 0.14 G elements/s
whatever the pattern (measured on a v5e: 0.15% of the 418 GB/s a jitted
``v * 2`` streams), so the COO product of ``.coo`` (one gather of ``x`` and
one scatter-add per stored entry) is 100-1000x slower than the chip's
bandwidth allows. The layouts here replace per-entry gathers and scatters by
what the chip streams at speed: shifted slices, gathers of whole 128-lane
rows, and dense reductions.

* ``dense``: the matrix as a dense ``(m, k)`` block (small matrices, or dense
  enough that dense bytes are the fewest); the product runs on the MXU.
* ``dia``: diagonal storage (Saad, *Iterative Methods for Sparse Linear
  Systems*, 2nd ed., section 3.4): ``values[d, i] = A[i, i + offsets[d]]``;
  the product is a sum of shifted slices of ``x``, no gather at all. For
  stencils and banded matrices.
* ``tiles``: block-sparse with dense ``(bm, bk)`` tiles (bk = 128, a TPU lane
  row), arranged as a *sliced block ELL*: block rows sorted by their number of
  tiles and cut into buckets of one padded width each (SELL-C-sigma applied to
  tiles: Kreutzer et al., SIAM J. Sci. Comput. 36(5), 2014). A product
  gathers one ``bk``-long panel of ``x`` per tile (a row gather), multiplies
  and reduces densely, and writes each block row once (no scatter-add). The
  tile shape is chosen per matrix among ``TILE_SHAPES``.
* ``ell``: the same sliced ELL with scalar entries (``bm = bk = 1``), for
  patterns without dense tiles; the gather of ``x`` is a two-level lane
  gather on a TPU (``.accel.gather``).
* ``panels``: 128-row blocks by 128-column panels as ``(8, 128)`` tiles,
  rows on lanes, for the Pallas TPU kernel of ``.panels`` (``x`` and the
  result resident in VMEM, an in-register lane gather per tile, no HBM
  gather). A tile reads one column panel (uniform tiles) or one per
  sublane (mixed tiles: a quarter to a half of the tiles on scattered
  patterns), whichever is cheaper. Chosen on a TPU for 32-bit values where
  it is the cheapest (irregular matrices: SpMV 24-170x
  ``jax.experimental.sparse`` in a solver's loop).
* ``sell``: the stored entries of the matrix and of its transpose twice:
  as ``(8, 128)`` blocks in row order for one vector (``.segmented``: a
  Pallas TPU kernel that keeps ``x`` and the result in VMEM packed 128
  elements per row, so matrices of millions of rows fit, gathers 8
  entries' elements of ``x`` per vector step and sums rows by segmented
  lane sums), and as SELL-8 slots for several columns (``.sell``: rows
  sorted by length in slices of 8, SELL-C-sigma, one row of ``x`` loaded
  per stored entry) or, where that kernel's ``x`` does not fit VMEM, as
  wide blocks (``.segmented`` with 8 columns of ``x`` a call). Chosen on
  a TPU for float32 values where it is the cheapest: patterns too scattered or too large for ``panels`` (a random
  10^6 x 10^6 matrix with 10^7 entries, TPU v5e in a loop: 14.0 ms,
  against 46.8 for ``ell`` and 162 for ``jax.experimental.sparse``).
* ``coo``: the fallback, ``.coo.coo_matmat``.

A reordering (reverse Cuthill-McKee, ``scipy.sparse.csgraph``: Cuthill &
McKee, Proc. 24th ACM National Conference, 1969; George & Liu, 1981) is
tried for square matrices when the tile layout is chosen: it gathers the
entries towards the diagonal and so raises tile fill. It is applied and
undone inside the product (``x`` permuted in, ``y`` permuted out) and
solvers run in the permuted space (``bcoo_array.accelerator``).

The choice is made by ``choose``, from the bytes each layout moves with an
element gather priced at what it costs on the target backend (``COSTS``).
Every layout keeps ``slot``, the position of each stored BCOO entry in the
layout's flat value buffer, so values are placed (and their gradient taken)
by one scatter-add from the BCOO ``data``, and ``with_data`` needs no new
analysis. Built once per matrix with NumPy and scipy; nothing here runs
under a trace.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import mxu as _mxu
from . import panels as _panels
from . import segmented as _segmented
from . import sell as _sell
from .costs import COSTS
from .host import unique_counts, unique_ints, unique_inverse

#: Tile shapes tried for the ``tiles`` layout: (bm, bk), bk a TPU lane row.
TILE_SHAPES: tuple[tuple[int, int], ...] = ((8, 128), (16, 128), (32, 128), (128, 128))

#: Block shapes ``(R, P)`` of the ``blocks`` layout (R output rows by P columns) and
#: the chunk sizes E (entries per chunk) tried for it.
BLOCK_SHAPES: tuple[tuple[int, int], ...] = ((128, 128), (128, 256), (256, 256), (256, 512), (512, 512))
CHUNK_SIZES: tuple[int, ...] = (8, 16, 32, 64, 128)

#: Most slots per stored entry a ``panels`` layout may hold (its tiles are padded ELL
#: groups: a random pattern puts about one entry in each 1,024-slot tile).
PANELS_MAX_PADDING = 64

#: Tiles of the ``panels`` layout: ``None`` prices uniform tiles (one column panel each) against mixed
#: ones (a panel per sublane: fewer tiles on scattered patterns, 8 loads of ``x`` per tile) and keeps the
#: cheaper, for the matrix and for its transpose; ``True`` or ``False`` forces mixed or uniform tiles.
PANELS_MIXED: bool | None = None

#: Largest ``panels`` layout (bytes of its values and local columns, and of its SELL
#: slots' values, rows and columns, the transpose's included) the automatic choice
#: takes: its tiles are mostly padding on scattered patterns (cage11 100 MiB with
#: uniform tiles, 40 MiB with mixed ones, against the
#: ``blocks`` layout's 19 MiB), and an operator should not take a large share of a
#: chip's memory (16 GiB on a TPU v5e) unasked. ``layout="panels"`` builds larger ones.
#: The same bound holds for a ``sell`` layout's slots (12 bytes a SELL-8 slot: value, row
#: and column; 20 a block slot, ``SEGMENTED_SLOT_BYTES``; the transpose's included).
PANELS_AUTO_MAX_BYTES = 1 << 30

#: Bytes of a slot of ``.segmented``'s block tables (``.segmented.SLOT_BYTES``).
SEGMENTED_SLOT_BYTES = _segmented.SLOT_BYTES

#: Largest dense layout, in elements (64 Mi elements: 256 MiB of float32).
DENSE_MAX_ELEMENTS = 1 << 26

#: Most value slots a ``dense`` or ``dia`` layout built when asked for may hold (1 Gi slots: 4 GiB of
#: float32, a quarter of a TPU v5e's memory): a larger one is refused with an error naming the size, not
#: built into an out-of-memory failure (the automatic choice never comes near it).
FORCED_MAX_SLOTS = 1 << 30

#: Widths of the sliced ELL buckets: each bucket pads its rows to the next
#: width of this list (at most 50% padding between consecutive widths).
_WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)

LAYOUT_KINDS = ("dense", "dia", "tiles", "blocks", "ell", "panels", "sell", "coo")

#: Layouts a symmetric reordering (RCM) can make cheaper (their cost grows with the pattern's spread).
REORDERABLE = ("tiles", "blocks", "ell", "panels")

#: A reordering is priced (a second ``estimate``, about 6 s for 10^7 entries) only where it brings the
#: median distance of the entries off the diagonal from it below this share of the original's: RCM leaves a
#: random pattern's spread as it was (a random 10^6 x 10^6 matrix with 10^7 entries: 290,000 -> 275,000),
#: and a reorderable layout's cost grows with the spread. ``reorder=True`` prices it whatever the spread.
REORDER_MIN_SPREAD_GAIN = 0.9

#: Layouts ``choose`` picks by itself: all of them. ``panels`` is priced for a TPU and 32-bit values only,
#: ``sell`` for a TPU and float32 values only (``estimate``): their Pallas kernels run nowhere else.
AUTO_KINDS = ("dense", "dia", "tiles", "blocks", "ell", "panels", "sell", "coo")

#: Layouts an eager product prefers (``choose(..., eager=True)``): their product is one compiled program
#: per shape and size bucket whatever the pattern (``coo``, ``panels``, ``sell``: buckets of their sizes),
#: and compiles quickly. ``tiles``, ``blocks`` and ``ell`` keep one static bucket per class of row lengths
#: and ``dia`` its offsets, so each new pattern compiles their product again; ``dense`` compiles once per
#: shape, but slowly (its float32 product at ``Precision.HIGHEST``). Sixteenth session, TPU v5e, a 2,000 x
#: 2,000 matrix with 20,000 entries, first ``A @ v`` / first ``A @ V`` (128 columns) / again for another
#: pattern with 20,400 entries, ms: ``coo`` 439 / 870 / 9; ``panels`` 450 / 664 / 29 (``A @ v``);
#: ``blocks`` 395 / 1,854 / 319 and 1,564; ``ell`` 1,810 / 1,250 / 1,378 and 1,067; ``dense`` 847 / 5,791
#: / 17 (``docs/performance.md``).
EAGER_KINDS = ("coo", "panels", "sell")

#: An eager product takes the cheapest of ``EAGER_KINDS`` where it is priced under this share of a jitted
#: call's dispatch (``COSTS[backend]["dispatch"]``, a TPU's 0.6 ms): each of its calls then adds at most
#: 0.3 ms to a call that costs 0.6 anyway, where a layout compiled once per pattern costs 0.3-1.8 s for
#: every new matrix, and ``dense`` 0.8-5.8 s for its first call (backends without a measured dispatch:
#: never).
EAGER_SHARE = 0.5

#: Layouts that multiply explicit zeros at unstored positions (an ``inf`` or NaN
#: of ``x`` there would give NaN where a sparse product gives 0): their products
#: check the result and fall back to the stored entries (``.accel.product``).
#: ``blocks`` is one of them for several columns (its one-hot matrix products).
STORES_ZEROS = ("dense", "dia", "tiles", "blocks")


@dataclass
class Bucket:
    """Block rows of one padded width in a sliced (block) ELL layout.

    ``rows`` (nb,) block-row ids, ``cols`` (nb, width) block-column ids of
    each slot (padding slots point at block column 0 and hold zeros).
    """

    rows: np.ndarray
    cols: np.ndarray

    @property
    def width(self) -> int:
        return int(self.cols.shape[1])


@dataclass
class Layout:
    """A 2-D matrix's accelerator layout: index structure (NumPy) and where each value goes.

    Attributes
    ----------
    kind : str
        One of ``LAYOUT_KINDS``.
    shape : (m, k)
        The matrix's shape (of the original, unpermuted matrix).
    n_slots : int
        Size of the flat value buffer.
    slot : numpy.ndarray, shape ``(nse,)``
        Position in the value buffer of each stored BCOO entry; ``n_slots``
        for padding entries (dropped). Duplicates share a slot and add up.
    static : dict
        Hashable parameters of the layout (offsets, tile shape, bucket shapes).
    arrays : dict of numpy.ndarray
        Index arrays the product reads (bucket rows and columns, the COO
        indices, the inverse block-row order).
    perm : numpy.ndarray or None, shape ``(m,)``
        Symmetric reordering: the layout stores ``A[perm][:, perm]``.
    estimate : dict
        Estimated bytes-equivalent cost of each layout considered (for ``info``).
    """

    kind: str
    shape: tuple[int, int]
    n_slots: int
    slot: np.ndarray
    static: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    perm: np.ndarray | None = None
    estimate: dict = field(default_factory=dict)

    def describe(self) -> str:
        """A one-line account of the layout (kind, tile shape, fill, reordering)."""
        parts = [self.kind]
        if self.kind == "tiles":
            parts.append("tile {}x{}".format(*self.static["tile"]))
        if self.kind == "dia":
            parts.append(f"{len(self.static['offsets'])} diagonals")
        if self.kind in ("tiles", "ell"):
            parts.append(f"{len(self.static['buckets'])} buckets")
        if self.kind == "panels":  # the matrix's tiles and its transpose's are chosen apart
            kinds = ["mixed" if self.arrays[n].shape[0] > 2 else "uniform" for n in ("meta", "meta_t")
                     if n in self.arrays]
            if len(set(kinds)) > 1:
                parts.append(f"{kinds[0]} tiles (transpose: {kinds[1]})")
            elif "mixed" in kinds:
                parts.append("mixed tiles")
        nnz = int(np.count_nonzero(self.slot < self.n_slots))
        stored = self.static.get("split", self.n_slots)  # panels: the matrix's part (its transpose follows)
        if stored:
            parts.append(f"fill {nnz / stored:.2f}")
        if self.perm is not None:
            parts.append("RCM")
        if "mxu_table" in self.arrays:  # (the dense blocks of .mxu, for many columns)
            order = " (RCM order)" if "mxu_perm" in self.arrays else ""
            parts.append(f"{_mxu.stored_blocks(self.arrays['mxu_table'], self.shape[0])} MXU blocks{order}")
        return ", ".join(parts)


def _coo(indices: np.ndarray, shape: tuple[int, int]):
    """Row, column and the valid mask of 2-D ``indices`` (padding rows excluded)."""
    idx = np.asarray(indices).reshape(-1, 2).astype(np.int64, copy=False)
    rows, cols = idx[:, 0], idx[:, 1]
    valid = (rows >= 0) & (rows < shape[0]) & (cols >= 0) & (cols < shape[1])
    return rows, cols, valid


def _width_class(counts: np.ndarray) -> np.ndarray:
    widths = np.asarray(_WIDTHS)
    cls = np.searchsorted(widths, counts, side="left")
    over = cls >= len(widths)
    out = np.where(over, 0, widths[np.minimum(cls, len(widths) - 1)])
    # Past the table: round up to a multiple of its last width.
    last = widths[-1]
    return np.where(over, -(-counts // last) * last, out)


def _sliced_ell(block_rows: np.ndarray, block_cols: np.ndarray, n_block_rows: int, unit: int, pad_col: int = 0):
    """Sliced ELL of the units (tiles or entries) at ``(block_rows, block_cols)`` (unique pairs).

    Returns ``(buckets, unit_slot, inverse, n_units_padded)``: ``unit_slot``
    is each unit's position in the concatenated padded unit buffer (bucket
    after bucket, row-major), ``inverse`` (n_block_rows,) the position of
    each block row in the concatenated bucket outputs, or the count of
    filled rows for a block row with no unit (its output row is zero).
    With one bucket holding every block row in order, ``inverse`` is None.
    Padding slots hold block column ``pad_col``.
    """
    order = np.lexsort((block_cols, block_rows))
    br, bc = block_rows[order], block_cols[order]
    counts = np.bincount(br, minlength=n_block_rows)
    nonempty = np.flatnonzero(counts)
    total = int(counts.sum())
    starts = np.concatenate([[0], np.cumsum(counts)])
    max_count = int(counts.max()) if len(counts) else 0
    # One bucket over every block row (no reordering of the output) when padding stays small.
    if max_count and n_block_rows * max_count <= 1.25 * total + n_block_rows:
        groups = [(np.arange(n_block_rows), max_count)]
    else:
        cls = _width_class(counts[nonempty])
        by = np.argsort(-cls, kind="stable")
        rows_sorted = nonempty[by]
        cls_sorted = cls[by]
        groups = []
        for w in unique_ints(cls_sorted)[::-1]:
            groups.append((rows_sorted[cls_sorted == w], int(w)))
    buckets = []
    unit_slot = np.empty(total, np.int64)
    offset = 0
    out_pos = 0
    inverse = np.full(n_block_rows, -1, np.int64)
    for rows_g, w in groups:
        nb = len(rows_g)
        cols = np.full((nb, w), pad_col, np.int32)
        cnt = counts[rows_g]
        # Positions (in the sorted unit list) of each row's units, and their slots in this bucket.
        r_rep = np.repeat(np.arange(nb), cnt)
        j = np.arange(len(r_rep)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        src = np.repeat(starts[rows_g], cnt) + j
        cols[r_rep, j] = bc[src]
        unit_slot[order[src]] = offset + (r_rep * w + j) * unit
        offset += nb * w * unit
        inverse[rows_g] = out_pos + np.arange(nb)
        out_pos += nb
        buckets.append(Bucket(rows=rows_g.astype(np.int32), cols=cols))
    if len(groups) == 1 and len(groups[0][0]) == n_block_rows:
        inverse_out = None
    else:
        inverse_out = np.where(inverse < 0, out_pos, inverse).astype(np.int32)
    return buckets, unit_slot, inverse_out, offset


def build_tiles(rows, cols, valid, shape, tile) -> Layout:
    """The ``tiles`` layout of the valid entries (rows, cols) with tile shape ``tile``."""
    m, k = shape
    bm, bk = tile
    nmb, nkb = -(-m // bm), -(-k // bk)
    r, c = rows[valid], cols[valid]
    key = (r // bm) * nkb + c // bk
    ukey, inv_entry = unique_inverse(key)
    buckets, unit_slot, inverse, n_units = _sliced_ell(ukey // nkb, ukey % nkb, nmb, bm * bk)
    slot = np.full(len(rows), n_units, np.int64)
    slot[valid] = unit_slot[inv_entry] + (r % bm) * bk + (c % bk)
    lay = Layout("tiles", (m, k), n_units, slot)
    lay.static = {"tile": (bm, bk), "n_block_rows": nmb, "n_block_cols": nkb,
                  "buckets": tuple((len(b.rows), b.width) for b in buckets)}
    for i, b in enumerate(buckets):
        lay.arrays[f"cols{i}"] = b.cols
    if inverse is not None:
        lay.arrays["inverse"] = inverse
    return lay


def build_blocks(rows, cols, valid, shape, block, chunk) -> Layout:
    """The ``blocks`` layout: chunks of ``chunk`` entries of ``(R, P)`` blocks, in a sliced ELL of block rows.

    Each entry keeps its row within its block (``lr``) and its column within
    its panel (``lc``); the product gathers one ``P``-long panel of ``x`` per
    chunk and picks each entry's element with a one-hot select, then adds the
    products into the block row's ``R`` outputs with a one-hot select: no
    per-entry gather or scatter. Padding entries have ``lc = lr = -1`` (they
    select nothing, so an ``inf`` of ``x`` never meets them).
    """
    m, k = shape
    R, P = block
    E = int(chunk)
    nrp, ncp = -(-m // R), -(-k // P)
    r, c = rows[valid], cols[valid]
    ukey, inv_entry = unique_inverse(r * k + c)
    ur, uc = ukey // k, ukey % k
    bkey = (ur // R) * ncp + uc // P
    order = np.argsort(bkey, kind="stable")
    bs = bkey[order]
    first = np.concatenate([[True], bs[1:] != bs[:-1]]) if len(bs) else np.zeros(0, bool)
    block_start = np.maximum.accumulate(np.where(first, np.arange(len(bs)), 0)) if len(bs) else bs
    pos = np.arange(len(bs)) - block_start
    ckey = bs * (len(bs) + 1) + pos // E  # one key per chunk, in block order
    uchunk, chunk_of = unique_inverse(ckey)
    chunk_block = uchunk // (len(bs) + 1)
    buckets, unit_slot, inverse, n_units = _sliced_ell(chunk_block // ncp, chunk_block % ncp, nrp, E)
    uslot = np.empty(len(bs), np.int64)
    uslot[order] = unit_slot[chunk_of] + pos % E
    lr = np.full(n_units, -1, np.int32)
    lc = np.full(n_units, -1, np.int32)
    lr[uslot] = ur % R
    lc[uslot] = uc % P
    slot = np.full(len(rows), n_units, np.int64)
    slot[valid] = uslot[inv_entry]
    lay = Layout("blocks", (m, k), n_units, slot)
    lay.static = {"block": (R, P), "chunk": E, "n_block_rows": nrp, "n_block_cols": ncp,
                  "buckets": tuple((len(b.rows), b.width) for b in buckets)}
    off = 0
    for i, b in enumerate(buckets):
        size = len(b.rows) * b.width * E
        lay.arrays[f"cols{i}"] = b.cols
        lay.arrays[f"lr{i}"] = lr[off:off + size].reshape(len(b.rows), b.width, E)
        lay.arrays[f"lc{i}"] = lc[off:off + size].reshape(len(b.rows), b.width, E)
        off += size
    if inverse is not None:
        lay.arrays["inverse"] = inverse
    return lay


def build_ell(rows, cols, valid, shape) -> Layout:
    """The scalar sliced ELL layout (``bm = bk = 1``) of the valid entries."""
    m, k = shape
    r, c = rows[valid], cols[valid]
    key = r * k + c
    ukey, inv_entry = unique_inverse(key)
    buckets, unit_slot, inverse, n_units = _sliced_ell(ukey // k, ukey % k, m, 1, pad_col=k)
    slot = np.full(len(rows), n_units, np.int64)
    slot[valid] = unit_slot[inv_entry]
    lay = Layout("ell", (m, k), n_units, slot)
    lay.static = {"buckets": tuple((len(b.rows), b.width) for b in buckets)}
    for i, b in enumerate(buckets):
        lay.arrays[f"cols{i}"] = b.cols
    if inverse is not None:
        lay.arrays["inverse"] = inverse
    return lay


def _panel_tiles(counts: tuple[int, int], backend: str = "tpu", mixed: bool | None = None) -> tuple[int, bool]:
    """The tile count and tile kind (mixed or not) of a ``panels`` layout from its uniform and mixed tile
    counts (``panels.tile_counts``): ``PANELS_MIXED`` where it forces one, else ``mixed`` where given, else
    the cheaper (``COSTS``)."""
    n_uniform, n_mixed = counts
    mixed = mixed if PANELS_MIXED is None else PANELS_MIXED
    if mixed is None:
        cost = _costs(backend)
        tile_bytes = _panels.SUBLANES * _panels.LANES * 8  # 32-bit values and local columns
        mixed = (n_mixed * (tile_bytes + cost.get("panel_mixed_tile", 0.0))
                 < n_uniform * (tile_bytes + cost.get("panel_tile", 0.0)))
    return (n_mixed, True) if mixed else (n_uniform, False)


def _panel_tables(ur, uc, shape, mixed: bool | None = None):
    """The tile table, local columns and each unique entry's slot of a ``panels`` layout of ``shape``."""
    _, mixed = _panel_tiles(_panels.tile_counts(ur, uc, shape), mixed=mixed)
    uslot, meta, n_tiles = _panels.tile_positions(ur, uc, shape, mixed)
    T = _panels.pad_tiles(n_tiles)
    meta_p = np.zeros((meta.shape[0], T), np.int32)
    meta_p[:, :n_tiles] = meta
    if n_tiles:
        meta_p[0, n_tiles:] = meta[0, -1]
    unit = _panels.SUBLANES * _panels.LANES
    lcols = np.full(T * unit, -1, np.int32)
    lcols[uslot] = uc % _panels.LANES
    return uslot, meta_p, lcols.reshape(T, _panels.SUBLANES, _panels.LANES), n_tiles


def build_panels(rows, cols, valid, shape, mixed: bool | None = None, mxu: bool = False,
                 mxu_reorder: bool = True) -> Layout:
    """The ``panels`` layout (``.panels``): ``(8, 128)`` tiles of one row block and one column panel each,
    of the matrix and of its transpose (so ``A.T @ y`` runs the same kernel), and the SELL-8 slots of both
    (``.sell``: a row-gather kernel for many columns of ``x``, ``accel.panels_product``).

    Arrays: ``meta`` (2, T) int32, the row block and panel of each tile
    (padding tiles repeat the last row block and hold no entry), or (9, T)
    for mixed tiles, whose sublanes each read their own panel (the cheaper
    of the two, ``_panel_tiles``, for the matrix and its transpose apart), ``lcols``
    (T, 8, 128) int32, each slot's column within its panel (-1 for
    padding), the same of the transpose (``meta_t``, ``lcols_t``), the
    SELL chunk table and each SELL slot's row and column (``s_table``,
    ``s_rows``, ``s_cols``, in ``_sell_steps`` grid steps so that shapes
    repeat across matrices; ``s_table_t``, ``s_rows_t``, ``s_cols_t`` of the
    transpose), with ``mxu`` the dense blocks of ``.mxu`` where they are
    kept (``_mxu_blocks``: ``mxu_table``; with ``mxu_reorder`` those of the
    matrix's RCM order where cheaper, with ``mxu_perm`` and ``mxu_inverse``; and the SELL slots' row
    orders, ``s_order`` and ``s_order_t``, ``_slot_orders``), and ``slot_t`` (nse, 3), each
    entry's slot in the transpose's tiles and in the two SELL parts of the
    value buffer ((nse, 4) with blocks: then in the blocks' part). The
    value buffer holds the matrix's tiles (``static["split"]`` slots), the
    transpose's, the matrix's SELL slots, the transpose's, then the blocks
    (from the next multiple of ``.mxu.STEP_VALUES``, zeros before them).
    T is a whole number of the kernel's grid steps.
    """
    m, k = shape
    r, c = rows[valid], cols[valid]
    ukey, inv_entry = unique_inverse(r * k + c)
    ur, uc = ukey // k, ukey % k
    (uslot, meta, lcols, _), (uslot_t, meta_t, lcols_t, _) = _pair(
        _panel_tables, (ur, uc, (m, k), mixed), (uc, ur, (k, m), mixed))
    sslot, uslot_st, sell_arrays = _sell_slots(ur, uc, (m, k))
    n1, n2, n3, n4 = lcols.size, lcols_t.size, sell_arrays["s_rows"].size, sell_arrays["s_rows_t"].size
    bslot, b_arrays = _mxu_blocks(ur, uc, (m, k), n3, mxu_reorder) if mxu else (None, {})
    if b_arrays:
        b_arrays.update(_slot_orders(sell_arrays))
    n5 = _mxu.value_count(b_arrays["mxu_table"]) if b_arrays else 0
    start5 = _value_parts_end(n1 + n2 + n3 + n4, bool(b_arrays))
    n_slots = start5 + n5
    slot = np.full(len(rows), n_slots, np.int64)
    slot[valid] = uslot[inv_entry]
    slot_t = np.full((len(rows), 4 if b_arrays else 3), n_slots, np.int64)
    slot_t[valid, 0] = n1 + uslot_t[inv_entry]
    slot_t[valid, 1] = n1 + n2 + sslot[inv_entry]
    slot_t[valid, 2] = n1 + n2 + n3 + uslot_st[inv_entry]
    if b_arrays:
        slot_t[valid, 3] = start5 + bslot[inv_entry]
    lay = Layout("panels", (m, k), n_slots, slot)
    # (the tile counts stay out of ``static``: the arrays' shapes, padded to grid steps, are what a compiled
    # product depends on, so matrices of similar nse share one program)
    lay.static = {"split": n1}
    lay.arrays.update(meta=meta, lcols=lcols, meta_t=meta_t, lcols_t=lcols_t, **sell_arrays, **b_arrays,
                      slot_t=slot_t.astype(np.int32 if n_slots < 2**31 - 1 else np.int64))
    return lay


#: Entries from which ``_pair`` builds the matrix's and the transpose's tables in two threads.
PAIR_THREADS_MIN_ENTRIES = 1 << 18


def _pair(f, a: tuple, b: tuple):
    """``(f(*a), f(*b))``: the tables of the matrix and of its transpose, in two threads where there are
    at least ``PAIR_THREADS_MIN_ENTRIES`` entries (NumPy releases the GIL in its large array operations).
    A random 10^6 x 10^6 matrix with 10^7 entries, on two cores (2026-12-07): its one-vector tables, both
    orientations, in 1.45 s against 2.42 in a fresh process (1.04-1.06 against 1.15-1.27 warm); the whole
    ``choose`` in 13.1-14.9 s against 15.3-17.0."""
    if len(a[0]) < PAIR_THREADS_MIN_ENTRIES:
        return f(*a), f(*b)
    with ThreadPoolExecutor(max_workers=1) as pool:
        other = pool.submit(f, *b)
        return f(*a), other.result()


def _transpose_order(ur, uc):
    """Unique entries ``(ur, uc)``, sorted by row, in the transpose's row order: by column, then row.

    scipy's CSR-to-CSC conversion of the entries' positions: a counting sort
    by column that keeps each column's rows in order (10^7 random entries:
    0.27 s, against 1.3 s for a stable argsort of the columns).
    """
    n = len(ur)
    if n == 0:
        return np.zeros(0, np.int64)
    m, k = int(ur[-1]) + 1, int(uc.max()) + 1
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(np.bincount(ur, minlength=m), out=indptr[1:])
    positions = sp.csr_array((np.arange(n, dtype=np.int64), uc, indptr), shape=(m, k))
    return np.asarray(positions.tocsc().data, np.int64)


def _sell_slots(ur, uc, shape, order_t=None):
    """The SELL-8 slots (``.sell.sell_tables``) of unique entries ``(ur, uc)`` sorted by row, and of the
    transpose: ``(slot, slot_t, arrays)``, each entry's slot in the matrix's slots and in the
    transpose's, and the arrays ``s_table``, ``s_rows``, ``s_cols`` and the same with ``_t``.
    ``order_t``: ``_transpose_order(ur, uc)`` where the caller has it."""
    m, k = shape
    order_t = _transpose_order(ur, uc) if order_t is None else order_t
    (slot, s_table, s_rows, s_cols), (slot_by_col, s_table_t, s_rows_t, s_cols_t) = _pair(
        lambda r, c, shape: _sell.sell_tables(r, c, shape, pad=_sell_steps), (ur, uc, (m, k)),
        (uc[order_t], ur[order_t], (k, m)))
    slot_t = np.empty_like(slot_by_col)
    slot_t[order_t] = slot_by_col
    return slot, slot_t, dict(s_table=s_table, s_rows=s_rows, s_cols=s_cols,
                              s_table_t=s_table_t, s_rows_t=s_rows_t, s_cols_t=s_cols_t)


def _value_parts_end(n: int, blocks: bool) -> int:
    """Where the value buffer's parts before the dense blocks (``n`` values: tiles or segmented blocks, SELL
    slots, of the matrix and the transpose) end: ``n`` padded to a ``size_bucket`` (zeros), and with
    ``blocks`` to the next multiple of a blocks' grid step (``.mxu.part_start``: the kernel reads them in
    place). Each part is padded to its own grid steps, but a program that takes the whole buffer (one
    vector's product reads only the first part) compiled again whenever another part grew by a step: a
    2000 x 2000 matrix of 20,000 entries and one of 20,400 made two programs (TPU v5e, fifteenth session)."""
    end = size_bucket(n)
    return _mxu.part_start(end) if blocks else end


def _slot_orders(s_arrays: dict) -> dict:
    """``s_order`` and ``s_order_t``: the SELL-8 slots of the matrix and of the transpose (``_sell_slots``)
    in row order, a stable argsort of ``s_rows`` (``s_rows_t``; padding, row ``m``, last), int32. The
    COO formula that serves the dense blocks' non-finite results (``.mxu.mxu_matmat``) then sums sorted
    rows: XLA on a TPU v5e compiles that in 0.56 s against 8.3 for the slots' own order (nh2010, 262,144
    slots, 128 columns; ``.device_data/probe_fb.py``, fifteenth session), and every product compiles it."""
    return {"s_order" + sfx: np.argsort(s_arrays["s_rows" + sfx], kind="stable").astype(np.int32)
            for sfx in ("", "_t")}


def _mxu_blocks(ur, uc, shape, n_sell_slots: int, reorder: bool = True):
    """The dense ``(8, 128)`` blocks of ``.mxu`` of unique entries ``(ur, uc)`` (they serve ``A @ X`` and
    ``A.T @ X``), kept where ``.mxu`` applies (its ``x`` and result fit VMEM, the layout has SELL-8 slots
    for a non-finite ``x``) and they are worth their memory beside the ``n_sell_slots`` SELL-8 slots
    (``.mxu.worth_keeping``).

    With ``reorder`` (a square matrix), the blocks of the matrix in its
    reverse Cuthill-McKee order are priced too, the two row permutations
    per product included, and the cheaper of the two kept: a layout whose
    own order serves its one-vector products best (nh2010: 0.157 ms for
    ``A @ x`` against 0.318 reordered, TPU v5e) can still take the fewer
    blocks of the reordered matrix for many columns (nh2010: 23,249 blocks
    against about 108,000). Returns ``(slot, arrays)``: each entry's slot
    in the blocks (``.mxu.block_tables``) and ``{"mxu_table": table}``,
    with ``mxu_perm`` (the order) and ``mxu_inverse`` (int32, length
    ``m``) for reordered blocks; or ``(None, {})``.
    """
    m, k = shape
    if not (len(ur) and n_sell_slots and _sell.fits((m, k)) and _mxu.fits((m, k))):
        return None, {}
    options = []  # (price, order or None, the entries' rows and columns in it)
    n_own = _mxu.block_count(ur, uc, (m, k), pad=_sell_steps)
    if _mxu.worth_keeping(n_own, n_sell_slots, (m, k)):
        options.append((_mxu.mxu_cost(n_own, _mxu.LANES, (m, k)), None, ur, uc))
    perm = _rcm(ur, uc, np.ones(len(ur), bool), m) if reorder and m == k and m > 1 else None
    if perm is not None:
        inverse = np.empty(m, np.int64)
        inverse[perm] = np.arange(m)
        pr, pc = inverse[ur], inverse[uc]
        n_perm = _mxu.block_count(pr, pc, (m, k), pad=_sell_steps)
        if _mxu.worth_keeping(n_perm, n_sell_slots, (m, k), permuted=True):
            options.append((_mxu.mxu_cost(n_perm, _mxu.LANES, (m, k), permuted=True), perm, pr, pc))
    if not options:
        return None, {}
    _, order, r, c = min(options, key=lambda o: o[0])
    slot, table = _mxu.block_tables(r, c, (m, k), pad=_sell_steps)
    if order is None:
        return slot, {"mxu_table": table}
    return slot, {"mxu_table": table, "mxu_perm": order.astype(np.int32), "mxu_inverse": inverse.astype(np.int32)}


def _segmented_slots(ur, uc, shape, order_t, width: int = 1, prefix: str = "seg"):
    """The block tables (``.segmented.segmented_tables``, for ``width`` columns of ``x``) of unique entries
    ``(ur, uc)`` sorted by row, and of the transpose (``order_t``: ``_transpose_order``): ``(slot, slot_t,
    arrays)`` as ``_sell_slots``'s, the arrays ``seg_out``, ``seg_addr``, ``seg_cols``, ``seg_rows``,
    ``seg_ends`` and the same with ``_t`` (``prefix`` in place of ``seg``)."""
    m, k = shape
    (slot, arrays), (slot_by_col, arrays_t) = _pair(
        lambda r, c, shape: _segmented.segmented_tables(r, c, shape, pad=_sell_steps, width=width),
        (ur, uc, (m, k)), (uc[order_t], ur[order_t], (k, m)))
    slot_t = np.empty_like(slot_by_col)
    slot_t[order_t] = slot_by_col
    named = {name.replace("seg", prefix, 1): a for name, a in arrays.items()}
    return slot, slot_t, dict(named, **{name.replace("seg", prefix, 1) + "_t": a for name, a in arrays_t.items()})


def wide_width(shape) -> int:
    """The ``sell`` layout's wide tables' columns (``.segmented``'s ``width``) for a matrix of ``shape``:
    ``.segmented.MAX_WIDTH`` (8) where the SELL-8 row kernel's ``x`` and result (128 columns) do not fit
    VMEM but 8 columns' do, in both orientations; else 0 (the SELL-8 slots serve several columns, or the
    COO formula does).

    Widths 2 and 4 (larger matrices) are left to the COO formula: on a TPU v5e their kernels compiled in
    38 s and over a minute (width 8: 25 s, the one-vector kernel 1.5-3.5 s), for 2.65 ns per slot at
    width 2 (2026-12-06).
    """
    m, k = shape
    if _sell.fits((m, k)):  # (symmetric in m and k)
        return 0
    width = _segmented.MAX_WIDTH
    return width if _segmented.fits((m, k), width) and _segmented.fits((k, m), width) else 0


def build_sell(rows, cols, valid, shape, mxu: bool = False, mxu_reorder: bool = True) -> Layout:
    """The ``sell`` layout: the valid entries (duplicates share a slot) of the matrix and of its transpose,
    so ``A.T @ y`` runs the same kernels, twice: as ``.segmented``'s blocks (one vector) and, for several
    columns, as ``.sell``'s SELL-8 slots where that kernel's ``x`` and result fit VMEM (``.sell.fits``),
    else as ``.segmented``'s wide blocks (``wide_width`` columns a call), else not at all (the COO formula
    on the blocks' slots).

    Arrays: ``seg_out``, ``seg_addr``, ``seg_cols``, ``seg_rows``,
    ``seg_ends`` and the same with ``_t`` (``_segmented_slots``); then
    either ``s_table``, ``s_rows``, ``s_cols`` and the same with ``_t``
    (``_sell_slots``) or the wide blocks' ``w_out``, ``w_addr``,
    ``w_cols``, ``w_rows``, ``w_ends`` and the same with ``_t``; with
    ``mxu`` and SELL-8 slots, the dense blocks of ``.mxu`` where they are
    kept (``_mxu_blocks``: ``mxu_table``, with ``mxu_perm`` and
    ``mxu_inverse`` where they are those of the matrix's RCM order,
    ``mxu_reorder``; and the SELL slots' row orders ``s_order``,
    ``s_order_t``, ``_slot_orders``); and ``slot_t`` (nse, 3), each
    entry's slot in the transpose's blocks, then in the matrix's SELL-8
    slots or wide blocks and the transpose's ((nse, 1) with neither, (nse,
    4) with dense blocks: then in their part). The value buffer holds the
    matrix's blocks (``static["split"]`` slots), the transpose's, then the
    matrix's SELL-8 slots or wide blocks, the transpose's, then the dense
    blocks (from the next multiple of ``.mxu.STEP_VALUES``, zeros before
    them).
    """
    m, k = shape
    r, c = rows[valid], cols[valid]
    ukey, inv_entry = unique_inverse(r * max(k, 1) + c)  # sorted: row order
    inv_entry = inv_entry.reshape(-1)
    ur, uc = ukey // max(k, 1), ukey % max(k, 1)
    order_t = _transpose_order(ur, uc)  # one sort for every kind of table
    gslot, gslot_t, g_arrays = _segmented_slots(ur, uc, (m, k), order_t)
    n1, n2 = g_arrays["seg_cols"].size, g_arrays["seg_cols_t"].size
    width = wide_width((m, k))
    if _sell.fits((m, k)):
        sslot, sslot_t, s_arrays = _sell_slots(ur, uc, (m, k), order_t)
        n3, n4 = s_arrays["s_rows"].size, s_arrays["s_rows_t"].size
    elif width:
        sslot, sslot_t, s_arrays = _segmented_slots(ur, uc, (m, k), order_t, width=width, prefix="w")
        n3, n4 = s_arrays["w_cols"].size, s_arrays["w_cols_t"].size
    else:
        sslot, sslot_t, s_arrays, n3, n4 = None, None, {}, 0, 0
    bslot, b_arrays = _mxu_blocks(ur, uc, (m, k), n3, mxu_reorder) if mxu and "s_table" in s_arrays else (
        None, {})
    if b_arrays:
        b_arrays.update(_slot_orders(s_arrays))
    n5 = _mxu.value_count(b_arrays["mxu_table"]) if b_arrays else 0
    start5 = _value_parts_end(n1 + n2 + n3 + n4, bool(b_arrays))
    n_slots = start5 + n5
    slot = np.full(len(rows), n_slots, np.int64)
    slot[valid] = gslot[inv_entry]
    slot_t = np.full((len(rows), (4 if b_arrays else 3) if s_arrays else 1), n_slots, np.int64)
    slot_t[valid, 0] = n1 + gslot_t[inv_entry]
    if s_arrays:
        slot_t[valid, 1] = n1 + n2 + sslot[inv_entry]
        slot_t[valid, 2] = n1 + n2 + n3 + sslot_t[inv_entry]
    if b_arrays:
        slot_t[valid, 3] = start5 + bslot[inv_entry]
    lay = Layout("sell", (m, k), n_slots, slot)
    lay.static = {"split": n1}
    lay.arrays.update(g_arrays, **s_arrays, **b_arrays,
                      slot_t=slot_t.astype(np.int32 if n_slots < 2**31 - 1 else np.int64))
    return lay


def _sell_steps(steps: int) -> int:
    """Grid steps a SELL table of ``steps`` steps is padded to (``.sell.sell_tables``): up to 8 as they
    are, then a ``size_bucket`` (at most 25% more), so that matrices of similar size share programs."""
    return steps if steps <= 8 else size_bucket(steps)


def build_dia(rows, cols, valid, shape, offsets=None) -> Layout:
    """Diagonal storage: ``values[d, i] = A[i, i + offsets[d]]``."""
    m, k = shape
    r, c = rows[valid], cols[valid]
    off = c - r
    if offsets is None:
        offsets = unique_ints(off)
    offsets = np.asarray(offsets, np.int64)
    d = np.searchsorted(offsets, off)
    slot = np.full(len(rows), len(offsets) * m, np.int64)
    slot[valid] = d * m + r
    lay = Layout("dia", (m, k), len(offsets) * m, slot)
    lay.static = {"offsets": tuple(int(o) for o in offsets)}
    return lay


def build_dense(rows, cols, valid, shape) -> Layout:
    """The whole matrix as a dense block."""
    m, k = shape
    slot = np.full(len(rows), m * k, np.int64)
    slot[valid] = rows[valid] * k + cols[valid]
    return Layout("dense", (m, k), m * k, slot)


def build_coo(rows, cols, valid, shape) -> Layout:
    """The fallback: the valid entries as COO, in row order, duplicates sharing one slot (they add up
    before they meet ``x``, as in every other layout: ``2 * inf + (-1) * inf`` would be NaN)."""
    m, k = shape
    r, c = rows[valid], cols[valid]
    ukey, inv_entry = unique_inverse(r * max(k, 1) + c)  # sorted: row order
    # padded to a size bucket (row m, column k, a zero value: the product drops them), so that matrices of
    # one shape and similar nse share one compiled product
    n_slots = size_bucket(len(ukey))
    pad = n_slots - len(ukey)
    slot = np.full(len(rows), n_slots, np.int64)
    slot[valid] = inv_entry.reshape(-1)
    lay = Layout("coo", tuple(shape), n_slots, slot)
    lay.arrays["rows"] = np.concatenate([ukey // max(k, 1), np.full(pad, m)]).astype(np.int32)
    lay.arrays["cols"] = np.concatenate([ukey % max(k, 1), np.full(pad, k)]).astype(np.int32)
    return lay


def _costs(backend: str) -> dict[str, float]:
    return COSTS.get(backend, COSTS["gpu"])


def _eager_kinds(est: dict, backend: str) -> tuple[str, ...]:
    """The layouts an eager product chooses among (``choose(..., eager=True)``): ``EAGER_KINDS`` where the
    cheapest of them is priced under ``EAGER_SHARE`` of the backend's dispatch, else ``AUTO_KINDS``."""
    kinds = tuple(name for name in AUTO_KINDS if name in EAGER_KINDS)
    priced = [est[name] for name in kinds if name in est]
    if priced and min(priced) <= EAGER_SHARE * _costs(backend).get("dispatch", 0.0):
        return kinds
    return AUTO_KINDS


def _padded_units(block_rows: np.ndarray, n_block_rows: int) -> int:
    """Units (tiles, chunks or entries) a sliced ELL of these block rows stores, padding included."""
    counts = np.bincount(block_rows, minlength=n_block_rows)
    total = int(counts.sum())
    mx = int(counts.max()) if len(counts) else 0
    if mx and n_block_rows * mx <= 1.25 * total + n_block_rows:
        return n_block_rows * mx
    return int(_width_class(counts[counts > 0]).sum())


def _coarsen(keys: np.ndarray, counts: np.ndarray, ncols: int, row_div: int, col_div: int):
    """Merge the blocks ``keys = row * ncols + col`` (with entry ``counts``) into blocks ``row_div`` x ``col_div``
    times larger: the new keys (row-major in the coarse grid), their counts and the coarse column count."""
    ncols2 = -(-ncols // col_div)
    k2 = (keys // ncols // row_div) * ncols2 + (keys % ncols) // col_div
    order = np.argsort(k2, kind="stable")
    k2s = k2[order]
    first = np.concatenate([[True], k2s[1:] != k2s[:-1]]) if len(k2s) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    return k2s[starts], np.add.reduceat(counts[order], starts) if len(starts) else counts[:0], ncols2


def _block_counts(r, c, k, shapes=BLOCK_SHAPES):
    """Entries per ``(R, P)`` block for every shape of ``shapes`` (each a multiple of the one before): one
    pass over the entries, then merges of the smaller blocks, each computed when the iteration reaches it.
    Yields ``((R, P), (keys, counts, n_block_cols))``, ``keys = block_row * n_block_cols + block_col``.

    As each shape is a multiple of the one before, the slots of the non-empty
    blocks (their count times ``R * P``) never shrink from one shape to the next."""
    R0, P0 = shapes[0]
    ncp = -(-k // P0)
    keys, counts = unique_counts((r // R0) * ncp + c // P0)
    prev = (R0, P0)
    yield prev, (keys, counts, ncp)
    for R, P in shapes[1:]:
        pr, pp = prev
        keys, counts, ncp = _coarsen(keys, counts, ncp, R // pr, P // pp)
        prev = (R, P)
        yield prev, (keys, counts, ncp)


def estimate(rows, cols, valid, shape, itemsize: int, backend: str, *, full: bool = False,
             mixed_tiles: bool | None = None, dtype=None) -> dict[str, Any]:
    """Bytes-equivalent cost of one product in each layout (``COSTS``), and each layout's best parameters.

    Returns a dict ``{kind: cost}`` for the layouts that apply, plus
    ``"tile"`` (the cheapest tile shape), ``"block"`` and ``"chunk"`` (the
    cheapest block shape and chunk size) and ``"dia_offsets"`` (the number
    of diagonals). When the diagonal layout stores next to no padding, no
    other layout can move fewer bytes and the block layouts are not priced,
    unless ``full`` (the reordered matrix of ``choose``, which picks among the
    layouts a reordering serves).
    Tile and block counts of the larger shapes come from merging the
    smallest shape's (one pass over the entries). ``dtype``: the values'
    (``sell`` is priced for float32 only, its kernel's dtype; None: any
    4-byte value is taken for float32).
    """
    m, k = shape
    s = itemsize
    r, c = rows[valid], cols[valid]
    if len(r):
        key = unique_ints(r * k + c)  # unique positions: duplicates share a slot
        r, c = key // k, key % k
    nnz = len(r)
    cost = _costs(backend)
    vec = (m + k) * s
    out: dict[str, Any] = {}
    out["coo"] = nnz * (s + 8) + nnz * (cost["gather"] + cost["scatter"]) + vec
    ell_units = _padded_units(r, m) if nnz else 0
    out["ell"] = ell_units * (s + 4 + cost.get("ell_slot", cost["gather"])) + vec
    if m * k <= DENSE_MAX_ELEMENTS:
        out["dense"] = m * k * s + vec
    n_diag = int(unique_ints(c - r).size) if nnz else 0
    out["dia_offsets"] = n_diag
    if n_diag and n_diag * m <= 4 * nnz + m:
        out["dia"] = n_diag * (m * s + cost["dia_pass"]) + vec
    if nnz == 0:
        return out
    if not full and "dia" in out and n_diag * m <= 1.05 * nnz + 2 * n_diag * n_diag:
        return out  # every other layout stores the nnz values and more: dia wins (a stencil, a band)
    if backend == "tpu" and itemsize == 4 and _panels.fits((m, k)):
        n_tiles, mixed = _panel_tiles(_panels.tile_counts(r, c, (m, k)), backend, mixed_tiles)
        out["panel_tiles"], out["panel_mixed"] = n_tiles, mixed
        slots = n_tiles * _panels.SUBLANES * _panels.LANES
        if (slots <= PANELS_MAX_PADDING * nnz + 1024
                and 2 * (slots * (s + 4) + nnz * (s + 8)) <= PANELS_AUTO_MAX_BYTES):  # tiles and SELL slots
            per_tile = cost["panel_mixed_tile" if mixed else "panel_tile"]
            out["panels"] = (n_tiles * (_panels.SUBLANES * _panels.LANES * (s + 4) + per_tile)
                             + cost["panel_call"] + 2 * vec)
    if (backend == "tpu" and itemsize == 4 and (dtype is None or np.dtype(dtype) == np.float32)
            and _segmented.fits((m, k))):
        slots, _ = _segmented.slot_count(r, m)
        slots_t, _ = _segmented.slot_count(c, k)
        sell_bytes = (slots + slots_t) * SEGMENTED_SLOT_BYTES + 2 * nnz * (s + 8) * _sell.fits((m, k))
        width = wide_width((m, k))
        if width:  # the wide blocks of several columns, both orientations
            sell_bytes += (_segmented.slot_count(r, m, width)[0]
                           + _segmented.slot_count(c, k, width)[0]) * SEGMENTED_SLOT_BYTES
        if sell_bytes <= PANELS_AUTO_MAX_BYTES:
            out["sell"] = (slots * (SEGMENTED_SLOT_BYTES + cost["segmented_slot"]) + cost["segmented_call"]
                           + vec)
    best = None
    largest = max(bm * bk for bm, bk in TILE_SHAPES)
    for tile, (tkeys, _, tcols) in _block_counts(r, c, k, TILE_SHAPES):
        bm, bk = tile
        if len(tkeys) * bm * bk > 32 * nnz + largest:  # so are the larger tiles' (their slots never shrink)
            break
        if len(tkeys) * bm * bk > 32 * nnz + bm * bk:  # tiles far emptier than the entries: skip
            continue
        units = _padded_units(tkeys // tcols, -(-m // bm))
        t_cost = units * (bm * bk * s + cost["row_gather"]) + -(-m // bm) * cost["row_gather"] + vec
        if best is None or t_cost < best[0]:
            best = (t_cost, tile)
    if best is not None:
        out["tiles"], out["tile"] = best
    best = None
    for block, (bkeys, bcounts, ncp) in _block_counts(r, c, k):
        R, P = block
        if R > 2 * m and P > 2 * k:
            continue
        for chunk in CHUNK_SIZES:
            chunk_rows = np.repeat(bkeys // ncp, -(-bcounts // chunk))
            units = _padded_units(chunk_rows, -(-m // R))
            per_chunk = cost["row_gather"] + P * s + chunk * (s + 8) + chunk * (P + R) * cost["vector_op"]
            b_cost = units * per_chunk + -(-m // R) * cost["row_gather"] + vec
            if best is None or b_cost < best[0]:
                best = (b_cost, block, chunk)
    if best is not None:  # every block shape is far larger than a tiny matrix: no blocks layout
        out["blocks"], out["block"], out["chunk"] = best
    return out


def _rcm(rows, cols, valid, n: int) -> np.ndarray | None:
    """Reverse Cuthill-McKee order of the symmetrised pattern of a square matrix, or None."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    r, c = rows[valid], cols[valid]
    pat = sp.csr_matrix((np.ones(len(r), np.int8), (r, c)), shape=(n, n))
    pat = (pat + pat.T).tocsr()
    pat.sum_duplicates()
    perm = np.asarray(reverse_cuthill_mckee(pat, symmetric_mode=True), np.int64)
    if np.array_equal(perm, np.arange(n)):
        return None
    return perm


def _spread(rows, cols, valid) -> float:
    """Median distance ``|row - col|`` from the diagonal of the valid entries off it
    (``REORDER_MIN_SPREAD_GAIN``; 0 without any): diagonal entries, which no symmetric permutation moves,
    would otherwise hide the rest where they are half the entries or more."""
    d = np.abs(rows[valid] - cols[valid])
    d = d[d > 0]
    return float(np.median(d)) if d.size else 0.0


def _check_size(kind: str, n_diag: int, shape) -> None:
    """Refuse a ``dense`` or ``dia`` layout of more than ``FORCED_MAX_SLOTS`` values."""
    m, k = shape
    slots = m * k if kind == "dense" else n_diag * m if kind == "dia" else 0
    if slots > FORCED_MAX_SLOTS:
        what = f"{m} x {k} dense values" if kind == "dense" else f"{n_diag} diagonals of {m} values"
        raise ValueError(f"layout={kind!r} would store {what} ({slots:.3g} slots, more than FORCED_MAX_SLOTS = "
                         f"{FORCED_MAX_SLOTS}): pick a sparse layout, or None to let the library choose")


def _check_panels(rows, cols, valid, shape, itemsize: int, n_tiles: int | None = None,
                  mixed: bool | None = None) -> None:
    """Refuse a ``panels`` layout that would not fit VMEM or would be mostly padding (``n_tiles``: the
    estimate's count, when it made one)."""
    m, k = shape
    if itemsize != 4:
        raise ValueError(f"layout='panels' holds 32-bit values (the Pallas kernel's (8, 128) tiles); this matrix "
                         f"has {itemsize}-byte values: cast it with A.astype('float32') or pick another layout")
    if not _panels.fits((m, k)):
        raise ValueError(f"layout='panels' keeps x and A @ x in VMEM; a {m} x {k} matrix needs more than "
                         f"{_panels.resident_max_elements()} resident elements: pick another layout (or None)")
    key = unique_ints(rows[valid] * k + cols[valid])
    if n_tiles is None:
        n_tiles, _ = _panel_tiles(_panels.tile_counts(key // k, key % k, (m, k)), mixed=mixed)
    slots = n_tiles * _panels.SUBLANES * _panels.LANES
    if slots > PANELS_MAX_PADDING * len(key) + 1024:
        raise ValueError(f"layout='panels' would store {slots} slots for {len(key)} entries (more than "
                         f"{PANELS_MAX_PADDING} per entry: the pattern is too scattered for 128 x 128 panels); "
                         f"pick another layout (or None)")


def _dia_in_range(lay: Layout) -> int:
    """Slots of a ``dia`` layout that meet an element of ``x`` (the in-range positions of its diagonals).
    When the stored entries fill them all, no zero of padding multiplies ``x``, its element-wise products
    are IEEE's, and it needs no non-finite check (``static["complete"]``, ``accel.needs_check``)."""
    m, k = lay.shape
    offs = np.asarray(lay.static["offsets"], np.int64)
    return int(np.maximum(0, np.minimum(m, k - offs) - np.maximum(0, -offs)).sum())


def size_bucket(n: int) -> int:
    """The smallest of ``2**j * (4, 5, 6, 7) / 4`` (four sizes per octave, at most 25% padding) that is
    ``>= n``, and at least 8 (0 for 0: an empty matrix's value buffer has no slot a padding entry could
    read): the length index arrays of ``n`` entries are padded to, so that array shapes (and the
    programs compiled for them) repeat across matrices."""
    if int(n) <= 0:
        return 0
    n = max(int(n), 8)
    j = max(n.bit_length() - 3, 0)
    for q in (4, 5, 6, 7, 8):
        if (q << j) >= n:
            return q << j
    raise AssertionError(n)  # unreachable: 8 << j >= n


def place_values_host(data: np.ndarray, slot: np.ndarray, n_slots: int, slot_t: np.ndarray | None = None):
    """Host: a layout's flat value buffer from concrete BCOO ``data`` (NumPy), no device program compiled.

    ``data`` (nse,) is added at ``slot`` (nse,), and at each column of
    ``slot_t`` (nse, c) too where the layout keeps more copies (``panels``:
    its transpose's tiles and its COO entries);
    slots ``>= n_slots`` (padding) are dropped; duplicates add up, in
    float64 (complex128) and rounded once to ``data.dtype`` (integers in
    their own dtype, exactly). What
    ``accel.layout_values`` computes on the device, for eager products and
    ``prepare``: a scatter-add compiled per ``nse`` took 0.4-0.5 s on a TPU
    v5e for 20,000 entries, this takes microseconds to milliseconds.

    Returns
    -------
    numpy.ndarray, shape ``(n_slots,)``, dtype ``data.dtype``
    """
    data = np.asarray(data).reshape(-1)
    slot_t = None if slot_t is None else np.asarray(slot_t)
    copies = () if slot_t is None else (slot_t,) if slot_t.ndim == 1 else tuple(slot_t.T)  # (nse,) or (nse, c)
    ws, ds = [], []
    for where in (slot, *copies):
        where = np.asarray(where).reshape(-1)
        keep = (where >= 0) & (where < n_slots)
        ws.append(where[keep])
        ds.append(data[keep])
    out = np.zeros(n_slots, data.dtype)
    w, d = np.concatenate(ws), np.concatenate(ds)
    if not w.size:
        return out
    # Sums over the slots that receive values only: the layouts with dense blocks have tens of times more
    # slots than entries (cage11's 47 million against 0.56 million: 0.75 s for a float64 buffer of every
    # slot, 0.14 s this way).
    used, inverse = unique_inverse(w)
    if data.dtype.kind in "iub":  # integers add in their own dtype (wrapping as XLA's scatter-add)
        sums = np.zeros(used.size, data.dtype)
        np.add.at(sums, inverse, d)
    elif data.dtype.kind == "c":  # the parts separately (``1j * inf`` would be ``nan + inf j``)
        sums = np.empty(used.size, np.complex128)
        sums.real = np.bincount(inverse, weights=d.real.astype(np.float64), minlength=used.size)
        sums.imag = np.bincount(inverse, weights=d.imag.astype(np.float64), minlength=used.size)
    else:
        sums = np.bincount(inverse, weights=d.astype(np.float64), minlength=used.size)
    out[used] = sums.astype(data.dtype, copy=False)
    return out


def choose(indices, shape, itemsize: int, backend: str, *, kind: str | None = None,
           tile: tuple[int, int] | None = None, reorder: bool | None = None,
           mixed_tiles: bool | None = None, dtype=None, mxu: bool = False, eager: bool = False) -> Layout:
    """Build the cheapest layout of a 2-D matrix for ``backend`` (or the one asked for).

    Parameters
    ----------
    indices : numpy.ndarray, shape ``(nse, 2)``
        Concrete BCOO indices (padding allowed).
    shape : (m, k)
    itemsize : int
        Bytes per stored value.
    backend : str
        ``"tpu"``, ``"gpu"`` or ``"cpu"``: prices the operations (``COSTS``).
    kind : str, optional
        Force one of ``LAYOUT_KINDS``.
    tile : (bm, bk), optional
        Force the tile shape of the ``tiles`` layout.
    reorder : bool, optional
        Force (True) or forbid (False) the RCM reordering; by default it is
        tried for square matrices when the layout asked for is ``tiles``,
        ``blocks``, ``ell`` or ``panels``, or when the cheapest one is one of
        them or ``sell``, and kept when the cheapest of those four layouts of
        the reordered matrix, its two permutations per product included,
        costs a quarter less or more (priced only where it brings the median
        distance of the entries off the diagonal from it below
        ``REORDER_MIN_SPREAD_GAIN`` of the original's, unless ``reorder=True``).
    mixed_tiles : bool, optional
        Tiles of a ``panels`` layout: mixed (True: a column panel per
        sublane) or uniform (False: one panel per tile, a kernel that
        compiles in about half the time); by default the cheaper per product.
        ``PANELS_MIXED``, where set, overrides it.
    dtype : numpy dtype, optional
        The values' dtype (``estimate``: ``sell`` is priced for float32
        only); None takes any 4-byte value for float32.
    mxu : bool, optional
        Whether a ``panels`` or ``sell`` layout also keeps the dense blocks of
        ``.mxu`` for products with many columns, where they are worth their
        memory beside its SELL-8 slots (``_mxu_blocks``; they may take tens
        of times the entries' bytes). Default False (eager products);
        ``prepare`` asks for them on a TPU with float32 values. The blocks
        may be those of the matrix's reverse Cuthill-McKee order where that
        is cheaper, its two permutations per product included (a square
        matrix the layout does not reorder, ``reorder`` not False): the
        one-vector products keep the matrix's own order.
    eager : bool, optional
        Choose for eager products (``.matmul``'s products of a BCOOArray
        placed on an accelerator), which compile their program on a first
        call: where the cheapest of ``EAGER_KINDS`` (layouts with one
        quickly compiled program per shape and size bucket) is priced
        under ``EAGER_SHARE`` of a call's dispatch, the choice is made
        among those only (the RCM reordering included), so that a new
        matrix of the same shape and about the same ``nse`` reuses the
        compiled product. Default False (prepared operators, which are
        compiled once and called many times).

    Returns
    -------
    Layout

    Raises
    ------
    ValueError
        If ``kind`` is not one of ``LAYOUT_KINDS``, or ``reorder=True`` for a
        non-square matrix.
    """
    m, k = (int(shape[0]), int(shape[1]))
    if kind is not None and kind not in LAYOUT_KINDS:
        raise ValueError(f"layout={kind!r} is not one of {LAYOUT_KINDS}; pass one of them or None to choose")
    if reorder and m != k:
        raise ValueError(f"reorder=True needs a square matrix (a symmetric permutation); shape is {(m, k)}")
    rows, cols, valid = _coo(indices, (m, k))
    forced = kind is not None
    # a forced reorderable layout is priced even where dia wins outright (the reordering compares its costs)
    est = estimate(rows, cols, valid, (m, k), itemsize, backend, full=forced and kind in REORDERABLE,
                   mixed_tiles=mixed_tiles, dtype=dtype)
    kinds = _eager_kinds(est, backend) if eager and not forced else AUTO_KINDS
    if not forced:
        costs = {name: est[name] for name in kinds if name in est}
        kind = min(costs, key=costs.get)
    perm = None
    # The reordering, for the layouts it helps, tried when one of them is asked for or is the cheapest; left
    # to itself the choice then compares every reorderable layout of the reordered matrix (plus the two
    # permutations per product) with the best layout without it (``sell`` among them: the reordering does not
    # serve it, but it may make a reorderable layout cheaper still).
    if ((kind in REORDERABLE or (kind == "sell" and not forced)) and m == k and m > 1 and reorder is not False
            and valid.any()):
        cand = _rcm(rows, cols, valid, m)
        if cand is not None:
            inv = np.empty(m, np.int64)
            inv[cand] = np.arange(m)
            prow, pcol = inv[np.minimum(rows, m - 1)], inv[np.minimum(cols, k - 1)]
            prow = np.where(valid, prow, m)
            pcol = np.where(valid, pcol, k)
            if not reorder and _spread(prow, pcol, valid) >= REORDER_MIN_SPREAD_GAIN * _spread(rows, cols, valid):
                cand = None  # the reordering left the pattern as spread as it was: not priced
        if cand is not None:
            est_p = estimate(prow, pcol, valid, (m, k), itemsize, backend, full=True, mixed_tiles=mixed_tiles,
                             dtype=dtype)
            perm_cost = 2 * m * _costs(backend)["permute"]
            before = est.get(kind, math.inf)
            kind_p = kind
            if not forced:
                costs_p = {name: est_p[name] for name in kinds if name in est_p and name in REORDERABLE}
                kind_p = min(costs_p, key=costs_p.get) if costs_p else kind
            after = est_p.get(kind_p, math.inf) + perm_cost
            if reorder or after <= 0.75 * before:
                perm, rows, cols, est, kind = cand, prow, pcol, est_p, kind_p
                est["reordered_from"] = before
    _check_size(kind, est.get("dia_offsets", 0), (m, k))
    mxu_reorder = perm is None and reorder is not False  # (the blocks' own reordering, for many columns)
    if kind == "panels":
        _check_panels(rows, cols, valid, (m, k), itemsize, est.get("panel_tiles"), mixed_tiles)
    if kind == "tiles" and tile is None and "tile" not in est:
        tile = TILE_SHAPES[0]
    if kind == "dense":
        lay = build_dense(rows, cols, valid, (m, k))
    elif kind == "dia":
        lay = build_dia(rows, cols, valid, (m, k))
    elif kind == "tiles":
        lay = build_tiles(rows, cols, valid, (m, k), tuple(tile or est["tile"]))
    elif kind == "blocks":
        lay = build_blocks(rows, cols, valid, (m, k), tuple(est.get("block", BLOCK_SHAPES[0])),
                           int(est.get("chunk", CHUNK_SIZES[0])))
    elif kind == "ell":
        lay = build_ell(rows, cols, valid, (m, k))
    elif kind == "panels":
        lay = build_panels(rows, cols, valid, (m, k), mixed_tiles, mxu=mxu, mxu_reorder=mxu_reorder)
    elif kind == "sell":
        lay = build_sell(rows, cols, valid, (m, k), mxu=mxu, mxu_reorder=mxu_reorder)
    else:
        lay = build_coo(rows, cols, valid, (m, k))
    uslot, first = np.unique(lay.slot[valid], return_index=True) if lay.kind in STORES_ZEROS else (None, None)
    if lay.kind == "dia":  # (not dense: a TPU's multi-pass f32 matmul splits an inf of x into inf - inf)
        lay.static["complete"] = len(uslot) == _dia_in_range(lay)
    if lay.kind in STORES_ZEROS and not lay.static.get("complete"):
        # The stored entries as COO (unique positions), for the product's non-finite fallback, padded to
        # a size bucket (padding: row m, column k, slot n_slots; the COO product drops them) so that
        # matrices of one shape and layout parameters share a compiled program whatever their nse.
        # Sorted by row (the product's segment sum is told so), padding rows last.
        urows, ucols = rows[valid][first], cols[valid][first]
        by_row = np.lexsort((ucols, urows))
        pad = size_bucket(len(uslot)) - len(uslot)
        lay.arrays["u_rows"] = np.concatenate([urows[by_row], np.full(pad, m)]).astype(np.int32)
        lay.arrays["u_cols"] = np.concatenate([ucols[by_row], np.full(pad, k)]).astype(np.int32)
        lay.arrays["u_slot"] = np.concatenate([uslot[by_row], np.full(pad, lay.n_slots)]).astype(
            np.int32 if lay.n_slots < 2**31 - 1 else np.int64)
        # and their order by column (padding, column k, last), for the transpose's segment sum: XLA on a TPU
        # compiles an unsorted segment sum of rows of x in about 8 s, a sorted one in 0.6 (``_slot_orders``)
        lay.arrays["u_order_t"] = np.lexsort((lay.arrays["u_rows"], lay.arrays["u_cols"])).astype(np.int32)
    lay.perm = perm
    lay.estimate = {n: v for n, v in est.items() if n in LAYOUT_KINDS}
    return lay
