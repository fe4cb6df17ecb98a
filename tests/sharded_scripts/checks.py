"""Checks of bcoo_array.sharded on 8 simulated CPU devices (run by tests/test_sharded.py).

Usage: checks.py OUT.json [MATRIX_DIR]

Must start in a fresh process (the device count is fixed when JAX starts).
Every check compares the sharded result with the single-device BCOOArray or
NumPy result on the same values; the outcome of each check ("ok" or the
traceback) is written to OUT.json.
"""

import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import array_api_compat  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from jax.scipy.sparse.linalg import cg  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

import bcoo_array as xp  # noqa: E402
from _harness import check, run_checks  # noqa: E402
from bcoo_array.sharded import ShardedBCOOArray, shard, unshard  # noqa: E402
import bcoo_array.sharded as xs  # noqa: E402

OUT = sys.argv[1]
MATRICES = sys.argv[2] if len(sys.argv) > 2 else None
RTOL = 1e-12


def dense(r):
    """NumPy value of a BCOOArray, ShardedBCOOArray or jax array."""
    if isinstance(r, (xp.BCOOArray, ShardedBCOOArray)):
        return np.asarray(r.todense())
    return np.asarray(r)


def close(got, want, exact=False, what=""):
    got = dense(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if exact:
        assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
        assert np.array_equal(got, want), (what, got, want)
    else:
        scale = max(np.abs(want).max(initial=0.0), 1e-300)
        err = np.abs(got - want).max(initial=0.0)
        assert err <= RTOL * scale, (what, err, scale)


def meshes():
    yield jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    yield jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))


