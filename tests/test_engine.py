"""The eager engine (``bcoo_array._engine``): host and XLA implementations agree, host results stay on the host.

Every operation with a host implementation is run twice on the same inputs,
by the host engine (NumPy on host buffers) and by the XLA engine
(``BCOO_ARRAY_HOST=0``), and both are compared with NumPy on the dense values.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._elementwise_functions import TABLE
from bcoo_array._engine import HOST_ENV, Operation, runs_on_host
from bcoo_array._fill import result_dtype

from _oracle import assert_matches

DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64,
                                np.complex64, np.complex128)]


def _in_category(dt: np.dtype, category: str) -> bool:
    from bcoo_array import _dtypes

    return dt in _dtypes.CATEGORIES[category]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_result_dtype_rule_agrees_with_jax(name):
    """The host engine's result dtypes (NumPy's answer where it must agree) are JAX's, for every function."""
    spec = TABLE[name]
    for dt in DTYPES:
        if not _in_category(dt, spec.category):
            continue
        dtypes = (dt,) * spec.nargs
        want = np.dtype(jax.eval_shape(spec.fn.jax_fn, *(jax.ShapeDtypeStruct((), d) for d in dtypes)).dtype)
        assert result_dtype(spec.fn, dtypes) == want, (name, dt)


def _matrix(seed=0, shape=(12, 7), density=0.3, dtype=np.float64, fill=0.0):
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal(shape) * (rng.random(shape) < density)
    dense = dense.astype(dtype)
    dense[dense == 0] = fill
    return dense, xp.asarray(dense) if fill == 0 else BCOOArray.fromdense(dense, fill_value=fill)


