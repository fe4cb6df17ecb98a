"""The native jax.ffi SpMV/SpMM kernel (``bcoo_array._kernels.native``) against
a dense NumPy oracle: every value and index dtype, padding, duplicates,
unsorted and empty matrices, 1-D and 2-D ``x``, ``jit`` with traced indices,
``grad``/``jvp`` (against the XLA path), ``vmap``; and the public ``A @ x``
with ``BCOO_ARRAY_NATIVE=0`` (the XLA kernels) in a subprocess.

Native-only tests are skipped when the extension is not built (no compiler
at install time) or the backend is not CPU. x64 is on for the session
(conftest), so float64/complex128 values and int64 indices run in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._kernels import matmul, native

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_NATIVE = native.available()
needs_native = pytest.mark.skipif(not HAVE_NATIVE, reason="native extension not built (or backend not CPU)")

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
INDEX_DTYPES = (np.int32, np.int64)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if np.dtype(dtype) in (np.float32, np.complex64) else dict(rtol=1e-12, atol=1e-12)


def _values(rng, shape, dtype):
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def random_coo(rng, m, k, nse, dtype=np.float64, index_dtype=np.int32, *, padding=0, sort=False):
    """``(data, indices, dense)``: ``nse`` random entries (duplicates likely) plus
    ``padding`` entries holding NaN with an index equal to its dimension."""
    rows = rng.integers(0, max(m, 1), nse) if m else np.zeros(nse, np.int64)
    cols = rng.integers(0, max(k, 1), nse) if k else np.zeros(nse, np.int64)
    data = _values(rng, nse, dtype)
    if m == 0 or k == 0:
        rows, cols = np.full(nse, m), np.full(nse, k)
    if sort:
        order = np.lexsort((cols, rows))
        rows, cols, data = rows[order], cols[order], data[order]
    dense = np.zeros((m, k), dtype)
    ok = (rows < m) & (cols < k)
    np.add.at(dense, (rows[ok], cols[ok]), data[ok])
    if padding:
        pr = rng.integers(0, max(m, 1), padding)
        pc = rng.integers(0, max(k, 1), padding)
        which = rng.integers(0, 3, padding)  # row padding, column padding, or both
        pr = np.where(which != 1, m, pr)
        pc = np.where(which != 0, k, pc)
        pos = rng.integers(0, nse + 1, padding)
        rows = np.insert(rows, pos, pr)
        cols = np.insert(cols, pos, pc)
        data = np.insert(data, pos, np.full(padding, np.nan, dtype))
    indices = np.stack([rows, cols], axis=1).astype(index_dtype)
    return data, indices, dense


def _x(rng, k, n, dtype):
    return _values(rng, (k,) if n is None else (k, n), dtype)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("n", [None, 1, 3, 16, 21])
def test_matches_dense(dtype, index_dtype, n):
    """Duplicates add up; padding (NaN values, index == dimension) adds nothing; unsorted entries."""
    rng = np.random.default_rng(hash((np.dtype(dtype).str, np.dtype(index_dtype).str, n)) % 2**32)
    m, k = 13, 9
    data, indices, dense = random_coo(rng, m, k, 60, dtype, index_dtype, padding=7)
    x = _x(rng, k, n, dtype)
    out = native.coo_matmul(data, indices, x, m)
    assert out.dtype == dtype and out.shape == (m,) + x.shape[1:]
    np.testing.assert_allclose(np.asarray(out), dense @ x, **_tol(dtype))
    # jax operands, and the spmm convention (leading axis of one)
    out2 = native.spmm(jnp.asarray(data), jnp.asarray(indices), jnp.asarray(x), m)
    assert out2.shape == (1,) + out.shape
    np.testing.assert_array_equal(np.asarray(out2[0]), np.asarray(out))


@needs_native
@pytest.mark.parametrize("n", [None, 5, 8, 19])
def test_sorted_runs_equal_serial_loop(n):
    """Canonical (row-sorted) input: the result is bit-identical to a serial
    loop over the entries in storage order (np.add.at), runs of rows included."""
    rng = np.random.default_rng(3)
    m, k = 40, 30
    data, indices, _ = random_coo(rng, m, k, 400, np.float64, sort=True, padding=5)
    x = _x(rng, k, n, np.float64)
    ok = (indices[:, 0] < m) & (indices[:, 1] < k)
    r, c, d = indices[ok, 0], indices[ok, 1], data[ok]
    expected = np.zeros((m,) + x.shape[1:])
    np.add.at(expected, r, d.reshape((-1,) + (1,) * (x.ndim - 1)) * x[c])
    np.testing.assert_array_equal(np.asarray(native.coo_matmul(data, indices, x, m)), expected)


@needs_native
def test_negative_indices_ignored():
    data = np.array([1.0, 2.0, 4.0, 8.0])
    indices = np.array([[0, 0], [-1, 1], [1, -2], [1, 1]], np.int32)
    x = np.array([1.0, 10.0])
    np.testing.assert_array_equal(np.asarray(native.coo_matmul(data, indices, x, 2)), [1.0, 80.0])


@needs_native
@pytest.mark.parametrize("m,k,nse,n", [(0, 0, 0, None), (0, 0, 0, 3), (3, 4, 0, None), (3, 4, 0, 2),
                                       (0, 4, 2, None), (3, 0, 2, 2), (3, 4, 2, 0)])
def test_empty(m, k, nse, n):
    rng = np.random.default_rng(0)
    data, indices, dense = random_coo(rng, m, k, nse)
    x = _x(rng, k, n, np.float64)
    out = native.coo_matmul(data, indices, x, m)
    assert out.shape == (m,) + x.shape[1:]
    np.testing.assert_array_equal(np.asarray(out), dense @ x)


@needs_native
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("n", [None, 4])
def test_jit_traced_indices(index_dtype, n):
    rng = np.random.default_rng(5)
    m, k = 11, 7
    data, indices, dense = random_coo(rng, m, k, 50, np.complex128, index_dtype, padding=4)
    x = _x(rng, k, n, np.complex128)
    f = jax.jit(lambda d, i, v: native.coo_matmul(d, i, v, m))
    np.testing.assert_allclose(np.asarray(f(data, indices, x)), dense @ x, rtol=1e-12)
    # traced operands take the native kernel by default: it is a primitive JAX can transpose
    h = jax.jit(lambda d, i, v: matmul.spmm(d, i, (m, k), v)[0])
    assert "bcoo_array_coo_matmul" in h.lower(data, indices, x).as_text()
    np.testing.assert_allclose(np.asarray(h(data, indices, x)), dense @ x, rtol=1e-12)
    if n is None:
        t = jax.linear_transpose(lambda v: matmul.spmm(jnp.asarray(data), jnp.asarray(indices), (m, k), v)[0], x)
        np.testing.assert_allclose(np.asarray(t(np.ones(m, np.complex128))[0]), dense.T @ np.ones(m), rtol=1e-12)


@needs_native
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("n", [None, 3])
def test_grad_matches_xla(dtype, n):
    """``grad`` w.r.t. data and x equals that of the pure-XLA formulation (padding data NaN)."""
    rng = np.random.default_rng(7)
    m, k = 9, 6
    data, indices, _ = random_coo(rng, m, k, 30, dtype, padding=3)
    data = np.where(np.isnan(data), 0.5, data).astype(dtype)  # finite padding: XLA's grad would see it
    x = _x(rng, k, n, dtype)
    w = _x(rng, m, n, dtype)

    def loss(f):
        return lambda d, v: jnp.real(jnp.sum(jnp.conj(w) * f(d, indices, v, m)) ** 2)

    g_nat = jax.grad(loss(native.coo_matmul), argnums=(0, 1))(data, x)
    g_xla = jax.grad(loss(native._xla_matmul), argnums=(0, 1))(data, x)
    for a, b in zip(g_nat, g_xla):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    # jvp, and grad under jit with traced indices
    t = jax.jvp(lambda d, v: native.coo_matmul(d, indices, v, m), (data, x), (data, x))
    np.testing.assert_allclose(np.asarray(t[1]), 2 * np.asarray(t[0]), rtol=1e-12, atol=1e-12)
    gj = jax.jit(jax.grad(lambda d, i, v: jnp.real(jnp.sum(native.coo_matmul(d, i, v, m))), argnums=(0, 2)))
    gx = jax.grad(lambda d, i, v: jnp.real(jnp.sum(native._xla_matmul(d, i, v, m))), argnums=(0, 2))
    for a, b in zip(gj(data, indices, x), gx(data, jnp.asarray(indices), x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


@needs_native
@pytest.mark.parametrize("n", [None, 3])
def test_vmap(n):
    rng = np.random.default_rng(9)
    m, k, b = 8, 5, 4
    data, indices, dense = random_coo(rng, m, k, 25, np.float32, padding=2)
    xs = _values(rng, (b, k) if n is None else (b, k, n), np.float32)
    out = jax.vmap(lambda v: native.coo_matmul(data, indices, v, m))(xs)
    np.testing.assert_allclose(np.asarray(out), np.stack([dense @ v for v in xs]), rtol=2e-5, atol=2e-5)
    # batched data (and indices) too, and a nested vmap
    ds = _values(rng, (b, data.size), np.float32)
    ds[:, np.isnan(data)] = np.nan
    out = jax.vmap(lambda d, v: native.coo_matmul(d, indices, v, m))(ds, xs)
    ok = (indices[:, 0] < m) & (indices[:, 1] < k)
    exp = []
    for d, v in zip(ds, xs):
        A = np.zeros((m, k), np.float32)
        np.add.at(A, (indices[ok, 0], indices[ok, 1]), d[ok])
        exp.append(A @ v)
    np.testing.assert_allclose(np.asarray(out), np.stack(exp), rtol=2e-5, atol=2e-5)
    out = jax.vmap(jax.vmap(lambda v: native.coo_matmul(data, indices, v, m)))(xs[None].repeat(2, 0))
    assert out.shape == (2, b, m) + xs.shape[2:]


@needs_native
def test_spmm_dispatch(monkeypatch):
    """``matmul.spmm`` tries the native kernel first for supported dtypes, not for integers or with BCOO_ARRAY_NATIVE=0."""
    calls = []
    real = native.spmm
    monkeypatch.setattr(native, "spmm", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(11)
    data, indices, dense = random_coo(rng, 6, 5, 12, np.float32, padding=1)
    x = _x(rng, 5, None, np.float32)
    np.testing.assert_allclose(np.asarray(matmul.spmm(data, jnp.asarray(indices), (6, 5), x)[0]), dense @ x, rtol=2e-5)
    assert calls == [1]
    matmul.spmm(np.arange(3, dtype=np.int32), np.array([[0, 0], [1, 1], [2, 2]], np.int32), (3, 3),
                np.ones(3, np.int32))
    matmul.spmm(data, jnp.asarray(indices), (6, 5), x.astype(np.float64))  # mixed dtypes
    assert calls == [1]
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")
    assert not native.available()
    np.testing.assert_allclose(np.asarray(matmul.spmm(data, jnp.asarray(indices), (6, 5), x)[0]), dense @ x, rtol=2e-5)
    assert calls == [1]


_PUBLIC = """
    import json, sys
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import bcoo_array as xp
    from bcoo_array import BCOOArray
    from bcoo_array._kernels import native
    rng = np.random.default_rng(2)
    out = {"native": native.available()}
    for dt in ("float32", "float64", "complex64", "complex128", "int32"):
        d = rng.standard_normal(40)
        if dt.startswith("complex"):
            d = d + 1j * rng.standard_normal(40)
        d = d.astype(dt) if dt != "int32" else rng.integers(-5, 5, 40).astype(dt)
        idx = np.stack([rng.integers(0, 11, 40), rng.integers(0, 8, 40)], 1).astype(np.int32)
        A = BCOOArray((d, idx), shape=(10, 7))          # padding (row 10, col 7) and duplicates
        x = rng.standard_normal((7, 3)).astype(dt)
        res = {
            "vec": np.asarray((A @ x[:, 0])),
            "mat": np.asarray((A @ x)),
            "jit": np.asarray(jax.jit(lambda a, v: (a @ v))(A, x)),
        }
        out[dt] = {k: [v.real.tolist(), v.imag.tolist()] for k, v in res.items()}
    json.dump(out, sys.stdout)
