"""The BCOOArray object: dense value, canonical form, conversions to Python
scalars, the sequence protocol, ``__array__``, ``repr`` and ``astype``.

Oracle: the dense NumPy array each Hypothesis case is built from.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import DTYPES, NUMERIC, assert_matches, cases, same_scalar, to_np


def _is_canonical(a: BCOOArray) -> bool:
    """Within each batch element: valid indices strictly increasing, padding after them."""
    idx = np.asarray(a.indices)
    sizes = np.asarray(a.shape[a.n_batch:a.n_batch + a.n_sparse])
    flat = idx.reshape((int(np.prod(idx.shape[:-2], dtype=np.int64)),) + idx.shape[-2:])
    for rows in flat:
        valid = np.all(rows < sizes, axis=1) if rows.shape[1] else np.ones(rows.shape[0], bool)
        nv = int(valid.sum())
        if not valid[:nv].all():
            return False
        keys = [tuple(r) for r in rows[:nv]]
        if any(k1 >= k2 for k1, k2 in zip(keys, keys[1:])):
            return False
    return True


@given(cases())
def test_todense_matches_oracle(c):
    assert_matches(c.arr, c.dense)
    assert c.arr.n_batch == c.n_batch and c.arr.n_dense == c.n_dense
    assert same_scalar(c.arr.fill_value, c.fill)


@given(cases())
def test_todense_under_jit(c):
    out = jax.jit(lambda a: a.todense())(c.arr)
    np.testing.assert_array_equal(np.asarray(out), c.dense)


@given(cases())
def test_jit_identity_keeps_metadata(c):
    out = jax.jit(lambda a: a)(c.arr)
    assert isinstance(out, BCOOArray)
    assert (out.shape, out.n_batch, out.n_dense, out.dtype) == (c.arr.shape, c.n_batch, c.n_dense, c.arr.dtype)
    assert same_scalar(out.fill_value, c.fill)
    assert_matches(out, c.dense)


@given(cases())
def test_sum_duplicates_canonical(c):
    s = c.arr.sum_duplicates()
    assert_matches(s, c.dense)
    assert s.indices_sorted and s.unique_indices
    assert _is_canonical(s)
    if s.n_sparse:
        # nse shrinks to the largest number of distinct positions (padding dropped)
        sizes = np.asarray(c.arr.shape[c.n_batch:c.n_batch + c.arr.n_sparse])
        idx = np.asarray(c.arr.indices)
        idx = idx.reshape((int(np.prod(idx.shape[:-2], dtype=np.int64)),) + idx.shape[-2:])
        counts = [len({tuple(r) for r in rows if np.all(r < sizes)}) for rows in idx]
        assert s.nse == (max(counts) if counts else 0)
    sorted_copy = c.arr.sorted_indices()
    assert sorted_copy is not c.arr
    assert_matches(sorted_copy, c.dense)
    assert _is_canonical(sorted_copy)
    assert c.arr.sort_indices() is None  # scipy's: in place
    assert_matches(c.arr, c.dense)
    assert _is_canonical(c.arr)


_SAME_VALUE = {
    "sorted_indices": lambda A: A.sorted_indices(),
    "sum_duplicates": lambda A: A.sum_duplicates(),
    "slice_all": lambda A: A[:, :],
    "ellipsis": lambda A: A[...],
    "reshape_same": lambda A: A.reshape(A.shape),
    "xp_reshape_same": lambda A: xp.reshape(A, A.shape),
    "permute_identity": lambda A: xp.permute_dims(A, (0, 1)),
    "clip_no_bounds": lambda A: xp.clip(A),
    "copy": lambda A: A.copy(),
}


@pytest.mark.parametrize("name", sorted(_SAME_VALUE))
def test_results_with_the_same_value_are_new_arrays(name):
    """Issue 29: an operation whose result equals its input returns a new array, so item assignment on
    the result leaves the input alone (scipy copies; NumPy's oracle: the untouched original)."""
    import scipy.sparse as sps

    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    A = xp.from_scipy(sps.csr_array(dense))
    B = _SAME_VALUE[name](A)
    assert B is not A
    B[0, 0] = 5.0
    B[1, 2] = 7.0
    np.testing.assert_array_equal(A.toarray(), dense)
    want = dense.copy()
    want[0, 0], want[1, 2] = 5.0, 7.0
    np.testing.assert_array_equal(B.toarray(), want)
    A[0, 1] = -1.0  # and the other way round
    np.testing.assert_array_equal(B.toarray(), want)


def test_sort_indices_sorts_in_place():
    """scipy's ``sort_indices``: sorts (and here sums duplicates) in place, returns None."""
    A = BCOOArray((np.array([3.0, 1.0, 2.0]), np.array([[1, 0], [0, 1], [1, 0]])), shape=(2, 2))
    assert A.sort_indices() is None
    assert A.indices_sorted and A.unique_indices
    np.testing.assert_array_equal(A.toarray(), [[0.0, 1.0], [5.0, 0.0]])


@given(cases(max_ndim=3))
def test_sum_duplicates_under_jit(c):
    s = jax.jit(lambda a: a.sum_duplicates())(c.arr)
    assert_matches(s, c.dense)
    assert _is_canonical(s)


@settings(max_examples=15)
@given(cases(max_ndim=3), st.integers(0, 2))
def test_fromdense_roundtrip(c, extra):
    n_sparse = c.dense.ndim - c.n_batch - c.n_dense
    a = BCOOArray.fromdense(c.dense, n_batch=c.n_batch, n_dense=c.n_dense, fill_value=c.fill)
    assert_matches(a, c.dense)
    assert _is_canonical(a)
    assert same_scalar(a.fill_value, c.fill)
    # nse is the smallest that holds every entry differing from the fill value
    d = c.dense.reshape((int(np.prod(c.dense.shape[:c.n_batch], dtype=int)),
                         int(np.prod(c.dense.shape[c.n_batch:c.n_batch + n_sparse], dtype=int)))
                        + c.dense.shape[c.n_batch + n_sparse:])
    if n_sparse and d.shape[0]:
        eq = (d == c.fill) | (np.isnan(d) & np.isnan(c.fill)) if c.dense.dtype.kind in "fc" else d == c.fill
        differs = ~eq.reshape(eq.shape[:2] + (int(np.prod(eq.shape[2:], dtype=int)),)).all(axis=2)
        assert a.nse == int(differs.sum(axis=1).max())
    # padding up to a larger nse, eagerly and under jit
    nse = a.nse + extra
    b = BCOOArray.fromdense(c.dense, nse=nse, n_batch=c.n_batch, n_dense=c.n_dense, fill_value=c.fill)
    assert b.nse == nse
    assert_matches(b, c.dense)
    f = jax.jit(lambda x: BCOOArray.fromdense(x, nse=nse, n_batch=c.n_batch, n_dense=c.n_dense, fill_value=c.fill))
    assert_matches(f(jnp.asarray(c.dense)), c.dense)


def test_fromdense_nse_errors():
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    with pytest.raises(ValueError, match="nse"):
        BCOOArray.fromdense(x, nse=1)
    with pytest.raises(ValueError, match="nse"):
        jax.jit(lambda v: BCOOArray.fromdense(v))(jnp.asarray(x))
    with pytest.raises(ValueError, match="n_batch"):
        BCOOArray.fromdense(x, n_batch=2, n_dense=1)


def test_fromdense_signed_zero_and_nan_fill():
    x = np.array([0.0, -0.0, np.nan, 1.0])
    a = BCOOArray.fromdense(x)
    assert a.nse == 3  # -0.0 differs bit-wise from the fill 0.0 and is kept
    assert np.signbit(to_np(a)[1])
    b = BCOOArray.fromdense(x, fill_value=np.nan)
    assert b.nse == 3  # NaN matches a NaN fill
    np.testing.assert_array_equal(to_np(b), x)


# -- Python scalars -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_scalar_conversions(shape):
    a = BCOOArray.fromdense(np.full(shape, 3, np.int32))
    assert int(a) == 3 and operator_index(a) == 3 and float(a) == 3.0 and complex(a) == 3 + 0j
    assert bool(a) is True
    z = xp.zeros(shape, dtype=xp.int32)
    assert bool(z) is False and int(z) == 0
    f = BCOOArray.fromdense(np.full(shape, -2.5))
    assert float(f) == -2.5 and int(f) == -2
    with pytest.raises(TypeError, match="index"):
        operator_index(f)
    c = BCOOArray.fromdense(np.full(shape, 1 + 2j))
    assert complex(c) == 1 + 2j
    with pytest.raises(TypeError):
        float(c)
    with pytest.raises(TypeError):
        int(c)
    nan = xp.full(shape, np.nan)
    with pytest.raises(ValueError):
        int(nan)
    with pytest.raises(OverflowError):
        int(xp.full(shape, np.inf))
    # the fill value counts: an array with nothing stored converts to its fill
    assert float(xp.full(shape, 7.0)) == 7.0


def operator_index(a):
    import operator

    return operator.index(a)


def test_scalar_conversion_errors():
    a = BCOOArray.fromdense(np.array([1.0, 2.0]))
    for conv in (bool, int, float, complex):
        with pytest.raises(TypeError, match="size-1"):
            conv(a)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda s: float(s))(BCOOArray.fromdense(np.array(1.0)))


