"""Shared by the scikit-learn and scipy array-API suite runners and their CI-sized tests.

scikit-learn and scipy ship their tests inside their wheels; these helpers run
a selection of them (by file path inside ``site-packages``) in a subprocess,
with a pytest plugin that adds ``bcoo_array`` as a namespace beside
array-api-strict (``interop/_sklearn_xp_plugin.py``,
``interop/_scipy_xp_plugin.py``), and read back one JSON line per test case
(node id, namespace, outcome, duration, one-line message).

The subprocess runs in a temporary folder with its own minimal ``pytest.ini``
and ``--rootdir`` set to ``site-packages``, so this project's
``[tool.pytest.ini_options]`` (``filterwarnings = error``) and
``interop/conftest.py`` do not apply, and node ids read
``sklearn/utils/tests/test_array_api.py::...``. The libraries' own
``conftest.py`` files (inside the packages) do apply.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
NAMESPACES = ("array_api_strict", "bcoo_array")

PYTEST_INI = """\
[pytest]
# Written by interop/_xp_suites.py: the suite runs with pytest's defaults plus
# the library's own conftest.py files, not with bcoo_array's pytest settings.
addopts = -p no:cacheprovider
"""

#: suite name -> (the package whose tests run, the plugin module, the default selection)
SUITES = {
    "sklearn": {
        "package": "sklearn",
        "plugin": "_sklearn_xp_plugin",
        "default": [
            "sklearn/utils/tests/test_array_api.py",
            "sklearn/metrics/tests/test_common.py",
            "sklearn/decomposition/tests/test_pca.py",
            "sklearn/linear_model/tests/test_ridge.py",
            "sklearn/preprocessing/tests/test_data.py",
        ],
    },
    "scipy": {
        "package": "scipy",
        "plugin": "_scipy_xp_plugin",
        "default": [
            "scipy/special/tests/test_support_alternative_backends.py",
        ],
    },
}


class SuiteUnavailable(RuntimeError):
    """The library (or its shipped tests) is not installed."""


def site_packages(package: str) -> Path:
    """The folder holding ``package`` (``site-packages``); SuiteUnavailable when missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise SuiteUnavailable(f"{package} is not installed (pip install -e '.[test]')")
    return Path(spec.origin).resolve().parent.parent


def check_files(package: str, files: list[str]) -> Path:
    root = site_packages(package)
    missing = [f for f in files if not (root / f.split("::", 1)[0]).is_file()]
    if missing:
        raise SuiteUnavailable(f"{package}'s installed wheel lacks its tests: {', '.join(missing)}")
    return root


