"""Helpers shared by the converters: the canonical COO triplets of a BCOOArray."""

from __future__ import annotations

import numpy as np

from .._array_object import BCOOArray
from .._layout import is_concrete


def coo_triplets(x: BCOOArray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(data, coords)`` of ``x`` on the host: every sparse dimension, padding dropped.

    ``coords`` has shape ``(ndim, nnz)`` (pydata-sparse's layout), ``data``
    shape ``(nnz,)``. Duplicates are summed (logical or for bool) and the
    coordinates sorted lexicographically (row-major), so the result is
    canonical.

    Raises
    ------
    ValueError
        If ``x``'s buffers are traced (``what`` names the caller in the message).
    """
    from .._fill_rule import update_layout

    if not is_concrete(x.data, x.indices):
        raise ValueError(f"{what} needs concrete buffers; call it outside jax.jit / vmap")
    c = update_layout(x, 0, 0)._canonical()
    idx = np.asarray(c.indices)
    data = np.asarray(c.data)
    if idx.shape[0]:
        valid = np.all(idx < np.asarray(c.shape, dtype=np.int64), axis=1)
        if not valid.all():
            idx, data = idx[valid], data[valid]
    return data, idx.T
