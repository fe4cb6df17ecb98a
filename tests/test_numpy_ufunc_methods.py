"""NumPy ufunc methods, foreign ufuncs and the opt-in to densification, against NumPy on ``A.todense()``.

The ufunc-method table (``test_ufunc_method_table``) runs every ufunc of the
namespace's table and a set of ufuncs without a namespace function (NumPy's
``fmod``, ``cbrt``, ... and scipy.special's ``erf``, ``expit``) through every
method (``__call__``, ``reduce``, ``accumulate``, ``reduceat``, ``outer``,
``at``), on arrays of fill value 0 and non-zero, in four dtypes: where
``registry.method_support`` says a method is served, the result must be
NumPy's on the dense values (or NumPy's error); where it says refused, the
call must raise TypeError naming the fix.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.special as sc

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._numpy.registry import METHODS, REDUCE, UFUNCS, method_support

AUTO = "BCOO_ARRAY_AUTO_DENSIFY"


@pytest.fixture(autouse=True)
def _no_opt_in(monkeypatch):
    """Each test starts without the opt-in (a test sets it itself)."""
    monkeypatch.delenv(AUTO, raising=False)


# -- data --------------------------------------------------------------------------------------

_X = np.array([[0.0, 0.25, 0.0, 2.0], [0.5, 0.0, 0.75, 0.0], [0.0, 3.0, 0.0, 0.0]])
_Y = np.array([[1.0, 0.0, 0.0, 0.5], [0.0, 0.0, 2.0, 0.0], [0.0, 0.25, 0.0, 1.5]])
_V = np.array([0.0, 2.0, 0.0, 0.5])
_IX = np.array([[0, 5, 0, 3], [2, 0, 6, 0], [0, 1, 0, 0]])
_IY = np.array([[1, 0, 0, 3], [0, 0, 2, 0], [0, 1, 0, 2]])
_IV = np.array([0, 2, 0, 1])

DTYPES = ["float64", "float32", "int64", "bool"]


def _data(dtype):
    """Fresh copies (``at`` writes into its NumPy operand)."""
    if dtype == "bool":
        return _X != 0, _Y != 0, _V != 0
    if dtype == "int64":
        return _IX.copy(), _IY.copy(), _IV.copy()
    return tuple(t.astype(dtype) for t in (_X, _Y, _V))


def _sparse(x, fill):
    """A BCOOArray of the values of ``x`` whose unstored entries hold ``fill`` (0 or 1, in x's dtype)."""
    return BCOOArray.fromdense(x, fill_value=np.asarray(fill).astype(x.dtype)[()])


def _dense(x, fill):
    return x


FOREIGN = [np.fmod, np.fmax, np.fmin, np.heaviside, np.gcd, np.logaddexp2, np.cbrt, np.exp2, np.deg2rad,
           np.spacing, sc.erf, sc.expit]
TABLE_UFUNCS = [u for u in UFUNCS if u.signature is None]
ALL_UFUNCS = TABLE_UFUNCS + FOREIGN
_AT_INDEX = (np.array([0, 1, 0, 2, 0]), np.array([3, 0, 3, 1, 3]))  # (0, 3) three times
_REORDERABLE = set(REDUCE) - {np.subtract, np.equal, np.not_equal}


def _run(uf, method, conv, fill, dtype):
    """The same call on BCOOArrays (``conv=_sparse``) or NumPy arrays (``conv=_dense``); ``at`` returns its target."""
    x, y, v = _data(dtype)
    X, Y, V = conv(x, fill), conv(y, fill), conv(v, fill)
    if method == "__call__":
        return uf(X) if uf.nin == 1 else uf(X, Y)
    if method == "reduce":
        out = [uf.reduce(X), uf.reduce(X, axis=1, keepdims=True)]
        if uf in _REORDERABLE:
            out.append(uf.reduce(X, axis=None))
        return tuple(out)
    if method == "accumulate":
        return uf.accumulate(X, axis=1)
    if method == "reduceat":
        return uf.reduceat(X, [0, 2, 1, 3], axis=1)
    if method == "outer":
        return uf.outer(X, V)
    if method == "at":
        if uf.nin == 1:
            uf.at(X, _AT_INDEX)
        else:
            uf.at(X, _AT_INDEX, np.array([1, 2, 3, 4, 5]).astype(x.dtype))
        return X
    raise AssertionError(method)


def _numpy(r):
    if isinstance(r, BCOOArray):
        return np.asarray(r.todense())
    if isinstance(r, tuple):
        return tuple(_numpy(t) for t in r)
    return np.asarray(r)


def _same(got, exp, dtype):
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp)
        for g, e in zip(got, exp):
            _same(g, e, dtype)
        return
    assert got.shape == exp.shape, (got.shape, exp.shape)
    assert got.dtype.kind == exp.dtype.kind or {got.dtype.kind, exp.dtype.kind} <= set("iu"), (got.dtype, exp.dtype)
    if exp.dtype.kind in "biu":
        np.testing.assert_array_equal(got, exp)
    else:
        rtol = 2e-6 if exp.dtype == np.float32 or got.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=1e-30, equal_nan=True)


