"""A CI-sized part of scikit-learn's own array-API tests, with bcoo_array as a
namespace beside array_api_strict.

The wider run is ``python interop/run_sklearn_array_api.py`` (see
``interop/README.md``). This module runs ``SUBSET`` (the tests shipped in the
installed scikit-learn wheel) once per session in a subprocess
(``SCIPY_ARRAY_API=1``, ``JAX_ENABLE_X64=1``, ``BCOO_ARRAY_AUTO_DENSIFY=1``)
through the same harness (``interop/_xp_suites.py``,
``interop/_sklearn_xp_plugin.py``), about 15 s on two cores, and then:

* ``test_no_unexpected_failures``: no array_api_strict case fails (a harness or
  scikit-learn problem), no bcoo_array case fails outside ``KNOWN_FAILURES``,
  and every bcoo_array case has its array_api_strict twin;
* ``test_known_failure[...]``: one case per ``KNOWN_FAILURES`` entry, marked
  ``xfail`` (non-strict) with its cause; it asserts the suite case passed, so
  a fix shows as XPASS (then delete the entry).

Skipped when scikit-learn (an optional dependency, extra ``test``) or the
tests inside its wheel are missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xp_suites as suite  # noqa: E402

#: scikit-learn's array-API helper tests (average, median, logsumexp, isin,
#: fill_diagonal, ... ~250 cases per namespace) and one estimator's array-API
#: checks: PCA's check_array_api_input_and_values / check_array_api_get_precision
#: (test_pca.py's *array_api* tests).
SUBSET = [
    "sklearn/utils/tests/test_array_api.py",
    "sklearn/decomposition/tests/test_pca.py::test_pca_array_api_compliance",
    "sklearn/decomposition/tests/test_pca.py::test_pca_mle_array_api_compliance",
]

#: Known bcoo_array failures in SUBSET, node id -> cause (class of the triage
#: table in interop/README.md). Each is a non-strict xfail below, so a fix
#: shows as XPASS: delete the entry then.
#:
#: Empty: with BCOO_ARRAY_AUTO_DENSIFY=1 every bcoo_array case of SUBSET
#: passes (scikit-learn 1.9.1). Without that variable every case that compares
#: results fails (class S1 of the triage: sklearn's move_to(..., xp=numpy) ->
#: np.asarray(BCOOArray), refused by design), which is why the harness sets it.
KNOWN_FAILURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict], str]:
    return suite.session_results(tmp_path_factory, "sklearn", files=SUBSET,
                                 extra=["-q", "--disable-warnings"])


def test_no_unexpected_failures(results: tuple[dict[str, dict], str]) -> None:
    rows, output = results
    suite.check_no_unexpected(rows, KNOWN_FAILURES, output, min_bcoo=250)


@pytest.mark.parametrize(
    "nodeid",
    [pytest.param(k, marks=pytest.mark.xfail(reason=v, strict=False), id=k.split("::", 1)[1])
     for k, v in KNOWN_FAILURES.items()],
)
def test_known_failure(results: tuple[dict[str, dict], str], nodeid: str) -> None:
    r = results[0].get(nodeid)
    assert r is not None, f"{nodeid} was not run"
    assert r["outcome"] == "passed", f"{r['outcome']}: {r['message'][:500]}"
