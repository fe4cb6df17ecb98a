"""The optional native CPU kernel: ``y = A @ x`` straight from BCOO buffers.

``bcoo_array._native._ffi`` (C++, built by ``setup.py`` with the package;
optional) holds one XLA FFI handler, ``bcoo_array_coo_matmul``: a single
loop over the stored entries that reads the ``(nse, 2)`` index buffer as is,
skips padding (an index equal to its dimension; negative ones too) and
accumulates ``data[i] * x[c]`` into ``y[r]`` (a row of ``n`` contiguous
values for a 2-D ``x``). No plan is needed, so it runs eagerly and under
``jit`` with traced indices alike. float32/64 and complex64/128 values,
int32/int64 indices; the output is zeroed first and accumulated in its own
dtype in storage order (a serial scatter-add).

``coo_matmul`` binds it as a JAX primitive, ``coo_matmul_p``, with its
own rules (as ``jax.experimental.sparse`` defines ``bcoo_dot_general``):
the product is bilinear in ``data`` and ``x``, so the JVP is two products
by the same primitive, the transpose with respect to ``x`` is the product
by the transposed pattern (swapped index columns) and with respect to
``data`` the sampled ``ct[row] * x[col]``; ``jax.vmap`` over ``x`` alone
joins the batch to ``x``'s columns (one call), other batchings run the
pure-XLA product. So ``jit``, ``grad``, ``jacfwd``/``jacrev``,
``linear_transpose`` and ``custom_linear_solve`` all run the kernel. It
lowers to the FFI call on CPU and to the pure-XLA gather + segment sum
(``.coo.coo_matmat``) on other platforms. The CSR kernel
(``csr_matvec``) stays a ``custom_jvp`` (its tangent is the XLA product),
for the eager path and solvers that never transpose it.

``available`` says whether the native path can run here: the extension
imports, the default backend is CPU, and ``BCOO_ARRAY_NATIVE`` is not ``0``
(set it to ``0`` to run the XLA kernels instead, e.g. to compare).
"""

from __future__ import annotations

import math
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from .coo import coo_matmat
from .host import aligned_empty

#: FFI target name of the kernel.
TARGET = "bcoo_array_coo_matmul"
#: Value dtypes the kernel takes (``data`` and ``x`` must share one).
DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
#: Index dtypes the kernel takes.
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

_STATE: dict = {}


def _load() -> bool:
    """Import the extension and register its FFI targets (once); whether that worked."""
    ok = _STATE.get("ok")
    if ok is None:
        try:
            from .._native import _ffi
        except ImportError as err:
            _STATE["error"] = err
            ok = False
        else:
            for name, capsule in _ffi.registrations().items():
                jax.ffi.register_ffi_target(name, capsule, platform="cpu")
            _register_native_lowering()
            ok = True
        _STATE["ok"] = ok
    return ok


def available() -> bool:
    """Whether the native kernel can run: built, on the CPU backend, not disabled by ``BCOO_ARRAY_NATIVE=0``."""
    if os.environ.get("BCOO_ARRAY_NATIVE", "1") == "0":
        return False
    cpu = _STATE.get("cpu")
    if cpu is None:
        cpu = _STATE["cpu"] = jax.default_backend() == "cpu"  # fixed once JAX has started
    return cpu and _load()


def describe() -> dict:
    """What the native kernels' state is, for ``bcoo-array info`` and bug reports.

    Returns
    -------
    dict
        ``built`` (the extension imports), ``error`` (why it does not, or
        None), ``disabled`` (``BCOO_ARRAY_NATIVE=0`` is set), ``backend``
        (JAX's default backend) and ``in_use`` (``available``).
    """
    built = _load()
    return {
        "built": built,
        "error": None if built else str(_STATE.get("error")),
        "disabled": os.environ.get("BCOO_ARRAY_NATIVE", "1") == "0",
        "backend": jax.default_backend(),
        "in_use": available(),
    }


def supports(data_dtype, x_dtype, index_dtype) -> bool:
    """Whether the kernel takes these dtypes (values float32/64 or complex64/128, equal; int32/int64 indices)."""
    dt = np.dtype(data_dtype)
    return dt in DTYPES and np.dtype(x_dtype) == dt and np.dtype(index_dtype) in INDEX_DTYPES


