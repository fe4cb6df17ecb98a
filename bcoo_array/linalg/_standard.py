"""The linear algebra extension of the array API standard (``xp.linalg``).

Sparse-preserving where the result is naturally sparse: ``diagonal``,
``trace``, ``vector_norm``, ``matrix_norm`` (except the singular-value
norms), ``outer``, ``cross``, ``matrix_power`` (repeated sparse matmul) and
the re-exported ``matmul``/``matrix_transpose``/``tensordot``/``vecdot``.
Factorisations and inverses (``cholesky``, ``det``, ``eigh``,
``eigvalsh``, ``inv``, ``pinv``, ``qr``, ``slogdet``, ``solve``, ``svd``,
``svdvals``, ``matrix_rank``, and ``matrix_norm`` of the singular-value
norms) are inherently dense: they densify their input and call
``jax.numpy.linalg``; the results are BCOOArrays in dense layout (every
entry stored). A sparse input passes the densification guard first
(``_guarded_dense``, ``._limits``): above
[`bcoo_array.get_max_dense_bytes`][] for the densified input plus the dense
results they raise ``MemoryError`` before allocating anything; an input
already in dense layout is not checked.
Spec: https://data-apis.org/array-api/2025.12/extensions/linear_algebra_functions.html
"""

from __future__ import annotations

import operator
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _dtypes
from .._array_object import BCOOArray
from .._engine import Operation
from .._creation_functions import eye
from .._elementwise_functions import abs as _abs
from .._elementwise_functions import multiply, not_equal, sqrt, subtract
from .._elementwise_functions import pow as _pow
from .._fill import same_value_np
from .._limits import check_dense_arrays
from .._shapes import index_dtype_for, is_concrete, normalize_axes
from .._linear_algebra_functions import matmul, matrix_transpose, tensordot, vecdot
from .._manipulation_functions import broadcast_arrays, broadcast_to, reshape, stack
from .._operands import as_operand, as_sparse, binary_operands, cast, check_category
from .._relayout import dense_layout, dense_layout_block, is_dense_layout, to_coo
from .._routing import routed
from .._statistical_functions import max as _max
from .._statistical_functions import min as _min
from .._statistical_functions import sum as _sum


class EigResult(NamedTuple):
    eigenvalues: BCOOArray
    eigenvectors: BCOOArray


class EighResult(NamedTuple):
    eigenvalues: BCOOArray
    eigenvectors: BCOOArray


class QRResult(NamedTuple):
    Q: BCOOArray
    R: BCOOArray


class SlogdetResult(NamedTuple):
    sign: BCOOArray
    logabsdet: BCOOArray


class SVDResult(NamedTuple):
    U: BCOOArray
    S: BCOOArray
    Vh: BCOOArray


def _matrix(x, name: str, category: str = "floating-point", square: bool = False) -> BCOOArray:
    x = as_sparse(x)
    check_category(x.dtype, category, f"linalg.{name}")
    if x.ndim < 2:
        raise ValueError(f"linalg.{name}() needs an array of shape (..., M, N), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.{name}() needs square matrices, got shape {x.shape}")
    return x


def _dense(x):
    return x.todense() if isinstance(x, BCOOArray) else jnp.asarray(x)


def _real_dtype(dt: np.dtype) -> np.dtype:
    return {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}.get(dt, dt)


def _guard(name: str, inputs, results, alternative: str = "") -> None:
    """The densification guard of a dense-by-nature function, before anything is densified.

    Parameters
    ----------
    name : str
        The function (``"inv"``), named ``linalg.<name>`` in the message.
    inputs : sequence of BCOOArray or array
        The operands about to be densified; those already dense (dense
        layout, NumPy or JAX arrays) cost what they store and are not
        counted. With none left, nothing is checked.
    results : sequence of (shape, dtype)
        The dense arrays the function returns.
    alternative : str
        The explicit call (default ``jax.numpy.linalg.<name>(x.todense())``).

    Raises
    ------
    MemoryError
        Above [`bcoo_array.get_max_dense_bytes`][] (``._limits.check_dense_arrays``).
    """
    dense = [(x.shape, x.dtype) for x in inputs if isinstance(x, BCOOArray) and not is_dense_layout(x)]
    if not dense:
        return
    check_dense_arrays(f"linalg.{name}", dense + list(results),
                       what="the densified input and the result: it is dense for a sparse matrix in general",
                       alternative=alternative or f"jax.numpy.linalg.{name}(x.todense())")