def build_env(auto_densify: bool = True, x64: bool = True, bcoo_path: Path | None = None) -> dict[str, str]:
    """``SCIPY_ARRAY_API=1`` (before scipy is imported: the subprocess),
    ``JAX_ENABLE_X64``, ``BCOO_ARRAY_AUTO_DENSIFY`` (1 by default: both suites
    compare results with ``np.asarray`` / ``np.testing``), ``PYTHONPATH``:
    ``interop/`` (the plugins) and the folder holding ``bcoo_array``."""
    env = dict(os.environ)
    env["SCIPY_ARRAY_API"] = "1"
    env["JAX_ENABLE_X64"] = "1" if x64 else "0"
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.pop("BCOO_ARRAY_AUTO_DENSIFY", None)
    if auto_densify:
        env["BCOO_ARRAY_AUTO_DENSIFY"] = "1"
    paths = [str(HERE), str(bcoo_path or REPO_ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    # The libraries' own warnings-as-errors switches stay off (their CI turns them on).
    env.pop("SKLEARN_WARNINGS_AS_ERRORS", None)
    return env


def build_command(
    suite: str,
    work: Path,
    results: Path,
    *,
    files: list[str] | None = None,
    namespaces: tuple[str, ...] | list[str] = NAMESPACES,
    xfail_file: Path | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """The pytest command line (run it with ``cwd=work``, ``env=build_env(...)``)."""
    spec = SUITES[suite]
    files = list(files or spec["default"])
    root = check_files(spec["package"], files)
    work.mkdir(parents=True, exist_ok=True)
    (work / "pytest.ini").write_text(PYTEST_INI)
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(work / "pytest.ini"), f"--rootdir={root}",
        "-p", spec["plugin"], f"--bcoo-namespaces={','.join(namespaces)}", f"--bcoo-results={results}",
    ]
    if xfail_file is not None:
        cmd.append(f"--bcoo-xfail-file={xfail_file}")
    cmd += [str(root / f) for f in files]
    cmd += list(extra or [])
    return cmd


def run(suite: str, work: Path, *, auto_densify: bool = True, x64: bool = True, timeout: float | None = None,
        capture: bool = True, **kw) -> tuple[list[dict], str, float, int]:
    """Run the suite; (result rows, pytest's output tail, wall seconds, exit status)."""
    results = work / "results.jsonl"
    cmd = build_command(suite, work, results, **kw)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=work, env=build_env(auto_densify=auto_densify, x64=x64),
                          capture_output=capture, text=True, timeout=timeout, check=False)
    wall = time.time() - t0
    out = f"{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}" if capture else ""
    return read_results(results), out, wall, proc.returncode


def read_results(results: Path) -> list[dict]:
    """The plugin's records (one file, or one per pytest-xdist worker)."""
    from _xp_plugin_common import read_records

    return read_records(results)


def count(rows: list[dict], namespaces=NAMESPACES) -> dict[str, Counter]:
    counts = {b: Counter() for b in namespaces}
    for r in rows:
        counts.setdefault(r["backend"], Counter())[r["outcome"]] += 1
    return counts


def format_counts(counts: dict[str, Counter]) -> str:
    width = max([len(b) for b in counts] + [9])
    head = f"{'namespace':<{width}} " + " ".join(f"{o:>8}" for o in OUTCOMES) + f" {'total':>8}"
    lines = [head]
    for backend, c in counts.items():
        lines.append(
            f"{backend:<{width}} " + " ".join(f"{c.get(o, 0):>8}" for o in OUTCOMES) + f" {sum(c.values()):>8}"
        )
    return "\n".join(lines)


_NS_TOKEN = re.compile(r"(array_namespace=)?(array_api_strict|bcoo_array)([-,](device_name=)?(CPU_DEVICE|device1|None))?")


def pair_key(nodeid: str) -> str:
    """The node id with the namespace (and its device) replaced by ``NS``:
    ``...[array_api_strict-CPU_DEVICE-float64]`` and ``...[bcoo_array-None-float64]``
    have the same key, so a case of one namespace finds its twin in the other."""
    if "[" not in nodeid:
        return nodeid
    base, params = nodeid.split("[", 1)
    return base + "[" + _NS_TOKEN.sub("NS", params)


def paired(rows: list[dict], a: str = "array_api_strict", b: str = "bcoo_array") -> list[dict]:
    """The rows of ``a`` and ``b`` whose case exists for both (the same test, same dtype)."""
    keys: dict[str, set[str]] = {}
    for r in rows:
        keys.setdefault(r["backend"], set()).add(pair_key(r["nodeid"]))
    both = keys.get(a, set()) & keys.get(b, set())
    return [r for r in rows if r["backend"] in (a, b) and pair_key(r["nodeid"]) in both]


def failures_by_message(rows: list[dict], backend: str = "bcoo_array") -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for r in rows:
        if r["backend"] == backend and r["outcome"] in ("failed", "error"):
            msg = re.sub(r"0x[0-9a-f]+", "0x..", r["message"])[:240]
            groups.setdefault(msg, []).append(r["nodeid"])
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def main(suite: str, argv: list[str] | None = None) -> int:
    """Command line shared by ``run_sklearn_array_api.py`` and ``run_scipy_array_api.py``."""
    import argparse
    import shutil
    import subprocess as sp
    import tempfile

    spec = SUITES[suite]
    p = argparse.ArgumentParser(
        prog=f"run_{suite}_array_api.py",
        description=f"Run {suite}'s own array-API tests with bcoo_array as a namespace beside array_api_strict "
                    "and print pass/fail/skip counts per namespace. Arguments not listed here go to pytest; "
                    f"arguments naming test files ({spec['package']}/...py[::test]) replace the default selection.",
    )
    p.add_argument("--namespaces", default=",".join(NAMESPACES), help="default: array_api_strict,bcoo_array")
    p.add_argument("--auto-densify", choices=("on", "off"), default="on",
                   help="BCOO_ARRAY_AUTO_DENSIFY=1 (default on: the suites compare results through np.asarray)")
    p.add_argument("--x64", choices=("on", "off"), default="on", help="JAX_ENABLE_X64 (default on)")
    p.add_argument("--results", default=None, help="also keep the per-case JSON lines here")
    p.add_argument("--xfail-file", default=None, help="JSON {nodeid: reason} of known bcoo_array failures")
    p.add_argument("--failures", action="store_true", help="list bcoo_array failures grouped by message")
    p.add_argument("--keep", default=None, help="work in this folder and keep it")
    args, rest = p.parse_known_args(argv)
    files = [a for a in rest if a.startswith(spec["package"] + "/")]
    extra = [a for a in rest if a not in files] or ["-q", "--no-header", "-rN", "--disable-warnings"]
    namespaces = [n.strip() for n in args.namespaces.split(",") if n.strip()]

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix=f"bcoo-{suite}-xp-"))
    try:
        head = sp.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = sp.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "bcoo_array"],
                       capture_output=True, text=True).stdout.strip()
        import importlib.metadata as md

        versions = ", ".join(f"{d} {md.version(d)}" for d in (spec["package"].replace("sklearn", "scikit-learn"),
                                                              "array-api-strict", "array-api-compat", "jax", "numpy"))
        print(f"bcoo_array from {REPO_ROOT} at {head.stdout.strip()}"
              f"{' (bcoo_array/ has uncommitted changes)' if dirty else ''}; {versions}")
        print(f"auto-densify {args.auto_densify}, x64 {args.x64}; files: {' '.join(files or spec['default'])}")
        try:
            rows, out, wall, rc = run(
                suite, work, auto_densify=args.auto_densify == "on", x64=args.x64 == "on", capture=False,
                files=files or None, namespaces=namespaces,
                xfail_file=Path(args.xfail_file) if args.xfail_file else None, extra=extra,
            )
        except SuiteUnavailable as e:
            print(f"SKIPPED: {e}")
            return 0
        print(f"\nwall time {wall:.1f} s; all cases:")
        print(format_counts(count(rows, namespaces)))
        pr = paired(rows)
        if pr:
            print("\ncases that exist for both array_api_strict and bcoo_array (same test, same dtype):")
            print(format_counts(count(pr, ("array_api_strict", "bcoo_array"))))
        if args.results:
            shutil.copy(work / "results.jsonl", args.results)
        if args.failures:
            groups = failures_by_message(rows)
            print(f"\nbcoo_array failures: {sum(len(v) for _, v in groups)} in {len(groups)} groups")
            for msg, ids in groups:
                print(f"\n[{len(ids)}] {msg}")
                for nid in ids[:6]:
                    print(f"    {nid}")
                if len(ids) > 6:
                    print(f"    ... {len(ids) - 6} more")
        return rc
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def session_results(tmp_path_factory, suite: str, **run_kw) -> tuple[dict[str, dict], str]:
    """Run the suite once per pytest session (pytest-xdist workers share one run
    through a lock and a results file in the session's common temp folder);
    ``({nodeid: row}, pytest's output)``. Skips (pytest.skip) when the library or
    its shipped tests are missing."""
    import fcntl

    import pytest

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        work = tmp_path_factory.mktemp(f"{suite}-xp-suite")
        lock = None
    else:
        work = tmp_path_factory.getbasetemp().parent / f"{suite}-xp-suite"
        work.mkdir(exist_ok=True)
        lock = open(work / "lock", "w")  # noqa: SIM115 - closed below
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        done = work / "done"
        if done.is_file():
            output = done.read_text()
        else:
            try:
                _, output, wall, rc = run(suite, work, **run_kw)
                output = f"exit status {rc}, {wall:.1f} s:\n{output}"
            except SuiteUnavailable as e:
                output = f"SKIP {e}"
            done.write_text(output)
    finally:
        if lock is not None:
            lock.close()
    if output.startswith("SKIP "):
        pytest.skip(output[5:])
    rows = read_results(work / "results.jsonl")
    if not rows:
        pytest.fail(f"the {suite} suite ran no test ({output})")
    return {r["nodeid"]: r for r in rows}, output


