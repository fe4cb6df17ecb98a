"""pytest plugin that adds ``bcoo_array`` as a backend of array-api-extra's own tests.

This file is copied by ``interop/run_array_api_extra.py`` (and by
``interop/test_array_api_extra_suite.py``) next to a temporary copy of
array-api-extra's ``tests/`` and loaded with ``-p _xpx_plugin``; it is not a
test module of this project. It changes nothing in the installed
``array_api_extra`` package on disk:

* **The backend.** The suite parametrizes its ``library`` fixture over
  ``array_api_extra._lib._backends.Backend`` (an ``Enum``). Before the suite's
  ``conftest.py`` is imported, the module attribute ``Backend`` is replaced by an
  ``Enum`` with the same members plus ``BCOO_ARRAY = "bcoo_array"`` (same
  ``modname`` / ``like`` / ``pytest_param`` methods), so every test that takes
  ``xp`` or ``library`` gets a ``[bcoo_array]`` case whose ``xp`` fixture is
  ``array_namespace(bcoo_array.empty(0))``, i.e. the ``bcoo_array`` module.
  ``BCOO_ARRAY`` is not ``like`` any existing backend: in-test branches such as
  ``if library.like(Backend.SPARSE)`` do not fire for it.

* **The suite's assertions.** ``xpx.testing.assert_equal`` / ``assert_close`` /
  ``assert_less`` convert both sides to NumPy with
  ``array_api_extra.testing._testing._as_numpy_array``, which "bypasses
  densification guards" for the libraries it knows (pydata-sparse:
  ``.todense()``) and calls ``np.asarray`` otherwise. ``bcoo_array`` refuses
  ``np.asarray`` (and DLPack) on purpose, so that function is wrapped (in memory,
  for this process) to densify a ``BCOOArray`` with ``.toarray()``, as it does for
  pydata-sparse. Other ``np.asarray`` calls (in the tests themselves) are left
  alone and fail with bcoo_array's densify refusal.

* **Backend selection** (``--xpx-backends numpy,sparse,bcoo_array``, the
  default): test cases for other backends and tests that do not take the
  ``library`` fixture (``test_version``, the ``jnp`` / ``da`` / ``torch``
  fixture variants) are deselected.

* **Markers naming ``Backend.SPARSE``** (``--xpx-like-sparse``): pydata-sparse
  is the closest existing backend (sparse arrays, ``np.asarray`` refused), but
  most of its ``skip_xp_backend`` / ``xfail_xp_backend`` markers state
  pydata-sparse gaps that ``bcoo_array`` does not have (read-only arrays, no
  ``arange`` / ``argsort`` / ``searchsorted`` / ``unique_inverse``, no indexing
  by a sparse array, ``pad`` constants other than the fill value). By default
  (``none``) they do NOT apply to ``bcoo_array``: every test runs and every
  failure is a finding. ``all`` applies them to ``bcoo_array`` too (for
  comparison with pydata-sparse's own coverage).

* **Harness skips** (``HARNESS_SKIPS`` below): tests whose premise does not
  hold for any backend array-api-extra does not know by name, independent of
  what ``bcoo_array`` implements. Each has its reason.

* **Known failures** (``--xpx-xfail-file FILE``, JSON ``{nodeid: reason}``):
  marked ``xfail(strict=False)`` for ``bcoo_array`` only.

* **Results** (``--xpx-results FILE``): one JSON line per test case with its
  node id, backend, outcome (passed / failed / error / skipped / xfailed /
  xpassed), duration and the one-line failure message, written as the tests
  run (so a long run can be triaged from a partial file).
"""

from __future__ import annotations

import enum
import json
import os

import pytest

import array_api_extra._lib._backends as _backends
from _xp_plugin_common import Recorder, recorder_path  # copied beside this plugin by _xpx_suite

_Original = _backends.Backend
if "BCOO_ARRAY" not in _Original.__members__:

    class _BackendMethods:
        # The original class's methods. pytest_param refers to the module global
        # `Backend`, which is the extended Enum once it is replaced below.
        modname = _Original.modname
        like = _Original.like
        pytest_param = _Original.pytest_param

    Backend = enum.Enum(  # type: ignore[misc]
        "Backend",
        [(m.name, m.value) for m in _Original] + [("BCOO_ARRAY", "bcoo_array")],
        module=_backends.__name__,
        qualname="Backend",
        type=_BackendMethods,
    )
    Backend.__doc__ = _Original.__doc__
    _backends.Backend = Backend
else:  # pragma: no cover - an array-api-extra that knows bcoo_array already
    Backend = _Original


