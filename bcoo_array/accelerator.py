"""Sparse products on accelerators: a matrix prepared once in the layout its chip streams.

On a TPU, the COO product of a BCOO matrix (one gather of ``x`` and one
scatter-add per stored entry) runs at XLA's element gather speed, about
0.14 G entries/s on a v5e: 0.15% of the chip's bandwidth (issue 28). A
*prepared operator* stores the matrix in the layout that suits its pattern
and the backend, chosen by the library from the indices while they are
concrete (``bcoo_array._kernels.layouts``): diagonal storage for stencils
and banded matrices, dense ``(bm, 128)`` tiles for block-structured ones
(after a reverse Cuthill-McKee reordering where that packs tiles fuller),
sliced ELL for the rest, dense storage for small matrices, and the BCOO
buffers with the native kernels on a CPU. On a TPU, irregular matrices of
32-bit values take the ``panels`` layout, which feeds a Pallas TPU kernel
that keeps ``x`` in VMEM (``bcoo_array._kernels.panels``), and, for many
columns of ``x``, a row-gather kernel on the same matrix's SELL-8 slots
(``bcoo_array._kernels.sell``). The ``sell`` layout keeps such slots and,
for one vector, the entries in ``(8, 128)`` blocks for a kernel that
gathers 8 entries' elements of ``x`` per vector step and sums rows by
segmented lane sums, its ``x`` and result at 4 bytes per element of VMEM
(``bcoo_array._kernels.segmented``): float32 matrices too large or too
scattered for ``panels`` take it.
The guide:
``docs/guides/accelerators.md``.

```python
import jax
import bcoo_array as xp
from bcoo_array import accelerator

A = xp.mmread("cage11.mtx.gz", dtype=xp.float32)
op = accelerator.prepare(A, device=jax.devices()[0])   # analysed once, placed on the chip
y = op @ x                                             # or op(x), op.matvec(x)
x, info = accelerator.cg(op, b)                        # solvers run in the reordered space
jax.jit(lambda op, b: accelerator.cg(op, b)[0])(op, b) # the operator is a pytree
```

The operator is a pytree whose leaves are the layout's values and index
arrays; its layout is static aux data, so ``jax.jit`` compiles one program
per layout and passes a prepared operator as an argument with no analysis
under the trace. Products are differentiable in ``x`` and in the values
(``op.with_data(d)`` rebuilds the values from BCOO ``data`` ``d``, traced
or not) and batch under ``jax.vmap`` over ``x``.

Eager products of a ``BCOOArray`` on an accelerator (``A @ x`` with ``A``
placed there by ``A.to_device``) take the same layouts automatically
(``bcoo_array._kernels.matmul``); under ``jax.jit`` with the matrix an
argument its indices are traced, no layout can be chosen, and the product
falls back to the COO kernel (correct, at gather speed): prepare the
operator outside ``jit`` and pass it instead.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_object import BCOOArray
from ._fill import zero_fill
from ._kernels import accel, layouts
from ._kernels.matmul import spmm_dense
from ._shapes import is_tracer

__all__ = ["SparseOperator", "prepare", "cg", "bicgstab", "backend_of"]

#: Layouts of a prepared operator: the accelerator layouts, and ``bcoo`` (the
#: BCOO buffers with the library's own kernels, the choice on a CPU).
OPERATOR_LAYOUTS = layouts.LAYOUT_KINDS + ("bcoo",)


@jax.tree_util.register_pytree_node_class
class SparseOperator:
    """A 2-D sparse matrix in an accelerator layout, made by [`prepare`][bcoo_array.accelerator.prepare].

    Attributes
    ----------
    shape : (m, k)
        The matrix's shape.
    dtype : numpy.dtype
        The values' dtype.
    layout : str
        One of ``OPERATOR_LAYOUTS``.
    values : jax.Array
        The layout's flat value buffer (a pytree leaf).
    arrays : dict of jax.Array
        The layout's index arrays (pytree leaves).
    perm : jax.Array or None, shape ``(m,)``
        The symmetric reordering the layout stores (``A[perm][:, perm]``),
        undone inside every product.

    Notes
    -----
    ``op @ x``, ``op(x)`` and ``op.matvec(x)`` take ``x`` of shape ``(k,)``
    or ``(k, n)`` (NumPy or JAX) and return a ``jax.Array`` of shape
    ``(m,)`` or ``(m, n)`` of ``result_type(values, x)``. ``op.T`` is the
    transposed operator (``op.T @ y`` is ``A.T @ y``), ``x @ op`` is
    ``(op.T @ x.T).T``.
    """

    __slots__ = ("values", "arrays", "perm", "inverse", "slot", "layout", "static", "shape",
                 "transposed", "lanes", "description")

    # NumPy defers ``ndarray @ op`` to ``__rmatmul__`` (as for scipy.sparse's classes).
    __array_ufunc__ = None

    def __init__(self, values, arrays: dict, perm, inverse, slot, *, layout: str, static: tuple,
                 shape: tuple[int, int], transposed: bool = False, lanes: bool = False, description: str = ""):
        self.values = values
        self.arrays = dict(arrays)
        self.perm = perm
        self.inverse = inverse
        self.slot = slot
        self.layout = layout
        self.static = static
        self.shape = tuple(int(s) for s in shape)
        self.transposed = bool(transposed)
        self.lanes = bool(lanes)
        self.description = description

    # -- pytree ------------------------------------------------------------------------

    def tree_flatten(self):
        """Leaves ``(values, arrays, perm, inverse, slot)``; the layout is static aux data."""
        keys = tuple(sorted(self.arrays))
        leaves = (self.values, tuple(self.arrays[k] for k in keys), self.perm, self.inverse, self.slot)
        aux = (keys, self.layout, self.static, self.shape, self.transposed, self.lanes, self.description)
        return leaves, aux

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        """Rebuild an operator from ``tree_flatten``'s output."""
        keys, layout, static, shape, transposed, lanes, description = aux
        values, arrs, perm, inverse, slot = leaves
        return cls(values, dict(zip(keys, arrs)), perm, inverse, slot, layout=layout, static=static,
                   shape=shape, transposed=transposed, lanes=lanes, description=description)

    # -- metadata ----------------------------------------------------------------------

    @property
    def dtype(self):
        """The dtype of the stored values."""
        return np.dtype(self.values.dtype)

    @property
    def ndim(self) -> int:
        """2."""
        return 2

    @property
    def nbytes(self) -> int:
        """Bytes held on the device by the values and index arrays."""
        leaves = jax.tree_util.tree_leaves((self.values, self.arrays, self.perm, self.inverse, self.slot))
        return int(sum(np.dtype(a.dtype).itemsize * int(np.prod(a.shape)) for a in leaves))

    @property
    def T(self) -> "SparseOperator":
        """The transposed operator (the same buffers; products take the transposed kernel)."""
        m, k = self.shape
        return SparseOperator(self.values, self.arrays, self.perm, self.inverse, self.slot, layout=self.layout,
                              static=self.static, shape=(k, m), transposed=not self.transposed, lanes=self.lanes,
                              description=self.description)

    def __repr__(self) -> str:
        return (f"SparseOperator(shape={self.shape}, dtype={self.dtype}, layout={self.layout!r}"
                f"{', transposed' if self.transposed else ''}; {self.description})")

    # -- products ----------------------------------------------------------------------

    def _stored_shape(self) -> tuple[int, int]:
        m, k = self.shape
        return (k, m) if self.transposed else (m, k)

    def _check(self, x, name: str = "x"):
        if isinstance(x, BCOOArray) or _is_scipy_sparse(x):
            raise TypeError(f"{name} is a sparse {type(x).__name__}; a prepared operator multiplies dense operands: "
                            f"pass {name}.todense() (a BCOOArray) or {name}.toarray() (scipy), or multiply the "
                            "sparse matrices themselves")
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            x = np.asarray(x)
        if not isinstance(x, jax.Array) and not is_tracer(x):
            _dtypes.canonicalize_dtype(x.dtype, argname=f"{name}.dtype")  # no silent 64-bit downcast
        if x.ndim not in (1, 2) or x.shape[0] != self.shape[1]:
            raise ValueError(f"{name} has shape {tuple(x.shape)}; a product with an operator of shape "
                             f"{self.shape} needs ({self.shape[1]},) or ({self.shape[1]}, n)")
        if not isinstance(x, jax.Array):
            x = jnp.asarray(x)
        return x

    def permuted_matvec(self, x, *, checked: bool = True):
        """The product in the reordered space: ``B @ x`` for the stored ``B = A[perm][:, perm]``.

        What solvers iterate (``cg`` permutes ``b`` once and the solution
        back once). Without a reordering it is ``self @ x``. ``checked=False``
        skips the non-finite check of layouts that store zeros (two
        reductions and a ``lax.cond`` per product): solvers iterate on
        finite vectors.
        """
        x = self._check(x)
        if self.layout == "bcoo":
            idx = self.arrays["indices"]
            data, indices = self.values, idx
            if self.transposed:
                indices = idx[:, ::-1]
            return spmm_dense(data, indices, self.shape, x, rows_sorted=not self.transposed)
        return accel.compiled_product(self.values, self.arrays, x, kind=self.layout, static=self.static,
                                      shape=self._stored_shape(), lanes=self.lanes, transpose=self.transposed,
                                      checked=checked)

    def matvec(self, x):
        """``A @ x`` for ``x`` of shape ``(k,)`` or ``(k, n)``: a ``jax.Array`` of shape ``(m,)`` or ``(m, n)``.

        Raises
        ------
        ValueError
            If ``x``'s first dimension is not ``k`` or ``x`` is not 1-D or 2-D.
        """
        x = self._check(x)
        if self.perm is None:
            return self.permuted_matvec(x)
        return accel.compiled_product(self.values, self.arrays, x, self.perm, self.inverse, kind=self.layout,
                                      static=self.static, shape=self._stored_shape(), lanes=self.lanes,
                                      transpose=self.transposed)

    matmat = matvec

    def rmatvec(self, y):
        """``A^H @ y``, the adjoint product of ``scipy.sparse.linalg.LinearOperator.rmatvec``.

        ``A.T @ y`` for real values; for complex values the conjugate of
        ``A.T @ conj(y)``. (``op.T @ y`` is the plain transpose.)
        """
        y = y if hasattr(y, "shape") and hasattr(y, "dtype") else np.asarray(y)
        if not isinstance(y, BCOOArray) and not _is_scipy_sparse(y) and (
                y.ndim not in (1, 2) or y.shape[0] != self.shape[0]):
            raise ValueError(f"rmatvec: y has shape {tuple(y.shape)}; the adjoint of an operator of shape "
                             f"{self.shape} takes ({self.shape[0]},) or ({self.shape[0]}, n)")
        y = self.T._check(y, "y")
        if np.dtype(self.dtype).kind != "c":
            return self.T.matvec(y)
        return jnp.conj(self.T.matvec(jnp.conj(y)))

    rmatmat = rmatvec

    def __call__(self, x):
        return self.matvec(x)

    def __matmul__(self, x):
        if isinstance(x, SparseOperator):
            raise TypeError("op @ op: a prepared operator multiplies dense operands; multiply the sparse matrices "
                            "themselves (BCOOArray @ BCOOArray) and prepare the product")
        return self.matvec(x)  # (a BCOOArray or scipy x: _check names the dense conversion)

    def __rmatmul__(self, x):
        if isinstance(x, BCOOArray) or _is_scipy_sparse(x):
            self._check(x)  # raises, naming the dense conversion
        x = x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)
        m = self.shape[0]
        if x.ndim not in (1, 2) or x.shape[-1] != m:
            raise ValueError(f"x @ op: x has shape {tuple(x.shape)}; an operator of shape {self.shape} needs x of "
                             f"shape ({m},) or (n, {m})")
        if x.ndim == 1:
            return self.T.matvec(x)
        return self.T.matvec(x.T).T

    # -- values ------------------------------------------------------------------------

    def with_data(self, data) -> "SparseOperator":
        """The same pattern and layout with new BCOO ``data`` (shape ``(nse,)`` of the prepared matrix).

        ``data`` may be traced: ``jax.grad(lambda d: loss(op.with_data(d) @ x))(A.data)``
        differentiates with respect to the stored values.

        Raises
        ------
        ValueError
            If ``data`` does not have the prepared matrix's ``nse`` entries.
        """
        data = jnp.asarray(data)
        if data.shape != self.slot.shape:
            raise ValueError(f"data has shape {tuple(data.shape)}; this operator was prepared from a matrix with "
                             f"nse={self.slot.shape[0]}: pass data of shape {tuple(self.slot.shape)}")
        values = accel.layout_values(data, self.slot, self.arrays, int(self.values.shape[0]))
        return SparseOperator(values, self.arrays, self.perm, self.inverse, self.slot, layout=self.layout,
                              static=self.static, shape=self.shape, transposed=self.transposed, lanes=self.lanes,
                              description=self.description)

    def todense(self) -> jax.Array:
        """The operator's dense matrix (``m * k`` memory): ``op @ eye(k)``."""
        m, k = self.shape
        return self.matvec(jnp.eye(k, dtype=self.values.dtype))


