"""Helpers shared by the converters: the canonical COO triplets of a BCOOArray."""

from __future__ import annotations

import numpy as np

from .._array_object import BCOOArray
from .._kernels.dimensions import coo_triplets as _coo_triplets


def coo_triplets(x: BCOOArray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(data, coords)`` of ``x`` on the host: every sparse dimension, padding dropped.

    ``coords`` has shape ``(ndim, nnz)`` (pydata-sparse's layout), ``data``
    shape ``(nnz,)``. Duplicates are summed (logical or for bool) and the
    coordinates sorted lexicographically (row-major), so the result is
    canonical. ``data`` may be a view of ``x``'s own buffer (a canonical
    array without padding): read it, and copy it before handing it out in a
    mutable container (``x``'s copies share that buffer).

    Raises
    ------
    ValueError
        If ``x``'s buffers are traced (``what`` names the caller in the message).
    """
    if not x._concrete():
        raise ValueError(f"{what} needs concrete buffers; call it outside jax.jit / vmap")
    return _coo_triplets(*x._buffers(), x.shape, x.n_batch, x.n_dense, x.indices_sorted and x.unique_indices)
