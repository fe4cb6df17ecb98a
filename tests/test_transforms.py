"""JAX transformations of BCOOArrays: ``jax.jit`` of functions taking and
returning them, ``jax.grad`` with respect to ``data`` (compared with the dense
gradient gathered at the stored positions), and ``jax.vmap`` over batch
dimensions (compared with per-batch results).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import bcoo_array as xp
from bcoo_array import BCOOArray
from _oracle import assert_matches, cases, to_np

F64 = np.dtype(np.float64)


def _stored_positions(a: BCOOArray):
    """Index tuple of the dense array at each stored entry of a 2-D, n_batch = n_dense = 0 array."""
    idx = np.asarray(a.indices)
    return idx[:, 0], idx[:, 1]


def _grad_at_stored(dense_grad, a: BCOOArray):
    """The gradient w.r.t. ``data``: the dense gradient at each stored position, 0 for padding.

    Duplicates each get the full dense gradient (value = sum of duplicates)."""
    r, c = _stored_positions(a)
    valid = (r < a.shape[0]) & (c < a.shape[1])
    out = np.zeros(r.shape, dense_grad.dtype)
    out[valid] = dense_grad[r[valid], c[valid]]
    return out


@settings(max_examples=15)
@given(cases(dtype=F64, n_batch=0, n_dense=0, min_ndim=2, max_ndim=2, nan_fill=False, nan_values=False),
       st.integers(1, 3))
def test_grad_sum_matmul(c, n):
    """d/d data of sum(A @ x) == (dense gradient ones @ x.T) at the stored positions."""
    a = c.arr
    x = jnp.asarray(np.arange(a.shape[1] * n, dtype=np.float64).reshape(a.shape[1], n) - 1.0)

    def f(data):
        return jnp.sum(a._replace(data=data) @ x)  # a jax.Array: the mixed-type rule

    g = jax.grad(f)(a.data)
    dense_grad = np.ones((a.shape[0], n)) @ np.asarray(x).T
    np.testing.assert_allclose(np.asarray(g), _grad_at_stored(dense_grad, a), rtol=1e-12, atol=1e-12)
    g_jit = jax.jit(jax.grad(f))(a.data)
    np.testing.assert_allclose(np.asarray(g_jit), np.asarray(g), rtol=1e-12, atol=1e-12)


@settings(max_examples=15)
@given(cases(dtype=F64, n_batch=0, n_dense=0, min_ndim=2, max_ndim=2, nan_fill=False, nan_values=False,
             allow_duplicates=False))
def test_grad_sum_exp(c):
    """d/d data of sum(exp(A)) == exp(A) at the (unique) stored positions."""
    a = c.arr

    def f(data):
        return xp.sum(xp.exp(a._replace(data=data))).todense()

    g = jax.grad(f)(a.data)
    np.testing.assert_allclose(np.asarray(g), _grad_at_stored(np.exp(c.dense), a), rtol=1e-12)


def test_grad_with_duplicates_nonlinear():
    # two entries at (0, 0) holding 1 and 2: value 3, d exp(3)/d each half = exp(3)
    a = BCOOArray((jnp.array([1.0, 2.0, 0.5]), np.array([[0, 0], [0, 0], [1, 1]])), shape=(2, 2))

    def f(data):
        return xp.sum(xp.exp(a._replace(data=data))).todense()

    g = jax.grad(f)(a.data)
    np.testing.assert_allclose(np.asarray(g), [np.exp(3.0), np.exp(3.0), np.exp(0.5)], rtol=1e-12)


@settings(max_examples=10)
@given(cases(min_ndim=1, max_ndim=3, n_batch=1, dtypes=(F64, np.dtype(np.int32), np.dtype(np.bool_))))
def test_vmap_over_batch(c):
    """vmap a function over the leading batch dimension: same as the per-batch results."""
    def per(a):
        assert isinstance(a, BCOOArray) and a.shape == c.dense.shape[1:]
        return a.todense()

    out = jax.vmap(per)(c.arr)
    np.testing.assert_array_equal(np.asarray(out), c.dense)
    for i in range(c.dense.shape[0]):
        np.testing.assert_array_equal(np.asarray(per(c.arr[i])), c.dense[i])


@settings(max_examples=8)
@given(cases(min_ndim=2, max_ndim=3, n_batch=1, dtypes=(F64,), nan_fill=False))
def test_vmap_elementwise_and_reduce(c):
    """vmap of a function returning a BCOOArray (exp then a sum over the last axis)."""
    def per(a):
        return xp.sum(xp.exp(a), axis=-1)

    out = jax.vmap(per)(c.arr)
    assert isinstance(out, BCOOArray)
    with np.errstate(all="ignore"):
        expected = np.sum(np.exp(c.dense), axis=-1)
    np.testing.assert_allclose(to_np(out), expected, rtol=1e-12)


def test_vmap_matmul_per_batch():
    rng = np.random.default_rng(0)
    dense = (rng.random((3, 4, 5)) < 0.4) * rng.integers(-3, 4, (3, 4, 5)).astype(np.float64)
    a = BCOOArray.fromdense(dense, n_batch=1)
    x = jnp.asarray(rng.random((5, 2)))
    out = jax.vmap(lambda m: (m @ x))(a)
    np.testing.assert_allclose(np.asarray(out), dense @ np.asarray(x), rtol=1e-12)


@settings(max_examples=15)
@given(cases(max_ndim=3))
def test_jit_returns_bcoo(c):
    """A jitted function taking and returning BCOOArrays keeps the layout metadata."""
    f = jax.jit(lambda a: (a, a.sum_duplicates()))
    a1, a2 = f(c.arr)
    assert_matches(a1, c.dense)
    assert_matches(a2, c.dense)
    assert a1.n_batch == c.n_batch and a1.n_dense == c.n_dense


def test_jit_caches_on_fill_value():
    # fill values are static: a different fill value must not reuse a stale trace
    f = jax.jit(lambda a: a.todense())
    a = BCOOArray((np.array([1.0]), np.array([[0]])), shape=(2,), fill_value=0.0)
    b = BCOOArray((np.array([1.0]), np.array([[0]])), shape=(2,), fill_value=5.0)
    n = BCOOArray((np.array([1.0]), np.array([[0]])), shape=(2,), fill_value=np.nan)
    np.testing.assert_array_equal(np.asarray(f(a)), [1.0, 0.0])
    np.testing.assert_array_equal(np.asarray(f(b)), [1.0, 5.0])
    np.testing.assert_array_equal(np.asarray(f(n)), [1.0, np.nan])


def test_vmap_over_a_stack_needs_and_takes_a_batch_dimension():
    rng = np.random.default_rng(3)
    dense = [np.where(rng.random((4, 5)) < 0.4, rng.standard_normal((4, 5)), 0.0) for _ in range(3)]
    S = xp.stack([xp.asarray(d) for d in dense])
    assert S.n_batch == 0
    with pytest.raises(ValueError, match=r"update_layout\(x, n_batch=1\)"):
        jax.vmap(lambda a: xp.sum(a))(S)
    B = xp.update_layout(S, n_batch=1)
    assert (B.n_batch, B.n_dense, B.shape) == (1, 0, (3, 4, 5))
    np.testing.assert_array_equal(to_np(B), np.stack(dense))
    got = jax.vmap(lambda a: xp.sum(a * a, axis=1))(B)
    np.testing.assert_allclose(to_np(got), np.stack([(d * d).sum(axis=1) for d in dense]), rtol=1e-12)
    back = jax.jit(lambda a: xp.update_layout(a, n_batch=0))(B)
    assert back.n_batch == 0
    np.testing.assert_array_equal(to_np(back), np.stack(dense))


@given(cases(max_ndim=3), st.data())
def test_update_layout_keeps_values_and_fill(c, data):
    x = c.arr
    n_batch = data.draw(st.integers(0, x.ndim))
    n_dense = data.draw(st.integers(0, x.ndim - n_batch))
    y = xp.update_layout(x, n_batch=n_batch, n_dense=n_dense)
    assert (y.n_batch, y.n_dense, y.shape, y.dtype) == (n_batch, n_dense, x.shape, x.dtype)
    assert_matches(y, c.dense)
    np.testing.assert_array_equal(np.asarray(y.fill_value), np.asarray(x.fill_value))


def test_update_layout_rejects_bad_arguments():
    x = xp.asarray(np.eye(3))
    with pytest.raises(ValueError, match="n_batch \\+ n_dense <= x.ndim"):
        xp.update_layout(x, n_batch=2, n_dense=1)
    with pytest.raises(ValueError, match=">= 0"):
        xp.update_layout(x, n_batch=-1)
    with pytest.raises(TypeError, match="n_dense must be an int"):
        xp.update_layout(x, n_dense=1.0)
    with pytest.raises(TypeError, match="x must be a BCOOArray"):
        xp.update_layout(np.eye(3), n_batch=1)
    assert xp.update_layout(x) is x


def test_update_layout_to_dense_with_a_nonzero_fill_writes_the_fill_once():
    # Entries of one row become parts of one dense block; the fill was written into each part and then added up.
    d = np.array([[5.0, 1.0, 7.0], [1.0, 1.0, 1.0]])
    x = xp.BCOOArray.fromdense(d, fill_value=1.0)
    for f in (lambda a: xp.update_layout(a, n_dense=1), jax.jit(lambda a: xp.update_layout(a, n_dense=1))):
        y = f(x)
        np.testing.assert_array_equal(to_np(y), d)
    b = xp.BCOOArray((np.array([[True], [False], [True]]), np.zeros((3, 1, 0), np.int32)), shape=(3,),
                     fill_value=True)
    assert b.n_batch == 1
    np.testing.assert_array_equal(to_np(xp.update_layout(b, n_batch=0, n_dense=1)), [True, False, True])
    empty = xp.update_layout(xp.asarray(np.zeros((0, 3))), n_dense=1)
    assert empty.shape == (0, 3) and empty.nse == 0


def test_a_map_over_the_leaves_gives_an_array_whose_shape_matches_its_buffers():
    """``jax.tree.map`` over a batched array's leaves: a new batch size is read from the leaves; leaves that
    no longer hold the static shape raise instead of densifying to wrong values."""
    rng = np.random.default_rng(3)
    D = rng.random((4, 5, 6)) * (rng.random((4, 5, 6)) < 0.3)
    A = xp.update_layout(xp.asarray(D), n_batch=1)
    B = jax.tree.map(lambda b: b[1:3], A)  # two batch elements of both leaves
    assert B.shape == (2, 5, 6)
    np.testing.assert_array_equal(np.asarray(B.todense()), D[1:3])
    C = jax.tree.map(lambda b: b[:1], A)  # size 1 in both leaves: one batch element, not a broadcast of 4
    assert C.shape == (1, 5, 6)
    np.testing.assert_array_equal(np.asarray(C.todense()), D[:1])
    with pytest.raises(ValueError, match="batch dimension 0"):
        jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(A), [A.data[:2], A.indices[:3]])
    with pytest.raises(ValueError, match="nse"):
        jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(A), [A.data[:, :1], A.indices])
    # the transformations' own unflattening is untouched
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: xp.sum(a).todense())(A)), D.sum(axis=(1, 2)))
    assert jax.jit(lambda a: a * 2)(A).shape == A.shape
    assert jax.tree.map(lambda b: b.shape, A) is not None


def _custom_jvp_quadratic():
    @jax.custom_jvp
    def f(a):
        return xp.sum(a * a).todense()

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (a_dot,) = primals, tangents
        # the tangent arrives without indices (float0): the element-wise product with its primal adopts them,
        # and with_data rebuilds it explicitly
        t1 = xp.sum(a * a_dot).todense()
        t2 = xp.sum(a.with_data(a_dot.data) * a).todense()
        return f(a), t1 + t2

    return f


def _custom_vjp_matvec():
    @jax.custom_vjp
    def g(a, x):
        return a @ x

    def fwd(a, x):
        return g(a, x), (a, x)

    def bwd(res, ct):
        a, x = res
        i = a.indices
        return a.with_data(ct[i[:, 0]] * x[i[:, 1]]), a.T @ ct

    g.defvjp(fwd, bwd)
    return g


@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "vmap(grad)", "jvp", "jit(jvp)", "jacfwd", "jacrev"])
@pytest.mark.parametrize("rule", ["custom_jvp", "custom_vjp"])
def test_custom_rules_take_sparse_tangents(rule, transform):
    """A BCOOArray primal in a custom_jvp / custom_vjp rule: the tangent's values meet the primal's pattern."""
    D = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    A = xp.asarray(D)
    x = jnp.array([1.0, 2.0, 3.0])
    if rule == "custom_jvp":
        f = _custom_jvp_quadratic()
        loss = lambda d: f(A.with_data(d))  # noqa: E731
        dense_loss = lambda d: jnp.sum(d * d)  # noqa: E731
    else:
        g = _custom_vjp_matvec()
        loss = lambda d: jnp.sum(g(A.with_data(d), x) ** 2)  # noqa: E731
        dense_loss = lambda d: jnp.sum((A.with_data(d).todense() @ x) ** 2)  # noqa: E731
    d0 = A.data
    if transform == "vmap(grad)":
        batch = jnp.stack([d0, 2 * d0])
        got = jax.vmap(jax.grad(loss))(batch)
        want = jax.vmap(jax.grad(dense_loss))(batch)
    elif transform in ("jvp", "jit(jvp)"):
        if rule == "custom_vjp":
            pytest.skip("custom_vjp functions have no forward mode (JAX's rule)")
        run = jax.jvp if transform == "jvp" else jax.jit(jax.jvp, static_argnums=0)
        got = run(loss, (d0,), (jnp.ones_like(d0),))[1]
        want = jax.jvp(dense_loss, (d0,), (jnp.ones_like(d0),))[1]
    elif transform == "jacfwd" and rule == "custom_vjp":
        pytest.skip("custom_vjp functions have no forward mode (JAX's rule)")
    else:
        t = {"grad": jax.grad, "jit(grad)": lambda h: jax.jit(jax.grad(h)), "jacfwd": jax.jacfwd,
             "jacrev": jax.jacrev}[transform]
        got = t(loss)(d0)
        want = t(dense_loss)(d0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_a_patternless_tangent_used_alone_names_with_data():
    D = np.array([[1.0, 0.0], [0.0, 3.0]])
    A = xp.asarray(D)

    @jax.custom_jvp
    def f(a):
        return (a @ jnp.ones(2)).sum()

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (a_dot,) = primals, tangents
        return f(a), (a_dot @ jnp.ones(2)).sum()  # no primal to lend the pattern

    with pytest.raises(TypeError, match="with_data"):
        jax.grad(lambda d: f(A.with_data(d)))(A.data)


@pytest.mark.parametrize("engine", ["host", "xla"])
def test_a_stack_made_batched_stores_its_fullest_element_not_the_whole_stack(engine, monkeypatch):
    """The vmap recipe update_layout(stack, n_batch=1): each batch element keeps its own entries, padded to
    the fullest element's count (the whole stack's count before), so sums under vmap read no foreign zeros."""
    if engine == "xla":
        monkeypatch.setenv("BCOO_ARRAY_HOST", "0")
    rng = np.random.default_rng(2)
    dense = [rng.random((20, 20)) * (rng.random((20, 20)) < p) for p in (0.05, 0.2, 0.1, 0.02)]
    mats = [xp.asarray(d) for d in dense]
    S = xp.update_layout(xp.stack(mats), n_batch=1)
    assert S.nse == max(m.nse for m in mats)
    np.testing.assert_array_equal(np.asarray(S.todense()), np.stack(dense))
    sums = jax.vmap(lambda a: xp.sum(a, axis=1).todense())(S)
    np.testing.assert_allclose(np.asarray(sums), np.stack(dense).sum(axis=2), rtol=1e-12)
    F = xp.update_layout(xp.stack([m + 1.0 for m in mats]), n_batch=1)  # a non-zero fill: padding stays padding
    np.testing.assert_array_equal(np.asarray(F.todense()), np.stack(dense) + 1.0)


# -- the transformation matrix over functions returning BCOOArrays, jax arrays and 0-d results -----------------

_X = jnp.array([1.0, -2.0, 0.5])
_FUNCTIONS = {
    "sparse output": lambda M: xp.sin(M) * M,
    "dense output": lambda M: xp.exp(M) @ _X,
    "0-d output": lambda M: xp.sum(M * xp.cos(M)),
}


def _densified(y):
    return y.todense() if isinstance(y, xp.BCOOArray) else y


def _scatter_last(ref, rows, cols, shape):
    """JAX's Jacobian with respect to the stored values (last axis nse) as one with respect to the array."""
    out = jnp.zeros(ref.shape[:-1] + shape, ref.dtype)
    return out.at[..., rows, cols].add(ref)


