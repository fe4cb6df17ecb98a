"""The main job: ``bcoo-array demo`` on the embedded default and on every shared real matrix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bcoo_array.cli.demo import read_matrix, run
from bcoo_array.cli import main

MATRICES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "matrices"
FILES = sorted(p.name for p in MATRICES.glob("*.mtx*")) if MATRICES.is_dir() else []


def test_demo_cli_default_runs():
    result = CliRunner().invoke(main, ["demo", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    assert "poisson2d-64" in result.output
    assert "CG solve" in result.output


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
    _, shape, rows = run(MATRICES / name, repeat=1)
    assert shape == S.shape
    exact = S.dtype.kind in "iub"
    for row in rows:
        if row.residuals is not None:
            res_b, res_s = row.residuals
            # Same tolerance as scipy's cg: both reach it (or neither does and they agree).
            assert res_b <= max(1e-8, res_s) * 1.5, row
        elif exact:
            assert row.difference == 0.0, row
        else:
            assert row.difference <= 1e-12, row
    ops = {r.operation.split()[0] for r in rows}
    assert {"SpMV", "SpMM", "row", "column", "transpose"} <= ops
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