def check_no_unexpected(results: dict[str, dict], known: dict[str, str], output: str, min_bcoo: int) -> None:
    """No array_api_strict failure (that would be a harness or library problem),
    no bcoo_array failure outside ``known``, every ``known`` entry still exists,
    every bcoo_array case has its array_api_strict twin, and at least ``min_bcoo``
    bcoo_array cases ran."""
    rows = list(results.values())
    bad = [
        f"{r['nodeid']}: {r['outcome']}: {r['message'][:300]}"
        for r in rows
        if r["outcome"] in ("failed", "error") and (r["backend"] != "bcoo_array" or r["nodeid"] not in known)
    ]
    assert not bad, "unexpected failures:\n" + "\n".join(bad) + f"\n{output[-3000:]}"
    missing = sorted(set(known) - set(results))
    assert not missing, "KNOWN_FAILURES entries that the suite no longer has:\n" + "\n".join(missing)
    counts = count(rows)
    assert sum(counts["bcoo_array"].values()) >= min_bcoo, format_counts(counts)
    twins = {pair_key(r["nodeid"]) for r in rows if r["backend"] == "array_api_strict"}
    lonely = [r["nodeid"] for r in rows if r["backend"] == "bcoo_array" and pair_key(r["nodeid"]) not in twins]
    assert not lonely, "bcoo_array cases without an array_api_strict twin (pairing broken):\n" + "\n".join(lonely[:20])
