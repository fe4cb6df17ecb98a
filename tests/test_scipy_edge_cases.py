"""Edge cases of the scipy.sparse surface and the converters, each against
scipy.sparse (sparray semantics) or NumPy as the oracle:

- conversions hand out buffers of their own (writing to a result never
  changes the source array or its copies, which share its buffers);
- ``A.power(n)`` powers the stored entries only, as scipy's ``power``;
- ``csr_array((data, indices, indptr))`` and ``from_scipy`` of a malformed
  compressed or COO structure raise a ValueError instead of dropping entries;
- ``sum`` / ``mean`` / ``max`` / ``min`` / ``argmax`` / ``argmin`` take tuples
  of axes, and reductions of arrays with a zero-length dimension follow scipy;
- ``A @ list`` and ``list @ A`` as scipy's.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import bcoo_array as xp

D = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], np.float32)


def _layouts():
    """``(name, maker)``: the same values in several BCOO layouts (canonical or not, batch, dense)."""
    def duplicates():  # two stored halves of each value, not canonical
        r, c = np.nonzero(D)
        v = D[r, c] / 2
        return xp.coo_array((np.concatenate([v, v]), (np.concatenate([r, r]), np.concatenate([c, c]))),
                            shape=D.shape)

    return [
        ("canonical", lambda: xp.asarray(D)),
        ("duplicates", duplicates),
        ("batch", lambda: xp.update_layout(xp.asarray(D), 1, 0)),
        ("dense", lambda: xp.update_layout(xp.asarray(D), 0, 1)),
    ]


def _writable_buffers(res):
    """Every NumPy buffer a conversion's result holds that a user could write to."""
    if isinstance(res, np.ndarray):
        return [res]
    if sp.issparse(res):
        if res.format == "coo":
            return [res.data, *res.coords]
        if res.format in ("csr", "csc", "bsr"):
            return [res.data, res.indices, res.indptr]
        if res.format == "dia":
            return [res.data, res.offsets]
        return []  # dok / lil hold Python containers of their own
    if isinstance(res, sparse.COO):
        return [res.data, res.coords]
    if isinstance(res, sparse.GCXS):
        return [res.data, res.indices, res.indptr]
    if isinstance(res, jax.Array):
        return [np.asarray(res)]
    return [np.asarray(res.data), np.asarray(res.indices)]  # jax.experimental.sparse


CONVERSIONS = {
    "to_pydata_sparse": lambda A: A.to_pydata_sparse(),
    "to_pydata_sparse_gcxs": lambda A: A.to_pydata_sparse("gcxs"),
    "to_scipy": lambda A: A.to_scipy(),
    "tocoo": lambda A: A.tocoo(),
    "tocsr": lambda A: A.tocsr(),
    "tocsc": lambda A: A.tocsc(),
    "tobsr": lambda A: A.tobsr(),
    "todia": lambda A: A.todia(),
    "toarray": lambda A: A.toarray(),
    "todense": lambda A: A.todense(),
    "to_jax_sparse": lambda A: A.to_jax_sparse(),
    "to_jax_sparse_bcsr": lambda A: A.to_jax_sparse("bcsr" if A.n_sparse == 2 else "bcoo"),
    "diagonal": lambda A: A.diagonal(),
    "find": lambda A: xp.find(A)[2],
}


@pytest.mark.parametrize("layout", [name for name, _ in _layouts()])
@pytest.mark.parametrize("conv", sorted(CONVERSIONS))
def test_conversion_results_do_not_alias_the_array(conv, layout):
    make = dict(_layouts())[layout]
    A = make()
    C = A.copy()  # shares A's buffers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        res = CONVERSIONS[conv](A)
    wrote = 0
    for buf in _writable_buffers(res):
        if buf.flags.writeable:
            buf[...] = 7
            wrote += 1
    if conv.startswith(("to_pydata", "to_scipy", "toc", "tob", "toarray", "diagonal", "find")):
        assert wrote, f"{conv} should give writable NumPy buffers, as scipy / pydata-sparse do"
    np.testing.assert_array_equal(A.toarray(), D)
    np.testing.assert_array_equal(C.toarray(), D)


