"""scipy.sparse's construction functions with scipy's names and meanings,
returning BCOOArrays: ``eye_array``, ``diags_array``, ``random_array``,
``hstack``, ``vstack``, ``block_diag``, ``kron``, ``find``, ``issparse``.

Reference: https://docs.scipy.org/doc/scipy/reference/sparse.html
("Building sparse arrays" and "Sparse tools"). scipy's ``tril`` / ``triu``
mean the same as the array API functions [`bcoo_array.tril`][] /
[`bcoo_array.triu`][] (pass ``k=`` by keyword), so they are not repeated.

The block functions assemble the coordinates on the host (NumPy) from each
block's canonical entries, so they run eagerly, like scipy. Operands may be
BCOOArrays, scipy.sparse / pydata-sparse / jax.experimental.sparse objects
or dense arrays (all converted with [`bcoo_array.asarray`][]). Results are
canonical (sorted, duplicate-free).
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._convert._common import coo_triplets
from ._convert.scipy import Names, convert as convert_scipy, from_scipy
from ._creation_functions import asarray, eye
from ._fill import reads_as_zero, same_value_np
from ._kernels.host import adopt
from ._shapes import index_dtype_for, normalize_shape
from ._manipulation_functions import reshape
from ._routing import routed

__all__ = ["coo_array", "csr_array", "csc_array", "eye_array", "identity", "diags_array", "random_array", "hstack",
           "vstack", "block_array", "block_diag", "kron", "kronsum", "find", "issparse"]


def _from_scipy_form(arg, shape, dtype, fmt: str) -> BCOOArray:
    """The BCOOArray of one of scipy's constructor arguments for ``fmt`` (``coo``, ``csr`` or ``csc``)."""
    if isinstance(arg, tuple) and len(arg) == 3 and fmt in ("csr", "csc"):
        import scipy.sparse as sp

        data, idx, indptr = (np.asarray(a) for a in arg)
        mat = getattr(sp, f"{fmt}_array")((data, idx, indptr), shape=shape)  # scipy checks the sizes
        major, minor = ("row", "shape[1]") if fmt == "csr" else ("column", "shape[0]")
        # the conversion checks every index (one pass), naming this call's arguments
        names = Names(f"{fmt}_array((data, indices, indptr), shape)", "data", "indices", "indptr",
                      f"fix indices, or pass a shape whose {minor} exceeds every index",
                      f"data[indptr[i]:indptr[i + 1]] must be {major} i's values, indices[...] their positions")
        return convert_scipy(mat, dtype=dtype, names=names)
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], tuple):
        return BCOOArray(arg, shape=None if shape is None else normalize_shape(shape), dtype=dtype)
    if isinstance(arg, tuple) and len(arg) in (1, 2) and all(isinstance(n, (int, np.integer)) for n in arg):
        # scipy's empty-array form: csr_array((m, n))
        dt = _dtypes.default_float() if dtype is None else dtype
        return BCOOArray((np.zeros((0,), dt), tuple(np.zeros(0, np.int64) for _ in arg)), shape=tuple(arg), dtype=dt)
    out = asarray(arg, dtype=dtype)
    if shape is not None and tuple(out.shape) != normalize_shape(shape):
        raise ValueError(f"{fmt}_array(): shape={tuple(shape)} does not match the input's shape {tuple(out.shape)}")
    return out


