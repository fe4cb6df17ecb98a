"""The dense blocks of ``_kernels.mxu`` (many right-hand sides on the MXU) against scipy's float64 products.

The Pallas kernel runs in interpret mode on a CPU, both orientations, with
the blocks built from random patterns (empty rows and panels, one entry,
wide and tall shapes, more than 128 columns); the layouts keep the blocks
only where the cost model says so, and a prepared operator's products,
transposes, gradients and ``vmap`` go through them (priced for a TPU by
``accelerator.backend_of``, the kernel forced on by ``mxu._on_tpu``), a
non-finite result (an ``inf`` or NaN of ``x`` or of the values) taking the COO
formula of the SELL slots.
"""

from __future__ import annotations

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
from bcoo_array._kernels import layouts, mxu


def _blocks(S):
    """The blocks of a scipy matrix (canonical) as ``(values, table)``."""
    c = sp.coo_array(S)
    c.sum_duplicates()
    slot, table = mxu.block_tables(c.row, c.col, S.shape)
    values = np.zeros(mxu.value_count(table), np.float32)
    values[slot] = c.data
    return values, table


def _dense(values, table, shape):
    """NumPy: the matrix the blocks hold (their table read back), ``(m, k)``."""
    m, k = shape
    n_rb, n_panels = -(-m // mxu.BLOCK_ROWS) + 1, -(-max(k, 1) // mxu.LANES)
    out = np.zeros((n_rb * mxu.BLOCK_ROWS, n_panels * mxu.LANES), np.float64)
    panels, row_blocks = mxu.read_table(table)
    blocks = np.asarray(values, np.float64).reshape(len(panels), mxu.BLOCK_ROWS, mxu.LANES)
    for b, (p, rb) in enumerate(zip(panels, row_blocks)):
        r, c = rb * mxu.BLOCK_ROWS, p * mxu.LANES
        out[r:r + mxu.BLOCK_ROWS, c:c + mxu.LANES] += blocks[b]
    assert not np.any(out[m:]) and not np.any(out[:, k:])  # padding blocks hold zeros, in the spare row block
    return out[:m, :k]


def _assert_matches_non_finite(got, ref):
    """``got`` has ``ref``'s NaN and inf positions (scipy's, a sparse product's) and its finite values."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-4)


def _banded(n, width, rng, density=0.3):
    """A random banded pattern (entries within ``width`` of the diagonal): blocks with several entries each."""
    r = rng.integers(0, n, int(n * width * density))
    c = np.clip(r + rng.integers(-width, width + 1, len(r)), 0, n - 1)
    return sp.csr_array((rng.standard_normal(len(r)), (r, c)), shape=(n, n))


@pytest.mark.parametrize("m, k, density, n_rhs", [
    (300, 200, 0.03, 5), (40, 1000, 0.02, 130), (1000, 40, 0.02, 1), (1, 1, 1.0, 3), (17, 300, 0.0, 2),
    (520, 260, 0.01, 128)])
def test_kernel_in_interpret_mode_matches_scipy(m, k, density, n_rhs):
    # Both orientations of the kernel against scipy: every group and grid step, the
    # padding blocks (they add zeros to the spare row block), empty matrices and panels, two calls for more
    # than 128 columns; x is reported finite.
    rng = np.random.default_rng(m + k)
    S = sp.random_array((m, k), density=density, rng=rng, format="lil", dtype=np.float32)
    S[min(3, m - 1), :] = 0  # an empty row
    S = sp.csr_array(S)
    values, table = _blocks(S)
    X = rng.standard_normal((k, n_rhs)).astype(np.float32)
    Y = rng.standard_normal((m, n_rhs)).astype(np.float32)
    S64 = S.astype(np.float64)
    for transpose, z, ref in ((False, X, S64 @ X), (True, Y, S64.T @ Y)):
        y, finite = mxu.mxu_kernel(values, table, z, shape=(m, k), transpose=transpose, interpret=True)
        assert y.shape == ref.shape and bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(_dense(values, table, (m, k)), S64.toarray())


@pytest.mark.parametrize("subgroup", [8, 16])
def test_kernel_with_smaller_subgroups_matches_scipy(monkeypatch, subgroup):
    # Sub-groups of other sizes (several panels a group, each panel padded to whole sub-groups): the same
    # products, fewer padding blocks.
    monkeypatch.setattr(mxu, "SUBGROUP", subgroup)
    monkeypatch.setattr(mxu, "GROUP_FIELDS", mxu.GROUP // subgroup + mxu.GROUP)
    rng = np.random.default_rng(subgroup)
    S = sp.csr_array(_banded(700, 200, rng, density=0.05).astype(np.float32))
    values, table = _blocks(S)
    c = S.tocoo()
    panels = -(-700 // mxu.LANES)
    assert mxu.block_count(c.row, c.col, S.shape) == mxu.value_count(table) // 1024
    per_panel = np.bincount(np.unique((c.col // 128) * 1000 + c.row // 8) // 1000, minlength=panels)
    padded = int((-(-per_panel // subgroup) * subgroup).sum())
    assert (mxu.read_table(table)[1] != -(-700 // 8)).sum() == mxu.stored_blocks(table, 700) == per_panel.sum()
    assert padded < int((-(-per_panel // 32) * 32).sum())
    np.testing.assert_array_equal(_dense(values, table, S.shape), S.toarray())
    S64 = S.astype(np.float64)
    X = rng.standard_normal((700, 9)).astype(np.float32)
    for transpose, ref in ((False, S64 @ X), (True, S64.T @ X)):
        y, finite = mxu.mxu_kernel(values, table, X, shape=S.shape, transpose=transpose, interpret=True)
        assert bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, n_rhs", [(700, 5), (256, 130), (1, 3), (129, 16)])
def test_kernel_permutes_rows_itself(n, n_rhs):
    # Blocks of a reordered matrix, A[perm][:, perm]: the kernel permutes x's rows and puts the result's back
    # in VMEM (both orientations; 256 rows leave A.T's result buffer no spare row; more than 128 columns take
    # two calls); bad permutations are refused.
    rng = np.random.default_rng(n)
    S = sp.csr_array(sp.random_array((n, n), density=min(1.0, 6 / n), rng=rng, format="csr", dtype=np.float32)
                     + sp.eye(n, dtype=np.float32))
    order = rng.permutation(n)
    inverse = np.argsort(order)
    values, table = _blocks(sp.csr_array(S[order][:, order]))
    X = rng.standard_normal((n, n_rhs)).astype(np.float32)
    perms = dict(perm=jnp.asarray(order, jnp.int32), inverse=jnp.asarray(inverse, jnp.int32))
    S64 = S.astype(np.float64)
    for transpose, ref in ((False, S64 @ X), (True, S64.T @ X)):
        y, finite = mxu.mxu_kernel(values, table, X, shape=S.shape, transpose=transpose, interpret=True, **perms)
        assert bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="perm and inverse go together"):
        mxu.mxu_kernel(values, table, X, shape=S.shape, interpret=True, perm=perms["perm"])


@pytest.mark.parametrize("n, chunk, copies", [(700, 16, 2), (129, 8, 3), (61, 8, 4), (96, 16, 4), (32, 16, 4)])
def test_kernel_permutes_rows_in_chunks(monkeypatch, n, chunk, copies):
    # x comes in and the result goes out PERM_CHUNK rows per DMA, PERM_COPIES in flight, each chunk's rows
    # moved while the next arrive: many chunks, a last chunk short of 8 rows or of a whole group of 8, and
    # more chunks than copies in flight, or no short last chunk, against scipy in both orientations.
    monkeypatch.setattr(mxu, "PERM_CHUNK", chunk)
    monkeypatch.setattr(mxu, "PERM_COPIES", copies)
    rng = np.random.default_rng(n + chunk)
    S = sp.csr_array(sp.random_array((n, n), density=min(1.0, 5 / n), rng=rng, format="csr", dtype=np.float32)
                     + sp.eye(n, dtype=np.float32))
    order = rng.permutation(n)
    values, table = _blocks(sp.csr_array(S[order][:, order]))
    X = rng.standard_normal((n, 4)).astype(np.float32)
    S64 = S.astype(np.float64)
    for transpose, ref in ((False, S64 @ X), (True, S64.T @ X)):
        y, finite = mxu.mxu_kernel(values, table, X, shape=S.shape, transpose=transpose, interpret=True,
                                   perm=order, inverse=np.argsort(order))
        assert bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)


def test_block_tables_group_blocks_by_panel_and_reject_bad_indices():
    # Each block lands in a group of its own panel; each group's row blocks are distinct but for the spare
    # one; every entry's slot holds its row and column (block b, element (i, j) at (b * 8 + i) * 128 + j).
    rng = np.random.default_rng(1)
    S = _banded(700, 40, rng)
    c = S.tocoo()
    slot, table = mxu.block_tables(c.row, c.col, S.shape)
    t = table.reshape(-1, mxu.GROUP_FIELDS)
    subs = mxu.GROUP // mxu.SUBGROUP
    block = slot // (mxu.BLOCK_ROWS * mxu.LANES)
    assert np.array_equal(t[block // mxu.GROUP, block % mxu.GROUP // mxu.SUBGROUP], c.col // mxu.LANES)
    assert np.array_equal(t[block // mxu.GROUP, subs + block % mxu.GROUP], c.row // mxu.BLOCK_ROWS)
    assert np.array_equal(slot // mxu.LANES % mxu.BLOCK_ROWS, c.row % mxu.BLOCK_ROWS)
    assert np.array_equal(slot % mxu.LANES, c.col % mxu.LANES)
    spare = -(-700 // mxu.BLOCK_ROWS)
    for sub in mxu.read_table(table)[1].reshape(-1, mxu.SUBGROUP):
        real = sub[sub != spare]
        assert len(np.unique(real)) == len(real)
    assert len(np.unique(slot)) == len(slot)
    assert mxu.block_count(c.row, c.col, S.shape) <= mxu.value_count(table) // 1024
    with pytest.raises(ValueError, match="block_tables: rows and cols must index"):
        mxu.block_tables(np.array([700]), np.array([0]), S.shape)
    with pytest.raises(ValueError, match="differ in length"):
        mxu.block_tables(np.array([1, 2]), np.array([0]), S.shape)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 300), k=st.integers(1, 600), density=st.floats(0, 0.2), seed=st.integers(0, 2**16))
def test_block_tables_breadth(m, k, density, seed):
    # The blocks read back (every group's panel and row blocks) are the matrix; the count without building
    # them is the built one.
    rng = np.random.default_rng(seed)
    S = sp.random_array((m, k), density=density, rng=rng, format="csr", dtype=np.float32)
    values, table = _blocks(S)
    np.testing.assert_array_equal(_dense(values, table, (m, k)), S.toarray())
    c = S.tocoo()
    assert mxu.block_count(c.row, c.col, (m, k)) * 1024 == mxu.value_count(table)
    assert mxu.stored_blocks(table, m) == len(np.unique((c.row // 8) * 10**6 + c.col // 128))


def test_non_finite_x_is_reported():
    S = _banded(300, 10, np.random.default_rng(2)).astype(np.float32)
    values, table = _blocks(S)
    X = np.ones((300, 4), np.float32)
    X[299, 2] = np.nan  # a row of x that a block reads: its stored zeros would make NaN elsewhere
    for transpose in (False, True):
        _, finite = mxu.mxu_kernel(values, table, X, shape=(300, 300), transpose=transpose, interpret=True)
        assert not bool(finite)


def test_non_finite_values_are_reported():
    # The kernel reports its result's finiteness, not x's: an inf value with a finite x is reported (on the
    # chip the six-pass product splits it into inf - inf, NaN where the sparse product has inf), so the
    # product takes the COO formula.
    S = _banded(300, 10, np.random.default_rng(3)).astype(np.float32)
    S.data[7] = np.inf
    values, table = _blocks(S)
    for transpose in (False, True):
        _, finite = mxu.mxu_kernel(values, table, np.ones((300, 4), np.float32), shape=(300, 300),
                                   transpose=transpose, interpret=True)
        assert not bool(finite)


def test_non_finite_x_no_block_reads_is_not_reported():
    # A NaN of x in rows no stored block reads (an empty panel for A @ x, an empty row block for A.T @ x):
    # the padding blocks read panel 0 and the spare row block, and the result's rows past the matrix's hold
    # their NaN, but the check looks at the result's own rows only: finite, and the sparse product.
    rng = np.random.default_rng(4)
    S = sp.lil_array(_banded(300, 30, rng))
    S[:, :128] = 0  # panel 0 empty
    S[:8, :] = 0  # row block 0 empty
    S = sp.csr_array(S)
    S.eliminate_zeros()
    values, table = _blocks(S)
    assert mxu.stored_blocks(table, 300) < mxu.value_count(table) // 1024  # padding blocks present
    Z = rng.standard_normal((300, 4)).astype(np.float32)
    Z[5, 1] = np.nan
    S64 = S.astype(np.float64)
    for transpose, ref in ((False, S64 @ Z), (True, S64.T @ Z)):
        y, finite = mxu.mxu_kernel(values, table, Z, shape=(300, 300), transpose=transpose, interpret=True)
        assert bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)


@pytest.fixture
def tpu_prices(monkeypatch):
    """``prepare`` prices for a TPU (where it keeps the blocks) on this CPU."""
    monkeypatch.setattr(accelerator, "backend_of", lambda device=None: "tpu")


@pytest.fixture
def kernel_on(monkeypatch, tpu_prices):
    """The kernel runs in products (interpret mode on a CPU); counts its calls."""
    calls = []
    real = mxu.mxu_kernel
    monkeypatch.setattr(mxu, "_on_tpu", lambda: True)
    monkeypatch.setattr(mxu, "mxu_kernel", lambda *a, **kw: calls.append((a[2].shape, kw["transpose"]))
                        or real(*a, **kw))
    return calls


def _clustered(n, width, seed, layout, scrambled=False):
    """A random banded ``n x n`` float32 matrix of clustered entries and its prepared operator of ``layout``,
    which keeps dense blocks (``scrambled``: the band's rows and columns in a random order, the operator's
    blocks those of its RCM order). Returns ``(rng, A, op, S64, rows, cols)``: the generator (for more
    draws), the BCOOArray, the operator, scipy's float64 copy and the stored entries' rows and columns."""
    rng = np.random.default_rng(seed)
    S = _banded(n, width, rng, density=0.5)
    if scrambled:
        q = rng.permutation(n)
        S = sp.csr_array(S[q][:, q])
    S.sum_duplicates()
    A = xp.asarray(S.astype(np.float32))
    op = accelerator.prepare(A, layout=layout, reorder=None if scrambled else False)
    assert "mxu_table" in op.arrays
    assert ("mxu_perm" in op.arrays) == scrambled and op.perm is None  # (the layout itself keeps the order)
    S64 = sp.csr_array(S.astype(np.float32)).astype(np.float64)
    rows, cols = (np.asarray(A.indices)[:, i] for i in (0, 1))
    return rng, A, op, S64, rows, cols


@pytest.mark.parametrize("layout, scrambled", [("panels", False), ("sell", False), ("sell", True)])
def test_prepared_products_with_many_columns_take_the_blocks(kernel_on, layout, scrambled):
    # A clustered pattern: the layout keeps dense blocks (cheaper than its SELL-8 slots at 128 columns) and
    # products with many columns run on them, both orientations, with the gradients of the values and of
    # x, jvp and vmap of a product with a matrix (more right-hand sides) and of products with vectors (one
    # product with as many columns: ``accel.vector_product_p``); one vector stays on the layout's own kernel.
    # Scrambled, the blocks are the reordered matrix's (x permuted in, the result out, in the primitive).
    n, width = (2000, 20) if scrambled else (900, 60)  # (scrambled: RCM's blocks a clear gain, permutations paid)
    rng, A, op, S64, rows, cols = _clustered(n, width, 5, layout, scrambled)
    order = " (RCM order)" if scrambled else ""
    assert f"{mxu.stored_blocks(op.arrays['mxu_table'], n)} MXU blocks{order}" in op.description
    # the blocks' part ends the value buffer, from a multiple of a grid step's values (read in place)
    assert (op.values.shape[0] - mxu.value_count(op.arrays["mxu_table"])) % mxu.STEP_VALUES == 0
    X = rng.standard_normal((n, 128)).astype(np.float32)
    W = rng.standard_normal((n, 128)).astype(np.float32)
    for f, ref, refw in ((lambda o, z: o @ z, S64 @ X, S64.T @ W), (lambda o, z: o.T @ z, S64.T @ X, S64 @ W)):
        kernel_on.clear()
        np.testing.assert_allclose(np.asarray(jax.jit(f)(op, jnp.asarray(X))), ref, rtol=1e-5, atol=1e-4)
        assert kernel_on
        gx = jax.grad(lambda z: jnp.sum(W * f(op, z)))(jnp.asarray(X))
        np.testing.assert_allclose(np.asarray(gx), refw, rtol=1e-5, atol=1e-4)
    g = jax.grad(lambda d: jnp.sum(W * (op.with_data(d) @ X)))(A.data)
    np.testing.assert_allclose(np.asarray(g), np.sum(W[rows] * X[cols], axis=1), rtol=1e-4, atol=1e-4)
    g = jax.grad(lambda d: jnp.sum(W * (op.with_data(d).T @ X)))(A.data)
    np.testing.assert_allclose(np.asarray(g), np.sum(W[cols] * X[rows], axis=1), rtol=1e-4, atol=1e-4)
    jv = jax.jvp(lambda d: op.with_data(d) @ X, (A.data,), (A.data,))[1]
    np.testing.assert_allclose(np.asarray(jv), S64 @ X, rtol=1e-5, atol=1e-4)  # linear in the values
    kernel_on.clear()
    V = jnp.asarray(X.T[:100])
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda v: op @ v)(V)), (S64 @ X[:, :100]).T, rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda v: op.T @ v, in_axes=1, out_axes=1)(V.T)),
                               S64.T @ X[:, :100], rtol=1e-5, atol=1e-4)
    assert kernel_on == [((n, 100), False), ((n, 100), True)]
    kernel_on.clear()
    Xb = jnp.asarray(X.reshape(n, 2, 64).transpose(1, 0, 2))  # vmap over 2 x 64 columns: 128 right-hand sides
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda z: op @ z)(Xb)),
                               (S64 @ X).reshape(n, 2, 64).transpose(1, 0, 2), rtol=1e-5, atol=1e-4)
    assert ((n, 128), False) in kernel_on
    kernel_on.clear()
    np.testing.assert_allclose(np.asarray(op @ X[:, 0]), S64 @ X[:, 0], rtol=1e-5, atol=1e-4)
    assert not kernel_on
    # new values reach the blocks (the slot_t column of the blocks' part)
    op2 = op.with_data(2 * A.data)
    np.testing.assert_allclose(np.asarray(op2 @ X), 2 * (S64 @ X), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("layout, scrambled", [("panels", False), ("sell", False), ("sell", True)])
def test_vectors_under_vmap_reach_the_blocks_with_every_rule(kernel_on, layout, scrambled):
    # One vector of a layout with blocks is ``accel.vector_product_p``: a vmap over vectors becomes one
    # product with as many columns (the blocks; either orientation), and the primitive's own JVP, transpose
    # and batching rules give the gradients of x and of the values, vmap of grad, grad of vmap and a vmap
    # over value sets (one product each) as the plain product does.
    from bcoo_array._kernels import accel

    n, width = (2000, 20) if scrambled else (700, 50)  # (scrambled: the blocks of the RCM order)
    rng, A, op, S64, rows, cols = _clustered(n, width, 12, layout, scrambled)
    V = rng.standard_normal((96, n)).astype(np.float32)
    W = rng.standard_normal((96, n)).astype(np.float32)
    jaxpr = str(jax.make_jaxpr(jax.vmap(lambda v: op @ v))(jnp.asarray(V)))
    assert "bcoo_array_mxu_matmat" in jaxpr
    for f, M in ((lambda o, v: o @ v, S64), (lambda o, v: o.T @ v, S64.T)):
        kernel_on.clear()
        np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(lambda v: f(op, v)))(jnp.asarray(V))),
                                   (M @ V.T).T, rtol=1e-5, atol=1e-4)
        assert len(kernel_on) == 1 and kernel_on[0][0] == (n, 96)
        # one vector: its value and both gradients, also mapped (vmap of grad, grad of vmap)
        v, w = jnp.asarray(V[0]), jnp.asarray(W[0])
        np.testing.assert_allclose(np.asarray(f(op, v)), M @ V[0], rtol=1e-5, atol=1e-4)
        gx = jax.grad(lambda z: jnp.sum(w * f(op, z)))(v)
        np.testing.assert_allclose(np.asarray(gx), M.T @ W[0], rtol=1e-5, atol=1e-4)
        gxs = jax.vmap(jax.grad(lambda z, c: jnp.sum(c * f(op, z))))(jnp.asarray(V), jnp.asarray(W))
        np.testing.assert_allclose(np.asarray(gxs), (M.T @ W.T).T, rtol=1e-5, atol=1e-4)
        gxb = jax.grad(lambda Z: jnp.sum(jnp.asarray(W) * jax.vmap(lambda z: f(op, z))(Z)))(jnp.asarray(V))
        np.testing.assert_allclose(np.asarray(gxb), (M.T @ W.T).T, rtol=1e-5, atol=1e-4)
        pr, pc = (rows, cols) if M is S64 else (cols, rows)
        gd = jax.grad(lambda d: jnp.sum(w * f(op.with_data(d), v)))(A.data)
        np.testing.assert_allclose(np.asarray(gd), W[0][pr] * V[0][pc], rtol=1e-4, atol=1e-4)
        gdb = jax.grad(lambda d: jnp.sum(jnp.asarray(W) * jax.vmap(lambda z: f(op.with_data(d), z))(
            jnp.asarray(V))))(A.data)
        np.testing.assert_allclose(np.asarray(gdb), np.sum(W[:, pr] * V[:, pc], axis=0), rtol=1e-4, atol=1e-3)
        jv = jax.jvp(lambda d, z: f(op.with_data(d), z), (A.data, v), (A.data, v))[1]
        np.testing.assert_allclose(np.asarray(jv), 2 * (M @ V[0]), rtol=1e-5, atol=1e-4)
    # mapped value sets (and vectors): one product each
    datas = jnp.stack([A.data, 2 * A.data, -A.data])
    ys = jax.vmap(lambda d, z: op.with_data(d) @ z)(datas, jnp.asarray(V[:3]))
    for i, c in enumerate((1, 2, -1)):
        np.testing.assert_allclose(np.asarray(ys[i]), c * (S64 @ V[i]), rtol=1e-5, atol=1e-4)
    ys = jax.vmap(lambda d: op.with_data(d) @ jnp.asarray(V[0]))(datas)
    np.testing.assert_allclose(np.asarray(ys), np.outer([1, 2, -1], S64 @ V[0]), rtol=1e-5, atol=1e-4)
    assert accel.vector_product_p.name == "bcoo_array_vector_product"


def _prepared_banded(seed):
    """A random banded 600 x 600 matrix (float32), its ``panels`` operator (with blocks) and the generator."""
    rng = np.random.default_rng(seed)
    S = _banded(600, 40, rng, density=0.5)
    S.sum_duplicates()
    op = accelerator.prepare(xp.asarray(S.astype(np.float32)), layout="panels", reorder=False)
    assert "mxu_table" in op.arrays
    return S, op, rng


def test_non_finite_x_takes_the_sell_slots(kernel_on):
    # An inf of x meets the blocks' stored zeros (NaN there); the product reports it and takes the COO
    # formula of the SELL slots: structural zeros stay zero, as in scipy.
    S, op, rng = _prepared_banded(6)
    X = rng.standard_normal((600, 128)).astype(np.float32)
    X[10, 3] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = sp.csr_array(S.astype(np.float32)).astype(np.float64) @ X.astype(np.float64)
    got = np.asarray(jax.jit(lambda o, z: o @ z)(op, jnp.asarray(X)))
    assert kernel_on
    _assert_matches_non_finite(got, ref)


def test_non_finite_x_with_reordered_blocks_takes_the_sell_slots(kernel_on):
    # Reordered blocks: the kernel reads x permuted, the non-finite fallback x as given (the SELL slots keep
    # the matrix's own order); both orientations.
    n = 2000
    rng, A, op, S64, _, _ = _clustered(n, 20, 9, "sell", scrambled=True)
    X = rng.standard_normal((n, 128)).astype(np.float32)
    X[10, 3] = np.inf
    for f, m in ((lambda o, z: o @ z, S64), (lambda o, z: o.T @ z, S64.T)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = m @ X.astype(np.float64)
        got = np.asarray(jax.jit(f)(op, jnp.asarray(X)))
        _assert_matches_non_finite(got, ref)
    assert len(kernel_on) == 2


@pytest.mark.parametrize("scrambled", (False, True))
def test_gradient_in_x_on_the_coo_formula(tpu_prices, scrambled):
    # The transpose in x binds the other orientation with this one's SELL slots ("flipped"): where the COO
    # formula serves it (off a TPU here; a non-finite result on the chip), it is the transpose of theirs, not
    # their product again (which gave A @ ct for A.T @ ct). Both orientations, jax.linear_transpose too.
    n, width = (2000, 20) if scrambled else (900, 60)
    rng, A, op, S64, _, _ = _clustered(n, width, 21, "sell", scrambled)
    X = rng.standard_normal((n, 16)).astype(np.float32)
    W = rng.standard_normal((n, 16)).astype(np.float32)
    for f, M in ((lambda o, z: o @ z, S64), (lambda o, z: o.T @ z, S64.T)):
        gx = jax.grad(lambda z: jnp.sum(W * f(op, z)))(jnp.asarray(X))
        np.testing.assert_allclose(np.asarray(gx), M.T @ W, rtol=1e-5, atol=1e-4)
        (lt,) = jax.linear_transpose(lambda z: f(op, z), jnp.asarray(X))(jnp.asarray(W))
        np.testing.assert_allclose(np.asarray(lt), M.T @ W, rtol=1e-5, atol=1e-4)


def test_gradient_in_x_with_a_non_finite_value_takes_the_transposed_formula(kernel_on):
    # An inf value: the kernel reports the transposed product non-finite and its COO fallback (the forward
    # slots, transposed) gives scipy's A.T @ ct, inf and NaN where scipy has them.
    n = 900
    rng, A, op, S64, _, _ = _clustered(n, 60, 22, "panels")
    d = np.asarray(A.data).copy()
    d[17] = np.inf
    S = sp.csr_array((d, (np.asarray(A.indices)[:, 0], np.asarray(A.indices)[:, 1])), shape=(n, n))
    X = rng.standard_normal((n, 128)).astype(np.float32)  # (128 columns: the blocks' price wins)
    W = np.abs(rng.standard_normal((n, 128))).astype(np.float32) + 1
    _, vjp = jax.vjp(lambda z: op.with_data(jnp.asarray(d)) @ z, jnp.asarray(X))
    (got,) = vjp(jnp.asarray(W))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = S.T.astype(np.float64) @ W.astype(np.float64)
    got = np.asarray(got)
    assert np.isfinite(ref).sum() > n  # most of the result is finite, and right
    _assert_matches_non_finite(got, ref)
    assert kernel_on


def test_bad_arguments_are_refused():
    S = _banded(300, 10, np.random.default_rng(23)).astype(np.float32)
    values, table = _blocks(S)
    X = np.ones((300, 4), np.float32)
    order = np.arange(300, dtype=np.int32)
    with pytest.raises(ValueError, match="perm and inverse go together"):
        mxu.mxu_kernel(values, table, X, shape=(300, 300), interpret=True, inverse=order)
    with pytest.raises(ValueError, match="perm and inverse go together"):
        mxu.mxu_kernel(values, table, X, shape=(300, 300), interpret=True, perm=order[:299], inverse=order[:299])
    with pytest.raises(ValueError, match="x must be 2-D with 300 rows"):
        mxu.mxu_kernel(values, table, X[:, 0], shape=(300, 300), interpret=True)
    slots = (jnp.zeros(8, jnp.float32), jnp.zeros(8, jnp.int32), jnp.zeros(8, jnp.int32))
    with pytest.raises(ValueError, match="x must be 2-D with 300 rows"):
        mxu.mxu_matmat(values, table, *slots, X[:299], shape=(300, 300))
    with pytest.raises(ValueError, match="perm and inverse go together"):
        mxu.mxu_matmat(values, table, *slots, X, perm=[0] * 300, shape=(300, 300))
    y = mxu.mxu_kernel(values, table, X, shape=(300, 300), interpret=True, perm=list(order), inverse=list(order))[0]
    np.testing.assert_allclose(np.asarray(y), S.astype(np.float64) @ X, rtol=1e-5, atol=1e-5)  # lists read


def _chip_product(blocks, x, transpose):
    """The group product as a TPU computes ``Precision.HIGHEST``: each operand split into three bfloat16
    parts, six one-pass products (an inf value's parts are inf and inf - inf = NaN)."""
    def parts(a):
        a1 = a.astype(jnp.bfloat16)
        r = a - a1.astype(jnp.float32)
        a2 = r.astype(jnp.bfloat16)
        return a1, a2, (r - a2.astype(jnp.float32)).astype(jnp.bfloat16)

    dims = (((0,), (0,)), ((), ())) if transpose else (((1,), (0,)), ((), ()))
    (a1, a2, a3), (x1, x2, x3) = parts(blocks), parts(x)
    dot = lambda a, b: jax.lax.dot_general(a, b, dims, preferred_element_type=jnp.float32)  # noqa: E731
    return dot(a1, x1) + dot(a1, x2) + dot(a2, x1) + dot(a1, x3) + dot(a3, x1) + dot(a2, x2)


def test_the_chip_split_matches_scipy():
    # The emulation of the chip's product is a float32 product (so the test below measures the non-finite
    # handling, not the emulation).
    rng = np.random.default_rng(8)
    b, x = rng.standard_normal((256, 128)).astype(np.float32), rng.standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(_chip_product(jnp.asarray(b), jnp.asarray(x), False)),
                               b.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)
    got = np.asarray(_chip_product(jnp.asarray(b), jnp.asarray(b[:, :128]), True))
    np.testing.assert_allclose(got, b.T.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


def test_non_finite_values_take_the_sell_slots(kernel_on, monkeypatch):
    # An inf and a NaN among the values, the kernel's group product split as on the chip (an inf value
    # becomes NaN there): the kernel reports its result non-finite and the product is the COO formula of the
    # SELL slots (inf where scipy has inf), both orientations.
    monkeypatch.setattr(mxu, "_group_product", _chip_product)
    S, _, rng = _prepared_banded(7)
    S = S.astype(np.float32)
    S.data[[3, 50]] = [np.inf, np.nan]
    op = accelerator.prepare(xp.asarray(S), layout="panels", reorder=False)
    X = np.abs(rng.standard_normal((600, 128))).astype(np.float32) + 1
    S64 = S.astype(np.float64)
    for f, ref in ((lambda o, z: o @ z, S64 @ X), (lambda o, z: o.T @ z, S64.T @ X)):
        got = np.asarray(jax.jit(f)(op, jnp.asarray(X)))
        _assert_matches_non_finite(got, ref)
    assert len(kernel_on) == 2


def test_blocks_kept_only_where_they_pay_and_only_when_asked(tpu_prices, monkeypatch):
    # A scattered pattern (one entry per block) keeps no blocks: the SELL-8 slots cost less; eager products'
    # layouts (choose's default), prepare(mxu_blocks=False), float64 values and other backends keep none.
    rng = np.random.default_rng(7)
    n = 3000
    scattered = sp.csr_array((np.ones(4500), (rng.integers(0, n, 4500), rng.integers(0, n, 4500))), shape=(n, n))
    for kind in ("panels", "sell"):
        op = accelerator.prepare(xp.asarray(scattered.astype(np.float32)), layout=kind, reorder=False)
        assert "mxu_table" not in op.arrays
    S = _banded(900, 60, rng, density=0.5)
    op = accelerator.prepare(xp.asarray(S.astype(np.float32)), layout="panels", reorder=False, mxu_blocks=False)
    assert "mxu_table" not in op.arrays and "MXU" not in op.description
    with pytest.raises(TypeError, match="mxu_blocks="):
        accelerator.prepare(xp.asarray(S.astype(np.float32)), layout="panels", mxu_blocks="yes")
    idx = np.stack(S.tocoo().coords, axis=1)
    assert "mxu_table" in layouts.choose(idx, S.shape, 4, "tpu", kind="panels", reorder=False, mxu=True).arrays
    assert "mxu_table" not in layouts.choose(idx, S.shape, 4, "tpu", kind="panels", reorder=False).arrays
    assert "mxu_table" in accelerator.prepare(xp.asarray(S.astype(np.float32)), layout="sell").arrays
    assert "mxu_table" not in accelerator.prepare(xp.asarray(S.astype(np.float64)), layout="sell").arrays
    monkeypatch.setattr(accelerator, "backend_of", lambda device=None: "gpu")
    assert "mxu_table" not in accelerator.prepare(xp.asarray(S.astype(np.float32)), layout="sell").arrays


@pytest.mark.parametrize("transpose, permuted", [(False, False), (True, False), (False, True), (True, True)])
def test_kernel_lowers_for_a_tpu(transpose, permuted):
    # Lowered for a TPU v5e on this CPU (jax.export to the "tpu" platform, the chip named by an abstract
    # mesh's device for Mosaic's 1-D block checks): block shapes, the blocks read in place at an offset of
    # a larger buffer, SMEM tables, the transposed product and the finiteness check, the rows permuted in
    # VMEM (their order brought into SMEM by chunks), without the chip.
    S = _banded(700, 40, np.random.default_rng(8)).astype(np.float32)
    values, table = _blocks(S)
    buffer = np.concatenate([np.zeros(2 * mxu.STEP_VALUES, np.float32), values])
    x = np.zeros((700, 20), np.float32)
    order = np.random.default_rng(9).permutation(700).astype(np.int32)
    perms = dict(perm=order, inverse=np.argsort(order).astype(np.int32)) if permuted else {}
    f = jax.jit(lambda v, t, z: mxu.mxu_kernel(v, t, z, shape=(700, 700), transpose=transpose,
                                               offset=2 * mxu.STEP_VALUES, interpret=False, **perms)[0])
    chip = jax.sharding.AbstractDevice(device_kind="TPU v5 lite", num_cores=1, platform="tpu")
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((1,), ("x",), abstract_device=chip)):
        exported = jax.export.export(f, platforms=["tpu"])(buffer, table, x)
    assert "tpu_custom_call" in exported.mlir_module()


def test_kernel_reads_the_blocks_in_place_at_an_offset():
    # The blocks as the last part of a larger buffer (other values before them, as in the layouts' value
    # buffers): the kernel reads them at their offset, both orientations; a misplaced part is refused.
    rng = np.random.default_rng(12)
    S = _banded(400, 30, rng).astype(np.float32)
    values, table = _blocks(S)
    before = rng.standard_normal(mxu.STEP_VALUES).astype(np.float32)  # (values the kernel must not read)
    buffer = np.concatenate([before, values])
    X = rng.standard_normal((400, 9)).astype(np.float32)
    S64 = S.astype(np.float64)
    for transpose, ref in ((False, S64 @ X), (True, S64.T @ X)):
        y, finite = mxu.mxu_kernel(buffer, table, X, shape=(400, 400), transpose=transpose,
                                   offset=mxu.STEP_VALUES, interpret=True)
        assert bool(finite)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-4)
    for offset, what in ((128, "multiple of"), (2 * mxu.STEP_VALUES, "multiple of")):
        with pytest.raises(ValueError, match=what):
            mxu.mxu_kernel(buffer, table, X, shape=(400, 400), offset=offset, interpret=True)
    with pytest.raises(ValueError, match="x must be 2-D with 400 rows"):
        mxu.mxu_kernel(buffer, table, X[:399], shape=(400, 400), offset=mxu.STEP_VALUES, interpret=True)
    with pytest.raises(ValueError, match="offset"):
        mxu.mxu_matmat(buffer, table, buffer[:10], np.zeros((1, 8), np.int32), np.zeros(10, np.int32), X,
                       shape=(400, 400), offset=3)