"""


def _public(native_env: str):
    env = dict(os.environ, BCOO_ARRAY_NATIVE=native_env, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_PUBLIC)], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_public_results_same_with_native_off():
    """``A @ x`` (vector, matrix, under jit) gives the same values with the XLA kernels (BCOO_ARRAY_NATIVE=0)."""
    off = _public("0")
    assert off.pop("native") is False
    on = _public("1")
    assert on.pop("native") is HAVE_NATIVE
    for dt, res in off.items():
        for key, (re, im) in res.items():
            tol = 1e-5 if dt in ("float32", "complex64") else 1e-12
            np.testing.assert_allclose(np.array(on[dt][key][0]), np.array(re), rtol=tol, atol=tol, err_msg=f"{dt} {key}")
            np.testing.assert_allclose(np.array(on[dt][key][1]), np.array(im), rtol=tol, atol=tol, err_msg=f"{dt} {key}")


def test_public_matmul_against_dense():
    """The public ``A @ x`` in this process (native when available) against NumPy."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((12, 9)) * (rng.random((12, 9)) < 0.3)
    A = xp.asarray(a)
    x = rng.standard_normal((9, 4))
    np.testing.assert_allclose(np.asarray((A @ x)), a @ x, rtol=1e-12)
    np.testing.assert_allclose(np.asarray((A @ x[:, 0])), a @ x[:, 0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda s, v: (s @ v))(A, x)), a @ x, rtol=1e-12)