def _leaves(r):
    return r if isinstance(r, tuple) else (r,)


# -- the ufunc-method table --------------------------------------------------------------------


@pytest.mark.parametrize("fill", [0, 1], ids=["fill0", "fill1"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("uf", ALL_UFUNCS, ids=[u.__name__ for u in ALL_UFUNCS])
def test_ufunc_method_table(uf, method, dtype, fill):
    support = method_support(uf, method)
    try:
        with np.errstate(all="ignore"):
            exp = _numpy(_run(uf, method, _dense, fill, dtype))
    except Exception as err:  # NumPy refuses this call (a dtype without a loop, a method for binary ufuncs only)
        with pytest.raises(Exception):  # noqa: B017 - whatever NumPy raised, we must raise too
            _run(uf, method, _sparse, fill, dtype)
        if support is None:
            assert isinstance(err, (TypeError, ValueError))
        return
    if support is None:
        with pytest.raises(TypeError, match=r"A\.toarray\(\).*BCOO_ARRAY_AUTO_DENSIFY=1"):
            _run(uf, method, _sparse, fill, dtype)
        return
    got = _run(uf, method, _sparse, fill, dtype)
    for leaf in _leaves(got):
        assert isinstance(leaf, BCOOArray), type(leaf)  # the closure: array results are BCOOArrays
    _same(_numpy(got), exp, dtype)


def test_the_table_serves_what_the_issue_asks():
    for uf in (np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or):
        assert method_support(uf, "reduce") and method_support(uf, "reduceat")
    for uf in (np.add, np.multiply):
        assert method_support(uf, "accumulate").startswith("dense: methods.")
    for uf in ALL_UFUNCS:
        assert method_support(uf, "at") is not None
        assert (method_support(uf, "outer") is not None) == (uf.nin == 2)
        assert method_support(uf, "__call__") is not None
    assert method_support(np.divide, "reduce") is None
    assert method_support(np.matmul, "outer") is None and method_support(np.matmul, "at") is None


# -- reduce, accumulate and reduceat in detail ----------------------------------------------------


def test_reductions_are_the_namespace_functions():
    A = _sparse(_X, 0)
    _same(_numpy(np.add.reduce(A, axis=0)), _numpy(xp.sum(A, axis=0)), "float64")
    _same(_numpy(np.maximum.reduce(A, axis=1)), _numpy(xp.max(A, axis=1)), "float64")
    _same(_numpy(np.multiply.reduce(A, axis=0)), _numpy(xp.prod(A, axis=0)), "float64")
    _same(_numpy(np.logical_or.reduce(A, axis=0)), _numpy(xp.any(A, axis=0)), "bool")
    _same(_numpy(np.add.accumulate(A, axis=1)), _numpy(xp.cumulative_sum(A, axis=1)), "float64")


def test_reduce_keywords():
    A, a = _sparse(_X, 0), _X
    for kw in ({}, {"axis": 1}, {"axis": None}, {"axis": (0, 1)}, {"axis": 0, "keepdims": True},
               {"axis": 1, "dtype": np.float32}, {"axis": ()}):
        _same(_numpy(np.add.reduce(A, **kw)), np.add.reduce(a, **kw), "float64")
    i8 = _IX.astype(np.int8)
    _same(_numpy(np.add.reduce(_sparse(i8, 0))), np.add.reduce(i8), "int64")  # small integers sum as int64
    _same(_numpy(np.bitwise_xor.reduce(_sparse(i8, 0), axis=1)), np.bitwise_xor.reduce(i8, axis=1), "int64")
    neg = np.array([[-128, 5, 0], [0, -1, 3]], np.int8)
    for uf in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):
        for kw in ({"axis": 0}, {"axis": 1}, {"axis": None}):
            _same(_numpy(uf.reduce(_sparse(neg, 0), **kw)), uf.reduce(neg, **kw), "int64")
            _same(_numpy(uf.reduce(_sparse(neg, -1), **kw)), uf.reduce(neg, **kw), "int64")
    for uf, x in ((np.subtract, A), (np.equal, A != 0), (np.not_equal, A != 0)):
        with pytest.raises(ValueError, match="not reorderable"):
            uf.reduce(x, axis=None)
    with pytest.raises(ValueError, match="no identity"):
        np.subtract.reduce(_sparse(np.zeros((0, 3)), 0))
    with pytest.raises(TypeError, match="initial="):
        np.add.reduce(A, initial=1.0)
    with pytest.raises(TypeError, match="where="):
        np.add.reduce(A, where=np.ones(4, bool))
    with pytest.raises(TypeError, match="out="):
        np.add.reduce(A, out=np.empty(4))


def test_empty_reductions_give_numpy_identities():
    for x in (np.zeros((0, 3), bool), np.zeros((0, 3), np.int8)):
        for uf in (np.logical_and, np.logical_or, np.logical_xor, np.bitwise_and, np.bitwise_or, np.add,
                   np.multiply):
            if x.dtype != bool and uf in (np.logical_and, np.logical_or, np.logical_xor):
                continue
            _same(_numpy(uf.reduce(_sparse(x, 0))), uf.reduce(x), "int64")


def test_sparse_reductions_stay_sparse():
    x = np.zeros((50, 40))
    x[3, 4], x[10, 7], x[10, 20] = 1.0, -2.0, 3.0
    A = _sparse(x, 0)
    for uf in (np.add, np.maximum, np.logical_or, np.subtract):
        r = uf.reduce(A, axis=0)
        assert r.n_dense == 0 and r.nse <= 3, (uf.__name__, r.nse)
        _same(_numpy(r), uf.reduce(x, axis=0), "float64")
    r = np.add.reduceat(A, [0, 10, 30], axis=0)
    assert r.n_dense == 0 and r.nse <= 3
    _same(_numpy(r), np.add.reduceat(x, [0, 10, 30], axis=0), "float64")


def test_reductions_run_under_jit():
    A = _sparse(_X, 0)

    @jax.jit
    def f(M):
        return np.maximum.reduce(M, axis=1), np.logical_xor.reduce(M, axis=0), np.add.reduceat(M, [0, 2], axis=1)

    got = f(A)
    _same(_numpy(got), (np.maximum.reduce(_X, axis=1), np.logical_xor.reduce(_X, axis=0),
                        np.add.reduceat(_X, [0, 2], axis=1)), "float64")


def test_reduceat_checks_indices_as_numpy():
    A = _sparse(_X, 0)
    with pytest.raises(IndexError, match="out-of-bounds"):
        np.add.reduceat(A, [0, 4], axis=1)
    with pytest.raises(IndexError, match="out-of-bounds"):
        np.add.reduceat(A, [-1], axis=1)
    _same(_numpy(np.add.reduceat(A, [], axis=1)), np.add.reduceat(_X, [], axis=1), "float64")
    _same(_numpy(np.maximum.reduceat(A, [2, 0, 1])), np.maximum.reduceat(_X, [2, 0, 1]), "float64")


def test_accumulate_of_other_ufuncs_is_dense_and_guarded():
    A = _sparse(_X, 0)
    r = np.maximum.accumulate(A, axis=1)
    assert r.n_dense == r.ndim
    _same(_numpy(r), np.maximum.accumulate(_X, axis=1), "float64")
    with pytest.raises(ValueError, match="multiple axes"):
        np.add.accumulate(A, axis=None)
    old = xp.set_max_dense_bytes(8)
    try:
        with pytest.raises(MemoryError, match="maximum.accumulate"):
            np.maximum.accumulate(A)
    finally:
        xp.set_max_dense_bytes(old)
    with pytest.raises(TypeError, match="jit"):
        jax.jit(lambda M: np.maximum.accumulate(M))(A)


# -- outer ---------------------------------------------------------------------------------------


def _vec(n, where, values):
    x = np.zeros(n)
    x[list(where)] = values
    return x


def test_outer_of_sparse_vectors_is_the_product_pattern():
    p, q = _vec(400, (3, 50, 200), (1.0, -2.0, 4.0)), _vec(300, (0, 7), (3.0, -1.0))
    P, Q = _sparse(p, 0), _sparse(q, 0)
    for uf, (p1, q1) in ((np.multiply, (p, q)), (np.logical_and, (p, q)), (np.minimum, (abs(p), abs(q)))):
        r = uf.outer(_sparse(p1, 0), _sparse(q1, 0))
        assert r.nse == 6, (uf.__name__, r.nse)
        _same(_numpy(r), uf.outer(p1, q1), "bool" if uf is np.logical_and else "float64")
    r = np.multiply.outer(_sparse(_X, 0), P)  # n-d operands too
    assert r.shape == (3, 4, 400) and r.nse == 5 * 3
    _same(_numpy(r), np.multiply.outer(_X, p), "float64")
    # f(x, fill) is not the fill: the broadcast pattern, still exact
    r = np.add.outer(P, Q)
    _same(_numpy(r), np.add.outer(p, q), "float64")
    # a stored inf meets the other's unstored zeros in NaN, which is no fill: NumPy's values
    pinf = _vec(4, (1, 2), (np.inf, 2.0))
    with np.errstate(all="ignore"):
        _same(_numpy(np.multiply.outer(_sparse(pinf, 0), Q)), np.multiply.outer(pinf, q), "float64")


def test_outer_with_dense_and_scalar_operands():
    P = _sparse(_V, 0)
    _same(_numpy(np.multiply.outer(P, _V)), np.multiply.outer(_V, _V), "float64")
    _same(_numpy(np.add.outer(_V, P)), np.add.outer(_V, _V), "float64")
    _same(_numpy(np.multiply.outer(P, 2.0)), np.multiply.outer(_V, 2.0), "float64")
    _same(_numpy(np.fmod.outer(P, _sparse(_V + 1.0, 0))), np.fmod.outer(_V, _V + 1.0), "float64")
    got = np.divmod.outer(P, _sparse(_V + 1.0, 0))
    _same(_numpy(got), np.divmod.outer(_V, _V + 1.0), "float64")
    with pytest.raises(TypeError, match="signature"):
        np.matmul.outer(P, P)


# -- at -----------------------------------------------------------------------------------------


def test_at_accumulates_repeated_indices_in_place():
    A, a = _sparse(_X, 0), _X.copy()
    before = A
    np.add.at(A, ([0, 0, 2, 0], [1, 1, 0, 1]), [1.0, 2.0, 3.0, 4.0])
    np.add.at(a, ([0, 0, 2, 0], [1, 1, 0, 1]), [1.0, 2.0, 3.0, 4.0])
    assert A is before
    _same(_numpy(A), a, "float64")
    for key, val in ((0, 5.0), (slice(1, None), 2.0), (Ellipsis, 1.0), ((slice(None), [3, 3]), 1.0),
                     (_X > 0.3, 10.0), ([-1, -1], np.arange(4.0)), ((np.array([[0, 1], [1, 0]]), 2), 1.5)):
        np.multiply.at(A, key, val)
        np.multiply.at(a, key, val)
        _same(_numpy(A), a, "float64")
    np.negative.at(A, [0, 0, 1])  # applied twice to row 0
    np.negative.at(a, [0, 0, 1])
    _same(_numpy(A), a, "float64")
    np.subtract.at(A, ([1, 1], [1, 1]), [4.0, 4.0])  # to the fill value, then below it
    np.subtract.at(a, ([1, 1], [1, 1]), [4.0, 4.0])
    _same(_numpy(A), a, "float64")
    assert A.fill_value == 0


def test_at_keeps_sparsity_and_dtype_rules():
    x = np.zeros((1000, 1000))
    x[5, 7] = 1.0
    A = _sparse(x, 0)
    np.add.at(A, ([5, 5, 9], [7, 7, 9]), 1.0)
    assert A.nse == 2 and float(A[5, 7]) == 3.0 and float(A[9, 9]) == 1.0
    i = _sparse(_IX, 0)
    ii = _IX.copy()
    np.add.at(i, [0, 0], 1)
    np.add.at(ii, [0, 0], 1)
    _same(_numpy(i), ii, "int64")
    F, f = _sparse(_X, 1), _X.copy()  # a non-zero fill value
    np.maximum.at(F, (slice(None), 1), 0.5)
    np.maximum.at(f, (slice(None), 1), 0.5)
    _same(_numpy(F), f, "float64")


def test_at_with_bcoo_operands_and_numpy_target():
    A, a = _sparse(_X, 0), _X.copy()
    mask = _sparse(_Y > 0.4, False)
    np.add.at(A, mask, 1.0)
    np.add.at(a, _Y > 0.4, 1.0)
    _same(_numpy(A), a, "float64")
    idx = _sparse(np.array([0, 2, 0]), 0)
    np.add.at(A, idx, _sparse(_V, 0))
    np.add.at(a, np.array([0, 2, 0]), _V)
    _same(_numpy(A), a, "float64")
    t, u = np.zeros(4), np.zeros(4)
    np.add.at(t, [1, 1], _sparse(np.array([2.0, 3.0]), 0))
    np.add.at(u, [1, 1], np.array([2.0, 3.0]))
    np.testing.assert_array_equal(t, u)
    z, zz = _sparse(np.array(2.0), 0), np.array(2.0)
    np.multiply.at(z, (), 3.0)
    np.multiply.at(zz, (), 3.0)
    _same(_numpy(z), zz, "float64")
    with pytest.raises(IndexError):
        np.add.at(A, [7], 1.0)
    with pytest.raises(TypeError, match="jit"):
        jax.jit(lambda M: np.add.at(M, [0], 1.0))(A)


# -- ufuncs without a namespace function ---------------------------------------------------------


@pytest.mark.parametrize("uf", [sc.erf, sc.expit, np.cbrt, np.exp2, np.spacing], ids=lambda u: u.__name__)
@pytest.mark.parametrize("fill", [0.0, 1.0, np.nan])
def test_foreign_unary_ufunc_keeps_the_pattern(uf, fill):
    x = np.where(_X == 0, fill, _X)
    A = BCOOArray.fromdense(x, fill_value=fill)
    r = uf(A)
    assert isinstance(r, BCOOArray) and r.nse == A.nse
    with np.errstate(all="ignore"):
        assert np.array_equal(np.asarray(r.fill_value), uf(np.asarray(fill)), equal_nan=True)
        _same(_numpy(r), uf(x), "float64")


def test_foreign_ufuncs_in_layouts_and_dtypes():
    B = BCOOArray.fromdense(_X, n_batch=1)
    _same(_numpy(sc.erf(B)), sc.erf(_X), "float64")
    D = BCOOArray.fromdense(_X, n_dense=1)
    _same(_numpy(sc.expit(D)), sc.expit(_X), "float64")
    f32 = _X.astype(np.float32)
    r = sc.erf(_sparse(f32, 0))
    assert r.dtype == np.float32
    _same(_numpy(r), sc.erf(f32), "float32")
    _same(_numpy(sc.erf(_sparse(_IX, 0))), sc.erf(_IX), "float64")
    # duplicates are summed before the ufunc sees them
    dup = BCOOArray((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))), shape=(2, 2))
    _same(_numpy(np.cbrt(dup)), np.cbrt(np.array([[0.0, 3.0], [0.0, 0.0]])), "float64")


