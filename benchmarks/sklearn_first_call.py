"""First and warm calls of scikit-learn estimators under ``array_api_dispatch`` on a BCOOArray.

    python benchmarks/sklearn_first_call.py                    # StandardScaler, PCA, LDA
    python benchmarks/sklearn_first_call.py PCA --dense-jax    # the same on a dense jax.Array

Each estimator runs in a fresh process (so its first call pays every XLA
compilation): a 400 x 64 float64 matrix with about 10% stored entries
(``JAX_ENABLE_X64=1``), first call timed, then the best of five warm calls,
and NumPy's time on the same data for scale. ``--dense-jax`` times the same
routine on a dense ``jax.Array`` (JAX's own first-call cost, the reference for
what compiling once per operation and shape costs). ``--log-compiles`` also
counts XLA compilations (JAX's compile log). ``--array-api-strict`` times the
same routine on array_api_strict arrays (the reference of the eager-engine
issue for warm calls). Needs scikit-learn (the ``test``
extra) and ``SCIPY_ARRAY_API=1`` (set here).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

NAMES = ("StandardScaler", "PCA", "LDA")

_CHILD = r'''
import logging, os, sys, time
os.environ["SCIPY_ARRAY_API"] = "1"
import numpy as np
import jax
import jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
count = [0]
if "--log-compiles" in sys.argv:
    class _Count(logging.Handler):
        def emit(self, record):
            count[0] += record.getMessage().startswith("Compiling ")
    logging.getLogger("jax").addHandler(_Count())
    logging.getLogger("jax").setLevel(logging.WARNING)
    jax.config.update("jax_log_compiles", True)
from sklearn import config_context
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import StandardScaler
import bcoo_array as xp

name, dense_jax, strict = sys.argv[1], "--dense-jax" in sys.argv, "--array-api-strict" in sys.argv
rng = np.random.default_rng(0)
X = rng.standard_normal((400, 64)) * (rng.random((400, 64)) < 0.1)
y = rng.integers(0, 3, 400)
if strict:
    import array_api_strict as aas
    A, yA = aas.asarray(X), aas.asarray(y.astype(np.int32))
else:
    A = jnp.asarray(X) if dense_jax else xp.asarray(X)
    yA = jnp.asarray(y.astype(np.int32)) if dense_jax else xp.asarray(y.astype(np.int32))
run = {
    "StandardScaler": lambda A, y: StandardScaler().fit_transform(A),
    "PCA": lambda A, y: PCA(n_components=3, svd_solver="full").fit(A).explained_variance_,
    "LDA": lambda A, y: LinearDiscriminantAnalysis().fit(A, y).coef_,
}[name]
with config_context(array_api_dispatch=True):
    wait = (lambda r: r) if strict else jax.block_until_ready
    t = time.perf_counter(); wait(run(A, yA)); first = time.perf_counter() - t
    compiles = count[0]
    warm = []
    for _ in range(5):
        t = time.perf_counter(); wait(run(A, yA)); warm.append(time.perf_counter() - t)
t = time.perf_counter(); run(X, y); numpy_s = time.perf_counter() - t
kind = "array_api_strict array" if strict else "dense jax.Array" if dense_jax else "BCOOArray"
extra = f", {compiles} XLA compilations" if "--log-compiles" in sys.argv else ""
print(f"{name} on a {kind}: first {first:.2f} s, warm {min(warm) * 1e3:.1f} ms "
      f"({first / min(warm):.0f}x), NumPy {numpy_s * 1e3:.1f} ms{extra}")
'''


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"estimators to time (default: all of {', '.join(NAMES)})")
    parser.add_argument("--dense-jax", action="store_true", help="time a dense jax.Array instead")
    parser.add_argument("--log-compiles", action="store_true", help="count XLA compilations of the first call")
    parser.add_argument("--array-api-strict", action="store_true",
                        help="time the same routine on array_api_strict arrays (the reference for warm calls)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in NAMES]
    if unknown:  # (argparse rejects a list default when nargs="*" has choices)
        parser.error(f"unknown estimator(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    args.names = args.names or list(NAMES)
    flags = [f for f, on in (("--dense-jax", args.dense_jax), ("--log-compiles", args.log_compiles),
                             ("--array-api-strict", args.array_api_strict)) if on]
    for name in args.names:
        proc = subprocess.run([sys.executable, "-c", _CHILD, name, *flags], capture_output=True, text=True,
                              env={**os.environ, "SCIPY_ARRAY_API": "1"})
        out = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not out:
            print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            return 1
        print(out[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
