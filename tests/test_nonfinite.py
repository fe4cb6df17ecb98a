"""Non-finite values against unstored entries: the documented semantics.

* ``matmul`` with a zero-filled sparse operand: an unstored entry is an exact
  (structural) zero and forms no product, so ``inf`` / ``nan`` of the dense
  operand where the sparse one stores nothing do not reach the result (NumPy
  gives ``nan`` for ``0 * inf``); stored entries, explicit zeros included,
  follow IEEE arithmetic. The same choice as scipy.sparse and
  jax.experimental.sparse. Pinned against a NumPy model that sums over
  stored entries only, for sparse @ dense and dense @ sparse, on every
  kernel path (native C++, XLA segment sum, XLA CSR, ELL SpMV, the traced
  COO kernel, the traced native call, batched ``bcoo_dot_general``), each
  path checked to have run with a spy.
* ``matmul`` with a non-zero fill value: every position holds a value, so a
  concrete dense operand gives NumPy's result, ``inf`` included.
* ``A * s`` with a traced scalar ``s`` under ``jit``: fill values are static,
  so the zero fill stays (as jax.experimental.sparse treats ``s`` as
  finite); eagerly ``s = inf`` gives fill ``nan`` (NumPy's ``0 * inf``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._kernels import csr, ell, native
from bcoo_array._kernels import matmul as kmm
from bcoo_array._relayout import dense_layout

INF, NAN = np.inf, np.nan

# A 5 x 4 sparse matrix: row 1 stores an explicit 0, row 2 stores nothing, row 3 stores inf.
ENTRIES = {(0, 0): 2.0, (0, 2): -1.0, (1, 1): 0.0, (3, 3): INF, (4, 0): 1.0, (4, 1): 3.0}
SHAPE = (5, 4)


def _sparse():
    idx = np.array(sorted(ENTRIES), dtype=np.int32)
    vals = np.array([ENTRIES[tuple(i)] for i in idx])
    return BCOOArray((jnp.asarray(vals), jnp.asarray(idx)), shape=SHAPE)


def _dense_rhs(ncols: int | None):
    """A (4,) or (4, ncols) operand with inf / -inf / nan in rows that meet stored and unstored entries."""
    rng = np.random.default_rng(0)
    d = rng.integers(-3, 4, (4, ncols or 1)).astype(np.float64)
    d[1, 0] = INF     # column 1 of S: stored explicit 0 (row 1 -> nan), stored 3 (row 4 -> inf), unstored rows 0, 2, 3
    d[2, 0] = NAN     # column 2: stored -1 in row 0 (-> nan), unstored elsewhere
    d[3, 0] = 0.0     # column 3: stored inf in row 3 (inf * 0 -> nan)
    if d.shape[1] > 1:
        d[0, 1] = -INF    # column 0: stored in rows 0 and 4 (-> -inf), unstored in rows 1, 2, 3
        d[3, 1] = 2.0     # stored inf in row 3 -> inf
    return d[:, 0] if ncols is None else d


def structural(d):
    """``S @ d`` summing over the stored entries of S only (unstored entries form no product)."""
    out = np.zeros((SHAPE[0],) + d.shape[1:])
    with np.errstate(invalid="ignore"):
        for (i, k), v in ENTRIES.items():
            out[i] = out[i] + v * d[k]
    return out


def dense_of_s():
    out = np.zeros(SHAPE)
    for (i, k), v in ENTRIES.items():
        out[i, k] = v
    return out


def test_model_differs_from_numpy():
    # the semantics pinned below are a real choice: NumPy propagates inf / nan through unstored zeros
    d = _dense_rhs(2)
    with np.errstate(invalid="ignore"):
        numpy_result = dense_of_s() @ d
    want = structural(d)
    assert np.isnan(numpy_result[2]).all() and (want[2] == 0).all()  # row 2 stores nothing
    assert np.isnan(numpy_result[0, 0]) and np.isnan(want[0, 0])      # stored -1 * nan
    assert want[4, 0] == INF and want[1, 0] != want[1, 0]               # 3 * inf; stored 0 * inf = nan
    assert want[3, 0] != want[3, 0] and want[3, 1] == INF               # stored inf * 0, inf * 2


class Spy:
    """Counts the calls of ``module.name`` (of each name, if several: the entries of one kernel)."""

    def __init__(self, monkeypatch, module, *names):
        self.calls = 0
        for name in names:
            real = getattr(module, name)

            def wrapper(*args, _real=real, **kwargs):
                self.calls += 1
                return _real(*args, **kwargs)

            monkeypatch.setattr(module, name, wrapper)


def _assert_same(got, want):
    got = np.asarray(got.todense() if isinstance(got, BCOOArray) else got)
    np.testing.assert_array_equal(got, want)  # inf, -inf and nan in the same places, exact values


# (path, number of columns of the dense operand or None for a vector, under jit?)
PATHS = {
    "native": (None, 2, False),
    "xla_segments": ("matmat_segments", 2, False),
    "xla_csr": ("matmat_bcsr", csr.CSR_KERNEL_MIN_COLS + 1, False),
    "xla_ell": ("matvec", None, False),
    "xla_traced": ("coo_matmat", 2, True),
}


def _setup(monkeypatch, path):
    # The kernels below belong to the XLA engine (the host engine has its own test, below).
    monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    if path == "native":
        if not native.available():
            pytest.skip("native kernel not built")
        monkeypatch.delenv("BCOO_ARRAY_NATIVE", raising=False)
        return Spy(monkeypatch, native, "spmm", "coo_matmul")  # coo_matmul: the (m,)-shaped entry
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")  # read at each call: the XLA kernels run
    assert not native.available()
    name = PATHS[path][0]
    if path == "xla_ell":
        monkeypatch.setattr(ell, "MIN_NSE", 0)  # small matrices take the ELL plan too
        monkeypatch.setattr(ell, "MAX_PADDING_RATIO", 8.0)
        return Spy(monkeypatch, ell, "matvec")
    if path == "xla_traced":
        return Spy(monkeypatch, kmm, "coo_matmat")
    return Spy(monkeypatch, csr, name)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_sparse_dense_unstored_are_exact_zeros(monkeypatch, path):
    spy = _setup(monkeypatch, path)
    _, ncols, traced = PATHS[path]
    S = _sparse()
    d = _dense_rhs(ncols)
    want = structural(d)
    if traced:
        got = jax.jit(lambda s, v: (s @ v))(S, jnp.asarray(d))
    else:
        got = S @ jnp.asarray(d)
    assert spy.calls >= 1, f"{path} did not run"
    _assert_same(got, want)
    # NumPy operands take the same kernels
    if not traced:
        _assert_same(S @ d, want)


@pytest.mark.parametrize("path", sorted(p for p in PATHS if p != "xla_ell"))  # ELL is the 1-D sparse @ vector
def test_dense_sparse_unstored_are_exact_zeros(monkeypatch, path):
    spy = _setup(monkeypatch, path)
    _, ncols, traced = PATHS[path]
    St = xp.matrix_transpose(_sparse())  # (4, 5)
    dt = _dense_rhs(ncols).T  # (ncols, 4)
    want = structural(dt.T).T
    if traced:
        got = jax.jit(lambda v, s: (v @ s))(jnp.asarray(dt), St)
    else:
        got = jnp.asarray(dt) @ St
    assert spy.calls >= 1, f"{path} did not run"
    _assert_same(got, want)


@pytest.mark.parametrize("ncols", [None, 2, csr.CSR_KERNEL_MIN_COLS + 1])
@pytest.mark.parametrize("kind", ["numpy", "jax", "dense_layout"])
def test_host_engine_unstored_are_exact_zeros(ncols, kind):
    """The host engine (NumPy, scipy and the native loop on host buffers) keeps unstored entries structural."""
    S = _sparse()
    d = _dense_rhs(ncols)
    # (a dense-layout BCOOArray is a dense operand; a sparse one would be structural too: sparse @ sparse forms
    # products of stored entries only)
    wrap = {"numpy": np.asarray, "jax": jnp.asarray, "dense_layout": dense_layout}[kind]
    _assert_same(S @ wrap(d), structural(d))
    dt = d.T if d.ndim == 2 else d
    want_t = structural(d).T if d.ndim == 2 else structural(d)
    _assert_same(wrap(dt) @ xp.matrix_transpose(S), want_t)


def test_traced_native_kernel_unstored_are_exact_zeros():
    # spmm(traced_native=True): the FFI call under jit (the solvers' operator)
    if not native.available():
        pytest.skip("native kernel not built")
    S = _sparse()
    d = _dense_rhs(2)
    f = jax.jit(lambda data, idx, v: kmm.spmm(data, idx, SHAPE, v, traced_native=True)[0])
    _assert_same(f(S.data, S.indices, jnp.asarray(d)), structural(d))


def test_batched_kernel_unstored_are_exact_zeros(monkeypatch):
    # n_batch = 1: jax.experimental.sparse.bcoo_dot_general, eager and under jit
    spy = Spy(monkeypatch, kmm, "batched_spmm")
    from bcoo_array import _linear_algebra_functions as la

    monkeypatch.setattr(la, "batched_spmm", kmm.batched_spmm)
    S = _sparse()
    B = BCOOArray.fromdense(jnp.stack([S.todense(), 2.0 * S.todense()]), n_batch=1)
    assert B.n_batch == 1
    d = _dense_rhs(2)
    want = np.stack([structural(d), 2.0 * structural(d)])
    # fromdense does not store the explicit 0 of row 1: row 1 stores nothing, so it is exactly 0
    want[:, 1, :] = 0.0
    _assert_same(B @ jnp.asarray(d), want)
    _assert_same(jax.jit(lambda b, v: (b @ v))(B, jnp.asarray(d)), want)
    assert spy.calls >= 1


def test_sparse_sparse_forms_products_of_stored_entries_only():
    S = _sparse()
    d = _dense_rhs(2)
    D = BCOOArray.fromdense(d)  # every non-zero of d stored, inf and nan included
    mask = d != 0
    want = np.zeros((5, 2))
    with np.errstate(invalid="ignore"):
        for (i, k), v in ENTRIES.items():
            want[i] = want[i] + np.where(mask[k], v * d[k], 0.0)
    _assert_same(S @ D, want)                       # eager: scipy SpGEMM
    _assert_same(xp.linalg.sparse_matmul(S, D, nse=20), want)
    _assert_same(jax.jit(lambda a, b: xp.linalg.sparse_matmul(a, b, nse=20))(S, D), want)  # traced ESC


@pytest.mark.parametrize("fill", [2.0, -0.5])
def test_nonzero_fill_is_a_value_everywhere(fill):
    # with a non-zero fill every position holds a value: a concrete dense operand gives NumPy's result
    S = _sparse() + fill
    full = np.asarray(S.todense())
    for d in (_dense_rhs(2), np.array([[1.0], [INF], [1.0], [1.0]]), np.array([[1.0], [-INF], [INF], [0.0]])):
        with np.errstate(invalid="ignore"):
            want = full @ d
            want_t = d.T @ full.T
        dj = jnp.asarray(d)
        _assert_same(S @ dj, want)
        _assert_same(jnp.asarray(d.T) @ xp.matrix_transpose(S), want_t)
        # a concrete operand closed over under jit is still concrete: the same result
        _assert_same(jax.jit(lambda s, v=dj: (s @ v))(S), want)
    # finite traced operands give NumPy's result under jit too (the stored inf of row 3 included)
    d = np.arange(8.0).reshape(4, 2)
    got = jax.jit(lambda s, v: (s @ v))(S, jnp.asarray(d))
    with np.errstate(invalid="ignore"):  # NumPy's BLAS matmul reports the flag the inf loop above left set
        want = full @ d
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15)


# --------------------------------------------------------------------------- multiply by a traced inf


def test_multiply_by_traced_inf_keeps_the_static_zero_fill():
    S = _sparse()
    with np.errstate(invalid="ignore"):
        numpy_eager = dense_of_s() * INF
    # eager: the scalar is concrete, the fill is 0 * inf = nan, as NumPy
    for s in (INF, np.float64(INF), jnp.asarray(INF)):
        out = S * s
        assert np.isnan(out.fill_value)
        _assert_same(out, numpy_eager)
    # under jit a traced scalar cannot enter the static fill value: the fill stays 0 and only the
    # stored entries are multiplied (stored 0 * inf is nan, stored inf * inf is inf)
    traced = jax.jit(lambda a, t: a * t)(S, jnp.asarray(INF))
    assert traced.fill_value == 0
    want = np.zeros(SHAPE)
    with np.errstate(invalid="ignore"):
        for (i, k), v in ENTRIES.items():
            want[i, k] = v * INF
    _assert_same(traced, want)
    _assert_same(jax.jit(lambda a, t: xp.multiply(t, a).todense())(S, jnp.asarray(INF)), want)
    # a Python or NumPy scalar stays concrete under jit: the exact fill
    static = jax.jit(lambda a: a * INF)(S)
    assert np.isnan(static.fill_value)
    _assert_same(static, numpy_eager)


def test_nonzero_fill_with_traced_nonfinite_operand_uses_the_documented_form():
    # under jit the dense operand's values are unknown: the product stays
    # (A - fill) @ d + fill * sum(d, axis=-2), which can give nan where NumPy gives inf
    fill = 2.0
    S = _sparse() + fill
    d = np.array([[1.0, 1.0], [INF, 1.0], [1.0, -INF], [0.0, 1.0]])
    form = np.zeros((5, 2))
    with np.errstate(invalid="ignore"):
        for (i, k), v in ENTRIES.items():
            form[i] = form[i] + (v + fill - fill) * d[k]
        form = form + fill * d.sum(axis=0)
        numpy_result = np.asarray(S.todense()) @ d
    got = np.asarray(jax.jit(lambda s, v: (s @ v))(S, jnp.asarray(d)))
    np.testing.assert_array_equal(got, form)
    # the documented difference is real: entries where NumPy has inf and the form has nan
    assert np.any(np.isnan(got) & np.isinf(numpy_result))


def test_outer_of_sparse_vectors_with_nonfinite_values():
    """``linalg.outer``: a stored inf / nan meets the other's unstored zeros as NumPy's 0 * inf = nan
    (the official suite compares with element-wise products; seed 3158567285, x64 off)."""
    a = np.array([0.0, np.inf, 2.0], np.float32)
    b = np.array([np.nan, 0.0, -1.0], np.float32)
    got = np.asarray(xp.linalg.outer(xp.asarray(a), xp.asarray(b)).todense())
    with np.errstate(invalid="ignore"):
        want = np.outer(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    # finite values keep the product pattern: nse = nse1 * nse2, and an unstored 0 times a stored
    # negative value is the fill +0, not NumPy's -0.0 (the documented choice; conformance/xfails.txt)
    f = xp.linalg.outer(xp.asarray(np.array([0.0, 3.0], np.float32)), xp.asarray(np.array([-2.0, 0.0], np.float32)))
    got = np.asarray(f.todense())
    assert f.nse == 1 and got.tolist() == [[0.0, 0.0], [-6.0, 0.0]]
    assert not np.signbit(got[0, 0]) and np.signbit(np.outer([0.0, 3.0], [-2.0, 0.0])[0, 0])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_special_cases_with_subnormal_and_large_real_parts(dtype):
    """acosh / acos of (finite non-zero) + NaN j is NaN + NaN j, also for subnormal real parts (which XLA's
    flush-to-zero comparisons take for 0) and huge ones; a zero real part keeps the pi/2 part."""
    tiny = np.finfo(np.float32 if dtype == np.complex64 else np.float64).smallest_subnormal
    big = np.finfo(np.float32 if dtype == np.complex64 else np.float64).max / 4
    re = np.array([tiny, -tiny, big, -big, 1.0, 0.0, -0.0])
    z = np.empty(re.shape, dtype)
    z.real, z.imag = re, np.nan  # (re + 1j * nan would make every real part NaN)
    x = xp.asarray(z)
    for fn, zero_case in ((xp.acosh, (np.nan, np.pi / 2)), (xp.acos, (np.pi / 2, np.nan))):
        got = np.asarray(fn(x).todense())
        assert np.isnan(got[:5].real).all() and np.isnan(got[:5].imag).all(), (fn.__name__, got)
        for v in got[5:]:
            for part, want in ((v.real, zero_case[0]), (v.imag, zero_case[1])):
                assert (np.isnan(part) and np.isnan(want)) or np.isclose(part, want), (fn.__name__, v)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_pow_of_zero_base(dtype):
    """0 ** z is 0 for finite z with a positive real part (the standard's exp(z * log(0)), NumPy's and C99's
    cpow); XLA gives NaN + NaN j. Found by the differential fuzz (seed 559856425, case 6334): a zero-filled
    sparse base raised to a dense complex exponent."""
    if np.dtype(dtype) == np.complex128 and not jax.config.jax_enable_x64:
        pytest.skip("complex128 needs x64")
    base = np.zeros(5, dtype)
    exponent = np.array([2 - 1j, -3 - 2j, 0j, 1j, 0.5 + 0j], dtype)
    with np.errstate(all="ignore"):
        want = np.power(base, exponent)
    S = xp.asarray(base)
    got = np.asarray(xp.pow(S, jnp.asarray(exponent)).todense())
    np.testing.assert_allclose(got, want)
    got_jit = np.asarray(jax.jit(lambda s, e: xp.pow(s, e).todense())(S, jnp.asarray(exponent)))
    np.testing.assert_allclose(got_jit, want)
    # A NaN exponent gives NaN + NaN j, a base of 1 included (fuzz seed 3537630914, case 59: 0-d operands).
    one = xp.asarray(np.array(1, dtype))
    nan_exp = xp.asarray(np.array(complex(np.nan, 0), dtype))
    got = complex(np.asarray(xp.pow(one, nan_exp).todense()))
    assert np.isnan(got.real) and np.isnan(got.imag), got