# -- the CSR vector kernel -----------------------------------------------------------------------


def _sorted_with_padding(rng, m, k, nse, dtype, index_dtype):
    """Row-sorted COO entries (duplicates likely) with padding columns inside rows, padding rows
    (``m``) last and negative rows first: what ``native.sorted_csr`` must cope with."""
    data, indices, dense = random_coo(rng, m, k, nse, dtype, index_dtype, sort=True)
    if nse:
        indices[rng.integers(0, nse, 2), 1] = k  # padding columns in valid rows (add nothing)
        dense = np.zeros((m, k), dtype)
        ok = indices[:, 1] < k
        np.add.at(dense, (indices[ok, 0], indices[ok, 1]), data[ok])
    lead = np.array([[-1, 0]], index_dtype)
    tail = np.array([[m, k], [m, 0]], index_dtype)
    indices = np.concatenate([lead, indices, tail])
    data = np.concatenate([np.full(1, np.nan, dtype), data, np.full(2, np.nan, dtype)])
    return data, indices, dense


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("m,k,nse", [(9, 7, 30), (5, 4, 0), (1, 1, 3), (40, 3, 200)])
def test_csr_matvec_matches_dense(dtype, index_dtype, m, k, nse):
    """The CSR kernel on a structure built in the program (``sorted_csr``) and on the cached host
    structure, eagerly and under jit, equals the dense product and the COO kernel's bits."""
    rng = np.random.default_rng(m * 100 + nse)
    data, indices, dense = _sorted_with_padding(rng, m, k, nse, dtype, index_dtype)
    x = _x(rng, k, None, dtype)
    jd, ji, jx = jnp.asarray(data), jnp.asarray(indices), jnp.asarray(x)
    indptr, cols = native.sorted_csr(ji, m)
    got = native.csr_matvec(jd, ji, indptr, cols, jx, m)
    assert got.shape == (m,) and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(got), dense @ x, **_tol(dtype))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(native.coo_matmul(jd, ji, jx, m)))
    traced = jax.jit(lambda d, i, v: native.csr_matvec(d, i, *native.sorted_csr(i, m), v, m))(jd, ji, jx)
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(got))
    lead = native.csr_matvec(jd, ji, indptr, cols, jx, m, leading_axis=True)
    assert lead.shape == (1, m)


