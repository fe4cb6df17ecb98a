"""Run array-api-extra's own test suite with ``bcoo_array`` as a backend beside
NumPy and pydata-sparse, and print the counts per backend.

The suite is `data-apis/array-api-extra <https://github.com/data-apis/array-api-extra>`_'s
``tests/``, pinned at revision ``PINNED_REVISION`` (see ``interop/_xpx_suite.py``
for why that revision goes with the installed array-api-extra 0.11.5). It is not
vendored: it is extracted at run time into a temporary directory from a git
repository of array-api-extra (by default the mirror
``/work/.mirror/data-apis+array-api-extra/repo``, or ``$BCOO_XPX_SOURCE``), or
copied from a folder that holds the tests::

    python interop/run_array_api_extra.py [--source PATH] [--revision REV]
        [--x64 on|off] [--backends numpy,sparse,bcoo_array] [--like-sparse none|all]
        [--bcoo-path DIR] [--auto-densify] [--downcast-64bit] [--results FILE] [--keep DIR] [--failures]
        [extra pytest args...]

``--source`` takes a clone (``git clone https://github.com/data-apis/array-api-extra``;
``tests/`` is taken at ``--revision``, default the pinned one, whatever the
clone's checked-out branch) or a folder with ``tests/main/conftest.py`` or
``main/conftest.py`` (e.g. the ``array_api_extra/tests`` folder the installed
wheel ships; its revision is not checked).

What it does:

* copies the tests, writes the suite's own pytest settings (``pytest.ini``:
  ``filterwarnings = error``, ``xfail_strict = true``, ``--strict-markers``)
  and the plugin ``interop/_xpx_plugin.py`` into the temporary directory, and
  runs ``python -m pytest tests/main -p _xpx_plugin`` there, so this project's
  ``[tool.pytest.ini_options]`` and ``interop/conftest.py`` do not apply;
* sets ``JAX_ENABLE_X64`` from ``--x64`` (default ``on``) and puts this
  repository on ``PYTHONPATH``;
* keeps the test cases of ``--backends`` (pytest ids; default
  ``numpy,sparse,bcoo_array``; tests that take no ``library`` fixture are
  deselected); the plugin's docstring explains the bcoo_array backend and
  ``--like-sparse``;
* prints the counts per backend (passed, failed, error, skipped, xfailed,
  xpassed) and, with ``--failures``, the bcoo_array failures grouped by message;
  the exit status is pytest's.

``--results FILE`` keeps the plugin's per-test JSON lines (node id, backend,
outcome, duration, message), written as the tests run: a long run can be
watched or triaged from the partial file. ``--keep DIR`` prepares the suite in
DIR and leaves it there (re-run it by hand with the printed command). Every
argument the runner does not know goes to pytest (``-k isclose``, ``-x``,
``tests/main/test_at.py``: a path replaces the default ``tests/main``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xpx_suite as suite  # noqa: E402


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        description="Run array-api-extra's tests with bcoo_array as a backend. "
        "Unknown arguments (or everything after --) are passed on to pytest.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--source",
        "--tests-dir",
        type=Path,
        default=None,
        help=f"array-api-extra git repository or tests folder (default ${suite.SOURCE_ENV} or {suite.DEFAULT_SOURCE})",
    )
    parser.add_argument(
        "--revision",
        default=suite.PINNED_REVISION,
        help=f"revision whose tests/ are used, for a git source (default the pinned {suite.PINNED_REVISION[:12]})",
    )
    parser.add_argument("--x64", choices=("on", "off"), default="on", help="JAX_ENABLE_X64 (default on)")
    parser.add_argument(
        "--backends",
        default=",".join(suite.BACKENDS),
        help="comma-separated backend ids (default numpy,sparse,bcoo_array)",
    )
    parser.add_argument(
        "--like-sparse",
        choices=("none", "all"),
        default="none",
        help="apply the suite's Backend.SPARSE skip/xfail markers to bcoo_array too (default none)",
    )
    parser.add_argument(
        "--bcoo-path",
        type=Path,
        default=None,
        help="folder that holds the bcoo_array package to test (default this repository), "
        "e.g. a snapshot: git archive HEAD bcoo_array | tar -x -C DIR",
    )
    parser.add_argument(
        "--auto-densify",
        action="store_true",
        help="run with BCOO_ARRAY_AUTO_DENSIFY=1 (np.asarray(BCOOArray) densifies); by default it is unset",
    )
    parser.add_argument(
        "--downcast-64bit",
        action="store_true",
        help="with --x64 off: run with BCOO_ARRAY_DOWNCAST_64BIT=1 (64-bit inputs taken as 32-bit, the opt-in for "
        "array-API consumers passing NumPy's 64-bit defaults); its DowncastWarning is ignored",
    )
    parser.add_argument("--results", type=Path, default=None, help="keep the per-test JSON lines in this file")
    parser.add_argument("--keep", type=Path, default=None, help="prepare the suite in this folder and keep it")
    parser.add_argument(
        "--failures", action="store_true", help="list bcoo_array failures/errors grouped by message at the end"
    )
    args, extra = parser.parse_known_args(argv)
    if "--" in extra:
        extra.remove("--")
    return args, extra


def _split_selection(extra: list[str]) -> tuple[list[str] | None, list[str]]:
    """Positional test paths (tests/main/..., node ids) replace the default tests/main."""
    selection = [a for a in extra if a.startswith("tests/")]
    return selection or None, [a for a in extra if not a.startswith("tests/")]


def print_failures(rows: list[dict], backend: str = "bcoo_array") -> None:
    groups: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["backend"] == backend and r["outcome"] in ("failed", "error"):
            groups[r["message"].split("\n", 1)[0][:160]].append(r["nodeid"])
    print(f"\n{backend} failures/errors by message ({sum(len(v) for v in groups.values())}):")
    for msg, ids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  [{len(ids)}] {msg}")
        for nodeid in ids[:3]:
            print(f"        {nodeid}")
        if len(ids) > 3:
            print(f"        ... and {len(ids) - 3} more")


def _describe_bcoo(env: dict[str, str], cwd: Path) -> str:
    """Where the suite's process imports bcoo_array from, and this repository's commit."""
    where = subprocess.run(
        [sys.executable, "-c", "import bcoo_array, os; print(os.path.dirname(bcoo_array.__file__))"],
        env=env, cwd=cwd, capture_output=True, text=True, check=False,
    ).stdout.strip() or "(import failed)"
    head = subprocess.run(
        ["git", "-C", str(suite.REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(suite.REPO_ROOT), "status", "--porcelain", "--", "bcoo_array"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()
    repo = f"{suite.REPO_ROOT} at {head}{' with uncommitted changes in bcoo_array/' if dirty else ''}"
    return f"{where} (this repository: {repo})"


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    source = args.source if args.source is not None else suite.default_source()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    selection, extra = _split_selection(extra)
    with tempfile.TemporaryDirectory(prefix="bcoo-xpx-") as tmp:
        dest = args.keep.resolve() if args.keep else Path(tmp) / "suite"
        try:
            described = suite.prepare(source, dest, args.revision)
        except suite.SourceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        results = (args.results or Path(tmp) / "results.jsonl").resolve()
        results.parent.mkdir(parents=True, exist_ok=True)
        cmd = suite.build_command(
            dest, results, backends=backends, like_sparse=args.like_sparse, selection=selection, extra=extra
        )
        env = suite.build_env(
            dest, x64=args.x64 == "on", bcoo_path=args.bcoo_path and args.bcoo_path.resolve(),
            auto_densify=args.auto_densify,
        )
        if args.downcast_64bit:
            # the opt-in warns on every downcast; the suite turns warnings into errors (filterwarnings = error)
            env["BCOO_ARRAY_DOWNCAST_64BIT"] = "1"
            cmd += ["-W", "ignore::bcoo_array.DowncastWarning"]
        settings = f"x64 {args.x64}, --like-sparse {args.like_sparse}" + (", auto-densify" if args.auto_densify else "") \
            + (", downcast-64bit" if args.downcast_64bit else "")
        print(f"array-api-extra tests: {described}", flush=True)
        print(f"bcoo_array: {_describe_bcoo(env, dest)}", flush=True)
        print(f"results: {results}; {settings}", flush=True)
        print(f"cd {dest} && JAX_ENABLE_X64={env['JAX_ENABLE_X64']} PYTHONPATH={env['PYTHONPATH']} {' '.join(cmd)}", flush=True)
        proc = subprocess.run(cmd, cwd=dest, env=env, check=False)
        rows = suite.read_results(results)
        counts = suite.count(rows, backends)
        print(f"\narray-api-extra suite, {settings} (pytest exit status {proc.returncode}):")
        print(suite.format_counts(counts))
        if args.failures:
            print_failures(rows)
        unexpected = Counter(r["backend"] for r in rows if r["outcome"] in ("failed", "error"))
        print("failed+error: " + ", ".join(f"{b} {unexpected.get(b, 0)}" for b in counts))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
