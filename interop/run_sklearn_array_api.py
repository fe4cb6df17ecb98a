"""scikit-learn's own array-API tests with bcoo_array as a namespace beside array_api_strict.

    .venv/bin/python interop/run_sklearn_array_api.py --failures
    .venv/bin/python interop/run_sklearn_array_api.py sklearn/decomposition/tests/test_pca.py -x -k array_api

Prints where bcoo_array comes from, the counts per namespace (all cases, and
the cases that exist for both namespaces), and exits with pytest's status.
See interop/README.md ("scikit-learn's and scipy's array-API tests").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xp_suites  # noqa: E402

if __name__ == "__main__":
    sys.exit(_xp_suites.main("sklearn"))