def _is_scipy_sparse(x) -> bool:
    return (type(x).__module__ or "").startswith("scipy.sparse")


def backend_of(device=None) -> str:
    """The platform (``"cpu"``, ``"tpu"``, ``"gpu"``) of ``device``, or of JAX's default backend."""
    if device is None:
        return jax.default_backend()
    platform = getattr(device, "platform", None)
    if platform is None:  # a sharding
        devs = getattr(device, "device_set", None)
        platform = next(iter(devs)).platform if devs else jax.default_backend()
    return "gpu" if platform in ("cuda", "rocm") else platform


def _as_bcoo(A) -> BCOOArray:
    if isinstance(A, BCOOArray):
        return A
    import scipy.sparse as sp

    if sp.issparse(A):
        from ._convert.scipy import from_scipy

        return from_scipy(A)
    module = type(A).__module__ or ""
    if module.startswith("jax.experimental.sparse"):
        from ._convert.jax_sparse import from_jax_sparse

        return from_jax_sparse(A)
    hint = (" (a dense array: convert it with bcoo_array.asarray(A) or scipy.sparse.csr_array(A) first)"
            if hasattr(A, "shape") and hasattr(A, "dtype") else "")
    raise TypeError(f"prepare() takes a 2-D BCOOArray, a scipy.sparse matrix or a jax.experimental.sparse "
                    f"matrix; got {type(A).__name__}{hint}")