def _ffi_matmul(data, indices, x, m: int):
    out = jax.ShapeDtypeStruct((m,) + tuple(x.shape[1:]), data.dtype)
    call = jax.ffi.ffi_call(TARGET, out, vmap_method="expand_dims")
    return call(data, indices, x, m=np.int64(m))


def _xla_matmul(data, indices, x, m: int):
    """The pure-XLA product (gather + segment sum), with the kernel's padding rule."""
    k = x.shape[0]
    rows, cols = indices[:, 0], indices[:, 1]
    cols = jnp.where(cols < 0, k, cols)  # negative columns add nothing, as in the kernel
    return coo_matmat(data, rows, cols, x, m)


# ``coo_matmul_p``: the native product as a JAX primitive with its own differentiation, transposition and
# batching rules (as jax.experimental.sparse defines bcoo_dot_general), so that ``jit``, ``grad``,
# ``linear_transpose``, ``custom_linear_solve`` (gmres, bicgstab) and ``vmap`` all run it. It is bilinear in
# ``data`` and ``x``: the tangent is two products by the same primitive, the transpose with respect to ``x`` is
# the product by the transposed pattern (swapped index columns; padding stays out of range), the transpose with
# respect to ``data`` samples ``ct[row] * x[col]`` at the stored entries. On CPU it lowers to the FFI kernel,
# elsewhere to the pure-XLA gather + segment sum.
coo_matmul_p = Primitive("bcoo_array_coo_matmul")


def _coo_matmul_abstract(data, indices, x, *, m):
    return ShapedArray((m,) + tuple(x.shape[1:]), data.dtype)


def _coo_matmul_impl(data, indices, x, *, m):
    return _coo_matmul_bound(data, indices, x, m)


@partial(jax.jit, static_argnums=3)
def _coo_matmul_bound(data, indices, x, m):
    return coo_matmul_p.bind(data, indices, x, m=m)


def _coo_matmul_jvp(primals, tangents, *, m):
    data, indices, x = primals
    d_data, _, d_x = tangents
    y = coo_matmul_p.bind(data, indices, x, m=m)
    dy = None
    if type(d_data) is not ad.Zero:
        dy = coo_matmul_p.bind(d_data, indices, x, m=m)
    if type(d_x) is not ad.Zero:
        t = coo_matmul_p.bind(data, indices, d_x, m=m)
        dy = t if dy is None else dy + t
    return y, (ad.Zero(y.aval.to_tangent_aval()) if dy is None else dy)


def _sampled(ct, indices, x):
    """``ct[row] . x[col]`` at every stored entry (0 for padding): the cotangent of ``data``."""
    rows, cols = indices[:, 0], indices[:, 1]
    if ct.shape[0] == 0 or x.shape[0] == 0:  # an empty matrix: every entry is padding (no take from an empty axis)
        return jnp.zeros(rows.shape, jnp.result_type(ct, x))
    g = jnp.take(ct, rows, axis=0, mode="fill", fill_value=0) * jnp.take(x, cols, axis=0, mode="fill", fill_value=0)
    return g if g.ndim == 1 else jnp.sum(g, axis=tuple(range(1, g.ndim)))


def _coo_matmul_transpose(ct, data, indices, x, *, m):
    if ad.is_undefined_primal(indices):
        raise ValueError("coo_matmul: the product is not linear in the indices")
    if ad.is_undefined_primal(data) == ad.is_undefined_primal(x):
        raise ValueError("coo_matmul: the product is linear in data or in x, one at a time")
    if ad.is_undefined_primal(x):
        k = x.aval.shape[0]
        if type(ct) is ad.Zero:
            return None, None, ad.Zero(x.aval)
        return None, None, coo_matmul_p.bind(data, indices[:, ::-1], ct, m=k)
    if type(ct) is ad.Zero:
        return ad.Zero(data.aval), None, None
    return _sampled(ct, indices, x).astype(data.aval.dtype), None, None