def test_pydata_sparse_buffers_are_fresh_and_writable():
    A = xp.asarray(D)
    for fmt in ("coo", "gcxs", "dok"):
        P = A.to_pydata_sparse(fmt)
        if fmt == "coo":
            assert P.data.flags.writeable and P.coords.flags.writeable
            P.data[:] = 7
        elif fmt == "gcxs":
            P.data[:] = 7
        else:
            P[0, 0] = 7
        np.testing.assert_array_equal(A.toarray(), D)


def test_3d_pydata_sparse_does_not_alias():
    d = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5
    A = xp.asarray(d)
    P = A.to_pydata_sparse()
    P.data[:] = -1
    np.testing.assert_array_equal(A.toarray(), d)


def test_from_conversions_do_not_alias_the_source():
    S = sp.csr_array(D)
    A = xp.from_scipy(S)
    S.data[:] = 7
    S.indices[:] = 0
    np.testing.assert_array_equal(A.toarray(), D)
    P = sparse.COO.from_numpy(D)
    B = xp.from_pydata_sparse(P)
    P.data[:] = 7
    np.testing.assert_array_equal(B.toarray(), D)


# -- power ---------------------------------------------------------------------------------


def _messy_scipy():
    """Duplicates (summed before the power, as scipy does), an explicit zero and negative values."""
    rows = np.array([0, 0, 1, 1, 2, 2])
    cols = np.array([0, 0, 1, 3, 2, 0])
    vals = np.array([1.0, 1.0, 0.0, -2.0, 4.0, 0.5], np.float32)
    return sp.coo_array((vals, (rows, cols)), shape=(4, 5))


@pytest.mark.parametrize("n", [-1, -2, 2, 3, 0.5, -0.5, 2.5, np.float32(-1.5), float("nan")])
def test_power_matches_scipy(n):
    S = _messy_scipy()
    A = xp.from_scipy(S)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = S.power(n)
    res = A.power(n)
    assert res.fill_value == 0 and not np.signbit(res.fill_value)
    np.testing.assert_array_equal(res.toarray(), ref.toarray())  # NaN where scipy has NaN
    assert res.dtype == ref.dtype
    ref.sum_duplicates()
    assert res.nnz == ref.nnz  # the pattern: the stored entries, explicit zero included


def test_power_negative_exponent_sum_as_reviewer():
    S = sp.csr_array([[2, 0, 1], [0, 3, 0]], dtype=np.float32)
    A = xp.from_scipy(S)
    np.testing.assert_allclose(A.power(-1).sum(), S.power(-1).sum(), rtol=1e-6)
    assert np.isfinite(A.power(-1).sum())


def test_power_operator_keeps_array_api_meaning():
    A = xp.from_scipy(sp.csr_array(D))
    B = A ** -1
    assert B.fill_value == np.inf
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(B.toarray(), D ** -1)
    np.testing.assert_array_equal(xp.pow(A, -1).toarray(), B.toarray())


def test_power_dtype_and_layouts():
    S = sp.csr_array(D)
    for name, make in _layouts():
        A = make()  # the dense layout stores its zeros: 1 / 0 = inf there, in both
        with np.errstate(divide="ignore"):
            ref = A.to_scipy().power(-1).toarray()
        np.testing.assert_array_equal(A.power(-1).toarray(), ref, err_msg=name)
    np.testing.assert_array_equal(xp.asarray(D).power(-1, dtype=np.float64).toarray(),
                                  S.power(-1, dtype=np.float64).toarray())
    assert xp.asarray(D).power(-1, dtype=np.float64).dtype == np.float64


def test_power_non_zero_fill_powers_every_entry():
    # unstored entries of a non-zero fill hold that value (not structural zeros): fill ** n, as A ** n
    d = np.array([[2.0, 4.0, 2.0], [0.5, 2.0, 2.0]], np.float32)
    A = xp.BCOOArray.fromdense(d, fill_value=2.0)  # the entries other than 2 stored
    assert A.fill_value == 2.0 and A.nse == 2 and A.nnz == 6  # nnz: the non-zero elements, as scipy
    for n in (-1, 2, 0.5, 0):
        res = A.power(n)
        np.testing.assert_allclose(res.toarray(), d ** n, rtol=1e-6)
        assert res.fill_value == np.float32(2.0) ** n
    neg = xp.full((2, 2), -0.0, dtype=xp.float32)  # -0.0 is a value: (-0.0) ** -1 = -inf
    assert neg.power(-1).fill_value == -np.inf


