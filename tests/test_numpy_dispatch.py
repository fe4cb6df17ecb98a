"""NumPy dispatch (``__array_function__`` / ``__array_ufunc__``) against dense NumPy.

Every registered NumPy function has at least one case below (checked by
``test_every_registered_function_has_a_case``); each case runs the same
expression on BCOOArrays and on the equal NumPy arrays, and many also mix a
BCOOArray with a dense NumPy operand. Every registered ufunc is run with
sparse, dense-mixed and scalar operands.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import bcoo_array as xp
from bcoo_array import BCOOArray
from bcoo_array._numpy.registry import (
    DENSE,
    FUNCTIONS,
    MIXED,
    SPARSE,
    UFUNCS,
    result_kind,
)

ROOT = Path(__file__).resolve().parents[1]

# -- data ---------------------------------------------------------------------------------

a = np.array([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, 0.0, 0.5], [0.0, 0.0, 4.0, 0.0]])
b = np.array([[1.0, 0.0, 0.0, 2.0], [0.0, 0.0, -1.0, 0.0], [0.0, 2.5, 0.0, 0.0]])
an = a.copy()
an[0, 0] = np.nan
an[2, 3] = np.nan
sq = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
v = np.array([0.0, 2.0, 0.0, -1.0])
w = np.array([1.0, 0.0, 3.0])
c3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4) % 5 - 1.0
ints = np.array([[3, 0, 1], [0, 3, 2]], np.int64)
cplx = np.array([[1 + 2j, 0], [0, -3j]], np.complex128)
r3 = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
r3b = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 1.0]])


def S(x):
    """Sparse version of a NumPy array."""
    return xp.asarray(x)


def F(x):
    """Sparse version with fill value 1: the entries equal to 1 are unstored."""
    return xp.add(xp.asarray(x - 1), 1)


def D(x):
    """Dense version: the NumPy array itself."""
    return x


def _sorted_eig(res):
    vals, vecs = res
    return vals, np.abs(vecs)  # eigenvectors are defined up to sign


def _recon_qr(res):
    q, r = res
    return q @ r


def _recon_svd(res):
    u, s, vh = res
    return (u[:, : s.shape[0]] * s) @ vh[: s.shape[0]], s


def _fields(res):
    return tuple(res)


# (numpy function, expression on a converter c, post-processing of both results or None, mixed?)
# ``c`` is S (sparse) or D (dense); "mixed" cases put a dense NumPy operand beside a sparse one.
def _dtype_traits(dt):
    """A dtype as numbers _assert_same compares: its kind among "biufc" and its size."""
    dt = np.dtype(dt)
    return np.array(["biufc".index(dt.kind), dt.itemsize])


CASES = [
    (np.sum, lambda c: np.sum(c(a)), None),
    (np.sum, lambda c: np.sum(c(a), axis=1, keepdims=True), None),
    (np.prod, lambda c: np.prod(c(a), axis=0), None),
    (np.max, lambda c: np.max(c(a), axis=0), None),
    (np.amax, lambda c: np.amax(c(a), axis=1, keepdims=True), None),
    (np.min, lambda c: np.min(c(a)), None),
    (np.amin, lambda c: np.amin(c(a), axis=0), None),
    (np.mean, lambda c: np.mean(c(a), axis=1), None),
    (np.var, lambda c: np.var(c(a), axis=0, ddof=1), None),
    (np.mean, lambda c: np.mean(c(ints), axis=0), None),
    (np.std, lambda c: np.std(c(ints), axis=1, ddof=1), None),
    (np.std, lambda c: np.std(c(a)), None),
    (np.cumsum, lambda c: np.cumsum(c(a)), None),
    (np.cumsum, lambda c: np.cumsum(c(a), axis=1), None),
    (np.cumprod, lambda c: np.cumprod(c(a), axis=0), None),
    (np.cumulative_sum, lambda c: np.cumulative_sum(c(v), include_initial=True), None),
    (np.cumulative_prod, lambda c: np.cumulative_prod(c(a), axis=1), None),
    (np.all, lambda c: np.all(c(a), axis=0), None),
    (np.any, lambda c: np.any(c(a), axis=1, keepdims=True), None),
    (np.all, lambda c: np.all(c(a)), None),
    (np.diff, lambda c: np.diff(c(a), axis=1), None),
    (np.diff, lambda c: np.diff(c(a), n=2, axis=0), None),
    (np.average, lambda c: np.average(c(a)), None),
    (np.average, lambda c: np.average(c(ints), axis=1), None),
    (np.average, lambda c: np.average(c(a), axis=1, weights=c(np.abs(b) + 1.0)), None),
    (np.average, lambda c: np.average(c(a), axis=1, weights=np.array([1.0, 2.0, 0.0, 3.0]), returned=True), tuple),
    (np.average, lambda c: np.average(c(c3), axis=(2, 0), weights=np.arange(8.0).reshape(4, 2) + 1.0,
                                      keepdims=True), None),
    (np.average, lambda c: np.average(c(a), axis=0, returned=True), tuple),
    (np.nansum, lambda c: np.nansum(c(an), axis=0), None),
    (np.nanprod, lambda c: np.nanprod(c(an), axis=1), None),
    (np.nanmax, lambda c: np.nanmax(c(an), axis=1), None),
    (np.nanmin, lambda c: np.nanmin(c(an)), None),
    (np.nanmean, lambda c: np.nanmean(c(an), axis=1), None),
    (np.nanvar, lambda c: np.nanvar(c(an), axis=1, ddof=1), None),
    (np.nanstd, lambda c: np.nanstd(c(an)), None),
    (np.nanargmax, lambda c: np.nanargmax(c(an), axis=1), None),
    (np.nanargmin, lambda c: np.nanargmin(c(an)), None),
    (np.nancumsum, lambda c: np.nancumsum(c(an)), None),
    (np.nancumprod, lambda c: np.nancumprod(c(an), axis=0), None),
    (np.count_nonzero, lambda c: np.count_nonzero(c(a)), None),
    (np.count_nonzero, lambda c: np.count_nonzero(c(a), axis=0), None),
    (np.argmax, lambda c: np.argmax(c(a)), None),
    (np.argmax, lambda c: np.argmax(c(a), axis=1), None),
    (np.argmin, lambda c: np.argmin(c(a), axis=0, keepdims=True), None),
    (np.nonzero, lambda c: np.nonzero(c(a)), None),
    (np.argwhere, lambda c: np.argwhere(c(a)), None),
    (np.argwhere, lambda c: np.argwhere(c(c3)), None),
    (np.argwhere, lambda c: np.argwhere(c(np.array(2.0))), None),
    (np.flatnonzero, lambda c: np.flatnonzero(c(a)), None),
    (np.flatnonzero, lambda c: np.flatnonzero(c(c3)), None),
    (np.where, lambda c: np.where(c(a)), None),
    (np.where, lambda c: np.where(c(a) > 0, c(a), c(b)), None),
    (np.where, lambda c: np.where(c(a) > 0, c(a), b), None),  # mixed
    (np.searchsorted, lambda c: np.searchsorted(c(np.sort(v)), c(w)), None),
    (np.sort, lambda c: np.sort(c(a), axis=1), None),
    (np.sort, lambda c: np.sort(c(a), axis=None), None),
    (np.argsort, lambda c: np.argsort(c(a), axis=0, kind="stable"), None),
    (np.unique, lambda c: np.unique(c(ints)), None),
    (np.unique, lambda c: np.unique(c(ints), return_index=True, return_inverse=True, return_counts=True), None),
    (np.unique_values, lambda c: np.unique_values(c(ints)), np.sort),  # order unspecified
    (np.unique_counts, lambda c: np.unique_counts(c(ints)), _fields),
    (np.unique_inverse, lambda c: np.unique_inverse(c(ints)), _fields),
    (np.unique_all, lambda c: np.unique_all(c(ints)), _fields),
    (np.isin, lambda c: np.isin(c(ints), c(np.array([0, 3]))), None),
    (np.transpose, lambda c: np.transpose(c(c3)), None),
    (np.transpose, lambda c: np.permute_dims(c(c3), (1, 0, 2)), None),
    (np.matrix_transpose, lambda c: np.matrix_transpose(c(c3)), None),
    (np.swapaxes, lambda c: np.swapaxes(c(c3), 0, 2), None),
    (np.moveaxis, lambda c: np.moveaxis(c(c3), 0, -1), None),
    (np.moveaxis, lambda c: np.moveaxis(c(c3), [0, 1], [2, 0]), None),
    (np.reshape, lambda c: np.reshape(c(a), (4, 3)), None),
    (np.reshape, lambda c: np.reshape(c(a), -1), None),
    (np.ravel, lambda c: np.ravel(c(c3)), None),
    (np.expand_dims, lambda c: np.expand_dims(c(a), (0, 2)), None),
    (np.squeeze, lambda c: np.squeeze(c(a.reshape(3, 1, 4))), None),
    (np.broadcast_to, lambda c: np.broadcast_to(c(v), (3, 4)), None),
    (np.broadcast_arrays, lambda c: np.broadcast_arrays(c(v), c(a)), tuple),
    (np.atleast_1d, lambda c: np.atleast_1d(c(np.array(2.0))), None),
    (np.atleast_2d, lambda c: np.atleast_2d(c(v)), None),
    (np.atleast_3d, lambda c: np.atleast_3d(c(a), c(v)), tuple),
    (np.concatenate, lambda c: np.concatenate([c(a), c(b)], axis=1), None),
    (np.concatenate, lambda c: np.concat((c(a), b), axis=None), None),  # mixed
    (np.stack, lambda c: np.stack([c(a), c(b)], axis=1), None),
    (np.hstack, lambda c: np.hstack([c(a), c(b)]), None),
    (np.hstack, lambda c: np.hstack([c(v), c(w)]), None),
    (np.vstack, lambda c: np.vstack([c(v), c(v)]), None),
    (np.vstack, lambda c: np.vstack([c(a), b]), None),  # mixed
    (np.unstack, lambda c: np.unstack(c(a), axis=1), tuple),
    (np.flip, lambda c: np.flip(c(a), axis=0), None),
    (np.roll, lambda c: np.roll(c(a), 2, axis=1), None),
    (np.roll, lambda c: np.roll(c(a), 1), None),
    (np.repeat, lambda c: np.repeat(c(a), 2, axis=0), None),
    (np.tile, lambda c: np.tile(c(a), (2, 1)), None),
    (np.copy, lambda c: np.copy(c(a)), None),
    (np.ndim, lambda c: np.ndim(c(c3)), None),
    (np.shape, lambda c: np.shape(c(c3)), None),
    (np.size, lambda c: np.size(c(c3), 1), None),
    (np.result_type, lambda c: np.result_type(c(a), np.float32, 2), _dtype_traits),
    (np.result_type, lambda c: np.result_type(c(np.array([[1, 0], [0, 2]], np.int32)), c(a)), _dtype_traits),
    (np.iscomplexobj, lambda c: np.iscomplexobj(c(a)), None),
    (np.isrealobj, lambda c: np.isrealobj(c(a)), None),
    (np.may_share_memory, lambda c: np.may_share_memory(c(a), b), None),
    (np.shares_memory, lambda c: np.shares_memory(c(a), c(b)), None),
    (np.take, lambda c: np.take(c(a), [0, 2], axis=1), None),
    (np.take, lambda c: np.take(c(v), 1), None),
    (np.take, lambda c: np.take(c(a), np.array([[0, 1], [2, 3]]), axis=1), None),
    (np.take_along_axis, lambda c: np.take_along_axis(c(a), np.argsort(a, axis=1, kind="stable"), axis=1), None),
    (np.diagonal, lambda c: np.diagonal(c(a)), None),
    (np.diagonal, lambda c: np.diagonal(c(a), 1), None),
    (np.diagonal, lambda c: np.diagonal(c(c3), -1, 2, 1), None),
    (np.trace, lambda c: np.trace(c(sq)), None),
    (np.trace, lambda c: np.trace(c(a), -1), None),
    (np.tril, lambda c: np.tril(c(a)), None),
    (np.triu, lambda c: np.triu(c(a), 1), None),
    (np.meshgrid, lambda c: np.meshgrid(c(v), c(w)), tuple),
    (np.zeros_like, lambda c: np.zeros_like(c(a)), None),
    (np.ones_like, lambda c: np.ones_like(c(a), dtype=np.float32), None),
    (np.empty_like, lambda c: np.empty_like(c(a)).shape, None),
    (np.full_like, lambda c: np.full_like(c(a), 7.0), None),
    (np.astype, lambda c: np.astype(c(a), np.int32), None),
    (np.clip, lambda c: np.clip(c(a), -1, 2), None),
    (np.clip, lambda c: np.clip(c(a), min=0.0), None),
    (np.clip, lambda c: np.clip(c(a), -1.0, b), None),  # mixed
    (np.round, lambda c: np.round(c(a * 1.23456), 2), None),
    (np.around, lambda c: np.around(c(a * 1.23456)), None),
    (np.real, lambda c: np.real(c(cplx)), None),
    (np.imag, lambda c: np.imag(c(cplx)), None),
    (np.isclose, lambda c: np.isclose(c(a), c(a + 1e-9)), None),
    (np.isclose, lambda c: np.isclose(c(a), b), None),  # mixed
    (np.allclose, lambda c: np.allclose(c(a), a + 1e-9), None),  # mixed
    (np.allclose, lambda c: np.allclose(c(a), c(b)), None),
    (np.array_equal, lambda c: np.array_equal(c(a), c(a)), None),
    (np.array_equal, lambda c: np.array_equal(c(a), b), None),  # mixed
    (np.array_equal, lambda c: np.array_equal(c(an), c(an), equal_nan=True), None),
    (np.array_equal, lambda c: np.array_equal(c(a), c(v)), None),
    (np.dot, lambda c: np.dot(c(a), c(v)), None),
    (np.dot, lambda c: np.dot(c(a), a.T), None),  # mixed
    (np.dot, lambda c: np.dot(c(c3), c(a.T)), None),
    (np.dot, lambda c: np.dot(c(a), 2.0), None),
    (np.tensordot, lambda c: np.tensordot(c(c3), c(a), axes=([1, 2], [0, 1])), None),
    (np.tensordot, lambda c: np.tensordot(c(a), b.T, axes=1), None),  # mixed
    (np.einsum, lambda c: np.einsum("ij,kj->ik", c(a), c(b)), None),
    (np.einsum, lambda c: np.einsum("ij,j->i", c(a), v), None),  # mixed
    (np.einsum, lambda c: np.einsum("bij,bjk->bik", c(c3[:, :, :3]), c(c3[:, :3, :])), None),
    (np.einsum, lambda c: np.einsum("ij,ij->j", c(a), c(b)), None),
    (np.einsum, lambda c: np.einsum("ii->i", c(sq)), None),
    (np.einsum, lambda c: np.einsum("ij->", c(a)), None),
    (np.einsum, lambda c: np.einsum("ij,jk", c(a), c(a.T)), None),
    (np.einsum, lambda c: np.einsum("ijk->kj", c(c3)), None),
    (np.kron, lambda c: np.kron(c(sq), c(w.reshape(1, 3))), None),
    (np.kron, lambda c: np.kron(c(v), c(w)), None),
    (np.outer, lambda c: np.outer(c(v), c(w)), None),
    (np.inner, lambda c: np.inner(c(a), c(b)), None),
    (np.inner, lambda c: np.inner(c(v), v), None),  # mixed
    (np.vdot, lambda c: np.vdot(c(a), c(b)), None),
    (np.vdot, lambda c: np.vdot(c(cplx), c(cplx)), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(a)), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(a), 1), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(a), -np.inf), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(v), 3), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(v), 0), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(a), axis=1, keepdims=True), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(a), 2), None),
    (np.linalg.norm, lambda c: np.linalg.norm(c(c3), "fro", axis=(0, 2)), None),
    (np.linalg.vector_norm, lambda c: np.linalg.vector_norm(c(a), ord=1), None),
    (np.linalg.vector_norm, lambda c: np.linalg.vector_norm(c(c3), axis=(0, 2), keepdims=True), None),
    (np.linalg.matrix_norm, lambda c: np.linalg.matrix_norm(c(a), ord="nuc"), None),
    (np.linalg.matrix_norm, lambda c: np.linalg.matrix_norm(c(c3), ord=np.inf), None),
    (np.linalg.matmul, lambda c: np.linalg.matmul(c(a), c(b.T)), None),
    (np.linalg.vecdot, lambda c: np.linalg.vecdot(c(a), c(b)), None),
    (np.linalg.tensordot, lambda c: np.linalg.tensordot(c(a), c(b), axes=2), None),
    (np.linalg.matrix_transpose, lambda c: np.linalg.matrix_transpose(c(a)), None),
    (np.linalg.diagonal, lambda c: np.linalg.diagonal(c(c3), offset=1), None),
    (np.linalg.trace, lambda c: np.linalg.trace(c(c3), offset=-1), None),
    (np.linalg.outer, lambda c: np.linalg.outer(c(v), c(w)), None),
    (np.linalg.cross, lambda c: np.linalg.cross(c(r3), c(r3b)), None),
    (np.linalg.cholesky, lambda c: np.linalg.cholesky(c(sq)), None),
    (np.linalg.det, lambda c: np.linalg.det(c(sq)), None),
    (np.linalg.slogdet, lambda c: np.linalg.slogdet(c(sq)), tuple),
    (np.linalg.inv, lambda c: np.linalg.inv(c(sq)), None),
    (np.linalg.solve, lambda c: np.linalg.solve(c(sq), c(np.stack([w, w], axis=1))), None),
    (np.linalg.svdvals, lambda c: np.linalg.svdvals(c(a)), None),
    (np.linalg.eigh, lambda c: np.linalg.eigh(c(sq)), _sorted_eig),
    (np.linalg.eigvalsh, lambda c: np.linalg.eigvalsh(c(sq)), None),
    (np.linalg.matrix_power, lambda c: np.linalg.matrix_power(c(sq), 3), None),
    (np.linalg.matrix_rank, lambda c: np.linalg.matrix_rank(c(a)), None),
    (np.linalg.pinv, lambda c: np.linalg.pinv(c(a)), None),
    (np.linalg.qr, lambda c: np.linalg.qr(c(sq)), _recon_qr),
    (np.linalg.svd, lambda c: np.linalg.svd(c(a), full_matrices=False), _recon_svd),
    (np.linalg.svd, lambda c: np.linalg.svd(c(a), compute_uv=False), None),
    (np.fft.fft, lambda c: np.fft.fft(c(v)), None),
    (np.fft.ifft, lambda c: np.fft.ifft(c(v), n=6), None),
    (np.fft.rfft, lambda c: np.fft.rfft(c(a), axis=0), None),
    (np.fft.irfft, lambda c: np.fft.irfft(c(v), norm="ortho"), None),
    (np.fft.hfft, lambda c: np.fft.hfft(c(v)), None),
    (np.fft.ihfft, lambda c: np.fft.ihfft(c(v)), None),
    (np.fft.fftn, lambda c: np.fft.fftn(c(a)), None),
    (np.fft.ifftn, lambda c: np.fft.ifftn(c(a), axes=(1,)), None),
    (np.fft.rfftn, lambda c: np.fft.rfftn(c(a)), None),
    (np.fft.irfftn, lambda c: np.fft.irfftn(c(a), s=(3, 6), axes=(0, 1)), None),
    (np.fft.fftshift, lambda c: np.fft.fftshift(c(a)), None),
    (np.fft.ifftshift, lambda c: np.fft.ifftshift(c(a), axes=1), None),
]


def _to_numpy(r):
    if isinstance(r, BCOOArray):
        return np.asarray(r.todense())
    if isinstance(r, (tuple, list)):
        return tuple(_to_numpy(t) for t in r)
    return r


def _leaves(r):
    if isinstance(r, (tuple, list)):
        for t in r:
            yield from _leaves(t)
    else:
        yield r


def _assert_same(got, exp):
    if isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(exp)
        for g, e in zip(got, exp):
            _assert_same(g, e)
        return
    g, e = np.asarray(got), np.asarray(exp)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype.kind == e.dtype.kind or {g.dtype.kind, e.dtype.kind} <= set("iu"), (g.dtype, e.dtype)
    if e.dtype.kind == "b":
        np.testing.assert_array_equal(g, e)
    else:
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9, equal_nan=True)


def _case_id(case):
    return case[0].__name__


#: Products with a NumPy operand (the "mixed" cases above): by the mixed-type rule their dense
#: result is a NumPy array, as scipy.sparse and pydata-sparse give.
MIXED_DENSE = {"dot1", "tensordot1"}


def _pytest_ids(cases):
    """The ids pytest gives the parametrized cases: a repeated name gets its index (dot0, dot1, ...)."""
    names = [_case_id(c) for c in cases]
    seen: dict = {}
    out = []
    for n in names:
        if names.count(n) > 1:
            out.append(f"{n}{seen.get(n, 0)}")
            seen[n] = seen.get(n, 0) + 1
        else:
            out.append(n)
    return out


_IDS = _pytest_ids(CASES)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_function_matches_numpy(case):
    func, expr, post = case
    got = expr(S)
    mixed = _IDS[next(i for i, c in enumerate(CASES) if c is case)] in MIXED_DENSE
    for leaf in _leaves(got):
        # Array results come back as BCOOArrays (no densification), except dense products of a NumPy operand.
        assert isinstance(leaf, np.ndarray) == mixed, type(leaf)
        if result_kind(func) == SPARSE and isinstance(leaf, BCOOArray) and leaf.ndim > 0:
            assert leaf.n_dense < leaf.ndim, f"{func.__name__} is declared sparse but gave a dense layout"
    with np.errstate(all="ignore"):
        exp = expr(D)
    got = _to_numpy(got)
    if post is not None:
        got, exp = post(got), post(exp)
    _assert_same(got, exp)


# Functions also checked on arrays whose fill value is 1 (not 0).
_FILL_FUNCS = {np.sum, np.max, np.nanmax, np.cumsum, np.sort, np.concatenate, np.einsum, np.kron, np.diagonal,
               np.trace, np.round, np.isclose, np.count_nonzero, np.linalg.norm, np.dot, np.take, np.where,
               np.unique, np.argmax, np.all, np.var, np.outer, np.tensordot, np.linalg.inv, np.fft.fft,
               np.average, np.argwhere, np.flatnonzero}
_FILL_CASES = [c for c in CASES if c[0] in _FILL_FUNCS and c is next(d for d in CASES if d[0] is c[0])]


@pytest.mark.parametrize("case", _FILL_CASES, ids=[_case_id(c) for c in _FILL_CASES])
def test_function_matches_numpy_with_nonzero_fill(case):
    _, expr, post = case
    got = _to_numpy(expr(F))
    with np.errstate(all="ignore"):
        exp = expr(D)
    if post is not None:
        got, exp = post(got), post(exp)
    _assert_same(got, exp)


def test_every_registered_function_has_a_case():
    assert set(FUNCTIONS) <= {c[0] for c in CASES}
    assert DENSE  # the result kinds are the registry's own constants


def test_result_kinds_are_known():
    from bcoo_array._numpy.registry import MIXED_RESULT, PYTHON_RESULT, SPARSE_RESULT

    assert {result_kind(f) for f in FUNCTIONS} <= {SPARSE, DENSE, MIXED, "int", "tuple", "bool", "dtype"}
    assert SPARSE_RESULT | MIXED_RESULT | set(PYTHON_RESULT) <= set(FUNCTIONS)  # no stale entries


# -- ufuncs ----------------------------------------------------------------------------------

_pos = np.array([[0.0, 0.25, 0.0], [0.5, 0.0, 0.75]])  # inside every real domain (acos, atanh, ...)
_pos2 = np.array([[0.5, 0.0, 0.0], [0.0, 0.125, 0.75]])
_int1 = np.array([[0, 5, 0], [3, 0, 12]], np.int32)
_int2 = np.array([[1, 0, 0], [2, 0, 3]], np.int32)
_bool1 = np.array([[True, False, False], [True, False, True]])
_bool2 = np.array([[False, False, True], [True, False, False]])

_INTEGER_UFUNCS = {np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift, np.invert}
_LOGICAL_UFUNCS = {np.logical_and, np.logical_or, np.logical_xor, np.logical_not}


def _ufunc_inputs(uf):
    if uf in _INTEGER_UFUNCS:
        return _int1, _int2, 2
    if uf in _LOGICAL_UFUNCS:
        return _bool1, _bool2, True
    if uf is np.arccosh:
        return _pos + 1.0, _pos2 + 1.0, 1.5
    return _pos, _pos2, 0.5


_CALL_UFUNCS = [u for u in UFUNCS if u not in (np.matmul, np.vecdot)]


@pytest.mark.parametrize("uf", _CALL_UFUNCS, ids=[u.__name__ for u in _CALL_UFUNCS])
def test_ufunc_call(uf):
    x, y, s = _ufunc_inputs(uf)
    with np.errstate(all="ignore"):
        if uf.nin == 1:
            pairs = [(uf(S(x)), uf(x))]
        else:
            pairs = [
                (uf(S(x), S(y)), uf(x, y)),  # sparse, sparse
                (uf(S(x), y), uf(x, y)),  # sparse, dense NumPy
                (uf(x, S(y)), uf(x, y)),  # dense NumPy, sparse
                (uf(S(x), s), uf(x, s)),  # sparse, Python scalar
                (uf(s, S(y)), uf(s, y)),  # Python scalar, sparse
            ]
    for got, exp in pairs:
        assert isinstance(got, BCOOArray)
        _assert_same(_to_numpy(got), exp)


def test_ufunc_sparse_result_keeps_pattern():
    A = S(_pos)
    assert np.sin(A).nse == A.nse and np.sin(A).fill_value == 0
    E = np.exp(A)
    assert E.nse == A.nse and E.fill_value == 1.0


def test_operator_on_numpy_left_goes_through_array_ufunc():
    A = S(a)
    _assert_same(_to_numpy(b + A), b + a)
    _assert_same(_to_numpy(b * A), b * a)
    _assert_same(_to_numpy(b < A), b < a)
    _assert_same(_to_numpy(a.T @ A), a.T @ a)
    _assert_same(_to_numpy(np.float64(2.0) * A), 2.0 * a)


def test_ufunc_dtype_keyword_casts_inputs():
    got = np.add(S(_int1), S(_int2), dtype=np.float64)
    assert got.dtype == np.float64
    _assert_same(_to_numpy(got), np.add(_int1, _int2, dtype=np.float64))


def test_matmul_and_vecdot_ufuncs():
    _assert_same(_to_numpy(np.matmul(S(a), S(b.T))), a @ b.T)
    _assert_same(_to_numpy(np.matmul(S(a), b.T)), a @ b.T)
    _assert_same(_to_numpy(np.vecdot(S(a), b)), np.vecdot(a, b))
    _assert_same(_to_numpy(np.vecdot(S(a), S(b), axis=0)), np.vecdot(a, b, axis=0))


# -- refusals --------------------------------------------------------------------------------


def test_out_is_refused():
    A = S(a)
    buf = np.empty_like(a)
    with pytest.raises(TypeError, match="out="):
        np.sum(A, axis=0, out=buf[0])
    with pytest.raises(TypeError, match="out="):
        np.sin(A, out=buf)
    with pytest.raises(TypeError, match="out="):
        np.add(A, A, out=(buf,))
    with pytest.raises(TypeError, match="out="):
        np.add.reduce(A, out=buf[0])
    with pytest.raises(TypeError, match="out="):
        np.einsum("ij->i", A, out=buf[:, 0])


def test_unsupported_keywords_are_refused():
    A = S(a)
    with pytest.raises(TypeError, match="where="):
        np.sin(A, where=a > 0)
    with pytest.raises(TypeError, match="initial="):
        np.sum(A, initial=1.0)
    with pytest.raises(TypeError, match="initial="):
        np.add.reduce(A, initial=1.0)
    with pytest.raises(TypeError, match="order="):
        np.reshape(A, (4, 3), order="F")
    with pytest.raises(TypeError, match="mode="):
        np.take(A, [0], axis=0, mode="clip")
    with pytest.raises(TypeError, match="at most two"):
        np.einsum("ij,jk,kl->il", A, A.T, A)
    with pytest.raises(TypeError, match="ellipsis"):
        np.einsum("...j->...", A)


def test_unregistered_functions_and_methods_raise_type_error_naming_the_fix(monkeypatch):
    monkeypatch.delenv("BCOO_ARRAY_AUTO_DENSIFY", raising=False)
    A = S(a)
    for call in (lambda: np.median(A), lambda: np.pad(A, 1), lambda: np.divide.reduce(A),
                 lambda: np.power.reduceat(A, [0, 1])):
        with pytest.raises(TypeError, match=r"A\.toarray\(\).*BCOO_ARRAY_AUTO_DENSIFY=1"):
            call()
    with pytest.raises(ValueError, match="binary"):  # NumPy's own check, before the protocol
        np.sin.reduce(A)


def test_no_silent_densification():
    A = S(a)
    with pytest.raises(RuntimeError, match="densify"):
        np.asarray(A)
    with pytest.raises(RuntimeError, match="densify"):
        np.array([A, A])


def test_dispatch_answers_from_the_table_only(monkeypatch):
    monkeypatch.delitem(FUNCTIONS, np.sum)
    with pytest.raises(TypeError, match="no implementation found|__array_function__"):
        np.sum(S(a))
    monkeypatch.setitem(FUNCTIONS, np.median, lambda x: "median")
    assert np.median(S(a)) == "median"


def test_numpy_package_uses_only_the_public_namespace():
    # The dispatch package sits above the namespace: it may import bcoo_array's
    # public names and the base modules _dtypes/_layout/_limits (the densification
    # guard), never the private chapter modules (which move around).
    import ast

    allowed = {"bcoo_array", "bcoo_array._dtypes", "bcoo_array._shapes", "bcoo_array._limits"}
    pkg = ROOT / "bcoo_array" / "_numpy"
    for path in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                mod = node.module or ""
                if node.level == 2:  # from .. or from ..x
                    assert f"bcoo_array.{mod}".rstrip(".") in allowed, (path.name, mod)
                else:  # a sibling: from .operands import ... / from . import adapters
                    for sibling in [mod] if mod else [n.name for n in node.names]:
                        assert (pkg / f"{sibling}.py").exists(), (path.name, sibling)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [n.name for n in node.names]
                for name in names:
                    assert not name.startswith("bcoo_array.") or name in allowed, (path.name, name)


def test_numpy_float64_scalar_follows_the_x64_policy():
    # With x64 off a float64 NumPy operand is refused rather than downcast; the
    # subprocess keeps this session's x64 setting untouched.
    code = (
        "import numpy as np, bcoo_array as xp\n"
        "A = xp.asarray(np.ones((2, 2), np.float32))\n"
        "for f in (lambda: np.add(A, np.ones((2, 2))), lambda: np.ones((2, 2)) + A):\n"
        "    try:\n"
        "        f()\n"
        "    except ValueError as e:\n"
        "        assert '64-bit' in str(e)\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "assert (np.ones((2, 2), np.float32) + A).dtype == np.float32\n"
    )
    res = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"JAX_ENABLE_X64": "0", "PATH": "", "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]


# -- under transformations ---------------------------------------------------------------------


def test_numpy_functions_work_under_jit():
    A = S(a)

    @jax.jit
    def f(M):
        return np.sum(np.multiply(M, 2.0), axis=0)

    _assert_same(_to_numpy(f(A)), np.sum(a * 2.0, axis=0))


def test_copy_is_independent_of_later_setitem():
    A = S(a)
    B = np.copy(A)
    A[0, 0] = 9.0
    assert float(B[0, 0]) == 0.0


# -- generated coverage document ---------------------------------------------------------------


def test_coverage_doc_is_current():
    spec = importlib.util.spec_from_file_location("numpy_coverage", ROOT / "docs" / "numpy_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.OUT.read_text() == mod.render(), "run: python docs/numpy_coverage.py"