def _coo_matmul_batch(args, dims, *, m):
    data, indices, x = args
    d_dim, i_dim, x_dim = dims
    if d_dim is None and i_dim is None:  # (JAX marks an unmapped operand with None)
        # One matrix, a batch of operands: the batch joins x's columns, one product.
        xb = jnp.moveaxis(x, x_dim, -1)
        flat = xb.reshape(xb.shape[0], math.prod(xb.shape[1:]))  # (not -1: x may have no rows, k = 0)
        y = coo_matmul_p.bind(data, indices, flat, m=m)
        return y.reshape((m,) + xb.shape[1:]), xb.ndim - 1
    return jax.vmap(partial(_xla_matmul, m=m), in_axes=tuple(dims))(data, indices, x), 0


def _coo_matmul_xla_lowering(data, indices, x, *, m):
    return _xla_matmul(data, indices, x, m)


coo_matmul_p.def_impl(_coo_matmul_impl)
coo_matmul_p.def_abstract_eval(_coo_matmul_abstract)
ad.primitive_jvps[coo_matmul_p] = _coo_matmul_jvp
ad.primitive_transposes[coo_matmul_p] = _coo_matmul_transpose
batching.primitive_batchers[coo_matmul_p] = _coo_matmul_batch
mlir.register_lowering(coo_matmul_p, mlir.lower_fun(_coo_matmul_xla_lowering, multiple_results=False))


def _register_native_lowering():
    """The CPU lowering to the FFI kernel (once the extension registered its target)."""
    rule = jax.ffi.ffi_lowering(TARGET)
    mlir.register_lowering(coo_matmul_p, lambda ctx, *args, m: rule(ctx, *args, m=np.int64(m)), platform="cpu")


def _coo_matmul(data, indices, x, m):
    return coo_matmul_p.bind(data, indices, x, m=int(m))


def _xla_tangent(y, data, indices, x, d_data, d_x, m):
    """The tangent of ``y = A @ x`` (A = (data, indices)): the pure-XLA product of ``(d_data, x)`` and
    ``(data, d_x)``, which JAX can transpose (``grad``); symbolic zeros skip their term."""
    zero = jax.custom_derivatives.SymbolicZero
    dy = None
    if not isinstance(d_data, zero):
        dy = _xla_matmul(d_data, indices, x, m)
    if not isinstance(d_x, zero):
        t = _xla_matmul(data, indices, d_x, m)
        dy = t if dy is None else dy + t
    return jnp.zeros_like(y) if dy is None else dy


def _check(data, indices, x, m):
    if data.ndim != 1 or indices.ndim != 2 or indices.shape != (data.shape[0], 2) or x.ndim not in (1, 2):
        raise ValueError(f"coo_matmul: shapes data {data.shape}, indices {indices.shape}, x {x.shape}")
    if not supports(data.dtype, x.dtype, indices.dtype):
        raise TypeError(f"coo_matmul: unsupported dtypes {data.dtype}, {indices.dtype}, {x.dtype}")
    if m < 0:
        raise ValueError("coo_matmul: m must be >= 0")


def _coo_matmul_checked(data, indices, x, m):
    _check(data, indices, x, m)
    return _coo_matmul(data, indices, x, m)


_coo_matmul_jit = jax.jit(_coo_matmul_checked, static_argnums=3)
_spmm_jit = jax.jit(lambda data, indices, x, m: _coo_matmul_checked(data, indices, x, m)[None], static_argnums=3)


def coo_matmul(data, indices, x, m: int):
    """``A @ x`` with the native kernel, ``A`` the ``m``-row 2-D COO matrix ``(data, indices)``.

    Parameters
    ----------
    data : (nse,) array, float32/64 or complex64/128 (may be traced)
    indices : (nse, 2) int32 or int64 array (may be traced); entries with an
        index out of range (padding: equal to the dimension) add nothing
    x : (k,) or (k, n) array of ``data``'s dtype (may be traced)
    m : int (static)

    Returns
    -------
    jax.Array of shape ``(m,)`` or ``(m, n)``; duplicates add up.
    One compiled dispatch when called eagerly. Requires ``available``.
    """
    _load()
    return _coo_matmul_jit(data, indices, x, int(m))


#: FFI target of the CSR vector product.
CSR_TARGET = "bcoo_array_csr_matvec"


