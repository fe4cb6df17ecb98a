"""Sparse solvers with a BCOOArray as the operator: ``cg``, ``gmres``,
``bicgstab`` (Krylov methods of ``jax.scipy.sparse.linalg``), ``lobpcg``
(extreme eigenpairs, ``jax.experimental.sparse.linalg.lobpcg_standard``)
and ``spsolve`` (direct solve, ``jax.experimental.sparse.linalg.spsolve``).

The Krylov methods and ``lobpcg`` run entirely in JAX (on the arrays'
device, traceable under ``jax.jit``). ``spsolve`` runs JAX's sparse direct
solver: cuSOLVER's sparse QR on a CUDA GPU; on CPU JAX calls
``scipy.sparse.linalg.spsolve`` through a host callback (so on CPU the
factorisation is scipy's SuperLU).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._array_object import BCOOArray
from .._fill import reads_as_zero, same_value_np, zero_fill
from .._kernels.matmul import spmv_operator
from .._linear_algebra_functions import matmul
from .._relayout import update_layout
from .._routing import routed

__all__ = ["cg", "gmres", "bicgstab", "lobpcg", "spsolve"]


def _square(A, name) -> BCOOArray:
    if not isinstance(A, BCOOArray):
        raise TypeError(f"{name}(): A must be a BCOOArray, got {type(A).__name__}; convert with bcoo_array.asarray")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name}(): A must be a square 2-D array, got shape {A.shape}")
    if A.dtype.kind not in "fc":
        raise TypeError(f"{name}(): A has dtype {A.dtype}; solvers need a floating-point array (use A.astype)")
    return A


def _operator(A: BCOOArray, *, transposed_never: bool = False):
    """``v -> A @ v`` as a function of dense vectors (or blocks of vectors).

    ``transposed_never``: the solver never transposes the operator (JAX's
    ``cg`` on real data: a symmetric ``custom_linear_solve``), so a plain
    zero-filled matrix can run the native kernel inside the solver's trace
    (see ``bcoo_array._kernels.matmul.spmm``).
    """
    src = A if zero_fill(A.fill_value) else A._canonical()
    plain = transposed_never and src.n_batch == 0 and src.n_dense == 0 and same_value_np(
        src.fill_value, np.zeros((), src.dtype))

    # the products' work done once (kernel choice, CSR structure): _kernels/matmul.spmv_operator
    product = spmv_operator(src.data, src.indices, src.shape, rows_sorted=src.indices_sorted) if plain else None

    def apply(v):
        if product is not None and v.dtype == src.dtype and v.ndim in (1, 2):
            return product(v)
        out = matmul(src, v)  # a jax.Array for a JAX v (the mixed-type rule)
        return out.todense() if hasattr(out, "todense") else out

    return apply


def _precond(M, n, name):
    if M is None or callable(M) and not isinstance(M, BCOOArray):
        return M
    if isinstance(M, BCOOArray):
        if M.shape != (n, n):
            raise ValueError(f"{name}(): the preconditioner M has shape {M.shape}; expected {(n, n)}")
        return _operator(M)
    raise TypeError(f"{name}(): M must be a BCOOArray, a callable or None, got {type(M).__name__}")


def _same_precision(A, v, argname: str, name: str):
    """``v`` (``b`` or ``x0``) as a JAX array of ``A``'s precision: integers and bools take ``A``'s dtype;
    a floating ``v`` of another precision raises (the Krylov loops need one dtype throughout)."""
    dt = np.dtype(getattr(v, "dtype", None) or np.asarray(v).dtype)
    if dt.kind in "fc" and np.finfo(dt).bits != np.finfo(A.dtype).bits:
        raise TypeError(
            f"{name}(): {argname} has dtype {dt} but A has dtype {A.dtype}; the solvers do not mix precisions. "
            f"Pass {argname}.astype({A.dtype}) (or convert A with A.astype({dt}))")
    v = jnp.asarray(v)
    return v.astype(A.dtype) if dt.kind not in "fc" else v


def _rhs(A, b, name):
    b = _same_precision(A, b, "b", name)
    if b.shape[:1] != (A.shape[0],) or b.ndim > 2:
        raise ValueError(f"{name}(): b has shape {b.shape}; expected ({A.shape[0]},) or ({A.shape[0]}, k)")
    return b


def _krylov(fn, name, A, b, x0, tol, atol, maxiter, M, *, symmetric: bool = False, **extra):
    A = _square(A, name)
    b = _rhs(A, b, name)
    if x0 is not None:
        x0 = _same_precision(A, x0, "x0", name)
    # JAX's cg solves real systems as symmetric: it never transposes the operator then.
    op = _operator(A, transposed_never=symmetric and A.dtype.kind == "f" and jnp.result_type(b) == A.dtype)
    x, info = fn(op, b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=_precond(M, A.shape[0], name), **extra)
    return x, krylov_info(op, b, x, info, tol, atol, maxiter, A.shape[0])


def krylov_info(op, b, x, info, tol, atol, maxiter, n: int):
    """scipy's ``info`` where JAX reports None (``cg``, ``bicgstab``): 0 when converged, else the iterations
    run (the loop stops at ``maxiter``, default ``10 * n``, only when the tolerance is not met), read from the
    true residual ``norm(b - op(x))``. JAX's own ``info`` (``gmres``) passes through."""
    if info is not None:
        return info
    n_iter = 10 * n if maxiter is None else int(maxiter)
    bnorm = jnp.linalg.norm(b)
    rnorm = jnp.linalg.norm(b - op(x))
    bound = jnp.maximum(tol * bnorm, atol)
    # (the recurrence's residual, which the loop tests, drifts from the true one in the last bits)
    slack = 1 + 16 * jnp.finfo(b.dtype).eps ** 0.5
    return jnp.where(rnorm <= bound * slack, 0, n_iter).astype(jnp.int32)