@pytest.mark.parametrize("fname", list(_FUNCTIONS))
@pytest.mark.parametrize("wrt", ["values", "array"])
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "jit(jacfwd)", "jit(jacrev)", "grad",
                                       "jacfwd(jacrev)", "vmap(jacrev)"])
def test_autodiff_transformation_matrix(fname, wrt, transform):
    """bcoo_array.autodiff against JAX's transformation of the densified function: BCOOArray, jax.Array and
    0-d outputs; with respect to the stored values (a jax.Array) or the BCOOArray itself."""
    from bcoo_array import autodiff as ad

    f = _FUNCTIONS[fname]
    D = np.array([[0.3, 0.0, 1.2], [0.0, -0.7, 0.0]])
    A = xp.asarray(D)
    rows, cols = (np.asarray(c) for c in np.asarray(A.indices).T)
    scalar = fname == "0-d output"
    if transform in ("grad", "jacfwd(jacrev)") and not scalar:
        pytest.skip("a gradient and a Hessian need a scalar output")
    dense_f = lambda d: _densified(f(A.with_data(d)))  # noqa: E731
    ours_t, jax_t = {
        "jacfwd": (ad.jacfwd, jax.jacfwd), "jacrev": (ad.jacrev, jax.jacrev),
        "jit(jacfwd)": (lambda h: jax.jit(ad.jacfwd(h)), jax.jacfwd),
        "jit(jacrev)": (lambda h: jax.jit(ad.jacrev(h)), jax.jacrev),
        "grad": (ad.grad, jax.grad), "vmap(jacrev)": (ad.jacrev, jax.jacrev),
        "jacfwd(jacrev)": (lambda h: ad.jacfwd(ad.jacrev(h)), lambda h: jax.jacfwd(jax.jacrev(h))),
    }[transform]
    if wrt == "values":
        ours = ours_t(lambda d: f(A.with_data(d)))
        arg = A.data
    else:
        ours = ours_t(f)
        arg = A
    want = jax_t(dense_f)
    if transform == "vmap(jacrev)":
        batch = jnp.stack([A.data, 2 * A.data, -A.data])
        got = jax.vmap(ours)(batch if wrt == "values" else xp.update_layout(
            xp.stack([A.with_data(b) for b in batch]), n_batch=1))
        ref = jax.vmap(want)(batch)
    else:
        got = ours(arg)
        ref = want(A.data)
    if wrt == "array":  # the derivative with respect to the stored values, scattered to their positions
        ref = _scatter_last(ref, rows, cols, A.shape)
        if transform == "jacfwd(jacrev)":  # the Hessian: both input axes
            ref = jnp.moveaxis(_scatter_last(jnp.moveaxis(ref, -3, -1), rows, cols, A.shape), (-4, -3), (-2, -1))
    sparse_result = fname == "sparse output" or wrt == "array"
    assert isinstance(got, xp.BCOOArray) == sparse_result
    np.testing.assert_allclose(np.asarray(_densified(got)), np.asarray(ref), rtol=1e-12, atol=1e-14)


