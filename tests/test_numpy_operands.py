"""NumPy operands on either side of a BCOOArray, in both x64 modes, and the
densification guard of the dense-by-nature functions (``fft``, ``linalg``,
``cumulative_sum`` and ``cumulative_prod``).

NumPy operands: NumPy itself is the oracle, on the dense values. A NumPy
scalar (or 0-d array) keeps its dtype as in NumPy (NEP 50); with JAX's x64
mode off the library holds no 64-bit values, so a 64-bit scalar is taken at
32 bits: the expected dtype is NumPy's, halved. The reflected form
(``np.float64(2) * A``, which NumPy sends to ``__array_ufunc__``) must give
exactly what the forward form gives. 64-bit NumPy arrays with x64 off stay
refused with ``ValueError`` for element-wise results (the documented
policy); products with a NumPy operand are NumPy results and follow NumPy's
promotion on either side.

The session runs with x64 on (``conftest.py``); the x64-off checks run the
same code in a subprocess, as ``test_dtypes.py`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, x64: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_ENABLE_X64="1" if x64 else "0", JAX_PLATFORMS="cpu")
    env.pop("BCOO_ARRAY_DOWNCAST_64BIT", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True)


def _check(code: str, x64: bool) -> None:
    """Run ``code`` (which raises on a failure) in-process when the mode matches the session, else in a subprocess."""
    if bool(jax.config.jax_enable_x64) == x64:
        exec(compile(textwrap.dedent(code), "<check>", "exec"), {})
        return
    out = _run(code, x64)
    assert out.returncode == 0, out.stdout + out.stderr


# -- NumPy scalars on either side ---------------------------------------------------------------

_SCALARS = """
import operator
import warnings
import jax
import numpy as np
import bcoo_array as xp

X64 = bool(jax.config.jax_enable_x64)
HALF = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
        np.dtype(np.uint64): np.dtype(np.uint32), np.dtype(np.complex128): np.dtype(np.complex64)}


def expected_dtype(dt):
    dt = np.dtype(dt)
    return dt if X64 else HALF.get(dt, dt)


def values(r):
    assert isinstance(r, xp.BCOOArray), type(r)
    return np.asarray(r.todense())


OPS = {"+": (operator.add, np.add, xp.add), "-": (operator.sub, np.subtract, xp.subtract),
       "*": (operator.mul, np.multiply, xp.multiply), "/": (operator.truediv, np.true_divide, xp.divide),
       "<": (operator.lt, np.less, xp.less), "<=": (operator.le, np.less_equal, xp.less_equal),
       ">": (operator.gt, np.greater, xp.greater), "==": (operator.eq, np.equal, xp.equal),
       "!=": (operator.ne, np.not_equal, xp.not_equal)}
SCALARS = [np.float64(2.5), np.int64(3), np.float32(2.5), np.int32(3), np.complex128(1 + 2j),
           np.array(2.5), np.array(3)]  # 0-d arrays: NumPy hands np.float64(2) < A over as one
failures = []
for adt in (np.float32, np.int32):
    D = np.array([[1, 0, 2], [0, 3, 0]], adt)
    A = xp.asarray(D)
    for s in SCALARS:
        for name, (op, uf, fn) in OPS.items():
            if np.iscomplexobj(s) and name in ("<", "<=", ">"):
                continue
            if name == "/" and X64 and np.dtype(adt).kind == "i" and np.asarray(s).dtype.kind == "i":
                # A known, separate difference (not about 64-bit operands): the namespace divides int32 by
                # int32 in float32 (as JAX), NumPy's loop in float64; `s / A` is NumPy's true_divide.
                continue
            with np.errstate(all="ignore"):
                ref = {"left": op(D, s), "right": op(s, D)}
            got = {}
            for side, calls in (("left", (lambda: op(A, s), lambda: uf(A, s), lambda: fn(A, s))),
                                ("right", (lambda: op(s, A), lambda: uf(s, A), lambda: fn(s, A)))):
                for k, call in enumerate(calls):
                    label = f"{adt.__name__} {name} {type(s).__name__}({s.dtype}) {side} form {k}"
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)  # s / 0
                            r = call()
                    except Exception as e:
                        failures.append(f"{label}: {type(e).__name__}: {str(e)[:120]}")
                        continue
                    want = expected_dtype(ref[side].dtype)
                    if r.dtype != want:
                        failures.append(f"{label}: dtype {r.dtype}, NumPy {ref[side].dtype} -> {want}")
                    rtol = 1e-6 if X64 else 2e-7 * 8
                    if not np.allclose(values(r), ref[side], rtol=rtol, equal_nan=True):
                        failures.append(f"{label}: values {values(r).tolist()} != {ref[side].tolist()}")
                    got.setdefault(side, []).append(r)
            # every form of a side agrees, and the reflected operator equals the forward one
            for side, rs in got.items():
                for r in rs[1:]:
                    if r.dtype != rs[0].dtype or not np.array_equal(values(r), values(rs[0]), equal_nan=True):
                        failures.append(f"{adt.__name__} {name} {s!r} {side}: forms differ")