def _guarded_dense(x: BCOOArray, name: str, *results, alternative: str = ""):
    """``x.todense()`` after ``_guard`` (the densified ``x`` plus the ``(shape, dtype)`` of each result)."""
    _guard(name, (x,), results, alternative)
    return x.todense()


_DENSE_NOTE = ("Dense layout: the input is densified and ``jax.numpy.linalg.{f}`` does the work "
               "(the result of a sparse matrix is dense in general).")


@routed
def cholesky(x, /, *, upper: bool = False) -> BCOOArray:
    """Cholesky factor of Hermitian positive-definite matrices (array API ``linalg.cholesky``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, M)``, floating-point.
    upper : bool
        Return the upper factor ``U`` (``x = U^H U``) instead of the lower ``L``.

    Returns
    -------
    BCOOArray
        ``x``'s shape and dtype. Dense layout: the input is densified and
        ``jax.numpy.linalg.cholesky`` does the work. A matrix that is
        not positive-definite gives NaNs (JAX does not raise).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "cholesky", square=True)
    L = jnp.linalg.cholesky(_guarded_dense(x, "cholesky", (x.shape, x.dtype)))
    return dense_layout(jnp.conj(jnp.swapaxes(L, -1, -2)) if upper else L)


@routed
def cross(x1, x2, /, *, axis: int = -1) -> BCOOArray:
    """Cross product of 3-vectors along ``axis`` (array API ``linalg.cross``).

    Parameters
    ----------
    x1, x2 : BCOOArray or array
        Numeric, size 3 along ``axis`` (not broadcast there), broadcast
        elsewhere; dtypes promote.
    axis : int
        Negative axis holding the vectors (default -1).

    Returns
    -------
    BCOOArray
        The broadcast shape; sparse: each component is a sparse
        ``a_i * b_j - a_j * b_i``.

    Raises
    ------
    TypeError
        For non-numeric dtypes.
    ValueError
        If the size along ``axis`` is not 3 or ``axis`` is not negative.
    """
    a, b, _ = binary_operands(x1, x2, "linalg.cross", "numeric")
    a, b = as_sparse(a, "x1"), as_sparse(b, "x2")
    axis = operator.index(axis)
    if not -min(a.ndim, b.ndim) <= axis < 0:
        raise ValueError(f"linalg.cross(): axis={axis} must be negative and at least -min(x1.ndim, x2.ndim)")
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(f"linalg.cross(): x1 and x2 need size 3 along axis {axis}, got {a.shape} and {b.shape}")
    a, b = broadcast_arrays(a, b)
    ax = a.ndim + axis

    def comp(v, i):
        return v[(slice(None),) * ax + (i,)]

    parts = [subtract(multiply(comp(a, i), comp(b, j)), multiply(comp(a, j), comp(b, i)))
             for i, j in ((1, 2), (2, 0), (0, 1))]
    return stack(parts, axis=ax)


@routed
def det(x, /) -> BCOOArray:
    """Determinant of square matrices (array API ``linalg.det``).

    Returns
    -------
    BCOOArray
        Shape ``x.shape[:-2]``, ``x``'s dtype. Dense layout: the input is
        densified and ``jax.numpy.linalg.det`` (LU) does the work.

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "det", square=True)
    return dense_layout(jnp.linalg.det(_guarded_dense(x, "det", (x.shape[:-2], x.dtype))))


