"""Native jax.ffi SpMV/SpMM kernel against the XLA kernels and scipy CSR, in one process.

    python benchmarks/native_spmm.py                  # poisson 64x64 grid (4096 x 4096), cage11
    python benchmarks/native_spmm.py --large          # adds random 1e6 x 1e6 with 1e7 entries
    python benchmarks/native_spmm.py --rounds 15 --calls 20
    python benchmarks/native_spmm.py --quick          # smoke run: a 16x16 grid, one round of one call

For each matrix (float64, canonical BCOO buffers from scipy CSR) and each of
SpMV (``x`` of shape ``(k,)``) and SpMM (``(k, 16)``) it times, interleaved
round by round (a change of machine load hits every column alike):

* ``scipy``: ``A @ x`` on scipy CSR (the reference);
* ``native np`` / ``native jax``: :func:`bcoo_array._kernels.native.spmm`
  eagerly, with a NumPy / jax ``x`` (one compiled dispatch);
* ``xla plan``: the kernel ``matmul.spmm`` chose before the native one (ELL
  SpMV for >= 150 000 entries, XLA's CSR kernel for several columns, the
  segment-sum plan otherwise), concrete indices, eager, jax ``x``;
* ``native jit`` / ``xla jit``: ``jax.jit`` of the native kernel / of the
  traced-index XLA kernel (``coo.coo_matmat``), the matrix buffers
  passed as (traced) arguments;
* ``public`` / ``public xla``: ``A @ x`` on the BCOOArray (a dense
  ``jax.Array``), with the native kernel and with ``BCOO_ARRAY_NATIVE=0``.

Each cell: median seconds per call over the rounds, and the ratio to
scipy's median. Results are checked against scipy first. ``--quick`` (what
``tests/test_benchmarks.py`` runs) replaces the matrices by the Poisson matrix
of a 16 x 16 grid (256 x 256) and times one round of one call: it checks that
the script runs, its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from pathlib import Path

import sys

# Run from a checkout: import this repository's bcoo_array (and its in-place built extension).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import bcoo_array as xp  # noqa: E402
from bcoo_array._kernels import coo, csr, ell, native  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"


def poisson2d(g: int) -> sp.csr_array:
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(g, g))
    eye = sp.eye_array(g)
    return sp.csr_array(sp.kron(t, eye) + sp.kron(eye, t))


def matrices(large: bool, quick: bool = False):
    if quick:
        yield "poisson 256 (16x16 grid)", poisson2d(16)
        return
    yield "poisson 4096 (64x64 grid)", poisson2d(64)
    path = SHARED / "cage11.mtx.gz"
    if path.exists():
        yield "cage11", sp.csr_array(scipy.io.mmread(path))
    if large:
        rng = np.random.default_rng(0)
        n, nnz = 10**6, 10**7
        coo = sp.coo_array((rng.standard_normal(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
        yield "random 1e6 x 1e6, nnz 1e7", coo.tocsr()


def xla_plan_kernel(data, indices, shape, x):
    """What ``matmul.spmm`` chose for concrete indices before the native kernel."""
    m, k = shape
    plan = csr.row_plan(indices, shape)
    if x.ndim == 1:
        eplan = ell.ell_plan(indices, shape)
        if eplan is not None:
            return ell.matvec(data, eplan, x, m)
    if x.ndim == 2 and x.shape[1] >= csr.CSR_KERNEL_MIN_COLS:
        return csr.matmat_bcsr(data, plan.perm, plan.cols, plan.indptr, x, shape=(m, k), n_valid=plan.n_valid)
    return csr.matmat_segments(data, plan.perm, plan.rows, plan.cols, x, m=m, n_valid=plan.n_valid)


def cases(A: sp.csr_array, ncols: int):
    A.sort_indices()
    m, k = A.shape
    a = xp.from_scipy(A)
    data, indices = a.data, a.indices
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((k,) if ncols == 1 else (k, ncols))
    xj = jnp.asarray(xn)
    native_jit = jax.jit(lambda d, i, v: native.coo_matmul(d, i, v, m))
    xla_jit = jax.jit(lambda d, i, v: coo.coo_matmat(d, i[:, 0], i[:, 1], v, m, True))

    def public(env):
        def f():
            os.environ["BCOO_ARRAY_NATIVE"] = env
            try:
                return a @ xj  # sparse @ dense is a dense jax.Array (the mixed-type rule)
            finally:
                os.environ.pop("BCOO_ARRAY_NATIVE", None)
        return f

    fns = {
        "scipy": lambda: A @ xn,
        "native np": lambda: native.spmm(data, indices, xn, m),
        "native jax": lambda: native.spmm(data, indices, xj, m),
        "xla plan": lambda: xla_plan_kernel(data, indices, (m, k), xj),
        "native jit": lambda: native_jit(data, indices, xj),
        "xla jit": lambda: xla_jit(data, indices, xj),
        "public": public("1"),
        "public xla": public("0"),
    }
    ref = A @ xn
    for name, f in fns.items():
        got = np.asarray(f()).reshape(ref.shape)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10, err_msg=name)
    return fns


def block(r):
    if hasattr(r, "block_until_ready"):
        r.block_until_ready()
    return r


def run(fns, rounds: int, calls: int):
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                block(f())
            times[name].append((time.perf_counter() - t0) / calls)
    return {name: statistics.median(v) for name, v in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--large", action="store_true", help="add the random 1e6 x 1e6 matrix with 1e7 entries")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--calls", type=int, default=0, help="calls per round (default: about 20 ms worth)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: only a 16x16-grid Poisson matrix, one round of one call (times mean nothing)")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.calls = 1, 1
    if not native.available():
        raise SystemExit("native kernel not available (build it: python setup.py build_ext --inplace)")
    cols = None
    print(f"jax {jax.__version__}, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cpus")
    for label, A in matrices(args.large, args.quick):
        for ncols in (1, 16):
            fns = cases(A, ncols)
            calls = args.calls or max(1, int(0.02 / max(run({"s": fns["scipy"]}, 3, 3)["s"], 1e-6)))
            med = run(fns, args.rounds, calls)
            if cols is None:
                cols = list(fns)
                print("| matrix | op | scipy ms | " + " | ".join(c for c in cols if c != "scipy") + " |")
                print("|---" * (len(cols) + 2) + "|")
            op = "SpMV" if ncols == 1 else f"SpMM {ncols}"
            s = med["scipy"]
            cells = [f"{med[c] / s:.2f}x" for c in cols if c != "scipy"]
            print(f"| {label} (nnz {A.nnz}) | {op} | {s * 1e3:.3f} | " + " | ".join(cells) + " |", flush=True)
            del fns
            gc.collect()


if __name__ == "__main__":
    main()