@routed
def coo_array(arg, /, shape=None, *, dtype=None, copy=False) -> BCOOArray:
    """scipy's ``coo_array`` constructor, giving a BCOOArray: assembly without leaving the library.

    Parameters
    ----------
    arg : tuple, array_like or sparse array
        ``(data, (row, col))`` (one index array per dimension, any order,
        duplicates allowed: they are summed wherever the values are read,
        as in scipy); ``(m, n)`` for an empty array; a dense array, a
        scipy.sparse / pydata-sparse / jax.experimental.sparse array or a
        BCOOArray (as [`bcoo_array.asarray`][]).
    shape : tuple of int, optional
        Inferred from the largest index in the triplet form.
    dtype : dtype, optional
        Cast the values.
    copy : bool
        Accepted for scipy's signature: the input is always copied into the
        array's own buffers.

    Returns
    -------
    BCOOArray
        All-sparse layout, fill value 0; duplicates kept as stored entries
        until ``sum_duplicates()`` (scipy's ``coo_array`` keeps them too).

    Raises
    ------
    TypeError, ValueError
        As the [`BCOOArray`][bcoo_array.BCOOArray] constructor and
        [`bcoo_array.asarray`][] raise them (an index out of range names the
        axis and the bound).
    """
    return _from_scipy_form(arg, shape, dtype, "coo")


@routed
def csr_array(arg, /, shape=None, *, dtype=None, copy=False) -> BCOOArray:
    """scipy's ``csr_array`` constructor, giving a canonical BCOOArray (duplicates summed, sorted).

    Parameters
    ----------
    arg : tuple, array_like or sparse array
        ``(data, indices, indptr)`` (scipy's compressed rows: every column
        index must satisfy ``0 <= index < shape[1]``, and ``indptr`` must
        start at 0 and never decrease; all checked),
        ``(data, (row, col))``, ``(m, n)`` for an empty array, or any input
        of [`bcoo_array.asarray`][].
    shape : tuple of int, optional
    dtype : dtype, optional
    copy : bool
        Accepted for scipy's signature (the input is always copied).

    Returns
    -------
    BCOOArray
        2-D (or 1-D), canonical form: what scipy's ``csr_array(...)`` holds,
        in this library's type (``.tocsr()`` gives a scipy object instead).

    Raises
    ------
    ValueError
        For a malformed ``(data, indices, indptr)``: a column index outside
        ``[0, shape[1])`` (never dropped silently), an ``indptr`` that does
        not start at 0, decreases, or does not fit the shape or the
        number of values.
    TypeError, ValueError
        Else as [`bcoo_array.coo_array`][].
    """
    return _from_scipy_form(arg, shape, dtype, "csr").sum_duplicates()


@routed
def csc_array(arg, /, shape=None, *, dtype=None, copy=False) -> BCOOArray:
    """scipy's ``csc_array`` constructor, giving a canonical BCOOArray; see [`bcoo_array.csr_array`][].

    ``(data, indices, indptr)`` is read as compressed columns; the result is
    the same BCOOArray as ``csr_array`` of the same values (one layout holds
    both).

    Parameters
    ----------
    arg : tuple, array_like or sparse array
    shape : tuple of int, optional
    dtype : dtype, optional
    copy : bool

    Returns
    -------
    BCOOArray
        Canonical form.

    Raises
    ------
    TypeError, ValueError
        As [`bcoo_array.csr_array`][], with rows and columns swapped: a row
        index of ``(data, indices, indptr)`` outside ``[0, shape[0])``
        raises ValueError.
    """
    return _from_scipy_form(arg, shape, dtype, "csc").sum_duplicates()


def _check_format(format, name):
    if format not in (None, "bcoo"):
        raise ValueError(
            f"{name}(format={format!r}): bcoo_array builds BCOOArrays only; convert the result with "
            f".to_scipy({format!r}) if you need a scipy.sparse {format} array"
        )


def _operand(x, name) -> BCOOArray:
    if x is None:
        raise TypeError(f"{name}: None is not an array")
    return x if isinstance(x, BCOOArray) else asarray(x)


def _triplets(x: BCOOArray, name):
    if x.ndim != 2:
        raise ValueError(f"{name} takes 2-D arrays; got one of shape {x.shape}")
    vals, coords = coo_triplets(x, f"{name}()")
    return coords[0].astype(np.int64), coords[1].astype(np.int64), vals