def _slots_of(S, transpose: bool):
    """``S``'s MXU blocks and its SELL-8 slots of one orientation (the transpose's with ``transpose``), duplicates
    summed: ``(values, table, slot, s_rows, s_cols, s_values, r, q)``, ``slot`` each stored entry's slot and
    ``(r, q)`` its row and column in that orientation."""
    from bcoo_array._kernels import sell

    S.sum_duplicates()
    values, table = _blocks(S)
    c = S.tocoo()
    order = np.lexsort((c.row, c.col)) if transpose else np.arange(len(c.row))  # the slots' orientation
    r, q = (c.col[order], c.row[order]) if transpose else (c.row, c.col)
    slot, _, s_rows, s_cols = sell.sell_tables(r, q, S.shape[::-1] if transpose else S.shape)
    s_values = np.zeros(s_cols.size, np.float32)
    s_values[slot] = c.data[order]
    return values, table, slot, s_rows, s_cols, s_values, r, q


@pytest.mark.parametrize("transpose", (False, True))
def test_values_cotangent_lands_on_the_stored_entries(transpose):
    # The product is linear in its two value copies together; their cotangent is the stored entries' (on
    # the SELL slots' copy, from its COO formula) and zeros on the blocks (whose stored zeros must get none).
    # A transpose in the blocks' copy alone is refused.
    rng = np.random.default_rng(9)
    S = sp.csr_array(_banded(300, 20, rng).astype(np.float32))
    values, table, slot, s_rows, s_cols, s_values, r, q = _slots_of(S, transpose)
    x = rng.standard_normal((300, 4)).astype(np.float32)
    w = rng.standard_normal((300, 4)).astype(np.float32)
    f = lambda v, sv: mxu.mxu_matmat(v, table, sv, s_rows, s_cols, x, shape=S.shape, transpose=transpose)  # noqa
    expected = np.sum(w[r] * x[q], axis=1)
    g_v, g_s = jax.grad(lambda v, sv: jnp.sum(w * f(v, sv)), argnums=(0, 1))(values, s_values)
    assert not np.any(np.asarray(g_v))
    np.testing.assert_allclose(np.asarray(g_s)[slot], expected, rtol=1e-5, atol=1e-5)
    assert np.count_nonzero(np.asarray(g_s)) <= len(slot)
    g_s = jax.grad(lambda sv: jnp.sum(w * f(values, sv)))(s_values)
    np.testing.assert_allclose(np.asarray(g_s)[slot], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="two value copies together"):
        jax.grad(lambda v: jnp.sum(w * f(v, s_values)))(values)