@routed
def diagonal(x, /, *, offset: int = 0) -> BCOOArray:
    """The ``offset`` diagonal of each matrix (array API ``linalg.diagonal``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, any dtype.
    offset : int
        0 the main diagonal, > 0 above it, < 0 below it.

    Returns
    -------
    BCOOArray
        Shape ``(..., L)``, ``L`` the diagonal's length; sparse: the stored
        entries on the diagonal (others become padding), ``x``'s fill value.

    Raises
    ------
    ValueError
        If ``x`` has fewer than two dimensions.
    TypeError
        If ``offset`` is not an integer.
    """
    x = as_sparse(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.diagonal() needs an array of shape (..., M, N), got shape {x.shape}")
    k = operator.index(offset)
    M, N = x.shape[-2:]
    L = max(0, min(M, N - k)) if k >= 0 else max(0, min(M + k, N))
    out_shape = x.shape[:-2] + (L,)
    c = to_coo(x)
    idt = index_dtype_for(out_shape if out_shape else (1,))
    idx = c.indices.astype(jnp.int64 if _dtypes.x64_enabled() else jnp.int32)
    valid = jnp.all(idx < jnp.asarray(x.shape, idx.dtype), axis=1)
    on = valid & (idx[:, -1] - idx[:, -2] == k)
    pos = idx[:, -2] if k >= 0 else idx[:, -1]
    new = jnp.concatenate([idx[:, :-2], pos[:, None]], axis=1)
    new = jnp.where(on[:, None], new, jnp.asarray(out_shape, idx.dtype)).astype(idt)
    out = BCOOArray._from_buffers(c.data, new, out_shape, n_batch=0, n_dense=0, fill_value=x.fill_value,
                                  unique_indices=c.unique_indices)
    if is_concrete(new):
        out = out.sum_duplicates()
    return out


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex128) if dt in (np.float64, np.complex128) else np.dtype(np.complex64)


@routed
def eig(x, /) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (array API ``linalg.eig``).

    Returns
    -------
    EigResult
        ``eigenvalues`` (shape ``(..., M)``) and ``eigenvectors`` (``(..., M, M)``,
        columns, unit norm), both complex of ``x``'s precision; the order is
        LAPACK's (the standard leaves it unspecified). Dense layout: the input
        is densified and ``jax.numpy.linalg.eig`` (LAPACK ``geev``, CPU
        only in JAX) does the work.

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "eig", square=True)
    cdt = _complex_of(x.dtype)
    w, v = jnp.linalg.eig(_guarded_dense(x, "eig", (x.shape[:-1], cdt), (x.shape, cdt)))
    return EigResult(dense_layout(w.astype(cdt)), dense_layout(v.astype(cdt)))


@routed
def eigvals(x, /) -> BCOOArray:
    """Eigenvalues of general square matrices (array API ``linalg.eigvals``).

    Returns
    -------
    BCOOArray
        Shape ``(..., M)``, complex of ``x``'s precision, LAPACK's order.
        Dense layout (via ``jax.numpy.linalg.eigvals`` on the densified
        input; CPU only in JAX).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "eigvals", square=True)
    cdt = _complex_of(x.dtype)
    return dense_layout(jnp.linalg.eigvals(_guarded_dense(x, "eigvals", (x.shape[:-1], cdt))).astype(cdt))


@routed
def eigh(x, /) -> EighResult:
    """Eigenvalues and eigenvectors of Hermitian matrices (array API ``linalg.eigh``).

    Returns
    -------
    EighResult
        ``eigenvalues`` (shape ``(..., M)``, real, ascending) and
        ``eigenvectors`` (``(..., M, M)``, columns). Dense layout: the input
        is densified and ``jax.numpy.linalg.eigh`` does the work (it
        reads the lower triangle).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "eigh", square=True)
    w, v = jnp.linalg.eigh(_guarded_dense(x, "eigh", (x.shape[:-1], _real_dtype(x.dtype)), (x.shape, x.dtype)))
    return EighResult(dense_layout(w), dense_layout(v))