def rand_matrix(m, n, density, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    M = sp.random_array((m, n), density=density, rng=rng, format="csr")
    if np.dtype(dtype).kind in "iu":
        M.data = rng.integers(-9, 10, M.nnz).astype(dtype)
    return M.astype(dtype)


@check
def row_partition_layout_and_roundtrip():
    M = rand_matrix(21, 13, 0.3, 0)
    for mesh in meshes():
        A = shard(xp.from_scipy(M), mesh, P("x", None))
        assert A.axis == 0 and A.n_blocks == 8 and A.block == 3 and A.block_shape == (3, 13)
        assert A.data.shape[0] == 8 and A.data.sharding.spec == P("x")
        shard_rows = [sh.data.shape[0] for sh in A.data.addressable_shards]
        assert shard_rows == [1] * 8, shard_rows
        close(unshard(A), M.toarray(), exact=True)
        close(A, M.toarray(), exact=True)
        assert (A.to_scipy("csr") != M).nnz == 0
        assert array_api_compat.array_namespace(A) is xp
        B = xs.from_scipy(M, mesh, P("x"))
        close(B, M.toarray(), exact=True)
        # a repeated eager operation reuses its compiled program (and gives the same result)
        from bcoo_array.sharded import _ops

        C1 = A + B
        n = len(_ops._CACHE)
        C2 = A + B
        assert len(_ops._CACHE) == n
        close(C2, dense(C1), exact=True)


@check
def elementwise_and_astype():
    M = rand_matrix(21, 13, 0.3, 1)
    N = rand_matrix(21, 13, 0.3, 2)
    D, E = M.toarray(), N.toarray()
    rng = np.random.default_rng(3)
    full = rng.standard_normal((21, 13))
    row = rng.standard_normal(13)
    for mesh in meshes():
        A = shard(xp.from_scipy(M), mesh, P("x", None))
        B = shard(xp.from_scipy(N), mesh, P("x", None))
        close(A + B, D + E)
        close(A * 2.5 - B, D * 2.5 - E)
        close(xp.multiply(A, B), D * E)
        close(xp.exp(A), np.exp(D))
        close(xp.add(A, jnp.asarray(full)), D + full)
        if mesh.axis_types[0] == AxisType.Auto:
            continue
        close(A * jnp.asarray(row), D * row)
        close(A + row, D + row)
        close(xp.where(A > 0, A, -1.0), np.where(D > 0, D, -1.0))
        C = A.astype(xp.float32)
        assert isinstance(C, ShardedBCOOArray) and C.dtype == np.float32
        close(C, D.astype(np.float32), exact=True)
        assert (A > 0).dtype == np.bool_
        close(-A, -D, exact=True)
        close(abs(A - 1.0), np.abs(D - 1.0))


@check
def fill_value_nonzero():
    M = rand_matrix(19, 7, 0.4, 4)
    D = M.toarray()
    base = xp.from_scipy(M) + 1.5  # fill value 1.5
    assert float(base.fill_value) == 1.5
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    A = shard(base, mesh, P("x", None))
    assert float(A.fill_value) == 1.5
    close(A, D + 1.5)
    for op, ax in (("sum", None), ("sum", 0), ("prod", 0), ("max", 0), ("min", None), ("min", 1), ("mean", 0)):
        close(getattr(xp, op)(A, axis=ax), getattr(np, op)(D + 1.5, axis=ax), what=(op, ax))
    close(xp.sum(A, axis=0, keepdims=True), np.sum(D + 1.5, axis=0, keepdims=True))
    x = np.linspace(-1, 1, 7)
    close(A @ jnp.asarray(x), (D + 1.5) @ x)


@check
def reductions_float_and_int():
    cases = ((np.float64, AxisType.Auto, (("sum", None), ("sum", 1), ("prod", 0), ("max", 0), ("min", None))),
             (np.int64, AxisType.Explicit, (("sum", 0), ("prod", None), ("max", None), ("min", 0))),
             (np.int32, AxisType.Auto, (("sum", 0),)))
    for dtype, at, cases_op in cases:
        M = rand_matrix(21, 13, 0.3, 5, dtype)
        D = M.toarray()
        single = xp.from_scipy(M)
        mesh = jax.make_mesh((8,), ("x",), axis_types=(at,))
        A = shard(single, mesh, P("x", None))
        for op, ax in cases_op:
            got = getattr(xp, op)(A, axis=ax)
            want = getattr(xp, op)(single, axis=ax)
            close(got, dense(want), exact=np.dtype(dtype).kind in "iu", what=(dtype, op, ax))
        if np.dtype(dtype).kind == "f":
            close(xp.mean(A), np.mean(D))
            close(xp.std(A, axis=0), np.std(D, axis=0))
            close(xp.var(A, axis=0, correction=1), np.var(D, axis=0, ddof=1))


@check
def matmul_row_and_column_partitions():
    M = rand_matrix(21, 13, 0.3, 7)
    D = M.toarray()
    rng = np.random.default_rng(8)
    v = rng.standard_normal(13)
    V = rng.standard_normal((13, 4))
    w = rng.standard_normal(21)
    for mesh in meshes():
        A = shard(xp.from_scipy(M), mesh, P("x", None))
        y = A @ jnp.asarray(v)
        # the mixed-type rule, as for a BCOOArray: a dense JAX operand gives a jax.Array,
        # a NumPy operand a NumPy array, and A(x) follows x's type
        assert isinstance(y, jax.Array) and y.shape == (21,), type(y)
        close(y, D @ v)
        assert isinstance(A @ v, np.ndarray) and isinstance(A(v), np.ndarray) and isinstance(v @ A.T, np.ndarray)
        close(A @ v, D @ v)
        close(A(list(v)), D @ v)
        close(v @ A.T, D @ v)
        assert isinstance(A(jnp.asarray(v)), jax.Array)
        close(A @ jnp.asarray(V), D @ V)
        close(xp.matmul(A, V), D @ V)
        close(A(jnp.asarray(v)), D @ v)
        # right-hand side already split over the mesh (16 rows: divisible by 8)
        M16 = rand_matrix(21, 16, 0.3, 9)
        A16 = shard(xp.from_scipy(M16), mesh, P("x", None))
        v16 = jax.device_put(rng.standard_normal(16), NamedSharding(mesh, P("x")))
        close(A16 @ v16, M16.toarray() @ np.asarray(v16))
        # transpose: column partition, contraction over the partitioned dimension (psum)
        At = A.T
        assert isinstance(At, ShardedBCOOArray) and At.axis == 1
        close(At, D.T, exact=True)
        close(At @ jnp.asarray(w), D.T @ w)
        close(jnp.asarray(w) @ A, w @ D)
        close(jnp.asarray(V.T) @ At, V.T @ D.T)
        close(xp.matrix_transpose(A), D.T, exact=True)
    Mi = rand_matrix(21, 13, 0.3, 10, np.int64)
    vi = np.arange(13, dtype=np.int64) - 6
    for mesh in meshes():
        A = shard(xp.from_scipy(Mi), mesh, P("x", None))
        close(A @ jnp.asarray(vi), Mi.toarray() @ vi, exact=True)
        close(A.T @ jnp.asarray(np.arange(21, dtype=np.int64)), Mi.toarray().T @ np.arange(21), exact=True)


@check
def batch_partition_and_two_axis_mesh():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((5, 4, 6)) * (rng.random((5, 4, 6)) < 0.3)
    single = xp.BCOOArray.fromdense(X, n_batch=1)
    for axis_types in ((AxisType.Auto,) * 2, (AxisType.Explicit,) * 2):
        mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=axis_types)
        A = shard(single, mesh, P(("x", "y")))
        assert A.axis == 0 and A.n_batch == 1 and A.n_blocks == 8 and A.block == 1
        close(A, X, exact=True)
        back = unshard(A)
        assert back.n_batch == 1
        close(back, X, exact=True)
        for op, ax in (("sum", None), ("sum", (1, 2)), ("max", 0), ("min", (0, 2)), ("prod", 1)):
            close(getattr(xp, op)(A, axis=ax), getattr(np, op)(X, axis=ax), what=(op, ax))
        close(A * 3.0 + A, X * 4.0)
        v = rng.standard_normal(6)
        close(A @ jnp.asarray(v), X @ v)
        Vb = rng.standard_normal((5, 6, 3))
        close(A @ jnp.asarray(Vb), X @ Vb)
        close(xp.permute_dims(A, (1, 0, 2)), np.transpose(X, (1, 0, 2)), exact=True)
        # a row partition over only one of the two mesh axes (replicated over the other)
        M = rand_matrix(10, 6, 0.4, 12)
        R = shard(xp.from_scipy(M), mesh, P("y", None))
        assert R.n_blocks == 2
        close(R @ jnp.asarray(v), M.toarray() @ v)
        close(xp.sum(R, axis=0), M.toarray().sum(axis=0))


