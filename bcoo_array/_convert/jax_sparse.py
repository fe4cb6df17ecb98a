"""jax.experimental.sparse (``BCOO``, ``BCSR``) <-> BCOOArray.

BCOO has the same buffers as BCOOArray (without a fill value), so the
conversion in either direction wraps the same ``data`` and ``indices``
arrays: nothing is copied. BCSR stores row pointers instead of row indices,
so converting it computes the row indices (``BCSR.to_bcoo``); the data
buffer is still shared.
"""

from __future__ import annotations

import numpy as np

from .._array_object import BCOOArray
from .._fill import reads_as_zero

_FORMATS = ("bcoo", "bcsr")


def from_jax_sparse(mat) -> BCOOArray:
    """Convert a ``jax.experimental.sparse.BCOO`` or ``BCSR`` to a BCOOArray.

    Parameters
    ----------
    mat : jax.experimental.sparse.BCOO or jax.experimental.sparse.BCSR
        Any layout (batch, sparse and dense dimensions); also works on traced
        buffers inside ``jax.jit``.

    Returns
    -------
    BCOOArray
        Same shape, dtype, layout (``n_batch``, ``n_dense``) and entries, fill
        value 0. For BCOO the ``data`` and ``indices`` buffers are the very
        same JAX arrays; the sorted / unique flags are kept.

    Raises
    ------
    TypeError
        If ``mat`` is neither BCOO nor BCSR.
    """
    from jax.experimental import sparse as jsparse

    if isinstance(mat, jsparse.BCSR):
        mat = mat.to_bcoo()
    if not isinstance(mat, jsparse.BCOO):
        raise TypeError(f"from_jax_sparse() needs a jax.experimental.sparse BCOO or BCSR, got {type(mat).__name__}")
    return BCOOArray._from_buffers(
        mat.data, mat.indices, tuple(mat.shape), n_batch=mat.n_batch, n_dense=mat.n_dense,
        fill_value=np.zeros((), mat.data.dtype)[()], indices_sorted=mat.indices_sorted,
        unique_indices=mat.unique_indices,
    )


def to_jax_sparse(x: BCOOArray, format: str = "bcoo"):
    """Convert a BCOOArray to ``jax.experimental.sparse.BCOO`` (or ``BCSR``).

    Parameters
    ----------
    x : BCOOArray
        Fill value must be 0 (jax.experimental.sparse has no fill value).
    format : {"bcoo", "bcsr"}
        ``"bcoo"`` shares ``data`` and ``indices`` (no copy; works under
        ``jit``). ``"bcsr"`` needs exactly two sparse dimensions and builds
        row pointers from the canonical (sorted, summed) form, as
        ``jax.experimental.sparse.BCSR.from_bcoo`` does.

    Returns
    -------
    jax.experimental.sparse.BCOO or jax.experimental.sparse.BCSR

    Raises
    ------
    ValueError
        If the fill value is not 0 (subtract it first, or densify), if
        ``format`` is unknown, or BCSR is asked for with ``n_sparse != 2``.
    """
    from jax.experimental import sparse as jsparse

    if format not in _FORMATS:
        raise ValueError(f"format={format!r} is not a jax.experimental.sparse format; use one of {_FORMATS}")
    if not reads_as_zero(x.fill_value):
        raise ValueError(
            f"this array's fill value is {x.fill_value!r}, but jax.experimental.sparse arrays have no fill "
            "value (unstored entries are 0); convert x - fill_value, or x.todense()"
        )
    if format == "bcoo":
        return jsparse.BCOO((x.data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
                            unique_indices=x.unique_indices)
    if x.n_sparse != 2:
        raise ValueError(f"BCSR needs exactly 2 sparse dimensions; this array has n_sparse={x.n_sparse}")
    c = x._canonical()
    mat = jsparse.BCOO((c.data, c.indices), shape=c.shape, indices_sorted=True, unique_indices=True)
    return jsparse.BCSR.from_bcoo(mat)
