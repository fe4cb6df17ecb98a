"""The explicit table of namespace functions that take sharded arrays.

Every public function of the ``bcoo_array`` namespace (and of
``bcoo_array.linalg`` and ``bcoo_array.fft``) is routed (see
``bcoo_array._routing``): called with a [`ShardedBCOOArray`][bcoo_array.sharded.ShardedBCOOArray]
argument it calls ``ShardedBCOOArray.__bcoo_function__``, which runs
``call``. ``call`` looks the function up in ``TABLE``, built
once when this module is imported; a function that is not in the table
raises a TypeError asking to gather first. This is how
``array_api_compat.array_namespace(A)`` (which returns ``bcoo_array`` for a
sharded ``A``) serves sharded arrays too.

The Krylov solvers of ``bcoo_array.linalg`` (``cg``, ``bicgstab``,
``gmres``) run ``jax.scipy.sparse.linalg``'s with the sharded product as the
operator, so the matrix stays partitioned; ``eigsh`` runs ARPACK (scipy) with
the products on the mesh, and asks to gather for shift-invert (a host LU).
"""

from __future__ import annotations

import jax
import numpy as np

import bcoo_array as xp
from bcoo_array._dtypes import CATEGORIES, sum_dtype
from bcoo_array._elementwise_functions import TABLE as _ELEMENTWISE
from bcoo_array._shapes import normalize_axes

from . import _ops
from ._array import ShardedBCOOArray


def _prep(x, axis, name, category):
    if x.dtype not in CATEGORIES[category]:
        raise TypeError(f"{name}() needs x of a {category} dtype, got {x.dtype}")
    return normalize_axes(axis, x.ndim)


def _cast(x, dt):
    return x if x.dtype == dt else astype(x, dt)


def _count(x, axes) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001 - the namespace's name
    axes = _prep(x, axis, "sum", "numeric")
    return _ops.reduce(_cast(x, sum_dtype(x.dtype, dtype)), "sum", axes, keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    axes = _prep(x, axis, "prod", "numeric")
    return _ops.reduce(_cast(x, sum_dtype(x.dtype, dtype)), "prod", axes, keepdims)


def _extreme(op):
    def f(x, /, *, axis=None, keepdims=False):
        axes = _prep(x, axis, op, "real numeric")
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"{op}() of a zero-size reduction has no identity; reduce over non-empty axes")
        return _ops.reduce(x, op, axes, keepdims)
    return f


def mean(x, /, *, axis=None, keepdims=False):
    axes = _prep(x, axis, "mean", "floating-point")
    n = _count(x, axes)
    total = _ops.reduce(x, "sum", axes, keepdims)
    return xp.divide(total, np.asarray(n, x.dtype) if n else np.asarray(np.nan, x.dtype))


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    axes = _prep(x, axis, "var", "floating-point")
    n = _count(x, axes)
    d = xp.subtract(x, mean(x, axis=axes, keepdims=True))
    sq = xp.real(xp.multiply(xp.conj(d), d)) if x.dtype.kind == "c" else xp.multiply(d, d)
    ss = _ops.reduce(sq, "sum", axes, keepdims)
    denom = n - correction
    return xp.divide(ss, np.asarray(denom, ss.dtype) if denom > 0 else np.asarray(np.nan, ss.dtype))


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return xp.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def astype(x, dtype, /, *, copy=True, device=None):
    if device is not None:
        raise ValueError("astype(device=...) of a sharded array: use A.to_device(...) to move it")
    return _ops.map_blocks(lambda blk: xp.astype(blk, dtype, copy=copy), x, key=("astype", str(dtype), copy))


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    if copy:
        raise ValueError("asarray(copy=True) of a sharded array: its buffers are immutable; use copy=None")
    out = obj if dtype is None else astype(obj, dtype)
    return out if device is None else out.to_device(device)


def matrix_transpose(x, /):
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got {x.ndim}")
    return _ops.permute(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _on_dtypes(name):
    fn = getattr(xp, name)

    def f(*args, **kwargs):
        return fn(*(a.dtype if isinstance(a, ShardedBCOOArray) else a for a in args), **kwargs)
    return f


def _elementwise(name):
    fn = getattr(xp, name)
    return lambda *a, **k: _ops.elementwise(fn, a, k)


def _solver_operator(X, what: str, name: str, n: int):
    """``v -> X @ v`` for a JAX solver: a sharded array is its own operator (``X(v)``, replicated result)."""
    from bcoo_array.linalg._solvers import _operator  # deferred: linalg's private operator of a BCOOArray

    if isinstance(X, ShardedBCOOArray) or isinstance(X, xp.BCOOArray):
        if X.shape != (n, n):
            raise ValueError(f"{name}(): {what} has shape {X.shape}; expected {(n, n)}")
        if X.dtype.kind not in "fc":
            raise TypeError(f"{name}(): {what} has dtype {X.dtype}; solvers need a floating-point array "
                            "(use astype)")
        return X if isinstance(X, ShardedBCOOArray) else _operator(X)
    if callable(X) and what == "the preconditioner M":
        return X
    raise TypeError(f"{name}(): {what} must be a BCOOArray or ShardedBCOOArray"
                    f"{', a callable' if what != 'A' else ''}, got {type(X).__name__}")


def _krylov(method: str):
    """``bcoo_array.linalg.<method>`` with a sharded operand: ``jax.scipy.sparse.linalg.<method>``
    with the sharded product as the operator (each product a shard_map on the mesh, the result replicated)."""
    import jax.scipy.sparse.linalg as jsla

    name = f"bcoo_array.linalg.{method}"

    def solve(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None, **extra):
        if getattr(A, "ndim", None) != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"{name}(): A must be a square 2-D array, got shape {getattr(A, 'shape', None)}")
        from bcoo_array.linalg._solvers import _same_precision, krylov_info  # deferred, as _solver_operator's

        n = A.shape[0]
        op = _solver_operator(A, "A", name, n)
        b = _same_precision(A, b, "b", method)
        if x0 is not None:
            x0 = _same_precision(A, x0, "x0", method)
        if b.shape[:1] != (n,) or b.ndim > 2:
            raise ValueError(f"{name}(): b has shape {b.shape}; expected ({n},) or ({n}, k)")
        pre = None if M is None else _solver_operator(M, "the preconditioner M", name, n)
        x, info = getattr(jsla, method)(op, b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=pre, **extra)
        return x, krylov_info(op, b, x, info, tol, atol, maxiter, n)

    return solve