def prepare(A, *, device=None, layout: str | None = None, tile: tuple[int, int] | None = None,
            reorder: bool | None = None, mxu_blocks: bool = True) -> SparseOperator:
    """Analyse a sparse matrix once and store it in the layout its device streams fastest.

    Parameters
    ----------
    A : BCOOArray, scipy.sparse matrix or jax.experimental.sparse matrix
        A 2-D matrix with fill value 0, ``n_batch = n_dense = 0``, concrete
        indices (its ``data`` may be traced).
    device : jax.Device or jax.sharding.Sharding, optional
        Where the operator's buffers go (``jax.device_put``); its platform
        prices the layouts. Default: JAX's default device.
    layout : str, optional
        Force one of ``OPERATOR_LAYOUTS`` (``"dense"``, ``"dia"``,
        ``"tiles"``, ``"blocks"``, ``"ell"``, ``"panels"``, ``"sell"``,
        ``"coo"``, ``"bcoo"``). By default the
        cheapest layout for the device's platform by
        ``bcoo_array._kernels.layouts.estimate`` (on a CPU: ``"bcoo"``, the
        native kernels).
    tile : (bm, bk), optional
        Force the tile shape of the ``"tiles"`` layout.
    reorder : bool, optional
        Force (True) or forbid (False) the reverse Cuthill-McKee reordering
        of a square matrix (tiles, blocks, ELL and panels layouts); by
        default tried when one of them or ``sell`` is the cheapest, priced
        where it brings the median distance of the entries off the diagonal
        from it below 0.9 of the original's
        (``layouts.REORDER_MIN_SPREAD_GAIN``), and kept when it lowers the
        estimated cost by a quarter, its two permutations per product
        included.
    mxu_blocks : bool, optional
        Whether a ``"panels"`` or ``"sell"`` layout on a TPU with float32
        values also keeps its matrix as dense ``(8, 128)`` blocks for
        products with many columns of ``x`` (``A @ X``, ``A.T @ X``, a
        ``vmap`` of them), run on the chip's matrix unit
        (``bcoo_array._kernels.mxu``). Kept only where a product of 128
        columns is priced at most 4/5 of the layout's SELL-8 kernel's, within
        1 GiB; they take 4 KiB per block, tens of times the entries' own
        bytes (bcsstk16: 10 MiB for 290,378 entries; A @ X with 128 columns
        0.065 ms on a TPU v5e, against 0.43 without). Where the matrix's
        reverse Cuthill-McKee order needs fewer blocks (its two row
        permutations per product priced in), the blocks are those of that
        order, kept beside a layout in the matrix's own order (nh2010:
        23,851 blocks against about 108,000), unless ``reorder=False``.
        Default True; False saves the memory.

    Returns
    -------
    SparseOperator

    Raises
    ------
    TypeError
        If ``A`` is not a sparse matrix of a supported type, holds bool
        values, ``reorder`` is not a bool or None, or ``mxu_blocks`` not a
        bool.
    ValueError
        If ``A`` is not 2-D, has batch or dense dimensions, a non-zero fill
        value, traced indices (call ``prepare`` outside ``jax.jit`` and pass
        the operator as an argument), ``layout`` / ``tile`` are invalid, or
        ``reorder=True`` for a non-square matrix.

    Notes
    -----
    The analysis runs on the host with NumPy and scipy, about as long as a
    ``tocsr()`` (plus an RCM ordering when tried); see the guide
    ``docs/guides/accelerators.md`` for the layouts, the cost model and the
    measured speed on a TPU v5e.
    """
    A = _as_bcoo(A)
    if A.ndim != 2:
        raise ValueError(f"prepare() needs a 2-D matrix; A has shape {A.shape} (reshape it, or prepare each "
                         "2-D slice)")
    if A.n_batch or A.n_dense:
        raise ValueError(f"prepare() needs n_batch = n_dense = 0; A has n_batch={A.n_batch}, n_dense={A.n_dense}: "
                         "use bcoo_array.update_layout(A, n_batch=0, n_dense=0)")
    if np.dtype(A.dtype).kind == "b":
        raise TypeError("prepare() needs numeric values (the layouts add duplicates and products sum); A is bool: "
                        "prepare A.astype(bcoo_array.float32) (or an integer dtype)")
    if reorder is not None and not isinstance(reorder, (bool, np.bool_)):
        raise TypeError(f"reorder={reorder!r}: pass True, False or None")
    if not isinstance(mxu_blocks, (bool, np.bool_)):
        raise TypeError(f"mxu_blocks={mxu_blocks!r}: pass True or False")
    if reorder and A.shape[0] != A.shape[1]:
        raise ValueError(f"reorder=True needs a square matrix (a symmetric permutation); shape is {A.shape}")
    if tile is not None:
        if (not isinstance(tile, (tuple, list)) or len(tile) != 2
                or not all(isinstance(t, (int, np.integer)) and not isinstance(t, bool) and t >= 1 for t in tile)):
            raise ValueError(f"tile={tile!r}: pass two positive integer sizes (bm, bk), e.g. (8, 128)")
        if layout not in (None, "tiles"):
            raise ValueError(f"tile={tuple(tile)} shapes the 'tiles' layout; layout={layout!r} has no tile: drop "
                             "tile or pass layout='tiles'")
    if reorder and layout is not None and layout not in layouts.REORDERABLE:
        raise ValueError(f"reorder=True applies to the {', '.join(layouts.REORDERABLE)} layouts; layout={layout!r} "
                         "is not reordered: drop reorder or pick one of them")
    if not zero_fill(A.fill_value):
        raise ValueError(f"prepare() needs a fill value of 0 (products skip unstored entries); A has fill value "
                         f"{A.fill_value!r}: prepare A - fill_value and add fill_value * x.sum(0) to its products")
    if layout is not None and layout not in OPERATOR_LAYOUTS:
        raise ValueError(f"layout={layout!r} is not one of {OPERATOR_LAYOUTS}; pass one of them or None to choose")
    indices = A.indices
    if is_tracer(indices):
        raise ValueError("prepare() needs concrete indices to choose a layout; A's indices are traced (A is an "
                         "argument of a jitted function): call prepare() outside jax.jit and pass the operator "
                         "as the argument")
    data = A.data
    backend = backend_of(device)
    if layout == "bcoo" or (layout is None and backend == "cpu"):
        canon = A if (A.indices_sorted and A.unique_indices) else A.sum_duplicates()
        idx = jnp.asarray(canon.indices)
        values = canon.data
        op = SparseOperator(values, {"indices": idx}, None, None, jnp.arange(canon.nse, dtype=jnp.int32),
                            layout="bcoo", static=(), shape=A.shape, description="bcoo (native kernels)")
        if canon is not A:  # with_data maps the original entries onto the canonical ones
            op = _bcoo_with_slots(A, canon, op)
        return _place(op, device)
    lay = layouts.choose(np.asarray(indices), A.shape, np.dtype(A.dtype).itemsize, backend, kind=layout,
                         tile=tile, reorder=reorder, dtype=A.dtype,
                         mxu=bool(mxu_blocks) and backend == "tpu" and np.dtype(A.dtype) == np.float32)
    slot, arrays, perm, inverse = accel.device_layout(lay, device)
    values = accel.placed_values(data, slot, lay.arrays.get("slot_t"), arrays, lay.n_slots, device)
    op = SparseOperator(values, arrays, perm, inverse, jax.device_put(slot, device), layout=lay.kind,
                        static=accel.freeze_static(lay.static), shape=A.shape, lanes=(backend == "tpu"),
                        description=lay.describe())
    return _place(op, device)


