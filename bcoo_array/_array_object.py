"""The BCOOArray class: buffers, static metadata, pytree registration and the
Python operator protocol.

Operators call the namespace function of the same meaning (the shared ones
are written in ``._array_base.ArrayBase``, indexing and the in-place
ones here), found at call time through ``._namespace`` (the namespace
sits above the class), so ``A + B`` and ``bcoo_array.add(A, B)`` run the
same code.
"""

from __future__ import annotations

import os
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes
from ._array_base import ArrayBase, _is_operand, _sequence_operand
from ._engine import host_enabled, host_max_entries, host_view, single_cpu
from ._fill import fill_from_key, fill_key, fill_scalar, zero_fill
from ._kernels.coalesce import sum_duplicates as _sum_duplicates
from ._kernels.coalesce import todense as _todense
from ._kernels.csr import csr_arrays
from ._kernels.fromdense import fromdense as _fromdense
from ._kernels.fromdense import fromdense_host
from ._kernels.host import host_buffers, to_device
from ._kernels.matmul import host_matvec
from ._routing import UNPLACEABLE, place_like
from ._shapes import (
    check_buffers,
    check_index_values,
    index_dtype_for,
    is_concrete,
    is_tracer,
    normalize_shape,
    prod,
)
from ._namespace import indexing, namespace, numpy_protocol
from ._scipy_methods import ScipyMethodsMixin

#: Environment variable that lets ``numpy.asarray(A)`` and ``numpy.from_dlpack(A)`` densify a BCOOArray.
AUTO_DENSIFY_ENV = "BCOO_ARRAY_AUTO_DENSIFY"

def _auto_densify() -> bool:
    """Whether the user opted in to implicit densification (``__array__``, ``__dlpack__``)."""
    return os.environ.get(AUTO_DENSIFY_ENV, "0") == "1"


def _densify_message(what: str) -> str:
    """Why an implicit densification is refused, and the conversions that work instead (one text for all)."""
    return (
        f"{what} would densify it; call A.todense() (a JAX array) or A.toarray() (NumPy) to densify on purpose, "
        f"or set {AUTO_DENSIFY_ENV}=1 to allow it. To stay sparse: scipy.sparse (csgraph, spsolve/splu, "
        "csr_array, kron, hstack) and scikit-learn take A.tocsr() (or A.to_scipy(format)); with a scipy sparse S "
        "on the left, write S @ A.tocsr() or S.multiply(A.tocsr()) (scipy results), or bcoo_array.matmul(S, A) "
        "(a BCOOArray)"
    )


#: Why ``numpy.asarray(A)`` is refused, and the conversions that work instead.
DENSIFY_REFUSED = _densify_message("converting a BCOOArray to a NumPy array")


class Deferred:
    """Stored values computed on first use: ``thunk()`` gives a NumPy or JAX array of ``shape`` and ``dtype``.

    A transpose (``A.T``) knows its indices at once (a plan cached on ``A``'s index buffer) but its values are a
    gather of ``A``'s; ``A.T @ x`` (scipy's PageRank loop) reads ``A``'s buffers through the column-ordered
    product bound to the transpose and never needs them, as scipy's ``.T`` is a CSC view. Held in the array's
    ``_hdata`` slot; every reader of the values resolves it (once: the result is kept and shared by arrays
    made from this one with ``_replace``).
    """

    __slots__ = ("thunk", "shape", "dtype", "value")

    def __init__(self, thunk, shape, dtype):
        self.thunk, self.shape, self.dtype, self.value = thunk, tuple(shape), np.dtype(dtype), None

    @property
    def size(self) -> int:
        return prod(self.shape)

    def resolve(self):
        if self.value is None:
            self.value = self.thunk()
            self.thunk = None
        return self.value


class NoPattern:
    """The indices of a sparse tangent or cotangent that JAX built for a ``custom_jvp`` / ``custom_vjp`` rule.

    JAX gives integer leaves ``float0`` tangents, so a BCOOArray tangent
    reaches a custom rule with its values (``.data``) but without its
    pattern, which is the primal's. The array keeps the placeholder's shape
    (``nse``, ``n_sparse`` hold); an element-wise operation with an array of
    the same layout and ``nse`` (its primal, in a rule) adopts that array's
    indices (``binary_operands``); any other use of the indices raises,
    naming [`BCOOArray.with_data`][bcoo_array.BCOOArray.with_data].
    """

    def __init__(self, placeholder):
        self.placeholder = placeholder
        self.shape = tuple(placeholder.shape)
        self.ndim = len(self.shape)
        self.dtype = placeholder.dtype

    def refuse(self):
        raise TypeError(
            "this BCOOArray is a tangent (or cotangent) that JAX built for a custom_jvp / custom_vjp rule: "
            "integer leaves get float0 tangents, so it holds values (.data) but not its pattern, which is its "
            "primal's. Rebuild it on the primal's pattern with primal.with_data(tangent.data) (an element-wise "
            "operation with the primal, such as primal * tangent, does this by itself)")


def _shape_from_leaves(data, indices, shape: tuple, n_batch: int, n_dense: int, leaf_batch) -> tuple:
    """The array shape that pytree leaves ``data``/``indices`` hold, given the static ``shape`` they came with.

    A map over the leaves may change the batch sizes (``jax.tree.map(lambda b: b[:2], A)`` keeps two batch
    elements): a batch dimension whose leaf sizes differ from the flattened ones (``leaf_batch``) takes its
    size from the leaves; one they kept keeps ``shape``'s (leaves of size 1 broadcast).
    Leaves that disagree with each other or with the sparse and dense sizes raise, instead of giving an
    array whose buffers do not hold its shape. Leaves without integer shapes (a transformation's
    placeholders) are left alone.
    """
    ds, js = getattr(data, "shape", None), getattr(indices, "shape", None)
    if not (isinstance(ds, tuple) and isinstance(js, tuple) and all(isinstance(n, int) for n in ds + js)):
        return shape
    n_sparse = len(shape) - n_batch - n_dense
    if (len(ds) != n_batch + 1 + n_dense or len(js) != n_batch + 2 or js[-1] != n_sparse
            or ds[n_batch] != js[n_batch] or ds[n_batch + 1:] != shape[len(shape) - n_dense:]):
        raise ValueError(
            f"BCOOArray pytree leaves of shapes data {ds} and indices {js} do not hold an array of shape {shape} "
            f"with n_batch={n_batch}, n_dense={n_dense} (data must be (*batch, nse, *dense), indices "
            f"(*batch, nse, n_sparse={n_sparse})): a function mapped over the leaves changed nse, the sparse or "
            f"the dense dimensions; map over batch dimensions only, or rebuild with bcoo_array.BCOOArray((data, "
            f"indices), shape=...)")
    batch = []
    for i in range(n_batch):
        d, j = ds[i], js[i]
        if d != j and 1 not in (d, j):
            raise ValueError(f"BCOOArray pytree leaves disagree on batch dimension {i}: data has {d}, indices {j} "
                             f"(shapes {ds} and {js}); map the same batch elements of both leaves")
        known = len(leaf_batch[0]) > i and len(leaf_batch[1]) > i
        unchanged = (d, j) == (leaf_batch[0][i], leaf_batch[1][i]) if known else max(d, j) in (1, shape[i])
        batch.append(shape[i] if unchanged else max(d, j))
    return tuple(batch) + shape[n_batch:]


