"""What the operations of the accelerator layouts cost on each backend, and the VMEM the TPU kernels may
take: the table ``.layouts`` chooses a layout with and ``.sell`` chooses a kernel with, and the chip's VMEM
that ``.panels``, ``.sell`` and ``.segmented`` size their resident arrays by (a module of its own, below
all four)."""

from __future__ import annotations

import functools

import jax
from jax.experimental.pallas import tpu as pltpu

#: VMEM of one TensorCore of a TPU v5e (and v6e), the chip the kernels' limits were tuned on; taken off a
#: TPU, where the Pallas kernels run in interpret mode.
TUNED_VMEM_BYTES = 128 << 20

#: VMEM assumed for a TPU that ``pltpu.get_tpu_info`` does not know: the least of any TPU (v2-v4).
SMALLEST_VMEM_BYTES = 16 << 20


@functools.cache
def vmem_capacity_bytes() -> int:
    """VMEM of one TensorCore of the default device (bytes).

    On a TPU, ``jax.experimental.pallas.tpu.get_tpu_info().vmem_capacity_bytes``
    (64 MiB on a TPU 7x, 16 MiB on a v4, 128 MiB on a v5e); ``SMALLEST_VMEM_BYTES``
    for a chip it does not know; ``TUNED_VMEM_BYTES`` off a TPU, where the
    kernels run in Pallas interpret mode and VMEM limits are not checked.
    """
    if jax.default_backend() != "tpu":
        return TUNED_VMEM_BYTES
    try:
        return int(pltpu.get_tpu_info().vmem_capacity_bytes)
    except (ValueError, NotImplementedError):
        # get_tpu_info raises for a device kind this JAX does not list (a chip newer than it): assume the
        # least VMEM of any TPU, so the kernels' limits stay within the chip (a smaller resident x at worst)
        return SMALLEST_VMEM_BYTES


def vmem_share(tuned_bytes: int) -> int:
    """``tuned_bytes`` of a ``TUNED_VMEM_BYTES`` chip's VMEM, scaled to the default device's
    (``vmem_capacity_bytes``): a kernel's VMEM limit keeps its share of the chip."""
    return int(tuned_bytes) * vmem_capacity_bytes() // TUNED_VMEM_BYTES

