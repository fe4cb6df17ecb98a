"""scikit-learn's array-API dispatch (``sklearn.set_config(array_api_dispatch=True)``)
on BCOOArrays: pairwise kernels, metrics, scalers and PCA run unchanged on the
sparse type and match their NumPy results on a SuiteSparse matrix.
``Ridge(solver="svd")`` among them: its solver assigns ``d[idx] = ...`` with a
1-D boolean mask into a 2-D array (a mask mixed with a slice), which
``BCOOArray.__setitem__`` supports with NumPy's advanced-indexing rules.

The routines live in ``interop/_sklearn_routines.py`` and run in one
subprocess, because scikit-learn's dispatch needs ``SCIPY_ARRAY_API=1``
before scipy is first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[1]
MATRIX = ROOT.parent / "shared" / "data" / "matrices" / "karate.mtx"

SUPPORTED = [
    "cosine_similarity", "euclidean_distances", "linear_kernel", "rbf_kernel", "polynomial_kernel",
    "r2_score", "mean_squared_error", "MinMaxScaler", "MaxAbsScaler", "Normalizer", "StandardScaler",
    "PCA.explained_variance_", "Ridge(solver='svd').coef_",
]


def _run_routines():
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-W", "error", str(ROOT / "interop" / "_sklearn_routines.py"),
                           str(MATRIX)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_sklearn_routines_match_numpy():
    # One test (one subprocess): pytest-xdist would run a shared fixture once per worker.
    if not MATRIX.exists():
        pytest.skip("shared/data/matrices is not available")
    results = _run_routines()
    assert set(results) == set(SUPPORTED)
    bad = {}
    for name in SUPPORTED:
        r = results[name]
        if "error" in r:
            bad[name] = r["error"]
        elif r["type"] not in ("BCOOArray", "float"):  # arrays come back as BCOOArrays, never NumPy
            bad[name] = f"returned {r['type']}"
        elif r["max_abs_diff"] > 1e-12 * max(1.0, r["scale"]):
            bad[name] = f"differs from NumPy by {r['max_abs_diff']}"
    assert not bad, bad
