"""Reductions (sum, prod, max, min, mean) against dense NumPy: every layout
and fill value, axis as int / negative int / tuple / None, keepdims, eagerly
and under ``jax.jit``. Unstored entries count through the fill value.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import DTYPES, assert_matches, cases, tol, to_np

_SUM_DT = {np.dtype(np.bool_): np.int64, np.dtype(np.int8): np.int64, np.dtype(np.int32): np.int64,
           np.dtype(np.uint8): np.uint64}

ORACLE = {
    "sum": lambda d, axis, keepdims: np.sum(d, axis=axis, keepdims=keepdims, dtype=_SUM_DT.get(d.dtype, d.dtype)),
    "prod": lambda d, axis, keepdims: np.prod(d, axis=axis, keepdims=keepdims, dtype=_SUM_DT.get(d.dtype, d.dtype)),
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
}
DT = {
    "sum": tuple(d for d in DTYPES if d.kind != "b"),
    "prod": tuple(d for d in DTYPES if d.kind != "b"),
    "max": tuple(d for d in DTYPES if d.kind in "iuf"),
    "min": tuple(d for d in DTYPES if d.kind in "iuf"),
    "mean": tuple(d for d in DTYPES if d.kind in "fc"),
}


@st.composite
def axes_for(draw, ndim):
    """None, an int (maybe negative) or a tuple of distinct axes (maybe negative)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if ndim else "none"
    if kind == "none":
        return None
    if kind == "int":
        a = draw(st.integers(0, ndim - 1))
        return a - ndim if draw(st.booleans()) else a
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