@needs_native
def test_csr_matvec_grad_vmap_and_bad_structure():
    rng = np.random.default_rng(5)
    m, k = 8, 6
    data, indices, _ = random_coo(rng, m, k, 25, np.float64, sort=True)
    ji = jnp.asarray(indices)
    indptr, cols = native.sorted_csr(ji, m)

    def loss(fn, d, v):
        return jnp.sum(jnp.sin(fn(d, v)))

    csr_f = lambda d, v: native.csr_matvec(d, ji, indptr, cols, v, m)  # noqa: E731
    xla_f = lambda d, v: native._xla_matmul(d, ji, v, m)  # noqa: E731
    x = jnp.asarray(_x(rng, k, None, np.float64))
    g = jax.grad(lambda d, v: loss(csr_f, d, v), argnums=(0, 1))(jnp.asarray(data), x)
    g0 = jax.grad(lambda d, v: loss(xla_f, d, v), argnums=(0, 1))(jnp.asarray(data), x)
    for a, b in zip(g, g0):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    xs = jnp.stack([x, 2 * x, -x])
    out = jax.vmap(lambda v: csr_f(jnp.asarray(data), v))(xs)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(xla_f(jnp.asarray(data), v)) for v in xs]),
                               rtol=1e-12, atol=1e-12)
    bad = indptr.at[3].set(indptr[5] + 1)  # decreasing: refused by the kernel, never read out of bounds
    with pytest.raises(Exception, match="non-decreasing"):
        native.csr_matvec(jnp.asarray(data), ji, bad, cols, x, m).block_until_ready()
    with pytest.raises(TypeError):
        native.csr_matvec(jnp.asarray(data), ji, indptr.astype(jnp.int64), cols, x, m)