def _build(rows, cols, vals, shape, dtype, fill=0) -> BCOOArray:
    idt = index_dtype_for(shape)
    order = np.lexsort((cols, rows))
    idx = np.stack([rows[order], cols[order]], axis=1).astype(idt) if rows.size else np.zeros((0, 2), idt)
    return BCOOArray._from_buffers(
        adopt(np.asarray(vals)[order].astype(dtype, copy=False)), adopt(idx), shape,
        n_batch=0, n_dense=0, fill_value=np.asarray(fill).astype(dtype)[()], indices_sorted=True,
        unique_indices=True,
    )


def _result_dtype(arrays, dtype):
    if dtype is not None:
        return _dtypes.canonicalize_dtype(dtype, argname="dtype")
    return _dtypes.result_type(*[a.dtype for a in arrays])


@routed
def eye_array(m, n=None, *, k: int = 0, dtype=None, format=None) -> BCOOArray:
    """Identity-like array: ones on the ``k``-th diagonal (scipy's ``eye_array``).

    Parameters
    ----------
    m, n : int
        Shape ``(m, n)``; ``n`` defaults to ``m``.
    k : int
        Diagonal offset (positive: above the main diagonal).
    dtype : dtype, optional
        Default: the default floating dtype (float64 with x64 on, as scipy).
    format : None or "bcoo"

    Returns
    -------
    BCOOArray of shape ``(m, n)``, fill value 0, ``min(m + min(k,0), n - max(k,0))`` stored ones.

    Raises
    ------
    ValueError
        For another ``format`` or a negative size.
    """
    _check_format(format, "eye_array")
    return eye(m, n, k=k, dtype=dtype)


@routed
def identity(n, dtype=None, format=None) -> BCOOArray:
    """The ``n`` x ``n`` identity (scipy's ``identity``); see [`eye_array`][bcoo_array.eye_array]."""
    return eye_array(n, dtype=dtype, format=format)


def _diagonal(d) -> np.ndarray:
    """One diagonal of ``diags_array`` as a 1-D NumPy array: an array keeps its dtype; Python numbers (a list,
    a tuple, a scalar) take the default dtype of their kind, as in ``bcoo_array.asarray`` (float32 for
    floats with JAX's 64-bit mode off, where NumPy would make float64)."""
    arr = np.atleast_1d(np.asarray(d))
    if hasattr(d, "dtype") or arr.dtype.kind not in "biufc":
        return arr
    flat = d if isinstance(d, (list, tuple)) else [d]
    if all(type(v) in (bool, int, float, complex) for v in flat):
        return arr.astype(_dtypes.python_values_dtype(arr), copy=False)
    return arr


def _scalarlike(x) -> bool:
    """scipy's ``isscalarlike``: a scalar or a 0-d array."""
    return np.isscalar(x) or (hasattr(x, "shape") and hasattr(x, "ndim") and x.ndim == 0)


