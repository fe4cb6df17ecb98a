"""The benchmark runner behind ``bcoo-array bench`` and ``benchmarks/run.py``.

It times the same operations with bcoo_array, scipy.sparse (CSR, the
reference), pydata-sparse (``sparse.COO``) and
``jax.experimental.sparse`` (``BCOO``) side by side, in one process, on
the same float64 values, and reports the median time of each and its ratio to
scipy.sparse's median. Ratios measured in one process are what matter on a
shared, noisy machine; absolute times are printed for reference.

Every jax result is waited for (``block_until_ready``) inside the timed
region. Each library is called through its ordinary eager API, the way a user
writes ``A @ x``; compile time is excluded (one untimed warm-up call), except
for the ``compile SpMV`` row: the first call after ``jax.clear_caches`` (the
clearing untimed) minus a second, warm call, so the product's own run time
on a large matrix does not count as compilation.

SpMV also reports achieved memory bandwidth: the bytes a CSR SpMV must move
at least (values and column indices once, the row pointer, ``x`` and ``y``)
divided by the median time, as a fraction of the copy bandwidth measured with
NumPy in the same run (the STREAM "copy" kernel, counting read + write).

The plot needs matplotlib and the pydata-sparse column needs ``sparse``: both
come with the ``bench`` extra (``pip install 'bcoo-array[bench]'``) and are
imported only when used.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .data import find_matrix

#: Operation names, in report order.
OPERATIONS = (
    "SpMV A @ x",
    "SpMV A @ x, NumPy x",
    "A.dot(x) -> NumPy",
    "jit SpMV (A traced)",
    "SpMM A @ X (16 cols)",
    "SpMM A @ X (64 cols)",
    "A + B (canonical)",
    "A * B (canonical)",
    "A @ A.T",
    "transpose (canonical)",
    "sum(axis=0)",
    "sum(axis=1)",
    "row slice A(i, :)",
    "column slice A(:, j)",
    "row range A(i:i+100, :)",
    "A.T @ x, NumPy x",
    "x @ A, NumPy x",
    "A.T @ x",
    "x @ A",
    "2-D slice A(i:i+100, j:j+100)",
    "A[np.ix_(r, c)], 1,000 indices",
    "A.diagonal()",
    "zero 600 rows and columns (scipy: lil)",
    "jit SpMM (A traced, 16 cols)",
    "from scipy CSR",
    "to scipy CSR",
    "CG 50 iterations (jit)",
    "row sums under vmap (8 matrices, jit)",
    "compile SpMV (first call, ms)",
)

#: Size classes of the targets: the 2-D Poisson matrix of a 64 x 64 grid (4,096 rows) and
#: matrices of that order are "small", cage11-sized ones "medium", 5e6 entries and more "large".
SIZE_CLASSES = ("small", "medium", "large")

#: Targets of the performance issue (#11): the largest acceptable ratio of bcoo_array's median
#: to scipy's, per size class (None: no target); the compile row is in milliseconds.
TARGETS = {
    "SpMV A @ x": (1.5, 1.0, 1.0),
    "SpMV A @ x, NumPy x": (1.5, 1.0, 1.0),
    "A.dot(x) -> NumPy": (1.5, 1.0, 1.0),
    "jit SpMV (A traced)": (1.5, 1.0, 1.0),
    "SpMM A @ X (16 cols)": (1.5, 1.0, 1.0),
    "SpMM A @ X (64 cols)": (1.5, 1.0, 1.0),
    "A + B (canonical)": (2.0, 2.0, 2.0),
    "A * B (canonical)": (2.0, 2.0, 2.0),
    "A @ A.T": (2.0, 2.0, None),
    "transpose (canonical)": (2.0, 2.0, None),
    "sum(axis=0)": (1.5, 1.2, 1.2),
    "sum(axis=1)": (1.5, 1.2, 1.2),
    "row slice A(i, :)": (2.0, 2.0, None),
    "column slice A(:, j)": (2.0, 2.0, None),
    "row range A(i:i+100, :)": (2.0, 2.0, None),
    # the structural-operations issue (#20)
    "A.T @ x, NumPy x": (1.25, 1.25, 1.25),
    "x @ A, NumPy x": (1.25, 1.25, 1.25),
    "A.T @ x": (1.25, 1.25, 1.25),  # a JAX x (a NumPy one for scipy), as "SpMV A @ x"
    "x @ A": (1.25, 1.25, 1.25),
    "2-D slice A(i:i+100, j:j+100)": (2.0, 2.0, None),
    "A[np.ix_(r, c)], 1,000 indices": (2.0, 2.0, None),
    "A.diagonal()": (2.0, 2.0, 2.0),
    "zero 600 rows and columns (scipy: lil)": (2.0, 2.0, None),
    "jit SpMM (A traced, 16 cols)": (1.2, 1.0, 1.0),
    "from scipy CSR": (1.5, 1.5, 1.5),
    "to scipy CSR": (1.5, 1.5, 1.5),
    "CG 50 iterations (jit)": (1.5, 1.0, 1.0),
    # the target for this row is <= 1.0x jax.experimental.sparse (the "jax BCOO" column); scipy sums
    # the 8 matrices in a Python loop
    "row sums under vmap (8 matrices, jit)": (None, None, None),
    "compile SpMV (first call, ms)": (200.0, 200.0, 200.0),
}


def size_class(nnz: int, n_rows: int) -> str:
    """The target column of a matrix: "small" (up to ~5,000 rows), "medium", or "large" (>= 5e6 entries)."""
    if nnz >= 5_000_000:
        return "large"
    return "small" if n_rows <= 5_000 else "medium"


def target(operation: str, case: "Case") -> float | None:
    """The target of ``operation`` on ``case`` (None where the issue sets none)."""
    row = TARGETS.get(operation)
    return None if row is None else row[SIZE_CLASSES.index(size_class(case.nnz, case.shape[0]))]


LIBRARIES = ("bcoo_array", "scipy", "pydata-sparse", "jax BCOO")


@dataclass
class Case:
    """One benchmark matrix: ``A`` (and ``B``, the same shape with a different pattern) as scipy CSR."""

    name: str
    A: object
    B: object

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.A.shape)

    @property
    def nnz(self) -> int:
        return int(self.A.nnz)


@dataclass
class Result:
    """Median times (seconds) of one operation on one case, per library (None: unsupported)."""

    case: str
    operation: str
    times: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)

    def ratio(self, lib: str = "bcoo_array") -> float | None:
        """Median time of ``lib`` over scipy's (for the compile row: milliseconds of ``lib``)."""
        t = self.times.get(lib)
        if t is None:
            return None
        if self.operation.startswith("compile"):
            return t * 1e3
        ref = self.times.get("scipy")
        return t / ref if ref else None


