"""Shape and index arithmetic of the BCOO format: index dtypes, shape and axis checks, broadcast shapes,
padding tests and the eager validation of index values (``_relayout`` changes an array's layout;
``_kernels/dimensions`` moves dimensions of the buffers).

A BCOOArray of shape ``(*batch, *sparse, *dense)`` holds

* ``data``    of shape ``(*batch, nse, *dense)``,
* ``indices`` of shape ``(*batch, nse, n_sparse)``,

as in ``jax.experimental.sparse``. A stored entry whose index is out of
range in any sparse dimension (JAX writes the dimension's size) is *padding*
and ignored by every operation.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _dtypes

_INT32_MAX = np.iinfo(np.int32).max


def is_tracer(x: Any) -> bool:
    """Whether ``x`` is a JAX tracer (its value is unknown while tracing)."""
    return isinstance(x, jax.core.Tracer)


def is_concrete(*xs: Any) -> bool:
    """Whether every array in ``xs`` has a concrete value (no tracer)."""
    return not any(is_tracer(x) for x in xs)


def normalize_shape(shape, *, argname: str = "shape") -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative Python ints.

    Raises
    ------
    TypeError
        If an entry is not an integer.
    ValueError
        If an entry is negative.
    """
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError as exc:
        raise TypeError(f"{argname}={shape!r} must be a tuple of integers") from exc
    if any(s < 0 for s in out):
        raise ValueError(f"{argname}={out} has a negative dimension")
    return out


def index_dtype_for(sparse_shape: tuple[int, ...]) -> np.dtype:
    """The index dtype for sparse dimensions of the given sizes.

    int32 when every size (and the padding value, equal to the size) fits,
    int64 otherwise.

    Raises
    ------
    ValueError
        If int64 is needed and JAX's x64 mode is off: int32 indices would
        wrap around and corrupt entries.
    """
    if all(s <= _INT32_MAX for s in sparse_shape):
        return np.dtype(np.int32)
    if not _dtypes.x64_enabled():
        big = max(sparse_shape)
        raise ValueError(
            f"a sparse dimension of size {big} needs int64 indices, which need JAX's "
            "64-bit mode; turn it on with jax.config.update('jax_enable_x64', True) "
            "or JAX_ENABLE_X64=1 before creating arrays"
        )
    return np.dtype(np.int64)


def check_buffers(data, indices, shape, n_batch: int, n_dense: int) -> None:
    """Check the shapes of ``data`` and ``indices`` against the layout.

    Only shapes are checked, so this is safe while tracing.

    Raises
    ------
    ValueError
        If a shape or layout parameter is inconsistent.
    """
    ndim = len(shape)
    if not (0 <= n_batch and 0 <= n_dense and n_batch + n_dense <= ndim):
        raise ValueError(
            f"n_batch={n_batch} and n_dense={n_dense} must be non-negative and sum to at most ndim={ndim}"
        )
    n_sparse = ndim - n_batch - n_dense
    if indices.ndim != n_batch + 2:
        raise ValueError(
            f"indices must have shape (*batch, nse, n_sparse) with {n_batch} batch dimensions; got {indices.shape}"
        )
    if indices.shape[-1] != n_sparse:
        raise ValueError(f"indices.shape[-1]={indices.shape[-1]} must equal n_sparse={n_sparse} for shape {shape}")
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise TypeError(f"indices must have an integer dtype, got {indices.dtype}")
    nse = indices.shape[-2]
    batch = tuple(shape[:n_batch])
    dense = tuple(shape[ndim - n_dense:])
    expected = (*batch, nse, *dense)
    if data.ndim != len(expected):
        raise ValueError(f"data has shape {data.shape}; expected (*batch, nse, *dense) = {expected}")
    for i, (d, e) in enumerate(zip(data.shape, expected)):
        if i < n_batch:
            if d not in (1, e):
                raise ValueError(f"data batch dimension {i} has size {d}; expected {e} (or 1)")
        elif d != e:
            raise ValueError(f"data has shape {data.shape}; expected (*batch, nse, *dense) = {expected}")
    for i in range(n_batch):
        if indices.shape[i] not in (1, shape[i]):
            raise ValueError(f"indices batch dimension {i} has size {indices.shape[i]}; expected {shape[i]} (or 1)")