def _patch_as_numpy_array() -> None:
    import array_api_extra.testing._testing as _testing

    from bcoo_array import BCOOArray

    original = _testing._as_numpy_array
    if getattr(original, "_bcoo_array", False):
        return

    def _as_numpy_array(array, *, xp):  # type: ignore[no-untyped-def]
        if isinstance(array, BCOOArray):
            return array.toarray()
        return original(array, xp=xp)

    _as_numpy_array._bcoo_array = True  # type: ignore[attr-defined]
    _testing._as_numpy_array = _as_numpy_array


_patch_as_numpy_array()

#: Tests skipped for bcoo_array because their premise is about array-api-extra's
#: own dispatch, not about what the array library implements. node-id substring
#: (without the [params] part) -> reason.
HARNESS_SKIPS: dict[str, str] = {
    # TestNUnique::test_delegates replaces the array-agnostic fallback
    # (_agnostic._set.nunique) by a function that raises, and expects
    # xpx.nunique to call a native implementation instead. array-api-extra
    # delegates only for the namespaces it knows by name (numpy, cupy, jax,
    # torch, ...); for any other namespace the fallback *is* the implementation
    # (the suite skips pydata-sparse, array-api-strict and Dask here for the
    # same reason, "array-agnostic fallback").
    "test_set.py::TestNUnique::test_delegates": "array-agnostic fallback (array-api-extra has no delegation branch for bcoo_array)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bcoo_array", "bcoo_array backend for array-api-extra's tests")
    group.addoption(
        "--xpx-backends",
        default=os.environ.get("XPX_BACKENDS", "numpy,sparse,bcoo_array"),
        help="comma-separated backend ids to keep (pytest ids: numpy, sparse, bcoo_array, array_api_strict, ...)",
    )
    group.addoption(
        "--xpx-like-sparse",
        choices=("none", "all"),
        default="none",
        help="apply markers naming Backend.SPARSE to bcoo_array too (default none)",
    )
    group.addoption("--xpx-xfail-file", default=None, help="JSON {nodeid: reason}: known bcoo_array failures")
    group.addoption("--xpx-results", default=None, help="write one JSON line per test case here")


def _backend_of(item: pytest.Item) -> enum.Enum | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    lib = callspec.params.get("library")
    return lib if isinstance(lib, enum.Enum) else None


def _backend_id(lib: enum.Enum) -> str:
    return lib.name.lower().replace("_gpu", ":gpu").replace("_readonly", ":readonly")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep_ids = {b.strip() for b in config.getoption("--xpx-backends").split(",") if b.strip()}
    like_sparse = config.getoption("--xpx-like-sparse") == "all"
    xfail_file = config.getoption("--xpx-xfail-file")
    known: dict[str, str] = {}
    if xfail_file:
        with open(xfail_file) as f:
            known = json.load(f)

    selected, deselected = [], []
    for item in items:
        lib = _backend_of(item)
        if lib is None or _backend_id(lib) not in keep_ids:
            deselected.append(item)
            continue
        selected.append(item)
        if lib is not Backend.BCOO_ARRAY:
            continue
        base = item.nodeid.split("[", 1)[0]
        for key, reason in HARNESS_SKIPS.items():
            if base.endswith(key):
                item.add_marker(pytest.mark.skip(reason=f"bcoo_array harness: {reason}"))
        if item.nodeid in known:
            item.add_marker(pytest.mark.xfail(reason=f"known bcoo_array failure: {known[item.nodeid]}", strict=False))
        if like_sparse:
            for name in ("skip_xp_backend", "xfail_xp_backend"):
                for marker in item.iter_markers(name):
                    if marker.args and marker.args[0] is Backend.SPARSE:
                        reason = f"like Backend.SPARSE: {marker.kwargs.get('reason') or ''}"
                        if name == "skip_xp_backend":
                            item.add_marker(pytest.mark.skip(reason=reason))
                        else:
                            strict = marker.kwargs.get("strict")
                            kwargs = {} if strict is None else {"strict": strict}
                            item.add_marker(pytest.mark.xfail(reason=reason, **kwargs))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_configure(config: pytest.Config) -> None:
    path = recorder_path(config, config.getoption("--xpx-results"))
    if path:
        rec = Recorder(path, label=lambda item: _backend_id(lib) if (lib := _backend_of(item)) is not None else "-")
        config._xpx_recorder = rec  # type: ignore[attr-defined]
        config.pluginmanager.register(rec, "xpx-recorder")


def pytest_unconfigure(config: pytest.Config) -> None:
    rec = getattr(config, "_xpx_recorder", None)
    if rec is not None:
        rec.close()