@check
def errors():
    M = rand_matrix(16, 8, 0.3, 13)
    mesh_a = jax.make_mesh((8,), ("x",))
    mesh_b = jax.make_mesh((4, 2), ("x", "y"))
    A = shard(xp.from_scipy(M), mesh_a, P("x", None))
    B = shard(xp.from_scipy(M), mesh_b, P("x", None))
    C = shard(xp.from_scipy(M), mesh_a, P(None, "x"))
    for fn in (lambda: A + B, lambda: xp.multiply(A, B), lambda: A + C):
        try:
            fn()
        except ValueError as e:
            assert "mesh" in str(e) or "dimension" in str(e), e
        else:
            raise AssertionError("combining differently sharded arrays did not raise")
    for bad in (P(), P("x", "x"), P("z", None), P("x", None, None)):
        try:
            shard(xp.from_scipy(M), mesh_a, bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"spec {bad} accepted")
    for name, fn in (("bcoo_array.argsort", lambda: xp.argsort(A)),
                     ("bcoo_array.linalg.vector_norm", lambda: xp.linalg.vector_norm(A)),
                     ("bcoo_array.fft.fft", lambda: xp.fft.fft(xp.astype(A, xp.complex64))),
                     ("bcoo_array.fft.fft", lambda: xp.fft.fft(A))):
        try:
            fn()
        except TypeError as e:
            assert "unshard" in str(e) and name in str(e), e
        else:
            raise AssertionError(f"{name} accepted a sharded array")
    x = np.arange(8, dtype=np.float64)
    got = xp.linalg.matmul(A, x)
    assert isinstance(got, np.ndarray), type(got)  # the mixed-type rule
    close(got, M @ x, what="linalg.matmul of a sharded array")
    try:
        A @ A
    except TypeError:
        pass
    else:
        raise AssertionError("sharded @ sharded did not raise")


@check
def jit_with_shardings_and_cg():
    rng = np.random.default_rng(14)
    n = 30
    R = rand_matrix(n, n, 0.1, 15)
    S = (R @ R.T + sp.eye_array(n) * n).tocsr()  # SPD, well conditioned
    b = rng.standard_normal(n)
    want = np.linalg.solve(S.toarray(), b)
    for mesh in meshes():
        A = shard(xp.from_scipy(S), mesh, P("x", None))
        rep = NamedSharding(mesh, P())
        spmv = jax.jit(lambda A, v: A(v), in_shardings=(A.sharding, rep), out_shardings=rep)
        y = spmv(A, jax.device_put(b, rep))
        close(y, S @ b)
        assert y.sharding.is_fully_replicated
        f = jax.jit(lambda A, v: cg(A, v, tol=1e-12)[0], in_shardings=(A.sharding, rep), out_shardings=rep)
        sol = f(A, jax.device_put(b, rep))
        assert np.abs(np.asarray(sol) - want).max() <= 1e-9 * np.abs(want).max()
        dense_op = jnp.asarray(S.toarray())
        sol1 = cg(lambda v: dense_op @ v, jnp.asarray(b), tol=1e-12)[0]
        assert np.abs(np.asarray(sol) - np.asarray(sol1)).max() <= 1e-10 * np.abs(want).max()
        # a sharded array returned from jit keeps its sharding
        g = jax.jit(lambda A: A * 2.0, in_shardings=(A.sharding,), out_shardings=A.sharding)
        A2 = g(A)
        assert isinstance(A2, ShardedBCOOArray) and A2.data.sharding.spec == P("x")
        close(A2, 2 * S.toarray())
        # reductions and todense inside jit
        h = jax.jit(lambda A: (xp.sum(A, axis=0).todense(), A.todense()))
        s0, d0 = h(A)
        close(s0, S.toarray().sum(axis=0))
        close(d0, S.toarray(), exact=True)