@pytest.mark.parametrize("transpose", (False, True))
def test_slots_in_row_order_give_the_same_products_with_a_sorted_sum(transpose):
    # ``s_order`` (the layouts' row order of the SELL slots) changes only how the COO formula sums: its
    # segment sum is sorted (what a TPU compiles in 0.6 s, not 8), and the product, its transpose in x
    # (the flipped formula) and the values' cotangent are those of the slots' own order. x holds an inf, so
    # the formula is what answers.
    from bcoo_array._kernels import layouts

    rng = np.random.default_rng(12)
    S = sp.csr_array(_banded(300, 20, rng).astype(np.float32))
    values, table, slot, s_rows, s_cols, s_values, _, _ = _slots_of(S, transpose)
    assert np.any(np.diff(s_rows) < 0)  # (the slots' own order is not the rows')
    s_order = layouts._slot_orders({"s_rows": s_rows, "s_rows_t": s_rows})["s_order"]
    assert np.all(np.diff(s_rows[s_order]) >= 0)
    x = rng.standard_normal((300, 4)).astype(np.float32)
    x[7, 1] = np.inf
    w = rng.standard_normal((300, 4)).astype(np.float32)

    def f(sv, z, o):
        return mxu.mxu_matmat(values, table, sv, s_rows, s_cols, z, shape=S.shape, transpose=transpose,
                              use_kernel=False, s_order=o)

    expected = (S.T if transpose else S).astype(np.float64) @ x.astype(np.float64)
    for o in (None, s_order):
        _assert_matches_non_finite(np.asarray(f(s_values, x, o)), expected)
    finite = np.where(np.isfinite(x), x, 0)
    g_plain = jax.grad(lambda sv, z: jnp.sum(w * f(sv, z, None)), argnums=(0, 1))(s_values, finite)
    g_order = jax.grad(lambda sv, z: jnp.sum(w * f(sv, z, s_order)), argnums=(0, 1))(s_values, finite)
    for a, b in zip(g_plain, g_order):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-5)

    def scatters(o):
        text = jax.jit(lambda z: f(s_values, z, o)).lower(x).as_text()
        return [line for line in text.splitlines() if '"stablehlo.scatter"' in line]

    assert all("indices_are_sorted = true" in line for line in scatters(s_order))
    assert not any("indices_are_sorted = true" in line for line in scatters(None))
    with pytest.raises(ValueError, match="s_order"):
        f(s_values, x, s_order[:-1])