# scipy-style code: the reflected scalar form is the forward one
n = 4
for s in (1 / np.sqrt(n), np.float64(0.5)):
    A = xp.asarray(np.array([[1.0, 0, 2], [0, 3, 0]], np.float32))
    left, right = A * s, s * A
    assert left.dtype == right.dtype == expected_dtype(np.float64), (left.dtype, right.dtype)
    assert np.array_equal(values(left), values(right))
    np.testing.assert_allclose(values(right), [[0.5, 0, 1], [0, 1.5, 0]])
assert not failures, "\\n".join(failures[:40]) + f"\\n({len(failures)} failures)"
"""


def test_numpy_scalars_either_side_x64_on():
    _check(_SCALARS, x64=True)


def test_numpy_scalars_either_side_x64_off():
    _check(_SCALARS, x64=False)


def test_x64_off_64bit_scalar_out_of_int32_range_raises_on_both_sides():
    _check("""
        import numpy as np, pytest
        import bcoo_array as xp
        A = xp.asarray(np.array([[1, 0], [0, 2]], np.int32))
        for call in (lambda: A + np.int64(2**40), lambda: np.int64(2**40) + A,
                     lambda: xp.add(np.int64(2**40), A), lambda: np.add(A, np.int64(-2**40))):
            with pytest.raises(OverflowError, match="out of bounds for int32"):
                call()
        # in range: taken at 32 bits, no error, NumPy's values
        assert (np.int64(7) + A).dtype == np.int32 == (A + np.int64(7)).dtype
        np.testing.assert_array_equal((np.int64(7) * A).todense(), [[7, 0], [0, 14]])
    """, x64=False)


def test_x64_off_64bit_float_scalar_beyond_float32_raises():
    # A float64 scalar taken as float32 with x64 off rounds (its precision is the mode's), but one beyond
    # float32's range became inf, a silent wrong answer where NumPy keeps float64 (A * np.float64(1e300)
    # gave [inf, nan, inf]); inf itself, NaN and values in range are taken as before.
    _check("""
        import numpy as np, pytest
        import bcoo_array as xp
        A = xp.asarray(np.array([[1.0, 0.0], [0.0, -2.0]], np.float32))
        for big in (np.float64(1e300), np.float64(-1e39), np.complex128(1e300j)):
            for call in (lambda: A * big, lambda: big * A, lambda: xp.multiply(A, big), lambda: np.add(A, big)):
                with pytest.raises(OverflowError, match="overflows"):
                    call()
        assert (A * np.float64(2.5)).dtype == np.float32
        np.testing.assert_array_equal((A * np.float64(2.5)).toarray(), [[2.5, 0], [0, -5]])
        np.testing.assert_array_equal((A + np.float64(np.inf)).toarray(), np.full((2, 2), np.inf, np.float32))
        assert np.isnan((A * np.float64(np.nan)).toarray()).all()
    """, x64=False)


def test_x64_off_64bit_scalars_with_ufuncs_served_on_stored_values():
    # ufuncs without a namespace function (numpy.gcd, numpy.heaviside) take NumPy scalars by the same rule
    _check("""
        import numpy as np
        import bcoo_array as xp
        D = np.array([[4, 0, 6], [0, 3, 0]], np.int32)
        I = xp.asarray(D)
        for r in (np.gcd(I, np.int64(4)), np.gcd(np.int64(4), I)):
            assert r.dtype == np.int32, r.dtype
            np.testing.assert_array_equal(r.todense(), np.gcd(D, 4))
        F = xp.asarray(D.astype(np.float32) - 3)
        for s in (np.int64(1), np.float64(0.5)):
            r = np.heaviside(F, s)
            assert r.dtype == np.float32, r.dtype
            np.testing.assert_array_equal(r.todense(), np.heaviside(D.astype(np.float32) - 3, s))
    """, x64=False)


def test_x64_off_64bit_numpy_arrays_stay_refused_for_elementwise_results():
    # The documented policy: a 64-bit NumPy array beside a BCOOArray whose result is a BCOOArray raises
    # (JAX cannot hold it), and it does so on both sides, through operators, ufuncs and the namespace.
    _check("""
        import numpy as np, pytest
        import bcoo_array as xp
        A = xp.asarray(np.array([[1.0, 0, 2], [0, 3, 0]], np.float32))
        for v in (np.ones(3), np.arange(3)):
            for call in (lambda: A * v, lambda: v * A, lambda: A + v, lambda: v + A, lambda: v < A,
                         lambda: np.multiply(v, A), lambda: xp.multiply(v, A)):
                with pytest.raises(ValueError, match="JAX_ENABLE_X64"):
                    call()
    """, x64=False)


# -- products with a NumPy operand (NumPy results, NumPy's promotion) ------------------------------

_PRODUCTS = """
import numpy as np
import bcoo_array as xp

