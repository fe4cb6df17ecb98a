"""Linear algebra functions of the array API standard: ``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot``.

``sparse @ dense`` and ``dense @ sparse`` give dense results: a ``jax.Array``
with a JAX operand, a NumPy array with a NumPy one (the mixed-type rule of
scipy.sparse and pydata-sparse), a BCOOArray in dense layout when every
operand is sparse. ``sparse @ sparse`` of 2-D zero-filled arrays
stays sparse, computed with memory proportional to the number of products
(Gustavson / expand-sort-compress), never nse_A x nse_B. While tracing the
number of products needs a static bound: ``sparse_product`` proves one
from static information or raises with the alternatives (no silent
densifying); ``bcoo_array.linalg.sparse_matmul`` takes it as ``nse=``.
Batched or non-zero-filled operands go through a dense right-hand side. The kernels themselves, and the choice among them, live in
``._kernels.matmul``. Spec:
https://data-apis.org/array-api/2025.12/API_specification/linear_algebra_functions.html
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._elementwise_functions import conj, multiply
from ._engine import Operation, host_enabled, host_view
from ._fill import zero_fill
from ._kernels.csr import csr_arrays
from ._kernels.host import adopt, host_buffers
from ._kernels.matmul import (
    batched_spmm,
    host_spmm,
    spgemm,
    spgemm_products_bound,
    spmm,
    spmm_dense,
)
from ._shapes import index_dtype_for, is_concrete, is_tracer, prod
from ._manipulation_functions import permute_dims, reshape, transposed_matvec
from ._operands import as_operand, as_sparse, cast, check_category
from ._relayout import broadcast, dense_layout, dense_values, dense_values_host, update_layout
from ._routing import check_one_device, routed
from ._statistical_functions import sum as _sum

def _stored_delta(x: BCOOArray) -> BCOOArray:
    """``x - fill`` as a zero-filled array on ``x``'s pattern (needs unique indices)."""
    if zero_fill(x.fill_value):
        return x
    c = x._canonical()
    return c._replace(data=c.data - jnp.asarray(c.fill_value, c.dtype), fill_value=np.zeros((), c.dtype)[()])


_EMPTY_INDICES = {}


def _dense_result(data) -> BCOOArray:
    """Wrap ``data`` of shape ``(1, *shape)`` as a dense-layout BCOOArray (no eager reshaping)."""
    if is_tracer(data):
        idx = jnp.zeros((1, 0), jnp.int32)  # a constant of this trace (a cached array may belong to another mesh)
    else:
        idx = _EMPTY_INDICES.get(None)
        if idx is None:
            idx = _EMPTY_INDICES[None] = jnp.zeros((1, 0), jnp.int32)
    shape = tuple(data.shape[1:])
    return BCOOArray._from_buffers(data, idx, shape, n_batch=0, n_dense=len(shape),
                                   fill_value=np.zeros((), data.dtype)[()], indices_sorted=True, unique_indices=True)


def _has_nonfinite(d) -> bool:
    """Whether concrete ``d`` holds inf or NaN (False when traced: it cannot be known)."""
    if not is_concrete(d) or np.dtype(d.dtype).kind not in "fc":
        return False
    with jax.ensure_compile_time_eval():  # d may be a constant inside a trace
        return not bool(jnp.all(jnp.isfinite(d)))


def _sparse_dense(a: BCOOArray, d):
    """Dense result of ``a @ d`` for ``a`` of ndim >= 2 and ``d`` of ndim >= 2 (matmul semantics)."""
    if not np.isfinite(a.fill_value) or (not zero_fill(a.fill_value) and _has_nonfinite(d)):
        # ``a - fill`` would be NaN at every stored entry (the decomposition below
        # needs a finite fill), or ``inf`` in ``d`` would meet both ``a - fill`` and
        # ``fill * colsum`` (``-inf + inf``: NaN where NumPy gives inf): a non-zero
        # fill is a value at every position, so multiply the dense values instead.
        return jnp.matmul(a.todense(), d)
    if a.size == 0 or d.size == 0:
        # An empty operand gives an empty result or empty sums (0); XLA's gathers reject the
        # zero-size sparse dimensions on the general path.
        batch = jnp.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        return jnp.zeros(batch + (a.shape[-2], d.shape[-1]), _dtypes.result_type(a.dtype, d.dtype))
    s = _stored_delta(a)
    if a.ndim == 2 and d.ndim == 2 and s.n_batch == 0 and s.n_dense == 0:
        out = spmm(s.data, s.indices, s.shape, d, rows_sorted=s.indices_sorted)[0]
    else:
        batch = jnp.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        s = broadcast(s, batch + a.shape[-2:])
        d = jnp.broadcast_to(d, batch + d.shape[-2:])
        nb = len(batch)
        if s.n_batch != nb or s.n_dense:
            # bcoo_dot_general contracts sparse dimensions only: make the last one sparse.
            s = update_layout(s, nb, 0)
        out = batched_spmm(s.data, s.indices, s.shape, d, nb)
    if not zero_fill(a.fill_value):
        colsum = jnp.sum(d, axis=-2, keepdims=True, dtype=d.dtype)  # jnp.sum would widen int32
        out = out + jnp.asarray(a.fill_value, out.dtype) * colsum
    return out