def test_power_under_jit_and_errors():
    S = sp.csr_array(D)
    A = xp.from_scipy(S)
    got = jax.jit(lambda a: a.power(-1))(A)  # a Python scalar exponent is static
    assert got.fill_value == 0
    np.testing.assert_allclose(got.toarray(), S.power(-1).toarray(), rtol=1e-6)
    with pytest.raises(ValueError, match="traced"):
        jax.jit(lambda a, n: a.power(n))(A, -1.0)
    with pytest.raises(NotImplementedError):
        A.power(0)
    with pytest.raises(TypeError, match="negative integer"):
        xp.asarray(np.array([[1, 0], [0, 2]], np.int32)).power(-1)


def test_power_array_exponent_keeps_the_stored_positions():
    A = xp.from_scipy(sp.csr_array(D))
    n = np.array([-1.0, 2.0, -1.0], np.float32)
    res = A.power(n)
    with np.errstate(divide="ignore"):
        full = D ** n
    np.testing.assert_array_equal(res.toarray(), np.where(D != 0, full, 0))
    assert res.fill_value == 0


# -- csr_array / from_scipy validation ----------------------------------------------------------


DATA = np.array([1.0, 7.0], np.float32)


@pytest.mark.parametrize("bad", [5, 2, -1])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_compressed_constructor_rejects_out_of_range_indices(fmt, bad):
    ctor = getattr(xp, f"{fmt}_array")
    with pytest.raises(ValueError, match=r"indices\[1\] = -?\d+ is not a (column|row) index") as info:
        ctor((DATA, np.array([0, bad]), np.array([0, 1, 2])), shape=(2, 2))
    msg = str(info.value)
    assert f"{fmt}_array(" in msg and "shape" in msg and ("column" if fmt == "csr" else "row") in msg


def test_compressed_constructor_rejects_a_decreasing_indptr():
    with pytest.raises(ValueError, match="indptr must not decrease"):
        xp.csr_array((DATA, np.array([0, 1]), np.array([0, 2, 1])), shape=(2, 2))


def test_compressed_constructor_valid_input_matches_scipy():
    rng = np.random.default_rng(1)
    S = sp.random_array((30, 20), density=0.2, format="csr", rng=rng, dtype=np.float32)
    for fmt in ("csr", "csc"):
        M = S.asformat(fmt)
        A = getattr(xp, f"{fmt}_array")((M.data, M.indices, M.indptr), shape=M.shape)
        np.testing.assert_array_equal(A.toarray(), S.toarray())
    # indptr[-1] below the number of values: scipy keeps the first indptr[-1] (prune); so does csr_array
    args = (DATA, np.array([1, 0]), np.array([0, 1, 1]))
    np.testing.assert_array_equal(xp.csr_array(args, shape=(2, 2)).toarray(),
                                  sp.csr_array(args, shape=(2, 2)).toarray())


