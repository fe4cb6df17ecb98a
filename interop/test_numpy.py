"""Plain NumPy code run on BCOOArrays through NumPy's dispatch protocols
(``__array_function__``, ``__array_ufunc__``), on real SuiteSparse matrices,
compared with the same code on dense NumPy arrays; and the mixed-operand
contract of the operators.

Mixed operands (a BCOOArray on either side of ``+ * @ <``):

* NumPy array, JAX array, Python or NumPy scalar, either side: a BCOOArray
  with the dense result's values. (``jax_array + A``: JAX's operator
  returns NotImplemented for unknown types, so ``A.__radd__`` runs.)
* scipy.sparse, pydata-sparse or jax.experimental.sparse array with the
  BCOOArray on the left: converted with ``bcoo_array.asarray``; a BCOOArray.
* pydata-sparse on the left of ``+ * <``: pydata defers through NumPy's ufunc
  protocol, so the result is a BCOOArray as well.
* scipy.sparse on the left of ``+``: scipy returns NotImplemented and the
  BCOOArray's reflected operator gives a BCOOArray; on the left of ``* @ <``,
  scipy first calls ``numpy.asanyarray`` on the other operand, which a
  BCOOArray refuses (RuntimeError: it would densify).
* jax.experimental.sparse on the left: JAX raises TypeError.
* NumPy functions (``numpy.add(S, A)``, ...) always reach the BCOOArray and
  convert the foreign operand, whatever its side.
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import bcoo_array as xp
from bcoo_array import BCOOArray


def _d(r):
    return np.asarray(r.todense()) if isinstance(r, BCOOArray) else np.asarray(r)


# -- NumPy code under test (written once for NumPy arrays) -------------------------------------


def power_iteration(A, iters=20):
    """Dominant eigenvalue of a symmetric matrix (Rayleigh quotient after ``iters`` steps)."""
    x = np.ones(A.shape[1]) / np.sqrt(A.shape[1])
    for _ in range(iters):
        y = np.dot(A, x)
        x = y / np.linalg.norm(y)
    return np.vdot(x, np.dot(A, x))


def degree_summary(A):
    deg = np.count_nonzero(A, axis=1)
    return deg, np.sum(A, axis=0), np.max(deg), np.argmax(deg), np.mean(A, axis=1)


def cosine_similarity(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.einsum("ij,kj->ik", X, X) / (norms * norms.T)


def walks_of_length_two(A):
    return np.trace(np.matmul(A, A))


def standardize(X):
    sd = np.std(X, axis=0)
    return (X - np.mean(X, axis=0)) / np.where(sd > 0, sd, 1.0)


@pytest.mark.parametrize("name", ["karate.mtx", "494_bus.mtx"])
def test_numpy_routines_on_real_matrices(load_matrix, name):
    S = load_matrix(name)
    dense = S.toarray()
    A = xp.asarray(S)
    np.testing.assert_allclose(_d(power_iteration(A)), power_iteration(dense), rtol=1e-10)
    # Sums with cancellation: NumPy sums a dense row pairwise, the sparse reductions entry by entry in index
    # order, so the two differ by rounding relative to the largest summands (494_bus: 2.2e3, 1.6e-12 apart).
    atol = 1e-14 * float(np.abs(dense).max())
    for g, e in zip(degree_summary(A), degree_summary(dense)):
        np.testing.assert_allclose(_d(g), e, rtol=1e-10, atol=atol)
    np.testing.assert_allclose(_d(walks_of_length_two(A)), walks_of_length_two(dense), rtol=1e-12)
    assert bool(np.allclose(A, A.T)) == bool(np.allclose(dense, dense.T))
    assert bool(np.array_equal(A, dense))


def test_numpy_routines_on_a_small_feature_matrix(load_matrix):
    X = load_matrix("karate.mtx")[:12].toarray() * np.arange(1, 35)
    A = xp.asarray(X)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(_d(cosine_similarity(A)), cosine_similarity(X), rtol=1e-12)
        np.testing.assert_allclose(_d(standardize(A)), standardize(X), rtol=1e-12, atol=1e-12)


def test_ufuncs_and_reductions_on_a_real_matrix(load_matrix):
    S = load_matrix("west0067.mtx")
    dense = S.toarray()
    A = xp.asarray(S)
    E = np.expm1(np.abs(A))  # expm1(0) == 0: stays sparse
    assert E.nse == A.nse
    np.testing.assert_allclose(_d(E), np.expm1(np.abs(dense)), rtol=1e-12)
    np.testing.assert_allclose(_d(np.maximum.reduce(A, axis=1)), np.maximum.reduce(dense, axis=1))
    np.testing.assert_allclose(_d(np.add.accumulate(A, axis=0)), np.add.accumulate(dense, axis=0), rtol=1e-12)
    np.testing.assert_allclose(_d(np.hypot(A, dense)), np.hypot(dense, dense), rtol=1e-12)


# -- mixed operands --------------------------------------------------------------------------

_a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
_b = np.array([[1.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
OPS = {"add": operator.add, "mul": operator.mul, "lt": operator.lt, "matmul": operator.matmul}


def _foreign(kind):
    if kind == "numpy":
        return _b
    if kind == "jax":
        return jnp.asarray(_b)
    if kind == "scipy":
        return sp.csr_array(_b)
    if kind == "pydata":
        sparse = pytest.importorskip("sparse")
        return sparse.COO.from_numpy(_b)
    if kind == "jax_sparse":
        from jax.experimental import sparse as jsparse

        return jsparse.BCOO.fromdense(jnp.asarray(_b))
    raise AssertionError(kind)


def _result_type(kind, op):
    """The mixed-type rule: a product with a dense operand has that operand's type; the rest are BCOOArrays."""
    if op == "matmul" and kind == "numpy":
        return np.ndarray
    if op == "matmul" and kind == "jax":
        return jax.Array
    return BCOOArray


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kind", ["numpy", "jax", "scipy", "pydata", "jax_sparse"])
def test_bcoo_on_the_left_gives_a_defined_result(kind, op):
    other = _foreign(kind)
    if op == "matmul":
        other = other.T
    got = OPS[op](xp.asarray(_a), other)
    assert isinstance(got, _result_type(kind, op))
    np.testing.assert_allclose(_d(got), OPS[op](_a, _b.T if op == "matmul" else _b))


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kind", ["numpy", "jax", "pydata"])
def test_bcoo_on_the_right_gives_a_defined_result(kind, op):
    other = _foreign(kind)
    if kind == "pydata" and op == "matmul":
        pytest.skip("pydata-sparse's own __matmul__ runs first and does not defer")
    A = xp.asarray(_a.T if op == "matmul" else _a)
    got = OPS[op](other, A)
    assert isinstance(got, _result_type(kind, op))
    np.testing.assert_allclose(_d(got), OPS[op](_b, _a.T if op == "matmul" else _a))


