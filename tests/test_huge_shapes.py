"""Arrays with more than 2**63 positions (each dimension below 2**63): reductions, reshapes, element-wise
functions, transposes and slices work on the stored entries, with position arithmetic in exact integers; what
cannot be represented (a dimension of 2**63 or more) raises naming the limit."""

from __future__ import annotations

import numpy as np
import pytest

import bcoo_array as xp

N = 2**40
ROWS = np.array([0, 2**39, N - 1])
COLS = np.array([5, 7, N - 1])
VALS = np.array([1.0, 2.0, 3.0])


def _huge(fill=0.0, dtype=np.float64):
    return xp.BCOOArray((VALS.astype(dtype), np.stack([ROWS, COLS], 1)), shape=(N, N), fill_value=fill)


def test_reductions_count_the_unstored_positions_exactly():
    A = _huge()
    assert float(xp.sum(A)) == 6.0
    assert float(xp.max(A)) == 3.0 and float(xp.min(A)) == 0.0  # unstored zeros are in the minimum
    assert int(xp.count_nonzero(A)) == 3
    assert float(xp.mean(A)) == pytest.approx(6.0 / N**2)
    assert float(xp.prod(A)) == 0.0
    assert float(xp.sum(_huge(fill=1.0))) == pytest.approx(N**2, rel=1e-12)  # rounded, not an OverflowError
    # integers wrap modulo 2**64, exactly as NumPy's sum of that many values would
    ints = _huge(fill=3, dtype=np.int64)
    want = (3 * (N * N - 3) + 1 + 2 + 3) % 2**64
    assert int(np.asarray(xp.sum(ints).todense()).astype(np.uint64)) == want
    assert float(xp.max(_huge(fill=-1.0))) == 3.0 and float(xp.min(_huge(fill=-1.0))) == -1.0
    np.testing.assert_array_equal(np.asarray(xp.sum(A, axis=0)[np.array([5, 7])].todense()), [1.0, 2.0])


def test_reshape_transpose_slice_and_elementwise():
    A = _huge()
    B = xp.reshape(A, (2**20, 2**60))
    flat = ROWS.astype(object) * N + COLS.astype(object)
    np.testing.assert_array_equal(np.asarray(B.indices), np.stack([flat // 2**60, flat % 2**60], 1).astype(np.int64))
    C = xp.reshape(B, (N, N))
    np.testing.assert_array_equal(np.asarray(C.indices), np.stack([ROWS, COLS], 1))
    with pytest.raises(ValueError, match="2\\*\\*63"):
        xp.reshape(A, (-1,))
    T = A.T
    np.testing.assert_array_equal(np.asarray(T.indices), np.stack([COLS, ROWS], 1)[np.argsort(COLS)])
    S = A[2**39:2**39 + 5]
    assert S.shape == (5, N) and S.nse == 1
    D = A * 2.0
    np.testing.assert_array_equal(np.asarray(D.data), 2 * VALS)


# -- under jit: the same reductions, with the count of unstored positions never formed as an integer array -----

_REDUCTIONS = {
    "sum": lambda a: xp.sum(a), "prod": lambda a: xp.prod(a), "max": lambda a: xp.max(a),
    "min": lambda a: xp.min(a), "count_nonzero": lambda a: xp.count_nonzero(a), "mean": lambda a: xp.mean(a),
    "var": lambda a: xp.var(a), "sum axis 0": lambda a: xp.sum(a, axis=0)[np.array([5, 7])],
}


@pytest.mark.parametrize("name", list(_REDUCTIONS))
@pytest.mark.parametrize("fill, dtype", [(0.0, np.float64), (-1.0, np.float64), (3, np.int64), (3, np.int32),
                                         (-2, np.int16)])
def test_reductions_under_jit_agree_with_eager(name, fill, dtype):
    import jax

    if name in ("mean", "var") and np.dtype(dtype).kind != "f":
        pytest.skip("mean and var take floating-point input")
    A = _huge(fill=fill, dtype=dtype)
    f = _REDUCTIONS[name]
    if name == "count_nonzero" and fill != 0:  # 2**80 positions counted: past int64, refused either way
        for run in (f, jax.jit(lambda a: f(a).todense())):
            with pytest.raises(OverflowError, match="default index dtype"):
                run(A)
        return
    eager = np.asarray(f(A).todense())
    traced = np.asarray(jax.jit(lambda a: f(a).todense())(A))
    np.testing.assert_allclose(traced, eager, rtol=1e-6)
    assert traced.dtype == eager.dtype


def test_reshape_under_jit_runs_group_by_group_or_names_the_limit():
    import jax

    A = _huge()
    for shape in [(N, 1, N), (2, N // 2, N), (N, 2**20, 2**20)]:  # every run of dimensions fits int64
        eager = xp.reshape(A, shape)
        traced = jax.jit(lambda a, s=shape: xp.reshape(a, s))(A)
        np.testing.assert_array_equal(np.asarray(traced.indices), np.asarray(eager.indices))
    with pytest.raises(ValueError, match="position arithmetic.*outside the trace"):  # one run of 2**80 positions
        jax.jit(lambda a: xp.reshape(a, (2**20, 2**60)))(A)


def test_x64_off_reductions_and_reshape_past_int32_under_jit():
    """x64 off (JAX's default): a 2**20 x 2**20 matrix has more positions than int32 counts; reductions
    under jit agree with eager ones (count_nonzero with a non-zero fill, which would count past int32, is
    refused by both), and a reshape that needs int64 positions names x64 and the eager way."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, jax
        assert not jax.config.jax_enable_x64
        import bcoo_array as xp
        N = 2**20
        idx = np.array([[0, 5], [2**19, 7], [N - 1, N - 1]], np.int32)
        for fill, dt in [(0.0, np.float32), (2.0, np.float32), (3, np.int32), (-3, np.int8)]:
            A = xp.BCOOArray((np.array([1, 2, 3], dt), idx), shape=(N, N), fill_value=fill)
            for f in (xp.sum, xp.prod, xp.max, xp.min, xp.count_nonzero):
                if f is xp.count_nonzero and fill != 0:  # 2**40 counted positions: past int32, refused
                    for run in (f, jax.jit(lambda a: f(a).todense())):
                        try:
                            run(A)
                        except OverflowError as e:
                            assert "JAX_ENABLE_X64" in str(e), e
                        else:
                            raise AssertionError("count_nonzero: no OverflowError")
                    continue
                e = np.asarray(f(A).todense()); t = np.asarray(jax.jit(lambda a: f(a).todense())(A))
                np.testing.assert_allclose(t, e, rtol=1e-6), (f, fill)
            if np.dtype(dt).kind == "f":
                for f in (xp.mean, xp.var):
                    e = np.asarray(f(A).todense()); t = np.asarray(jax.jit(lambda a: f(a).todense())(A))
                    np.testing.assert_allclose(t, e, rtol=1e-5)
        B = jax.jit(lambda a: xp.reshape(a, (2, N // 2, N)))(A)
        np.testing.assert_array_equal(np.asarray(B.indices), np.asarray(xp.reshape(A, (2, N // 2, N)).indices))
        try:
            jax.jit(lambda a: xp.reshape(a, (2**10, 2**30)))(A)
        except ValueError as e:
            assert "JAX_ENABLE_X64" in str(e) and "outside the trace" in str(e), e
        else:
            raise AssertionError("no error")
        print("ok")
    """)
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
