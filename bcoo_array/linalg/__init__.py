"""The linear algebra extension of the array API standard: ``bcoo_array.linalg``.

The standard's functions live in ``._standard`` (see its docstring for
which results stay sparse and which are dense by nature). Iterative sparse
solvers, beyond the standard, follow in their own block, then ``eigsh``
(ARPACK through scipy, shift-invert by a sparse LU), then
``sparse_matmul`` (sparse @ sparse with an ``nse=`` bound for ``jax.jit``).
Spec: https://data-apis.org/array-api/2025.12/extensions/linear_algebra_functions.html
"""

# The standard's functions.
from ._standard import (
    cholesky,
    cross,
    det,
    diagonal,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    matmul,
    matrix_norm,
    matrix_power,
    matrix_rank,
    matrix_transpose,
    outer,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    tensordot,
    trace,
    vecdot,
    vector_norm,
)

__all__ = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

# Iterative and direct sparse solvers (beyond the standard).
from ._solvers import (
    bicgstab,
    cg,
    gmres,
    lobpcg,
    spsolve,
)

__all__ += [
    "bicgstab",
    "cg",
    "gmres",
    "lobpcg",
    "spsolve",
]

# Eigenpairs by ARPACK (scipy), shift-invert through a sparse LU (beyond the standard).
from ._eigsh import (
    eigsh,
)

__all__ += [
    "eigsh",
]

# Sparse @ sparse with a static size bound (beyond the standard).
from ._products import (
    sparse_matmul,
)

__all__ += [
    "sparse_matmul",
]