def _check_leading_axes(data, indices, shape: tuple, n_batch: int, n_dense: int, delta: int) -> None:
    """Leaves that gained ``delta`` axes (``jax.vmap``'s outputs) must have gained them in front.

    ``vmap(f, out_axes=k)`` with ``k != 0`` for a BCOOArray output, and ``jax.jacfwd`` of a function
    returning one (which maps its output with ``out_axes=-1``), put the new axis elsewhere: read as
    leading it would give an array whose buffers do not hold its shape. Raises where the shapes show
    it (a new axis between ``nse`` and the sparse or dense sizes).
    """
    js = getattr(indices, "shape", None)
    if not (isinstance(js, tuple) and all(isinstance(n, int) for n in js + tuple(data.shape))):
        return
    ds = tuple(data.shape)
    n_sparse = len(shape) - n_batch - n_dense
    dense = shape[len(shape) - n_dense:]
    ok = (len(js) == len(ds) - n_dense + 1 and js[-1] == n_sparse and ds[len(ds) - n_dense:] == dense
          and ds[delta + n_batch] == js[delta + n_batch])
    if ok:
        return
    float0 = getattr(indices, "dtype", None) == jax.dtypes.float0
    raise ValueError(
        f"a transformation gave a BCOOArray of shape {shape} (n_batch={n_batch}, n_dense={n_dense}) leaves of "
        f"shapes data {ds} and indices {js}: a new axis that is not leading. "
        + ("jax.jacfwd / jax.jacrev cannot differentiate a function returning a BCOOArray (its indices take no "
           "derivative): use bcoo_array.autodiff.jacfwd / jacrev (the Jacobian as a BCOOArray on the output's "
           "pattern), or return .todense()" if float0 else
           "jax.vmap maps a BCOOArray output along out_axes=0 only (its leaves are (*batch, nse, ...)): use "
           "out_axes=0 and move the axis afterwards with bcoo_array.permute_dims"))