def _b_row_bound(b: BCOOArray) -> int | None:
    """Static bound of the entries in one row of 2-D ``b``: its nse when each row is a batch element."""
    return b.nse if b.ndim == 2 and b.n_batch == 1 and b.n_dense == 0 else None


def sparse_product(a: BCOOArray, b: BCOOArray, nse: int | None = None) -> BCOOArray:
    """Sparse @ sparse of zero-filled 2-D BCOOArrays (concrete or traced indices).

    Parameters
    ----------
    a, b : BCOOArray, shapes ``(m, k)`` and ``(k, n)``, same dtype, fill 0
    nse : int, optional
        Static bound of the products ``a[i, k] * b[k, j]`` that meet (which
        bounds the stored entries of the result); the result then has
        ``min(nse, m * n)`` stored slots, padding last, eager or traced.
        Without it: concrete indices give the exact product, traced ones the
        bound of ``._kernels.matmul.spgemm_products_bound`` if it is no
        larger than the dense route (``m * n + k * n``).

    Raises
    ------
    ValueError
        If ``nse`` is smaller than the number of products (checked when the
        indices are concrete), or, without ``nse`` under tracing, if the
        static bound exceeds the dense route (the message says what to do).
    """
    b_rows = _b_row_bound(b)
    a = update_layout(a, 0, 0)._canonical()
    b = update_layout(b, 0, 0)._canonical()
    (m, k), n = a.shape, b.shape[1]
    concrete = a._concrete_indices() and b._concrete_indices()
    if nse is not None:
        nse = operator.index(nse)
        if nse < 0:
            raise ValueError(f"nse={nse} must be non-negative")
        if concrete:
            count = spgemm_products_bound(a.indices, b.indices, m, k, n)
            if count > nse:
                raise ValueError(f"nse={nse} is smaller than the {count} products of this sparse @ sparse; "
                                 f"pass nse >= {count}")
        products = nse
    elif concrete:
        products = None
    else:
        products = spgemm_products_bound(a.indices, b.indices, m, k, n, b_row_bound=b_rows)
        if products > m * n + k * n:
            raise ValueError(
                f"sparse @ sparse under jax.jit: the size of the product depends on index values, and "
                f"what is static (x1.nse={a.nse}, x2.nse={b.nse}, shapes, concrete indices) bounds it only "
                f"by {products} products, more than the dense route ({m}x{n} result + {k}x{n} densified "
                f"x2). Give a bound: bcoo_array.linalg.sparse_matmul(x1, x2, nse=N) with N >= "
                f"the number of products (at most x1.nse * the most entries stored in a row of x2); or "
                f"store x2 with n_batch=1 (one batch element per row) so that bound is static; or "
                f"compute the product outside jit; or densify on purpose: x1 @ x2.todense()."
            )
    check_one_device(a, b)  # (the host SpGEMM reads them where JAX would refuse; routed, its result is placed)
    if a._concrete() and b._concrete():  # host buffers where the host engine reads them
        (da, ia), (db, ib) = a._buffers(), b._buffers()
    else:  # a traced operand: the XLA kernels, on JAX buffers
        da, ia, db, ib = a.data, a.indices, b.data, b.indices
    data, indices, is_sorted = spgemm(da, ia, db, ib, m, k, n, products=products)
    idt = index_dtype_for((m, n))
    if isinstance(indices, np.ndarray):
        # The host kernels' fresh NumPy buffers: kept by the host engine, else handed to JAX (no staged copy).
        indices = indices.astype(idt, copy=False)
        if not host_enabled():
            indices, data = adopt(indices), adopt(data)
    else:
        indices = indices.astype(idt)
    out = BCOOArray._from_buffers(data, indices, (m, n), n_batch=0, n_dense=0, fill_value=0,
                                  indices_sorted=is_sorted, unique_indices=True)
    if nse is not None and out.nse != min(nse, m * n):
        out = out._with_nse(min(nse, m * n))
    return out