#: What one operation costs on each backend, in bytes-equivalent: the bytes the
#: chip streams in the time it takes. TPU v5e, measured (``benchmarks/accelerator.py``'s
#: calibration, 368 GB/s streamed): XLA's element gather 0.11 G/s (3,350), a lane
#: gather (``.accel.gather``) 0.29 G/s (the ``ell`` product it serves, ``ell_slot`` below, costs
#: more per slot), a gather of 128-lane rows 0.15 G
#: rows/s (2,400 with the row's bytes), a segment sum 0.11-0.13 G/s (3,000). Fitted
#: to products timed in a solver's loop (``--layouts panels,blocks``, 2026-12-06):
#: the ``blocks`` layout's compare-select-adds at 1.0 per element (its products ran
#: 1.6-4x slower than 0.3 priced them), a tile of the ``panels`` kernel at about
#: 30 ns (3,000 beyond its 8 KiB of values and columns) plus 9 us per call (3.3e6: the
#: broadcast of ``x``, the launch, the sum of the partial sums), a permutation of ``x`` or
#: ``y`` (a lane gather) at about 2 ns per element (800), and one diagonal of the
#: ``dia`` layout at a fixed 0.4 us beyond its bytes (140,000: 177 diagonals of
#: bcsstk16 took 75 us where their bytes stream in 9). Several columns of ``x``
#: (``--spmm 16,128``, in a loop, 2026-12-06): a mixed panels tile costs 6.5-10 ns more
#: per column (3,700: delaunay_n16's 3,584 mixed tiles took 4.78 ms for 128 columns),
#: a uniform one 5.3 ns (1,850: bcsstk16's 640 took 0.43 ms), a
#: COO product's row gather and sorted segment sum 11.4 ns per entry up to 128
#: columns (4,000: nh2010's 234,550 entries took 2.67 ms). The SELL-8 kernel
#: (``.sell``, 128 columns, 2026-12-06): 2.3 ns per slot (800) and 75 ns per slice
#: of 8 rows (26,000), fitted to nh2010 (1.03 ms), cage11 (1.63), delaunay_n16
#: (1.58), bayer10 (0.34) and bcsstk16 (0.69). One vector in the ``sell`` layout
#: (``.segmented``'s kernel, in a loop, 2026-12-06, seventh session, ``.device_data/probe_new.py``):
#: 1.27 ns per slot (450 beyond its 20 bytes of tables and value), fitted to a random
#: 10^6 x 10^6 matrix with 10^7 entries (10.54 million slots, 13.4 ms; 1.30 ns per slot on a
#: random 2 * 10^5 x 2 * 10^5 with 2 * 10^6 entries), plus 14 us per call (5e6, the
#: benchmark's loop). With a segmented scan per block (before the seventh session): 1.72 ns
#: (615; cage11 1.04 ms). (The packed SELL-8 kernel before it: 2.8 ns per slot and 98-141 ns
#: per slice.) Its wide tables (``width`` columns a call, width 8, the same run): 3.67 ns per
#: slot on the 2 * 10^5 matrix, priced as the one-vector kernel's 450 per slot
#: (``segmented_wide_slot``) plus 307 ns per block of 128 slots (114,000: the block's scan,
#: row totals and table expansion), within 8% of the 10^6 matrix's 16 columns (two calls, 81-84
#: ms; 5.67-5.81 ns per slot on the 2 * 10^5 matrix with a scan per block, sixth and seventh sessions);
#: the COO formula on its blocks' slots with an ``x`` beyond VMEM, rows sorted and ``x``
#: gathered as 128-lane rows: 19 ns per slot (7,000; 201 ms for 10.54 million slots and 128
#: columns, against nh2010's 11.4 ns with an ``x`` of 25 MiB). The
#: ``ell`` layout's product, per padded slot: 4.1 ns (1,500 beyond its 8 bytes; the random
#: matrix's 11.4 million slots took 46.8 ms in a loop, more than its lane gathers alone;
#: measured with float32 values, applied to every dtype). The dense blocks of ``.mxu``
#: (128 columns, in a loop, eighth session, ``.device_data/probe_mxu.py``): about 15 ns per
#: block of 8 x 128 (5,600 with its 4 KiB of values) beyond the resident ``x`` and result
#: copied in and out, fitted to nh2010 after RCM (0.59 ms for 28,672 blocks), cage11 (0.84),
#: delaunay_n16 after RCM (0.80) and bayer10 (0.17); the kernel reads the blocks in place from
#: the operator's value buffer (a slice would be copied by XLA: 13.7 ns more per block, cage11
#: 1.51 against 0.85 ms, ninth session). With a grid step's groups unrolled (twelfth session,
#: ``benchmarks/accelerator.py``, 128 columns in a loop): 3,300 per block and 13 us per call (``mxu_call``,
#: 5e6) beyond the resident copies, fitted to bcsstk16 (0.049 ms for 2,560 blocks; priced 0.050), bayer10
#: (0.106 for 7,168; 0.114), cage11 (0.590 for 57,344; 0.628) and delaunay_n16 (0.707 for 49,152;
#: 0.628). With 16 columns this prices bcsstk16 on the blocks (0.050 against 0.051 on the panels kernel,
#: measured 0.067-0.071 there) and bayer10 on the panels kernel (0.112 against 0.114; measured 0.087-0.090).
#: Blocks of a matrix's RCM order (thirteenth session, nh2010, ``.device_data/probe_perm.py``): the row
#: permutations of ``x`` and of the result as XLA gathers around the kernel took 0.37 ms of 0.73 with 128
#: columns (the kernel alone 0.36), and as long with 16 (a TPU's HBM pads a row to 128 lanes); moved into
#: the kernel (``.device_data/probe_kperm.py``), 0.32 of 0.68 (0.44 through the operator's product, 0.80 in
#: that probe's loop): 1,400 per row of each (``mxu_permute_row``), whatever the columns up to 128. This prices nh2010's 16 columns on the panels
#: kernel (measured 0.608 ms there, 0.753-0.773 on the reordered blocks) and its 128 on the blocks (0.726-0.768
#: against 1.048 on the SELL-8 slots). Fourteenth session (``.device_data/probe_p16.py``): with the rows
#: moved while ``x`` comes in and the result goes out by chunks, the permutations take 0.239 ms of 0.602
#: (2.45 ns a row, about 900), but the price stays 1,400: with 16 columns the blocks cost more than this
#: model says (the kernel alone 0.423 ms against 0.363 with 128, ``x`` padded to 128 lanes; 0.640 with
#: the permutations against 0.535 on the panels kernel), and a per-row padding term fitted to that
#: would also move bayer10's and bcsstk16's 16 columns off the blocks, where they run fastest
#: (0.077-0.081 against 0.087-0.090 ms, 0.046-0.052 against 0.067-0.071).
#: A jitted call's dispatch on the TPU machine (``dispatch``): at least 0.6 ms whatever the program (a
#: jitted ``v * 2`` of 1,000 elements), 2.2e8 at 368 GB/s; eager products are priced against it
#: (``.layouts.EAGER_SHARE``).
#: CPUs and GPUs gather at
#: a few times their streaming cost per element.
COSTS: dict[str, dict[str, float]] = {
    "tpu": {"gather": 3350.0, "row_gather": 2400.0, "scatter": 3000.0, "vector_op": 1.0,
            "panel_tile": 3000.0, "panel_mixed_tile": 4500.0, "panel_call": 3.3e6, "permute": 800.0,
            "dia_pass": 140000.0, "panel_rhs_tile": 3700.0, "coo_row_entry": 4000.0,
            "panel_rhs_uniform_tile": 1850.0, "sell_slot": 800.0, "sell_chunk": 26000.0,
            "segmented_slot": 450.0, "segmented_call": 5e6,
            "segmented_wide_slot": 450.0, "segmented_wide_block": 114000.0, "coo_row_entry_large": 7000.0,
            "ell_slot": 1500.0, "mxu_block": 3300.0, "mxu_call": 5e6, "mxu_permute_row": 1400.0,
            "dispatch": 2.2e8},
    "gpu": {"gather": 32.0, "row_gather": 64.0, "scatter": 64.0, "vector_op": 0.05,
            "permute": 32.0, "dia_pass": 0.0},
    "cpu": {"gather": 16.0, "row_gather": 32.0, "scatter": 32.0, "vector_op": 0.1,
            "permute": 16.0, "dia_pass": 0.0},
}
