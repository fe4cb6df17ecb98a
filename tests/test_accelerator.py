"""Accelerator layouts (``bcoo_array.accelerator``, ``_kernels.layouts``/``accel``) against scipy's float64 products.

Every layout is forced in turn on CPU (the XLA code the TPU runs, with the
TPU's lane gathers switched on too), eagerly and under ``jit``, for SpMV,
SpMM, ``A.T @ y``, non-finite ``x`` (structural zeros stay zero), ``grad``,
``vmap`` and the solvers; the automatic choice is checked with the TPU's
cost model.
"""

from __future__ import annotations

import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import accelerator
from bcoo_array._kernels import accel, layouts, matmul

LAYOUTS = ("dense", "dia", "tiles", "blocks", "ell", "panels", "sell", "coo", "bcoo")


def _poisson(n):
    t = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    return sp.csr_array(sp.kronsum(t, t))


def _matrices():
    rng = np.random.default_rng(3)
    q = sp.random_array((300, 300), density=0.02, rng=rng, format="csr")
    return {"poisson": _poisson(12), "rect": sp.random_array((130, 90), density=0.05, rng=rng, format="csr"),
            "symmetric": sp.csr_array(q + q.T)}


MATRICES = _matrices()


def _bcoo(S):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xp.from_scipy(sp.csr_array(S).astype(np.float32))


def _lanes(op):
    return accelerator.SparseOperator(op.values, op.arrays, op.perm, op.inverse, op.slot, layout=op.layout,
                                      static=op.static, shape=op.shape, lanes=True, description=op.description)


#: (matrix, layout, lanes): every layout on every matrix with XLA's take, and the TPU's lane gathers
#: (``.accel.gather``) on one matrix for the layouts that gather (bcoo, panels and sell have no lane gather).
_PRODUCT_CASES = [(name, layout, False) for name in sorted(MATRICES) for layout in LAYOUTS] + [
    ("symmetric", layout, True) for layout in LAYOUTS if layout not in ("bcoo", "panels", "sell")]


@pytest.mark.parametrize(("name", "layout", "lanes"), _PRODUCT_CASES,
                         ids=[f"{n}-{lay}-{'lane-gather' if ln else 'take'}" for n, lay, ln in _PRODUCT_CASES])
def test_products_match_scipy(name, layout, lanes):
    S = MATRICES[name]
    op = accelerator.prepare(_bcoo(S), layout=layout)
    op = _lanes(op) if lanes else op
    rng = np.random.default_rng(0)
    D = S.toarray().astype(np.float64)
    x = rng.standard_normal(S.shape[1]).astype(np.float32)
    X = rng.standard_normal((S.shape[1], 5)).astype(np.float32)
    y = rng.standard_normal(S.shape[0]).astype(np.float32)
    tol = 1e-5 * max(1.0, np.abs(D).sum(1).max())
    np.testing.assert_allclose(np.asarray(op @ x), D @ x, atol=tol)
    np.testing.assert_allclose(np.asarray(op @ X), D @ X, atol=tol)
    np.testing.assert_allclose(np.asarray(op.T @ y), D.T @ y, atol=tol)
    np.testing.assert_allclose(np.asarray(y @ op), y @ D, atol=tol)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda o, v: o @ v)(op, x)), D @ x, atol=tol)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_non_finite_x_meets_only_stored_entries(layout):
    S = MATRICES["rect"]
    op = accelerator.prepare(_bcoo(S), layout=layout)
    x = np.random.default_rng(1).standard_normal(S.shape[1]).astype(np.float32)
    x[0], x[7] = np.inf, np.nan
    with np.errstate(invalid="ignore"):
        ref = S.astype(np.float64) @ x.astype(np.float64)
    _assert_same_non_finite(np.asarray(op @ x), ref)
    # the transpose's product too (blocks: no check for a vector, its selects meet stored entries only)
    y = np.random.default_rng(2).standard_normal(S.shape[0]).astype(np.float32)
    y[3], y[5] = -np.inf, np.nan
    with np.errstate(invalid="ignore"):
        ref_t = S.T.astype(np.float64) @ y.astype(np.float64)
    _assert_same_non_finite(np.asarray(op.T @ y), ref_t)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_stored_inf_meets_only_its_column(layout):
    # A stored +-inf times x[c] is +-inf (NaN where x[c] is 0), and nothing else: the packed one-vector SELL
    # kernel selected its lane before the product, so inf * 0 of the row's other lanes made NaN (review of
    # 2026-12-06).
    D = np.zeros((4, 5), np.float32)
    D[1, 2], D[3, 0], D[0, 4], D[2, 1] = np.inf, 2, -np.inf, 1
    op = accelerator.prepare(_bcoo(D), layout=layout)
    x = np.array([1, 2, 3, 4, 0], np.float32)
    y = np.array([1, 2, 3, 4], np.float32)
    with np.errstate(invalid="ignore"):
        ref, ref_t = (sp.csr_array(D.astype(np.float64)) @ x, sp.csr_array(D.T.astype(np.float64)) @ y)
    _assert_same_non_finite(np.asarray(op @ x), ref)
    _assert_same_non_finite(np.asarray(op.T @ y), ref_t)
    _assert_same_non_finite(np.asarray(op @ x[:, None])[:, 0], ref)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_products_transpose_linearly(layout):
    # jax.linear_transpose of op @ x, in x and in the values, and grad through a solver that transposes its
    # operator (gmres under grad: custom_linear_solve). The layouts that check x for non-finite values did
    # this through a cond on x, which JAX cannot transpose: a bare AssertionError (review of 2026-12-06).
    import jax.scipy.sparse.linalg as jsl

    S = MATRICES["rect"]
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    D = S.toarray().astype(np.float64)
    rng = np.random.default_rng(41)
    rows, cols = np.asarray(A.indices).T
    for shape in ((S.shape[1],), (S.shape[1], 3)):
        ct = rng.standard_normal((S.shape[0],) + shape[1:]).astype(np.float32)
        (got,) = jax.linear_transpose(lambda v: op @ v, jax.ShapeDtypeStruct(shape, jnp.float32))(ct)
        np.testing.assert_allclose(np.asarray(got), D.T @ ct, rtol=1e-5, atol=1e-5)
        x = rng.standard_normal(shape).astype(np.float32)
        (gd,) = jax.linear_transpose(lambda d: op.with_data(d) @ jnp.asarray(x), A.data)(ct)
        ref = ct[rows] * x[cols] if len(shape) == 1 else np.sum(ct[rows] * x[cols], axis=1)
        np.testing.assert_allclose(np.asarray(gd), ref, rtol=1e-5, atol=1e-5)
    P = _poisson(5)
    opp = accelerator.prepare(_bcoo(P), layout=layout)
    b = jnp.asarray(np.arange(P.shape[0], dtype=np.float32))
    g = jax.grad(lambda b: jsl.gmres(opp.matvec, b, tol=1e-7)[0].sum())(b)
    np.testing.assert_allclose(np.asarray(g), np.linalg.solve(P.toarray().T, np.ones(P.shape[0])), atol=1e-3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reverse_mode_with_a_non_finite_cotangent(layout):
    # The cotangent of x is A.T @ W and that of entry (r, c) is W[r] . X[c]: an inf of W at a row without
    # stored entries meets nothing. The layouts that store zeros transposed their kernel and multiplied the
    # row's padding zeros by inf (NaN; review of 2026-12-06: grad of sum(sqrt(A @ x)) over an empty row).
    D = np.zeros((6, 5), np.float32)
    D[0, 0], D[2, 1], D[2, 2], D[4, 4], D[5, 0], D[5, 3] = 1, 2, 3, 4, 5, 6  # rows 1 and 3 empty
    S = sp.csr_array(D)
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    rows, cols = np.asarray(A.indices).T
    g = jax.grad(lambda z: jnp.sum(jnp.sqrt(op @ z)))(jnp.ones(5, jnp.float32))
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 0.5 / np.sqrt(D.astype(np.float64) @ np.ones(5))  # inf at the empty rows
        np.testing.assert_allclose(np.asarray(g), S.T.astype(np.float64) @ w, rtol=1e-6)
    rng = np.random.default_rng(43)
    for shape in ((5,), (5, 2)):
        _check_non_finite_cotangents(op, A, S, rows, cols, rng, shape)


def _check_non_finite_cotangents(op, A, S, rows, cols, rng, shape):
    with np.errstate(invalid="ignore", over="ignore"):
        X = rng.standard_normal(shape).astype(np.float32)
        W = rng.standard_normal((6,) + shape[1:]).astype(np.float32)
        W[1], W[3] = np.inf, -np.inf  # empty rows
        W[4] = np.inf  # a row with one stored entry: A.T @ W is inf there
        _, vjp = jax.vjp(lambda z: op @ z, jnp.asarray(X))
        _assert_same_non_finite(np.asarray(vjp(jnp.asarray(W))[0]).reshape(-1),
                                (S.T.astype(np.float64) @ W.astype(np.float64)).reshape(-1))
        _, vjp = jax.vjp(lambda d: op.with_data(d) @ jnp.asarray(X), A.data)
        ref = W[rows] * X[cols] if len(shape) == 1 else np.sum(W[rows] * X[cols], axis=1)
        _assert_same_non_finite(np.asarray(vjp(jnp.asarray(W))[0]), ref)


def _assert_same_non_finite(got, ref):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], atol=1e-4)


@pytest.mark.parametrize("layout", ("dia", "tiles", "blocks", "ell", "panels", "sell"))
def test_grad_and_vmap(layout):
    S = MATRICES["poisson"]
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    D = S.toarray().astype(np.float64)
    x = np.random.default_rng(2).standard_normal(S.shape[1]).astype(np.float32)
    gx = jax.grad(lambda v: jnp.sum((op @ v) ** 2))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(gx), 2 * D.T @ (D @ x), rtol=1e-4, atol=1e-3)
    gd = jax.grad(lambda d: jnp.sum(op.with_data(d) @ jnp.asarray(x)))(A.data)
    rows, cols = np.asarray(A.indices).T
    np.testing.assert_allclose(np.asarray(gd), x[cols], rtol=1e-6)
    Xs = np.random.default_rng(3).standard_normal((4, S.shape[1])).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jax.vmap(op.matvec)(Xs)), Xs @ D.T, atol=1e-4)


@pytest.mark.parametrize("layout", ("dia", "tiles", "blocks", "ell", "panels", "sell"))
def test_cg_in_the_reordered_space(layout):
    S = _poisson(10)
    op = accelerator.prepare(_bcoo(S), layout=layout, reorder=None if layout in ("dia", "sell") else True)
    b = np.random.default_rng(4).standard_normal(S.shape[0]).astype(np.float32)
    x, _ = jax.jit(lambda o, b: accelerator.cg(o, b, tol=1e-6, maxiter=500))(op, b)
    np.testing.assert_allclose(S @ np.asarray(x, np.float64), b, atol=1e-3)
    x2, _ = accelerator.bicgstab(op, b, tol=1e-6, maxiter=500)
    np.testing.assert_allclose(S @ np.asarray(x2, np.float64), b, atol=1e-3)


def test_tpu_cost_model_choices():
    idx = lambda S: np.asarray(_bcoo(S).indices)  # noqa: E731
    assert layouts.choose(idx(_poisson(40)), (1600, 1600), 4, "tpu").kind == "dia"
    small = sp.random_array((300, 200), density=0.03, rng=1, format="csr")
    assert layouts.choose(idx(small), small.shape, 4, "tpu").kind == "dense"
    # On a CPU the operator keeps the BCOO buffers (the native kernels).
    assert accelerator.prepare(_bcoo(small)).layout == "bcoo"


@pytest.mark.parametrize("mixed", (False, True))
def test_panels_kernel_in_interpret_mode_matches_its_xla_formula(monkeypatch, mixed):
    # The Pallas kernel (interpret mode on a CPU) against the layout's XLA formula and scipy: several
    # right-hand sides, a mapped x (more right-hand sides) and mapped values (a loop of the kernel);
    # uniform tiles and mixed ones (each sublane reads its own panel).
    from bcoo_array._kernels import panels

    monkeypatch.setattr(layouts, "PANELS_MIXED", mixed)
    S = sp.random_array((260, 390), density=0.04, rng=7, format="csr").astype(np.float32)
    lay = layouts.choose(np.asarray(_bcoo(S).indices), S.shape, 4, "tpu", kind="panels")
    assert lay.kind == "panels" and lay.arrays["lcols"].shape[1:] == (8, 128)
    assert lay.arrays["meta"].shape[0] == (9 if mixed else 2)
    A = _bcoo(S)
    split = lay.static["split"]  # the matrix's tiles; its transpose's follow
    values = accel_values = jnp.zeros(lay.n_slots, jnp.float32).at[lay.slot].add(A.data, mode="drop")[:split]
    meta, lcols = jnp.asarray(lay.arrays["meta"]), jnp.asarray(lay.arrays["lcols"])
    X = np.random.default_rng(8).standard_normal((3, S.shape[1])).astype(np.float32)
    got = panels.panels_kernel(values, meta, lcols, jnp.asarray(X), shape=S.shape, interpret=True)
    ref = panels.panels_reference(values, meta, lcols, jnp.asarray(X), shape=S.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got), (S.astype(np.float64) @ X.T).T, rtol=1e-4, atol=1e-4)
    vs = jnp.stack([accel_values, 2 * accel_values])
    both = jax.vmap(lambda v: panels.panels_matmat(v, meta, lcols, jnp.asarray(X), shape=S.shape))(vs)
    np.testing.assert_allclose(np.asarray(both[1]), 2 * np.asarray(got), rtol=1e-5, atol=1e-5)