@needs_native
def test_eager_jax_vector_and_jitted_solver_use_the_csr_kernel(monkeypatch):
    """``A @ x`` with a JAX vector (canonical A, eager) and ``linalg.cg`` under jit with A traced run the
    CSR kernel (structure cached, or built once outside the solver's loop) and agree with scipy."""
    import scipy.sparse as sp

    calls = []
    real, real_jit = native.csr_matvec, native._csr_matvec_jit
    monkeypatch.setattr(native, "csr_matvec", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    monkeypatch.setattr(native, "_csr_matvec_jit", lambda *a: calls.append(2) or real_jit(*a))  # the bound path
    n = 12
    T = sp.diags_array([-1.0, 2.5, -1.0], offsets=[-1, 0, 1], shape=(n, n))
    P = (sp.kron(sp.eye_array(n), T) + sp.kron(T, sp.eye_array(n))).tocsr()
    A = xp.from_scipy(P)
    assert A.indices_sorted
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n * n)
    for _ in range(2):  # the first call binds the kernel to A, the second reuses it
        y = A @ jnp.asarray(b)
        assert isinstance(y, jax.Array) and y.shape == (n * n,)
        np.testing.assert_allclose(np.asarray(y), P @ b, rtol=1e-13)
    assert calls == [2, 2]
    calls.clear()
    solve = jax.jit(lambda a, r: xp.linalg.cg(a, r, tol=1e-12, maxiter=500)[0])
    x = solve(A, jnp.asarray(b))
    assert calls  # traced once, with the CSR kernel in the loop
    np.testing.assert_allclose(P @ np.asarray(x), b, rtol=1e-8, atol=1e-8)
    # unsorted indices: the COO kernel, same answer
    U = BCOOArray((A.data[::-1], A.indices[::-1]), shape=A.shape)
    np.testing.assert_allclose(P @ np.asarray(solve(U, jnp.asarray(b))), b, rtol=1e-8, atol=1e-8)