def _bcoo_with_slots(A: BCOOArray, canon: BCOOArray, op: SparseOperator) -> SparseOperator:
    """A ``bcoo`` operator whose ``slot`` maps A's entries onto the canonical entries (duplicates add)."""
    m, k = A.shape
    idx = np.asarray(A.indices).astype(np.int64)
    cidx = np.asarray(canon.indices).astype(np.int64)
    keys = idx[:, 0] * (k + 1) + idx[:, 1]
    ckeys = cidx[:, 0] * (k + 1) + cidx[:, 1]
    pos = np.searchsorted(ckeys, keys)
    pos = np.minimum(pos, len(ckeys) - 1) if len(ckeys) else pos
    valid = (idx[:, 0] < m) & (idx[:, 1] < k)
    ok = valid & (len(ckeys) > 0) & (ckeys[pos] == keys if len(ckeys) else False)
    slot = np.where(ok, pos, canon.nse).astype(np.int32)
    values = accel.place_values(jnp.asarray(A.data), jnp.asarray(slot), canon.nse)
    return SparseOperator(values, op.arrays, None, None, jnp.asarray(slot), layout="bcoo", static=(),
                          shape=A.shape, description=op.description)


def _place(op: SparseOperator, device) -> SparseOperator:
    if device is None:
        return op
    return jax.device_put(op, device)