def test_panels_refuses_what_it_cannot_hold():
    rng = np.random.default_rng(9)
    n = 5000
    scattered = sp.coo_array((np.ones(n, np.float32), (rng.integers(0, 10**5, n), rng.integers(0, 10**5, n))),
                             shape=(10**5, 10**5))
    with pytest.raises(ValueError, match="too scattered"):
        layouts.choose(np.stack([scattered.row, scattered.col], 1), scattered.shape, 4, "tpu", kind="panels",
                       reorder=False)
    with pytest.raises(ValueError, match="32-bit"):
        layouts.choose(np.array([[0, 0]]), (4, 4), 8, "tpu", kind="panels")
    # The automatic choice takes it on a TPU for an irregular pattern of 32-bit values, never for wider
    # values nor on another backend (the Pallas kernel is a TPU kernel).
    S = sp.random_array((1500, 1400), density=0.01, rng=11, format="csr")
    idx = np.asarray(_bcoo(S.astype(np.float32)).indices)
    assert layouts.choose(idx, S.shape, 4, "tpu").kind == "panels"
    for itemsize, backend in ((8, "tpu"), (4, "cpu"), (4, "gpu")):
        lay = layouts.choose(idx, S.shape, itemsize, backend)
        assert lay.kind != "panels" and "panels" not in lay.estimate
    # nor past PANELS_AUTO_MAX_BYTES (its tiles are mostly padding), though it can still be asked for
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layouts, "PANELS_AUTO_MAX_BYTES", 1 << 20)
        assert layouts.choose(idx, S.shape, 4, "tpu").kind != "panels"
        assert layouts.choose(idx, S.shape, 4, "tpu", kind="panels").kind == "panels"


@pytest.mark.parametrize("pattern", ["scattered", "banded", "blocky"])
def test_block_slots_never_shrink_with_coarser_shapes(pattern):
    # estimate stops counting tiles once the smallest shape's slots rule out every larger one: that holds as
    # each shape is a multiple of the one before, so a coarse block covers whole fine ones
    rng = np.random.default_rng(3)
    n = 3000
    if pattern == "scattered":
        r, c = rng.integers(0, n, 20000), rng.integers(0, n, 20000)
    elif pattern == "banded":
        r = rng.integers(0, n, 20000)
        c = np.clip(r + rng.integers(-40, 41, 20000), 0, n - 1)
    else:
        b = rng.integers(0, n // 64, 400)
        r = (b[:, None] * 64 + rng.integers(0, 64, (400, 50))).ravel()
        c = (rng.permutation(n // 64)[b][:, None] * 64 + rng.integers(0, 64, (400, 50))).ravel()
    for shapes in (layouts.TILE_SHAPES, layouts.BLOCK_SHAPES):
        slots = [len(keys) * R * P for (R, P), (keys, counts, _) in layouts._block_counts(r, c, n, shapes)]
        assert len(slots) == len(shapes) and slots == sorted(slots)
        counts = [int(counts.sum()) for _, (_, counts, _) in layouts._block_counts(r, c, n, shapes)]
        assert counts == [len(r)] * len(shapes)


def test_the_automatic_choice_takes_sell_for_a_large_scattered_pattern():
    # 10 entries per row at random over 200,000 columns: too scattered for panels (its tiles would be
    # mostly padding), and the segmented kernel's blocks cost less than ELL's padded lane gathers per
    # product (TPU v5e: random 10^6 x 10^6 with 10^7 entries, 18.1 ms against 46.8). Only for float32 values
    # on a TPU (the kernel's dtype and chip), and not past PANELS_AUTO_MAX_BYTES.
    rng = np.random.default_rng(12)
    n, nnz = 200_000, 2_000_000
    idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, n, nnz)], 1)
    lay = layouts.choose(idx, (n, n), 4, "tpu", dtype=np.float32)
    assert lay.kind == "sell" and lay.perm is None
    assert lay.estimate["sell"] < lay.estimate["ell"] < lay.estimate["coo"]
    for itemsize, dtype, backend in ((4, np.int32, "tpu"), (8, np.float64, "tpu"), (4, np.float32, "cpu"),
                                     (4, np.float32, "gpu")):
        lay = layouts.choose(idx, (n, n), itemsize, backend, dtype=dtype, reorder=False)
        assert lay.kind != "sell" and "sell" not in lay.estimate
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layouts, "PANELS_AUTO_MAX_BYTES", 1 << 20)
        assert layouts.choose(idx, (n, n), 4, "tpu", dtype=np.float32, reorder=False).kind != "sell"


def test_eager_product_on_an_accelerator_takes_the_layout(monkeypatch):
    # No accelerator in CI: pretend the buffers live on a TPU; the XLA code it would run is checked here.
    monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: "tpu")
    S = MATRICES["symmetric"]
    A = _bcoo(S)
    x = np.random.default_rng(5).standard_normal(S.shape[1]).astype(np.float32)
    y = matmul.spmm_dense(A.data, A.indices, A.shape, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), S.toarray() @ x, atol=1e-4)


def test_prepare_errors():
    A = _bcoo(MATRICES["rect"])
    with pytest.raises(ValueError, match="layout="):
        accelerator.prepare(A, layout="csr")
    with pytest.raises(ValueError, match="fill value"):
        accelerator.prepare(A + 1)
    with pytest.raises(ValueError, match="outside jax.jit"):
        jax.jit(lambda A: accelerator.prepare(A).values)(A)
    op = accelerator.prepare(A, layout="ell")
    with pytest.raises(ValueError, match="needs"):
        op @ np.ones(3, np.float32)
    with pytest.raises(ValueError, match="nse"):
        op.with_data(jnp.ones(3))


@st.composite
def _patterns(draw):
    """A random 2-D pattern: shape, entries (duplicates and padding included), values."""
    m = draw(st.integers(1, 300))
    k = draw(st.integers(1, 300))
    nse = draw(st.integers(0, min(600, m * k + 20)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, m, nse), rng.integers(0, k, nse)
    q = nse // 4
    if q and draw(st.booleans()):  # a few duplicates
        rows[:q], cols[:q] = rows[-q:], cols[-q:]
    data = rng.standard_normal(nse).astype(np.float32)
    return (m, k), rows, cols, data


@settings(max_examples=12, deadline=None)
@given(case=_patterns(), layout=st.sampled_from(("dense", "dia", "tiles", "blocks", "ell", "panels", "sell", "coo")),
       mixed=st.sampled_from((None, True, False)))
def test_every_layout_on_random_patterns(case, layout, mixed):
    # Hypothesis for breadth: odd shapes, empty rows and columns, duplicates (they add up), with
    # padding entries (index == shape) that every layout must drop; panels with mixed or uniform tiles.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layouts, "PANELS_MIXED", mixed)
        _check_layout_on_pattern(case, layout)


def _check_layout_on_pattern(case, layout):
    shape, rows, cols, data = case
    S = sp.coo_array((data.astype(np.float64), (rows, cols)), shape=shape)
    pad = np.array([[shape[0], shape[1]]] * 3, np.int32)
    idx = np.concatenate([np.stack([rows, cols], 1).astype(np.int32), pad])
    A = xp.BCOOArray((jnp.asarray(np.concatenate([data, np.ones(3, np.float32)])), jnp.asarray(idx)), shape=shape)
    if layout == "dia" and len(set((cols - rows).tolist())) * shape[0] > 4 * max(len(rows), 1) + shape[0]:
        layout = "ell"  # diagonal storage of a scattered pattern would be mostly padding (allowed, slow)
    op = accelerator.prepare(A, layout=layout)
    D = S.toarray()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape[1]).astype(np.float32)
    y = rng.standard_normal(shape[0]).astype(np.float32)
    tol = 1e-5 * max(1.0, np.abs(D).sum(1).max(initial=0), np.abs(D).sum(0).max(initial=0))
    np.testing.assert_allclose(np.asarray(op @ x), D @ x, atol=tol)
    np.testing.assert_allclose(np.asarray(op.T @ y), D.T @ y, atol=tol)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_review_findings_shapes_dtypes_and_non_finite_columns(layout):
    # A new user's programs (review of 2026-12-05): SpMM with non-finite columns, one-column x,
    # integer operators keep their dtype through transposes, empty right-hand sides, complex x.
    S = sp.csr_array(np.array([[1, 0, 2], [0, 3, 0], [4, 0, 5], [0, 0, 0]], np.float32))
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    D = S.toarray().astype(np.float64)
    X = np.ones((3, 2), np.float32)
    X[2, 0] = np.inf
    with np.errstate(invalid="ignore"):
        want = S.astype(np.float64) @ X.astype(np.float64)  # scipy: unstored entries meet nothing
    got = np.asarray(op @ X)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-6)
    assert np.isinf(got[2, 0]) and got[3, 0] == 0  # inf only where a stored entry meets it
    one = np.arange(3, dtype=np.float32)[:, None]
    assert op.matvec(one).shape == (4, 1)
    np.testing.assert_allclose(np.asarray(op @ one), D @ one, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(op.T @ np.ones((4, 1), np.float32)), D.T @ np.ones((4, 1)), rtol=1e-6)
    assert np.asarray(op @ np.ones((3, 0), np.float32)).shape == (4, 0)
    np.testing.assert_allclose(np.asarray(op @ (one[:, 0] * (1 + 1j)).astype(np.complex64)), D @ one[:, 0] * (1 + 1j),
                               rtol=1e-6)
    if layout != "panels":  # panels holds 32-bit values
        Si = sp.csr_array(np.array([[1, 0, 2], [0, 3, 0], [4, 0, 5]], np.int8))
        opi = accelerator.prepare(xp.from_scipy(Si), layout=layout)
        v = np.arange(3, dtype=np.int8)
        V = np.arange(6, dtype=np.int8).reshape(3, 2)  # (the transposed SpMM of tiles and blocks crashed)
        for got_i, want_i in ((opi @ v, Si @ v), (opi.T @ v, Si.T @ v), (v @ opi, v @ Si), (opi.T @ V, Si.T @ V)):
            assert np.asarray(got_i).dtype == np.int8
            np.testing.assert_array_equal(np.asarray(got_i), want_i)