def _is_plain_matrix(x) -> bool:
    """A zero-filled 2-D BCOOArray with every dimension sparse: the operand of the direct kernels."""
    return (isinstance(x, BCOOArray) and x.ndim == 2 and x.n_batch == 0 and x.n_dense == 0
            and x.dtype.kind in "iufc" and zero_fill(x.fill_value))


def _dense_kind(x1, x2) -> str | None:
    """The type of a product's dense result: "jax" with a JAX operand, "numpy" with a NumPy one, else None."""
    t1, t2 = type(x1), type(x2)
    if (t1 is BCOOArray and t2 is np.ndarray) or (t1 is np.ndarray and t2 is BCOOArray):
        return "numpy"  # scipy's A @ x (checked first: the commonest eager call)
    if any(isinstance(x, (jax.Array, jax.core.Tracer)) for x in (x1, x2)):
        return "jax"
    if any(isinstance(x, (np.ndarray, np.generic)) for x in (x1, x2)):
        return "numpy"
    return None


def _as_kind(out, kind: str | None):
    """``out`` as the mixed-type rule wants it: itself, a jax.Array, or (eagerly) a writable NumPy array."""
    if kind is None or (kind == "jax" and not isinstance(out, BCOOArray)):
        return out
    if kind == "numpy" and isinstance(out, BCOOArray) and out._host_buffers() is not None:
        dense = dense_values_host(out)  # the host engine's result: no hand-off to JAX and back
        arr = np.array(dense._dense() if isinstance(dense, BCOOArray) else dense)
        return arr[()] if arr.ndim == 0 else arr
    dense = dense_values(out)
    if isinstance(dense, BCOOArray):
        dense = dense.todense()
    if kind == "numpy" and not is_tracer(dense):
        arr = np.array(dense)
        return arr[()] if arr.ndim == 0 else arr
    return dense


def _host_matvec(a, b, *, plain: bool = False):
    """``a @ b`` for a plain matrix ``a`` and a NumPy ``b`` on the host kernel (a NumPy result), or None.

    ``plain``: the caller has checked ``_is_plain_matrix(a)``.
    """
    if not ((plain or _is_plain_matrix(a)) and isinstance(b, np.ndarray) and b.ndim in (1, 2)
            and b.shape[0] == a.shape[1]):
        return None
    data = a.data
    if b.dtype != a.dtype:
        if b.dtype.kind not in "fc" or a.dtype.kind not in "fc":
            return None
        # Floating and complex dtypes promote by the standard's table, which is NumPy's. With JAX's
        # x64 mode off a 64-bit NumPy operand still gives a 64-bit result: the NumPy result needs
        # no 64-bit JAX array, so it is computed on the host (scipy's result exactly), never
        # downcast (``_dtypes.result_type`` caps at 32 bits then, for JAX results).
        want = np.result_type(a.dtype, b.dtype)
        if want != a.dtype:
            got = host_buffers(a.data)
            if got is None:
                return None
            data = got[0].astype(want)
        b = b.astype(want, copy=False)
    return host_spmm(data, a.indices, a.shape, b)


#: NumPy dtypes that JAX holds only with its x64 mode on.
_WIDE = frozenset(np.dtype(d) for d in ("int64", "uint64", "float64", "complex128"))