def _same_conversion(got, want, what):
    """got and want (BCOOArrays) hold the same buffers, metadata and values."""
    assert isinstance(got, xp.BCOOArray), (what, type(got))
    assert (got.shape, got.n_batch, got.n_dense, got.dtype) == (want.shape, want.n_batch, want.n_dense, want.dtype), what
    assert np.array_equal(np.asarray(got.fill_value), np.asarray(want.fill_value), equal_nan=True), what
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices)), what
    assert np.array_equal(np.asarray(got.data), np.asarray(want.data), equal_nan=True), what


def _conversion_meshes():
    """(mesh, spec of a (16, 8) array, whether to run every variant): Explicit (default), Auto, mixed; 1-D, 2-D."""
    yield jax.make_mesh((2, 4), ("x", "y")), P("x", "y"), True
    yield jax.make_mesh((2, 4), ("x", "y")), P(("x", "y"), None), False
    yield jax.make_mesh((8,), ("x",)), P(None, "x"), False
    yield jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2), P("x", "y"), True
    yield jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto)), P("y", "x"), False


@check
def explicit_mesh_conversions():
    # jax.make_mesh gives Explicit axes by default; converting an array split over them used to
    # raise ShardingTypeError in the gather of the stored values.
    assert jax.make_mesh((8,), ("x",)).axis_types == (AxisType.Explicit,)
    rng = np.random.default_rng(16)
    X = rng.standard_normal((16, 8)) * (rng.random((16, 8)) < 0.3)
    X[3] = 0.0  # an empty row
    Xi = (rng.integers(-3, 4, (16, 8)) * (rng.random((16, 8)) < 0.4)).astype(np.int64)
    X3 = rng.standard_normal((8, 8, 8)) * (rng.random((8, 8, 8)) < 0.3)
    want = xp.asarray(X)
    for mesh, spec, every in _conversion_meshes():
        what = (mesh.axis_types, spec)
        s = NamedSharding(mesh, spec)
        a = jax.device_put(X, s)
        assert a.sharding.spec == spec
        got = xp.asarray(a)
        _same_conversion(got, want, what)
        assert got.data.sharding.is_fully_replicated, what
        _same_conversion(xp.BCOOArray.fromdense(a), want, what)
        # round trips: todense, and shard / unshard (row partition)
        close(got.todense(), X, exact=True, what=what)
        row = P(spec[0] if spec[0] is not None else spec[1], None)
        sh = shard(a, mesh, row)
        assert isinstance(sh, ShardedBCOOArray) and sh.axis == 0, what
        close(sh, X, exact=True, what=what)
        _same_conversion(unshard(sh), want, what)
        # under jit, with the split input as an argument (nse= bounds the count)
        g = jax.jit(lambda v: xp.BCOOArray.fromdense(v, nse=X.size).todense())
        close(g(a), X, exact=True, what=what)
        if not every:
            continue
        _same_conversion(xp.asarray(jax.device_put(Xi, s)), xp.asarray(Xi), what)
        _same_conversion(xp.BCOOArray.fromdense(jax.device_put(X + 2.0, s), fill_value=2.0),
                         xp.BCOOArray.fromdense(X + 2.0, fill_value=2.0), what)
        a3 = jax.device_put(X3, NamedSharding(mesh, P(*spec, None)))
        _same_conversion(xp.BCOOArray.fromdense(a3, n_batch=1), xp.BCOOArray.fromdense(X3, n_batch=1), what)
        _same_conversion(xp.BCOOArray.fromdense(a3, n_dense=1), xp.BCOOArray.fromdense(X3, n_dense=1), what)
        # element-wise with the split array as the dense operand (reads it at the stored indices)
        close(want * a, X * X, exact=True, what=what)
        # a dense result holding the split operand (one stored block, no sparse dimension): its todense
        # scattered that block and raised ShardingTypeError on Explicit axes (a review)
        close((want + a).todense(), X + X, exact=True, what=what)
        close(xp.where(a > 0, want, 1.0).todense(), np.where(X > 0, X, 1.0), exact=True, what=what)
        close(jax.jit(lambda u, v: (u + v).todense())(want, a), X + X, exact=True, what=what)

