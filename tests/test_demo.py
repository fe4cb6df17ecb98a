"""The main job: ``bcoo-array demo`` on the embedded default and on every shared real matrix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from bcoo_array.cli import main
from bcoo_array.cli.demo import BLANK, CheckFailed, read_matrix, run

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []
ROOT = Path(__file__).resolve().parents[1]

# The rows beyond scipy: one array-API function on dense and sparse input,
# jax.grad through A @ x (w.r.t. x and w.r.t. the stored values), and the sharded product.
BEYOND_SCIPY = ("array API  row_norms", "jax.grad  d/dx", "jax.grad  d/d A.data")


def _spd_file(tmp_path: Path, n: int = 12) -> Path:
    """A small SPD tridiagonal matrix, written with symmetry declared (so the demo runs CG)."""
    t = sp.diags_array([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    path = tmp_path / "spd.mtx"
    scipy.io.mmwrite(str(path), sp.coo_matrix(t), symmetry="symmetric")
    return path


def _ops(rows):
    return [r.operation for r in rows]


def test_demo_cli_default_runs():
    result = CliRunner().invoke(main, ["demo", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "poisson2d-64" in out
    # SpMV with both operand kinds; the host engine answers a NumPy vector with an ndarray.
    assert "SpMV  A @ x, NumPy x" in out and "returns ndarray" in out
    assert "SpMV  A @ x, JAX x" in out and "returns jax.Array" in out
    assert "1st call" in out
    for op in (*BEYOND_SCIPY, "CG solve", "sharded SpMV"):
        assert op in out, op
    assert "FAILED" not in out
    if "skipped" in out:  # one JAX device: the sharded row says how to get more
        assert "--xla_force_host_platform_device_count=2" in out and "--devices 2" in out


def test_demo_rows_are_checked_against_their_references(tmp_path):
    _, shape, rows = run(_spd_file(tmp_path), repeat=1)
    assert shape == (12, 12)
    ops = _ops(rows)
    assert ops[:2] == ["SpMV  A @ x, NumPy x", "SpMV  A @ x, JAX x"]
    for op in BEYOND_SCIPY:
        assert op in ops
    assert any(op.startswith("CG solve") for op in ops)
    assert any(op.startswith("sharded SpMV") for op in ops)
    by_op = dict(zip(ops, rows))
    for r in rows:
        if r.operation == "sharded SpMV":  # skipped: JAX has one device in this process
            assert r.passed is None and r.bcoo_ms is BLANK and "XLA_FLAGS" in r.note
            assert f"{r.difference:.2e}" == "-" and not r.scipy_ms
            continue
        assert r.passed is True, r
        assert r.difference <= r.tolerance, r
        assert r.first_ms is not None and r.first_ms[0] > 0, r
        assert r.bcoo_ms > 0, r
    # Only the array-API row has no scipy timing (its reference is the dense computation).
    assert by_op["array API  row_norms"].scipy_ms is BLANK
    assert "array_api_strict" in by_op["array API  row_norms"].reference
    assert all(r.scipy_ms > 0 for r in rows if r.operation.startswith(("SpMV", "jax.grad", "CG")))
    cg = next(r for r in rows if r.operation.startswith("CG solve"))
    assert cg.reference == "scipy.sparse.linalg.spsolve" and cg.difference < 1e-6


def test_demo_integer_and_complex_matrices(tmp_path):
    # Integer values: exact products, gradients of the float64 matrix; complex: no gradient rows.
    ints = tmp_path / "ints.mtx"
    scipy.io.mmwrite(str(ints), sp.coo_matrix(np.array([[1, 0, 2], [0, -3, 0], [4, 0, 5], [0, 0, 0]])))
    _, _, rows = run(ints, repeat=1)
    assert all(r.passed is not False for r in rows)
    assert all(r.difference == 0.0 for r in rows if r.operation.startswith(("SpMV", "SpMM", "row", "column")))
    assert "jax.grad  d/dx" in _ops(rows)
    cplx = tmp_path / "cplx.mtx"
    scipy.io.mmwrite(str(cplx), sp.coo_matrix(np.array([[1 + 2j, 0], [0, 3 - 1j]])))
    _, _, rows = run(cplx, repeat=1)
    assert all(r.passed is not False for r in rows)
    skipped = next(r for r in rows if r.operation.startswith("jax.grad"))
    assert skipped.passed is None and "complex" in skipped.note


def test_demo_fails_when_a_check_fails(tmp_path, monkeypatch):
    path = _spd_file(tmp_path)
    monkeypatch.setattr("bcoo_array.cli.demo._tolerance", lambda dtype: -1.0)  # nothing can pass
    with pytest.raises(CheckFailed) as info:
        run(path, repeat=1)
    assert len(info.value.failed) >= 5 and "SpMV  A @ x, NumPy x" in str(info.value)
    result = CliRunner().invoke(main, ["demo", str(path), "--repeat", "1"])
    assert result.exit_code == 1
    assert "demo check(s) failed" in result.output and "FAILED" in result.output


@pytest.mark.slow
def test_demo_sharded_product_on_two_simulated_devices(tmp_path):
    # A fresh process, so that JAX starts with two CPU devices.
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    out = subprocess.run([sys.executable, "-m", "bcoo_array", "demo", str(_spd_file(tmp_path)), "--repeat", "1"],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "sharded SpMV, 2 dev." in out.stdout and "2 row blocks" in out.stdout
    assert "skipped" not in out.stdout and "FAILED" not in out.stdout


def _demo_on_eight_devices(path: Path) -> str:
    """``bcoo-array demo --devices 8 PATH`` in a fresh process with eight simulated CPU devices."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-m", "bcoo_array", "demo", "--devices", "8", str(path), "--repeat", "1"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "sharded over 8 devices" in out.stdout and "sharded SpMV, 8 dev." in out.stdout
    assert "FAILED" not in out.stdout and "GatherFirstError" not in out.stderr
    return out.stdout