def test_review_findings_errors_and_adjoint():
    S = sp.csr_array(np.array([[1, 0, 2], [0, 3, 0]], np.float32))
    A = _bcoo(S)
    op = accelerator.prepare(A, layout="ell")
    with pytest.raises(ValueError, match="square operator"):
        accelerator.cg(op, np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"x @ op: x has shape \(3, 3\)"):
        np.ones((3, 3), np.float32) @ op
    with pytest.raises(TypeError, match="toarray"):
        op @ sp.csr_array(np.eye(3, dtype=np.float32))
    with pytest.raises(TypeError, match="todense"):
        _bcoo(sp.csr_array(np.eye(2, dtype=np.float32))) @ op
    with pytest.raises(TypeError, match="astype"):
        accelerator.prepare(xp.from_scipy(sp.csr_array(np.eye(3, dtype=bool))), layout="ell")
    with pytest.raises(TypeError, match="bcoo_array.asarray"):
        accelerator.prepare(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="2-D"):
        accelerator.prepare(xp.asarray(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="square"):
        accelerator.prepare(A, reorder=True)  # the CPU default (bcoo) path checks it too
    with pytest.raises(TypeError, match="reorder"):
        accelerator.prepare(A, reorder="no")
    with pytest.raises(ValueError, match="tile"):
        accelerator.prepare(A, layout="tiles", tile=(0, 128))
    if not jax.config.jax_enable_x64:
        with pytest.raises(ValueError, match="64-bit"):
            op @ np.ones(3)  # NumPy float64: no silent downcast to float32
    # rmatvec is scipy's adjoint (conjugate transpose) for complex values
    Sc = sp.csr_array(np.array([[1 + 2j, 0, 3j], [0, 2 - 1j, 0]], np.complex64))
    opc = accelerator.prepare(xp.from_scipy(Sc), layout="ell")
    y = np.array([1 - 1j, 2 + 0.5j], np.complex64)
    np.testing.assert_allclose(np.asarray(opc.rmatvec(y)), Sc.conj().T @ y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(opc.T @ y), Sc.T @ y, rtol=1e-6)


@pytest.mark.parametrize("unroll,mixed", [(1, False), (4, False), (8, False), (1, True), (8, True)])
def test_panels_kernel_over_several_grid_steps(monkeypatch, unroll, mixed):
    # More tiles than one grid step holds: the resident result accumulates across steps; with the tile
    # loop unrolled too (groups of tiles of one row block add up in registers, groups where a row block
    # ends add tile by tile: both occur here, 5 to 12 tiles per row block); uniform and mixed tiles.
    from bcoo_array._kernels import panels

    monkeypatch.setattr(panels, "TILE_UNROLL", unroll)
    monkeypatch.setattr(layouts, "PANELS_MIXED", mixed)

    S = sp.random_array((2500 if mixed else 1500, 1400), density=0.01, rng=11, format="csr").astype(np.float32)
    op = accelerator.prepare(_bcoo(S), layout="panels", reorder=False)
    T = op.arrays["lcols"].shape[0]
    assert T // panels._tiles_per_step(T) > 2 and op.arrays["meta"].shape[0] == (9 if mixed else 2)
    x = np.random.default_rng(12).standard_normal((1400, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(op @ x), S.astype(np.float64) @ x, atol=1e-4)


@pytest.mark.parametrize("n_tiles,n_rhs,unroll,meta_rows", [
    (40, 1, 1, 2), (3 * 64, 3, 1, 2), (3 * 64, 1, 4, 2), (3 * 64, 2, 8, 2), (9000, 1, 8, 2),
    (40, 1, 1, 9), (3 * 64, 2, 8, 9), (9000, 1, 8, 9)])
def test_panels_kernel_lowers_for_a_tpu(monkeypatch, n_tiles, n_rhs, unroll, meta_rows):
    # Lowered for a TPU on this CPU (jax.export to the "tpu" platform): the Mosaic lowering's own checks
    # (block shapes of (8, 128) or whole dimensions, SMEM blocks, supported ops) run without the chip.
    # One grid step of a small matrix and several steps of 64 and of TILES_PER_STEP tiles; uniform tiles
    # (2 rows of tile table) and mixed ones (9: a panel per sublane).
    from bcoo_array._kernels import panels

    monkeypatch.setattr(panels, "TILE_UNROLL", unroll)
    T = panels.pad_tiles(n_tiles)
    args = (np.zeros(T * 1024, np.float32), np.zeros((meta_rows, T), np.int32), np.full((T, 8, 128), -1, np.int32),
            np.zeros((n_rhs, 1000), np.float32))
    f = jax.jit(lambda v, m, c, x: panels.panels_kernel(v, m, c, x, shape=(900, 1000), interpret=False))
    exported = jax.export.export(f, platforms=["tpu"])(*args)
    assert "tpu_custom_call" in exported.mlir_module()


@pytest.mark.parametrize("layout", ("dense", "dia", "blocks", "panels", "coo"))
@pytest.mark.parametrize("dtype", (np.float32, np.complex64, np.int32))
def test_values_placed_on_the_host_equal_the_device_scatter(layout, dtype):
    # layouts.place_values_host (eager products, prepare) against accel.layout_values (the traced path):
    # duplicates add up, padding entries drop, the panels layout's transpose copy is filled as well.
    S = MATRICES["symmetric"]
    A = _bcoo(S)
    rng = np.random.default_rng(4)
    idx = np.concatenate([np.asarray(A.indices), np.asarray(A.indices)[:7], [[300, 300]]])  # 7 duplicates, 1 pad
    data = rng.standard_normal(len(idx)).astype(dtype)
    if np.dtype(dtype).kind == "i":
        data = rng.integers(-2**30, 2**30, len(idx)).astype(dtype)  # sums of duplicates wrap as XLA's do
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(len(idx)).astype(np.float32)
    lay = layouts.choose(idx, S.shape, 4, "tpu", kind=layout, reorder=False)
    host = layouts.place_values_host(data, lay.slot, lay.n_slots, lay.arrays.get("slot_t"))
    arrays = {k: jnp.asarray(v) for k, v in lay.arrays.items()}
    dev = accel.layout_values(jnp.asarray(data), jnp.asarray(lay.slot), arrays, lay.n_slots)
    assert host.dtype == np.dtype(dtype) and host.shape == (lay.n_slots,)
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(host, np.asarray(dev))
    else:
        np.testing.assert_allclose(host, np.asarray(dev), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("n", "densities", "kind"), [(512, (0.02, 0.0205), "blocks"), (60, (0.3, 0.31), "dense"),
                                                      (1500, (0.01, 0.0101), "panels"),
                                                      (2000, (0.005, 0.0052), "panels"), (300, (0.02, 0.021), "coo")])
def test_eager_products_compile_once_per_layout_not_per_nse(monkeypatch, n, densities, kind):
    # Eager products on an accelerator: two matrices of one shape and layout parameters but different nse
    # run one compiled program: the values are placed on the host, and the product takes no nse-sized
    # array (blocks, a vector; panels, its tiles padded to whole grid steps, the value buffer to a size
    # bucket, whatever its SELL parts hold: 2000 x 2000 made two programs before) or the stored entries
    # padded to a size bucket (dense: its non-finite check; coo: its entries).
    monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: "tpu")
    if kind == "blocks":  # the cheapest layout but dense and panels here
        monkeypatch.setattr(layouts, "AUTO_KINDS", ("blocks", "coo"))
    if kind == "coo":
        monkeypatch.setattr(layouts, "AUTO_KINDS", ("coo",))
    if kind in ("blocks", "dense"):  # taken where no layout of EAGER_KINDS is cheap (a larger matrix)
        monkeypatch.setattr(layouts, "EAGER_SHARE", 0.0)
    x = jnp.asarray(np.random.default_rng(6).standard_normal(n).astype(np.float32))
    mats = [sp.random_array((n, n), density=d, rng=s, format="csr").astype(np.float32)
            for s, d in zip((20, 21), densities)]
    plans = [layouts.choose(np.asarray(_bcoo(S).indices), S.shape, 4, "tpu", mixed_tiles=False, eager=True)
             for S in mats]
    assert plans[0].kind == plans[1].kind == kind and plans[0].static == plans[1].static
    assert mats[0].nnz != mats[1].nnz
    before = accel._compiled_product._cache_size()
    for S in mats:
        A = _bcoo(S)
        y = matmul.spmm_dense(A.data, A.indices, A.shape, x)
        np.testing.assert_allclose(np.asarray(y), S.astype(np.float64) @ np.asarray(x, np.float64), atol=1e-4)
    assert accel._compiled_product._cache_size() - before <= 1


def test_stored_entries_padded_to_a_size_bucket_give_the_same_fallback():
    # The non-finite fallback's COO arrays hold padding up to layouts.size_bucket: an inf of x at an
    # unstored position still gives 0 there, and the padding adds nothing (plain and transposed).
    keep = np.ones(MATRICES["rect"].shape[1])
    keep[[0, 5]] = 0  # two columns with no stored entry
    S = sp.csr_array(MATRICES["rect"] @ sp.diags_array(keep))
    S.eliminate_zeros()
    lay = layouts.choose(np.asarray(_bcoo(S).indices), S.shape, 4, "tpu", kind="dense")
    assert lay.arrays["u_rows"].shape[0] == layouts.size_bucket(S.nnz) > S.nnz
    assert [layouts.size_bucket(v) for v in (0, 1, 9, 17, 20000, 20480, 20481)] == [0, 8, 10, 20, 20480, 20480, 24576]
    op = accelerator.prepare(_bcoo(S), layout="dense")
    x = np.ones(S.shape[1], np.float32)
    x[0] = np.inf
    got = np.asarray(op @ x)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, S @ x.astype(np.float64), rtol=1e-5)
    y = np.ones(S.shape[0], np.float32)
    np.testing.assert_allclose(np.asarray(op.T @ y), S.T @ y.astype(np.float64), rtol=1e-5)


@pytest.mark.parametrize("layout", ("dense", "tiles", "blocks"))
def test_transposed_fallback_sums_sorted_rows(layout):
    # The non-finite fallback of A.T @ X takes the stored entries in column order (u_order_t): with the
    # dense layout's closed-form transpose every segment sum of the lowered program is sorted (a TPU compiles
    # an unsorted one of rows of X in about 8 s; tiles and blocks transpose their kernel's row gathers into
    # scatter-adds of their own), and with an inf in X the result is the stored entries' product, as scipy's.
    S = sp.csr_array(MATRICES["rect"])
    lay = layouts.choose(np.asarray(_bcoo(S).indices), S.shape, 4, "tpu", kind=layout)
    order = lay.arrays["u_order_t"]
    assert np.array_equal(np.sort(order), np.arange(len(order)))
    assert np.all(np.diff(lay.arrays["u_cols"][order]) >= 0)
    op = accelerator.prepare(_bcoo(S), layout=layout)
    Y = np.random.default_rng(3).standard_normal((S.shape[0], 5)).astype(np.float32)
    Y[1, 2] = np.inf
    text = jax.jit(lambda o, y: o.T @ y).lower(op, jnp.asarray(Y)).as_text()
    scatters = [line for line in text.splitlines() if '"stablehlo.scatter"' in line]
    assert scatters and (layout != "dense" or all("indices_are_sorted = true" in line for line in scatters))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = S.T.astype(np.float64) @ Y.astype(np.float64)
    got = np.asarray(op.T @ Y)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5, atol=1e-5)


def _pattern_pair(n: int, density: float, seed: int):
    """Indices of two random n x n patterns with about ``density * n * n`` entries each (a few apart)."""
    out = []
    for s, d in ((seed, density), (seed + 1, density * 1.02)):
        S = sp.random_array((n, n), density=d, rng=s, format="coo")
        out.append(np.stack([S.row, S.col], 1))
    assert len(out[0]) != len(out[1])
    return out


def _compile_key(lay):
    """What an eager product's compiled program depends on: the layout's kind, static parameters and the
    shapes of the arrays it reads (``accel.compiled_product`` passes no ``slot_t``)."""
    return (lay.kind, accel.freeze_static(lay.static),
            tuple(sorted((k, a.shape) for k, a in lay.arrays.items() if k != "slot_t")), lay.perm is None)


@pytest.mark.parametrize(("n", "density", "itemsize", "dtype", "prepared", "two_programs"), [
    (494, 0.007, 8, np.complex64, "blocks", True),  # 494_bus's size: blocks (two programs) for an operator
    (500, 0.006, 8, np.float64, "blocks", False),  # (every block of this one holds entries: one program)
    (60, 0.3, 4, np.float32, "dense", False),
    (300, 0.05, 8, np.complex64, "dense", False),
])
def test_eager_choice_takes_a_layout_compiled_once_per_size_bucket(n, density, itemsize, dtype, prepared,
                                                                   two_programs):
    # A prepared operator takes the cheapest layout per product, here one whose program follows the pattern
    # (blocks: its row-length buckets and chunk size) or compiles slowly (dense); an eager product, where a
    # layout of EAGER_KINDS costs under half a call's dispatch, takes that one: another matrix of the same
    # shape and about the same nse then runs the same compiled program.
    pair = _pattern_pair(n, density, 40)
    lays = [layouts.choose(idx, (n, n), itemsize, "tpu", dtype=dtype) for idx in pair]
    assert [lay.kind for lay in lays] == [prepared, prepared]
    eager = [layouts.choose(idx, (n, n), itemsize, "tpu", dtype=dtype, mixed_tiles=False, eager=True)
             for idx in pair]
    assert eager[0].kind in layouts.EAGER_KINDS
    assert _compile_key(eager[0]) == _compile_key(eager[1])
    assert (_compile_key(lays[0]) != _compile_key(lays[1])) == two_programs  # (what the eager choice avoids)


def test_eager_choice_keeps_the_cheapest_layout_where_the_preferred_ones_cost_more():
    # Where every layout of EAGER_KINDS costs more than half a call's dispatch (COSTS["tpu"]["dispatch"]),
    # and on a backend without a measured dispatch, the eager choice is the prepared operator's.
    n = 2000
    idx = _pattern_pair(n, 0.005, 50)[0]
    lay = layouts.choose(idx, (n, n), 8, "tpu", dtype=np.complex64, mixed_tiles=False, eager=True)
    assert lay.kind == layouts.choose(idx, (n, n), 8, "tpu", dtype=np.complex64).kind == "blocks"
    assert min(lay.estimate[k] for k in layouts.EAGER_KINDS if k in lay.estimate) \
        > layouts.EAGER_SHARE * layouts.COSTS["tpu"]["dispatch"]
    small = _pattern_pair(494, 0.007, 40)[0]
    assert layouts.choose(small, (494, 494), 8, "gpu", dtype=np.complex64, eager=True).kind \
        == layouts.choose(small, (494, 494), 8, "gpu", dtype=np.complex64).kind


