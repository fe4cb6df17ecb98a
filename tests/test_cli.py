"""The command line beyond the demo's numbers: ``info``, finding matrices, and clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from bcoo_array.cli import main
from bcoo_array.cli.data import MATRICES_ENV, find_matrix, matrix_dirs
from bcoo_array.cli.demo import read_matrix


def test_info_reports_versions_x64_devices_and_kernels():
    result = CliRunner().invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    for key in ("bcoo_array", "jax", "numpy", "scipy", "JAX 64-bit mode", "JAX backend", "native kernels",
                "default dtypes"):
        assert key in result.output
    assert "2025.12" in result.output


def test_info_says_when_native_kernels_are_disabled(monkeypatch):
    monkeypatch.setenv("BCOO_ARRAY_NATIVE", "0")
    result = CliRunner().invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    assert "XLA path in use" in result.output


def _write(folder, name, mat):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.mtx"
    scipy.io.mmwrite(str(path), mat)
    return path


def test_names_are_found_in_the_env_folder_and_under_the_working_directory(tmp_path, monkeypatch):
    S = sp.random_array((6, 5), density=0.4, format="coo", random_state=1)
    env_dir = tmp_path / "mine"
    path = _write(env_dir, "small", S)
    monkeypatch.setenv(MATRICES_ENV, str(env_dir))
    assert find_matrix("small") == path
    assert find_matrix("small.mtx") == path
    assert find_matrix(str(path)) == path
    monkeypatch.delenv(MATRICES_ENV)
    project = tmp_path / "checkout" / "src"
    project.mkdir(parents=True)
    shared = tmp_path / "checkout" / "shared" / "data" / "matrices"
    other = _write(shared, "other", S)
    monkeypatch.chdir(project)  # ../shared/data/matrices from inside a checkout
    assert shared.resolve() in matrix_dirs()
    assert find_matrix("other") == other


def test_unknown_name_names_the_folders_and_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv(MATRICES_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=MATRICES_ENV):
        find_matrix("no_such_matrix")
    result = CliRunner().invoke(main, ["demo", "no_such_matrix"])
    assert result.exit_code != 0 and MATRICES_ENV in result.output


def test_demo_reads_an_array_format_file(tmp_path):
    dense = np.zeros((5, 5))
    dense[0, 1], dense[3, 3], dense[4, 0] = 2.0, -1.0, 0.5
    path = tmp_path / "dense.mtx"
    scipy.io.mmwrite(str(path), dense)  # a dense ndarray is written in array format
    assert "array" in path.read_text().splitlines()[0]
    name, S, _ = read_matrix(path)
    assert name == "dense" and S.nnz == 3
    np.testing.assert_array_equal(S.toarray(), dense)
    result = CliRunner().invoke(main, ["demo", str(path), "--repeat", "1"])
    assert result.exit_code == 0, result.output


def test_bench_without_matrices_runs_the_small_poisson_case(tmp_path, monkeypatch):
    # No matrix folder and --random '': the embedded Poisson matrix still gives a table (not an empty one).
    from bcoo_array.cli import bench as _bench

    monkeypatch.setenv(MATRICES_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("bcoo_array.cli.default_matrices", lambda names=(): [])
    skip = [arg for op in _bench.OPERATIONS if op != "sum(axis=0)" for arg in ("--skip", op)]
    result = CliRunner().invoke(main, ["bench", "--random", "", "--repeat", "1", "--libraries", "bcoo_array,scipy",
                                       "--plot", str(tmp_path / "b.png"), *skip])
    assert result.exit_code == 0, result.output
    assert "poisson2d 4096" in result.output and "sum(axis=0)" in result.output
    assert (tmp_path / "b.png").exists()
    # without a terminal the progress bar is hidden: a line says what is being timed
    assert "poisson2d 4096 (4096 x 4096): timing 1 operations with bcoo_array, scipy" in result.output


def test_bench_targets_follow_the_size_class():
    from bcoo_array.cli import bench as _bench

    small = _bench.load_case("poisson:8")
    assert small.shape == (64, 64) and small.nnz == 64 * 5 - 4 * 8
    assert _bench.target("SpMV A @ x", small) == 1.5
    big = _bench.Case("big", small.A, small.B)
    assert _bench.size_class(10_000_000, 10**6) == "large" and _bench.size_class(560_000, 39_082) == "medium"
    assert _bench.target("A @ A.T", big) == 2.0 and _bench.target("no such op", big) is None
    with pytest.raises(ValueError, match="poisson:K"):
        _bench.load_case("poisson:x")
