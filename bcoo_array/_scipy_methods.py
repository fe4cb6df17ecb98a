"""The scipy.sparse drop-in surface of BCOOArray (methods scipy user code calls),
kept apart from the array API operators of ``._array_object``.

The methods follow ``scipy.sparse.sparray`` (SciPy >= 1.11,
https://docs.scipy.org/doc/scipy/reference/sparse.html) where sparray and
spmatrix differ: ``*`` is elementwise, ``sum(axis=0)`` returns a 1-D array.
Like scipy, reductions and products with a dense NumPy operand return NumPy
arrays (or NumPy scalars), so they run eagerly; the array API functions of
the namespace (``bcoo_array.sum`` ...) stay traceable and return BCOOArrays.
``eliminate_zeros`` and ``setdiag`` change the array in place, as in scipy.

The LinearOperator protocol (``matvec``, ``rmatvec``, ``matmat``,
``rmatmat``, ``shape``, ``dtype``) makes
``scipy.sparse.linalg.aslinearoperator(A)`` and therefore scipy's iterative
solvers accept a BCOOArray; the products run as one compiled JAX function
per operand layout.
"""

from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_base import _sequence_operand
from ._fill import reads_as_zero, zero_fill
from ._foreign import foreign_kind
from ._kernels.cache import PLANS
from ._kernels.host import adopt, host_buffers
from ._kernels.dimensions import coo_triplets
from ._kernels.csr import csr_arrays
from ._kernels.matmul import host_spmm
from ._kernels.native import host_csr_diagonal
from ._kernels.reduce import arg_extreme_np
from ._shapes import index_dtype_for, prod, valid_rows
from ._namespace import namespace


def _has_nonfinite(v) -> bool:
    """Whether a concrete scalar or dense operand holds ``inf`` or ``nan``; False for a traced or a sparse one
    (scipy multiplies two sparse operands over the union of their patterns, IEEE at every stored position)."""
    if isinstance(v, jax.core.Tracer) or hasattr(v, "_host_buffers") or foreign_kind(v) is not None:
        return False
    try:
        arr = np.asarray(v)
    except Exception:  # anything NumPy cannot read: the product has raised already
        return False
    return arr.dtype.kind in "fc" and not np.isfinite(arr).all()


def _on_pattern(out, pattern):
    """``out``'s values at the stored positions of ``pattern`` (zero-filled, ``out``'s shape), 0 elsewhere:
    scipy's ``multiply`` of a sparse operand (its unstored entries are structural zeros). Eager only."""
    xp = namespace()
    shape = tuple(out.shape)
    if out.size == 0 or prod(shape) >= 2**62:
        return out

    def buffers(a):
        a = xp.update_layout(a, 0, 0)._canonical()
        host = a._host_buffers()
        data, idx = (np.asarray(a.data), np.asarray(a.indices)) if host is None else host
        ok = valid_rows(idx, shape)
        return data[ok], idx[ok], np.ravel_multi_index(tuple(idx[ok].T.astype(np.int64)), shape)

    _, p_idx, lin_p = buffers(pattern)
    o_data, _, lin_o = buffers(out)
    fill = np.asarray(out.fill_value, out.dtype)
    if lin_o.size:
        pos = np.minimum(np.searchsorted(lin_o, lin_p), lin_o.size - 1)
        vals = np.where(lin_o[pos] == lin_p, o_data[pos], fill)
    else:
        vals = np.broadcast_to(fill, lin_p.shape)
    return type(out)._from_buffers(np.array(vals, out.dtype), np.array(p_idx, order="C"), shape, n_batch=0,
                                   n_dense=0, fill_value=np.zeros((), out.dtype)[()], indices_sorted=True,
                                   unique_indices=True)


def _shares_indices(a, b) -> bool:
    """Whether BCOOArrays ``a`` and ``b`` hold the same index buffer (so the same pattern and layout)."""
    mine = (a._indices, a._hindices)
    return a.shape == b.shape and any(i is not None and (i is b._indices or i is b._hindices) for i in mine)


def _host(x):
    """NumPy value (a fresh, writable array, as scipy returns) of a jax array; the jax array while tracing."""
    if isinstance(x, jax.core.Tracer):
        return x
    out = np.array(x)
    return out[()] if out.ndim == 0 else out