@routed
def eigvalsh(x, /) -> BCOOArray:
    """Eigenvalues of Hermitian matrices, ascending (array API ``linalg.eigvalsh``).

    Returns
    -------
    BCOOArray
        Shape ``(..., M)``, real of ``x``'s precision. Dense layout (via
        ``jax.numpy.linalg.eigvalsh`` on the densified input).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "eigvalsh", square=True)
    return dense_layout(jnp.linalg.eigvalsh(_guarded_dense(x, "eigvalsh", (x.shape[:-1], _real_dtype(x.dtype)))))


@routed
def inv(x, /) -> BCOOArray:
    """Inverse of square matrices (array API ``linalg.inv``).

    Returns
    -------
    BCOOArray
        ``x``'s shape and dtype. Dense layout: the inverse of a sparse matrix
        is dense in general; ``jax.numpy.linalg.inv`` (LU) does the work.
        A singular matrix gives infinities or NaNs (JAX does not raise).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "inv", square=True)
    return dense_layout(jnp.linalg.inv(_guarded_dense(x, "inv", (x.shape, x.dtype))))


def _norm_dtype(x: BCOOArray, name: str) -> BCOOArray:
    check_category(x.dtype, "floating-point", f"linalg.{name}")
    return x


@routed
def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> BCOOArray:
    """Vector ``ord``-norm over ``axis`` (array API ``linalg.vector_norm``).

    Parameters
    ----------
    x : BCOOArray or array
        Floating-point input.
    axis : int, tuple of int or None
        Axes forming the vectors; None: all.
    keepdims : bool
        Keep reduced axes as size-1 dimensions.
    ord : int, float, inf or -inf
        ``inf``: max ``|x|``; ``-inf``: min ``|x|``; 0: number of non-zeros;
        p: ``sum(|x|**p)**(1/p)`` (so negative p gives the NumPy
        "harmonic" values).

    Returns
    -------
    BCOOArray
        Real floating dtype of ``x``'s precision; sparse over the kept
        sparse dimensions (built from sparse ``abs``, ``pow``, ``sum``,
        ``max``/``min``, the fill value entering for unstored entries).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``ord`` is not a number or an axis repeats; ``ord=±inf`` over an
        empty axis.
    IndexError
        If an axis is out of range.
    """
    x = _norm_dtype(as_sparse(x), "vector_norm")
    axes = normalize_axes(axis, x.ndim)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ValueError(f"linalg.vector_norm(): ord={ord!r} must be a number, inf or -inf")
    rdt = _real_dtype(x.dtype)
    a = _abs(x)
    if ord == float("inf"):
        return _max(a, axis=axes, keepdims=keepdims)
    if ord == float("-inf"):
        return _min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return _sum(cast(not_equal(a, 0), rdt), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _sum(a, axis=axes, keepdims=keepdims)
    if ord == 2:
        return sqrt(_sum(a * a, axis=axes, keepdims=keepdims))
    p = float(ord)
    return _pow(_sum(_pow(a, p), axis=axes, keepdims=keepdims), 1.0 / p)


@routed
def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> BCOOArray:
    """Matrix norm of each ``(M, N)`` matrix (array API ``linalg.matrix_norm``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, floating-point.
    keepdims : bool
        Keep the last two axes as size-1 dimensions.
    ord : {'fro', 'nuc', 1, -1, 2, -2, inf, -inf}
        'fro': Frobenius; 1 / -1: max / min column sum of ``|x|``; inf /
        -inf: max / min row sum; 'nuc', 2, -2: sum, max, min of the singular
        values.

    Returns
    -------
    BCOOArray
        Real floating dtype of ``x``'s precision, shape ``x.shape[:-2]``.
        'fro', ±1 and ±inf are sparse reductions; 'nuc' and ±2 densify and
        use ``jax.numpy.linalg.svd`` (dense layout).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``ord`` is not one of the above or ``x`` has fewer than 2 dimensions.
    MemoryError
        For ``'nuc'`` and ±2 only, if ``x`` is sparse and the densified input
        plus the singular values would take more than
        [`bcoo_array.get_max_dense_bytes`][] (see
        [`bcoo_array.set_max_dense_bytes`][]).
    """
    x = _matrix(x, "matrix_norm")
    inf = float("inf")
    if ord in ("nuc", 2, -2) and not isinstance(ord, bool):
        k = min(x.shape[-2:])
        s = jnp.linalg.svd(_guarded_dense(x, "matrix_norm", (x.shape[:-2] + (k,), _real_dtype(x.dtype)),
                                          alternative=f"jax.numpy.linalg.matrix_norm(x.todense(), ord={ord!r})"),
                           compute_uv=False)
        r = {"nuc": jnp.sum, 2: jnp.max, -2: jnp.min}[ord](s, axis=-1) if s.shape[-1] else \
            jnp.zeros(s.shape[:-1], s.dtype)
        if keepdims:
            r = r[..., None, None]
        return dense_layout(r)
    a = _abs(x)
    if ord == "fro":
        out = sqrt(_sum(a * a, axis=(-2, -1)))
    elif ord in (1, -1, inf, -inf) and not isinstance(ord, bool):
        col = ord in (1, -1)
        sums = _sum(a, axis=-2 if col else -1)
        out = (_max if ord > 0 else _min)(sums, axis=-1)
    else:
        raise ValueError(f"linalg.matrix_norm(): ord={ord!r} must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    if keepdims:
        out = reshape(out, x.shape[:-2] + (1, 1))
    return out


@routed
def matrix_power(x, n, /) -> BCOOArray:
    """Integer power of square matrices (array API ``linalg.matrix_power``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, M)``, numeric (floating-point for ``n < 0``).
    n : int
        The exponent; 0 gives identities, negative powers invert first.

    Returns
    -------
    BCOOArray
        ``x``'s shape and dtype, by repeated squaring with [`matmul`][bcoo_array.linalg.matmul]
        (sparse @ sparse stays sparse for zero-filled 2-D operands); ``n = 0``
        is a sparse identity; ``n < 0`` starts from the dense [`inv`][bcoo_array.linalg.inv].

    Raises
    ------
    TypeError
        If ``n`` is not an integer or the dtype is not numeric.
    ValueError
        If ``x`` is not a stack of square matrices; under ``jax.jit``, when a
        sparse @ sparse step has no static size bound no larger than
        densifying (see [`matmul`][bcoo_array.linalg.matmul]): then compute outside ``jit`` or
        pass ``x.todense()`` (a dense power, on purpose).
    MemoryError
        For ``n < 0``, from [`inv`][bcoo_array.linalg.inv]'s densification
        guard (see [`bcoo_array.set_max_dense_bytes`][]).
    """
    x = _matrix(x, "matrix_power", category="numeric", square=True)
    try:
        n = operator.index(n)
    except TypeError as exc:
        raise TypeError(f"linalg.matrix_power(): n={n!r} must be an integer") from exc
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype), x.shape)
    if n < 0:
        check_category(x.dtype, "floating-point", "linalg.matrix_power (n < 0)")
        x = inv(x)
        n = -n
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@routed
def matrix_rank(x, /, *, rtol=None) -> BCOOArray:
    """Rank of each matrix: singular values above ``rtol * max(singular value)``
    (array API ``linalg.matrix_rank``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, floating-point.
    rtol : float or array, optional
        Relative tolerance (broadcast against ``x.shape[:-2]``); default
        ``max(M, N) * eps`` of ``x``'s precision.

    Returns
    -------
    BCOOArray
        Shape ``x.shape[:-2]``, default integer dtype. Dense layout (SVD of
        the densified input with ``jax.numpy.linalg.svd``).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` has fewer than 2 dimensions.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "matrix_rank")
    s = jnp.linalg.svd(_guarded_dense(x, "matrix_rank", (x.shape[:-2] + (min(x.shape[-2:]),), _real_dtype(x.dtype))),
                       compute_uv=False)
    M, N = x.shape[-2:]
    if rtol is None:
        rtol = max(M, N) * jnp.finfo(_real_dtype(x.dtype)).eps
    else:
        rtol = _dense(as_operand(rtol, "rtol")) if not isinstance(rtol, (int, float)) else rtol
    rtol = jnp.asarray(rtol, s.dtype)
    smax = jnp.max(s, axis=-1, keepdims=True) if s.shape[-1] else jnp.zeros(s.shape[:-1] + (1,), s.dtype)
    tol = smax * jnp.asarray(rtol)[..., None]
    return dense_layout(jnp.sum(s > tol, axis=-1).astype(_dtypes.default_int()))


@routed
def outer(x1, x2, /) -> BCOOArray:
    """Outer product of two vectors (array API ``linalg.outer``).

    Parameters
    ----------
    x1 : BCOOArray or array
        Shape ``(N,)``, numeric.
    x2 : BCOOArray or array
        Shape ``(M,)``, numeric.

    Returns
    -------
    BCOOArray
        Shape ``(N, M)``, promoted dtype. Two zero-filled sparse vectors with
        finite stored values give the product pattern (nse = nse1 * nse2):
        NumPy's values, except that an unstored 0 times a stored negative
        value is the fill ``+0`` rather than ``-0.0`` (see "Non-finite
        values" in ``docs/design.md``); otherwise (a non-zero fill, a stored
        ``inf`` or ``nan``) the element-wise product ``x1[:, None] * x2[None,
        :]`` under the fill-value rule.

    Raises
    ------
    TypeError
        For non-numeric dtypes.
    ValueError
        If an operand is not 1-D.
    """
    a, b, dt = binary_operands(x1, x2, "linalg.outer", "numeric")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"linalg.outer() needs 1-D operands, got shapes {a.shape} and {b.shape}")
    a, b = as_sparse(a, "x1"), as_sparse(b, "x2")
    shape = (a.shape[0], b.shape[0])
    zero = np.zeros((), dt)
    if a.n_sparse == 1 and b.n_sparse == 1 and same_value_np(a.fill_value, zero) \
            and same_value_np(b.fill_value, zero) and _finite_values(a, b):
        idt = index_dtype_for(shape)
        ia, ib = a.indices[:, 0].astype(idt), b.indices[:, 0].astype(idt)
        na, nb = ia.shape[0], ib.shape[0]
        rows = jnp.repeat(ia, nb)
        cols = jnp.tile(ib, na)
        pad = (rows >= shape[0]) | (cols >= shape[1])
        idx = jnp.where(pad[:, None], jnp.asarray(shape, idt), jnp.stack([rows, cols], axis=1))
        data = (a.data[:, None] * b.data[None, :]).reshape(-1)
        return BCOOArray._from_buffers(data, idx, shape, n_batch=0, n_dense=0, fill_value=zero,
                                       unique_indices=a.unique_indices and b.unique_indices)
    return multiply(reshape(a, (shape[0], 1)), reshape(b, (1, shape[1])))


def _finite_values(a: BCOOArray, b: BCOOArray) -> bool:
    """Whether the stored values of both are finite, so an unstored 0 times them is 0 (``multiply``'s rule).

    A stored ``inf`` or ``nan`` times the other's unstored zeros is ``nan``, as
    NumPy gives: then ``outer`` takes the element-wise product. Traced values
    count as finite, as a traced factor does for ``multiply`` (docs/design.md).
    """
    if a.dtype.kind not in "fc" or not is_concrete(a.data, b.data):
        return True
    return bool(np.isfinite(np.asarray(a.data)).all() and np.isfinite(np.asarray(b.data)).all())


@routed
def pinv(x, /, *, rtol=None) -> BCOOArray:
    """Moore-Penrose pseudo-inverse (array API ``linalg.pinv``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, floating-point.
    rtol : float or array, optional
        Singular values below ``rtol * max(singular value)`` count as zero;
        default ``max(M, N) * eps``.

    Returns
    -------
    BCOOArray
        Shape ``(..., N, M)``, ``x``'s dtype. Dense layout (via
        ``jax.numpy.linalg.pinv`` on the densified input).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` has fewer than 2 dimensions.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "pinv")
    if rtol is not None and not isinstance(rtol, (int, float)):
        rtol = _dense(as_operand(rtol, "rtol"))
    out_shape = x.shape[:-2] + (x.shape[-1], x.shape[-2])
    return dense_layout(jnp.linalg.pinv(_guarded_dense(x, "pinv", (out_shape, x.dtype)), rtol=rtol))


@routed
def qr(x, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition (array API ``linalg.qr``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, floating-point.
    mode : {'reduced', 'complete'}
        Shapes ``(..., M, K)``/``(..., K, N)`` with ``K = min(M, N)``, or
        ``(..., M, M)``/``(..., M, N)``.

    Returns
    -------
    QRResult
        ``Q`` (orthonormal columns) and ``R`` (upper triangular), ``x``'s
        dtype. Dense layout (Householder QR of the densified input with
        ``jax.numpy.linalg.qr``).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``mode`` is unknown or ``x`` has fewer than 2 dimensions.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr(): mode={mode!r} must be 'reduced' or 'complete'")
    x = _matrix(x, "qr")
    M, N = x.shape[-2:]
    K = M if mode == "complete" else min(M, N)
    q, r = jnp.linalg.qr(_guarded_dense(x, "qr", (x.shape[:-2] + (M, K), x.dtype), (x.shape[:-2] + (K, N), x.dtype),
                                        alternative=f"jax.numpy.linalg.qr(x.todense(), mode={mode!r})"), mode=mode)
    return QRResult(dense_layout(q), dense_layout(r))


@routed
def slogdet(x, /) -> SlogdetResult:
    """Sign and log of the absolute determinant (array API ``linalg.slogdet``).

    Returns
    -------
    SlogdetResult
        ``sign`` (``x``'s dtype; 0 for a singular matrix) and ``logabsdet``
        (real of ``x``'s precision; ``-inf`` for a singular matrix), shape
        ``x.shape[:-2]``. Dense layout (LU of the densified input with
        ``jax.numpy.linalg.slogdet``).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` is not a stack of square matrices.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "slogdet", square=True)
    sign, logabs = jnp.linalg.slogdet(_guarded_dense(x, "slogdet", (x.shape[:-2], x.dtype),
                                                     (x.shape[:-2], _real_dtype(x.dtype))))
    return SlogdetResult(dense_layout(sign.astype(x.dtype)), dense_layout(logabs.astype(_real_dtype(x.dtype))))


