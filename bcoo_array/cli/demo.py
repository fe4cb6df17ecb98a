"""The main job: a short real workload on one matrix, side by side with scipy.sparse.

For a Matrix Market file (or the embedded default, the 2-D Poisson matrix
on a 64 x 64 grid: the 5-point finite-difference Laplacian, SPD) the demo
converts the matrix to a BCOOArray and runs SpMV, SpMM with 16 columns, row
and column sums and a canonical transpose, timing each against scipy.sparse
CSR in the same process and reporting each result's largest difference from
scipy's (relative to the largest magnitude of scipy's result). For symmetric
matrices with a positive diagonal it also runs conjugate gradients
(``jax.scipy.sparse.linalg.cg``, the BCOOArray as operator) beside
``scipy.sparse.linalg.cg`` with the same tolerance, and reports both
relative residuals.
"""

from __future__ import annotations

import gzip
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .data import find_matrix


@dataclass
class Row:
    """One line of the demo's table."""

    operation: str
    difference: float
    bcoo_ms: float
    scipy_ms: float
    note: str = ""
    residuals: tuple[float, float] | None = None


def read_matrix(path: str | Path | None):
    """Read a Matrix Market file (``.mtx`` or ``.mtx.gz``, coordinate or array format) as a scipy CSR array.

    With ``path=None`` build the default: the 2-D Poisson matrix of a 64 x 64
    grid (4096 x 4096, 20224 entries), ``kron(I, T) + kron(T, I)`` with ``T``
    the 1-D second-difference matrix ``tridiag(-1, 2, -1)``.

    Returns
    -------
    name : str
    matrix : scipy.sparse.csr_array
    symmetric : bool
        Whether the file declares symmetry (or the default, which is SPD).

    Raises
    ------
    FileNotFoundError
        If ``path`` is neither a file nor a matrix name found by
        ``bcoo_array.cli.data.find_matrix``.
    ValueError
        If the file is not a Matrix Market file, or its matrix is not 2-D.
    """
    import scipy.io
    import scipy.sparse as sp

    if path is None:
        n = 64
        t = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
        eye = sp.eye_array(n)
        return "poisson2d-64 (default)", sp.csr_array(sp.kron(eye, t) + sp.kron(t, eye)), True
    path = find_matrix(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        header = fh.readline().decode("ascii", "replace").lower()
    if not header.startswith("%%matrixmarket") or not ("coordinate" in header or "array" in header):
        raise ValueError(f"{path} is not a Matrix Market file (coordinate or array format; "
                         f"header: {header.strip()!r})")
    # An array-format file comes back as a dense ndarray; CSR keeps its non-zeros.
    mat = scipy.io.mmread(str(path))
    if np.ndim(mat) != 2:
        raise ValueError(f"{path} holds a {np.ndim(mat)}-D array; the demo needs a matrix")
    name = path.name.removesuffix(".gz").removesuffix(".mtx")
    return name, sp.csr_array(mat), ("symmetric" in header or "hermitian" in header)


def _median_ms(fn: Callable, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def _rel_diff(a, b) -> float:
    a = np.asarray(a)
    b = np.asarray(b)
    scale = np.max(np.abs(b)) if b.size else 0.0
    diff = np.max(np.abs(a - b)) if a.size else 0.0
    return float(diff / scale) if scale else float(diff)


def _sparse_diff(a, b) -> float:
    """Largest |a - b| over |b| for two scipy sparse matrices of the same shape."""
    d = (a - b).tocoo()
    scale = np.max(np.abs(b.data)) if b.nnz else 0.0
    diff = np.max(np.abs(d.data)) if d.nnz else 0.0
    return float(diff / scale) if scale else float(diff)


def run(path=None, *, repeat: int = 5, progress=None, seed: int = 0,
        devices: int = 1) -> tuple[str, tuple, list[Row]]:
    """Run the workload; returns the matrix name, its shape and the table rows.

    Parameters
    ----------
    path : str or Path, optional
        Matrix Market file; None for the embedded default.
    repeat : int
        Timed repetitions per operation (the median is reported), after one
        untimed warm-up call that includes JAX's compilation.
    progress : callable, optional
        Called with the name of each step as it starts.
    devices : int
        With more than 1, the matrix is row-partitioned over the first
        ``devices`` JAX devices ([`bcoo_array.sharded.shard`][]) and every
        operation runs sharded.

    Raises
    ------
    ValueError
        If JAX has fewer than ``devices`` devices.
    """
    import jax
    import jax.numpy as jnp
    import scipy.sparse.linalg as spla

    import bcoo_array as xp

    step = progress or (lambda name: None)
    step("read")
    name, S, symmetric = read_matrix(path)
    if S.dtype.kind in "iub":
        S = S.astype(np.int64)
    step("convert")
    A = xp.from_scipy(S)
    if devices > 1:
        from jax.sharding import PartitionSpec

        from bcoo_array.sharded import shard

        if len(jax.devices()) < devices:
            raise ValueError(f"devices={devices} but JAX has {len(jax.devices())} devices; on CPU set "
                             f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} before JAX starts")
        A = shard(A, jax.make_mesh((devices,), ("x",), devices=jax.devices()[:devices]), PartitionSpec("x", None))
    rng = np.random.default_rng(seed)
    m, n = S.shape
    dt = S.dtype
    x = rng.standard_normal(n).astype(dt) if dt.kind in "fc" else rng.integers(-5, 6, n).astype(dt)
    X = rng.standard_normal((n, 16)).astype(dt) if dt.kind in "fc" else rng.integers(-5, 6, (n, 16)).astype(dt)
    xj, Xj = jnp.asarray(x), jnp.asarray(X)
    rows: list[Row] = []

    def bench(label, bcoo_fn, scipy_fn, compare):
        step(label)
        out_b = jax.block_until_ready(bcoo_fn())
        out_s = scipy_fn()
        tb = _median_ms(lambda: jax.block_until_ready(bcoo_fn()), repeat)
        ts = _median_ms(scipy_fn, repeat)
        rows.append(Row(label, compare(out_b, out_s), tb, ts))

    # Eager calls: concrete indices let bcoo_array use its cached structural
    # plans (row pointers, ELL chunks); the CG solve below runs under jax.jit.
    def spmv(a, v):
        return _dense(a @ v)  # a jax.Array (mixed-type rule); a sharded product is densified here


    bench("SpMV  A @ x", lambda: spmv(A, xj), lambda: S @ x, _rel_diff)
    bench("SpMM  A @ X (16 cols)", lambda: spmv(A, Xj), lambda: S @ X, _rel_diff)
    def rowsum(a):
        return xp.sum(a, axis=1).todense()

    def colsum(a):
        return xp.sum(a, axis=0).todense()

    bench("row sums  sum(A, axis=1)", lambda: rowsum(A), lambda: S.sum(axis=1), _rel_diff)
    bench("column sums  sum(A, axis=0)", lambda: colsum(A), lambda: S.sum(axis=0), _rel_diff)
    bench("transpose (canonical)", lambda: A.T.sum_duplicates(), lambda: S.T.tocsr(),
          lambda b, s: _sparse_diff(b.to_scipy("csr") if hasattr(b, "to_scipy")
                                    else _to_scipy(b), s))
    if symmetric and m == n and dt.kind == "f" and np.all(S.diagonal() > 0):
        step("CG solve")
        b = S @ np.ones(n, dtype=dt)
        tol = 1e-8
        maxiter = 10 * n
        @jax.jit
        def solve(a, rhs):
            sol, _ = jax.scipy.sparse.linalg.cg(lambda v: _dense(a @ v), rhs, tol=tol, maxiter=maxiter)
            return sol

        def bcoo_cg():
            return jax.block_until_ready(solve(A, jnp.asarray(b)))

        def scipy_cg():
            return spla.cg(S, b, rtol=tol, maxiter=maxiter)[0]

        sol_b = np.asarray(bcoo_cg())
        sol_s = scipy_cg()
        tb = _median_ms(bcoo_cg, max(1, repeat // 2))
        ts = _median_ms(scipy_cg, max(1, repeat // 2))
        bnorm = np.linalg.norm(b)
        res_b = np.linalg.norm(S @ sol_b - b) / bnorm
        res_s = np.linalg.norm(S @ sol_s - b) / bnorm
        rows.append(Row("CG solve (tol 1e-8)", abs(res_b - res_s), tb, ts,
                        f"residual bcoo {res_b:.2e}, scipy {res_s:.2e}", residuals=(res_b, res_s)))
    return name, S.shape, rows


def _dense(r):
    """A product's dense values: jax.Array results pass, sparse-typed ones (sharded) are densified."""
    return r.todense() if hasattr(r, "todense") else r


def _to_scipy(b):
    import bcoo_array as xp

    return xp.to_scipy(b, "csr")
