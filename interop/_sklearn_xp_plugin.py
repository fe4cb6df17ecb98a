"""pytest plugin: ``bcoo_array`` as an array namespace of scikit-learn's own array-API tests.

Loaded with ``-p _sklearn_xp_plugin`` by ``interop/run_sklearn_array_api.py``
(and ``interop/test_sklearn_array_api_suite.py``), in a pytest process that
runs test files shipped inside the scikit-learn wheel. Nothing in
``site-packages`` is edited; the plugin changes the test process only:

* ``SCIPY_ARRAY_API=1`` must be set before scipy is imported (the runner sets
  it in the subprocess's environment; this module refuses to run without it,
  since scikit-learn's ``array_api_dispatch`` raises otherwise).
* **The namespace.** scikit-learn parametrizes its array-API tests with
  ``sklearn.utils._array_api.yield_namespace_device_dtype_combinations()``
  (and a few with ``yield_namespaces()``), evaluated when a test module is
  imported (``from sklearn.utils._array_api import ...``). This plugin is
  imported before any test module and replaces both module attributes by
  wrappers that also yield ``("bcoo_array", None, "float64")`` and
  ``("bcoo_array", None, "float32")`` (the two dtypes array-api-strict gets;
  bcoo_array has one device, so ``None``), and ``"bcoo_array"``.
  ``sklearn.utils._testing._array_api_for_tests("bcoo_array", None, dtype)``
  then imports ``bcoo_array`` and resolves ``get_namespace(bcoo_array.asarray(1))``
  through scikit-learn's vendored array-api-compat, which falls back to
  ``BCOOArray.__array_namespace__()``: the ``bcoo_array`` module itself.
* **Selection and results**: ``interop/_xp_plugin_common.py``
  (``--bcoo-namespaces``, ``--bcoo-xfail-file``, ``--bcoo-results``).

Environment the runner sets: ``JAX_ENABLE_X64=1`` (float64 cases; with it off
``_max_precision_float_dtype`` is float32 and the float64 cases skip) and,
by default, ``BCOO_ARRAY_AUTO_DENSIFY=1``: scikit-learn's tests compare results
after ``sklearn.utils._array_api.move_to(..., xp=numpy)`` /
``_convert_to_numpy``, which for a namespace it does not know calls
``numpy.asarray(array)``, refused by bcoo_array without that variable.
"""

from __future__ import annotations

import os
import sys

import pytest

if os.environ.get("SCIPY_ARRAY_API") != "1":  # pragma: no cover - the runner sets it
    raise RuntimeError("_sklearn_xp_plugin needs SCIPY_ARRAY_API=1 in the environment (before scipy is imported)")

import _xp_plugin_common as common  # noqa: E402

import sklearn.utils._array_api as _sk_xp  # noqa: E402

BCOO = "bcoo_array"
BCOO_DTYPES = ("float64", "float32")

_orig_combinations = _sk_xp.yield_namespace_device_dtype_combinations
_orig_namespaces = _sk_xp.yield_namespaces


def yield_namespaces(include_numpy_namespaces=True):
    yield from _orig_namespaces(include_numpy_namespaces=include_numpy_namespaces)
    yield BCOO


def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
    for combo in _orig_combinations(include_numpy_namespaces=include_numpy_namespaces):
        if combo[0] != BCOO:  # the original calls the patched yield_namespaces
            yield combo
    for dtype in BCOO_DTYPES:
        yield BCOO, None, dtype


yield_namespaces.__doc__ = _orig_namespaces.__doc__
yield_namespace_device_dtype_combinations.__doc__ = _orig_combinations.__doc__
yield_namespaces._bcoo_array = True  # type: ignore[attr-defined]
yield_namespace_device_dtype_combinations._bcoo_array = True  # type: ignore[attr-defined]

if not getattr(_orig_combinations, "_bcoo_array", False):
    _sk_xp.yield_namespaces = yield_namespaces
    _sk_xp.yield_namespace_device_dtype_combinations = yield_namespace_device_dtype_combinations
    # Modules imported before this plugin that took the names with `from ... import`.
    for _mod in list(sys.modules.values()):
        for _name, _new, _old in (
            ("yield_namespaces", yield_namespaces, _orig_namespaces),
            ("yield_namespace_device_dtype_combinations", yield_namespace_device_dtype_combinations,
             _orig_combinations),
        ):
            if _mod is not _sk_xp and getattr(_mod, _name, None) is _old:
                setattr(_mod, _name, _new)

#: Test cases skipped for bcoo_array because their premise does not hold for a
#: namespace scikit-learn does not know by name (node-id suffix without [params]
#: -> reason). Empty: every bcoo_array case runs and every failure is a finding.
HARNESS_SKIPS: dict[str, str] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    common.add_options(parser)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    common.select(config, items, HARNESS_SKIPS)


def pytest_configure(config: pytest.Config) -> None:
    common.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    common.unconfigure(config)