@routed
def diags_array(diagonals, /, *, offsets=0, shape=None, format=None, dtype=None) -> BCOOArray:
    """Array from diagonals (scipy's ``diags_array``).

    The values, shape, dtype (scipy's with ``dtype=None``), stored entries and
    error types are scipy's, for every shape and offset.

    Parameters
    ----------
    diagonals : sequence of array_like, or one 1-D array_like with a scalar ``offsets``
        The values on each diagonal, in the order of ``offsets``. A diagonal
        of length 1 (or a scalar) is repeated along the whole diagonal; a
        longer one is truncated to the diagonal's length (its first values
        are used, as scipy does); a shorter one (other than length 1) is an
        error. With a scalar ``offsets``, ``diagonals`` is the one diagonal
        (a sequence of scalars).
    offsets : int or sequence of int
        Diagonal offsets, one per diagonal (0 main, > 0 above, < 0 below);
        no repeats. An offset may lie just past the shape (``-m`` or ``n``
        for shape ``(m, n)``): its diagonal is empty, so its values are
        ignored.
    shape : tuple of int, optional
        ``(m, n)``. Default: square, of size
        ``len(diagonals[0]) + abs(offsets[0])``.
    format : None or "bcoo"
    dtype : dtype, optional
        Cast the values to this dtype (NumPy's casting, as scipy).
        Default: ``numpy.result_type`` of the diagonals, which is what
        scipy gives for ``dtype=None`` (scipy's own default, until SciPy
        1.19, is the deprecated ``numpy.common_type``, which turns integers
        into float64).

    Returns
    -------
    BCOOArray of ``shape``, fill value 0, canonical
        One stored entry per position of each diagonal inside the shape
        (``min(m + min(k, 0), n - max(k, 0))`` for offset ``k``), explicit
        zeros included: the entries of scipy's ``dia_array`` (``nnz``).

    Raises
    ------
    TypeError
        If ``diagonals`` is a scalar (scipy: a sequence is needed), an
        offset is not an integer, ``offsets`` is more than 1-D, or ``shape``
        is not a pair of integers.
    ValueError
        If there is no diagonal, the number of diagonals and offsets differ,
        an offset lies outside the shape (past ``-m`` or ``n``), a diagonal
        is shorter than its diagonal (and not of length 1) or does not
        broadcast to it, offsets repeat, ``shape`` is not 2-D or negative,
        or ``format`` is not None / "bcoo".
    """
    _check_format(format, "diags_array")
    if np.ndim(offsets) == 0:
        # scipy: a scalar offset takes one diagonal, a sequence of scalars.
        if _scalarlike(diagonals):
            raise TypeError(f"diags_array(): diagonals={diagonals!r} must be a sequence; pass one diagonal "
                            f"as [value] (repeated along the diagonal with shape=(m, n))")
        if len(diagonals) == 0 or _scalarlike(diagonals[0]):
            diagonals = [_diagonal(diagonals)]
        else:
            raise ValueError("diags_array(): one (scalar) offset but a sequence of diagonals; pass one offset "
                             "per diagonal (offsets=[k0, k1, ...]) or one diagonal of scalars")
    else:
        try:
            diagonals = [_diagonal(d) for d in diagonals]
        except TypeError as exc:
            raise TypeError(f"diags_array(): diagonals={diagonals!r} must be a sequence of diagonals, one per "
                            "offset") from exc
    offs = np.atleast_1d(np.asarray(offsets))
    if offs.ndim != 1 or (offs.size and offs.dtype.kind not in "iu"):
        raise TypeError(f"diags_array(): offsets={offsets!r} must be an integer or a 1-D sequence of integers")
    if len(diagonals) != offs.size:
        raise ValueError(f"diags_array(): {len(diagonals)} diagonals but {offs.size} offsets; pass one offset "
                         "per diagonal")
    if not diagonals:
        raise ValueError("diags_array() needs at least one diagonal (diagonals=[] and offsets=[])")
    offs = [int(k) for k in offs]
    if shape is None:
        m = len(diagonals[0]) + abs(offs[0])
        shape = (m, m)
    if isinstance(shape, (int, np.integer)):
        raise TypeError(f"diags_array(): shape={shape!r} must be a pair (m, n)")
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise ValueError(f"diags_array(): shape must be 2-D, got {shape}")
    m, n = shape
    dt = _dtypes.canonicalize_dtype(dtype, argname="dtype") if dtype is not None else \
        _dtypes.canonicalize_dtype(np.result_type(*diagonals), argname="diagonals dtype")
    rows, cols, vals = [], [], []
    for j, (d, k) in enumerate(zip(diagonals, offs)):
        length = min(m + min(k, 0), n - max(k, 0))
        if length < 0:
            raise ValueError(f"diags_array(): offset {k} (index {j}) lies outside the shape {shape}; offsets "
                             f"range from {-m} to {n}")
        # scipy's assignment: the diagonal's first `length` values (the rest is dropped), broadcast
        # from length 1, cast with NumPy's rules.
        v = np.zeros(length, dtype=dt)
        try:
            v[:] = d[..., :length]
        except ValueError as exc:
            if len(d) not in (length, 1):
                raise ValueError(
                    f"diags_array(): diagonal {j} has length {len(d)}, but offset {k} of shape {shape} has "
                    f"{length} entries; pass at least {length} values (extra ones are dropped) or one "
                    "value to repeat"
                ) from exc
            raise ValueError(f"diags_array(): diagonal {j} of shape {d.shape} does not broadcast to the "
                             f"{length} entries of offset {k}; pass a 1-D diagonal") from exc
        i = np.arange(length, dtype=np.int64)
        rows.append(i + max(-k, 0))
        cols.append(i + max(k, 0))
        vals.append(v)
    if len(set(offs)) != len(offs):
        raise ValueError(f"diags_array(): offsets {offs} repeat; pass each offset once (add the diagonals "
                         "of a repeated offset first)")
    return _build(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), shape, dt)