@routed
def cg(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None, M=None):
    """Conjugate gradient solve of ``A x = b`` for Hermitian positive definite ``A``.

    Wraps ``jax.scipy.sparse.linalg.cg`` with ``A`` applied as a sparse
    product. Stops when ``norm(r) <= max(tol * norm(b), atol)``.

    Parameters
    ----------
    A : BCOOArray, shape (n, n), floating
    b : array, shape (n,) or (n, k)
    x0 : array, optional
        Initial guess (default zeros).
    tol, atol : float
        Relative and absolute tolerance.
    maxiter : int, optional
        Default ``10 * n`` (JAX's default).
    M : BCOOArray or callable, optional
        Preconditioner, an approximation of ``A^{-1}``.

    Returns
    -------
    x : jax.Array, shape of ``b``
    info : jax.Array (int)
        scipy's convention: 0 when converged, else the number of iterations
        run (``maxiter``) without reaching the tolerance. For ``cg`` and
        ``bicgstab`` it is read from the true residual ``norm(b - A @ x)``
        (JAX reports nothing); for ``gmres`` it is JAX's (0, or -1 when the
        solution holds NaN).

    Raises
    ------
    TypeError
        If ``A`` is not a floating BCOOArray, or ``b`` / ``x0`` is floating
        point of another precision (cast with ``b.astype(A.dtype)``).
    ValueError
        If ``A`` is not square or ``b`` does not match.
    """
    from jax.scipy.sparse.linalg import cg as _cg

    return _krylov(_cg, "cg", A, b, x0, tol, atol, maxiter, M, symmetric=True)


@routed
def bicgstab(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None, M=None):
    """BiCGSTAB solve of ``A x = b`` for general square ``A`` (``jax.scipy.sparse.linalg.bicgstab``).

    Parameters, returns and errors as [`cg`][bcoo_array.linalg.cg].
    """
    from jax.scipy.sparse.linalg import bicgstab as _bicgstab

    return _krylov(_bicgstab, "bicgstab", A, b, x0, tol, atol, maxiter, M)


@routed
def gmres(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, restart: int = 20, maxiter: int | None = None,
          M=None, solve_method: str = "batched"):
    """Restarted GMRES solve of ``A x = b`` for general square ``A`` (``jax.scipy.sparse.linalg.gmres``).

    Other parameters, returns and errors as [`cg`][bcoo_array.linalg.cg]; ``b`` must be 1-D.

    Parameters
    ----------
    restart : int
        Krylov subspace size between restarts.
    solve_method : {"batched", "incremental"}
        JAX's two GMRES variants.
    """
    from jax.scipy.sparse.linalg import gmres as _gmres

    return _krylov(_gmres, "gmres", A, b, x0, tol, atol, maxiter, M, restart=restart, solve_method=solve_method)


