"""The conformance runner (conformance/run.py) builds the command and environment it promises.

The official suite itself is not run here (it is not vendored; see
conformance/README.md); these checks keep the runner's contract: the x64 mode
reaches JAX through the environment, every run has a Hypothesis seed that is
printed and passed on, and the suite's own options are given in ``--opt=value``
form (a separate value would be collected as a path, loading
``conformance/conftest.py`` into the suite's process, which turns x64 on).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

RUN_PY = Path(__file__).resolve().parents[1] / "conformance" / "run.py"


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("conformance_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suite_options_are_single_arguments(run, tmp_path):
    cmd = run.build_command(tmp_path, 50, tmp_path / "r.json", ["-k", "abs"], seed=123)
    assert f"--xfails-file={run.XFAILS_FILE}" in cmd
    assert f"--skips-file={run.SKIPS_FILE}" in cmd
    assert str(run.XFAILS_FILE) not in cmd and str(run.SKIPS_FILE) not in cmd
    assert "--hypothesis-seed=123" in cmd
    assert cmd[-2:] == ["-k", "abs"]
    assert not any(a.startswith("--hypothesis-seed") for a in run.build_command(tmp_path, 5, tmp_path / "r", []))


@pytest.mark.parametrize("x64, want", [(True, "1"), (False, "0")])
def test_x64_mode_reaches_jax_through_the_environment(run, x64, want):
    env = run.build_env("bcoo_array", "2025.12", x64=x64)
    assert env["JAX_ENABLE_X64"] == want
    skipped = env.get("ARRAY_API_TESTS_SKIP_DTYPES", "")
    assert set(skipped.split(",")) == ({"int64", "uint64", "float64", "complex128"} if not x64 else {""})
    assert env["ARRAY_API_TESTS_MODULE"] == "bcoo_array"


def test_seed_is_fresh_unless_given(run, monkeypatch, capsys, tmp_path):
    seen = []

    class Done:
        returncode = 0

    def fake_run(cmd, **kwargs):
        seen.append((cmd, kwargs["env"]["JAX_ENABLE_X64"]))
        return Done()

    monkeypatch.setattr(run, "check_checkout", lambda path, version: None)
    monkeypatch.setattr(run.subprocess, "run", fake_run)
    run.main([str(tmp_path), "--x64", "off"])
    run.main([str(tmp_path), "--seed", "77"])
    run.main([str(tmp_path), "--derandomize"])
    (first, x64_first), (second, x64_second), (third, _) = seen
    assert x64_first == "0" and x64_second == "1"
    drawn = [a for a in first if a.startswith("--hypothesis-seed=")]
    assert len(drawn) == 1
    assert "--hypothesis-seed=77" in second
    assert not any(a.startswith("--hypothesis-seed") for a in third)
    out = capsys.readouterr().out
    assert drawn[0].split("=")[1] in out and "x64 off" in out and "--seed 77" in out
