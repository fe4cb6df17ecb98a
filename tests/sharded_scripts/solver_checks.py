"""Solvers and the scipy surface of ShardedBCOOArray on 8 simulated CPU devices (run by tests/test_sharded.py).

Usage: solver_checks.py OUT.json [MATRIX_DIR]

Must start in a fresh process (the device count is fixed when JAX starts).
Each check compares the sharded result with scipy's on the CSR copy (or
the single-device BCOOArray's); the outcome of each check ("ok", "skipped:
...", or the traceback) is written to OUT.json.

* ``scipy_solvers_on_sharded``: ``scipy.sparse.linalg.cg`` / ``eigsh`` /
  ``lsqr`` take a ShardedBCOOArray (the LinearOperator surface), and equal
  the same calls on the CSR; ``matvec`` / ``rmatvec`` / ``matmat`` /
  ``rmatmat`` / ``dot`` return fresh NumPy arrays;
* ``gather_first_errors``: scipy.sparse's other methods, properties and
  indexing raise a TypeError naming ``unshard()``;
* ``linalg_solvers_on_sharded``: ``bcoo_array.linalg.cg`` (and ``bicgstab``,
  ``gmres``, ``eigsh``) run on the sharded array, eagerly and under jit;
* ``real_matrix_494_bus``: the same on 494_bus (when the matrices are there).
"""

import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

import bcoo_array as xp  # noqa: E402
from _harness import check, run_checks  # noqa: E402
from bcoo_array.sharded import ShardedBCOOArray, shard, unshard  # noqa: E402
from bcoo_array.sharded._array import GatherFirst  # noqa: E402

OUT = sys.argv[1]
MATRICES = sys.argv[2] if len(sys.argv) > 2 else None


def close(got, want, rtol, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(np.abs(want).max(initial=0.0), 1e-300)
    err = np.abs(got - want).max(initial=0.0)
    assert err <= rtol * scale, (what, err, scale)


def same_eigenpairs(got, want, rtol=1e-10, what=""):
    (w, V), (w0, V0) = got, want
    close(w, w0, rtol, what)
    sign = np.sign(np.sum(np.conj(V0) * V, axis=0).real)
    close(V * sign, V0, 1e-7, what)


def fresh_numpy(y, what):
    assert type(y) is np.ndarray and y.flags.writeable and y.flags.owndata, (what, type(y))
    return y


def meshes():
    yield jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    yield jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))


def spd(n=40, seed=0):
    """SPD and well conditioned: R R^T + n I."""
    R = sp.random_array((n, n), density=0.1, rng=np.random.default_rng(seed), format="csr")
    return (R @ R.T + n * sp.eye_array(n)).tocsr()