@needs_native
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("n", [None, 3])
def test_native_primitive_transformations_match_the_xla_path(dtype, n, monkeypatch):
    """grad, jacfwd, jacrev, linear_transpose (both operands) and vmap (over x, over data, over both) of the
    native COO primitive equal the same transformations of the pure-XLA product, padding included."""
    rng = np.random.default_rng(11)
    m, k = 9, 6
    data, indices, dense = random_coo(rng, m, k, 30, dtype, np.int32, padding=3)
    x = _x(rng, k, n, dtype)
    d, i, v = jnp.asarray(data), jnp.asarray(indices), jnp.asarray(x)
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    nat = lambda dd, vv: native.coo_matmul(dd, i, vv, m)  # noqa: E731
    xla = lambda dd, vv: native._xla_matmul(dd, i, vv, m)  # noqa: E731
    assert "bcoo_array_coo_matmul" in jax.jit(nat).lower(d, v).as_text()

    def close(a, b):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol)

    loss = lambda f: lambda dd, vv: jnp.sum(jnp.abs(f(dd, vv)) ** 2)  # noqa: E731
    for got, want in zip(jax.grad(loss(nat), argnums=(0, 1))(d, v), jax.grad(loss(xla), argnums=(0, 1))(d, v)):
        close(got, want)
    close(jax.jit(jax.grad(loss(nat)))(d, v), jax.grad(loss(xla))(d, v))
    holo = np.dtype(dtype).kind == "c"  # the product is holomorphic in each operand
    close(jax.jacfwd(nat, argnums=1, holomorphic=holo)(d, v), jax.jacfwd(xla, argnums=1, holomorphic=holo)(d, v))
    close(jax.jacrev(nat, argnums=0, holomorphic=holo)(d, v), jax.jacrev(xla, argnums=0, holomorphic=holo)(d, v))
    ct = jnp.asarray(_x(rng, m, n, dtype))
    close(jax.linear_transpose(lambda vv: nat(d, vv), v)(ct)[0], jax.linear_transpose(lambda vv: xla(d, vv), v)(ct)[0])
    close(jax.linear_transpose(lambda dd: nat(dd, v), d)(ct)[0], jax.linear_transpose(lambda dd: xla(dd, v), d)(ct)[0])
    vs, ds = jnp.stack([v, 2 * v, -v]), jnp.stack([d, 3 * d])
    close(jax.vmap(lambda vv: nat(d, vv))(vs), jax.vmap(lambda vv: xla(d, vv))(vs))
    close(jax.vmap(lambda dd: nat(dd, v))(ds), jax.vmap(lambda dd: xla(dd, v))(ds))
    close(jax.vmap(nat)(ds, vs[:2]), jax.vmap(xla)(ds, vs[:2]))
    close(jax.vmap(jax.grad(loss(nat)))(ds, vs[:2]), jax.vmap(jax.grad(loss(xla)))(ds, vs[:2]))


@needs_native
def test_gmres_and_bicgstab_under_jit_transpose_the_native_product():
    """custom_linear_solve needs the transpose of a non-symmetric operator: the native primitive has it."""
    import jax.scipy.sparse.linalg as jla

    rng = np.random.default_rng(3)
    n = 40
    dense = np.eye(n) * 4 + np.diag(rng.standard_normal(n - 1), 1) + np.diag(rng.standard_normal(n - 1) * 0.5, -1)
    A = xp.asarray(dense)
    b = jnp.asarray(rng.standard_normal(n))
    want = np.linalg.solve(dense, np.asarray(b))
    for solver in (jla.gmres, jla.bicgstab):
        f = jax.jit(lambda a, rhs: solver(lambda v: a @ v, rhs, tol=1e-12)[0])
        assert "bcoo_array_coo_matmul" in f.lower(A, b).as_text()
        np.testing.assert_allclose(np.asarray(f(A, b)), want, rtol=1e-8)
        # the gradient of the solve runs the transposed solve
        g = jax.grad(lambda rhs: jnp.sum(solver(lambda v: A @ v, rhs, tol=1e-12)[0]))(b)
        np.testing.assert_allclose(np.asarray(g), np.linalg.solve(dense.T, np.ones(n)), rtol=1e-6)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("fills", [(0.0, 0.0), (1.5, 0.0), (0.0, -2.0)])
