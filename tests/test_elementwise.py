"""Element-wise functions under the fill-value rule, against dense NumPy.

Each result must equal NumPy's value entry by entry, and a sparse result's
fill value must be ``f`` of the input fill values (pydata-sparse's rule).
Operands come in every layout (batch / dense dimensions, duplicates, padding,
non-zero and NaN fill values), eagerly and under ``jax.jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import DTYPES, FLOAT, NUMERIC, REAL, assert_matches, cases, same_scalar, shapes, tol, to_np

# name -> (NumPy oracle, dtypes it accepts, exact?)
UNARY = {
    "negative": (np.negative, NUMERIC, True),
    "abs": (np.abs, NUMERIC, True),
    "square": (np.square, NUMERIC, True),
    "exp": (np.exp, FLOAT, False),
    "sin": (np.sin, FLOAT, False),
    "isnan": (np.isnan, NUMERIC, True),
    "isfinite": (np.isfinite, NUMERIC, True),
    "logical_not": (np.logical_not, (np.dtype(bool),), True),
    "bitwise_invert": (np.invert, tuple(d for d in DTYPES if d.kind in "biu"), True),
    "floor": (np.floor, tuple(d for d in REAL if d.kind == "f"), True),
    "sign": (np.sign, REAL, True),
    "conj": (np.conj, NUMERIC, True),
    "real": (np.real, NUMERIC, True),
}

BINARY = {
    "add": (np.add, NUMERIC, True),
    "subtract": (np.subtract, NUMERIC, True),
    "multiply": (np.multiply, NUMERIC, True),
    "divide": (np.divide, FLOAT, False),
    "maximum": (np.maximum, REAL, True),
    "minimum": (np.minimum, REAL, True),
    "equal": (np.equal, DTYPES, True),
    "less": (np.less, REAL, True),
    "logical_and": (np.logical_and, (np.dtype(bool),), True),
    "logical_or": (np.logical_or, (np.dtype(bool),), True),
    "logical_xor": (np.logical_xor, (np.dtype(bool),), True),
    "bitwise_and": (np.bitwise_and, tuple(d for d in DTYPES if d.kind in "biu"), True),
    "bitwise_xor": (np.bitwise_xor, tuple(d for d in DTYPES if d.kind in "biu"), True),
}


def _np(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


def _check(result, expected, exact, dtype):
    expected = np.asarray(expected)
    assert_matches(result, expected, rtol=None if exact else tol(dtype))


@settings(max_examples=30)
@given(data=st.data())
def test_unary(data):
    name = data.draw(st.sampled_from(sorted(UNARY)), label="name")
    oracle, dtypes, exact = UNARY[name]
    c = data.draw(cases(dtypes=dtypes, max_ndim=3), label="x")
    fn = getattr(xp, name)
    expected = _np(oracle, c.dense)
    out = fn(c.arr)
    _check(out, expected, exact, c.dense.dtype)
    # fill-value rule: the result's unstored entries hold f(fill)
    want_fill = _np(oracle, np.asarray(c.fill))
    if exact:
        assert same_scalar(out.fill_value, want_fill)
    else:
        np.testing.assert_allclose(out.fill_value, want_fill, rtol=tol(c.dense.dtype), equal_nan=True)
    if data.draw(st.booleans(), label="jit"):
        _check(jax.jit(fn)(c.arr), expected, exact, c.dense.dtype)


@settings(max_examples=25)
@given(data=st.data())
def test_binary_sparse_sparse(data):
    """Two sparse operands with independent patterns, layouts and fill values."""
    name = data.draw(st.sampled_from(sorted(BINARY)), label="name")
    oracle, dtypes, exact = BINARY[name]
    dt = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(0, 3), label="shape")
    a = data.draw(cases(shape=shape, dtype=dt), label="a")
    b = data.draw(cases(shape=shape, dtype=dt), label="b")
    fn = getattr(xp, name)
    expected = _np(oracle, a.dense, b.dense)
    out = fn(a.arr, b.arr)
    _check(out, expected, exact, dt)
    if out.n_sparse:
        want = _np(oracle, np.asarray(a.fill), np.asarray(b.fill))
        assert same_scalar(out.fill_value, want) if exact else np.allclose(out.fill_value, want, equal_nan=True)
    if data.draw(st.booleans(), label="jit"):
        _check(jax.jit(fn)(a.arr, b.arr), expected, exact, dt)


@settings(max_examples=10)
@given(data=st.data())
def test_binary_broadcasting(data):
    name = data.draw(st.sampled_from(["add", "multiply", "maximum", "equal"]), label="name")
    """Operands of different shapes broadcast as in NumPy (sparse-sparse and sparse-dense)."""
    oracle, dtypes, exact = BINARY[name]
    dt = data.draw(st.sampled_from([d for d in dtypes if d.kind != "c"]), label="dtype")
    shape = data.draw(shapes(1, 3), label="shape")
    # a shape broadcastable to ``shape``: drop leading dims, set some to 1
    k = data.draw(st.integers(0, len(shape)), label="drop")
    small = tuple(1 if data.draw(st.booleans()) else s for s in shape[k:])
    a = data.draw(cases(shape=shape, dtype=dt), label="a")
    b = data.draw(cases(shape=small, dtype=dt), label="b")
    fn = getattr(xp, name)
    _check(fn(a.arr, b.arr), _np(oracle, a.dense, b.dense), exact, dt)
    _check(fn(b.arr, a.arr), _np(oracle, b.dense, a.dense), exact, dt)
    _check(fn(a.arr, jnp.asarray(b.dense)), _np(oracle, a.dense, b.dense), exact, dt)
    _check(fn(jnp.asarray(b.dense), a.arr), _np(oracle, b.dense, a.dense), exact, dt)
    _check(jax.jit(fn)(b.arr, a.arr), _np(oracle, b.dense, a.dense), exact, dt)


@settings(max_examples=10)
@given(data=st.data())
def test_binary_sparse_dense(data):
    name = data.draw(st.sampled_from(["add", "multiply", "divide", "less", "maximum"]), label="name")
    oracle, dtypes, exact = BINARY[name]
    dt = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(0, 3), label="shape")
    a = data.draw(cases(shape=shape, dtype=dt), label="a")
    d = data.draw(cases(shape=shape, dtype=dt, n_batch=0, n_dense=0), label="d").dense
    fn = getattr(xp, name)
    _check(fn(a.arr, jnp.asarray(d)), _np(oracle, a.dense, d), exact, dt)
    _check(fn(jnp.asarray(d), a.arr), _np(oracle, d, a.dense), exact, dt)
    if data.draw(st.booleans(), label="jit"):
        _check(jax.jit(fn)(a.arr, jnp.asarray(d)), _np(oracle, a.dense, d), exact, dt)
        _check(jax.jit(fn)(jnp.asarray(d), a.arr), _np(oracle, d, a.dense), exact, dt)


def test_multiply_by_dense_stays_sparse():
    a = BCOOArray((np.array([2.0, 3.0]), np.array([[0, 1], [2, 0]])), shape=(3, 3))
    d = jnp.arange(9.0).reshape(3, 3)
    out = xp.multiply(a, d)
    assert out.n_sparse == 2 and out.nse == 2
    assert_matches(out, to_np(a) * np.asarray(d))


@settings(max_examples=20)
@given(data=st.data())
def test_binary_sparse_scalar(data):
    name = data.draw(st.sampled_from(["add", "multiply", "divide", "pow", "greater", "equal"]), label="name")
    oracle = {"add": np.add, "multiply": np.multiply, "divide": np.divide, "pow": np.power,
              "greater": np.greater, "equal": np.equal}[name]
    c = data.draw(cases(dtypes=(np.dtype(np.float64), np.dtype(np.float32)), max_ndim=3), label="x")
    s = data.draw(st.sampled_from([0.0, 2.0, -1.5, float("nan")]), label="scalar")
    fn = getattr(xp, name)
    exact = name not in ("divide", "pow")
    dt = c.dense.dtype
    expected = _np(oracle, c.dense, dt.type(s))
    out = fn(c.arr, s)
    _check(out, expected, exact, dt)
    want_fill = _np(oracle, c.fill, dt.type(s))
    if out.n_sparse:  # a dense-layout result stores everything; its fill is unused
        assert same_scalar(out.fill_value, want_fill) if exact else np.allclose(out.fill_value, want_fill, equal_nan=True)
    _check(fn(s, c.arr), _np(oracle, dt.type(s), c.dense), exact, dt)
    _check(jax.jit(lambda a: fn(a, s))(c.arr), expected, exact, dt)


@settings(max_examples=8)
@given(cases(dtypes=(np.dtype(np.int32), np.dtype(np.float64)), max_ndim=3))
def test_operators(c):
    a = c.arr
    d = c.dense
    _check(a + a, d + d, True, d.dtype)
    _check(-a, -d, True, d.dtype)
    _check(a * 2, d * 2, True, d.dtype)
    _check(2 - a, 2 - d, True, d.dtype)
    _check(a == a, d == d, True, bool)
    _check(abs(a), np.abs(d), True, d.dtype)
    b = a._replace()
    b += 1
    _check(b, d + 1, True, d.dtype)
    _check(a, d, True, d.dtype)  # the in-place update did not touch ``a``


def test_divmod_is_floor_divide_and_remainder():
    # Python's divmod answers as NumPy's: (x1 // x2, x1 % x2), with this array first or second, under jit
    # too; an operand the operators refuse is refused alike.
    d = np.array([[7.0, 0.0, -3.5], [0.0, 2.0, 0.0]])
    e = np.array([[2.0, 3.0, 1.5], [-4.0, 0.75, 5.0]])
    a, b = xp.asarray(d), xp.asarray(e)
    for (q, r), (wq, wr) in ((divmod(a, b), np.divmod(d, e)), (divmod(a, 3.0), np.divmod(d, 3.0)),
                             (divmod(10.0, b), np.divmod(10.0, e)), (jax.jit(divmod)(a, b), np.divmod(d, e))):
        np.testing.assert_array_equal(to_np(q), wq)
        np.testing.assert_array_equal(to_np(r), wr)
    with pytest.raises(TypeError):
        divmod(a, "2")


def test_exp_of_zero_filled_has_fill_one():
    a = BCOOArray.fromdense(np.array([0.0, 2.0, 0.0]))
    e = xp.exp(a)
    assert e.fill_value == 1.0 and e.nse == 1
    np.testing.assert_allclose(to_np(e), np.exp([0.0, 2.0, 0.0]))


def test_sparse_sparse_union_memory():
    """A*B of two 20000x20000 matrices with 10**5 random entries each: the
    pattern union is O(nse_a + nse_b); an nse_a x nse_b intermediate (10**10
    entries, 80 GB) could not be allocated. The result matches scipy."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    n, nnz = 20000, 100_000
    A = sp.random_array((n, n), density=nnz / n**2, format="coo", rng=rng, dtype=np.float64)
    B = sp.random_array((n, n), density=nnz / n**2, format="coo", rng=rng, dtype=np.float64)
    # overlap the patterns in 1000 places so the product is not empty
    B = sp.coo_array((np.concatenate([B.data, np.ones(1000)]),
                      (np.concatenate([B.row, A.row[:1000]]), np.concatenate([B.col, A.col[:1000]]))), shape=(n, n))
    out = xp.from_scipy(A) * xp.from_scipy(B)
    assert out.nse <= A.nnz + B.nnz
    got = xp.to_scipy(out).tocsr()
    expected = A.tocsr().multiply(B.tocsr()).tocsr()
    assert abs(got - expected).max() == 0
    got.eliminate_zeros()
    assert got.nnz == expected.nnz >= 1000