CALLS = {
    "exp": (lambda A, D, v: xp.exp(A), lambda A, D, v: np.exp(D)),
    "log1p_abs": (lambda A, D, v: xp.log1p(xp.abs(A)), lambda A, D, v: np.log1p(np.abs(D))),
    "sign": (lambda A, D, v: xp.sign(A), lambda A, D, v: np.where(D == 0, 0.0, np.sign(D))),
    "mul_row_numpy": (lambda A, D, v: A * v, lambda A, D, v: D * v),
    "div_row_sparse": (lambda A, D, v: A / xp.asarray(v), lambda A, D, v: D / v),
    "add_row": (lambda A, D, v: A + v, lambda A, D, v: D + v),
    "add_scalar": (lambda A, D, v: A + 1.5, lambda A, D, v: D + 1.5),
    "sparse_sparse": (lambda A, D, v: A * xp.exp(A) - A, lambda A, D, v: D * np.exp(D) - D),
    "compare": (lambda A, D, v: A > 0.25, lambda A, D, v: D > 0.25),
    "floor_divide": (lambda A, D, v: xp.floor_divide(A, 0.5), lambda A, D, v: np.floor_divide(D, 0.5)),
    "remainder": (lambda A, D, v: xp.remainder(A, -0.75), lambda A, D, v: np.remainder(D, -0.75)),
    "sum0": (lambda A, D, v: xp.sum(A, axis=0), lambda A, D, v: D.sum(axis=0)),
    "sum_all": (lambda A, D, v: xp.sum(A), lambda A, D, v: D.sum()),
    "mean1": (lambda A, D, v: xp.mean(A, axis=1), lambda A, D, v: D.mean(axis=1)),
    "max1": (lambda A, D, v: xp.max(A, axis=1), lambda A, D, v: D.max(axis=1)),
    "prod0": (lambda A, D, v: xp.prod(A + 1.0, axis=0), lambda A, D, v: np.prod(D + 1.0, axis=0)),
    "where": (lambda A, D, v: xp.where(A > 0.5, A, 0.0), lambda A, D, v: np.where(D > 0.5, D, 0.0)),
    "where_sparse": (lambda A, D, v: xp.where(A < 0, xp.exp(A), A), lambda A, D, v: np.where(D < 0, np.exp(D), D)),
    "astype": (lambda A, D, v: xp.astype(A, xp.float32), lambda A, D, v: D.astype(np.float32)),
    "concat0": (lambda A, D, v: xp.concat([A, A * 2.0]), lambda A, D, v: np.concatenate([D, D * 2.0])),
    "concat1": (lambda A, D, v: xp.concat([A, A], axis=1), lambda A, D, v: np.concatenate([D, D], axis=1)),
    "sort1": (lambda A, D, v: xp.sort(A, axis=1), lambda A, D, v: np.sort(D, axis=1)),
    "sort0_desc": (lambda A, D, v: xp.sort(A, axis=0, descending=True), lambda A, D, v: -np.sort(-D, axis=0)),
    "stack_to_coo": (lambda A, D, v: xp.sum(xp.stack([A, 2.0 * A]), axis=0), lambda A, D, v: 3.0 * D),
    "transpose": (lambda A, D, v: A.T * 2.0, lambda A, D, v: D.T * 2.0),
    "permute_batched": (lambda A, D, v: xp.permute_dims(xp.update_layout(xp.reshape(A, (3, 4, 7)), n_batch=1),
                                                        (1, 0, 2)),
                        lambda A, D, v: np.transpose(D.reshape(3, 4, 7), (1, 0, 2))),
    "reshape": (lambda A, D, v: xp.reshape(A, (4, 3, 7)), lambda A, D, v: D.reshape(4, 3, 7)),
    "reshape_0d": (lambda A, D, v: xp.reshape(xp.sum(A), ()), lambda A, D, v: D.sum()),
    "matmul_dense_layout": (lambda A, D, v: xp.matmul(A, xp.asarray(np.ones((7, 3)) * v[:, None])),
                            lambda A, D, v: D @ (np.ones((7, 3)) * v[:, None])),
    "rmatmul_dense_layout": (lambda A, D, v: xp.matmul(xp.asarray(np.ones((2, 12)) * 0.5), A),
                             lambda A, D, v: (np.ones((2, 12)) * 0.5) @ D),
    "matvec_sparse_vector": (lambda A, D, v: xp.matmul(A, xp.asarray(v)), lambda A, D, v: D @ v),
    "vecmat_sparse_vector": (lambda A, D, v: xp.matmul(xp.asarray(v), A.T), lambda A, D, v: v @ D.T),
    "sparse_sparse_product": (lambda A, D, v: A @ A.T, lambda A, D, v: D @ D.T),
    "take": (lambda A, D, v: xp.take(A, np.array([3, 0, 3, 11, -1]), axis=0),
             lambda A, D, v: np.take(D, [3, 0, 3, 11, -1], axis=0)),
    "setitem": (lambda A, D, v: _assigned(A), lambda A, D, v: _assigned(D)),
    "var0": (lambda A, D, v: xp.var(A, axis=0), lambda A, D, v: D.var(axis=0)),
    "std_all": (lambda A, D, v: xp.std(A, correction=1), lambda A, D, v: D.std(ddof=1)),
    "argmax1": (lambda A, D, v: xp.argmax(A, axis=1), lambda A, D, v: np.argmax(D, axis=1)),
    "argmin_all": (lambda A, D, v: xp.argmin(A), lambda A, D, v: np.argmin(D)),
    "argmax_dense_layout": (lambda A, D, v: xp.argmax(A @ xp.asarray(np.eye(7)), axis=0),
                            lambda A, D, v: np.argmax(D, axis=0)),
    "svd_values": (lambda A, D, v: xp.linalg.svd(A, full_matrices=False).S,
                   lambda A, D, v: np.linalg.svd(D, compute_uv=False)),
    "mask_rows": (lambda A, D, v: A[np.arange(12) % 3 == 1], lambda A, D, v: D[np.arange(12) % 3 == 1]),
    "mask_2d": (lambda A, D, v: A[D > 0.3], lambda A, D, v: D[D > 0.3]),
    "pointwise": (lambda A, D, v: A[np.array([0, 11, 4]), np.array([6, 0, 4])],
                  lambda A, D, v: D[np.array([0, 11, 4]), np.array([6, 0, 4])]),
    "row_slice": (lambda A, D, v: A[2:9], lambda A, D, v: D[2:9]),
    "basic_mixed": (lambda A, D, v: A[1:10:2, ::-1], lambda A, D, v: D[1:10:2, ::-1]),
    "column": (lambda A, D, v: A[:, 3], lambda A, D, v: D[:, 3]),
    "outer_row_first": (lambda A, D, v: xp.reshape(A[0, :], (1, -1)) * xp.reshape(A[:, 1], (-1, 1)),
                        lambda A, D, v: D[:1, :] * D[:, 1:2]),
    "outer": (lambda A, D, v: xp.reshape(A[:, 0], (-1, 1)) + xp.reshape(A[0, :], (1, -1)),
              lambda A, D, v: D[:, :1] + D[:1, :]),
}