def check_index_values(indices, shape, n_batch: int, *, allow_padding: bool = True) -> None:
    """Eagerly check that every index is in range or is padding.

    With ``allow_padding=False`` (coordinates in scipy's form, where there is
    no padding) an index equal to its dimension is out of range too.

    Each index must satisfy ``0 <= i <= size`` of its sparse dimension; the value
    ``size`` itself marks padding, as in JAX.

    Raises
    ------
    ValueError
        Naming the axis, the offending index and the bound.
    """
    if not is_concrete(indices):
        return
    idx = np.asarray(indices)
    if idx.size == 0:
        return
    n_sparse = idx.shape[-1]
    flat = idx.reshape(-1, n_sparse)
    for k in range(n_sparse):
        axis = n_batch + k
        col = flat[:, k]
        lo = col.min()
        hi = col.max()
        if lo < 0:
            raise ValueError(
                f"index {int(lo)} on axis {axis} is negative; indices must lie in [0, {shape[axis]})"
            )
        if hi > shape[axis] or (hi == shape[axis] and not allow_padding):
            if not allow_padding:
                raise ValueError(
                    f"index {int(hi)} on axis {axis} exceeds the dimension {shape[axis]}; "
                    f"indices must lie in [0, {shape[axis]})"
                )
            raise ValueError(
                f"index {int(hi)} on axis {axis} is out of bounds for size {shape[axis]}; "
                f"indices must lie in [0, {shape[axis]}) (the value {shape[axis]} marks padding)"
            )


def prod(shape) -> int:
    """Product of a shape as a Python int (1 for an empty shape)."""
    return math.prod(int(s) for s in shape)


def normalize_axis(axis, ndim: int, argname: str = "axis") -> int:
    try:
        a = operator.index(axis)
    except TypeError as exc:
        raise TypeError(f"{argname}={axis!r} must be an integer") from exc
    if not -ndim <= a < ndim:
        raise IndexError(f"{argname}={a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def normalize_axes(axis, ndim: int, argname: str = "axis") -> tuple[int, ...]:
    """Normalise ``axis`` (None, int or tuple) to a sorted tuple of non-negative ints.

    Raises
    ------
    IndexError
        If an axis is out of range.
    ValueError
        If an axis repeats.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(normalize_axis(a, ndim, argname) for a in axis)
    else:
        out = (normalize_axis(axis, ndim, argname),)
    if len(set(out)) != len(out):
        raise ValueError(f"{argname}={axis!r} repeats an axis")
    return tuple(sorted(out))


def valid_rows(indices: np.ndarray, sizes) -> np.ndarray:
    """Which entries of NumPy ``indices`` (``(..., k)``) are not padding: every coordinate below its size.

    Column by column: NumPy's ``np.all(indices < sizes, axis=-1)`` over a
    short last axis is several times slower (65 against 9 us for 2,560
    two-column entries).
    """
    out = np.ones(indices.shape[:-1], bool)
    for j, s in enumerate(sizes):
        out &= indices[..., j] < s
    return out


def broadcast_shape(*shapes, name: str = "broadcast") -> tuple:
    """The shape ``shapes`` broadcast to, in Python integers (NumPy's and JAX's refuse sizes past ``intp``).

    A ``None`` dimension (unknown size) gives ``None`` unless another shape has a size other than 1 there.
    Raises ``ValueError`` (naming ``name``) if two sizes differ and neither is 1, ``TypeError`` for a
    non-integer size.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(ndim):
        size = 1
        for s in shapes:
            if k >= len(s):
                continue
            d = s[len(s) - 1 - k]
            if d is None:
                size = None if size in (1, None) else size
                continue
            try:
                d = operator.index(d)
            except TypeError as exc:
                raise TypeError(f"{name}(): {s!r} is not a shape of integers") from exc
            if d == 1:
                continue
            if size in (1, None):
                size = d
            elif size != d:
                raise ValueError(f"{name}(): shapes {shapes} do not broadcast (sizes {size} and {d})")
        out.append(size)
    return tuple(out[::-1])
