"""The main job: a short real workload on one matrix, side by side with scipy.sparse.

For a Matrix Market file (or the embedded default, the 2-D Poisson matrix
on a 64 x 64 grid: the 5-point finite-difference Laplacian, SPD) the demo
converts the matrix to a BCOOArray and runs, each timed against
scipy.sparse CSR in the same process (first call and the median of warm
calls) and checked against a reference:

* SpMV ``A @ x`` with a NumPy vector (the eager host engine answers with a
  NumPy array) and with a JAX vector (a ``jax.Array`` result), SpMM with 16
  columns, row and column sums and a canonical transpose, against scipy;
* what scipy.sparse cannot do: one function written against the array API
  (``xp = array_namespace(x)``) run on the BCOOArray and on a dense
  array_api_strict (or NumPy) array, results equal; ``jax.grad`` of
  ``0.5 * ||A @ x - b||^2`` under ``jax.jit`` with respect to ``x`` (the
  matrix an argument) and with respect to the stored values
  (``A.with_data(d)``), against the gradients written out with scipy;
  for symmetric matrices with a positive diagonal a jitted conjugate
  gradient solve (``jax.jit`` of ``bcoo_array.linalg.cg``, the matrix an
  argument) beside ``scipy.sparse.linalg.cg`` with the same tolerance,
  both against ``scipy.sparse.linalg.spsolve``; and the sharded product
  (``bcoo_array.sharded``) when JAX has several devices, against scipy.

A row's ``difference`` is its result's largest difference from the
reference relative to the reference's largest magnitude; every check must
pass, or [`run`][] raises [`CheckFailed`][] (``bcoo-array demo`` then exits
with status 1 and prints the failed checks and the table).
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


class _Blank(float):
    """A 0.0 that prints as ``-`` in the table: a cell that does not apply (nothing to time or check)."""

    def __new__(cls):
        return super().__new__(cls, 0.0)

    def __format__(self, spec: str) -> str:
        return "-"

    def __repr__(self) -> str:
        return "BLANK"


BLANK = _Blank()
"""The value of a cell that does not apply: ``0.0`` (so no ratio is formed), printed as ``-``."""


@dataclass
class Row:
    """One line of the demo's table.

    ``difference`` is the largest difference from the reference over the
    reference's largest magnitude; ``passed`` is whether it is within
    ``tolerance`` (None when the row checks nothing, e.g. a skipped one).
    ``bcoo_ms`` / ``scipy_ms`` are medians of warm calls, ``first_ms``
    the first calls (bcoo_array's includes JAX's compilation). Cells that
    do not apply hold [`BLANK`][bcoo_array.cli.demo.BLANK].
    """

    operation: str
    difference: float
    bcoo_ms: float
    scipy_ms: float
    note: str = ""
    residuals: tuple[float, float] | None = None
    first_ms: tuple[float, float] | None = None
    reference: str = "scipy"
    tolerance: float | None = None
    passed: bool | None = None


class CheckFailed(ValueError):
    """Raised by [`run`][bcoo_array.cli.demo.run] when a result is not within its tolerance of the reference.

    ``rows`` holds the whole table, ``failed`` the rows whose check failed.
    """

    def __init__(self, name: str, rows: list[Row]):
        self.rows = rows
        self.failed = [r for r in rows if r.passed is False]
        lines = [f"{len(self.failed)} demo check(s) failed on {name}:"]
        lines += [f"  {r.operation}: difference {r.difference:.3e} from {r.reference}, tolerance {r.tolerance:.1e}"
                  + (f" ({r.note})" if r.residuals is not None else "") for r in self.failed]
        super().__init__("\n".join(lines + ["", format_rows(rows)]))


def format_rows(rows: list[Row]) -> str:
    """The table as plain text (for error messages and logs)."""
    cells = [("operation", "diff", "bcoo_array ms", "scipy ms", "ratio", "note")]
    for r in rows:
        ratio = f"{r.bcoo_ms / r.scipy_ms:.2f}x" if r.scipy_ms else "-"
        cells.append((r.operation, f"{r.difference:.2e}", f"{r.bcoo_ms:.3f}", f"{r.scipy_ms:.3f}", ratio, r.note))
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] for row in cells)


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


def _first_call(fn: Callable):
    """``fn()``'s result and its time in ms."""
    t0 = time.perf_counter()
    out = fn()
    return out, 1e3 * (time.perf_counter() - t0)


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


def _tolerance(dtype) -> float:
    """How far a result may be from its reference: exact for integers, 1e4 ulps (relative to the largest value)."""
    dtype = np.dtype(dtype)
    return 0.0 if dtype.kind in "iub" else float(1e4 * np.finfo(dtype).eps)