@pytest.mark.slow
def test_demo_devices_option_runs_every_row_sharded(tmp_path):
    """Issue 29: ``demo --devices 8`` runs every row on the sharded array (the row and column sums crashed with
    GatherFirstError on ``.toarray()``); each row is still checked against scipy."""
    out = _demo_on_eight_devices(_spd_file(tmp_path, n=40))
    for op in ("row sums  sum(A, 1)", "column sums  sum(A, 0)", "transpose (canonical)", "CG solve"):
        assert op in out, op


@pytest.mark.slow
@pytest.mark.skipif(not (MATRICES / "494_bus.mtx").is_file(), reason="../shared/data/matrices is absent")
def test_demo_devices_option_on_a_shared_matrix():
    """The same on a real SPD matrix of the shared set (494_bus, small: CG runs too)."""
    out = _demo_on_eight_devices(MATRICES / "494_bus.mtx")
    assert "row sums  sum(A, 1)" in out and "CG solve" in out


def test_demo_cli_rejects_non_matrix_market(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("not a matrix\n")
    result = CliRunner().invoke(main, ["demo", str(bad)])
    assert result.exit_code != 0
    assert "not a Matrix Market file" in result.output


@pytest.mark.skipif(not FILES, reason="../shared/data/matrices is absent")
@pytest.mark.parametrize("name", FILES)
def test_demo_matches_scipy_on_real_matrix(name):
    _, S, _ = read_matrix(MATRICES / name)
    _, shape, rows = run(MATRICES / name, repeat=1)  # raises CheckFailed if a check fails
    assert shape == S.shape
    exact = S.dtype.kind in "iub"
    for row in rows:
        if row.passed is None:  # skipped (sharded product on one device; gradients of a complex matrix)
            continue
        assert row.passed, row
        if row.residuals is not None:
            res_b, res_s = row.residuals
            # Same tolerance as scipy's cg: both reach it (or neither does and they agree).
            assert res_b <= max(1e-8, res_s) * 1.5, row
        elif row.reference != "scipy":
            assert row.difference <= 1e-12, row
        elif exact:
            assert row.difference == 0.0, row
        else:
            assert row.difference <= 1e-12, row
    ops = {r.operation.split()[0] for r in rows}
    assert {"SpMV", "SpMM", "row", "column", "transpose", "array", "jax.grad", "sharded"} <= ops
    symmetric_spd = any(r.residuals is not None for r in rows)
    if name.startswith(("bcsstk", "494_bus")):
        assert symmetric_spd


@pytest.mark.skipif(not FILES, reason="../shared/data/matrices is absent")
def test_all_thirteen_matrices_present():
    assert len(FILES) == 13


def test_default_matrix_is_poisson():
    _, S, sym = read_matrix(None)
    assert sym and S.shape == (4096, 4096)
    d = S.diagonal()
    assert np.all(d == 4.0)