D = np.array([[1.0, 0, 2], [0, 3, 0]], np.float32)
A = xp.asarray(D)
failures = []
operands = [np.ones(3), np.arange(3), np.ones((3, 2)), np.arange(6).reshape(3, 2), np.ones(3, np.float32)]
for v in operands:
    for label, call, ref in (
        (f"A @ {v.dtype}{v.shape}", lambda: A @ v, D @ v),
        (f"np.matmul(A, {v.dtype}{v.shape})", lambda: np.matmul(A, v), D @ v),
        (f"xp.matmul(A, {v.dtype}{v.shape})", lambda: xp.matmul(A, v), D @ v),
        (f"A.dot({v.dtype}{v.shape})", lambda: A.dot(v), D @ v),
        (f"{v.dtype}{v.T.shape} @ A.T", lambda: v.T @ A.T, v.T @ D.T),
        (f"np.matmul({v.dtype}{v.T.shape}, A.T)", lambda: np.matmul(v.T, A.T), v.T @ D.T),
        (f"xp.matmul({v.dtype}{v.T.shape}, A.T)", lambda: xp.matmul(v.T, A.T), v.T @ D.T),
    ):
        try:
            r = call()
        except Exception as e:
            failures.append(f"{label}: {type(e).__name__}: {str(e)[:100]}")
            continue
        if type(r) is not np.ndarray or r.dtype != ref.dtype or r.shape != ref.shape:
            failures.append(f"{label}: {type(r).__name__} {getattr(r, 'dtype', None)} {getattr(r, 'shape', None)}, "
                            f"NumPy {ref.dtype} {ref.shape}")
        elif not np.allclose(r, ref, rtol=1e-6):
            failures.append(f"{label}: values {r.tolist()} != {ref.tolist()}")