def test_eager_complex_products_compile_once_per_size_bucket(monkeypatch):
    # Through the eager hook: two complex matrices of one shape and different patterns, one compiled program
    # (blocks, the prepared operator's layout here, compiled once per pattern before), results as NumPy's.
    # A traced product (a jitted function closing over A, which may loop over it) takes the prepared
    # operator's layout, the cheapest per product.
    monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: "tpu")
    kinds = []
    compiled = accel.compiled_product

    def spy(*args, **kwargs):
        kinds.append(kwargs["kind"])
        return compiled(*args, **kwargs)

    monkeypatch.setattr(accel, "compiled_product", spy)
    n = 494
    rng = np.random.default_rng(41)
    x = jnp.asarray((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64))
    before = accel._compiled_product._cache_size()
    for idx in _pattern_pair(n, 0.007, 40):
        vals = (rng.standard_normal(len(idx)) + 1j * rng.standard_normal(len(idx))).astype(np.complex64)
        A = xp.BCOOArray((jnp.asarray(vals), jnp.asarray(idx, jnp.int32)), shape=(n, n))
        y = matmul.spmm_dense(A.data, A.indices, A.shape, x)
        ref = sp.coo_array((vals.astype(np.complex128), idx.T), shape=(n, n)) @ np.asarray(x, np.complex128)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)
    assert accel._compiled_product._cache_size() - before <= 1
    y = jax.jit(lambda v: matmul.spmm_dense(A.data, A.indices, A.shape, v))(x)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)
    assert kinds == ["coo", "coo", "blocks"]


_EDGE_CASES = {
    "no rows": (sp.csr_array((0, 40), dtype=np.float32), np.float32),
    "no columns": (sp.csr_array((5, 0), dtype=np.float32), np.float32),
    "no entries": (sp.csr_array((50, 40), dtype=np.float32), np.float32),
    "complex x": (sp.random_array((50, 40), density=0.1, rng=1, format="csr").astype(np.float32), np.complex64),
    "complex A": (sp.csr_array(sp.random_array((50, 40), density=0.1, rng=2, format="csr") * (1 + 2j))
                  .astype(np.complex64), np.float32),
}


@pytest.mark.parametrize("case", sorted(_EDGE_CASES))
@pytest.mark.parametrize("ncols", [None, 3])
def test_eager_accelerator_product_edge_cases(monkeypatch, case, ncols):
    # The eager hook's layouts (values placed on the host, padded fallback arrays) on empty shapes,
    # matrices without entries and mixed real/complex operands, against dense NumPy.
    monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: "tpu")
    S, xdtype = _EDGE_CASES[case]
    A = xp.from_scipy(S)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((S.shape[1],) if ncols is None else (S.shape[1], ncols)).astype(xdtype)
    if np.dtype(xdtype).kind == "c":
        x = x + 1j * rng.standard_normal(x.shape).astype(np.float32)
    y = matmul.spmm_dense(A.data, A.indices, A.shape, jnp.asarray(x))
    ref = S.toarray().astype(np.complex128) @ x.astype(np.complex128)
    assert y.shape == ref.shape and y.dtype == np.result_type(S.dtype, xdtype)
    np.testing.assert_allclose(np.asarray(y), ref, atol=1e-5)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_integer_matrix_without_entries_transposes_to_integer_zeros(layout):
    # op.T @ x of an integer matrix without stored entries: int32 zeros of the transpose's shape, one
    # vector or several columns (JAX's transpose of a product that reads nothing gave a float0 array; a review).
    A = xp.BCOOArray((jnp.zeros(0, jnp.int32), jnp.zeros((0, 2), jnp.int32)), shape=(10, 7))
    op = accelerator.prepare(A, layout=layout)
    for x, shape in ((np.ones(10, np.int32), (7,)), (np.ones((10, 3), np.int32), (7, 3))):
        y = op.T @ x
        assert y.dtype == np.int32 and y.shape == shape and not np.any(np.asarray(y))


_TRIDIAGONAL = sp.diags_array([-np.ones(39), 2 * np.ones(40), -np.ones(39)], offsets=[-1, 0, 1], format="csr")


_COMPLETE_CASES = [(_TRIDIAGONAL, "dia"), (sp.csr_array(np.diag(np.arange(1.0, 6.0)) + np.diag(np.ones(4), 1)), "dia"),
                   (sp.csr_array(np.diag(np.arange(1.0, 6.0))[:, :4] + np.diag(np.ones(5), 1)[:5, :4]), "dia")]


@pytest.mark.parametrize(("S", "layout"), _COMPLETE_CASES)
def test_complete_layouts_need_no_check_and_keep_ieee_products(S, layout):
    # A dia layout whose diagonals are stored wherever they lie inside the matrix (a 1-D stencil; a
    # rectangular band) multiplies no padding: no non-finite check and no fallback arrays; an inf or NaN of
    # x meets stored entries only, exactly as scipy's product (plain and transposed). A full matrix in the
    # dense layout keeps its check (a TPU's multi-pass f32 matmul splits an inf into inf - inf).
    op = accelerator.prepare(_bcoo(S), layout=layout)
    assert dict(op.static)["complete"] is True and not any(n.startswith("u_") for n in op.arrays)
    assert not accel.needs_check(layout, dict(op.static), 1)
    x = np.random.default_rng(3).standard_normal(S.shape[1]).astype(np.float32)
    x[1], x[-1] = np.inf, np.nan
    with np.errstate(invalid="ignore"):
        _assert_same_non_finite(np.asarray(op @ x), S.astype(np.float64) @ x.astype(np.float64))
        y = np.random.default_rng(4).standard_normal(S.shape[0]).astype(np.float32)
        y[0] = -np.inf
        _assert_same_non_finite(np.asarray(op.T @ y), S.T.astype(np.float64) @ y.astype(np.float64))
    # one in-range entry missing: not complete, checked
    D = S.toarray()
    D[2, 2] = 0
    op2 = accelerator.prepare(_bcoo(sp.csr_array(D)), layout=layout)
    assert dict(op2.static)["complete"] is False and "u_rows" in op2.arrays
    full = accelerator.prepare(_bcoo(sp.csr_array(np.arange(1.0, 31.0).reshape(5, 6))), layout="dense")
    assert accel.needs_check("dense", dict(full.static), 1) and "u_rows" in full.arrays


@pytest.mark.parametrize("layout", ("dense", "dia", "tiles", "blocks"))
def test_fallback_entries_are_sorted_by_row(layout):
    # the fallback's segment sum is told its rows are sorted (undefined on an accelerator otherwise)
    S = MATRICES["symmetric"]
    lay = layouts.choose(np.asarray(_bcoo(S).indices)[::-1], S.shape, 4, "tpu", kind=layout, reorder=False)
    r, c = lay.arrays["u_rows"], lay.arrays["u_cols"]
    assert len(r) >= S.nnz
    key = r.astype(np.int64) * (S.shape[1] + 1) + c
    assert (np.diff(key) >= 0).all()


def test_coo_layout_adds_duplicates_before_they_meet_x():
    # 2 and -1 at one position are the value 1: 1 * inf is inf (each duplicate times inf: inf - inf = NaN)
    A = xp.BCOOArray((jnp.array([2.0, -1.0, 3.0], jnp.float32), jnp.array([[0, 0], [0, 0], [1, 1]], jnp.int32)),
                     shape=(2, 2))
    x = np.array([np.inf, 1.0], np.float32)
    for layout in ("coo", "bcoo", "ell", "dense"):
        op = accelerator.prepare(A, layout=layout)
        np.testing.assert_array_equal(np.asarray(op @ x), [np.inf, 3.0])
        np.testing.assert_array_equal(np.asarray(op.T @ x), [np.inf, 3.0])


def test_host_placement_keeps_complex_non_finite_parts():
    # the real and imaginary parts add separately: an inf imaginary part must not turn the real part NaN
    data = np.array([complex(1, np.inf), complex(2, np.nan), complex(np.inf, 3), 4 + 0j], np.complex64)
    got = layouts.place_values_host(data, np.array([0, 4, 8, 8]), 9)
    ref = np.asarray(accel.place_values(jnp.asarray(data), jnp.array([0, 4, 8, 8]), 9))
    np.testing.assert_array_equal(got, ref)
    assert got[0].real == 1 and got[4].real == 2 and np.isinf(got[8].real) and got[8].imag == 3


@pytest.mark.parametrize("platform", [None, "tpu"])
@pytest.mark.parametrize("shape", [(0, 5), (5, 0)])
def test_grad_of_an_empty_matrix_with_padding_entries(monkeypatch, platform, shape):
    # every entry is padding (index = shape): gradients are zeros, with respect to the data and to x,
    # on the CPU kernels and on the accelerator layouts
    if platform:
        monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: platform)
    idx = jnp.asarray(np.broadcast_to(np.array(shape, np.int32), (2, 2)))
    data = jnp.array([1.0, 2.0], jnp.float32)
    x = jnp.ones(shape[1], jnp.float32)
    g = jax.grad(lambda d: jnp.sum(matmul.spmm_dense(d, idx, shape, x)))(data)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0])
    gx = jax.grad(lambda v: jnp.sum(matmul.spmm_dense(data, idx, shape, v)))(x)
    assert gx.shape == x.shape and not np.asarray(gx).any()
    A = xp.BCOOArray((data, idx), shape=shape)
    ga = jax.grad(lambda d: jnp.sum(xp.BCOOArray((d, idx), shape=shape) @ x))(data)
    np.testing.assert_array_equal(np.asarray(ga), [0.0, 0.0])
    assert (A @ x).shape == (shape[0],)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("ncols", (None, 3))
def test_grad_of_the_values_with_non_finite_x_at_unstored_columns(layout, ncols):
    # d sum(W * (A @ X)) / d A[r, c] = W[r] . X[c]: finite for every stored entry when X's inf and NaN sit in
    # columns with no stored entry. Layouts that store zeros compute the product, find it non-finite and
    # fall back to the stored entries; the padding's 0 * inf must not reach the values' gradient (it did
    # for the blocks SpMM, whose one-hot products read whole panels of X: NaN).
    keep = np.ones(MATRICES["rect"].shape[1])
    keep[[0, 5]] = 0  # two columns with no stored entry
    S = sp.csr_array(MATRICES["rect"] @ sp.diags_array(keep)).astype(np.float32)
    S.eliminate_zeros()
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    rng = np.random.default_rng(31)
    shape = (S.shape[1],) if ncols is None else (S.shape[1], ncols)
    X = rng.standard_normal(shape).astype(np.float32)
    X[0], X[5] = np.inf, np.nan
    W = rng.standard_normal((S.shape[0],) + shape[1:]).astype(np.float32)
    gd = jax.grad(lambda d: jnp.sum(jnp.asarray(W) * (op.with_data(d) @ jnp.asarray(X))))(A.data)
    rows, cols = np.asarray(A.indices).T
    ref = W[rows] * X[cols] if ncols is None else np.sum(W[rows] * X[cols], axis=1)
    np.testing.assert_allclose(np.asarray(gd), ref, rtol=1e-5, atol=1e-5)


def test_eager_products_take_the_faster_compiling_panels_kernel(monkeypatch):
    # An eager product's first call compiles its kernel: the hook's panels layout has uniform tiles and
    # unrolls its tile loop once for a small matrix (EAGER_TILE_UNROLL times past EAGER_SMALL_TILES tiles);
    # a prepared operator (a solver's loop) takes the cheaper tiles per product (mixed, for this scattered
    # pattern) and TILE_UNROLL.
    from bcoo_array._kernels import panels

    monkeypatch.setattr(matmul, "_accelerator_platform", lambda data, indices: "tpu")
    seen = []
    kernel = panels.panels_kernel

    def spy(*args, **kwargs):
        seen.append((kwargs.get("unroll"), "mixed" if args[1].shape[0] > 2 else "uniform"))
        return kernel(*args, **kwargs)

    monkeypatch.setattr(panels, "panels_kernel", spy)
    S = sp.random_array((1500, 1400), density=0.01, rng=13, format="csr").astype(np.float32)
    x = np.random.default_rng(14).standard_normal(1400).astype(np.float32)
    A = _bcoo(S)
    y = matmul.spmm_dense(A.data, A.indices, A.shape, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), S.astype(np.float64) @ x, atol=1e-4)
    assert seen == [(1, "uniform")]
    assert [panels.eager_tile_unroll(t) for t in (0, 256, panels.EAGER_SMALL_TILES, panels.EAGER_SMALL_TILES + 1)] \
        == [1, 1, 1, panels.EAGER_TILE_UNROLL]
    op = accelerator.prepare(A, layout="panels", reorder=False)
    np.testing.assert_allclose(np.asarray(op @ x), S.astype(np.float64) @ x, atol=1e-4)
    assert seen[1:] == [(None, "mixed")]  # panels_kernel reads TILE_UNROLL


