"""Sparse matrix products: the one place where their kernels are chosen.

``spmm`` (sparse @ dense vector or matrix) and ``spgemm`` (sparse @
sparse) look at the buffers (concrete or traced indices, backend, dtype,
number of right-hand columns) and call one named kernel:

* first choice: the native C++ kernel of ``.native`` (a ``jax.ffi``
  custom call, one loop over the entries that reads the BCOO buffers as
  they are) when it is built and enabled (``native.available()``: CPU
  backend, ``BCOO_ARRAY_NATIVE`` not ``0``), ``data`` and ``x`` share a
  float32/64 or complex64/128 dtype (int32/int64 indices), and the operands
  are concrete (traced ones only when the caller promises not to transpose
  the product: see ``spmm``). Measured faster than every kernel below
  on CPU (see ``docs/performance.md``, "Native kernel"). Otherwise:
* concrete indices, one right-hand column, CPU, many entries: the row-split
  ELL SpMV of ``.ell``;
* concrete indices, several floating columns, CPU: XLA's native CSR kernel
  (``.csr.matmat_bcsr``);
* concrete indices otherwise: gather + sorted segment sum over a cached row
  plan (``.csr.matmat_segments``);
* traced indices: ``.coo.coo_matmat``, a gather of the dense rows and a
  segment sum over the output rows (no nse x nse temporaries).

On an accelerator (``data`` on a TPU or GPU) with concrete indices, the
first choice is the matrix's accelerator layout (``.layouts``: diagonal,
tiles, sliced ELL, dense), chosen once per index buffer and cached beside it,
its values placed once per data buffer, and the product compiled once per
layout (``_accelerator_product``); traced indices take ``coo_matmat``.

``spgemm`` runs scipy's SMMP (Bank & Douglas) on the host when
everything is concrete, on CPU and of a floating dtype scipy supports, and
otherwise the expand-sort-compress plan of ``spgemm_plan`` (Gustavson's
row-by-row product, vectorised as in cuSPARSE's ESC scheme): one product
per pair (A[i, k], B[k, j]) that meets, so memory is the number of
multiplications, never nse_A x nse_B. With traced indices (under ``jit``)
the number of products is unknown: ``spgemm_bounded`` runs the same ESC
scheme with ``jnp`` sorts over a static number of product slots, bounded by
``spgemm_products_bound`` from what is static (the buffers' sizes,
concrete indices of one operand) or given by the caller.

A new kernel for these operations (a native one, say) is added here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from .._engine import cpu_only
from .._shapes import is_concrete, is_tracer
from . import csr, ell, native
from .cache import PLANS
from .coo import coo_matmat
from .host import host_buffers, on_host, to_device


def host_spmm(data, indices, shape: tuple[int, int], x):
    """``A @ x`` as a NumPy array computed on the host, or None where that path does not apply.

    For eager callers that want NumPy results (scipy's ``A.dot(x)``, the
    LinearOperator ``matvec`` that scipy's solvers call): the native loop on
    zero-copy views of concrete CPU buffers, with no XLA dispatch and no
    transfer back, so a call costs about what scipy's does. None when the
    native kernel is not built, the buffers are traced or not on the CPU, or
    the dtypes are not supported; the caller then uses ``spmm``.

    Returns
    -------
    numpy.ndarray, shape ``(m,)`` or ``(m, n)``, or None
    """
    if not (x.ndim in (1, 2) and native.supports(data.dtype, x.dtype, indices.dtype) and native.available()):
        return None
    if x.shape[0] != shape[1]:  # the loops read x[col] unchecked on the CSR path
        raise ValueError(f"host_spmm: x has {x.shape[0]} rows for a matrix of shape {tuple(shape)}")
    if x.ndim == 1 and not is_tracer(x):
        bound = host_matvec(data, indices, shape)
        if bound is not None:
            return bound(x)
    host = host_buffers(data, indices, x)
    if host is None:
        return None
    return native.host_spmm(*host, shape[0])[0]


def host_matvec(data, indices, shape: tuple[int, int], source=None) -> native.CsrMatvec | None:
    """The CSR kernels bound to one matrix for its vector products, or None where they do not apply.

    ``data`` ``(nse,)`` and ``indices`` ``(nse, 2)`` are the JAX buffers of a
    zero-filled 2-D matrix. The result (``native.CsrMatvec``) holds
    zero-copy views of them and their cached CSR structure, so each call
    ``bound(x)`` (``x``: NumPy ``(k,)`` of ``data``'s dtype) runs the native
    loop alone, with scipy's memory traffic, and ``bound.device(x)`` (a
    concrete JAX vector) the CSR FFI kernel on the structure uploaded once
    (``_device_csr``). None when the native kernel is
    not built or enabled, the dtypes are not supported, the buffers are
    NumPy, traced or not on the CPU, or the valid entries do not come first
    in row order (canonical form does); callers then use ``host_spmm`` or
    ``spmm``. ``BCOOArray`` keeps the result while it keeps its buffers.
    """
    if isinstance(indices, np.ndarray) and source is None:
        return None  # NumPy buffers need ``source``, their JAX twins for the device kernel
    if (not native.supports(data.dtype, data.dtype, indices.dtype)
            or not native.available() or not is_concrete(data, indices) or not on_host(indices)):
        return None
    st = csr.csr_arrays(indices, shape)  # cached; None unless row-sorted with valid entries first
    if st is None or st.indptr.dtype != st.cols.dtype:
        return None
    host = host_buffers(data)
    if host is None:
        return None
    if source is None:
        source = (data, indices)
        return native.CsrMatvec(source, st.indptr, st.cols, host[0], shape,
                                device_structure=lambda: _device_csr(indices, shape))
    return native.CsrMatvec(source, st.indptr, st.cols, host[0], shape,
                            device_structure=lambda: _device_csr(source()[1], shape))


class TransposedMatvec:
    """``y = A.T @ x`` for NumPy vectors, read from ``A``'s own CSR structure: scipy's CSC product.

    ``A``'s CSR arrays are the CSC arrays of ``A.T`` (what scipy's ``.T``
    returns), so the product is scipy's ``csc_matvec`` loop on zero-copy
    views, with no transposed copy of the values. Bound to a transpose by
    ``permute_dims``, with the interface of ``native.CsrMatvec`` (a JAX
    vector in host memory takes the same product on a view of it).
    """

    __slots__ = ("_parts", "_csc", "dtype", "k")

    def __init__(self, data: np.ndarray, cols: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]):
        self._parts = (data, cols, indptr, shape)
        self._csc = None  # scipy's constructor runs on the first product, not on every transpose
        self.dtype = data.dtype
        self.k = shape[0]

    def serves(self, x: np.ndarray) -> bool:
        """Whether NumPy ``x`` is a vector of ``A``'s row count and dtype."""
        return x.ndim == 1 and x.dtype == self.dtype and x.shape[0] == self.k

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``A.T @ x``, a fresh NumPy vector."""
        if self._csc is None:
            data, cols, indptr, (m, n) = self._parts
            self._csc = sp.csc_array((data, cols, indptr), shape=(n, m), copy=False)
        return self._csc @ x

    def serves_device(self, x) -> bool:
        """Whether ``x`` is a concrete JAX vector in host memory that ``serves`` as a NumPy view."""
        if is_tracer(x) or not isinstance(x, jax.Array) or x.ndim != 1 or x.dtype != self.dtype:
            return False
        return x.shape[0] == self.k and on_host(x)

    def device(self, x: jax.Array) -> jax.Array:
        """``A.T @ x`` for a JAX vector: the same host product on a zero-copy view of ``x``, its result handed
        to JAX once (a transpose made for one product, ``A.T @ x`` in a loop, builds no structure of its
        own and moves no buffer of ``A`` into JAX)."""
        return to_device(self(host_buffers(x)[0]), owned=True)


def host_rmatvec(data, indices, shape: tuple[int, int]) -> TransposedMatvec | None:
    """The product by the transpose of the zero-filled 2-D matrix ``(data, indices)``, or None.

    ``indices`` (a JAX or NumPy buffer: its cached CSR structure is keyed on
    the object) must be row-sorted with valid entries first; ``data`` must be
    readable on the host in a dtype scipy multiplies (float, complex).
    """
    if np.dtype(data.dtype).kind not in "fc" or not is_concrete(data, indices):
        return None
    st = csr.csr_arrays(indices, shape)
    if st is None:
        return None
    host = data if isinstance(data, np.ndarray) else host_buffers(data)
    if host is None:
        return None
    host = host if isinstance(host, np.ndarray) else host[0]
    return TransposedMatvec(host[:st.n_valid], st.cols, st.indptr, shape)


def _on_cpu() -> bool:
    return jax.default_backend() == "cpu"


def spmm(data, indices, shape: tuple[int, int], x, *, rows_sorted: bool = False, traced_native: bool = False):
    """``A @ x`` for a zero-filled 2-D COO matrix ``A`` (n_batch = n_dense = 0) and a dense ``x``.

    Parameters
    ----------
    data : array, shape ``(nse,)``
        Stored values (may be traced).
    indices : integer array, shape ``(nse, 2)``
        Row and column of each entry; padding (an index equal to its
        dimension) adds nothing. Concrete indices get cached row plans.
    shape : (m, k)
    x : array, shape ``(k,)`` or ``(k, n)``
        Dense operand of ``data``'s dtype (NumPy or JAX, may be traced).
    rows_sorted : bool
        Whether the rows of ``indices`` are sorted (helps the traced kernel).
    traced_native : bool
        Also use the native CSR kernel (a ``custom_jvp`` FFI call, which JAX
        cannot transpose) on traced operands with concrete indices. Only for
        callers that never transpose the product (``spmv_operator``). Without
        it, traced operands take the native COO primitive, which has JVP,
        transpose and batching rules (``native.coo_matmul_p``), on CPU.

    Returns
    -------
    jax.Array, shape ``(1, m)`` or ``(1, m, n)``
        The product with a leading axis of one: the ``data`` buffer of a
        dense-layout BCOOArray. Duplicate entries add up.
    """
    m, k = shape
    out = _accelerator_product(data, indices, shape, x)
    if out is not None:
        return out[None]
    out = _native_product(data, indices, shape, x, rows_sorted=rows_sorted, traced_native=traced_native,
                          leading_axis=True)
    if out is not None:
        return out
    if is_tracer(indices):
        out = coo_matmat(data, indices[:, 0], indices[:, 1], x, m, rows_sorted)
        return out[None]
    if m == 0 or k == 0 or data.shape[0] == 0:
        return jnp.zeros((1, m) + tuple(x.shape[1:]), jnp.result_type(data.dtype, x.dtype))
    plan = csr.row_plan(indices, shape)
    if plan.n_valid == 0:
        return jnp.zeros((1, m) + tuple(x.shape[1:]), jnp.result_type(data.dtype, x.dtype))
    if x.ndim == 1 and _on_cpu():
        eplan = ell.ell_plan(indices, shape)
        if eplan is not None:
            return ell.matvec(data, eplan, x, m)
    if (x.ndim == 2 and x.shape[1] >= csr.CSR_KERNEL_MIN_COLS and np.dtype(data.dtype).kind in "fc"
            and data.dtype == x.dtype and _on_cpu()):
        return csr.matmat_bcsr(data, plan.perm, plan.cols, plan.indptr, x, shape=(m, k), n_valid=plan.n_valid)
    return csr.matmat_segments(data, plan.perm, plan.rows, plan.cols, x, m=m, n_valid=plan.n_valid)


def spmm_dense(data, indices, shape: tuple[int, int], x, *, rows_sorted: bool = False):
    """``spmm`` without the leading axis: ``A @ x`` of shape ``(m,)`` or ``(m, n)``.

    For callers that return the product as a ``jax.Array`` (the mixed-type
    rule): the native kernel's eager call gives that shape in its one
    dispatch; other kernels drop the leading axis of ``spmm``'s result.
    """
    out = _accelerator_product(data, indices, shape, x)
    if out is not None:
        return out
    out = _native_product(data, indices, shape, x, rows_sorted=rows_sorted, traced_native=False, leading_axis=False)
    if out is not None:
        return out
    return spmm(data, indices, shape, x, rows_sorted=rows_sorted)[0]


def _accelerator_platform(data, indices) -> str | None:
    """The accelerator platform (``"tpu"``, ``"gpu"``) ``data`` lives on, or None (a CPU, traced indices)."""
    if cpu_only() or is_tracer(indices) or isinstance(indices, np.ndarray):
        return None
    if is_tracer(data):
        platform = jax.default_backend()
    else:
        try:
            devices = data.devices()
        except AttributeError:  # NumPy data
            return None
        platform = next(iter(devices)).platform if len(devices) == 1 else None
    if platform in (None, "cpu"):
        return None
    return "gpu" if platform in ("cuda", "rocm") else platform


def _accelerator_product(data, indices, shape, x):
    """``A @ x`` in the matrix's accelerator layout (``.layouts``), or None where that does not apply.

    Applies to concrete indices with ``data`` on an accelerator and ``x``
    of one or two dimensions. The layout is chosen once per index buffer
    (``PLANS``, beside the buffer), for eager calls with ``eager=True``
    (``layouts.EAGER_KINDS`` where they are cheap: a program compiled once
    per size bucket) and for traced operands as for a prepared operator,
    and its index arrays copied to the device; the values are placed on
    the host once per concrete data buffer (``accel.placed_values``: no
    program compiled per ``nse``), by a scatter-add per product when
    ``data`` is traced; the product is one compiled program per layout and
    shapes (``accel.compiled_product``).
    """
    platform = _accelerator_platform(data, indices)
    if platform is None or x.ndim not in (1, 2) or np.dtype(data.dtype).kind not in "fc":
        return None
    from . import layouts
    from .accel import compiled_product, device_layout, freeze_static, placed_values

    m, k = shape
    itemsize = np.dtype(data.dtype).itemsize
    device = None if is_tracer(data) else next(iter(data.devices()))
    # an eager call (nothing traced) pays its program's compile on its first call and dispatch on every call;
    # a traced one (a jitted solver closing over A) is compiled with its caller and may loop over the product
    eager = not (is_tracer(data) or is_tracer(x))

    def build():
        # panels: uniform tiles and a shorter unroll, a kernel that compiles faster, as an eager product's first
        # call pays for its compile (TPU v5e, 2000 x 2000 with 20,000 entries, unrolled 4 times: first A @ v in
        # 691 ms with uniform tiles, 1,221 ms with mixed ones; a call runs in the 0.65 ms of dispatch either way)
        # (eager: a layout compiled once per shape bucket where that is cheap, not once per pattern)
        lay = layouts.choose(np.asarray(indices).reshape(-1, 2), (m, k), itemsize, platform, mixed_tiles=False,
                             dtype=data.dtype, eager=eager)
        if lay.kind == "panels":  # (unrolled once for a small matrix: panels.eager_tile_unroll)
            from .panels import eager_tile_unroll

            lay.static["unroll"] = eager_tile_unroll(max(lay.arrays["lcols"].shape[0],
                                                         lay.arrays.get("lcols_t", lay.arrays["lcols"]).shape[0]))
        elif lay.kind == "sell":  # the same for the segmented kernel's lane loop (1.5 s to compile unrolled)
            from .segmented import EAGER_LANE_UNROLL

            lay.static["unroll"] = EAGER_LANE_UNROLL
            # several columns of a matrix too large for the SELL-8 kernel: the COO formula, not the wide kernel
            # (25 s to compile on a TPU v5e whatever its unroll, which an eager product's first call would pay)
            lay.static["wide"] = False
        slot, arrays, perm, inverse = device_layout(lay, device)
        return (lay.kind, freeze_static(lay.static), lay.n_slots, (slot, lay.arrays.get("slot_t")), arrays, perm,
                inverse)

    kind, static, n_slots, slots, arrays, perm, inverse = PLANS.get((indices,), ("accel-layout", m, k, itemsize,
                                                                                   platform, eager), build)
    place = lambda: placed_values(data, *slots, arrays, n_slots, device)  # noqa: E731
    # concrete values once per data buffer and layout (an eager call and a traced x may take two); traced ones
    # per product
    values = place() if is_tracer(data) else PLANS.get((data, indices), ("accel-values", m, k, eager), place)
    dtype = jnp.result_type(data.dtype, x.dtype)
    return compiled_product(values, arrays, jnp.asarray(x, dtype), perm, inverse, kind=kind, static=static,
                            shape=(m, k), lanes=platform == "tpu")


def _native_product(data, indices, shape, x, *, rows_sorted: bool, traced_native: bool, leading_axis: bool):
    """``A @ x`` on a native FFI kernel (one compiled dispatch eagerly), or None where none applies.

    Applies when the kernels are built and enabled and the dtypes are
    supported, eagerly and under tracing. A vector ``x`` goes to the CSR
    kernel (scipy's loop: one column index per entry) when every operand is
    concrete (traced data or ``x`` with concrete indices only with
    ``traced_native``) and the indices have a cached CSR structure (uploaded
    to JAX once per index buffer); otherwise to the COO primitive, which
    needs no structure (building one from traced indices costs more than it
    saves in a single product: see ``spmv_operator``) and which JAX can
    differentiate, transpose and batch.
    """
    if not (x.ndim in (1, 2) and native.supports(data.dtype, x.dtype, indices.dtype) and native.available()):
        return None
    m = shape[0]
    concrete = is_concrete(data, indices, x)
    if x.ndim == 1 and (concrete or (traced_native and is_concrete(indices))):
        st = _device_csr(indices, shape)
        if st is not None:
            return native.csr_matvec(data, indices, st[0], st[1], x, m, leading_axis=leading_axis)
    # The COO kernel is a primitive with JVP, transpose and batching rules (``native.coo_matmul_p``): traced
    # operands take it too, and jax.linear_transpose / custom_linear_solve transpose it.
    return native.spmm(data, indices, x, m) if leading_axis else native.coo_matmul(data, indices, x, m)


def spmv_operator(data, indices, shape: tuple[int, int], *, rows_sorted: bool):
    """``v -> A @ v`` for a solver that applies one zero-filled 2-D matrix many times and never transposes it.

    What every product would redo is done once, when the operator is made:
    for traced row-sorted indices (a solver under ``jax.jit`` with the
    matrix as an argument) the CSR structure is built here
    (``native.sorted_csr``), outside the solver's loop, and each product is
    the native CSR kernel; otherwise each product is ``spmm`` with
    ``traced_native=True`` (cached structures for concrete indices, else the
    COO kernel or the XLA kernels). Measured on cage11, 50 products in a
    ``fori_loop``: structure built once 30 ms, COO kernel 55 ms, structure
    built in every product 63 ms.

    Parameters
    ----------
    data, indices, shape, rows_sorted
        As in ``spmm``; ``rows_sorted`` must hold with padding rows last
        (canonical form).

    Returns
    -------
    callable
        ``apply(v)`` for ``v`` of shape ``(k,)`` or ``(k, n)``: ``A @ v`` as
        a jax.Array of shape ``(m,)`` or ``(m, n)``.
    """
    m = shape[0]
    structure = None
    if (rows_sorted and is_tracer(indices) and native.supports(data.dtype, data.dtype, indices.dtype)
            and native.available()):
        structure = native.sorted_csr(indices, m)

    def apply(v):
        if structure is not None and v.ndim == 1 and v.dtype == data.dtype:
            return native.csr_matvec(data, indices, *structure, v, m)
        return spmm(data, indices, shape, v, rows_sorted=rows_sorted, traced_native=True)[0]

    return apply


def _device_csr(indices, shape):
    """The cached CSR structure ``(indptr, cols)`` of concrete 2-D ``indices`` as JAX arrays, or None.

    None unless the valid entries come first in row order (``csr.csr_arrays``).
    Uploaded once per index buffer (the plan cache holds it while the buffer lives).
    """
    if isinstance(indices, np.ndarray):
        return None
    st = csr.csr_arrays(indices, shape)
    if st is None or st.indptr.dtype != st.cols.dtype:
        return None
    return PLANS.get((indices,), ("csr-jax",) + tuple(shape), lambda: (to_device(st.indptr), to_device(st.cols)))


def batched_spmm(data, indices, shape, x, n_batch: int):
    """``A @ x`` for a BCOO ``A`` whose last dimension is sparse, with ``n_batch`` batch dimensions
    matching those of dense ``x`` (``jax.experimental.sparse.bcoo_dot_general``)."""
    from jax.experimental import sparse as jsparse  # deferred: slow to import, rarely needed

    mat = jsparse.BCOO((data, indices), shape=tuple(shape))
    dims = (([len(shape) - 1], [x.ndim - 2]), (list(range(n_batch)), list(range(n_batch))))
    return jsparse.bcoo_dot_general(mat, x, dimension_numbers=dims)


_SCIPY_SPGEMM_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def spgemm(a_data, a_indices, b_data, b_indices, m: int, k: int, n: int, *, products: int | None = None):
    """Sparse ``(m, k) @ (k, n)`` for canonical zero-filled 2-D COO operands.

    Concrete indices give the exact product (``products`` is not used).
    Traced indices need ``products``, a static upper bound of the number of
    pairs ``A[i, k] B[k, j]`` that meet (see ``spgemm_bounded``); the
    result then has ``min(products, m * n)`` stored slots, padding last.

    Returns
    -------
    data, indices : arrays, shapes ``(nse,)`` and ``(nse, 2)`` (NumPy or JAX)
        The product's stored entries, unique.
    rows_sorted_cols_sorted : bool
        Whether the indices are sorted row-major (scipy's SpGEMM leaves the
        columns of a row unsorted; the ESC plan sorts them).

    Notes
    -----
    scipy's SMMP drops products that cancel to exactly 0 (the value is the
    same); the ESC plan keeps them as explicit entries.
    """
    if not is_concrete(a_indices, b_indices):
        if products is None:
            raise ValueError("spgemm of traced indices needs products=, a static bound of the number of products")
        data, indices = spgemm_bounded(a_data, a_indices, b_data, b_indices, m, k, n, products)
        return data, indices, True
    if (is_concrete(a_data, b_data) and np.dtype(a_data.dtype) in _SCIPY_SPGEMM_DTYPES
            and b_data.dtype == a_data.dtype and _on_cpu()):
        ca, cb = csr.csr_arrays(a_indices, (m, k)), csr.csr_arrays(b_indices, (k, n))
        if ca is not None and cb is not None:
            A = sp.csr_array((np.asarray(a_data)[:ca.n_valid], ca.cols, ca.indptr), shape=(m, k), copy=False)
            B = sp.csr_array((np.asarray(b_data)[:cb.n_valid], cb.cols, cb.indptr), shape=(k, n), copy=False)
            C = A @ B
            idx = np.empty((C.nnz, 2), C.indices.dtype)
            if not native.host_csr_to_coo(C.indptr, C.indices, idx):  # one pass, no COO object
                C = C.tocoo()
                return C.data, np.stack([C.row, C.col], axis=1), False
            return C.data, idx, False
    ia = np.asarray(a_indices)
    ib = np.asarray(b_indices)
    va = np.nonzero((ia[:, 0] < m) & (ia[:, 1] < k))[0]
    vb = np.nonzero((ib[:, 0] < k) & (ib[:, 1] < n))[0]
    a_pos, b_pos, seg, rows, cols = spgemm_plan(ia[va, 0], ia[va, 1], ib[vb, 0], ib[vb, 1], k, n)
    if isinstance(a_data, np.ndarray) and isinstance(b_data, np.ndarray):  # the host engine's buffers: NumPy
        with np.errstate(all="ignore"):
            prods = (a_data[va[a_pos]] * b_data[vb[b_pos]]).astype(a_data.dtype, copy=False)
            data = np.zeros(rows.size, a_data.dtype)
            np.add.at(data, seg, prods)
        return data, np.stack([rows, cols], axis=1), True
    prods = a_data[jnp.asarray(va[a_pos])] * b_data[jnp.asarray(vb[b_pos])]
    data = jax.ops.segment_sum(prods, jnp.asarray(seg), num_segments=rows.size, indices_are_sorted=False)
    return data, np.stack([rows, cols], axis=1), True


def spgemm_plan(a_rows, a_cols, b_rows, b_cols, shape_b_rows: int, n_cols: int):
    """Plan the product of two canonical 2-D COO matrices (concrete NumPy indices).

    Parameters
    ----------
    a_rows, a_cols : int arrays of the valid entries of A (any order, unique).
    b_rows, b_cols : int arrays of the valid entries of B.
    shape_b_rows : int
        Number of rows of B (= columns of A).
    n_cols : int
        Number of columns of B.

    Returns
    -------
    a_pos, b_pos : int64 arrays, one per elementary product
        Positions in A's and B's entry lists.
    segment : int64 array
        Output entry of each product (sorted output order).
    out_rows, out_cols : int64 arrays
        The output pattern, sorted row-major.
    """
    b_order = np.argsort(b_rows, kind="stable")
    counts = np.bincount(b_rows, minlength=shape_b_rows)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    per_a = counts[a_cols]
    total = int(per_a.sum())
    a_pos = np.repeat(np.arange(a_rows.size), per_a)
    starts = np.repeat(ptr[a_cols] - np.concatenate([[0], np.cumsum(per_a)[:-1]]), per_a)
    b_sorted_pos = np.arange(total) + starts
    b_pos = b_order[b_sorted_pos]
    keys = a_rows[a_pos].astype(np.int64) * max(n_cols, 1) + b_cols[b_pos].astype(np.int64)
    uniq, segment = np.unique(keys, return_inverse=True)
    return a_pos, b_pos, segment, uniq // max(n_cols, 1), uniq % max(n_cols, 1)


def _max_count(keys, size: int) -> int:
    """Largest number of occurrences of a value in ``range(size)`` among concrete ``keys`` (0 if none)."""
    keys = np.asarray(keys)
    keys = keys[(keys >= 0) & (keys < size)]
    return int(np.bincount(keys, minlength=1).max()) if keys.size else 0


def spgemm_products_bound(a_indices, b_indices, m: int, k: int, n: int, *, b_row_bound: int | None = None) -> int:
    """Static upper bound of the products of ``(m, k) @ (k, n)`` (pairs ``A[i, k] B[k, j]`` that meet).

    Every stored entry ``A[i, k]`` meets the entries of row ``k`` of ``B``,
    and every ``B[k, j]`` those of column ``k`` of ``A``, so the count is at
    most ``min(nse_A * r_B, nse_B * c_A)`` with ``r_B`` the most entries in a
    row of ``B`` and ``c_A`` the most in a column of ``A``. Concrete indices
    give them exactly; traced ones only ``r_B <= min(nse_B, n)`` and ``c_A <=
    min(nse_A, m)`` (operands with unique indices), or ``b_row_bound`` when
    the caller knows more (``B`` stored with one batch dimension per row).

    Parameters
    ----------
    a_indices, b_indices : int arrays, shapes ``(nse_A, 2)``, ``(nse_B, 2)``
        Canonical (unique) indices, concrete or traced; padding is ignored
        when concrete.
    m, k, n : int
        The product's dimensions.
    b_row_bound : int, optional
        A static bound of the entries stored in one row of ``B``.

    Returns
    -------
    int
        The bound (exact when both index arrays are concrete).
    """
    nse_a, nse_b = int(a_indices.shape[0]), int(b_indices.shape[0])
    if is_concrete(a_indices, b_indices):
        ia, ib = np.asarray(a_indices), np.asarray(b_indices)
        ia = ia[(ia[:, 0] < m) & (ia[:, 1] < k)]
        ib = ib[(ib[:, 0] < k) & (ib[:, 1] < n)]
        return int(np.bincount(ib[:, 0], minlength=k)[ia[:, 1]].sum()) if k else 0
    r_b = _max_count(np.asarray(b_indices)[:, 0], k) if is_concrete(b_indices) else min(nse_b, n)
    if b_row_bound is not None:
        r_b = min(r_b, int(b_row_bound))
    c_a = _max_count(np.asarray(a_indices)[:, 1], k) if is_concrete(a_indices) else min(nse_a, m)
    return min(nse_a * r_b, nse_b * c_a)


def spgemm_bounded(a_data, a_indices, b_data, b_indices, m: int, k: int, n: int, products: int):
    """Sparse ``(m, k) @ (k, n)`` with at most ``products`` products, traceable (jnp sorts only).

    The expand-sort-compress scheme of ``spgemm_plan`` on static sizes:
    ``B``'s entries are ordered by row, product slot ``t`` is assigned to the
    entry of ``A`` whose run of ``B``-row entries covers ``t`` (a cumulative
    sum and a binary search), the products are sorted by output position
    (``lexsort``) and equal positions summed (``segment_sum``). Gradients
    flow through ``a_data`` and ``b_data``.

    Parameters
    ----------
    a_data, b_data : arrays, shapes ``(nse_A,)``, ``(nse_B,)``
        Stored values (same dtype).
    a_indices, b_indices : int arrays, shapes ``(nse_A, 2)``, ``(nse_B, 2)``
        Unique indices (duplicates would each make their own products and be
        summed, which is also correct); padding entries (an index equal to
        its dimension) make no product.
    m, k, n : int
        The product's dimensions.
    products : int
        Static number of product slots. Products beyond it are dropped, as
        ``jnp.nonzero(size=)`` drops entries beyond its size: the caller
        passes a proven bound (``spgemm_products_bound``) or checks a
        user's bound when the indices are concrete.

    Returns
    -------
    data : array, shape ``(nse,)``
    indices : int array (the wider of the two index dtypes), shape ``(nse, 2)``
        ``nse = min(products, m * n)``; unique entries sorted row-major,
        padding (index ``(m, n)``, value 0) last.
    """
    products = int(products)
    nse = min(products, m * n)
    dtype = jnp.result_type(a_data.dtype, b_data.dtype)
    idt = jnp.promote_types(a_indices.dtype, b_indices.dtype)  # holds m (A's rows) and n (B's columns)
    nse_a, nse_b = a_indices.shape[0], b_indices.shape[0]
    if nse == 0 or nse_a == 0 or nse_b == 0 or k == 0:
        pad = jnp.broadcast_to(jnp.asarray([m, n], idt), (nse, 2))
        return jnp.zeros((nse,), dtype), pad
    ar, ac = a_indices[:, 0], a_indices[:, 1]
    br, bc = b_indices[:, 0], b_indices[:, 1]
    a_valid = (ar < m) & (ac < k)
    b_row = jnp.where((br < k) & (bc < n), br, k)  # padding of B sorts last, in no row
    order = jnp.argsort(b_row, stable=True)
    ptr = jnp.searchsorted(b_row[order], jnp.arange(k + 1, dtype=b_row.dtype), side="left")
    counts = ptr[1:] - ptr[:-1]  # entries of B in each row
    ac_c = jnp.clip(ac, 0, k - 1)
    per_a = jnp.where(a_valid, counts[ac_c], 0)
    ends = jnp.cumsum(per_a)  # products of A's entries 0..e
    t = jnp.arange(products, dtype=ends.dtype)
    e = jnp.clip(jnp.searchsorted(ends, t, side="right"), 0, nse_a - 1)  # the entry of A of slot t
    valid = t < ends[-1]
    b_pos = order[jnp.clip(ptr[ac_c[e]] + t - (ends[e] - per_a[e]), 0, nse_b - 1)]
    rows = jnp.where(valid, ar[e], m)
    cols = jnp.where(valid, bc[b_pos], n)
    vals = jnp.where(valid, a_data[e].astype(dtype) * b_data[b_pos].astype(dtype), jnp.zeros((), dtype))
    perm = jnp.lexsort((cols, rows))
    rows, cols, vals = rows[perm], cols[perm], vals[perm]
    new = jnp.concatenate([jnp.ones((1,), bool), (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])])
    seg = jnp.cumsum(new) - 1  # output slot of each product; the padding group's slot may be >= nse (dropped)
    data = jax.ops.segment_sum(vals, seg, num_segments=nse, indices_are_sorted=True)
    out_rows = jnp.full((nse,), m, idt).at[seg].set(rows.astype(idt), mode="drop")
    out_cols = jnp.full((nse,), n, idt).at[seg].set(cols.astype(idt), mode="drop")
    return data, jnp.stack([out_rows, out_cols], axis=1)