def test_union_of_two_patterns_first_call_fused_then_planned(native, dtype, fills, monkeypatch):
    """A + B, A - B, A * B of canonical 2-D operands: the first call on a pair merges and applies natively
    (no plan), the second builds the plan, the third reuses it; all three equal NumPy on the dense values,
    signed zeros included, on both engines and with the native kernels off."""
    import scipy.sparse as sp

    monkeypatch.setenv("BCOO_ARRAY_NATIVE", native)
    rng = np.random.default_rng(3)
    for trial in range(6):
        m, n = rng.integers(1, 25, 2)
        S = sp.random_array((m, n), density=rng.random(), random_state=rng, format="csr", dtype=dtype)
        T = sp.random_array((m, n), density=rng.random(), random_state=rng, format="csr", dtype=dtype)
        S.data[rng.random(S.nnz) < 0.3] = -0.0
        for op, ref in ((lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
                        (lambda a, b: a * b, np.multiply)):
            # fresh operands per operation: a first call on the pair for each
            A = xp.from_scipy(S) + dtype(fills[0]) if fills[0] else xp.from_scipy(S)
            B = xp.from_scipy(T) + dtype(fills[1]) if fills[1] else xp.from_scipy(T)
            want = ref(np.asarray(A.todense()), np.asarray(B.todense()))
            for call in range(3):
                got = op(A, B)
                g = np.asarray(got.todense())
                assert g.dtype == want.dtype
                np.testing.assert_array_equal(g, want)
                np.testing.assert_array_equal(np.signbit(g.real), np.signbit(want.real))
                assert got.indices_sorted and got.unique_indices


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sorted_lookup_matches_binary_search(index_dtype, monkeypatch):
    """lookup_np with a sorted query (the native galloping walk) gives the values of the raveled binary
    search, and the native kernel the positions of NumPy's: few and many queries, repeats, misses past the
    pattern's last entry, an empty pattern or query, padding after the pattern's entries."""
    from bcoo_array._kernels.union import lookup_np

    rng = np.random.default_rng(7)
    for trial in range(40):
        m, n = (int(s) for s in rng.integers(1, 40, 2))
        dense = rng.random((m, n)) < rng.random()
        idx = np.argwhere(dense).astype(index_dtype)
        pad = int(rng.integers(0, 3))
        data = rng.standard_normal(idx.shape[0] + pad)
        idx = np.concatenate([idx, np.full((pad, 2), [m, n], index_dtype)])
        q = np.argwhere(rng.random((m, n)) < rng.random()).astype(index_dtype)
        q = np.repeat(q, rng.integers(1, 3, q.shape[0]), axis=0)  # sorted, with repeats
        want = lookup_np(data, idx, q, (m, n), -1.5)
        got = lookup_np(data, idx, q, (m, n), -1.5, query_sorted=True)
        np.testing.assert_array_equal(got, want)
        pos = native.host_coo_lookup(idx, idx.shape[0] - pad, q)
        if native.available():
            keys = np.flatnonzero(dense.reshape(-1))
            qk = q[:, 0].astype(np.int64) * n + q[:, 1]
            expect = np.where(dense.reshape(-1)[qk], np.searchsorted(keys, qk), -1)
            np.testing.assert_array_equal(pos, expect)
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")
    np.testing.assert_array_equal(lookup_np(data, idx, q, (m, n), -1.5, query_sorted=True), want)


def test_coo_to_csr_matches_the_numpy_structure(monkeypatch):
    """The native CSR structure of 2-D COO indices (one pass) equals the NumPy one: row pointer, columns,
    valid count, canonical flag and dtypes; None alike for rows out of order or a valid entry after padding;
    negative and past-the-end indices count as padding."""
    from bcoo_array._kernels import csr

    rng = np.random.default_rng(11)
    seen = set()
    for trial in range(300):
        m, n = (int(s) for s in rng.integers(1, 30, 2))
        dtype = [np.int32, np.int64][trial % 2]
        if trial % 3:
            idx = np.ascontiguousarray(np.argwhere(rng.random((m, n)) < rng.random()), dtype=dtype)
            pad = int(rng.integers(0, 3))
            idx = np.concatenate([idx, np.full((pad, 2), [m, n], dtype)])
            if trial % 5 == 0 and len(idx) > 2:
                idx[[0, -1]] = idx[[-1, 0]]  # a valid entry after padding, or rows out of order
            if trial % 7 == 0 and len(idx) > 1:
                idx[-1, 1] = idx[-2, 1]  # a duplicate or a column step back: not canonical
        else:  # random rows, sorted, some out of range both ways
            nse = int(rng.integers(0, 60))
            idx = np.stack([np.sort(rng.integers(-1, m + 1, nse)), rng.integers(-1, n + 1, nse)], 1).astype(dtype)
        got = csr._csr_arrays_numpy(idx, m, n)
        monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")
        want = csr._csr_arrays_numpy(idx, m, n)
        monkeypatch.delenv("BCOO_ARRAY_NATIVE")
        assert (got is None) == (want is None)
        if got is not None:
            seen.add(got.canonical)
            np.testing.assert_array_equal(got.indptr, want.indptr)
            np.testing.assert_array_equal(got.cols, want.cols)
            assert got.indptr.dtype == want.indptr.dtype and got.cols.dtype == want.cols.dtype
            assert (got.n_valid, got.canonical) == (want.n_valid, want.canonical)
        else:
            seen.add(None)
    assert seen == {True, False, None}
