"""Run the official array API test suite against ``bcoo_array``.

The suite is `data-apis/array-api-tests <https://github.com/data-apis/array-api-tests>`_,
pinned at revision ``PINNED_REVISION`` below. It is not vendored: get a checkout
(with its ``array-api`` submodule) somewhere outside this repository, install its
``requirements.txt`` and pass the checkout's path::

    git clone https://github.com/data-apis/array-api-tests
    cd array-api-tests && git checkout 55fcc60179efa2680ddd6cd926ddf17b83530e2b
    git submodule update --init
    pip install -r requirements.txt

    python conformance/run.py PATH_TO_CHECKOUT [--max-examples N] [--module NAME]
                              [--x64 on|off] [--seed N] [--files F ...]
                              [extra pytest args...]

What it does:

* sets ``ARRAY_API_TESTS_MODULE`` (``--module``, default ``bcoo_array``),
  ``ARRAY_API_TESTS_VERSION=2025.12`` and ``JAX_ENABLE_X64`` (``--x64``:
  ``on``, the default, or ``off``, JAX's own default, in which the namespace's
  default dtypes are 32-bit), and puts this repository on ``PYTHONPATH`` so
  ``bcoo_array`` imports without installing;
* draws a fresh Hypothesis seed for every run (or takes ``--seed N``), prints
  it first and last, and passes it as ``--hypothesis-seed``: a failure is
  reproduced by running again with the printed seed;
* runs ``python -m pytest PATH/array_api_tests`` from inside the checkout, with
  ``-c PATH/pytest.ini --rootdir PATH`` so the suite's own pytest configuration
  is used and this project's ``[tool.pytest.ini_options]`` (``filterwarnings =
  error`` and friends) is not; ``-p no:cacheprovider`` keeps pytest from writing
  a cache into the checkout;
* passes ``--xfails-file conformance/xfails.txt --skips-file
  conformance/skips.txt --max-examples N --disable-deadline`` (option names as
  defined by the suite's ``conftest.py``);
* warns when the checkout is not at the pinned revision, and stops when the
  ``array-api`` submodule is missing;
* prints the passed/failed/skipped/xfailed/xpassed/error counts at the end
  (from pytest-json-report, which the suite requires anyway) and exits with
  pytest's exit status.

Every argument the runner does not know is passed on to pytest, e.g.
``-k test_abs``, ``-x``, ``-n 4`` (pytest-xdist) or
``array_api_tests/test_linalg.py`` style selections via ``-k``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

#: Revision of data-apis/array-api-tests this project is tested against
#: ("Merge pull request #435 from ev-br/use_int32", 2026-04-03).
PINNED_REVISION = "55fcc60179efa2680ddd6cd926ddf17b83530e2b"
#: Array API standard version under test.
API_VERSION = "2025.12"

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
XFAILS_FILE = HERE / "xfails.txt"
SKIPS_FILE = HERE / "skips.txt"

#: The dtypes JAX refuses with its 64-bit mode off.
DTYPES_64 = ("int64", "uint64", "float64", "complex128")

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def _git_head(path: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def check_checkout(path: Path, api_version: str) -> None:
    """Stop on a path that is not a usable suite checkout; warn on a wrong revision."""
    if not (path / "array_api_tests").is_dir() or not (path / "conftest.py").is_file():
        sys.exit(f"error: {path} is not an array-api-tests checkout (no array_api_tests/ or conftest.py)")
    spec = path / "array-api" / "spec" / api_version
    if not spec.is_dir():
        sys.exit(
            f"error: {spec} not found; the suite needs its array-api submodule:\n"
            f"    git -C {path} submodule update --init"
        )
    head = _git_head(path)
    if head is None:
        warnings.warn(
            f"cannot read the git revision of {path}; the pinned revision is {PINNED_REVISION}",
            stacklevel=2,
        )
    elif head != PINNED_REVISION:
        warnings.warn(
            f"{path} is at {head}, not at the pinned revision {PINNED_REVISION}; "
            f"results may differ (git -C {path} checkout {PINNED_REVISION} && "
            f"git -C {path} submodule update --init)",
            stacklevel=2,
        )


def build_command(
    path: Path, max_examples: int, json_report: Path, extra: list[str], seed: int | None = None,
    files: list[str] | None = None,
) -> list[str]:
    ini = path / "pytest.ini"
    # The suite's own config file if it has one; an empty one otherwise. Either
    # way pytest does not go looking for this repository's pyproject.toml.
    config = str(ini) if ini.is_file() else os.devnull
    return [
        sys.executable,
        "-m",
        "pytest",
        *([str(path / "array_api_tests" / f) for f in files] if files else [str(path / "array_api_tests")]),
        "-c",
        config,
        "--rootdir",
        str(path),
        "-p",
        "no:cacheprovider",
        # "--opt=value", never "--opt value": these options are defined by the
        # suite's conftest.py, so pytest's early argument pass does not know them
        # and would take a separate value for a path to collect, loading this
        # directory's conftest.py (which turns JAX's 64-bit mode on) into the run.
        f"--xfails-file={XFAILS_FILE}",
        f"--skips-file={SKIPS_FILE}",
        "--max-examples",
        str(max_examples),
        "--disable-deadline",
        "--json-report",
        "--json-report-summary",
        f"--json-report-file={json_report}",
        *([] if seed is None else [f"--hypothesis-seed={seed}"]),
        *extra,
    ]


def build_env(module: str, api_version: str, x64: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    env["ARRAY_API_TESTS_MODULE"] = module
    env["ARRAY_API_TESTS_VERSION"] = api_version
    env["JAX_ENABLE_X64"] = "1" if x64 else "0"
    if not x64:
        # The suite draws every dtype the namespace has as an attribute; with x64 off
        # the 64-bit ones exist (as names) but are refused, and the namespace's
        # __array_namespace_info__().dtypes() leaves them out. Tell the suite the same
        # (ARRAY_API_TESTS_SKIP_DTYPES, the suite's own setting; JAX runs it this way).
        skip = [d for d in env.get("ARRAY_API_TESTS_SKIP_DTYPES", "").split(",") if d]
        env["ARRAY_API_TESTS_SKIP_DTYPES"] = ",".join(dict.fromkeys(skip + list(DTYPES_64))).strip(",")
    pythonpath = [str(REPO_ROOT)]
    if env.get("PYTHONPATH"):
        pythonpath.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    # Settings of the caller's pytest must not leak into the suite's run.
    env.pop("PYTEST_ADDOPTS", None)
    return env


def print_summary(json_report: Path, returncode: int, settings: str = "") -> None:
    try:
        summary = json.loads(json_report.read_text())["summary"]
    except (OSError, ValueError, KeyError):
        print(f"conformance: no report written (pytest exit status {returncode}){settings}")
        return
    counts = ", ".join(f"{summary.get(k, 0)} {k}" for k in OUTCOMES)
    print(f"conformance: {counts} (collected {summary.get('collected', 0)}, "
          f"pytest exit status {returncode}){settings}")


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        description="Run data-apis/array-api-tests against bcoo_array. "
        "Unknown arguments (or everything after --) are passed on to pytest.",
        allow_abbrev=False,
    )
    parser.add_argument("checkout", type=Path, help="path to an array-api-tests checkout")
    parser.add_argument(
        "--max-examples", type=int, default=50, help="Hypothesis max_examples (default 50)"
    )
    parser.add_argument(
        "--module",
        default="bcoo_array",
        help="array namespace to test, as ARRAY_API_TESTS_MODULE (default bcoo_array)",
    )
    parser.add_argument(
        "--api-version",
        default=API_VERSION,
        help=f"ARRAY_API_TESTS_VERSION (default {API_VERSION})",
    )
    parser.add_argument(
        "--x64",
        choices=("on", "off"),
        default="on",
        help="JAX's 64-bit mode (JAX_ENABLE_X64): on (default) or off, JAX's own default",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="Hypothesis seed (default: a fresh random one, printed; pass it again to reproduce)",
    )
    parser.add_argument(
        "--files",
        nargs="+",
        default=None,
        metavar="FILE",
        help="run only these files of the suite (e.g. test_linalg.py), in this order",
    )
    args, extra = parser.parse_known_args(argv)
    if "--" in extra:
        extra.remove("--")
    return args, extra


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    path = args.checkout.expanduser().resolve()
    check_checkout(path, args.api_version)
    derandomized = any(a in ("--derandomize", "--hypothesis-derandomize") for a in extra)
    explicit = any(a.startswith("--hypothesis-seed") for a in extra)
    seed = args.seed
    if seed is None and not (derandomized or explicit):
        seed = secrets.randbelow(2**32)
    settings = f"; x64 {args.x64}" + ("" if seed is None else f", --seed {seed}")
    print(f"conformance: max_examples {args.max_examples}{settings}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bcoo-conformance-") as tmp:
        json_report = Path(tmp) / "report.json"
        cmd = build_command(path, args.max_examples, json_report, extra, seed, args.files)
        print("conformance:", " ".join(cmd), flush=True)
        env = build_env(args.module, args.api_version, x64=args.x64 == "on")
        proc = subprocess.run(cmd, check=False, cwd=path, env=env)
        print_summary(json_report, proc.returncode, settings)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
