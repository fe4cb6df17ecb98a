"""scipy.sparse, scikit-learn and networkx entry points that receive a BCOOArray.

Each entry of :data:`ENTRY_POINTS` is one call, run on a BCOOArray ``A`` and
on the scipy array ``S`` it was made from:

* ``direct``: the call takes ``A`` itself (through a protocol the library
  really uses: scipy's LinearOperator duck typing, ``A(x)`` for callables,
  the operators, ``A.tocoo()``) and its result equals the call on ``S``;
* ``.tocsr()`` / ``.tocsc()``: the call refuses ``A`` with the error named
  in the entry; where the library asks NumPy to densify ``A`` that error is
  the BCOOArray's own and names the conversion, where the library checks
  ``scipy.sparse.issparse`` first it is the library's own message. Then
  the call on ``A.tocsr()`` (or ``A.tocsc()``) equals the call on ``S``.

``docs/scipy_interop.md`` lists the same entry points;
:func:`test_docs_table_matches_entry_points` keeps the two in step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse import csgraph

import bcoo_array as xp

AUTO_DENSIFY_ENV = "BCOO_ARRAY_AUTO_DENSIFY"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "scipy_interop.md"
N = 40
RTOL = 1e-10


# -- the matrices -------------------------------------------------------------------------


def _matrices():
    """The scipy arrays the entry points run on, by kind (fixed seed, float64 CSR)."""
    rng = np.random.default_rng(20261201)
    R = sp.random_array((N, N), density=0.12, rng=rng, format="csr")
    graph = (R + R.T).tocsr()  # symmetric, non-negative weights: an undirected graph
    spd = (graph + sp.diags_array(np.asarray(graph.sum(axis=1)).ravel() + 1.0)).tocsr()  # diagonally dominant
    lower = sp.tril(spd, format="csr")
    counts = sp.random_array((N, 15), density=0.3, rng=rng, format="csr",
                             data_sampler=lambda size: rng.integers(1, 6, size).astype(np.float64))
    return {"graph": graph, "spd": spd, "spd_csc": spd.tocsc(), "lower": lower, "counts": counts}


MATRICES = _matrices()
B = np.linspace(1.0, 2.0, N)
X0 = np.random.default_rng(7).standard_normal((N, 3))
V0 = np.linspace(1.0, 2.0, N)
Y = np.arange(N) % 2


# -- the entry points ---------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One call into scipy / scikit-learn / networkx.

    ``run(M)`` returns comparable values (arrays, scalars, sparse arrays or
    tuples of them). ``how`` is ``"direct"``, ``".tocsr()"`` or
    ``".tocsc()"``; for the latter ``error`` is the exception class raised
    on a BCOOArray and ``match`` a regular expression found in the message
    of it or of its cause. ``reference(S)`` (default ``run``) gives the
    expected values on the scipy array.
    """

    library: str
    call: str
    how: str
    run: Callable
    kind: str = "spd"
    error: type | None = None
    match: str = ""
    reference: Callable | None = None
    module: str | None = None  # skip when this module cannot be imported
    warns: type | None = None  # a warning the library emits before refusing


OURS = r"A\.tocsr\(\)"  # the BCOOArray's own refusal (numpy.asarray would densify)


def _save_load_scipy(M):
    import io

    buf = io.BytesIO()
    sp.save_npz(buf, M)
    buf.seek(0)
    return sp.load_npz(buf)


def _save_with_bcoo_array(M):
    import io

    buf = io.BytesIO()
    xp.io.save_npz(buf, M)
    buf.seek(0)
    return sp.load_npz(buf)


def _edges(G):
    return np.array(sorted((u, v, d["weight"]) for u, v, d in G.edges(data=True)))


def _from_scipy_sparse_array(M):
    import networkx as nx

    return _edges(nx.from_scipy_sparse_array(M))


def _digraph(M):
    import networkx as nx

    return _edges(nx.DiGraph(M))


