"""A CI-sized part of scipy's own array-API tests, with bcoo_array as a backend
beside array_api_strict.

The wider run is ``python interop/run_scipy_array_api.py`` (see
``interop/README.md``). This module runs ``SUBSET`` (tests shipped in the
installed scipy wheel: ``scipy.special``'s alternative-backend tests, ~1200
cases per backend) once per session in a subprocess (``SCIPY_ARRAY_API=1``,
``JAX_ENABLE_X64=1``, ``BCOO_ARRAY_AUTO_DENSIFY=1``) through the same harness
(``interop/_xp_suites.py``, ``interop/_scipy_xp_plugin.py``), about 15 s on two
cores, with the same two checks as ``interop/test_sklearn_array_api_suite.py``.

Skipped when scipy's shipped tests (or its ``conftest.py``) are missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xp_suites as suite  # noqa: E402

SUBSET = ["scipy/special/tests/test_support_alternative_backends.py"]

#: Known bcoo_array failures in SUBSET, node id -> cause (class of the triage
#: table in interop/README.md); non-strict xfails, a fix shows as XPASS.
#:
#: Empty: with BCOO_ARRAY_AUTO_DENSIFY=1 every bcoo_array case passes (scipy
#: 1.17.1; the skips are scipy's own, the same for array_api_strict). Without
#: it every case fails (class P1: scipy.special's generic path for a backend it
#: does not know runs the NumPy ufunc on np.asarray(BCOOArray)).
KNOWN_FAILURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict], str]:
    return suite.session_results(tmp_path_factory, "scipy", files=SUBSET,
                                 extra=["-q", "--disable-warnings"])


def test_no_unexpected_failures(results: tuple[dict[str, dict], str]) -> None:
    suite.check_no_unexpected(results[0], KNOWN_FAILURES, results[1], min_bcoo=1000)


@pytest.mark.parametrize(
    "nodeid",
    [pytest.param(k, marks=pytest.mark.xfail(reason=v, strict=False), id=k.split("::", 1)[1])
     for k, v in KNOWN_FAILURES.items()],
)
def test_known_failure(results: tuple[dict[str, dict], str], nodeid: str) -> None:
    r = results[0].get(nodeid)
    assert r is not None, f"{nodeid} was not run"
    assert r["outcome"] == "passed", f"{r['outcome']}: {r['message'][:500]}"