@check
def scipy_solvers_on_sharded():
    S = spd()
    n = S.shape[0]
    rng = np.random.default_rng(1)
    b = rng.standard_normal(n)
    v0 = np.linspace(1.0, 2.0, n)
    R = sp.random_array((n, 13), density=0.3, rng=rng, format="csr")  # rectangular, for rmatvec / lsqr
    Z = (S + 1j * (sp.triu(S, 1) - sp.tril(S, -1))).tocsr()  # complex Hermitian
    for mesh in meshes():
        A = shard(xp.asarray(S), mesh, P("x", None))
        op = sla.aslinearoperator(A)  # scipy raised "type not understood"
        assert op.shape == (n, n) and op.dtype == np.float64
        x, info = sla.cg(A, b, rtol=1e-12, atol=0.0)
        x0, info0 = sla.cg(S, b, rtol=1e-12, atol=0.0)
        assert info == info0 == 0
        close(x, x0, 1e-10, "scipy cg")
        same_eigenpairs(sla.eigsh(A, k=3, v0=v0, tol=1e-12), sla.eigsh(S, k=3, v0=v0, tol=1e-12), what="eigsh")
        if mesh.axis_types[0] == AxisType.Auto:
            continue  # the rest once, on the Explicit mesh
        x, info = sla.gmres(A, b, rtol=1e-12, atol=0.0)
        close(x, np.linalg.solve(S.toarray(), b), 1e-9, "scipy gmres")
        # the LinearOperator methods: NumPy in, fresh NumPy out
        B = rng.standard_normal((n, 3))
        close(fresh_numpy(A.matvec(b), "matvec"), S @ b, 1e-12)
        close(fresh_numpy(A.matvec(b[:, None]), "matvec (n, 1)"), (S @ b)[:, None], 1e-12)
        close(fresh_numpy(A.matmat(B), "matmat"), S @ B, 1e-12)
        close(fresh_numpy(A.dot(b), "dot"), S @ b, 1e-12)
        close(fresh_numpy(A.dot(jnp.asarray(B)), "dot jax"), S @ B, 1e-12)
        close(fresh_numpy(A @ b, "@"), S @ b, 1e-12)
        assert isinstance(A.dot(xp.asarray(S)), ShardedBCOOArray)
        close(A.dot(2.0).todense(), 2 * S.toarray(), 1e-12)
        Ar = shard(xp.asarray(R), mesh, P("x", None))
        y = rng.standard_normal(n)
        close(fresh_numpy(Ar.rmatvec(y), "rmatvec"), R.T @ y, 1e-12)
        close(fresh_numpy(Ar.rmatmat(B), "rmatmat"), R.T @ B, 1e-12)
        close(sla.lsqr(Ar, y, atol=1e-14, btol=1e-14)[0], sla.lsqr(R, y, atol=1e-14, btol=1e-14)[0], 1e-9, "lsqr")
        Az = shard(xp.asarray(Z), mesh, P("x", None))
        yz = y + 1j * b
        close(Az.rmatvec(yz), Z.conj().T @ yz, 1e-12, "complex rmatvec")
        close(Az.matvec(yz), Z @ yz, 1e-12, "complex matvec")
        for bad, fn in ((np.ones(n + 1), A.matvec), (np.ones(13), Ar.rmatvec), (np.ones(n), A.matmat),
                        (np.ones((n + 1, 2)), A.dot)):
            try:
                fn(bad)
            except ValueError:
                pass
            else:
                raise AssertionError(f"{fn.__name__} accepted shape {bad.shape}")


@check
def gather_first_errors():
    S = spd(16)
    mesh = jax.make_mesh((8,), ("x",))
    A = shard(xp.asarray(S), mesh, P("x", None))
    names = [n for n, v in vars(ShardedBCOOArray).items() if isinstance(v, GatherFirst)]
    assert len(names) > 50 and "tocsr" in names and "nnz" in names
    for name in names:
        try:
            attr = getattr(A, name)
            attr() if callable(attr) else attr
        except TypeError as e:
            msg = str(e)
            assert "unshard()" in msg and f"A.unshard().{name}" in msg, (name, msg)
        else:
            raise AssertionError(f"A.{name} did not raise")
    try:
        A.sqrt()
    except TypeError as e:
        assert "bcoo_array.sqrt(A)" in str(e), e
    for what, fn in (("indexing", lambda: A[0]), ("indexing", lambda: A[:, 1:3]),
                     ("assigning", lambda: A.__setitem__(0, 1.0)), ("iterating", lambda: list(A))):
        try:
            fn()
        except TypeError as e:
            assert what in str(e) and "unshard()" in str(e), e
        else:
            raise AssertionError(f"{what} a sharded array did not raise")
    # what the messages name works
    close(A.unshard().tocsr().toarray(), S.toarray(), 0.0)
    close(A.to_scipy("csr").toarray(), S.toarray(), 0.0)
    close(xp.sqrt(A).todense(), np.sqrt(S.toarray()), 1e-15)
    # attributes scipy probes for with hasattr stay absent (AttributeError), not errors
    assert not hasattr(A, "psolve") and not hasattr(A, "rpsolve")
    assert A.block_until_ready() is A