def _sklearn(name):
    """A function running the scikit-learn estimator or function ``name`` on a matrix."""

    def run(M):
        if name == "TfidfTransformer":
            from sklearn.feature_extraction.text import TfidfTransformer
            return TfidfTransformer().fit_transform(M)
        if name == "normalize":
            from sklearn.preprocessing import normalize
            return normalize(M)
        if name == "MaxAbsScaler":
            from sklearn.preprocessing import MaxAbsScaler
            return MaxAbsScaler().fit_transform(M)
        if name == "StandardScaler":
            from sklearn.preprocessing import StandardScaler
            return StandardScaler(with_mean=False).fit_transform(M)
        if name == "LogisticRegression":
            from sklearn.linear_model import LogisticRegression
            return LogisticRegression(max_iter=2000).fit(M, Y).coef_
        if name == "TruncatedSVD":
            from sklearn.decomposition import TruncatedSVD
            return TruncatedSVD(3, random_state=0).fit(M).singular_values_
        if name == "NearestNeighbors":
            from sklearn.neighbors import NearestNeighbors
            return NearestNeighbors(n_neighbors=3).fit(M).kneighbors(M)
        if name == "KMeans":
            from sklearn.cluster import KMeans
            return KMeans(2, n_init=1, random_state=0).fit(M).cluster_centers_
        raise AssertionError(name)

    return run


def _eig_values(result):
    return np.sort(result[0])


CS, LA, SK = "scipy.sparse.csgraph", "scipy.sparse.linalg", "scikit-learn"
S_ = MATRICES["graph"]  # the scipy operand of the mixed calls (S @ A, kron, hstack)