@routed
def random_array(shape, *, density: float = 0.01, format=None, dtype=None, rng=None, data_sampler=None) -> BCOOArray:
    """Random sparse array with uniformly placed entries (scipy's ``random_array``).

    The pattern and values are drawn by ``scipy.sparse.random_array``
    (same arguments, same random stream for the same ``rng``) and converted
    exactly.

    Parameters
    ----------
    shape : tuple of int
    density : float in [0, 1]
        Fraction of stored entries.
    format : None or "bcoo"
    dtype : dtype, optional
        Default: the namespace's default real floating dtype
        (``__array_namespace_info__().default_dtypes()``): float64 with JAX's
        x64 mode on (scipy's default), float32 with it off.
    rng : numpy.random.Generator, int or None
    data_sampler : callable, optional
        ``data_sampler(size=...)`` returning the values, as in scipy.

    Returns
    -------
    BCOOArray, fill value 0, canonical.

    Raises
    ------
    ValueError
        For a density outside [0, 1], another ``format``, or a 64-bit dtype with x64 off.
    """
    import scipy.sparse as sp


    _check_format(format, "random_array")
    if not 0 <= density <= 1:
        raise ValueError(f"density={density} must lie in [0, 1]")
    dt = np.dtype(dtype) if dtype is not None else _dtypes.default_float()
    _dtypes.canonicalize_dtype(dt, argname="dtype")
    mat = sp.random_array(normalize_shape(shape), density=density, format="coo", dtype=dt, rng=rng,
                          data_sampler=data_sampler)
    mat.sum_duplicates()
    return from_scipy(mat)


def _stack(blocks, axis: int, dtype, name) -> BCOOArray:
    arrays = [_operand(b, f"{name}(blocks[{i}])") for i, b in enumerate(blocks)]
    if not arrays:
        raise ValueError(f"{name}() needs at least one block")
    fills = [a.fill_value for a in arrays]
    if not all(same_value_np(np.asarray(f).astype(np.result_type(*fills)),
                             np.asarray(fills[0]).astype(np.result_type(*fills))) for f in fills):
        raise ValueError(f"{name}(): the blocks have different fill values {fills}; the result needs one fill value")
    dt = _result_dtype(arrays, dtype)
    other = 1 - axis
    sizes = {a.shape[other] for a in arrays if a.ndim == 2}
    if any(a.ndim != 2 for a in arrays):
        raise ValueError(f"{name}() takes 2-D blocks; got shapes {[a.shape for a in arrays]}")
    if len(sizes) != 1:
        raise ValueError(f"{name}(): blocks must agree in dimension {other}; got shapes {[a.shape for a in arrays]}")
    rows, cols, vals = [], [], []
    off = 0
    for a in arrays:
        r, c, v = _triplets(a, name)
        (rows if axis == 0 else cols).append((r if axis == 0 else c) + off)
        (cols if axis == 0 else rows).append(c if axis == 0 else r)
        vals.append(v.astype(dt))
        off += a.shape[axis]
    shape = (off, sizes.pop()) if axis == 0 else (sizes.pop(), off)
    return _build(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), shape, dt,
                  fill=np.asarray(fills[0]).astype(dt))