def _ffi_csr_matvec(indptr, cols, data, x):
    out = jax.ShapeDtypeStruct((indptr.shape[0] - 1,), data.dtype)
    # sequential: a vmapped call loops over the batch (the kernel reads one matrix and vector)
    return jax.ffi.ffi_call(CSR_TARGET, out, vmap_method="sequential")(indptr, cols, data, x)


@partial(jax.custom_jvp, nondiff_argnums=(5,))
def _csr_matvec(data, indices, indptr, cols, x, m):
    return _ffi_csr_matvec(indptr, cols, data, x)


@partial(_csr_matvec.defjvp, symbolic_zeros=True)
def _csr_matvec_jvp(m, primals, tangents):
    data, indices, indptr, cols, x = primals
    d_data, _, _, _, d_x = tangents
    y = _csr_matvec(data, indices, indptr, cols, x, m)
    return y, _xla_tangent(y, data, indices, x, d_data, d_x, m)  # on the COO indices


def sorted_csr(indices, m: int):
    """The CSR form ``(indptr, cols)`` of row-sorted COO ``indices``, built inside a traced program.

    ``indices`` ``(nse, 2)`` (may be traced) must have non-decreasing rows,
    padding rows (``m``) last, as canonical form has; ``indptr`` is found by
    binary search (``(m + 1) log nse`` comparisons), ``cols`` is the column
    of every entry (padding columns are skipped by the kernel).
    """
    rows = indices[:, 0]
    indptr = jnp.searchsorted(rows, jnp.arange(m + 1, dtype=rows.dtype), side="left").astype(rows.dtype)
    return indptr, indices[:, 1]


def _csr_matvec_checked(data, indices, indptr, cols, x, m):
    _check(data, indices, x, m)
    if x.ndim != 1 or indptr.shape != (m + 1,) or cols.ndim != 1 or cols.shape[0] > data.shape[0]:
        raise ValueError(f"csr_matvec: shapes indptr {indptr.shape}, cols {cols.shape}, data {data.shape}, x {x.shape}")
    if indptr.dtype != cols.dtype or np.dtype(indptr.dtype) not in INDEX_DTYPES:
        raise TypeError(f"csr_matvec: indptr {indptr.dtype} and cols {cols.dtype} must share int32 or int64")
    return _csr_matvec(data, indices, indptr, cols, x, m)


_csr_matvec_jit = jax.jit(_csr_matvec_checked, static_argnums=5)
_csr_spmv_jit = jax.jit(lambda *args: _csr_matvec_checked(*args)[None], static_argnums=5)


def csr_matvec(data, indices, indptr, cols, x, m: int, *, leading_axis: bool = False):
    """``A @ x`` for a vector ``x`` with the native CSR kernel (scipy's ``csr_matvec`` loop).

    Parameters
    ----------
    data : (nse,) array, float32/64 or complex64/128 (may be traced)
        Values in row order; the first ``cols.size`` are read.
    indices : (nse, 2) int array (may be traced)
        The same entries' COO indices: the tangent (``jax.jvp``, ``jax.grad``)
        is the pure-XLA product on them, which JAX can transpose.
    indptr : (m + 1,) int32/int64, non-decreasing within ``[0, cols.size]``
    cols : (nnz,) the same dtype; a column out of ``[0, k)`` adds nothing
    x : (k,) array of ``data``'s dtype (may be traced)
    m : int (static)

    Returns
    -------
    jax.Array ``(m,)`` (``(1, m)`` with ``leading_axis``, the convention of
    ``.matmul.spmm``): the same additions in the same order as
    ``coo_matmul`` on row-sorted entries. One compiled dispatch when called
    eagerly. Like ``coo_matmul``, not transposable by ``jax.linear_transpose``
    (see ``.matmul.spmm``). Requires ``available``.
    """
    _load()
    fn = _csr_spmv_jit if leading_axis else _csr_matvec_jit
    return fn(data, indices, indptr, cols, x, int(m))


def spmm(data, indices, x, m: int):
    """``coo_matmul`` with a leading axis of one (the convention of ``.matmul.spmm``)."""
    _load()
    return _spmm_jit(data, indices, x, int(m))


_DTYPE_CODE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.complex64): 2,
               np.dtype(np.complex128): 3}