ENTRY_POINTS = [
    # scipy.sparse.csgraph: np.asarray(A) (dense input path), or an issparse check.
    Entry(CS, "connected_components(A)", ".tocsr()", lambda M: csgraph.connected_components(M), "graph",
          RuntimeError, OURS),
    Entry(CS, "shortest_path(A)", ".tocsr()", lambda M: csgraph.shortest_path(M), "graph", RuntimeError, OURS),
    Entry(CS, "dijkstra(A, indices=0)", ".tocsr()", lambda M: csgraph.dijkstra(M, indices=0), "graph",
          RuntimeError, OURS),
    Entry(CS, "laplacian(A)", ".tocsr()", lambda M: csgraph.laplacian(M), "graph", RuntimeError, OURS),
    Entry(CS, "minimum_spanning_tree(A)", ".tocsr()", lambda M: csgraph.minimum_spanning_tree(M), "graph",
          RuntimeError, OURS),
    Entry(CS, "breadth_first_order(A, 0)", ".tocsr()", lambda M: csgraph.breadth_first_order(M, 0), "graph",
          RuntimeError, OURS),
    Entry(CS, "reverse_cuthill_mckee(A)", ".tocsr()", lambda M: csgraph.reverse_cuthill_mckee(M), "graph",
          TypeError, "must be sparse"),
    Entry(CS, "maximum_bipartite_matching(A)", ".tocsr()", lambda M: csgraph.maximum_bipartite_matching(M),
          "graph", TypeError, "must be sparse"),
    # Direct solvers: csc_array(A) -> np.asarray(A) (ValueError caused by the refusal).
    Entry(LA, "spsolve(A, b)", ".tocsr()", lambda M: sla.spsolve(M, B), "spd", ValueError, OURS),
    Entry(LA, "splu(A)", ".tocsc()", lambda M: sla.splu(M).solve(B), "spd_csc", ValueError, OURS),
    Entry(LA, "spilu(A)", ".tocsc()", lambda M: sla.spilu(M).solve(B), "spd_csc", ValueError, OURS),
    Entry(LA, "factorized(A)", ".tocsc()", lambda M: sla.factorized(M)(B), "spd_csc", ValueError, OURS),
    Entry(LA, "spsolve_triangular(A, b)", ".tocsr()", lambda M: sla.spsolve_triangular(M, B), "lower",
          ValueError, OURS, warns=sp.SparseEfficiencyWarning),
    Entry(LA, "norm(A)", ".tocsr()", lambda M: sla.norm(M), "spd", TypeError, "input is not sparse"),
    Entry("numpy", "numpy.linalg.norm(A)", "direct", lambda M: np.linalg.norm(M), "spd",
          reference=lambda S: sla.norm(S)),
    Entry("bcoo_array", "bcoo_array.linalg.matrix_norm(A, ord=1)", "direct",
          lambda M: xp.linalg.matrix_norm(M, ord=1), "spd", reference=lambda S: sla.norm(S, 1)),
    # expm: scipy's dense path (not issparse) builds dense powers with A's own operators (results in
    # dense layout, under the densification guard) and reads them with np.asarray: the dense exp(A).
    Entry(LA, "expm(A)", "direct", lambda M: sla.expm(M * 0.01), "spd_csc"),
    # The LinearOperator protocol (matvec/matmat/rmatvec, shape, dtype) and A(x).
    Entry(LA, "expm_multiply(A, b)", "direct", lambda M: sla.expm_multiply(M * 0.01, B), "spd"),
    Entry(LA, "cg(A, b)", "direct", lambda M: sla.cg(M, B, rtol=1e-12, atol=0.0)[0], "spd"),
    Entry(LA, "eigsh(A, k)", "direct", lambda M: _eig_values(sla.eigsh(M, k=3, v0=V0, tol=1e-12)), "spd"),
    Entry(LA, "eigsh(A, k, sigma)", "direct",
          lambda M: _eig_values(sla.eigsh(M, k=3, sigma=0.5, v0=V0, tol=1e-12)), "spd"),
    Entry("bcoo_array", "bcoo_array.linalg.eigsh(A, k, sigma)", "direct",
          lambda M: _eig_values(xp.linalg.eigsh(M, k=3, sigma=0.5, v0=V0, tol=1e-12)), "spd",
          reference=lambda S: _eig_values(sla.eigsh(S, k=3, sigma=0.5, v0=V0, tol=1e-12))),
    Entry(LA, "svds(A, k)", "direct", lambda M: np.sort(sla.svds(M, k=3, v0=V0, tol=1e-12)[1]), "spd"),
    Entry(LA, "lobpcg(A, X)", "direct",
          lambda M: np.sort(sla.lobpcg(M, X0, tol=1e-9, maxiter=500, largest=True)[0]), "spd"),
    # scipy.sparse constructors and functions: np.asarray(A).
    Entry("scipy.sparse", "csr_array(A)", ".tocsr()", lambda M: sp.csr_array(M), "spd", ValueError, OURS),
    Entry("scipy.sparse", "coo_array(A)", ".tocsr()", lambda M: sp.coo_array(M), "spd", RuntimeError, OURS),
    Entry("scipy.sparse", "kron(S, A)", ".tocsr()", lambda M: sp.kron(S_, M), "spd", RuntimeError, OURS),
    Entry("scipy.sparse", "hstack([S, A])", ".tocsr()", lambda M: sp.hstack([S_, M]), "spd", RuntimeError, OURS),
    Entry("scipy.sparse", "S @ A", ".tocsr()", lambda M: S_ @ M, "spd", RuntimeError, OURS),
    Entry("bcoo_array", "bcoo_array.matmul(S, A)", "direct", lambda M: xp.matmul(S_, M), "spd",
          reference=lambda S: S_ @ S),
    Entry("scipy.sparse", "S + A", "direct", lambda M: S_ + M, "spd"),
    Entry("scipy.sparse", "save_npz(file, A)", ".tocsr()", _save_load_scipy, "spd", NotImplementedError,
          "format bcoo"),
    Entry("bcoo_array", "bcoo_array.io.save_npz(file, A)", "direct", _save_with_bcoo_array, "spd",
          reference=_save_load_scipy),
    # scikit-learn: check_array -> np.asarray(A) unless scipy.sparse.issparse.
    *[Entry(SK, f"{name}", ".tocsr()", _sklearn(name), "counts", RuntimeError, OURS, module="sklearn")
      for name in ["TfidfTransformer", "normalize", "MaxAbsScaler", "StandardScaler", "LogisticRegression",
                   "TruncatedSVD", "NearestNeighbors", "KMeans"]],
    # networkx: from_scipy_sparse_array reads A.format and A.tocoo() (duck typing); the graph
    # constructors call it for anything with a ``format`` attribute.
    Entry("networkx", "from_scipy_sparse_array(A)", "direct", _from_scipy_sparse_array, "graph", module="networkx"),
    Entry("networkx", "DiGraph(A)", "direct", _digraph, "spd", module="networkx"),
]


