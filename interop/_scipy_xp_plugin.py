"""pytest plugin: ``bcoo_array`` as an array-API backend of scipy's own tests.

Loaded with ``-p _scipy_xp_plugin`` by ``interop/run_scipy_array_api.py`` (and
``interop/test_scipy_array_api_suite.py``), in a pytest process that runs test
files shipped inside the scipy wheel, with ``SCIPY_ARRAY_API=1``. Nothing in
``site-packages`` is edited; the plugin changes the test process only.

scipy's backends come from ``scipy/conftest.py`` (shipped in the wheel): the
``xp`` fixture is ``@pytest.fixture(params=xp_available_backends)``, a list
built when that conftest is imported (numpy, then array_api_strict, torch,
cupy, jax.numpy, dask.array when importable; scipy's ``spin test -b``
/ ``--array-api-backend`` only narrows it through ``SCIPY_ARRAY_API='["..."]'``).
There is no hook to register a new library, so:

* **The backend.** A ``pytest_generate_tests`` hook that runs before pytest's
  own fixture parametrization appends
  ``pytest.param(bcoo_array, id="bcoo_array", marks=array_api_backends)`` to
  the ``xp`` fixture's params (the ``FixtureDef`` of scipy's conftest, once).
  The fixture then yields ``array_namespace(bcoo_array.empty(0))``, the
  ``bcoo_array`` module (scipy's ``array_namespace`` accepts any object with
  ``__array_namespace__``), under ``default_xp(bcoo_array)``.
* **scipy's skip/xfail markers.** ``skip_xp_backends(np_only=True)`` and
  ``xfail_xp_backends(np_only=True)`` name every backend in the conftest's
  ``xp_known_backends`` except numpy; ``"bcoo_array"`` is added to that set so
  that np_only markers apply to it like to any non-NumPy backend. Markers that
  name one backend (``"jax.numpy"``, ``"array_api_strict"``, ...) do not apply
  to bcoo_array (it runs eagerly on CPU: the cpu_only / eager_only sets do not
  include it).
* **Selection and results**: ``interop/_xp_plugin_common.py``.

The runner sets ``BCOO_ARRAY_AUTO_DENSIFY=1`` by default: scipy's
``xp_assert_close`` / ``xp_assert_equal`` end in ``np.testing.assert_allclose``
/ ``assert_array_equal`` (for every backend but CuPy and PyTorch), which call
``np.asarray`` on both sides.
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("SCIPY_ARRAY_API") != "1":  # pragma: no cover - the runner sets it
    raise RuntimeError("_scipy_xp_plugin needs SCIPY_ARRAY_API=1 in the environment (before scipy is imported)")

import _xp_plugin_common as common  # noqa: E402

BCOO = "bcoo_array"
_patched: set[int] = set()

#: Test cases skipped for bcoo_array because their premise does not hold for a
#: backend scipy does not know by name (node-id suffix without [params] -> reason).
HARNESS_SKIPS: dict[str, str] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "xp" not in metafunc.fixturenames:
        return
    defs = metafunc._arg2fixturedefs.get("xp", ())  # noqa: SLF001 - no public way to reach the FixtureDef
    for fd in reversed(defs):
        if fd.params is None:
            continue
        if id(fd) in _patched:
            return
        g = getattr(fd.func, "__globals__", {})
        if "xp_known_backends" not in g:  # not scipy's conftest fixture
            return
        import bcoo_array

        g["xp_known_backends"].add(BCOO)
        params = list(fd.params)
        if not any(getattr(p, "id", None) == BCOO for p in params):
            params.append(pytest.param(bcoo_array, id=BCOO, marks=pytest.mark.array_api_backends))
        fd.params = tuple(params)  # type: ignore[misc]
        _patched.add(id(fd))
        return


def pytest_addoption(parser: pytest.Parser) -> None:
    common.add_options(parser)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    common.select(config, items, HARNESS_SKIPS)


def pytest_configure(config: pytest.Config) -> None:
    common.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    common.unconfigure(config)