@routed
def hstack(blocks, format=None, dtype=None) -> BCOOArray:
    """Stack 2-D arrays side by side (scipy's ``hstack``).

    Parameters
    ----------
    blocks : sequence of 2-D arrays (BCOOArray, scipy/pydata/jax sparse or dense)
        Same number of rows and the same fill value.
    format : None or "bcoo"
    dtype : dtype, optional
        Default: the promoted dtype of the blocks (array API rules).

    Returns
    -------
    BCOOArray of shape ``(m, sum of columns)``.

    Raises
    ------
    ValueError
        For no blocks, non-2-D blocks, row counts or fill values that differ.
    """
    _check_format(format, "hstack")
    return _stack(blocks, 1, dtype, "hstack")


@routed
def vstack(blocks, format=None, dtype=None) -> BCOOArray:
    """Stack 2-D arrays on top of each other (scipy's ``vstack``); see [`hstack`][bcoo_array.hstack].

    Returns
    -------
    BCOOArray of shape ``(sum of rows, n)``.

    Raises
    ------
    ValueError
        For no blocks, non-2-D blocks, column counts or fill values that differ.
    """
    _check_format(format, "vstack")
    return _stack(blocks, 0, dtype, "vstack")


@routed
def block_array(blocks, *, format=None, dtype=None) -> BCOOArray:
    """Array assembled from a 2-D grid of blocks (scipy's ``block_array``).

    Parameters
    ----------
    blocks : sequence of sequences of 2-D arrays or None
        A rectangular grid; ``None`` is a zero block. Blocks in a grid row
        share their number of rows, blocks in a grid column their number of
        columns, and every grid row and column holds at least one block.
    format : None or "bcoo"
    dtype : dtype, optional
        Default: the promoted dtype of the blocks.

    Returns
    -------
    BCOOArray, fill value 0.

    Raises
    ------
    ValueError
        For a ragged grid, mismatched block sizes, a grid row or column of
        only ``None``, or a block with a non-zero fill value.
    """
    _check_format(format, "block_array")
    grid = [list(r) for r in blocks]
    if not grid or not all(len(r) == len(grid[0]) for r in grid) or not grid[0]:
        raise ValueError("block_array(): blocks must be a non-empty rectangular grid (list of equal-length rows)")
    nr, nc = len(grid), len(grid[0])
    heights, widths = [None] * nr, [None] * nc
    arrays = []
    for i in range(nr):
        for j in range(nc):
            if grid[i][j] is None:
                continue
            a = _operand(grid[i][j], f"block_array(blocks[{i}][{j}])")
            if a.ndim != 2:
                raise ValueError(f"block_array(): block [{i}][{j}] has shape {a.shape}; blocks must be 2-D")
            if not reads_as_zero(a.fill_value):
                raise ValueError(f"block_array(): block [{i}][{j}] has fill value {a.fill_value!r}; "
                                 "blocks must be zero-filled (None blocks are zero)")
            for sizes, k, s, what in ((heights, i, a.shape[0], "rows"), (widths, j, a.shape[1], "columns")):
                if sizes[k] is None:
                    sizes[k] = s
                elif sizes[k] != s:
                    raise ValueError(f"block_array(): block [{i}][{j}] has {s} {what}, its neighbours {sizes[k]}")
            grid[i][j] = a
            arrays.append(a)
    if any(h is None for h in heights) or any(w is None for w in widths):
        raise ValueError("block_array(): every grid row and column needs at least one block that is not None")
    dt = _result_dtype(arrays, dtype)
    r_off = np.concatenate([[0], np.cumsum(heights)])
    c_off = np.concatenate([[0], np.cumsum(widths)])
    rows, cols, vals = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, dt)]
    for i in range(nr):
        for j in range(nc):
            if grid[i][j] is not None:
                r, c, v = _triplets(grid[i][j], "block_array")
                rows.append(r + r_off[i])
                cols.append(c + c_off[j])
                vals.append(v.astype(dt))
    return _build(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                  (int(r_off[-1]), int(c_off[-1])), dt)