def _values(r):
    """Comparable NumPy values of a result (sparse arrays densified, tuples recursed)."""
    if isinstance(r, (tuple, list)):
        return [_values(v) for v in r]
    if sp.issparse(r) or isinstance(r, xp.BCOOArray):
        return r.toarray()
    return np.asarray(r)


def _assert_same(got, expected):
    got, expected = _values(got), _values(expected)
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(expected).max(initial=0))))


def _messages(exc):
    """The messages of ``exc`` and of the exceptions that caused it."""
    out = []
    while exc is not None:
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "\n".join(out)


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda e: f"{e.library}:{e.call}")
def test_entry_point(entry):
    if entry.module:
        pytest.importorskip(entry.module)
    S = MATRICES[entry.kind]
    A = xp.asarray(S)
    expected = (entry.reference or entry.run)(S)
    if entry.how == "direct":
        _assert_same(entry.run(A), expected)
        return
    with pytest.raises(entry.error) as info, (pytest.warns(entry.warns) if entry.warns else nullcontext()):
        entry.run(A)
    assert re.search(entry.match, _messages(info.value)), _messages(info.value)
    converted = A.tocsr() if entry.how == ".tocsr()" else A.tocsc()
    _assert_same(entry.run(converted), expected)


def test_refusal_names_the_sparse_conversions():
    A = xp.asarray(MATRICES["spd"])
    with pytest.raises(RuntimeError) as info:
        np.asarray(A)
    message = str(info.value)
    for fix in ("A.tocsr()", "A.to_scipy(format)", "bcoo_array.matmul(S, A)", "A.toarray()", AUTO_DENSIFY_ENV):
        assert fix in message


def test_auto_densify_gives_writable_arrays(monkeypatch):
    # csgraph.laplacian writes into its dense input: a read-only view of a JAX buffer failed.
    monkeypatch.setenv(AUTO_DENSIFY_ENV, "1")
    S = MATRICES["graph"]
    A = xp.asarray(S)
    assert np.asarray(A).flags.writeable
    assert A.toarray().flags.writeable
    _assert_same(csgraph.laplacian(A), csgraph.laplacian(S))


def test_call_returns_the_kind_of_its_operand():
    # scipy (lobpcg) calls a callable operator with NumPy arrays and writes into
    # the result; JAX's solvers call it with JAX arrays.
    S = MATRICES["spd"]
    A = xp.asarray(S)
    out = A(X0)
    assert isinstance(out, np.ndarray) and out.flags.writeable
    _assert_same(out, S @ X0)
    out = A(jnp.asarray(B))
    assert isinstance(out, jax.Array)
    _assert_same(out, S @ B)


@pytest.mark.slow
def test_eigsh_shift_invert_of_an_indefinite_shift_needs_tocsr():
    # With sigma, scipy factorises issparse input with SuperLU; any other operator
    # (a BCOOArray goes through aslinearoperator) is inverted by GMRES, which stalls
    # on this indefinite shift of the 1-D Laplacian.
    n = 60
    S = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1]).tocsr()
    A = xp.asarray(S)
    v0 = np.linspace(1.0, 2.0, n)
    with pytest.raises(ValueError, match="did not converge"):
        sla.eigsh(A, k=3, sigma=0.5, v0=v0)
    _assert_same(np.sort(sla.eigsh(A.tocsr(), k=3, sigma=0.5, v0=v0)[0]),
                 np.sort(sla.eigsh(S, k=3, sigma=0.5, v0=v0)[0]))


def _docs_rows():
    """``{(library, call): how}`` from the table of ``docs/scipy_interop.md``."""
    rows = {}
    for line in DOCS.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[1].startswith("`") and cells[2].startswith(("direct", "`")):
            how = "direct" if cells[2].startswith("direct") else cells[2].split("`")[1]
            rows[(cells[0], cells[1].strip("`"))] = how
    return rows


def test_docs_table_matches_entry_points():
    assert _docs_rows() == {(e.library, e.call): e.how for e in ENTRY_POINTS}