@pytest.mark.parametrize("layout, scrambled", [("panels", False), ("sell", True)])
def test_layouts_with_blocks_keep_their_slots_row_orders(tpu_prices, layout, scrambled):
    # A layout that keeps dense blocks keeps the row order of its SELL slots, both orientations (what the
    # blocks' non-finite fallback sums in).
    n, width = (2000, 20) if scrambled else (900, 60)
    op = _clustered(n, width, 5, layout, scrambled)[2]
    for sfx in ("", "_t"):
        o = np.asarray(op.arrays["s_order" + sfx])
        assert o.dtype == np.int32 and np.array_equal(np.sort(o), np.arange(len(o)))
        assert np.all(np.diff(np.asarray(op.arrays["s_rows" + sfx])[o]) >= 0)


def test_operator_values_gradient_has_the_matrix_pattern(kernel_on):
    # The gradient with respect to a prepared operator's own value buffer (a pytree leaf) is non-zero only at
    # the slots of stored entries: a step along it keeps the pattern, so products of one vector and of many
    # columns still agree afterwards.
    S, op, rng = _prepared_banded(10)
    X = jnp.asarray(rng.standard_normal((600, 128)).astype(np.float32))
    leaves, treedef = jax.tree_util.tree_flatten(op)
    at = next(i for i, leaf in enumerate(leaves) if leaf is op.values)
    rebuild = lambda v: jax.tree_util.tree_unflatten(treedef, leaves[:at] + [v] + leaves[at + 1:])  # noqa
    g = np.asarray(jax.grad(lambda v: jnp.sum(rebuild(v) @ X))(op.values))
    stored = np.zeros(op.values.shape[0], bool)
    slots = np.concatenate([np.asarray(op.slot)[:, None], np.asarray(op.arrays["slot_t"])], axis=1).reshape(-1)
    stored[slots[slots < len(stored)]] = True
    assert np.any(g) and not np.any(g[~stored])
    stepped = rebuild(op.values - 0.1 * jnp.asarray(g))
    np.testing.assert_allclose(np.asarray(stepped @ X[:, :1])[:, 0], np.asarray(stepped @ X[:, 0]), rtol=1e-5,
                               atol=1e-4)


