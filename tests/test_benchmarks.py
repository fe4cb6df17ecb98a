"""Smoke runs of every script in ``benchmarks/`` and of ``bcoo-array bench``, so that none of them rots.

Each script runs in a fresh process (``sys.executable``, the checkout first on
``PYTHONPATH``, JAX on the CPU, in a temporary working directory) on a tiny
input chosen through its own options: a few seconds each, the times it prints
mean nothing. Only its exit status and a line of its report are checked.

* Every ``benchmarks/*.py`` needs an entry in :data:`RECIPES`: a new script
  without one fails ``test_benchmark_script_runs`` until it gets one.
* No recipe reads ``../shared/data/matrices``: ``sharded_spmv.py`` is given a
  matrix file written here, ``native_spmm.py --quick`` builds its matrix and
  the others use generated (``poisson:K``, random) matrices.
* Scripts needing an optional package (matplotlib, pydata ``sparse``,
  scikit-learn) are skipped with ``pytest.importorskip`` when it is missing;
  ``native_spmm.py`` is skipped where the native kernel is not in use.

The module is marked ``slow`` (all of it takes about 30 s on 2 cores);
``-m "not slow"`` leaves it out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py"))


def _tiny_matrix(folder: Path) -> Path:
    """The 2-D Poisson matrix of an 8 x 8 grid (64 x 64, float64) as a Matrix Market file."""
    t = sp.diags_array([-np.ones(7), 2 * np.ones(8), -np.ones(7)], offsets=[-1, 0, 1])
    eye = sp.eye_array(8)
    path = folder / "tiny.mtx"
    scipy.io.mmwrite(str(path), sp.coo_array(sp.kron(eye, t) + sp.kron(t, eye)))
    return path


def _native_in_use() -> bool:
    import bcoo_array

    return bcoo_array.native_kernel_info()["in_use"]


def _bench_args(tmp_path: Path) -> list[str]:
    """``bench`` on the Poisson matrix of a 4 x 4 grid: no random matrix, one timed call, files in tmp_path."""
    return ["poisson:4", "--random", "", "--repeat", "1",
            "--plot", str(tmp_path / "bench.png"), "--markdown", str(tmp_path / "bench.md")]


@dataclass(frozen=True)
class Recipe:
    """How to run one script tiny: its arguments (given the temporary folder), what its output shows,
    the optional modules it needs, and a condition to skip it under (None: always runs)."""

    args: Callable[[Path], list[str]]
    expect: str
    needs: tuple[str, ...] = ()
    skip_unless: Callable[[], bool] | None = None
    why: str = ""


RECIPES: dict[str, Recipe] = {
    # a 64 x 64 matrix file and a Poisson 16^2, one product per library, a 10-iteration CG
    "accelerator.py": Recipe(lambda tmp: [str(_tiny_matrix(tmp)), "--poisson", "16", "--random", "",
                                          "--repeat", "1", "--spmm", "4", "--cg", "8", "--cg-iters", "10",
                                          "--layouts", "panels,ell,panels+rcm+nomxu,auto+nomxu"],
                             "bcoo_array[panels+rcm+nomxu]"),
    # one forced layout beside dense jax.numpy, then one unroll (three fresh processes; the eager accelerator
    # hook does not apply on a CPU)
    "accelerator_first_call.py": Recipe(lambda tmp: ["--layouts", "coo", "--unrolls", "2"],
                                        "coo: first eager A @ v"),
    # one probe, one warm call (two fresh processes)
    "eager_first_call.py": Recipe(lambda tmp: ["exp", "--repeat", "1"], "| `xp.exp(A)` |"),
    # a 256 x 256 Poisson matrix, one round of one call
    "native_spmm.py": Recipe(lambda tmp: ["--quick"], "| SpMM 16 |",
                             skip_unless=_native_in_use, why="the native kernel is not in use here"),
    # a random 1000 x 1000 matrix with 5000 entries (four fresh processes)
    "peak_memory.py": Recipe(lambda tmp: ["--n", "1000", "--nnz", "5000"], "A + B",
                             skip_unless=lambda: os.path.exists("/proc/self/clear_refs"),
                             why="needs Linux's /proc/self/clear_refs"),
    # the runner behind `bcoo-array bench`: every operation, bcoo_array and scipy only
    "run.py": Recipe(lambda tmp: [*_bench_args(tmp), "--libraries", "bcoo_array,scipy"], "CG 50 iterations",
                     needs=("matplotlib",)),
    # a 64 x 64 matrix file on 1 and 2 simulated devices
    "sharded_spmv.py": Recipe(lambda tmp: [str(_tiny_matrix(tmp)), "--repeat", "1", "--devices", "1,2"],
                              "tiny.mtx: 64 x 64"),
    # one estimator (one fresh process)
    "sklearn_first_call.py": Recipe(lambda tmp: ["StandardScaler"], "StandardScaler on a BCOOArray",
                                    needs=("sklearn", "array_api_compat")),
}


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("JAX_PLATFORMS", "cpu")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)


def _check(proc: subprocess.CompletedProcess, expect: str) -> None:
    report = f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{report}"
    assert expect in proc.stdout, f"{expect!r} not in the output\n{report}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_script_runs(script, tmp_path):
    recipe = RECIPES.get(script)
    assert recipe is not None, (f"benchmarks/{script} has no smoke recipe: add a tiny invocation to RECIPES in "
                                f"{Path(__file__).name} (and a --quick-style option to the script if it has none)")
    for module in recipe.needs:
        pytest.importorskip(module)
    if recipe.skip_unless is not None and not recipe.skip_unless():
        pytest.skip(f"{script}: {recipe.why}")
    _check(_run([sys.executable, str(BENCHMARKS / script), *recipe.args(tmp_path)], tmp_path), recipe.expect)


def test_recipes_name_existing_scripts():
    assert sorted(RECIPES) == SCRIPTS, "RECIPES lists scripts that benchmarks/ no longer holds"


def test_bench_cli_runs_every_library(tmp_path):
    """``bcoo-array bench`` (as ``python -m bcoo_array``) with the four libraries on one operation."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sparse")
    from bcoo_array.cli.bench import LIBRARIES, OPERATIONS

    skip = [arg for op in OPERATIONS if op != "SpMV A @ x" for arg in ("--skip", op)]
    proc = _run([sys.executable, "-m", "bcoo_array", "bench", *_bench_args(tmp_path),
                 "--libraries", ",".join(LIBRARIES), *skip], tmp_path)
    _check(proc, "SpMV A @ x")
    assert (tmp_path / "bench.png").exists() and (tmp_path / "bench.md").exists()
    table = (tmp_path / "bench.md").read_text()
    for lib in LIBRARIES:
        assert lib in table, table