@jax.tree_util.register_pytree_node_class
class BCOOArray(ArrayBase, ScipyMethodsMixin):
    """A sparse array in batched coordinate (BCOO) layout with a fill value.

    An array of shape ``(*batch, *sparse, *dense)`` (``n_batch`` batch,
    ``n_sparse`` sparse and ``n_dense`` dense dimensions) stores ``nse``
    entries per batch element in two JAX buffers:

    * ``data``: shape ``(*batch, nse, *dense)``, the array's dtype;
    * ``indices``: shape ``(*batch, nse, n_sparse)``, int32 (int64 when a
      dimension exceeds 2**31 - 1).

    Every position that is not stored holds ``fill_value`` (0 by default, as
    in pydata-sparse). Entries stored twice hold the sum of their data
    (logical or for bool). An index equal to its dimension's size marks
    padding, ignored everywhere (as in ``jax.experimental.sparse``).

    Parameters
    ----------
    arg : tuple
        Either ``(data, indices)`` in JAX's form, ``indices`` an integer
        array of shape ``(*batch, nse, n_sparse)``; or ``(data, (i0, i1, ...))``
        in scipy's ``coo_array`` form, one 1-D index array per dimension.
    shape : tuple of int, optional
        Required for JAX's form; inferred (largest index + 1) for scipy's.
    fill_value : scalar, optional
        The value of unstored entries, cast exactly to ``dtype`` (default 0).
    dtype : dtype, optional
        Cast ``data`` to this dtype (default: ``data``'s dtype).
    indices_sorted, unique_indices : bool, optional
        Promise that indices are sorted / free of duplicates (not checked).
    copy : bool, optional
        Copy the buffers (JAX buffers are immutable, so this only matters for
        NumPy input, which is always copied to the device).

    Attributes
    ----------
    data : jax.Array
        The stored values, shape ``(*batch, nse, *dense)``.
    indices : jax.Array
        The sparse coordinates of each stored value, shape ``(*batch, nse, n_sparse)``.
    shape : tuple of int
        The array's shape.
    n_batch, n_dense : int
        The numbers of leading batch and trailing dense dimensions.
    indices_sorted, unique_indices : bool
        Whether the indices are known to be sorted / free of duplicates.

    Raises
    ------
    TypeError
        If ``arg`` has another form or the indices are not integers.
    ValueError
        If shapes disagree, an index is out of range (the message names the
        axis, the index and the bound) or a 64-bit dtype is asked for with
        x64 off.

    Notes
    -----
    The layout follows ``jax.experimental.sparse.BCOO``; the fill value
    follows ``sparse.COO`` of pydata-sparse. The class is a pytree: ``data``
    and ``indices`` are its leaves and everything else is static, so
    ``jax.jit``, ``jax.grad`` (with respect to ``data``) and ``jax.vmap``
    (over leading batch dimensions) work.
    """

    # ``_data``/``_indices`` hold JAX buffers (or tracers, or whatever leaves a pytree map gave), ``_hdata``/
    # ``_hindices`` NumPy buffers in host memory; at least one of each pair is set. Host-engine results
    # (``._engine``) keep NumPy buffers only; ``data``/``indices`` hand them to JAX on first read, once.
    __slots__ = ("_data", "_indices", "_hdata", "_hindices", "_shape", "n_batch", "n_dense", "indices_sorted",
                 "unique_indices", "_fill", "_matvec", "_aux", "__weakref__")

    def __init__(
        self,
        arg,
        *,
        shape=None,
        fill_value=0,
        dtype=None,
        indices_sorted: bool = False,
        unique_indices: bool = False,
        copy: bool | None = None,
    ):
        if not (isinstance(arg, tuple) and len(arg) == 2):
            raise TypeError(
                "BCOOArray(arg) takes (data, indices) or (data, (row, col, ...)); "
                "to convert an array use bcoo_array.asarray or BCOOArray.fromdense"
            )
        data, idx = arg
        if dtype is not None:
            dtype = _dtypes.canonicalize_dtype(dtype)
        data = _as_jax(data, dtype, "data")
        if isinstance(idx, (tuple, list)):
            cols = [np.asarray(c) if is_concrete(c) else c for c in idx]
            if any(getattr(c, "ndim", 1) != 1 for c in cols):
                raise ValueError("in the (data, (i0, i1, ...)) form every index array must be 1-D")
            if shape is None:
                if not all(is_concrete(c) for c in cols):
                    raise ValueError("shape= is required when the index arrays are traced")
                shape = tuple(int(c.max()) + 1 if c.size else 0 for c in cols)
            shape = normalize_shape(shape)
            if len(cols) != len(shape):
                raise ValueError(f"got {len(cols)} index arrays for a {len(shape)}-d shape {shape}")
            for k, c in enumerate(cols):
                if is_concrete(c) and np.asarray(c).dtype.kind not in "iu":
                    raise TypeError(f"index array {k} has dtype {np.asarray(c).dtype}; indices must be integers")
            if all(is_concrete(c) for c in cols):
                check_index_values(_stack_np(cols, len(shape)), shape, 0, allow_padding=False)
            idt = index_dtype_for(shape)
            indices = jnp.stack([jnp.asarray(c, idt) for c in cols], axis=1) if cols else jnp.zeros((data.shape[0], 0), idt)
            n_batch = 0
        else:
            if shape is None:
                raise ValueError("shape= is required in the (data, indices) form")
            shape = normalize_shape(shape)
            if is_concrete(idx):
                idx_np = np.asarray(idx)
                if idx_np.dtype.kind not in "iu":
                    raise TypeError(f"indices has dtype {idx_np.dtype}; indices must be integers")
                if idx_np.ndim < 2:
                    raise ValueError(f"indices must have shape (*batch, nse, n_sparse); got {idx_np.shape}")
                n_batch = idx_np.ndim - 2
                check_index_values(idx_np, shape, n_batch)
                idt = index_dtype_for(shape[n_batch: n_batch + idx_np.shape[-1]])
                indices = jnp.asarray(idx_np.astype(idt, copy=False))
            else:
                indices = idx
                n_batch = indices.ndim - 2
        n_dense = data.ndim - 1 - n_batch
        check_buffers(data, indices, shape, n_batch, n_dense)
        self._set(data, indices, shape, n_batch, n_dense, fill_scalar(fill_value, data.dtype),
                  indices_sorted, unique_indices)

    # -- construction without checks -------------------------------------------------

    def _set(self, data, indices, shape, n_batch, n_dense, fill, indices_sorted, unique_indices):
        # NumPy buffers are the host engine's own (never a user's array: callers copy those first).
        if type(data) is np.ndarray or type(data) is Deferred:
            self._data, self._hdata = None, data
        else:
            self._data, self._hdata = data, None
        if type(indices) is not NoPattern and getattr(indices, "dtype", None) == jax.dtypes.float0:
            indices = NoPattern(indices)  # a tangent JAX built for a custom rule: see NoPattern
        if type(indices) is np.ndarray:
            self._indices, self._hindices = None, indices
        else:
            self._indices, self._hindices = indices, None
        self._shape = tuple(shape)
        self.n_batch = n_batch
        self.n_dense = n_dense
        self._fill = fill
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        self._matvec = None  # (bound host matvec or None,), see _bound_matvec; reset with the buffers
        self._aux = None  # the pytree aux data, made on the first flatten (a jit call's dispatch reads it)

    # -- buffers: JAX to the user, NumPy to the host engine ----------------------------

    @property
    def data(self) -> jax.Array:
        """The stored values, a ``jax.Array`` of shape ``(*batch, nse, *dense)`` (the array's dtype)."""
        d = self._data
        if d is None:
            hd = self._hdata
            if type(hd) is Deferred:
                hd = self._resolve_data()
                if type(hd) is not np.ndarray:
                    return hd
            d = to_device(hd, owned=True)
            if not isinstance(d, jax.core.Tracer):  # never keep a value made under a trace (a loop body's)
                self._data = d
        return d

    def _resolve_data(self):
        """Compute deferred values (a transpose's gather) into the slot their kind belongs in (internal)."""
        value = self._hdata.resolve()
        if type(value) is np.ndarray:
            self._hdata = value
        elif not isinstance(value, jax.core.Tracer):  # computed under a trace: used there, not kept
            self._data, self._hdata = value, None
        return value

    @data.setter
    def data(self, value) -> None:
        """Replace the stored values (scipy's ``A.data = ...``): a copy of ``value`` on the device, of the
        shape of the current ``data`` (a new dtype is taken, the fill value cast to it).

        A list or tuple of Python numbers keeps the array's dtype where its kind matches (``A.data = [1.0,
        2.0]`` on float32 values), else takes its kind's default dtype, as ``bcoo_array.asarray``.

        Raises ``ValueError`` for another shape or a 64-bit dtype while JAX's 64-bit mode is off (no silent
        downcast), ``TypeError`` for a fill value the new dtype cannot hold."""
        if isinstance(value, (list, tuple)):
            value = np.asarray(value)
            if value.dtype.kind in "biufc":
                same = value.dtype.kind == self.dtype.kind or {value.dtype.kind, self.dtype.kind} <= set("iu")
                value = value.astype(self.dtype if same else _dtypes.python_values_dtype(value))
        value = _as_jax(value, None, "data")  # (NumPy input copied: the array never shares a user's buffer)
        old = self._data if self._data is not None else self._hdata
        if tuple(value.shape) != tuple(old.shape):
            raise ValueError(f"data has shape {tuple(old.shape)}; the new values have shape {tuple(value.shape)}: "
                             "assign values of the same shape (a new pattern needs a new array, e.g. "
                             "bcoo_array.BCOOArray((data, indices), shape=...))")
        fill = fill_scalar(self.fill_value, value.dtype)
        value = place_like(value, self)  # (where the array's buffers are)
        # the host view and the bound product go with the old buffer
        self._data, self._hdata, self._matvec, self._fill, self._aux = value, None, None, fill, None

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape, a tuple of ints.

        Assigning a shape reshapes the array in place, as NumPy's ``a.shape =
        ...`` and scipy's ``spmatrix.shape`` do (``bcoo_array.reshape``'s
        rules: one ``-1`` may be inferred; other arrays on the same buffers
        keep theirs). Raises ``ValueError`` where the new shape has another
        number of elements.
        """
        return self._shape

    @shape.setter
    def shape(self, value) -> None:
        value = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
        self._assign(namespace().reshape(self, value))

    @property
    def indices(self) -> jax.Array:
        """The sparse coordinates of each stored value, a ``jax.Array`` of shape ``(*batch, nse, n_sparse)``."""
        i = self._indices
        if i is None:
            i = to_device(self._hindices, owned=True)
            if not isinstance(i, jax.core.Tracer):  # never keep a value made under a trace
                self._indices = i
        elif type(i) is NoPattern:
            i.refuse()
        return i

    @indices.setter
    def indices(self, value) -> None:
        """Replace the coordinates: a copy of ``value`` on the device, integer, of the shape of the current
        ``indices``, every index in range (checked where concrete). The array is no longer known to be
        sorted or free of duplicates.

        Raises ``ValueError`` for another shape or an index out of range, ``TypeError`` for a non-integer
        dtype."""
        if not isinstance(value, (jax.Array, jax.core.Tracer)):
            value = np.asarray(value)
        if not jnp.issubdtype(value.dtype, jnp.integer):
            raise TypeError(f"indices has dtype {value.dtype}; indices must be integers")
        old = self._indices if self._indices is not None else self._hindices
        if tuple(value.shape) != tuple(old.shape):
            raise ValueError(f"indices has shape {tuple(old.shape)}; the new indices have shape "
                             f"{tuple(value.shape)}: assign indices of the same shape")
        if is_concrete(value):
            check_index_values(np.asarray(value), self.shape, self.n_batch)
            value = jnp.asarray(np.asarray(value).astype(old.dtype))  # (a copy: never a user's buffer)
        value = place_like(value, self)  # (where the array's buffers are)
        self._indices, self._hindices, self._matvec, self._aux = value, None, None, None
        self.indices_sorted = self.unique_indices = False

    def block_until_ready(self) -> "BCOOArray":
        """Wait until the buffers are computed, and return ``self`` (as ``jax.Array.block_until_ready``).

        An array the host engine computed is ready already (its NumPy buffers
        are not handed to JAX by this call); JAX buffers are waited for.
        Benchmarks call it to time a result without timing a transfer.
        Deferred values (a transpose's, see ``Deferred``) are computed.
        """
        if type(self._hdata) is Deferred:
            self._resolve_data()
        for b in (self._data, self._indices):
            if b is not None and hasattr(b, "block_until_ready"):
                b.block_until_ready()
        return self

    def _host_buffers(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(data, indices)`` as NumPy arrays in host memory (zero-copy views of CPU buffers), or None
        when they cannot be read there (traced, on another device, sharded). Internal: the host engine's
        operands; never write to them."""
        hd, hi = self._hdata, self._hindices
        if type(hd) is Deferred:
            self._resolve_data()
            hd = self._hdata
        if hd is None:
            hd = host_view(self._data)
            if hd is None:
                return None
            self._hdata = hd
        if hi is None:
            if type(self._indices) is NoPattern:
                self._indices.refuse()
            hi = host_view(self._indices)
            if hi is None:
                return None
            self._hindices = hi
        return hd, hi

    def _concrete(self) -> bool:
        """Whether both buffers hold values (not tracers), read without handing host buffers to JAX (internal)."""
        return (self._hdata is not None or not is_tracer(self._data)) and self._concrete_indices()

    def _concrete_indices(self) -> bool:
        """Whether the indices hold values (not a tracer), read without a hand-off (internal)."""
        return self._hindices is not None or not is_tracer(self._indices)

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the stored data and of the fill value."""
        d = self._data if self._data is not None else self._hdata
        return np.dtype(d.dtype)

    @property
    def nse(self) -> int:
        """Number of stored entries per batch element, padding included."""
        i = self._indices if self._indices is not None else self._hindices
        return int(i.shape[-2])

    @property
    def n_sparse(self) -> int:
        """Number of sparse dimensions."""
        i = self._indices if self._indices is not None else self._hindices
        return int(i.shape[-1])

    @classmethod
    def _from_buffers(cls, data, indices, shape, *, n_batch, n_dense, fill_value,
                      indices_sorted=False, unique_indices=False) -> "BCOOArray":
        """Wrap buffers without validation (internal API of the package's layers).

        ``data`` and ``indices`` are JAX arrays (or tracers) or NumPy arrays
        the package owns (the host engine's results, never a user's array:
        ``_engine``); the caller guarantees the layout (shapes, index dtype,
        padding) and the flags. ``fill_value`` is cast exactly to the dtype.
        """
        obj = object.__new__(cls)
        fill = fill_value if isinstance(fill_value, np.generic) and fill_value.dtype == data.dtype \
            else fill_scalar(fill_value, data.dtype)
        obj._set(data, indices, shape, n_batch, n_dense, fill, indices_sorted, unique_indices)
        return obj

    @classmethod
    def fromdense(cls, x, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                  fill_value=0, index_dtype=None) -> "BCOOArray":
        """Store the entries of a dense array that differ from ``fill_value``.

        Parameters
        ----------
        x : array_like
            Dense input of shape ``(*batch, *sparse, *dense)``.
        nse : int, optional
            Number of stored entries per batch element. Defaults to the largest
            count of entries differing from ``fill_value`` (needs concrete ``x``);
            a larger value pads.
        n_batch, n_dense : int
            Number of leading batch and trailing dense dimensions.
        fill_value : scalar
            Value of the unstored entries. Comparison is bit-exact: NaN matches
            NaN and ``-0.0`` is stored when the fill is ``0.0``.
        index_dtype : dtype, optional
            int32 or int64; chosen from the shape by default.

        Returns
        -------
        BCOOArray
            Canonical (sorted, unique) array of ``x``'s shape and dtype.

        Raises
        ------
        ValueError
            If ``nse`` is missing under ``jit`` or too small, or the layout does
            not fit ``x.ndim``.
        """
        host = _as_host(x, "x")
        if host is None:
            x = _as_jax(x, None, "x")
        shape = tuple(x.shape if host is None else host.shape)
        if not (0 <= n_batch and 0 <= n_dense and n_batch + n_dense <= len(shape)):
            raise ValueError(f"n_batch={n_batch}, n_dense={n_dense} do not fit a {len(shape)}-d array")
        fill = fill_scalar(fill_value, x.dtype if host is None else host.dtype)
        idt = np.dtype(index_dtype) if index_dtype is not None else index_dtype_for(shape[n_batch: len(shape) - n_dense])
        if host is not None and host_enabled():
            # Eager: NumPy on the host, no XLA dispatch nor a compilation per shape; the buffers stay
            # NumPy (fresh, the array's own) until JAX reads them.
            data, indices = fromdense_host(host, shape, n_batch, n_dense, fill, nse, idt)
        else:
            if host is not None and not isinstance(x, jax.Array):
                x = to_device(host)
            data, indices = _fromdense(x, shape, n_batch, n_dense, fill, nse, idt)
        return cls._from_buffers(data, indices, shape, n_batch=n_batch, n_dense=n_dense, fill_value=fill,
                                 indices_sorted=True, unique_indices=True)

    # -- pytree ------------------------------------------------------------------------

    def tree_flatten(self):
        """The pytree leaves ``(data, indices)`` and the static aux data (shape, layout, flags, fill value)."""
        data = self.data
        indices = self._indices.placeholder if type(self._indices) is NoPattern else self.indices
        aux = self._aux
        if aux is None:  # static for the array's life: made once
            # The leaves' batch sizes (1 where broadcast) tell unflattening whether a map over the leaves changed them.
            leaf_batch = tuple(tuple(getattr(b, "shape", ())[:self.n_batch]) for b in (data, indices))
            aux = self._aux = (self.shape, self.n_batch, self.n_dense, self.indices_sorted, self.unique_indices,
                               fill_key(self._fill), leaf_batch)
        return (data, indices), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        """Rebuild an array from [`tree_flatten`][bcoo_array.BCOOArray.tree_flatten]'s output
        (under ``vmap``, with the leading batch dimensions the leaves have)."""
        shape, n_batch, n_dense, srt, uniq, fkey, leaf_batch = aux
        data, indices = children
        obj = object.__new__(cls)
        # Under vmap the leaves lose (or regain) leading batch dimensions; keep the
        # static shape consistent with them.
        nd = getattr(data, "ndim", None)
        if isinstance(nd, int):
            delta = nd - (n_batch + 1 + n_dense)
            if delta > 0:
                _check_leading_axes(data, indices, tuple(shape), n_batch, n_dense, delta)
                shape = tuple(data.shape[:delta]) + tuple(shape)
                n_batch += delta
            elif delta < 0 and n_batch + delta >= 0:
                shape = tuple(shape)[-delta:]
                n_batch += delta
            elif delta < 0:
                raise ValueError(
                    f"jax.vmap (or a map over the pytree's leaves) took {-delta} leading axis off the buffers of a "
                    f"BCOOArray of shape {tuple(shape)} with n_batch={n_batch}: vmap maps batch dimensions only. "
                    f"Give the array batch dimensions first, e.g. bcoo_array.update_layout(x, n_batch=1) "
                    f"(an array from xp.stack has every dimension sparse).")
            else:
                shape = _shape_from_leaves(data, indices, tuple(shape), n_batch, n_dense, leaf_batch)
        obj._set(data, indices, shape, n_batch, n_dense, fill_from_key(fkey), srt, uniq)
        return obj

    # -- metadata (dtype, shape-derived properties and T are in ArrayBase) ----------------

    @property
    def device(self):
        """The JAX device holding the buffers."""
        if self._data is None:  # host buffers: the CPU device they cross to
            return jax.devices("cpu")[0]
        try:
            devs = self.data.devices()
        except Exception:  # a tracer has no committed device
            return jax.devices()[0]
        return next(iter(devs)) if len(devs) == 1 else devs

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        return (
            f"BCOOArray(shape={self.shape}, dtype={self.dtype}, nse={self.nse}, "
            f"fill_value={self._fill!r}, n_batch={self.n_batch}, n_dense={self.n_dense}, device={self.device})"
        )

    # -- conversions -------------------------------------------------------------------

    def todense(self) -> jax.Array:
        """Return the dense ``jax.Array`` of shape [`shape`][bcoo_array.BCOOArray.shape] (unstored entries = fill value)."""
        if single_cpu():
            # A 0-d array is its one stored value or its fill value: read it, with no compiled program
            # (with one CPU device only: elsewhere the result keeps the buffers' device and sharding).
            value = self._host_scalar()
            if value is not None:
                return jax.device_put(value)
        out = self._dense()
        return to_device(out, owned=True) if isinstance(out, np.ndarray) else out

    def _dense(self):
        """The dense values: a fresh NumPy array from the host engine, else a ``jax.Array`` (internal)."""
        fill_is_zero = zero_fill(self._fill)
        data, indices = self._buffers()
        return _todense(data, indices, self.shape, self.n_batch, self.n_dense, self._fill, fill_is_zero,
                        unique=self.unique_indices, indices_sorted=self.indices_sorted)

    def _buffers(self):
        """``(data, indices)`` for a kernel: NumPy when the host engine can read them, else JAX (internal).

        A large array (more than ``_engine.host_max_entries()`` stored values) gives its JAX buffers, handed
        over once and kept: its bandwidth-bound operations run on XLA (``Operation(..., large=True)``), which
        would otherwise receive NumPy buffers to copy on every call; the host engine reads zero-copy views.
        """
        if host_enabled():
            d = self._data if self._data is not None else self._hdata
            if getattr(d, "size", 0) <= host_max_entries():
                got = self._host_buffers()
                if got is not None:
                    return got
        return self.data, self.indices

    def _bound_matvec(self):
        """The native kernels bound to this matrix for ``A @ x`` with vectors (``native.CsrMatvec``), or None.

        ``._kernels.matmul.host_matvec`` builds it on first use for a
        zero-filled 2-D matrix with every dimension sparse; it is kept while
        the array keeps the same ``data`` and ``indices`` objects (in-place
        operations replace them). None where it does not apply (see there).
        """
        memo = self._matvec
        if memo is not None:
            return memo[0]
        bound = None
        if (self.ndim == 2 and self.n_batch == 0 and self.n_dense == 0
                and zero_fill(self._fill)):
            # Plans are cached on the index buffer object: a JAX buffer when the array has one (its host view
            # is a new object for every array sharing the buffer, e.g. each A.T of a large A)
            host = self._host_buffers() if self._indices is None else None
            if host is not None:
                # A weak reference: the array holds the binding, so a strong one would be a cycle that only
                # the garbage collector frees (a temporary such as A.T in A.T @ x would pile up its buffers).
                ref = weakref.ref(self)
                bound = host_matvec(*host, self.shape, source=lambda: (ref().data, ref().indices))
            else:
                bound = host_matvec(self.data, self.indices, self.shape)
        self._matvec = (bound,)
        return bound

    def _host_scalar(self) -> np.ndarray | None:
        """The value of a concrete 0-d array with at most one stored entry, as a 0-d NumPy array; else None."""
        if self.ndim != 0 or self.nse > 1:
            return None
        host = self._host_buffers()
        if host is None:
            return None
        if host[0].shape[0]:
            return np.array(host[0].reshape(()))
        return np.asarray(self._fill, self.dtype)

    def __array__(self, dtype=None, copy=None):
        """Refuse ``numpy.asarray(A)``, the densifying path of NumPy, scipy and scikit-learn.

        scipy.sparse (constructors, ``csgraph``, direct solvers, ``S @ A``,
        ``kron``, ``hstack``) and scikit-learn treat any object that is not
        one of scipy's own sparse classes as dense and call
        ``numpy.asarray`` on it; the error names the conversion that keeps
        the data sparse (``A.tocsr()``). With ``BCOO_ARRAY_AUTO_DENSIFY=1``
        the result is a fresh writable array (scipy writes into its dense
        inputs, e.g. ``csgraph.laplacian``); ``copy=False`` returns the
        densified buffer itself, read-only.

        An array with no sparse dimension (a result in *dense layout*, such
        as ``A - A.mean(axis=0)``, which stores every entry) converts without
        the opt-in: the NumPy array costs no more memory than it holds.
        """
        if not _auto_densify() and self.n_batch + self.n_dense != self.ndim:
            raise RuntimeError(DENSIFY_REFUSED)
        dense = self.todense()
        if copy is False:
            return np.asarray(dense, dtype=dtype)
        return np.array(dense, dtype=dtype, copy=True)

    def _scalar(self, kind, name):
        if self.ndim != 0 and self.size != 1:
            raise TypeError(f"only size-1 arrays convert to Python {name}; this one has shape {self.shape}")
        if not self._concrete():
            raise jax.errors.ConcretizationTypeError(self.data, f"{name}() of a traced BCOOArray")
        value = self._host_scalar()
        if value is not None:
            return kind(value.item())
        return kind(np.asarray(self.todense()).reshape(()).item())

    def __call__(self, x):
        """``A(x)``: the product ``A @ x`` as a dense array of the kind of ``x``.

        This makes a BCOOArray a matvec function for code that calls a
        callable operator rather than using ``@``: JAX's solvers
        (``jax.scipy.sparse.linalg.cg(A, b)``) call it with JAX arrays and
        get JAX arrays; scipy's ``lobpcg(A, X)`` calls it with NumPy
        arrays and gets NumPy arrays.

        Parameters
        ----------
        x : array, shape ``(k,)`` or ``(..., k, n)``
            Dense right-hand side; ``self`` has shape ``(..., m, k)``.

        Returns
        -------
        jax.Array or numpy.ndarray
            ``(self @ x).todense()`` for a JAX array (or tracer) or a
            BCOOArray ``x``; a fresh writable NumPy array for anything else
            (NumPy arrays, lists).
        """
        if not isinstance(x, (jax.Array, jax.core.Tracer, ArrayBase)):
            x = np.asarray(x)
            if self.ndim == 2 and x.ndim in (1, 2):
                return self.matvec(x) if x.ndim == 1 else self.matmat(x)
            return np.array(namespace().matmul(self, x).todense())
        out = namespace().matmul(self, x)
        return out.todense() if isinstance(out, BCOOArray) else out

    def __format__(self, format_spec: str) -> str:
        if self.ndim == 0 and self._concrete():
            return format(np.asarray(self.todense()).item(), format_spec)
        if format_spec:
            raise TypeError(f"format spec {format_spec!r} needs a 0-d array; this one has shape {self.shape}")
        return repr(self)

    def __round__(self, ndigits: int | None = None):
        if self.ndim != 0:
            raise TypeError(f"round() needs a 0-d array; use bcoo_array.round for shape {self.shape}")
        return round(np.asarray(self.todense()).item(), ndigits)

    def item(self):
        """The value of a one-element array as a Python scalar (as ``numpy.ndarray.item``).

        Returns
        -------
        bool, int, float or complex
            The single element (stored or the fill value).

        Raises
        ------
        ValueError
            If the array has more or fewer than one element.
        jax.errors.ConcretizationTypeError
            Under ``jax.jit`` (the value is not known while tracing).
        """
        if self.size != 1:
            raise ValueError(f"item() needs an array of one element; this one has shape {self.shape}")
        if not self._concrete():
            raise jax.errors.ConcretizationTypeError(self.data, "item() of a traced BCOOArray")
        return np.asarray(self.todense()).reshape(()).item()

    def __bool__(self) -> bool:
        return self._scalar(bool, "bool")

    def __int__(self) -> int:
        if self.ndim != 0 and self.size != 1:
            return self._scalar(int, "int")  # raises the size-1 TypeError
        if self.dtype.kind == "f" and self._concrete():
            v = np.asarray(self.todense()).reshape(())
            if np.isnan(v):
                raise ValueError("cannot convert NaN to int")
            if np.isinf(v):
                raise OverflowError("cannot convert infinity to int")
        if self.dtype.kind == "c":
            raise TypeError("int() of a complex array; take .real first")
        return self._scalar(int, "int")

    def __float__(self) -> float:
        if self.dtype.kind == "c":
            raise TypeError("float() of a complex array; take .real first")
        return self._scalar(float, "float")

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex")

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"__index__ needs an integer array, this one is {self.dtype}")
        return self._scalar(int, "index")

    def __array_function__(self, func, types, args, kwargs):
        return numpy_protocol().array_function(self, func, types, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return numpy_protocol().array_ufunc(self, ufunc, method, *inputs, **kwargs)

    def __bcoo_device__(self):
        """The one device this array's JAX buffers are committed to; None where they constrain nothing (host
        buffers, uncommitted ones); ``UNPLACEABLE`` where the namespace must not move its results (a traced
        buffer or a placeholder, several devices). The namespace's result placement (``._routing``)."""
        found = set()
        for b in (self._data, self._indices):
            if b is None:
                continue
            if not isinstance(b, jax.Array) or isinstance(b, jax.core.Tracer):
                return UNPLACEABLE
            if b.committed:
                devices = b.devices()
                if len(devices) != 1:
                    return UNPLACEABLE
                found |= devices
        if len(found) > 1:
            return UNPLACEABLE
        return next(iter(found)) if found else None

    def __bcoo_place__(self, device) -> "BCOOArray":
        """This array with both buffers on ``device`` (a ``jax.Device``): itself where they are there already
        (host buffers are placed too). The namespace's result placement (``._routing``)."""
        for b in (self._data, self._indices):
            if b is not None and (isinstance(b, jax.core.Tracer) or not isinstance(b, jax.Array)):
                return self  # (traced: a function under jit used a placed array it did not take as an argument)
        if self._data is None and type(self._hdata) is Deferred:
            self._resolve_data()
            if type(self._hdata) is Deferred:  # (computed under a trace, so not kept: nothing to place)
                return self

        def put(buf, host):  # (a host buffer goes to the device straight, not through the default one)
            buf = host if buf is None else buf
            return buf if isinstance(buf, jax.Array) and buf.devices() == {device} else jax.device_put(buf, device)

        data, indices = put(self._data, self._hdata), put(self._indices, self._hindices)
        if data is self._data and indices is self._indices:
            return self
        return self._replace(data=data, indices=indices)

    def to_device(self, device, /, *, stream=None) -> "BCOOArray":
        """Return a copy whose buffers live on ``device`` (a ``jax.Device`` or sharding)."""
        if stream is not None:
            raise ValueError("stream= is not supported by JAX; pass stream=None")
        if device is None or (device == self.device and (single_cpu() or self.__bcoo_device__() == device)):
            return self  # (with several devices, host or uncommitted buffers are committed to it below)
        d = jax.device_put(self.data, device)
        i = jax.device_put(self.indices, device)
        return self._replace(data=d, indices=i)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export through DLPack (``numpy.from_dlpack(A)``, ``torch.from_dlpack(A)``): refused by default.

        DLPack describes strided dense buffers; the standard names sparse
        arrays among what it cannot carry and has ``__dlpack__`` raise
        ``BufferError`` then (design topic "Data interchange mechanisms").
        As ``np.asarray(A)`` refuses, so does this, with the same rule and
        advice: export ``A.todense()`` (a ``jax.Array``) explicitly. With
        the opt-in ``BCOO_ARRAY_AUTO_DENSIFY=1`` the consumer receives a new
        dense array of [`shape`][bcoo_array.BCOOArray.shape] (memory ``A.size`` elements).
        ``bcoo_array.from_dlpack(A)`` does not call this: it returns ``A``.

        Raises
        ------
        BufferError
            Without the opt-in (the message names ``A.todense()``), or with
            ``copy=False``: the dense values must be materialised.
        """
        if not _auto_densify():
            raise BufferError(_densify_message("exporting a BCOOArray through DLPack (__dlpack__)"))
        if copy is False:
            raise BufferError("a BCOOArray can only be exported as a dense copy; pass copy=None or copy=True")
        kwargs = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        return self.todense().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def with_data(self, data) -> "BCOOArray":
        """The same pattern, layout and fill value with new stored values.

        The way to differentiate with respect to the stored values:
        ``jax.grad(lambda d: loss(A.with_data(d)))(A.data)``; and to rebuild a
        sparse tangent inside a ``jax.custom_jvp`` / ``custom_vjp`` rule,
        where JAX passes a BCOOArray tangent without its indices (integer
        leaves get ``float0`` tangents): ``A.with_data(A_dot.data)``. (An
        element-wise operation of the tangent with its primal, such as
        ``A * A_dot``, adopts the primal's pattern by itself.)

        Parameters
        ----------
        data : array, shape ``self.data.shape``
            New values (any dtype; the fill value is cast to it).

        Raises
        ------
        ValueError
            If ``data`` has another shape.
        """
        data = _as_jax(data, None, "data")
        if tuple(data.shape) != tuple(self.data.shape):
            raise ValueError(f"data has shape {tuple(data.shape)}; expected {tuple(self.data.shape)}")
        fill = self._fill if data.dtype == self.dtype else fill_scalar(np.asarray(self._fill).astype(data.dtype), data.dtype)
        return self._replace(data=data, fill_value=fill)

    def _replace(self, **kw) -> "BCOOArray":
        """A new array sharing the buffers, with some fields replaced (internal API).

        Keyword arguments are those of ``_from_buffers`` (``data``,
        ``indices``, ``shape``, ``n_batch``, ``n_dense``, ``fill_value``,
        ``indices_sorted``, ``unique_indices``); buffers are never copied (JAX
        arrays are immutable and the host engine never writes to a held NumPy
        buffer), and host buffers stay on the host.
        """
        fields = dict(
            data=self._data if self._data is not None else self._hdata,
            indices=self._indices if self._indices is not None else self._hindices,
            shape=self.shape, n_batch=self.n_batch, n_dense=self.n_dense,
            fill_value=self._fill, indices_sorted=self.indices_sorted, unique_indices=self.unique_indices,
        )
        fields.update(kw)
        data, indices, shape = fields.pop("data"), fields.pop("indices"), fields.pop("shape")
        return BCOOArray._from_buffers(data, indices, shape, **fields)

    # -- canonical form -----------------------------------------------------------------

    def sum_duplicates(self, *, nse: int | None = None, remove_padding: bool = True) -> "BCOOArray":
        """Return the canonical form: sorted, duplicate-free indices, padding last.

        Duplicates are summed (logical or for bool), as in
        ``scipy.sparse.coo_array.sum_duplicates``. With concrete indices the
        result's nse is the largest per-batch number of distinct indices (or
        ``nse`` if given, padding); while tracing it stays ``self.nse``.
        """
        if self.unique_indices and self.indices_sorted and nse is None and (
                not remove_padding or self._without_padding()):
            return self._replace()  # a new array (item assignment on one must not change the other)
        data, indices = _sum_duplicates(*self._buffers(), self.shape, self.n_batch, self.n_dense)
        out = self._replace(data=data, indices=indices, indices_sorted=True, unique_indices=True)
        if nse is not None:
            out = out._with_nse(nse)
        return out

    def _without_padding(self) -> bool:
        """True when a 2-D all-sparse matrix with concrete indices is known to store no padding
        (from its cached CSR structure, ``._kernels.csr.csr_arrays``); False when unknown."""
        if self.ndim != 2 or self.n_batch or self.n_dense or not self._concrete_indices():
            return False
        st = csr_arrays(self._buffers()[1], self.shape)
        return st is not None and st.n_valid == self.nse

    def _canonical(self) -> "BCOOArray":
        """Self if already unique and sorted, else ``sum_duplicates()`` (internal API: the entry point of
        kernels that need canonical buffers; the host engine computes it with NumPy)."""
        if self.unique_indices and self.indices_sorted:
            return self
        return self.sum_duplicates()

    def _with_nse(self, nse: int) -> "BCOOArray":
        cur = self.nse
        if nse == cur:
            return self
        if nse < cur:
            if self._concrete_indices():
                valid = np.all(np.asarray(self._buffers()[1])[..., nse:, :]
                               >= np.asarray(self.shape[self.n_batch:self.n_batch + self.n_sparse]), axis=-1)
                if not valid.all():
                    raise ValueError(f"nse={nse} is smaller than the number of stored entries")
            sl = (slice(None),) * self.n_batch + (slice(0, nse),)
            return self._replace(data=self.data[sl], indices=self.indices[sl])
        pad = nse - cur
        sizes = jnp.asarray(self.shape[self.n_batch:self.n_batch + self.n_sparse], self.indices.dtype)
        ipad = jnp.broadcast_to(sizes, self.indices.shape[:self.n_batch] + (pad, self.n_sparse))
        dpad = jnp.zeros(self.data.shape[:self.n_batch] + (pad,) + self.data.shape[self.n_batch + 1:], self.dtype)
        return self._replace(
            data=jnp.concatenate([self.data, dpad], axis=self.n_batch),
            indices=jnp.concatenate([self.indices, ipad], axis=self.n_batch),
        )

    def sort_indices(self) -> None:
        """Sort the indices in place (scipy.sparse's ``sort_indices``), summing duplicates.

        The values are unchanged; the array takes the canonical form's buffers
        (``sum_duplicates()``). Returns None, as scipy does; ``sorted_indices()``
        returns a sorted copy instead.
        """
        c = self._canonical()
        if c is not self:
            self._assign(c)

    # -- indexing and in-place operators (the others are in ArrayBase) --------------------

    def __getitem__(self, key):
        out = indexing().getitem(self, key)
        # ``A[:, :]`` and ``A[...]`` select everything: still a new array, so that item assignment on the
        # result leaves ``A`` alone (as scipy's copy; the immutable buffers are shared).
        return self._replace() if out is self else place_like(out, self)

    def __matmul__(self, other):
        # scipy's ``A @ x`` with a NumPy vector, the commonest call: straight to the kernel that
        # ``bcoo_array.matmul`` binds to this matrix (``_bound_matvec``), skipping the namespace
        # dispatch; anything else goes through ``matmul``. A subclass may route ``matmul``
        # elsewhere (``__bcoo_function__``), so it takes the general way.
        if type(other) is np.ndarray and type(self) is BCOOArray:
            bound = self._bound_matvec()
            if bound is not None and bound.serves(other):
                return bound(other)
        if isinstance(other, (list, tuple)):  # scipy's ``A @ [1., 2.]``: a NumPy operand, as ``A.dot``
            return self @ np.asarray(other)
        return super().__matmul__(other)

    def __rmatmul__(self, other):
        if isinstance(other, (list, tuple)):  # scipy's ``[1., 2.] @ A``
            return np.asarray(other) @ self
        return super().__rmatmul__(other)

    def __setitem__(self, key, value):
        self._assign(indexing().setitem(self, key, value))

    def __iadd__(self, other):
        return self._inplace("add", other)

    def __isub__(self, other):
        return self._inplace("subtract", other)

    def __imul__(self, other):
        return self._inplace("multiply", other)

    def __itruediv__(self, other):
        return self._inplace("divide", other)

    def __ifloordiv__(self, other):
        return self._inplace("floor_divide", other)

    def __imod__(self, other):
        return self._inplace("remainder", other)

    def __ipow__(self, other):
        return self._inplace("pow", other)

    def __imatmul__(self, other):
        return self._inplace("matmul", other)

    def __iand__(self, other):
        return self._inplace("bitwise_and", other)

    def __ior__(self, other):
        return self._inplace("bitwise_or", other)

    def __ixor__(self, other):
        return self._inplace("bitwise_xor", other)

    def __ilshift__(self, other):
        return self._inplace("bitwise_left_shift", other)

    def __irshift__(self, other):
        return self._inplace("bitwise_right_shift", other)

    def _inplace(self, name: str, other):
        """``self <op>= other``: the result must keep ``self``'s shape and dtype (a list or tuple ``other`` is
        read in ``self``'s dtype where NumPy's ``same_kind`` casting allows, as NumPy's ``a *= [...]``)."""
        if isinstance(other, (list, tuple)):
            seq = _sequence_operand(other)
            if np.can_cast(seq.dtype, self.dtype, casting="same_kind"):
                seq = seq.astype(self.dtype)
            other = seq
        if not _is_operand(other):
            return NotImplemented
        result = getattr(namespace(), name)(self, other)
        if result.shape != self.shape:
            raise ValueError(f"in-place operation would change the shape {self.shape} to {result.shape}")
        if result.dtype != self.dtype:
            raise TypeError(f"in-place operation would change the dtype {self.dtype} to {result.dtype}")
        self._assign(result)
        return self

    def _assign(self, other: "BCOOArray") -> None:
        """Take over ``other``'s buffers and metadata (in-place operations), placed where this array's are
        (``._routing.place_like``)."""
        other = place_like(other, self)
        self._set(other.data if other._hdata is None else other._hdata,
                  other.indices if other._hindices is None else other._hindices,
                  other.shape, other.n_batch, other.n_dense, other._fill, other.indices_sorted, other.unique_indices)


def _as_host(x, argname):
    """``x`` as a NumPy array when it is concrete and on the CPU (a zero-copy view of a JAX buffer), else None.

    Non-array input (nested sequences, NumPy arrays, scalars) is read by NumPy
    with the same dtype checks as ``_as_jax``.
    """
    if isinstance(x, jax.core.Tracer):
        return None
    if isinstance(x, jax.Array):
        if len(x.devices()) > 1:
            return None  # sharded: the device path keeps the result on the input's mesh
        got = host_buffers(x)
        return None if got is None else got[0]
    arr = np.asarray(x)
    if arr.dtype.kind in "OSUV":
        raise TypeError(f"{argname} has dtype {arr.dtype}; expected numbers or booleans")
    return arr.astype(_dtypes.canonicalize_dtype(arr.dtype, argname=f"{argname}.dtype"), copy=False)


def _as_jax(x, dtype, argname):
    """Convert array-like ``x`` to a jax Array, refusing silent 64-bit downcasts."""
    if isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
        if dtype is not None and x.dtype != dtype:
            x = x.astype(dtype)
        return x
    arr = np.asarray(x)
    if arr.dtype.kind in "OSUV":
        raise TypeError(f"{argname} has dtype {arr.dtype}; expected numbers or booleans")
    target = _dtypes.canonicalize_dtype(dtype if dtype is not None else arr.dtype, argname=f"{argname}.dtype")
    return jnp.asarray(arr.astype(target, copy=False))


def _stack_np(cols, ndim):
    if not cols:
        return np.zeros((0, ndim), np.int64)
    return np.stack([np.asarray(c).astype(np.int64) for c in cols], axis=1)


# -- jax.vmap: a BCOOArray maps along a batch dimension (any in_axes / out_axes among them) -----------------
#
# As jax.experimental.sparse's BCOO, the class is registered with vmap (jax.interpreters.batching's public
# ``register_vmappable``): vmap hands it whole to ``_vmap_to_elt`` / ``_vmap_from_elt`` with its axis, so
# ``in_axes`` / ``out_axes`` other than 0 select the right batch dimension instead of being applied to the
# leaves blindly (which read the nse axis, or a later batch axis, as the mapped one).

def _vmap_leaves(x: BCOOArray):
    indices = x._indices.placeholder if type(x._indices) is NoPattern else x.indices
    return x.data, indices


def _vmap_to_elt(cont, _, x, axis):
    if axis is None:
        return x
    given = axis
    if isinstance(axis, int) and -x.ndim <= axis < 0:
        axis += x.ndim  # counted from the end of the shape, as vmap measures the axis size
    if not isinstance(axis, int) or not 0 <= axis < x.n_batch:
        raise ValueError(
            f"jax.vmap: in_axes={given!r} for a BCOOArray of shape {x.shape} with n_batch={x.n_batch}: vmap maps a "
            f"BCOOArray along its batch dimensions only (in_axes in range({x.n_batch})). Give the array batch "
            f"dimensions first, e.g. bcoo_array.update_layout(x, n_batch={max(x.n_batch, 1)}) (its leading "
            f"dimensions), moving the mapped axis to the front with bcoo_array.permute_dims if needed")

    def mapped(leaf):
        if leaf.shape[axis] == 1 and x.shape[axis] != 1:  # a leaf shared by the batch (size 1, broadcast)
            return jnp.squeeze(leaf, axis)
        return cont(leaf, axis)

    data, indices = _vmap_leaves(x)
    obj = object.__new__(BCOOArray)
    obj._set(mapped(data), mapped(indices), x.shape[:axis] + x.shape[axis + 1:], x.n_batch - 1,
             x.n_dense, x._fill, x.indices_sorted, x.unique_indices)
    return obj


def _vmap_from_elt(cont, axis_size, x, axis):
    if axis is None:
        return x
    data, indices = _vmap_leaves(x)
    if getattr(indices, "dtype", None) == jax.dtypes.float0:
        raise ValueError(
            "jax.jacfwd / jax.jacrev cannot differentiate a function returning a BCOOArray (its indices take no "
            "derivative): use bcoo_array.autodiff.jacfwd / jacrev (the Jacobian as a BCOOArray on the output's "
            "pattern), or return .todense()")
    if not isinstance(axis, int) or not 0 <= axis <= x.n_batch:
        raise ValueError(
            f"jax.vmap: out_axes={axis!r} for a BCOOArray result of shape {x.shape} with n_batch={x.n_batch}: the "
            f"mapped axis of a BCOOArray must be a batch dimension, out_axes in range({x.n_batch + 1}) (its "
            f"leaves are (*batch, nse, ...)). Use out_axes=0 and move the axis afterwards with "
            f"bcoo_array.permute_dims, or return .todense()")
    obj = object.__new__(BCOOArray)
    obj._set(cont(axis_size, data, axis), cont(axis_size, indices, axis),
             x.shape[:axis] + (axis_size,) + x.shape[axis:], x.n_batch + 1, x.n_dense, x._fill,
             x.indices_sorted, x.unique_indices)
    return obj


def _register_vmappable() -> None:
    from jax.interpreters import batching  # public module (jax.experimental.sparse registers BCOO the same way)

    batching.register_vmappable(BCOOArray, int, int, _vmap_to_elt, _vmap_from_elt, None)


_register_vmappable()
