"""File I/O with scipy's formats: ``.npz`` (scipy.sparse's ``save_npz`` /
``load_npz`` layout) and Matrix Market (``.mtx``, ``.mtx.gz``).

Both go through scipy's own readers and writers
(``scipy.sparse.save_npz``, ``scipy.sparse.load_npz``,
``scipy.io.mmread``, ``scipy.io.mmwrite``), so a file written by
scipy loads here and one written here loads in scipy, byte-compatible.
Values, dtype, shape and stored entries (explicit zeros included) survive
the round trip.
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._convert.scipy import from_scipy
from ._creation_functions import asarray
from ._routing import routed

__all__ = ["save_npz", "load_npz", "mmread", "mmwrite"]

_NPZ_FORMATS = ("coo", "csr", "csc", "bsr", "dia")


def _as_bcoo(a, name) -> BCOOArray:
    if not isinstance(a, BCOOArray):
        raise TypeError(f"{name} must be a BCOOArray, got {type(a).__name__}; convert it with bcoo_array.asarray")
    return a


def _nd_coo(m: BCOOArray):
    """``m`` (3-D or more) as scipy's n-D ``coo_array``: its stored entries as they are (explicit zeros and
    duplicates kept, padding dropped), every dimension sparse."""
    import scipy.sparse as sp

    from ._fill import reads_as_zero
    from ._relayout import update_layout

    if m.dtype == np.float16:
        raise ValueError("scipy.sparse does not support float16; convert with a.astype(bcoo_array.float32) "
                         "first (exact: every float16 value is a float32 value)")
    if not reads_as_zero(m.fill_value):
        raise ValueError(f"this array's fill value is {m.fill_value!r}, but scipy.sparse arrays have no fill "
                         "value (unstored entries are 0); subtract the fill value first, or store every entry "
                         "with bcoo_array.asarray(a.todense())")
    c = update_layout(m, 0, 0)  # batch and dense dimensions become sparse: scipy's COO has only sparse ones
    if not c._concrete():
        raise ValueError("save_npz() needs concrete buffers; call it outside jax.jit / vmap")
    cdata, cindices = c._buffers()
    idx, data = np.asarray(cindices), np.asarray(cdata)
    valid = np.ones(idx.shape[0], bool)
    for k in range(idx.shape[1]):
        valid &= idx[:, k] < c.shape[k]
    if not valid.all():  # padding (an out-of-range index) is not an entry
        idx, data = np.compress(valid, idx, axis=0), data[valid]
    return sp.coo_array((data, tuple(idx[:, k] for k in range(m.ndim))), shape=m.shape)


@routed
def save_npz(file, matrix: BCOOArray, compressed: bool = True, *, format: str = "coo") -> None:
    """Save a BCOOArray of 1 or more dimensions in scipy.sparse's ``.npz`` format.

    ``scipy.sparse.load_npz`` reads the file back: 1-D and 2-D arrays in
    any of ``format``, 3-D and more as scipy's n-D ``coo_array`` (the
    ``coords`` layout scipy >= 1.15 writes). Every stored entry is written
    (explicit zeros and duplicates included, padding left out), in the
    array's dtype; an array with batch or dense dimensions is written with
    every dimension sparse (a dense dimension's block is stored whole, its
    zeros included).

    Parameters
    ----------
    file : str, path or file-like
        Where to write (``.npz`` is appended to a name without it, as NumPy does).
    matrix : BCOOArray
        Any shape with ``ndim >= 1`` and any layout; fill value 0 (scipy has
        no fill value); concrete (not traced under ``jax.jit``).
    compressed : bool
        Use ``numpy.savez_compressed`` (default) or ``numpy.savez``.
    format : {"coo", "csr", "csc", "bsr", "dia"}
        The scipy format recorded in the file (``"coo"`` keeps the entries
        as stored). 1-D arrays: ``"coo"`` or ``"csr"``; 3-D and more:
        ``"coo"`` only (scipy's other formats are 1-D / 2-D).

    Raises
    ------
    TypeError
        If ``matrix`` is not a BCOOArray.
    ValueError
        For a non-zero fill value, a 0-D array (scipy.sparse has none:
        reshape it to ``(1,)``), float16 data, an unknown ``format`` or one
        scipy has not for this ndim, or traced buffers.
    """
    import scipy.sparse as sp

    m = _as_bcoo(matrix, "matrix")
    if format not in _NPZ_FORMATS:
        raise ValueError(f"format={format!r}: save_npz writes one of {_NPZ_FORMATS}")
    if m.ndim == 0:
        raise ValueError("scipy.sparse has no 0-D arrays (a coo_array needs at least one dimension), so a 0-D "
                         "array has no .npz file; save bcoo_array.reshape(a, (1,)) instead")
    if m.ndim > 2:
        if format != "coo":
            raise ValueError(f"format={format!r}: scipy.sparse stores {m.ndim}-D arrays only as coo; pass "
                             "format='coo'")
        sp.save_npz(file, _nd_coo(m), compressed=compressed)
        return
    sp.save_npz(file, m.to_scipy(format), compressed=compressed)


@routed
def load_npz(file, *, drop_zeros: bool = False) -> BCOOArray:
    """Load a sparse array or matrix saved by ``scipy.sparse.save_npz`` (or [`save_npz`][bcoo_array.save_npz]).

    1-D and 2-D files in any format scipy writes (coo, csr, csc, bsr,
    dia), and n-D (3-D and more) coo files (scipy >= 1.15's ``coords``
    layout). Files written by pydata-sparse's ``sparse.save_npz`` (COO and
    GCXS, any ndim) load with their fill value; pydata-sparse itself is not
    needed.

    Parameters
    ----------
    file : str, path or file-like
    drop_zeros : bool
        Drop explicitly stored zeros (kept by default); for a pydata-sparse
        file, stored entries equal to its fill value (lossless).

    Returns
    -------
    BCOOArray
        The stored shape, dtype and entries (duplicates kept as stored
        entries, which sum); fill value 0 (a pydata-sparse file's own fill
        value), every dimension sparse (``n_batch = n_dense = 0``).

    Raises
    ------
    ValueError
        If the file is not a scipy or pydata-sparse ``.npz`` (scipy's
        message), or its dtype needs x64 and x64 is off.
    """
    import scipy.sparse as sp

    with np.load(file, allow_pickle=False) as npz:
        if "fill_value" in npz.files:  # pydata-sparse's save_npz (scipy never writes a fill value)
            return _from_pydata_npz(npz, drop_zeros=drop_zeros)
    if hasattr(file, "seek"):
        file.seek(0)
    mat = sp.load_npz(file)
    if isinstance(mat, sp.spmatrix):  # a file saved from a matrix: the data, not the semantics, is loaded
        mat = getattr(sp, f"{mat.format}_array")(mat)
    return from_scipy(mat, drop_zeros=drop_zeros)


def _from_pydata_npz(npz, *, drop_zeros: bool) -> BCOOArray:
    """The BCOOArray of a pydata-sparse ``.npz`` (format ``coo`` or ``gcxs``), read with NumPy alone.

    GCXS stores the array reshaped to 2-D with its ``compressed_axes`` first
    (rows) and the other axes in order (columns), compressed by row (CSR):
    each entry's row and column are unravelled over those axes and put back
    in the array's axis order.
    """
    from ._shapes import index_dtype_for

    fmt = str(npz["format"])
    shape = tuple(int(s) for s in npz["shape"])
    data = np.asarray(npz["data"])
    if fmt == "coo":
        coords = np.asarray(npz["coords"], np.int64).reshape(len(shape), data.shape[0])  # (0-d: no -1)
    elif fmt == "gcxs":
        compressed = tuple(int(a) for a in np.atleast_1d(npz["compressed_axes"]))
        order = compressed + tuple(a for a in range(len(shape)) if a not in compressed)
        reordered = tuple(shape[a] for a in order)
        n_cols = int(np.prod(reordered[len(compressed):], dtype=np.int64))
        indptr = np.asarray(npz["indptr"], np.int64)
        rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        linear = rows * n_cols + np.asarray(npz["indices"], np.int64)
        unravelled = np.unravel_index(linear, reordered) if data.size else [np.zeros(0, np.int64)] * len(shape)
        coords = np.empty((len(shape), data.size), np.int64)
        for pos, axis in enumerate(order):
            coords[axis] = unravelled[pos]
    else:
        raise ValueError(f"file holds a pydata-sparse array of format {fmt!r}; load_npz reads 'coo' and 'gcxs' "
                         f"(save it with sparse.save_npz(f, arr.asformat('coo')))")
    dt = _dtypes.canonicalize_dtype(data.dtype, argname="the file's dtype")
    fill = np.asarray(npz["fill_value"]).astype(dt)[()]
    if drop_zeros:  # entries equal to the fill value (zeros for fill 0): dropping them loses nothing
        keep = ~(np.isnan(data) & np.isnan(fill)) if data.dtype.kind in "fc" and np.isnan(fill) else data != fill
        coords, data = coords[:, keep], data[keep]
    idx = coords.T.astype(index_dtype_for(shape)) if coords.size else np.zeros((data.size, len(shape)),
                                                                              index_dtype_for(shape))
    return BCOOArray._from_buffers(np.array(data, dtype=dt), np.ascontiguousarray(idx), shape, n_batch=0,
                                   n_dense=0, fill_value=fill, indices_sorted=False, unique_indices=False)


@routed
def mmread(source, *, dtype=None) -> BCOOArray:
    """Read a Matrix Market file (coordinate or array; ``.mtx`` or ``.mtx.gz``).

    Parameters
    ----------
    source : str, path or file-like
    dtype : dtype, optional
        Cast the values on the host before they reach JAX, e.g.
        ``bcoo_array.float32`` to read a ``real`` file with x64 off. By
        default the file's own type is kept (``real`` and ``pattern``:
        float64, ``integer``: int64, ``complex``: complex128, as
        ``scipy.io.mmread``), which needs x64.

    Returns
    -------
    BCOOArray
        In canonical form (sorted, duplicates summed). Symmetric,
        skew-symmetric and Hermitian files are expanded to every entry, as
        scipy does; explicit zeros are kept. A dense ``array``
        file gives the BCOOArray of its non-zero entries.

    Raises
    ------
    ValueError
        If the file is malformed (scipy's message) or the dtype needs x64 and it is off.
    """
    import scipy.io


    obj = scipy.io.mmread(source, spmatrix=False)
    if dtype is not None:
        dt = _dtypes.canonicalize_dtype(dtype, argname="dtype")
        obj = obj.astype(dt)
    if isinstance(obj, np.ndarray):
        return asarray(obj)
    # Matrix Market files list entries in any order; the canonical form (same
    # values) makes every later operation skip a sort.
    return from_scipy(obj).sum_duplicates()


@routed
def mmwrite(target, a: BCOOArray, comment: str = "", field: str | None = None, precision: int | None = None,
            symmetry: str | None = None) -> None:
    """Write a 2-D BCOOArray as a Matrix Market coordinate file (``scipy.io.mmwrite``).

    Parameters
    ----------
    target : str, path or file-like
        A name ending in ``.gz`` (``matrix.mtx.gz``) is written
        gzip-compressed, and one ending in ``.bz2`` bzip2-compressed, to
        exactly that name (``mmread`` and ``scipy.io.mmread`` read both).
        Any other name is passed to scipy, which appends ``.mtx`` unless the
        name ends in it (``scipy.io.mmwrite("m.mtx.gz", ...)`` itself writes
        an uncompressed ``m.mtx.gz.mtx``). A file-like object receives the
        uncompressed text.
    a : BCOOArray
        2-D, fill value 0. Duplicates are summed before writing.
    comment, field, precision, symmetry
        As ``scipy.io.mmwrite`` (``field``: "real", "complex",
        "pattern" or "integer"; ``symmetry``: "general", "symmetric", ...;
        found from the data when None).

    Raises
    ------
    TypeError
        If ``a`` is not a BCOOArray.
    ValueError
        If ``a`` is not 2-D, has a non-zero fill value or float16 data.
    """
    import bz2
    import gzip
    import os

    import scipy.io

    m = _as_bcoo(a, "a")
    if m.ndim != 2:
        raise ValueError(f"Matrix Market holds 2-D matrices; this array is {m.ndim}-D")
    kwargs = dict(comment=comment, field=field, precision=precision, symmetry=symmetry)
    coo = m.to_scipy("coo")
    opener = None
    if isinstance(target, (str, bytes, os.PathLike)):
        name = os.fsdecode(target)
        opener = gzip.open if name.endswith(".gz") else bz2.open if name.endswith(".bz2") else None
    if opener is None:
        scipy.io.mmwrite(target, coo, **kwargs)
        return
    # scipy would append ".mtx" to the name and not compress: compress into exactly the name given.
    # The writer sees a write-only stream: it would seek a stream that has seek, which compressed
    # files opened for writing refuse (bz2) or emulate.

    class _WriteOnly:
        def __init__(self, fh):
            self.write = fh.write

    with opener(name, "wb") as fh:
        scipy.io.mmwrite(_WriteOnly(fh), coo, **kwargs)
