"""The pure-XLA product of a 2-D COO matrix and a dense operand.

One gather of the dense rows and one segment sum over the output rows: no
plan, so it runs on traced indices, and every step has JAX's transposition
and batching rules (it is also the tangent of the native kernel, see
``.native``). ``.matmul`` chooses when it runs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def coo_matmat(data, rows, cols, x, m: int, rows_sorted: bool = False):
    """``A @ x`` for a 2-D COO matrix ``A`` given by ``(data, rows, cols)`` with ``m`` rows.

    Padding entries (row index ``m`` or column index ``x.shape[0]``) add
    nothing, whatever garbage (even NaN) they hold, in the product and in its
    transpose (``jax.grad`` with respect to ``x``), since they are masked
    before the segment sum. A padding column gathers a clipped row of ``x``:
    its entry must be dropped by its row too (row ``m``), or ``x`` must end
    in a row of zeros that the padding column reads (``.segmented``'s
    padding slots keep real, sorted rows), else an inf there makes ``0 *
    inf`` in that row.
    """
    if m == 0:  # nothing to sum into (and JAX cannot transpose a segment sum into no segments)
        return jnp.zeros((0,) + x.shape[1:], jnp.result_type(data, x))
    xv = jnp.take(x, cols, axis=0, mode="clip") if x.shape[0] else jnp.zeros((cols.shape[0],) + x.shape[1:], x.dtype)
    # Mask the values, not the products: the transpose of ``where(ok, d * xv, 0)`` would still
    # multiply the cotangent by the garbage ``d`` of a padding entry (0 * NaN).
    ok = (cols < x.shape[0]) & (rows < m)
    safe = jnp.where(ok, data, jnp.zeros((), data.dtype))
    prod = safe.reshape(safe.shape + (1,) * (x.ndim - 1)) * xv
    return jax.ops.segment_sum(prod, rows, num_segments=m, indices_are_sorted=rows_sorted)