@given(cases(shape=(1,), dtype=np.float64))
def test_scalar_from_messy_layout(c):
    # duplicates, padding and fill values all count in float()
    assert same_scalar(float(c.arr), c.dense.reshape(()))


# -- sequence protocol ----------------------------------------------------------------------


@settings(max_examples=10)
@given(cases(min_ndim=1, max_ndim=2))
def test_len_and_iter(c):
    assert len(c.arr) == c.dense.shape[0]
    rows = list(c.arr)
    assert len(rows) == c.dense.shape[0]
    for r, expected in zip(rows, c.dense):
        assert_matches(r, expected)


def test_len_iter_0d():
    a = BCOOArray.fromdense(np.array(1.0))
    with pytest.raises(TypeError):
        len(a)
    with pytest.raises(TypeError):
        iter(a).__next__()


# -- __array__ and repr -----------------------------------------------------------------------


def test_array_refuses_to_densify(monkeypatch):
    a = BCOOArray.fromdense(np.eye(3))
    monkeypatch.delenv("BCOO_ARRAY_AUTO_DENSIFY", raising=False)
    with pytest.raises(RuntimeError, match="BCOO_ARRAY_AUTO_DENSIFY"):
        np.asarray(a)
    monkeypatch.setenv("BCOO_ARRAY_AUTO_DENSIFY", "1")
    np.testing.assert_array_equal(np.asarray(a), np.eye(3))
    assert np.asarray(a, dtype=np.float32).dtype == np.float32