def test_column_scaling_keeps_the_pattern():
    # MaxAbsScaler's step: A / s with s the column scales (zeros replaced by 1) stores only A's entries.
    import scipy.sparse as sp

    S = sp.random_array((40, 16), density=0.1, format="csr", rng=2)
    D = S.toarray()
    A = xp.from_scipy(S)
    s = xp.max(xp.abs(A), axis=0)
    s1 = xp.where(s == 0, 1.0, s)
    want_s = np.abs(D).max(axis=0)
    want_s1 = np.where(want_s == 0, 1.0, want_s)
    for got, want in ((A / s1, D / want_s1), (A * s1, D * want_s1), (s1 * A, D * want_s1),
                      (A / xp.reshape(s1, (1, 16)), D / want_s1)):
        assert got.nse == A.nse and float(got.fill_value) == 0.0
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-15)
    # Where 0 / s is not one value (a zero scale gives NaN), the entries that differ are stored.
    s0 = xp.asarray(np.where(np.arange(16) == 3, 0.0, want_s1))
    got = A / s0
    with np.errstate(invalid="ignore", divide="ignore"):
        want = D / np.where(np.arange(16) == 3, 0.0, want_s1)
    np.testing.assert_array_equal(np.isnan(np.asarray(got.todense())), np.isnan(want))
    # Under jit the union of the broadcast patterns is stored: same values.
    jitted = jax.jit(lambda a, v: a / v)(A, s1)
    np.testing.assert_allclose(np.asarray(jitted.todense()), D / want_s1, rtol=1e-15)