@pytest.mark.parametrize("layout", LAYOUTS)
def test_grad_of_the_values_with_an_inf_of_x_at_a_stored_column(layout):
    # d sum(W * (A @ X)) / d A[r, c] = W[r] . X[c], +-inf where X[c] holds an inf: the layouts that store
    # zeros fall back to the stored entries, and their kernel's own derivative (a zero cotangent times x)
    # must not turn it into NaN (review of 2026-12-06: dense, tiles and dia gave NaN).
    S = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0], [4, 0, 0]], np.float32))
    A = _bcoo(S)
    op = accelerator.prepare(A, layout=layout)
    for X in (np.array([np.inf, 1.0, -2.0], np.float32), np.array([[np.inf, 1.0], [1, 2], [-2, 0.5]], np.float32)):
        W = np.arange(1.0, 1.0 + 3 * X[0].size, dtype=np.float32).reshape((3,) + X.shape[1:])
        gd = jax.grad(lambda d: jnp.sum(jnp.asarray(W) * (op.with_data(d) @ jnp.asarray(X))))(A.data)
        rows, cols = np.asarray(A.indices).T
        ref = W[rows] * X[cols] if X.ndim == 1 else np.sum(W[rows] * X[cols], axis=1)
        np.testing.assert_array_equal(np.asarray(gd), ref)


def test_reordering_asked_for_prices_every_reorderable_layout():
    # A band under a random symmetric permutation: RCM recovers the band, where only the diagonal layout
    # would be priced; reorder=True must still pick the cheapest reorderable layout of the reordered
    # matrix (review of 2026-12-06: it took ell, 4.5x the panels layout's cost without the reordering).
    n = 2000
    band = sp.diags_array([np.ones(n - abs(o)) for o in range(-5, 6)], offsets=list(range(-5, 6))).tocsr()
    p = np.random.default_rng(6).permutation(n)
    S = band[p][:, p].tocoo()
    idx = np.stack([S.row, S.col], 1)
    plain = layouts.choose(idx, S.shape, 4, "tpu", reorder=False)
    asked = layouts.choose(idx, S.shape, 4, "tpu", reorder=True)
    assert asked.perm is not None and asked.kind in ("tiles", "blocks", "panels")
    assert asked.estimate[asked.kind] <= plain.estimate[plain.kind]


def test_reordering_left_unpriced_where_it_keeps_the_spread(monkeypatch):
    # A random pattern: RCM leaves its entries as far from the diagonal as they were, so the reordered
    # matrix is not priced (a second estimate); a scrambled band still gets its reordering, and
    # reorder=True prices it whatever the spread.
    calls = []
    real = layouts.estimate
    monkeypatch.setattr(layouts, "estimate", lambda *a, **kw: calls.append(kw.get("full")) or real(*a, **kw))
    n = 3000
    S = sp.random_array((n, n), density=20 / n, rng=np.random.default_rng(3), format="coo")
    idx = np.stack([S.row, S.col], 1)
    r, c, v = S.row.astype(np.int64), S.col.astype(np.int64), np.ones(S.nnz, bool)
    inv = np.argsort(layouts._rcm(r, c, v, n))
    assert layouts._spread(inv[r], inv[c], v) > 0.95 * layouts._spread(r, c, v)  # clear of the 0.9 gate
    lay = layouts.choose(idx, S.shape, 8, "cpu")
    assert lay.kind in layouts.REORDERABLE and lay.perm is None and calls == [False]
    calls.clear()
    assert layouts.choose(idx, S.shape, 8, "cpu", reorder=True).perm is not None and len(calls) == 2
    band = sp.diags_array([np.ones(n - abs(o)) for o in range(-40, 41)], offsets=list(range(-40, 41))).tocsr()
    p = np.random.default_rng(6).permutation(n)
    B = band[p][:, p].tocoo()
    calls.clear()
    lay = layouts.choose(np.stack([B.row, B.col], 1), B.shape, 4, "gpu")
    assert lay.perm is not None and len(calls) == 2


@pytest.mark.parametrize("shape", [(5, 0), (0, 5)])
def test_panels_of_a_matrix_without_rows_or_columns(shape):
    # Only padding entries: complex operands (the XLA formula) and the values' gradient must not take from
    # an empty axis (review of 2026-12-06).
    m, k = shape
    A = xp.BCOOArray((jnp.ones(2, jnp.float32), jnp.asarray(np.array([[m, k], [m, k]], np.int32))), shape=shape)
    op = accelerator.prepare(A, layout="panels")
    for dtype in (np.float32, np.complex64):
        np.testing.assert_array_equal(np.asarray(op @ jnp.ones(k, dtype)), np.zeros(m, dtype))
        np.testing.assert_array_equal(np.asarray(op.T @ jnp.ones(m, dtype)), np.zeros(k, dtype))
    g = jax.grad(lambda d: jnp.sum(op.with_data(d) @ jnp.ones(k, jnp.float32)))(A.data)
    gt = jax.grad(lambda d: jnp.sum(op.with_data(d).T @ jnp.ones(m, jnp.float32)))(A.data)
    np.testing.assert_array_equal(np.asarray(g), [0, 0])
    np.testing.assert_array_equal(np.asarray(gt), [0, 0])


def test_panels_values_gradient_with_complex_x_is_the_real_part():
    # float32 values, complex64 x: the cotangent of a real input is the real part (no complex-to-real cast,
    # which JAX deprecates), as the other layouts give.
    A = _bcoo(sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]], np.float32)))
    x = jnp.array([1 + 1j, 2, 3j], jnp.complex64)
    for layout in ("coo", "panels"):
        op = accelerator.prepare(A, layout=layout)
        g = jax.grad(lambda d: jnp.real(jnp.sum(op.with_data(d) @ x)))(A.data)
        np.testing.assert_allclose(np.asarray(g), [1, 0, 2])


def test_a_forced_layout_keeps_no_reordering_that_does_not_pay():
    # Poisson 40^2: dia wins outright, yet a forced panels layout is priced with and without RCM (review of
    # 2026-12-06: the unpriced plain layout counted as infinitely costly, so RCM was always kept).
    lay = layouts.choose(np.asarray(_bcoo(_poisson(40)).indices), (1600, 1600), 4, "tpu", kind="panels")
    assert lay.kind == "panels" and lay.perm is None


@pytest.mark.parametrize("mixed", (False, True))
def test_panel_tile_positions_place_every_entry_once(mixed):
    # Host packing of the panels layout: every unique entry gets its own slot, on its row's lane of a
    # tile of its row block, in a sublane that reads its column's panel; tiles of a row block are
    # consecutive; the count is the cost model's.
    from bcoo_array._kernels import panels

    for seed in range(6):
        rng = np.random.default_rng(seed)
        m, k = (int(v) for v in rng.integers(1, 700, 2))
        S = sp.coo_array(sp.random_array((m, k), density=float(rng.uniform(0.002, 0.2)), rng=seed)
                         + sp.eye(m, k, 3, format="coo"))
        S.sum_duplicates()
        order = np.lexsort((S.col, S.row))
        r, c = S.row[order].astype(np.int64), S.col[order].astype(np.int64)
        slot, meta, n_tiles = panels.tile_positions(r, c, (m, k), mixed)
        assert len(np.unique(slot)) == len(slot) and slot.max() < n_tiles * 1024
        assert n_tiles == panels.tile_counts(r, c, (m, k))[int(mixed)]
        tile, sub, lane = slot // 1024, slot % 1024 // 128, slot % 128
        np.testing.assert_array_equal(meta[0][tile] * 128 + lane, r)
        np.testing.assert_array_equal((meta[1:][sub, tile] if mixed else meta[1][tile]), c // 128)
        assert meta.shape == ((9 if mixed else 2), n_tiles) and (np.diff(meta[0]) >= 0).all()


def test_panels_tiles_are_mixed_where_groups_are_shallow():
    # The cost model packs a scattered pattern's shallow groups into mixed tiles (fewer tiles), and
    # keeps uniform tiles for a wide band (its groups fill whole tiles).
    rng = np.random.default_rng(3)
    scattered = sp.random_array((3000, 3000), density=0.003, rng=rng, format="coo")
    band = sp.coo_array(sp.diags([np.ones(3000 - abs(d)) for d in range(-40, 41)], list(range(-40, 41))))
    for S, mixed in ((scattered, True), (band, False)):
        lay = layouts.choose(np.stack([S.row, S.col], 1), S.shape, 4, "tpu", kind="panels", reorder=False)
        assert lay.arrays["meta"].shape[0] == (9 if mixed else 2)
        assert ("mixed tiles" in lay.describe()) == mixed


def test_panels_takes_its_sell_slots_for_many_columns(monkeypatch):
    # Many columns of x on a scattered pattern: the panels kernel's cost grows with the columns, the SELL
    # kernel's (a row of x per stored entry) does not up to 128, so the panels layout runs its SELL-8 slots
    # (the value buffer's third and fourth parts); a few columns stay on the panels kernel. Same results,
    # transposes, values' gradients and vmap either way (the SELL kernel in interpret mode on a CPU).
    from bcoo_array._kernels import sell

    rng = np.random.default_rng(21)
    n = 3000
    rows, cols = rng.integers(0, n, 4500), rng.integers(0, n, 4500)
    data = rng.standard_normal(4500).astype(np.float32)
    S = sp.coo_array((data.astype(np.float64), (rows, cols)), shape=(n, n))  # duplicates add up
    A = xp.BCOOArray((jnp.asarray(data), jnp.asarray(np.stack([rows, cols], 1).astype(np.int32))), shape=(n, n))
    op = accelerator.prepare(A, layout="panels", reorder=False)
    tiles, slots = op.arrays["lcols"].shape[0], op.arrays["s_rows"].shape[0]
    mixed = op.arrays["meta"].shape[0] > 2
    assert not sell.sell_is_cheaper(tiles, mixed, slots, 8, (n, n), True)
    assert sell.sell_is_cheaper(tiles, mixed, slots, 160, (n, n), True)
    calls = []
    real = sell.sell_kernel
    monkeypatch.setattr(sell, "sell_kernel", lambda *a, **kw: calls.append(a[3].shape) or real(*a, **kw))
    for n_rhs, wide in ((8, False), (160, True)):
        X = rng.standard_normal((n, n_rhs)).astype(np.float32)
        calls.clear()
        np.testing.assert_allclose(np.asarray(op @ X), S @ X.astype(np.float64), atol=2e-4)
        assert bool(calls) == wide
        calls.clear()
        np.testing.assert_allclose(np.asarray(op.T @ X), S.T @ X.astype(np.float64), atol=2e-4)
        assert bool(calls) == wide  # the transpose's own SELL slots
        W = rng.standard_normal((n, n_rhs)).astype(np.float32)
        g = jax.grad(lambda d: jnp.sum(W * (op.with_data(d) @ X)))(A.data)
        np.testing.assert_allclose(np.asarray(g), np.sum(W[rows] * X[cols], axis=1), rtol=1e-4, atol=1e-4)
        gx = jax.grad(lambda z: jnp.sum(W * (op @ z)))(jnp.asarray(X))
        np.testing.assert_allclose(np.asarray(gx), S.T @ W.astype(np.float64), atol=2e-4)
    V = rng.standard_normal((160, n)).astype(np.float32)  # vmap over 160 vectors: 160 right-hand sides
    calls.clear()
    got = jax.jit(jax.vmap(lambda v: op @ v))(jnp.asarray(V))
    assert calls and calls[0] == (n, 160)
    np.testing.assert_allclose(np.asarray(got), (S @ V.T.astype(np.float64)).T, atol=2e-4)
    Wv = rng.standard_normal((160, n)).astype(np.float32)
    g = jax.grad(lambda d: jnp.sum(Wv * jax.vmap(lambda v: op.with_data(d) @ v)(jnp.asarray(V))))(A.data)
    np.testing.assert_allclose(np.asarray(g), np.sum(Wv.T[rows] * V.T[cols], axis=1), rtol=1e-4, atol=1e-4)
    jv = jax.jvp(lambda d: jax.vmap(lambda v: op.with_data(d) @ v)(jnp.asarray(V)), (A.data,), (A.data,))[1]
    np.testing.assert_allclose(np.asarray(jv), (S @ V.T.astype(np.float64)).T, atol=2e-4)  # linear in the values
    Xb = rng.standard_normal((2, n, 80)).astype(np.float32)  # vmap: 2 x 80 columns run as 160
    calls.clear()
    got = jax.vmap(lambda z: op @ z)(jnp.asarray(Xb))
    assert calls[0] == (n, 160)
    for i in range(2):
        np.testing.assert_allclose(np.asarray(got[i]), S @ Xb[i].astype(np.float64), atol=2e-4)


@pytest.mark.parametrize("name, tiles, mixed, slots, n, n_rhs, sell_wins", [
    ("nh2010", 4736, True, 262144, 48837, 128, True), ("nh2010", 4736, True, 262144, 48837, 16, False),
    ("delaunay_n16", 3584, True, 393216, 65536, 128, True), ("cage11", 1664, True, 655360, 39082, 128, True),
    ("bayer10", 704, True, 98304, 13436, 128, True), ("bayer10", 704, True, 98304, 13436, 16, False),
    ("bcsstk16", 640, False, 327680, 4884, 128, False)])
def test_the_sell_choice_follows_the_chip_measurements(name, tiles, mixed, slots, n, n_rhs, sell_wins):
    # The panels layouts of five shared matrices (tile counts and SELL slots as built here) and the kernel
    # that was faster on a TPU v5e (benchmarks/accelerator.py, in a loop): SELL at 128 columns but on
    # bcsstk16's uniform tiles (0.43 against 0.71 ms), the panels kernel at 16 columns everywhere.
    from bcoo_array._kernels import sell

    assert sell.sell_is_cheaper(tiles, mixed, slots, n_rhs, (n, n), True) == sell_wins


def _canonical(S):
    """A scipy matrix as a canonical CSR array (explicit zeros dropped, indices sorted) and its COO form."""
    S = sp.csr_array(S)
    S.eliminate_zeros()
    S.sort_indices()
    return S, S.tocoo()


@pytest.mark.parametrize("slots_per_step", (128, 256, 2048))
def test_sell_kernel_in_interpret_mode_matches_scipy(slots_per_step):
    # The SELL-8 kernel (interpret mode) and its XLA formula against scipy: rows of every length, a dense row
    # whose slice straddles grid steps, empty rows and columns, odd depths (the depth loop's remainder),
    # more than 128 columns (two calls), and an inf of x in a column without entries (never read).
    from bcoo_array._kernels import sell

    rng = np.random.default_rng(slots_per_step)
    m, k = 203, 150
    S = sp.random_array((m, k), density=0.04, rng=rng, format="lil").astype(np.float32)
    S[7, :140] = rng.standard_normal(140)
    S[:, 149] = 0
    S[50:60, :] = 0
    S, C = _canonical(S)
    slot, table, s_rows, s_cols = sell.sell_tables(C.row, C.col, (m, k), slots_per_step)
    assert len(np.unique(slot)) == len(slot) and table.shape[1] % 128 == 0
    np.testing.assert_array_equal(s_rows[slot], C.row)
    np.testing.assert_array_equal(s_cols[slot], C.col)
    assert np.all((s_rows == m) | np.isin(np.arange(len(s_rows)), slot))  # every other slot is padding
    vals = np.zeros(len(s_rows), np.float32)
    vals[slot] = C.data
    X = rng.standard_normal((k, 130)).astype(np.float32)
    X[149, :] = np.inf
    ref = S.astype(np.float64) @ np.where(np.isfinite(X), X, 0).astype(np.float64)
    args = (jnp.asarray(vals), jnp.asarray(table), jnp.asarray(s_cols), jnp.asarray(X))
    for unroll in (1, 2, 3):
        got = sell.sell_kernel(*args, shape=(m, k), interpret=True, unroll=unroll)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    got = sell.sell_reference(jnp.asarray(vals), jnp.asarray(s_rows), jnp.asarray(s_cols), jnp.asarray(X),
                              shape=(m, k))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)