def test_repr_fields():
    a = BCOOArray((np.array([1.5, 2.0]), np.array([[0, 1], [2, 2]])), shape=(3, 4), fill_value=-1.0)
    r = repr(a)
    for part in ("shape=(3, 4)", "dtype=float64", "nse=2", "fill_value=", "-1.0", "device="):
        assert part in r, (part, r)
    assert str(a.device) in r


def test_bcoo_is_not_hashable():
    with pytest.raises(TypeError):
        hash(BCOOArray.fromdense(np.eye(2)))


# -- astype -----------------------------------------------------------------------------------


@given(cases(max_ndim=3, dtypes=tuple(d for d in DTYPES if d.kind != "c")), st.sampled_from(DTYPES))
def test_astype(c, dt):
    with np.errstate(invalid="ignore", over="ignore"):
        expected = c.dense.astype(dt)
    vals = np.append(c.dense.ravel(), c.fill)
    if c.dense.dtype.kind == "f" and dt.kind in "iu" and np.isnan(vals).any():
        return  # NaN -> int is undefined behaviour in C, NumPy and XLA alike
    if c.dense.dtype.kind in "fi" and dt.kind == "u" and (vals < 0).any():
        return  # negative float -> unsigned is undefined behaviour as well
    out = c.arr.astype(dt)
    assert_matches(out, expected)
    assert same_scalar(out.fill_value, np.asarray(c.fill).astype(dt))
    assert_matches(xp.astype(c.arr, dt), expected)


def test_astype_sums_duplicates_first():
    # 0.5 + 0.5 stored twice is 1.0; casting each half first would give 0.
    a = BCOOArray((np.array([0.5, 0.5]), np.array([[0], [0]])), shape=(2,))
    np.testing.assert_array_equal(to_np(a.astype(xp.int32)), [1, 0])


def test_astype_complex_to_real_raises():
    a = BCOOArray.fromdense(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="real"):
        a.astype(xp.float64)


@given(cases(max_ndim=2, dtypes=NUMERIC))
def test_pytree_roundtrip(c):
    leaves, tree = jax.tree_util.tree_flatten(c.arr)
    assert len(leaves) == 2
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert_matches(back, c.dense)
    assert same_scalar(back.fill_value, c.fill)