def test_autodiff_pytrees_argnums_and_aux():
    from bcoo_array import autodiff as ad

    A = xp.asarray(np.array([[1.0, 0.0], [2.0, 3.0]]))
    v = jnp.array([0.5, -1.0])

    def f(M, w):
        return {"y": M * w, "s": xp.sum(M) * jnp.sum(w)}, "aux"

    J, aux = ad.jacrev(f, argnums=(0, 1), has_aux=True)(A, v)
    assert aux == "aux"
    dense = lambda d, w: (A.with_data(d).todense() * w, jnp.sum(d) * jnp.sum(w))  # noqa: E731
    (Jy_d, Jy_w), (Js_d, Js_w) = jax.jacrev(dense, argnums=(0, 1))(A.data, v)
    rows, cols = (np.asarray(c) for c in np.asarray(A.indices).T)
    np.testing.assert_allclose(J["y"][0].todense(), _scatter_last(Jy_d, rows, cols, A.shape))
    np.testing.assert_allclose(J["y"][1].todense(), Jy_w)
    np.testing.assert_allclose(J["s"][0].todense(), _scatter_last(Js_d, rows, cols, A.shape))
    np.testing.assert_allclose(J["s"][1], Js_w)
    (val, aux), g = ad.value_and_grad(lambda M: (xp.sum(M * M), 7), has_aux=True)(A)
    assert aux == 7 and float(val) == 14.0
    np.testing.assert_allclose(g.todense(), 2 * A.todense())