def _mutated(fmt, what):
    M = getattr(sp, f"{fmt}_array")((DATA, np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    if what == "index":
        M.indices[1] = 5
    elif what == "negative":
        M.indices[1] = -3
    elif what == "indptr":
        M.indptr[1] = 3
    elif what == "indptr_end":
        M.indptr[2] = 3
    return M


@pytest.mark.parametrize("drop_zeros", [False, True])
@pytest.mark.parametrize("what", ["index", "negative", "indptr", "indptr_end"])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_from_scipy_rejects_malformed_compressed(fmt, what, drop_zeros):
    M = _mutated(fmt, what)
    with pytest.raises(ValueError, match=r"from_scipy\(\): mat\.ind(ices|ptr)") as info:
        xp.from_scipy(M, drop_zeros=drop_zeros)
    assert "malformed" in str(info.value)


def test_from_scipy_rejects_malformed_coo():
    for k, bad in ((0, 2), (1, 5), (0, -1)):
        M = sp.coo_array((DATA, (np.array([0, 1]), np.array([0, 1]))), shape=(2, 2))
        M.coords[k][1] = bad
        with pytest.raises(ValueError, match=rf"mat\.coords\[{k}\]\[1\] = {bad} is outside dimension {k}"):
            xp.from_scipy(M)


def test_from_scipy_valid_inputs_still_convert():
    rng = np.random.default_rng(2)
    S = sp.random_array((40, 25), density=0.15, format="csr", rng=rng, dtype=np.float32)
    for fmt in ("csr", "csc", "coo", "bsr", "dia", "dok", "lil"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
            M = S.asformat(fmt)
        np.testing.assert_array_equal(xp.from_scipy(M).toarray(), S.toarray(), err_msg=fmt)
    # other index dtypes and byte orders, and the pruned tail past indptr[-1] (scipy ignores it)
    big = sp.csr_array((S.data, S.indices.astype(">i4"), S.indptr.astype(np.int64)), shape=S.shape)
    np.testing.assert_array_equal(xp.from_scipy(big).toarray(), S.toarray())
    small = sp.csr_array((S.data, S.indices.astype(np.int16), S.indptr.astype(np.int16)), shape=S.shape)
    np.testing.assert_array_equal(xp.from_scipy(small).toarray(), S.toarray())
    T = sp.csr_array((DATA, np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    T.indptr[2] = 1  # the second entry is no longer part of the matrix
    np.testing.assert_array_equal(xp.from_scipy(T).toarray(), T.toarray())
    np.testing.assert_array_equal(xp.from_scipy(sp.csr_array((3, 4), dtype=np.float32)).toarray(),
                                  np.zeros((3, 4), np.float32))


# -- reductions with tuple axes and zero-length dimensions ----------------------------------


def _pair(dtype=np.float32):
    d = np.array([[2, 0, 1], [0, 3, 0], [-1, 0, 0]], dtype)
    return sp.csr_array(d), xp.asarray(d)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (0,), (1,), (-1,), (-2, -1), 0, -1, None])
def test_sum_and_mean_accept_tuples_of_axes(axis, dtype):
    S, A = _pair(dtype)
    for meth in ("sum", "mean"):
        got, ref = getattr(A, meth)(axis=axis), getattr(S, meth)(axis=axis)
        assert np.ndim(got) == np.ndim(ref), meth
        np.testing.assert_allclose(got, ref, rtol=1e-6, err_msg=meth)
        assert np.asarray(got).dtype.kind == np.asarray(ref).dtype.kind, meth


@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (0,), (1,), (-1,)])
def test_extremes_accept_tuples_of_axes(axis):
    S, A = _pair()
    for meth in ("max", "min"):
        got, ref = getattr(A, meth)(axis=axis), getattr(S, meth)(axis=axis)
        got = got.toarray() if isinstance(got, xp.BCOOArray) else got
        ref = ref.toarray() if sp.issparse(ref) else ref
        assert np.ndim(got) == np.ndim(ref), meth
        np.testing.assert_array_equal(got, ref, err_msg=meth)
    for meth in ("argmax", "argmin"):
        np.testing.assert_array_equal(getattr(A, meth)(axis=axis), getattr(S, meth)(axis=axis), err_msg=meth)


def test_one_dimensional_extremes_give_scalars_as_scipy():
    d = np.array([2.0, 0.0, -1.0], np.float32)
    S, A = sp.coo_array(d), xp.asarray(d)
    for meth in ("max", "min"):
        for axis in (0, (0,), -1, None):
            got = getattr(A, meth)(axis=axis)
            assert np.ndim(got) == 0 and not isinstance(got, xp.BCOOArray)
            assert got == getattr(S, meth)(axis=axis)


@pytest.mark.parametrize("axis, exc", [((), ValueError), ((0, 0), ValueError), ((0, -2), ValueError),
                                       ((2,), ValueError), (2, ValueError), ([0], TypeError),
                                       ((0.0,), TypeError)])
def test_bad_axes_raise_as_scipy(axis, exc):
    S, A = _pair()
    for meth in ("sum", "mean", "max", "min", "argmax"):
        # scipy refuses each too; for (0.0,) with ValueError ("inexact indices"), where NumPy (and this
        # library) raise TypeError for a non-integer axis
        with pytest.raises(ValueError if axis == (0.0,) else exc):
            getattr(S, meth)(axis=axis)
        with pytest.raises(exc, match=rf"{meth}\(\): axis"):
            getattr(A, meth)(axis=axis)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0)])