def test_foreign_binary_ufuncs_follow_the_fill_rule():
    A, B = _sparse(_X, 0), _sparse(_Y, 0)
    r = np.fmod(A, B)  # the union of the patterns, fill fmod(0, 0) = nan
    with np.errstate(all="ignore"):
        _same(_numpy(r), np.fmod(_X, _Y), "float64")
    assert np.isnan(r.fill_value)
    r = np.heaviside(A, 0.5)
    assert r.nse == A.nse and r.fill_value == 0.5
    _same(_numpy(r), np.heaviside(_X, 0.5), "float64")
    r = np.fmod(A, _Y + 1.0)  # fmod(0, d) = 0 for every dense d: sparse
    assert r.nse <= A.nse and r.n_dense == 0
    _same(_numpy(r), np.fmod(_X, _Y + 1.0), "float64")
    r = np.fmax(A, _Y)  # fmax(0, d) varies with d: dense layout
    assert r.n_dense == r.ndim
    _same(_numpy(r), np.fmax(_X, _Y), "float64")
    r = np.gcd(_sparse(_IX, 0), _sparse(_IY[:1], 0))  # broadcasting
    _same(_numpy(r), np.gcd(_IX, _IY[:1]), "int64")
    q, m = np.divmod(A, 2.0)  # two outputs
    _same((_numpy(q), _numpy(m)), np.divmod(_X, 2.0), "float64")
    m, e = np.frexp(A)
    _same((_numpy(m), _numpy(e)), np.frexp(_X), "float64")
    _same(_numpy(sc.xlogy(A, B)), sc.xlogy(_X, _Y), "float64")  # scipy.special, two inputs