@routed
def solve(x1, x2, /) -> BCOOArray:
    """Solve ``x1 @ X = x2`` (array API ``linalg.solve``).

    Parameters
    ----------
    x1 : BCOOArray or array
        Shape ``(..., M, M)``, floating-point, full rank.
    x2 : BCOOArray or array
        Shape ``(M,)`` (one right-hand side for every matrix) or
        ``(..., M, K)`` (batch dimensions broadcast with ``x1``'s).

    Returns
    -------
    BCOOArray
        ``x1.shape[:-2] + (M,)`` for a 1-D ``x2``, else ``(..., M, K)``;
        promoted dtype. Dense layout (LU solve of the densified operands
        with ``jax.numpy.linalg.solve``).

    Raises
    ------
    TypeError
        If a dtype is not floating-point.
    ValueError
        If shapes do not fit.
    MemoryError
        If a sparse operand (not in dense layout) is to be densified and the
        densified operands plus the dense result would take more than
        [`bcoo_array.get_max_dense_bytes`][] (2 GiB by default; see
        [`bcoo_array.set_max_dense_bytes`][]).
    """
    a, b, dt = binary_operands(x1, x2, "linalg.solve", "floating-point")
    a = _matrix(a, "solve", square=True)
    M = a.shape[-1]
    if b.ndim == 0 or (b.ndim == 1 and b.shape[0] != M) or (b.ndim > 1 and b.shape[-2] != M):
        raise ValueError(f"linalg.solve(): x2 of shape {b.shape} does not fit x1 of shape {a.shape}")
    if b.ndim == 1:
        out_shape = a.shape[:-2] + (M,)
    else:
        out_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    _guard("solve", (a, b), [(out_shape, dt)], alternative="jax.numpy.linalg.solve(x1.todense(), x2)")
    da, db = a.todense(), _dense(b)
    if b.ndim == 1:
        out = jnp.linalg.solve(da, jnp.broadcast_to(db[:, None], da.shape[:-2] + (M, 1)))[..., 0]
    else:
        batch = jnp.broadcast_shapes(da.shape[:-2], db.shape[:-2])
        out = jnp.linalg.solve(jnp.broadcast_to(da, batch + da.shape[-2:]),
                               jnp.broadcast_to(db, batch + db.shape[-2:]))
    return dense_layout(out.astype(dt))