def _solver(name: str, op: SparseOperator, b, x0, kwargs: dict[str, Any]):
    from jax.scipy.sparse import linalg as jsl

    if not isinstance(op, SparseOperator):
        raise TypeError(f"{name}() takes a SparseOperator from bcoo_array.accelerator.prepare; got "
                        f"{type(op).__name__}")
    if op.shape[0] != op.shape[1]:
        raise ValueError(f"{name}() needs a square operator; this one has shape {op.shape}")
    b = op._check(b, "b")
    if b.ndim != 1:
        raise ValueError(f"{name}() needs a vector b of shape ({op.shape[1]},); got b of shape {tuple(b.shape)}")
    dtype = jnp.result_type(op.values, b)
    if np.dtype(b.dtype) != np.dtype(dtype):
        raise ValueError(f"{name}(): b is {np.dtype(b.dtype)} and the operator {op.dtype}; pass "
                         f"b.astype({np.dtype(dtype).name}) (a solve keeps one precision)")
    if x0 is not None:  # checked here: a reordered operator's permutation (a clipped gather) would not say
        x0 = x0 if hasattr(x0, "shape") and hasattr(x0, "dtype") else np.asarray(x0)
        if not isinstance(x0, BCOOArray) and not _is_scipy_sparse(x0) and tuple(x0.shape) != tuple(b.shape):
            raise ValueError(f"{name}(): x0 has shape {tuple(x0.shape)}; it needs b's shape {tuple(b.shape)}")
        x0 = op._check(x0, "x0")
        if not np.can_cast(np.dtype(x0.dtype), np.dtype(dtype), casting="safe"):
            raise ValueError(f"{name}(): x0 is {np.dtype(x0.dtype)} and the solve {np.dtype(dtype)}; pass "
                             f"x0.astype({np.dtype(dtype).name}) (a solve keeps one precision)")
    perm_in = (lambda v: v) if op.perm is None else (lambda v: accel.permute(v, op.perm, op.lanes))  # noqa: E731
    perm_out = (lambda v: v) if op.perm is None else (lambda v: accel.permute(v, op.inverse, op.lanes))  # noqa: E731
    bp = perm_in(b)
    x0p = None if x0 is None else perm_in(x0.astype(dtype))
    solve = getattr(jsl, name)
    xp_, info = solve(lambda v: op.permuted_matvec(v, checked=False), bp, x0=x0p, **kwargs)
    return perm_out(xp_), info