def test_foreign_ufunc_refusals_name_the_fix(monkeypatch):
    A = _sparse(_X, 0)
    plus = np.frompyfunc(lambda t: t + 1, 1, 1)  # object results: nothing a BCOOArray can hold
    with pytest.raises(TypeError, match=r"object.*A\.toarray\(\).*BCOO_ARRAY_AUTO_DENSIFY=1"):
        plus(A)
    with pytest.raises(TypeError, match="jit"):
        jax.jit(lambda M: sc.erf(M))(A)
    with pytest.raises(TypeError, match="out="):
        sc.erf(A, out=np.empty(_X.shape))
    with pytest.raises(TypeError, match="where="):
        np.cbrt(A, where=_X > 0)
    monkeypatch.setenv(AUTO, "1")
    got = plus(A)
    assert isinstance(got, np.ndarray) and got.dtype == object
    np.testing.assert_array_equal(got.astype(float), _X + 1)


# -- the opt-in to densification ------------------------------------------------------------------


def test_opt_in_densifies_functions_without_an_adapter(monkeypatch):
    A = _sparse(_X, 0)
    with pytest.raises(TypeError, match="BCOO_ARRAY_AUTO_DENSIFY=1"):
        np.median(A)
    monkeypatch.setenv(AUTO, "1")
    assert np.median(A) == np.median(_X)
    np.testing.assert_array_equal(np.percentile(A, 30, axis=0), np.percentile(_X, 30, axis=0))
    np.testing.assert_array_equal(np.pad(A, 1), np.pad(_X, 1))
    np.testing.assert_array_equal(np.median([A, A], axis=0), np.median([_X, _X], axis=0))
    out = np.empty(4)
    np.median(A, axis=0, out=out)
    np.testing.assert_array_equal(out, np.median(_X, axis=0))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.divide.reduce(A), np.divide.reduce(_X))
        np.testing.assert_array_equal(np.power.reduceat(A, [0, 2], axis=1), np.power.reduceat(_X, [0, 2], axis=1))
    # functions with an adapter stay sparse under the opt-in
    assert isinstance(np.sum(A, axis=0), BCOOArray) and isinstance(sc.erf(A), BCOOArray)
    with pytest.raises(TypeError, match="out="):
        np.median(A, axis=0, out=_sparse(np.zeros(4), 0))