@pytest.mark.parametrize("layout", ("panels", "sell"))
@pytest.mark.parametrize("shape, dense", [((4096, 8), "column"), ((8, 4096), "row"), ((130, 1030), None)])
def test_skewed_patterns(kernel_on, layout, shape, dense):
    # Patterns whose matrix and transpose have SELL-8 parts of different sizes (the blocks' part of the value
    # buffer follows both): products of both orientations against scipy.
    rng = np.random.default_rng(11)
    m, k = shape
    S = sp.random_array(shape, density=0.002 if dense else 0.3, rng=rng, format="lil", dtype=np.float32)
    if dense == "column":
        S[:, 0] = rng.standard_normal((m, 1)).astype(np.float32)
    elif dense == "row":
        S[0, :] = rng.standard_normal((1, k)).astype(np.float32)
    S = sp.csr_array(S)
    if layout == "panels" and dense == "row":
        with pytest.raises(ValueError, match="too scattered for 128 x 128 panels"):
            accelerator.prepare(xp.asarray(S), layout=layout, reorder=False)
        return
    op = accelerator.prepare(xp.asarray(S), layout=layout, reorder=False)
    assert "mxu_table" in op.arrays
    S64 = S.astype(np.float64)
    X = rng.standard_normal((k, 128)).astype(np.float32)
    Y = rng.standard_normal((m, 128)).astype(np.float32)
    kernel_on.clear()
    np.testing.assert_allclose(np.asarray(jax.jit(lambda o, z: o @ z)(op, X)), S64 @ X, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda o, z: o.T @ z)(op, Y)), S64.T @ Y, rtol=1e-5, atol=1e-4)
    assert kernel_on