class CSRBuffers(NamedTuple):
    """The compressed buffers of a 2-D array ([`BCOOArray.to_csr_buffers`][bcoo_array.BCOOArray.to_csr_buffers]).

    Attributes
    ----------
    data : numpy.ndarray, shape ``(nnz,)``
        Stored values, row by row (column by column for "csc").
    indices : numpy.ndarray, shape ``(nnz,)``
        Column numbers (row numbers for "csc"), sorted within each row.
    indptr : numpy.ndarray, shape ``(n + 1,)``
        Row ``i``'s entries are ``data[indptr[i]:indptr[i + 1]]``.
    shape : tuple of int
        The matrix shape.
    format : str
        "csr" or "csc".
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple
    format: str


@functools.partial(jax.jit, static_argnames=("adjoint",))
def _apply(a, v, adjoint: bool = False):
    """``a @ v`` (or ``a^H @ v``) for a 2-D BCOOArray ``a`` and a dense ``v``, as a dense jax array."""
    xp = namespace()
    if adjoint:
        a = xp.matrix_transpose(xp.conj(a) if a.dtype.kind == "c" else a)
    out = xp.matmul(a, v)  # a jax.Array: v is one (the mixed-type rule)
    return out.todense() if hasattr(out, "todense") else out


def _by_line(line, *arrays):
    """Canonical (row-major) stored entries regrouped by ``line`` (their rows, or columns): ``(line, *arrays)``
    in a stable order of ``line`` (within a line, the canonical order: the other index ascending), and the
    first position of each line."""
    order = np.argsort(line, kind="stable")
    line = line[order]
    return (line, *(a[order] for a in arrays)), np.flatnonzero(np.r_[True, line[1:] != line[:-1]])


def _explicit_argext(op: str, ax, rows, cols, vals, m: int, n: int):
    """scipy's ``argmax``/``argmin`` with ``explicit=True`` on a 2-D array's canonical stored entries (row-major
    ``rows``, ``cols``, ``vals``): ``ax`` None, the extreme's index among the stored values (scipy returns its
    ``data`` position); 0 or 1, per column / row the other index of its first extreme stored value (NaN
    first, as ``numpy.argmax``), 0 where it stores none (an int64 array)."""
    name = f"arg{op}"
    reduce = np.maximum if op == "max" else np.minimum
    if ax is None:
        if m * n == 0:
            raise ValueError(f"{name}() of an empty array")
        if vals.size == 0:
            raise ValueError(f"{name}(explicit=True) of an array that stores no values (scipy's 'zero matrix')")
        return int(np.argmax(vals) if op == "max" else np.argmin(vals))
    line, other, size = (cols, rows, n) if ax == 0 else (rows, cols, m)
    out = np.zeros(size, np.int64)
    if vals.size == 0:
        return out
    (line, other, vals), starts = _by_line(line, other, vals)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(vals)]))
    extreme = reduce.reduceat(vals, starts)[seg]  # (NaN where the line holds one)
    hit = np.flatnonzero((vals == extreme) | (np.isnan(vals) & np.isnan(extreme))
                         if vals.dtype.kind in "fc" else vals == extreme)
    first = hit[np.r_[True, seg[hit][1:] != seg[hit][:-1]]]
    out[line[first]] = other[first]
    return out


def _check_2d(x, name):
    if x.ndim != 2:
        raise ValueError(f"{name}() follows scipy.sparse and needs a 2-D array; this one is {x.ndim}-D")


#: NumPy dtypes JAX holds only with its x64 mode on (a NumPy operand of them gives a NumPy result on the host).
_WIDE = (np.float64, np.complex128, np.int64, np.uint64)


def _as_dense_operand(other, name, *, host_float64: bool = False):
    """``other`` as a dense operand: a JAX array stays one, anything else becomes a NumPy array.

    NumPy stays on the host (so that the host kernel can take it without a
    transfer); a 64-bit dtype with x64 off raises instead of downcasting,
    except, with ``host_float64``, a 64-bit NumPy operand (``_WIDE``) of a
    product that ``_product`` computes on the host with NumPy's promotion.
    """
    if isinstance(other, jax.Array) or isinstance(other, jax.core.Tracer):
        return other
    arr = np.asarray(other)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"{name}() needs a numeric operand, got dtype {arr.dtype}")
    if host_float64 and arr.dtype in _WIDE:
        return arr
    dt = _dtypes.canonicalize_dtype(arr.dtype, argname=f"{name}() operand dtype")
    return arr.astype(dt, copy=False)


def _product(a, v, adjoint: bool = False):
    """``a @ v`` (or ``a^H @ v``) as a NumPy array for a 2-D BCOOArray ``a`` and a dense ``v``.

    Concrete CPU operands of a zero-filled all-sparse matrix run the native
    host kernel (``._kernels.matmul.host_spmm``: no XLA dispatch, no
    transfer), as scipy's own products do; everything else runs one compiled
    JAX function (``_apply``).
    """
    if not adjoint and type(v) is np.ndarray:
        bound = a._bound_matvec()  # the loop bound to ``a`` once (BCOOArray._bound_matvec)
        if bound is not None and bound.serves(v):
            return bound(v)
        if not _dtypes.x64_enabled() and v.dtype in _WIDE:
            # scipy's float32 @ float64 is float64: ``matmul`` computes it on the host (a NumPy
            # result needs no 64-bit JAX array) or raises where it cannot; never a downcast.
            out = namespace().matmul(a, v)
            if out.dtype != np.result_type(a.dtype, v.dtype):  # defensive: the rule above must hold
                raise AssertionError(f"{a.dtype} @ {v.dtype} gave {out.dtype}")
            return out
    if adjoint and type(v) is np.ndarray and a.ndim == 2:
        # a^H @ v = conj(a.T @ conj(v)): the transpose's forward product, with its native kernel (its plan
        # cached on the shared index buffer) and NumPy's promotion of a 64-bit operand with x64 off (scipy's
        # rmatvec of float64: lsqr, lsmr). A scatter per entry over a's own rows took 4.8 ms against scipy's
        # 1.2 for S.T @ v (10^5 x 10^5, 10^6 float32 entries; the transpose's product 1.25).
        if a.dtype.kind == "c" or v.dtype.kind == "c":
            return np.conj(_product(a.T, np.conj(v)))
        return _product(a.T, v)
    if (a.n_batch == 0 and a.n_dense == 0 and _dtypes.result_type(a.dtype, np.dtype(v.dtype)) == a.dtype
            and zero_fill(a.fill_value)):
        (data, indices), shape = a._buffers(), a.shape
        if adjoint:
            host = host_buffers(data, indices)
            if host is not None:
                data, indices = (np.conj(host[0]) if a.dtype.kind == "c" else host[0]), host[1][:, ::-1]
                shape = shape[::-1]
        out = host_spmm(data, indices, shape, v.astype(a.dtype, copy=False)) \
            if (not adjoint or isinstance(indices, np.ndarray)) else None
        if out is not None:
            return out
    return _host(_apply(a, jnp.asarray(v), adjoint=adjoint))


class ScipyMethodsMixin:
    """Methods with scipy.sparse names and meanings, mixed into BCOOArray."""

    __slots__ = ()

    # -- attributes -----------------------------------------------------------------

    @property
    def format(self) -> str:
        """The storage format, ``"bcoo"`` (scipy's ``format`` attribute)."""
        return "bcoo"

    @property
    def indptr(self):
        """Not stored: a BCOOArray keeps COO indices. Raises AttributeError naming ``to_csr_buffers``.

        CSR-minded code (``A.indptr``, ``A.indices`` as columns) gets the
        buffers under scipy's names from
        [`to_csr_buffers`][bcoo_array.BCOOArray.to_csr_buffers], or a scipy
        matrix from ``A.tocsr()``; ``hasattr(A, "indptr")`` stays False.
        """
        raise AttributeError(
            "a BCOOArray stores COO indices and has no 'indptr'; for scipy's CSR buffers call "
            "A.to_csr_buffers() (read-only data, indices as columns, indptr) or convert with A.tocsr()")

    @property
    def nnz(self) -> int:
        """Number of stored values, explicit zeros and duplicates included, padding excluded.

        As scipy's ``nnz``. Each stored entry counts ``prod(dense dims)``
        values, each batch element its own entries. An array whose fill
        value is not zero (scipy has none) counts its non-zero elements,
        the unstored ones included, as [`count_nonzero`][bcoo_array.BCOOArray.count_nonzero]:
        what a scipy array of the same values stores. So ``(A < t).nnz`` is
        the number of matches, as in scipy, where the comparison's result
        stores its few ``False`` entries and leaves ``True`` unstored.

        Raises
        ------
        ValueError
            While tracing (the count depends on index values).
        """
        if not self._concrete_indices():
            raise ValueError("nnz depends on index values; it is not available under jax.jit / vmap")
        if not reads_as_zero(self.fill_value):
            return int(self.count_nonzero())
        idx = np.asarray(self._buffers()[1])
        valid = valid_rows(idx, self.shape[self.n_batch:self.n_batch + self.n_sparse])
        batch = prod(self.shape[:self.n_batch]) // max(prod(idx.shape[:-2]), 1) if self.n_batch else 1
        return int(valid.sum()) * batch * prod(self.shape[self.ndim - self.n_dense:])

    @property
    def has_canonical_format(self) -> bool:
        """Whether indices are sorted and free of duplicates (scipy's ``has_canonical_format``)."""
        return bool(self.indices_sorted and self.unique_indices)

    # -- conversions ------------------------------------------------------------------

    def toarray(self, order=None, out=None) -> np.ndarray:
        """Dense ``numpy.ndarray`` of the array (scipy's ``toarray``).

        Parameters
        ----------
        order : {"C", "F", None}
            Memory layout of the result.
        out : numpy.ndarray, optional
            Written in place and returned; must have this shape and dtype.

        Raises
        ------
        ValueError
            If ``out`` has another shape or dtype.
        TypeError
            Under ``jax.jit`` (traced buffers): a NumPy result needs concrete
            values; use ``todense()``, a JAX array, there.
        """
        d = self._dense()  # NumPy from the host engine (fresh: no hand-off to JAX and back), else a jax.Array
        if isinstance(d, jax.core.Tracer):
            raise TypeError("toarray() returns a NumPy array, which needs concrete values, and this array is traced "
                            "(under jax.jit, grad or vmap); use A.todense() there, a JAX array, or call toarray() "
                            "outside the transformation")
        # a fresh writable array, as scipy's
        d = np.asarray(d, order=order or "C") if isinstance(d, np.ndarray) else np.array(d, order=order or "C")
        if out is not None:
            if out.shape != d.shape or out.dtype != d.dtype:
                raise ValueError(f"out must have shape {d.shape} and dtype {d.dtype}; got {out.shape}, {out.dtype}")
            out[...] = d
            return out
        return d

    def to_scipy(self, format: str = "coo", *, materialize_fill: bool = False):
        """scipy.sparse array of ``format``; see [`bcoo_array.to_scipy`][]."""
        return namespace().to_scipy(self, format, materialize_fill=materialize_fill)

    def tocoo(self, copy: bool = False):
        """``scipy.sparse.coo_array`` of the array (scipy's ``tocoo``; fill value must be 0)."""
        return self.to_scipy("coo")

    def tocsr(self, copy: bool = False):
        """``scipy.sparse.csr_array`` of the array (scipy's ``tocsr``; fill value must be 0)."""
        return self.to_scipy("csr")

    def tocsc(self, copy: bool = False):
        """``scipy.sparse.csc_array`` of the array (scipy's ``tocsc``; fill value must be 0)."""
        return self.to_scipy("csc")

    def to_csr_buffers(self, format: str = "csr") -> CSRBuffers:
        """The canonical CSR (or CSC) buffers of a 2-D array, under scipy's names, read-only.

        For code written against ``scipy.sparse.csr_array``'s attributes
        (``A.indptr``, ``A.indices`` as column numbers, ``A.data``), which
        on a BCOOArray name the BCOO buffers instead (``A.indices`` is the
        ``(nse, n_sparse)`` coordinate array).

        Parameters
        ----------
        format : {"csr", "csc"}
            Compressed rows (``indices`` are column numbers, ``indptr`` has
            ``shape[0] + 1`` entries) or compressed columns (``indices`` are
            row numbers, ``indptr`` has ``shape[1] + 1`` entries).

        Returns
        -------
        CSRBuffers
            Named tuple ``(data, indices, indptr, shape, format)``: NumPy
            arrays of shapes ``(nnz,)``, ``(nnz,)`` and ``(n + 1,)`` in
            canonical form (sorted within each row or column, duplicates
            summed, explicit zeros kept), ``data`` of the array's dtype,
            ``indices`` / ``indptr`` of scipy's index dtype (int32 when it
            fits). The arrays are read-only: the buffers of this array are
            immutable, so a write would change nothing.

        Raises
        ------
        ValueError
            If the array is not 2-D, ``format`` is not "csr" or "csc", the
            fill value is not 0 (CSR has no fill value: subtract it first,
            ``A - A.fill_value``), or under ``jax.jit`` (the buffers need
            concrete values).

        Examples
        --------
        >>> import numpy as np, bcoo_array as xp
        >>> A = xp.asarray(np.array([[0, 1, 0], [2, 0, 3]], dtype=np.int32))
        >>> b = A.to_csr_buffers()
        >>> b.indptr.tolist(), b.indices.tolist(), b.data.tolist()
        ([0, 1, 3], [1, 0, 2], [1, 2, 3])
        """
        if format not in ("csr", "csc"):
            raise ValueError(f"to_csr_buffers(): format={format!r} must be 'csr' or 'csc'")
        if self.ndim != 2:
            raise ValueError(f"to_csr_buffers() needs a 2-D array, got shape {self.shape}; reshape it first")
        S = self.to_scipy(format)
        S.sum_duplicates()
        arrays = []
        for a in (S.data, S.indices, S.indptr):
            a = np.asarray(a)
            a.flags.writeable = False
            arrays.append(a)
        return CSRBuffers(*arrays, tuple(int(n) for n in S.shape), format)

    def asformat(self, format: str, copy: bool = False):
        """scipy.sparse array of ``format`` (``"bcoo"`` returns ``self``), as scipy's ``asformat``."""
        if format in (None, "bcoo"):
            return self._replace() if copy else self
        return self.to_scipy(format)

    def to_pydata_sparse(self, format: str = "coo"):
        """pydata-sparse array (``"coo"``, ``"gcxs"`` or ``"dok"``); see [`bcoo_array.to_pydata_sparse`][]."""
        return namespace().to_pydata_sparse(self, format)

    def to_jax_sparse(self, format: str = "bcoo"):
        """jax.experimental.sparse ``BCOO`` (no copy) or ``BCSR``; see [`bcoo_array.to_jax_sparse`][]."""
        return namespace().to_jax_sparse(self, format)

    def tobsr(self, blocksize=None, copy: bool = False):
        """``scipy.sparse.bsr_array`` of the array (scipy's ``tobsr``; fill value must be 0)."""
        return self.to_scipy("coo").tobsr(blocksize=blocksize)

    def todia(self, copy: bool = False):
        """``scipy.sparse.dia_array`` of the array (scipy's ``todia``; fill value must be 0)."""
        return self.to_scipy("dia")

    def todok(self, copy: bool = False):
        """``scipy.sparse.dok_array`` of the array (scipy's ``todok``; fill value must be 0)."""
        return self.to_scipy("dok")

    def tolil(self, copy: bool = False):
        """``scipy.sparse.lil_array`` of the array (scipy's ``tolil``; fill value must be 0)."""
        return self.to_scipy("lil")

    @property
    def has_sorted_indices(self) -> bool:
        """Whether the indices are known to be sorted (scipy's ``has_sorted_indices``)."""
        return bool(self.indices_sorted)

    def sorted_indices(self):
        """A new array with sorted (and summed) indices (scipy's ``sorted_indices``); ``self`` is unchanged."""
        return self.sum_duplicates()

    @property
    def real(self):
        """Real part (scipy's ``real`` attribute; [`bcoo_array.real`][])."""
        return namespace().real(self)

    @property
    def imag(self):
        """Imaginary part (scipy's ``imag`` attribute; [`bcoo_array.imag`][])."""
        return namespace().imag(self)

    def conj(self, copy: bool = True):
        """Complex conjugate (scipy's ``conj``; [`bcoo_array.conj`][])."""
        return namespace().conj(self)

    def conjugate(self, copy: bool = True):
        """Complex conjugate (scipy's ``conjugate``; [`bcoo_array.conj`][])."""
        return namespace().conj(self)

    def reshape(self, *shape, order: str = "C", copy: bool = False):
        """Array of a new shape with the same entries in row-major order (scipy's ``reshape``).

        Raises
        ------
        ValueError
            For ``order`` other than ``"C"`` or a shape of another size.
        """
        if order != "C":
            raise ValueError(f"reshape(order={order!r}): only row-major order 'C' is supported")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return namespace().reshape(self, shape)

    def copy(self):
        """A new BCOOArray with the same buffers (JAX buffers are immutable, so nothing is shared mutably)."""
        return self._replace()

    def transpose(self, axes=None, copy: bool = False):
        """Reverse (or permute by ``axes``) the dimensions, as scipy's / NumPy's ``transpose``."""
        axes = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        return namespace().permute_dims(self, axes)

    def getnnz(self, axis=None):
        """Stored values (explicit zeros included) in total or per row / column (scipy's ``getnnz``); where
        the fill value is not zero, the non-zero elements, as [`nnz`][bcoo_array.BCOOArray.nnz]."""
        if axis is None:
            return self.nnz
        _check_2d(self, "getnnz")
        if not reads_as_zero(self.fill_value):
            return self.count_nonzero(axis=axis)
        rows, cols, _ = self._host_triplets("getnnz")
        ax = axis + 2 if axis < 0 else axis
        if ax not in (0, 1):
            raise ValueError(f"axis={axis} is out of range for a 2-D array")
        return np.bincount(cols if ax == 0 else rows, minlength=self.shape[1 - ax]).astype(np.int64)

    # -- products ---------------------------------------------------------------------

    def matvec(self, x):
        """``A @ x`` for a dense vector (LinearOperator protocol).

        Parameters
        ----------
        x : array_like, shape ``(n,)`` or ``(n, 1)``
            NumPy or JAX; its dtype promotes with ``A.dtype`` (array API rules).

        Returns
        -------
        numpy.ndarray, shape ``(m,)`` or ``(m, 1)``
            A fresh writable array (a jax array while tracing).

        Raises
        ------
        ValueError
            For a non-2-D ``A``, a wrong shape, or a 64-bit ``x`` with x64 off.
        TypeError
            For a non-numeric ``x``.
        """
        _check_2d(self, "matvec")
        v = _as_dense_operand(x, "matvec", host_float64=True)
        if v.shape not in ((self.shape[1],), (self.shape[1], 1)):
            raise ValueError(f"matvec(): x has shape {v.shape}; expected ({self.shape[1]},) or ({self.shape[1]}, 1)")
        return _product(self, v)

    def rmatvec(self, x):
        """``A^H @ x`` (conjugate transpose) for a dense vector (LinearOperator protocol).

        ``x`` has shape ``(m,)`` or ``(m, 1)``; the result ``(n,)`` or
        ``(n, 1)``. Errors as [`matvec`][bcoo_array.BCOOArray.matvec].
        """
        _check_2d(self, "rmatvec")
        v = _as_dense_operand(x, "rmatvec", host_float64=True)
        if v.shape not in ((self.shape[0],), (self.shape[0], 1)):
            raise ValueError(f"rmatvec(): x has shape {v.shape}; expected ({self.shape[0]},) or ({self.shape[0]}, 1)")
        return _product(self, v, adjoint=True)

    def matmat(self, X):
        """``A @ X`` for a dense matrix (LinearOperator protocol).

        ``X`` has shape ``(n, k)``; the result is a NumPy array ``(m, k)``.
        Errors as [`matvec`][bcoo_array.BCOOArray.matvec].
        """
        _check_2d(self, "matmat")
        v = _as_dense_operand(X, "matmat", host_float64=True)
        if v.ndim != 2 or v.shape[0] != self.shape[1]:
            raise ValueError(f"matmat(): X has shape {v.shape}; expected ({self.shape[1]}, k)")
        return _product(self, v)

    def rmatmat(self, X):
        """``A^H @ X`` for a dense matrix (LinearOperator protocol).

        ``X`` has shape ``(m, k)``; the result is a NumPy array ``(n, k)``.
        Errors as [`matvec`][bcoo_array.BCOOArray.matvec].
        """
        _check_2d(self, "rmatmat")
        v = _as_dense_operand(X, "rmatmat", host_float64=True)
        if v.ndim != 2 or v.shape[0] != self.shape[0]:
            raise ValueError(f"rmatmat(): X has shape {v.shape}; expected ({self.shape[0]}, k)")
        return _product(self, v, adjoint=True)

    def dot(self, other):
        """Matrix product as scipy's ``dot``.

        Parameters
        ----------
        other : scalar, array_like, BCOOArray or foreign sparse array
            Shape ``(n,)`` or ``(n, k)`` for a 2-D ``A`` of shape ``(m, n)``.

        Returns
        -------
        numpy.ndarray or BCOOArray
            A dense operand (NumPy array, list, JAX array) gives a dense
            NumPy result ``(m,)`` / ``(m, k)``, as in scipy; a sparse operand
            (BCOOArray, scipy.sparse, pydata-sparse, jax sparse) gives a
            BCOOArray; a scalar multiplies elementwise.

        Raises
        ------
        ValueError
            For mismatched inner dimensions.
        """
        matmul = namespace().matmul
        if isinstance(other, type(self)) or foreign_kind(other) is not None:
            return matmul(self, other)
        if np.ndim(other) == 0:
            return namespace().multiply(self, other)
        v = _as_dense_operand(other, "dot", host_float64=True)
        if self.ndim == 2 and v.ndim in (1, 2):
            if v.shape[0] != self.shape[1]:
                raise ValueError(f"dot(): dimension mismatch, {self.shape} @ {v.shape}")
            return _product(self, v)
        out = matmul(self, v)  # dense v: a NumPy or JAX result (the mixed-type rule)
        return _host(out.todense() if hasattr(out, "todense") else out)

    def multiply(self, other):
        """Elementwise product with broadcasting (scipy's ``multiply``).

        ``other`` may be a scalar, a dense array, a BCOOArray or a foreign
        sparse array. Returns a BCOOArray of the broadcast shape and promoted
        dtype ([`bcoo_array.multiply`][]: sparse wherever the fill-value
        rule allows). Raises ValueError for shapes that do not broadcast.

        As in scipy, an unstored entry of a zero-filled ``self`` is a
        structural zero: the product is 0 there even where ``other`` holds
        ``inf`` or ``nan`` (``A.multiply(1 / row_sums[:, None])`` with empty
        rows stays sparse, with zero rows), while stored entries follow IEEE
        arithmetic. The array API's ``bcoo_array.multiply`` (and ``*``)
        multiplies every position instead (``0 * inf`` is ``nan``), as NumPy
        does. With a sparse ``other`` both give scipy's result (the union of
        the patterns, IEEE at every stored position). A traced ``other``
        (under ``jax.jit``) is taken as finite.
        """
        xp = namespace()
        other = _sequence_operand(other)
        out = xp.multiply(self, other)
        if (not isinstance(out, type(self)) or not zero_fill(self.fill_value) or out.ndim == 0
                or not self._concrete() or not out._concrete() or not _has_nonfinite(other)):
            return out
        return _on_pattern(out, xp.broadcast_to(self, out.shape))

    def maximum(self, other):
        """Elementwise maximum with a scalar, dense or sparse array (scipy's ``maximum``).

        Returns a BCOOArray ([`bcoo_array.maximum`][], fill value
        ``max(fill, other's fill)``). Raises ValueError for shapes that do not broadcast.
        """
        return namespace().maximum(self, _sequence_operand(other))

    def minimum(self, other):
        """Elementwise minimum with a scalar, dense or sparse array (scipy's ``minimum``).

        Returns a BCOOArray ([`bcoo_array.minimum`][]). Raises ValueError
        for shapes that do not broadcast.
        """
        return namespace().minimum(self, _sequence_operand(other))

    def power(self, n, dtype=None):
        """Elementwise power ``A ** n`` (scipy's ``power``).

        As scipy's, the power applies to the stored entries only (duplicates
        summed first): with a zero fill value the unstored entries stay 0.
        ``A.power(-1)`` inverts the stored values and stays sparse (fill
        value 0), where the array API's ``A ** -1`` ([`bcoo_array.pow`][])
        gives ``0 ** -1``, fill value ``inf``. A stored zero is a stored
        value: ``power(-1)`` makes it ``inf``, as in scipy.

        With a non-zero fill value (``-0.0`` included) the unstored entries
        are not scipy's structural zeros but entries holding that value, so
        they are powered too: the result is ``A ** n``, fill value
        ``fill ** n`` (as [`multiply`][bcoo_array.BCOOArray.multiply] keeps
        scipy's structural zeros for a zero fill value only).

        Parameters
        ----------
        n : scalar
            The exponent. An array exponent (which scipy refuses) broadcasts
            as in [`bcoo_array.pow`][] and, for a zero-filled ``A``, applies
            at ``A``'s stored positions only (eagerly).
        dtype : dtype, optional
            Cast the values to this dtype first, as scipy does.

        Returns
        -------
        BCOOArray
            For a zero-filled ``A``: fill value 0 and ``A``'s pattern
            (canonical form), as scipy's result.

        Raises
        ------
        NotImplementedError
            For ``n == 0`` on a zero-filled array, as scipy (it would make
            every entry 1); use ``bcoo_array.pow`` for the fill-value result.
        TypeError
            For an integer array and a negative integer ``n`` (as NumPy;
            scipy raises ValueError); cast to a floating dtype first.
        ValueError
            For a zero-filled ``A`` and an exponent traced under ``jax.jit``
            (a Python or NumPy scalar ``n`` is static and works under ``jit``).
        """
        xp = namespace()
        src = self if dtype is None else self.astype(dtype)
        if not zero_fill(src.fill_value):  # every unstored entry holds a value, powered like the stored ones
            return xp.pow(src, n)
        if not isinstance(n, jax.core.Tracer) and np.ndim(n) == 0 and n == 0:
            raise NotImplementedError("zero power is not supported as it would densify the matrix (as scipy); "
                                      "use bcoo_array.pow(A, 0) for an array with fill value 1")
        src = src._canonical()  # scipy powers the summed duplicates
        out = xp.pow(src, n)
        if _shares_indices(out, src) or out.size == 0:
            # a concrete scalar exponent keeps src's pattern (the fill-value rule): the unstored entries
            # stay 0 where pow gives 0 ** n (inf for n < 0, nan for nan)
            return out if zero_fill(out.fill_value) else out._replace(fill_value=np.zeros((), out.dtype)[()])
        if not (src._concrete() and out._concrete()):
            raise ValueError("power(): the exponent is traced (under jax.jit), so the power cannot be kept to the "
                             "stored entries of this zero-filled array; pass n as a Python or NumPy scalar, call "
                             "power outside jax.jit, or use bcoo_array.pow(A, n) (fill value 0 ** n)")
        return _on_pattern(out, xp.broadcast_to(src, out.shape))  # an array exponent: the stored positions

    # -- reductions -------------------------------------------------------------------

    def _axis(self, axis, name):
        """The ``axis`` of a scipy reduction, for the namespace function: None (every axis), one axis in
        ``[0, ndim)``, or a sorted tuple of several (a tuple that names every axis gives None, one axis an
        int), as scipy's sparray accepts an int or a tuple of ints."""
        if axis is None:
            return None
        if isinstance(axis, tuple):
            if not axis:
                raise ValueError(f"{name}(): axis=() reduces nothing (scipy refuses it too); use A.copy(), "
                                 "or A.toarray() for a dense copy")
            try:
                axes = [operator.index(a) for a in axis]
            except TypeError:
                raise TypeError(f"{name}(): axis={axis!r} must hold integers") from None
        else:
            try:
                axes = [int(axis)]
            except TypeError:
                raise TypeError(f"{name}(): axis must be an integer or a tuple of integers, not "
                                f"{type(axis).__name__}; e.g. axis=tuple(axis)") from None
        for ax in axes:
            if not -self.ndim <= ax < self.ndim:
                raise ValueError(f"{name}(): axis={axis} is out of range for a {self.ndim}-D array")
        distinct = sorted({ax % self.ndim for ax in axes})
        if len(distinct) != len(axes):
            raise ValueError(f"{name}(): axis={axis} names an axis twice")
        if len(distinct) == self.ndim:
            return None
        return distinct[0] if len(distinct) == 1 else tuple(distinct)

    def sum(self, axis=None, dtype=None, out=None):
        """Sum over all entries (a NumPy scalar) or along ``axis`` (a 1-D NumPy array), as scipy's sparray ``sum``.

        Integer and bool sums accumulate in the default integer dtype
        (NumPy's rule); ``dtype`` overrides. ``out`` (a NumPy array of the
        result's shape) receives the result. Unstored entries count with the
        fill value.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The axes summed, as scipy's sparray: every axis (None, or a tuple
            naming them all) gives a NumPy scalar, one axis a 1-D array.
        dtype : dtype, optional
        out : numpy.ndarray, optional

        Raises
        ------
        ValueError
            For an ``axis`` outside ``[-ndim, ndim)``, an axis named twice,
            or ``axis=()``.
        TypeError
            For an ``axis`` that is not an int or a tuple of ints.
        """
        xp = namespace()

        src = self.astype(_dtypes.default_int()) if self.dtype.kind == "b" and dtype is None else self
        res = xp.sum(src, axis=self._axis(axis, "sum"), dtype=dtype)
        return _store(_host(res.todense()), out)

    def mean(self, axis=None, dtype=None, out=None):
        """Mean over all entries or along ``axis`` as a NumPy value (scipy's ``mean``).

        Integer and bool arrays are averaged in the default floating dtype,
        as scipy does. Returns a NumPy scalar when every axis is reduced
        (``axis=None`` or a tuple naming them all), else a NumPy array.

        Raises
        ------
        ValueError, TypeError
            For an ``axis`` that [`sum`][bcoo_array.BCOOArray.sum] refuses.
        """
        xp = namespace()

        src = self
        if dtype is not None:
            src = src.astype(dtype)
        elif self.dtype.kind in "biu":
            src = src.astype(_dtypes.default_float())
        res = xp.mean(src, axis=self._axis(axis, "mean"))
        return _store(_host(res.todense()), out)

    def max(self, axis=None, out=None, *, explicit: bool = False):
        """Maximum over all entries (a NumPy scalar) or along ``axis`` (a sparse 1-D BCOOArray), as scipy's ``max``.

        Unstored entries take part (they hold the fill value), as scipy's
        default ``explicit=False``; with ``explicit=True`` (2-D arrays) only
        the stored values do, and a row / column (or array) that stores none
        gives 0, as scipy. ``axis`` is an int or a tuple of ints;
        reducing every axis (a tuple naming them all, or the one axis of a
        1-D array) gives a NumPy scalar, as scipy. A reduction along axes of
        non-zero length is empty where another dimension is 0
        (``zeros((3, 0)).max(axis=0)`` has shape ``(0,)``), as scipy.

        Raises
        ------
        ValueError
            For a reduction along an axis of length 0 (no identity, as
            scipy), an ``axis`` out of range, named twice or ``()``, ``out``,
            or ``explicit=True`` for an array that is not 2-D.
        """
        return self._extreme("max", axis, out, explicit)

    def min(self, axis=None, out=None, *, explicit: bool = False):
        """Minimum over all entries (a NumPy scalar) or along ``axis`` (a sparse 1-D BCOOArray), as scipy's ``min``.

        Arguments, result and errors as [`max`][bcoo_array.BCOOArray.max].
        """
        return self._extreme("min", axis, out, explicit)

    def _extreme(self, op, axis, out, explicit):
        if out is not None:
            raise ValueError(f"{op}(): out= is not supported (as in scipy's sparse arrays)")
        ax = self._axis(axis, op)
        reduced = range(self.ndim) if ax is None else (ax,) if isinstance(ax, int) else ax
        empty = [k for k in reduced if self.shape[k] == 0]
        if empty:
            raise ValueError(f"{op}(): zero-size array to reduction operation: axis {empty[0]} of shape "
                             f"{self.shape} has length 0, and {op} has no identity")
        if explicit:
            return self._explicit_extreme(op, tuple(reduced))
        res = getattr(namespace(), op)(self, axis=ax)
        return _host(res.todense()) if res.ndim == 0 else res

    def _explicit_extreme(self, op, reduced):
        """scipy's ``max``/``min`` with ``explicit=True``: over the stored values only (duplicates summed,
        explicit zeros included), 0 for the whole array or a row / column that stores none; NaN
        propagates (NumPy's ``maximum``/``minimum``, as scipy's ``reduceat``). 2-D arrays."""
        if self.ndim != 2:
            raise ValueError(f"{op}(explicit=True) needs a 2-D array (scipy's); this one is {self.ndim}-D: "
                             "drop explicit (unstored entries then hold the fill value)")
        ufunc = np.maximum if op == "max" else np.minimum
        rows, cols, vals = self._host_triplets(op)
        vals = np.asarray(vals, self.dtype)
        if len(reduced) == 2:
            return self.dtype.type(0) if vals.size == 0 else ufunc.reduce(vals)
        keys, n = (cols, self.shape[1]) if reduced == (0,) else (rows, self.shape[0])
        out = np.zeros(n, self.dtype)
        if vals.size:
            (keys, vals), starts = _by_line(keys, vals)
            out[keys[starts]] = ufunc.reduceat(vals, starts)
        return namespace().asarray(out)

    def argmax(self, axis=None, out=None, *, explicit: bool = False):
        """Index of the first maximum, flat (axis None) or per row / column (scipy's ``argmax``).

        Unstored entries count with the fill value; NaN counts as the
        maximum, as in ``numpy.argmax``. Works on the stored entries
        only (no densification). ``axis`` may be a tuple, as in scipy:
        ``(0, 1)`` gives the flat index, ``(0,)`` the same as ``0``.

        Returns
        -------
        int or numpy.ndarray of int64
            Empty along an axis when the other dimension is 0, as scipy.

        With ``explicit=True`` only the stored values count, as scipy's:
        along an axis, the column (row) of each row's (column's) first
        extreme stored value, 0 where it stores none; over the whole array,
        the extreme's position among the canonical stored values (scipy's
        index into its ``data``; an array that stores none raises).

        Raises
        ------
        ValueError
            For an empty array, a reduction along an axis of length 0, a
            non-2-D array, ``out``, or ``explicit=True`` over a whole array
            that stores nothing.
        """
        return self._argext("max", axis, out, explicit)

    def argmin(self, axis=None, out=None, *, explicit: bool = False):
        """Index of the first minimum (scipy's ``argmin``); see [`argmax`][bcoo_array.BCOOArray.argmax]."""
        return self._argext("min", axis, out, explicit)

    def _argext(self, op, axis, out, explicit):
        _check_2d(self, f"arg{op}")
        if out is not None:
            raise ValueError(f"arg{op}(): out= is not supported (as in scipy's sparse arrays)")
        ax = self._axis(axis, f"arg{op}")
        m, n = self.shape
        rows, cols, vals = self._host_triplets(f"arg{op}")
        if explicit:
            return _explicit_argext(op, ax, rows, cols, np.asarray(vals), m, n)
        if ax is None:
            if m * n == 0:
                raise ValueError(f"arg{op}() of an empty array")
            lin = rows.astype(np.int64) * n + cols
            return int(arg_extreme_np(np.zeros_like(lin), lin, vals, 1, m * n, self.fill_value, op)[0])
        if ax == 0:
            rows, cols, m, n = cols, rows, n, m
            order = np.lexsort((cols, rows))
            rows, cols, vals = rows[order], cols[order], vals[order]
        if n == 0:
            raise ValueError(f"arg{op}() along an empty dimension")
        return arg_extreme_np(rows, cols, vals, m, n, self.fill_value, op)

    def count_nonzero(self, axis=None):
        """Number of entries not equal to zero (explicit zeros not counted), as scipy's ``count_nonzero``.

        Unstored entries count when the fill value is non-zero. The whole
        count is a Python int, as scipy's, however many elements: with JAX's
        x64 mode off it is summed on the host from counts along the smallest
        axis (each of which must fit int32: else ``OverflowError``).
        """
        xp = namespace()
        ax = self._axis(axis, "count_nonzero")
        if ax is None and self.ndim > 1 and self.size > np.iinfo(_dtypes.default_int()).max:
            keep = int(np.argmin(self.shape))  # counts per slice along the smallest axis, added in int64
            rest = tuple(a for a in range(self.ndim) if a != keep)
            return int(np.sum(np.asarray(_host(xp.count_nonzero(self, axis=rest).todense()), np.int64)))
        res = xp.count_nonzero(self, axis=ax)
        return _host(res.todense())

    def any(self, axis=None, keepdims: bool = False):
        """Whether any entry is true (the ``any`` method of NumPy and pydata-sparse arrays).

        Duck-typed code calls it: scipy's ``expm`` tests triangularity with
        ``np.tril(A, -1).any()``.

        Parameters
        ----------
        axis : int or tuple of int, optional
            Axes reduced; all when None.
        keepdims : bool
            Keep the reduced axes with size 1.

        Returns
        -------
        numpy.bool or BCOOArray
            A NumPy bool when every axis is reduced without ``keepdims`` (as
            [`sum`][bcoo_array.BCOOArray.sum]), else a BCOOArray ([`bcoo_array.any`][]).
        """
        out = namespace().any(self, axis=axis, keepdims=keepdims)
        return _host(out.todense()) if axis is None and not keepdims else out

    def all(self, axis=None, keepdims: bool = False):
        """Whether every entry is true (the ``all`` method of NumPy and pydata-sparse arrays).

        Parameters and result as [`any`][bcoo_array.BCOOArray.any] ([`bcoo_array.all`][]).
        """
        out = namespace().all(self, axis=axis, keepdims=keepdims)
        return _host(out.todense()) if axis is None and not keepdims else out

    def _triplets(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        """``(values, coords)`` on the host, canonical and without padding (see ``._kernels.dimensions.coo_triplets``)."""
        if not self._concrete():
            raise ValueError(f"{what} needs concrete buffers; call it outside jax.jit / vmap")
        return coo_triplets(*self._buffers(), self.shape, self.n_batch, self.n_dense,
                            self.indices_sorted and self.unique_indices)

    def _host_triplets(self, what):
        """Canonical ``(rows, cols, vals)`` of a 2-D array on the host."""

        vals, coords = self._triplets(f"{what}()")
        return coords[0].astype(np.int64), coords[1].astype(np.int64), vals

    def diagonal(self, k: int = 0) -> np.ndarray:
        """The ``k``-th diagonal as a 1-D NumPy array (scipy's ``diagonal``)."""
        _check_2d(self, "diagonal")
        m, n = self.shape
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        fast = self._diagonal_by_search(k, length)
        if fast is not None:
            return fast
        rows, cols, vals = self._host_triplets("diagonal")
        out = np.full(length, self.fill_value, dtype=self.dtype)
        on = cols - rows == k
        out[rows[on] - max(-k, 0)] = vals[on]
        return out

    def _diagonal_by_search(self, k: int, length: int):
        """``diagonal(k)`` of a canonical all-sparse matrix on host buffers: a binary search per diagonal
        position among the entries' row-major keys (cached on the index buffer), O(length log nse) as
        scipy's per-row search; None where it does not apply."""
        if not (self.indices_sorted and self.unique_indices and self.n_batch == 0 and self.n_dense == 0):
            return None
        host = self._host_buffers()
        m, n = self.shape
        if host is None or m * n >= 2**62:
            return None
        data, idx = host
        csr = csr_arrays(idx, (m, n))
        if csr is not None and csr.canonical:  # scipy's per-row binary search, in one native pass
            pos = host_csr_diagonal(csr.indptr, csr.cols, (m, n), k)
            if pos is not None:
                out = data.take(pos, mode="wrap") if data.size else np.zeros(length, self.dtype)
                out[pos < 0] = self.fill_value
                return out
        rows = np.arange(length, dtype=np.int64) + max(-k, 0)
        keys = PLANS.get((idx,), ("row-major-keys", m, n),
                         lambda: idx[:, 0].astype(np.int64) * n + idx[:, 1].astype(np.int64))
        want = rows * n + rows + k
        pos = np.minimum(np.searchsorted(keys, want), max(keys.size - 1, 0))
        out = np.full(length, self.fill_value, dtype=self.dtype)
        if keys.size:
            hit = keys[pos] == want
            out[hit] = data[pos[hit]]
        return out

    def trace(self, offset: int = 0):
        """Sum of the ``offset``-th diagonal (scipy's ``trace``)."""
        return self.diagonal(offset).sum()

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column indices of the non-zero entries, row-major order (scipy's ``nonzero``).

        Explicitly stored zeros are left out; with a non-zero fill value the
        unstored entries are non-zero too.
        """
        _check_2d(self, "nonzero")
        if not reads_as_zero(self.fill_value):
            return np.nonzero(self.toarray())
        rows, cols, vals = self._host_triplets("nonzero")
        keep = vals != 0
        return rows[keep], cols[keep]

    # -- in-place changes ------------------------------------------------------------------

    def eliminate_zeros(self) -> None:
        """Drop stored entries equal to the fill value (zero for scipy-like arrays), in place.

        As scipy's ``eliminate_zeros``; values do not change. Duplicates are
        summed first, so an entry is dropped when its total equals the fill.
        """

        vals, coords = self._triplets("eliminate_zeros()")
        fill = self.fill_value
        keep = vals != fill
        if self.dtype.kind in "fc" and np.isnan(fill):
            keep = ~np.isnan(vals)
        idt = index_dtype_for(self.shape)
        new = type(self)._from_buffers(
            np.array(vals[keep]), np.ascontiguousarray(coords[:, keep].T.astype(idt)), self.shape, n_batch=0, n_dense=0,
            fill_value=fill, indices_sorted=True, unique_indices=True,
        )
        self._assign(new)

    def setdiag(self, values, k: int = 0) -> None:
        """Set the ``k``-th diagonal to ``values`` (a scalar or a sequence), in place, as scipy's ``setdiag``.

        A sequence shorter than the diagonal sets its first entries; a longer
        one is cut. The new entries are stored explicitly (zeros included).

        Raises
        ------
        ValueError
            If ``k`` is outside the matrix, or the array is not 2-D.
        """

        _check_2d(self, "setdiag")
        m, n = self.shape
        if (k > 0 and k >= n) or (k < 0 and -k >= m):
            raise ValueError(f"setdiag(): k={k} exceeds the matrix dimensions {self.shape}")
        vals, coords = self._triplets("setdiag()")
        length = min(m + min(k, 0), n - max(k, 0))
        v = np.asarray(values)
        if v.ndim == 0:
            v = np.full(length, v)
        v = v.reshape(-1)[:length]
        r0, c0 = max(-k, 0), max(k, 0)
        new_rows = np.arange(v.size) + r0
        new_cols = np.arange(v.size) + c0
        drop = (coords[1].astype(np.int64) - coords[0] == k) & (coords[0] - r0 < v.size)
        v = v.astype(self.dtype) if np.can_cast(v.dtype, self.dtype, "same_kind") else v
        if v.dtype != self.dtype:
            raise TypeError(f"setdiag(): values of dtype {v.dtype} do not fit the array's dtype {self.dtype}")
        rows = np.concatenate([coords[0][~drop], new_rows])
        cols = np.concatenate([coords[1][~drop], new_cols])
        data = np.concatenate([vals[~drop], v])
        order = np.lexsort((cols, rows))
        idt = index_dtype_for(self.shape)
        idx = np.stack([rows[order], cols[order]], axis=1).astype(idt)
        self._assign(self._replace(data=adopt(data[order]), indices=adopt(idx), n_batch=0, n_dense=0,
                                   indices_sorted=True, unique_indices=True))

    # -- elementwise methods scipy.sparse offers because they map 0 to 0 -----------------

    def sqrt(self):
        """Elementwise ``sqrt`` (scipy's method): [`bcoo_array.sqrt`][] under the fill-value rule."""
        return namespace().sqrt(self)

    def expm1(self):
        """Elementwise ``expm1`` (scipy's method): [`bcoo_array.expm1`][bcoo_array.expm1] under the fill-value rule."""
        return namespace().expm1(self)

    def log1p(self):
        """Elementwise ``log1p`` (scipy's method): [`bcoo_array.log1p`][bcoo_array.log1p] under the fill-value rule."""
        return namespace().log1p(self)

    def sin(self):
        """Elementwise ``sin`` (scipy's method): [`bcoo_array.sin`][] under the fill-value rule."""
        return namespace().sin(self)

    def sinh(self):
        """Elementwise ``sinh`` (scipy's method): [`bcoo_array.sinh`][] under the fill-value rule."""
        return namespace().sinh(self)

    def tan(self):
        """Elementwise ``tan`` (scipy's method): [`bcoo_array.tan`][] under the fill-value rule."""
        return namespace().tan(self)

    def tanh(self):
        """Elementwise ``tanh`` (scipy's method): [`bcoo_array.tanh`][] under the fill-value rule."""
        return namespace().tanh(self)

    def arcsin(self):
        """Elementwise ``arcsin`` (scipy's method): [`bcoo_array.asin`][] under the fill-value rule."""
        return namespace().asin(self)

    def arcsinh(self):
        """Elementwise ``arcsinh`` (scipy's method): [`bcoo_array.asinh`][] under the fill-value rule."""
        return namespace().asinh(self)

    def arctan(self):
        """Elementwise ``arctan`` (scipy's method): [`bcoo_array.atan`][] under the fill-value rule."""
        return namespace().atan(self)

    def arctanh(self):
        """Elementwise ``arctanh`` (scipy's method): [`bcoo_array.atanh`][] under the fill-value rule."""
        return namespace().atanh(self)

    def sign(self):
        """Elementwise ``sign`` (scipy's method): [`bcoo_array.sign`][] under the fill-value rule."""
        return namespace().sign(self)

    def floor(self):
        """Elementwise ``floor`` (scipy's method): [`bcoo_array.floor`][] under the fill-value rule."""
        return namespace().floor(self)

    def ceil(self):
        """Elementwise ``ceil`` (scipy's method): [`bcoo_array.ceil`][] under the fill-value rule."""
        return namespace().ceil(self)

    def trunc(self):
        """Elementwise ``trunc`` (scipy's method): [`bcoo_array.trunc`][] under the fill-value rule."""
        return namespace().trunc(self)

    def rint(self):
        """Elementwise ``rint`` (scipy's method): [`bcoo_array.round`][] under the fill-value rule."""
        return namespace().round(self)

    def deg2rad(self):
        """Elementwise degrees to radians (scipy's method): multiplies by pi/180."""
        return self._scaled(np.pi / 180, "deg2rad")

    def rad2deg(self):
        """Elementwise radians to degrees (scipy's method): multiplies by 180/pi."""
        return self._scaled(180 / np.pi, "rad2deg")

    def _scaled(self, factor: float, name: str):
        if self.dtype.kind not in "fc":
            raise TypeError(f"{name}() needs a floating-point array, got {self.dtype}")
        return namespace().multiply(self, factor)


def _store(value, out):
    if out is None:
        return value
    out[...] = value
    return out