def _segmented_args(C, shape, pad=None, width=1):
    """The segmented kernel's tables (of ``width`` columns) of a COO matrix ``C`` (sorted by row) and its
    values in slot order."""
    from bcoo_array._kernels import segmented

    slot, arrays = segmented.segmented_tables(C.row, C.col, shape, pad=pad, width=width)
    vals = np.zeros(arrays["seg_cols"].size, np.float32)
    vals[slot] = C.data
    return slot, arrays, vals


def test_segmented_kernel_in_interpret_mode_matches_scipy():
    # The one-vector kernel (interpret mode) and its XLA formula against scipy: a row long enough to span
    # several segments and blocks, empty rows and columns, rows that end exactly at a segment's end, more
    # windows than blocks, and inf and NaN in x: an inf in a column without entries and a NaN beside read
    # columns in the same row of packed x never reach a sum (each slot keeps its own lane).
    from bcoo_array._kernels import segmented

    rng = np.random.default_rng(3)
    m, k = 1300, 700
    S = sp.random_array((m, k), density=0.01, rng=rng, format="lil").astype(np.float32)
    S[7, :600] = rng.standard_normal(600)
    S[9, :128] = rng.standard_normal(128)  # fills segment(s) to the lane
    S[:, 149] = 0
    S[:, 300] = 0
    S[50:60, :] = 0
    S, C = _canonical(S)
    slot, arrays, vals = _segmented_args(C, (m, k))
    assert len(np.unique(slot)) == len(slot)
    rows, cols = arrays["seg_rows"].reshape(-1), arrays["seg_cols"].reshape(-1)
    np.testing.assert_array_equal(rows[slot], C.row)
    np.testing.assert_array_equal(cols[slot], C.col)
    assert np.all(np.isin(np.arange(len(rows)), slot) | (cols == k))  # the rest is padding
    assert np.all(np.diff(rows) >= 0)  # padding takes the row before it: sorted rows for the COO formula
    assert (len(rows), len(rows) // 1024) == (arrays["seg_out"].size * 128, arrays["seg_out"].shape[0] * 8)
    assert segmented.slot_count(C.row, m)[0] <= len(rows)
    x = rng.standard_normal(k).astype(np.float32)
    x[149], x[300] = np.inf, np.nan
    ref = S.astype(np.float64) @ np.where(np.isfinite(x), x, 0).astype(np.float64)
    tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
    for unroll in (None, 3, 128):  # a loop of one lane (interpret mode's default), of 3 with a remainder, none
        got = segmented.segmented_kernel(jnp.asarray(vals), *tables, jnp.asarray(x), shape=(m, k), interpret=True,
                                         unroll=unroll)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    got = segmented.segmented_reference(jnp.asarray(vals), jnp.asarray(arrays["seg_rows"]),
                                        jnp.asarray(arrays["seg_cols"]), jnp.asarray(x), shape=(m, k))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    # a stored inf times a finite x, and an x of inf read by a stored entry: inf, as scipy gives
    vals2 = vals.copy()
    vals2[slot[0]] = np.inf
    got = segmented.segmented_kernel(jnp.asarray(vals2), *tables, jnp.asarray(np.where(np.isfinite(x), x, 1)),
                                     shape=(m, k), interpret=True)
    assert np.isinf(np.asarray(got)[C.row[0]]) and np.isfinite(np.delete(np.asarray(got), C.row[0])).all()


@pytest.mark.parametrize("width", [1, 8])
def test_segmented_padding_reads_no_element_of_x(width):
    # Padding slots keep the row before them (sorted rows) and column k: the COO formula must gather zeros
    # for them, not x[k - 1] (an inf there made 0 * inf = NaN in a real row), in the product, in its
    # transpose (the VJP in x, which runs the formula on the kernel path too) and on every column group.
    from bcoo_array._kernels import segmented

    S = sp.csr_array((np.array([1.0, 2.0], np.float32), ([0, 1], [0, 1])), shape=(2, 3))
    C = S.tocoo()
    slot, arrays, vals = _segmented_args(C, (2, 3), width=width)
    tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_rows", "seg_ends")]
    x = np.array([1.0, 1.0, np.inf], np.float32)
    X = np.stack([x, 2 * x, -x], axis=1)  # several columns: width 1 loops over them, width 8 pads them
    for use_kernel in (True, False):
        f = lambda z: segmented.segmented_matvec(jnp.asarray(vals), *tables, z, shape=(2, 3),  # noqa: E731
                                                 use_kernel=use_kernel)
        y, vjp = jax.vjp(f, jnp.asarray(x))
        np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])
        np.testing.assert_array_equal(np.asarray(vjp(jnp.array([1.0, np.inf], np.float32))[0]), [1.0, np.inf, 0.0])
        np.testing.assert_array_equal(np.asarray(f(jnp.asarray(X))), [[1.0, 2.0, -1.0], [2.0, 4.0, -2.0]])


@pytest.mark.parametrize("width", [1, 8])
def test_segmented_kernel_skips_padding_steps_and_ignores_padding_values(width):
    # A grid step whose first segment is padding is skipped whole; a real step's padding blocks run and add
    # their (zero) totals to the padding row. Grid-step padding after an empty matrix and after one entry
    # (its step then holds 7 padding blocks), with NaN in every padding slot's value.
    from bcoo_array._kernels import segmented

    for shape, entries in (((50, 40), []), ((50, 40), [(3, 7, 2.5)]), ((300, 200), [(0, 0, 1.0), (299, 199, -2.0)])):
        rows, cols, data = (np.array([e[i] for e in entries], dt) for i, dt in ((0, int), (1, int), (2, np.float32)))
        C = sp.coo_array((data, (rows, cols)), shape=shape)
        slot, arrays, vals = _segmented_args(C, shape, pad=lambda steps: steps + 2, width=width)
        assert arrays["seg_out"].shape[0] == 3
        vals[np.setdiff1d(np.arange(len(vals)), slot)] = np.nan
        tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
        X = np.random.default_rng(1).standard_normal((shape[1], width)).astype(np.float32)
        got = segmented.segmented_kernel(jnp.asarray(vals), *tables, jnp.asarray(X[:, 0] if width == 1 else X),
                                         shape=shape, interpret=True)
        ref = C.astype(np.float64) @ X.astype(np.float64)
        np.testing.assert_allclose(np.asarray(got).reshape(shape[0], width), ref, rtol=1e-6, atol=1e-6)