@routed
def block_diag(mats, format=None, dtype=None) -> BCOOArray:
    """Block-diagonal array of 2-D blocks (scipy's ``block_diag``).

    Parameters
    ----------
    mats : sequence of 2-D arrays (1-D or scalar inputs are read as one row, as scipy)
        Zero-filled (the off-diagonal blocks are zero).
    format : None or "bcoo"
    dtype : dtype, optional

    Returns
    -------
    BCOOArray of shape ``(sum of rows, sum of columns)``, fill value 0.

    Raises
    ------
    ValueError
        If a block has a non-zero fill value or more than 2 dimensions.
    """
    _check_format(format, "block_diag")
    arrays = []
    for i, b in enumerate(mats):
        a = _operand(b, f"block_diag(mats[{i}])")
        if a.ndim < 2:
            a = reshape(a, (1, a.size))
        if not reads_as_zero(a.fill_value):
            raise ValueError(f"block_diag(): block {i} has fill value {a.fill_value!r}; blocks must be zero-filled")
        arrays.append(a)
    if not arrays:
        raise ValueError("block_diag() needs at least one block")
    dt = _result_dtype(arrays, dtype)
    rows, cols, vals = [], [], []
    r0 = c0 = 0
    for a in arrays:
        r, c, v = _triplets(a, "block_diag")
        rows.append(r + r0)
        cols.append(c + c0)
        vals.append(v.astype(dt))
        r0 += a.shape[0]
        c0 += a.shape[1]
    return _build(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (r0, c0), dt)


@routed
def kron(A, B, format=None) -> BCOOArray:
    """Kronecker product of two zero-filled arrays (scipy's ``kron``; NumPy's ``kron`` for n-D operands).

    For 2-D operands, entry ``(i*p + k, j*q + l)`` of the result is
    ``A[i, j] * B[k, l]`` for ``B`` of shape ``(p, q)``. Operands of any
    number of dimensions follow ``numpy.kron``: the one with fewer
    dimensions gets leading size-1 dimensions, and along each axis the
    index is ``i * B.shape[axis] + k``. Stored entries are the products of
    stored entries (explicit zeros kept, as scipy).

    Returns
    -------
    BCOOArray of shape ``A.shape * B.shape`` (element-wise, after the
    padding), fill value 0, promoted dtype.

    Raises
    ------
    ValueError
        If an operand has a non-zero fill value (subtract it first, or
        densify: ``numpy.kron(A.toarray(), B.toarray())``).
    """
    _check_format(format, "kron")
    a = _operand(A, "kron(A)")
    b = _operand(B, "kron(B)")
    for nm, x in (("A", a), ("B", b)):
        if not reads_as_zero(x.fill_value):
            raise ValueError(f"kron(): {nm} has fill value {x.fill_value!r}; kron needs zero-filled operands: "
                             f"subtract the fill value first, or densify with numpy.kron(A.toarray(), B.toarray())")
    dt = _result_dtype([a, b], None)
    if a.ndim == 2 and b.ndim == 2:
        ra, ca, va = _triplets(a, "kron")
        rb, cb, vb = _triplets(b, "kron")
        p, q = b.shape
        rows = (ra[:, None] * p + rb[None, :]).ravel()
        cols = (ca[:, None] * q + cb[None, :]).ravel()
        vals = (va.astype(dt)[:, None] * vb.astype(dt)[None, :]).ravel()
        return _build(rows, cols, vals, (a.shape[0] * p, a.shape[1] * q), dt)
    nd = max(a.ndim, b.ndim)
    shapes, parts = [], []
    for x in (a, b):
        vals, coords = coo_triplets(x, "kron()")
        pad = nd - x.ndim
        shapes.append((1,) * pad + tuple(x.shape))
        coords = np.concatenate([np.zeros((pad, vals.shape[0]), np.int64), np.asarray(coords, np.int64)]) \
            if pad else np.asarray(coords, np.int64).reshape(nd, vals.shape[0])
        parts.append((np.asarray(vals).astype(dt), coords))
    (va, ca), (vb, cb) = parts
    shape = tuple(sa * sb for sa, sb in zip(*shapes))
    coords = [(ca[k][:, None] * shapes[1][k] + cb[k][None, :]).ravel() for k in range(nd)]
    vals = (va[:, None] * vb[None, :]).ravel()
    idt = index_dtype_for(shape)
    order = np.lexsort(coords[::-1]) if nd else np.arange(vals.shape[0])
    idx = np.stack([c[order] for c in coords], axis=1).astype(idt) if nd else np.zeros((vals.shape[0], 0), idt)
    return BCOOArray._from_buffers(adopt(np.ascontiguousarray(vals[order])), adopt(np.ascontiguousarray(idx)),
                                   shape, n_batch=0, n_dense=0, fill_value=np.zeros((), dt)[()],
                                   indices_sorted=True, unique_indices=True)