@pytest.mark.parametrize("axis", [None, 0, 1, (0,), (1,), (0, 1)])
@pytest.mark.parametrize("meth", ["max", "min", "argmax", "argmin", "sum"])
def test_zero_length_dimensions_follow_scipy(meth, axis, shape):
    S = sp.csr_array(shape, dtype=np.float32)
    A = xp.zeros(shape, dtype=xp.float32)
    try:
        ref = getattr(S, meth)(axis=axis)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(A, meth)(axis=axis)
        return
    got = getattr(A, meth)(axis=axis)
    got = got.toarray() if isinstance(got, xp.BCOOArray) else np.asarray(got)
    ref = ref.toarray() if sp.issparse(ref) else np.asarray(ref)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_reviewer_reductions():
    A = xp.asarray(D)
    assert A.sum(axis=(0, 1)) == D.sum()
    np.testing.assert_allclose(A.mean(axis=(0,)), D.mean(axis=0))
    out = xp.zeros((3, 0)).max(axis=0)
    assert out.shape == (0,)
    assert xp.max(xp.zeros((3, 0)), axis=0).shape == (0,)


def test_matmul_accepts_a_list_as_scipy():
    S = sp.csr_array(D)
    A = xp.asarray(D)
    np.testing.assert_allclose(A @ [1.0, 2.0, 3.0], S @ [1.0, 2.0, 3.0])
    np.testing.assert_allclose([1.0, 2.0] @ A, [1.0, 2.0] @ S)


def test_toarray_under_jit_says_what_to_use():
    # a NumPy result needs concrete values: under jit the error names todense(), not JAX's tracer error
    A = xp.asarray(np.eye(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"use A\.todense\(\) there"):
        jax.jit(lambda a: a.toarray())(A)
    np.testing.assert_array_equal(A.toarray(), np.eye(3))


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
def test_nnz_of_a_non_zero_fill_counts_what_scipy_stores():
    # scipy's (S == 0).nnz and (S < t).nnz count the True elements it stores; a comparison here stores the
    # few False ones and leaves True unstored (fill True): .nnz counts the non-zero elements as scipy does.
    S = sp.random_array((30, 20), density=0.2, random_state=3, dtype=np.float32, format="csr")
    B = xp.from_scipy(S)
    for f in (lambda a: a == 0, lambda a: a < 0.5, lambda a: a != 0, lambda a: a > 0.5):
        assert f(B).nnz == f(S).nnz, f(S).nnz
        assert f(B).nnz == f(B).count_nonzero() == int(np.count_nonzero(f(S).toarray()))
        for axis in (0, 1):  # per column and row too (scipy's getnnz / count_nonzero of its stored result)
            np.testing.assert_array_equal(f(B).getnnz(axis=axis), np.count_nonzero(f(S).toarray(), axis=axis))
    assert B.nnz == S.nnz  # fill 0: the stored entries, explicit zeros included
    assert (B + 1).nnz == int(np.count_nonzero(S.toarray() + 1))


def test_single_array_concat_and_same_shape_broadcast_are_new_objects():
    # NumPy's concatenate copies; an in-place update of the result must not reach the input (nor back).
    A = xp.asarray(np.eye(3, dtype=np.float32))
    for make in (lambda: xp.concat([A]), lambda: xp.concat((A,), axis=1), lambda: xp.broadcast_to(A, A.shape),
                 lambda: xp.broadcast_arrays(A)[0]):
        B = make()
        assert B is not A
        B[0, 1] = 9.0
        np.testing.assert_array_equal(A.toarray(), np.eye(3))
        A2 = make()
        A2[2, 0] = 4.0
        assert float(B.toarray()[2, 0]) == 0.0 and float(A.toarray()[2, 0]) == 0.0


@pytest.mark.parametrize("key", [[], (slice(None), []), ([], []), ([], slice(None)), (0, [])])
def test_empty_list_index_selects_nothing_as_numpy(key):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    A = xp.asarray(a)
    got = A[key]
    assert got.shape == a[key].shape
    np.testing.assert_array_equal(got.toarray() if got.ndim else got, a[key])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.int32])