def _import_sparse():
    """pydata-sparse, or an ImportError that names the extra to install."""
    try:
        import sparse
    except ImportError as exc:
        raise ImportError("pydata-sparse is not installed; pip install 'bcoo-array[bench]'") from exc
    return sparse


def import_pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or an ImportError that names the extra to install."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("the benchmark plot needs matplotlib; pip install 'bcoo-array[bench]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _random_csr(m: int, n: int, nnz: int, seed: int):
    """A random float64 CSR matrix with exactly ``nnz`` distinct entries (canonical)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    total = m * n
    if nnz > total:
        raise ValueError(f"nnz={nnz} exceeds the {m} x {n} = {total} positions")
    # Draw with replacement, then top up until nnz distinct positions are reached.
    from .._kernels.host import unique_ints  # NumPy 2.x's hash-based np.unique is slow on 10^7 keys

    keys = unique_ints(rng.integers(0, total, size=nnz, dtype=np.int64))
    while keys.size < nnz:
        extra = rng.integers(0, total, size=nnz - keys.size, dtype=np.int64)
        keys = unique_ints(np.concatenate([keys, extra]))
    vals = rng.standard_normal(nnz)
    A = sp.csr_array((vals, (keys // n, keys % n)), shape=(m, n))
    A.sum_duplicates()
    return A


def load_case(spec: str, seed: int = 0) -> Case:
    """Build a ``Case`` from a matrix file, a name in a matrix folder, ``poisson:K`` or ``random:N:NNZ``.

    Raises
    ------
    FileNotFoundError
        If ``spec`` is neither a file nor a name in ``.data.matrix_dirs``.
    ValueError
        For a malformed ``random:`` or ``poisson:`` spec.
    """
    import scipy.io
    import scipy.sparse as sp

    if spec.startswith("poisson:"):
        try:
            k = int(spec.split(":")[1])
        except (IndexError, ValueError):
            raise ValueError(f"poisson spec {spec!r} must be poisson:K (a K x K grid), e.g. poisson:64") from None
        t = sp.diags_array([-np.ones(k - 1), 2 * np.ones(k), -np.ones(k - 1)], offsets=[-1, 0, 1])
        eye = sp.eye_array(k)
        A = sp.csr_array(sp.kron(eye, t) + sp.kron(t, eye))
        A.sum_duplicates()
        return Case(f"poisson2d {k * k}", A, _random_csr(k * k, k * k, A.nnz, seed + 1))
    if spec.startswith("random:"):
        try:
            _, n, nnz = spec.split(":")
            n, nnz = int(float(n)), int(float(nnz))
        except ValueError:
            raise ValueError(f"random spec {spec!r} must be random:N:NNZ, e.g. random:1e4:1e5") from None
        A = _random_csr(n, n, nnz, seed)
        return Case(f"random {n:.0e} x {n:.0e}, nnz {nnz:.0e}".replace("e+0", "e"), A, _random_csr(n, n, nnz, seed + 1))
    path = find_matrix(spec)
    M = scipy.io.mmread(path)
    A = sp.csr_array(M).astype(np.float64)  # array-format files come back dense; CSR keeps their non-zeros
    A.sum_duplicates()
    name = path.name.split(".")[0]
    # B: the same shape and number of entries, a different (random) pattern.
    B = _random_csr(A.shape[0], A.shape[1], A.nnz, seed + 1)
    return Case(name, A, B)


def tune_malloc() -> bool:
    """Opt-in: keep freed memory mapped in glibc malloc, so large temporaries do not page-fault.

    Sets ``M_MMAP_THRESHOLD`` to 32 MiB, ``M_TRIM_THRESHOLD`` to 1 GiB and
    ``M_TOP_PAD`` to 64 MiB for this process (the same as the environment
    variables ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824
    MALLOC_TOP_PAD_=67108864``). It trades resident memory for speed and
    affects every library in the process (scipy and XLA's CPU buffers alike),
    so bcoo_array never calls it by itself. See ``mallopt(3)``.

    Returns
    -------
    bool
        False where glibc's ``mallopt`` is not available (nothing changed).
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    ok = mallopt(m_mmap_threshold, 32 << 20) == 1
    ok &= mallopt(m_trim_threshold, 1 << 30) == 1
    ok &= mallopt(m_top_pad, 64 << 20) == 1
    return bool(ok)


def copy_bandwidth(nbytes: int = 1 << 27, repeat: int = 5) -> float:
    """Measured memory copy bandwidth in bytes/s (read + write), NumPy ``copyto``."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        ts.append(time.perf_counter() - t0)
    return 2 * nbytes / float(np.median(ts))


def spmv_bytes(A) -> int:
    """Least bytes a CSR SpMV moves: values, column indices, row pointer, x and y."""
    m, n = A.shape
    return A.nnz * (A.data.itemsize + 4) + 4 * (m + 1) + 8 * n + 8 * m


def _block(r):
    import jax

    if isinstance(r, (tuple, list)):
        for x in r:
            _block(x)
        return r
    if hasattr(r, "block_until_ready"):  # jax.Array, BCOOArray (waits without handing host buffers to JAX)
        r.block_until_ready()
        return r
    for leaf in jax.tree_util.tree_leaves(r):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return r


def _ops_for(case: Case, lib: str):
    """``{operation: zero-argument callable}`` for one library (operations it cannot do are absent)."""
    import jax
    import jax.numpy as jnp
    import scipy.sparse.linalg as spla

    A, B = case.A, case.B
    m, n = A.shape
    rng = np.random.default_rng(1)
    i, j = m // 2, n // 3
    x = rng.standard_normal(n)
    X16 = rng.standard_normal((n, 16))
    X64 = rng.standard_normal((n, 64))
    ops: dict[str, Callable] = {}
    r_ix = np.sort(rng.choice(m, min(m, 1000), replace=False))
    c_ix = np.sort(rng.choice(n, min(n, 1000), replace=False))
    zero = rng.choice(min(m, n), min(m, n, 600), replace=False)
    stack = [A * (k + 1.0) for k in range(8)]  # 8 matrices of one pattern (a batch of a training step)
    if lib == "scipy":
        At = A.T.tocsr()
        A_lil = A.tolil()

        def zero_lil():
            L = A_lil.copy()
            L[zero, :] = 0
            L[:, zero] = 0
            return L
        ops["SpMV A @ x"] = lambda: A @ x
        ops["SpMV A @ x, NumPy x"] = lambda: A @ x
        ops["A.dot(x) -> NumPy"] = lambda: A.dot(x)
        ops["row slice A(i, :)"] = lambda: A[i]
        ops["column slice A(:, j)"] = lambda: A[:, j]
        ops["SpMM A @ X (16 cols)"] = lambda: A @ X16
        ops["SpMM A @ X (64 cols)"] = lambda: A @ X64
        ops["A + B (canonical)"] = lambda: A + B
        ops["A * B (canonical)"] = lambda: A * B
        ops["A @ A.T"] = lambda: A @ At
        ops["transpose (canonical)"] = lambda: A.T.tocsr()
        ops["sum(axis=0)"] = lambda: A.sum(axis=0)
        ops["sum(axis=1)"] = lambda: A.sum(axis=1)
        # The reference for both conversions: scipy's own CSR -> COO.
        ops["from scipy CSR"] = lambda: A.tocoo()
        ops["to scipy CSR"] = lambda: A.tocoo()
        ops["row range A(i:i+100, :)"] = lambda: A[i:i + 100]
        ops["jit SpMV (A traced)"] = lambda: A @ x
        ops["jit SpMM (A traced, 16 cols)"] = lambda: A @ X16
        xm = rng.standard_normal(m)
        ops["A.T @ x, NumPy x"] = lambda: A.T @ xm
        ops["x @ A, NumPy x"] = lambda: xm @ A
        ops["A.T @ x"] = lambda: A.T @ xm
        ops["x @ A"] = lambda: xm @ A
        ops["2-D slice A(i:i+100, j:j+100)"] = lambda: A[i:i + 100, j:j + 100]
        ops["A[np.ix_(r, c)], 1,000 indices"] = lambda: A[np.ix_(r_ix, c_ix)]
        ops["A.diagonal()"] = lambda: A.diagonal()
        ops["zero 600 rows and columns (scipy: lil)"] = zero_lil
        if m == n:
            ops["CG 50 iterations (jit)"] = lambda: spla.cg(A, x, rtol=0.0, atol=0.0, maxiter=50)[0]
        ops["row sums under vmap (8 matrices, jit)"] = lambda: [S.sum(axis=1) for S in stack]
        return ops
    xj, X16j, X64j = jnp.asarray(x), jnp.asarray(X16), jnp.asarray(X64)
    if lib == "bcoo_array":
        import bcoo_array as xp

        a = xp.from_scipy(A)
        b = xp.from_scipy(B)
        at = xp.from_scipy(A.T.tocsr())
        ops["SpMV A @ x"] = lambda: a @ xj
        ops["SpMV A @ x, NumPy x"] = lambda: a @ x
        ops["A.dot(x) -> NumPy"] = lambda: a.dot(x)
        ops["row slice A(i, :)"] = lambda: a[i]
        ops["column slice A(:, j)"] = lambda: a[:, j]
        ops["SpMM A @ X (16 cols)"] = lambda: a @ X16j
        ops["SpMM A @ X (64 cols)"] = lambda: a @ X64j
        ops["A + B (canonical)"] = lambda: a + b
        ops["A * B (canonical)"] = lambda: a * b
        ops["A @ A.T"] = lambda: a @ at
        ops["transpose (canonical)"] = lambda: a.T.sum_duplicates()
        ops["sum(axis=0)"] = lambda: xp.sum(a, axis=0)
        ops["sum(axis=1)"] = lambda: xp.sum(a, axis=1)
        ops["from scipy CSR"] = lambda: xp.from_scipy(A)
        ops["to scipy CSR"] = lambda: xp.to_scipy(a, "csr")
        ops["row range A(i:i+100, :)"] = lambda: a[i:i + 100]
        spmv = jax.jit(lambda mat, v: mat @ v)
        ops["jit SpMV (A traced)"] = lambda: spmv(a, xj)
        ops["jit SpMM (A traced, 16 cols)"] = lambda: spmv(a, X16j)
        xm = rng.standard_normal(m)
        ops["A.T @ x, NumPy x"] = lambda: a.T @ xm
        ops["x @ A, NumPy x"] = lambda: xm @ a
        xmj = jnp.asarray(xm)
        ops["A.T @ x"] = lambda: a.T @ xmj
        ops["x @ A"] = lambda: xmj @ a
        ops["2-D slice A(i:i+100, j:j+100)"] = lambda: a[i:i + 100, j:j + 100]
        ops["A[np.ix_(r, c)], 1,000 indices"] = lambda: a[np.ix_(r_ix, c_ix)]
        ops["A.diagonal()"] = lambda: a.diagonal()

        def zero_assign():
            c = a.copy()
            c[zero, :] = 0.0
            c[:, zero] = 0.0
            return c
        ops["zero 600 rows and columns (scipy: lil)"] = zero_assign
        if m == n:
            # tol = atol = 0: exactly 50 iterations, as scipy's cg with rtol = atol = 0.
            cg50 = jax.jit(lambda mat, rhs: xp.linalg.cg(mat, rhs, tol=0.0, atol=0.0, maxiter=50)[0])
            ops["CG 50 iterations (jit)"] = lambda: cg50(a, xj)

        batched = xp.update_layout(xp.stack([xp.from_scipy(S) for S in stack]), n_batch=1)
        row_sums = jax.jit(jax.vmap(lambda mat: xp.sum(mat, axis=1).todense()))
        ops["row sums under vmap (8 matrices, jit)"] = lambda: row_sums(batched)

        ops["compile SpMV (first call, ms)"] = lambda: a @ xj
        return ops
    if lib == "jax BCOO":
        from jax.experimental import sparse as jsparse

        def conv(M):
            c = M.tocoo()
            idx = np.stack([c.row, c.col], axis=1).astype(np.int32)
            return jsparse.BCOO((jnp.asarray(c.data), jnp.asarray(idx)), shape=M.shape,
                                indices_sorted=True, unique_indices=True)

        a, b, at = conv(A), conv(B), conv(A.T.tocsr())
        ops["SpMV A @ x"] = lambda: a @ xj
        ops["SpMV A @ x, NumPy x"] = lambda: a @ x
        ops["SpMM A @ X (16 cols)"] = lambda: a @ X16j
        ops["SpMM A @ X (64 cols)"] = lambda: a @ X64j
        ops["A + B (canonical)"] = lambda: (a + b).sum_duplicates()
        ops["transpose (canonical)"] = lambda: a.T.sum_duplicates()
        ops["sum(axis=0)"] = lambda: a.sum(axis=0)
        ops["sum(axis=1)"] = lambda: a.sum(axis=1)
        ops["from scipy CSR"] = lambda: jsparse.BCOO.from_scipy_sparse(A)
        spmv = jax.jit(lambda mat, v: mat @ v)
        ops["jit SpMV (A traced)"] = lambda: spmv(a, xj)
        if m == n:
            cg50 = jax.jit(lambda mat, rhs: jax.scipy.sparse.linalg.cg(lambda v: mat @ v, rhs, tol=0.0, atol=0.0,
                                                                       maxiter=50)[0])
            ops["CG 50 iterations (jit)"] = lambda: cg50(a, xj)
        coo = A.tocoo()
        idx8 = jnp.asarray(np.broadcast_to(np.stack([coo.row, coo.col], axis=1).astype(np.int32),
                                           (8, coo.nnz, 2)))
        batched = jsparse.BCOO((jnp.asarray(np.stack([S.tocoo().data for S in stack])), idx8), shape=(8,) + A.shape,
                               indices_sorted=True, unique_indices=True)
        row_sums = jax.jit(jax.vmap(lambda mat: mat.sum(axis=1).todense()))
        ops["row sums under vmap (8 matrices, jit)"] = lambda: row_sums(batched)

        ops["compile SpMV (first call, ms)"] = lambda: a @ xj
        return ops
    if lib == "pydata-sparse":
        sparse = _import_sparse()

        a, b = sparse.COO.from_scipy_sparse(A), sparse.COO.from_scipy_sparse(B)
        at = sparse.COO.from_scipy_sparse(A.T.tocsr())
        ops["SpMV A @ x"] = lambda: a @ x
        ops["SpMV A @ x, NumPy x"] = lambda: a @ x
        ops["row slice A(i, :)"] = lambda: a[i]
        ops["column slice A(:, j)"] = lambda: a[:, j]
        ops["SpMM A @ X (16 cols)"] = lambda: a @ X16
        ops["SpMM A @ X (64 cols)"] = lambda: a @ X64
        ops["A + B (canonical)"] = lambda: a + b
        ops["A * B (canonical)"] = lambda: a * b
        ops["A @ A.T"] = lambda: a @ at
        ops["transpose (canonical)"] = lambda: _pydata_T(a)
        ops["sum(axis=0)"] = lambda: a.sum(axis=0)
        ops["sum(axis=1)"] = lambda: a.sum(axis=1)
        ops["from scipy CSR"] = lambda: sparse.COO.from_scipy_sparse(A)
        ops["to scipy CSR"] = lambda: a.tocsr()
        ops["row range A(i:i+100, :)"] = lambda: a[i:i + 100]
        return ops
    raise ValueError(f"unknown library {lib!r}; choose from {LIBRARIES}")


def _pydata_T(a):
    """pydata-sparse transpose made canonical: ``.T`` only permutes the coordinates; the
    constructor sorts them (``sorted=False``)."""
    sparse = _import_sparse()

    t = a.T
    return sparse.COO(t.coords, t.data, shape=t.shape, sorted=False, has_duplicates=False)


def run_case(case: Case, *, repeat: int = 20, libraries=LIBRARIES, operations=OPERATIONS,
             progress: Callable[[str], None] | None = None, budget_s: float = 10.0) -> list[Result]:
    """Time every operation on ``case`` with every library; one ``Result`` per operation.

    The libraries' calls are interleaved (one call of each per round, then
    the next round), so a change of machine load during the run affects them
    alike and the ratios stay meaningful on a shared machine.
    """
    results = {op: Result(case.name, op) for op in operations}
    ops_by_lib = {}
    for lib in libraries:
        try:
            ops_by_lib[lib] = _ops_for(case, lib)
        except Exception as e:  # a library that cannot even take the matrix
            for op in operations:
                results[op].errors[lib] = f"{type(e).__name__}: {e}"[:120]
    for op in operations:
        fns = {}
        for lib, ops in ops_by_lib.items():
            if progress is not None:
                progress(f"{case.name}: {op} [{lib}]")
            fn = ops.get(op)
            if fn is None:
                continue
            try:
                if op.startswith("compile"):
                    # Compilation only: the first call after clearing JAX's caches (the clearing
                    # itself untimed) minus a second, warm call of the same product.
                    import jax  # deferred, as everywhere in this module

                    jax.clear_caches()
                    t0 = time.perf_counter()
                    _block(fn())
                    first = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    _block(fn())
                    results[op].times[lib] = max(first - (time.perf_counter() - t0), 0.0)
                else:
                    _block(fn())  # warm-up: compilation and caches
                    fns[lib] = fn
            except Exception as e:
                results[op].errors[lib] = f"{type(e).__name__}: {e}"[:120]
        samples = {lib: [] for lib in fns}
        start = time.perf_counter()
        for i in range(repeat):
            for lib, fn in fns.items():
                t0 = time.perf_counter()
                _block(fn())
                samples[lib].append(time.perf_counter() - t0)
            if time.perf_counter() - start > budget_s and i >= 2:
                break
        for lib, ts in samples.items():
            results[op].times[lib] = float(np.median(ts))
        gc.collect()
    return [results[op] for op in operations]


def bandwidth_fraction(result: Result, case: Case, lib: str, bw: float) -> float | None:
    """Achieved SpMV bandwidth of ``lib`` as a fraction of the copy bandwidth ``bw``."""
    t = result.times.get(lib)
    if t is None or not result.operation.startswith("SpMV"):
        return None
    return spmv_bytes(case.A) / t / bw


def plot(results: list[Result], path: str | Path, cases: dict[str, Case] | None = None) -> Path:
    """Write a PNG bar chart of the ratios to scipy (log scale), one group per operation and case."""
    plt = import_pyplot()

    case_objs = cases or {}
    rows = [r for r in results if not r.operation.startswith("compile")]
    cases = list(dict.fromkeys(r.case for r in rows))
    ops = list(dict.fromkeys(r.operation for r in rows))
    libs = [lib for lib in LIBRARIES if lib != "scipy"]
    fig, axes = plt.subplots(len(cases), 1, figsize=(12, 3.4 * len(cases)), squeeze=False)
    width = 0.8 / len(libs)
    for ax, case in zip(axes[:, 0], cases):
        for k, lib in enumerate(libs):
            vals = []
            for op in ops:
                r = next((r for r in rows if r.case == case and r.operation == op), None)
                v = r.ratio(lib) if r is not None else None
                vals.append(v if v is not None else np.nan)
            ax.bar(np.arange(len(ops)) + (k - (len(libs) - 1) / 2) * width, vals, width, label=lib)
        tx = np.arange(len(ops))
        tgts = [target(op, case_objs[case]) if case in case_objs else None for op in ops]
        ax.scatter(tx, [np.nan if t is None else t for t in tgts], marker="_", s=400, color="k", label="target",
                   zorder=3)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("time / scipy time")
        ax.set_title(case)
        ax.set_xticks(tx)
        ax.set_xticklabels(ops, rotation=20, ha="right", fontsize=8)
    axes[0, 0].legend(ncol=4, fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def format_ratio(v: float | None, op: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:.0f} ms" if op.startswith("compile") else f"{v:.2f}x"


def format_target(tgt: float | None, op: str) -> str:
    if tgt is None:
        return "-"
    return f"<= {tgt:.0f} ms" if op.startswith("compile") else f"<= {tgt}x"


def markdown_table(results: list[Result], cases: dict[str, Case], bw: float, libraries=LIBRARIES) -> str:
    """The results as a Markdown table (ratios to scipy; scipy's median in ms)."""
    libs = [lib for lib in LIBRARIES if lib != "scipy" and lib in libraries]
    head = "| matrix | operation | scipy ms | " + " | ".join(libs) + " | target |"
    lines = [head, "|" + "---|" * (len(libs) + 4)]
    for r in results:
        sc = r.times.get("scipy")
        cells = []
        for lib in libs:
            txt = format_ratio(r.ratio(lib), r.operation)
            bwf = bandwidth_fraction(r, cases[r.case], lib, bw)
            if bwf is not None:
                txt += f" ({bwf:.0%} bw)"
            cells.append(txt)
        sc_txt = "-" if sc is None or r.operation.startswith("compile") else f"{sc * 1e3:.3f}"
        if sc is not None and r.operation.startswith("SpMV"):
            sc_txt += f" ({bandwidth_fraction(r, cases[r.case], 'scipy', bw):.0%} bw)"
        tgt_txt = format_target(target(r.operation, cases[r.case]), r.operation)
        lines.append(f"| {r.case} | {r.operation} | {sc_txt} | " + " | ".join(cells) + f" | {tgt_txt} |")
    return "\n".join(lines)
