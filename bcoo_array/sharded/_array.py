"""ShardedBCOOArray: one BCOOArray laid over the devices of a jax.sharding.Mesh.

The array's dimension ``axis`` is cut into equal blocks, one per position of
the mesh axes named in the partition spec (see ``._partition``). Each
block is a BCOO array of the block shape with local indices; the blocks'
``data`` and ``indices`` are stacked along a new leading axis and placed with
``NamedSharding(mesh, PartitionSpec(mesh_axes))``, so each device stores one
block. Every operation runs the ordinary BCOOArray code on each block inside
``jax.shard_map`` (see ``._ops``), with collectives where values cross
blocks.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import bcoo_array as xp

from .._array_base import ArrayBase
from .._array_object import BCOOArray
from .._dtypes import canonicalize_dtype
from .._fill import fill_from_key, fill_key
from .._foreign import foreign_kind
from .._shapes import is_concrete, prod
from .._relayout import dense_layout, update_layout
from . import _partition


def spec_entry(mesh_axes: tuple):
    """The PartitionSpec entry naming ``mesh_axes`` (a name, or a tuple of names)."""
    return mesh_axes[0] if len(mesh_axes) == 1 else tuple(mesh_axes)


_GATHER = "gather it first with A.unshard() (bcoo_array.sharded.unshard(A))"


class GatherFirstError(TypeError, AttributeError):
    """A BCOOArray attribute read on a sharded array: a TypeError naming the gather, and an AttributeError so
    that ``hasattr(A, name)`` (generic code probing for scipy's attributes) answers False."""


class GatherFirst:
    """A scipy.sparse-style attribute of BCOOArray that a ShardedBCOOArray does not have.

    Reading it on an array raises a TypeError that names the gather,
    ``A.unshard().<name>``, and, where one exists, the namespace call that
    runs on the blocks and keeps the partition (``hint``). The class body of
    [`ShardedBCOOArray`][bcoo_array.sharded.ShardedBCOOArray] lists every such name
    (``tests/test_sharded.py`` checks that the list covers BCOOArray's public names).
    """

    __slots__ = ("name", "hint", "call")

    def __init__(self, hint: str | None = None, *, call: bool = True):
        self.name = ""
        self.hint = hint
        self.call = call  # a method (shown as name()) or a property

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        shown = f"{self.name}()" if self.call else self.name
        hint = f"; {self.hint}" if self.hint else ""
        kind = "methods" if self.call else "attributes"
        raise GatherFirstError(f"ShardedBCOOArray.{shown}: scipy.sparse's {kind} are those of one BCOOArray, not "
                               f"of a sharded array; {_GATHER}, then use A.unshard().{shown}{hint}")


def _on_blocks(call: str) -> str:
    return f"{call} runs on the blocks and keeps the partition"


def _dense_operand(x, name: str):
    """``x`` as a dense product operand: a JAX array (or tracer) stays one, anything else becomes NumPy."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"{name}() needs a numeric operand, got dtype {arr.dtype}")
    return arr.astype(canonicalize_dtype(arr.dtype, argname=f"{name}() operand dtype"), copy=False)


def _fresh_host(y):
    """A fresh, writable NumPy array of a product (as scipy's operators return); a tracer stays one."""
    if isinstance(y, jax.core.Tracer):
        return y
    if hasattr(y, "todense"):
        y = y.todense()
    return np.array(y)


@jax.tree_util.register_pytree_node_class
class ShardedBCOOArray(ArrayBase):
    """A BCOOArray partitioned along one dimension over the devices of a mesh.

    Create it with [`bcoo_array.sharded.shard`][]; gather it with
    [`bcoo_array.sharded.unshard`][] or ``to_device``.

    Attributes
    ----------
    data : jax.Array, shape ``(p, *block_data_shape)``
        The blocks' data stacked along axis 0, sharded over ``mesh_axes``.
    indices : jax.Array, shape ``(p, *block_indices_shape)``
        The blocks' local indices, stacked and sharded the same way.
    shape : tuple of int
        The global shape.
    axis : int
        The partitioned dimension.
    mesh : jax.sharding.Mesh
    mesh_axes : tuple of str
        The mesh axes the blocks are laid over (``p`` = product of their sizes).
    n_batch, n_dense : int
        The layout of each block (the block shape is ``shape`` with
        ``shape[axis]`` replaced by ``block``).

    Notes
    -----
    The class is a pytree (leaves ``data`` and ``indices``), so it passes
    through ``jax.jit``; give its leaves ``sharding`` in ``in_shardings``
    / ``out_shardings``. Calling it on a dense vector, ``A(x)``, is the linear
    operator ``x -> A @ x`` returning a replicated ``jax.Array``, which is
    the form ``jax.scipy.sparse.linalg.cg`` takes.

    It has scipy's LinearOperator surface (``shape``, ``dtype``, ``matvec``,
    ``rmatvec``, ``matmat``, ``rmatmat``, ``dot``, ``@``), with NumPy results
    for NumPy operands, so ``scipy.sparse.linalg.cg(A, b)``, ``eigsh(A, k)``
    and the other solvers that call ``aslinearoperator`` take it (each product
    runs on the mesh). scipy.sparse's other methods and properties of a
    BCOOArray (``tocsr``, ``toarray``, ``sum``, ``nnz``, ``format``, ...) and
    indexing (``A[i]``, ``A[i] = v``, iteration) raise a TypeError asking to
    gather first with ``A.unshard()``, naming the namespace function that
    runs on the blocks where there is one (``sqrt`` -> ``bcoo_array.sqrt(A)``).
    The full list is the ``GatherFirst`` attributes of the class body.
    """

    __slots__ = ("data", "indices", "shape", "axis", "mesh", "mesh_axes", "n_batch", "n_dense", "_fill",
                 "indices_sorted", "unique_indices")
    __array_priority__ = 110  # above BCOOArray's, so NumPy and BCOOArray defer to it

    def __init__(self, *args, **kwargs):
        raise TypeError("create a ShardedBCOOArray with bcoo_array.sharded.shard(A, mesh, spec)")

    @classmethod
    def _from_buffers(cls, data, indices, shape, *, axis, mesh, mesh_axes, n_batch, n_dense, fill_value,
                      indices_sorted=False, unique_indices=False) -> "ShardedBCOOArray":
        obj = object.__new__(cls)
        obj.data = data
        obj.indices = indices
        obj.shape = tuple(shape)
        obj.axis = int(axis)
        obj.mesh = mesh
        obj.mesh_axes = tuple(mesh_axes)
        obj.n_batch = int(n_batch)
        obj.n_dense = int(n_dense)
        obj._fill = fill_value
        obj.indices_sorted = bool(indices_sorted)
        obj.unique_indices = bool(unique_indices)
        return obj

    def _meta(self, **kw):
        m = dict(axis=self.axis, mesh=self.mesh, mesh_axes=self.mesh_axes, n_batch=self.n_batch,
                 n_dense=self.n_dense, fill_value=self._fill, indices_sorted=self.indices_sorted,
                 unique_indices=self.unique_indices)
        m.update(kw)
        return m

    # -- pytree --------------------------------------------------------------------------

    def tree_flatten(self):
        aux = (self.shape, self.axis, self.mesh, self.mesh_axes, self.n_batch, self.n_dense, fill_key(self._fill),
               self.indices_sorted, self.unique_indices)
        return (self.data, self.indices), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, axis, mesh, mesh_axes, n_batch, n_dense, fkey, srt, uniq = aux
        return cls._from_buffers(children[0], children[1], shape, axis=axis, mesh=mesh, mesh_axes=mesh_axes,
                                 n_batch=n_batch, n_dense=n_dense, fill_value=fill_from_key(fkey),
                                 indices_sorted=srt, unique_indices=uniq)

    # -- metadata ------------------------------------------------------------------------


    @property
    def n_blocks(self) -> int:
        """Number of blocks ``p`` (product of the sizes of ``mesh_axes``)."""
        return prod(self.mesh.shape[a] for a in self.mesh_axes)

    @property
    def block(self) -> int:
        """Positions of ``axis`` per block, ``ceil(shape[axis] / p)``."""
        return _partition.block_size(self.shape[self.axis], self.n_blocks)

    @property
    def block_shape(self) -> tuple:
        """The shape of each block (``shape`` with ``shape[axis]`` = ``block``)."""
        s = list(self.shape)
        s[self.axis] = self.block
        return tuple(s)


    @property
    def sharding(self) -> NamedSharding:
        """The sharding of ``data`` and ``indices`` (use it in ``in_shardings``)."""
        return NamedSharding(self.mesh, PartitionSpec(spec_entry(self.mesh_axes)))

    @property
    def spec(self) -> PartitionSpec:
        """The partition of the global array: ``mesh_axes`` at position ``axis``."""
        return PartitionSpec(*([None] * self.axis + [spec_entry(self.mesh_axes)]))

    @property
    def device(self) -> NamedSharding:
        """The sharding the blocks live on (pass a single device to ``to_device`` to gather)."""
        return self.sharding


    def __repr__(self) -> str:
        return (f"ShardedBCOOArray(shape={self.shape}, dtype={self.dtype}, axis={self.axis}, "
                f"mesh_axes={self.mesh_axes}, blocks={self.n_blocks}x{self.block_shape}, nse/block={self.nse}, "
                f"fill_value={self._fill!r})")

    def stored_bytes_per_device(self) -> dict:
        """Bytes of ``data`` + ``indices`` on each addressable device, ``{device: bytes}``."""
        out: dict = {}
        for leaf in (self.data, self.indices):
            for sh in leaf.addressable_shards:
                out[sh.device] = out.get(sh.device, 0) + int(sh.data.nbytes)
        return out

    # -- local blocks ------------------------------------------------------------------

    def _local(self, data, indices) -> BCOOArray:
        """The block held by this device, from the leaves' local slices (inside shard_map)."""
        return BCOOArray._from_buffers(data[0], indices[0], self.block_shape, n_batch=self.n_batch,
                                       n_dense=self.n_dense, fill_value=self._fill,
                                       indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    # -- conversions ---------------------------------------------------------------------

    def todense(self) -> jax.Array:
        """The dense array, replicated on every device of the mesh (all-gather of the blocks)."""
        from ._ops import todense  # deferred: _ops builds on this class

        return todense(self)

    def unshard(self, device=None) -> BCOOArray:
        """Gather into one BCOOArray (see [`bcoo_array.sharded.unshard`][])."""
        return unshard(self, device=device)

    def to_device(self, device, /, *, stream=None):
        """Gather onto one ``jax.Device``, or re-shard onto a ``NamedSharding``.

        A ``NamedSharding(mesh, spec)`` re-partitions with [`shard`][bcoo_array.sharded.shard] (the
        spec names the dimension and mesh axes, as in [`shard`][bcoo_array.sharded.shard]).
        """
        if stream is not None:
            raise ValueError("stream= is not supported by JAX; pass stream=None")
        if isinstance(device, NamedSharding):
            return shard(unshard(self), device.mesh, device.spec)
        return unshard(self, device=device)

    def to_scipy(self, format: str = "coo", **kw):
        """Gather and convert to a scipy.sparse array (see ``bcoo_array._convert.scipy.to_scipy``)."""
        return xp.to_scipy(unshard(self), format, **kw)

    def sum_duplicates(self) -> "ShardedBCOOArray":
        """Canonical form of every block (sorted, duplicate-free; see [`BCOOArray.sum_duplicates`][bcoo_array.BCOOArray.sum_duplicates]).

        Blocks keep their nse (the entry counts differ between blocks, and
        every device runs the same program), padding last.
        """
        from ._ops import map_blocks  # deferred: _ops builds on this class

        return map_blocks(lambda blk: blk.sum_duplicates(nse=blk.nse, remove_padding=False), self,
                          key=("sum_duplicates",))


    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("converting a ShardedBCOOArray to NumPy would gather and densify it. To stay "
                           "sparse, gather the blocks into one BCOOArray with bcoo_array.sharded.unshard(A) "
                           "(or A.unshard()), then A.unshard().tocsr() for scipy.sparse and scikit-learn; "
                           "to densify on purpose, np.asarray(A.todense())")

    def __bool__(self):
        raise TypeError("truth value of a sharded array; gather it first with unshard()")

    def __bcoo_function__(self, func, args, kwargs):
        """Run namespace function ``func`` with sharded operands (see ``bcoo_array._routing``)."""
        from ._dispatch import (
            call,  # deferred: the table's implementations construct this class
        )

        return call(func, args, kwargs)

    def __call__(self, x):
        """The linear operator ``x -> A @ x`` for dense ``x``, as [`BCOOArray.__call__`][bcoo_array.BCOOArray.__call__].

        Returns
        -------
        jax.Array or numpy.ndarray
            A ``jax.Array`` for a JAX ``x`` (or tracer); a fresh NumPy array
            for anything else (NumPy arrays, lists), as scipy's solvers expect.
        """
        if not isinstance(x, (jax.Array, jax.core.Tracer)) and not hasattr(type(x), "__bcoo_function__") \
                and not isinstance(x, BCOOArray):
            x = np.asarray(x)
        y = xp.matmul(self, x)
        return y.todense() if hasattr(y, "todense") else y

    def block_until_ready(self) -> "ShardedBCOOArray":
        """Wait until the blocks' buffers are computed, and return ``self`` (as ``jax.Array.block_until_ready``)."""
        jax.block_until_ready((self.data, self.indices))
        return self

    # -- the LinearOperator protocol (what scipy.sparse.linalg.aslinearoperator reads) ----------

    def _product(self, x, name: str, *, adjoint: bool = False, vector: bool = True):
        if self.ndim != 2:
            raise ValueError(f"{name}() follows scipy.sparse and needs a 2-D array; this one is {self.ndim}-D")
        v = _dense_operand(x, name)
        n = self.shape[0] if adjoint else self.shape[1]
        ok = v.shape in ((n,), (n, 1)) if vector else (v.ndim == 2 and v.shape[0] == n)
        if not ok:
            want = f"({n},) or ({n}, 1)" if vector else f"({n}, k)"
            raise ValueError(f"{name}(): operand has shape {v.shape}; expected {want}")
        op = self
        if adjoint:
            op = xp.matrix_transpose(xp.conj(self) if self.dtype.kind == "c" else self)
        return _fresh_host(xp.matmul(op, v))

    def matvec(self, x):
        """``A @ x`` for a dense vector (LinearOperator protocol), computed on the mesh.

        Parameters
        ----------
        x : array_like, shape ``(n,)`` or ``(n, 1)``
            NumPy or JAX; its dtype promotes with ``A.dtype`` (array API rules).

        Returns
        -------
        numpy.ndarray, shape ``(m,)`` or ``(m, 1)``
            A fresh writable array (a JAX tracer while tracing).

        Raises
        ------
        ValueError
            For a non-2-D ``A`` or a wrong shape.
        TypeError
            For a non-numeric ``x``.
        """
        return self._product(x, "matvec")

    def rmatvec(self, x):
        """``A^H @ x`` (conjugate transpose) for a dense vector (LinearOperator protocol).

        ``x`` has shape ``(m,)`` or ``(m, 1)``; the product runs on the
        column partition of ``A^H`` (a ``psum`` of the blocks' products).
        Returns and errors as [`matvec`][bcoo_array.sharded.ShardedBCOOArray.matvec].
        """
        return self._product(x, "rmatvec", adjoint=True)

    def matmat(self, X):
        """``A @ X`` for a dense matrix ``X`` of shape ``(n, k)`` (LinearOperator protocol).

        Returns a NumPy array ``(m, k)``; errors as [`matvec`][bcoo_array.sharded.ShardedBCOOArray.matvec].
        """
        return self._product(X, "matmat", vector=False)

    def rmatmat(self, X):
        """``A^H @ X`` for a dense matrix ``X`` of shape ``(m, k)`` (LinearOperator protocol).

        Returns a NumPy array ``(n, k)``; errors as [`matvec`][bcoo_array.sharded.ShardedBCOOArray.matvec].
        """
        return self._product(X, "rmatmat", adjoint=True, vector=False)

    def dot(self, other):
        """Matrix product as scipy's ``dot``.

        Parameters
        ----------
        other : scalar, array_like, BCOOArray or scipy.sparse array
            Shape ``(n,)`` or ``(n, k)`` for a 2-D ``A`` of shape ``(m, n)``.

        Returns
        -------
        numpy.ndarray or ShardedBCOOArray
            A dense operand (NumPy array, list, JAX array) gives a fresh
            NumPy result, as in scipy; a sparse operand gives what
            ``bcoo_array.matmul(A, other)`` gives (a ShardedBCOOArray); a
            scalar multiplies elementwise.

        Raises
        ------
        ValueError
            For mismatched inner dimensions.
        TypeError
            For another ShardedBCOOArray (``matmul`` of two sharded arrays).
        """
        if isinstance(other, ArrayBase) or foreign_kind(other) is not None:
            return xp.matmul(self, other)
        if np.ndim(other) == 0:
            return xp.multiply(self, other)
        v = _dense_operand(other, "dot")
        if self.ndim == 2 and v.ndim in (1, 2) and v.shape[0] != self.shape[1]:
            raise ValueError(f"dot(): dimension mismatch, {self.shape} @ {v.shape}")
        return _fresh_host(xp.matmul(self, v))

    # -- indexing: gather first ------------------------------------------------------------

    def __getitem__(self, key):
        raise TypeError(f"indexing a ShardedBCOOArray is not supported: {_GATHER}, then A.unshard()[...]")

    def __setitem__(self, key, value):
        raise TypeError(f"assigning into a ShardedBCOOArray is not supported: {_GATHER}, assign into "
                        "B = A.unshard() and shard(B, mesh, spec) again")

    def __iter__(self):
        raise TypeError(f"iterating over a ShardedBCOOArray is not supported: {_GATHER}, then iterate over "
                        "A.unshard()")

    # -- scipy.sparse's other methods and properties of BCOOArray: gather first --------------
    # (each reads as a TypeError naming A.unshard(); see GatherFirst)

    # conversions (scipy's: A.to_scipy(format) gathers and converts in one call)
    toarray = GatherFirst("A.todense() is the dense array, replicated over the mesh")
    tocoo = GatherFirst("A.to_scipy('coo') gathers and converts in one call")
    tocsr = GatherFirst("A.to_scipy('csr') gathers and converts in one call")
    tocsc = GatherFirst("A.to_scipy('csc') gathers and converts in one call")
    tobsr = GatherFirst()
    todia = GatherFirst()
    todok = GatherFirst()
    tolil = GatherFirst()
    asformat = GatherFirst()
    to_csr_buffers = GatherFirst()
    to_jax_sparse = GatherFirst()
    to_pydata_sparse = GatherFirst()
    # the compressed structure
    format = GatherFirst(call=False)
    nnz = GatherFirst(call=False)
    indptr = GatherFirst(call=False)
    has_canonical_format = GatherFirst("A.sum_duplicates() brings every block to canonical form", call=False)
    has_sorted_indices = GatherFirst(call=False)
    getnnz = GatherFirst()
    count_nonzero = GatherFirst()
    nonzero = GatherFirst()
    sorted_indices = GatherFirst("A.sum_duplicates() sorts every block")
    sort_indices = GatherFirst("A.sum_duplicates() sorts every block")
    eliminate_zeros = GatherFirst()
    setdiag = GatherFirst()
    diagonal = GatherFirst()
    trace = GatherFirst()
    with_data = GatherFirst()
    copy = GatherFirst("a sharded array's buffers are immutable: A itself serves as a copy")
    reshape = GatherFirst()
    transpose = GatherFirst(_on_blocks("A.T (bcoo_array.permute_dims(A, axes))"))
    item = GatherFirst()
    # reductions (scipy's NumPy results)
    sum = GatherFirst(_on_blocks("bcoo_array.sum(A, axis=...)"))  # noqa: A003 - scipy's name
    mean = GatherFirst(_on_blocks("bcoo_array.mean(A, axis=...)"))
    max = GatherFirst(_on_blocks("bcoo_array.max(A, axis=...)"))  # noqa: A003
    min = GatherFirst(_on_blocks("bcoo_array.min(A, axis=...)"))  # noqa: A003
    argmax = GatherFirst()
    argmin = GatherFirst()
    any = GatherFirst()  # noqa: A003
    all = GatherFirst()  # noqa: A003
    # elementwise (the namespace's functions run on the blocks)
    multiply = GatherFirst(_on_blocks("bcoo_array.multiply(A, B)"))
    maximum = GatherFirst(_on_blocks("bcoo_array.maximum(A, B)"))
    minimum = GatherFirst(_on_blocks("bcoo_array.minimum(A, B)"))
    power = GatherFirst(_on_blocks("bcoo_array.pow(A, n)"))
    real = GatherFirst(_on_blocks("bcoo_array.real(A)"), call=False)
    imag = GatherFirst(_on_blocks("bcoo_array.imag(A)"), call=False)
    conj = GatherFirst(_on_blocks("bcoo_array.conj(A)"))
    conjugate = GatherFirst(_on_blocks("bcoo_array.conj(A)"))
    sqrt = GatherFirst(_on_blocks("bcoo_array.sqrt(A)"))
    expm1 = GatherFirst(_on_blocks("bcoo_array.expm1(A)"))
    log1p = GatherFirst(_on_blocks("bcoo_array.log1p(A)"))
    sin = GatherFirst(_on_blocks("bcoo_array.sin(A)"))
    sinh = GatherFirst(_on_blocks("bcoo_array.sinh(A)"))
    tan = GatherFirst(_on_blocks("bcoo_array.tan(A)"))
    tanh = GatherFirst(_on_blocks("bcoo_array.tanh(A)"))
    arcsin = GatherFirst(_on_blocks("bcoo_array.asin(A)"))
    arcsinh = GatherFirst(_on_blocks("bcoo_array.asinh(A)"))
    arctan = GatherFirst(_on_blocks("bcoo_array.atan(A)"))
    arctanh = GatherFirst(_on_blocks("bcoo_array.atanh(A)"))
    sign = GatherFirst(_on_blocks("bcoo_array.sign(A)"))
    floor = GatherFirst(_on_blocks("bcoo_array.floor(A)"))
    ceil = GatherFirst(_on_blocks("bcoo_array.ceil(A)"))
    trunc = GatherFirst(_on_blocks("bcoo_array.trunc(A)"))
    rint = GatherFirst(_on_blocks("bcoo_array.round(A)"))
    deg2rad = GatherFirst(_on_blocks("A * (numpy.pi / 180)"))
    rad2deg = GatherFirst(_on_blocks("A * (180 / numpy.pi)"))


def _parse_spec(spec, mesh: Mesh, ndim: int):
    if isinstance(spec, str):
        spec = PartitionSpec(spec)
    if not isinstance(spec, (PartitionSpec, tuple, list)):
        raise TypeError(f"spec must be a jax.sharding.PartitionSpec, got {type(spec).__name__}")
    entries = list(spec)
    if len(entries) > ndim:
        raise ValueError(f"spec {spec} has {len(entries)} entries for a {ndim}-d array")
    named = [(k, e) for k, e in enumerate(entries) if e is not None]
    if len(named) != 1:
        raise ValueError(
            f"spec {spec} must name mesh axes for exactly one dimension, e.g. PartitionSpec('x', None) "
            "for a row-block partition; partitions of several dimensions are not supported")
    axis, entry = named[0]
    mesh_axes = (entry,) if isinstance(entry, str) else tuple(entry)
    for a in mesh_axes:
        if a not in mesh.axis_names:
            raise ValueError(f"spec {spec} names mesh axis {a!r}; the mesh has axes {mesh.axis_names}")
    if len(set(mesh_axes)) != len(mesh_axes):
        raise ValueError(f"spec {spec} names a mesh axis twice")
    return axis, mesh_axes


def _host(leaf) -> np.ndarray:
    """The global value of a (possibly multi-process) jax.Array as a NumPy array."""
    if getattr(leaf, "is_fully_addressable", True):
        return np.asarray(leaf)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))


def place(buf: np.ndarray, sharding: NamedSharding) -> jax.Array:
    """Put a host buffer (identical on every process) onto ``sharding``; each device receives its slice."""
    return jax.make_array_from_callback(buf.shape, sharding, lambda idx: buf[idx])


def shard(A, mesh: Mesh, spec) -> ShardedBCOOArray:
    """Partition a sparse array over the devices of ``mesh``.

    Parameters
    ----------
    A : BCOOArray, scipy.sparse array, or array_like
        A concrete array (not traced; converted with [`bcoo_array.asarray`][]).
        In a multi-process run every process passes the same array; each
        device receives only its block.
    mesh : jax.sharding.Mesh
        Any mesh, with ``Auto`` or ``Explicit`` axis types.
    spec : jax.sharding.PartitionSpec
        Names mesh axes (a name or a tuple of names) for exactly one
        dimension ``axis`` of ``A``, e.g. ``PartitionSpec('x', None)``:

        * ``axis`` a batch dimension of ``A``: batch partition, each device
          holds ``ceil(n / p)`` batch elements;
        * ``axis`` a sparse dimension: row-block partition, each device holds
          the entries whose index along ``axis`` falls in its block of
          ``ceil(n / p)`` positions, with local indices, padded to the largest
          block's entry count. ``A`` is first brought to ``n_batch = 0``
          (batch dimensions become sparse) and its duplicates summed.

    Returns
    -------
    ShardedBCOOArray
        Same shape, dtype and fill value; ``p`` blocks, ``p`` the product of
        the named mesh axes' sizes.

    Raises
    ------
    TypeError
        If ``mesh`` is not a Mesh or ``spec`` not a PartitionSpec, or ``A``
        is traced.
    ValueError
        If ``spec`` names no dimension or several, names an unknown mesh
        axis, or names a dense dimension of ``A``.
    """

    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (e.g. jax.make_mesh), got {type(mesh).__name__}")
    if isinstance(A, ShardedBCOOArray):
        A = unshard(A)
    if not isinstance(A, BCOOArray):
        A = xp.asarray(A)
    if not is_concrete(A.data, A.indices):
        raise TypeError("shard() needs a concrete array, not one traced under jit; shard outside jit and "
                        "pass the ShardedBCOOArray in, with in_shardings=A.sharding")
    if A.ndim == 0:
        raise ValueError("a 0-d array has no dimension to partition")
    axis, mesh_axes = _parse_spec(spec, mesh, A.ndim)
    p = prod(mesh.shape[a] for a in mesh_axes)
    leaf = NamedSharding(mesh, PartitionSpec(spec_entry(mesh_axes)))
    if axis < A.n_batch:
        data = _host(A.data)
        idx = _host(A.indices)
        pad = np.asarray(A.shape[A.n_batch:A.n_batch + A.n_sparse], np.int64)
        d, i = _partition.split_batch(data, idx, axis, p, pad)
        meta = dict(n_batch=A.n_batch, n_dense=A.n_dense, srt=A.indices_sorted, uniq=A.unique_indices)
    elif axis < A.ndim - A.n_dense:
        c = update_layout(A, 0, A.n_dense)._canonical()
        d, i = _partition.split_sparse(_host(c.data), _host(c.indices), c.shape, axis, p)
        meta = dict(n_batch=0, n_dense=c.n_dense, srt=True, uniq=True)
    else:
        raise ValueError(
            f"dimension {axis} of this array is a dense dimension (n_dense={A.n_dense}); partition a batch or "
            "sparse dimension, or change the layout first")
    return ShardedBCOOArray._from_buffers(
        place(d, leaf), place(i, leaf), A.shape, axis=axis, mesh=mesh, mesh_axes=mesh_axes,
        n_batch=meta["n_batch"], n_dense=meta["n_dense"], fill_value=A.fill_value,
        indices_sorted=meta["srt"], unique_indices=meta["uniq"])


def unshard(A: ShardedBCOOArray, device=None) -> BCOOArray:
    """Gather a sharded array into one BCOOArray.

    Parameters
    ----------
    A : ShardedBCOOArray
        Concrete (call it outside ``jax.jit``). In a multi-process run every
        process must call it (it all-gathers across processes).
    device : jax.Device, optional
        Where the result lives (default: this process's first local device).

    Returns
    -------
    BCOOArray
        Same shape, dtype, fill value and values; virtual positions of the
        last blocks and padding dropped.

    Raises
    ------
    TypeError
        If ``A`` is not a ShardedBCOOArray or is traced.
    """

    if not isinstance(A, ShardedBCOOArray):
        raise TypeError(f"unshard() takes a ShardedBCOOArray, got {type(A).__name__}")
    if not is_concrete(A.data, A.indices):
        raise TypeError("unshard() gathers to the host and cannot run under jit; use A.todense() inside jit")
    dev = device if device is not None else jax.local_devices()[0]
    ax = A.axis
    n = A.shape[ax]
    if ax < A.n_batch:
        d, i = _partition.join_batch(_host(A.data), _host(A.indices), ax, n)
        out = BCOOArray._from_buffers(jax.device_put(d, dev), jax.device_put(i, dev), A.shape, n_batch=A.n_batch,
                                      n_dense=A.n_dense, fill_value=A.fill_value,
                                      indices_sorted=A.indices_sorted, unique_indices=A.unique_indices)
        return out
    if A.n_batch == 0 and A.n_sparse == 0:
        d = _partition.join_dense(_host(A.data), 1 + ax, n)
        out = dense_layout(jax.device_put(d[0], dev))
        return out._replace(fill_value=A.fill_value)
    want_dense = min(A.n_dense, A.ndim - ax - 1)
    if A.n_batch != 0 or A.n_dense != want_dense:
        from ._ops import map_blocks  # deferred: _ops builds on this class

        A = map_blocks(lambda b: update_layout(b, 0, want_dense), A, key=("update_layout", want_dense))
    d, i = _partition.join_sparse(_host(A.data), _host(A.indices), A.shape, ax)
    return BCOOArray._from_buffers(jax.device_put(d, dev), jax.device_put(i, dev), A.shape, n_batch=0,
                                   n_dense=A.n_dense, fill_value=A.fill_value,
                                   indices_sorted=A.indices_sorted and ax == 0, unique_indices=A.unique_indices)