def test_autodiff_errors_name_the_fix():
    from bcoo_array import autodiff as ad

    A = xp.asarray(np.array([[1.0, 0.0], [2.0, 3.0]]))
    with pytest.raises(TypeError, match="jacrev"):
        ad.grad(lambda M: M * 2.0)(A)
    with pytest.raises(ValueError, match="out of range"):
        ad.grad(lambda M: xp.sum(M), argnums=3)(A)
    with pytest.raises(NotImplementedError, match="with_data"):  # the block would have no BCOO layout
        ad.jacfwd(lambda M: M * 2.0)(xp.update_layout(A, n_dense=1))
    # JAX's own transformations cannot hold a BCOOArray output: the error names this module
    with pytest.raises(ValueError, match="bcoo_array.autodiff"):
        jax.jacfwd(lambda d: A.with_data(d) * 2.0)(A.data)
    # vmap along another axis than 0 for a BCOOArray output (where the leaves' shapes show it: a batch of 3
    # after the 2 columns of the indices)
    with pytest.raises(ValueError, match="out_axes=0"):
        jax.vmap(lambda d: A.with_data(d) * 2.0, out_axes=-1)(jnp.stack([A.data, A.data, A.data]))


@pytest.mark.parametrize("in_axis", [0, 1, -3, -4, None])
@pytest.mark.parametrize("out_axis", [0, 1])
def test_vmap_in_and_out_axes_over_batch_dimensions(in_axis, out_axis):
    """Issue 29: vmap maps the batch dimension ``in_axes`` names and puts the result's along ``out_axes``
    (as jax.experimental.sparse's BCOO); square batch sizes, so a wrong axis could not hide behind a shape
    error. The oracle is NumPy's moveaxis of the dense values."""
    rng = np.random.default_rng(29)
    d = np.where(rng.random((3, 3, 4, 5)) < 0.4, rng.standard_normal((3, 3, 4, 5)), 0.0)
    A = xp.update_layout(xp.asarray(d), n_batch=2)
    x = rng.standard_normal(5)
    if in_axis is None:
        got = jax.vmap(lambda M, v: M * v, in_axes=(None, 0), out_axes=out_axis)(A, jnp.stack([x, x, x]))
        want = np.moveaxis(np.stack([d * x] * 3), 0, out_axis)
    else:
        got = jax.vmap(lambda M: xp.exp(M) * 2.0, in_axes=in_axis, out_axes=out_axis)(A)
        want = np.moveaxis(np.moveaxis(np.exp(d) * 2.0, in_axis, 0), 0, out_axis)
    assert isinstance(got, BCOOArray) and got.shape == want.shape
    np.testing.assert_allclose(to_np(got), want, rtol=1e-12)
    if in_axis is not None:  # a dense result of a mapped BCOOArray argument
        sums = jax.vmap(lambda M: xp.sum(M, axis=-1).todense(), in_axes=in_axis)(A)
        np.testing.assert_allclose(np.asarray(sums), np.moveaxis(d, in_axis, 0).sum(axis=-1), rtol=1e-12)