def test_nan_fill_pytree_static_equal():
    # two arrays with NaN fill must share a treedef (NaN != NaN must not break caching)
    a = xp.full((2,), np.nan)
    b = xp.full((2,), np.nan)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)


def test_array_namespace():
    a = BCOOArray.fromdense(np.eye(2))
    assert a.__array_namespace__() is xp
    with pytest.raises(ValueError, match="api_version"):
        a.__array_namespace__(api_version="1999.01")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX subprocess environment")
def test_array_env_in_subprocess():
    code = (
        "import numpy as np, bcoo_array as xp\n"
        "a = xp.asarray(np.eye(2, dtype=np.float32))\n"
        "print(np.asarray(a).sum())\n"
    )
    env = dict(os.environ, BCOO_ARRAY_AUTO_DENSIFY="1", JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.0"


def test_dlpack_follows_the_densify_rule(monkeypatch):
    # __dlpack__ refuses as __array__ does (BufferError, as the standard prescribes for sparse
    # arrays), with the same advice; the opt-in lets it export the dense values.
    import bcoo_array as xp

    dense = np.array([[1.0, 0.0, 2.0], [0.0, -3.0, 0.5]])
    A = xp.asarray(dense)
    monkeypatch.delenv("BCOO_ARRAY_AUTO_DENSIFY", raising=False)
    with pytest.raises(BufferError, match=r"would densify it; call A\.todense\(\).*BCOO_ARRAY_AUTO_DENSIFY=1"):
        np.from_dlpack(A)
    with pytest.raises(BufferError, match=r"A\.todense\(\)"):
        A.__dlpack__()
    with pytest.raises(RuntimeError) as array_err:
        np.asarray(A)
    with pytest.raises(BufferError) as dlpack_err:
        A.__dlpack__(max_version=(1, 0))
    # one rule, one advice: the messages differ only in what was attempted
    assert str(array_err.value).split(" would densify")[1] == str(dlpack_err.value).split(" would densify")[1]
    # the explicit ways still work: todense(), and bcoo_array.from_dlpack, which never calls __dlpack__
    np.testing.assert_array_equal(np.from_dlpack(A.todense()), dense)
    back = xp.from_dlpack(A)
    assert isinstance(back, xp.BCOOArray)
    np.testing.assert_array_equal(np.asarray(back.todense()), dense)
    np.testing.assert_array_equal(np.asarray(xp.from_dlpack(A, copy=True).todense()), dense)
    assert A.__dlpack_device__() == A.todense().__dlpack_device__()
    monkeypatch.setenv("BCOO_ARRAY_AUTO_DENSIFY", "1")
    np.testing.assert_array_equal(np.from_dlpack(A), dense)
    with pytest.raises(BufferError, match="copy"):
        A.__dlpack__(copy=False)


def test_a_dense_layout_result_converts_with_numpy_asarray(monkeypatch):
    # issue 29, item 10: the array-API guide says np.asarray(result) works on a result in dense layout
    # (it stores every entry, so the conversion allocates nothing it does not already hold).
    import bcoo_array as xp

    monkeypatch.delenv("BCOO_ARRAY_AUTO_DENSIFY", raising=False)
    D = np.array([[1.0, 0.0, 2.0], [0.0, -3.0, 0.5]], np.float32)
    A = xp.asarray(D)
    centred = A - xp.mean(A, axis=0)
    assert centred.n_batch + centred.n_dense == centred.ndim  # dense layout
    np.testing.assert_allclose(np.asarray(centred), D - D.mean(0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="would densify"):
        np.asarray(A)  # a sparse layout still needs the opt-in


def test_assigned_shape_reshapes_in_place():
    # ``A.shape = ...`` (NumPy's idiom, scipy's spmatrix setter) reshapes in place; it used to set the
    # attribute alone, so entries fell out of range or landed elsewhere.
    import bcoo_array as xp

    D = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -3.0]], np.float32)
    for new in ((3, 2), (6,), -1, (1, 2, 3)):
        A = xp.asarray(D)
        B = A.T  # an array on the same buffers keeps its shape
        A.shape = new
        want = D.reshape(new)
        assert A.shape == want.shape
        np.testing.assert_array_equal(A.toarray(), want)
        np.testing.assert_array_equal(B.toarray(), D.T)
    with pytest.raises(ValueError, match="reshape"):
        xp.asarray(D).shape = (4,)