def _host_wide_product(x1, x2):
    """``x1 @ x2`` for a 64-bit NumPy operand with JAX's x64 mode off and a plain matrix, or None.

    The result is NumPy, of NumPy's promotion (float32 @ int64 is float64, as
    scipy gives), whichever side the NumPy operand is on: JAX cannot hold the
    operand, and the NumPy result needs no JAX array, so scipy's CSR product
    runs on the host. Never a downcast. None where this does not apply (x64
    on, no 64-bit NumPy operand, a traced matrix, a non-zero fill, batch or
    dense dimensions, a NumPy operand of more than two dimensions).
    """
    if _dtypes.x64_enabled():
        return None
    if type(x2) is np.ndarray and x2.dtype in _WIDE:
        a, x, left = x1, x2, True
    elif type(x1) is np.ndarray and x1.dtype in _WIDE:
        a, x, left = x2, x1, False
    else:
        return None
    if not (_is_plain_matrix(a) and x.ndim in (1, 2) and a._concrete()):
        return None
    k = a.shape[1] if left else a.shape[0]
    if x.shape[0 if left else -1] != k:
        shapes = (a.shape, x.shape) if left else (x.shape, a.shape)
        raise ValueError(f"matmul(): contracted dimensions differ: x1.shape={shapes[0]}, x2.shape={shapes[1]}")
    S = a.tocsr()
    with np.errstate(all="ignore"):  # IEEE results, as the other products
        return np.asarray(S @ x) if left else np.asarray((S.T @ x.T).T)


@routed
def matmul(x1, x2, /):
    """Matrix product with the standard's broadcasting and 1-D rules (array API ``matmul``).

    Parameters
    ----------
    x1 : BCOOArray or array, shape ``(..., m, k)`` or ``(k,)``
    x2 : BCOOArray or array, shape ``(..., k, n)`` or ``(k,)``
        Numeric operands (BCOOArray, NumPy or JAX arrays, scipy.sparse /
        pydata-sparse / jax.experimental.sparse arrays); dtypes promote by
        the standard's rules.

    Returns
    -------
    BCOOArray, jax.Array or numpy.ndarray
        Shape ``(..., m, n)`` with 1-D operands' dimensions removed. The type
        follows the mixed-type rule of scipy.sparse and pydata-sparse: with a
        dense JAX operand the (dense) product is a ``jax.Array`` (so
        ``jnp.sum(A @ x)`` and ``jax.grad`` through it work); with a dense
        NumPy operand, a NumPy array (eagerly; a ``jax.Array`` under
        ``jax.jit``); with sparse operands only (BCOOArrays, or scipy /
        pydata-sparse / jax.experimental.sparse arrays), a BCOOArray, as the
        array API's closure asks. Sparse @ sparse (2-D, zero fill) is sparse:
        exact eagerly; under ``jax.jit`` with ``min(bound, m * n)`` stored
        slots, the bound proven from static information (see Raises). Other
        products (a non-zero fill value, batch dimensions) are dense (dense
        layout), the fill value entering as ``fill * sum`` of the other operand.

    Raises
    ------
    TypeError
        For non-numeric dtypes.
    ValueError
        For 0-d operands or mismatched contracted dimensions; and for sparse
        @ sparse under ``jax.jit`` when the static bound of the product
        (``x1.nse`` times the most entries a row of ``x2`` can hold:
        ``x2.nse`` per row when ``x2`` has ``n_batch=1``, exact when its
        indices are concrete, else ``min(x2.nse, n)``) exceeds densifying:
        pass a bound with ``bcoo_array.linalg.sparse_matmul(x1, x2, nse=)``,
        store ``x2`` with ``n_batch=1``, compute outside ``jit``, or write
        ``x1 @ x2.todense()``.

    Notes
    -----
    The operands are normalised once, then one kernel of
    ``._kernels.matmul`` runs (which one depends on the layout, the
    backend and whether the indices are traced).

    Non-finite values (see "Non-finite values" in ``docs/design.md``):

    * an unstored entry of a zero-filled sparse operand is an exact
      (structural) zero: it forms no product, so ``S @ d`` and ``d @ S``
      ignore ``inf`` / ``nan`` of ``d`` where ``S`` stores nothing (NumPy
      gives ``nan`` for ``0 * inf``), as scipy.sparse and
      jax.experimental.sparse do; the same on every kernel (native C++ and
      XLA, eager and under ``jit``); sparse @ sparse forms products of
      stored entries only;
    * stored entries, explicit zeros included, follow IEEE arithmetic
      (a stored ``0`` times ``inf`` is ``nan``);
    * a non-zero fill value is a value at every position: with a concrete
      dense operand the result is NumPy's. Under ``jit`` with a traced dense
      operand holding ``inf``, the form ``(A - fill) @ d + fill *
      sum(d, axis=-2)`` can give ``nan`` where NumPy gives ``inf`` (its two
      terms meet as ``-inf + inf``); finite operands are exact.
    """
    if type(x1) is BCOOArray:
        # A @ x with a vector x of A's dtype, the commonest call: the kernels bound to A once
        # (no checks or lookups per call). A NumPy x (scipy code) runs the host loop on
        # zero-copy views of A's buffers; a concrete JAX x the CSR FFI kernel.
        if type(x2) is np.ndarray:
            bound = x1._bound_matvec()
            if bound is not None and bound.serves(x2):
                return bound(x2)
        elif isinstance(x2, jax.Array):
            bound = x1._bound_matvec()
            if bound is not None and bound.serves_device(x2):
                return bound.device(x2)
    if (type(x1) is np.ndarray and x1.ndim == 1 and type(x2) is BCOOArray and x2.ndim == 2 and x2.indices_sorted
            and x2.n_batch == 0 and x2.n_dense == 0):
        # scipy's x @ A (a row vector times the matrix) is A.T @ x: the transpose's product reads A's own
        # buffers (scipy's CSC product), with no transposed copy.
        bound = transposed_matvec(x2)
        if bound is not None and bound.serves(x1):
            return bound(x1)
    if (isinstance(x1, jax.Array) and type(x2) is BCOOArray and x1.ndim == 1 and x2.ndim == 2 and x2.indices_sorted
            and x2.n_batch == 0 and x2.n_dense == 0 and not is_tracer(x1)):
        # the same with a concrete JAX row vector in host memory: the product on a view of it, one hand-off back
        bound = transposed_matvec(x2)
        if bound is not None and bound.serves_device(x1):
            return bound.device(x1)
    if type(x1) is BCOOArray and _is_plain_matrix(x1):
        # The other common calls, with no operand normalisation: A @ x with a NumPy x (the host
        # kernel writes the NumPy result) and A @ x with a JAX x of A's dtype (one kernel
        # dispatch returns the jax.Array).
        if type(x2) is np.ndarray:
            got = _host_matvec(x1, x2, plain=True)
            if got is not None:
                return got
        elif (isinstance(x2, jax.Array) and x2.ndim in (1, 2) and x2.shape[0] == x1.shape[1]
              and x2.dtype == x1.data.dtype and not is_tracer(x2)):
            return spmm_dense(x1.data, x1.indices, x1.shape, x2, rows_sorted=x1.indices_sorted)
    kind = _dense_kind(x1, x2)
    if kind == "numpy":
        # scipy's A @ x: the host kernel writes the NumPy result directly.
        got = _host_matvec(x1, x2) if isinstance(x2, np.ndarray) else None
        if got is None:
            got = _host_wide_product(x1, x2)  # x64 off, a 64-bit NumPy x (either side): NumPy's promotion
        if got is not None:
            return got
    return _as_kind(matmul_as_bcoo(x1, x2, dense_out=kind == "jax"), kind)


