"""Products with many right-hand sides: a SELL-8 row-gather Pallas TPU kernel, ``x`` resident in VMEM.

The ``panels`` kernel (``.panels``) picks one element of ``x`` per stored
entry and right-hand side, so its cost grows with the columns of ``x``
(about 10 ns per tile and column on a TPU v5e). With many columns a stored
entry ``(r, c, v)`` is better served by a whole row: ``y[r, :] += v *
x[c, :]`` is one 128-lane vector operation for up to 128 columns. XLA's row
gathers cost about 9 ns per row on a TPU (``.costs.COSTS``), so this
kernel gathers inside VMEM instead:

- ``x`` (``k`` rows, the right-hand sides on the 128 lanes, then zero rows)
  is copied into VMEM once per call, and so is the result; entry ``(r, c,
  v)`` is one dynamic one-row load of ``x``, scaled by ``v``.
- Rows are sorted by their entry count, longest first, and cut into
  *slices* of 8 (sliced ELLPACK, SELL-C-sigma with C = 8 and sigma the
  whole matrix; Kreutzer et al., "A unified sparse matrix data format for
  efficient general sparse matrix-vector multiplication on modern
  processors with wide SIMD units", SIAM J. Sci. Comput. 36(5), 2014). A
  slice stores its rows' entries depth by depth, 8 slots per depth (slot
  ``i`` for the slice's row ``i``; the sort leaves almost no padding
  slots, which read a zero row of ``x``). The 8 rows keep 8 register
  accumulators, added to their rows of the result at the slice's end.
- The slots (columns and values, 32-bit scalars) reach SMEM in blocks of
  ``SLOTS_PER_STEP`` per grid step. A slice's depths may straddle steps:
  each step's table lists its *chunks* (first slot, depths, the slice's 8
  rows), and each chunk adds into the resident result.

On a TPU v5e with 128 columns a slot costs about 2.3 ns and a slice 75 ns
(nh2010: 1.03 ms against 2.63 for a COO product and 3.98 for jax's BCOO;
``.costs.COSTS``), whatever the number of columns up to 128, where the
panels kernel is cheaper for a few columns (``sell_is_cheaper``).

One vector is ``.segmented``'s kernel (8 entries per vector step, no per-row
control flow): the ``sell`` layout keeps its blocks, and these slots beside
them where this kernel's ``x`` and result fit VMEM.

The product is the primitive ``sell_matmat_p`` (linear in the values and in
``x``: its JVP binds it again, its transpose is JAX's transpose of the XLA
formula ``sell_reference``, a COO product of the same slots; a mapped ``x``
becomes more right-hand sides). Off a TPU the kernel runs in Pallas
interpret mode (how the tests check it on a CPU) and ``sell_reference`` is
the portable path.
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
from .costs import COSTS

#: Lanes of a vector register (right-hand sides per kernel call) and its sublanes (rows of a slice).
LANES = 128
SUBLANES = 8

#: Slots (a column and a value each) one grid step brings into SMEM: a multiple of 128.
SLOTS_PER_STEP = 2048

#: Fields of a chunk in the step table: its first slot, its depths, the 8 rows of its slice.
CHUNK_FIELDS = 2 + SUBLANES

#: Depths (8 slots each) one iteration of the kernel's depth loop takes (unrolled by hand).
DEPTH_UNROLL = 2

#: VMEM the kernel may use on a 128 MiB chip (bytes; ``vmem_limit_bytes`` scales it to the chip in use):
#: ``x`` and the result, resident once each.
VMEM_LIMIT_BYTES = 100 << 20

#: Largest ``x`` plus result the kernel keeps in VMEM on a 128 MiB chip (bytes; 128 lanes per row of
#: either; ``resident_max_bytes``: on the chip in use).
RESIDENT_MAX_BYTES = 88 << 20

#: VMEM left to Mosaic beside the resident ``x`` and result on a chip of less VMEM (bytes).
MOSAIC_BYTES = 4 << 20


def vmem_limit_bytes() -> int:
    """The kernel's VMEM limit on the chip in use: ``VMEM_LIMIT_BYTES``'s share of its VMEM
    (``.costs.vmem_share``; 100 MiB of a TPU v5e's 128, 50 of a TPU 7x's 64)."""
    return _costs.vmem_share(VMEM_LIMIT_BYTES)


def resident_max_bytes() -> int:
    """Largest ``x`` plus result (bytes) the kernel keeps in VMEM on the chip in use: ``RESIDENT_MAX_BYTES``,
    or ``vmem_limit_bytes`` less ``MOSAIC_BYTES`` where that is less."""
    return max(0, min(RESIDENT_MAX_BYTES, vmem_limit_bytes() - MOSAIC_BYTES))


def fits(shape) -> bool:
    """Whether ``x`` and ``A @ x`` (32-bit; a row of 128 lanes per row of either) of a matrix of ``shape``
    stay in VMEM (``resident_max_bytes``)."""
    m, k = shape
    return (_tiles(m) + _tiles(k) + 2) * SUBLANES * LANES * 4 <= resident_max_bytes()


def _tiles(n: int) -> int:
    """``(8, 128)`` tiles that hold ``n`` rows (at least one)."""
    return -(-max(int(n), 1) // SUBLANES)


def sell_cost(n_slots: int, n_rhs: int, shape, kernel: bool) -> float:
    """The price (``.costs.COSTS["tpu"]``, bytes-equivalent) of ``n_rhs`` right-hand sides of a ``(m, k)``
    product on ``n_slots`` SELL slots: ``sell_slot`` per slot and ``sell_chunk`` per slice of 8 rows (and
    per grid step), per 128 columns; ``coo_row_entry`` per slot where the kernel does not apply
    (``kernel`` false: its XLA formula, a COO product, runs)."""
    cost = COSTS["tpu"]
    groups = -(-max(int(n_rhs), 1) // LANES)
    if kernel:
        steps = n_slots // SLOTS_PER_STEP
        return groups * (n_slots * cost["sell_slot"] + (_tiles(shape[0]) + steps) * cost["sell_chunk"])
    return groups * n_slots * cost["coo_row_entry"]


def panels_rhs_cost(n_tiles: int, mixed: bool, n_rhs: int) -> float:
    """The price of ``n_rhs`` right-hand sides in ``n_tiles`` tiles of the ``panels`` kernel (``.panels``),
    each of which takes one lane gather per column: ``panel_rhs_tile`` per mixed tile and column,
    ``panel_rhs_uniform_tile`` per uniform one (``mixed``)."""
    return n_rhs * n_tiles * COSTS["tpu"]["panel_rhs_tile" if mixed else "panel_rhs_uniform_tile"]


def sell_is_cheaper(n_tiles: int, mixed: bool, n_slots: int, n_rhs: int, shape, kernel: bool) -> bool:
    """Whether ``n_rhs`` right-hand sides of a ``(m, k)`` product cost less on ``n_slots`` SELL slots
    (``sell_cost``) than in ``n_tiles`` tiles of the ``panels`` kernel (``panels_rhs_cost``). Decided from
    array shapes, so the choice costs no program of its own."""
    return n_rhs > 1 and panels_rhs_cost(n_tiles, mixed, n_rhs) > sell_cost(n_slots, n_rhs, shape, kernel)


# --- host: the slot tables ------------------------------------------------------------------------------

def _table_width(slots_per_step: int) -> int:
    """Columns of the chunk table: a count, then 10 per chunk (at most one chunk per 8 slots), whole 128s."""
    return -(-(1 + CHUNK_FIELDS * (slots_per_step // SUBLANES)) // 128) * 128


def slice_rows(counts: np.ndarray) -> np.ndarray:
    """Host: the rows of each SELL-8 slice, ``(n_slices, 8)`` int64, from the entry count of each row
    ``counts`` (m,): the non-empty rows sorted by count, longest first (stable), 8 per slice; a missing
    row (in the last slice) is ``8 * ceil(m / 8)``."""
    counts = np.asarray(counts, np.int64)
    nonempty = np.flatnonzero(counts)
    rows = nonempty[np.argsort(-counts[nonempty], kind="stable")]
    out = np.full(-(-len(rows) // SUBLANES) * SUBLANES, _tiles(len(counts)) * SUBLANES, np.int64)
    out[:len(rows)] = rows
    return out.reshape(-1, SUBLANES)


def sorted_entries(rows, cols, shape, caller: str) -> tuple[np.ndarray, np.ndarray]:
    """Host: ``rows`` and ``cols`` as flat int64 arrays, checked to be entries of a matrix of ``shape``
    sorted by row (what the slot tables of this module and of ``.segmented`` are built from). Raises
    ``ValueError``, naming ``caller``, where they differ in length, an index is negative or out of
    ``shape``, or the rows are not sorted."""
    m, k = shape
    rows = np.asarray(rows, np.int64).reshape(-1)
    cols = np.asarray(cols, np.int64).reshape(-1)
    n = len(rows)
    if len(cols) != n:
        raise ValueError(f"{caller}: rows and cols differ in length ({n} and {len(cols)})")
    if n and (min(rows.min(), cols.min()) < 0 or rows.max() >= m or cols.max() >= k):
        raise ValueError(f"{caller}: rows and cols must index a matrix of shape {tuple(shape)}")
    if np.any(rows[1:] < rows[:-1]):
        raise ValueError(f"{caller}: the entries must be sorted by row (np.lexsort((cols, rows)))")
    return rows, cols


def sell_tables(rows: np.ndarray, cols: np.ndarray, shape, slots_per_step: int = SLOTS_PER_STEP,
                pad=None):
    """Host: the SELL-8 slots of unique entries sorted by row (then column), in grid steps.

    Rows are sorted by their entry count, longest first (SELL-C-sigma with
    sigma the whole matrix), and taken 8 at a time
    (``slice_rows``): a *slice* holds ``8 * depth`` slots, ``depth`` its
    longest row, and slot ``8 * d + i`` of a slice is the ``d``-th entry of
    its row ``i``. Empty rows get no slice.

    Returns ``(slot, table, s_rows, s_cols)``:

    - ``slot`` (nnz,) int64, each entry's slot;
    - ``table`` (steps, W) int32, per grid step its chunk count then, per
      chunk (the depths of a slice that fall in the step), its first slot
      within the step, its depths and the slice's 8 rows (row ``8 * ceil(m
      / 8)`` for a missing one: a row of the kernel's result that is
      dropped); ``W = _table_width(slots_per_step)``;
    - ``s_rows``/``s_cols`` (steps * slots_per_step,) int32, each slot's row
      and column; padding slots have row ``m`` and column ``8 * ceil(k /
      8)`` (at least ``k``: a zero row of the kernel's ``x``, and out of
      range for the XLA formula).

    ``pad``: a function of the step count giving the steps to keep (empty
    ones added; ``.layouts`` pads to size buckets), or None. Raises ``ValueError``
    where a row or column index is negative or out of ``shape``, or the rows
    are not sorted.
    """
    m, k = shape
    E = int(slots_per_step)
    rows, cols = sorted_entries(rows, cols, shape, "sell_tables")
    n = len(rows)
    counts = np.bincount(rows, minlength=m)
    srows = slice_rows(counts)
    n_slices = len(srows)
    flat = srows.reshape(-1)
    real = flat < m
    rank = np.empty(m, np.int64)
    rank[flat[real]] = np.flatnonzero(real)  # each non-empty row's place in the slices
    depth = counts[srows[:, 0]] if n_slices else np.zeros(0, np.int64)  # a slice's first row is its longest
    start = np.concatenate([[0], np.cumsum(depth * SUBLANES)])  # each slice's first slot in the stream
    row_start = np.concatenate([[0], np.cumsum(counts)])[:-1]
    d = np.arange(n) - row_start[rows]  # the entry's depth within its row
    slot = start[rank[rows] // SUBLANES] + d * SUBLANES + rank[rows] % SUBLANES
    steps = max(1, -(-int(start[-1]) // E))
    steps = steps if pad is None else max(steps, int(pad(steps)))
    s_rows = np.full(steps * E, m, np.int64)
    s_cols = np.full(steps * E, _tiles(k) * SUBLANES, np.int64)
    s_rows[slot] = rows
    s_cols[slot] = cols
    # chunks: each slice cut at the step boundaries
    first, last = start[:-1] // E, (start[1:] - 1) // E
    n_chunks = last - first + 1
    sl = np.repeat(np.arange(n_slices), n_chunks)
    step = np.repeat(first, n_chunks) + (np.arange(int(n_chunks.sum())) - np.repeat(np.cumsum(n_chunks) - n_chunks,
                                                                                    n_chunks))
    lo = np.maximum(start[sl], step * E)
    hi = np.minimum(start[sl + 1], (step + 1) * E)
    per_step = np.bincount(step, minlength=steps)
    table = np.zeros((steps, _table_width(E)), np.int64)
    table[:, 0] = per_step
    pos = np.arange(len(sl)) - np.repeat(np.cumsum(per_step) - per_step, per_step)  # chunk's place in its step
    at = 1 + CHUNK_FIELDS * pos
    table[step, at] = lo - step * E
    table[step, at + 1] = (hi - lo) // SUBLANES
    for i in range(SUBLANES):
        table[step, at + 2 + i] = srows[sl, i]
    return slot, table.astype(np.int32), s_rows.astype(np.int32), s_cols.astype(np.int32)


# --- the kernel -----------------------------------------------------------------------------------------

def load_resident(x_hbm, x_vmem, o_vmem, sem) -> None:
    """At a kernel's first grid step, ``x`` copied from HBM into VMEM and the result zeroed there (the
    kernels of this module and of ``.segmented`` keep both for the whole grid; ``store_resident``).

    Where ``x_hbm`` has fewer rows than ``x_vmem`` (an unpadded ``x``: XLA
    pads no copy of it), they fill ``x_vmem``'s first rows and the rest are
    zeroed after the copy (in aligned chunks of 128 rows, masked; ``x_vmem``'s
    rows a multiple of 128)."""
    rows, total = x_hbm.shape[0], x_vmem.shape[0]
    if rows < total and total % 128:
        raise ValueError(f"load_resident: a VMEM x of {total} rows padding {rows} must have a multiple of 128 rows")

    @pl.when(pl.program_id(0) == 0)
    def _():
        copy = pltpu.make_async_copy(x_hbm, x_vmem if rows == total else x_vmem.at[pl.ds(0, rows)], sem)
        copy.start()
        o_vmem[...] = jnp.zeros(o_vmem.shape, o_vmem.dtype)
        copy.wait()
        zero_rows_from(x_vmem, rows)


def zero_rows_from(ref, rows: int) -> None:
    """Zero the rows of a VMEM ``ref`` (a multiple of 128 rows, or exactly ``rows``) from ``rows`` on, in
    aligned chunks of 128 rows, masked (static: the tail's chunks)."""
    if rows >= ref.shape[0]:
        return
    for start in range(rows // 128 * 128, ref.shape[0], 128):
        chunk = ref[pl.ds(start, 128), :]
        row = jax.lax.broadcasted_iota(jnp.int32, chunk.shape, 0) + np.int32(start)
        ref[pl.ds(start, 128), :] = jnp.where(row < np.int32(rows), chunk, jnp.zeros_like(chunk))


def store_resident(o_vmem, o_hbm, sem) -> None:
    """At a kernel's last grid step, the result copied from VMEM to HBM (``load_resident``): its first
    rows where ``o_hbm`` has fewer rows than ``o_vmem`` (an unpadded result: XLA slices no copy of it)."""
    rows = o_hbm.shape[0]

    @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
    def _():
        copy = pltpu.make_async_copy(o_vmem if rows == o_vmem.shape[0] else o_vmem.at[pl.ds(0, rows)], o_hbm, sem)
        copy.start()
        copy.wait()


def _slots(table, col, val, x_vmem, o_vmem, *, unroll: int) -> None:
    """A grid step's chunks, each ``depths`` rows of 8 slots into its slice's 8 row accumulators, added to
    the resident result ``o_vmem``. ``table``, ``col``, ``val``: functions of an int32 position giving the
    step's table field, and its slot's column and value (scalars read from SMEM)."""
    zero = jnp.zeros((1, LANES), o_vmem.dtype)

    def slots(p, accs):  # the 8 slots from p: one dynamic row load of x each, scaled by the slot's value
        return tuple(accs[i] + x_vmem[pl.ds(col(p + np.int32(i)), 1), :] * val(p + np.int32(i))
                     for i in range(SUBLANES))

    def chunk(q, carry):
        base = np.int32(1) + np.int32(CHUNK_FIELDS) * q
        off, depths = table(base), table(base + np.int32(1))

        def depth_group(g, accs):
            p = off + g * np.int32(SUBLANES * unroll)
            for u in range(unroll):
                accs = slots(p + np.int32(SUBLANES * u), accs)
            return accs

        groups = jax.lax.div(depths, np.int32(unroll))  # (lax.div: no sign fix-up, depths >= 0)
        accs = jax.lax.fori_loop(np.int32(0), groups, depth_group, (zero,) * SUBLANES)
        if unroll > 1:  # the depths left over
            accs = jax.lax.fori_loop(groups * np.int32(unroll), depths,
                                     lambda d, a: slots(off + d * np.int32(SUBLANES), a), accs)
        for i in range(SUBLANES):
            o_vmem[pl.ds(table(base + np.int32(2 + i)), 1), :] += accs[i]
        return carry

    jax.lax.fori_loop(np.int32(0), table(np.int32(0)), chunk, 0)


def _kernel(table_ref, cols_ref, vals_ref, x_hbm, o_hbm, x_vmem, o_vmem, sem, *, unroll: int):
    """One grid step: its chunks (``_slots``), from its blocks of the table and slots in SMEM.

    ``x_vmem`` (rows of k + 8, 128), ``x`` then zero rows; ``o_vmem`` (rows
    of m + 8, 128), the result, written back at the last step.
    """
    load_resident(x_hbm, x_vmem, o_vmem, sem)
    _slots(lambda i: table_ref[0, 0, i], lambda i: cols_ref[0, 0, i], lambda i: vals_ref[0, 0, i], x_vmem, o_vmem,
           unroll=unroll)
    store_resident(o_vmem, o_hbm, sem)


def _redo_kernel(redo_ref, table_hbm, cols_hbm, vals_hbm, x_hbm, y_hbm, o_hbm, table_s, cols_s, vals_s, x_vmem,
                 o_vmem, step_sems, sem, *, unroll: int):
    """``sell_redo``'s kernel, one grid step: where ``redo_ref[0]`` is 0 nothing (the result aliases
    ``y_hbm``); else the whole product, each step's table and slots brought into SMEM by hand (two
    buffers: the next step's copy overlaps this one's slots), ``x`` and the result resident in VMEM
    (``x_vmem`` a multiple of 128 rows, zero past ``x``'s; ``o_vmem`` at least the result's rows plus the
    padding slots' row)."""
    del y_hbm  # (the result's buffer: what stands where nothing is redone)
    steps = table_hbm.shape[0]

    def fetch(s, b: int):  # step s's table, columns and values into SMEM buffer b
        return [pltpu.make_async_copy(src.at[s], dst.at[b], step_sems.at[3 * b + j])
                for j, (src, dst) in enumerate(((table_hbm, table_s), (cols_hbm, cols_s), (vals_hbm, vals_s)))]

    @pl.when(redo_ref[0] != 0)
    def _():
        rows = x_hbm.shape[0]
        copy = pltpu.make_async_copy(x_hbm, x_vmem.at[pl.ds(0, rows)], sem)
        copy.start()
        for c in fetch(np.int32(0), 0):
            c.start()
        o_vmem[...] = jnp.zeros(o_vmem.shape, o_vmem.dtype)
        copy.wait()
        zero_rows_from(x_vmem, rows)

        def pair(p, carry):  # steps 2p and 2p + 1, each in its own SMEM buffer (known statically)
            for b in (0, 1):
                s = p * np.int32(2) + np.int32(b)

                @pl.when(s < np.int32(steps))
                def _():
                    for c in fetch(s, b):
                        c.wait()

                    @pl.when(s + np.int32(1) < np.int32(steps))
                    def _():
                        for c in fetch(s + np.int32(1), 1 - b):
                            c.start()

                    _slots(lambda i: table_s[b, i], lambda i: cols_s[b, i], lambda i: vals_s[b, i], x_vmem, o_vmem,
                           unroll=unroll)
            return carry

        jax.lax.fori_loop(np.int32(0), np.int32(-(-steps // 2)), pair, 0)
        out = pltpu.make_async_copy(o_vmem.at[pl.ds(0, o_hbm.shape[0])], o_hbm, sem)
        out.start()
        out.wait()


def _redo_rows(shape) -> tuple[int, int]:
    """Rows of ``sell_redo``'s resident ``x`` and result for a matrix of ``shape``: beyond ``x``'s and the
    result's, the padding slots' zero row of ``x`` and spare result row (``sell_tables``), in multiples of
    128 (``zero_rows_from`` zeroes ``x``'s by aligned chunks)."""
    m, k = shape
    return (-(-(_tiles(k) + 1) * SUBLANES // 128) * 128, -(-(_tiles(m) + 1) * SUBLANES // 128) * 128)


def redo_fits(shape) -> bool:
    """Whether ``sell_redo``'s resident ``x`` and result (128 columns of float32) fit VMEM beside the
    two SMEM buffers (``resident_max_bytes``)."""
    return sum(_redo_rows(shape)) * LANES * 4 <= resident_max_bytes()


def sell_redo(y, redo, values, table, cols, x, *, shape, interpret: bool | None = None, unroll: int | None = None):
    """``y`` where ``redo`` is False, else ``A @ x`` from the SELL-8 slots: another kernel's result and its
    exact replacement, without XLA control flow.

    ``y`` (m, 128) float32, a kernel's result (aliased: where ``redo`` is
    False the kernel reads and writes nothing, and ``y``'s buffer is the
    result); ``redo`` a bool scalar (traced); ``values``/``cols``/``table``
    a matrix's slots (``sell_tables``, float32 values) of ``shape`` ``(m,
    k)``; ``x`` (k, 128) float32. The MXU kernel (``.mxu``) takes it for
    its non-finite results: a ``lax.cond`` choosing between that result
    and a COO formula cost 35 us more than the kernel alone on a TPU v5e
    (bayer10, 128 columns, in a loop: 0.102 ms against 0.067; a ``cond``
    with a trivial other branch 0.087, a ``while_loop`` the same;
    ``.device_data/probe_gap3.py``, seventeenth session), where this
    kernel, idle, is one launch. Only stored entries meet ``x`` (padding
    slots read a zero row of ``x`` and add to a dropped row), so an
    ``inf`` or NaN of ``x`` reaches only the rows a sparse product gives
    it. Raises ``ValueError`` where ``y`` or ``x`` do not have 128 columns
    and the rows of ``shape``, or they do not fit VMEM (``redo_fits``).
    """
    m, k = shape
    if y.shape != (m, LANES) or x.shape != (k, LANES):
        raise ValueError(f"sell_redo: y must be ({m}, {LANES}) and x ({k}, {LANES}) for a matrix of shape "
                         f"{tuple(shape)} (got {tuple(y.shape)} and {tuple(x.shape)})")
    if not redo_fits(shape):
        raise ValueError(f"sell_redo: x and the result of a matrix of shape {tuple(shape)} do not fit VMEM; "
                         "use sell_matmat")
    steps, width = table.shape
    E = cols.shape[0] // steps
    kr, mr = _redo_rows(shape)
    any_ = pl.BlockSpec(memory_space=pl.ANY)
    call = pl.pallas_call(
        functools.partial(_redo_kernel, unroll=DEPTH_UNROLL if unroll is None else max(1, int(unroll))),
        out_shape=jax.ShapeDtypeStruct((m, LANES), jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(1,), in_specs=[any_] * 5, out_specs=any_,
            scratch_shapes=[pltpu.SMEM((2, width), jnp.int32), pltpu.SMEM((2, E), jnp.int32),
                            pltpu.SMEM((2, E), jnp.float32), pltpu.VMEM((kr, LANES), jnp.float32),
                            pltpu.VMEM((mr, LANES), jnp.float32), pltpu.SemaphoreType.DMA((6,)),
                            pltpu.SemaphoreType.DMA(())]),
        input_output_aliases={5: 0},  # (operands counted with the scalar prefetch: y is the sixth)
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=vmem_limit_bytes()),
        interpret=_interpret() if interpret is None else interpret,
    )
    return call(jnp.asarray(redo, jnp.int32).reshape(1), table, cols.reshape(steps, E),
                values.astype(jnp.float32).reshape(steps, E), x.astype(jnp.float32), y)


def _interpret() -> bool:
    return jax.default_backend() != "tpu"


def sell_kernel(values, table, cols, x, *, shape, interpret: bool | None = None, unroll: int | None = None):
    """``A @ x`` for ``x`` of shape ``(k, n)``, 32-bit: the Pallas kernel (interpret mode off a TPU).

    ``values``/``cols`` (steps * SLOTS_PER_STEP,) the slots' values and
    columns, ``table`` (steps, W) int32 (``sell_tables``). ``x`` is taken
    128 columns per call; ``unroll`` depths per iteration of the depth loop
    (None: ``DEPTH_UNROLL``). Returns ``(m, n)``.
    """
    m, k = shape
    n = x.shape[1]
    if n > LANES:
        return jnp.concatenate([sell_kernel(values, table, cols, x[:, i:i + LANES], shape=shape, interpret=interpret,
                                            unroll=unroll) for i in range(0, n, LANES)], axis=1)
    dtype = jnp.result_type(values, x)
    kr, mr = (_tiles(k) + 1) * SUBLANES, (_tiles(m) + 1) * SUBLANES
    xs = jnp.pad(x.astype(dtype), ((0, kr - k), (0, LANES - n)))
    return _call(values, table, cols, xs, mr, dtype, interpret=interpret, unroll=unroll)[:m, :n]


def _call(values, table, cols, xs, out_rows: int, dtype, *, interpret, unroll):
    """The ``pallas_call`` of ``_kernel``: ``xs`` (rows, 128) in HBM to a result of ``(out_rows, 128)``."""
    steps, width = table.shape
    E = cols.shape[0] // steps
    kr, mr = xs.shape[0], out_rows
    smem = functools.partial(pl.BlockSpec, memory_space=pltpu.SMEM)
    call = pl.pallas_call(
        functools.partial(_kernel, unroll=DEPTH_UNROLL if unroll is None else max(1, int(unroll))),
        out_shape=jax.ShapeDtypeStruct((mr, LANES), dtype),
        grid=(steps,),
        in_specs=[
            smem((1, 1, width), lambda i: (i, 0, 0)),
            smem((1, 1, E), lambda i: (i, 0, 0)),
            smem((1, 1, E), lambda i: (i, 0, 0)),
            pl.BlockSpec(memory_space=pl.ANY),
        ],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((kr, LANES), dtype), pltpu.VMEM((mr, LANES), dtype), pltpu.SemaphoreType.DMA(())],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",),
                                             vmem_limit_bytes=vmem_limit_bytes()),
        interpret=_interpret() if interpret is None else interpret,
    )
    return call(table.reshape(steps, 1, width), cols.reshape(steps, 1, E),
                values.astype(dtype).reshape(steps, 1, E), xs)


def sell_reference(values, rows, cols, x, *, shape):
    """``A @ x`` from the slots in XLA: a COO product (a row gather of ``x`` per slot, a segment sum);
    padding slots (row ``m``) add nothing."""
    from .coo import coo_matmat

    m, k = shape
    dtype = jnp.result_type(values, x)
    return coo_matmat(values.astype(dtype), rows, cols, x.astype(dtype), m)


# --- the primitive --------------------------------------------------------------------------------------

sell_matmat_p = Primitive("bcoo_array_sell_matmat")


def sell_matmat(values, table, rows, cols, x, *, shape, use_kernel: bool = True):
    """``A @ x`` from a SELL-8 slot table: ``x`` of shape ``(k, n)`` to ``(m, n)``.

    ``use_kernel=False`` takes the XLA formula (``sell_reference``).
    Differentiable in ``values`` and ``x``, batchable over both.
    """
    return sell_matmat_p.bind(values, table, rows, cols, x, shape=tuple(shape), use_kernel=bool(use_kernel))


def _impl(values, table, rows, cols, x, *, shape, use_kernel):
    dtype = jnp.result_type(values, x)
    if x.shape[1] == 0 or shape[0] == 0:
        return jnp.zeros((shape[0], x.shape[1]), dtype)
    if use_kernel and np.dtype(dtype) == np.float32 and shape[1] > 0 and fits(shape):
        return sell_kernel(values, table, cols, x, shape=shape)
    return sell_reference(values, rows, cols, x, shape=shape)


sell_matmat_p.def_impl(_impl)


@sell_matmat_p.def_abstract_eval
def _abstract(values, table, rows, cols, x, *, shape, use_kernel):
    return jax.core.ShapedArray((shape[0], x.shape[1]), jnp.result_type(values.dtype, x.dtype))


mlir.register_lowering(sell_matmat_p, mlir.lower_fun(_impl, multiple_results=False))


def bilinear_jvp(product, values, x, dv, dx):
    """The JVP of a product linear in ``values`` and in ``x`` (``product(values, x)``, the primitive
    bound again): ``(y, dy)``, ``dy`` zero where only integer tables carried tangents (float0)."""
    y = product(values, x)
    dy = None
    if type(dv) is not ad.Zero:
        dy = product(dv, x)
    if type(dx) is not ad.Zero:
        t = product(values, dx)
        dy = t if dy is None else dy + t
    return y, jnp.zeros_like(y) if dy is None else dy


def bilinear_transpose(ct, values, x, reference, *, empty: bool, what: str):
    """The cotangents ``(dv, dx)`` of a product linear in ``values`` and in ``x`` whose XLA formula is
    ``reference(values, x)``: JAX's transpose of that formula in the undefined one (the other is None; both
    None for a zero ``ct``). ``empty``: the matrix has an empty axis (every slot is padding: zeros, with
    nothing to gather). A real matrix keeps the real part of a complex cotangent. Raises ``ValueError``
    (naming ``what``) where both are undefined."""
    if type(ct) is ad.Zero:
        return None, None
    if ad.is_undefined_primal(values) and ad.is_undefined_primal(x):
        raise ValueError(f"the {what} product is bilinear: transpose it in the values or in x, not both")
    undefined = values if ad.is_undefined_primal(values) else x
    if empty:
        zero = jnp.zeros(undefined.aval.shape, undefined.aval.dtype)
        return (zero, None) if undefined is values else (None, zero)
    if undefined is x:
        f = lambda z: reference(values, z)  # noqa: E731
        (dx,) = jax.linear_transpose(f, jax.ShapeDtypeStruct(x.aval.shape, ct.dtype))(ct)
        return None, dx.astype(x.aval.dtype)
    f = lambda v: reference(v, x)  # noqa: E731
    (dv,) = jax.linear_transpose(f, jax.ShapeDtypeStruct(values.aval.shape, ct.dtype))(ct)
    if not jnp.issubdtype(values.aval.dtype, jnp.complexfloating) and jnp.iscomplexobj(dv):
        dv = jnp.real(dv)
    return dv.astype(values.aval.dtype), None


def _jvp(primals, tangents, *, shape, use_kernel):
    values, table, rows, cols, x = primals
    bind = functools.partial(sell_matmat_p.bind, shape=shape, use_kernel=use_kernel)
    return bilinear_jvp(lambda v, z: bind(v, table, rows, cols, z), values, x, tangents[0], tangents[-1])


ad.primitive_jvps[sell_matmat_p] = _jvp


def _transpose(ct, values, table, rows, cols, x, *, shape, use_kernel):
    reference = lambda v, z: sell_reference(v, rows, cols, z, shape=shape)  # noqa: E731
    dv, dx = bilinear_transpose(ct, values, x, reference, empty=0 in shape, what="SELL")
    return dv, None, None, None, dx


ad.primitive_transposes[sell_matmat_p] = _transpose


def _batch(args, dims, *, shape, use_kernel):
    values, table, rows, cols, x = args
    dv, dt, dr, dc, dx = dims
    params = dict(shape=shape, use_kernel=use_kernel)
    if dt is not None or dr is not None or dc is not None:
        raise ValueError("vmap over a prepared operator's index arrays is not supported; map its values or x")
    if dv is not None:  # mapped values: one product per value set
        values = jnp.moveaxis(values, dv, 0)
        if dx is not None:
            x = jnp.moveaxis(x, dx, 0)
            out = jax.lax.map(lambda a: sell_matmat(a[0], table, rows, cols, a[1], **params), (values, x))
        else:
            out = jax.lax.map(lambda v: sell_matmat(v, table, rows, cols, x, **params), values)
        return out, 0
    x = jnp.moveaxis(x, dx, 1)  # (k, B, n): every mapped column is one more right-hand side
    k, B, n = x.shape
    y = sell_matmat(values, table, rows, cols, x.reshape(k, B * n), **params)
    return y.reshape(shape[0], B, n), 1


batching.primitive_batchers[sell_matmat_p] = _batch