@pytest.mark.parametrize("vdtype", [np.float32, np.float64, np.complex128])
def test_rmatvec_and_rmatmat_are_the_adjoint_as_scipy(dtype, vdtype):
    # LinearOperator's adjoint products (scipy's lsqr/lsmr call rmatvec) run the transpose's forward
    # product: A^H @ v, NumPy's promotion, for real and complex matrices and vectors, 1-D and (m, 1) and
    # matrices of vectors.
    rng = np.random.default_rng(4)
    S = sp.random_array((40, 30), density=0.2, random_state=5, format="csr", dtype=np.float64)
    S = (S * 7).astype(dtype) if np.dtype(dtype).kind == "i" else S.astype(dtype)
    if np.dtype(dtype).kind == "c":
        S = S + 1j * sp.random_array((40, 30), density=0.2, random_state=6, format="csr").astype(dtype)
    A = xp.from_scipy(sp.csr_array(S))
    v = rng.standard_normal(40).astype(vdtype)
    if np.dtype(vdtype).kind == "c":
        v = v + 1j * rng.standard_normal(40)
    H = S.conj().T
    for got, want in ((A.rmatvec(v), H @ v), (A.rmatvec(v[:, None]), H @ v[:, None]),
                      (A.rmatmat(np.stack([v, 2 * v], 1)), H @ np.stack([v, 2 * v], 1))):
        assert got.shape == want.shape
        assert np.result_type(got) == np.result_type(want), (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _explicit_case(rng, trial, scale):
    """A small random scipy COO matrix of rounded values in ``[-scale / 2, scale / 2]`` for the
    ``explicit=True`` tests: by ``trial``, an explicit zero, a NaN and a duplicate entry."""
    m, n = (int(v) for v in rng.integers(1, 7, 2))
    S = sp.random_array((m, n), density=float(rng.choice([0, 0.2, 0.6, 1.0])), rng=rng, format="coo",
                        dtype=np.float32)
    S.data = np.round(S.data * scale - scale / 2)
    if trial % 3 == 0 and S.nnz:
        S.data[0] = 0.0
    if trial % 5 == 0 and S.nnz > 1:
        S.data[1] = np.nan
    if trial % 4 == 0 and S.nnz:
        S = sp.coo_array((np.r_[S.data, S.data[:1]], (np.r_[S.row, S.row[:1]], np.r_[S.col, S.col[:1]])),
                         shape=S.shape)
    return S


@pytest.mark.parametrize("seed", range(4))
def test_max_min_explicit_match_scipy(seed):
    # scipy's explicit=True: the stored values only (duplicates summed, explicit zeros and NaN included),
    # 0 for a row / column / array that stores none; it used to be refused.
    rng = np.random.default_rng(seed)
    for trial in range(15):
        S = _explicit_case(rng, trial, 10)  # negative values: the implicit zeros would win a max
        A, C = xp.asarray(S), S.tocsr()
        for op in ("max", "min"):
            for axis in (None, 0, 1, -1, (0, 1)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    want = getattr(C, op)(axis=axis, explicit=True)
                got = getattr(A, op)(axis=axis, explicit=True)
                want = want.toarray() if hasattr(want, "toarray") else np.asarray(want)
                got = got.toarray() if hasattr(got, "toarray") else np.asarray(got)
                np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis}")
    with pytest.raises(ValueError, match="2-D"):
        xp.asarray(np.ones((2, 2, 2), np.float32)).max(explicit=True)


@pytest.mark.parametrize("seed", range(4))
def test_argmax_argmin_explicit_match_scipy(seed):
    # scipy's explicit=True: per row / column the index of the first extreme stored value (NaN first), 0
    # where none is stored; over the whole array the extreme's position among the stored values, an error
    # where none is stored. It used to be refused.
    rng = np.random.default_rng(100 + seed)
    for trial in range(40):
        S = _explicit_case(rng, trial, 4)  # ties and negative values
        A, C = xp.asarray(S), S.tocsr()
        for op in ("argmax", "argmin"):
            for axis in (None, 0, 1, -1):
                try:
                    want = getattr(C, op)(axis=axis, explicit=True)
                except ValueError:
                    with pytest.raises(ValueError):
                        getattr(A, op)(axis=axis, explicit=True)
                    continue
                got = getattr(A, op)(axis=axis, explicit=True)
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"{op} axis={axis}")