def test_segmented_slot_counts_match_the_tables():
    # slot_count (what the cost model prices) is what segmented_tables builds, for power-law rows with empty
    # ones among them and partial last windows; every window's entries in whole segments of 128.
    from bcoo_array._kernels import segmented

    rng = np.random.default_rng(5)
    for m in (1, 127, 129, 3000):
        counts = np.minimum((rng.pareto(1.2, m) + 1).astype(int) * 3, 2000) * (rng.random(m) < 0.7)
        rows = np.repeat(np.arange(m), counts)
        cols = np.concatenate([rng.choice(2500, c, replace=False) for c in counts]) if len(rows) else rows
        order = np.lexsort((cols, rows))
        slot, arrays = segmented.segmented_tables(rows[order], cols[order], (m, 2500))
        slots, blocks = segmented.slot_count(rows, m)
        used = arrays["seg_out"].reshape(-1) < arrays["seg_out"].max()  # segments that hold entries
        assert slots == blocks * 1024 and blocks == -(-int(used.sum()) // 8)
        per_window = np.bincount(rows >> 7, minlength=1)
        assert int(used.sum()) == int((-(-per_window // 128)).sum())
        assert len(slot) == len(rows) and (not len(slot) or slot.max() < slots)


@pytest.mark.parametrize("width", [2, 4, 8])
def test_segmented_wide_kernel_in_interpret_mode_matches_scipy(width):
    # Tables of width 2, 4 and 8 (segments of 64, 32 and 16 slots; windows of as many rows): a row across
    # segments and blocks, rows filling segments to the lane, empty rows and columns, inf and NaN in x beside
    # read columns, one call against scipy; several columns through the primitive (ceil(n / width) calls),
    # and x of one column.
    from bcoo_array._kernels import segmented

    rng = np.random.default_rng(width)
    m, k = 700, 900
    S = sp.random_array((m, k), density=0.01, rng=rng, format="lil").astype(np.float32)
    S[7, :300] = rng.standard_normal(300)
    S[40, :128 // width] = rng.standard_normal(128 // width)  # one segment to the lane
    S[:, 149] = 0
    S[50:60, :] = 0
    S, C = _canonical(S)
    slot, arrays, vals = _segmented_args(C, (m, k), width=width)
    assert segmented.table_width(arrays["seg_addr"]) == width
    assert segmented.slot_count(C.row, m, width)[0] <= arrays["seg_cols"].size
    rows, cols = arrays["seg_rows"].reshape(-1), arrays["seg_cols"].reshape(-1)
    np.testing.assert_array_equal(rows[slot], C.row)
    np.testing.assert_array_equal(cols[slot], C.col)
    X = rng.standard_normal((k, width)).astype(np.float32)
    X[149, 0], X[149, -1] = np.inf, np.nan  # an empty column, in a packed row of x with read ones
    ref = S.astype(np.float64) @ np.where(np.isfinite(X), X, 0).astype(np.float64)
    tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
    for unroll in (None, 5, 128):
        got = segmented.segmented_kernel(jnp.asarray(vals), *tables, jnp.asarray(X), shape=(m, k),
                                         interpret=True, unroll=unroll)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=f"width {width}"):
        segmented.segmented_kernel(jnp.asarray(vals), *tables, jnp.asarray(X[:, 0]), shape=(m, k), interpret=True)
    full = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_rows", "seg_ends")]
    Y = rng.standard_normal((k, 2 * width + 1)).astype(np.float32)
    got = segmented.segmented_matvec(jnp.asarray(vals), *full, jnp.asarray(Y), shape=(m, k))
    np.testing.assert_allclose(np.asarray(got), S.astype(np.float64) @ Y, rtol=1e-5, atol=1e-5)
    got = segmented.segmented_matvec(jnp.asarray(vals), *full, jnp.asarray(Y[:, 0]), shape=(m, k))
    np.testing.assert_allclose(np.asarray(got), S.astype(np.float64) @ Y[:, 0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="power of two"):
        segmented.segmented_tables(C.row, C.col, (m, k), width=3)


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 300), k=st.integers(1, 300), density=st.sampled_from((0.0, 0.01, 0.05, 0.3)),
       long_row=st.booleans(), slots_per_step=st.sampled_from((128, 256)), n_rhs=st.sampled_from((1, 5, 129)),
       unroll=st.sampled_from((1, 2)), seed=st.integers(0, 2**16))
def test_sell_kernel_breadth(m, k, density, long_row, slots_per_step, n_rhs, unroll, seed):
    # Hypothesis: shapes from 1 x 1, empty and full rows, one row long enough to straddle grid steps, right-hand
    # sides from 1 to 129 (two calls): the kernel (interpret mode) and its XLA formula against scipy.
    from bcoo_array._kernels import sell

    rng = np.random.default_rng(seed)
    S = sp.random_array((m, k), density=density, rng=rng, format="lil").astype(np.float32)
    if long_row:
        S[rng.integers(m), :] = rng.standard_normal(k).astype(np.float32)
    S = sp.csr_array(S)
    S.sort_indices()
    C = S.tocoo()
    slot, table, s_rows, s_cols = sell.sell_tables(C.row, C.col, (m, k), slots_per_step)
    vals = np.zeros(len(s_rows), np.float32)
    vals[slot] = C.data
    X = rng.standard_normal((k, n_rhs)).astype(np.float32)
    ref = S.astype(np.float64) @ X.astype(np.float64)
    got = sell.sell_kernel(jnp.asarray(vals), jnp.asarray(table), jnp.asarray(s_cols), jnp.asarray(X), shape=(m, k),
                           interpret=True, unroll=unroll)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-4)
    if n_rhs == 1:  # the one-vector kernel of the sell layout: the segmented blocks
        from bcoo_array._kernels import segmented

        _, arrays, gvals = _segmented_args(C, (m, k))
        tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
        got = segmented.segmented_kernel(jnp.asarray(gvals), *tables, jnp.asarray(X[:, 0]), shape=(m, k),
                                         interpret=True)
        np.testing.assert_allclose(np.asarray(got), ref[:, 0], rtol=1e-5, atol=1e-4)
    if n_rhs == 5:  # several columns on wide blocks (8 columns a call: one call, 3 columns of zeros)
        from bcoo_array._kernels import segmented

        _, arrays, wvals = _segmented_args(C, (m, k), width=8)
        tables = [jnp.asarray(arrays[n]) for n in ("seg_out", "seg_addr", "seg_cols", "seg_rows", "seg_ends")]
        got = segmented.segmented_matvec(jnp.asarray(wvals), *tables, jnp.asarray(X), shape=(m, k), unroll=unroll)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-4)
    got = sell.sell_reference(jnp.asarray(vals), jnp.asarray(s_rows), jnp.asarray(s_cols), jnp.asarray(X),
                              shape=(m, k))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(900, 1000), (1_000_000, 1_000_000)])
def test_segmented_kernel_lowers_for_a_tpu(shape):
    # The one-vector kernel lowered for a TPU on this CPU (jax.export): its unaligned 8-row loads of x, lane
    # gathers, rolls and SMEM tables pass Mosaic's checks; a 10^6 x 10^6 matrix's x and result fit VMEM
    # packed (8 MiB) where the SELL-8 kernel's rows of 128 lanes (1 GiB) do not.
    from bcoo_array._kernels import segmented, sell

    m, k = shape
    assert segmented.fits(shape) and sell.fits(shape) == (m < 10**5)
    rng = np.random.default_rng(0)
    rows, cols = np.sort(rng.integers(0, m, 3000)), rng.integers(0, k, 3000)
    _, arrays = segmented.segmented_tables(rows, cols, shape)
    tables = [arrays[n] for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
    args = (np.zeros(arrays["seg_cols"].size, np.float32), *tables, np.zeros(k, np.float32))
    for unroll in (None, segmented.EAGER_LANE_UNROLL):  # unrolled (prepared operators), a loop (eager products)
        f = jax.jit(lambda v, *a: segmented.segmented_kernel(v, *a, shape=shape, interpret=False, unroll=unroll))
        assert jax.export.export(f, platforms=["tpu"])(*args).mlir_module().count("tpu_custom_call") == 1
    # the wide tables of several columns (8 here: a 10^6 x 10^6 matrix's x and result, 64 MiB packed)
    width = segmented.MAX_WIDTH
    assert segmented.fits(shape, width)
    _, arrays = segmented.segmented_tables(rows, cols, shape, width=width)
    tables = [arrays[n] for n in ("seg_out", "seg_addr", "seg_cols", "seg_ends")]
    args = (np.zeros(arrays["seg_cols"].size, np.float32), *tables, np.zeros((k, width), np.float32))
    f = jax.jit(lambda v, *a: segmented.segmented_kernel(v, *a, shape=shape, interpret=False))
    assert jax.export.export(f, platforms=["tpu"])(*args).mlir_module().count("tpu_custom_call") == 1


def test_sell_layout_runs_the_segmented_kernel_for_one_vector(monkeypatch):
    # layout="sell": a vector (and A.T @ y) takes the segmented kernel, several columns the SELL-8 row
    # kernel; every result against scipy, and gradients and vmap through the segmented product.
    from bcoo_array._kernels import segmented, sell

    seen = []
    for mod, name in ((segmented, "segmented_kernel"), (sell, "sell_kernel"), (sell, "sell_reference"),
                      (segmented, "segmented_reference")):
        fn = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _fn=fn, _name=name, **kw: seen.append(_name) or _fn(*a, **kw))
    S = sp.random_array((700, 500), density=0.01, rng=21, format="csr").astype(np.float32)
    op = accelerator.prepare(_bcoo(S), layout="sell")
    assert op.description.startswith("sell")
    rng = np.random.default_rng(22)
    x, y, X = rng.standard_normal(500), rng.standard_normal(700), rng.standard_normal((500, 3))
    D = S.astype(np.float64)
    np.testing.assert_allclose(np.asarray(op @ x.astype(np.float32)), D @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(op.T @ y.astype(np.float32)), D.T @ y, rtol=1e-4, atol=1e-4)
    assert seen == ["segmented_kernel"] * 2  # both orientations
    np.testing.assert_allclose(np.asarray(op @ X.astype(np.float32)), D @ X, rtol=1e-4, atol=1e-4)
    assert seen[2:] == ["sell_kernel"]
    g = jax.grad(lambda z: jnp.sum(jnp.sin(op @ z)))(jnp.asarray(x, jnp.float32))
    np.testing.assert_allclose(np.asarray(g), D.T @ np.cos(D @ x), rtol=1e-4, atol=1e-4)
    v = jax.vmap(lambda z: op @ z)(jnp.asarray(X.T, jnp.float32))
    np.testing.assert_allclose(np.asarray(v), (D @ X).T, rtol=1e-4, atol=1e-4)


def test_sell_kernel_lowers_for_a_tpu():
    # jax.export to the "tpu" platform on this CPU: the Mosaic lowering's own checks (SMEM blocks, dynamic
    # row loads and stores, the DMAs of x and the result) run without the chip.
    from bcoo_array._kernels import sell

    steps = 3
    args = (np.zeros(steps * sell.SLOTS_PER_STEP, np.float32), np.zeros((steps, sell._table_width(2048)), np.int32),
            np.zeros(steps * sell.SLOTS_PER_STEP, np.int32), np.zeros((1000, 200), np.float32))
    f = jax.jit(lambda v, t, c, x: sell.sell_kernel(v, t, c, x, shape=(900, 1000), interpret=False))
    exported = jax.export.export(f, platforms=["tpu"])(*args)
    assert exported.mlir_module().count("tpu_custom_call") >= 2  # 200 columns: two calls of 128 lanes


def _scoped_vmem_sizes(module_text: str) -> set:
    """The VMEM limits (bytes) the lowered Mosaic kernels of an exported module ask for."""
    import re

    return {int(v) for v in re.findall(r"scoped_memory_configs.{0,80}?size\\22: (\d+)", module_text)}


@pytest.mark.parametrize("capacity_mib", [128, 64, 16])
def test_kernels_size_their_vmem_by_the_chip(monkeypatch, capacity_mib):
    # A TPU 7x has half a v5e's VMEM, a v4 an eighth: the limits the kernels ask Mosaic for keep their
    # share of the chip's VMEM, what they keep resident fits inside them, and matrices too large for it
    # take another path instead of failing to compile.
    from bcoo_array._kernels import costs, panels, sell

    capacity = capacity_mib << 20
    monkeypatch.setattr(costs, "vmem_capacity_bytes", lambda: capacity)
    assert panels.vmem_limit_bytes() == capacity * 3 // 4 <= capacity
    assert sell.vmem_limit_bytes() == capacity * 25 // 32
    assert 2 * 4 * panels.resident_max_elements() + panels.PIPELINE_BYTES <= panels.vmem_limit_bytes()
    assert sell.resident_max_bytes() + sell.MOSAIC_BYTES <= sell.vmem_limit_bytes()
    if capacity_mib == 128:  # the limits tuned on a v5e stand
        assert panels.resident_max_elements() == panels.RESIDENT_MAX_ELEMENTS
        assert sell.resident_max_bytes() == sell.RESIDENT_MAX_BYTES
    # x and A @ x of 400,000 rows and columns take 25 MiB in the panels kernel's slabs (double-buffered:
    # 50), of 80,000 rows and columns 78 MiB as the SELL kernel's rows of 128 lanes
    assert panels.fits((400_000, 400_000)) == (capacity_mib == 128)
    assert sell.fits((80_000, 80_000)) == (capacity_mib == 128)
    assert panels.fits((1000, 1000)) and sell.fits((1000, 1000))
    args = (np.zeros(sell.SLOTS_PER_STEP, np.float32), np.zeros((1, sell._table_width(2048)), np.int32),
            np.zeros(sell.SLOTS_PER_STEP, np.int32), np.zeros((1000, 8), np.float32))
    f = jax.jit(lambda v, t, c, x: sell.sell_kernel(v, t, c, x, shape=(900, 1000), interpret=False))
    assert _scoped_vmem_sizes(jax.export.export(f, platforms=["tpu"])(*args).mlir_module()) == {
        sell.vmem_limit_bytes()}
    T = panels.pad_tiles(40)
    args = (np.zeros(T * 1024, np.float32), np.zeros((2, T), np.int32), np.full((T, 8, 128), -1, np.int32),
            np.zeros((1, 1000), np.float32))
    f = jax.jit(lambda v, m, c, x: panels.panels_kernel(v, m, c, x, shape=(900, 1000), interpret=False))
    assert _scoped_vmem_sizes(jax.export.export(f, platforms=["tpu"])(*args).mlir_module()) == {
        panels.vmem_limit_bytes()}


def test_vmem_capacity_of_the_device(monkeypatch):
    # Off a TPU: the v5e's the limits were tuned on; on a TPU JAX does not know: the least of any TPU.
    from jax.experimental.pallas import tpu as pltpu

    from bcoo_array._kernels import costs

    assert costs.vmem_capacity_bytes() == costs.TUNED_VMEM_BYTES == 128 << 20
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")

    def unknown():
        raise ValueError("Unsupported TPU device kind: TPU v99")

    monkeypatch.setattr(pltpu, "get_tpu_info", unknown)
    assert costs.vmem_capacity_bytes.__wrapped__() == costs.SMALLEST_VMEM_BYTES
    monkeypatch.setattr(pltpu, "get_tpu_info", lambda: types.SimpleNamespace(vmem_capacity_bytes=64 << 20))
    assert costs.vmem_capacity_bytes.__wrapped__() == 64 << 20


