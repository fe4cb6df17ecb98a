"""Sparse @ sparse with a static bound on its size: ``sparse_matmul`` (beyond the standard).

Under ``jax.jit`` the number of stored entries of a product of two sparse
matrices depends on the index values, which are unknown while tracing.
[`bcoo_array.matmul`][] uses a bound it can prove from static information
and refuses when that bound is larger than densifying; ``sparse_matmul``
takes the bound from the caller, as ``jax.experimental.sparse`` takes
``nse=``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from .._array_object import BCOOArray
from .._fill import zero_fill
from .._linear_algebra_functions import sparse_product
from .._operands import as_operand, cast, check_category
from .._routing import routed

__all__ = ["sparse_matmul"]


@routed
def sparse_matmul(x1, x2, /, *, nse: int | None = None) -> BCOOArray:
    """Sparse product of two 2-D zero-filled sparse matrices, with a static bound for ``jax.jit``.

    Parameters
    ----------
    x1 : BCOOArray or sparse array, shape ``(m, k)``
    x2 : BCOOArray or sparse array, shape ``(k, n)``
        Numeric, fill value 0 (scipy.sparse, pydata-sparse and
        jax.experimental.sparse arrays are converted); dtypes promote by the
        standard's rules.
    nse : int, optional
        Upper bound of the number of products ``x1[i, k] * x2[k, j]`` of two
        stored entries (which also bounds the stored entries of the
        result): at most ``x1.nse`` times the most entries stored in one row
        of ``x2``. Needed under ``jax.jit`` when [`bcoo_array.matmul`][]
        cannot bound the product itself. Static (a Python int).

    Returns
    -------
    BCOOArray
        Shape ``(m, n)``, fill value 0, indices sorted and unique. With
        ``nse``: ``min(nse, m * n)`` stored slots, the tail padding, eagerly
        and under ``jit`` alike. Without: the exact entries (concrete
        indices) or the bound of [`bcoo_array.matmul`][].

    Raises
    ------
    TypeError
        For a dense operand or a non-numeric dtype.
    ValueError
        If an operand is not 2-D, has a non-zero fill value, the contracted
        dimensions differ, ``nse`` is negative, or ``nse`` is smaller than
        the number of products (checked when the indices are concrete).

    Notes
    -----
    Under ``jit`` an ``nse`` smaller than the number of products cannot be
    detected: the products past ``nse`` (in the order of ``x1``'s stored
    entries) are dropped, as ``jnp.nonzero(size=)`` and
    ``jax.experimental.sparse``'s ``nse=`` bounds drop entries. Check the
    bound on concrete data first (an eager call raises). Memory: the
    temporaries hold ``nse`` products (never ``nse_x1 x nse_x2``).

    Examples
    --------
    >>> import jax, numpy as np, bcoo_array as xp
    >>> A = xp.asarray(np.eye(3))
    >>> f = jax.jit(lambda A, B: xp.linalg.sparse_matmul(A, B, nse=3))
    >>> f(A, A).nse
    3
    """
    a = as_operand(x1, "x1")
    b = as_operand(x2, "x2")
    for name, x in (("x1", a), ("x2", b)):
        if not isinstance(x, BCOOArray):
            raise TypeError(f"sparse_matmul(): {name} is a dense {type(x).__name__}; the product with a dense "
                            "operand is dense: use bcoo_array.matmul")
        if x.ndim != 2:
            raise ValueError(f"sparse_matmul(): {name} must be 2-D, got shape {x.shape}")
        if not zero_fill(x.fill_value):
            raise ValueError(f"sparse_matmul(): {name} has fill value {x.fill_value}; the product of arrays with "
                             "a non-zero fill value is dense: use bcoo_array.matmul")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"sparse_matmul(): contracted dimensions differ: x1.shape={a.shape}, x2.shape={b.shape}")
    da, db = np.dtype(a.dtype), np.dtype(b.dtype)
    check_category(da, "numeric", "sparse_matmul", "x1")
    check_category(db, "numeric", "sparse_matmul", "x2")
    if da != db:
        dt = _dtypes.result_type(da, db)
        a, b = cast(a, dt), cast(b, dt)
    return sparse_product(a, b, nse)