def matmul_as_bcoo(x1, x2, *, dense_out: bool = False):
    """[`matmul`][bcoo_array.matmul] with the result a BCOOArray (dense layout for dense products).

    ``dense_out``: the caller wants a dense product as a ``jax.Array``; the
    common case (a plain matrix times a vector or matrix) then returns one
    from the kernel itself, with no wrapping and unwrapping.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    da, db = np.dtype(a.dtype), np.dtype(b.dtype)
    if da != db or da.kind not in "iufc":
        check_category(da, "numeric", "matmul", "x1")
        check_category(db, "numeric", "matmul", "x2")
        dt = _dtypes.result_type(da, db)
        a, b = cast(a, dt), cast(b, dt)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul() does not take 0-d operands; use multiply")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul(): contracted dimensions differ: x1.shape={a.shape}, x2.shape={b.shape}")
    return _matmul_kernels(a, b, dense_out=dense_out)


#: The products of ``matmul_as_bcoo`` once the operands are normalised (same dtype, shapes checked).
_matmul_kernels = Operation("matmul", operands=lambda a, b, **kw: (a, b))


def _host_csr(a: BCOOArray):
    """``a`` (2-D, every dimension sparse, host buffers) as a scipy CSR array on zero-copy views, or None."""
    import scipy.sparse as sp

    c = a._canonical()
    data, indices = c._host_buffers()
    st = csr_arrays(indices, c.shape)
    if st is None:
        return None
    return sp.csr_array((data[:st.n_valid], st.cols, st.indptr), shape=c.shape, copy=False)


@_matmul_kernels.host
def _matmul_host(a, b, *, dense_out: bool = False):
    """NumPy, scipy and the native kernels on host buffers; 2-D (and 1-D) operands, NumPy's matmul semantics."""
    with np.errstate(all="ignore"):  # IEEE results (0 * inf is NaN) are the answer, not a warning
        return _matmul_host_impl(a, b)