def test_panels_of_a_matrix_without_stored_entries():
    # nse == 0 (review of this session: the placement of the layout's further value copies, slot_t of shape
    # (0, 2), failed to reshape): every product is zero, with a vector, few and many columns (the SELL path).
    A = xp.from_scipy(sp.csr_array((200, 130), dtype=np.float32))
    assert A.nse == 0
    op = accelerator.prepare(A, layout="panels")
    for x in (np.ones(130, np.float32), np.ones((130, 3), np.float32), np.ones((130, 300), np.float32)):
        np.testing.assert_array_equal(np.asarray(op @ x), np.zeros((200,) + x.shape[1:], np.float32))
    np.testing.assert_array_equal(np.asarray(op.T @ np.ones(200, np.float32)), np.zeros(130, np.float32))
    assert np.asarray(layouts.place_values_host(np.zeros(0, np.float32), np.zeros(0, np.int32), 10,
                                                np.zeros((0, 3), np.int32))).shape == (10,)


def test_sell_tables_refuse_bad_entries():
    from bcoo_array._kernels import sell

    with pytest.raises(ValueError, match="sorted by row"):
        sell.sell_tables(np.array([2, 1]), np.array([0, 0]), (3, 3))
    with pytest.raises(ValueError, match="shape"):
        sell.sell_tables(np.array([0, 3]), np.array([0, 0]), (3, 3))
    with pytest.raises(ValueError, match="length"):
        sell.sell_tables(np.array([0, 1]), np.array([0]), (3, 3))


def test_an_eager_vector_product_leaves_the_sell_slots_out_of_its_program(monkeypatch):
    # A concrete vector never runs on the SELL slots, so their shapes (which vary with nse) must not enter the
    # compiled program's key: an eager SpMV of a matrix of another nse reuses the program. A matrix X does.
    A = _bcoo(MATRICES["symmetric"])
    op = accelerator.prepare(A, layout="panels", reorder=False)
    seen = []
    real = accel._compiled_product
    monkeypatch.setattr(accel, "_compiled_product", lambda v, arrays, *a, **kw: seen.append(set(arrays)) or
                        real(v, arrays, *a, **kw))
    op @ np.ones(300, np.float32)
    op @ np.ones((300, 3), np.float32)
    assert not any(n.startswith("s_") for n in seen[0]) and "s_table" in seen[1]


def test_solvers_check_x0():
    # x0 of a reordered operator went through a clipped gather: a wrong length ran silently (review of
    # 2026-12-06); a wider dtype than the solve's is refused as b's is.
    S = _poisson(6)
    op = accelerator.prepare(_bcoo(S), layout="ell", reorder=True)
    assert op.perm is not None
    n = S.shape[0]
    b = np.ones(n, np.float32)
    for solver in (accelerator.cg, accelerator.bicgstab):
        for bad in (np.zeros(n - 1, np.float32), np.zeros(n + 5, np.float32), np.zeros((n, 1), np.float32)):
            with pytest.raises(ValueError, match=rf"{solver.__name__}\(\): x0 has shape .* it needs b's shape"):
                solver(op, b, x0=bad)
        with pytest.raises(ValueError, match="x0"):
            solver(op, b, x0=np.zeros(n, np.float64))
        x, _ = solver(op, b, x0=np.full(n, 0.5, np.float32), tol=1e-6, maxiter=500)
        np.testing.assert_allclose(S @ np.asarray(x, np.float64), b, atol=1e-3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_vmap_over_vectors_of_an_operator_without_columns(layout):
    # k = 0: the native batching rule reshaped x's rows with -1 (integer modulo by zero; review of
    # 2026-12-06), for a plain BCOOArray product too.
    A = _bcoo(sp.csr_array((5, 0), dtype=np.float32))
    op = accelerator.prepare(A, layout=layout)
    np.testing.assert_array_equal(np.asarray(jax.vmap(op.matvec)(jnp.ones((3, 0)))), np.zeros((3, 5)))
    np.testing.assert_array_equal(np.asarray(jax.vmap(lambda v: A @ v)(jnp.ones((3, 0)))), np.zeros((3, 5)))


def test_prepare_refuses_what_it_cannot_build_with_clear_errors():
    # review of 2026-12-06: a forced dense layout of a huge matrix was a MemoryError of 7 TiB, a float tile a
    # NumPy casting error, tile= and reorder=True on layouts without them were ignored, op @ BCOOArray a bare
    # "unsupported operand", rmatvec's wrong length named x and the transposed shape.
    big = xp.BCOOArray((jnp.ones(3, jnp.float32), jnp.asarray([[0, 0], [5, 7], [999_999, 999_999]], jnp.int32)),
                       shape=(1_000_000, 1_000_000))
    with pytest.raises(ValueError, match="layout='dense' would store 1000000 x 1000000 dense values"):
        accelerator.prepare(big, layout="dense")
    scattered = xp.BCOOArray((jnp.ones(3000, jnp.float32), jnp.asarray(
        np.stack([np.arange(3000) * 300, np.random.default_rng(0).permutation(3000) * 333], 1), jnp.int32)),
        shape=(1_000_000, 1_000_000))
    with pytest.raises(ValueError, match="layout='dia' would store [0-9]+ diagonals of 1000000 values"):
        accelerator.prepare(scattered, layout="dia")
    A = _bcoo(MATRICES["poisson"])
    for tile in ((2.5, 3), (8,), (0, 128), "8x128"):
        with pytest.raises(ValueError, match="tile="):
            accelerator.prepare(A, layout="tiles", tile=tile)
    with pytest.raises(ValueError, match="shapes the 'tiles' layout"):
        accelerator.prepare(A, layout="ell", tile=(8, 128))
    with pytest.raises(ValueError, match="reorder=True applies to"):
        accelerator.prepare(A, layout="dia", reorder=True)
    op = accelerator.prepare(A, layout="ell")
    with pytest.raises(TypeError, match="todense"):
        op @ A
    with pytest.raises(TypeError, match="op @ op"):
        op @ op
    with pytest.raises(ValueError, match=r"rmatvec: y has shape \(3,\)"):
        op.rmatvec(np.ones(3, np.float32))


@pytest.mark.parametrize("wide", [True, False])
def test_sell_layout_without_room_for_the_row_kernel_keeps_wide_blocks(monkeypatch, wide):
    # Where the SELL-8 row kernel's x and result (128 lanes a row) do not fit VMEM, the layout keeps the
    # segmented blocks of one vector and wide blocks (8 columns a call here) in place of the SELL-8 slots:
    # several columns take the wide kernel or the COO formula on the blocks' slots, as priced, for the
    # matrix and its transpose, with gradients and vmap through either.
    from bcoo_array._kernels import accel, segmented, sell

    seen = []
    for name in ("segmented_kernel", "segmented_reference"):
        fn = getattr(segmented, name)
        monkeypatch.setattr(segmented, name, lambda *a, _fn=fn, _name=name, **kw: seen.append(_name) or _fn(*a, **kw))
    monkeypatch.setattr(segmented, "wide_is_cheaper", lambda *a: wide)
    jax.clear_caches()  # the choice is made while tracing: no program of the other case's
    rng = np.random.default_rng(8)
    n = 200_000
    assert not sell.fits((n, n)) and segmented.fits((n, n), 8)
    rows, cols = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    rows[:40] = 77  # a long row across segments
    S = sp.coo_array((rng.standard_normal(3000).astype(np.float32), (rows, cols)), shape=(n, n)).tocsr()
    op = accelerator.prepare(_bcoo(S), layout="sell")
    assert "s_table" not in op.arrays and "w_addr" in op.arrays and op.description.startswith("sell")
    assert segmented.table_width(op.arrays["w_addr"]) == 8
    X = rng.standard_normal((n, 11)).astype(np.float32)  # two groups of 8 columns, the second padded
    D = S.astype(np.float64)
    np.testing.assert_allclose(np.asarray(op @ X), D @ X, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(op.T @ X), D.T @ X, rtol=1e-4, atol=1e-4)
    # one kernel a product, in a loop over the two groups of 8 columns (one program, one compile)
    assert seen == (["segmented_kernel"] * 2 if wide else ["segmented_reference"] * 2)
    g = jax.grad(lambda Z: jnp.sum(jnp.sin(op @ Z)))(jnp.asarray(X[:, :3]))
    np.testing.assert_allclose(np.asarray(g), D.T @ np.cos(D @ X[:, :3]), rtol=1e-4, atol=1e-4)
    v = jax.vmap(lambda z: op @ z, in_axes=1, out_axes=1)(jnp.asarray(X[:, :5]))
    np.testing.assert_allclose(np.asarray(v), D @ X[:, :5], rtol=1e-4, atol=1e-4)
    # eager products' layouts (static["wide"] False) take the formula whatever the price: no wide compile
    del seen[:]
    y = accel.sell_product(op.values, op.arrays, dict(op.static, wide=False), (n, n),
                           jnp.asarray(X[:, :2]))
    np.testing.assert_allclose(np.asarray(y), D @ X[:, :2], rtol=1e-4, atol=1e-4)
    assert seen == ["segmented_reference"]


@pytest.mark.parametrize("room", [True, False])
def test_sell_layout_vmap_over_vectors_takes_its_several_column_kernels(monkeypatch, room):
    # A vmap over vectors of a ``sell`` layout's product (``accel.vector_product_p``) is one product with as
    # many columns where that is priced lower than one one-vector kernel call per vector: the SELL-8 slots
    # where x fits VMEM (``room``), else the wide blocks; one mapped vector stays on the one-vector kernel.
    # Either orientation, with gradients, against scipy.
    from bcoo_array._kernels import accel, segmented, sell

    shapes = []
    for mod, name in ((segmented, "segmented_kernel"), (sell, "sell_kernel")):
        fn = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _fn=fn, _name=name, **kw: shapes.append((_name, a[-1].ndim))
                            or _fn(*a, **kw))
    jax.clear_caches()  # the choice is made while tracing
    rng = np.random.default_rng(9)
    n = 3000 if room else 200_000
    assert sell.fits((n, n)) == room
    rows, cols = rng.integers(0, n, 4000), rng.integers(0, n, 4000)
    S = sp.coo_array((rng.standard_normal(4000).astype(np.float32), (rows, cols)), shape=(n, n)).tocsr()
    op = accelerator.prepare(_bcoo(S), layout="sell")
    assert ("s_table" in op.arrays) == room and ("w_addr" in op.arrays) != room
    D = S.astype(np.float64)
    V = rng.standard_normal((16, n)).astype(np.float32)
    several = [("sell_kernel" if room else "segmented_kernel", 2)]  # several columns (one traced call)
    for f, M, t in ((lambda v: op @ v, D, False), (lambda v: op.T @ v, D.T, True)):
        assert accel.vmap_as_columns("sell", op.static, op.arrays, (n, n), 16, t)
        shapes.clear()
        np.testing.assert_allclose(np.asarray(jax.vmap(f)(jnp.asarray(V))), (M @ V.T).T, rtol=1e-4, atol=1e-4)
        assert shapes == several
        # one mapped vector: as priced (the SELL-8 slots cost more than the one-vector kernel here; the wide
        # blocks, 16 slots a segment, hold this very sparse matrix in fewer slots than its 128-slot segments)
        one_as_columns = accel.vmap_as_columns("sell", op.static, op.arrays, (n, n), 1, t)
        assert one_as_columns == (not room)
        shapes.clear()
        np.testing.assert_allclose(np.asarray(jax.vmap(f)(jnp.asarray(V[:1]))), (M @ V[:1].T).T, rtol=1e-4,
                                   atol=1e-4)
        assert shapes == (several if one_as_columns else [("segmented_kernel", 1)])
        g = jax.grad(lambda Z: jnp.sum(jnp.sin(jax.vmap(f)(Z))))(jnp.asarray(V[:3]))
        np.testing.assert_allclose(np.asarray(g), (M.T @ np.cos(M @ V[:3].T)).T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ("panels", "sell"))
def test_tables_built_in_two_threads_are_the_sequential_ones(monkeypatch, kind):
    # layouts._pair builds the matrix's and the transpose's tables in two threads above a size: forced on for
    # a small matrix, every array and slot equals the sequential build's.
    rng = np.random.default_rng(21)
    S = sp.random_array((700, 500), density=0.02, rng=rng, format="coo")
    idx = np.stack(S.coords, axis=1)
    monkeypatch.setattr(layouts, "PAIR_THREADS_MIN_ENTRIES", 10**9)
    one = layouts.choose(idx, S.shape, 4, "tpu", kind=kind, reorder=False, mxu=True)
    calls = []
    real = layouts.ThreadPoolExecutor
    monkeypatch.setattr(layouts, "PAIR_THREADS_MIN_ENTRIES", 0)
    monkeypatch.setattr(layouts, "ThreadPoolExecutor", lambda **kw: calls.append(kw) or real(**kw))
    two = layouts.choose(idx, S.shape, 4, "tpu", kind=kind, reorder=False, mxu=True)
    assert calls
    assert one.n_slots == two.n_slots and np.array_equal(one.slot, two.slot)
    assert one.arrays.keys() == two.arrays.keys()
    for name in one.arrays:
        np.testing.assert_array_equal(one.arrays[name], two.arrays[name], err_msg=name)