@settings(max_examples=30)
@given(data=st.data())
def test_reduction(data):
    name = data.draw(st.sampled_from(sorted(ORACLE)), label="name")
    c = data.draw(cases(dtypes=DT[name], max_ndim=3), label="x")
    axis = data.draw(axes_for(c.dense.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    norm = tuple(range(c.dense.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else axis)
    if name in ("max", "min") and any(c.dense.shape[a] == 0 for a in norm):
        with pytest.raises(ValueError):
            getattr(xp, name)(c.arr, axis=axis, keepdims=keepdims)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice" (NaN is right)
        expected = np.asarray(ORACLE[name](c.dense, axis=axis, keepdims=keepdims))
    fn = getattr(xp, name)
    exact = name in ("max", "min") or c.dense.dtype.kind in "biu"
    rt = None if exact else tol(c.dense.dtype) * 10
    out = fn(c.arr, axis=axis, keepdims=keepdims)
    assert_matches(out, expected, rtol=rt)
    if data.draw(st.booleans(), label="jit"):
        out = jax.jit(lambda a: fn(a, axis=axis, keepdims=keepdims))(c.arr)
        assert_matches(out, expected, rtol=rt)


def test_max_counts_unstored_zeros():
    # every stored value is negative, but each row also has unstored zeros
    a = BCOOArray((np.array([-3.0, -1.0, -2.0]), np.array([[0, 0], [0, 2], [1, 1]])), shape=(2, 3))
    assert float(xp.max(a)) == 0.0
    np.testing.assert_array_equal(to_np(xp.max(a, axis=1)), [0.0, 0.0])
    np.testing.assert_array_equal(to_np(xp.min(a, axis=0)), [-3.0, -2.0, -1.0])
    full = BCOOArray((np.array([-3.0, -1.0]), np.array([[0], [1]])), shape=(2,))
    assert float(xp.max(full)) == -1.0  # nothing unstored: the fill does not count


def test_sum_with_nonzero_and_nan_fill():
    a = BCOOArray((np.array([1.0, 2.0]), np.array([[0, 0], [1, 2]])), shape=(2, 3), fill_value=10.0)
    np.testing.assert_array_equal(to_np(xp.sum(a, axis=1)), [21.0, 22.0])
    np.testing.assert_array_equal(to_np(xp.prod(a, axis=0)), [10.0, 100.0, 20.0])
    n = BCOOArray((np.array([1.0]), np.array([[0]])), shape=(3,), fill_value=np.nan)
    assert np.isnan(float(xp.sum(n)))
    m = BCOOArray((np.array([1.0, 2.0, 3.0]), np.array([[0], [1], [2]])), shape=(3,), fill_value=np.nan)
    assert float(xp.sum(m)) == 6.0  # nothing unstored, the NaN fill never shows


def test_reduction_axis_errors():
    a = BCOOArray.fromdense(np.eye(3))
    with pytest.raises(IndexError):
        xp.sum(a, axis=2)
    with pytest.raises(IndexError):
        xp.sum(a, axis=-3)
    with pytest.raises(ValueError):
        xp.sum(a, axis=(0, -2))
    with pytest.raises(TypeError):
        xp.mean(BCOOArray.fromdense(np.eye(2, dtype=np.int32)))


def test_sum_dtype_argument():
    a = BCOOArray.fromdense(np.array([100, 100, 100], np.int8))
    assert xp.sum(a).dtype == np.int64 and int(xp.sum(a)) == 300
    assert xp.sum(a, dtype=xp.int8).dtype == np.int8
    with pytest.raises(TypeError, match="numeric"):  # bool is not numeric in the standard
        xp.sum(BCOOArray.fromdense(np.array([True, False])))


@pytest.mark.parametrize("axes", [0, 1, 2, (0, 2), (1, 2), None])
@pytest.mark.parametrize("n_dense", [0, 1])
@pytest.mark.parametrize("values", ["random", "signed zeros"])
def test_traced_sums_scatter_without_a_sort(axes, n_dense, values):
    """Sums with traced indices (jit, vmap) run as one scatter-add into the result (no sort of the entries);
    they match NumPy, signed zeros included (NumPy's sum starts at +0.0: a slice of -0.0 values sums to +0.0)."""
    import jax

    rng = np.random.default_rng(4)
    D = rng.standard_normal((3, 4, 5)) * (rng.random((3, 4, 5)) < 0.4)
    if values == "signed zeros":
        D = np.where(rng.random(D.shape) < 0.5, -0.0, D)
        D[1, :, :] = -0.0  # whole slices of -0.0: NumPy sums them to +0.0
    x = xp.update_layout(xp.asarray(D), n_dense=n_dense)
    got = np.asarray(jax.jit(lambda a: xp.sum(a, axis=axes))(x).todense())
    want = np.sum(D, axis=axes)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    kd = jax.jit(lambda a: xp.sum(a, axis=axes, keepdims=True))(x)
    np.testing.assert_allclose(np.asarray(kd.todense()), np.sum(D, axis=axes, keepdims=True), rtol=1e-13, atol=1e-15)


def test_sums_under_vmap_of_a_compacted_stack():
    import jax

    rng = np.random.default_rng(5)
    dense = [rng.random((6, 7)) * (rng.random((6, 7)) < p) for p in (0.1, 0.5, 0.3)]
    S = xp.update_layout(xp.stack([xp.asarray(d) for d in dense]), n_batch=1)
    assert S.indices_sorted and S.unique_indices  # each element keeps its canonical order
    for ax in (0, 1):
        got = jax.vmap(lambda a: xp.sum(a, axis=ax).todense())(S)
        np.testing.assert_allclose(np.asarray(got), np.stack(dense).sum(axis=1 + ax), rtol=1e-12)
        got = jax.jit(jax.vmap(lambda a: xp.mean(a, axis=ax).todense()))(S)
        np.testing.assert_allclose(np.asarray(got), np.stack(dense).mean(axis=1 + ax), rtol=1e-12)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axes", [0, 1, (0, 2), None])
@pytest.mark.parametrize("fill", [0.0, 1.5, -2.0, np.nan])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_traced_reductions_scatter_against_numpy(op, axes, fill, dtype):
    """sum / prod / max / min with traced indices (jit) run as one scatter into the result plus the fill
    value counted per slice; equal to NumPy on the dense values and to the eager result, any fill."""
    import jax

    if dtype == np.int32 and (np.isnan(fill) or fill != int(fill)):
        pytest.skip("an integer fill value")
    rng = np.random.default_rng(6)
    D = (rng.integers(-3, 4, (3, 4, 5)) * (rng.random((3, 4, 5)) < 0.4)).astype(dtype)
    unstored = rng.random(D.shape) < 0.5
    D[unstored] = fill
    stored = np.argwhere(~unstored)
    x = xp.BCOOArray((D[~unstored], stored), shape=D.shape, fill_value=fill, indices_sorted=True,
                     unique_indices=True)  # (argwhere: row-major and unique; the scatter needs unique)
    f = {"sum": xp.sum, "prod": xp.prod, "max": xp.max, "min": xp.min}[op]
    ref = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
    kw = {"dtype": x.dtype} if op in ("sum", "prod") else {}
    got = np.asarray(jax.jit(lambda a: f(a, axis=axes, **kw).todense())(x))
    want = ref(D, axis=axes, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    eager = np.asarray(f(x, axis=axes, **kw).todense())
    np.testing.assert_allclose(got, eager, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("engine", ["host", "xla"])
def test_float32_full_reductions_sum_pairwise(engine, monkeypatch):
    """Issue 29: float32 full reductions sum pairwise as NumPy does (a sequential sum of 10**6 values
    loses about 4 digits), on both engines and under jit; the float64 sum is the oracle."""
    import scipy.sparse as sps

    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    rng = np.random.default_rng(29)
    n, nnz = 4000, 400_000
    flat = rng.choice(n * n, nnz, replace=False)
    vals = rng.random(nnz).astype(np.float32) + np.float32(0.5)
    M = sps.coo_array((vals, (flat // n, flat % n)), shape=(n, n)).tocsr()
    A = xp.from_scipy(M)
    exact = M.data.astype(np.float64)
    rel = 1e-6

    def close(got, want):
        got = float(np.asarray(got.todense() if isinstance(got, BCOOArray) else got))
        assert abs(got - want) <= rel * abs(want), (got, want)

    close(A.sum(), exact.sum())
    close(xp.sum(A), exact.sum())
    close(xp.mean(A), exact.sum() / (n * n))
    close(xp.linalg.matrix_norm(A), np.sqrt(np.dot(exact, exact)))
    v = xp.asarray(M.data)
    close(xp.vecdot(v, v), np.dot(exact, exact))
    close(xp.sum(v), exact.sum())
    close(jax.jit(lambda B: xp.sum(B).todense())(A), exact.sum())
    close(jax.jit(lambda B: xp.vecdot(B, B).todense())(v), np.dot(exact, exact))
    # A sequential float32 sum of the same values is visibly off: the test can tell the two apart.
    seq = np.cumsum(M.data, dtype=np.float32)[-1]
    assert abs(float(seq) - exact.sum()) > rel * exact.sum()


# --- float32 sums over long slices (traced and XLA paths) -----------------------------------------------

def _rel(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))


def test_float32_variance_and_long_sums_keep_their_digits_under_jit():
    # A scatter-add sums a slice one entry at a time: over 2 * 10^5 float32 entries near 10^4 its mean was off
    # by about 10, and var (two passes: that error squared) gave 101 where NumPy gives 0.083. Reductions over
    # long slices under jit (traced indices: one scatter) must keep NumPy's float32 accuracy, as the eager
    # path does.
    rng = np.random.default_rng(1)
    d = (rng.random(200_000, dtype=np.float32) + 1e4).astype(np.float32)
    A = xp.asarray(d)
    ref = d.astype(np.float64)
    assert _rel(jax.jit(lambda a: xp.var(a).todense())(A), ref.var()) < 1e-4
    assert _rel(jax.jit(lambda a: xp.std(a, correction=1).todense())(A), ref.std(ddof=1)) < 1e-4
    assert _rel(jax.jit(lambda a: xp.mean(a).todense())(A), ref.mean()) < 1e-6
    D = np.stack([d[:100_000], d[100_000:]])
    B = xp.asarray(D)
    for axis in (1, -1):
        assert _rel(jax.jit(lambda a: xp.sum(a, axis=axis).todense())(B), D.astype(np.float64).sum(axis=1)) < 1e-6
    assert _rel(jax.jit(lambda a: xp.mean(a, axis=1).todense())(B), D.astype(np.float64).mean(axis=1)) < 1e-6
    V = xp.asarray(D[:, :, None] * np.ones((1, 1, 2), np.float32))  # a dense trailing dimension
    assert _rel(jax.jit(lambda a: xp.var(a, axis=1).todense())(V), D.astype(np.float64).var(axis=1)[:, None]
                * np.ones((1, 2))) < 1e-4


def test_float32_variance_under_jit_cancels_the_mean_error():
    # Values 1000 +- 0.01, 70% of them the fill 1000: the two-pass variance squared the float32 mean's
    # rounding error (relative error 5.4e-4 under jit, against 8e-9 eagerly; a review); the corrected
    # two-pass form (Chan, Golub and LeVeque) cancels it.
    rng = np.random.default_rng(0)
    V = (1000.0 + rng.standard_normal((2000, 1000)) * 1e-2).astype(np.float32)
    V[rng.random(V.shape) > 0.3] = 1000.0
    A = BCOOArray.fromdense(V, fill_value=1000.0)
    ref = V.astype(np.float64)
    assert _rel(jax.jit(lambda a: xp.var(a).todense())(A), ref.var()) < 1e-5
    assert _rel(jax.jit(lambda a: xp.std(a, correction=1).todense())(A), ref.std(ddof=1)) < 1e-5
    assert _rel(xp.var(A).todense(), ref.var()) < 1e-5


def test_float32_variance_under_jit_counts_past_two_to_the_24():
    # A slice of more than 2**24 stored float32 entries: their count, summed in float32, stopped at 2**24, so
    # the variance took 2**20 of them for unstored fill values (3.70 where NumPy gives 0.25; a review).
    n = 2**24 + 2**20
    vals = np.random.default_rng(4).integers(0, 2, n).astype(np.float32)
    f = jax.jit(lambda d, i: xp.var(BCOOArray((d, i), shape=(n + 5,), fill_value=5.0)).todense())
    got = f(vals, np.arange(n, dtype=np.int32)[:, None])
    assert _rel(got, np.concatenate([vals.astype(np.float64), np.full(5, 5.0)]).var()) < 1e-6


@pytest.mark.parametrize("sorted_ids", (True, False))
@pytest.mark.parametrize("dense", ((), (3,)))
def test_accurate_segment_sum_against_float64(sorted_ids, dense):
    # Segments of lengths 0 to 10^5 (sorted: contiguous; or shuffled), ids past n_out dropped, a dense
    # trailing dimension: the float64 sums within float32 rounding, and at least as close as a scatter-add.
    from bcoo_array._kernels.plan import accurate_segment_sum

    rng = np.random.default_rng(2)
    lengths = np.array([0, 1, 31, 32, 33, 64, 1000, 100_000, 5, 0, 2])
    seg = np.repeat(np.arange(len(lengths)), lengths)
    seg = np.concatenate([seg, np.full(17, len(lengths))]).astype(np.int32)  # padding, dropped
    if not sorted_ids:
        seg = rng.permutation(seg)
    vals = (rng.random((len(seg),) + dense, dtype=np.float32) + 1e3).astype(np.float32)
    ref = np.zeros((len(lengths),) + dense)
    np.add.at(ref, seg[seg < len(lengths)], vals[seg < len(lengths)].astype(np.float64))
    got = np.asarray(jax.jit(lambda v, s: accurate_segment_sum(v, s, len(lengths)))(vals, seg))
    plain = np.asarray(jax.ops.segment_sum(vals, seg, num_segments=len(lengths)))
    assert got.shape == ref.shape and got.dtype == np.float32
    assert _rel(got, ref) <= max(_rel(plain, ref), 1e-6)
    if sorted_ids:
        assert _rel(got, ref) < 1e-6
    np.testing.assert_array_equal(got[lengths == 0], 0)


@pytest.mark.parametrize("axis", (None, 0, 1))
@pytest.mark.parametrize("shift", (0.0, 1.0))
def test_grad_of_prod_matches_jax_numpy(axis, shift):
    # XLA's scatter-multiply has no gradient for repeated ids (JAX raised NotImplementedError from its
    # internals); the segment product's own JVP gives jnp.prod's gradient: segments with no zero, one stored
    # zero, several zeros; unstored entries hold the fill value (0, or 1 after the shift), eager and jitted.
    import jax.numpy as jnp

    D = np.array([[1.0, 2.0, 5.0, 0.0], [3.0, 0.0, 4.0, 0.5], [0.0, 0.0, 2.0, 0.0]], np.float32)
    A = xp.asarray(D)
    idx = np.asarray(A.indices)
    Z = xp.BCOOArray((jnp.asarray(np.append(np.asarray(A.data), 0.0).astype(np.float32)),
                      jnp.asarray(np.vstack([idx, [[2, 3]]]))), shape=D.shape)  # one stored zero
    rows, cols = np.asarray(Z.indices).T

    def loss(d):
        return xp.sum(xp.prod(Z.with_data(d) + shift, axis=axis)).todense()

    def oracle(M):
        return jnp.sum(jnp.prod(M + shift, axis=axis))

    ref = np.asarray(jax.grad(oracle)(jnp.asarray(Z.todense())))[rows, cols]
    for f in (jax.grad(loss), jax.jit(jax.grad(loss))):
        np.testing.assert_allclose(np.asarray(f(Z.data)), ref, rtol=1e-6)