def test_vmap_axes_outside_the_batch_dimensions_raise():
    d = np.arange(60.0).reshape(3, 4, 5) % 4
    A = xp.update_layout(xp.asarray(d), n_batch=1)
    for axis in (1, -1, -2):  # a sparse dimension (negative axes count from the end of the shape)
        with pytest.raises(ValueError, match=rf"in_axes={axis} .*update_layout"):
            jax.vmap(lambda M: M * 2.0, in_axes=axis)(A)
    with pytest.raises(ValueError, match=r"out_axes=2 .*permute_dims"):
        jax.vmap(lambda M: M * 2.0, out_axes=2)(A)


_CLOSURE_SCRIPT = r"""
import sys
import numpy as np
import jax
import jax.numpy as jnp
jax.config.update("jax_enable_x64", sys.argv[1] == "1")
assert len(jax.devices()) == 2
import bcoo_array as xp
from bcoo_array import BCOOArray

d = np.diag(np.arange(1.0, 5.0, dtype=np.float32))
d[0, 3] = 1.0
v0 = jnp.ones(4, jnp.float32)
want3 = np.linalg.matrix_power(d.astype(np.float64), 3) @ np.ones(4)
loops = {
    "fori_loop": lambda A: jax.lax.fori_loop(0, 3, lambda i, v: xp.matmul(A, v), v0),
    "scan": lambda A: jax.lax.scan(lambda v, _: (xp.matmul(A, v), None), v0, None, length=3)[0],
    "cond": lambda A: jax.lax.cond(True, lambda v: xp.matmul(A, xp.matmul(A, xp.matmul(A, v))),
                                   lambda v: v, v0),
    "transpose_fori": lambda A: jax.lax.fori_loop(0, 3, lambda i, v: xp.matmul(A.T.T, v), v0),
}
for name, loop in loops.items():
    A = BCOOArray.fromdense(d)
    np.testing.assert_allclose(np.asarray(loop(A)), want3, rtol=1e-6, err_msg=name)
    # the array is still usable afterwards: no tracer from the loop body was kept on it
    np.testing.assert_allclose(np.asarray(jax.jit(lambda A, v: A @ v)(A, v0)), d @ np.ones(4), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(A @ v0), d @ np.ones(4), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(A.data), np.asarray(A.todense())[np.nonzero(d)])
print("ok")
"""