def eigsh(A, k=6, M=None, sigma=None, which="LM", v0=None, ncv=None, maxiter=None, tol=0,
          return_eigenvectors=True, Minv=None, OPinv=None, mode="normal", rng=None):
    """``bcoo_array.linalg.eigsh`` with a sharded operand: ARPACK with the products on the mesh."""
    from bcoo_array.linalg._eigsh import run_eigsh  # deferred: the implementation beside the namespace's

    if not isinstance(A, (ShardedBCOOArray, xp.BCOOArray)):
        raise TypeError(f"bcoo_array.linalg.eigsh(): A must be a BCOOArray or ShardedBCOOArray, got "
                        f"{type(A).__name__}")
    if sigma is not None and OPinv is None:
        raise TypeError(
            "bcoo_array.linalg.eigsh(A, k, sigma=...) factorizes A - sigma*M with SuperLU on the host, which "
            "needs the whole matrix: gather first, bcoo_array.linalg.eigsh(bcoo_array.sharded.unshard(A), k, "
            "sigma=sigma) (unshard M too), or pass OPinv, an operator applying (A - sigma*M)^-1")
    if v0 is None and jax.process_count() > 1:
        v0 = _common_start_vector(A, rng)
    return run_eigsh(A, k, M, sigma, which, v0, ncv, maxiter, tol, return_eigenvectors, Minv, OPinv, mode, rng,
                     A_csc=None, name="bcoo_array.linalg.eigsh")


def _common_start_vector(A, rng):
    """ARPACK's random start vector, one for every process: process 0's draw, broadcast.

    ARPACK runs on the host of every process of a ``jax.distributed`` run and
    the products run on the mesh, so the processes must iterate on the same
    vectors; each would otherwise draw its own start vector and the first
    product would receive different operands (JAX refuses them). Uniform on
    ``[-1, 1)`` as ARPACK's own (scipy's ``rng`` when given).
    """
    from jax.experimental import multihost_utils

    n = A.shape[0]
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    v0 = gen.uniform(-1.0, 1.0, n)
    if np.dtype(A.dtype).kind == "c":
        v0 = v0 + 1j * gen.uniform(-1.0, 1.0, n)
    return np.asarray(multihost_utils.broadcast_one_to_all(v0), dtype=v0.dtype)


_NAMES = {
    **{name: _elementwise(name) for name in (*_ELEMENTWISE, "clip", "where")},
    "astype": astype,
    "asarray": asarray,
    "sum": sum, "prod": prod, "max": _extreme("max"), "min": _extreme("min"),
    "mean": mean, "var": var, "std": std,
    "matmul": _ops.matmul_mixed,
    "permute_dims": _ops.permute,
    "matrix_transpose": matrix_transpose,
    "result_type": _on_dtypes("result_type"),
    "can_cast": _on_dtypes("can_cast"),
    "finfo": _on_dtypes("finfo"),
    "iinfo": _on_dtypes("iinfo"),
}

#: public function (of bcoo_array, bcoo_array.linalg or bcoo_array.fft) -> implementation for
#: sharded operands. Built once; ``bcoo_array.linalg.matmul`` is ``bcoo_array.matmul``.
TABLE = {getattr(xp, name): impl for name, impl in _NAMES.items()}
TABLE.update({getattr(xp.linalg, name): TABLE[getattr(xp, name)] for name in ("matmul", "matrix_transpose")})
TABLE.update({getattr(xp.linalg, name): _krylov(name) for name in ("cg", "bicgstab", "gmres")})
TABLE[xp.linalg.eigsh] = eigsh


def _public_name(func) -> str:
    for prefix, ns in (("bcoo_array.linalg.", xp.linalg), ("bcoo_array.fft.", xp.fft), ("bcoo_array.", xp)):
        if getattr(ns, func.__name__, None) is func:
            return prefix + func.__name__
    return func.__name__


def call(func, args, kwargs):
    """Run public function ``func`` on arguments that include a sharded array.

    Raises
    ------
    TypeError
        If ``func`` has no sharded implementation: gather first.
    """
    impl = TABLE.get(func)
    if impl is None:
        raise TypeError(
            f"{_public_name(func)}() does not take sharded arrays; gather first with "
            "bcoo_array.sharded.unshard(x) (or x.todense() for a dense JAX array)")
    return impl(*args, **kwargs)