def _array_namespace(x):
    """array_api_compat's ``array_namespace`` when installed (it wraps NumPy), else ``x.__array_namespace__()``."""
    try:
        from array_api_compat import array_namespace
    except ImportError:
        return x.__array_namespace__()
    return array_namespace(x)


def row_norms(x):
    """Per row: the Euclidean norm, the largest magnitude and the sum of magnitudes, as an (m, 3) array.

    Written once against the array API standard: the same code runs on a
    dense array (NumPy, array_api_strict, ...) and on a BCOOArray (then the
    result is a BCOOArray too).
    """
    xp = _array_namespace(x)
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        x = xp.astype(x, xp.float64)
    a = xp.abs(x)
    return xp.stack([xp.linalg.vector_norm(x, axis=1), xp.max(a, axis=1), xp.sum(a, axis=1)], axis=1)


def _dense_namespace():
    """array_api_strict (the standard and nothing else) when installed, else NumPy; and its name."""
    try:
        import array_api_strict as strict
    except ImportError:
        return np, "NumPy"
    return strict, "array_api_strict"


def _to_numpy(r) -> np.ndarray:
    if hasattr(r, "todense"):  # BCOOArray
        r = r.todense()
    if isinstance(r, np.ndarray):
        return r
    if hasattr(r, "block_until_ready"):  # jax.Array
        return np.asarray(r)
    return np.from_dlpack(r)  # array_api_strict and other dense libraries