def _matrix(name):
    M = scipy.io.mmread(os.path.join(MATRICES, name))
    M = sp.csr_array(M)
    if M.dtype.kind not in "fiu":
        M = M.real if M.dtype.kind == "c" else M.astype(np.float64)
    return M


@check
def real_matrices():
    if MATRICES is None:
        return "skipped: no matrix folder"
    names = [f for f in ("494_bus.mtx", "lp_afiro.mtx", "bcsstk13.mtx.gz", "cage11.mtx.gz") if os.path.exists(os.path.join(MATRICES, f))]
    assert names, "no matrices found"
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    for name in names:
        M = _matrix(name).astype(np.float64)
        m, n = M.shape
        single = xp.from_scipy(M)
        A = shard(single, mesh, P("x", None))
        x = np.cos(np.arange(n))
        f = jax.jit(lambda A, v: A(v))
        y = f(A, jnp.asarray(x))
        y1 = single @ jnp.asarray(x)  # a jax.Array (the mixed-type rule)
        close(y, np.asarray(y1), what=name)
        close(xp.sum(A, axis=0), dense(xp.sum(single, axis=0)), what=name)
        close(xp.max(A, axis=1), dense(xp.max(single, axis=1)), what=name)
        # integer data: exact
        Mi = M.copy()
        Mi.data = (np.arange(Mi.nnz) % 7 - 3).astype(np.int64)
        si = xp.from_scipy(Mi)
        Ai = shard(si, mesh, P("x", None))
        xi = (np.arange(n) % 5 - 2).astype(np.int64)
        close(Ai @ jnp.asarray(xi), dense(si @ jnp.asarray(xi)), exact=True, what=name)
        close(Ai.T @ jnp.asarray(np.ones(m, np.int64)), dense(xp.sum(si, axis=0)), exact=True, what=name)
        if M.nnz < 10000:
            continue
        # memory: each device holds about 1/8 of the entries
        per_dev = A.stored_bytes_per_device()
        assert len(per_dev) == 8
        whole = single.data.nbytes + single.indices.nbytes
        assert max(per_dev.values()) <= 1.3 * whole / 8 + 64, (name, per_dev, whole)
        assert sum(per_dev.values()) >= whole


@check
def zero_d_results_keep_their_device():
    """A 0-d result (a full reduction) stays on its buffers' device through todense(), with several devices."""
    dev = jax.devices()[3]
    x = jax.device_put(xp.asarray(np.eye(4, dtype=np.float32)), dev)
    v = xp.sum(x).todense()
    assert v.devices() == {dev}, v.devices()
    assert float(v) == 4.0


@check
def placed_results_keep_their_device():
    """``*_like`` results and the eager sparse @ sparse product (host SpGEMM buffers) land on the operands'
    device, not the default one, and operands on two devices are refused as JAX refuses them (a review)."""
    d3, d5 = jax.devices()[3], jax.devices()[5]
    D = np.array([[1.0, 0, 2], [0, 3, 0], [4, 0, 0]], np.float32)
    A = xp.asarray(D).to_device(d3)
    for r in (xp.zeros_like(A), xp.ones_like(A), xp.full_like(A, 2.0), xp.empty_like(A), A @ A.T, A @ A):
        assert r.device == d3 and r.data.devices() == r.indices.devices() == {d3}, r
    close(A @ A.T, D @ D.T, exact=True)
    assert xp.zeros_like(A, device=jax.devices()[0]).device == jax.devices()[0]
    B = xp.asarray(np.eye(3, dtype=np.float32)).to_device(d5)
    try:
        A @ B
    except ValueError as e:
        assert "different devices" in str(e), e
    else:
        raise AssertionError("A @ B on two devices: no error")


