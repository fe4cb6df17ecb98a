"""Row-split ELL plans for SpMV of 2-D matrices with concrete indices.

XLA on CPU runs the COO/CSR SpMV of ``.csr`` as two loops over all
``nse`` entries: a gather of ``data * x[cols]`` into an ``nse``-long
temporary and a sorted scatter-add. An ELL (row-batched) layout turns most of
that into gathers and a dense row reduction, which XLA fuses into one loop
with no temporary. Plain ELL pads every row to the longest one; this module
uses the *row-split* variant (ELL with long rows split into chunks, as in
the "sliced"/"split-row" ELL formats: Monakov, Lokhmotov & Avetisyan,
HiPEAC 2010; Kreutzer et al., SIAM J. Sci. Comput. 36(5), 2014), which
keeps padding small whatever the row lengths:

* every row of the row-sorted (CSR-ordered) valid entries is cut into
  *chunks* of ``width`` consecutive entries (the last one shorter); chunk
  ``c`` starts at entry ``start[c]``, holds ``length[c]`` entries and belongs
  to row ``row[c]`` (non-decreasing);
* slot ``(c, j)`` is entry ``start[c] + j`` (computed in the kernel, never
  stored); slots ``j >= length[c]`` are padding, masked to 0 with ``where``
  so an ``inf``/``nan`` in ``x`` or ``data`` never leaks in;
* ``y = segment_sum(chunk_sums, row)``: a sorted scatter of ``n_chunks``
  (about ``nse / width``) elements instead of ``nse``.

``width`` is chosen per matrix among ``WIDTHS`` to minimise padded slots
plus chunks. The plan holds only index *structure* (computed once with NumPy
and cached on the identity of the ``indices`` buffer, see ``.cache``);
values flow through JAX, so ``grad`` with respect to ``data`` or ``x`` and
``vmap`` over ``x`` keep working (gathers, ``where`` and ``segment_sum`` are
differentiable and batchable). Memory: three index arrays of ``n_chunks``
elements (about 3 bytes per entry at width 4, less at larger widths); the
column array is the row plan's, shared.

The kernel is compiled with XLA:CPU's YNNPACK reduction fusion turned off for
this one function (``compiler_options`` of ``jax.jit``; nothing global):
with it on, XLA hands the row reduction to a YNNPACK custom fusion that cannot
take the gathers in, so they are materialised first (measured 1.4-2.4x
slower). Under an enclosing transformation the kernel is inlined into the
caller's computation (``compiler_options`` apply to top-level calls only);
a JAX whose XLA does not know the option compiles it without.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .cache import PLANS
from .csr import row_plan

#: Candidate chunk widths (entries per chunk).
WIDTHS = (4, 8, 16, 32, 64)
#: Largest padded slots / valid entries for which the plan is used.
MAX_PADDING_RATIO = 1.5
#: Fewest valid entries for which the ELL plan is used: below this the
#: segment-sum kernel of ``.csr`` was as fast or faster (measured on CPU:
#: slower at 1e5 entries, faster at 2.9e5 and more).
MIN_NSE = 150_000


class EllPlan(NamedTuple):
    """Row-split ELL structure of a 2-D COO matrix (see the module docstring)."""

    perm: jax.Array | None  # (n_valid,) entries in row order; None when the first n_valid already are
    cols: jax.Array  # (n_valid,) columns of the row-sorted valid entries
    start: jax.Array  # (n_chunks,) first entry of each chunk (row-sorted position)
    length: jax.Array  # (n_chunks,) entries in each chunk, 1..width
    row: jax.Array  # (n_chunks,) row of each chunk, non-decreasing
    width: int
    n_valid: int
    padded: int  # n_chunks * width


def chunk_width(lengths: np.ndarray, widths: tuple = WIDTHS) -> tuple[int, int]:
    """``(width, n_chunks)`` minimising ``n_chunks * width + n_chunks`` for rows of these lengths.

    ``lengths`` are the rows' numbers of entries (zeros allowed: an empty row
    has no chunk). Ties go to the narrower width.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    best = None
    for w in widths:
        n_chunks = int((-(-lengths // w)).sum())
        cost = n_chunks * (w + 1)
        if best is None or cost < best[0]:
            best = (cost, w, n_chunks)
    return best[1], best[2]


def _ell_plan_numpy(indices, shape: tuple[int, int]) -> EllPlan | None:
    rp = row_plan(indices, shape)
    nv = rp.n_valid
    if nv < max(MIN_NSE, 1):
        return None
    indptr = np.asarray(rp.indptr).astype(np.int64)
    lengths = np.diff(indptr)
    width, n_chunks = chunk_width(lengths)
    if n_chunks * width > MAX_PADDING_RATIO * nv:
        return None
    per_row = -(-lengths // width)
    row = np.repeat(np.arange(lengths.size, dtype=np.int64), per_row)
    first = np.repeat(np.cumsum(per_row) - per_row, per_row)
    start = indptr[row] + (np.arange(row.size) - first) * width
    length = np.minimum(indptr[row + 1] - start, width)
    idt = np.int32 if max(nv, lengths.size + 1) < 2**31 - 1 else np.int64
    return EllPlan(rp.perm, rp.cols, jnp.asarray(start.astype(idt)), jnp.asarray(length.astype(idt)),
                   jnp.asarray(row.astype(idt)), int(width), nv, int(n_chunks * width))


def ell_plan(indices, shape: tuple[int, int]) -> EllPlan | None:
    """The (cached) ``EllPlan`` of concrete 2-D ``indices``, or None where it does not pay.

    None when there are fewer than ``MIN_NSE`` valid entries, or when the
    padding would exceed ``MAX_PADDING_RATIO`` times the valid entries.
    """
    m, n = shape
    return PLANS.get((indices,), ("ell", m, n), lambda: _ell_plan_numpy(indices, (m, n)))


_IN_BOUNDS = jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS
_GATHER_1D = jax.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))


def _take(arr, idx):
    """``arr[idx]`` for a 1-D ``arr`` and in-bounds ``idx`` of any shape (no clamping, no wrapping)."""
    return jax.lax.gather(arr, idx[..., None], _GATHER_1D, slice_sizes=(1,), mode=_IN_BOUNDS)


def _ell_matvec_impl(data, perm, cols, start, length, row, x, width, m, n_valid):
    d = data if perm is None else _take(data, perm)
    j = jax.lax.broadcasted_iota(start.dtype, (start.shape[0], width), 1)
    pos = jnp.minimum(start[:, None] + j, n_valid - 1)
    prod = _take(d, pos) * _take(x, _take(cols, pos))
    sums = jnp.where(j < length[:, None], prod, jnp.zeros((), prod.dtype)).sum(axis=1, dtype=prod.dtype)
    return jax.ops.segment_sum(sums, row, num_segments=m, indices_are_sorted=True, mode=_IN_BOUNDS)[None]


_STATIC = ("width", "m", "n_valid")
_NO_YNN_FUSION = {"xla_cpu_experimental_ynn_fusion_type": ""}
_ell_matvec_tuned = jax.jit(_ell_matvec_impl, static_argnames=_STATIC, compiler_options=_NO_YNN_FUSION)
_ell_matvec_plain = jax.jit(_ell_matvec_impl, static_argnames=_STATIC)
_TUNED_OK = [True]


def matvec(data, plan: EllPlan, x, m: int):
    """``(A @ x)[None]`` for the ``m``-row matrix of ``plan`` with values ``data`` (may be traced).

    Parameters
    ----------
    data : (nse,) array
        The values of the matrix whose concrete indices gave ``plan``.
    plan : EllPlan
        From ``ell_plan``.
    x : (k,) array of ``data``'s dtype (may be traced)
    m : int
        Number of rows.

    Returns
    -------
    array of shape ``(1, m)``
        Duplicates add up; padding entries are ignored.
    """
    args = (data, plan.perm, plan.cols, plan.start, plan.length, plan.row, x)
    static = dict(width=plan.width, m=m, n_valid=plan.n_valid)
    if (_TUNED_OK[0] and jax.default_backend() == "cpu"
            and not isinstance(data, jax.core.Tracer) and not isinstance(x, jax.core.Tracer)):
        try:
            return _ell_matvec_tuned(*args, **static)
        except ValueError as err:  # concrete operands, but called while tracing
            if "compiler_options" not in str(err):
                raise
        except jax.errors.JaxRuntimeError as err:  # an XLA without that option
            if "option" not in str(err):
                raise
            _TUNED_OK[0] = False
    return _ell_matvec_plain(*args, **static)