@check
def linalg_solvers_on_sharded():
    S = spd(40, seed=2)
    n = S.shape[0]
    b = np.sin(np.arange(n) + 1.0)
    want = np.linalg.solve(S.toarray(), b)
    single = xp.asarray(S)
    v0 = np.linspace(1.0, 2.0, n)
    for mesh in meshes():
        A = shard(single, mesh, P("x", None))
        x, info = xp.linalg.cg(A, b, tol=1e-13)
        assert isinstance(x, jax.Array) and x.shape == (n,)
        close(x, want, 1e-10, "linalg.cg")
        # scipy's info (issue 29): 0 when converged, else the iterations run; mixed precision names the fix
        assert int(info) == 0, info
        assert int(xp.linalg.cg(A, b, maxiter=2)[1]) == int(sla.cg(S, b, maxiter=2)[1]) == 2
        try:
            xp.linalg.cg(A, b.astype(np.float32))
            raise AssertionError("cg(float64 A, float32 b) did not raise")
        except TypeError as err:
            assert "b.astype(float64)" in str(err), err
        x1, _ = xp.linalg.cg(single, b, tol=1e-13)
        close(x, x1, 1e-10, "linalg.cg vs single device")
        # the same as jax.scipy.sparse.linalg.cg with the sharded array as the operator
        x2, _ = jax.scipy.sparse.linalg.cg(A, jnp.asarray(b), tol=1e-13)
        close(x, x2, 1e-12, "linalg.cg vs jax cg")
        # under jit, with the matrix's sharding
        rep = NamedSharding(mesh, P())
        f = jax.jit(lambda A, b: xp.linalg.cg(A, b, tol=1e-13)[0], in_shardings=(A.sharding, rep),
                    out_shardings=rep)
        close(f(A, jax.device_put(b, rep)), want, 1e-10, "jit linalg.cg")
        if mesh.axis_types[0] == AxisType.Auto:
            continue  # the rest once, on the Explicit mesh
        # preconditioners: a BCOOArray, a sharded array, a callable
        D = xp.diags_array(1.0 / S.diagonal())
        for M in (D, shard(D, mesh, P("x", None)), lambda v: v / jnp.asarray(S.diagonal())):
            close(xp.linalg.cg(A, b, tol=1e-13, M=M)[0], want, 1e-10, "linalg.cg with M")
        close(xp.linalg.bicgstab(A, b, tol=1e-13)[0], want, 1e-10, "linalg.bicgstab")
        close(xp.linalg.gmres(A, b, tol=1e-13, restart=40)[0], want, 1e-10, "linalg.gmres")
        # eigsh without a shift: the products on the mesh
        same_eigenpairs(xp.linalg.eigsh(A, k=3, v0=v0, tol=1e-12), sla.eigsh(S, k=3, v0=v0, tol=1e-12),
                        what="linalg.eigsh")
        # shift-invert needs the whole matrix: the error names the gather, which then works
        try:
            xp.linalg.eigsh(A, k=3, sigma=0)
        except TypeError as e:
            assert "unshard(A)" in str(e), e
        else:
            raise AssertionError("eigsh(sigma=0) of a sharded array did not ask to gather")
        same_eigenpairs(xp.linalg.eigsh(unshard(A), k=3, sigma=0, v0=v0), sla.eigsh(S, k=3, sigma=0, v0=v0),
                        what="eigsh of the gathered array")
        for bad, exc in (((shard(xp.asarray(np.ones((16, 8))), mesh, P("x", None)), np.ones(16)), ValueError),
                         ((A, np.ones(n + 1)), ValueError),
                         ((A, b, None, {"M": "diag"}), TypeError)):
            args, kw = (bad[:-1], bad[-1]) if isinstance(bad[-1], dict) else (bad, {})
            try:
                xp.linalg.cg(*args, **kw)
            except exc:
                pass
            else:
                raise AssertionError(f"linalg.cg accepted {bad}")


@check
def real_matrix_494_bus():
    if MATRICES is None or not os.path.exists(os.path.join(MATRICES, "494_bus.mtx")):
        return "skipped: 494_bus.mtx not available"
    S = sp.csr_array(scipy.io.mmread(os.path.join(MATRICES, "494_bus.mtx")))
    n = S.shape[0]
    mesh = jax.make_mesh((8,), ("x",))
    A = shard(xp.asarray(S), mesh, P("x", None))
    v0 = np.ones(n)
    same_eigenpairs(sla.eigsh(A, k=3, v0=v0), sla.eigsh(S, k=3, v0=v0), what="494_bus eigsh")
    b = np.cos(np.arange(n))
    x, _ = xp.linalg.cg(A, b, tol=1e-10, maxiter=5 * n)
    x0, info = sla.cg(S, b, rtol=1e-10, atol=0.0, maxiter=5 * n)
    assert info == 0
    assert np.linalg.norm(S @ np.asarray(x) - b) <= 1e-9 * np.linalg.norm(b)
    close(x, x0, 1e-6, "494_bus linalg.cg")


run_checks(OUT)
