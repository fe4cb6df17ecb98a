"""Block partitions of one dimension of a BCOOArray (host-side, NumPy).

One dimension ``axis`` of size ``n`` is cut into ``p`` blocks of
``b = ceil(n / p)`` positions; block ``j`` holds positions
``[j * b, min((j + 1) * b, n))`` (the last blocks may be short or empty: their
missing positions are *virtual*, hold nothing and are ignored on gathering).
Each block is itself a BCOO array of the block shape (``shape`` with
``shape[axis]`` replaced by ``b``) with *local* indices; the blocks' buffers
are stacked along a new leading axis of length ``p``, which is the axis laid
over the mesh.

* ``axis`` a batch dimension (batch partition): the block is the slice of the
  batch; its entries keep their indices, nse is unchanged.
* ``axis`` a sparse dimension (row-block partition, needs ``n_batch == 0``):
  the block holds the entries whose index along ``axis`` falls in it, with
  that index made local (minus ``j * b``); every block is padded to the
  largest block's entry count (padding = index equal to the block size).

The scheme is the row-block distribution of distributed sparse matrix
libraries (e.g. PETSc's MPIAIJ, Trilinos' Epetra row maps), with equal-size
blocks so that every device runs the same program.
"""

from __future__ import annotations

import numpy as np

from .._shapes import prod


def block_size(n: int, p: int) -> int:
    """Positions per block when ``n`` positions are cut into ``p`` equal blocks."""
    return -(-n // p) if n else 0


def split_batch(data: np.ndarray, indices: np.ndarray, axis: int, p: int, pad_index: np.ndarray):
    """Split batch dimension ``axis`` of host buffers into ``p`` stacked blocks.

    Parameters
    ----------
    data : ndarray, shape ``(*batch, nse, *dense)``
    indices : ndarray, shape ``(*batch, nse, n_sparse)``
    axis : int
        A batch dimension (``axis < n_batch``).
    p : int
        Number of blocks.
    pad_index : ndarray, shape ``(n_sparse,)``
        The padding index (the sparse dimensions' sizes) for the virtual
        batch elements.

    Returns
    -------
    data, indices : ndarrays with a new leading axis of length ``p``, and
    ``axis`` (now ``axis + 1``) of length ``block_size(n, p)``.
    """
    n = data.shape[axis]
    b = block_size(n, p)
    extra = p * b - n
    if extra:
        dshape = list(data.shape)
        dshape[axis] = extra
        ishape = list(indices.shape)
        ishape[axis] = extra
        data = np.concatenate([data, np.zeros(dshape, data.dtype)], axis=axis)
        indices = np.concatenate([indices, np.broadcast_to(pad_index.astype(indices.dtype), ishape)], axis=axis)
    data = np.moveaxis(data.reshape(data.shape[:axis] + (p, b) + data.shape[axis + 1:]), axis, 0)
    indices = np.moveaxis(indices.reshape(indices.shape[:axis] + (p, b) + indices.shape[axis + 1:]), axis, 0)
    return np.ascontiguousarray(data), np.ascontiguousarray(indices)


def split_sparse(data: np.ndarray, indices: np.ndarray, shape: tuple, axis: int, p: int):
    """Row-block split of a canonical ``n_batch = 0`` array along sparse dimension ``axis``.

    Parameters
    ----------
    data : ndarray, shape ``(nse, *dense)``
    indices : ndarray, shape ``(nse, n_sparse)``
        Sorted, duplicate-free; padding (any index equal to its size) is dropped.
    shape : tuple
        The array's shape.
    axis : int
        The sparse dimension to partition.
    p : int
        Number of blocks.

    Returns
    -------
    data : ndarray ``(p, nse_b, *dense)``
    indices : ndarray ``(p, nse_b, n_sparse)``
        Local indices; ``nse_b`` is the largest block's entry count, shorter
        blocks padded with the local sizes. The stable split keeps every
        block sorted.
    """
    n_sparse = indices.shape[1]
    sizes = np.asarray(shape[:n_sparse], np.int64)
    valid = np.all(indices < sizes, axis=1) if n_sparse else np.ones(indices.shape[0], bool)
    data, indices = data[valid], indices[valid]
    b = block_size(shape[axis], p)
    blk = indices[:, axis].astype(np.int64) // max(b, 1)
    counts = np.bincount(blk, minlength=p) if blk.size else np.zeros(p, np.int64)
    nse_b = int(counts.max()) if counts.size else 0
    order = np.argsort(blk, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    blk_sorted = blk[order]
    pos = np.arange(order.size) - starts[blk_sorted]
    local_sizes = sizes.copy()
    local_sizes[axis] = b
    out_d = np.zeros((p, nse_b) + data.shape[1:], data.dtype)
    out_i = np.empty((p, nse_b, n_sparse), indices.dtype)
    out_i[...] = local_sizes.astype(indices.dtype)
    local = indices[order].copy()
    local[:, axis] -= (blk_sorted * b).astype(indices.dtype)
    out_d[blk_sorted, pos] = data[order]
    out_i[blk_sorted, pos] = local
    return out_d, out_i


def join_batch(data: np.ndarray, indices: np.ndarray, axis: int, n: int):
    """Inverse of ``split_batch``: merge the stacked blocks, drop virtual elements."""
    def merge(x):
        x = np.moveaxis(x, 0, axis)
        x = x.reshape(x.shape[:axis] + (x.shape[axis] * x.shape[axis + 1],) + x.shape[axis + 2:])
        return np.take(x, np.arange(n), axis=axis)

    return merge(data), merge(indices)


def join_sparse(data: np.ndarray, indices: np.ndarray, shape: tuple, axis: int):
    """Inverse of ``split_sparse`` for stacked ``n_batch = 0`` blocks.

    Entries of virtual positions (global index >= ``shape[axis]``) and padding
    are dropped. Returns ``(data (nse, *dense), indices (nse, n_sparse))``.
    """
    p, nse_b, n_sparse = indices.shape
    b = block_size(shape[axis], p)
    local_sizes = np.asarray(shape[:n_sparse], np.int64)
    local_sizes[axis] = b
    valid = np.all(indices < local_sizes, axis=2) if n_sparse else np.ones((p, nse_b), bool)
    glob = indices.astype(np.int64)
    glob[:, :, axis] += (np.arange(p, dtype=np.int64) * b)[:, None]
    valid &= glob[:, :, axis] < shape[axis]
    return data[valid], glob[valid].astype(indices.dtype)


def join_dense(data: np.ndarray, axis_in_data: int, n: int) -> np.ndarray:
    """Merge stacked blocks along a dense dimension at position ``axis_in_data`` of a block's data."""
    x = np.moveaxis(data, 0, axis_in_data)
    x = x.reshape(x.shape[:axis_in_data] + (x.shape[axis_in_data] * x.shape[axis_in_data + 1],)
                  + x.shape[axis_in_data + 2:])
    return np.take(x, np.arange(n), axis=axis_in_data)


def stored_bytes(p: int, *arrays) -> int:
    """Bytes of the given stacked buffers held by one of ``p`` blocks."""
    return sum(prod(a.shape) * np.dtype(a.dtype).itemsize for a in arrays) // p