def test_integer_pow_refuses_a_negative_scalar_exponent():
    """x ** -2 on integers raises (as jax.numpy and NumPy do) rather than wrapping around, though the
    values run in one compiled program that sees the exponent as traced; positive exponents work."""
    x = xp.asarray(np.array([0, 3, 2, 0], np.int32))
    with pytest.raises(TypeError, match="negative integer powers"):
        x ** -2
    with pytest.raises(TypeError, match="negative integer powers"):
        xp.pow(x, np.int32(-1))
    with pytest.raises(TypeError, match="negative integer powers"):
        x ** xp.asarray(np.array(-2, np.int32))  # a 0-d BCOOArray exponent
    np.testing.assert_array_equal(np.asarray((x ** 2).todense()), [0, 9, 4, 0])
    np.testing.assert_array_equal(np.asarray(xp.pow(x, np.int32(3)).todense()), [0, 27, 8, 0])


@pytest.mark.parametrize("density", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("fills", [(0.0, 0.0), (2.0, 0.0), (0.0, -1.0)])
def test_outer_broadcast_of_a_column_and_a_row(density, fills):
    """(n, 1) op (1, m) of two sparse vectors: built row by row (few stored positions) or computed densely and
    compressed (most positions stored); canonical, equal to NumPy on the dense values, signed zeros included."""
    rng = np.random.default_rng(8)
    n, m = 37, 23
    Da = rng.standard_normal((n, 1)) * (rng.random((n, 1)) < density)
    Db = rng.standard_normal((1, m)) * (rng.random((1, m)) < density)
    a = xp.asarray(Da) + fills[0] if fills[0] else xp.asarray(Da)
    b = xp.asarray(Db) + fills[1] if fills[1] else xp.asarray(Db)
    A, B = np.asarray(a.todense()), np.asarray(b.todense())
    for op in (lambda u, v: u + v, lambda u, v: u * v, lambda u, v: u - v):
        got = op(a, b)
        g = np.asarray(got.todense())
        want = op(A, B)
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want))
        if got.n_dense == 0:
            assert got.indices_sorted and got.unique_indices
            keys = np.asarray(got.indices).astype(np.int64) @ np.array([m, 1])
            assert np.all(np.diff(keys) > 0)


def test_dense_result_guard_names_the_public_function():
    """Issue 29: the densification guard of ``A / d`` (traced ``d`` under jit) names ``bcoo_array.divide``,
    never the private kernel function it runs."""
    import scipy.sparse as sps

    A = xp.from_scipy(sps.csr_array(sps.random(40, 40, density=0.1, format="csr", random_state=0)))
    d = np.arange(1.0, 41.0)
    old = xp.set_max_dense_bytes(1000)
    try:
        for fn, name in ((lambda A, d: A / d, "divide"), (lambda A, d: A ** d, "pow"),
                         (lambda A, d: A + d, "add")):
            with pytest.raises(MemoryError) as err:
                jax.jit(fn)(A, d)
            msg = str(err.value)
            assert msg.startswith(f"bcoo_array.{name}()"), msg
            assert "_divide" not in msg and "_pow" not in msg
    finally:
        xp.set_max_dense_bytes(old)