def host_spmm(data: np.ndarray, indices: np.ndarray, x: np.ndarray, m: int) -> np.ndarray:
    """The kernel on host NumPy buffers, without XLA: ``(1, m)`` or ``(1, m, n)``, 64-byte aligned.

    The eager path for concrete CPU operands (a call costs microseconds, as
    scipy's does, instead of an XLA dispatch). ``data``, ``indices`` and
    ``x`` are C-contiguous NumPy arrays of supported dtypes (see
    ``supports``); the result is a fresh aligned array, so that
    ``.host.to_device`` hands it to JAX without a copy.
    """
    _load()
    from .._native import _ffi

    shape = (1, m) + tuple(x.shape[1:])
    out = aligned_empty(shape, data.dtype)
    n = x.shape[1] if x.ndim == 2 else 1
    _ffi.host_coo_matmul(np.ascontiguousarray(data), np.ascontiguousarray(indices), np.ascontiguousarray(x), out,
                         m, x.shape[0], n, _DTYPE_CODE[np.dtype(data.dtype)], indices.dtype == np.int64,
                         x.ndim == 1)
    return out


class CsrMatvec:
    """``y = A @ x`` for one CSR-ordered matrix and concrete vectors ``x``: its kernels, bound once.

    Holds zero-copy views of the matrix's buffers, its CSR structure and the
    kernels' arguments, so that a call is the kernel plus a few attribute
    reads, not the checks and lookups of the general path: ``__call__`` runs
    the host loop on a NumPy vector (scipy's ``A @ x`` costs the same),
    ``device`` the CSR FFI kernel on a JAX vector (one compiled dispatch).
    ``.matmul.host_matvec`` builds it; the array that keeps it
    (``BCOOArray._bound_matvec``) asks ``serves`` / ``serves_device`` before
    each call.

    Parameters
    ----------
    source : tuple or callable
        The array's ``data`` and ``indices`` (JAX arrays) the views were taken
        from, or a callable returning them (an array holding host buffers
        hands them to JAX only when the device kernel first runs): the
        binding holds while the array keeps them (JAX arrays are immutable).
    indptr, cols : numpy.ndarray
        CSR row pointers ``(m + 1,)`` and columns ``(n_valid,)``, one int
        dtype (int32 or int64).
    data : numpy.ndarray
        Values in the same order (at least ``n_valid``), a ``DTYPES`` dtype.
    shape : (m, k)
    device_structure : callable
        Returns ``(indptr, cols)`` as JAX arrays (the shared plan cache's
        upload), called on the first ``device`` call.
    """

    __slots__ = ("source", "dtype", "k", "_m", "_structure", "_flags", "_fn", "_device", "_device_structure")

    def __init__(self, source: tuple, indptr: np.ndarray, cols: np.ndarray, data: np.ndarray, shape,
                 device_structure):
        if indptr.dtype != cols.dtype or indptr.dtype not in INDEX_DTYPES or data.dtype not in DTYPES:
            raise TypeError(f"CsrMatvec: indptr {indptr.dtype}, cols {cols.dtype}, data {data.dtype}")
        m, k = shape
        self.source = source
        self.dtype = data.dtype
        self.k = k
        self._m = m
        self._fn = (_STATE.get("module") or _module()).host_csr_spmv
        self._structure = (np.ascontiguousarray(indptr), np.ascontiguousarray(cols), np.ascontiguousarray(data))
        self._flags = (_DTYPE_CODE[data.dtype], indptr.dtype == np.int64)
        self._device = None
        self._device_structure = device_structure

    def serves(self, x: np.ndarray) -> bool:
        """Whether the NumPy array ``x`` can go to ``__call__``: ``(k,)`` of ``dtype``, native kernels enabled."""
        return (x.ndim == 1 and x.dtype == self.dtype and x.shape[0] == self.k
                and os.environ.get("BCOO_ARRAY_NATIVE") != "0")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` as a fresh NumPy ``(m,)`` array (``x``: ``(k,)`` of ``dtype``, checked by ``serves``)."""
        out = np.empty(self._m, self.dtype)
        indptr, cols, data = self._structure
        code, wide = self._flags
        self._fn(indptr, cols, data, np.ascontiguousarray(x), out, self._m, code, wide)
        return out

    def serves_device(self, x: jax.Array) -> bool:
        """Whether the JAX array ``x`` can go to ``device``: concrete, ``(k,)`` of ``dtype``, kernels enabled."""
        return (x.ndim == 1 and x.dtype == self.dtype and x.shape[0] == self.k
                and not isinstance(x, jax.core.Tracer) and os.environ.get("BCOO_ARRAY_NATIVE") != "0")

    def device(self, x: jax.Array) -> jax.Array:
        """``A @ x`` as a ``jax.Array`` ``(m,)`` from the CSR FFI kernel (``csr_matvec``), one compiled dispatch."""
        st = self._device
        if st is None:
            st = self._device = self._device_structure()
        data, indices = self.source() if callable(self.source) else self.source
        return _csr_matvec_jit(data, indices, st[0], st[1], x, self._m)


def _module():
    """The loaded extension module (kept in ``_STATE``: the eager SpMV skips the import machinery)."""
    _load()
    from .._native import _ffi

    _STATE["module"] = _ffi
    return _ffi


def host_csr_to_coo(indptr: np.ndarray, indices: np.ndarray, out: np.ndarray) -> bool:
    """Write the ``(nnz, 2)`` COO indices of a CSR structure into ``out``, in one native pass.

    Parameters
    ----------
    indptr : numpy.ndarray, shape ``(m + 1,)``, int32 or int64
    indices : numpy.ndarray, shape ``(nnz,)``, the dtype of ``indptr``
    out : numpy.ndarray, shape ``(nnz, 2)``, int32 or int64, C-contiguous, writable

    Returns
    -------
    bool
        False (``out`` untouched) when the native module is not built or the
        dtypes or shapes do not fit; the caller then expands with NumPy.

    Notes
    -----
    ``indptr`` must be a valid row pointer (``indptr[0] == 0``,
    non-decreasing, ``indptr[m] == nnz``): checked here in O(m) before the
    loop, which reads ``indices`` and writes ``out`` unchecked.
    """
    if not available():
        return False
    ok = (indptr.dtype == indices.dtype and indptr.dtype in INDEX_DTYPES and out.dtype in INDEX_DTYPES
          and indptr.ndim == 1 and indices.ndim == 1 and out.shape == (indices.size, 2) and out.flags.c_contiguous
          and out.flags.writeable and indptr.size >= 1)
    if not ok or int(indptr[0]) != 0 or int(indptr[-1]) != indices.size or (
            indptr.size > 1 and bool(np.any(indptr[1:] < indptr[:-1]))):
        return False
    from .._native import _ffi

    _ffi.host_csr_to_coo(np.ascontiguousarray(indptr), np.ascontiguousarray(indices), out, indptr.size - 1,
                         indptr.dtype == np.int64, out.dtype == np.int64)
    return True


def host_coo_to_csr(idx: np.ndarray, m: int, n: int, index_dtype) -> tuple | None:
    """The CSR structure of 2-D COO indices, in one native pass: ``(indptr, cols, n_valid, canonical)``.

    Parameters
    ----------
    idx : numpy.ndarray, shape ``(nse, 2)``, int32 or int64
        Indices whose valid entries (``0 <= row < m``, ``0 <= col < n``)
        come first, with non-decreasing rows (as canonical form has them).
    m, n : int
        The matrix's shape.
    index_dtype : numpy dtype
        int32 or int64, the dtype of ``indptr`` and ``cols``.

    Returns
    -------
    tuple or None
        ``indptr`` ``(m + 1,)``, ``cols`` ``(n_valid,)`` (a view of an
        ``(nse,)`` buffer), the count of valid entries and whether columns
        strictly increase within each row; None when the module is not
        available, the dtypes do not fit, a valid entry follows an invalid
        one or rows decrease (scipy's ``csr_has_sorted_indices`` and the
        row pointer's count pass, fused with the checks).
    """
    index_dtype = np.dtype(index_dtype)
    if (not available() or idx.dtype not in INDEX_DTYPES or index_dtype not in INDEX_DTYPES or idx.ndim != 2
            or idx.shape[1] != 2):
        return None
    indptr = np.zeros(m + 1, index_dtype)
    cols = aligned_empty((idx.shape[0],), index_dtype)
    got = (_STATE.get("module") or _module()).host_coo_to_csr(
        np.ascontiguousarray(idx), indptr, cols, m, n, idx.dtype == np.int64, index_dtype == np.int64)
    if got is None:
        return None
    nv, canonical = got
    return indptr, cols[:nv], nv, canonical


def _csr_ok(indptr: np.ndarray, cols: np.ndarray) -> bool:
    return (indptr.dtype == cols.dtype and indptr.dtype in INDEX_DTYPES and indptr.ndim == 1 and cols.ndim == 1
            and indptr.size >= 1)


def host_csr_diagonal(indptr: np.ndarray, cols: np.ndarray, shape: tuple[int, int], k: int) -> np.ndarray | None:
    """Positions of the ``k``-th diagonal's entries of a canonical CSR structure of ``shape``, -1 where none.

    A binary search in each row the diagonal crosses (scipy's ``csr_diagonal``), one native pass.

    Returns
    -------
    numpy.ndarray of int64, shape ``(length of the diagonal,)``, or None
        None when the native module is not available or the dtypes do not fit.
    """
    if not available() or not _csr_ok(indptr, cols) or indptr.size != shape[0] + 1:
        return None
    m, n = shape
    r0 = max(-k, 0)
    out = np.empty(max(0, min(m + min(k, 0), n - max(k, 0))), np.int64)
    (_STATE.get("module") or _module()).host_csr_diagonal(np.ascontiguousarray(indptr), np.ascontiguousarray(cols),
                                                          out, r0, k, indptr.dtype == np.int64)
    return out


def host_csr_select(indptr: np.ndarray, cols: np.ndarray, rows: np.ndarray, columns: np.ndarray, n: int,
                    index_dtype) -> tuple[np.ndarray, np.ndarray] | None:
    """The entries of ``A[np.ix_(rows, columns)]`` for a CSR structure: ``(indices, source positions)``.

    Row by row (in the order of ``rows``), each stored entry is emitted once per time its column is
    selected, at the output column of that selection: scipy's ``csr_row_index`` and
    ``csr_column_index1/2`` fused (a count pass, then a fill pass).

    Parameters
    ----------
    indptr, cols : numpy.ndarray
        A CSR structure of ``n`` columns (int32 or int64, one dtype).
    rows : numpy.ndarray, shape ``(r,)``
        Selected rows, in ``[0, m)``.
    columns : numpy.ndarray, shape ``(c,)``
        Selected columns, in ``[0, n)``; repeats allowed.
    n : int
        The number of columns.
    index_dtype : numpy dtype
        int32 or int64: the dtype of the returned indices.

    Returns
    -------
    (indices, src) or None
        ``indices`` ``(total, 2)`` of ``index_dtype`` (output row, output column), ``src`` ``(total,)`` int64
        positions into ``cols``; None when the native module is not available.
    """
    index_dtype = np.dtype(index_dtype)
    if not available() or not _csr_ok(indptr, cols) or index_dtype not in INDEX_DTYPES:
        return None
    mod = _STATE.get("module") or _module()
    rows = np.ascontiguousarray(rows, np.int64)
    columns = np.asarray(columns, np.int64)
    wide = indptr.dtype == np.int64
    indptr, cols = np.ascontiguousarray(indptr), np.ascontiguousarray(cols)
    per_col = np.bincount(columns, minlength=n).astype(np.int64, copy=False)
    col_first = np.zeros(n + 1, np.int64)
    np.cumsum(per_col, out=col_first[1:])
    by_col = np.argsort(columns, kind="stable").astype(np.int64, copy=False)
    total = mod.host_csr_select_count(indptr, cols, rows, per_col, wide)
    out_idx = np.empty((total, 2), index_dtype)
    src = np.empty(total, np.int64)
    mod.host_csr_select_fill(indptr, cols, rows, col_first, by_col, out_idx, src, wide, index_dtype == np.int64)
    return out_idx, src


def host_coo_lookup(idx: np.ndarray, n: int, query: np.ndarray) -> np.ndarray | None:
    """Positions of the entries of a sorted query among a canonical 2-D COO pattern, in one native walk.

    A forward walk over the pattern with a galloping search per query
    entry: O(q log(n / q)) for a few queries, O(n + q) for many (NumPy's
    ``searchsorted`` of raveled keys is a full binary search per query).

    Parameters
    ----------
    idx : numpy.ndarray, shape ``(>= n, 2)``, int32 or int64
        The pattern: its first ``n`` entries, sorted row-major and unique.
    n : int
        The pattern's entries (padding after them is not read).
    query : numpy.ndarray, shape ``(q, 2)``, the dtype of ``idx``
        Query entries sorted row-major (repeats allowed).

    Returns
    -------
    numpy.ndarray of int64, shape ``(q,)``, or None
        The position in ``idx`` of each query entry, -1 where the pattern
        stores nothing there; None when the module is not available or the
        dtypes or shapes do not fit (the caller searches with NumPy).
    """
    if (not available() or idx.dtype != query.dtype or idx.dtype not in INDEX_DTYPES or idx.ndim != 2
            or query.ndim != 2 or idx.shape[1] != 2 or query.shape[1] != 2 or not 0 <= n <= idx.shape[0]):
        return None
    pos = np.empty(query.shape[0], np.int64)
    (_STATE.get("module") or _module()).host_coo_lookup(np.ascontiguousarray(idx), n, np.ascontiguousarray(query),
                                                        query.shape[0], pos, idx.dtype == np.int64)
    return pos


#: Operations of ``host_coo_union_apply`` (the kernel's codes).
UNION_OPS = {"add": 0, "subtract": 1, "multiply": 2}


def host_coo_union_apply(op: str, dx: np.ndarray, ix: np.ndarray, nx: int, dy: np.ndarray, iy: np.ndarray, ny: int,
                         fx, fy) -> tuple[np.ndarray, np.ndarray] | None:
    """``op(x, y)`` on the union of two canonical 2-D COO patterns, in one native merge: ``(data, indices)``.

    The entries of each operand are its first ``nx`` / ``ny`` (canonical: sorted row-major, unique,
    padding after them); an entry stored by one side only meets the other's fill value. The result is
    canonical and holds exactly the union (scipy's ``csr_binop_csr`` merge, values computed in the same
    pass: no plan and no expansion of either operand's values to the union).

    Parameters
    ----------
    op : {"add", "subtract", "multiply"}
    dx, dy : numpy.ndarray, shape ``(>= nx,)`` / ``(>= ny,)``
        Values of one dtype: float32, float64, complex64 or complex128.
    ix, iy : numpy.ndarray, shape ``(>= nx, 2)`` / ``(>= ny, 2)``
        Indices of one dtype, int32 or int64.
    fx, fy : scalar
        The fill values.

    Returns
    -------
    (data, indices) or None
        64-byte aligned NumPy arrays; None when the module is not available, the dtypes do not fit, or for a
        complex product (NumPy's rounding of its terms is kept by leaving it to NumPy).
    """
    code = _DTYPE_CODE.get(np.dtype(dx.dtype))
    if op == "multiply" and np.dtype(dx.dtype).kind == "c":
        return None  # NumPy rounds the terms of a complex product its own way: left to it (see coo_union.cc)
    if (not available() or code is None or dy.dtype != dx.dtype or op not in UNION_OPS or ix.dtype != iy.dtype
            or ix.dtype not in INDEX_DTYPES or ix.ndim != 2 or iy.ndim != 2 or ix.shape[1] != 2 or iy.shape[1] != 2
            or ix.shape[0] < nx or iy.shape[0] < ny or dx.shape[0] < nx or dy.shape[0] < ny
            or dx.ndim != 1 or dy.ndim != 1):
        return None
    from .host import aligned_empty

    mod = _STATE.get("module") or _module()
    ix, iy, dx, dy = (np.ascontiguousarray(a) for a in (ix, iy, dx, dy))
    wide = ix.dtype == np.int64
    n = mod.host_coo_union_count(ix, nx, iy, ny, wide)
    data = aligned_empty((n,), dx.dtype)
    indices = aligned_empty((n, 2), ix.dtype)
    fx, fy = complex(fx), complex(fy)
    mod.host_coo_union_apply(ix, nx, iy, ny, dx, dy, fx.real, fx.imag, fy.real, fy.imag, UNION_OPS[op], code, wide,
                             indices, data)
    return data, indices
