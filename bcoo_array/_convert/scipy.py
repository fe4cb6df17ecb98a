"""scipy.sparse <-> BCOOArray.

Every scipy format converts through COO. Duplicates are kept as stored
entries (BCOO sums them, as scipy does), explicit zeros are kept unless
``drop_zeros=True``. Indices are converted to int32 when every dimension fits
and to int64 otherwise (which needs JAX's x64 mode), so no index wraps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _dtypes
from .._array_object import BCOOArray
from .._fill import reads_as_zero
from .._kernels.csr import csr_arrays
from .._kernels.host import aligned_empty
from .._kernels.native import host_csr_to_coo
from .._shapes import index_dtype_for
from .._relayout import update_layout
from .._warnings import MatrixSemanticsWarning, warn


def warn_matrix_semantics(mat) -> None:
    """Raise ``MatrixSemanticsWarning`` when ``mat`` is a scipy ``spmatrix`` (``numpy.matrix`` semantics)."""
    import scipy.sparse as sp

    if isinstance(mat, sp.spmatrix):
        warn(f"converting a scipy.sparse {type(mat).__name__} (numpy.matrix semantics) to a BCOOArray, which "
             f"has array semantics like scipy's {mat.format}_array: `*` is element-wise (use `@` for the matrix "
             "product) and A.sum(axis=1) is 1-D. See scipy's migration guide "
             "(https://docs.scipy.org/doc/scipy/reference/sparse.migration_to_sparray.html); once the code "
             "uses array semantics, silence this with warnings.filterwarnings('ignore', "
             "category=bcoo_array.MatrixSemanticsWarning)", MatrixSemanticsWarning)


class Names(NamedTuple):
    """How error messages name the parts of a scipy structure (the call, its data, indices and indptr),
    and what they advise for a bad index (``fix_index``) and for a bad size or row pointer (``fix``)."""

    call: str
    data: str
    indices: str
    indptr: str
    fix_index: str
    fix: str


_MALFORMED = "the scipy array is malformed (its check_format() reports it too); fix it before converting"

#: The names for ``from_scipy(mat)``: the attributes of ``mat``.
MAT_NAMES = Names("from_scipy()", "mat.data", "mat.indices", "mat.indptr", _MALFORMED, _MALFORMED)


def _outside(idx: np.ndarray, bound: int) -> bool:
    """Whether an index array holds a value outside ``[0, bound)``: one pass for integers (a negative
    index reads as a huge unsigned one), a comparison for anything else."""
    if idx.size == 0:
        return False
    if idx.dtype.kind == "i":
        return int(idx.view(idx.dtype.str.replace("i", "u")).max()) >= bound  # the same byte order
    if idx.dtype.kind == "u":
        return int(idx.max()) >= bound
    return bool(np.any((idx < 0) | (idx >= bound)))


def _first_outside(idx: np.ndarray, bound: int) -> tuple[int, object]:
    """Position and value of the first entry of ``idx`` outside ``[0, bound)`` (the error path only)."""
    pos = int(np.flatnonzero((idx < 0) | (idx >= bound))[0])
    return pos, idx[pos].item()


def check_compressed(fmt: str, shape, data, indices, indptr, names: Names = MAT_NAMES, *,
                     check_order: bool = True) -> int:
    """Check a 2-D CSR / CSC structure, in O(nnz) (one pass over the indices), and return its ``nnz``.

    scipy's constructors check only sizes (``check_format(full_check=False)``),
    and BCOO reads an index past the shape as padding, so without this an
    out-of-range index would drop its entry silently.

    Parameters
    ----------
    fmt : {"csr", "csc"}
    shape : tuple of int
        ``(m, n)``.
    data, indices, indptr : numpy.ndarray
    names : Names
        How the error message names the call and the arrays.
    check_order : bool
        Check that ``indptr`` never decreases (O(rows), ``check_indptr_order``);
        the caller may leave it to a pass that checks it anyway
        (``host_csr_to_coo``).

    Returns
    -------
    int
        ``indptr[-1]``: the stored entries are ``data[:nnz]`` and
        ``indices[:nnz]`` (scipy's ``prune``).

    Raises
    ------
    ValueError
        If ``indptr`` has the wrong length, does not start at 0, decreases or
        ends past the stored entries, ``data`` and ``indices`` differ in
        length, or an index is negative or not below its dimension.
    """
    major, minor = ("row", "column") if fmt == "csr" else ("column", "row")
    m, n = (shape[0], shape[1]) if fmt == "csr" else (shape[1], shape[0])
    call = names.call
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise ValueError(f"{call}: {names.data}, {names.indices} and {names.indptr} must be 1-D; got shapes "
                         f"{data.shape}, {indices.shape} and {indptr.shape}")
    if indptr.size != m + 1:
        raise ValueError(f"{call}: {names.indptr} has {indptr.size} entries; a {fmt} array of shape {tuple(shape)} "
                         f"needs {m + 1} (one per {major}, plus one): {names.fix}")
    if data.size != indices.size:
        raise ValueError(f"{call}: {names.data} has {data.size} entries and {names.indices} {indices.size}; "
                         f"each stored value needs one {minor} index: {names.fix}")
    nnz = int(indptr[-1])
    if int(indptr[0]) != 0 or not 0 <= nnz <= indices.size:
        raise ValueError(f"{call}: {names.indptr} must start at 0 and end at most at the {indices.size} stored "
                         f"entries; it runs from {int(indptr[0])} to {nnz}: {names.fix}")
    if check_order:
        check_indptr_order(indptr, names)
    stored = indices[:nnz] if nnz < indices.size else indices
    if _outside(stored, n):
        pos, bad = _first_outside(stored, n)
        raise ValueError(f"{call}: {names.indices}[{pos}] = {bad} is not a {minor} index of shape {tuple(shape)}; "
                         f"every {minor} index must satisfy 0 <= index < {n}: {names.fix_index}")
    return nnz


def check_indptr_order(indptr: np.ndarray, names: Names = MAT_NAMES) -> None:
    """Raise ValueError if the row (column) pointer ``indptr`` decreases somewhere (O(rows))."""
    if indptr.size > 1 and bool(np.any(indptr[1:] < indptr[:-1])):
        i = int(np.flatnonzero(indptr[1:] < indptr[:-1])[0])
        raise ValueError(f"{names.call}: {names.indptr} must not decrease, but {names.indptr}[{i}] = "
                         f"{int(indptr[i])} > {names.indptr}[{i + 1}] = {int(indptr[i + 1])}: {names.fix}")


def from_scipy(mat, *, drop_zeros: bool = False, dtype=None) -> BCOOArray:
    """Convert a scipy.sparse array or matrix (any format, 1-D or 2-D) to a BCOOArray.

    Parameters
    ----------
    mat : scipy.sparse array or matrix
        coo, csr, csc, bsr, dia, dok or lil; canonical or not.
    drop_zeros : bool
        Drop explicitly stored zeros (scipy's ``eliminate_zeros``).
    dtype : dtype, optional
        Cast the values to this dtype (an explicit request, so a float64
        matrix can be read as float32 with JAX's x64 mode off).

    Returns
    -------
    BCOOArray
        Same shape and dtype (``dtype`` if given), fill value 0, n_batch = n_dense = 0. Sorted and
        unique flags are set when scipy reports canonical format.

    Raises
    ------
    TypeError
        If ``mat`` is not a scipy sparse object.
    ValueError
        If the dtype needs x64 and it is off, or a dimension needs int64
        indices and x64 is off; if ``mat`` is malformed: a CSR / CSC index
        outside its dimension or an inconsistent ``indptr`` (scipy checks
        these only in ``check_format()``), or a COO coordinate outside the
        shape. Nothing is dropped silently. The check is one pass over the
        indices.

    Warns
    -----
    MatrixSemanticsWarning
        If ``mat`` is a scipy ``spmatrix`` (``csr_matrix``, ...): the result
        has array semantics (``*`` element-wise, ``@`` the product, sums
        drop the axis), unlike the matrix. See
        [`bcoo_array.MatrixSemanticsWarning`][].
    """
    import scipy.sparse as sp

    if not sp.issparse(mat):
        raise TypeError(f"from_scipy() needs a scipy.sparse array or matrix, got {type(mat).__name__}")
    warn_matrix_semantics(mat)
    return convert(mat, drop_zeros=drop_zeros, dtype=dtype)


def convert(mat, *, drop_zeros: bool = False, dtype=None, names: Names = MAT_NAMES) -> BCOOArray:
    """[`from_scipy`][bcoo_array.from_scipy] of a scipy sparse ``mat``, without the type check and the
    warning; ``names`` names the arrays in the errors of a malformed structure (``csr_array((data, indices,
    indptr))`` names its arguments)."""
    dt = _dtypes.canonicalize_dtype(mat.dtype if dtype is None else dtype,
                                    argname="mat.dtype" if dtype is None else "dtype")
    shape = tuple(int(s) for s in mat.shape)
    idt = index_dtype_for(shape)
    canonical = False
    if mat.format == "csr" and mat.ndim == 2:
        canonical = bool(mat.has_canonical_format)
        indptr = np.asarray(mat.indptr)
        data = np.asarray(mat.data)
        indices = np.asarray(mat.indices)
        # One pass over the indices; the row pointer's order is checked by host_csr_to_coo, or below.
        nnz = check_compressed("csr", shape, data, indices, indptr, names, check_order=False)
        if nnz < indices.size:  # entries past indptr[-1] are not part of the matrix (scipy's prune)
            data, indices = data[:nnz], indices[:nnz]
        if not drop_zeros:
            # One native pass writes the (row, column) pairs straight into the aligned index buffer.
            idx = aligned_empty((data.size, 2), idt)
            if host_csr_to_coo(indptr, indices, idx):
                return BCOOArray._from_buffers(
                    np.array(data, dtype=dt), idx, shape, n_batch=0,  # (a copy: scipy's buffers are the user's)
                    n_dense=0, fill_value=np.zeros((), dt)[()], indices_sorted=canonical, unique_indices=canonical,
                )
        check_indptr_order(indptr, names)  # (host_csr_to_coo checks it where it runs)
        rows = np.repeat(np.arange(shape[0], dtype=idt), np.diff(indptr))
        cols = indices.astype(idt, copy=False)
        coords = (rows, cols)
    else:
        if mat.format == "csc" and mat.ndim == 2:
            indices = np.asarray(mat.indices)
            nnz = check_compressed("csc", shape, np.asarray(mat.data), indices, np.asarray(mat.indptr), names)
            if nnz < indices.size:  # scipy's tocoo() would read the entries past indptr[-1]
                mat = type(mat)((mat.data[:nnz], indices[:nnz], mat.indptr), shape=mat.shape, copy=False)
        if hasattr(mat, "indptr") and (np.dtype(mat.indices.dtype).itemsize < 4
                                       or np.dtype(mat.indptr.dtype).itemsize < 4):
            # scipy's own tocoo() refuses index arrays narrower than int32 (int16 from a file or a user):
            # the same array with int32 indices, sharing the values.
            mat = type(mat)((mat.data, mat.indices.astype(np.int32), mat.indptr.astype(np.int32)),
                            shape=mat.shape, copy=False)
        coo = mat.tocoo()
        canonical = bool(getattr(coo, "has_canonical_format", False))
        data = np.asarray(coo.data)
        if coo is mat:  # scipy checks the coordinates of a coo array it builds, not of one changed since
            _check_coords(coo.coords, data, shape, names.call)
        coords = tuple(np.asarray(c).astype(idt, copy=False) for c in coo.coords)
    if drop_zeros:
        keep = data != 0
        data = data[keep]
        coords = tuple(c[keep] for c in coords)
    idx = aligned_empty((data.size, len(coords)), idt)
    for k, c in enumerate(coords):
        idx[:, k] = c
    return BCOOArray._from_buffers(
        np.array(data, dtype=dt), idx, shape, n_batch=0, n_dense=0,  # host buffers, the array's own
        fill_value=np.zeros((), dt)[()], indices_sorted=canonical, unique_indices=canonical,
    )


def _check_coords(coords, data, shape, call: str) -> None:
    """Raise ValueError unless every COO coordinate lies in its dimension (one pass per dimension)."""
    for k, c in enumerate(coords):
        c = np.asarray(c)
        if c.shape != data.shape:
            raise ValueError(f"{call}: mat.coords[{k}] has shape {c.shape}, mat.data {data.shape}; each stored "
                             "value needs one coordinate per dimension: the scipy array is malformed")
        if _outside(c, shape[k]):
            pos, bad = _first_outside(c, shape[k])
            raise ValueError(f"{call}: mat.coords[{k}][{pos}] = {bad} is outside dimension {k} of shape {shape} "
                             f"(0 <= index < {shape[k]}): the scipy array is malformed; fix it before converting")


def to_scipy(x: BCOOArray, format: str = "coo", *, materialize_fill: bool = False):
    """Convert a 1-D or 2-D BCOOArray to a scipy.sparse array of ``format``.

    Parameters
    ----------
    x : BCOOArray
    format : {"coo", "csr", "csc", "bsr", "dia", "dok", "lil"}
    materialize_fill : bool
        scipy.sparse has no fill value (unstored entries are 0). With a
        non-zero fill value this must be True: the array is then densified
        and its non-zero entries stored, so memory grows to the dense size.

    Returns
    -------
    scipy.sparse array (``coo_array``, ``csr_array``, ...)

    Raises
    ------
    ValueError
        If the fill value is not zero and ``materialize_fill`` is False, if
        ``x`` is not 1-D or 2-D, or ``format`` is unknown.
    """
    import scipy.sparse as sp

    if x.ndim not in (1, 2):
        raise ValueError(f"scipy.sparse holds 1-D and 2-D arrays; this one is {x.ndim}-D")
    if format not in ("coo", "csr", "csc", "bsr", "dia", "dok", "lil"):
        raise ValueError(f"format={format!r} is not a scipy.sparse format")
    if x.ndim == 1 and format not in ("coo", "csr", "dok"):
        raise ValueError(f"scipy.sparse stores 1-D arrays only as coo, csr or dok, not {format!r}")
    if x.dtype == np.float16:
        raise ValueError(
            "scipy.sparse does not support float16; convert with x.astype(bcoo_array.float32) first "
            "(exact: every float16 value is a float32 value)"
        )
    if not reads_as_zero(x.fill_value):
        if not materialize_fill:
            raise ValueError(
                f"this array's fill value is {x.fill_value!r}, but scipy.sparse arrays have no fill value "
                "(unstored entries are 0); call x.to_scipy(format, materialize_fill=True) to store every "
                "entry, or subtract the fill value first"
            )
        d = np.asarray(x.todense())
        return sp.coo_array(d).asformat(format)

    c = update_layout(x, 0, 0)
    if not c._concrete():
        raise ValueError("to_scipy() needs concrete buffers; call it outside jax.jit / vmap")
    cdata, cindices = c._buffers()  # host buffers stay on the host (no hand-off to JAX and back)
    if x.ndim == 2 and format == "csr":
        # Valid entries first with sorted rows (canonical form, e.g.): the CSR structure is
        # cached on the index buffer (_kernels.csr), so this is three copies (scipy arrays are
        # mutable, JAX buffers are not), with no sort.

        st = csr_arrays(cindices, x.shape)
        if st is not None:
            out = sp.csr_array((np.array(np.asarray(cdata)[:st.n_valid]), st.cols.copy(), st.indptr.copy()),
                               shape=x.shape, copy=False)
            if st.canonical:
                out.has_canonical_format = True
            return out
    idx = np.asarray(cindices)
    data = np.asarray(cdata)
    valid = np.ones(idx.shape[0], bool)
    for k in range(idx.shape[1]):  # column by column (an axis=1 reduction is several times slower)
        valid &= idx[:, k] < c.shape[k]
    if not valid.all():
        idx, data = np.compress(valid, idx, axis=0), data[valid]
    else:
        data = np.array(data)  # scipy arrays are mutable: never a view of this array's buffers
    coo = sp.coo_array((data, tuple(np.array(idx[:, k]) for k in range(x.ndim))), shape=x.shape, copy=False)
    if c.indices_sorted and c.unique_indices:
        coo.has_canonical_format = True
    if format == "coo":
        return coo
    return coo.asformat(format)