@pytest.mark.parametrize("x64", [True, False])
def test_array_closed_over_in_a_traced_loop_keeps_no_tracer(x64):
    """Issue 29: with two devices, reading ``data`` of an array built from NumPy inside a loop body
    (fori_loop, scan, cond) hands its host buffer to JAX under the trace; that value must not be cached,
    or the next use raises UnexpectedTracerError. The oracle is NumPy's matrix power."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _CLOSURE_SCRIPT, "1" if x64 else "0"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("ok")


def _largest_intermediate(jaxpr) -> int:
    """The most elements any equation of ``jaxpr`` (nested jaxprs included) produces."""
    most = 0
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            most = max(most, int(np.prod(getattr(v.aval, "shape", ()))))
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                most = max(most, _largest_intermediate(inner))
    return most


_BROADCAST_PRODUCTS = {
    "multiply-row": (lambda A, d: A.multiply(d[None, :]), lambda D, d: D.sum(0)),
    "multiply-col": (lambda A, d: A.multiply(d[:, None]), lambda D, d: D.sum(1)),
    "times-row": (lambda A, d: A * d[None, :], lambda D, d: D.sum(0)),
    "times-reciprocal-col": (lambda A, d: A * (1 / d)[:, None], lambda D, d: -(D / d[:, None] ** 2).sum(1)),
}


@pytest.mark.parametrize("name", sorted(_BROADCAST_PRODUCTS))
def test_grad_of_a_product_with_a_broadcast_vector_stays_sparse(name):
    # issue 29, item 8: the transpose of a broadcast-then-gather scatter-added into an n x n buffer
    # (17 GB for delaunay_n16); the gradient must cost O(nse + n).
    make, want = _BROADCAST_PRODUCTS[name]
    n = 4096
    rng = np.random.default_rng(0)
    S = sp.random_array((n, n), density=0.0005, rng=rng, format="coo").astype(np.float32)
    A = xp.from_scipy(S)
    d = jnp.asarray(rng.uniform(1.0, 2.0, n).astype(np.float32))
    f = lambda d: jnp.sum(make(A, d).data)  # noqa: E731
    jaxpr = jax.make_jaxpr(jax.grad(f))(d).jaxpr
    assert _largest_intermediate(jaxpr) < n * n // 16
    got = np.asarray(jax.grad(f)(d))
    np.testing.assert_allclose(got, want(S.toarray().astype(np.float64), np.asarray(d, np.float64)),
                               rtol=1e-4, atol=1e-4)


def test_gather_of_a_broadcast_operand_reads_padding_as_zero():
    # The gather behind A * d reads size-1 dimensions of d at index 0 (no broadcast); padding
    # entries (an index equal to the dimension) still read 0, also along dimensions of size 1.
    from bcoo_array._kernels.fromdense import gather

    idx = np.array([[0, 0], [0, 2], [1, 0], [0, 3]], np.int32)  # the last two are padding of a (1, 3) array
    for d, want in (([[1.0, 2.0, 3.0]], [1.0, 3.0, 0.0, 0.0]), ([5.0], [5.0, 5.0, 0.0, 0.0]),
                    ([[7.0]], [7.0, 7.0, 0.0, 0.0])):
        np.testing.assert_array_equal(np.asarray(gather(jnp.asarray(d, jnp.float32), idx, (1, 3), 0, 0)), want)
        np.testing.assert_array_equal(np.asarray(jax.jit(gather, static_argnums=(2, 3, 4))(
            jnp.asarray(d, jnp.float32), jnp.asarray(idx), (1, 3), 0, 0)), want)