@routed
def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``x = U @ diag(S) @ Vh`` (array API ``linalg.svd``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, floating-point.
    full_matrices : bool
        Square ``U`` and ``Vh`` (True) or reduced ones with ``K = min(M, N)``.

    Returns
    -------
    SVDResult
        ``U``, ``S`` (real, descending), ``Vh``. Dense layout (via
        ``jax.numpy.linalg.svd`` on the densified input).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` has fewer than 2 dimensions.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "svd")
    M, N = x.shape[-2:]
    K = min(M, N)
    batch = x.shape[:-2]
    _guard("svd", (x,), [(batch + ((M, M) if full_matrices else (M, K)), x.dtype), (batch + (K,), _real_dtype(x.dtype)),
                         (batch + ((N, N) if full_matrices else (K, N)), x.dtype)],
           alternative=f"jax.numpy.linalg.svd(x.todense(), full_matrices={full_matrices})")
    u, s, vh = _svd_blocks(x, full_matrices)
    return SVDResult(dense_layout_block(u), dense_layout_block(s), dense_layout_block(vh))


#: ``svd``'s factors of BCOOArray ``x`` as dense-layout blocks (a leading axis of 1). Host: LAPACK through
#: NumPy; XLA: one compiled program. (Singular vectors are unique up to sign; the two may differ there.)
_svd_blocks = Operation("svd", operands=lambda x, full_matrices: (x,))


@_svd_blocks.host
def _svd_blocks_host(x, full_matrices: bool):
    u, s, vh = np.linalg.svd(x._dense(), full_matrices=full_matrices)
    dt = x.dtype
    return u.astype(dt)[None], s.astype(np.dtype(dt.char.lower()))[None], vh.astype(dt)[None]


@_svd_blocks.xla
def _svd_blocks_xla(x, full_matrices: bool):
    return _svd_blocks_jit(x.todense(), full_matrices)


@partial(jax.jit, static_argnames=("full_matrices",))
def _svd_blocks_jit(a, full_matrices: bool):
    u, s, vh = jnp.linalg.svd(a, full_matrices=full_matrices)
    return u[None], s[None], vh[None]


@routed
def svdvals(x, /) -> BCOOArray:
    """Singular values, descending (array API ``linalg.svdvals``).

    Returns
    -------
    BCOOArray
        Shape ``(..., min(M, N))``, real of ``x``'s precision. Dense layout
        (via ``jax.numpy.linalg.svd`` on the densified input).

    Raises
    ------
    TypeError
        If ``x`` is not floating-point.
    ValueError
        If ``x`` has fewer than 2 dimensions.
    MemoryError
        If ``x`` is sparse and the densified input plus the dense result
        would take more than [`bcoo_array.get_max_dense_bytes`][] (2 GiB by
        default; see [`bcoo_array.set_max_dense_bytes`][]); an input in
        dense layout is not checked.
    """
    x = _matrix(x, "svdvals")
    k = min(x.shape[-2:])
    return dense_layout(jnp.linalg.svd(_guarded_dense(x, "svdvals", (x.shape[:-2] + (k,), _real_dtype(x.dtype))),
                                       compute_uv=False))


@routed
def trace(x, /, *, offset: int = 0, dtype=None) -> BCOOArray:
    """Sum of the ``offset`` diagonal of each matrix (array API ``linalg.trace``).

    Parameters
    ----------
    x : BCOOArray or array
        Shape ``(..., M, N)``, numeric.
    offset : int
        Which diagonal (see [`diagonal`][bcoo_array.linalg.diagonal]).
    dtype : dtype, optional
        Accumulation and result dtype; default as [`bcoo_array.sum`][].

    Returns
    -------
    BCOOArray
        Shape ``x.shape[:-2]``; sparse: ``sum(diagonal(x, offset), axis=-1)``.

    Raises
    ------
    TypeError
        If ``x`` is not numeric.
    ValueError
        If ``x`` has fewer than 2 dimensions.
    """
    x = _matrix(x, "trace", category="numeric")
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


__all__ = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "trace", "vecdot", "vector_norm",
]