def test_opt_in_respects_the_densification_guard(monkeypatch):
    monkeypatch.setenv(AUTO, "1")
    A = _sparse(_X, 0)
    old = xp.set_max_dense_bytes(16)
    try:
        with pytest.raises(MemoryError, match="numpy.median"):
            np.median(A)
        with pytest.raises(MemoryError, match="divide.reduce"):
            np.divide.reduce(A)
    finally:
        xp.set_max_dense_bytes(old)
    with pytest.raises(TypeError, match="jit"):
        jax.jit(lambda M: np.median(M))(A)


# -- argwhere, flatnonzero, average, may_share_memory ------------------------------------------------


def test_argwhere_and_flatnonzero_come_from_the_stored_entries():
    x = np.zeros((300, 200))
    x[3, 4], x[100, 7], x[100, 20] = 1.0, -2.0, 3.0
    A = _sparse(x, 0)
    r = np.argwhere(A)
    assert isinstance(r, BCOOArray) and r.shape == (3, 2)
    np.testing.assert_array_equal(_numpy(r), np.argwhere(x))
    np.testing.assert_array_equal(_numpy(np.flatnonzero(A)), np.flatnonzero(x))
    old = xp.set_max_dense_bytes(10_000)  # the fill-0 answer needs no dense array
    try:
        np.testing.assert_array_equal(_numpy(np.argwhere(A)), np.argwhere(x))
        with pytest.raises(MemoryError):  # fill 1: every unstored position is listed
            np.argwhere(_sparse(x, 1))
    finally:
        xp.set_max_dense_bytes(old)
    np.testing.assert_array_equal(_numpy(np.argwhere(_sparse(_X, 1))), np.argwhere(_X))
    np.testing.assert_array_equal(_numpy(np.argwhere(_sparse(np.array(0.0), 0))), np.argwhere(np.array(0.0)))
    np.testing.assert_array_equal(_numpy(np.flatnonzero(_sparse(np.array(3.0), 0))), np.flatnonzero(np.array(3.0)))