@pytest.mark.parametrize("name, n_blocks, n_slots, n, permuted, kept", [
    ("bcsstk16", 2560, 327680, 4884, False, True), ("bayer10", 7168, 98304, 13436, False, True),
    ("cage11", 57344, 655360, 39082, False, True), ("delaunay_n16", 49152, 393216, 65536, False, True),
    ("nh2010 after RCM", 28160, 262144, 48837, False, True),
    ("nh2010, blocks of its RCM order", 28672, 262144, 48837, True, True),
    ("delaunay_n16, blocks of its RCM order", 40960, 393216, 65536, True, True)])
def test_the_keep_rule_follows_the_chip_measurements(name, n_blocks, n_slots, n, permuted, kept):
    # The blocks and SELL-8 slots of five shared matrices' panels layouts, as built here, and whether the
    # blocks paid for their memory on a TPU v5e (128 columns in a loop): bcsstk16 0.065 ms against 0.43,
    # bayer10 0.21 against 0.33 (benchmarks/accelerator.py, eighth session); read in place (ninth session),
    # cage11 0.81 against its SELL slots' 1.69 and delaunay_n16 0.92 against 1.60; nh2010's blocks of its
    # RCM order, with the two row permutations (thirteenth session), 0.726 against 1.048.
    assert mxu.worth_keeping(n_blocks, n_slots, (n, n), permuted) == kept
    assert not mxu.worth_keeping(mxu.MAX_BYTES // 4096 + 1, 10**9, (n, n))  # never beyond MAX_BYTES


@pytest.mark.parametrize("m, k, per_step", [(300, 200, 256), (1000, 129, 256), (5, 7, 2048), (130, 1000, 128)])
def test_sell_redo_replaces_a_result_only_when_asked(m, k, per_step):
    # The non-finite fallback without control flow (.sell.sell_redo, interpret mode): redo=True gives the
    # slots' product, inf and NaN where scipy has them (odd and even step counts, one step, more columns than
    # rows); redo=False leaves the aliased result as it was, eager and under jit; bad shapes are refused.
    from bcoo_array._kernels import sell

    rng = np.random.default_rng(m + k)
    S = sp.random_array((m, k), density=0.03, rng=rng, format="csr", dtype=np.float32)
    c = S.tocoo()
    slot, table, _, s_cols = sell.sell_tables(c.row, c.col, (m, k), slots_per_step=per_step)
    vals = np.zeros(len(s_cols), np.float32)
    vals[slot] = c.data
    X = rng.standard_normal((k, 128)).astype(np.float32)
    X[k // 2, 5], X[0, 70] = np.inf, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = S.astype(np.float64) @ X.astype(np.float64)
    y0 = jnp.full((m, 128), 7.0, jnp.float32)
    args = (jnp.asarray(vals), jnp.asarray(table), jnp.asarray(s_cols))
    f = jax.jit(lambda y, r, x: sell.sell_redo(y, r, *args, x, shape=(m, k), interpret=True))
    for run in (lambda y, r, x: sell.sell_redo(y, r, *args, x, shape=(m, k), interpret=True), f):
        _assert_matches_non_finite(np.asarray(run(y0, True, jnp.asarray(X))), ref)
        np.testing.assert_array_equal(np.asarray(run(y0, False, jnp.asarray(X))), np.full((m, 128), 7.0))
    with pytest.raises(ValueError, match=r"y must be"):
        sell.sell_redo(y0[:, :64], True, *args, jnp.asarray(X), shape=(m, k), interpret=True)


@pytest.mark.parametrize("layout, scrambled", [("panels", False), ("sell", True)])
def test_redo_kernel_serves_non_finite_results_without_a_cond(kernel_on, monkeypatch, layout, scrambled):
    # mxu.REDO_KERNEL on: a product's non-finite result is replaced by the SELL slots' kernel (no lax.cond in
    # the program), for an inf or NaN of x and an inf value, both orientations, the reordered blocks too;
    # a finite x gives the blocks' result. The transpose in x ("flipped" slots) keeps the cond.
    from bcoo_array._kernels import sell

    monkeypatch.setattr(mxu, "REDO_KERNEL", True)
    redos = []
    real = sell.sell_redo
    monkeypatch.setattr(sell, "sell_redo", lambda *a, **kw: redos.append(kw["shape"]) or real(*a, **kw))
    formulas = []
    coo = mxu._coo
    monkeypatch.setattr(mxu, "_coo", lambda *a: formulas.append(a[-1]) or coo(*a))
    n, width = (2000, 20) if scrambled else (900, 60)
    rng, A, op, S64, _, _ = _clustered(n, width, 31, layout, scrambled)
    X = rng.standard_normal((n, 128)).astype(np.float32)
    Xbad = X.copy()
    Xbad[10, 3], Xbad[n // 2, 90] = np.inf, np.nan
    d = np.asarray(A.data).copy()
    d[17] = np.inf
    S_inf = sp.csr_array((d.astype(np.float64), (np.asarray(A.indices)[:, 0], np.asarray(A.indices)[:, 1])),
                         shape=(n, n))
    for tr in (False, True):
        f = jax.jit(lambda o, z, tr=tr: (o.T if tr else o) @ z)
        f.lower(op, jnp.asarray(X))
        assert not formulas  # (no cond: its COO branch is never traced)
        with monkeypatch.context() as off:  # (the cond the redo kernel replaces traces it)
            off.setattr(mxu, "REDO_KERNEL", False)
            jax.jit(lambda o, z, tr=tr: (o.T if tr else o) @ z).lower(op, jnp.asarray(X))
            assert formulas
            formulas.clear()
        for o, M, z in ((op, S64, X), (op, S64, Xbad), (op.with_data(jnp.asarray(d)), S_inf, X)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ref = (M.T if tr else M) @ z.astype(np.float64)
            _assert_matches_non_finite(np.asarray(f(o, jnp.asarray(z))), ref)
    assert redos == [(n, n)] * 2 and len(kernel_on) == 4  # (one trace per orientation, and the cond's)
    gx = jax.grad(lambda z: jnp.sum(op @ z))(jnp.asarray(X))  # (its transpose: flipped slots, the cond)
    np.testing.assert_allclose(np.asarray(gx), S64.T @ np.ones((n, 128)), rtol=1e-5, atol=1e-4)