def _assigned(a):
    """Assignment by integer arrays, a slice and a scalar, on a copy (the same steps for NumPy and BCOOArray)."""
    a = a.copy() if isinstance(a, np.ndarray) else a._replace()
    a[np.array([0, 5, 5]), 1:3] = np.array([1.5, -2.0])
    a[2, :] = 0.25
    a[np.array([1, 3]), np.array([6, 0])] = 7.0
    return a


@pytest.mark.parametrize("fill", [0.0, 2.0])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_host_and_xla_engines_agree_with_numpy(name, fill, monkeypatch):
    D, A = _matrix(fill=fill)
    v = np.random.default_rng(1).standard_normal(D.shape[1]) + 3.0  # no zeros: divisions stay finite
    ours, ref = CALLS[name]
    with np.errstate(all="ignore"):
        want = ref(A, D, v)
    host = ours(A, D, v)
    monkeypatch.setenv(HOST_ENV, "0")
    traced_engine = ours(A, D, v)
    monkeypatch.delenv(HOST_ENV)
    rtol = 1e-6 if np.asarray(want).dtype == np.float32 else 1e-12
    for got, engine in ((host, "host"), (traced_engine, "xla")):
        try:
            assert_matches(got, want, rtol=rtol)
        except AssertionError as err:
            raise AssertionError(f"the {engine} engine differs from NumPy in {name}") from err
    assert host.nse == traced_engine.nse or name in ("sum0", "mean1", "max1", "prod0"), (host.nse, traced_engine.nse)
    # The fill values agree as the stored values do: bit for bit where both engines round exactly
    # (sign, infinities, NaN), within the rounding of a transcendental function otherwise (NumPy's
    # SIMD log1p and XLA's may differ in the last bit; a CI run saw log1p(2.0) one ulp apart).
    hf, xf = np.asarray(host.fill_value), np.asarray(traced_engine.fill_value)
    assert hf.dtype == xf.dtype, (hf.dtype, xf.dtype)
    if hf.dtype.kind not in "fc":
        assert hf.tobytes() == xf.tobytes(), (hf, xf)
    elif np.isnan(hf) or np.isnan(xf) or not (np.isfinite(hf) and np.isfinite(xf)) or hf == 0 or xf == 0:
        assert hf.tobytes() == xf.tobytes() or (np.isnan(hf) and np.isnan(xf)), (hf, xf)
    else:
        np.testing.assert_allclose(xf, hf, rtol=rtol)
        assert np.signbit(hf) == np.signbit(xf)


def test_host_results_stay_on_the_host_until_jax_reads_them():
    D, A = _matrix()
    B = xp.sum(xp.exp(A) * 2.0 + A, axis=0)
    assert B._data is None and isinstance(B._hdata, np.ndarray)  # nothing crossed into JAX
    data = B.data  # the user reads a jax.Array: it crosses once, and stays
    assert isinstance(data, jax.Array) and B.data is data
    np.testing.assert_allclose(np.asarray(B.todense()), (np.exp(D) * 2 + D).sum(axis=0), rtol=1e-12)


def test_host_held_array_is_a_pytree_for_jit_grad_and_vmap():
    D, A = _matrix()
    A2 = A * 3.0
    assert A2._data is None
    out = jax.jit(lambda a: xp.sum(a * a).todense())(A2)
    np.testing.assert_allclose(float(out), float((9 * D * D).sum()), rtol=1e-12)
    g = jax.grad(lambda d: xp.sum(A2.with_data(d) ** 2).todense())(A2.data)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(A2.data), rtol=1e-12)
    S = xp.update_layout(xp.stack([A2, A2 + A2]), n_batch=1)
    sums = jax.vmap(lambda a: xp.sum(a).todense())(S)
    np.testing.assert_allclose(np.asarray(sums), [3 * D.sum(), 6 * D.sum()], rtol=1e-12)