assert not failures, "\\n".join(failures)
"""


def test_numpy_operand_products_follow_numpy_on_either_side_x64_on():
    _check(_PRODUCTS, x64=True)


def test_numpy_operand_products_follow_numpy_on_either_side_x64_off():
    _check(_PRODUCTS, x64=False)


# -- the densification guard of fft and linalg ----------------------------------------------------

N = 40  # 40 x 40 float32: 6,400 bytes dense; the limit below is far under any dense array of it


@pytest.fixture
def small_limit():
    old = xp.set_max_dense_bytes(2_000)
    try:
        yield
    finally:
        xp.set_max_dense_bytes(old)


def _sparse(dtype=np.float32) -> BCOOArray:
    rng = np.random.default_rng(0)
    d = np.zeros((N, N), dtype)
    d[np.arange(N), rng.permutation(N)] = np.arange(1, N + 1)  # a permutation matrix: nonsingular, 2.5% stored
    return xp.asarray(d)


def _guarded_calls():
    A, C = _sparse(), _sparse(np.complex64)
    b = np.ones(N, np.float32)
    return {
        "fft.fft": lambda: xp.fft.fft(C), "fft.ifft": lambda: xp.fft.ifft(C), "fft.rfft": lambda: xp.fft.rfft(A),
        "fft.irfft": lambda: xp.fft.irfft(C), "fft.hfft": lambda: xp.fft.hfft(C), "fft.ihfft": lambda: xp.fft.ihfft(A),
        "fft.fftn": lambda: xp.fft.fftn(C), "fft.ifftn": lambda: xp.fft.ifftn(C),
        "fft.rfftn": lambda: xp.fft.rfftn(A), "fft.irfftn": lambda: xp.fft.irfftn(C, s=(4, 6)),
        "linalg.inv": lambda: xp.linalg.inv(A), "linalg.solve": lambda: xp.linalg.solve(A, b),
        "linalg.pinv": lambda: xp.linalg.pinv(A), "linalg.cholesky": lambda: xp.linalg.cholesky(A),
        "linalg.det": lambda: xp.linalg.det(A), "linalg.slogdet": lambda: xp.linalg.slogdet(A),
        "linalg.eig": lambda: xp.linalg.eig(A), "linalg.eigvals": lambda: xp.linalg.eigvals(A),
        "linalg.eigh": lambda: xp.linalg.eigh(A), "linalg.eigvalsh": lambda: xp.linalg.eigvalsh(A),
        "linalg.qr": lambda: xp.linalg.qr(A), "linalg.svd": lambda: xp.linalg.svd(A),
        "linalg.svdvals": lambda: xp.linalg.svdvals(A), "linalg.matrix_rank": lambda: xp.linalg.matrix_rank(A),
        "linalg.matrix_norm": lambda: xp.linalg.matrix_norm(A, ord=2),
        "linalg.inv (matrix_power n < 0)": lambda: xp.linalg.matrix_power(A, -1),
    }


@pytest.mark.parametrize("name", sorted(_guarded_calls()))
def test_dense_by_nature_functions_refuse_above_the_limit_before_densifying(name, small_limit, monkeypatch):
    call = _guarded_calls()[name]

    def no_densify(self, *a, **k):
        raise AssertionError("densified before the guard")

    monkeypatch.setattr(BCOOArray, "todense", no_densify)
    monkeypatch.setattr(BCOOArray, "_dense", no_densify)
    with pytest.raises(MemoryError) as info:
        call()
    msg = str(info.value)
    fn = name.split(" ")[0]
    assert msg.startswith(f"{fn}() would allocate dense arrays of shape ({N}, {N})"), msg
    for part in ("above the limit of 2,000 bytes", "bcoo_array.set_max_dense_bytes(n)",
                 "BCOO_ARRAY_MAX_DENSE_BYTES=n", "todense()"):
        assert part in msg, (part, msg)


def test_guarded_functions_still_compute_within_the_limit():
    A = _sparse()
    D = np.asarray(A.todense())
    np.testing.assert_allclose(np.asarray(xp.linalg.inv(A).todense()), np.linalg.inv(D), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(A, np.ones(N, np.float32)).todense()),
                               np.linalg.solve(D, np.ones(N)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xp.fft.rfft(A).todense()), np.fft.rfft(D), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(xp.fft.irfftn(xp.astype(A, xp.complex64), s=(4, 6), axes=(0, 1)).todense()),
                               np.fft.irfftn(D, s=(4, 6), axes=(0, 1)), rtol=1e-4, atol=1e-4)


def test_guard_reads_static_shapes_under_jit(small_limit):
    with pytest.raises(MemoryError, match=r"linalg\.inv\(\)"):
        jax.jit(xp.linalg.inv)(_sparse())
    with pytest.raises(MemoryError, match=r"fft\.rfft\(\)"):
        jax.jit(xp.fft.rfft)(_sparse())


def test_dense_input_is_not_checked(small_limit):
    # An input already dense (a NumPy array, or a BCOOArray in dense layout) costs what it stores.
    d = np.eye(N, dtype=np.float32) * 2
    F = xp.fft.fft(d.astype(np.complex64))
    assert F.shape == (N, N)
    np.testing.assert_allclose(np.asarray(xp.linalg.inv(d).todense()), np.eye(N) / 2)
    np.testing.assert_allclose(np.asarray(xp.fft.ifft(F).todense()), d, atol=1e-5)  # F is in dense layout


def test_guard_message_names_each_shape_of_a_transform():
    old = xp.set_max_dense_bytes(2_000)
    try:
        with pytest.raises(MemoryError) as info:
            xp.fft.rfft(_sparse(), n=10)
    finally:
        xp.set_max_dense_bytes(old)
    msg = str(info.value)
    assert f"shape ({N}, {N}) and dtype float32, and of shape ({N}, 6) and dtype complex64" in msg, msg
    assert "jax.numpy.fft.rfft(x.todense(), n=10, axis=1, norm='backward')" in msg, msg


@pytest.mark.parametrize("fn", [xp.cumulative_sum, xp.cumulative_prod, np.cumsum, np.cumprod])
def test_cumulative_functions_refuse_above_the_limit(fn, small_limit):
    try:
        fn(_sparse(), axis=0)
    except MemoryError as e:
        assert "set_max_dense_bytes" in str(e)
    else:
        raise AssertionError("densified without the guard")