@routed
def lobpcg(A, X, *, maxiter: int = 100, tol: float | None = None, largest: bool = True):
    """Extreme eigenpairs of a Hermitian ``A`` by LOBPCG.

    Runs ``jax.experimental.sparse.linalg.lobpcg_standard`` (Knyazev's
    method in the form of Duersch et al. 2018, arXiv:1704.07458), which finds
    the largest eigenvalues; the smallest are found as the largest of ``-A``.

    Parameters
    ----------
    A : BCOOArray, shape (n, n), Hermitian, floating
    X : array, shape (n, k)
        Initial block of ``k`` vectors (random vectors are a good default);
        JAX requires ``n >= 5 * k``.
    maxiter : int
        Iteration limit.
    tol : float, optional
        Residual tolerance (JAX's default depends on the dtype).
    largest : bool
        Largest (True) or smallest (False) eigenvalues.

    Returns
    -------
    eigenvalues : jax.Array, shape (k,)
        Largest first when ``largest``, smallest first otherwise.
    eigenvectors : jax.Array, shape (n, k)
    iterations : jax.Array
        Number of iterations run.

    Raises
    ------
    TypeError
        If ``A`` is not a floating BCOOArray.
    ValueError
        If ``A`` is not square, ``X`` does not match or ``n < 5 * k``.
    """
    from jax.experimental.sparse.linalg import lobpcg_standard

    A = _square(A, "lobpcg")
    X = jnp.asarray(X)
    n = A.shape[0]
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"lobpcg(): X has shape {X.shape}; expected ({n}, k)")
    if n < 5 * X.shape[1]:
        raise ValueError(f"lobpcg(): n={n} must be at least 5 * k = {5 * X.shape[1]} (JAX's LOBPCG requirement)")
    op = _operator(A)
    if largest:
        theta, U, it = lobpcg_standard(op, X.astype(A.dtype), m=maxiter, tol=tol)
        return theta, U, it
    theta, U, it = lobpcg_standard(lambda v: -op(v), X.astype(A.dtype), m=maxiter, tol=tol)
    return -theta, U, it


@routed
def spsolve(A, b, *, tol: float = 1e-6, reorder: int = 1):
    """Direct solve of ``A x = b`` (``jax.experimental.sparse.linalg.spsolve``).

    On a CUDA GPU this is cuSOLVER's sparse QR; on CPU JAX runs
    ``scipy.sparse.linalg.spsolve`` in a host callback. ``A`` is
    converted to CSR (duplicates summed). A non-zero fill value would make
    ``A`` dense, so it is refused.

    Parameters
    ----------
    A : BCOOArray, shape (n, n), floating, fill value 0
    b : array, shape (n,)
    tol : float
        Singularity tolerance of the GPU QR.
    reorder : {0, 1, 2, 3}
        GPU fill-reducing ordering: none, symrcm, symamd, csrmetisnd.

    Returns
    -------
    x : jax.Array, shape (n,), A's dtype

    Raises
    ------
    TypeError
        If ``A`` is not a floating BCOOArray.
    ValueError
        If ``A`` is not square, has a non-zero fill value or ``b`` does not match.
    """
    from jax.experimental.sparse.linalg import spsolve as _spsolve

    A = _square(A, "spsolve")
    if not reads_as_zero(A.fill_value):
        raise ValueError(f"spsolve(): A has fill value {A.fill_value!r}; a direct sparse solve needs fill value 0")
    b = jnp.asarray(b)
    if b.shape != (A.shape[0],):
        raise ValueError(f"spsolve(): b has shape {b.shape}; expected ({A.shape[0]},)")

    csr = update_layout(A, 0, 0).to_jax_sparse("bcsr")
    return _spsolve(csr.data, csr.indices, csr.indptr, b.astype(A.dtype), tol=tol, reorder=reorder)