def test_assigned_data_and_indices_are_copied_and_checked():
    # scipy's ``A.data = values`` then ``A.data[:] = 0``: the array held the NumPy array itself, so the
    # second write reached A's copies and transposes; a float64 array was taken with x64 off (the array's
    # dtype float64, its dense values float32); a list was kept as a list.
    import bcoo_array as xp

    D = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -3.0]], np.float32)
    A = xp.asarray(D)
    values = np.array([10.0, 20.0, 30.0], np.float32)
    A.data = values
    C, T = A.copy(), A.T
    values[:] = 0
    want = np.array([[10.0, 0.0, 20.0], [0.0, 0.0, 30.0]], np.float32)
    for X, ref in ((A, want), (C, want), (T, want.T)):
        np.testing.assert_array_equal(X.toarray(), ref)
    A.data = [1.0, 2.0, 3.0]  # Python numbers: the array's dtype
    assert A.dtype == np.float32 and A.todense().dtype == np.float32
    np.testing.assert_array_equal(A.toarray(), [[1, 0, 2], [0, 0, 3]])
    A.data = np.array([4, 5, 6], np.int32)  # a new dtype is taken, with the fill value cast to it
    assert A.dtype == np.int32 and A.fill_value.dtype == np.int32 and A.toarray().dtype == np.int32
    with pytest.raises(ValueError, match="same shape"):
        A.data = np.ones(2, np.int32)
    if not jax.config.jax_enable_x64:
        with pytest.raises(ValueError, match="64-bit"):
            A.data = np.array([0.1, 0.2, 0.3])
    B = xp.asarray(D)
    B.indices = np.array([[0, 1], [1, 0], [1, 2]])
    assert not B.indices_sorted and not B.unique_indices
    np.testing.assert_array_equal(B.toarray(), [[0, 1, 0], [2, 0, -3]])
    with pytest.raises(TypeError, match="integers"):
        B.indices = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="same shape"):
        B.indices = np.zeros((2, 2), np.int32)
    with pytest.raises(ValueError):
        B.indices = np.array([[0, 7], [1, 0], [1, 2]])  # out of range (7 > 3: not padding)


def test_python_sequences_as_operator_operands():
    # NumPy's operators take lists and tuples; ours returned NotImplemented, so Python fell back to the
    # list's repetition through __index__ (a 0-d integer array times [1, 2] gave [1, 2, 1, 2]), to an
    # identity test for == (False), or to a confusing TypeError.
    import bcoo_array as xp

    D = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -3.0]], np.float32)
    A = xp.asarray(D)
    row = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal((A * row).toarray(), D * np.float32(row))
    np.testing.assert_array_equal((row * A).toarray(), D * np.float32(row))
    np.testing.assert_array_equal((A + (1, 1, 1)).toarray(), D + 1)
    np.testing.assert_array_equal(np.asarray((A == [1.0, 0.0, 2.0]).todense()), D == [1, 0, 2])
    np.testing.assert_array_equal(A.multiply(row).toarray(), D * np.float32(row))
    np.testing.assert_array_equal(A.maximum([0.5, 0.5, 0.5]).toarray(), np.maximum(D, 0.5))
    np.testing.assert_array_equal(A.minimum([0.5, 0.5, 0.5]).toarray(), np.minimum(D, 0.5))
    two = xp.asarray(np.int32(2))
    np.testing.assert_array_equal(np.asarray((two * [1, 2]).todense()), [2, 4])
    np.testing.assert_array_equal(np.asarray(([1, 2] * two).todense()), [2, 4])
    B = xp.asarray(D)
    B *= row
    np.testing.assert_array_equal(B.toarray(), D * np.float32(row))
    assert B.dtype == np.float32  # (read in B's dtype, as NumPy's ``b *= [...]``)


def test_membership_test():
    # ``x in A`` is NumPy's (A == x).any(), unstored elements included (they hold the fill value).
    import bcoo_array as xp

    D = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -3.0]], np.float32)
    A = xp.asarray(D)
    assert 2.0 in A and -3 in A and 0.0 in A and 5.0 not in A
    F = xp.full((2, 2), 7.0)
    assert 7.0 in F and 0.0 not in F