def test_average_errors_and_jit():
    A = _sparse(_X, 0)
    with pytest.raises(TypeError, match="Axis must be specified"):
        np.average(A, weights=np.ones(4))
    with pytest.raises(ValueError, match="consistent"):
        np.average(A, axis=1, weights=np.ones(3))
    with pytest.raises(ZeroDivisionError):
        np.average(A, axis=1, weights=np.array([1.0, -1.0, 0.0, 0.0]))
    got = jax.jit(lambda M, w: np.average(M, axis=0, weights=w))(A, _sparse(_Y + 1.0, 0))
    _same(_numpy(got), np.average(_X, axis=0, weights=_Y + 1.0), "float64")
    avg, scl = np.average(_sparse(_IX, 0), axis=1, weights=[1, 2, 3, 4], returned=True)
    e_avg, e_scl = np.average(_IX, axis=1, weights=[1, 2, 3, 4], returned=True)
    _same((_numpy(avg), _numpy(scl)), (e_avg, e_scl), "float64")


def test_may_share_memory():
    A = _sparse(_X, 0)
    B = _sparse(_X, 0)  # equal values, its own buffers
    C = A.with_data(A.data)  # the same buffers under another array
    assert np.may_share_memory(A, A.copy())  # a copy shares the immutable buffers until either is assigned to
    assert np.may_share_memory(A, A) and np.shares_memory(A, A)
    assert np.may_share_memory(A, C) and np.shares_memory(C, A)
    assert not np.may_share_memory(A, B) and not np.shares_memory(A, B)
    assert not np.may_share_memory(A, _X) and not np.may_share_memory(_X, A)
    data, indices = A._host_buffers()
    assert np.may_share_memory(A, data[1:]) and np.shares_memory(indices[:, 0], A)
    assert not np.may_share_memory(A, data.copy())
    assert np.may_share_memory(A, A.data) and not np.may_share_memory(A, B.data)
    assert not np.may_share_memory(A, 3.0) and not np.may_share_memory(A, [1.0, 2.0])
    T = A.T  # a view may share the data buffer
    assert np.may_share_memory(T, A) == np.shares_memory(T, A)
