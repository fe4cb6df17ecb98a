"""pytest hooks shared by ``_sklearn_xp_plugin``, ``_scipy_xp_plugin`` and ``_xpx_plugin`` (its ``Recorder``).

Not a test module: it is imported by those plugins, which run inside the
library suites' pytest process (see ``interop/_xp_suites.py``).

* ``--bcoo-namespaces a,b``: keep only the test cases parametrized with one of
  these namespaces (default ``array_api_strict,bcoo_array``); cases of other
  namespaces (numpy, torch, ...) and tests with no namespace parameter are
  deselected.
* ``--bcoo-xfail-file FILE`` (JSON ``{nodeid: reason}``): known bcoo_array
  failures, marked ``xfail(strict=False)`` so a fix shows as XPASS.
* ``--bcoo-results FILE``: one JSON line per case (node id, namespace, outcome,
  duration, one-line message), written as the cases end.
"""

from __future__ import annotations

import functools
import json
import os
import time
from types import ModuleType

import pytest

KNOWN_NAMESPACES = ("numpy", "array_api_strict", "bcoo_array", "torch", "cupy", "dpnp", "jax.numpy", "dask.array")


def namespace_of(item: pytest.Item) -> str | None:
    """The array namespace a test case is parametrized with, or None."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    found = None
    for name, value in callspec.params.items():
        ns = None
        if isinstance(value, ModuleType):
            ns = value.__name__
        elif isinstance(value, str) and name in ("array_namespace", "namespace", "library", "array_api", "xp"):
            ns = value
        elif isinstance(value, functools.partial):
            ns = value.keywords.get("array_namespace")
        if ns in KNOWN_NAMESPACES:
            if found is not None and found != ns:
                return "mixed"
            found = ns
    return found


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("bcoo_array", "bcoo_array as an array-API namespace of the suite")
    group.addoption("--bcoo-namespaces", default="array_api_strict,bcoo_array",
                    help="comma-separated namespaces whose cases are kept")
    group.addoption("--bcoo-xfail-file", default=None, help="JSON {nodeid: reason}: known bcoo_array failures")
    group.addoption("--bcoo-results", default=None, help="write one JSON line per test case here")


def select(config: pytest.Config, items: list[pytest.Item], harness_skips: dict[str, str] | None = None) -> None:
    keep = {b.strip() for b in config.getoption("--bcoo-namespaces").split(",") if b.strip()}
    known: dict[str, str] = {}
    if config.getoption("--bcoo-xfail-file"):
        with open(config.getoption("--bcoo-xfail-file")) as f:
            known = json.load(f)
    selected, deselected = [], []
    for item in items:
        ns = namespace_of(item)
        if ns not in keep:
            deselected.append(item)
            continue
        selected.append(item)
        if ns != "bcoo_array":
            continue
        base = item.nodeid.split("[", 1)[0]
        for key, reason in (harness_skips or {}).items():
            if base.endswith(key):
                item.add_marker(pytest.mark.skip(reason=f"bcoo_array harness: {reason}"))
        if item.nodeid in known:
            item.add_marker(pytest.mark.xfail(reason=f"known bcoo_array failure: {known[item.nodeid]}", strict=False))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


class Recorder:
    """Final outcome per test case, written as one JSON line when the case ends."""

    def __init__(self, path: str, label=None) -> None:
        self.file = open(path, "w", buffering=1)  # noqa: SIM115 - closed in close()
        self.label = label or (lambda item: namespace_of(item) or "-")  # the "backend" of a record
        self.namespaces: dict[str, str] = {}
        self.state: dict[str, dict] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            self.namespaces[item.nodeid] = self.label(item)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        self.state[nodeid] = {"outcome": None, "message": "", "t0": time.time()}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        st = self.state.setdefault(report.nodeid, {"outcome": None, "message": "", "t0": time.time()})
        wasxfail = hasattr(report, "wasxfail")
        outcome = None
        if report.when == "setup":
            if report.failed:
                outcome = "error"
            elif report.skipped:
                outcome = "xfailed" if wasxfail else "skipped"
        elif report.when == "call":
            if report.passed:
                outcome = "xpassed" if wasxfail else "passed"
            elif report.failed:
                outcome = "failed"
            elif report.skipped:
                outcome = "xfailed" if wasxfail else "skipped"
        elif report.when == "teardown" and report.failed and st["outcome"] in (None, "passed", "xpassed"):
            outcome = "error"
        if outcome is not None:
            st["outcome"] = outcome
            st["message"] = _message(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        st = self.state.pop(nodeid, None)
        if st is None:
            return
        rec = {
            "nodeid": nodeid,
            "backend": self.namespaces.get(nodeid, "-"),
            "outcome": st["outcome"] or "error",
            "duration": round(time.time() - st["t0"], 3),
            "message": st["message"],
        }
        self.file.write(json.dumps(rec) + "\n")

    def close(self) -> None:
        self.file.close()


def _message(report: pytest.TestReport) -> str:
    if report.passed:
        return ""
    if report.skipped:
        if hasattr(report, "wasxfail"):
            return str(report.wasxfail)
        lr = report.longrepr
        msg = str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
        return msg.removeprefix("Skipped: ")
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return f"{crash.message} ({os.path.basename(crash.path)}:{crash.lineno})".replace("\n", " | ")
    return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else ""


def recorder_path(config: pytest.Config, path: str | None) -> str | None:
    """Where this pytest process writes its records: ``path``, or ``path.gwN`` in a pytest-xdist worker.

    Under pytest-xdist every worker collects and runs its share of the cases
    and the controller collects nothing, so the workers record (each in its
    own file, read back together by ``read_records``) and the controller
    records nothing (one file shared by several processes interleaved and
    truncated its lines).
    """
    if not path:
        return None
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return f"{path}.{workerinput['workerid']}"
    from pathlib import Path

    for stale in Path(path).parent.glob(Path(path).name + ".gw*"):  # an earlier run's, in a kept folder
        stale.unlink()
    if getattr(config.option, "dist", "no") != "no" and getattr(config.option, "numprocesses", None):
        return None
    return path


def read_records(path) -> list[dict]:
    """The JSON lines of ``path`` and of its per-worker files ``path.gw*`` (a partial last line skipped)."""
    from pathlib import Path

    path = Path(path)
    rows: list[dict] = []
    for f in [path, *sorted(path.parent.glob(path.name + ".gw*"))]:
        try:
            text = f.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line being written
    return rows


def configure(config: pytest.Config) -> None:
    path = recorder_path(config, config.getoption("--bcoo-results"))
    if path:
        rec = Recorder(path)
        config._bcoo_recorder = rec  # type: ignore[attr-defined]
        config.pluginmanager.register(rec, "bcoo-recorder")


def unconfigure(config: pytest.Config) -> None:
    rec = getattr(config, "_bcoo_recorder", None)
    if rec is not None:
        rec.close()
