"""dtypes: the 64-bit policy (x64 off gives a ValueError that says how to turn
it on, never a silent downcast), promotion of sparse operands, index dtypes
and bool preservation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import assert_matches, to_np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_x64_off(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True)


def test_x64_off_refuses_64_bit_dtypes():
    """With x64 off every way of asking for a 64-bit dtype raises a ValueError naming the fix."""
    code = """
        import jax, numpy as np
        assert not jax.config.jax_enable_x64
        import bcoo_array as xp
        from bcoo_array import BCOOArray
        cases = {
            "asarray float64": lambda: xp.asarray(np.ones(3)),
            "asarray dtype=int64": lambda: xp.asarray([1, 2], dtype=xp.int64),
            "constructor float64 data": lambda: BCOOArray((np.ones(1), np.array([[0]])), shape=(2,)),
            "constructor dtype=": lambda: BCOOArray((np.ones(1, np.float32), np.array([[0]])), shape=(2,), dtype=np.complex128),
            "zeros": lambda: xp.zeros((2,), dtype=xp.float64),
            "astype": lambda: xp.asarray(np.ones(2, np.float32)).astype(xp.float64),
            "huge dimension": lambda: BCOOArray((np.ones(1, np.float32), (np.array([0]), np.array([0]))), shape=(3_000_000_000, 2)),
        }
        for name, fn in cases.items():
            try:
                fn()
            except ValueError as e:
                msg = str(e)
                assert "jax_enable_x64" in msg or "JAX_ENABLE_X64" in msg, (name, msg)
            else:
                raise AssertionError(name + ": no ValueError")
        # 32-bit work is unaffected, and defaults are 32-bit
        a = xp.asarray([[1.0, 0.0], [0.0, 2.0]])
        assert a.dtype == np.float32 and a.indices.dtype == np.int32
        assert xp.asarray([1, 2]).dtype == np.int32
        assert float(xp.sum(a)) == 3.0
        # constructors without a dtype follow default_dtypes(), as scipy-style ones must too
        assert xp.random_array((4, 5), density=0.5, rng=0).dtype == np.float32
        assert xp.random_array((4, 5), density=0.5, rng=0, dtype=xp.int32).dtype == np.int32
        print("ok")
    """
    out = _run_x64_off(code)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_x64_off_float32_matrix_times_float64_numpy_is_float64():
    """scipy's float32 @ float64 is float64: with x64 off the NumPy result is computed on the host in
    float64 (``@``, ``dot``, ``matvec``, ``matmat``, scipy's ``cg``), never rounded to float32; where
    the product would need a 64-bit JAX array the error names the fix."""
    code = """
        import jax, numpy as np, scipy.sparse as sp, scipy.sparse.linalg as spla
        import bcoo_array as xp
        assert not jax.config.jax_enable_x64
        S = sp.random_array((30, 20), density=0.3, rng=1, format="csr", dtype=np.float32)
        A = xp.from_scipy(S)
        v = np.linspace(1, 2, 20) + 1e-9  # the 1e-9 does not survive a float32 rounding
        want = S.astype(np.float64) @ v
        for name, got in [("@", A @ v), ("dot", A.dot(v)), ("matvec", A.matvec(v)),
                          ("matmat", A.matmat(v[:, None])[:, 0]), ("@ 2-D", (A @ np.stack([v, v], 1))[:, 1]),
                          ("complex128", (A @ (v + 0j)).real)]:
            assert got.dtype in (np.float64, np.complex128), (name, got.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
        P = xp.from_scipy((S @ S.T + 30 * sp.eye_array(30)).astype(np.float32).tocsr())
        x, info = spla.cg(P, np.ones(30), rtol=1e-10)
        assert info == 0 and x.dtype == np.float64
        np.testing.assert_allclose(P.astype(xp.float32).to_scipy().astype(np.float64) @ x, np.ones(30), rtol=1e-8)
        u = np.linspace(1, 2, 30) + 1e-9
        for name, got in [("v @ A", u @ A), ("np.matmul(v, A)", np.matmul(u, A)), ("xp.matmul(v, A)", xp.matmul(u, A))]:
            assert got.dtype == np.float64, (name, got.dtype)
            np.testing.assert_allclose(got, u @ S.astype(np.float64), rtol=1e-12, err_msg=name)
        for name, got, want in [("rmatvec", A.rmatvec(u), S.T.astype(np.float64) @ u),
                                ("rmatmat", A.rmatmat(np.stack([u, 2 * u], 1)),
                                 S.T.astype(np.float64) @ np.stack([u, 2 * u], 1)),
                                ("rmatvec complex", A.rmatvec(u + 1j * u), S.T.astype(np.float64) @ (u + 1j * u))]:
            assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
        r = spla.lsqr(A, np.ones(30), atol=1e-12, btol=1e-12)[0]  # rmatvec of float64 vectors
        np.testing.assert_allclose(r, spla.lsqr(S.astype(np.float64), np.ones(30), atol=1e-12, btol=1e-12)[0],
                                   rtol=1e-6)
        print("ok")
    """
    out = _run_x64_off(code)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_x64_on_defaults():
    assert xp.asarray([1.5]).dtype == np.float64
    assert xp.asarray([1]).dtype == np.int64
    assert xp.asarray([1j]).dtype == np.complex128


@pytest.mark.parametrize(
    "d1, d2, expected",
    [
        (np.int8, np.uint8, np.int16),
        (np.int32, np.int64, np.int64),
        (np.float32, np.float64, np.float64),
        (np.float32, np.complex64, np.complex64),
        (np.float64, np.complex64, np.complex128),
        (np.uint8, np.uint16, np.uint16),
        (np.bool_, np.bool_, np.bool_),
    ],
)
def test_promotion_of_sparse_operands(d1, d2, expected):
    a = BCOOArray.fromdense(np.array([[1, 0], [0, 1]], dtype=d1))
    b = BCOOArray.fromdense(np.array([[0, 1], [1, 1]], dtype=d2))
    out = xp.add(a, b) if np.dtype(expected) != np.bool_ else xp.logical_or(a, b)
    assert out.dtype == expected
    assert xp.result_type(a, b) == expected
    assert xp.multiply(a, np.array([[1, 1], [1, 1]], dtype=d2)).dtype == expected if expected != np.bool_ else True


def test_bool_with_number_raises():
    a = BCOOArray.fromdense(np.array([True, False]))
    b = BCOOArray.fromdense(np.array([1, 0], np.int32))
    with pytest.raises(TypeError):
        xp.add(a, b)
    with pytest.raises(TypeError, match="promotion"):
        xp.equal(a, b)


def test_python_scalars_keep_array_dtype():
    a = BCOOArray.fromdense(np.array([1.0, 0.0], np.float32))
    assert (a + 1).dtype == np.float32
    assert (a * 2.5).dtype == np.float32
    i = BCOOArray.fromdense(np.array([1, 0], np.int8))
    assert (i + 1).dtype == np.int8
    with pytest.raises(OverflowError):
        i + 1000
    u = BCOOArray.fromdense(np.array([1, 0], np.uint8))
    assert (u * 3).dtype == np.uint8


def test_fill_value_is_cast_exactly():
    a = BCOOArray((np.array([1], np.int16), np.array([[0]])), shape=(2,), fill_value=7)
    assert a.fill_value.dtype == np.int16 and a.fill_value == 7
    with pytest.raises(ValueError, match="fill_value"):
        BCOOArray((np.array([1], np.int8), np.array([[0]])), shape=(2,), fill_value=300)
    with pytest.raises(ValueError, match="fill_value"):
        BCOOArray((np.array([1.0]), np.array([[0]])), shape=(2,), fill_value=1j)
    b = BCOOArray((np.array([True]), np.array([[0]])), shape=(2,), fill_value=True)
    assert b.fill_value.dtype == np.bool_
    assert_matches(b, np.array([True, True]))


def test_index_dtypes():
    small = BCOOArray((np.ones(1), (np.array([0]), np.array([0]))), shape=(2**31 - 1, 2))
    assert small.indices.dtype == np.int32  # the padding value 2**31 - 1 still fits
    big = BCOOArray((np.ones(1), (np.array([0]), np.array([0]))), shape=(2**31, 2))
    assert big.indices.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.float16, np.float32, np.complex64, np.bool_])
def test_dtype_survives_ops(dtype):
    d = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    a = BCOOArray.fromdense(d)
    assert a.dtype == dtype
    assert a.sum_duplicates().dtype == dtype
    assert a.T.dtype == dtype
    assert a[0].dtype == dtype
    assert xp.reshape(a, (3, 2)).dtype == dtype
    assert to_np(a).dtype == dtype
    if np.dtype(dtype).kind != "b":
        assert xp.max(a).dtype == dtype if np.dtype(dtype).kind != "c" else True
        assert (a * a).dtype == dtype


_X64_OFF_DOWNCAST = r"""
import warnings
import numpy as np
import jax
import bcoo_array as xp
assert not jax.config.jax_enable_x64
A = xp.asarray(np.eye(4, dtype=np.float32))
calls = {
    "A * v": lambda: A * np.ones(4),
    "A.multiply": lambda: A.multiply(np.ones((4, 1))),
    "A + D": lambda: A + np.eye(4),
    "xp.add": lambda: xp.add(A, np.ones(4)),
    "np.add": lambda: np.add(A, np.ones(4)),
    "asarray": lambda: xp.asarray(np.ones(4)),
    "asarray dtype": lambda: xp.asarray(np.ones(4, np.float32), dtype=np.float64),
    "asarray int64": lambda: xp.asarray(np.arange(3)),
}
for name, call in calls.items():  # refused by default, naming the opt-in
    try:
        call()
    except ValueError as e:
        assert "set_downcast_64bit" in str(e), (name, str(e))
    else:
        raise AssertionError(name + " was not refused")
assert (A @ np.ones(4)).dtype == np.float64  # a NumPy result: NumPy's promotion
assert xp.set_downcast_64bit(True) is False
for name, call in calls.items():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = call()
    assert r.dtype in (np.float32, np.int32), (name, r.dtype)
    assert any(issubclass(w.category, xp.DowncastWarning) for w in rec), name
np.testing.assert_array_equal(np.asarray((A + np.eye(4)).todense()), 2 * np.eye(4))
assert xp.set_downcast_64bit(None) is True
print("ok")
"""


def test_x64_off_rule_and_downcast_opt_in():
    """With x64 off: 64-bit NumPy operands are refused wherever the result is a BCOOArray (naming the opt-in),
    NumPy results follow NumPy; the opt-in takes them as 32-bit with a DowncastWarning."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64", "BCOO_ARRAY_DOWNCAST_64BIT")}
    out = subprocess.run([sys.executable, "-c", _X64_OFF_DOWNCAST], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_x64_off_counts_and_positions_past_int32_refuse_or_stay_exact():
    """With x64 off the default index dtype is int32: a count or first-occurrence position past its range
    (an array of 10^10 elements storing three) raises an OverflowError naming the fix instead of wrapping
    around; scipy's count_nonzero (a Python int) stays exact; arange refuses values past int32."""
    code = """
        import jax, numpy as np
        assert not jax.config.jax_enable_x64
        import bcoo_array as xp
        n = 100_000
        A = xp.coo_array((np.array([1., 5., 2.], np.float32), (np.array([0, 99_999, 50_000], np.int32),
                          np.array([1, 99_999, 3], np.int32))), shape=(n, n))
        assert (A + 1).count_nonzero() == 10**10 and isinstance((A + 1).count_nonzero(), int)
        assert A.count_nonzero() == 3 and int(xp.count_nonzero(A).todense()) == 3  # fill 0: at most nse
        assert (A == 0).nnz == 10**10 - 3
        cases = {
            "count_nonzero": lambda: xp.count_nonzero(A == 0),
            "unique_counts": lambda: xp.unique_counts(A),
            "unique_all": lambda: xp.unique_all(A),
            "np.unique": lambda: np.unique(A, return_index=True, equal_nan=False),
            "arange": lambda: xp.arange(2**31 - 2, 2**31 + 1),
            "arange step": lambda: xp.arange(0, 2**32, 2**30),
            "arange down": lambda: xp.arange(-2**31 + 1, -2**31 - 2, -1),
        }
        for name, fn in cases.items():
            try:
                fn()
            except OverflowError as e:
                assert "JAX_ENABLE_X64" in str(e), (name, str(e))
            else:
                raise AssertionError(name + ": no OverflowError")
        assert xp.arange(2**31 - 3, 2**31 - 1).todense().tolist() == [2**31 - 3, 2**31 - 2]
        assert xp.arange(-2**31, -2**31 + 2).todense().tolist() == [-2**31, -2**31 + 1]
        print("ok")
    """
    out = _run_x64_off(code)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