@routed
def kronsum(A, B, format=None) -> BCOOArray:
    """Kronecker sum ``kron(I_n, A) + kron(B, I_m)`` of square ``A`` (m x m) and ``B`` (n x n) (scipy's ``kronsum``).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not square, or has a non-zero fill value.
    """
    _check_format(format, "kronsum")
    a = _operand(A, "kronsum(A)")
    b = _operand(B, "kronsum(B)")
    for nm, x in (("A", a), ("B", b)):
        if x.ndim != 2 or x.shape[0] != x.shape[1]:
            raise ValueError(f"kronsum(): {nm} must be square, got shape {x.shape}")
    dt = _result_dtype([a, b], None)
    left = kron(eye_array(b.shape[0], dtype=dt), a)
    right = kron(b, eye_array(a.shape[0], dtype=dt))
    r1, c1, v1 = _triplets(left, "kronsum")
    r2, c2, v2 = _triplets(right, "kronsum")
    out = _build(np.concatenate([r1, r2]), np.concatenate([c1, c2]), np.concatenate([v1, v2]), left.shape, dt)
    return out._replace(indices_sorted=False, unique_indices=False).sum_duplicates()


@routed
def find(A) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices, column indices and values of the non-zero entries (scipy's ``find``).

    Duplicates are summed and explicit zeros left out; row-major order, as
    scipy (``coo_array.sum_duplicates`` order).

    Returns
    -------
    (rows, cols, values) : NumPy arrays (int64, int64, A's dtype)

    Raises
    ------
    ValueError
        If ``A`` is not 2-D or has a non-zero fill value (every unstored entry
        would be non-zero).
    """
    a = _operand(A, "find(A)")
    if not reads_as_zero(a.fill_value):
        raise ValueError(f"find(): A has fill value {a.fill_value!r}, so every entry is non-zero; use np.nonzero")
    r, c, v = _triplets(a, "find")
    keep = v != 0
    return r[keep], c[keep], v[keep]


@routed
def issparse(x) -> bool:
    """Whether ``x`` is a sparse array: a BCOOArray, or a scipy.sparse, pydata-sparse or jax.experimental.sparse object.

    Like scipy's ``issparse``, this never imports a library that is not
    already loaded.
    """
    import sys

    if isinstance(x, BCOOArray):
        return True
    sp = sys.modules.get("scipy.sparse")
    if sp is not None and sp.issparse(x):
        return True
    pyd = sys.modules.get("sparse")
    if pyd is not None and isinstance(x, getattr(pyd, "SparseArray", ())):
        return True
    js = sys.modules.get("jax.experimental.sparse")
    return js is not None and isinstance(x, getattr(js, "JAXSparse", ()))