def cg(op: SparseOperator, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M=None):
    """Conjugate gradients on a prepared operator (``jax.scipy.sparse.linalg.cg``), in its reordered space.

    Parameters
    ----------
    op : SparseOperator
        A symmetric positive definite matrix, from ``prepare``.
    b : array, shape ``(n,)``
        Right-hand side of the operator's dtype.
    x0, tol, atol, maxiter, M
        As in ``jax.scipy.sparse.linalg.cg`` (``M`` acts in the reordered
        space when the operator is reordered).

    Returns
    -------
    x : jax.Array, shape ``(n,)``
    info : None
        As ``jax.scipy.sparse.linalg.cg`` returns (JAX's solvers report no
        convergence flag).

    Raises
    ------
    TypeError, ValueError
        If ``op`` is not a square ``SparseOperator``, ``b`` not a vector of
        its size, ``b``'s dtype differs from the operator's, or ``x0`` is
        not of ``b``'s shape or not safely cast to its dtype.
    """
    return _solver("cg", op, b, x0, {"tol": tol, "atol": atol, "maxiter": maxiter, "M": M})


def bicgstab(op: SparseOperator, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M=None):
    """BiCGSTAB on a prepared operator (``jax.scipy.sparse.linalg.bicgstab``), in its reordered space.

    Parameters, returns and errors as [`cg`][bcoo_array.accelerator.cg], for
    any square non-singular operator.
    """
    return _solver("bicgstab", op, b, x0, {"tol": tol, "atol": atol, "maxiter": maxiter, "M": M})
