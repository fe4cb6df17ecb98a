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


@routed
def save_npz(file, matrix: BCOOArray, compressed: bool = True, *, format: str = "coo") -> None:
    """Save a 1-D or 2-D BCOOArray in scipy.sparse's ``.npz`` format.

    Parameters
    ----------
    file : str, path or file-like
        Where to write (``.npz`` is appended to a name without it, as NumPy does).
    matrix : BCOOArray
        Fill value 0 (scipy has no fill value).
    compressed : bool
        Use ``numpy.savez_compressed`` (default) or ``numpy.savez``.
    format : {"coo", "csr", "csc", "bsr", "dia"}
        The scipy format recorded in the file (``"coo"`` keeps the entries as stored).

    Raises
    ------
    TypeError
        If ``matrix`` is not a BCOOArray.
    ValueError
        For a non-zero fill value, ndim other than 1 or 2, float16 data, or
        an unknown ``format``.
    """
    import scipy.sparse as sp

    m = _as_bcoo(matrix, "matrix")
    if format not in _NPZ_FORMATS:
        raise ValueError(f"format={format!r}: save_npz writes one of {_NPZ_FORMATS}")
    sp.save_npz(file, m.to_scipy(format), compressed=compressed)


@routed
def load_npz(file, *, drop_zeros: bool = False) -> BCOOArray:
    """Load a sparse array or matrix saved by ``scipy.sparse.save_npz`` (or [`save_npz`][bcoo_array.save_npz]).

    Parameters
    ----------
    file : str, path or file-like
    drop_zeros : bool
        Drop explicitly stored zeros (kept by default).

    Returns
    -------
    BCOOArray
        The stored shape, dtype and entries; fill value 0.

    Raises
    ------
    ValueError
        If the file is not a scipy sparse ``.npz``, or its dtype needs x64 and x64 is off.
    """
    import scipy.sparse as sp


    mat = sp.load_npz(file)
    if isinstance(mat, sp.spmatrix):  # a file saved from a matrix: the data, not the semantics, is loaded
        mat = getattr(sp, f"{mat.format}_array")(mat)
    return from_scipy(mat, drop_zeros=drop_zeros)


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
    import scipy.io

    m = _as_bcoo(a, "a")
    if m.ndim != 2:
        raise ValueError(f"Matrix Market holds 2-D matrices; this array is {m.ndim}-D")
    scipy.io.mmwrite(target, m.to_scipy("coo"), comment=comment, field=field, precision=precision,
                     symmetry=symmetry)