def test_nothing_the_user_passes_is_aliased():
    D = np.array([[1.0, 0.0], [0.0, 2.0]])
    A = xp.asarray(D)
    v = np.array([1.0, 0.0])
    B = A + v
    D[...] = 7.0
    v[...] = 7.0
    np.testing.assert_array_equal(np.asarray(A.todense()), [[1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(B.todense()), [[2.0, 0.0], [1.0, 2.0]])
    import scipy.sparse as sp

    S = sp.random_array((30, 20), density=0.2, format="csr", rng=0)
    C = xp.asarray(S)
    want = S.toarray()
    S.data[:] = 99.0  # scipy's buffers are the user's: the host buffers are copies
    np.testing.assert_array_equal(C.toarray(), want)


def test_floating_point_flags_are_cleared_after_host_work():
    """NumPy's BLAS matmul reports stale flags; host work (log(0), inf - inf) must not leave any."""
    D, A = _matrix()
    xp.log(A)  # log(0) of the fill value raises the divide-by-zero flag inside NumPy
    xp.subtract(xp.exp(A * 1e4), xp.exp(A * 1e4))  # inf - inf: invalid
    M = np.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M @ np.ones(4)


def test_operation_dispatch():
    op = Operation("probe")
    calls = []
    op.host(lambda x: calls.append("host") or NotImplemented if x is None else (calls.append("host") or "host"))
    op.xla(lambda x: calls.append("xla") or "xla")
    assert op(np.ones(2)) == "host"
    assert jax.jit(lambda x: jnp.asarray(op(x) == "xla", jnp.float32))(jnp.ones(2)) == 1.0  # a tracer: XLA
    assert op(None) == "xla"  # the host implementation declined
    assert "probe" in repr(op)
    assert runs_on_host(np.ones(2), 1.0, None, [np.ones(1), 2])


def test_forcing_the_xla_engine(monkeypatch):
    D, A = _matrix()
    monkeypatch.setenv(HOST_ENV, "0")
    B = xp.exp(A)
    assert B._data is not None  # the XLA engine works on JAX buffers
    assert not runs_on_host(np.ones(2))


@pytest.mark.parametrize("n_batch,n_dense", [(1, 0), (2, 0), (1, 1), (0, 1), (2, 1), (0, 0)])
def test_update_layout_with_a_nonzero_fill_marks_batch_padding(n_batch, n_dense):
    """New batch elements are padded to one nse: with fill 2 the padding must not read as stored zeros
    (bcoo_update_layout pads with zeros at real positions; found by the engine's own tests)."""
    D, A = _matrix(fill=2.0)
    R = xp.reshape(A, (3, 4, 7))
    U = xp.update_layout(R, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(np.asarray(U.todense()), D.reshape(3, 4, 7))
    np.testing.assert_array_equal(np.asarray(xp.update_layout(U, n_batch=0, n_dense=0).todense()),
                                  D.reshape(3, 4, 7))


def test_host_constants_inside_a_trace():
    """Arrays with nothing stored are NumPy constants even inside jit, and the host engine then serves their
    products: the ESC product of integer dtypes (no scipy kernel) stays NumPy (fuzz seed 3915979573, case 26)."""
    a = xp.update_layout(xp.asarray(np.zeros((0, 3), np.uint8)), n_batch=1, n_dense=1)
    b = xp.update_layout(xp.asarray(np.zeros((0, 3), np.uint8)), n_batch=2, n_dense=0)
    got = jax.jit(lambda a, b: xp.tensordot(a, b, axes=0))(a, b)
    assert got.shape == (0, 3, 0, 3) and got.dtype == np.uint8
    D = np.array([[1, 0, 2], [0, 3, 0]], np.int8)
    A = xp.asarray(D)
    np.testing.assert_array_equal(np.asarray((A @ A.T).todense()), D.astype(np.int8) @ D.T)


def test_large_operations_run_on_the_host_until_their_signature_is_hot(monkeypatch):
    """Past the size rule, the first operands of an operation's signature run on the host (no XLA
    compilation); from the ``HOT_CALLS``-th new set of operands on that signature the XLA engine takes over.
    The same operands keep the engine they took first, so a repeated call repeats its result bit for bit.
    Both engines give NumPy's values; a new signature starts again on the host."""
    from bcoo_array import _engine
    from bcoo_array._fill_rule import unary

    monkeypatch.setenv("BCOO_ARRAY_HOST_MAX", "10")
    monkeypatch.setattr(_engine, "HOT_CALLS", 3)  # the mechanism, turned on (off by default)
    monkeypatch.setattr(_engine, "_CALLS", {})
    monkeypatch.setattr(_engine, "_CHOSEN", {})
    engines = []
    monkeypatch.setattr(unary, "_host", _spy(unary._host, engines, "host"))
    monkeypatch.setattr(unary, "_xla", _spy(unary._xla, engines, "xla"))
    D, A = _matrix(dtype=np.float32)
    first = np.asarray(xp.sin(A).todense())
    for _ in range(_engine.HOT_CALLS + 1):  # the same operand: the same engine, the same bits
        np.testing.assert_array_equal(np.asarray(xp.sin(A).todense()), first)
    assert engines == ["host"] * (_engine.HOT_CALLS + 2)
    engines.clear()
    copies = [xp.asarray(D) for _ in range(_engine.HOT_CALLS)]  # new operands of the same signature
    for B in copies + copies[-1:]:
        np.testing.assert_allclose(np.asarray(xp.sin(B).todense()), np.sin(D), rtol=1e-6)
    # A took the signature's first count; the copies take the next ones: host below HOT_CALLS, then XLA (the
    # last copy twice: the engine it took first)
    assert engines == ["host"] * (_engine.HOT_CALLS - 2) + ["xla", "xla", "xla"]
    engines.clear()
    C = xp.asarray(D[:5])  # another signature
    np.testing.assert_allclose(np.asarray(xp.sin(C).todense()), np.sin(D[:5]), rtol=1e-6)
    assert engines == ["host"]


def _spy(fn, log, name):
    def wrapped(*args, **kwargs):
        log.append(name)
        return fn(*args, **kwargs)
    return wrapped


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint16])
def test_engines_agree_where_the_standard_leaves_results_unspecified(dtype, monkeypatch):
    """Casts of NaN, infinities and out-of-range floats to integers: the standard leaves them unspecified,
    but one input must give one answer whether the host twin (NumPy), a forced XLA engine or ``jax.jit``
    computes it (NumPy's C casts differed from XLA's saturating ones; found by a review). Integer division
    by zero gives NumPy's 0 everywhere (XLA gave -1, -2 or the dtype's largest value under ``jit``), on
    stored entries and on the fill value (``0 // 0``)."""
    f = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 3.7, -1.5, 300.0, -300.0, 0.0], np.float32)
    vals = np.concatenate([f, f]).reshape(4, 5)
    vals[1, :] = 0.0  # unstored entries: the fill value is cast too
    ints = np.array([[5, 0, 7, 1, 3], [0, 0, 0, 0, 0], [2, 9, 0, 4, 6], [1, 1, 0, 8, 0]], dtype)
    cases = {
        "astype": (lambda a: xp.astype(a, dtype), (vals,)),
        "astype NaN fill": (lambda a: xp.astype(a / 0.0, dtype), (vals,)),
        "floor_divide by zero": (lambda a, b: a // b, (ints, ints * (np.arange(5) % 2).astype(dtype))),
        "floor_divide by a zero scalar": (lambda a: a // 0, (ints,)),
    }
    for name, (fn, args) in cases.items():
        eager, others = _three_engines(fn, args, monkeypatch)
        for other, label in others:
            np.testing.assert_array_equal(eager.toarray(), other.toarray(), err_msg=f"{name}: eager vs {label}")
            assert np.asarray(eager.fill_value).tobytes() == np.asarray(other.fill_value).tobytes(), (name, label)


def _three_engines(fn, args, monkeypatch):
    """``fn`` of NumPy ``args`` as bcoo arrays: eagerly (the host twin), and ``[(result, label)]`` under
    ``jax.jit`` and on a forced XLA engine."""
    ops = [xp.asarray(a) for a in args]
    eager = fn(*ops)
    jitted = jax.jit(fn)(*ops)
    monkeypatch.setenv(HOST_ENV, "0")
    forced = fn(*[xp.asarray(a) for a in args])
    monkeypatch.delenv(HOST_ENV)
    return eager, [(jitted, "jit"), (forced, "XLA engine")]


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_engines_keep_a_stored_negative_zero_through_sum_duplicates(monkeypatch, dtype):
    """A stored -0 keeps its sign when its duplicates are summed (sum_duplicates, and a sparse operand
    broadcast against another), eagerly as under ``jit``: the traced plans added into +0
    (``jax.ops.segment_sum``), which turned a lone -0 into +0; they now add into -0, the additive identity
    (a review: ``jit(maximum)(full((2, 2), -1.), asarray([[1., -0.]]))`` gave +0)."""
    neg = np.array([[-0.0, 2.0, 0.0], [0.0, -0.0, -1.0]], dtype)
    if np.dtype(dtype).kind == "c":  # an imaginary -0 too (todense under jit added it onto +0j; a review)
        neg[0, 2] = complex(0.0, -0.0)
    row = np.array([[-0.0, -0.0, -0.0]], dtype)
    real = (np.full((2, 2), -1, np.float32), np.array([[1.0, -0.0]], np.float32))
    cases = {  # name: (function, operands, NumPy's answer)
        "sum_duplicates": (lambda a: a.sum_duplicates(), (neg,), neg),
        "maximum, broadcast": (xp.maximum, real, np.maximum(*real)),
        "add, broadcast": (xp.add, (neg, row), neg + row),
    }
    for name, (fn, args, want) in cases.items():
        eager, others = _three_engines(fn, args, monkeypatch)
        assert eager.toarray().tobytes() == np.asarray(want, eager.dtype).tobytes(), name
        for other, label in others:
            assert eager.toarray().tobytes() == other.toarray().tobytes(), f"{name}: eager vs {label}"
    # todense under jit (stored entries added onto -0, or -0-0j: both parts keep their signs)
    assert np.asarray(jax.jit(lambda a: a.todense())(xp.asarray(neg))).tobytes() == neg.tobytes()
    # no sparse dimension (n_dense = 1): the stored rows add onto -0 as well
    for nse in (0, 1, 2):
        rows = np.stack([neg[0], np.where(neg[0] == 0, neg[0], -neg[0])])[:nse]  # (-0 + -0 stays -0)
        A = BCOOArray((jnp.asarray(rows), jnp.zeros((nse, 0), jnp.int32)), shape=(3,))
        want = functools.reduce(np.add, rows) if nse else np.zeros(3, dtype)  # (np.sum starts from +0)
        for got in (A.todense(), jax.jit(lambda a: a.todense())(A)):
            assert np.asarray(got).tobytes() == want.astype(dtype).tobytes(), nse


def test_sparse_times_dense_keeps_a_negative_zero_fill_where_every_product_is_one(monkeypatch):
    """``A * D`` with ``0 * d`` the same value everywhere keeps ``A``'s pattern; its fill is -0 where every
    unstored product is -0 (``D`` all negative), as in NumPy, and +0 where they are zeros of both signs (the
    rule compares values: documented). Host twin, forced XLA engine, and ``jit`` with ``D`` a constant (a
    traced ``D`` cannot be read: its fill is ``fill * 0``)."""
    a = np.array([[1.0, 0.0, 0.0], [0.0, -2.0, 0.0]], np.float32)
    for d, fill in ((np.full((2, 3), -1.5, np.float32), -0.0), (np.array([[-1.0, 1.0, -1.0], [1.0, 2.0, 3.0]],
                                                                          np.float32), 0.0)):
        A = xp.asarray(a)
        got = [A * d, jax.jit(lambda m: m * d)(A)]
        monkeypatch.setenv(HOST_ENV, "0")
        got.append(xp.asarray(a) * d)
        monkeypatch.delenv(HOST_ENV)
        want = a * d if np.signbit(fill) else np.where(a * d == 0, np.float32(0), a * d)
        for out in got:
            assert out.nse == 2 and np.asarray(out.fill_value).tobytes() == np.float32(fill).tobytes()
            assert out.toarray().tobytes() == want.tobytes()


def test_engines_order_the_signed_zeros_of_max_and_min_reductions(monkeypatch):
    """``max``/``min`` over axes of arrays holding zeros of both signs (stored, and unstored with a +0 or -0
    fill) give XLA's and IEEE 754-2019's zeros (``-0 < +0``) on every engine: NumPy's reductions returned
    either zero, so the host gave +0 for ``min([3, 0, -0.0])`` where ``jit`` gave -0 (a review)."""
    arr = np.array([[3.0, 0.0, -0.0, 0.0], [-0.0, 0.0, 0.0, -0.0], [-0.0, -0.0, 2.0, -0.0]], np.float32)
    for sign in (1.0, -1.0):  # (-1: every zero flips, the fill too)
        for name in ("max", "min"):
            for axis in (0, 1, None):
                fn = lambda a, name=name, axis=axis, sign=sign: getattr(xp, name)(a * sign, axis=axis)  # noqa
                want = np.asarray(getattr(jnp, name)(jnp.asarray(arr) * sign, axis=axis))
                eager, others = _three_engines(fn, (arr,), monkeypatch)
                got = [eager] + [o for o, _ in others]
                for out in got:
                    dense = out.toarray() if hasattr(out, "toarray") else np.asarray(out)
                    assert dense.tobytes() == want.tobytes(), (name, axis, sign)


def test_sparse_dense_rule_tells_subnormals_apart_under_jit():
    """``nextafter(A, D)`` with a constant ``D`` of mixed signs under ``jit``: ``nextafter(0, +-1)`` is
    +-1.4e-45, two values, so the result is NumPy's (XLA on a CPU compared the subnormals as zeros: the
    rule kept ``A``'s pattern with one of them as the fill; a review)."""
    a = np.array([[1.5, 0.0, 0.0, -2.0], [0.0, 0.0, 3.0, 0.0]], np.float32)
    d = np.array([[-1.0, 1.0, -1.0, 2.0], [1.0, -2.0, 3.0, -4.0]], np.float32)
    for out in (xp.nextafter(xp.asarray(a), d), jax.jit(lambda m: xp.nextafter(m, d))(xp.asarray(a))):
        assert out.toarray().tobytes() == np.nextafter(a, d).tobytes()


def test_fromdense_under_jit_keeps_subnormals():
    """``fromdense`` under ``jit`` stores a subnormal as NumPy tells it from zero (XLA on a CPU compared
    1e-45 equal to a zero fill and dropped it; found in the re-read)."""
    d = np.array([1e-45, 0.0, -1e-45, 2.0], np.float32)
    j = jax.jit(lambda v: BCOOArray.fromdense(v, nse=4))(jnp.asarray(d))
    assert np.asarray(j.todense()).tobytes() == d.tobytes() == xp.asarray(d).toarray().tobytes()


def test_engines_order_signed_zeros_alike(monkeypatch):
    """maximum(+0, -0) is +0 and minimum(+0, -0) is -0 in either argument order (IEEE 754-2019, XLA),
    eagerly as under ``jit``: NumPy's loops returned either operand, so the host twin gave -0 for
    ``maximum(+0, -0)`` where ``jit`` gave +0. Stored entries and fill values (-0 and +0), and ``clip``; and
    the zero quotients of float floor division (XLA gave -0 for two negative operands, NumPy +0; a review)."""
    z = np.array([[0.0, -0.0, 0.0, 1.0], [-0.0, 0.0, -0.0, -2.0]], np.float32)
    w = np.array([[-0.0, 0.0, 0.0, -0.0], [-0.0, -0.0, 0.0, 3.0]], np.float32)
    cases = {
        "maximum": (xp.maximum, (z, w)), "minimum": (xp.minimum, (z, w)),
        "maximum, swapped": (xp.maximum, (w, z)), "minimum, swapped": (xp.minimum, (w, z)),
        "maximum of -0 fills": (lambda a, b: xp.maximum(a * -1.0, b), (z, w)),
        "clip": (lambda a: xp.clip(a, -0.0, 0.5), (z,)),
        "floor_divide, zero quotients": (lambda a, b: a // b, (np.array([[-1.0, -0.5, 1.0, -0.0]], np.float32),
                                                                np.array([[-2.5, -4.0, 3.0, -2.0]], np.float32))),
    }
    for name, (fn, args) in cases.items():
        eager, others = _three_engines(fn, args, monkeypatch)
        if name in ("maximum", "minimum", "maximum, swapped", "minimum, swapped"):  # the oracle, elementwise
            a, b = args
            negative = (np.signbit(a) | np.signbit(b)) if name.startswith("min") else (np.signbit(a) & np.signbit(b))
            zeros = np.where(negative, np.float32(-0.0), np.float32(0.0))
            want = np.where((a == 0) & (b == 0), zeros, getattr(np, name.split(",")[0])(a, b))
            assert eager.toarray().tobytes() == want.tobytes(), name
        for other, label in others:
            assert eager.toarray().tobytes() == other.toarray().tobytes(), f"{name}: eager vs {label}"
            assert np.asarray(eager.fill_value).tobytes() == np.asarray(other.fill_value).tobytes(), (name, label)