def test_scalars_on_either_side():
    A = xp.asarray(_a)
    for s in (2, 2.5, np.float64(2.5), np.int64(3)):
        np.testing.assert_allclose(_d(s * A), s * _a)
        np.testing.assert_allclose(_d(A - s), _a - s)
        np.testing.assert_allclose(_d(s - A), s - _a)


def test_scipy_on_the_left():
    A = xp.asarray(_a)
    S = sp.csr_array(_b)
    np.testing.assert_allclose(_d(S + A), _b + _a)  # scipy defers: A.__radd__
    for op in (operator.mul, operator.lt):
        with pytest.raises(RuntimeError, match="densify"):
            op(S, A)
    with pytest.raises(RuntimeError, match="densify"):
        S.T @ A


def test_jax_sparse_on_the_left_raises_type_error():
    from jax.experimental import sparse as jsparse

    J = jsparse.BCOO.fromdense(jnp.asarray(_b))
    with pytest.raises(TypeError):
        J + xp.asarray(_a)


def test_numpy_functions_convert_foreign_operands_on_either_side():
    A = xp.asarray(_a)
    S = sp.csr_array(_b)
    np.testing.assert_allclose(_d(np.multiply(S, A)), _b * _a)
    np.testing.assert_allclose(_d(np.multiply(A, S)), _a * _b)
    np.testing.assert_allclose(_d(np.less(S, A)), _b < _a)
    np.testing.assert_allclose(_d(np.matmul(S.T, A)), _b.T @ _a)
    np.testing.assert_allclose(_d(np.concatenate([S, A])), np.concatenate([_b, _a]))


def test_jax_numpy_functions_refuse_bcoo_arrays():
    # BCOOArray does not define __jax_array__: jax.numpy refuses it rather than densify.
    with pytest.raises(TypeError, match="BCOOArray"):
        jnp.sin(xp.asarray(_a))
    with pytest.raises(TypeError, match="BCOOArray"):
        jnp.add(jnp.asarray(_b), xp.asarray(_a))
