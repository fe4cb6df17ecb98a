"""scikit-learn's array-API-dispatching code run on a BCOOArray and on NumPy.

Run by ``interop/test_sklearn.py`` in a subprocess: scikit-learn's array API
dispatch needs ``SCIPY_ARRAY_API=1`` set before scipy is first imported,
which a pytest session that already imported scipy cannot do. Prints one JSON
object: routine name -> {"max_abs_diff", "type"} or {"error"}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
from sklearn import config_context  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.metrics import mean_squared_error, r2_score  # noqa: E402
from sklearn.metrics.pairwise import (  # noqa: E402
    cosine_similarity,
    euclidean_distances,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, Normalizer, StandardScaler  # noqa: E402

import bcoo_array as xp  # noqa: E402

ROUTINES = {
    "cosine_similarity": lambda X: cosine_similarity(X),
    "euclidean_distances": lambda X: euclidean_distances(X),
    "linear_kernel": lambda X: linear_kernel(X),
    "rbf_kernel": lambda X: rbf_kernel(X, gamma=0.1),
    "polynomial_kernel": lambda X: polynomial_kernel(X, degree=2),
    "r2_score": lambda X: r2_score(X[:, 0], X[:, 1]),
    "mean_squared_error": lambda X: mean_squared_error(X[:, 0], X[:, 1]),
    "MinMaxScaler": lambda X: MinMaxScaler().fit_transform(X),
    "MaxAbsScaler": lambda X: MaxAbsScaler().fit_transform(X),
    "Normalizer": lambda X: Normalizer().fit_transform(X),
    "StandardScaler": lambda X: StandardScaler().fit_transform(X),
    "PCA.explained_variance_": lambda X: PCA(n_components=3, svd_solver="full").fit(X).explained_variance_,
    "Ridge(solver='svd').coef_": lambda X: Ridge(solver="svd").fit(X, X[:, 0] * 2.0).coef_,
}


def _dense(r):
    return np.asarray(r.todense()) if isinstance(r, xp.BCOOArray) else np.asarray(r)


def main(matrix_path: str) -> None:
    S = scipy.io.mmread(matrix_path, spmatrix=False).tocsr()
    X = S[:16].toarray() * (1.0 + np.arange(S.shape[1]))  # 16 samples, a few features each
    A = xp.asarray(X)
    out = {}
    for name, f in ROUTINES.items():
        try:
            with config_context(array_api_dispatch=True):
                got = f(A)
            exp = f(X)
            out[name] = {"max_abs_diff": float(np.max(np.abs(_dense(got) - exp))),
                         "scale": float(np.max(np.abs(exp))), "type": type(got).__name__}
        except Exception as e:  # reported to the test, which decides
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[2] / "shared" / "data"
                                                     / "matrices" / "karate.mtx"))