@check
def namespace_results_follow_their_operands():
    """Every namespace result, ``A[key]`` and in-place update of an array on a non-default device stays there,
    data and indices, where kernels built them from NumPy or constants on the default device (unique_*,
    nonzero, sorts, reductions, element-wise, transposes, setdiag); an explicit ``device=`` wins; under jit
    nothing is moved (the seventeenth session's audit: 43 of 60 calls had a buffer on cpu:0)."""
    d3, d0 = jax.devices()[3], jax.devices()[0]
    S = rand_matrix(6, 5, 0.5, 23)
    D = S.toarray()
    A = xp.asarray(S).to_device(d3)
    v = xp.asarray(np.array([3.0, 0, 1, 0, 2])).to_device(d3)
    idx = xp.asarray(np.array([2, 0, 1])).to_device(d3)

    def on_d3(r, what):
        if isinstance(r, (tuple, list)):
            for e in r:
                on_d3(e, what)
            return
        buffers = (r.data, r.indices) if isinstance(r, xp.BCOOArray) else (r,)
        for b in buffers:
            assert b.devices() == {d3}, (what, b.devices())

    calls = {
        "unique_all": lambda: xp.unique_all(v), "unique_values": lambda: xp.unique_values(v),
        "nonzero": lambda: xp.nonzero(A), "unstack": lambda: xp.unstack(A), "meshgrid": lambda: xp.meshgrid(v, v),
        "trace": lambda: xp.linalg.trace(A[:5, :5]), "take": lambda: xp.take(A, idx, axis=0), "A[idx]": lambda: A[idx],
        "A[1:4, ::2]": lambda: A[1:4, ::2], "argsort": lambda: xp.argsort(A, axis=1), "sum": lambda: xp.sum(A, axis=0),
        "max": lambda: xp.max(A, axis=1), "A + v": lambda: A + v, "A.T": lambda: A.T,
        "reshape": lambda: xp.reshape(A, (30,)), "cumulative_sum": lambda: xp.cumulative_sum(A, axis=1),
        "A @ v": lambda: A @ v, "where": lambda: xp.where(A > 0, A, 1.0),
    }
    for what, f in calls.items():
        on_d3(f(), what)
    close(xp.linalg.trace(A[:5, :5]), np.trace(D[:5, :5]))
    B = A.copy()
    B[0, 1] = 7.0
    B += 1.0
    B.setdiag(2.0)
    on_d3(B, "in place")
    want = D.copy()
    want[0, 1] = 7.0
    want += 1.0
    np.fill_diagonal(want, 2.0)
    close(B, want)
    assert xp.asarray(A, device=d0).data.devices() == {d0}  # (an explicit device= wins)
    assert xp.zeros_like(A, device=d0).device == d0
    w = np.array([3.0, 0, 1, 0, 2])
    close(jax.jit(lambda M, x: xp.sum(M * x, axis=0))(A, v), (D * w).sum(0))
    # a placed array captured by a traced function: its results are traced, nothing to place (a review found
    # these raising ConcretizationTypeError)
    close(jax.jit(lambda x: xp.sum(A * x, axis=0).todense())(jnp.asarray(w)), (D * w).sum(0))
    close(jax.jit(lambda x: (A[np.array([0, 2])] * x).todense())(jnp.asarray(w)), D[[0, 2]] * w)
    jax.eval_shape(lambda x: (A.T * x[:, None]).todense(), jnp.asarray(w))
    # under jax.default_device, an array committed to the first device keeps its results there
    A0 = xp.asarray(S).to_device(d0)
    with jax.default_device(jax.devices()[5]):
        r = xp.sum(A0, axis=0)
        assert r.data.devices() == r.indices.devices() == {d0}, r.data.devices()
    C = A.copy()  # (new values and coordinates go where the array's buffers are)
    C.data = np.arange(C.data.shape[0], dtype=C.dtype)
    C.indices = np.asarray(C.indices)
    on_d3(C, "setters")


@check
def eager_grad_through_a_sharded_product():
    """jax.grad, eager and under jit, of a loss through A @ x on the default (Explicit) mesh (issue 29, item 9)."""
    S = rand_matrix(64, 64, 0.1, 21)
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    x_np = np.linspace(-1.0, 1.0, 64)
    want = 2 * S.T @ (S @ x_np)
    with jax.set_mesh(mesh):
        A = shard(xp.from_scipy(S), mesh, P("x", None))
        loss = lambda v: jnp.sum((A @ v) ** 2)  # noqa: E731
        for x in (jnp.asarray(x_np), jax.device_put(x_np, NamedSharding(mesh, P("x")))):
            close(jax.grad(loss)(x), want)
            close(jax.jit(jax.grad(loss))(x), want)


run_checks(OUT)