def _matmul_host_impl(a, b):
    a = dense_values_host(a) if isinstance(a, BCOOArray) else np.asarray(host_view(a) if isinstance(a, jax.Array)
                                                                         else a)
    b = dense_values_host(b) if isinstance(b, BCOOArray) else np.asarray(host_view(b) if isinstance(b, jax.Array)
                                                                         else b)
    sa, sb = isinstance(a, BCOOArray), isinstance(b, BCOOArray)
    if not sa and not sb:
        return dense_layout(np.matmul(a, b))
    if (sa and (a.ndim != 2 or a.n_batch or a.n_dense)) or (sb and (b.ndim > 2 or b.n_batch or b.n_dense)) \
            or (not sa and a.ndim > 2) or (not sb and b.ndim > 2):
        return NotImplemented  # batched and n-D products: the XLA kernels
    if sa and sb:
        if b.ndim == 2 and zero_fill(a.fill_value) and zero_fill(b.fill_value):
            return sparse_product(a, b)
        return NotImplemented
    if sb:  # d @ s: scipy's dense @ sparse, the fill entering as fill * row sums of d
        s, d = b, a
        S = _host_csr(update_layout(s, 0, 0) if s.ndim == 2 else reshape(s, (s.shape[0], 1)))
        if S is None or (not zero_fill(s.fill_value) and (not np.isfinite(s.fill_value) or not np.all(np.isfinite(d)))):
            return NotImplemented
        fill = s.fill_value
        delta = S if zero_fill(s.fill_value) else S - sp_fill_matrix(S, fill)
        out = np.asarray(d @ delta)
        if not zero_fill(s.fill_value):
            out = out + np.asarray(fill, out.dtype) * np.sum(d, axis=-1, keepdims=True, dtype=d.dtype)
        out = out.reshape(out.shape[:-1]) if s.ndim == 1 else out
        return dense_layout(out.astype(np.result_type(a.dtype, b.dtype), copy=False))
    s, d = a, b
    if not zero_fill(s.fill_value) and (not np.isfinite(s.fill_value) or not np.all(np.isfinite(d))):
        return dense_layout(np.matmul(s._dense(), d))  # a non-zero fill meets inf / NaN: the dense values
    if _is_plain_matrix(s) and d.ndim <= 2:
        got = host_spmm(*s._host_buffers(), s.shape, np.ascontiguousarray(d))
        if got is not None:
            return dense_layout(got)
    S = _host_csr(s)
    if S is None:
        return NotImplemented
    if not zero_fill(s.fill_value):
        S = S - sp_fill_matrix(S, s.fill_value)
    out = np.asarray(S @ d)
    if not zero_fill(s.fill_value):
        out = out + np.asarray(s.fill_value, out.dtype) * np.sum(d, axis=0, dtype=d.dtype)
    return dense_layout(out.astype(s.dtype, copy=False))


def sp_fill_matrix(S, fill):
    """``fill`` at every stored position of scipy CSR ``S`` (the stored part of ``fill`` everywhere)."""
    import scipy.sparse as sp

    return sp.csr_array((np.full(S.nnz, fill, S.dtype), S.indices, S.indptr), shape=S.shape)


@_matmul_kernels.xla
def _matmul_xla(a, b, *, dense_out: bool = False):
    # A dense-layout operand (a product's result, say) is a dense array.
    a = dense_values(a)
    b = dense_values(b)
    if _is_plain_matrix(a) and not isinstance(b, BCOOArray) and b.ndim <= 2:
        # The common case (scipy's A @ x, A @ X): one kernel call on the buffers.
        if dense_out:
            return spmm_dense(a.data, a.indices, a.shape, b, rows_sorted=a.indices_sorted)
        return _dense_result(spmm(a.data, a.indices, a.shape, b, rows_sorted=a.indices_sorted))
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1,) + a.shape) if isinstance(a, BCOOArray) else a[None]
    if squeeze_b:
        b = reshape(b, b.shape + (1,)) if isinstance(b, BCOOArray) else b[:, None]
    sa, sb = isinstance(a, BCOOArray), isinstance(b, BCOOArray)
    if sa and sb:
        if a.ndim == 2 and b.ndim == 2 and zero_fill(a.fill_value) and zero_fill(b.fill_value):
            out = sparse_product(a, b)
        else:
            out = dense_layout(_sparse_dense(a, b.todense()))
    elif sa:
        out = dense_layout(_sparse_dense(a, b))
    elif sb:
        # d @ s == (s^T @ d^T)^T
        out_t = _sparse_dense(matrix_transpose(b), jnp.swapaxes(a, -1, -2))
        out = dense_layout(jnp.swapaxes(out_t, -1, -2))
    else:
        out = dense_layout(jnp.matmul(a, b))
    if squeeze_a or squeeze_b:
        shape = list(out.shape)
        if squeeze_b:
            shape.pop(-1)
        if squeeze_a:
            shape.pop(-1 if squeeze_b else -2)
        out = reshape(out, tuple(shape))
    return out


