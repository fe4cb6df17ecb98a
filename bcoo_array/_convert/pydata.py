"""pydata-sparse (``sparse.COO``, ``sparse.GCXS``, ``sparse.DOK``) <-> BCOOArray.

Both libraries have a fill value, n-dimensional arrays and sum-of-duplicates
semantics, so conversions keep values, dtype, shape and fill value exactly.
``sparse`` is imported only inside these functions.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from .._array_object import BCOOArray
from .._shapes import index_dtype_for
from ._common import coo_triplets

_FORMATS = ("coo", "gcxs", "dok")


def from_pydata_sparse(arr, *, drop_fill: bool = False) -> BCOOArray:
    """Convert a pydata-sparse array (COO, GCXS, DOK; any ndim) to a BCOOArray.

    Parameters
    ----------
    arr : sparse.SparseArray
        ``sparse.COO``, ``sparse.GCXS`` or ``sparse.DOK``.
    drop_fill : bool
        Drop stored entries equal to the fill value (NaN matches a NaN fill);
        values do not change.

    Returns
    -------
    BCOOArray
        Same shape, dtype and ``fill_value``; ``n_batch = n_dense = 0``;
        indices int32 (int64 when a dimension exceeds 2**31 - 1, needing x64).
        Marked canonical when pydata-sparse reports sorted, duplicate-free
        coordinates.

    Raises
    ------
    TypeError
        If ``arr`` is not a pydata-sparse array.
    ValueError
        If the dtype or the index range needs x64 and it is off.
    """
    try:
        import sparse
    except ImportError as exc:  # an optional dependency: the pydata extra
        raise ImportError("pydata-sparse is not installed; pip install 'bcoo-array[pydata]'") from exc

    if not isinstance(arr, sparse.SparseArray):
        raise TypeError(f"from_pydata_sparse() needs a sparse.COO, GCXS or DOK array, got {type(arr).__name__}")
    coo = arr if isinstance(arr, sparse.COO) else arr.asformat("coo")
    dt = _dtypes.canonicalize_dtype(coo.dtype, argname="arr.dtype")
    shape = tuple(int(s) for s in coo.shape)
    idt = index_dtype_for(shape)
    coords = np.asarray(coo.coords)
    data = np.asarray(coo.data)
    if drop_fill:
        fill = np.asarray(coo.fill_value)
        keep = ~np.isnan(data) if data.dtype.kind in "fc" and np.isnan(fill) else data != fill
        coords, data = coords[:, keep], data[keep]
    canonical = bool(getattr(coo, "sorted", False)) and not bool(getattr(coo, "has_duplicates", True))
    idx = coords.T.astype(idt) if coords.size else np.zeros((data.size, len(shape)), idt)
    return BCOOArray._from_buffers(
        np.array(data, dtype=dt), np.array(idx), shape, n_batch=0, n_dense=0,  # host buffers, the array's own
        fill_value=np.asarray(coo.fill_value).astype(dt)[()], indices_sorted=canonical, unique_indices=canonical,
    )


def to_pydata_sparse(x: BCOOArray, format: str = "coo"):
    """Convert a BCOOArray (any ndim and layout) to a pydata-sparse array.

    Parameters
    ----------
    x : BCOOArray
    format : {"coo", "gcxs", "dok"}

    Returns
    -------
    sparse.COO, sparse.GCXS or sparse.DOK
        Same shape, dtype, values and fill value; duplicates summed (logical
        or for bool), padding dropped, coordinates sorted. Its buffers are
        its own (writable copies): writing to them leaves ``x`` unchanged.

    Raises
    ------
    ValueError
        If ``format`` is unknown or ``x`` is traced.
    TypeError
        For float16 to GCXS (pydata-sparse compiles GCXS kernels with numba,
        which has no float16); use COO or DOK, or cast to float32 first.
    """
    try:
        import sparse
    except ImportError as exc:  # an optional dependency: the pydata extra
        raise ImportError("pydata-sparse is not installed; pip install 'bcoo-array[pydata]'") from exc

    if format not in _FORMATS:
        raise ValueError(f"format={format!r} is not a pydata-sparse format; use one of {_FORMATS}")
    if format == "gcxs" and x.dtype == np.float16:
        raise TypeError("pydata-sparse's GCXS does not support float16 (numba has no float16); "
                        "use format='coo' or 'dok', or x.astype(bcoo_array.float32)")
    data, coords = coo_triplets(x, "to_pydata_sparse()")
    # pydata-sparse arrays are mutable (``P.data[:] = v``) and hold the arrays they are given: both are
    # fresh copies (the values may be a view of x's buffer, which x's copies share), as to_scipy's are.
    out = sparse.COO(coords.astype(np.int64), np.array(data), shape=x.shape, fill_value=x.fill_value,
                     has_duplicates=False, sorted=True)
    return out if format == "coo" else out.asformat(format)