def _ms(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def _first_note(first_b: float, first_s: float) -> str:
    """The first calls: bcoo_array's (with JAX's compilation) against scipy's."""
    if not first_s:
        return f"1st call {_ms(first_b)} ms"
    ratio = first_b / first_s
    return f"1st call {ratio:.2f}x ({_ms(first_b)}/{_ms(first_s)} ms)" if ratio < 10 else \
        f"1st call {ratio:.0f}x ({_ms(first_b)}/{_ms(first_s)} ms)"


def _ready(out):
    """Wait for a JAX result; a NumPy one (the host engine's) is returned as is, with no transfer, and a
    BCOOArray waits through its own method (``jax.block_until_ready`` would flatten it, handing host
    buffers to JAX: a transfer the timed call does not make)."""
    import jax

    if isinstance(out, np.ndarray):
        return out
    if hasattr(out, "block_until_ready"):  # jax.Array, BCOOArray
        return out.block_until_ready()
    return jax.block_until_ready(out)


def _kind(out) -> str:
    """``ndarray`` (the host engine's answer), ``jax.Array`` or the result's type name."""
    import jax

    return "ndarray" if isinstance(out, np.ndarray) else "jax.Array" if isinstance(out, jax.Array) \
        else type(out).__name__


def run(path=None, *, repeat: int = 5, progress=None, seed: int = 0,
        devices: int = 1) -> tuple[str, tuple, list[Row]]:
    """Run the workload; returns the matrix name, its shape and the table rows.

    Parameters
    ----------
    path : str or Path, optional
        Matrix Market file; None for the embedded default.
    repeat : int
        Timed warm repetitions per operation (the median is reported), after
        a first call timed on its own (it includes JAX's compilation).
    progress : callable, optional
        Called with the name of each step as it starts.
    devices : int
        With more than 1, the matrix is row-partitioned over the first
        ``devices`` JAX devices ([`bcoo_array.sharded.shard`][]) and the
        operations run sharded, except the array-API function and the
        gradient with respect to the stored values (``stack`` and
        ``with_data`` belong to one BCOOArray), which use the matrix on one
        device.

    Raises
    ------
    ValueError
        If JAX has fewer than ``devices`` devices.
    CheckFailed
        If a result is not within its tolerance of the reference (raised
        after every row ran; it holds the table).
    """
    import jax
    import jax.numpy as jnp
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla
    from jax.sharding import PartitionSpec

    import bcoo_array as xp

    step = progress or (lambda name: None)
    step("read")
    name, S, symmetric = read_matrix(path)
    if S.dtype.kind in "iub":
        S = S.astype(np.int64)
    step("convert")
    A1 = xp.from_scipy(S)  # on one device
    A = A1
    if devices > 1:
        from bcoo_array.sharded import shard

        if len(jax.devices()) < devices:
            raise ValueError(f"devices={devices} but JAX has {len(jax.devices())} devices; on CPU set "
                             f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} before JAX starts")
        A = shard(A1, jax.make_mesh((devices,), ("x",), devices=jax.devices()[:devices]), PartitionSpec("x", None))
    rng = np.random.default_rng(seed)
    m, n = S.shape
    dt = S.dtype
    x = rng.standard_normal(n).astype(dt) if dt.kind in "fc" else rng.integers(-5, 6, n).astype(dt)
    X = rng.standard_normal((n, 16)).astype(dt) if dt.kind in "fc" else rng.integers(-5, 6, (n, 16)).astype(dt)
    xj, Xj = jnp.asarray(x), jnp.asarray(X)
    rows: list[Row] = []

    def bench(label, bcoo_fn, scipy_fn, compare, *, reference="scipy", tolerance=_tolerance(dt), note="",
              returns=False):
        """Time ``bcoo_fn`` beside ``scipy_fn`` (None: nothing to time); check ``compare(bcoo, scipy) <= tolerance``.

        Both are timed on their first call and then ``repeat`` times (the
        median); ``returns`` names the type of bcoo_array's result in the note.
        """
        step(label)
        out_b, first_b = _first_call(lambda: _ready(bcoo_fn()))
        if returns:
            note = f"returns {_kind(out_b)}"
        out_s, first_s = _first_call(scipy_fn) if scipy_fn is not None else (None, BLANK)
        tb = _median_ms(lambda: _ready(bcoo_fn()), repeat)
        ts = _median_ms(scipy_fn, repeat) if scipy_fn is not None else BLANK
        diff = compare(out_b, out_s)
        passed = bool(diff <= tolerance)
        note = "; ".join(s for s in ("ok" if passed else "FAILED", note, _first_note(first_b, first_s)) if s)
        rows.append(Row(label, diff, tb, ts, note, first_ms=(first_b, first_s), reference=reference,
                        tolerance=tolerance, passed=passed))

    # Eager calls: concrete indices let bcoo_array use its cached structural
    # plans (row pointers, ELL chunks); the gradients and the CG solve below
    # run under jax.jit with the matrix as an argument.
    def spmv(a, v):
        return _dense(a @ v)  # NumPy x: an ndarray (host engine); JAX x: a jax.Array; sharded: densified here

    for label, v in (("NumPy x", x), ("JAX x", xj)):
        bench(f"SpMV  A @ x, {label}", lambda v=v: spmv(A, v), lambda: S @ x, _rel_diff, returns=True)
    bench("SpMM  A @ X, 16 cols", lambda: spmv(A, Xj), lambda: S @ X, _rel_diff, note="JAX X")

    def rowsum(a):
        # NumPy, as scipy's sum gives; through todense() (a jax.Array), which a sharded result has too (its
        # toarray() is scipy's surface, for one BCOOArray only)
        return np.asarray(_dense(xp.sum(a, axis=1)))

    def colsum(a):
        return np.asarray(_dense(xp.sum(a, axis=0)))

    bench("row sums  sum(A, 1)", lambda: rowsum(A), lambda: S.sum(axis=1), _rel_diff)
    bench("column sums  sum(A, 0)", lambda: colsum(A), lambda: S.sum(axis=0), _rel_diff)
    bench("transpose (canonical)", lambda: A.T.sum_duplicates(), lambda: S.T.tocsr(),
          lambda b, s: _sparse_diff(b.to_scipy("csr") if hasattr(b, "to_scipy")
                                    else _to_scipy(b), s))

    # What scipy.sparse cannot do. One array-API function on dense and sparse
    # input: the dense reference takes the leading rows (about 1M entries).
    step("array API")
    dense_xp, dense_name = _dense_namespace()
    k = min(m, max(1, 2**20 // max(n, 1)))
    ref = _to_numpy(row_norms(dense_xp.asarray(S[:k].toarray())))
    bench("array API  row_norms", lambda: row_norms(A1), None,
          lambda out, _: _rel_diff(_to_numpy(out)[:k], ref), reference=f"row_norms(dense {dense_name} array)",
          tolerance=_tolerance(ref.dtype), note=f"equals row_norms(dense {dense_name}) on rows 0-{k - 1}")

    # jax.grad through A @ x, jitted, against the gradients written out with scipy.
    if dt.kind == "c":
        rows.append(Row("jax.grad  of A @ x", BLANK, BLANK, BLANK, "skipped: complex matrix", reference="-"))
    else:
        fdt = dt if dt.kind == "f" else np.dtype(np.float64)
        Sg = S.astype(fdt)
        Ag, A1g = (A, A1) if fdt == dt else (xp.astype(A, fdt), xp.astype(A1, fdt))
        xg, bg = x.astype(fdt), rng.standard_normal(m).astype(fdt)
        xgj, bgj = jnp.asarray(xg), jnp.asarray(bg)

        def loss(v, a, rhs):
            r = _dense(a @ v) - rhs
            return 0.5 * jnp.vdot(r, r)

        def loss_data(d, a, v, rhs):
            return loss(v, a.with_data(d), rhs)

        grad_x = jax.jit(jax.grad(loss))
        grad_data = jax.jit(jax.grad(loss_data))
        pattern_rows = np.repeat(np.arange(m), np.diff(Sg.indptr))

        def scipy_grad_data():
            return (Sg @ xg - bg)[pattern_rows] * xg[Sg.indices]

        def compare_data(g, ref):
            expected = sp.csr_array((ref, Sg.indices, Sg.indptr), shape=Sg.shape)
            return _sparse_diff(A1g.with_data(g).to_scipy("csr"), expected)

        bench("jax.grad  d/dx", lambda: grad_x(xgj, Ag, bgj), lambda: Sg.T @ (Sg @ xg - bg),
              _rel_diff, reference="scipy A.T @ (A @ x - b)", tolerance=_tolerance(fdt),
              note="equals A.T(Ax-b) for loss |Ax-b|^2/2; jit, A an argument")
        bench("jax.grad  d/d A.data", lambda: grad_data(A1g.data, A1g, xgj, bgj), scipy_grad_data,
              compare_data, reference="scipy (Ax - b)_i x_j on A's pattern", tolerance=_tolerance(fdt),
              note="equals (Ax-b)_i x_j; loss(A.with_data(d)), jit")

    if symmetric and m == n and dt.kind == "f" and np.all(S.diagonal() > 0):
        step("CG solve")
        b = S @ np.ones(n, dtype=dt)
        tol = 1e-8
        maxiter = 10 * n
        solve = jax.jit(lambda a, rhs: xp.linalg.cg(a, rhs, tol=tol, maxiter=maxiter)[0])
        bj = jnp.asarray(b)

        def bcoo_cg():
            return jax.block_until_ready(solve(A, bj))

        def scipy_cg():
            return spla.cg(S, b, rtol=tol, maxiter=maxiter)[0]

        sol_b, first_b = _first_call(bcoo_cg)
        sol_b = np.asarray(sol_b)
        sol_s, first_s = _first_call(scipy_cg)
        tb = _median_ms(bcoo_cg, max(1, repeat // 2))
        ts = _median_ms(scipy_cg, max(1, repeat // 2))
        direct = spla.spsolve(sp.csc_array(S), b)
        err_b, err_s = _rel_diff(sol_b, direct), _rel_diff(sol_s, direct)
        bnorm = np.linalg.norm(b)
        res_b = np.linalg.norm(S @ sol_b - b) / bnorm
        res_s = np.linalg.norm(S @ sol_s - b) / bnorm
        # Both stop at the same relative residual; neither is closer to the
        # direct solution than the matrix's conditioning allows.
        err_tol = max(2 * err_s, 1e-6)
        passed = bool(res_b <= 1.5 * max(tol, res_s) and err_b <= err_tol)
        rows.append(Row("CG solve  tol 1e-8", err_b, tb, ts,
                        f"{'ok' if passed else 'FAILED'}: vs spsolve within 2x scipy cg's {err_s:.1e}; "
                        f"jit(bcoo_array.linalg.cg) with A an argument; residual {res_b:.1e} (scipy {res_s:.1e}); "
                        + _first_note(first_b, first_s),
                        residuals=(res_b, res_s), first_ms=(first_b, first_s),
                        reference="scipy.sparse.linalg.spsolve", tolerance=err_tol, passed=passed))

    available = len(jax.devices())
    if devices > 1 or available > 1:
        from bcoo_array.sharded import shard

        p = devices if devices > 1 else available
        As = A if devices > 1 else shard(A1, jax.make_mesh((p,), ("x",), devices=jax.devices()[:p]),
                                         PartitionSpec("x", None))
        bench(f"sharded SpMV, {p} dev.", lambda: spmv(As, xj), lambda: S @ x, _rel_diff,
              note=f"bcoo_array.sharded, {p} row blocks")
    else:
        rows.append(Row("sharded SpMV", BLANK, BLANK, BLANK,
                        "skipped: JAX has 1 device; run with --devices 2, or set XLA_FLAGS to "
                        "--xla_force_host_platform_device_count=2", reference="-"))
    if any(r.passed is False for r in rows):
        raise CheckFailed(name, rows)
    return name, S.shape, rows


def _dense(r):
    """A product's dense values: jax.Array results pass, sparse-typed ones (sharded) are densified."""
    return r.todense() if hasattr(r, "todense") else r


def _to_scipy(b):
    import bcoo_array as xp

    return xp.to_scipy(b, "csr")