@routed
def matrix_transpose(x, /) -> BCOOArray:
    """Transpose the last two dimensions (array API ``matrix_transpose``).

    Returns
    -------
    BCOOArray
        Shape ``(..., n, m)``; the entries move, values and fill value stay.

    Raises
    ------
    ValueError
        If ``x`` has fewer than two dimensions.
    """
    x = as_sparse(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got {x.ndim}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


@routed
def tensordot(x1, x2, /, *, axes=2):
    """Contract ``x1`` and ``x2`` over the given axes (array API ``tensordot``).

    Parameters
    ----------
    x1, x2 : BCOOArray or array
        Numeric operands.
    axes : int or (sequence, sequence)
        The last ``axes`` dimensions of ``x1`` with the first of ``x2``, or
        explicit lists of axes.

    Returns
    -------
    BCOOArray, jax.Array or numpy.ndarray
        Shape: ``x1``'s free axes then ``x2``'s. Computed as one matrix
        product of the operands reshaped to 2-D, so sparsity and the result's
        type (the mixed-type rule) follow [`matmul`][bcoo_array.matmul].

    Raises
    ------
    ValueError
        If contracted dimensions differ in size.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    if isinstance(axes, int) or isinstance(axes, np.integer):
        n = operator.index(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError(f"axes={n} must be between 0 and min(x1.ndim, x2.ndim)")
        ax_a = list(range(a.ndim - n, a.ndim))
        ax_b = list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [operator.index(i) % a.ndim for i in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [operator.index(i) % b.ndim for i in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError(f"tensordot(): contracted axes {ax_a} of {a.shape} and {ax_b} of {b.shape} differ")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    kdim = prod(a.shape[i] for i in ax_a)
    ma = prod(a.shape[i] for i in free_a)
    nb = prod(b.shape[j] for j in free_b)

    def as2d(x, order, shape2):
        if isinstance(x, BCOOArray):
            return reshape(permute_dims(x, tuple(order)), shape2)
        return jnp.transpose(x, order).reshape(shape2)

    a2 = as2d(a, free_a + ax_a, (ma, kdim))
    b2 = as2d(b, ax_b + free_b, (kdim, nb))
    out = matmul_as_bcoo(a2, b2)
    out = reshape(out, tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b))
    return _as_kind(out, _dense_kind(x1, x2))


@routed
def vecdot(x1, x2, /, *, axis=-1) -> BCOOArray:
    """Vector dot product ``sum(conj(x1) * x2, axis)`` (array API ``vecdot``).

    Returns
    -------
    BCOOArray
        The broadcast shape without ``axis``; sparse operands stay sparse.

    Raises
    ------
    ValueError
        If the sizes along ``axis`` differ.
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    check_category(np.dtype(a.dtype), "numeric", "vecdot", "x1")
    check_category(np.dtype(b.dtype), "numeric", "vecdot", "x2")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot() needs operands of at least one dimension")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot(): sizes along axis {axis} differ: {a.shape} and {b.shape}")
    if axis >= 0 and (axis >= a.ndim or axis >= b.ndim):
        raise ValueError("vecdot(): a non-negative axis must be valid for both operands; pass a negative axis")
    ax = axis if axis < 0 else axis - max(a.ndim, b.ndim)
    prodarr = multiply(conj(a), b)
    # The standard: the result has the promoted dtype of the operands (no widening as in sum).
    return _sum(prodarr, axis=ax, dtype=prodarr.dtype)


__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
